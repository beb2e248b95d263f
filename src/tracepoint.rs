// SPDX-License-Identifier: GPL-2.0

//! A tracepoint's attached probes, read the way the kernel's own tracepoints read them (the
//! `__traceiter_*` function of `__DEFINE_TRACE_EXT`, include/linux/tracepoint.h): under the
//! tracepoint read lock, the `tp->funcs` array up to its NULL terminator.
//!
//! The module uses this for the one tracepoint it owns per event: the write path calls each
//! probe ([`WriteGuard`]), the status update classifies them ([`ReadGuard`]), and the `reg`
//! callback attaches and detaches the module's probes ([`register_probe`]). It also finds the
//! kernel's own tracepoints by name and attaches probes to them for as long as an [`Attached`]
//! lives (the fork, exec and exit probes).

use crate::bindings;
use core::{
    marker::PhantomData,
    ptr::null_mut,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::prelude::*;

/// Whether `tp` has any probe attached (`static_key_enabled(&tp->key)`, as upstream's write path
/// asks): one load of its static key's count, read here rather than through a C call, as the
/// write path asks on every write; through C in a build whose kernel changed
/// `static_key_count()` (the gate `static_key`, [`crate::mirrors`]). A count of -1 is a key being
/// turned on, which `static_key_count()` reports as on.
///
/// # Safety
///
/// `tp` must be a registered tracepoint.
#[inline(always)]
pub(crate) unsafe fn enabled(tp: *mut bindings::tracepoint) -> bool {
    // SAFETY: `tp` is valid (the caller's guarantee).
    let key = unsafe { core::ptr::addr_of_mut!((*tp).key.key) };
    if !crate::mirrors::STATIC_KEY {
        // SAFETY: `key` is the live tracepoint's static key.
        return unsafe { bindings::rue_static_key_enabled(key) };
    }
    // SAFETY: As above; `enabled` is an `atomic_t` that the jump-label code changes with
    // atomic operations, read once as `raw_atomic_read` does.
    unsafe { core::ptr::addr_of!((*key).enabled.counter).read_volatile() != 0 }
}

/// The read side of the tracepoint probe arrays (`tracepoint_srcu`, fast flavour).
///
/// # Invariants
///
/// `cookie` is what `rue_tracepoint_read_lock` returned on this CPU's task, unlocked on drop.
pub(crate) struct ReadGuard {
    cookie: *mut c_void,
}

impl ReadGuard {
    /// Enters the read side.
    #[inline(always)]
    pub(crate) fn lock() -> Self {
        // SAFETY: No preconditions; the cookie is returned to the unlock in `drop`.
        let cookie = unsafe { bindings::rue_tracepoint_read_lock() };
        // INVARIANT: `cookie` comes from the lock above.
        Self { cookie }
    }

    /// The probes attached to `tp` now.
    ///
    /// # Safety
    ///
    /// `tp` must be a registered tracepoint.
    #[inline(always)]
    pub(crate) unsafe fn probes(&self, tp: *mut bindings::tracepoint) -> Probes<'_> {
        // SAFETY: The read side is held while `self` is borrowed; `tp` per the caller.
        unsafe { Probes::new(tp) }
    }
}

impl Drop for ReadGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: `cookie` came from the matching lock (type invariant).
        unsafe { bindings::rue_tracepoint_read_unlock(self.cookie) };
    }
}

/// The write path's section: preemption and page faults disabled and the read side of the
/// probe arrays held (the write path's only lock, taken by every write to an event with a
/// consumer attached). On x86-64 and arm64 it is entered and left inline ([`section`]: the C
/// inlines' instructions), elsewhere with one C call each.
///
/// Upstream's write path only disables preemption (`rcu_read_lock_sched()`), but the
/// tracepoint's probe arrays are freed after an SRCU grace period of `tracepoint_srcu`, which
/// does not wait for regions with preemption disabled, hence the read side as well. With page
/// faults disabled, a copy from user memory stops at a page that is not present instead of
/// faulting (upstream's `copy_nofault`); nothing else in the section reads user memory but
/// through the kernel's no-fault accessors (perf's user stack and callchain, BPF's
/// `bpf_probe_read_user`).
///
/// # Invariants
///
/// Preemption and page faults are disabled on CPU `cpu`, and `cookie` is what the read lock
/// returned; all three are undone on drop.
pub(crate) struct WriteGuard {
    cookie: *mut c_void,
    cpu: usize,
}

impl WriteGuard {
    /// Disables preemption and page faults and enters the read side.
    #[inline(always)]
    pub(crate) fn lock() -> Self {
        // SAFETY: The section is left by `drop`, on this task.
        let (cookie, cpu) = unsafe { section::enter() };
        // INVARIANT: `enter` did all three on `cpu`, which the section stays on.
        Self { cookie, cpu }
    }

