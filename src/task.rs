// SPDX-License-Identifier: GPL-2.0

//! The calling task (`current`) and the fields of a task the module reads: its address space
//! (`mm`, of the calling task or a forked child), and the calling task's page-fault-disable count
//! (`pagefault_disabled`), perf recursion counts (`perf_recursion`), and what an ftrace record's
//! header says of it (`pid`, `migration_disabled`, the `TIF_*` flags).
//!
//! C header: [`include/linux/sched.h`](srctree/include/linux/sched.h)
//!
//! The fields are read at the offsets C gives them (`RUE_TASK_*` in `include/rue_shim.h`,
//! computed by clang for bindgen and compared with the compiler's at load by
//! [`crate::layout`]), never through the kernel crate's `task_struct`: on the test and bench
//! kernels that places every field after `stats` 48 bytes early (design.md, "Layout checks"), so
//! `CurrentTask::mm()` reads another field there.

use crate::bindings;
use core::mem::size_of;
use kernel::ffi::c_int;

// Each field is read as the type C gives it: the sizes C computes (`RUE_TASK_*_SIZE`) against
// the types read below, at build time (an offset checked at load says nothing of a field whose
// type changed in place).
#[allow(clippy::unnecessary_cast)]
const _: () = {
    assert!(bindings::RUE_TASK_MM_SIZE as usize == size_of::<*mut bindings::mm_struct>());
    assert!(bindings::RUE_TASK_PAGEFAULT_DISABLED_SIZE as usize == size_of::<c_int>());
    assert!(bindings::RUE_TASK_PERF_RECURSION_SIZE as usize == size_of::<u8>());
    assert!(bindings::RUE_TASK_PID_SIZE as usize == size_of::<c_int>());
    assert!(bindings::RUE_TASK_MIGRATION_DISABLED_SIZE as usize == size_of::<u16>());
    #[cfg(any(CONFIG_X86_64, CONFIG_ARM64))]
    assert!(bindings::RUE_TASK_TI_FLAGS_SIZE as usize == size_of::<kernel::ffi::c_ulong>());
    #[cfg(CONFIG_ARM64)]
    assert!(bindings::RUE_TASK_TI_PREEMPT_COUNT_SIZE as usize == size_of::<u64>());
    #[cfg(CONFIG_ARM64)]
    assert!(bindings::RUE_TASK_TI_CPU_SIZE as usize == size_of::<u32>());
};

/// A task as the kernel's C code knows it, for the domain files that hand a task's address
/// around without reading it: only this file reads its fields.
pub(crate) type TaskStruct = bindings::task_struct;

/// The calling task (`get_current()`): on x86-64 this CPU's `current_task`, one per-CPU load
/// ([`current_task`]), on arm64 the register `sp_el0` ([`current_sp_el0`]), unless the kernel
/// changed how it reads it (the gate `percpu_inline`, [`crate::mirrors`]).
#[inline(always)]
pub(crate) fn current() -> *mut bindings::task_struct {
    #[cfg(CONFIG_X86_64)]
    if crate::mirrors::PERCPU_INLINE {
        return current_task();
    }
    #[cfg(CONFIG_ARM64)]
    if crate::mirrors::PERCPU_INLINE {
        return current_sp_el0();
    }
    // SAFETY: No preconditions.
    unsafe { bindings::get_current() }
}

/// True if the calling task has a fatal signal pending (`fatal_signal_pending(current)`).
pub(crate) fn fatal_signal_pending() -> bool {
    // SAFETY: No preconditions.
    unsafe { bindings::rue_fatal_signal_pending() }
}

/// [`current`] on x86-64: this CPU's `current_task`.
#[cfg(CONFIG_X86_64)]
#[inline(always)]
fn current_task() -> *mut bindings::task_struct {
    let task: *mut bindings::task_struct;
    // SAFETY: One per-CPU load (`this_cpu_read_const(const_current_task)`). `pure` and
    // `nomem`, as C's `const` read: a task always reads itself there, so one load serves a
    // whole function.
    unsafe {
        core::arch::asm!(
            "movq %gs:{ct}(%rip), {task}",
            ct = sym bindings::current_task,
            task = out(reg) task,
            options(att_syntax, nostack, pure, nomem, preserves_flags),
        )
    };
    task
}

/// [`current`] on arm64: the kernel keeps the running task in `sp_el0` while it runs at EL1
/// (or EL2), as its `get_current()` reads it.
#[cfg(CONFIG_ARM64)]
#[inline(always)]
fn current_sp_el0() -> *mut bindings::task_struct {
    let task: *mut bindings::task_struct;
    // SAFETY: One system register read (`get_current()`'s `mrs`). `pure` and `nomem`, as C's
    // asm without `volatile` or a memory clobber: a task always reads itself there, so one
    // read serves a whole function.
    unsafe {
        core::arch::asm!(
            "mrs {task}, sp_el0",
            task = out(reg) task,
            options(nostack, pure, nomem, preserves_flags),
        )
    };
    task
}

