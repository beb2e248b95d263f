// SPDX-License-Identifier: GPL-2.0

//! `user_events_stats` text.

use crate::logic::stats::{write_stats, Stats};
use std::string::String;

fn render(stats: Stats) -> String {
    let mut out = String::new();
    write_stats(&mut out, &stats).unwrap();
    out
}

#[test]
fn zero_counter_and_limit_print_one_line_each() {
    let stats = Stats { max_payload: 8184, ..Stats::default() };
    assert_eq!(
        render(stats),
        "dropped_too_large: 0\nmax_payload: 8184\nenablers: 0\nscopes: 0\nfork_copy_failed: 0\n\
         scope_join_failed: 0\n"
    );
}

#[test]
fn largest_counter_prints_in_full() {
    let stats = Stats {
        dropped_too_large: u64::MAX,
        max_payload: 8184,
        enablers: 100000,
        scopes: 21,
        fork_copy_failed: u64::MAX,
        scope_join_failed: 1,
    };
    assert_eq!(
        render(stats),
        "dropped_too_large: 18446744073709551615\nmax_payload: 8184\nenablers: 100000\nscopes: 21\n\
         fork_copy_failed: 18446744073709551615\nscope_join_failed: 1\n"
    );
}
