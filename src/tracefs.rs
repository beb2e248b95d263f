// SPDX-License-Identifier: GPL-2.0

//! Files at the tracefs root.
//!
//! Created with the exported `tracefs_create_file()`. Removed the way `tracefs_remove()` does
//! it (`fs/tracefs/inode.c`), which is not exported and is IBT-sealed: `simple_recursive_removal`
//! on the dentry, then `simple_release_fs` for the pin `tracefs_create_file` took. Both are
//! exported libfs helpers; only tracefs's mount bookkeeping comes from the symbol layer.
//!
//! With the `group` module parameter the files are given that group the way `chown(2)` does
//! it: `notify_change()` under the inode lock. That goes through tracefs's own `setattr`, which
//! marks the gid as set by hand (`TRACEFS_GID_PERM_SET`), so tracefs keeps it instead of
//! re-applying its mount's `gid=` on the next lookup, and a remount without `gid=` keeps it.

use crate::{bindings, symbols::Tracefs};
use core::ptr::{addr_of_mut, null_mut, NonNull};
use kernel::{
    cred::Credential,
    error::{from_err_ptr, to_result},
    prelude::*,
    sync::aref::ARef,
};

/// A pin on tracefs's internal mount, held for the module's lifetime.
///
/// # Invariants
///
/// `mount`/`mount_count` are tracefs's own bookkeeping, one `simple_pin_fs` reference is held,
/// and `*mount` is therefore non-null and mounted.
pub(crate) struct TracefsPin {
    mount: NonNull<*mut bindings::vfsmount>,
    mount_count: NonNull<c_int>,
}

// SAFETY: The pointers name kernel-global tracefs state; pin and release may happen on any
// thread.
unsafe impl Send for TracefsPin {}
// SAFETY: Shared access only reads `*mount`, which is stable while pinned.
unsafe impl Sync for TracefsPin {}

impl TracefsPin {
    /// Pins tracefs, as `tracefs_create_file` does before every creation.
    pub(crate) fn new(tracefs: &Tracefs) -> Result<Self> {
        // SAFETY: The three pointers are tracefs's `trace_fs_type`, `tracefs_mount` and
        // `tracefs_mount_count` (checked by the symbol layer), exactly what tracefs itself
        // passes; `simple_pin_fs` serialises on its own lock.
        kernel::error::to_result(unsafe {
            bindings::simple_pin_fs(
                tracefs.fs_type.as_ptr(),
                tracefs.mount.as_ptr(),
                tracefs.mount_count.as_ptr(),
            )
        })?;
        // INVARIANT: One pin is now held and released in `drop`.
        let pin = Self {
            mount: tracefs.mount,
            mount_count: tracefs.mount_count,
        };
        // SAFETY: While pinned, `*mount` is a live vfsmount with a live superblock.
        let fs_type = unsafe { (*(**pin.mount.as_ptr()).mnt_sb).s_type };
        if fs_type != tracefs.fs_type.as_ptr() {
            pr_err!("tracefs_mount is not a tracefs mount\n");
            return Err(ENOEXEC);
        }
        Ok(pin)
    }

    /// The tracefs root directory.
    fn root(&self) -> *mut bindings::dentry {
        // SAFETY: By the type invariants `*mount` is a live, pinned vfsmount.
        unsafe { (**self.mount.as_ptr()).mnt_root }
    }

