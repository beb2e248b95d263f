// SPDX-License-Identifier: GPL-2.0

//! Process fork, exec and exit without kernel hooks.
//!
//! Upstream calls `user_events_fork()`/`user_events_execve()`/`user_events_exit()` from
//! `copy_process()`, `bprm_execve()` and `do_exit()`; on a kernel built without user_events those
//! hooks are empty. This module attaches probes to the `task_newtask`, `sched_process_exec` and
//! `sched_process_exit` tracepoints instead, found with the exported
//! `for_each_kernel_tracepoint()`. Probes run in atomic context, so they only update the task
//! map ([`crate::scope`]) and queue work embedded in the scope on the module's ordered
//! workqueue; the work copies or drops enablers under `event_mutex` ([`crate::enabler`]).

use crate::{bindings, scope};
use core::{
    ptr::null_mut,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::prelude::*;

/// A task leaves its scope (exec or exit).
fn task_gone(task: *mut bindings::task_struct) {
    if scope::any() {
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

/// `CLONE_VM` from include/uapi/linux/sched.h.
const CLONE_VM: u64 = 0x100;

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
    if scope::any() {
        // Threads, vfork and posix_spawn children join the parent's scope; other children get
        // a snapshot of it.
        scope::on_newtask(task, clone_flags & CLONE_VM != 0);
    }
}

/// Callback state of [`find_tracepoint`].
struct Search {
    name: &'static CStr,
    found: AtomicPtr<bindings::tracepoint>,
}

/// # Safety
///
/// Called by `for_each_kernel_tracepoint` with a live tracepoint and our [`Search`].
unsafe extern "C" fn match_tracepoint(tp: *mut bindings::tracepoint, priv_: *mut c_void) {
    // SAFETY: `priv_` is the `Search` passed below; `tp->name` is a string literal.
    let (search, name) = unsafe { (&*priv_.cast::<Search>(), CStr::from_char_ptr((*tp).name)) };
    if name == search.name {
        search.found.store(tp, Ordering::Relaxed);
    }
}

fn find_tracepoint(name: &'static CStr) -> Result<*mut bindings::tracepoint> {
    let search = Search {
        name,
        found: AtomicPtr::new(null_mut()),
    };
    // SAFETY: The callback only reads; `search` outlives the call.
    unsafe {
        bindings::for_each_kernel_tracepoint(
            Some(match_tracepoint),
            (&raw const search).cast_mut().cast(),
        )
    };
    let tp = search.found.load(Ordering::Relaxed);
    if tp.is_null() {
        pr_err!("tracepoint {name:?} not found\n");
        return Err(ENOENT);
    }
    Ok(tp)
}

/// The attached fork, exec and exit probes and the task map they fill ([`crate::scope`]); the
/// probes are detached and then the map freed on drop.
///
/// # Invariants
///
/// Each pointer is the kernel's tracepoint of that name (kernel-global, never freed), with this
/// module's probe registered on it until `drop`.
pub(crate) struct ProcessProbes {
    newtask: *mut bindings::tracepoint,
    exit: *mut bindings::tracepoint,
    exec: *mut bindings::tracepoint,
}

// SAFETY: Tracepoints are kernel-global; (un)registration may happen on any thread.
unsafe impl Send for ProcessProbes {}
// SAFETY: As above.
unsafe impl Sync for ProcessProbes {}

impl ProcessProbes {
    /// Initialises the task map and attaches the three probes. Called once, by module init.
    pub(crate) fn new() -> Result<Self> {
        scope::init();
        let newtask = find_tracepoint(c"task_newtask")?;
        let exit = find_tracepoint(c"sched_process_exit")?;
        let exec = find_tracepoint(c"sched_process_exec")?;
        let probes = [
            (newtask, newtask_probe as *mut c_void),
            (exit, exit_probe as *mut c_void),
            (exec, exec_probe as *mut c_void),
        ];
        for (i, (tp, probe)) in probes.iter().enumerate() {
            // SAFETY: Each `tp` is the kernel tracepoint of that name and each probe matches
            // its prototype.
            let ret = unsafe { bindings::tracepoint_probe_register(*tp, *probe, null_mut()) };
            if ret != 0 {
                for (tp, probe) in &probes[..i] {
                    // SAFETY: Registered above.
                    unsafe { bindings::tracepoint_probe_unregister(*tp, *probe, null_mut()) };
                }
                // SAFETY: No preconditions.
                unsafe { bindings::rue_tracepoint_synchronize_unregister() };
                return Err(Error::from_errno(ret));
            }
        }
        // INVARIANT: Each probe was registered on its tracepoint above.
        Ok(Self {
            newtask,
            exit,
            exec,
        })
    }
}

impl Drop for ProcessProbes {
    fn drop(&mut self) {
        // SAFETY: All three were registered in `new` (type invariants); synchronising afterwards
        // guarantees no probe is still running when the module's code goes away.
        unsafe {
            bindings::tracepoint_probe_unregister(
                self.newtask,
                newtask_probe as *mut c_void,
                null_mut(),
            );
            bindings::tracepoint_probe_unregister(self.exit, exit_probe as *mut c_void, null_mut());
            bindings::tracepoint_probe_unregister(self.exec, exec_probe as *mut c_void, null_mut());
            bindings::rue_tracepoint_synchronize_unregister();
        }
        scope::free_map();
    }
}
