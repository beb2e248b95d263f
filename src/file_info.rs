// SPDX-License-Identifier: GPL-2.0

//! What one open `user_events_data` file holds and does (upstream `user_event_file_info`):
//! its table of registered events (the write indexes) and the three ioctls.

use crate::{
    enabler,
    event::UserEvent,
    event_mutex::Held,
    group::Group,
    logic::{
        abi::{
            self, Command, SizeError, UserReg, UserUnreg, USER_REG_MIN_SIZE,
            USER_REG_WRITE_INDEX_OFFSET, USER_UNREG_MIN_SIZE,
        },
        grammar, segments,
    },
    scope, uaccess, write,
};
use core::{
    ptr::{null_mut, NonNull},
    sync::atomic::{AtomicPtr, AtomicUsize, Ordering},
};
use kernel::{
    iov::IovIterSource,
    prelude::*,
    sync::{aref::ARef, Arc},
    transmute::{AsBytes, FromBytes},
    uaccess::{UserPtr, UserSlice},
};

/// `MAX_EVENT_DESC`: `strndup_user` limit, NUL included.
const MAX_EVENT_DESC: c_long = 512;

/// The events a file registered, by write index (upstream `user_event_refs`): a table of
/// segments ([`segments`]) that only grows while the file is open.
///
/// A registration that adds an event allocates a segment when it needs one (each is twice the
/// size of the one before) and publishes it before the count that covers it; no segment is
/// moved, copied or freed before the file is released. So the write path finds an event with
/// three dependent loads (the count, the segment, the entry) and no lock or RCU section, and a
/// registration that adds an event copies nothing. Upstream reads a dense array under
/// `rcu_read_lock_sched()` and copies it whole into a new one for each event a registration
/// adds. Both search the entries for the event a registration names (`add_ref`).
///
/// # Invariants
///
/// - `segments[s]` is null or the buffer of a leaked `KVec<AtomicPtr<UserEvent>>` whose length
///   and capacity are `segment_len(s)`, freed only by [`Indexes::release`].
/// - A segment is published before `len` covers any of its entries; the first `len` entries
///   are non-null, never change, and each owns one reference on its event (from
///   [`ARef::into_raw`]) until [`Indexes::release`].
/// - Only one thread appends at a time (the file's registrations hold `reg_mutex`).
struct Indexes {
    segments: [AtomicPtr<AtomicPtr<UserEvent>>; segments::SEGMENTS],
    len: AtomicUsize,
}

impl Indexes {
    /// An empty table.
    fn new() -> Self {
        // INVARIANT: No segment, no entry.
        Self {
            segments: [const { AtomicPtr::new(null_mut()) }; segments::SEGMENTS],
            len: AtomicUsize::new(0),
        }
    }

    /// The entry at `index`, if the table has one.
    #[inline(always)]
    fn get(&self, index: usize) -> Option<NonNull<UserEvent>> {
        // Acquire: the segment and the entry were written before `len` covered them.
        if index >= self.len.load(Ordering::Acquire) {
            return None;
        }
        let (s, off) = segments::locate(index)?;
        let segment = self.segments[s].load(Ordering::Relaxed);
        // SAFETY: `index < len`, so segment `s` is published with `segment_len(s) > off`
        // entries and stays allocated while `self` lives (type invariants).
        let entry = unsafe { &*segment.add(off) };
        NonNull::new(entry.load(Ordering::Relaxed))
    }

    /// The event at `index`, borrowed for as long as the table: the table holds a reference
    /// on it until released, which takes `&mut self`.
    #[inline(always)]
    fn event(&self, index: usize) -> Option<&UserEvent> {
        // SAFETY: The entry owns a reference (type invariants) for at least as long as `self`.
        self.get(index).map(|event| unsafe { event.as_ref() })
    }

    /// The write index of `event`, if the table has it: a scan of each segment's entries in
    /// turn, as upstream scans its array.
    fn position(&self, event: &UserEvent) -> Option<usize> {
        let ptr = NonNull::from(event).as_ptr();
        let len = self.len.load(Ordering::Acquire);
        let mut start = 0;
        for (s, segment) in self.segments.iter().enumerate() {
            if start >= len {
                break;
            }
            let count = segments::segment_len(s).min(len - start);
            // SAFETY: `start < len`, so segment `s` is published with `segment_len(s) >= count`
            // entries and stays allocated while `self` lives (type invariants).
            let entries =
                unsafe { core::slice::from_raw_parts(segment.load(Ordering::Relaxed), count) };
            if let Some(off) = entries
                .iter()
                .position(|e| e.load(Ordering::Relaxed) == ptr)
            {
                return Some(start + off);
            }
            start += count;
        }
        None
    }

