// SPDX-License-Identifier: GPL-2.0

//! `dynamic_events` integration: `u:name fields` lines create persistent user events,
//! `!u:name fields` / `-:name` lines delete them, and every user event is listed, as upstream's
//! `user_event_dops` (`kernel/trace/trace_events_user.c`).
//!
//! The operations of the `u:` type, on typed arguments; [`crate::dyn_ops`] is how the tracing
//! core calls them, and links them into `dynamic_events`.

use crate::{
    compat,
    event::{UserEvent, REG_PERSIST},
    event_mutex::Held,
    group::{self, Group},
    kbuf::KBuf,
    logic::{matching, show},
    seq::SeqWriter,
    trace_call,
};
use core::ptr::NonNull;
use kernel::prelude::*;

/// `create`: `u:name[:flags] fields` makes a persistent event (upstream `user_event_create`);
/// `ECANCELED` for a command of another type.
pub(crate) fn create(group: &Group, cmd: &[u8]) -> Result {
    let Some(rest) = cmd.strip_prefix(show::USER_EVENTS_PREFIX.as_bytes()) else {
        return Err(compat::ecanceled());
    };
    let start = rest
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(rest.len());
    let name_args = core::str::from_utf8(&rest[start..]).map_err(|_| EINVAL)?;
    let _reg = group.reg_mutex.lock();
    // The event keeps its own reference; the creator's goes here.
    group.find_or_create(name_args, REG_PERSIST).map(drop)
}

/// `show`: the `dynamic_events` line (upstream `user_event_show`).
pub(crate) fn show(w: &mut SeqWriter<'_>, event: &UserEvent) {
    let _ = show::write_show_line(w, event.reg_name(), event.field_tuples());
}

/// `is_busy` (upstream: `!user_event_last_ref`).
pub(crate) fn is_busy(e: &UserEvent) -> bool {
    !e.is_last_ref() || e.core_busy()
}

/// `free` (upstream `user_event_free`): deletes an unused event.
///
/// # Safety
///
/// `event` is registered.
pub(crate) unsafe fn free(event: NonNull<UserEvent>, held: &mut Held) -> Result {
    // SAFETY: Registered (the caller's guarantee) and `event_mutex` is held (`held`).
    let e = unsafe { event.as_ref() };
    if !e.is_last_ref() {
        return Err(EBUSY);
    }
    if e.is_persist() && !trace_call::perfmon_capable() {
        return Err(EPERM);
    }
    group::unlink_and_free(event, held)
}

/// `match` (upstream `user_event_match`): by registered name, either user_events system (Q10),
/// and the exact field list (`args`, the core's words) without the `;` fix-up of the
/// registration path.
pub(crate) fn matches<'a>(
    e: &UserEvent,
    system: Option<&CStr>,
    name: &CStr,
    args: impl Iterator<Item = &'a [u8]>,
) -> bool {
    if name.to_bytes() != e.reg_name().as_bytes() {
        return false;
    }
    if let Some(system) = system {
        if !matching::system_matches(system.to_str().unwrap_or("")) {
            return false;
        }
    }
    // Re-join the core's words; splitting them again on whitespace gives the same tokens.
    let mut joined = KBuf::new();
    for (i, arg) in args.enumerate() {
        if (i > 0 && joined.push_bytes(b" ").is_err()) || joined.push_bytes(arg).is_err() {
            return false;
        }
    }
    let joined = joined.into_vec();
    let Ok(joined) = core::str::from_utf8(&joined) else {
        return false;
    };
    matching::fields_match(e.field_tuples(), joined, false)
}
