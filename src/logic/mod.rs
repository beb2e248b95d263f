// SPDX-License-Identifier: GPL-2.0

//! Pure logic of user_events: no `kernel::` imports, only `core`, so every file here is also
//! compiled and unit-tested on the host (`tools/hosttest`, `cargo test`).

pub(crate) mod abi;
pub(crate) mod btf;
pub(crate) mod enable;
pub(crate) mod grammar;
pub(crate) mod jhash;
pub(crate) mod kernel_build;
pub(crate) mod ksym_text;
pub(crate) mod matching;
pub(crate) mod print_fmt;
pub(crate) mod segments;
pub(crate) mod show;
pub(crate) mod stats;
pub(crate) mod status;
// Composed inline on x86-64 and arm64 only, but for PREEMPT_RT (tracepoint.rs); other kernels
// ask C for the context.
#[cfg_attr(
    not(all(
        CONFIG_SMP,
        CONFIG_HAS_SEPARATE_PREEMPT_RESCHED_BITS,
        not(CONFIG_PREEMPT_RT),
        any(
            CONFIG_X86_64,
            all(CONFIG_ARM64, not(CONFIG_CPU_BIG_ENDIAN), not(CONFIG_ARM64_PSEUDO_NMI))
        )
    )),
    allow(dead_code)
)]
pub(crate) mod trace_ctx;
pub(crate) mod trace_output;
pub(crate) mod validate;
