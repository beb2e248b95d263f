// SPDX-License-Identifier: GPL-2.0

//! The `u:` type's operations as the tracing core calls them: the `dyn_event_operations`
//! table, its link into `dynamic_events`, and the C entry points, which hand typed arguments to
//! the domain code in [`crate::dyn_events`].
//!
//! 7.3 exports neither `dyn_event_register()` nor the list the inline `dyn_event_add()` uses,
//! and has no way to unregister a type. The module does the same work on resolved data (see
//! [`crate::symbols`]): it links its `dyn_event_operations` into `dyn_event_ops_list` under
//! `dyn_event_ops_mutex`, and the group, which owns each event's life, links each event's
//! `struct dyn_event` into `dyn_event_list` under `event_mutex` ([`group::set_dyn_link`]); at
//! unload it unlinks the operations under the same mutex. The core only calls
//! the operations with `dyn_event_ops_mutex` (create) or `event_mutex` (show, match, free,
//! is_busy) held, so after the unlink no call can start and none is running.

use crate::{
    bindings, dyn_events,
    event::UserEvent,
    event_mutex::Held,
    group::{self, Group},
    seq::SeqWriter,
    symbols::{kernel_mutex, Symbols},
    trace_call::{DynEvent, DynLink},
};
use core::{
    cell::UnsafeCell,
    ptr::{null_mut, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{prelude::*, seq_file::SeqFile, sync::Arc};

/// The group `create` registers into, set while the operations are linked. A static because
/// the core calls `create` with the command text only.
static GROUP: AtomicPtr<Group> = AtomicPtr::new(null_mut());

/// The operations; the core links them through their `list` field.
struct Ops(UnsafeCell<bindings::dyn_event_operations>);

// SAFETY: The core reads the operations under its mutexes; this module writes `list` only while
// linking and unlinking under `dyn_event_ops_mutex`.
unsafe impl Sync for Ops {}

static OPS: Ops = Ops(UnsafeCell::new(bindings::dyn_event_operations {
    list: bindings::list_head {
        next: null_mut(),
        prev: null_mut(),
    },
    create: Some(create),
    show: Some(show_line),
    is_busy: Some(is_busy),
    free: Some(free),
    match_: Some(match_event),
}));

/// The `u:` operations, linked into `dynamic_events` while alive.
pub(crate) struct DynEventType {
    ops_mutex: NonNull<bindings::mutex>,
    _group: Arc<Group>,
}

// SAFETY: Only kernel-global objects are referenced.
unsafe impl Send for DynEventType {}
// SAFETY: As above.
unsafe impl Sync for DynEventType {}

impl DynEventType {
    /// Registers the `u:` type (upstream `dyn_event_register(&user_event_dops)`).
    pub(crate) fn new(symbols: &Symbols, group: Arc<Group>) -> Self {
        group::set_dyn_link(Some(DynLink {
            list: symbols.dyn_event_list,
            // SAFETY: The address of a static is not null.
            ops: unsafe { NonNull::new_unchecked(OPS.0.get()) },
        }));
        GROUP.store(Arc::as_ptr(&group).cast_mut(), Ordering::Release);
        // SAFETY: `dyn_event_ops_mutex` is a resolved symbol mutex; module init may sleep.
        let _guard = unsafe { kernel_mutex(symbols.dyn_event_ops_mutex) }.lock();
        // SAFETY: `dyn_event_ops_mutex` is held, which protects `dyn_event_ops_list`; `OPS` is
        // static and stays linked until `drop`.
        unsafe {
            let list = &raw mut (*OPS.0.get()).list;
            bindings::INIT_LIST_HEAD(list);
            bindings::list_add_tail(list, symbols.dyn_event_ops_list.as_ptr());
        }
        Self {
            ops_mutex: symbols.dyn_event_ops_mutex,
            _group: group,
        }
    }
}

impl Drop for DynEventType {
    fn drop(&mut self) {
        {
            // SAFETY: `ops_mutex` is the resolved `dyn_event_ops_mutex`; module exit may sleep.
            let _guard = unsafe { kernel_mutex(self.ops_mutex) }.lock();
            // SAFETY: Linked in `new` under the same mutex, held again here.
            unsafe { bindings::rue_list_del_init(&raw mut (*OPS.0.get()).list) };
        }
        GROUP.store(null_mut(), Ordering::Release);
        group::set_dyn_link(None);
    }
}

/// The event a `dyn_event` of ours belongs to.
///
/// # Safety
///
/// `ev` must be the `dyn_event` of a registered [`UserEvent`].
unsafe fn event_of(ev: *mut DynEvent) -> NonNull<UserEvent> {
    // SAFETY: Guaranteed by the caller.
    unsafe { UserEvent::from_devent(ev) }
}

/// `create` ([`dyn_events::create`]).
///
/// # Safety
///
/// Called by the core with a NUL-terminated command, under `dyn_event_ops_mutex`.
unsafe extern "C" fn create(raw_command: *const c_char) -> c_int {
    // SAFETY: The core passes a NUL-terminated string.
    let cmd = unsafe { CStr::from_char_ptr(raw_command) }.to_bytes();
    let group = GROUP.load(Ordering::Acquire);
    if group.is_null() {
        return ENOENT.to_errno();
    }
    // SAFETY: `GROUP` points to the group held by the registered type, alive while linked.
    let group = unsafe { &*group };
    match dyn_events::create(group, cmd) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `show` ([`dyn_events::show`]).
///
/// # Safety
///
/// Called by the core under `event_mutex` with one of our events.
unsafe extern "C" fn show_line(m: *mut bindings::seq_file, ev: *mut DynEvent) -> c_int {
    // SAFETY: `ev` is ours and registered while the core holds `event_mutex`.
    let event = unsafe { event_of(ev).as_ref() };
    // SAFETY: The core passes a valid seq_file.
    let seq = unsafe { SeqFile::from_raw(m) };
    dyn_events::show(&mut SeqWriter(seq), event);
    0
}

/// `is_busy` ([`dyn_events::is_busy`]).
///
/// # Safety
///
/// As [`show_line`].
unsafe extern "C" fn is_busy(ev: *mut DynEvent) -> bool {
    // SAFETY: As in `show_line`.
    dyn_events::is_busy(unsafe { event_of(ev).as_ref() })
}

/// `free` ([`dyn_events::free`]).
///
/// # Safety
///
/// As [`show_line`].
unsafe extern "C" fn free(ev: *mut DynEvent) -> c_int {
    // SAFETY: As in `show_line`.
    let event = unsafe { event_of(ev) };
    // SAFETY: The core holds `event_mutex` around `free`.
    let mut held = unsafe { Held::assume_held() };
    // SAFETY: As in `show_line`: `event` is registered, under `event_mutex`.
    match unsafe { dyn_events::free(event, &mut held) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `match` ([`dyn_events::matches`]).
///
/// # Safety
///
/// As [`show_line`], with `argc` strings in `argv`.
unsafe extern "C" fn match_event(
    system: *const c_char,
    event: *const c_char,
    argc: c_int,
    argv: *mut *const c_char,
    ev: *mut DynEvent,
) -> bool {
    // SAFETY: As in `show_line`.
    let e = unsafe { event_of(ev).as_ref() };
    // SAFETY: The core passes a NUL-terminated event name.
    let name = unsafe { CStr::from_char_ptr(event) };
    // SAFETY: A non-null system is NUL-terminated.
    let system = (!system.is_null()).then(|| unsafe { CStr::from_char_ptr(system) });
    let args = (0..usize::try_from(argc).unwrap_or(0))
        // SAFETY: `argv` holds `argc` NUL-terminated strings.
        .map(|i| unsafe { CStr::from_char_ptr(*argv.add(i)) }.to_bytes());
    dyn_events::matches(e, system, name, args)
}
