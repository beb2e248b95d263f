// SPDX-License-Identifier: GPL-2.0

//! Process exit and exec without kernel hooks.
//!
//! Upstream calls `user_events_exit()`/`user_events_execve()` from `do_exit()` and
//! `bprm_execve()`; on a kernel built without user_events those hooks are empty. This module
//! attaches probes to the `sched_process_exit` and `sched_process_exec` tracepoints instead,
//! found with the exported `for_each_kernel_tracepoint()`. Probes run in atomic context, so they
//! only queue work (allocated with `GFP_NOWAIT`); the work drops the process's enablers under
//! `event_mutex`.

use crate::{bindings, deferred, enabler, event_mutex::Held};
use core::{
    mem::offset_of,
    ptr::null_mut,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{prelude::*, types::Opaque};

/// What to drop.
#[derive(Clone, Copy)]
enum Cleanup {
    /// The process exited: drop its enablers.
    Exit,
    /// The process exec'd into this new address space: drop the enablers of the old one.
    Exec,
}

/// A deferred cleanup for one process.
struct CleanupWork {
    work: Opaque<bindings::work_struct>,
    tgid: i32,
    mm: *mut bindings::mm_struct,
    kind: Cleanup,
}

/// Queues a cleanup; called from tracepoint probes (atomic context).
fn queue_cleanup(task: *mut bindings::task_struct, kind: Cleanup) {
    if !enabler::any() {
        return;
    }
    // SAFETY: `task` is the live task the tracepoint fired for.
    let (tgid, mm) = unsafe { (bindings::rue_task_tgid(task), bindings::rue_task_mm(task)) };
    let Ok(item) = KBox::new(
        CleanupWork {
            work: Opaque::zeroed(),
            tgid,
            mm,
            kind,
        },
        GFP_NOWAIT,
    ) else {
        // The enablers stay until UNREG or module unload; nothing else goes wrong.
        return;
    };
    let item = KBox::into_raw(item);
    // SAFETY: `item` is a fresh allocation owned by the work until `cleanup_fn` frees it.
    unsafe {
        bindings::rue_init_work((*item).work.get(), Some(cleanup_fn));
        if !deferred::queue((*item).work.get()) {
            drop(KBox::from_raw(item));
        }
    }
}

/// # Safety
///
/// Called by the workqueue with the `work` of a [`CleanupWork`] queued by [`queue_cleanup`].
unsafe extern "C" fn cleanup_fn(work: *mut bindings::work_struct) {
    // SAFETY: `work` is the first field's address inside a leaked `KBox<CleanupWork>`.
    let item = unsafe { KBox::from_raw(work.byte_sub(offset_of!(CleanupWork, work)).cast::<CleanupWork>()) };
    let mut held = Held::lock();
    match item.kind {
        Cleanup::Exit => enabler::remove_process(&mut held, item.tgid, item.mm),
        Cleanup::Exec => enabler::remove_process_except(&mut held, item.tgid, item.mm),
    }
}

/// `sched_process_exit(p, group_dead)` probe.
///
/// # Safety
///
/// Called by the tracepoint with its documented arguments.
unsafe extern "C" fn exit_probe(_data: *mut c_void, task: *mut bindings::task_struct, group_dead: bool) {
    if group_dead {
        queue_cleanup(task, Cleanup::Exit);
    }
}

/// `sched_process_exec(p, old_pid, bprm)` probe.
///
/// # Safety
///
/// Called by the tracepoint with its documented arguments.
unsafe extern "C" fn exec_probe(
    _data: *mut c_void,
    task: *mut bindings::task_struct,
    _old_pid: bindings::pid_t,
    _bprm: *mut c_void,
) {
    queue_cleanup(task, Cleanup::Exec);
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
        bindings::for_each_kernel_tracepoint(Some(match_tracepoint), (&raw const search).cast_mut().cast())
    };
    let tp = search.found.load(Ordering::Relaxed);
    if tp.is_null() {
        pr_err!("tracepoint {name:?} not found\n");
        return Err(ENOENT);
    }
    Ok(tp)
}

/// The attached exit and exec probes; detached on drop.
pub(crate) struct ProcessProbes {
    exit: *mut bindings::tracepoint,
    exec: *mut bindings::tracepoint,
}

// SAFETY: Tracepoints are kernel-global; (un)registration may happen on any thread.
unsafe impl Send for ProcessProbes {}
// SAFETY: As above.
unsafe impl Sync for ProcessProbes {}

impl ProcessProbes {
    /// Attaches both probes.
    pub(crate) fn new() -> Result<Self> {
        let exit = find_tracepoint(c"sched_process_exit")?;
        let exec = find_tracepoint(c"sched_process_exec")?;
        // SAFETY: `exit` is the kernel's sched_process_exit tracepoint; the probe matches its
        // prototype.
        kernel::error::to_result(unsafe {
            bindings::tracepoint_probe_register(exit, exit_probe as *mut c_void, null_mut())
        })?;
        // SAFETY: As above for sched_process_exec.
        let ret = unsafe { bindings::tracepoint_probe_register(exec, exec_probe as *mut c_void, null_mut()) };
        if ret != 0 {
            // SAFETY: Registered just above.
            unsafe { bindings::tracepoint_probe_unregister(exit, exit_probe as *mut c_void, null_mut()) };
            // SAFETY: No preconditions.
            unsafe { bindings::rue_tracepoint_synchronize_unregister() };
            return Err(Error::from_errno(ret));
        }
        Ok(Self { exit, exec })
    }
}

impl Drop for ProcessProbes {
    fn drop(&mut self) {
        // SAFETY: Both were registered in `new`; synchronising afterwards guarantees no probe is
        // still running when the module's code goes away.
        unsafe {
            bindings::tracepoint_probe_unregister(self.exit, exit_probe as *mut c_void, null_mut());
            bindings::tracepoint_probe_unregister(self.exec, exec_probe as *mut c_void, null_mut());
            bindings::rue_tracepoint_synchronize_unregister();
        }
    }
}