    /// The probes attached to `tp` now.
    ///
    /// # Safety
    ///
    /// `tp` must be a registered tracepoint.
    #[inline(always)]
    pub(crate) unsafe fn probes(&self, tp: *mut bindings::tracepoint) -> Probes<'_> {
        // SAFETY: The read side is held while `self` is borrowed; `tp` per the caller.
        unsafe { Probes::new(tp) }
    }

    /// The CPU this runs on, which stays the same while the guard is held.
    #[inline(always)]
    pub(crate) fn cpu(&self) -> usize {
        self.cpu
    }
}

impl Drop for WriteGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: `cookie` came from the matching `enter` on this task, whose section is still
        // entered (type invariant).
        unsafe { section::leave(self.cookie) };
    }
}

/// The writer's context as an ftrace record's header gives it (`tracing_gen_ctx_dec()`): the
/// `TRACE_FLAG_*` bits (interrupts off, NMI, hard or soft interrupt, bottom halves off, a
/// reschedule due) in bits 16 to 23, the preemption depth in bits 0 to 3, and the
/// migrate-disable depth in bits 4 to 7, each capped at 15. Meant for a [`WriteGuard`]'s
/// section, where the core computes it in its tracepoint's: the section's own
/// `preempt_disable()` is not counted.
#[inline(always)]
pub(crate) fn trace_ctx() -> u32 {
    section::trace_ctx()
}

/// [`WriteGuard`]'s entry and exit: inline on x86-64 and arm64 while the kernel's bodies match
/// the ones [`inline_section`] mirrors, else through C ([`shim_section`]). The choice is a
/// constant.
mod section {
    #[cfg(all(
        CONFIG_SMP,
        CONFIG_HAS_SEPARATE_PREEMPT_RESCHED_BITS,
        any(
            CONFIG_X86_64,
            all(CONFIG_ARM64, not(CONFIG_CPU_BIG_ENDIAN), not(CONFIG_ARM64_PSEUDO_NMI))
        )
    ))]
    use super::inline_section;
    // Where no inline section is written, both ways are C's.
    #[cfg(not(all(
        CONFIG_SMP,
        CONFIG_HAS_SEPARATE_PREEMPT_RESCHED_BITS,
        any(
            CONFIG_X86_64,
            all(CONFIG_ARM64, not(CONFIG_CPU_BIG_ENDIAN), not(CONFIG_ARM64_PSEUDO_NMI))
        )
    )))]
    use super::shim_section as inline_section;
    use super::shim_section;
    use kernel::ffi::c_void;

    /// Whether this build enters and leaves the section inline.
    #[cfg(all(
        CONFIG_SMP,
        CONFIG_HAS_SEPARATE_PREEMPT_RESCHED_BITS,
        any(
            CONFIG_X86_64,
            all(CONFIG_ARM64, not(CONFIG_CPU_BIG_ENDIAN), not(CONFIG_ARM64_PSEUDO_NMI))
        )
    ))]
    const INLINE: bool = crate::mirrors::INLINE_SECTION;
    #[cfg(not(all(
        CONFIG_SMP,
        CONFIG_HAS_SEPARATE_PREEMPT_RESCHED_BITS,
        any(
            CONFIG_X86_64,
            all(CONFIG_ARM64, not(CONFIG_CPU_BIG_ENDIAN), not(CONFIG_ARM64_PSEUDO_NMI))
        )
    )))]
    const INLINE: bool = false;

    /// Disables preemption and page faults and enters the read side; returns the read side's
    /// cookie and the CPU.
    ///
    /// # Safety
    ///
    /// The caller leaves the section with [`leave`], on this task.
    #[inline(always)]
    pub(super) unsafe fn enter() -> (*mut c_void, usize) {
        if INLINE {
            // SAFETY: The caller's guarantee; `leave` takes the same branch.
            return unsafe { inline_section::enter() };
        }
        // SAFETY: As above.
        unsafe { shim_section::enter() }
    }

    /// Undoes [`enter`].
    ///
    /// # Safety
    ///
    /// `cookie` is what [`enter`] returned to this task, whose section is still entered.
    #[inline(always)]
    pub(super) unsafe fn leave(cookie: *mut c_void) {
        if INLINE {
            // SAFETY: The caller's guarantee; `enter` took the same branch.
            return unsafe { inline_section::leave(cookie) };
        }
        // SAFETY: As above.
        unsafe { shim_section::leave(cookie) }
    }

    /// The writer's context ([`super::trace_ctx`]).
    #[inline(always)]
    pub(super) fn trace_ctx() -> u32 {
        if INLINE {
            return inline_section::trace_ctx();
        }
        shim_section::trace_ctx()
    }
}

