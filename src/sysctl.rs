// SPDX-License-Identifier: GPL-2.0

//! `kernel.user_events_max` (`/proc/sys/kernel/user_events_max`): how many events may exist.
//!
//! Upstream registers it with the boot-only `register_sysctl_init()`; a module uses the exported
//! `register_sysctl_sz()` and removes it at unload. The value is checked only when an event is
//! created (`EMFILE` past it); lowering it deletes nothing.

use crate::{bindings, group::MAX_USER_EVENTS, names};
use core::ptr::NonNull;
use kernel::prelude::*;

/// The sysctl table; `const` data the sysctl core only reads.
struct Table([bindings::ctl_table; 1]);

// SAFETY: The table is never written; `data` points to an atomic the handler writes as a u32.
unsafe impl Sync for Table {}

#[expect(
    clippy::disallowed_methods,
    reason = "a static needs a const pointer; `as_char_ptr` is not const"
)]
static TABLE: Table = Table([bindings::ctl_table {
    procname: names::MAX_SYSCTL.as_ptr().cast(),
    data: (&raw const MAX_USER_EVENTS).cast_mut().cast(),
    maxlen: core::mem::size_of::<u32>() as c_int,
    mode: 0o644,
    proc_handler: Some(bindings::proc_douintvec),
    poll: core::ptr::null_mut(),
    extra1: core::ptr::null_mut(),
    extra2: core::ptr::null_mut(),
}]);

/// The registered sysctl; unregistered on drop.
pub(crate) struct Sysctl {
    header: NonNull<bindings::ctl_table_header>,
}

// SAFETY: A sysctl header may be unregistered from any thread.
unsafe impl Send for Sysctl {}
// SAFETY: `&Sysctl` exposes nothing.
unsafe impl Sync for Sysctl {}

impl Sysctl {
    /// Registers `kernel.user_events_max`.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: `TABLE` is static and valid for the module's lifetime, which outlasts the
        // registration (dropped at unload).
        let header =
            unsafe { bindings::register_sysctl_sz(c"kernel".as_char_ptr(), TABLE.0.as_ptr(), 1) };
        NonNull::new(header)
            .map(|header| Self { header })
            .ok_or(ENOMEM)
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        // SAFETY: Registered in `new`.
        unsafe { bindings::unregister_sysctl_table(self.header.as_ptr()) };
    }
}
