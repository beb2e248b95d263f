// SPDX-License-Identifier: GPL-2.0

//! The module's own workqueues.
//!
//! - **lifecycle** (ordered): fork copies, scope teardowns and delayed event destroys. Items run
//!   one at a time in queueing order, so a child's enablers are copied before its exit or exec
//!   teardown runs, and a parent's teardown never overtakes a copy of it. Nothing on it waits
//!   for user space: it takes `event_mutex` and allocates.
//! - **faults** (unbound): fault-ins of enable words, which may wait for as long as the page's
//!   owner makes them (see [`crate::enabler`]). Apart from the lifecycle work, and one work item
//!   per scope, so a slow fault-in delays only its own process's bits.
//!
//! Destroying a workqueue at unload waits for every queued and running item, including items
//! they queue, so no work function of this module can run after its code is gone. The
//! lifecycle queue is destroyed first: its items may queue fault-ins, never the reverse.

use crate::bindings;
use core::ptr::{null_mut, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::{prelude::*, workqueue::Queue};

static LIFECYCLE: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(null_mut());
static FAULTS: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(null_mut());

/// Owns the workqueues; published for [`lifecycle`] and [`faults`] while alive.
///
/// # Invariants
///
/// Both pointers are live workqueues, owned here and destroyed in `drop`.
pub(crate) struct Workqueues {
    lifecycle: NonNull<bindings::workqueue_struct>,
    faults: NonNull<bindings::workqueue_struct>,
}

// SAFETY: A workqueue may be used and destroyed from any thread.
unsafe impl Send for Workqueues {}
// SAFETY: As above.
unsafe impl Sync for Workqueues {}

impl Workqueues {
    /// Allocates both workqueues.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: `name` is a NUL-terminated literal.
        let faults = NonNull::new(unsafe {
            bindings::rue_alloc_unbound_workqueue(c"rust_user_events_faults".as_char_ptr())
        })
        .ok_or(ENOMEM)?;
        // SAFETY: As above.
        let Some(lifecycle) = NonNull::new(unsafe {
            bindings::rue_alloc_workqueue(c"rust_user_events".as_char_ptr())
        }) else {
            // SAFETY: Allocated above and never published.
            unsafe { bindings::destroy_workqueue(faults.as_ptr()) };
            return Err(ENOMEM);
        };
        FAULTS.store(faults.as_ptr(), Ordering::Release);
        LIFECYCLE.store(lifecycle.as_ptr(), Ordering::Release);
        // INVARIANT: Both allocated above.
        Ok(Self { lifecycle, faults })
    }
}

impl Drop for Workqueues {
    fn drop(&mut self) {
        // SAFETY: Allocated in `new` (type invariants); each destroy drains every item first.
        // Lifecycle work may queue fault-ins, so it goes first.
        unsafe {
            bindings::destroy_workqueue(self.lifecycle.as_ptr());
            LIFECYCLE.store(null_mut(), Ordering::Release);
            bindings::destroy_workqueue(self.faults.as_ptr());
            FAULTS.store(null_mut(), Ordering::Release);
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

/// The unbound fault-in workqueue.
pub(crate) fn faults() -> Option<&'static Queue> {
    queue(&FAULTS)
}