/// [`WriteGuard`]'s entry and exit on x86-64 and arm64, as the kernel's inlines compile there:
/// each a per-CPU instruction or a field of `current` (`preempt_disable_notrace()`,
/// `pagefault_disable()`, `raw_smp_processor_id()`, `srcu_read_lock_fast_notrace()` and their
/// undoing), so that a write makes no C call to enter or leave its section. What differs
/// between the two is in [`arch`]. `srcu_read_lock_fast_notrace()`'s flavour check, a
/// lockdep-kernel debug check that `tracepoint_srcu` is only ever read with the fast flavour,
/// is left out: this is that flavour.
///
/// Mirrors of the kernel's bodies under the gate `inline_section` ([`crate::mirrors`]): a build
/// against a kernel that changed one of them uses [`shim_section`].
#[cfg(all(
    CONFIG_SMP,
    CONFIG_HAS_SEPARATE_PREEMPT_RESCHED_BITS,
    any(
        CONFIG_X86_64,
        all(CONFIG_ARM64, not(CONFIG_CPU_BIG_ENDIAN), not(CONFIG_ARM64_PSEUDO_NMI))
    )
))]
mod inline_section {
    use self::arch::{cpu, preempt_disable, preempt_enable, this_cpu_inc};
    use crate::{bindings, logic::trace_ctx, task};
    use core::{
        mem::offset_of,
        sync::atomic::{compiler_fence, Ordering},
    };
    #[cfg(not(CONFIG_PREEMPT_RT))]
    use kernel::ffi::c_ulong;
    use kernel::ffi::c_void;

    /// Disables preemption and page faults and enters the read side; returns the read side's
    /// cookie and the CPU.
    ///
    /// # Safety
    ///
    /// The caller leaves the section with [`leave`], on this task.
    #[inline(always)]
    pub(super) unsafe fn enter() -> (*mut c_void, usize) {
        preempt_disable();
        pagefault_disable();
        (srcu_read_lock().cast(), cpu())
    }

    /// Undoes [`enter`].
    ///
    /// # Safety
    ///
    /// `cookie` is what [`enter`] returned to this task, whose section is still entered.
    #[inline(always)]
    pub(super) unsafe fn leave(cookie: *mut c_void) {
        // SAFETY: The caller's guarantee: `cookie` is the pair `srcu_read_lock` returned.
        unsafe { srcu_read_unlock(cookie.cast()) };
        // SAFETY: Both were disabled by the matching `enter`.
        unsafe { pagefault_enable() };
        // SAFETY: As above.
        unsafe { preempt_enable() };
    }

    /// `pagefault_disable()`.
    #[inline(always)]
    fn pagefault_disable() {
        let count = task::pagefault_disabled();
        // SAFETY: `current`'s own count, which only this task changes. It wraps as C's `int`
        // does in the kernel (`-fno-strict-overflow`), with no overflow check on the write path.
        unsafe { *count = (*count).wrapping_add(1) };
        // The store is issued before a page fault can hit (the C function's `barrier()`).
        compiler_fence(Ordering::SeqCst);
    }

    /// `pagefault_enable()`.
    ///
    /// # Safety
    ///
    /// Undoes a [`pagefault_disable`] of this task.
    #[inline(always)]
    unsafe fn pagefault_enable() {
        compiler_fence(Ordering::SeqCst);
        let count = task::pagefault_disabled();
        // SAFETY: As in `pagefault_disable`; the count is positive (the caller's guarantee).
        unsafe { *count = (*count).wrapping_sub(1) };
    }

    /// `tracing_gen_ctx_dec()`, with the body of the non-exported `tracing_gen_ctx_irq_test()`
    /// (kernel/trace/trace.c, [`trace_ctx::compose`]) read as its inlines compile: the
    /// interrupt state, the preemption count and its reschedule flag ([`arch`]) and two fields
    /// of `current`.
    #[cfg(not(CONFIG_PREEMPT_RT))]
    #[inline(always)]
    pub(super) fn trace_ctx() -> u32 {
        let irqs_off = arch::irqs_disabled();
        let count = arch::preempt_count();
        let thread_flags = task::thread_flags();
        // No reschedule due, the common case: one test of each word.
        let resched = if thread_flags & TIF_RESCHED == 0 && count & arch::NO_RESCHED_DUE != 0 {
            0
        } else {
            resched_flags(thread_flags, count)
        };
        let ctx = trace_ctx::compose(
            irqs_off,
            // CAST: `preempt_count()`: the count is the low 32 bits.
            count as u32,
            task::migration_disabled(),
            resched,
        );
        // The section's own `preempt_disable()` not counted.
        if cfg!(CONFIG_PREEMPTION) {
            ctx.wrapping_sub(1)
        } else {
            ctx
        }
    }

