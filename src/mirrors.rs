// SPDX-License-Identifier: GPL-2.0

//! Which of the module's mirrors of kernel bodies this build may use.
//!
//! Where the write path does in Rust (or in `src/shim.c`) what a kernel inline, macro or
//! non-exported function does, it mirrors a body the kernel may change. `mirrors/list` names
//! every such body with the gate that uses it; the build (`tools/mirrors.sh`, run by `Kbuild`)
//! compares each with the text it was audited against (`mirrors/audited/`) and generates one
//! constant per gate: `false` when a body under that gate changed, so the module is built with
//! the gate's fallback, a path through the tracing core's exported functions or through C
//! compiled against the target's own headers. A change under a gate with no fallback stops the
//! build. Documentation/design.md, "Mirrored kernel bodies", lists them.

// A gate of one architecture's mirrors is read on that architecture only.
#![allow(dead_code)]

include!(concat!(env!("RUE_OBJ_DIR"), "/mirrors_generated.rs"));