    /// Appends `event` with a reference of its own and returns its write index. The caller
    /// holds `reg_mutex`.
    fn push(&self, event: &ARef<UserEvent>) -> Result<usize> {
        let index = self.len.load(Ordering::Relaxed);
        let (s, off) = segments::locate(index).ok_or(ENOMEM)?;
        let mut segment = self.segments[s].load(Ordering::Relaxed);
        if segment.is_null() {
            let len = segments::segment_len(s);
            let mut entries = KVec::with_capacity(len, GFP_KERNEL_ACCOUNT)?;
            for _ in 0..len {
                // Within the capacity allocated above: cannot fail.
                entries
                    .push_within_capacity(AtomicPtr::new(null_mut()))
                    .map_err(|_| ENOMEM)?;
            }
            // INVARIANT: A leaked vector of `segment_len(s)` entries, published before `len`
            // covers it (the `Release` store below).
            segment = entries.into_raw_parts().0;
            self.segments[s].store(segment, Ordering::Relaxed);
        }
        // INVARIANT: The new entry owns this reference until `release`.
        let ptr = ARef::into_raw(event.clone());
        // SAFETY: Segment `s` holds `segment_len(s) > off` entries (above).
        unsafe { &*segment.add(off) }.store(ptr.as_ptr(), Ordering::Relaxed);
        self.len.store(index + 1, Ordering::Release);
        Ok(index)
    }

    /// Puts every entry's reference, newest registration first, and frees the segments: the
    /// table is empty afterwards.
    ///
    /// Newest first, as a teardown releases enablers: if this is an event's last reference, the
    /// tracing core removes it fastest while no newer event is left (see `Scope::teardown`).
    fn release(&mut self) {
        let len = core::mem::replace(self.len.get_mut(), 0);
        for index in (0..len).rev() {
            let Some((s, off)) = segments::locate(index) else {
                continue;
            };
            let segment = *self.segments[s].get_mut();
            // SAFETY: `index` was below `len`: its segment is published and holds it.
            let entry = unsafe { &*segment.add(off) }.swap(null_mut(), Ordering::Relaxed);
            if let Some(event) = NonNull::new(entry) {
                // SAFETY: The entry owned this reference (type invariants).
                drop(unsafe { ARef::from_raw(event) });
            }
        }
        for (s, segment) in self.segments.iter().enumerate() {
            let segment = segment.swap(null_mut(), Ordering::Relaxed);
            if !segment.is_null() {
                let len = segments::segment_len(s);
                // SAFETY: A leaked vector of `len` entries with that capacity (type invariants),
                // no longer published: nothing can read it while `self` is borrowed mutably.
                drop(unsafe { KVec::from_raw_parts(segment, len, len) });
            }
        }
    }
}

impl Drop for Indexes {
    fn drop(&mut self) {
        self.release();
    }
}

/// State of one open `user_events_data` file.
pub(crate) struct FileInfo {
    group: Arc<Group>,
    /// The write indexes: appended to under `reg_mutex`, read by the write path without a lock.
    indexes: Indexes,
}

// SAFETY: `indexes` is appended to only under `reg_mutex` and read with atomic loads; the
// events it points to are `Send + Sync`.
unsafe impl Send for FileInfo {}
// SAFETY: As above.
unsafe impl Sync for FileInfo {}

/// A NUL-terminated string copied from user memory by `strndup_user`, kept in the kernel's own
/// allocation; it derefs to the bytes before the NUL.
struct UserString(KBox<[u8]>);

impl core::ops::Deref for UserString {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // The allocation ends with the NUL (see `strndup_user`).
        self.0.split_last().map_or(&[], |(_, bytes)| bytes)
    }
}

/// Bytes of a name that [`read_name`] copies onto the stack.
const NAME_ON_STACK: usize = 128;

/// A registration's or deletion's name: on the stack when it is short, as nearly every name is;
/// otherwise `strndup_user`'s allocation. It derefs to the bytes before the NUL.
enum UserName {
    /// The first `.1` bytes of `.0`.
    Stack([u8; NAME_ON_STACK], usize),
    /// A longer name.
    Heap(UserString),
}

impl core::ops::Deref for UserName {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Stack(bytes, len) => bytes.get(..*len).unwrap_or(&[]),
            Self::Heap(name) => name,
        }
    }
}

/// Copies the NUL-terminated user string at `addr` as [`strndup_user`] does, with its errnos
/// (`EFAULT`, `EINVAL` past 511 bytes), but onto the stack when it is shorter than
/// [`NAME_ON_STACK`]: a REG then allocates and frees nothing for its name. With
/// `strndup_user` itself in a build whose kernel changed it (the gate `strndup_user`,
/// [`crate::mirrors`]).
fn read_name(addr: u64) -> Result<UserName> {
    if !crate::mirrors::STRNDUP_USER {
        return Ok(UserName::Heap(strndup_user(addr)?));
    }
    let mut bytes = [0u8; NAME_ON_STACK];
    // As `strndup_user`, whose `strnlen_user` reads as far: `EFAULT` for memory it cannot read.
    let len = uaccess::strncpy_from_user(&mut bytes, addr as usize)?;
    if len < NAME_ON_STACK {
        return Ok(UserName::Stack(bytes, len));
    }
    Ok(UserName::Heap(strndup_user(addr)?))
}