    /// The `TIF_*` bits that say a reschedule is due.
    #[cfg(not(CONFIG_PREEMPT_RT))]
    const TIF_RESCHED: c_ulong = 1 << bindings::TIF_NEED_RESCHED
        | if cfg!(CONFIG_ARCH_HAS_PREEMPT_LAZY) {
            1 << bindings::TIF_NEED_RESCHED_LAZY
        } else {
            0
        };

    /// The reschedule flags of [`trace_ctx`] from the task's `TIF_*` bits and the preemption
    /// count.
    #[cfg(not(CONFIG_PREEMPT_RT))]
    #[cold]
    #[inline(never)]
    fn resched_flags(thread_flags: c_ulong, count: u64) -> u32 {
        let mut resched = 0;
        if thread_flags & (1 << bindings::TIF_NEED_RESCHED) != 0 {
            resched |= trace_ctx::NEED_RESCHED;
        }
        #[cfg(CONFIG_ARCH_HAS_PREEMPT_LAZY)]
        if thread_flags & (1 << bindings::TIF_NEED_RESCHED_LAZY) != 0 {
            resched |= trace_ctx::NEED_RESCHED_LAZY;
        }
        if count & arch::NO_RESCHED_DUE == 0 {
            resched |= trace_ctx::PREEMPT_RESCHED;
        }
        resched
    }

    // `trace_ctx::compose` speaks the kernel's values.
    const _: () = {
        assert!(trace_ctx::IRQS_OFF == bindings::trace_flag_type_TRACE_FLAG_IRQS_OFF);
        assert!(
            trace_ctx::NEED_RESCHED_LAZY == bindings::trace_flag_type_TRACE_FLAG_NEED_RESCHED_LAZY
        );
        assert!(trace_ctx::NEED_RESCHED == bindings::trace_flag_type_TRACE_FLAG_NEED_RESCHED);
        assert!(trace_ctx::HARDIRQ == bindings::trace_flag_type_TRACE_FLAG_HARDIRQ);
        assert!(trace_ctx::SOFTIRQ == bindings::trace_flag_type_TRACE_FLAG_SOFTIRQ);
        assert!(trace_ctx::PREEMPT_RESCHED == bindings::trace_flag_type_TRACE_FLAG_PREEMPT_RESCHED);
        assert!(trace_ctx::NMI == bindings::trace_flag_type_TRACE_FLAG_NMI);
        assert!(trace_ctx::BH_OFF == bindings::trace_flag_type_TRACE_FLAG_BH_OFF);
        assert!(trace_ctx::SOFTIRQ_SHIFT == bindings::SOFTIRQ_SHIFT);
        assert!(trace_ctx::SOFTIRQ_OFFSET == bindings::SOFTIRQ_OFFSET);
        assert!(trace_ctx::SOFTIRQ_MASK == bindings::RUE_SOFTIRQ_MASK);
        assert!(trace_ctx::HARDIRQ_MASK == bindings::RUE_HARDIRQ_MASK);
        assert!(trace_ctx::NMI_MASK == bindings::RUE_NMI_MASK);
        assert!(bindings::RUE_PREEMPT_MASK == 0xff);
    };

    /// `tracing_gen_ctx_dec()`, in C: on PREEMPT_RT the soft-interrupt count is the task's.
    #[cfg(CONFIG_PREEMPT_RT)]
    #[inline(always)]
    pub(super) fn trace_ctx() -> u32 {
        // SAFETY: No preconditions.
        unsafe { bindings::rue_tracing_gen_ctx_dec() }
    }

    /// `srcu_read_lock_fast_notrace(&tracepoint_srcu)`: the current counter pair's `srcu_locks`
    /// incremented on this CPU. Returns the pair, for the unlock.
    #[inline(always)]
    fn srcu_read_lock() -> *mut bindings::srcu_ctr {
        // SAFETY: `tracepoint_srcu` is a kernel-lifetime `srcu_struct`; `srcu_ctrp` is read
        // once, as `READ_ONCE` does (the grace-period machinery flips it).
        let scp =
            unsafe { core::ptr::addr_of!(bindings::tracepoint_srcu.srcu_ctrp).read_volatile() };
        // SAFETY: `scp` is a per-CPU pointer to a pair of counters, `srcu_locks` a per-CPU
        // `unsigned long` in it; preemption is disabled (the section). A barrier, as the C
        // function's `barrier()`.
        unsafe {
            this_cpu_inc(
                scp.wrapping_byte_add(offset_of!(bindings::srcu_ctr, srcu_locks))
                    .cast(),
            )
        };
        scp
    }

    /// `srcu_read_unlock_fast_notrace(&tracepoint_srcu, scp)`.
    ///
    /// # Safety
    ///
    /// `scp` is what [`srcu_read_lock`] returned to this task.
    #[inline(always)]
    unsafe fn srcu_read_unlock(scp: *mut bindings::srcu_ctr) {
        // SAFETY: As in `srcu_read_lock`, on `srcu_unlocks` (on whatever CPU this runs).
        unsafe {
            this_cpu_inc(
                scp.wrapping_byte_add(offset_of!(bindings::srcu_ctr, srcu_unlocks))
                    .cast(),
            )
        };
    }

