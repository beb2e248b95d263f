// SPDX-License-Identifier: GPL-2.0

//! Process fork, exec and exit without kernel hooks.
//!
//! Upstream calls `user_events_fork()`/`user_events_execve()`/`user_events_exit()` from
//! `copy_process()`, `bprm_execve()` and `do_exit()`; on a kernel built without user_events those
//! hooks are empty. This module attaches probes to the `task_newtask`, `sched_process_exec` and
//! `sched_process_exit` tracepoints instead, found with the exported
//! `for_each_kernel_tracepoint()`. Probes run in atomic context, so they only queue work
//! (allocated with `GFP_NOWAIT`) on the module's ordered workqueue; the work copies or drops
//! enablers under `event_mutex`.

use crate::{
    bindings, deferred, enabler,
    event_mutex::Held,
    scope::{self, ScopeId},
};
use core::{
    mem::offset_of,
    ptr::null_mut,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{prelude::*, types::Opaque};

/// What to do.
#[derive(Clone, Copy)]
enum Cleanup {
    /// The last task of a scope exited or exec'd: drop the scope's enablers.
    ScopeGone(ScopeId),
    /// A task with scope `parent` forked a child (own memory, scope `child`): copy the
    /// enablers. The child's `mm` is held with `mmgrab` until the work ran.
    Fork {
        parent: ScopeId,
        child: ScopeId,
        mm: *mut bindings::mm_struct,
    },
}

/// A deferred piece of lifecycle work.
struct CleanupWork {
    work: Opaque<bindings::work_struct>,
    kind: Cleanup,
}

/// Queues `kind`; called from tracepoint probes (atomic context). On failure a fork's child
/// simply gets no enablers, as when upstream's copy fails, and a gone scope's enablers stay
/// until UNREG.
fn queue(kind: Cleanup) {
    let Ok(item) = KBox::new(
        CleanupWork {
            work: Opaque::zeroed(),
            kind,
        },
        GFP_NOWAIT,
    ) else {
        if let Cleanup::Fork { child, mm, .. } = kind {
            scope::copy_done(child);
            // SAFETY: Taken by the fork probe for this work.
            unsafe { bindings::rue_mmdrop(mm) };
        }
        return;
    };
    let item = KBox::into_raw(item);
    // SAFETY: `item` is a fresh allocation owned by the work until `cleanup_fn` frees it.
    unsafe {
        bindings::rue_init_work((*item).work.get(), Some(cleanup_fn));
        if !deferred::queue((*item).work.get()) {
            let item = KBox::from_raw(item);
            if let Cleanup::Fork { child, mm, .. } = item.kind {
                scope::copy_done(child);
                bindings::rue_mmdrop(mm);
            }
        }
    }
}

/// # Safety
///
/// Called by the workqueue with the `work` of a [`CleanupWork`] queued by [`queue`].
unsafe extern "C" fn cleanup_fn(work: *mut bindings::work_struct) {
    // SAFETY: `work` is the first field's address inside a leaked `KBox<CleanupWork>`.
    let item = unsafe {
        KBox::from_raw(
            work.byte_sub(offset_of!(CleanupWork, work))
                .cast::<CleanupWork>(),
        )
    };
    let mut held = Held::lock();
    match item.kind {
        Cleanup::ScopeGone(scope) => enabler::remove_scope(&mut held, scope),
        Cleanup::Fork { parent, child, mm } => {
            enabler::dup(&mut held, parent, enabler::Owner { scope: child, mm });
            scope::copy_done(child);
            // SAFETY: Taken by the fork probe; the copies hold their own references.
            unsafe { bindings::rue_mmdrop(mm) };
        }
    }
}

/// A task leaves its scope (exec or exit): the last one out queues the scope's cleanup.
fn task_gone(task: *mut bindings::task_struct) {
    if !scope::any() {
        return;
    }
    if let Some(scope) = scope::on_task_gone(task) {
        queue(Cleanup::ScopeGone(scope));
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
    if !scope::any() {
        return;
    }
    // Threads, vfork and posix_spawn children join the parent's scope inside `on_newtask`.
    let Some((parent, child)) = scope::on_newtask(task, clone_flags & CLONE_VM != 0) else {
        return;
    };
    // SAFETY: `task` is the new child; its mm is set up by now (`copy_mm` ran).
    let mm = unsafe { bindings::rue_task_mm(task) };
    if mm.is_null() {
        scope::copy_done(child);
        return;
    }
    // SAFETY: The child's address space is alive during `copy_process`; dropped by the work.
    unsafe { bindings::mmgrab(mm) };
    queue(Cleanup::Fork { parent, child, mm });
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

/// The attached fork, exec and exit probes; detached on drop.
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
    /// Attaches the three probes.
    pub(crate) fn new() -> Result<Self> {
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
        Ok(Self {
            newtask,
            exit,
            exec,
        })
    }
}

impl Drop for ProcessProbes {
    fn drop(&mut self) {
        // SAFETY: Both were registered in `new`; synchronising afterwards guarantees no probe is
        // still running when the module's code goes away.
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
    }
}
