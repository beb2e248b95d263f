// SPDX-License-Identifier: GPL-2.0

//! Byte buffers that pure logic can write text into (`core::fmt::Write`): a growable one, and
//! a fixed one on the stack for short text.
//!
//! Allocations are charged to the calling task's memory cgroup (`GFP_KERNEL_ACCOUNT`): the
//! buffers hold what a registration keeps (an event's strings) or writes on the way, in the
//! registering task, which upstream charges for its event as well.

use core::{fmt, mem::MaybeUninit};
use kernel::prelude::*;

/// Bytes written through `fmt::Write`; an allocation failure surfaces as `fmt::Error`.
pub(crate) struct KBuf {
    bytes: KVec<u8>,
}

impl KBuf {
    /// An empty buffer.
    pub(crate) fn new() -> Self {
        Self { bytes: KVec::new() }
    }

    /// Runs `write` into a new buffer and returns it NUL-terminated; `ENOMEM` on failure.
    ///
    /// The buffer starts with room for `capacity` bytes: `KVec` grows from nothing by doubling,
    /// so text written piece by piece through `fmt::Write` would otherwise reallocate at 1, 2,
    /// 4, ... bytes.
    pub(crate) fn c_string(
        capacity: usize,
        write: impl FnOnce(&mut Self) -> fmt::Result,
    ) -> Result<KVec<u8>> {
        let mut buf = Self {
            bytes: KVec::with_capacity(capacity, GFP_KERNEL_ACCOUNT)?,
        };
        write(&mut buf).map_err(|_| ENOMEM)?;
        buf.bytes.push(0, GFP_KERNEL_ACCOUNT)?;
        Ok(buf.bytes)
    }

    /// Appends raw bytes.
    #[inline]
    pub(crate) fn push_bytes(&mut self, bytes: &[u8]) -> Result {
        extend(&mut self.bytes, bytes)
    }

    /// The bytes written so far.
    pub(crate) fn into_vec(self) -> KVec<u8> {
        self.bytes
    }
}

impl fmt::Write for KBuf {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_bytes(s.as_bytes()).map_err(|_| fmt::Error)
    }
}

/// `vec.extend_from_slice(bytes)` in one copy, where the kernel crate's copies byte by byte (a
/// loop of a few instructions per byte in every new event's strings and print format).
#[inline]
pub(crate) fn extend(vec: &mut KVec<u8>, bytes: &[u8]) -> Result {
    vec.reserve(bytes.len(), GFP_KERNEL_ACCOUNT)?;
    let spare = &mut vec.spare_capacity_mut()[..bytes.len()];
    // SAFETY: `spare` has room for `bytes.len()` bytes (reserved above) and does not overlap
    // `bytes`, which `vec` does not own.
    unsafe {
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), spare.as_mut_ptr().cast(), bytes.len())
    };
    // SAFETY: The `bytes.len()` bytes after the length were just written, within the capacity.
    unsafe { vec.inc_len(bytes.len()) };
    Ok(())
}

/// Up to `N` bytes of text on the stack, written through `fmt::Write`; a write that would not
/// fit fails, and the text is then to be written into a [`KBuf`].
///
/// # Invariants
///
/// The first `len` bytes of `bytes` are initialised, and `len <= N`.
pub(crate) struct StackBuf<const N: usize> {
    bytes: [MaybeUninit<u8>; N],
    len: usize,
}

impl<const N: usize> StackBuf<N> {
    /// An empty buffer.
    #[inline]
    pub(crate) fn new() -> Self {
        // INVARIANT: No byte is initialised, and none is claimed.
        Self {
            bytes: [MaybeUninit::uninit(); N],
            len: 0,
        }
    }

    /// The bytes written.
    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        // SAFETY: The first `len` bytes are initialised (type invariants).
        unsafe { core::slice::from_raw_parts(self.bytes.as_ptr().cast(), self.len) }
    }
}

impl<const N: usize> fmt::Write for StackBuf<N> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.bytes.get_mut(self.len..).ok_or(fmt::Error)?;
        let room = room.get_mut(..s.len()).ok_or(fmt::Error)?;
        // SAFETY: `room` has `s.len()` bytes and does not overlap `s`.
        unsafe { core::ptr::copy_nonoverlapping(s.as_ptr(), room.as_mut_ptr().cast(), s.len()) };
        // INVARIANT: The `s.len()` bytes after `len` were just written, within `N`.
        self.len += s.len();
        Ok(())
    }
}
