// SPDX-License-Identifier: GPL-2.0

//! Enablers (upstream `struct user_event_enabler`): a bit in a process's memory that the kernel
//! keeps set while any consumer is attached to an event.
//!
//! An enabler belongs to the process (thread group and address space) whose task registered it,
//! whatever file it used. Its bit is written remotely under `event_mutex`: the page is pinned
//! without faulting (`FOLL_NOFAULT`) and the word updated with an atomic `set_bit`/`clear_bit`.
//! If the page is not present or still shared copy-on-write, it is faulted in
//! (`fixup_user_fault`) **outside** `event_mutex` and the write retried, at most
//! [`MAX_ATTEMPTS`] times: synchronously for REG and UNREG, on the module's workqueue after a
//! status change or a fork (upstream's async fault path). A hostile process (unmapped words,
//! userfaultfd) can therefore never make tracing wait, nor the kernel loop. The address space is
//! only touched while `mmget_not_zero()` holds it.

use crate::{
    bindings, event::UserEvent, event_mutex::Held, group::STATE, logic::enable, scope::ScopeId,
};
use core::{
    mem::offset_of,
    ptr::{null_mut, NonNull},
};
use kernel::{prelude::*, types::Opaque};

/// Upstream gives up faulting in after about ten attempts (`user_event_mm_fault_in`).
const MAX_ATTEMPTS: u32 = 10;

/// Whose an enabler is: a scope (upstream's `user_event_mm`, see [`crate::scope`]) and the
/// address space its words live in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    /// The registering task's scope.
    pub(crate) scope: ScopeId,
    /// Its `mm_struct`, held with `mmgrab` by each enabler.
    pub(crate) mm: *mut bindings::mm_struct,
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

/// Sets or clears `bit` of the enable word at `addr` in `mm`, without faulting.
///
/// Called under `event_mutex`. Returns `ENOENT` if the address space is gone and `EFAULT` if the
/// page is not present, not writable or still shared copy-on-write: the caller then faults it in
/// with [`fault_in`], outside `event_mutex`, and tries again.
fn write_bit(mm: *mut bindings::mm_struct, addr: u64, bit: u8, set: bool) -> Result {
    let (word, bit) = enable::word_and_bit(addr, bit);
    // SAFETY: `mm` is kept allocated by the caller's `mmgrab`; `mmget_not_zero` only succeeds
    // while the address space is alive and then keeps it alive until `mmput_async`.
    if !unsafe { bindings::rue_mmget_not_zero(mm) } {
        return Err(ENOENT);
    }
    let mut page: *mut bindings::page = null_mut();
    // SAFETY: `mm` is held by `mmget_not_zero` above; the mmap lock is taken for reading as
    // `pin_user_pages_remote` requires; one page pointer slot. `FOLL_NOFAULT` never sleeps on
    // the target's page faults.
    let pinned = unsafe {
        bindings::rue_mmap_read_lock(mm);
        let pinned = bindings::pin_user_pages_remote(
            mm,
            word as c_ulong,
            1,
            bindings::FOLL_WRITE | bindings::FOLL_NOFAULT,
            &mut page,
            null_mut(),
        );
        bindings::rue_mmap_read_unlock(mm);
        pinned
    };
    let result = if pinned == 1 {
        // CAST: the offset within a page fits in `unsigned long`.
        let offset = (word % bindings::PAGE_SIZE as u64) as c_ulong;
        // SAFETY: `page` is pinned for writing and `offset` addresses an aligned long in it.
        unsafe {
            bindings::rue_page_change_bit(page, offset, bit, set);
            bindings::unpin_user_pages_dirty_lock(&mut page, 1, true);
        }
        Ok(())
    } else {
        Err(EFAULT)
    };
    // SAFETY: Taken above; `mmput_async` defers any final teardown out of `event_mutex`.
    unsafe { bindings::mmput_async(mm) };
    result
}

/// Faults the enable word at `addr` of `mm` in for writing (upstream `user_event_mm_fault_in`).
///
/// Must not be called with `event_mutex` held: the fault may sleep for as long as the owning
/// process wants (userfaultfd), and tracing must not wait for it.
fn fault_in(mm: *mut bindings::mm_struct, addr: u64) -> Result {
    let (word, _) = enable::word_and_bit(addr, 0);
    // SAFETY: As in `write_bit`.
    if !unsafe { bindings::rue_mmget_not_zero(mm) } {
        return Err(ENOENT);
    }
    let mut unlocked = false;
    // SAFETY: `mm` is held; the mmap lock is held for reading around `fixup_user_fault`, which
    // may drop and retake it (reported in `unlocked`, harmless here).
    let ret = unsafe {
        bindings::rue_mmap_read_lock(mm);
        let ret = bindings::fixup_user_fault(
            mm,
            word as c_ulong,
            bindings::fault_flag_FAULT_FLAG_WRITE | bindings::fault_flag_FAULT_FLAG_REMOTE,
            &mut unlocked,
        );
        bindings::rue_mmap_read_unlock(mm);
        bindings::mmput_async(mm);
        ret
    };
    kernel::error::to_result(ret).map_err(|_| EFAULT)
}