/// Copies a NUL-terminated user string of at most 511 bytes (`strndup_user(…, 512)`).
fn strndup_user(addr: u64) -> Result<UserString> {
    Ok(UserString(uaccess::strndup_user(
        addr as usize,
        MAX_EVENT_DESC,
    )?))
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
/// `E2BIG` unless its tail is zero, a fault is `EFAULT`. A struct of this ABI's size is a plain
/// copy but in a build whose kernel changed `copy_struct_from_user()` (the gate `copy_struct`,
/// [`crate::mirrors`]).
fn copy_struct_from_user<T: FromBytes + AsBytes + Default>(arg: usize, min: usize) -> Result<T> {
    let size = uaccess::get_user_u32(arg)?;
    let size = abi::struct_size(size, min, kernel::page::PAGE_SIZE).map_err(|e| match e {
        SizeError::TooBig => E2BIG,
        SizeError::TooSmall => EINVAL,
    })?;
    let mut value = T::default();
    let dst = value.as_bytes_mut();
    if crate::mirrors::COPY_STRUCT && size == dst.len() {
        // The struct of this ABI, as every client sends it: a plain copy, as
        // `copy_struct_from_user` makes then.
        UserSlice::new(UserPtr::from_addr(arg), size)
            .reader()
            .read_slice(dst)
            .map_err(|_| EFAULT)?;
        return Ok(value);
    }
    uaccess::copy_struct_from_user(dst, arg, size)?;
    Ok(value)
}

impl FileInfo {
    /// State for a newly opened file.
    pub(crate) fn new(group: Arc<Group>) -> Self {
        Self {
            group,
            indexes: Indexes::new(),
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
        if !uaccess::access_ok(enable_addr as usize, enable_size.into()) {
            return Err(EFAULT);
        }
        // Like upstream, this gives the task a scope even if the registration then fails (Q15).
        let scope = scope::current_or_create()?;
        scope.complete_copy()?;
        enabler::prefault(&scope, enable_addr);
        // Read before `reg_mutex`, so that a name in memory that blocks (a userfaultfd nobody
        // serves, a FUSE file) holds no lock; its errno comes after `EADDRINUSE`, as upstream's.
        let name = read_name(name_args);
        let mut attempts = 1;
        // The word's page, pinned across the attempts after one found it not writable
        // (`enabler::pin_word`); unpinned at the end, after `reg_mutex`.
        let mut _pinned = None;
        let index = loop {
            // Held from the `EADDRINUSE` check to the enabler's creation, as upstream holds it
            // for the whole ioctl: two threads registering the same word cannot both pass the
            // check. Not across a fault of the enable word: that is faulted in with the lock
            // released, and the registration starts again from the check.
            let reg = self.group.reg_mutex.lock();
            let nodes = scope.reserve(&mut Held::lock(), enable_addr, enable_bit)?;
            let name = name.as_deref().map_err(|e| *e)?;
            // Upstream accepts any bytes in a name; this module needs UTF-8 (deviations.md).
            let name = grammar::utf8(name).ok_or(EINVAL)?;
            let event = self.group.find_or_create(name, flags)?;
            let index = self.add_ref(&event)?;
            match enabler::create(&scope, &event, enable_addr, enable_bit, nodes) {
                Err(e) if e == EFAULT && attempts < enabler::WORD_ATTEMPTS => {
                    drop(reg);
                    attempts += 1;
                    // The previous pin goes once the new one holds the page.
                    _pinned = enabler::pin_word(&scope, enable_addr)?;
                }
                result => {
                    result?;
                    break index;
                }
            }
        };
        // Reported after `reg_mutex`, which a fault here does not hold; a failure is ignored,
        // as upstream's.
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
        match self.indexes.position(event) {
            Some(index) => Ok(index),
            None => self.indexes.push(event),
        }
    }

    /// `DIAG_IOCSDEL` (upstream `user_events_ioctl_del`).
    fn del(&self, arg: usize) -> Result {
        let name = read_name(arg as u64)?;
        let name = grammar::utf8(&name).ok_or(ENOENT)?;
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
        scope.complete_copy()?;
        enabler::prefault(&scope, disable_addr);
        let removed = {
            let _reg = self.group.reg_mutex.lock();
            enabler::unregister(&scope, disable_addr, disable_bit)
        };
        match removed {
            // Removed, but the word was not writable: cleared with `reg_mutex` released.
            Err(e) if e == EFAULT => enabler::clear_faulting(&scope, disable_addr, disable_bit),
            result => result,
        }
    }

    /// `write(2)`/`writev(2)`: `[s32 write_index][payload]` (upstream `user_events_write_core`).
    ///
    /// Returns the full length, index included.
    #[inline(always)]
    pub(crate) fn write(&self, iov: &mut IovIterSource<'_>) -> Result<usize> {
        let total = iov.len();
        let index = write::read_index(iov)?;
        let event = self.indexes.event(index.value).ok_or(ENOENT)?;
        // SAFETY: The file's table holds a reference on the event, and the VFS keeps the file
        // alive during the write, so `event` stays registered.
        unsafe { write::write_event(event, iov, index)? };
        Ok(total)
    }
}

impl Drop for FileInfo {
    fn drop(&mut self) {
        // Under `reg_mutex`, as upstream releases a file's references.
        let _reg = self.group.reg_mutex.lock();
        self.indexes.release();
    }
}