    /// The x86-64 half: the per-CPU variables are the kernel's exported ones, addressed
    /// `%gs`-relative as the kernel's own modules address them; the preemption count is this
    /// CPU's `__preempt_count`.
    #[cfg(CONFIG_X86_64)]
    mod arch {
        use crate::bindings;
        use core::arch::asm;

        /// `PREEMPT_NEED_RESCHED` in the count, set while no reschedule is due (asm/preempt.h).
        #[cfg(not(CONFIG_PREEMPT_RT))]
        pub(super) const NO_RESCHED_DUE: u64 = 1 << 63;

        #[cfg(all(CONFIG_PREEMPTION, CONFIG_PREEMPT_DYNAMIC))]
        extern "C" {
            /// The static call `preempt_enable_notrace()` makes (`__preempt_schedule_notrace()`):
            /// a return, or `preempt_schedule_notrace_thunk`, by the preemption model chosen at
            /// boot. It saves every register it uses.
            #[allow(non_upper_case_globals)]
            static __SCT__preempt_schedule_notrace: u8;
        }

        /// `preempt_disable_notrace()`: this CPU's preemption count, incremented.
        #[inline(always)]
        pub(super) fn preempt_disable() {
            // SAFETY: One per-CPU increment (`raw_cpu_add_8(__preempt_count, 1)`), which an
            // interrupt cannot split. Not `nomem`: a compiler barrier, as the C macro's
            // `barrier()`.
            unsafe {
                asm!(
                    "incq %gs:{pc}(%rip)",
                    pc = sym bindings::__preempt_count,
                    options(att_syntax, nostack),
                )
            };
        }

        /// `preempt_enable_notrace()`: the count decremented and, on a preemptible kernel, the
        /// scheduler called if that left it zero (x86 keeps `PREEMPT_NEED_RESCHED` inverted in
        /// the count, so zero means "no preemption count and a reschedule due").
        ///
        /// # Safety
        ///
        /// Undoes a [`preempt_disable`] of this task.
        #[inline(always)]
        pub(super) unsafe fn preempt_enable() {
            let zero: u8;
            // SAFETY: One per-CPU decrement (`__preempt_count_dec_and_test()`); a barrier, as
            // above.
            unsafe {
                asm!(
                    "decq %gs:{pc}(%rip)",
                    "sete {zero}",
                    pc = sym bindings::__preempt_count,
                    zero = out(reg_byte) zero,
                    options(att_syntax, nostack),
                )
            };
            #[cfg(CONFIG_PREEMPTION)]
            if zero != 0 {
                preempt_schedule();
            }
            #[cfg(not(CONFIG_PREEMPTION))]
            let _ = zero;
        }

        /// `__preempt_schedule_notrace()`: the static call on a kernel whose preemption model
        /// is chosen at boot, else the thunk.
        #[cfg(CONFIG_PREEMPTION)]
        #[cold]
        #[inline(never)]
        fn preempt_schedule() {
            // SAFETY: Called as the C macro calls it, with preemption enabled again; the target
            // saves the registers it uses, and the caller-saved ones are declared clobbered
            // anyway.
            unsafe {
                #[cfg(CONFIG_PREEMPT_DYNAMIC)]
                asm!(
                    "call {f}",
                    f = sym __SCT__preempt_schedule_notrace,
                    clobber_abi("C"),
                );
                #[cfg(not(CONFIG_PREEMPT_DYNAMIC))]
                asm!(
                    "call {f}",
                    f = sym bindings::preempt_schedule_notrace_thunk,
                    clobber_abi("C"),
                );
            }
        }

        /// `raw_smp_processor_id()`: this CPU's `cpu_number`. Stable while preemption is
        /// disabled.
        #[inline(always)]
        pub(super) fn cpu() -> usize {
            let cpu: u32;
            // SAFETY: One per-CPU load.
            unsafe {
                asm!(
                    "movl %gs:{n}(%rip), {cpu:e}",
                    n = sym bindings::cpu_number,
                    cpu = out(reg) cpu,
                    options(att_syntax, nostack, readonly, preserves_flags),
                )
            };
            // CAST: CPU numbers are below `nr_cpu_ids`.
            cpu as usize
        }

