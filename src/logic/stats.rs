// SPDX-License-Identifier: GPL-2.0

//! The text of `user_events_stats`, this module's addition next to `user_events_status`
//! (which stays byte-identical to upstream's). One `name: value` line per item:
//!
//! ```text
//! dropped_too_large: <writes accepted but recorded by nobody: payload over max_payload>
//! max_payload: <largest payload recorded, in bytes>
//! ```

use core::fmt::{self, Write};

/// What `user_events_stats` reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    /// Writes that succeeded but were recorded by no consumer because their payload was
    /// larger than `max_payload` (upstream drops them too, perf with a kernel warning).
    pub(crate) dropped_too_large: u64,
    /// The largest payload, in bytes after the write index, that reaches consumers.
    pub(crate) max_payload: usize,
}

/// Writes the stats text.
pub(crate) fn write_stats<W: Write>(out: &mut W, stats: &Stats) -> fmt::Result {
    writeln!(out, "dropped_too_large: {}", stats.dropped_too_large)?;
    writeln!(out, "max_payload: {}", stats.max_payload)
}
