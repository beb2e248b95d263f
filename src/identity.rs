// SPDX-License-Identifier: GPL-2.0

//! Load-time check that the running kernel is the build the module was checked against.
//!
//! The mirrors (`src/mirrors.rs`) and layout facts (`src/layout.rs`) are checked against a
//! kernel tree at build time; the module loader's `vermagic` compares only the release, which a
//! same-ABI upload or a rebuilt kernel keeps. The build records that tree's `uname -v`
//! (`tools/identity.sh`), and `insmod` fails with `ENOEXEC`, as for a wrong `vermagic`, when
//! the running kernel's differs: its fast paths would mirror a kernel nobody compared.
//! Documentation/design.md, "The kernel build".

use crate::{
    bindings,
    logic::kernel_build::{same_build, Recorded},
};
use kernel::{prelude::*, str::BStr};

include!(concat!(env!("RUE_OBJ_DIR"), "/identity_generated.rs"));

/// `Ok` when the running kernel's `uname -v` is the recorded build's.
pub(crate) fn check() -> Result {
    // SAFETY: `rue_kernel_version` returns `init_uts_ns.name.version`, a NUL-terminated array
    // in a static that lives as long as the kernel. It is set at build time and nothing writes
    // it: the system calls that change a UTS namespace write `nodename` and `domainname` only.
    let running = unsafe { CStr::from_char_ptr(bindings::rue_kernel_version()) }.to_bytes();
    let recorded = if EXACT {
        Recorded::Exact(VERSION.as_bytes())
    } else {
        Recorded::Contains(VERSION.as_bytes())
    };
    if same_build(recorded, running) {
        return Ok(());
    }
    pr_err!(
        "built for the kernel build '{}' ({}), but this one is '{}': its fast paths were checked \
         against another build of this release; rebuild the module for this kernel\n",
        VERSION.trim_end(),
        FROM,
        BStr::from_bytes(running)
    );
    Err(ENOEXEC)
}
