// SPDX-License-Identifier: GPL-2.0

//! `seq_file` helpers: a `seq_file` as a `core::fmt::Write`, so pure logic can write text
//! files' contents, and the `file_operations` of a read-only single-record file.

use crate::{bindings, compat};
use core::fmt;
use kernel::{prelude::*, seq_file::SeqFile};

/// The `file_operations` of a read-only file whose `open` calls `single_open`: reads, seeks and
/// releases are the `seq_file` core's, and the file pins this module while open.
pub(crate) const fn single_open_fops(
    open: unsafe extern "C" fn(*mut bindings::inode, *mut bindings::file) -> c_int,
) -> bindings::file_operations {
    bindings::file_operations {
        owner: compat::THIS_MODULE,
        open: Some(open),
        read: Some(bindings::seq_read),
        llseek: Some(bindings::seq_lseek),
        release: Some(bindings::single_release),
        ..pin_init::zeroed()
    }
}

/// Writes into a `seq_file`; the seq_file itself detects overflow and retries the show.
pub(crate) struct SeqWriter<'a>(pub(crate) &'a SeqFile);

impl fmt::Write for SeqWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // A plain copy (`seq_write`): `seq_print!` would format `s` again through `%pA`, which
        // costs several times as much per piece, and the status file writes under `event_mutex`.
        // CAST: `SeqFile` is a transparent wrapper of `struct seq_file` (`SeqFile::from_raw`).
        let m = core::ptr::from_ref(self.0)
            .cast_mut()
            .cast::<bindings::seq_file>();
        // SAFETY: `m` is the live seq_file this writer borrows, used by this thread only;
        // `s` is valid for `s.len()` bytes.
        unsafe { bindings::seq_write(m, s.as_ptr().cast(), s.len()) };
        Ok(())
    }
}