/// `READ_ONCE(task->mm)`: the task's address space, null for a kernel thread. No reference is
/// taken.
///
/// # Safety
///
/// `task` is a live task.
#[inline(always)]
pub(crate) unsafe fn mm(task: *mut bindings::task_struct) -> *mut bindings::mm_struct {
    // CAST: A field offset within `task_struct`.
    let offset = bindings::RUE_TASK_MM as usize;
    // SAFETY: `task` is live (the caller's guarantee) and `offset` is the offset of its `mm`
    // pointer as C lays it out (checked at load); a volatile read, as `READ_ONCE`.
    unsafe {
        task.byte_add(offset)
            .cast::<*mut bindings::mm_struct>()
            .read_volatile()
    }
}

/// `current->mm`: the calling task's address space, null in a kernel thread. For comparison,
/// or borrowed while the task runs (it is a user of its own address space).
#[inline(always)]
pub(crate) fn current_mm() -> *mut bindings::mm_struct {
    // SAFETY: `current()` is this task, live while it runs.
    unsafe { mm(current()) }
}

/// `&current->perf_recursion[0]`: perf's recursion count of this task in task context, which
/// `perf_swevent_get_recursion_context()` raises and `perf_tp_event()` lowers again.
#[inline(always)]
pub(crate) fn perf_recursion() -> *mut u8 {
    // CAST: A field offset within `task_struct`.
    let offset = bindings::RUE_TASK_PERF_RECURSION as usize;
    // SAFETY: `current()` is this task, live while it runs, and `offset` is the offset of its
    // `u8 perf_recursion[PERF_NR_CONTEXTS]` as C lays it out (checked at load): in bounds.
    unsafe { current().byte_add(offset).cast::<u8>() }
}

/// `&current->pagefault_disabled`, which `pagefault_disable()` and `pagefault_enable()` change.
/// Only the task itself may change it, and only in pairs.
#[cfg_attr(
    not(all(
        CONFIG_SMP,
        CONFIG_HAS_SEPARATE_PREEMPT_RESCHED_BITS,
        any(
            CONFIG_X86_64,
            all(CONFIG_ARM64, not(CONFIG_CPU_BIG_ENDIAN), not(CONFIG_ARM64_PSEUDO_NMI))
        )
    )),
    allow(dead_code) // Used by the inline write section only (`crate::tracepoint`).
)]
#[inline(always)]
pub(crate) fn pagefault_disabled() -> *mut c_int {
    // CAST: A field offset within `task_struct`.
    let offset = bindings::RUE_TASK_PAGEFAULT_DISABLED as usize;
    // SAFETY: `current()` is this task, live while it runs, and `offset` is the offset of its
    // `int pagefault_disabled` as C lays it out (checked at load): the pointer is in bounds.
    unsafe { current().byte_add(offset).cast::<c_int>() }
}

/// `current->pid`: the calling task's id in the initial namespace, which ftrace records.
#[inline(always)]
pub(crate) fn pid() -> c_int {
    // CAST: A field offset within `task_struct`.
    let offset = bindings::RUE_TASK_PID as usize;
    // SAFETY: `current()` is this task, live while it runs, and `offset` is the offset of its
    // `pid_t pid` as C lays it out (checked at load); set before the task first runs.
    unsafe { current().byte_add(offset).cast::<c_int>().read() }
}

/// `current->migration_disabled`: how many `migrate_disable()` the calling task is inside (read
/// by the inline trace context, x86-64 and arm64 without PREEMPT_RT only).
#[cfg(all(
    CONFIG_SMP,
    CONFIG_HAS_SEPARATE_PREEMPT_RESCHED_BITS,
    not(CONFIG_PREEMPT_RT),
    any(
        CONFIG_X86_64,
        all(CONFIG_ARM64, not(CONFIG_CPU_BIG_ENDIAN), not(CONFIG_ARM64_PSEUDO_NMI))
    )
))]
#[inline(always)]
pub(crate) fn migration_disabled() -> u16 {
    // CAST: A field offset within `task_struct`.
    let offset = bindings::RUE_TASK_MIGRATION_DISABLED as usize;
    // SAFETY: `current()` is this task, live while it runs, and `offset` is the offset of its
    // `unsigned short migration_disabled` as C lays it out (checked at load), which only the
    // task itself changes.
    unsafe { current().byte_add(offset).cast::<u16>().read() }
}

/// `current_thread_info()->flags`: the calling task's `TIF_*` bits, read once, as
/// `tif_test_bit()` reads them (other CPUs set `TIF_NEED_RESCHED` at any time); for the inline
/// trace context, as [`migration_disabled`].
#[cfg(all(
    CONFIG_SMP,
    CONFIG_HAS_SEPARATE_PREEMPT_RESCHED_BITS,
    not(CONFIG_PREEMPT_RT),
    any(
        CONFIG_X86_64,
        all(CONFIG_ARM64, not(CONFIG_CPU_BIG_ENDIAN), not(CONFIG_ARM64_PSEUDO_NMI))
    )
))]
#[inline(always)]
pub(crate) fn thread_flags() -> kernel::ffi::c_ulong {
    // CAST: A field offset within `task_struct`.
    let offset = bindings::RUE_TASK_TI_FLAGS as usize;
    // SAFETY: `current()` is this task, live while it runs, and `offset` is the offset of its
    // `thread_info.flags` as C lays it out (checked at load); a volatile read, as other CPUs
    // set bits in it.
    unsafe {
        current()
            .byte_add(offset)
            .cast::<kernel::ffi::c_ulong>()
            .read_volatile()
    }
}