        /// `this_cpu_inc()` of the per-CPU `unsigned long` at `ptr`: one instruction, which an
        /// interrupt cannot split (x86 needs no NMI-safe variant).
        ///
        /// # Safety
        ///
        /// `ptr` is the address of a per-CPU `unsigned long`.
        #[inline(always)]
        pub(super) unsafe fn this_cpu_inc(ptr: *mut u64) {
            // SAFETY: One `%gs`-relative increment of this CPU's copy (the caller's guarantee).
            // Not `nomem`: a barrier.
            unsafe {
                asm!(
                    "incq %gs:({c})",
                    c = in(reg) ptr,
                    options(att_syntax, nostack),
                )
            };
        }

        /// `arch_irqs_disabled()`: the interrupt flag clear (`native_save_fl()`, `pushf`).
        #[cfg(not(CONFIG_PREEMPT_RT))]
        #[inline(always)]
        pub(super) fn irqs_disabled() -> bool {
            let eflags: u64;
            // SAFETY: `pushf; pop`; it uses the stack, and changes nothing else. A barrier, as
            // the C inline's `memory` clobber.
            unsafe {
                asm!(
                    "pushfq",
                    "popq {f}",
                    f = out(reg) eflags,
                    options(att_syntax, preserves_flags),
                )
            };
            eflags & (1 << bindings::X86_EFLAGS_IF_BIT) == 0
        }

        /// This CPU's preemption count, `PREEMPT_NEED_RESCHED` included
        /// (`raw_cpu_read_8(__preempt_count)`).
        #[cfg(not(CONFIG_PREEMPT_RT))]
        #[inline(always)]
        pub(super) fn preempt_count() -> u64 {
            let count: u64;
            // SAFETY: One per-CPU load.
            unsafe {
                asm!(
                    "movq %gs:{pc}(%rip), {c}",
                    pc = sym bindings::__preempt_count,
                    c = out(reg) count,
                    options(att_syntax, nostack, readonly, preserves_flags),
                )
            };
            count
        }
    }

    /// The arm64 half: the preemption count is the task's (`thread_info.preempt_count`, whose
    /// high half is the reschedule flag), the CPU number too (`thread_info.cpu`), and a per-CPU
    /// counter is incremented atomically, as arm64's `this_cpu_inc()` does: an interrupt on
    /// this CPU may increment the same counter.
    #[cfg(CONFIG_ARM64)]
    mod arch {
        use crate::{percpu, task};
        use core::{
            arch::asm,
            sync::atomic::{compiler_fence, Ordering},
        };

        /// `PREEMPT_NEED_RESCHED` (asm/preempt.h): bit 32 of `thread_info.preempt_count`, the
        /// low bit of `preempt.need_resched`, set while no reschedule is due.
        #[cfg(not(CONFIG_PREEMPT_RT))]
        pub(super) const NO_RESCHED_DUE: u64 = 1 << 32;

        /// `preempt_disable_notrace()`: `__preempt_count_add(1)` on `preempt.count`, the low
        /// half of the task's count, then a compiler barrier.
        #[inline(always)]
        pub(super) fn preempt_disable() {
            let count = task::preempt_count().cast::<u32>();
            // SAFETY: The calling task's own count, which only it changes (an interrupt that
            // changes it restores it before returning); `READ_ONCE` and `WRITE_ONCE`, as C.
            unsafe { count.write_volatile(count.read_volatile().wrapping_add(1)) };
            compiler_fence(Ordering::SeqCst);
        }

        /// `preempt_enable_notrace()`: a compiler barrier, `__preempt_count_dec_and_test()` and,
        /// on a preemptible kernel, the scheduler called if the whole word is zero: no count and
        /// a reschedule due.
        ///
        /// # Safety
        ///
        /// Undoes a [`preempt_disable`] of this task.
        #[inline(always)]
        pub(super) unsafe fn preempt_enable() {
            compiler_fence(Ordering::SeqCst);
            let word = task::preempt_count();
            // SAFETY: As in `preempt_disable`: the whole word read once, the count half written
            // back, the reschedule half left as another CPU may have set it.
            let pc = unsafe { word.read_volatile() }.wrapping_sub(1);
            // CAST: The count half of the decremented word.
            // SAFETY: As above.
            unsafe { word.cast::<u32>().write_volatile(pc as u32) };
            // If the word written back is not all zeroes, it is read again: an interrupt may
            // have cleared the reschedule flag between the read and the write.
            #[cfg(CONFIG_PREEMPTION)]
            // SAFETY: As above.
            if pc == 0 || unsafe { word.read_volatile() } == 0 {
                preempt_schedule();
            }
        }

        /// `__preempt_schedule_notrace()`.
        #[cfg(CONFIG_PREEMPTION)]
        #[cold]
        #[inline(never)]
        fn preempt_schedule() {
            // SAFETY: Called as the C macro calls it, with preemption enabled again.
            unsafe {
                #[cfg(CONFIG_PREEMPT_DYNAMIC)]
                crate::bindings::dynamic_preempt_schedule_notrace();
                #[cfg(not(CONFIG_PREEMPT_DYNAMIC))]
                crate::bindings::preempt_schedule_notrace();
            }
        }

