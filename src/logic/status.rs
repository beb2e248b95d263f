// SPDX-License-Identifier: GPL-2.0

//! The text of `user_events_status`, byte for byte as upstream's `user_seq_show()`.
//!
//! ```text
//! <tracepoint name>[ # Used by[ ftrace][ perf][ other]]   one line per event
//! (empty line)
//! Active: <events>
//! Busy: <events with any consumer>
//! ```

use core::fmt::{self, Write};

/// Which kinds of consumer are attached to an event (`EVENT_STATUS_*` upstream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Consumers {
    /// An ftrace instance has the event enabled.
    pub(crate) ftrace: bool,
    /// A perf event is attached.
    pub(crate) perf: bool,
    /// Some other probe is attached.
    pub(crate) other: bool,
}

impl Consumers {
    /// True if any consumer is attached, i.e. the event is busy.
    pub(crate) fn any(self) -> bool {
        self.ftrace || self.perf || self.other
    }
}

/// Writes the status text for `events` (tracepoint name and consumers), in the given order.
pub(crate) fn write_status<'a, W, I>(out: &mut W, events: I) -> fmt::Result
where
    W: Write,
    I: IntoIterator<Item = (&'a str, Consumers)>,
{
    let mut active: u32 = 0;
    let mut busy: u32 = 0;
    for (name, consumers) in events {
        active = active.saturating_add(1);
        out.write_str(name)?;
        if consumers.any() {
            busy = busy.saturating_add(1);
            out.write_str(" # Used by")?;
            if consumers.ftrace {
                out.write_str(" ftrace")?;
            }
            if consumers.perf {
                out.write_str(" perf")?;
            }
            if consumers.other {
                out.write_str(" other")?;
            }
        }
        out.write_char('\n')?;
    }
    write!(out, "\nActive: {active}\nBusy: {busy}\n")
}
