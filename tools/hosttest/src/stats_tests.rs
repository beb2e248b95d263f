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
    let stats = Stats { dropped_too_large: 0, max_payload: 8184 };
    assert_eq!(render(stats), "dropped_too_large: 0\nmax_payload: 8184\n");
}

#[test]
fn largest_counter_prints_in_full() {
    let stats = Stats { dropped_too_large: u64::MAX, max_payload: 8184 };
    assert_eq!(render(stats), "dropped_too_large: 18446744073709551615\nmax_payload: 8184\n");
}
