// SPDX-License-Identifier: GPL-2.0

//! A wait queue whose waits a fatal signal ends (`TASK_KILLABLE`, the kernel's
//! `wait_event_killable`): the kernel crate's `CondVar` waits only uninterruptibly or
//! interruptibly, and an interruptible wait would give `EINTR` to a program with a signal
//! handler, an errno upstream's REG and UNREG never return.
//!
//! C header: [`include/linux/wait.h`](srctree/include/linux/wait.h)

use crate::bindings;
use core::ptr::null_mut;
use kernel::{
    ffi::c_int, prelude::*, str::CStr, sync::LockClassKey, task::TASK_NORMAL, types::Opaque,
};

/// A `struct wait_queue_head` on which a task waits until a condition holds or it is killed.
#[pin_data]
pub(crate) struct KillableWait {
    #[pin]
    head: Opaque<bindings::wait_queue_head>,
}

// SAFETY: `KillableWait` only uses a `struct wait_queue_head`, which any thread may use.
unsafe impl Send for KillableWait {}

// SAFETY: `KillableWait` only uses a `struct wait_queue_head`, which is safe to use on many
// threads at once (its own spinlock guards it).
unsafe impl Sync for KillableWait {}

impl KillableWait {
    /// A wait queue whose spinlock lockdep knows as `name`, of class `key`.
    pub(crate) fn new(name: &'static CStr, key: Pin<&'static LockClassKey>) -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `slot` is valid while the closure runs, and `name` and `key` are static.
            head <- Opaque::ffi_init(|slot| unsafe {
                bindings::__init_waitqueue_head(slot, name.as_char_ptr(), key.as_ptr())
            }),
        })
    }

    /// Sleeps until `done()` is true (`Ok`), or until the calling task has a fatal signal
    /// pending (`EINTR`, which the dying task never returns to user space). Whoever makes
    /// `done()` true calls [`KillableWait::wake_all`] after, as `wait_event_killable` requires:
    /// the condition is read after the task is queued and its state set, so a wake between the
    /// two is not lost.
    pub(crate) fn wait_until(&self, done: impl Fn() -> bool) -> Result {
        let entry = Opaque::<bindings::wait_queue_entry>::uninit();
        // SAFETY: `entry` is valid memory, initialised here and not moved while queued.
        unsafe { bindings::init_wait_entry(entry.get(), 0) };
        loop {
            // SAFETY: `head` was initialised by `new`, and `entry` by `init_wait_entry`. A
            // nonzero return means a fatal signal is pending, and the entry was taken off the
            // queue again.
            // CAST: `TASK_KILLABLE` (0x102) is a task state, which C passes as `int`.
            let killed = unsafe {
                bindings::prepare_to_wait_event(
                    self.head.get(),
                    entry.get(),
                    bindings::TASK_KILLABLE as c_int,
                )
            };
            if done() {
                break;
            }
            if killed != 0 {
                return Err(EINTR);
            }
            // SAFETY: the task is queued in the killable state; a wake or a fatal signal makes
            // it runnable again.
            unsafe { bindings::schedule() };
        }
        // SAFETY: `head` and `entry` are valid; the entry may still be queued.
        unsafe { bindings::finish_wait(self.head.get(), entry.get()) };
        Ok(())
    }

    /// Wakes every task sleeping in [`KillableWait::wait_until`].
    pub(crate) fn wake_all(&self) {
        // SAFETY: `head` was initialised by `new`; a null key is what `wake_up_all` passes.
        unsafe { bindings::__wake_up(self.head.get(), TASK_NORMAL, 0, null_mut()) };
    }
}
