// SPDX-License-Identifier: GPL-2.0

//! What one open `user_events_data` file holds and does (upstream `user_event_file_info`):
//! its dense array of registered events (the write indexes) and the three ioctls.

use crate::{
    bindings, enabler,
    event::UserEvent,
    event_mutex::Held,
    group::Group,
    logic::abi::{
        self, Command, SizeError, UserReg, UserUnreg, USER_REG_MIN_SIZE,
        USER_REG_WRITE_INDEX_OFFSET, USER_UNREG_MIN_SIZE,
    },
    scope,
    tracepoint::WriteGuard,
    write,
};
use core::{
    mem::offset_of,
    ptr::{null_mut, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    error::from_err_ptr,
    iov::IovIterSource,
    prelude::*,
    sync::{aref::ARef, Arc},
    transmute::{AsBytes, FromBytes},
    types::Opaque,
    uaccess::{UserPtr, UserSlice},
};

/// `MAX_EVENT_DESC`: `strndup_user` limit, NUL included.
const MAX_EVENT_DESC: c_long = 512;

/// The events a file registered, by write index.
///
/// # Invariants
///
/// Each entry owns one reference on its event (from [`ARef::into_raw`]). An array replaced by a
/// larger one hands its references on to it; the last array's are put by [`FileInfo`]'s drop.
/// They are raw pointers, not `ARef`s, because an array is copied into its successor and freed
/// by an RCU callback, which may not put (the last put may sleep).
struct Refs {
    events: KVec<NonNull<UserEvent>>,
    /// Frees a replaced array after a grace period ([`Refs::free_after_grace_period`]).
    rcu: Opaque<bindings::callback_head>,
}

impl Refs {
    /// Frees `refs` once no RCU reader can see it any more, without waiting for that.
    ///
    /// A REG that grows the array runs under `reg_mutex`; waiting for a grace period there
    /// (`synchronize_rcu()`) would stall every REG, DEL and UNREG system-wide. Upstream frees
    /// with `kfree_rcu()` the same way. The module's exit waits for pending frees
    /// ([`RcuBarrier`]).
    ///
    /// # Safety
    ///
    /// `refs` came from `KBox::into_raw`, is no longer published, and is freed nowhere else.
    unsafe fn free_after_grace_period(refs: *mut Refs) {
        /// # Safety
        ///
        /// Called by RCU with the `rcu` field of a `Refs` passed to `call_rcu` below.
        unsafe extern "C" fn free(head: *mut bindings::callback_head) {
            // SAFETY: `head` is the `rcu` field of a leaked `KBox<Refs>` (see above); the grace
            // period has passed, so no reader holds the array.
            drop(unsafe { KBox::from_raw(head.byte_sub(offset_of!(Refs, rcu)).cast::<Refs>()) });
        }
        // SAFETY: By the function's safety requirements `refs` is a live, unpublished `Refs`
        // that only this callback will free; readers that still see it are RCU readers.
        unsafe { bindings::call_rcu((*refs).rcu.get(), Some(free)) };
    }
}

/// Waits at module exit for the index arrays still queued for freeing (`rcu_barrier()`), so no
/// RCU callback runs after the module's code is gone.
pub(crate) struct RcuBarrier;

impl Drop for RcuBarrier {
    fn drop(&mut self) {
        // SAFETY: Process context (module exit), no lock held.
        unsafe { bindings::rcu_barrier() };
    }
}

/// State of one open `user_events_data` file.
pub(crate) struct FileInfo {
    group: Arc<Group>,
    /// RCU-published [`Refs`]: replaced under `reg_mutex`, read by the write path.
    refs: AtomicPtr<Refs>,
}

// SAFETY: `refs` is only replaced under `reg_mutex` and read under RCU; events are `Sync`.
unsafe impl Send for FileInfo {}
// SAFETY: As above.
unsafe impl Sync for FileInfo {}

/// Copies a NUL-terminated user string of at most 511 bytes (`strndup_user(…, 512)`).
fn strndup_user(addr: u64) -> Result<KVec<u8>> {
    // SAFETY: `strndup_user` validates the user pointer itself.
    let p = from_err_ptr(unsafe {
        bindings::strndup_user(addr as usize as *const c_char, MAX_EVENT_DESC)
    })?;
    // SAFETY: On success `p` is a kmalloc'd NUL-terminated string.
    let bytes = unsafe { CStr::from_char_ptr(p) }.to_bytes();
    let copy = KVec::from_elem(0u8, 0, GFP_KERNEL).and_then(|mut v| {
        v.extend_from_slice(bytes, GFP_KERNEL)?;
        Ok(v)
    });
    // SAFETY: `p` came from `strndup_user` and is not used after this.
    unsafe { bindings::kfree(p.cast()) };
    Ok(copy?)
}

// SAFETY: `UserReg` is `repr(C, packed)` of integers only: no padding, any bytes are a value.
unsafe impl FromBytes for UserReg {}
// SAFETY: As above: every byte is initialized, and there is no interior mutability.
unsafe impl AsBytes for UserReg {}
// SAFETY: `UserUnreg` is `repr(C, packed)` of integers only: no padding, any bytes are a value.
unsafe impl FromBytes for UserUnreg {}
// SAFETY: As above: every byte is initialized, and there is no interior mutability.
unsafe impl AsBytes for UserUnreg {}

/// Copies a size-extensible UAPI struct from `arg`, as upstream's `user_reg_get` and
/// `user_unreg_get` do: `get_user()` of its leading `u32 size` (`EFAULT`), that size checked
/// ([`abi::struct_size`]: `E2BIG` above a page, `EINVAL` below `min`), then
/// `copy_struct_from_user()`: a smaller struct is zero-filled, a larger one is refused with
/// `E2BIG` unless its tail is zero, a fault is `EFAULT`.
fn copy_struct_from_user<T: FromBytes + AsBytes + Default>(arg: usize, min: usize) -> Result<T> {
    let size = UserSlice::new(UserPtr::from_addr(arg), size_of::<u32>())
        .reader()
        .read::<u32>()
        .map_err(|_| EFAULT)?;
    let size = abi::struct_size(size, min, bindings::PAGE_SIZE).map_err(|e| match e {
        SizeError::TooBig => E2BIG,
        SizeError::TooSmall => EINVAL,
    })?;
    let mut value = T::default();
    let dst = value.as_bytes_mut();
    // SAFETY: `dst` is writable for its length; `copy_struct_from_user` checks the user range
    // and the tail itself.
    kernel::error::to_result(unsafe {
        bindings::rue_copy_struct_from_user(
            dst.as_mut_ptr().cast(),
            dst.len(),
            arg as *const c_void,
            size,
        )
    })?;
    Ok(value)
}

impl FileInfo {
    /// State for a newly opened file.
    pub(crate) fn new(group: Arc<Group>) -> Self {
        Self {
            group,
            refs: AtomicPtr::new(null_mut()),
        }
    }

    /// `ioctl(2)`: unknown commands get `ENOTTY`, as upstream.
    pub(crate) fn ioctl(&self, cmd: u32, arg: usize) -> Result<isize> {
        self.command(Command::from_ioctl(cmd), arg)
    }

    /// `ioctl(2)` from a 32-bit task, `arg` already converted with `compat_ptr()`: the same
    /// commands under their 32-bit numbers; anything else, the 64-bit numbers included, gets
    /// `ENOTTY`.
    ///
    /// Everything else is shared with 64-bit callers, errnos included. `enable_size` 8 stays
    /// legal, as upstream allows it whenever the kernel's `unsigned long` is 64 bits: the bit is
    /// set in the process's 8-byte word like a 64-bit process's.
    #[cfg_attr(not(CONFIG_COMPAT), allow(dead_code))]
    pub(crate) fn compat_ioctl(&self, cmd: u32, arg: usize) -> Result<isize> {
        self.command(Command::from_compat_ioctl(cmd), arg)
    }

    /// Runs a decoded command; `None` is `ENOTTY`.
    fn command(&self, command: Option<Command>, arg: usize) -> Result<isize> {
        match command {
            Some(Command::Reg) => self.reg(arg).map(|()| 0),
            Some(Command::Del) => self.del(arg).map(|()| 0),
            Some(Command::Unreg) => self.unreg(arg).map(|()| 0),
            None => Err(ENOTTY),
        }
    }

    /// `DIAG_IOCSREG` (upstream `user_events_ioctl_reg`), checks in upstream's order.
    fn reg(&self, arg: usize) -> Result {
        let kreg: UserReg = copy_struct_from_user(arg, USER_REG_MIN_SIZE)?;
        kreg.check().map_err(|()| EINVAL)?;
        let UserReg {
            enable_bit,
            enable_size,
            flags,
            enable_addr,
            name_args,
            ..
        } = kreg;
        // SAFETY: Only checks the range against the user address limit.
        if !unsafe {
            bindings::rue_access_ok(enable_addr as usize as *const c_void, enable_size.into())
        } {
            return Err(EFAULT);
        }
        // Like upstream, this gives the task a scope even if the registration then fails (Q15).
        let scope = scope::current_or_create()?;
        scope.wait_for_copy();
        // Held from the `EADDRINUSE` check to the enabler's creation, as upstream holds it for
        // the whole ioctl: two threads registering the same word cannot both pass the check.
        let _reg = self.group.reg_mutex.lock();
        if scope.has(&mut Held::lock(), enable_addr, enable_bit) {
            return Err(EADDRINUSE);
        }
        let name = strndup_user(name_args)?;
        // Upstream accepts any bytes in a name; this module needs UTF-8 (deviations.md).
        let name = core::str::from_utf8(&name).map_err(|_| EINVAL)?;

        let event = self.group.find_or_create(name, flags)?;
        let index = self.add_ref(&event)?;
        enabler::create(&scope, &event, enable_addr, enable_bit)?;
        // A failure to report the index is ignored, as upstream.
        // CAST: As upstream's `(u32)index`; an index counts the file's events, far below `u32::MAX`.
        let write_index = index as u32;
        let _ = UserSlice::new(
            UserPtr::from_addr(arg).wrapping_byte_add(USER_REG_WRITE_INDEX_OFFSET),
            size_of::<u32>(),
        )
        .writer()
        .write(&write_index);
        Ok(())
    }

    /// Adds `event` to the file's indexes, or finds it there (upstream `user_events_ref_add`).
    ///
    /// Called under `reg_mutex`. Takes a reference for a new entry.
    fn add_ref(&self, event: &ARef<UserEvent>) -> Result<usize> {
        let old = self.refs.load(Ordering::Acquire);
        let old_events: &[NonNull<UserEvent>] = if old.is_null() {
            &[]
        } else {
            // SAFETY: Writers hold `reg_mutex` (as the caller does), so `old` cannot be freed now.
            unsafe { &(*old).events }
        };
        let ptr = NonNull::from(&**event);
        if let Some(i) = old_events.iter().position(|&e| e == ptr) {
            return Ok(i);
        }
        let mut events = KVec::with_capacity(old_events.len() + 1, GFP_KERNEL)?;
        events.extend_from_slice(old_events, GFP_KERNEL)?;
        events.push(ptr, GFP_KERNEL)?;
        let new = KBox::new(
            Refs {
                events,
                rcu: Opaque::uninit(),
            },
            GFP_KERNEL,
        )?;
        // INVARIANT: The new entry owns this reference; the old entries' pass to the new array.
        let _ = ARef::into_raw(event.clone());
        self.refs.store(KBox::into_raw(new), Ordering::Release);
        if !old.is_null() {
            // SAFETY: `old` came from `KBox::into_raw` and was just unpublished; writers may
            // still read it under RCU, so it is freed after a grace period.
            unsafe { Refs::free_after_grace_period(old) };
        }
        Ok(old_events.len())
    }

    /// `DIAG_IOCSDEL` (upstream `user_events_ioctl_del`).
    fn del(&self, arg: usize) -> Result {
        let name = strndup_user(arg as u64)?;
        let name = core::str::from_utf8(&name).map_err(|_| ENOENT)?;
        let _reg = self.group.reg_mutex.lock();
        self.group.delete(name)
    }

    /// `DIAG_IOCSUNREG` (upstream `user_events_ioctl_unreg`).
    fn unreg(&self, arg: usize) -> Result {
        // The copy's error comes first (upstream checks the reserved bytes first, quirk Q3).
        let kunreg: UserUnreg = copy_struct_from_user(arg, USER_UNREG_MIN_SIZE)?;
        kunreg.check().map_err(|()| EINVAL)?;
        let UserUnreg {
            disable_bit,
            disable_addr,
            ..
        } = kunreg;
        let scope = scope::current().ok_or(ENOENT)?;
        scope.wait_for_copy();
        let _reg = self.group.reg_mutex.lock();
        enabler::unregister(&scope, disable_addr, disable_bit)
    }

    /// `write(2)`/`writev(2)`: `[s32 write_index][payload]` (upstream `user_events_write_core`).
    ///
    /// Returns the full length, index included.
    pub(crate) fn write(&self, iov: &mut IovIterSource<'_>) -> Result<usize> {
        let total = iov.len();
        let index = write::read_index(iov)?;
        // The write path's one section, also an RCU read-side critical section.
        let guard = WriteGuard::lock();
        let refs = self.refs.load(Ordering::Acquire);
        if refs.is_null() {
            return Err(ENOENT);
        }
        // SAFETY: Under `guard`, an RCU reader, the published array stays allocated (see
        // `add_ref`).
        let event = unsafe { (&*refs).events.get(index).copied() }.ok_or(ENOENT)?;
        // SAFETY: The file holds a reference on every event in its array, and the VFS keeps the
        // file alive during the write, so `event` stays registered.
        unsafe { write::write_event(event.as_ref(), iov, guard)? };
        Ok(total)
    }
}

impl Drop for FileInfo {
    fn drop(&mut self) {
        let _reg = self.group.reg_mutex.lock();
        let refs = self.refs.swap(null_mut(), Ordering::AcqRel);
        if refs.is_null() {
            return;
        }
        // SAFETY: The file is being released: no writer can run on it any more.
        let refs = unsafe { KBox::from_raw(refs) };
        // Newest registration first, as a teardown releases enablers: if this is an event's
        // last reference, the tracing core removes it fastest while no newer event is left
        // (see `Scope::teardown`).
        for event in refs.events.iter().rev() {
            // SAFETY: The array owns one reference per entry (type invariant of `Refs`).
            drop(unsafe { ARef::from_raw(*event) });
        }
    }
}
