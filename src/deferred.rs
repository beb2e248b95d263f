// SPDX-License-Identifier: GPL-2.0

//! The module's own workqueues.
//!
//! - **lifecycle** (ordered): delayed event destroys, one at a time in the order the events'
//!   last references went (the tracing core removes the newest events fastest). Nothing on it
//!   waits for user space: it takes `event_mutex`.
//! - **scopes** (unbound): each scope's teardown, the work of a process's exit or exec, and the
//!   fork copies a forking task does not make itself (see below, and [`crate::enabler`]). Unrelated processes'
//!   teardowns and copies run side by side, and none waits behind another process's work or a
//!   destroy. The orders a scope's work needs (a copy after the copy into its source, a
//!   teardown after the copies that read or fill the scope) are kept by [`crate::enabler`]
//!   itself, so this queue needs none.
//! - **faults** (per-CPU, as upstream's system workqueue): fault-ins of enable words, which may
//!   wait for as long as the page's owner makes them (see [`crate::enabler`]). Apart from the
//!   other work, and one work item per scope, so a slow fault-in delays only its own process's
//!   bits; one that sleeps lets the CPU's pool start another worker. Per-CPU, the fault-in a
//!   status change queues runs on the changing task's CPU, mostly before that task is back in
//!   user space; an unbound worker, woken elsewhere, was later three times as often.
//!
//! Destroying a workqueue at unload waits for every queued and running item, including items
//! they queue, so no work function of this module can run after its code is gone. The scopes
//! queue goes first (a copy may queue fault-ins, a teardown an event's destroy), then the
//! lifecycle queue, then the fault-ins; no item queues work on an earlier queue.
//!
//! Besides the queues, a task may run work of this module before it returns to user space
//! ([`OnReturn`], `task_work`): the fault-ins of its own enable words after it changed an
//! event's status, and a forking task its child's fork copy, as upstream makes it inside
//! `fork()`. Each such item holds a module reference (so `rmmod` refuses while one is
//! pending) and drops it as its last step ([`returned`]); the few instructions that run after
//! that are covered at unload by an RCU Tasks grace period (`synchronize_rcu_tasks`), which ends
//! only once every task has returned to user space or switched voluntarily since: the
//! guarantee the kernel's own trampolines rely on.

use crate::{bindings, compat, task};
use core::ptr::{null_mut, NonNull};
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use kernel::{prelude::*, types::Opaque, workqueue::Queue};

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
        let faults = Allocated::percpu(c"rust_user_events_faults")?;
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

    /// A per-CPU workqueue (`alloc_workqueue(WQ_PERCPU)`): an item runs on the CPU that queued
    /// it, in that CPU's worker pool.
    fn percpu(name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` is a NUL-terminated string that outlives the queue.
        let wq = unsafe { bindings::rue_alloc_percpu_workqueue(name.as_char_ptr()) };
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
        // Every task work item dropped its module reference (the module is unloading); wait
        // until each has also left its last instructions.
        if ON_RETURN_USED.load(Ordering::Relaxed) {
            // SAFETY: Process context (module exit), no lock held.
            #[cfg(CONFIG_TASKS_RCU)]
            unsafe {
                bindings::synchronize_rcu_tasks()
            };
            // Without RCU Tasks (C's `synchronize_rcu_tasks` is then `synchronize_rcu`), items
            // are queued only if the kernel is not preemptible ([`OnReturn::queue`]): a task
            // then leaves those instructions before it schedules.
            // SAFETY: As above.
            #[cfg(not(CONFIG_TASKS_RCU))]
            unsafe {
                bindings::synchronize_rcu()
            };
        }
    }
}

/// Set once a task work item was queued ([`OnReturn::queue`]): the unload then waits for RCU Tasks.
static ON_RETURN_USED: AtomicBool = AtomicBool::new(false);

/// A task work item as the kernel's C code knows it (`struct callback_head`).
pub(crate) type CallbackHead = bindings::callback_head;

/// A task work function of this module.
pub(crate) type OnReturnFn = unsafe extern "C" fn(*mut CallbackHead);

/// A task work item (`struct callback_head`), to embed in the object its function works on:
/// the function receives a pointer to it (`container_of!` through a pointer cast to this
/// transparent type).
#[repr(transparent)]
pub(crate) struct OnReturn(Opaque<bindings::callback_head>);

// SAFETY: The `callback_head` is written only by `OnReturn::queue` and the task work code, while
// the item is owned by whoever queued it (`OnReturn::queue`'s contract); it holds no reference to
// the thread that queued it.
unsafe impl Send for OnReturn {}
// SAFETY: As above.
unsafe impl Sync for OnReturn {}

impl OnReturn {
    /// A task work item not yet queued.
    pub(crate) const fn new() -> Self {
        Self(Opaque::uninit())
    }

    /// Queues `func` to run in the calling task before it returns to user space, with this
    /// item (`task_work_add`, `TWA_RESUME`), taking a module reference for it. False, and
    /// nothing queued, if the module is unloading or the task exiting (or the kernel is
    /// preemptible without RCU Tasks).
    ///
    /// # Safety
    ///
    /// The item is not queued, stays valid until `func` runs, and is not queued again before
    /// `func` started; `func` calls [`returned`] as its last step.
    pub(crate) unsafe fn queue(&self, func: OnReturnFn) -> bool {
        // A preemptible kernel without RCU Tasks (no tracer, kprobe or BPF trampoline needs
        // it) could not tell when the last instructions of `func` have run.
        if cfg!(all(CONFIG_PREEMPTION, not(CONFIG_TASKS_RCU))) {
            return false;
        }
        if !module_get() {
            return false;
        }
        ON_RETURN_USED.store(true, Ordering::Relaxed);
        let head = self.0.get();
        // SAFETY: `head` is valid and not queued (the caller's guarantee): `init_task_work`.
        unsafe { (*head).func = Some(func) };
        // SAFETY: The calling task is live; `head` stays valid until `func` runs.
        let ret = unsafe {
            bindings::task_work_add(
                task::current(),
                head,
                bindings::task_work_notify_mode_TWA_RESUME,
            )
        };
        if ret == 0 {
            return true;
        }
        // SAFETY: The reference taken above, which nothing else holds.
        unsafe { module_put() };
        false
    }
}

/// Takes a reference on this module (`try_module_get`): false once it is unloading.
pub(crate) fn module_get() -> bool {
    // SAFETY: This module is live while its code runs.
    unsafe { bindings::try_module_get(compat::THIS_MODULE) }
}

/// Drops a reference on this module.
///
/// # Safety
///
/// The caller owns a reference [`module_get`] took, and runs no code of this module after the
/// call that the unload does not wait for.
pub(crate) unsafe fn module_put() {
    // SAFETY: The caller's reference.
    unsafe { bindings::module_put(compat::THIS_MODULE) };
}

/// The last step of a function queued by [`OnReturn::queue`]: drops its module reference.
///
/// # Safety
///
/// Called once per function [`OnReturn::queue`] queued, as its last step.
pub(crate) unsafe fn returned() {
    // SAFETY: The reference `OnReturn::queue` took; the unload waits for the caller's return (see
    // the module docs).
    unsafe { module_put() };
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

/// The per-CPU fault-in workqueue.
pub(crate) fn faults() -> Option<&'static Queue> {
    queue(&FAULTS)
}
