// SPDX-License-Identifier: GPL-2.0

//! A tracepoint's attached probes, read the way the tracing core's own `__DO_TRACE` reads them:
//! under the tracepoint read lock, the `tp->funcs` array up to its NULL terminator.
//!
//! The module uses this for the one tracepoint it owns per event: the write path calls each
//! probe, the status update classifies them.

use crate::bindings;
use core::marker::PhantomData;
use kernel::prelude::*;

/// Whether `tp` has any probe attached (`tracepoint_enabled`): one load of its static key.
///
/// # Safety
///
/// `tp` must be a registered tracepoint.
#[inline(always)]
pub(crate) unsafe fn enabled(tp: *mut bindings::tracepoint) -> bool {
    // SAFETY: Guaranteed by the caller.
    unsafe { bindings::rue_tracepoint_enabled(tp) }
}

/// The read side of the tracepoint probe arrays (`tracepoint_srcu`, fast flavour).
///
/// # Invariants
///
/// `cookie` is what `rue_tracepoint_read_lock` returned on this CPU's task, unlocked on drop.
pub(crate) struct ReadGuard {
    cookie: *mut c_void,
}

impl ReadGuard {
    /// Enters the read side.
    #[inline(always)]
    pub(crate) fn lock() -> Self {
        // SAFETY: No preconditions; the cookie is returned to the unlock in `drop`.
        let cookie = unsafe { bindings::rue_tracepoint_read_lock() };
        // INVARIANT: `cookie` comes from the lock above.
        Self { cookie }
    }

    /// The probes attached to `tp` now.
    ///
    /// # Safety
    ///
    /// `tp` must be a registered tracepoint.
    #[inline(always)]
    pub(crate) unsafe fn probes(&self, tp: *mut bindings::tracepoint) -> Probes<'_> {
        // SAFETY: Under the read lock (`self`), `funcs` is null or a live NULL-terminated array.
        let next = unsafe { bindings::rue_tracepoint_funcs(tp) };
        // INVARIANT: As above; the borrow of `self` keeps the read side held.
        Probes {
            next,
            _guard: PhantomData,
        }
    }
}

impl Drop for ReadGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: `cookie` came from the matching lock (type invariant).
        unsafe { bindings::rue_tracepoint_read_unlock(self.cookie) };
    }
}

/// One attached probe: its function and the data it was registered with.
#[derive(Clone, Copy)]
pub(crate) struct Probe {
    /// The probe function, of the tracepoint's prototype.
    pub(crate) func: *mut c_void,
    /// Its registration data (the first argument `__DO_TRACE` passes).
    pub(crate) data: *mut c_void,
}

/// The probes of one tracepoint, in the order the core calls them.
///
/// # Invariants
///
/// `next` is null or points into a NULL-terminated probe array that stays live while the
/// [`ReadGuard`] borrowed for `'a` is held.
pub(crate) struct Probes<'a> {
    next: *const bindings::tracepoint_func,
    _guard: PhantomData<&'a ReadGuard>,
}

impl Iterator for Probes<'_> {
    type Item = Probe;

    #[inline(always)]
    fn next(&mut self) -> Option<Probe> {
        if self.next.is_null() {
            return None;
        }
        // SAFETY: `next` points into the live array (type invariant).
        let (func, data) = unsafe { ((*self.next).func, (*self.next).data) };
        if func.is_null() {
            return None;
        }
        // SAFETY: Not at the terminator, so the array continues at least one more entry.
        // INVARIANT: Still within the array.
        self.next = unsafe { self.next.add(1) };
        Some(Probe { func, data })
    }
}