        /// `raw_smp_processor_id()`: `current_thread_info()->cpu`.
        #[inline(always)]
        pub(super) fn cpu() -> usize {
            task::cpu()
        }

        /// `this_cpu_inc()` of the per-CPU `unsigned long` at `ptr`: `__percpu_add_case_64`'s
        /// load-exclusive loop on this CPU's instance. The kernel patches in LSE's `stadd` where
        /// the CPU has it; the loop is correct on every CPU.
        ///
        /// # Safety
        ///
        /// `ptr` is the address of a per-CPU `unsigned long`; preemption is disabled.
        #[inline(always)]
        pub(super) unsafe fn this_cpu_inc(ptr: *mut u64) {
            // This CPU's instance: `raw_cpu_ptr()` adds the offset the kernel keeps in
            // `tpidr_el1` (or `tpidr_el2`), `per_cpu_offset(cpu)`. A CPU's number is below
            // `NR_CPUS`: the offset is always there.
            let Some(ptr) = percpu::per_cpu_ptr(ptr, task::cpu()) else {
                return;
            };
            // SAFETY: `ptr` is this CPU's `unsigned long` (the caller's guarantee), 8-byte
            // aligned as C lays it out; the exclusive pair retries until no other access came
            // between. Not `nomem`: a barrier, as the C function's.
            unsafe {
                asm!(
                    "2: ldxr {tmp}, [{ptr}]",
                    "add {tmp}, {tmp}, #1",
                    "stxr {fail:w}, {tmp}, [{ptr}]",
                    "cbnz {fail:w}, 2b",
                    ptr = in(reg) ptr,
                    tmp = out(reg) _,
                    fail = out(reg) _,
                    options(nostack),
                )
            };
        }

        /// `arch_irqs_disabled()` without pseudo-NMIs: `DAIF`'s `I` bit (`PSR_I_BIT`).
        #[cfg(not(CONFIG_PREEMPT_RT))]
        #[inline(always)]
        pub(super) fn irqs_disabled() -> bool {
            let daif: u64;
            // SAFETY: One system register read (`read_sysreg(daif)`). A barrier, as C's
            // `read_sysreg()` is `volatile`.
            unsafe {
                asm!(
                    "mrs {d}, daif",
                    d = out(reg) daif,
                    options(nostack, preserves_flags),
                )
            };
            daif & u64::from(crate::bindings::PSR_I_BIT) != 0
        }

        /// The task's preemption count, its reschedule flag in the high half
        /// (`READ_ONCE(current_thread_info()->preempt_count)`).
        #[cfg(not(CONFIG_PREEMPT_RT))]
        #[inline(always)]
        pub(super) fn preempt_count() -> u64 {
            // SAFETY: The calling task's own word, read once.
            unsafe { task::preempt_count().read_volatile() }
        }
    }
}

/// [`WriteGuard`]'s entry and exit everywhere else, and where a mirror of [`inline_section`]
/// changed: the kernel's inlines, compiled by C against the target's headers (`src/shim.c`).
mod shim_section {
    use crate::bindings;
    use kernel::ffi::{c_uint, c_void};

    /// Disables preemption and page faults and enters the read side, in one C call; returns
    /// the read side's cookie and the CPU.
    ///
    /// # Safety
    ///
    /// The caller leaves the section with [`leave`], on this task.
    #[inline(always)]
    pub(super) unsafe fn enter() -> (*mut c_void, usize) {
        let mut cpu: c_uint = 0;
        // SAFETY: `cpu` is writable; the caller returns the cookie to `leave`.
        let cookie = unsafe { bindings::rue_tracepoint_write_lock(&mut cpu) };
        // CAST: CPU numbers are below `nr_cpu_ids`.
        (cookie, cpu as usize)
    }

    /// Undoes [`enter`], in one C call.
    ///
    /// # Safety
    ///
    /// `cookie` is what [`enter`] returned to this task, whose section is still entered.
    #[inline(always)]
    pub(super) unsafe fn leave(cookie: *mut c_void) {
        // SAFETY: The caller's guarantee.
        unsafe { bindings::rue_tracepoint_write_unlock(cookie) };
    }

    /// `tracing_gen_ctx_dec()`, in C.
    #[inline(always)]
    pub(super) fn trace_ctx() -> u32 {
        // SAFETY: No preconditions.
        unsafe { bindings::rue_tracing_gen_ctx_dec() }
    }
}

/// One attached probe: its function and the data it was registered with.
#[derive(Clone, Copy)]
pub(crate) struct Probe {
    /// The probe function, of the tracepoint's prototype.
    pub(crate) func: *mut c_void,
    /// Its registration data (the first argument `__traceiter_*` passes).
    pub(crate) data: *mut c_void,
}

