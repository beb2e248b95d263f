// SPDX-License-Identifier: GPL-2.0

//! Per-CPU data as the write path reaches it: another CPU's instance of a per-CPU variable
//! ([`per_cpu_ptr`]) and this CPU's flag ([`this_cpu_set`]). On x86-64 and arm64 inline, with
//! what the kernel's accessors compile to (the gate `percpu_inline`, [`crate::mirrors`]);
//! elsewhere, or where the kernel changed them, through `src/shim.c`.

use crate::bindings;
#[cfg(all(any(CONFIG_X86_64, CONFIG_ARM64), CONFIG_SMP))]
use crate::mirrors;
use kernel::ffi::c_uint;
#[cfg(all(any(CONFIG_X86_64, CONFIG_ARM64), CONFIG_SMP))]
use kernel::ffi::c_ulong;

/// `per_cpu_ptr(ptr, cpu)`: CPU `cpu`'s instance of the per-CPU variable at `ptr`; `None` for a
/// CPU number out of range.
///
/// On x86-64 and arm64 the offsets are the exported `__per_cpu_offset` array (asm-generic's
/// `per_cpu_offset()`, which both use), read here rather than through a C call; elsewhere the
/// shim computes it.
#[inline(always)]
pub(crate) fn per_cpu_ptr<T>(ptr: *mut T, cpu: usize) -> Option<*mut T> {
    #[cfg(all(any(CONFIG_X86_64, CONFIG_ARM64), CONFIG_SMP))]
    if mirrors::PERCPU_INLINE {
        // SAFETY: `__per_cpu_offset` is set up at boot and never written after init; this
        // borrow only reads it.
        let offsets: &[c_ulong] = unsafe { &*core::ptr::addr_of!(bindings::__per_cpu_offset) };
        // The kernel's `c_ulong` is `usize`.
        return Some(ptr.wrapping_byte_add(*offsets.get(cpu)?));
    }
    let cpu = c_uint::try_from(cpu).ok()?;
    // SAFETY: `ptr` is a per-CPU pointer; `per_cpu_ptr` only computes an address.
    Some(unsafe { bindings::rue_per_cpu_ptr(ptr.cast(), cpu) }.cast())
}

/// `__this_cpu_write(*flag, true)`.
///
/// # Safety
///
/// `flag` is the address of a per-CPU `bool`; preemption is disabled.
#[inline(always)]
pub(crate) unsafe fn this_cpu_set(flag: *mut bool) {
    #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
    if mirrors::PERCPU_INLINE {
        // SAFETY: One `%gs`-relative store to this CPU's copy (the caller's guarantee).
        unsafe {
            core::arch::asm!(
                "movb $1, %gs:({f})",
                f = in(reg) flag,
                options(att_syntax, nostack, preserves_flags),
            )
        };
        return;
    }
    // On arm64 `__this_cpu_write()` is a plain store to `raw_cpu_ptr(flag)`, this CPU's offset
    // (kept in `tpidr_el1` or `tpidr_el2`, which hold `per_cpu_offset(cpu)`) added: the same
    // address.
    let cpu = this_cpu();
    // SAFETY: This CPU's copy of the per-CPU variable, stable while preemption is disabled.
    unsafe {
        if let Some(flag) = per_cpu_ptr(flag, cpu) {
            flag.write(true);
        }
    }
}

/// `raw_smp_processor_id()`: on arm64 read from the task, as the kernel's macro reads it
/// (`current_thread_info()->cpu`); elsewhere through C.
#[inline(always)]
fn this_cpu() -> usize {
    #[cfg(all(CONFIG_ARM64, CONFIG_SMP))]
    if mirrors::PERCPU_INLINE {
        return crate::task::cpu();
    }
    // SAFETY: No preconditions.
    unsafe { bindings::rue_smp_processor_id() as usize }
}
