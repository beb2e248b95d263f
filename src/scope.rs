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
//! table from task to scope, filled and emptied from the fork, exec and exit tracepoints (atomic
//! context: a spinlock and `GFP_NOWAIT`). The `CLONE_VM` entry is made in the fork probe itself,
//! before the child can run and register.

use crate::bindings;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::prelude::*;

/// A scope id; never reused.
pub(crate) type ScopeId = u64;

/// The table: which scope each task belongs to, and how many tasks each scope has.
pub(crate) struct Table {
    tasks: KVec<(usize, ScopeId)>,
    counts: KVec<(ScopeId, u32)>,
    next: ScopeId,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised by `init` in module init, before any probe or file can use it.
    unsafe(uninit) static SCOPES: SpinLock<Table> = Table {
        tasks: KVec::new(),
        counts: KVec::new(),
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
        self.tasks.push((task, scope), GFP_NOWAIT).expect("reserved");
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
}

/// The calling task's scope, created on first need (upstream `current_user_event_mm`).
pub(crate) fn current_or_create() -> Result<ScopeId> {
    let task = current_task();
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
pub(crate) fn on_newtask(child: *mut bindings::task_struct, clone_vm: bool) -> Option<(ScopeId, ScopeId)> {
    let mut table = SCOPES.lock();
    let parent = table.scope_of(current_task())?;
    if clone_vm {
        // An allocation failure leaves the child without a scope; it gets one if it registers.
        let _ = table.join(child as usize, parent);
        return None;
    }
    let scope = table.new_scope();
    table.join(child as usize, scope).ok()?;
    Some((parent, scope))
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
    }
}
