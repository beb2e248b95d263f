// SPDX-License-Identifier: GPL-2.0

//! Enablers (upstream `struct user_event_enabler`): a bit in a process's memory that the kernel
//! keeps set while any consumer is attached to an event.
//!
//! An enabler belongs to the process (thread group and address space) whose task registered it,
//! whatever file it used. Its bit is written remotely: the page is pinned without faulting
//! (`FOLL_NOFAULT`), the word is updated with an atomic `set_bit`/`clear_bit`, and if the page
//! is not present or still shared copy-on-write it is faulted in (`fixup_user_fault`) and the
//! write retried, at most [`MAX_ATTEMPTS`] times. All of this runs under `event_mutex` in process
//! context; the address space is only touched while `mmget_not_zero()` holds it.

use crate::{
    bindings,
    event::UserEvent,
    event_mutex::Held,
    group::STATE,
    logic::enable,
};
use core::{
    ptr::{null_mut, NonNull},
    sync::atomic::{AtomicUsize, Ordering},
};
use kernel::prelude::*;

/// Upstream gives up faulting in after about ten attempts (`user_event_mm_fault_in`).
const MAX_ATTEMPTS: u32 = 10;

/// Which process an enabler belongs to: its thread group and its address space.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    /// Thread-group id of the registering task.
    pub(crate) tgid: i32,
    /// Its `mm_struct` (compared, never dereferenced through this).
    pub(crate) mm: *mut bindings::mm_struct,
}

impl Owner {
    /// The calling task's process.
    pub(crate) fn current() -> Self {
        // SAFETY: No preconditions.
        let tgid = unsafe { bindings::rue_current_tgid() };
        // SAFETY: Reading current->mm for comparison only.
        let mm = unsafe { bindings::rue_task_mm(bindings::get_current()) };
        Self { tgid, mm }
    }
}

/// One enabler.
///
/// # Invariants
///
/// `event` holds one reference on a registered event; `mm` holds one `mmgrab` reference.
pub(crate) struct Enabler {
    event: NonNull<UserEvent>,
    owner: Owner,
    /// The address as registered (reported back by UNREG matching).
    addr: u64,
    bit: u8,
}

// SAFETY: The pointers are reference-counted kernel objects usable from any thread.
unsafe impl Send for Enabler {}

impl Enabler {
    /// The event this enabler follows.
    pub(crate) fn event(&self) -> &UserEvent {
        // SAFETY: By the type invariants the enabler holds a reference on the event.
        unsafe { self.event.as_ref() }
    }
}

/// Sets or clears `bit` of the enable word at `addr` in `mm`, faulting the page in if needed.
///
/// Returns `ENOENT` if the address space is gone, `EFAULT` if the word cannot be made writable.
fn write_bit(mm: *mut bindings::mm_struct, addr: u64, bit: u8, set: bool) -> Result {
    let (word, bit) = enable::word_and_bit(addr, bit);
    // SAFETY: `mm` is kept allocated by the enabler's `mmgrab`; `mmget_not_zero` only succeeds
    // while the address space is alive and then keeps it alive until `mmput_async`.
    if !unsafe { bindings::rue_mmget_not_zero(mm) } {
        return Err(ENOENT);
    }
    let mut result = Err(EFAULT);
    // SAFETY: `mm` is held by `mmget_not_zero` above.
    unsafe { bindings::rue_mmap_read_lock(mm) };
    for _ in 0..MAX_ATTEMPTS {
        let mut page: *mut bindings::page = null_mut();
        // SAFETY: The mmap lock is held for reading as required; one page pointer slot.
        let pinned = unsafe {
            bindings::pin_user_pages_remote(
                mm,
                word as c_ulong,
                1,
                bindings::FOLL_WRITE | bindings::FOLL_NOFAULT,
                &mut page,
                null_mut(),
            )
        };
        if pinned == 1 {
            // CAST: the offset within a page fits in `unsigned long`.
            let offset = (word % bindings::PAGE_SIZE as u64) as c_ulong;
            // SAFETY: `page` is pinned for writing and `offset` addresses an aligned long in it.
            unsafe {
                bindings::rue_page_change_bit(page, offset, bit, set);
                bindings::unpin_user_pages_dirty_lock(&mut page, 1, true);
            }
            result = Ok(());
            break;
        }
        let mut unlocked = false;
        // SAFETY: The mmap lock is held for reading; `fixup_user_fault` may drop and retake
        // it, which `unlocked` reports and which is harmless here.
        let ret = unsafe {
            bindings::fixup_user_fault(
                mm,
                word as c_ulong,
                bindings::fault_flag_FAULT_FLAG_WRITE | bindings::fault_flag_FAULT_FLAG_REMOTE,
                &mut unlocked,
            )
        };
        if ret != 0 {
            break;
        }
    }
    // SAFETY: Locked above; `mmput_async` defers any final teardown out of `event_mutex`.
    unsafe {
        bindings::rue_mmap_read_unlock(mm);
        bindings::mmput_async(mm);
    }
    result
}

