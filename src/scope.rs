// SPDX-License-Identifier: GPL-2.0

//! Which enablers a task sees: upstream's `task_struct::user_event_mm`, kept in a table.
//!
//! Upstream scopes enablers per *task lineage*, not per address space (spec §4.2): a task gets a
//! scope the first time it registers; tasks it later creates with `CLONE_VM` (threads, vfork,
//! posix_spawn) share it; a plain fork gets a new scope holding copies of the parent's
//! enablers; exec and exit leave the scope, and the last task to leave drops its enablers.
//! Threads created *before* the first registration have no scope and get their own when they
//! register, which is what makes `EADDRINUSE` and UNREG per lineage.
//!
//! A kernel without user_events has no `task_struct` field for this, so the module keeps a
//! table from task to scope, filled and emptied from the fork, exec and exit tracepoints. The
//! `CLONE_VM` entry is made in the fork probe itself, before the child can run and register.
//!
//! Locking and allocation: one spinlock (`SCOPES`) protects the whole table. The tracepoint
//! probes run in atomic context and allocate under it with `GFP_NOWAIT`. A registration (REG)
//! runs in process context: when the table is full it allocates larger vectors with `GFP_KERNEL`
//! outside the lock, moves the entries over under the lock (`Table::adopt`), and frees the old
//! vectors after unlocking.

use crate::bindings;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::prelude::*;

/// A scope id; never reused.
pub(crate) type ScopeId = u64;

/// The table: which scope each task belongs to, how many tasks each scope has, and which
/// scopes are still waiting for the copy of their parent's enablers.
pub(crate) struct Table {
    tasks: KVec<(usize, ScopeId)>,
    counts: KVec<(ScopeId, u32)>,
    /// Scopes of forked children whose enabler copy is queued but has not run yet.
    copying: KVec<ScopeId>,
    next: ScopeId,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised by `init` in module init, before any probe or file can use it.
    unsafe(uninit) static SCOPES: SpinLock<Table> = Table {
        tasks: KVec::new(),
        counts: KVec::new(),
        copying: KVec::new(),
        next: 1,
    };
}

/// True while any task has a scope: the probes skip all work otherwise.
static ANY: AtomicBool = AtomicBool::new(false);

/// Initialises the table's lock; called once by module init.
pub(crate) fn init() {
    // SAFETY: Called exactly once, before any other use.
    unsafe { SCOPES.init() };
}

/// True if any task has a scope (may be stale; only used to skip work).
pub(crate) fn any() -> bool {
    ANY.load(Ordering::Relaxed)
}

fn current_task() -> usize {
    // SAFETY: No preconditions.
    unsafe { bindings::get_current() as usize }
}

impl Table {
    fn scope_of(&self, task: usize) -> Option<ScopeId> {
        self.tasks.iter().find(|(t, _)| *t == task).map(|(_, s)| *s)
    }

    fn join(&mut self, task: usize, scope: ScopeId) -> Result {
        self.tasks.reserve(1, GFP_NOWAIT)?;
        let count = match self.counts.iter_mut().find(|(s, _)| *s == scope) {
            Some((_, count)) => count,
            None => {
                self.counts.push((scope, 0), GFP_NOWAIT)?;
                // PANIC: Pushed just above.
                &mut self.counts.last_mut().expect("pushed").1
            }
        };
        *count += 1;
        // PANIC: Capacity was reserved above.
        self.tasks
            .push((task, scope), GFP_NOWAIT)
            .expect("reserved");
        ANY.store(true, Ordering::Relaxed);
        Ok(())
    }

    fn new_scope(&mut self) -> ScopeId {
        let scope = self.next;
        self.next += 1;
        scope
    }

    /// Removes `task`; returns its scope if it was the scope's last task.
    fn leave(&mut self, task: usize) -> Option<ScopeId> {
        let i = self.tasks.iter().position(|(t, _)| *t == task)?;
        let (_, scope) = self.tasks.remove(i).ok()?;
        let j = self.counts.iter().position(|(s, _)| *s == scope)?;
        let last = {
            let count = &mut self.counts[j].1;
            *count -= 1;
            *count == 0
        };
        if self.tasks.is_empty() {
            ANY.store(false, Ordering::Relaxed);
        }
        if last {
            let _ = self.counts.remove(j);
            Some(scope)
        } else {
            None
        }
    }

    /// True if `tasks` has room for one more entry without allocating.
    fn tasks_have_room(&self) -> bool {
        self.tasks.len() < self.tasks.capacity()
    }

    /// True if `counts` has room for one more entry without allocating.
    fn counts_have_room(&self) -> bool {
        self.counts.len() < self.counts.capacity()
    }

    /// Moves the entries into `tasks` and `counts`, where given and larger than the current
    /// vectors. The replaced vectors are left in `tasks` and `counts` for the caller to free
    /// outside the lock.
    fn adopt(
        &mut self,
        tasks: &mut Option<KVec<(usize, ScopeId)>>,
        counts: &mut Option<KVec<(ScopeId, u32)>>,
    ) {
        if let Some(tasks) = tasks {
            if tasks.capacity() > self.tasks.capacity()
                && tasks.extend_from_slice(&self.tasks, GFP_NOWAIT).is_ok()
            {
                core::mem::swap(tasks, &mut self.tasks);
            }
        }
        if let Some(counts) = counts {
            if counts.capacity() > self.counts.capacity()
                && counts.extend_from_slice(&self.counts, GFP_NOWAIT).is_ok()
            {
                core::mem::swap(counts, &mut self.counts);
            }
        }
    }
}

/// Times [`current_or_create`] grows the table outside the lock before it settles for an
/// allocation under it.
const GROW_ATTEMPTS: usize = 3;