/// Writes `bit` with bounded fault-in retries, taking `event_mutex` only around each write
/// (upstream's registration and UNREG loops). Returns the last write's result.
fn write_bit_faulting(
    mm: *mut bindings::mm_struct,
    addr: u64,
    mut write: impl FnMut(&mut Held) -> Result,
) -> Result {
    let mut result = Err(EFAULT);
    for _ in 0..MAX_ATTEMPTS {
        result = write(&mut Held::lock());
        if result != Err(EFAULT) {
            break;
        }
        if fault_in(mm, addr).is_err() {
            break;
        }
    }
    result
}

/// A deferred fault-in for one enabler (upstream `user_event_enabler_fault`), queued when a
/// status change finds the page absent.
struct FaultWork {
    work: Opaque<bindings::work_struct>,
    event: NonNull<UserEvent>,
    owner: Owner,
    addr: u64,
    bit: u8,
    attempt: u32,
}

/// Queues a fault-in and rewrite of one enabler; takes an event and an mm reference.
fn queue_fault(
    held: &mut Held,
    event: NonNull<UserEvent>,
    owner: Owner,
    addr: u64,
    bit: u8,
    attempt: u32,
) {
    if attempt >= MAX_ATTEMPTS {
        // Given up until the next status change, as upstream (no loop against a hostile process).
        return;
    }
    let Ok(item) = KBox::new(
        FaultWork {
            work: Opaque::zeroed(),
            event,
            owner,
            addr,
            bit,
            attempt,
        },
        GFP_KERNEL,
    ) else {
        return;
    };
    // SAFETY: The caller's enabler holds a reference on `event` and on `owner.mm`; the work
    // takes its own, dropped in `fault_work_fn`.
    unsafe {
        event.as_ref().get();
        bindings::mmgrab(owner.mm);
    }
    let item = KBox::into_raw(item);
    // SAFETY: `item` is owned by the work until `fault_work_fn` frees it.
    unsafe {
        bindings::rue_init_work((*item).work.get(), Some(fault_work_fn));
        if !crate::deferred::queue((*item).work.get()) {
            let item = KBox::from_raw(item);
            bindings::rue_mmdrop(item.owner.mm);
            item.event.as_ref().put_locked(held);
        }
    }
}

/// # Safety
///
/// Called by the workqueue with the `work` of a [`FaultWork`] queued by [`queue_fault`].
unsafe extern "C" fn fault_work_fn(work: *mut bindings::work_struct) {
    // SAFETY: `work` is the first field's address inside a leaked `KBox<FaultWork>`.
    let item = unsafe {
        KBox::from_raw(
            work.byte_sub(offset_of!(FaultWork, work))
                .cast::<FaultWork>(),
        )
    };
    let faulted = fault_in(item.owner.mm, item.addr);
    let mut held = Held::lock();
    // SAFETY: The work holds a reference on the event.
    let ev = unsafe { item.event.as_ref() };
    let still_registered = STATE.get(&mut held).enablers.iter().any(|e| {
        e.owner == item.owner && e.addr == item.addr && e.bit == item.bit && e.event == item.event
    });
    if faulted.is_ok() && still_registered {
        if write_bit(item.owner.mm, item.addr, item.bit, ev.status() != 0) == Err(EFAULT) {
            queue_fault(
                &mut held,
                item.event,
                item.owner,
                item.addr,
                item.bit,
                item.attempt + 1,
            );
        }
    }
    // SAFETY: Drops the references taken by `queue_fault`.
    unsafe { bindings::rue_mmdrop(item.owner.mm) };
    ev.put_locked(&mut held);
}

/// True if `scope` already has an enabler at `addr`/`bit` (the `EADDRINUSE` check; upstream
/// compares the original address and bit, not the size).
pub(crate) fn exists(held: &mut Held, scope: ScopeId, addr: u64, bit: u8) -> bool {
    STATE
        .get(held)
        .enablers
        .iter()
        .any(|e| e.owner.scope == scope && e.addr == addr && e.bit == bit)
}

