// SPDX-License-Identifier: GPL-2.0

//! FFI glue of `user_events_status`: a single-record `seq_file`, as upstream.

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
    let _ = group.show_status(&mut SeqWriter(seq));
    0
}

/// # Safety
///
/// Called by the VFS for an inode created with [`FOPS`].
unsafe extern "C" fn open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: `file` is being opened; `i_private` is the group handle (see [`show`]).
    unsafe { bindings::single_open(file, Some(show), (*inode).i_private) }
}

/// The `file_operations` of `user_events_status`.
pub(crate) const FOPS: bindings::file_operations = seq::single_open_fops(open);
