// SPDX-License-Identifier: GPL-2.0

//! Load-time check that the kernel crate's struct layouts agree with C.
//!
//! The module-local bindings are generated with bindgen's layout tests, but the kernel crate's
//! own bindings are not, and on this kernel bindgen drops an alignment inside `task_struct`
//! (`Documentation/design.md`, "Layout checks"). Every field this module reads through
//! `kernel::bindings` is listed here and in `rue_layout_c` (src/shim.c); `insmod` fails with
//! `ENOEXEC` if any offset or size differs. The `task_struct` fields the module reads are
//! listed with the offsets it reads them at (`src/task.rs`).

use crate::{bindings, logic::abi};
use core::mem::{offset_of, size_of};
use kernel::prelude::*;

/// One `offset_of!`/`size_of` fact, named as in `rue_layout_c`.
struct Fact {
    what: &'static CStr,
    value: usize,
}

macro_rules! offset {
    ($ty:ident, $field:ident) => {
        Fact {
            what: kernel::c_str!(concat!(stringify!($ty), ".", stringify!($field))),
            value: offset_of!(bindings::$ty, $field),
        }
    };
}

macro_rules! size {
    ($ty:ident) => {
        Fact {
            what: kernel::c_str!(concat!("sizeof ", stringify!($ty))),
            value: size_of::<bindings::$ty>(),
        }
    };
}

macro_rules! constant {
    ($what:literal, $value:expr) => {
        Fact {
            what: kernel::c_str!($what),
            // CAST: An offset within a struct.
            value: $value as usize,
        }
    };
}

/// How many facts there are: `thread_info.flags` is read on x86-64 and arm64, `pt_regs` on
/// x86-64 only, `thread_info.preempt_count` and `.cpu` on arm64 only.
const FACTS: usize = if cfg!(CONFIG_X86_64) { 46 } else { 44 };

/// The Rust side of the check, in the order of `rue_layout_c`.
fn rust_layout() -> [Fact; FACTS] {
    [
        size!(file),
        offset!(file, private_data),
        offset!(inode, i_private),
        offset!(dentry, d_inode),
        offset!(kiocb, ki_filp),
        offset!(seq_file, private),
        offset!(vfsmount, mnt_root),
        offset!(vfsmount, mnt_sb),
        offset!(super_block, s_type),
        offset!(file_system_type, name),
        size!(iov_iter),
        size!(list_head),
        size!(mutex),
        size!(tracepoint),
        offset!(tracepoint, key),
        offset!(tracepoint, funcs),
        offset!(trace_event_call, perf_events),
        offset!(trace_event_call, prog_array),
        // Not the kernel crate's `task_struct`, which disagrees with C here: the offsets
        // `src/task.rs` reads at, as bindgen took them from clang.
        constant!("task_struct.mm", bindings::RUE_TASK_MM),
        constant!(
            "task_struct.pagefault_disabled",
            bindings::RUE_TASK_PAGEFAULT_DISABLED
        ),
        constant!(
            "task_struct.perf_recursion",
            bindings::RUE_TASK_PERF_RECURSION
        ),
        constant!("task_struct.pid", bindings::RUE_TASK_PID),
        constant!(
            "task_struct.migration_disabled",
            bindings::RUE_TASK_MIGRATION_DISABLED
        ),
        #[cfg(any(CONFIG_X86_64, CONFIG_ARM64))]
        constant!("task_struct.thread_info.flags", bindings::RUE_TASK_TI_FLAGS),
        #[cfg(CONFIG_ARM64)]
        constant!(
            "task_struct.thread_info.preempt_count",
            bindings::RUE_TASK_TI_PREEMPT_COUNT
        ),
        #[cfg(CONFIG_ARM64)]
        constant!("task_struct.thread_info.cpu", bindings::RUE_TASK_TI_CPU),
        // The module-local bindings' view of the tracing core's structures, which their layout
        // tests check against clang only: a GCC-built kernel is checked here.
        offset!(trace_event_file, event_call),
        offset!(trace_event_file, tr),
        offset!(trace_event_file, flags),
        offset!(trace_array, array_buffer),
        offset!(trace_array, trace_flags),
        offset!(trace_array, buffer_disabled),
        offset!(array_buffer, buffer),
        // The fields the write path reads itself: a static key's count (`tracepoint.rs`,
        // `ftrace_record.rs`), the tracepoints' SRCU counter (`tracepoint.rs`), and an
        // iterator's type, offset and user segments (`write.rs`), which both user-backed types
        // keep at the start of the iterator's unions (bindgen names them anonymously).
        offset!(static_key, enabled),
        offset!(srcu_struct, srcu_ctrp),
        offset!(iov_iter, iter_type),
        offset!(iov_iter, iov_offset),
        constant!(
            "iov_iter.ubuf",
            offset_of!(bindings::iov_iter, __bindgen_anon_1)
        ),
        constant!(
            "iov_iter.__iov",
            offset_of!(bindings::iov_iter, __bindgen_anon_1)
        ),
        constant!(
            "iov_iter.nr_segs",
            offset_of!(bindings::iov_iter, __bindgen_anon_2)
        ),
        // An event's type, which an ftrace record's header and a perf sample carry
        // (`ftrace_record.rs`, `perf_sample.rs`), and a reserved ring buffer event, whose data
        // `ftrace_record::event_data` finds itself (its `type_len` bits are bindgen's accessor,
        // laid out by the psABI as C lays them out).
        offset!(trace_event_call, event),
        constant!("trace_event.type", offset_of!(bindings::trace_event, type_)),
        size!(ring_buffer_event),
        offset!(ring_buffer_event, array),
        // The registers a perf sample fills in itself on x86-64 (`perf_sample::fetch_caller_regs`;
        // arm64's are stored by C). `cs` is in the first union bindgen leaves anonymous.
        #[cfg(CONFIG_X86_64)]
        offset!(pt_regs, ip),
        #[cfg(CONFIG_X86_64)]
        constant!(
            "pt_regs.csx",
            offset_of!(bindings::pt_regs, __bindgen_anon_1)
        ),
        #[cfg(CONFIG_X86_64)]
        offset!(pt_regs, flags),
        #[cfg(CONFIG_X86_64)]
        offset!(pt_regs, sp),
    ]
}

