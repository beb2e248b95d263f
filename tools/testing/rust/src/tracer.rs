// SPDX-License-Identifier: GPL-2.0

//! A tracer attached to one user event, the two ways a real consumer attaches: ftrace (the
//! event's `enable` file, records read from `trace_pipe_raw`) or perf (`perf_event_open` of
//! one task, raw samples from its ring).

use crate::{
    ftrace,
    perf::PerfRing,
    tracefs::{clear_trace, event_id, ftrace_enable},
};

/// Which way a tracer attaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// `events/user_events/<name>/enable` and the top-level ring buffer.
    Ftrace,
    /// A sampling perf event on the writing task.
    Perf,
}

impl Via {
    /// The word `user_events_status` shows for this tracer (`# Used by ftrace`).
    pub fn status_word(self) -> &'static str {
        match self {
            Via::Ftrace => "ftrace",
            Via::Perf => "perf",
        }
    }
}

/// A tracer attached to user event `name`; detached when dropped.
pub struct Tracer {
    name: String,
    id: u16,
    /// The perf event, or `None` for ftrace.
    perf: Option<PerfRing>,
    attached: bool,
}

impl Tracer {
    /// Attaches to user event `name`: ftrace (after emptying the trace buffer), or perf on
    /// task `pid` (0: the calling one).
    pub fn attach(via: Via, name: &str, pid: libc::pid_t) -> Result<Self, String> {
        let id = event_id(name)?;
        let perf = match via {
            Via::Ftrace => {
                clear_trace()?;
                ftrace_enable(name, true)?;
                None
            }
            Via::Perf => Some(PerfRing::open(id, pid)?),
        };
        Ok(Self {
            name: name.to_owned(),
            id,
            perf,
            attached: true,
        })
    }

    /// The event's records so far (consumed), each the trace event's bytes, common fields first.
    pub fn records(&mut self) -> Result<Vec<Vec<u8>>, String> {
        match &mut self.perf {
            Some(ring) => ring.samples(),
            None => ftrace::records_of(self.id),
        }
    }

    /// The one record the event should have, and only that.
    pub fn one_record(&mut self) -> Result<Vec<u8>, String> {
        let mut records = self.records()?;
        match records.len() {
            1 => Ok(records.pop().unwrap()),
            n => Err(format!("{}: {n} records, want 1", self.name)),
        }
    }

    /// Detaches: ftrace's `enable` back to 0, or the perf event closed.
    pub fn detach(mut self) -> Result<(), String> {
        self.attached = false;
        match self.perf.take() {
            Some(ring) => {
                drop(ring);
                Ok(())
            }
            None => ftrace_enable(&self.name, false),
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if self.attached && self.perf.is_none() {
            let _ = ftrace_enable(&self.name, false);
        }
    }
}