/// `&current_thread_info()->preempt_count` on arm64: the preemption count in its low 32 bits
/// (`preempt.count`) and, in its high 32, `preempt.need_resched`, which is 0 while a reschedule
/// is due (asm/preempt.h's `PREEMPT_NEED_RESCHED`, inverted). Only the task itself changes the
/// count; other CPUs and interrupts change only the high half (for the inline write section).
#[cfg(all(
    CONFIG_ARM64,
    CONFIG_SMP,
    CONFIG_HAS_SEPARATE_PREEMPT_RESCHED_BITS,
    not(CONFIG_CPU_BIG_ENDIAN),
    not(CONFIG_ARM64_PSEUDO_NMI)
))]
#[inline(always)]
pub(crate) fn preempt_count() -> *mut u64 {
    // CAST: A field offset within `task_struct`.
    let offset = bindings::RUE_TASK_TI_PREEMPT_COUNT as usize;
    // SAFETY: `current()` is this task, live while it runs, and `offset` is the offset of its
    // `thread_info.preempt_count` as C lays it out (checked at load): in bounds.
    unsafe { current().byte_add(offset).cast::<u64>() }
}

/// `raw_smp_processor_id()` on arm64: `current_thread_info()->cpu`, the CPU the calling task
/// runs on, stable while preemption is disabled.
#[cfg(all(CONFIG_ARM64, CONFIG_SMP))]
#[inline(always)]
pub(crate) fn cpu() -> usize {
    // CAST: A field offset within `task_struct`.
    let offset = bindings::RUE_TASK_TI_CPU as usize;
    // SAFETY: `current()` is this task, live while it runs, and `offset` is the offset of its
    // `u32 thread_info.cpu` as C lays it out (checked at load), which the scheduler changes only
    // while the task is not running.
    let cpu = unsafe { current().byte_add(offset).cast::<u32>().read() };
    // CAST: CPU numbers are below `nr_cpu_ids`.
    cpu as usize
}

/// A reference on the memory cgroup an address space's owner was in when it was taken: a fork
/// copy's charge, taken by the fork probe in the forking task, so that the copy charges the
/// cgroup of the fork, as upstream's copy in `copy_process()` does, however late it runs and
/// wherever the forker went or whether it exited meanwhile. Without `CONFIG_MEMCG` it is
/// nothing.
///
/// # Invariants
///
/// `memcg` is null or holds one reference, taken by `rue_memcg_get()` and dropped in `drop`.
pub(crate) struct Memcg {
    memcg: *mut bindings::mem_cgroup,
}

// SAFETY: A cgroup reference may be dropped on any task (`css_put`).
unsafe impl Send for Memcg {}
// SAFETY: Shared access only reads the pointer.
unsafe impl Sync for Memcg {}

impl Memcg {
    /// The memory cgroup of `mm`'s owner task, now.
    pub(crate) fn of(mm: &kernel::mm::Mm) -> Self {
        // SAFETY: `mm` is a live address space (the reference proves it); the cgroup is found
        // under RCU and returned with a reference of its own.
        let memcg = unsafe { bindings::rue_memcg_get(mm.as_raw()) };
        // INVARIANT: As returned by `rue_memcg_get`.
        Self { memcg }
    }
}

impl Drop for Memcg {
    fn drop(&mut self) {
        // SAFETY: The reference the type invariants say this holds (null: nothing).
        unsafe { bindings::rue_memcg_put(self.memcg) };
    }
}

/// Charges the calling task's accounted allocations (`__GFP_ACCOUNT`) to a memory cgroup until
/// dropped (`set_active_memcg()`).
///
/// # Invariants
///
/// `old` is the cgroup active on this task before; it is given back in `drop`, on the same task
/// (the raw pointer makes the guard neither `Send` nor `Sync`), and the borrow keeps the cgroup
/// made active referenced until then.
pub(crate) struct ChargeTo<'a> {
    old: *mut bindings::mem_cgroup,
    _memcg: core::marker::PhantomData<&'a Memcg>,
}

impl<'a> ChargeTo<'a> {
    /// Charges to `memcg` from now on.
    pub(crate) fn new(memcg: &'a Memcg) -> Self {
        // SAFETY: `memcg.memcg` is null or referenced (its invariants) for as long as the
        // borrow, which outlives this guard.
        let old = unsafe { bindings::rue_charge_to(memcg.memcg) };
        // INVARIANT: As returned by `rue_charge_to`.
        Self {
            old,
            _memcg: core::marker::PhantomData,
        }
    }
}

impl Drop for ChargeTo<'_> {
    fn drop(&mut self) {
        // SAFETY: The type invariants: the cgroup active before, on this task.
        unsafe { bindings::rue_charge_to(self.old) };
    }
}
