// SPDX-License-Identifier: GPL-2.0

//! The `print fmt` of an event (upstream's `user_field_format()` and
//! `user_event_set_print_fmt()`, and upstream's selftest ftrace_test.c `print_fmt`).

use crate::logic::grammar::fields;
use crate::logic::print_fmt::{dyn_string_func, user_field_format, write_print_fmt};
use std::string::String;
use std::vec::Vec;

/// The print format of the field list `args`.
fn fmt(args: &str) -> String {
    let specs: Vec<_> = fields(args).map(|f| f.unwrap()).collect();
    let mut out = String::new();
    write_print_fmt(&mut out, specs.iter().map(|f| (f.ty, f.name))).unwrap();
    out
}

/// The print format of one field `data` of type `ty`.
fn fmt_of(ty: &str) -> String {
    fmt(&(String::from(ty) + " data"))
}

#[test]
fn no_fields_print_empty_quotes() {
    assert_eq!(fmt(""), "\"\"");
}

#[test]
fn two_u32_fields() {
    assert_eq!(fmt("u32 a;u32 b"), "\"a=%u b=%u\", REC->a, REC->b");
}

#[test]
fn rel_loc_string_uses_get_rel_str() {
    assert_eq!(
        fmt_of("__rel_loc char[]"),
        "\"data=%s\", __get_rel_str(data)"
    );
}

#[test]
fn data_loc_string_uses_get_str() {
    assert_eq!(fmt_of("__data_loc char[]"), "\"data=%s\", __get_str(data)");
}

#[test]
fn static_char_array_is_a_string_of_rec() {
    assert_eq!(fmt_of("char[4]"), "\"data=%s\", REC->data");
    assert_eq!(fmt_of("unsigned char[4]"), "\"data=%s\", REC->data");
    assert_eq!(fmt_of("char[20]xyz"), "\"data=%s\", REC->data");
}

#[test]
fn struct_prints_as_llu() {
    assert_eq!(fmt("struct foo a 20"), "\"a=%llu\", REC->a");
}

#[test]
fn selftest_print_fmt_of_every_basic_type() {
    let rows = [
        ("s64", "%lld"),
        ("u64", "%llu"),
        ("s32", "%d"),
        ("u32", "%u"),
        ("int", "%d"),
        ("unsigned int", "%u"),
        ("s16", "%d"),
        ("u16", "%u"),
        ("short", "%d"),
        ("unsigned short", "%u"),
        ("s8", "%d"),
        ("u8", "%u"),
        ("char", "%d"),
        ("unsigned char", "%u"),
        ("char[4]", "%s"),
    ];
    for (ty, spec) in rows {
        assert_eq!(
            fmt_of(ty),
            String::from("\"data=") + spec + "\", REC->data",
            "{ty}"
        );
        assert_eq!(user_field_format(ty), spec, "{ty}");
    }
}

#[test]
fn unsigned_loc_strings_are_strings_too() {
    assert_eq!(
        fmt_of("__data_loc unsigned char[]"),
        "\"data=%s\", __get_str(data)"
    );
    assert_eq!(
        fmt_of("__rel_loc unsigned char[]"),
        "\"data=%s\", __get_rel_str(data)"
    );
}

#[test]
fn data_loc_char_without_bracket_is_llu_with_get_str() {
    // Quirk: the spec comes from "char[", the argument from "char".
    assert_eq!(fmt_of("__data_loc char"), "\"data=%llu\", __get_str(data)");
    assert_eq!(
        fmt_of("__rel_loc char"),
        "\"data=%llu\", __get_rel_str(data)"
    );
}

#[test]
fn non_string_loc_is_llu_of_rec() {
    assert_eq!(fmt_of("__data_loc cpumask_t"), "\"data=%llu\", REC->data");
    assert_eq!(fmt_of("__rel_loc u32"), "\"data=%llu\", REC->data");
}

#[test]
fn fields_print_in_declaration_order() {
    assert_eq!(
        fmt("u64 count; char[20] msg; __rel_loc char[] s; struct foo x 3"),
        "\"count=%llu msg=%s s=%s x=%llu\", REC->count, REC->msg, __get_rel_str(s), REC->x"
    );
}

#[test]
fn dyn_string_func_needs_a_loc_prefix_and_char() {
    assert_eq!(dyn_string_func("__data_loc char[]"), Some("__get_str"));
    assert_eq!(dyn_string_func("__rel_loc char[]"), Some("__get_rel_str"));
    assert_eq!(dyn_string_func("__data_loc cpumask_t"), None);
    assert_eq!(dyn_string_func("char[4]"), None);
    assert_eq!(dyn_string_func("struct __data_loc char"), None);
}
