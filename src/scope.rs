// SPDX-License-Identifier: GPL-2.0

//! Which scope a task is in: upstream's `task_struct::user_event_mm`, kept in a map.
//!
//! Upstream scopes enablers per *task lineage*, not per address space: a task gets a scope the
//! first time it registers; tasks it later creates with `CLONE_VM` (threads, vfork, posix_spawn)
//! share it; a plain fork gets a new scope holding copies of the parent's enablers; exec and exit
//! leave the scope, and the last task to leave tears it down. Threads created *before* the first
//! registration have no scope and get their own when they register, which is what makes
//! `EADDRINUSE` and UNREG per lineage.
//!
//! A kernel without user_events has no `task_struct` field for this, so the module keeps a red-
//! black tree from task to scope, filled and emptied from the fork, exec and exit tracepoints
//! ([`crate::lifecycle`]). The `CLONE_VM` entry is made in the fork probe itself, before the
//! child can run and register.
//!
//! Locking and allocation: one spinlock (`TASKS`) protects the map; every operation under it is
//! a lookup, insertion or removal, logarithmic in the number of tasks that have a scope. The
//! fork, exec and exit of a task that has no scope take no lock: upstream tests the task's own
//! pointer, and the probes here first test a counter of tasks in the map that hash to the same
//! one of [`SLOTS`] slots ([`may_have`]), which is zero for almost every such task. Nodes
//! and scopes are allocated before it is taken: in process context (REG) with
//! `GFP_KERNEL_ACCOUNT`, in the fork probe, which runs in atomic context, with `GFP_NOWAIT`,
//! charged to the forker's memory cgroup (`__GFP_ACCOUNT`). A
//! failure there is counted (`scope_join_failed` in `user_events_stats`) and leaves only that
//! child outside its parent's scope, as upstream's failed `user_event_mm_dup` does.

use crate::{
    enabler::Scope,
    task::{self, TaskStruct},
};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed},
};
use kernel::{
    alloc::flags::{__GFP_NOWARN, GFP_KERNEL, GFP_KERNEL_ACCOUNT, GFP_NOWAIT},
    mm::Mm,
    prelude::*,
    rbtree::{RBTree, RBTreeNode},
    sync::aref::ARef,
    sync::Arc,
};

/// Task (its `task_struct` address) to scope. `None` until the first entry: a `static` needs a
/// constant initial value.
type Map = Option<RBTree<usize, Arc<Scope>>>;

kernel::sync::global_lock! {
    // SAFETY: Initialised by `init` in module init, before any probe or file can use it.
    unsafe(uninit) static TASKS: SpinLock<Map> = None;
}

/// Tasks the fork probe could not enter in the task map (`scope_join_failed` in
/// `user_events_stats`).
pub(crate) static SCOPE_JOIN_FAILED: AtomicU64 = AtomicU64::new(0);

/// Slots of [`PRESENT`]; a power of two.
const SLOTS: usize = 4096;

/// For each slot, how many tasks in the map hash to it ([`slot`]); changed under `TASKS`. A
/// zero tells a probe, without the lock, that its task has no scope.
static PRESENT: [AtomicU32; SLOTS] = [const { AtomicU32::new(0) }; SLOTS];

/// The slot of `task` in [`PRESENT`]: the high bits of a multiplicative hash of its address.
fn slot(task: usize) -> &'static AtomicU32 {
    // CAST: `usize` is 64 bits on the architectures the module builds for.
    let hash = (task as u64 >> 6).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // CAST: Shifted to the top log2(SLOTS) bits: below `SLOTS`.
    &PRESENT[(hash >> (64 - SLOTS.trailing_zeros())) as usize]
}

/// Initialises the map's lock; called once by module init, before the probes that use it are
/// attached.
pub(crate) fn init() {
    // SAFETY: Called exactly once, before any other use.
    unsafe { TASKS.init() };
}

/// False if `task` has no scope, without taking the map's lock; true if it may have one.
///
/// Exact for the calling task and for a task being created by it (the probes' only uses): only
/// a task itself (REG) and its creator before it first runs (the fork probe) enter it, and only
/// the task itself removes it (exec, exit), so no change of its own count can race the check.
pub(crate) fn may_have(task: *mut TaskStruct) -> bool {
    slot(task as usize).load(Relaxed) != 0
}

fn current_task() -> usize {
    task::current() as usize
}

fn scope_of(task: usize) -> Option<Arc<Scope>> {
    TASKS.lock().as_ref()?.get(&task).cloned()
}

/// Enters a task into a scope. Returns what the map held for that task before (nothing, as a
/// task is entered once), to be dropped after unlocking.
fn join(
    map: &mut Map,
    task: usize,
    node: RBTreeNode<usize, Arc<Scope>>,
) -> Option<RBTreeNode<usize, Arc<Scope>>> {
    let tasks = map.get_or_insert_with(RBTree::new);
    let old = tasks.insert(node);
    if old.is_none() {
        slot(task).fetch_add(1, Relaxed);
    }
    old
}

