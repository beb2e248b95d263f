// SPDX-License-Identifier: GPL-2.0

//! `compose` against `tracing_gen_ctx_irq_test()` as kernel/trace/trace.c writes it, over
//! every field of the preemption count at and around its edges (the fields' positions are
//! checked against the kernel's when the module is built).

use crate::logic::trace_ctx::*;

/// The C function's body, line by line (the reschedule flags passed in as they are read).
fn reference(irqs_off: bool, pc: u32, migration: u16, resched: u32) -> u32 {
    let mut trace_flags = if irqs_off { IRQS_OFF } else { 0 };
    if pc & NMI_MASK != 0 {
        trace_flags |= NMI;
    }
    if pc & HARDIRQ_MASK != 0 {
        trace_flags |= HARDIRQ;
    }
    if (pc & SOFTIRQ_MASK) & SOFTIRQ_OFFSET != 0 {
        trace_flags |= SOFTIRQ;
    }
    if (pc & SOFTIRQ_MASK) >> (SOFTIRQ_SHIFT + 1) != 0 {
        trace_flags |= BH_OFF;
    }
    trace_flags |= resched;
    (trace_flags << 16) | (pc & 0xff).min(0xf) | u32::from(migration).min(0xf) << 4
}

#[test]
fn matches_the_kernels_function_everywhere() {
    let depths = [0, 1, 2, 14, 15, 16, 17, 0x7f, 0xff];
    let softirqs = [0, 1, 2, 3, 0x80, 0xff];
    let fields = [0, 1, 7, 0xf];
    let resched = [
        0,
        NEED_RESCHED,
        NEED_RESCHED_LAZY,
        PREEMPT_RESCHED,
        NEED_RESCHED | NEED_RESCHED_LAZY | PREEMPT_RESCHED,
    ];
    let irqs_disabled = [0, 1, 0xff];
    let mut cases = 0;
    for &depth in &depths {
        for &softirq in &softirqs {
            for &hardirq in &fields {
                for &nmi in &fields {
                    for &disabled in &irqs_disabled {
                        let pc = depth | softirq << 8 | disabled << 16 | hardirq << 24 | nmi << 28;
                        for migration in [0u16, 1, 14, 15, 16, 17, 0xff, u16::MAX] {
                            for irqs_off in [false, true] {
                                for &r in &resched {
                                    assert_eq!(
                                        compose(irqs_off, pc, migration, r),
                                        reference(irqs_off, pc, migration, r),
                                        "irqs_off {irqs_off} pc {pc:#x} migration {migration} \
                                     resched {r:#x}"
                                    );
                                    cases += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 9 * 6 * 4 * 4 * 3 * 8 * 2 * 5);
}

#[test]
fn a_plain_write_has_no_flags_but_rescheduling() {
    // A system call with one preemption level of its own, nothing else.
    assert_eq!(compose(false, 1, 0, 0), 1);
    assert_eq!(
        compose(false, 1, 2, NEED_RESCHED),
        NEED_RESCHED << 16 | 2 << 4 | 1
    );
    // Interrupts off and a soft interrupt being served, bottom halves off once more.
    assert_eq!(
        compose(true, 1 | 3 << 8, 0, 0),
        (IRQS_OFF | SOFTIRQ | BH_OFF) << 16 | 1
    );
    // Depths over 15 are capped, not wrapped.
    assert_eq!(compose(false, 0x20, 40, 0), 0xff);
}
