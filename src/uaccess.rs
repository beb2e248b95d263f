// SPDX-License-Identifier: GPL-2.0

//! User memory reads the `kernel` crate lacks: `get_user()`, one aligned-or-not `u32` read
//! from user memory, for the write index of every write and the `size` that heads REG and
//! UNREG's structs (on x86-64 the kernel's own `__get_user_4`, a few instructions, where a
//! `UserSlice` read is a call of `_copy_from_user` and its checks); and a copy that may run with
//! page faults disabled, for the write path's payloads.

use kernel::{ffi::c_void, prelude::*};

/// Copies `dst.len()` bytes from user address `src` into `dst`; false if not every byte could
/// be read: an address outside user memory, or a page that is not present while page faults
/// are disabled.
///
/// `rue_copy_from_user_nofault` (src/shim.c): up to 64 bytes a word at a time in one user
/// access section, more with the non-temporal copy upstream's payload copy makes.
///
/// # Safety
///
/// The caller runs with page faults disabled, or may sleep.
#[inline(always)]
pub(crate) unsafe fn copy_from_user_nofault(dst: &mut [u8], src: usize) -> bool {
    // SAFETY: `dst` is writable for `dst.len()` bytes; the shim checks (or masks) `src` as any
    // user address; sleeping per the caller's guarantee.
    unsafe {
        crate::bindings::rue_copy_from_user_nofault(
            dst.as_mut_ptr().cast(),
            src as *const c_void,
            dst.len(),
        ) == 0
    }
}

/// The `u32` at user address `addr` (`get_user()`); `EFAULT` if it cannot be read.
///
/// On x86-64 the kernel's `__get_user_4` ([`get_user_4`]), unless its body changed (the gate
/// `get_user`, [`crate::mirrors`]); else a `UserSlice` read.
#[inline(always)]
pub(crate) fn get_user_u32(addr: usize) -> Result<u32> {
    #[cfg(CONFIG_X86_64)]
    if crate::mirrors::GET_USER {
        return get_user_4(addr);
    }
    use kernel::uaccess::{UserPtr, UserSlice};
    UserSlice::new(UserPtr::from_addr(addr), size_of::<u32>())
        .reader()
        .read::<u32>()
        .map_err(|_| EFAULT)
}

/// [`get_user_u32`] with `__get_user_4`.
///
/// `__get_user_4` (arch/x86/lib/getuser.S) takes the address in `rax` and returns 0 or
/// `-EFAULT` in `rax` and the zero-extended value in `rdx`. It clamps an address beyond user
/// space to one that faults, its exception table entry turns a fault into `-EFAULT`, and it
/// writes no memory and no other register but the flags. It is called directly, as the C
/// `get_user()` calls it (it has no `endbr`).
#[cfg(CONFIG_X86_64)]
#[inline(always)]
fn get_user_4(addr: usize) -> Result<u32> {
    let err: usize;
    let value: u64;
    // SAFETY: `__get_user_4`'s contract (above): any address, registers as declared here.
    unsafe {
        core::arch::asm!(
            "call {f}",
            f = sym crate::bindings::__get_user_4,
            inout("rax") addr => err,
            out("rdx") value,
        )
    };
    if err != 0 {
        return Err(EFAULT);
    }
    // CAST: `__get_user_4` zero-extends the 32 bits it read.
    Ok(value as u32)
}
