// SPDX-License-Identifier: GPL-2.0

//! A `seq_file` as a `core::fmt::Write`, so pure logic can write text files' contents.

use core::fmt;
use kernel::{seq_file::SeqFile, seq_print};

/// Writes into a `seq_file`; the seq_file itself detects overflow and retries the show.
pub(crate) struct SeqWriter<'a>(pub(crate) &'a SeqFile);

impl fmt::Write for SeqWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        seq_print!(self.0, "{s}");
        Ok(())
    }
}