/// The calling task's scope, created on first need (upstream `current_user_event_mm`).
pub(crate) fn current_or_create() -> Result<Arc<Scope>> {
    let task = current_task();
    if let Some(scope) = scope_of(task) {
        return Ok(scope);
    }
    let mm = NonNull::new(task::current_mm()).ok_or(EFAULT)?;
    // SAFETY: `mm` is the calling task's address space, live while it runs; `ARef::from` takes
    // an `mmgrab` reference.
    let mm: ARef<Mm> = unsafe { Mm::from_raw(mm.as_ptr()) }.into();
    let scope = Scope::new(mm, GFP_KERNEL_ACCOUNT)?;
    let node = RBTreeNode::new(task, scope.clone(), GFP_KERNEL_ACCOUNT)?;
    // Nobody else enters the running task (the fork probe enters children before they run), so
    // no entry for it can have appeared meanwhile.
    scope.tasks.fetch_add(1, Relaxed);
    let old = join(&mut TASKS.lock(), task, node);
    drop(old);
    Ok(scope)
}

/// The calling task's scope, if it has one (UNREG: `ENOENT` otherwise).
pub(crate) fn current() -> Option<Arc<Scope>> {
    scope_of(current_task())
}

/// Fork probe: a `CLONE_VM` child joins its parent's scope; any other child of a task with a
/// scope gets a new one, with a snapshot of the parent's enablers to copy (see
/// [`crate::enabler`]); `vfork`: the forker waits for the child before it returns.
pub(crate) fn on_newtask(child: *mut TaskStruct, clone_vm: bool, vfork: bool) {
    let Some(parent) = scope_of(current_task()) else {
        return;
    };
    // Charged to the forker (the calling task), as upstream's `user_event_mm_alloc` charges it:
    // `__GFP_ACCOUNT` is what `GFP_KERNEL_ACCOUNT` adds to `GFP_KERNEL`.
    let flags = GFP_NOWAIT | __GFP_NOWARN | (GFP_KERNEL_ACCOUNT & !GFP_KERNEL);
    if clone_vm {
        let Ok(node) = RBTreeNode::new(child as usize, parent.clone(), flags) else {
            SCOPE_JOIN_FAILED.fetch_add(1, Relaxed);
            return;
        };
        let old = {
            let mut map = TASKS.lock();
            parent.tasks.fetch_add(1, Relaxed);
            join(&mut map, child as usize, node)
        };
        drop(old);
        return;
    }
    // SAFETY: `child` is the new task, live during `copy_process`.
    let Some(mm) = NonNull::new(unsafe { task::mm(child) }) else {
        return;
    };
    // SAFETY: `copy_mm` has run, and the child's mm is alive during `copy_process`;
    // `ARef::from` takes an `mmgrab` reference.
    let mm: ARef<Mm> = unsafe { Mm::from_raw(mm.as_ptr()) }.into();
    let Ok(forked) = Scope::new_forked(mm, flags) else {
        SCOPE_JOIN_FAILED.fetch_add(1, Relaxed);
        return;
    };
    let scope = forked.scope();
    let Ok(node) = RBTreeNode::new(child as usize, scope.clone(), flags) else {
        SCOPE_JOIN_FAILED.fetch_add(1, Relaxed);
        return;
    };
    // Nothing can fail from here on: a snapshot counts a pending copy that must run.
    Scope::set_copy_from(forked, parent);
    let old = {
        let mut map = TASKS.lock();
        scope.tasks.fetch_add(1, Relaxed);
        join(&mut map, child as usize, node)
    };
    drop(old);
    scope.copy_after_fork(vfork);
}

/// Exec and exit probes: `task` leaves its scope; the last one out queues its teardown.
pub(crate) fn on_task_gone(task: *mut TaskStruct) {
    let (scope, last) = {
        let mut map = TASKS.lock();
        let Some(tasks) = map.as_mut() else {
            return;
        };
        let Some(scope) = tasks.remove(&(task as usize)) else {
            return;
        };
        slot(task as usize).fetch_sub(1, Relaxed);
        let last = scope.tasks.fetch_sub(1, Relaxed) == 1;
        (scope, last)
    };
    if last {
        scope.queue_teardown();
    }
}

/// Frees the map at module exit, once the probes that fill it are detached (by
/// [`crate::lifecycle::ProcessProbes`], which owns it). Tasks that still have a scope (with no
/// enablers left: each would pin the module through its event) simply lose it, as on a fresh
/// load; fork copies and teardowns still queued hold their own scope references.
pub(crate) fn free_map() {
    let map = TASKS.lock().take();
    drop(map);
}
