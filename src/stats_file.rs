// SPDX-License-Identifier: GPL-2.0

//! FFI glue of `user_events_stats`: a single-record `seq_file` with this module's counters
//! ([`crate::logic::stats`]).

use crate::{
    bindings, enabler,
    logic::stats::{write_stats, Stats},
    scope,
    seq::{self, SeqWriter},
    write,
};
use core::sync::atomic::Ordering::Relaxed;
use kernel::{
    prelude::*,
    seq_file::SeqFile, //
};

/// # Safety
///
/// Called by `seq_read` for a file opened by [`open`].
unsafe extern "C" fn show(m: *mut bindings::seq_file, _v: *mut c_void) -> c_int {
    // SAFETY: `seq_read` passes a valid seq_file for the duration of the call.
    let seq = unsafe { SeqFile::from_raw(m) };
    // seq_file detects overflow itself and retries with a larger buffer.
    let stats = Stats {
        enablers: enabler::ENABLERS.load(Relaxed),
        scopes: enabler::SCOPES.load(Relaxed),
        fork_copy_failed: enabler::FORK_COPY_FAILED.load(Relaxed),
        scope_join_failed: scope::SCOPE_JOIN_FAILED.load(Relaxed),
        ..write::stats()
    };
    let _ = write_stats(&mut SeqWriter(seq), &stats);
    0
}

/// # Safety
///
/// Called by the VFS for an inode created with [`FOPS`].
unsafe extern "C" fn open(_inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: `file` is being opened; `show` needs no private data.
    unsafe { bindings::single_open(file, Some(show), core::ptr::null_mut()) }
}

/// The `file_operations` of `user_events_stats`.
pub(crate) const FOPS: bindings::file_operations = seq::single_open_fops(open);