/// True if the process `owner` already has an enabler at `addr`/`bit` (the `EADDRINUSE` check;
/// upstream compares the original address and bit, not the size).
pub(crate) fn exists(held: &mut Held, owner: Owner, addr: u64, bit: u8) -> bool {
    STATE
        .get(held)
        .enablers
        .iter()
        .any(|e| e.owner == owner && e.addr == addr && e.bit == bit)
}

/// Creates the enabler for a registration and writes the event's current state into it.
///
/// Takes a reference on `event` when it succeeds. Fails with `EFAULT` when the word cannot be
/// written (upstream returns `ENOMEM`, quirk Q1; see Documentation/deviations.md).
pub(crate) fn create(held: &mut Held, event: NonNull<UserEvent>, addr: u64, bit: u8) -> Result {
    // SAFETY: No preconditions; returns current->mm with a reference, or NULL.
    let mm = unsafe { bindings::rue_current_mm_grab() };
    if mm.is_null() {
        return Err(EFAULT);
    }
    // SAFETY: The caller holds a reference on `event`.
    let ev = unsafe { event.as_ref() };
    let owner = Owner {
        // SAFETY: No preconditions.
        tgid: unsafe { bindings::rue_current_tgid() },
        mm,
    };
    let result = STATE.get(held).enablers.reserve(1, GFP_KERNEL).map_err(Error::from);
    let result = result.and_then(|()| write_bit(mm, addr, bit, ev.status() != 0));
    if let Err(e) = result {
        // SAFETY: Drops the reference taken by `rue_current_mm_grab`.
        unsafe { bindings::rue_mmdrop(mm) };
        return Err(if e == ENOENT { EFAULT } else { e });
    }
    ev.get();
    COUNT.fetch_add(1, Ordering::Relaxed);
    // INVARIANT: One event reference and one mm reference were taken above.
    // PANIC: Capacity was reserved above.
    STATE
        .get(held)
        .enablers
        .push(Enabler { event, owner, addr, bit }, GFP_KERNEL)
        .expect("reserved");
    Ok(())
}

/// Rewrites every enabler of `event` after its consumers changed (`user_event_enabler_update`).
pub(crate) fn update_for(held: &mut Held, event: &UserEvent) {
    let set = event.status() != 0;
    let count = STATE.get(held).enablers.len();
    for i in 0..count {
        let Some(e) = STATE.get(held).enablers.get(i) else {
            break;
        };
        if !core::ptr::eq(e.event(), event) {
            continue;
        }
        let (mm, addr, bit) = (e.owner.mm, e.addr, e.bit);
        // A page that cannot be written is given up until the next change, as upstream.
        let _ = write_bit(mm, addr, bit, set);
    }
}

