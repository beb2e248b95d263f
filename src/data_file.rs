// SPDX-License-Identifier: GPL-2.0

//! FFI glue of `user_events_data`: the `file_operations` and its trampolines.
//!
//! Like upstream it has `open`, `write`, `write_iter`, `unlocked_ioctl` and `release`, and no
//! `read`, `mmap` or `llseek` (so reads give `EINVAL` and seeks `ESPIPE`, as upstream's). Beyond
//! upstream, which has no `compat_ioctl` (its 32-bit callers get `ENOTTY`), it has one on a
//! kernel with `CONFIG_COMPAT`: 32-bit programs register, unregister and delete events as 64-bit
//! ones do (deviations.md). Their `write`/`writev` need nothing here: the VFS converts a 32-bit
//! iovec array before `write_iter`. `owner` pins the module while a file is open, so `rmmod` is
//! refused until every file is closed.

use crate::{bindings, compat, file_info::FileInfo, group::GroupHandle};
use core::mem::MaybeUninit;
use kernel::{
    iov::IovIterSource,
    prelude::*,
    types::ForeignOwnable, //
};

/// `file->private_data` of an open file.
type Private = KBox<FileInfo>;

/// Converts a `Result` into the `isize` the VFS expects.
fn to_ssize(result: Result<usize>) -> isize {
    match result {
        // CAST: The VFS caps a single write at `MAX_RW_COUNT`, far below `isize::MAX`.
        Ok(n) => n as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// # Safety
///
/// Called by the VFS for an inode created with [`FOPS`], whose `i_private` is a live
/// [`GroupHandle::as_foreign`] pointer.
unsafe extern "C" fn open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: `i_private` was set at creation to the module's group handle, which outlives the
    // file (it is dropped after the file is removed, and the module cannot unload while open).
    let group = unsafe { GroupHandle::clone_from_foreign((*inode).i_private) };
    match KBox::new(FileInfo::new(group), GFP_KERNEL_ACCOUNT) {
        Ok(info) => {
            // SAFETY: `open` owns `private_data` until `release`.
            unsafe { (*file).private_data = info.into_foreign() };
            0
        }
        Err(_) => ENOMEM.to_errno(),
    }
}

/// # Safety
///
/// Called by the VFS once, for a file opened by [`open`].
unsafe extern "C" fn release(_inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: `private_data` came from `into_foreign` in `open` and is released only here.
    drop(unsafe { Private::from_foreign((*file).private_data) });
    0
}

/// Borrows the state of a file opened by [`open`].
///
/// # Safety
///
/// `file` must have been opened by [`open`] and not yet released.
unsafe fn info<'a>(file: *mut bindings::file) -> &'a FileInfo {
    // SAFETY: Guaranteed by the caller; the borrow ends before `release` can run because the
    // VFS holds a file reference for the duration of the call.
    unsafe { Private::borrow((*file).private_data) }
}

/// # Safety
///
/// Called by the VFS for a file opened by [`open`].
unsafe extern "C" fn unlocked_ioctl(
    file: *mut bindings::file,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // SAFETY: Called by the VFS for an open file of ours.
    let info = unsafe { info(file) };
    match info.ioctl(cmd, arg) {
        // CAST: Ioctl results fit in `long`.
        Ok(n) => n as c_long,
        Err(e) => e.to_errno() as c_long,
    }
}

/// `ioctl(2)` from a 32-bit task (`compat_sys_ioctl`): the 32-bit command numbers, whose
/// pointer argument is converted with `compat_ptr()`; the structs read the same as from a
/// 64-bit task.
///
/// # Safety
///
/// Called by the VFS for a file opened by [`open`].
#[cfg(CONFIG_COMPAT)]
unsafe extern "C" fn compat_ioctl(file: *mut bindings::file, cmd: c_uint, arg: c_ulong) -> c_long {
    // CAST: `compat_sys_ioctl` passes a `compat_ulong_t`, so nothing is lost.
    // SAFETY: `compat_ptr` only converts the value; the handlers check the user range.
    let arg = unsafe { bindings::rue_compat_ptr(arg as u32) } as usize;
    // SAFETY: Called by the VFS for an open file of ours.
    let info = unsafe { info(file) };
    match info.compat_ioctl(cmd, arg) {
        // CAST: Ioctl results fit in `long`.
        Ok(n) => n as c_long,
        Err(e) => e.to_errno() as c_long,
    }
}

/// `write(2)`: upstream refuses any non-zero position (`pwrite`) with `EFAULT`.
///
/// # Safety
///
/// Called by the VFS for a file opened by [`open`], with `ppos` valid.
unsafe extern "C" fn write(
    file: *mut bindings::file,
    buf: *const c_char,
    count: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: The VFS passes a valid position pointer.
    if unsafe { *ppos } != 0 {
        return EFAULT.to_errno() as isize;
    }
    let mut iter = MaybeUninit::<bindings::iov_iter>::uninit();
    // SAFETY: `iter` is writable storage for an `iov_iter`; `buf`/`count` are the user range of
    // this `write(2)`, which `import_ubuf` checks with `access_ok`.
    let ret = unsafe {
        bindings::import_ubuf(
            bindings::ITER_SOURCE as c_int,
            buf.cast_mut().cast(),
            count,
            iter.as_mut_ptr(),
        )
    };
    if ret != 0 {
        return EFAULT.to_errno() as isize;
    }
    // SAFETY: `import_ubuf` initialised `iter` as a source iterator over user memory that stays
    // valid for this call.
    let iov = unsafe { IovIterSource::from_raw(iter.as_mut_ptr()) };
    // SAFETY: Called by the VFS for an open file of ours.
    to_ssize(unsafe { info(file) }.write(iov))
}

/// `writev(2)`, `pwritev(2)`, io_uring and aio: the position is ignored, as upstream.
///
/// # Safety
///
/// Called by the VFS with a valid kiocb for a file opened by [`open`] and a source iterator.
unsafe extern "C" fn write_iter(
    kiocb: *mut bindings::kiocb,
    from: *mut bindings::iov_iter,
) -> isize {
    // SAFETY: The VFS passes a valid kiocb whose file is open.
    let file = unsafe { (*kiocb).ki_filp };
    // SAFETY: The VFS passes a valid source iterator for the duration of the call.
    let iov = unsafe { IovIterSource::from_raw(from) };
    // SAFETY: `file` is an open file of ours.
    to_ssize(unsafe { info(file) }.write(iov))
}

/// The `file_operations` of `user_events_data`.
pub(crate) const FOPS: bindings::file_operations = bindings::file_operations {
    owner: compat::THIS_MODULE,
    open: Some(open),
    release: Some(release),
    write: Some(write),
    write_iter: Some(write_iter),
    unlocked_ioctl: Some(unlocked_ioctl),
    #[cfg(CONFIG_COMPAT)]
    compat_ioctl: Some(compat_ioctl),
    ..pin_init::zeroed()
};
