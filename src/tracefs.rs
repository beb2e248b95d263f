// SPDX-License-Identifier: GPL-2.0

//! Files at the tracefs root.
//!
//! Created with the exported `tracefs_create_file()`. Removed the way `tracefs_remove()` does
//! it (`fs/tracefs/inode.c`), which is not exported and is IBT-sealed: `simple_recursive_removal`
//! on the dentry, then `simple_release_fs` for the pin `tracefs_create_file` took. Both are
//! exported libfs helpers; only tracefs's mount bookkeeping comes from the symbol layer.

use crate::{bindings, symbols::Tracefs};
use core::ptr::{null_mut, NonNull};
use kernel::{error::from_err_ptr, prelude::*};

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
        // SAFETY: By the type invariants `dentry` is our live tracefs file. This is what
        // `tracefs_remove` does: unhash and drop it (its `remove_one` callback only releases
        // the pin, done below instead).
        unsafe { bindings::simple_recursive_removal(self.dentry.as_ptr(), None) };
        // SAFETY: The file held one pin (type invariants), released exactly once here.
        unsafe { bindings::simple_release_fs(self.mount.as_ptr(), self.mount_count.as_ptr()) };
    }
}