/// A vector of `len + 1` entries' room and as much again, allocated with `GFP_KERNEL`, or `None`
/// if the table's vector already has room.
fn grown<T>(has_room: bool, len: usize) -> Result<Option<KVec<T>>> {
    if has_room {
        return Ok(None);
    }
    let capacity = len
        .checked_add(1)
        .and_then(|n| n.checked_mul(2))
        .ok_or(ENOMEM)?;
    Ok(Some(KVec::with_capacity(capacity, GFP_KERNEL)?))
}

/// The calling task's scope, created on first need (upstream `current_user_event_mm`).
///
/// Runs in process context, so a full table grows with `GFP_KERNEL` outside the spinlock and a
/// transient shortage of atomic memory does not fail the registration. If other registrations
/// keep filling the table faster than it grows, the last attempt allocates under the lock with
/// `GFP_NOWAIT`. Upstream allocates its `user_event_mm` with `GFP_KERNEL_ACCOUNT`; the table is
/// module-wide, so it is not charged to the caller's memory cgroup.
pub(crate) fn current_or_create() -> Result<ScopeId> {
    let task = current_task();
    for _ in 0..GROW_ATTEMPTS {
        let (tasks_room, tasks_len, counts_room, counts_len) = {
            let mut table = SCOPES.lock();
            if let Some(scope) = table.scope_of(task) {
                return Ok(scope);
            }
            if table.tasks_have_room() && table.counts_have_room() {
                let scope = table.new_scope();
                table.join(task, scope)?;
                return Ok(scope);
            }
            (
                table.tasks_have_room(),
                table.tasks.len(),
                table.counts_have_room(),
                table.counts.len(),
            )
        };
        let mut tasks = grown(tasks_room, tasks_len)?;
        let mut counts = grown(counts_room, counts_len)?;
        SCOPES.lock().adopt(&mut tasks, &mut counts);
        // The replaced vectors (or the unused new ones) are freed here, outside the lock.
    }
    let mut table = SCOPES.lock();
    if let Some(scope) = table.scope_of(task) {
        return Ok(scope);
    }
    let scope = table.new_scope();
    table.join(task, scope)?;
    Ok(scope)
}

/// The calling task's scope, if it has one (UNREG: `ENOENT` otherwise).
pub(crate) fn current() -> Option<ScopeId> {
    SCOPES.lock().scope_of(current_task())
}

/// Fork probe: a `CLONE_VM` child joins its parent's scope; any other child of a task with a
/// scope gets a new one, returned with the parent's so the caller can copy the enablers.
pub(crate) fn on_newtask(
    child: *mut bindings::task_struct,
    clone_vm: bool,
) -> Option<(ScopeId, ScopeId)> {
    let mut table = SCOPES.lock();
    let parent = table.scope_of(current_task())?;
    if clone_vm {
        // An allocation failure leaves the child without a scope; it gets one if it registers.
        let _ = table.join(child as usize, parent);
        return None;
    }
    // The copy is marked pending before the child can run, so its first REG or UNREG waits for
    // it (see `wait_for_copy`).
    table.copying.reserve(1, GFP_NOWAIT).ok()?;
    let scope = table.new_scope();
    table.join(child as usize, scope).ok()?;
    // PANIC: Capacity was reserved above.
    table.copying.push(scope, GFP_NOWAIT).expect("reserved");
    Some((parent, scope))
}

/// True if `scope` belongs to a forked child whose inherited enablers are not copied yet.
fn copy_pending(scope: ScopeId) -> bool {
    SCOPES.lock().copying.contains(&scope)
}

/// The wait condition of [`wait_for_copy`].
///
/// # Safety
///
/// Any `scope` is sound; the shim's `wait_event_killable` passes the one it was given.
unsafe extern "C" fn copy_still_pending(scope: u64) -> bool {
    copy_pending(scope)
}

/// Waits until the copy of the enablers `scope` inherited at fork has run.
///
/// Upstream copies them inside `copy_process()`; here the copy is work queued by the fork probe,
/// so a child that registers or unregisters at once must first wait for it, or it would not
/// find what it inherited. The wait is killable (`ERESTARTSYS`) and waits for this scope's copy
/// only. Called without `reg_mutex` or `event_mutex` held: the copy takes `event_mutex`.
pub(crate) fn wait_for_copy(scope: ScopeId) -> Result {
    if !copy_pending(scope) {
        return Ok(());
    }
    // SAFETY: `copy_still_pending` only takes the table's spinlock, which is allowed in a wait
    // condition; `copy_done` wakes the queue after every change.
    kernel::error::to_result(unsafe {
        bindings::rue_wait_fork_copy_killable(Some(copy_still_pending), scope)
    })
}

/// The fork copy for `scope` ran, or will not run: wakes whoever waits for it.
pub(crate) fn copy_done(scope: ScopeId) {
    {
        let mut table = SCOPES.lock();
        if let Some(i) = table.copying.iter().position(|s| *s == scope) {
            let _ = table.copying.remove(i);
        }
    }
    // SAFETY: No preconditions; allowed in atomic context (the fork probe may call this).
    unsafe { bindings::rue_wake_fork_copy_waiters() };
}

/// Exec and exit probes: `task` leaves its scope; returns the scope if it is now empty.
pub(crate) fn on_task_gone(task: *mut bindings::task_struct) -> Option<ScopeId> {
    SCOPES.lock().leave(task as usize)
}

/// Frees the table's allocations at module exit, after the probes that use it are detached.
/// Tasks that still have a scope (with no enablers left) simply lose it, as on a fresh load.
pub(crate) struct TableOwner;

impl Drop for TableOwner {
    fn drop(&mut self) {
        let mut table = SCOPES.lock();
        table.tasks = KVec::new();
        table.counts = KVec::new();
        table.copying = KVec::new();
    }
}
