// SPDX-License-Identifier: GPL-2.0

//! The text of `user_events_stats`, this module's addition next to `user_events_status`
//! (which stays byte-identical to upstream's). One `name: value` line per item:
//!
//! ```text
//! dropped_too_large: <writes accepted but recorded by nobody: payload over max_payload>
//! max_payload: <largest payload recorded, in bytes>
//! enablers: <enablers registered or inherited, system-wide>
//! scopes: <processes with enablers, and those whose teardown has not finished>
//! fork_copy_failed: <forked children left without their parent's enablers: out of memory>
//! scope_join_failed: <threads, vfork and fork children left out of their parent's scope>
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
    /// Enablers that exist now, in every process.
    pub(crate) enablers: u64,
    /// Scopes that exist now: a process's enablers (upstream's `user_event_mm`), until its
    /// teardown or failed copy has freed them.
    pub(crate) scopes: u64,
    /// Fork copies that failed for lack of memory: the child has no enablers, as upstream.
    pub(crate) fork_copy_failed: u64,
    /// Tasks the fork probe could not enter in the task map (an atomic allocation failed): a
    /// `CLONE_VM` child gets its own scope if it registers, a forked child no enablers.
    pub(crate) scope_join_failed: u64,
}

/// Writes the stats text.
pub(crate) fn write_stats<W: Write>(out: &mut W, stats: &Stats) -> fmt::Result {
    writeln!(out, "dropped_too_large: {}", stats.dropped_too_large)?;
    writeln!(out, "max_payload: {}", stats.max_payload)?;
    writeln!(out, "enablers: {}", stats.enablers)?;
    writeln!(out, "scopes: {}", stats.scopes)?;
    writeln!(out, "fork_copy_failed: {}", stats.fork_copy_failed)?;
    writeln!(out, "scope_join_failed: {}", stats.scope_join_failed)
}