    /// Fails with `EEXIST` if `name` already exists at the tracefs root.
    pub(crate) fn ensure_absent(&self, name: &CStr) -> Result {
        // SAFETY: `root()` is a live directory dentry and `name` is NUL-terminated.
        let found = unsafe { bindings::rue_lookup_positive(self.root(), name.as_char_ptr()) };
        match from_err_ptr(found) {
            Ok(dentry) => {
                // SAFETY: A successful lookup returns a referenced dentry; drop that reference.
                unsafe { bindings::dput(dentry) };
                Err(EEXIST)
            }
            Err(e) if e == ENOENT => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Creates the regular file `name` at the tracefs root.
    ///
    /// # Safety
    ///
    /// `fops` must stay valid until the file is removed, and `data` (the inode's `i_private`)
    /// must stay valid for as long as `fops` may use it, i.e. until the returned [`RootFile`] is
    /// dropped and every file opened through it is released.
    pub(crate) unsafe fn create_file(
        &self,
        name: &CStr,
        mode: u16,
        fops: &'static bindings::file_operations,
        data: *mut c_void,
    ) -> Result<RootFile> {
        // SAFETY: `name` is NUL-terminated; a null parent means the tracefs root; `fops` is
        // `'static` and the caller guarantees `data`.
        let dentry = unsafe {
            bindings::tracefs_create_file(name.as_char_ptr(), mode, null_mut(), data, fops)
        };
        match NonNull::new(dentry) {
            // INVARIANT: `tracefs_create_file` succeeded, taking one pin for this dentry.
            Some(dentry) => Ok(RootFile {
                dentry,
                mount: self.mount,
                mount_count: self.mount_count,
            }),
            None => {
                pr_err!("could not create tracefs '{name}' entry\n");
                Err(ENODEV)
            }
        }
    }
}

impl Drop for TracefsPin {
    fn drop(&mut self) {
        // SAFETY: By the type invariants this object holds one pin on tracefs's mount.
        unsafe { bindings::simple_release_fs(self.mount.as_ptr(), self.mount_count.as_ptr()) };
    }
}

/// A file at the tracefs root, removed on drop.
///
/// # Invariants
///
/// `dentry` was created by `tracefs_create_file`, which took one pin of tracefs's mount
/// (`mount`/`mount_count`) for it; that pin keeps the mount alive until `drop`.
pub(crate) struct RootFile {
    dentry: NonNull<bindings::dentry>,
    mount: NonNull<*mut bindings::vfsmount>,
    mount_count: NonNull<c_int>,
}

// SAFETY: Removal may run on any thread; the pointers name kernel-global tracefs state.
unsafe impl Send for RootFile {}
// SAFETY: `&RootFile` exposes nothing.
unsafe impl Sync for RootFile {}

impl Drop for RootFile {
    fn drop(&mut self) {
        // SAFETY: By the type invariants `dentry` is our live, positive tracefs file.
        let inode = unsafe { (*self.dentry.as_ptr()).d_inode };
        // SAFETY: `inode` is the live inode of our file; the reference taken here keeps it past
        // the removal, until the `iput` below.
        unsafe { bindings::ihold(inode) };
        // SAFETY: By the type invariants `dentry` is our live tracefs file. This is what
        // `tracefs_remove` does: unhash and drop it (its `remove_one` callback only releases
        // the pin, done below instead).
        unsafe { bindings::simple_recursive_removal(self.dentry.as_ptr(), None) };
        // A bind mount of the file (a container's) keeps its dentry and inode after the
        // removal, and the inode's file operations are this module's, which are gone once it
        // is unloaded: an open through that mount would call freed code. The kernel's bad
        // inode (its own, built-in operations) refuses every open with `EIO` instead.
        // SAFETY: `inode` is held by the reference taken above; nothing reaches it through
        // tracefs any more, and `make_bad_inode` only replaces its mode, times and operations.
        unsafe { bindings::make_bad_inode(inode) };
        // SAFETY: Drops the reference taken above.
        unsafe { bindings::iput(inode) };
        // SAFETY: The file held one pin (type invariants), released exactly once here.
        unsafe { bindings::simple_release_fs(self.mount.as_ptr(), self.mount_count.as_ptr()) };
    }
}

/// `S_IALLUGO`: the permission bits of a mode, without the file type.
const S_IALLUGO: u16 = 0o7777;
#[allow(clippy::unnecessary_cast)]
const _: () = assert!(S_IALLUGO as u32 == bindings::RUE_S_IALLUGO as u32);

/// The group the tracefs files are given (the `group` module parameter).
///
/// # Invariants
///
/// `kgid` is a valid gid of the initial user namespace.
#[derive(Clone, Copy)]
pub(crate) struct FileGroup {
    kgid: bindings::kgid_t,
}

impl FileGroup {
    /// The group `gid` of the initial user namespace; `EINVAL` if it has no such gid.
    pub(crate) fn new(gid: u32) -> Result<Self> {
        // SAFETY: `make_kgid` on `init_user_ns` only reads its (static) id map.
        let kgid = unsafe { bindings::rue_make_kgid(gid) };
        // SAFETY: A pure comparison of a value.
        if !unsafe { bindings::rue_gid_valid(kgid) } {
            return Err(EINVAL);
        }
        // INVARIANT: Checked just above.
        Ok(Self { kgid })
    }
}

/// The kernel's own credentials, under which the files are given their group: the change is
/// the module's, whatever the capabilities or security label of the task that loads it.
pub(crate) struct KernelCred(ARef<Credential>);

impl KernelCred {
    /// `prepare_kernel_cred(&init_task)`.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: `init_task` is the kernel's static first task; `prepare_kernel_cred` only reads
        // its credentials.
        let cred = unsafe { bindings::prepare_kernel_cred(addr_of_mut!(bindings::init_task)) };
        let cred = NonNull::new(cred.cast::<Credential>()).ok_or(ENOMEM)?;
        // SAFETY: `prepare_kernel_cred` returned a new credential holding one reference, which
        // the `ARef` takes over; `Credential` is a transparent wrapper of `struct cred`.
        Ok(Self(unsafe { ARef::from_raw(cred) }))
    }
}

impl RootFile {
    /// Gives the file to `group` with permission bits `mode`, as `chgrp` and `chmod` together
    /// would, running as `cred`.
    pub(crate) fn set_group(&self, group: FileGroup, mode: u16, cred: &KernelCred) -> Result {
        let dentry = self.dentry.as_ptr();
        // SAFETY: By the type invariants `dentry` is our live, positive tracefs file.
        let inode = unsafe { (*dentry).d_inode };
        let mut attr: bindings::iattr = pin_init::zeroed();
        attr.ia_valid = bindings::ATTR_GID | bindings::ATTR_MODE | bindings::ATTR_CTIME;
        attr.__bindgen_anon_2.ia_gid = group.kgid;
        // Consumed by `rue_revert_creds` below.
        let override_cred = ARef::into_raw(cred.0.clone());
        // SAFETY: `override_cred` is a valid credential whose reference `rue_override_creds`
        // takes over; it is reverted on this same task below, before returning.
        let old = unsafe { bindings::rue_override_creds(override_cred.as_ptr().cast()) };
        // SAFETY: `inode` is the live inode of our file; locked and unlocked once, here.
        unsafe { bindings::rue_inode_lock(inode) };
        // The permission bits change, the file type stays (as `chmod_common` does it).
        // SAFETY: `i_mode` is stable under the inode lock, held.
        attr.ia_mode = (unsafe { (*inode).i_mode } & !S_IALLUGO) | (mode & S_IALLUGO);
        // SAFETY: `notify_change` is called as `chown_common` calls it: with the inode locked,
        // on a positive dentry of a mount without an id mapping (`nop_mnt_idmap`, as tracefs's
        // own mounts), a gid valid by `FileGroup`'s invariants, and no delegation to break (a
        // tracefs file has none).
        let ret = unsafe {
            bindings::notify_change(
                addr_of_mut!(bindings::nop_mnt_idmap),
                dentry,
                &mut attr,
                null_mut(),
            )
        };
        // SAFETY: Locked above.
        unsafe { bindings::rue_inode_unlock(inode) };
        // SAFETY: `old` is what `rue_override_creds` returned on this task.
        unsafe { bindings::rue_revert_creds(old) };
        to_result(ret)
    }
}
