// SPDX-License-Identifier: GPL-2.0

//! Changing a bit of an enable word in a program's memory: the kernel calls the enabler code
//! (`crate::enabler`) writes its bits with, as upstream's `user_event_enabler_write` and
//! `user_event_mm_fault_in` make them.
//!
//! Three ways, each never faulting but the last: through the calling task's own mapping
//! ([`change_own_bit`], one atomic access, as the futex code changes a user word), through a
//! page pinned in any address space ([`PinnedWord`]), and a fault-in for writing
//! ([`fault_in_writable`]). A task may also fault its own page in by pinning it
//! ([`PinnedWord::pin_own`]), which keeps a fork from sharing it again while pinned. A fork
//! copy first reads the child's word ([`read_long`]), and leaves a word that already shows the
//! event's state alone.

use crate::bindings;
use core::ptr::null_mut;
use kernel::{ffi::c_ulong, mm::MmWithUser, page::PAGE_SIZE, prelude::*};

/// Sets (or clears) the bits of `mask` in the `u32` at user address `addr` of the calling
/// task, with page faults disabled: `EFAULT` for an address outside user memory, or a page that
/// is not present or not writable (still shared copy-on-write). An empty `mask` changes nothing
/// and tells whether the word is writable now.
pub(crate) fn change_own_bit(addr: usize, mask: u32, set: bool) -> Result {
    // SAFETY: Any user address is allowed: the access is checked against the user range and
    // faults (page faults are disabled) become `-EFAULT`. The word is the caller's own memory,
    // which its program may change at any time itself; the access is atomic, so it changes only
    // `mask` of it.
    kernel::error::to_result(unsafe { bindings::rue_user_change_bit(addr as *mut u32, mask, set) })
}

/// An aligned `unsigned long` of a program's memory, its page pinned for writing
/// (`pin_user_pages_remote` with `FOLL_WRITE | FOLL_NOFAULT`, or `pin_user_pages_fast` with
/// `FOLL_WRITE` for the calling task's own), unpinned and marked dirty on drop.
///
/// # Invariants
///
/// `page` is pinned for writing by this value, once, and holds the `unsigned long` at user
/// address `word`, which is aligned to its size.
pub(crate) struct PinnedWord {
    page: *mut bindings::page,
    word: u64,
}

impl PinnedWord {
    /// Pins the page of the `unsigned long` at user address `word` of `user` for writing, if it
    /// is present and writable; never faults.
    ///
    /// # Safety
    ///
    /// `user`'s mmap lock is held for reading.
    pub(crate) unsafe fn pin(user: &MmWithUser, word: u64) -> Option<Self> {
        if word % size_of::<c_ulong>() as u64 != 0 {
            return None;
        }
        let mut page: *mut bindings::page = null_mut();
        // SAFETY: The address space is held by `user` and its mmap lock for reading (the
        // caller's guarantee); one page pointer slot. `FOLL_NOFAULT` never sleeps on the
        // target's page faults.
        let pinned = unsafe {
            bindings::pin_user_pages_remote(
                user.as_raw(),
                word as c_ulong,
                1,
                bindings::FOLL_WRITE | bindings::FOLL_NOFAULT,
                &mut page,
                null_mut(),
            )
        };
        if pinned != 1 {
            return None;
        }
        // INVARIANT: One page, pinned for writing, holding the aligned word.
        Some(Self { page, word })
    }

    /// Pins the page of the aligned `unsigned long` at user address `word` of the calling task
    /// for writing, faulting it in as a write would (unsharing a page shared copy-on-write):
    /// killably, waiting for a userfaultfd handler or a slow file if it must
    /// (`pin_user_pages_fast`). While the page is pinned, a fork copies it for the child
    /// instead of sharing it, so the task's own mapping of it stays writable. `EFAULT` if the
    /// word cannot be written.
    ///
    /// # Safety
    ///
    /// The calling task has an address space (a user task, not a kernel thread), and holds
    /// neither its mmap lock (the call takes it) nor any lock a page fault may wait behind.
    pub(crate) unsafe fn pin_own(word: u64) -> Result<Self> {
        if word % size_of::<c_ulong>() as u64 != 0 {
            return Err(EFAULT);
        }
        let mut page: *mut bindings::page = null_mut();
        // SAFETY: One page pointer slot; the calling task's own address space, which it has and
        // whose mmap lock it does not hold (the caller's guarantee): the call locks and faults
        // it itself.
        let pinned = unsafe {
            bindings::pin_user_pages_fast(word as c_ulong, 1, bindings::FOLL_WRITE, &mut page)
        };
        if pinned != 1 {
            return Err(EFAULT);
        }
        // INVARIANT: One page, pinned for writing, holding the aligned word.
        Ok(Self { page, word })
    }

