// SPDX-License-Identifier: GPL-2.0

//! "Same event" matching, as upstream's `user_fields_match()` and `user_event_match()` (quirks Q4,
//! Q5, Q10 in Documentation/deviations.md), and upstream's selftest dyn_test.c `matching`.

use crate::logic::grammar::{fields, FieldSpec};
use crate::logic::matching::{fields_match, system_matches};
use std::vec::Vec;

fn specs(args: &str) -> Vec<FieldSpec<'_>> {
    fields(args).map(|f| f.unwrap()).collect()
}

/// Does the event registered with `registered` match `args` on the given path?
fn matches_on(registered: &str, args: &str, fixup: bool) -> bool {
    let specs = specs(registered);
    fields_match(
        specs.iter().map(|f| (f.ty, f.name, f.size, f.is_struct)),
        args,
        fixup,
    )
}

/// The registration / `u:` create path.
fn reg_matches(registered: &str, args: &str) -> bool {
    matches_on(registered, args, true)
}

/// The dynamic_events delete path.
fn del_matches(registered: &str, args: &str) -> bool {
    matches_on(registered, args, false)
}

// Upstream's `user_fields_match()`, case by case.

#[test]
fn dangling_semicolon_matches() {
    assert!(reg_matches("u32 a; u32 b", "u32 a; u32 b;"));
    assert!(reg_matches("u32 a", "u32 a;"));
}

#[test]
fn extra_whitespace_matches_an_existing_event() {
    // Q5: "u32   a" does not parse, but finds the event "u32 a".
    assert!(fields("u32   a").any(|f| f.is_err()));
    assert!(reg_matches("u32 a", "u32   a"));
    assert!(reg_matches("u32 a", "\tu32\n a "));
}

#[test]
fn delete_without_fixup_needs_space_after_semicolon() {
    assert!(!del_matches("u32 a;u32 b", "u32 a;u32 b"));
    assert!(del_matches("u32 a;u32 b", "u32 a; u32 b"));
}

#[test]
fn registration_fixup_splits_at_semicolons() {
    assert!(reg_matches("u32 a;u32 b", "u32 a;u32 b"));
    assert!(reg_matches("u32 a; u32 b", "u32 a;u32 b"));
}

#[test]
fn field_order_matters() {
    assert!(!reg_matches("u32 a; u32 b", "u32 b; u32 a"));
}

#[test]
fn struct_size_compares_as_decimal_text() {
    assert!(!reg_matches("struct x a 20", "struct x a 0x14"));
    // The registered size prints in decimal whatever the registration spelled.
    assert!(reg_matches("struct x a 020", "struct x a 20"));
    assert!(!reg_matches("struct x a 020", "struct x a 020"));
}

#[test]
fn type_compares_as_text() {
    assert!(!reg_matches("char[20] a", "char[0x14] a"));
}

#[test]
fn event_with_fields_does_not_match_no_args() {
    assert!(!reg_matches("u32 a", ""));
    assert!(!reg_matches("u32 a", " \t"));
}

#[test]
fn event_without_fields_matches_only_no_args() {
    assert!(reg_matches("", ""));
    assert!(reg_matches("", "  \n"));
    assert!(!reg_matches("", "u32 a"));
}

#[test]
fn empty_fields_never_match_themselves() {
    // Q4: the lone ";" word matches no field and is never consumed.
    assert!(!reg_matches(" ;", " ;"));
    assert!(!reg_matches("u32 a;;u32 b", "u32 a;;u32 b"));
    assert!(!del_matches("u32 a;;u32 b", "u32 a;;u32 b"));
}

// Upstream's selftests: dyn_test.c `matching` and ftrace_test.c `register_events`.

#[test]
fn selftest_matching_pairs() {
    assert!(reg_matches("u32 a", "u32 a"));
    assert!(reg_matches("u32 a; u32 b", "u32 a; u32 b"));
    assert!(reg_matches("u32 a; u32 b", "u32 a; u32 b;"));
    assert!(reg_matches(
        "struct my_struct a 20",
        "struct my_struct a 20"
    ));
}

#[test]
fn selftest_non_matching_pairs() {
    assert!(!reg_matches("u32 a", "u32 b"));
    assert!(!reg_matches("u32 a; u32 b", "u32 b; u32 a"));
    assert!(!reg_matches("u64 a; u64 b", "u32 a; u32 b"));
    assert!(!reg_matches(
        "struct my_struct a 20",
        "struct my_struct b 20"
    ));
    assert!(!reg_matches(
        "struct my_struct a 20",
        "struct my_struct a 21"
    ));
}

#[test]
fn selftest_register_events_formats() {
    let reg = "u32 field1; u32 field2";
    assert!(reg_matches(reg, "u32 field1;u32 field2"));
    assert!(!reg_matches(reg, "u32 field1;"));
}

// Further upstream behaviour.

#[test]
fn leftover_words_do_not_match() {
    assert!(!reg_matches("u32 a", "u32 a extra"));
    assert!(!reg_matches("u32 a", "u32 a; u32 b"));
}

#[test]
fn missing_fields_do_not_match() {
    assert!(!reg_matches("u32 a; u32 b", "u32 a;"));
}

#[test]
fn semicolon_as_its_own_word_does_not_end_a_field() {
    // Words "u32" "a" ";" join to "u32 a ;", not "u32 a;".
    assert!(!reg_matches("u32 a", "u32 a ;"));
    assert!(!reg_matches("u32 a; u32 b", "u32 a ; u32 b"));
}

#[test]
fn semicolon_inside_a_word_ends_the_field() {
    // Without the fix-up "a;u32" is one word; the field string "u32 a;" ≠ "u32 a;u32".
    assert!(!del_matches("u32 a; u32 b", "u32 a;u32 b"));
    assert!(del_matches("u32 a", "u32 a;"));
}

#[test]
fn multi_word_types_match_across_whitespace() {
    assert!(reg_matches("unsigned int a", "unsigned\tint a"));
    assert!(reg_matches(
        "__rel_loc unsigned char[] s",
        "__rel_loc  unsigned char[]  s"
    ));
}

#[test]
fn nbsp_byte_splits_words() {
    // The kernel's isspace() includes 0xa0, the second byte of "à" in UTF-8, so an event with
    // that name can never be matched again by its own text.
    assert!(!reg_matches("u32 à", "u32 à"));
    assert!(reg_matches("u32 é", "u32 é"));
}

#[test]
fn text_after_nul_is_not_seen() {
    assert!(reg_matches("u32 a", "u32 a\0 u32 b"));
}

#[test]
fn is_struct_flag_appends_the_size() {
    let struct_field = [("struct foo", "s", 20, true)];
    assert!(fields_match(
        struct_field.into_iter(),
        "struct foo s 20",
        true
    ));
    assert!(!fields_match(
        struct_field.into_iter(),
        "struct foo s",
        true
    ));
}

#[test]
fn either_system_name_is_accepted() {
    assert!(system_matches("user_events"));
    assert!(system_matches("user_events_multi"));
    assert!(!system_matches("user_event"));
    assert!(!system_matches(""));
}
