// SPDX-License-Identifier: GPL-2.0

//! `seq_file` helpers: a `seq_file` as a `core::fmt::Write`, so pure logic can write text
//! files' contents, and the `file_operations` of a read-only single-record file.

use crate::bindings;
use core::fmt;
use kernel::{module::this_module, prelude::*, seq_file::SeqFile, seq_print};

/// The `file_operations` of a read-only file whose `open` calls `single_open`: reads, seeks and
/// releases are the `seq_file` core's, and the file pins this module while open.
pub(crate) const fn single_open_fops(
    open: unsafe extern "C" fn(*mut bindings::inode, *mut bindings::file) -> c_int,
) -> bindings::file_operations {
    bindings::file_operations {
        owner: this_module::<crate::LocalModule>().as_ptr(),
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
        seq_print!(self.0, "{s}");
        Ok(())
    }
}