    /// Sets or clears `bit` (below the word's bits) of the word.
    pub(crate) fn change_bit(&self, bit: u32, set: bool) {
        // CAST: The offset within a page fits in `unsigned long`.
        let offset = (self.word % PAGE_SIZE as u64) as c_ulong;
        // SAFETY: `page` is pinned for writing and `offset` addresses an aligned long in it
        // (type invariants).
        unsafe { bindings::rue_page_change_bit(self.page, offset, bit, set) };
    }
}

impl Drop for PinnedWord {
    fn drop(&mut self) {
        // SAFETY: Pinned by `pin` or `pin_own`, once (type invariants).
        unsafe { bindings::unpin_user_pages_dirty_lock(&mut self.page, 1, true) };
    }
}

/// The aligned `unsigned long` at user address `word` of `user`, read through a page reference
/// that neither faults nor unshares a page still shared copy-on-write; `EFAULT` if the page is not
/// present.
///
/// # Safety
///
/// `user`'s mmap lock is held for reading.
pub(crate) unsafe fn read_long(user: &MmWithUser, word: u64) -> Result<c_ulong> {
    if word % size_of::<c_ulong>() as u64 != 0 {
        return Err(EFAULT);
    }
    let mut val: c_ulong = 0;
    // SAFETY: The address space is held by `user` and its mmap lock for reading (the caller's
    // guarantee); the address is aligned to the long it reads; `val` is a local the call writes.
    kernel::error::to_result(unsafe {
        bindings::rue_user_read_long_remote(user.as_raw(), word as c_ulong, &mut val)
    })?;
    Ok(val)
}

/// Whether user address `addr` of `user` is in a VMA registered with a userfaultfd, whose
/// faults may wait for its handler.
///
/// # Safety
///
/// `user`'s mmap lock is held for reading.
pub(crate) unsafe fn userfaultfd_armed(user: &MmWithUser, addr: u64) -> bool {
    // SAFETY: The address space is held by `user` and its mmap lock for reading (the caller's
    // guarantee), as the VMA lookup requires.
    unsafe { bindings::rue_userfaultfd_armed(user.as_raw(), addr as c_ulong) }
}

/// Faults the page of user address `addr` of `user` in for writing (`fixup_user_fault`). With
/// `may_wait` (`unlocked`: `FAULT_FLAG_ALLOW_RETRY | FAULT_FLAG_KILLABLE`) the fault may wait
/// (for file I/O, or a userfaultfd's handler) and a fatal signal ends it; it drops the mmap lock
/// while it waits and takes it again before it returns. Without, it keeps the lock and fails
/// where it would wait for a userfaultfd's handler. `EFAULT` if it cannot.
///
/// # Safety
///
/// `user`'s mmap lock is held for reading, and nothing the caller holds depends on it staying
/// held across the call when `may_wait` is given.
pub(crate) unsafe fn fault_in_writable(user: &MmWithUser, addr: u64, may_wait: bool) -> Result {
    let mut unlocked = false;
    let unlocked = if may_wait {
        core::ptr::from_mut(&mut unlocked)
    } else {
        null_mut()
    };
    // SAFETY: The address space is held by `user` and its mmap lock for reading (the caller's
    // guarantee). With `unlocked`, the fault may drop and retake that lock, and returns with it
    // held.
    let ret = unsafe {
        bindings::fixup_user_fault(
            user.as_raw(),
            addr as c_ulong,
            bindings::fault_flag_FAULT_FLAG_WRITE | bindings::fault_flag_FAULT_FLAG_REMOTE,
            unlocked,
        )
    };
    kernel::error::to_result(ret).map_err(|_| EFAULT)
}
