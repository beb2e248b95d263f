// SPDX-License-Identifier: GPL-2.0

//! Process fork, exec and exit without kernel hooks.
//!
//! Upstream calls `user_events_fork()`/`user_events_execve()`/`user_events_exit()` from
//! `copy_process()`, `bprm_execve()` and `do_exit()`; on a kernel built without user_events those
//! hooks are empty. This module attaches probes to the `task_newtask`, `sched_process_exec` and
//! `sched_process_exit` tracepoints instead, found with the exported
//! `for_each_kernel_tracepoint()` ([`tracepoint::find`]). Probes run in atomic context, so they
//! only update the task map ([`crate::scope`]) and queue work embedded in the scope: a fork copy
//! as task work on the forking task, a teardown on the module's unbound scopes workqueue
//! ([`crate::deferred`]); the work copies or drops enablers under `event_mutex`
//! ([`crate::enabler`]).

use crate::{
    bindings, scope,
    tracepoint::{self, Attached},
};
use core::ptr::null_mut;
use kernel::prelude::*;

/// A task leaves its scope (exec or exit).
fn task_gone(task: *mut bindings::task_struct) {
    // `task` is the calling task.
    if scope::may_have(task) {
        scope::on_task_gone(task);
    }
}

/// `sched_process_exit(p, group_dead)` probe: every task leaves its scope.
///
/// # Safety
///
/// Called by the tracepoint with its documented arguments.
unsafe extern "C" fn exit_probe(
    _data: *mut c_void,
    task: *mut bindings::task_struct,
    _group_dead: bool,
) {
    task_gone(task);
}

/// `sched_process_exec(p, old_pid, bprm)` probe: the exec'ing task leaves its scope (upstream
/// `user_events_execve`); the new image starts without one.
///
/// # Safety
///
/// Called by the tracepoint with its documented arguments.
unsafe extern "C" fn exec_probe(
    _data: *mut c_void,
    task: *mut bindings::task_struct,
    _old_pid: bindings::pid_t,
    _bprm: *mut bindings::linux_binprm,
) {
    task_gone(task);
}

/// `CLONE_VM`, as the probe's `clone_flags` carries it.
const CLONE_VM: u64 = bindings::CLONE_VM as u64;
/// `CLONE_VFORK`, likewise.
const CLONE_VFORK: u64 = bindings::CLONE_VFORK as u64;

/// `task_newtask(task, clone_flags)` probe: runs in `copy_process()` in the parent, before the
/// child can run (upstream `user_events_fork`).
///
/// # Safety
///
/// Called by the tracepoint with its documented arguments.
unsafe extern "C" fn newtask_probe(
    _data: *mut c_void,
    task: *mut bindings::task_struct,
    clone_flags: u64,
) {
    if scope::may_have(crate::task::current()) {
        // Threads, vfork and posix_spawn children join the parent's scope; other children get
        // a snapshot of it.
        scope::on_newtask(
            task,
            clone_flags & CLONE_VM != 0,
            clone_flags & CLONE_VFORK != 0,
        );
    }
}

/// The attached fork, exec and exit probes and the task map they fill ([`crate::scope`]); the
/// probes are detached, calls in flight waited for, and then the map freed on drop.
///
/// # Invariants
///
/// `probes` is `Some` until `drop` takes it.
pub(crate) struct ProcessProbes {
    probes: Option<[Attached; 3]>,
}

impl ProcessProbes {
    /// Initialises the task map and attaches the three probes. Called once, by module init.
    pub(crate) fn new() -> Result<Self> {
        scope::init();
        let newtask = tracepoint::find(c"task_newtask")?;
        let exit = tracepoint::find(c"sched_process_exit")?;
        let exec = tracepoint::find(c"sched_process_exec")?;
        let attach = || -> Result<[Attached; 3]> {
            // SAFETY: Each probe has its tracepoint's prototype (`TP_PROTO` with the data
            // pointer first) and ignores the data; the module's code outlives the probes, as
            // `drop` waits for calls in flight.
            unsafe {
                Ok([
                    Attached::new(newtask, newtask_probe as *mut c_void, null_mut())?,
                    Attached::new(exit, exit_probe as *mut c_void, null_mut())?,
                    Attached::new(exec, exec_probe as *mut c_void, null_mut())?,
                ])
            }
        };
        match attach() {
            // INVARIANT: `Some`.
            Ok(probes) => Ok(Self {
                probes: Some(probes),
            }),
            Err(e) => {
                // The ones attached were detached when dropped; none may still be running.
                tracepoint::synchronize_unregister();
                Err(e)
            }
        }
    }
}

impl Drop for ProcessProbes {
    fn drop(&mut self) {
        drop(self.probes.take());
        // No probe is still running when the map, or the module's code, goes away.
        tracepoint::synchronize_unregister();
        scope::free_map();
    }
}
