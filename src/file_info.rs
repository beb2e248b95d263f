// SPDX-License-Identifier: GPL-2.0

//! What one open `user_events_data` file holds and does (upstream `user_event_file_info`).

use crate::{
    group::Group,
    logic::abi::{self, Command},
};
use kernel::{iov::IovIterSource, prelude::*, sync::Arc};

/// State of one open `user_events_data` file.
pub(crate) struct FileInfo {
    /// The group this file registers into.
    #[expect(dead_code, reason = "events are registered into the group by issue 3")]
    group: Arc<Group>,
}

impl FileInfo {
    /// State for a newly opened file.
    pub(crate) fn new(group: Arc<Group>) -> Self {
        Self { group }
    }

    /// `ioctl(2)`: unknown commands get `ENOTTY`, as upstream.
    pub(crate) fn ioctl(&self, cmd: u32, _arg: usize) -> Result<isize> {
        match Command::from_ioctl(cmd) {
            // The foundation answers every command like an unknown one until the events layer
            // implements them; see Documentation/design.md.
            Some(Command::Reg | Command::Del | Command::Unreg) | None => Err(ENOTTY),
        }
    }

    /// `write(2)`/`writev(2)`: `[s32 write_index][payload]` (upstream `user_events_write_core`).
    ///
    /// Until events can be registered every valid index is unknown, so this ends in `ENOENT`.
    pub(crate) fn write(&self, iov: &mut IovIterSource<'_>) -> Result<usize> {
        let mut index = [0u8; abi::WRITE_INDEX_SIZE];
        if iov.copy_from_iter(&mut index) != index.len() {
            return Err(EFAULT);
        }
        if i32::from_ne_bytes(index) < 0 {
            return Err(EINVAL);
        }
        Err(ENOENT)
    }
}
