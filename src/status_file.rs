// SPDX-License-Identifier: GPL-2.0

//! FFI glue of `user_events_status`: a single-record `seq_file`, as upstream, with a buffer
//! sized at open for the whole text.

use crate::{
    bindings,
    group::Group,
    seq::{self, SeqWriter},
};
use kernel::{
    prelude::*,
    seq_file::SeqFile,
    sync::Arc,
    types::ForeignOwnable, //
};

/// # Safety
///
/// Called by `seq_read` for a file opened by [`open`]: `m->private` is the inode's `i_private`,
/// a live `Arc<Group>` foreign pointer.
unsafe extern "C" fn show(m: *mut bindings::seq_file, _v: *mut c_void) -> c_int {
    // SAFETY: `seq_read` passes a valid seq_file for the duration of the call.
    let seq = unsafe { SeqFile::from_raw(m) };
    // SAFETY: `single_open` stored the inode's `i_private`, the module's group handle, which
    // outlives every open file (see `data_file::open`).
    let group = unsafe { <Arc<Group> as ForeignOwnable>::borrow((*m).private) };
    // seq_file detects overflow itself and retries with a larger buffer.
    match group.show_status(&mut SeqWriter(seq)) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// Called by the VFS for an inode created with [`FOPS`].
unsafe extern "C" fn open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: `i_private` is the group handle (see [`show`]), alive while the file is.
    let group = unsafe { <Arc<Group> as ForeignOwnable>::borrow((*inode).i_private) };
    // Sized for the whole text, so `show` walks the table once: a buffer too small would make
    // `seq_read` retry it with a doubled one. Past `KMALLOC_MAX_SIZE` the seq_file core's own
    // doubling takes over (it uses kvmalloc).
    let size = group.status_size().min(bindings::KMALLOC_MAX_SIZE as usize);
    // SAFETY: `file` is being opened; `i_private` is the group handle (see [`show`]).
    unsafe { bindings::single_open_size(file, Some(show), (*inode).i_private, size) }
}

/// The `file_operations` of `user_events_status`.
pub(crate) const FOPS: bindings::file_operations = seq::single_open_fops(open);