/// Creates the enabler for a registration and writes the event's current state into it,
/// faulting the word in (outside `event_mutex`) up to ten times (upstream
/// `user_event_enabler_create`).
///
/// Takes a reference on `event` when it succeeds. Fails with `EFAULT` when the word cannot be
/// written (upstream returns `ENOMEM`, quirk Q1; see Documentation/deviations.md).
pub(crate) fn create(event: NonNull<UserEvent>, scope: ScopeId, addr: u64, bit: u8) -> Result {
    // SAFETY: No preconditions; returns current->mm with a reference, or NULL.
    let mm = unsafe { bindings::rue_current_mm_grab() };
    if mm.is_null() {
        return Err(EFAULT);
    }
    let owner = Owner { scope, mm };
    let result = write_bit_faulting(mm, addr, |held| {
        create_locked(held, event, owner, addr, bit)
    });
    // SAFETY: Drops the reference taken by `rue_current_mm_grab` (the enabler took its own).
    unsafe { bindings::rue_mmdrop(mm) };
    result
}

/// One attempt of [`create`] under `event_mutex`.
fn create_locked(
    held: &mut Held,
    event: NonNull<UserEvent>,
    owner: Owner,
    addr: u64,
    bit: u8,
) -> Result {
    let mm = owner.mm;
    // SAFETY: The caller holds a reference on `event`.
    let ev = unsafe { event.as_ref() };
    STATE.get(held).enablers.reserve(1, GFP_KERNEL)?;
    write_bit(mm, addr, bit, ev.status() != 0).map_err(|e| if e == ENOENT { EFAULT } else { e })?;
    ev.get();
    // SAFETY: `mm` is current's mm, held by the caller; the enabler keeps its own reference.
    unsafe { bindings::mmgrab(mm) };
    // INVARIANT: One event reference and one mm reference were taken above.
    // PANIC: Capacity was reserved above.
    STATE
        .get(held)
        .enablers
        .push(
            Enabler {
                event,
                owner,
                addr,
                bit,
            },
            GFP_KERNEL,
        )
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
        let (ev_ptr, owner, addr, bit) = (e.event, e.owner, e.addr, e.bit);
        if write_bit(owner.mm, addr, bit, set) == Err(EFAULT) {
            queue_fault(held, ev_ptr, owner, addr, bit, 0);
        }
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
        // SAFETY: Drops the enabler's `mmgrab` reference (type invariants).
        unsafe { bindings::rue_mmdrop(e.owner.mm) };
        // SAFETY: The enabler held a reference on the event (type invariants).
        unsafe { e.event.as_ref() }.put_locked(held);
    }
    removed
}

/// `DIAG_IOCSUNREG`: removes the enablers of the caller's scope at `addr`/`bit` and clears the
/// bit in its memory (`owner.mm`), even while the event is enabled, faulting the word in outside
/// `event_mutex` if needed. `ENOENT` if there was none (the bit is then left alone).
pub(crate) fn unregister(owner: Owner, addr: u64, bit: u8) -> Result {
    if owner.mm.is_null() {
        return Err(ENOENT);
    }
    // SAFETY: `owner.mm` is current's mm, alive while current runs; dropped below.
    unsafe { bindings::mmgrab(owner.mm) };
    let removed = remove_where(&mut Held::lock(), |e| {
        e.owner.scope == owner.scope && e.addr == addr && e.bit == bit
    });
    let result = if removed == 0 {
        Err(ENOENT)
    } else {
        write_bit_faulting(owner.mm, addr, |_held| {
            write_bit(owner.mm, addr, bit, false)
        })
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
pub(crate) fn dup(held: &mut Held, parent: ScopeId, child: Owner) {
    let count = STATE.get(held).enablers.len();
    for i in 0..count {
        let state = STATE.get(held);
        let Some(e) = state.enablers.get(i) else {
            break;
        };
        if e.owner.scope != parent {
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
        // INVARIANT: One event and one mm reference were taken above for the copy.
        // PANIC: Capacity was reserved above.
        state
            .enablers
            .push(
                Enabler {
                    event,
                    owner: child,
                    addr,
                    bit,
                },
                GFP_KERNEL,
            )
            .expect("reserved");
        // Right after fork the page is still shared copy-on-write: fault it in for the child
        // asynchronously, as upstream's fault path does on the child's first update.
        if write_bit(child.mm, addr, bit, ev.status() != 0) == Err(EFAULT) {
            queue_fault(held, event, child, addr, bit, 0);
        }
    }
}

/// Drops every enabler of a scope whose last task exited or exec'd.
pub(crate) fn remove_scope(held: &mut Held, scope: ScopeId) {
    remove_where(held, |e| e.owner.scope == scope);
}
