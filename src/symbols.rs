// SPDX-License-Identifier: GPL-2.0

//! The symbol layer: every piece of kernel data this module uses that 7.3 does not export.
//!
//! Only data is resolved (see [`crate::ksym`]). Where upstream calls a non-exported function,
//! the module does the same work with exported functions plus this data:
//!
//! | upstream call        | done here with                                                 |
//! |----------------------|----------------------------------------------------------------|
//! | `tracefs_remove`     | `simple_recursive_removal` + `simple_release_fs` on [`Tracefs`] |
//! | `dyn_event_register` | `list_add_tail` on `dyn_event_ops_list` under its mutex        |
//! | `dyn_event_add`      | `list_add_tail` on `dyn_event_list` under `event_mutex`        |
//! | `__trace_event_discard_commit` (static inline, on `trace_buffered_event`) | `rue_trace_event_discard` on [`Discard`] |
//! | `tracing_gen_ctx_irq_test` (via `trace_event_buffer_reserve`) | its body: `tracepoint::trace_ctx` on x86-64, else `rue_tracing_gen_ctx_dec` in src/shim.c |
//! | `trace_event_buffer_commit`'s checks and `__buffer_unlock_commit` | reads of [`Direct`], `ring_buffer_unlock_commit` |
//!
//! Each symbol is checked for plausibility after resolution, so a wrong lookup fails `insmod`
//! with a message instead of corrupting memory later.

use crate::{bindings, ksym};
use core::ptr::NonNull;
use kernel::prelude::*;

/// tracefs's private mount bookkeeping (`fs/tracefs/inode.c`).
pub(crate) struct Tracefs {
    /// `trace_fs_type`, the filesystem type passed to `simple_pin_fs`.
    pub(crate) fs_type: NonNull<bindings::file_system_type>,
    /// `tracefs_mount`, the internal mount every tracefs file creation pins.
    pub(crate) mount: NonNull<*mut bindings::vfsmount>,
    /// `tracefs_mount_count`, the pin count of `tracefs_mount`.
    pub(crate) mount_count: NonNull<c_int>,
}

/// The per-CPU variables `__trace_event_discard_commit` (kernel/trace/trace.h) reads: a record
/// that `trace_event_buffer_reserve` put in `trace_buffered_event` (a filtered or soft-disabled
/// file) is discarded by releasing that buffer, any other by `ring_buffer_discard_commit`.
#[derive(Clone, Copy)]
pub(crate) struct Discard {
    /// `trace_buffered_event`: per CPU, the page-aligned scratch event, or null.
    pub(crate) buffered: NonNull<*mut bindings::ring_buffer_event>,
    /// `trace_buffered_event_cnt`: per CPU, the users of `trace_buffered_event`.
    pub(crate) buffered_cnt: NonNull<c_int>,
}

/// What committing a record with the ring buffer's own calls needs, where
/// `trace_event_buffer_commit()` would do no more (`crate::probes`, "the direct path"): the two
/// switches that make the tracing core's commit do more, and the per-CPU flag its
/// `__buffer_unlock_commit()` sets so that the writer's command name is saved for the output.
#[derive(Clone, Copy)]
pub(crate) struct Direct {
    /// `tracepoint_printk_key`: records are also printed to the console.
    pub(crate) printk_key: NonNull<bindings::static_key>,
    /// `trace_event_exports_enabled`: records are also sent to registered exports.
    pub(crate) exports_key: NonNull<bindings::static_key>,
    /// `trace_taskinfo_save`: per CPU, "save the current task's comm and tgid".
    pub(crate) taskinfo_save: NonNull<bool>,
}

/// All resolved symbols.
pub(crate) struct Symbols {
    /// `event_mutex`: the tracing core's lock around event (un)registration.
    pub(crate) event_mutex: NonNull<bindings::mutex>,
    /// `dyn_event_list`: every dynamic event, as listed by `dynamic_events`.
    pub(crate) dyn_event_list: NonNull<bindings::list_head>,
    /// `dyn_event_ops_list`: the registered `dyn_event_operations`.
    pub(crate) dyn_event_ops_list: NonNull<bindings::list_head>,
    /// `dyn_event_ops_mutex`: protects `dyn_event_ops_list`.
    pub(crate) dyn_event_ops_mutex: NonNull<bindings::mutex>,
    /// tracefs's mount bookkeeping.
    pub(crate) tracefs: Tracefs,
    /// What discarding a reserved ftrace record needs.
    pub(crate) discard: Discard,
    /// What committing an ftrace record directly needs.
    pub(crate) direct: Direct,
}

// SAFETY: The pointers name kernel-global objects that live as long as the kernel; the
// structure itself holds no thread-affine state.
unsafe impl Send for Symbols {}
// SAFETY: As above; shared access only reads the pointers.
unsafe impl Sync for Symbols {}

