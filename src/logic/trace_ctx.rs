// SPDX-License-Identifier: GPL-2.0

//! The writer's context an ftrace record's header gives (`tracing_gen_ctx_irq_test()`,
//! kernel/trace/trace.c), from the interrupt flag, the preemption count, the task's
//! migrate-disable depth and its reschedule flags. `src/tracepoint.rs` reads those on x86-64
//! and arm64 and calls [`compose`]; its constants are checked against the kernel's there at build time.

/// `TRACE_FLAG_IRQS_OFF` (include/linux/trace_events.h).
pub(crate) const IRQS_OFF: u32 = 0x01;
/// `TRACE_FLAG_NEED_RESCHED_LAZY`.
pub(crate) const NEED_RESCHED_LAZY: u32 = 0x02;
/// `TRACE_FLAG_NEED_RESCHED`.
pub(crate) const NEED_RESCHED: u32 = 0x04;
/// `TRACE_FLAG_HARDIRQ`.
pub(crate) const HARDIRQ: u32 = 0x08;
/// `TRACE_FLAG_SOFTIRQ`.
pub(crate) const SOFTIRQ: u32 = 0x10;
/// `TRACE_FLAG_PREEMPT_RESCHED`.
pub(crate) const PREEMPT_RESCHED: u32 = 0x20;
/// `TRACE_FLAG_NMI`.
pub(crate) const NMI: u32 = 0x40;
/// `TRACE_FLAG_BH_OFF`.
pub(crate) const BH_OFF: u32 = 0x80;

// The fields of the preemption count (include/linux/preempt.h) with
// `CONFIG_HAS_SEPARATE_PREEMPT_RESCHED_BITS` (7.3's x86-64 and arm64): the preemption depth in bits 0 to 7,
// soft interrupts in 8 to 15, the `local_interrupt_disable()` depth in 16 to 23 (which the
// header does not show), hard interrupts in 24 to 27 and NMIs in 28 to 31.

/// `SOFTIRQ_SHIFT`.
pub(crate) const SOFTIRQ_SHIFT: u32 = 8;
/// `SOFTIRQ_OFFSET`: one level of soft-interrupt service.
pub(crate) const SOFTIRQ_OFFSET: u32 = 1 << SOFTIRQ_SHIFT;
/// `SOFTIRQ_MASK`.
pub(crate) const SOFTIRQ_MASK: u32 = 0xff << SOFTIRQ_SHIFT;
/// `HARDIRQ_MASK`.
pub(crate) const HARDIRQ_MASK: u32 = 0xf << 24;
/// `NMI_MASK`.
pub(crate) const NMI_MASK: u32 = 0xf << 28;

/// `tracing_gen_ctx_irq_test()`'s value: the `TRACE_FLAG_*` bits in bits 16 to 23, the
/// preemption depth (`pc`'s low byte) in bits 0 to 3 and the migrate-disable depth in bits 4
/// to 7, both capped at 15. `resched` holds the reschedule flags, `pc` is `preempt_count()`
/// (not PREEMPT_RT's, whose soft-interrupt count is the task's).
///
/// A write is a system call: in task context with interrupts on and both depths below 16,
/// which two tests here confirm; the rest is [`compose_slow`]'s.
#[inline(always)]
pub(crate) fn compose(irqs_off: bool, pc: u32, migration: u16, resched: u32) -> u32 {
    if !irqs_off && pc & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_MASK | 0xf0) == 0 && migration < 0x10 {
        resched << 16 | pc & 0xf | u32::from(migration) << 4
    } else {
        compose_slow(irqs_off, pc, migration, resched)
    }
}

/// [`compose`] in an interrupt context, with interrupts off, or with a depth to cap.
#[cold]
#[inline(never)]
fn compose_slow(irqs_off: bool, pc: u32, migration: u16, resched: u32) -> u32 {
    let mut flags = resched;
    if irqs_off {
        flags |= IRQS_OFF;
    }
    if pc & NMI_MASK != 0 {
        flags |= NMI;
    }
    if pc & HARDIRQ_MASK != 0 {
        flags |= HARDIRQ;
    }
    let softirq = pc & SOFTIRQ_MASK;
    if softirq & SOFTIRQ_OFFSET != 0 {
        flags |= SOFTIRQ;
    }
    if softirq >> (SOFTIRQ_SHIFT + 1) != 0 {
        flags |= BH_OFF;
    }
    flags << 16 | (pc & 0xff).min(0xf) | u32::from(migration).min(0xf) << 4
}