/// The probes of one tracepoint, in the order the core calls them.
///
/// # Invariants
///
/// `next` is null or points into a NULL-terminated probe array that stays live while the
/// [`ReadGuard`] or [`WriteGuard`] borrowed for `'a` is held.
pub(crate) struct Probes<'a> {
    next: *const bindings::tracepoint_func,
    _guard: PhantomData<&'a ()>,
}

impl Probes<'_> {
    /// The probes of `tp`.
    ///
    /// # Safety
    ///
    /// `tp` must be a registered tracepoint, and the read side held for the returned lifetime.
    #[inline(always)]
    unsafe fn new(tp: *mut bindings::tracepoint) -> Self {
        // SAFETY: `tp` is valid (the caller's guarantee). Under the read side, `funcs` is null
        // or a live NULL-terminated array; read once, as `rcu_dereference_raw` does.
        let next = unsafe { core::ptr::addr_of!((*tp).funcs).read_volatile() };
        // INVARIANT: As above; the caller holds the read side for the lifetime.
        Self {
            next,
            _guard: PhantomData,
        }
    }
}

impl Iterator for Probes<'_> {
    type Item = Probe;

    #[inline(always)]
    fn next(&mut self) -> Option<Probe> {
        if self.next.is_null() {
            return None;
        }
        // SAFETY: `next` points into the live array (type invariant).
        let (func, data) = unsafe { ((*self.next).func, (*self.next).data) };
        if func.is_null() {
            return None;
        }
        // SAFETY: Not at the terminator, so the array continues at least one more entry.
        // INVARIANT: Still within the array.
        self.next = unsafe { self.next.add(1) };
        Some(Probe { func, data })
    }
}

/// Callback state of [`find`].
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

/// The kernel's tracepoint named `name` (kernel-global, never freed), found with the exported
/// `for_each_kernel_tracepoint()`: the module can attach to the scheduler's tracepoints though
/// their `__tracepoint_*` symbols are not exported.
pub(crate) fn find(name: &'static CStr) -> Result<*mut bindings::tracepoint> {
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

/// Attaches `probe` with `data` to `tp` (`tracepoint_probe_register`).
///
/// # Safety
///
/// `tp` is a registered tracepoint; `probe` has its prototype (with `data` first); `probe` and
/// `data` stay valid until a [`synchronize_unregister`] after the matching
/// [`unregister_probe`].
pub(crate) unsafe fn register_probe(
    tp: *mut bindings::tracepoint,
    probe: *mut c_void,
    data: *mut c_void,
) -> Result {
    // SAFETY: Guaranteed by the caller.
    kernel::error::to_result(unsafe { bindings::tracepoint_probe_register(tp, probe, data) })
}

/// Detaches what [`register_probe`] attached; calls already running may go on until a
/// [`synchronize_unregister`].
///
/// # Safety
///
/// `probe` with `data` is attached to `tp`.
pub(crate) unsafe fn unregister_probe(
    tp: *mut bindings::tracepoint,
    probe: *mut c_void,
    data: *mut c_void,
) {
    // SAFETY: Guaranteed by the caller.
    unsafe { bindings::tracepoint_probe_unregister(tp, probe, data) };
}

/// Waits until no probe detached before this call is still running
/// (`tracepoint_synchronize_unregister`).
pub(crate) fn synchronize_unregister() {
    // SAFETY: No preconditions; process context.
    unsafe { bindings::rue_tracepoint_synchronize_unregister() };
}

/// A probe attached to a tracepoint, detached when dropped.
///
/// Dropping does not wait for calls in flight: the owner calls [`synchronize_unregister`] once
/// its probes are dropped, before their data or the module's code goes.
///
/// # Invariants
///
/// `probe` with `data` is attached to `tp` until `drop`.
pub(crate) struct Attached {
    tp: *mut bindings::tracepoint,
    probe: *mut c_void,
    data: *mut c_void,
}

// SAFETY: Tracepoints are kernel-global; detaching may happen on any thread.
unsafe impl Send for Attached {}
// SAFETY: `&Attached` gives access to nothing.
unsafe impl Sync for Attached {}

impl Attached {
    /// Attaches `probe` with `data` to `tp`.
    ///
    /// # Safety
    ///
    /// As [`register_probe`].
    pub(crate) unsafe fn new(
        tp: *mut bindings::tracepoint,
        probe: *mut c_void,
        data: *mut c_void,
    ) -> Result<Self> {
        // SAFETY: Guaranteed by the caller.
        unsafe { register_probe(tp, probe, data) }?;
        // INVARIANT: Attached above.
        Ok(Self { tp, probe, data })
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        // SAFETY: Attached until now (type invariant).
        unsafe { unregister_probe(self.tp, self.probe, self.data) };
    }
}
