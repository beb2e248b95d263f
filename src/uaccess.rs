// SPDX-License-Identifier: GPL-2.0

//! User memory reads the `kernel` crate lacks: `get_user()`, one aligned-or-not `u32` read
//! from user memory, for the write index of every write and the `size` that heads REG and
//! UNREG's structs (on x86-64 the kernel's own `__get_user_4`, a few instructions, where a
//! `UserSlice` read is a call of `_copy_from_user` and its checks); and a copy that may run with
//! page faults disabled, for the write path's payloads.

use crate::bindings;
use kernel::{
    error::from_err_ptr,
    ffi::{c_char, c_void},
    prelude::*,
};

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
/// `get_user`, [`crate::mirrors`]), then a `UserSlice` read; elsewhere `get_user()` in C
/// (`rue_get_user_u32`), compiled against the kernel's own headers, a few instructions where a
/// `UserSlice` read is `_copy_from_user`'s general copy.
#[inline(always)]
pub(crate) fn get_user_u32(addr: usize) -> Result<u32> {
    #[cfg(CONFIG_X86_64)]
    {
        if crate::mirrors::GET_USER {
            return get_user_4(addr);
        }
        use kernel::uaccess::{UserPtr, UserSlice};
        UserSlice::new(UserPtr::from_addr(addr), size_of::<u32>())
            .reader()
            .read::<u32>()
            .map_err(|_| EFAULT)
    }
    #[cfg(not(CONFIG_X86_64))]
    {
        let mut value = 0u32;
        // SAFETY: `value` is writable; `get_user()` checks `addr` as any user address, and
        // callers may sleep (it may fault a page in).
        let err = unsafe { bindings::rue_get_user_u32(&mut value, addr as *const u32) };
        if err != 0 {
            return Err(EFAULT);
        }
        Ok(value)
    }
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

/// `strncpy_from_user(dst, addr, dst.len())`: copies the NUL-terminated user string at `addr`
/// into `dst`, at most `dst.len()` bytes, and returns its length without the NUL (`dst.len()`
/// when no NUL came within them); `EFAULT` for memory it cannot read.
pub(crate) fn strncpy_from_user(dst: &mut [u8], addr: usize) -> Result<usize> {
    // CAST: A slice holds at most `isize::MAX` bytes.
    let len = dst.len() as isize;
    // SAFETY: `dst` is writable for `len` bytes; `strncpy_from_user` checks the user range
    // itself and copies at most that many bytes, stopping after a NUL.
    let copied =
        unsafe { bindings::strncpy_from_user(dst.as_mut_ptr().cast(), addr as *const c_char, len) };
    usize::try_from(copied).map_err(|_| EFAULT)
}

/// `strndup_user(addr, max)`: the NUL-terminated user string at `addr`, its NUL included, in a
/// new allocation; `EFAULT` for memory it cannot read, `EINVAL` for a string of `max` bytes or
/// more.
pub(crate) fn strndup_user(addr: usize, max: c_long) -> Result<KBox<[u8]>> {
    // SAFETY: `strndup_user` validates the user pointer itself.
    let p = from_err_ptr(unsafe { bindings::strndup_user(addr as *const c_char, max) })?;
    // SAFETY: On success `p` is a NUL-terminated string.
    let len = unsafe { CStr::from_char_ptr(p) }.to_bytes_with_nul().len();
    // SAFETY: `strndup_user` returns `memdup_user` of exactly the string and its NUL, a
    // `kmalloc` allocation of `len` bytes that the box frees with `kfree`, owned by nobody else.
    Ok(unsafe { KBox::from_raw(core::ptr::slice_from_raw_parts_mut(p.cast::<u8>(), len)) })
}

/// `copy_struct_from_user(dst, dst.len(), addr, size)`: a user struct of `size` bytes at
/// `addr` into `dst`, zero-filled when smaller, `E2BIG` when larger with a tail that is not
/// zero, `EFAULT` for memory it cannot read.
pub(crate) fn copy_struct_from_user(dst: &mut [u8], addr: usize, size: usize) -> Result {
    // SAFETY: `dst` is writable for its length; `copy_struct_from_user` checks the user range
    // and the tail itself.
    kernel::error::to_result(unsafe {
        bindings::rue_copy_struct_from_user(
            dst.as_mut_ptr().cast(),
            dst.len(),
            addr as *const c_void,
            size,
        )
    })
}

/// `access_ok(addr, size)`: whether the range is in user space (nothing is read).
pub(crate) fn access_ok(addr: usize, size: usize) -> bool {
    // SAFETY: Only checks the range against the user address limit.
    unsafe { bindings::rue_access_ok(addr as *const c_void, size) }
}