impl Symbols {
    /// Resolves and checks every symbol; any failure fails module load.
    pub(crate) fn resolve() -> Result<Self> {
        let symbols = Self {
            event_mutex: ksym::resolve_data(c"event_mutex")?,
            dyn_event_list: ksym::resolve_data(c"dyn_event_list")?,
            dyn_event_ops_list: ksym::resolve_data(c"dyn_event_ops_list")?,
            dyn_event_ops_mutex: ksym::resolve_data(c"dyn_event_ops_mutex")?,
            tracefs: Tracefs {
                fs_type: ksym::resolve_data(c"trace_fs_type")?,
                mount: ksym::resolve_data(c"tracefs_mount")?,
                mount_count: ksym::resolve_data(c"tracefs_mount_count")?,
            },
            discard: Discard {
                buffered: ksym::resolve_data(c"trace_buffered_event")?,
                buffered_cnt: ksym::resolve_data(c"trace_buffered_event_cnt")?,
            },
            direct: Direct {
                // Both are `static_key_false`, whose first (only) member is the key.
                printk_key: ksym::resolve_data(c"tracepoint_printk_key")?,
                exports_key: ksym::resolve_data(c"trace_event_exports_enabled")?,
                taskinfo_save: ksym::resolve_data(c"trace_taskinfo_save")?,
            },
        };
        symbols.check()?;
        Ok(symbols)
    }

    /// Plausibility checks that only read the resolved objects.
    fn check(&self) -> Result {
        // SAFETY: `fs_type` is the address of `trace_fs_type`, a static `file_system_type` whose
        // `name` points to a string literal for the kernel's lifetime.
        let name = unsafe { (*self.tracefs.fs_type.as_ptr()).name };
        // SAFETY: `name` is null or a NUL-terminated string literal (see above).
        if name.is_null() || unsafe { CStr::from_char_ptr(name) } != c"tracefs" {
            pr_err!("trace_fs_type does not name tracefs\n");
            return Err(ENOEXEC);
        }
        let checks = [
            ("dyn_event_list", self.dyn_event_list, self.event_mutex),
            (
                "dyn_event_ops_list",
                self.dyn_event_ops_list,
                self.dyn_event_ops_mutex,
            ),
        ];
        // A CPU's buffered event is a page of its own (`alloc_pages_node`) or none.
        let page = kernel::page::PAGE_SIZE;
        // SAFETY: No preconditions.
        let cpus = unsafe { bindings::rue_nr_cpu_ids() };
        for cpu in 0..cpus {
            // SAFETY: `buffered` is the address of a per-CPU pointer variable and `cpu` is below
            // `nr_cpu_ids`; an unpossible CPU's copy is still mapped, and read once.
            let event = unsafe {
                bindings::rue_per_cpu_ptr(self.discard.buffered.as_ptr().cast(), cpu)
                    .cast::<*mut bindings::ring_buffer_event>()
                    .read_volatile()
            };
            if event as usize % page != 0 {
                pr_err!("trace_buffered_event is not a per-CPU page pointer\n");
                return Err(ENOEXEC);
            }
        }
        for (what, key) in [
            ("tracepoint_printk_key", self.direct.printk_key),
            ("trace_event_exports_enabled", self.direct.exports_key),
        ] {
            // SAFETY: `key` is the address of a static `static_key`; its count is read once.
            let enabled = unsafe { (*key.as_ptr()).enabled.counter };
            // A static key's count is never below -1, its value while it is being turned on.
            if enabled < -1 {
                pr_err!("{what} is not a static key\n");
                return Err(ENOEXEC);
            }
        }
        for (what, list, lock) in checks {
            let consistent = {
                // SAFETY: `lock` is a resolved symbol mutex; module init may sleep.
                let _guard = unsafe { KernelMutexGuard::lock(lock) };
                // SAFETY: `list` is the address of a static, initialised `list_head`, and its
                // writers hold `lock`, which is held here, so `next` is a live node or the head.
                unsafe {
                    let head = list.as_ptr();
                    let next = (*head).next;
                    !next.is_null() && (*next).prev == head
                }
            };
            if !consistent {
                pr_err!("{what} is not a list head\n");
                return Err(ENOEXEC);
            }
        }
        Ok(())
    }
}

/// A held kernel mutex that belongs to the tracing core, such as `event_mutex`.
///
/// # Invariants
///
/// `mutex` points to an initialised kernel `struct mutex` that outlives the guard, and the guard
/// holds it.
pub(crate) struct KernelMutexGuard {
    mutex: NonNull<bindings::mutex>,
}

impl KernelMutexGuard {
    /// Locks `mutex`.
    ///
    /// # Safety
    ///
    /// `mutex` must be one of the [`Symbols`] mutexes (initialised static kernel objects that
    /// live as long as the kernel), and the caller must be allowed to sleep.
    pub(crate) unsafe fn lock(mutex: NonNull<bindings::mutex>) -> Self {
        // SAFETY: Guaranteed by the caller.
        unsafe { bindings::mutex_lock(mutex.as_ptr()) };
        // INVARIANT: The mutex was just locked.
        Self { mutex }
    }
}

impl Drop for KernelMutexGuard {
    fn drop(&mut self) {
        // SAFETY: By the type invariants the mutex is held by this guard.
        unsafe { bindings::mutex_unlock(self.mutex.as_ptr()) };
    }
}