/// Removes the enablers `remove` selects, dropping their references.
fn remove_where(held: &mut Held, mut remove: impl FnMut(&Enabler) -> bool) -> usize {
    let mut removed = 0;
    let mut i = 0;
    loop {
        let state = STATE.get(held);
        let Some(e) = state.enablers.get(i) else {
            break;
        };
        if !remove(e) {
            i += 1;
            continue;
        }
        let Ok(e) = state.enablers.remove(i) else {
            break;
        };
        removed += 1;
        COUNT.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: Drops the enabler's `mmgrab` reference (type invariants).
        unsafe { bindings::rue_mmdrop(e.owner.mm) };
        // SAFETY: The enabler held a reference on the event (type invariants).
        unsafe { e.event.as_ref() }.put_locked(held);
    }
    removed
}

/// `DIAG_IOCSUNREG`: removes the caller's enablers at `addr`/`bit` and clears the bit, even
/// while the event is enabled. `ENOENT` if there was none (the bit is then left alone).
pub(crate) fn unregister(held: &mut Held, owner: Owner, addr: u64, bit: u8) -> Result {
    if owner.mm.is_null() {
        return Err(ENOENT);
    }
    // SAFETY: `owner.mm` is current's mm, alive while current runs; the reference is dropped
    // below after the bit is cleared.
    unsafe { bindings::mmgrab(owner.mm) };
    let removed = remove_where(held, |e| e.owner == owner && e.addr == addr && e.bit == bit);
    let result = if removed == 0 {
        Err(ENOENT)
    } else {
        write_bit(owner.mm, addr, bit, false)
    };
    // SAFETY: Taken above.
    unsafe { bindings::rue_mmdrop(owner.mm) };
    result
}

/// Gives a forked child copies of its parent's enablers (upstream `user_event_mm_dup`) and
/// writes each event's current state into the child's copy of the word.
///
/// The child's memory already holds the parent's bits as of the fork; writing them again closes
/// the window between the fork and this deferred copy. Allocation failure leaves the child
/// without enablers, as upstream.
pub(crate) fn dup(held: &mut Held, parent: Owner, child: Owner) {
    let count = STATE.get(held).enablers.len();
    for i in 0..count {
        let state = STATE.get(held);
        let Some(e) = state.enablers.get(i) else {
            break;
        };
        if e.owner != parent {
            continue;
        }
        let (event, addr, bit) = (e.event, e.addr, e.bit);
        if state.enablers.reserve(1, GFP_KERNEL).is_err() {
            return;
        }
        // SAFETY: The parent's enabler holds a reference on `event`.
        let ev = unsafe { event.as_ref() };
        ev.get();
        // SAFETY: The caller keeps `child.mm` allocated (mmgrab) for this call.
        unsafe { bindings::mmgrab(child.mm) };
        COUNT.fetch_add(1, Ordering::Relaxed);
        // INVARIANT: One event and one mm reference were taken above for the copy.
        // PANIC: Capacity was reserved above.
        state
            .enablers
            .push(Enabler { event, owner: child, addr, bit }, GFP_KERNEL)
            .expect("reserved");
        // The child may already be gone (ENOENT) or have unmapped the word: as upstream, the
        // bit is then left alone until the next change.
        let _ = write_bit(child.mm, addr, bit, ev.status() != 0);
    }
}

/// Drops every enabler of a process that exited, or of its address space before an exec.
pub(crate) fn remove_process(held: &mut Held, tgid: i32, mm: *mut bindings::mm_struct) {
    remove_where(held, |e| e.owner.tgid == tgid && e.owner.mm == mm);
}

/// Drops the enablers of `tgid` whose address space is not `keep_mm` (after an exec).
pub(crate) fn remove_process_except(held: &mut Held, tgid: i32, keep_mm: *mut bindings::mm_struct) {
    remove_where(held, |e| e.owner.tgid == tgid && e.owner.mm != keep_mm);
}

/// Number of enablers, kept beside the list so the exit/exec probes can skip all work, without
/// the lock, when there are none.
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// True if any process has an enabler (may be stale; only used to skip work).
pub(crate) fn any() -> bool {
    COUNT.load(Ordering::Relaxed) != 0
}
