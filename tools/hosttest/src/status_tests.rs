// SPDX-License-Identifier: GPL-2.0

//! `user_events_status` text, byte for byte (upstream's `user_seq_show()`).

use crate::logic::status::{write_status, Consumers};
use std::string::String;

fn render(events: &[(&str, Consumers)]) -> String {
    let mut out = String::new();
    write_status(&mut out, events.iter().copied()).unwrap();
    out
}

const NONE: Consumers = Consumers { ftrace: false, perf: false, other: false };

#[test]
fn empty_group_prints_only_totals() {
    assert_eq!(render(&[]), "\nActive: 0\nBusy: 0\n");
}

#[test]
fn idle_event_has_no_used_by_suffix() {
    assert_eq!(render(&[("test", NONE)]), "test\n\nActive: 1\nBusy: 0\n");
}

#[test]
fn consumers_print_in_upstream_order() {
    let all = Consumers { ftrace: true, perf: true, other: true };
    assert_eq!(
        render(&[("test", all)]),
        "test # Used by ftrace perf other\n\nActive: 1\nBusy: 1\n"
    );
}

#[test]
fn spec_example_ftrace_and_perf() {
    let used = Consumers { ftrace: true, perf: true, other: false };
    assert_eq!(render(&[("test", used)]), "test # Used by ftrace perf\n\nActive: 1\nBusy: 1\n");
}

#[test]
fn busy_counts_only_events_with_consumers() {
    let perf = Consumers { perf: true, ..NONE };
    let other = Consumers { other: true, ..NONE };
    assert_eq!(
        render(&[("a", NONE), ("b.1", perf), ("c", other)]),
        "a\nb.1 # Used by perf\nc # Used by other\n\nActive: 3\nBusy: 2\n"
    );
}
