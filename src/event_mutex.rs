// SPDX-License-Identifier: GPL-2.0

//! `event_mutex`, the tracing core's lock, and what this module keeps under it.
//!
//! As upstream, `event_mutex` protects the event table, every event's reference count
//! transitions and status, and every enabler. The core already holds it when it calls an event
//! class's `reg()` (ftrace enable, perf open/close) and when it adds or removes event calls, so
//! using the same lock lets the callbacks touch module state without a second lock.
//!
//! Lock order (documented once, here; every lock the module takes):
//!
//! ```text
//! Group::reg_mutex → event_mutex → mmap_lock (read, of a scope's address space)
//!                               → Scope::fork (spinlock)
//! scope::TASKS (spinlock, in the fork/exec/exit probes) → Scope::fork
//! ```
//!
//! The two spinlocks are innermost: nothing sleeps or takes another lock under them. A forked
//! child's REG/UNREG waits for its fork copy on `Scope::copy_done` before taking `reg_mutex`.
//! RCU (each file's index array) and the tracepoint read side are only taken on the write path,
//! which takes no other lock.

use crate::{bindings, symbols::KernelMutexGuard};
use core::{
    cell::UnsafeCell,
    ptr::{null_mut, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};

/// The resolved `event_mutex`, set once at module load before anything can use it.
static EVENT_MUTEX: AtomicPtr<bindings::mutex> = AtomicPtr::new(null_mut());

/// Records where `event_mutex` is; called once by module init.
pub(crate) fn init(mutex: NonNull<bindings::mutex>) {
    EVENT_MUTEX.store(mutex.as_ptr(), Ordering::Release);
}

fn mutex() -> NonNull<bindings::mutex> {
    // PANIC: `init` runs before any file or event exists, and nothing else calls this.
    NonNull::new(EVENT_MUTEX.load(Ordering::Acquire)).expect("event_mutex used before init")
}

/// Proof that `event_mutex` is held: locked here, or held by the tracing core around a callback.
pub(crate) struct Held {
    _guard: Option<KernelMutexGuard>,
}

impl Held {
    /// Locks `event_mutex`; process context only (it may sleep).
    pub(crate) fn lock() -> Self {
        Self {
            // SAFETY: `mutex()` is the resolved static `event_mutex`; every caller in this
            // module runs in process context (file operations, work items, module init/exit).
            _guard: Some(unsafe { KernelMutexGuard::lock(mutex()) }),
        }
    }

    /// A proof for code the tracing core calls with `event_mutex` held (`class->reg`).
    ///
    /// # Safety
    ///
    /// The caller must be running under `event_mutex` held by its caller, for the lifetime of
    /// the returned value. Lockdep checks this.
    pub(crate) unsafe fn assume_held() -> Self {
        // SAFETY: `mutex()` is the resolved, static `event_mutex`.
        unsafe { bindings::rue_lockdep_assert_held(mutex().as_ptr()) };
        Self { _guard: None }
    }
}

/// Data protected by `event_mutex`.
pub(crate) struct EventLocked<T> {
    data: UnsafeCell<T>,
}

// SAFETY: Access is serialised by `event_mutex` (see `get`); `T: Send` may move between threads.
unsafe impl<T: Send> Sync for EventLocked<T> {}
// SAFETY: As above.
unsafe impl<T: Send> Send for EventLocked<T> {}

impl<T> EventLocked<T> {
    /// Wraps `data`.
    pub(crate) const fn new(data: T) -> Self {
        Self {
            data: UnsafeCell::new(data),
        }
    }

    /// Accesses the data; the `&mut Held` borrow makes the access exclusive for its lifetime.
    pub(crate) fn get<'a>(&'a self, _held: &'a mut Held) -> &'a mut T {
        // SAFETY: `event_mutex` is held (the `Held` proof) and borrowed mutably for `'a`, so no
        // other access through this module can overlap: every access needs a `Held`, and only
        // one thread holds the mutex.
        unsafe { &mut *self.data.get() }
    }
}
