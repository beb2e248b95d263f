// SPDX-License-Identifier: GPL-2.0

//! The module's own workqueue for deferred work (delayed event destroy, process fork, exec and
//! exit). It is ordered: items run one at a time in queueing order, so a child's enablers are
//! copied before its exit or exec cleanup runs. Destroying it at unload waits for every queued
//! and running item, so no work function of this module can run after its code is gone.

use crate::bindings;
use core::ptr::{null_mut, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;

static WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(null_mut());

/// Owns the workqueue; published for [`queue`] while alive.
pub(crate) struct Workqueue {
    wq: NonNull<bindings::workqueue_struct>,
}

// SAFETY: A workqueue may be used and destroyed from any thread.
unsafe impl Send for Workqueue {}
// SAFETY: As above.
unsafe impl Sync for Workqueue {}

impl Workqueue {
    /// Allocates the workqueue.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: `name` is a NUL-terminated literal.
        let wq = NonNull::new(unsafe {
            bindings::rue_alloc_workqueue(c"rust_user_events".as_char_ptr())
        })
        .ok_or(ENOMEM)?;
        WQ.store(wq.as_ptr(), Ordering::Release);
        Ok(Self { wq })
    }
}

impl Drop for Workqueue {
    fn drop(&mut self) {
        // SAFETY: Allocated in `new`; drains every item, including items they queue, first.
        unsafe { bindings::destroy_workqueue(self.wq.as_ptr()) };
        WQ.store(null_mut(), Ordering::Release);
    }
}

/// Queues `work`; false if it was already queued or the workqueue is gone.
///
/// # Safety
///
/// `work` must be initialised and stay valid until its function runs.
pub(crate) unsafe fn queue(work: *mut bindings::work_struct) -> bool {
    let wq = WQ.load(Ordering::Acquire);
    // SAFETY: `wq` is live while non-null (cleared before destruction); `work` per the caller.
    !wq.is_null() && unsafe { bindings::rue_queue_work(wq, work) }
}