/// Compares every fact with C; logs each disagreement and fails with `ENOEXEC` if any.
pub(crate) fn check() -> Result {
    // SAFETY: `rue_layout_c_len` is a constant defined in src/shim.c.
    let c_len = unsafe { bindings::rue_layout_c_len } as usize;
    // SAFETY: `rue_layout_c` is a constant array of `rue_layout_c_len` entries (src/shim.c).
    let c_facts = unsafe { core::slice::from_raw_parts(bindings::rue_layout_c.as_ptr(), c_len) };
    let rust_facts = rust_layout();
    let mut ok = c_facts.len() == rust_facts.len();
    if !ok {
        pr_err!(
            "layout: C lists {} facts, Rust {}\n",
            c_facts.len(),
            rust_facts.len()
        );
    }
    for (c, rust) in c_facts.iter().zip(rust_facts.iter()) {
        // SAFETY: Every `what` in `rue_layout_c` is a string literal.
        let c_what = unsafe { CStr::from_char_ptr(c.what) };
        if c_what != rust.what || c.value != rust.value {
            pr_err!(
                "layout: C {c_what:?} = {}, Rust {:?} = {}\n",
                c.value,
                rust.what,
                rust.value
            );
            ok = false;
        }
    }
    if ok {
        Ok(())
    } else {
        Err(ENOEXEC)
    }
}

// The ABI's values the module writes out (`logic::abi`, which the host tests cannot take from
// the kernel's headers), as the kernel's headers compute them. The enumerators' Rust type is the
// one bindgen picks for their anonymous enum, hence the casts.
#[allow(clippy::unnecessary_cast)]
const _: () = {
    assert!(abi::DIAG_IOCSREG == bindings::RUE_DIAG_IOCSREG as u32);
    assert!(abi::DIAG_IOCSDEL == bindings::RUE_DIAG_IOCSDEL as u32);
    assert!(abi::DIAG_IOCSUNREG == bindings::RUE_DIAG_IOCSUNREG as u32);
    assert!(abi::DIAG_IOCSREG_COMPAT == bindings::RUE_DIAG_IOCSREG_COMPAT as u32);
    assert!(abi::DIAG_IOCSDEL_COMPAT == bindings::RUE_DIAG_IOCSDEL_COMPAT as u32);
    assert!(abi::DIAG_IOCSUNREG_COMPAT == bindings::RUE_DIAG_IOCSUNREG_COMPAT as u32);
    assert!(abi::REG_PERSIST as u32 == bindings::RUE_USER_EVENT_REG_PERSIST as u32);
    assert!(abi::REG_MULTI_FORMAT as u32 == bindings::RUE_USER_EVENT_REG_MULTI_FORMAT as u32);
    assert!(abi::USER_EVENT_REG_MAX as u32 == bindings::RUE_USER_EVENT_REG_MAX as u32);
    assert!(size_of::<abi::UserReg>() == bindings::RUE_USER_REG_SIZE as usize);
    assert!(offset_of!(abi::UserReg, size) == bindings::RUE_USER_REG_SIZE_OFF as usize);
    assert!(offset_of!(abi::UserReg, enable_bit) == bindings::RUE_USER_REG_ENABLE_BIT as usize);
    assert!(offset_of!(abi::UserReg, enable_size) == bindings::RUE_USER_REG_ENABLE_SIZE as usize);
    assert!(offset_of!(abi::UserReg, flags) == bindings::RUE_USER_REG_FLAGS as usize);
    assert!(offset_of!(abi::UserReg, enable_addr) == bindings::RUE_USER_REG_ENABLE_ADDR as usize);
    assert!(offset_of!(abi::UserReg, name_args) == bindings::RUE_USER_REG_NAME_ARGS as usize);
    assert!(offset_of!(abi::UserReg, write_index) == bindings::RUE_USER_REG_WRITE_INDEX as usize);
    assert!(size_of::<abi::UserUnreg>() == bindings::RUE_USER_UNREG_SIZE as usize);
    assert!(offset_of!(abi::UserUnreg, size) == bindings::RUE_USER_UNREG_SIZE_OFF as usize);
    assert!(
        offset_of!(abi::UserUnreg, disable_bit) == bindings::RUE_USER_UNREG_DISABLE_BIT as usize
    );
    assert!(offset_of!(abi::UserUnreg, reserved) == bindings::RUE_USER_UNREG_RESERVED as usize);
    assert!(offset_of!(abi::UserUnreg, reserved2) == bindings::RUE_USER_UNREG_RESERVED2 as usize);
    assert!(
        offset_of!(abi::UserUnreg, disable_addr) == bindings::RUE_USER_UNREG_DISABLE_ADDR as usize
    );
    assert!(abi::TRACE_ENTRY_SIZE == bindings::RUE_TRACE_ENTRY_SIZE as usize);
    assert!(abi::TRACE_ENTRY_SIZE == size_of::<bindings::trace_entry>());
};
