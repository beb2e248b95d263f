// SPDX-License-Identifier: GPL-2.0

//! `event_mutex`, the tracing core's lock, and what this module keeps under it.
//!
//! As upstream, `event_mutex` protects the event table, every event's reference count
//! transitions and status, and every enabler. The core already holds it when it calls an event
//! class's `reg()` (ftrace enable, perf open/close) and when it adds or removes event calls, so
//! using the same lock lets the callbacks touch module state without a second lock.
//!
//! # Lock order
//!
//! This is the module's one, complete lock order: every lock the module takes, and every lock of
//! the kernel's it takes or calls into while holding one of its own. Other files point here.
//!
//! ```text
//! dyn_event_ops_mutex            (the core's; held around the `u:` type's `create`)
//!  └→ Group::reg_mutex           (REG, DEL, UNREG, `create`, a file's release)
//!      ├→ event_mutex            (the core's; held by it around `class->reg` and the other
//!      │   │                      `dynamic_events` callbacks)
//!      │   ├→ mmap_lock (read)   (a scope's address space: writing an enable bit)
//!      │   ├→ tracepoints_mutex  (the core's: attaching and detaching probes in `class->reg`)
//!      │   ├→ tracepoint_srcu    (read side: recomputing an event's consumers in `class->reg`)
//!      │   ├→ Scope::fork        (spinlock)
//!      │   └→ the tracing core's own locks inside `trace_add_event_call`,
//!      │                          `trace_remove_event_call` and `register_trace_event`
//!      └→ mmap_lock (read)       (REG and UNREG fault the word in, `event_mutex` released)
//!
//! scope::TASKS (spinlock)        (the fork, exec and exit probes; REG and UNREG look-ups)
//! Scope::fork (spinlock)         (the fork probe, fork copies, fault lists, `copy_done` waits)
//! ```
//!
//! * `scope::TASKS` and `Scope::fork` are innermost: nothing is taken, allocated with
//!   `GFP_KERNEL` or slept on under them, and neither is taken under the other. The fork probe
//!   runs in the tracepoint's atomic read side and takes each in turn.
//! * A forked child's REG/UNREG makes sure its fork copy ran before it takes `reg_mutex`: it runs
//!   the copy itself (taking `event_mutex` once per batch of enablers, reading the child's words
//!   under `mmap_lock` between, and taking `mmap_lock` under `event_mutex` for a bit write, as a
//!   status change does, as the copy's work item does), or waits on `Scope::copy_done` (with `Scope::fork`,
//!   released by the wait) for the copy its forker (or a worker) runs, which waits for nothing. REG and UNREG
//!   may then fault their word in (`mmap_lock`, killable) with no lock of this module held.
//! * Work items (fork copies, teardowns, fault-ins, delayed destroys) start with no lock held and
//!   take `event_mutex` (the fault work: `mmap_lock` for the fault-in first, released), so
//!   draining a workqueue at unload, with no lock held, cannot deadlock.
//! * The write path takes no lock: atomic loads (a file's index table), then the
//!   `tracepoint_srcu` read side with preemption and page faults disabled
//!   ([`crate::tracepoint::WriteGuard`]); nothing there sleeps.
//! * The module's own load and unload take `dyn_event_ops_mutex` and `event_mutex` one at a time.

use crate::{bindings, symbols};
use core::{
    cell::UnsafeCell,
    ptr::{null_mut, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::sync::MutexGuard;

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
    _guard: Option<MutexGuard<'static, ()>>,
}

impl Held {
    /// Locks `event_mutex`; process context only (it may sleep).
    pub(crate) fn lock() -> Self {
        Self {
            // SAFETY: `mutex()` is the resolved static `event_mutex`; every caller in this
            // module runs in process context (file operations, work items, module init/exit).
            _guard: Some(unsafe { symbols::kernel_mutex(mutex()) }.lock()),
        }
    }

    /// A proof for code the tracing core calls with `event_mutex` held (`class->reg`).
    ///
    /// # Safety
    ///
    /// The caller must be running under `event_mutex` held by its caller, for the lifetime of
    /// the returned value (lockdep checks this), and no other [`Held`] may be alive on this
    /// thread meanwhile: the tracing core took the mutex, not this module's code further up the
    /// stack. [`EventLocked::get`] and [`EventLocked::get_ref`] rely on one `Held` at a time.
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

    /// Reads the data; the shared `&Held` borrow rules out a [`Self::get`] for its lifetime.
    pub(crate) fn get_ref<'a>(&'a self, _held: &'a Held) -> &'a T {
        // SAFETY: `event_mutex` is held (the `Held` proof), so no other thread accesses the
        // data, and this thread's only way to write it, `get`, needs the `Held` borrowed
        // mutably, which the shared borrow for `'a` excludes.
        unsafe { &*self.data.get() }
    }
}
