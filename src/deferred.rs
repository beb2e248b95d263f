// SPDX-License-Identifier: GPL-2.0

//! The module's own workqueues.
//!
//! - **lifecycle** (ordered): delayed event destroys, one at a time in the order the events'
//!   last references went (the tracing core removes the newest events fastest). Nothing on it
//!   waits for user space: it takes `event_mutex`.
//! - **scopes** (unbound): each scope's fork copy and teardown, the work of a process's fork,
//!   exit or exec. Unrelated processes' copies and teardowns run side by side, and none waits
//!   behind another process's work or a destroy. The orders a scope's work needs (a copy after
//!   the copy into its source, a teardown after the copies that read or fill the scope) are
//!   kept by [`crate::enabler`] itself, so this queue needs none.
//! - **faults** (unbound): fault-ins of enable words, which may wait for as long as the page's
//!   owner makes them (see [`crate::enabler`]). Apart from the other work, and one work item per
//!   scope, so a slow fault-in delays only its own process's bits.
//!
//! Destroying a workqueue at unload waits for every queued and running item, including items
//! they queue, so no work function of this module can run after its code is gone. The scopes
//! queue goes first (a copy may queue fault-ins, a teardown an event's destroy), then the
//! lifecycle queue, then the fault-ins; no item queues work on an earlier queue.

use crate::bindings;
use core::ptr::{null_mut, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::{prelude::*, workqueue::Queue};

static LIFECYCLE: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(null_mut());
static FAULTS: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(null_mut());
static SCOPES: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(null_mut());

/// Owns the workqueues; published for [`lifecycle`], [`scopes`] and [`faults`] while alive.
///
/// # Invariants
///
/// The three pointers are live workqueues, owned here and destroyed in `drop`.
pub(crate) struct Workqueues {
    scopes: NonNull<bindings::workqueue_struct>,
    lifecycle: NonNull<bindings::workqueue_struct>,
    faults: NonNull<bindings::workqueue_struct>,
}

// SAFETY: A workqueue may be used and destroyed from any thread.
unsafe impl Send for Workqueues {}
// SAFETY: As above.
unsafe impl Sync for Workqueues {}

impl Workqueues {
    /// Allocates the three workqueues.
    pub(crate) fn new() -> Result<Self> {
        let faults = Allocated::unbound(c"rust_user_events_faults")?;
        let lifecycle = Allocated::ordered(c"rust_user_events")?;
        let scopes = Allocated::unbound(c"rust_user_events_scopes")?;
        let (faults, lifecycle, scopes) = (
            faults.publish(&FAULTS),
            lifecycle.publish(&LIFECYCLE),
            scopes.publish(&SCOPES),
        );
        // INVARIANT: All three allocated above.
        Ok(Self {
            scopes,
            lifecycle,
            faults,
        })
    }
}

/// A workqueue allocated and not yet published: destroyed if dropped (a later allocation in
/// [`Workqueues::new`] failed).
///
/// # Invariants
///
/// `0` is a live workqueue that nothing else refers to.
struct Allocated(NonNull<bindings::workqueue_struct>);

impl Allocated {
    /// An unbound workqueue (`alloc_workqueue(WQ_UNBOUND)`).
    fn unbound(name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` is a NUL-terminated string that outlives the queue.
        let wq = unsafe { bindings::rue_alloc_unbound_workqueue(name.as_char_ptr()) };
        // INVARIANT: Just allocated.
        NonNull::new(wq).map(Self).ok_or(ENOMEM)
    }

    /// An ordered workqueue (`alloc_ordered_workqueue`).
    fn ordered(name: &'static CStr) -> Result<Self> {
        // SAFETY: As above.
        let wq = unsafe { bindings::rue_alloc_workqueue(name.as_char_ptr()) };
        // INVARIANT: Just allocated.
        NonNull::new(wq).map(Self).ok_or(ENOMEM)
    }

    /// Publishes the queue in `slot`; [`Workqueues`] destroys it from now on.
    fn publish(
        self,
        slot: &AtomicPtr<bindings::workqueue_struct>,
    ) -> NonNull<bindings::workqueue_struct> {
        let wq = core::mem::ManuallyDrop::new(self).0;
        slot.store(wq.as_ptr(), Ordering::Release);
        wq
    }
}

impl Drop for Allocated {
    fn drop(&mut self) {
        // SAFETY: Live and never published (type invariants): nothing was queued on it.
        unsafe { bindings::destroy_workqueue(self.0.as_ptr()) };
    }
}

/// Drains and destroys the published workqueue in `slot`, then unpublishes it.
///
/// # Safety
///
/// `wq` is the live workqueue published in `slot`, owned by the caller, and not used by it
/// again.
unsafe fn destroy(
    wq: NonNull<bindings::workqueue_struct>,
    slot: &AtomicPtr<bindings::workqueue_struct>,
) {
    // SAFETY: Live and owned (the caller's guarantee); the destroy drains every item first,
    // including items they queue on it.
    unsafe { bindings::destroy_workqueue(wq.as_ptr()) };
    slot.store(null_mut(), Ordering::Release);
}

impl Drop for Workqueues {
    fn drop(&mut self) {
        // SAFETY: Each was allocated and published in `new` (type invariants) and is destroyed
        // once, drained before the queues its items use (see the module docs).
        unsafe {
            destroy(self.scopes, &SCOPES);
            destroy(self.lifecycle, &LIFECYCLE);
            destroy(self.faults, &FAULTS);
        }
    }
}

/// Borrows a published workqueue; `None` only during module exit, after it drained.
fn queue(ptr: &AtomicPtr<bindings::workqueue_struct>) -> Option<&'static Queue> {
    let wq = ptr.load(Ordering::Acquire);
    // SAFETY: `wq` is live while published (see `Workqueues::drop`).
    (!wq.is_null()).then(|| unsafe { Queue::from_raw(wq) })
}

/// The ordered lifecycle workqueue.
pub(crate) fn lifecycle() -> Option<&'static Queue> {
    queue(&LIFECYCLE)
}

/// The unbound workqueue of scopes' fork copies and teardowns.
pub(crate) fn scopes() -> Option<&'static Queue> {
    queue(&SCOPES)
}

/// The unbound fault-in workqueue.
pub(crate) fn faults() -> Option<&'static Queue> {
    queue(&FAULTS)
}
