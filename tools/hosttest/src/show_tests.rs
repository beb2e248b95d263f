// SPDX-License-Identifier: GPL-2.0

//! The `dynamic_events` line of an event (upstream's `user_event_show()`).

use crate::logic::grammar::fields;
use crate::logic::show::write_show_line;
use std::string::String;
use std::vec::Vec;

/// The line of the event registered as `name` with field list `args`.
fn show(name: &str, args: &str) -> String {
    let specs: Vec<_> = fields(args).map(|f| f.unwrap()).collect();
    let mut out = String::new();
    let tuples = specs.iter().map(|f| (f.ty, f.name, f.size, f.is_struct));
    write_show_line(&mut out, name, tuples).unwrap();
    out
}

#[test]
fn spec_example() {
    assert_eq!(
        show("test", "u32 count;char[20] msg;  struct foo s 20"),
        "u:test u32 count; char[20] msg; struct foo s 20\n"
    );
}

#[test]
fn event_without_fields_is_prefix_and_name() {
    assert_eq!(show("test", ""), "u:test\n");
    assert_eq!(show("test", " ;"), "u:test\n");
}

#[test]
fn only_struct_fields_show_their_size() {
    assert_eq!(
        show("t", "char[0x14] a; u64 b"),
        "u:t char[0x14] a; u64 b\n"
    );
    assert_eq!(show("t", "struct x a 020"), "u:t struct x a 20\n");
}

#[test]
fn loc_types_show_verbatim() {
    assert_eq!(
        show("t", "__rel_loc unsigned char[] d;__data_loc char[] s"),
        "u:t __rel_loc unsigned char[] d; __data_loc char[] s\n"
    );
}

#[test]
fn multi_format_versions_show_the_registered_name() {
    // Both versions of a multi-format `test` print `u:test`, not `test.0`/`test.1`.
    assert_eq!(show("test", "u64 count"), "u:test u64 count\n");
    assert_eq!(show("test", "u32 count"), "u:test u32 count\n");
}
