// SPDX-License-Identifier: GPL-2.0

//! Record validation of `__data_loc`/`__rel_loc` fields, as upstream's `user_event_validate()`
//! (quirk Q14 in Documentation/deviations.md), and upstream's selftest ftrace_test.c
//! `write_validator`.

use crate::logic::grammar::{fields, Validator};
use crate::logic::validate::{validate, Fault};
use std::vec::Vec;

/// `DYN_LOC(offset, size)`.
fn dyn_loc(offset: u32, size: u32) -> u32 {
    (size << 16) | offset
}

/// A record: an 8-byte header (all `0xee`, so a NUL there is never an accident), then the
/// payload.
fn record(payload: &[&[u8]]) -> Vec<u8> {
    let mut r = std::vec![0xee; 8];
    for part in payload {
        r.extend_from_slice(part);
    }
    r
}

fn validators(args: &str) -> Vec<Validator> {
    fields(args)
        .filter_map(|f| f.unwrap().validator())
        .collect()
}

fn check(args: &str, rec: &[u8]) -> Result<(), Fault> {
    validate(rec, validators(args).into_iter())
}

const REL: &str = "__rel_loc char[] data";
const DATA: &str = "__data_loc char[] data";

#[test]
fn selftest_rel_loc_string_with_nul_is_accepted() {
    let rec = record(&[&dyn_loc(0, 5).to_ne_bytes(), b"Test\0"]);
    assert_eq!(check(REL, &rec), Ok(()));
}

#[test]
fn selftest_rel_loc_out_of_bounds_is_efault() {
    for loc in [
        dyn_loc(1024, 5),
        dyn_loc(1, 5),
        dyn_loc(0, 1029),
        dyn_loc(0, 6),
    ] {
        let rec = record(&[&loc.to_ne_bytes(), b"Test\0"]);
        assert_eq!(check(REL, &rec), Err(Fault), "{loc:#x}");
    }
}

#[test]
fn selftest_string_without_nul_is_efault() {
    let rec = record(&[&dyn_loc(0, 8).to_ne_bytes(), b"AAAAAAAA"]);
    assert_eq!(check(REL, &rec), Err(Fault));
}

#[test]
fn data_loc_offset_counts_from_record_start() {
    // The string sits at record offset 12, right after the loc word.
    let rec = record(&[&dyn_loc(12, 5).to_ne_bytes(), b"Test\0"]);
    assert_eq!(check(DATA, &rec), Ok(()));
    // Payload-relative offset 4 would be wrong: it points into the loc word.
    let rec = record(&[&dyn_loc(4, 5).to_ne_bytes(), b"Test\0"]);
    assert_eq!(check(DATA, &rec), Err(Fault));
}

#[test]
fn data_may_end_exactly_at_record_end() {
    let rec = record(&[&dyn_loc(12, 5).to_ne_bytes(), b"Test\0"]);
    assert_eq!(rec.len(), 17);
    let rec = record(&[&dyn_loc(12, 6).to_ne_bytes(), b"Test\0"]);
    assert_eq!(check(DATA, &rec), Err(Fault));
}

#[test]
fn data_loc_has_no_lower_bound() {
    // Q14: the "string" is the last header byte, made NUL.
    let mut rec = record(&[&dyn_loc(7, 1).to_ne_bytes()]);
    rec[7] = 0;
    assert_eq!(check(DATA, &rec), Ok(()));
}

#[test]
fn size_zero_passes_when_the_preceding_byte_is_nul() {
    // `__rel_loc` of (0, 0): the byte before is the loc word's top byte, 0.
    let rec = record(&[&dyn_loc(0, 0).to_ne_bytes()]);
    assert_eq!(check(REL, &rec), Ok(()));
    // `__data_loc` of (1, 0) checks record byte 0; of (9, 0), byte 8 (the loc word's 0x09).
    let mut rec = record(&[&dyn_loc(1, 0).to_ne_bytes()]);
    assert_eq!(check(DATA, &rec), Err(Fault));
    rec[0] = 0;
    assert_eq!(check(DATA, &rec), Ok(()));
    let rec = record(&[&dyn_loc(9, 0).to_ne_bytes()]);
    assert_eq!(check(DATA, &rec), Err(Fault));
}

#[test]
fn data_loc_of_offset_0_size_0_is_efault() {
    // Deviation: upstream reads the byte before the record.
    let rec = record(&[&dyn_loc(0, 0).to_ne_bytes()]);
    assert_eq!(check(DATA, &rec), Err(Fault));
}

#[test]
fn loc_word_outside_the_record_is_efault() {
    let rec = record(&[b"\0\0"]);
    assert_eq!(check(REL, &rec), Err(Fault));
    assert_eq!(check(DATA, &record(&[])), Err(Fault));
}

#[test]
fn non_char_loc_needs_no_nul() {
    let rec = record(&[&dyn_loc(12, 3).to_ne_bytes(), b"abc"]);
    assert_eq!(check("__data_loc cpumask_t m", &rec), Ok(()));
    assert_eq!(check(DATA, &rec), Err(Fault));
    let rec = record(&[&dyn_loc(12, 4).to_ne_bytes(), b"abc"]);
    assert_eq!(check("__data_loc cpumask_t m", &rec), Err(Fault));
}

#[test]
fn every_validator_runs_in_order() {
    // a: loc at 8, string at 12 + 8 = 20; x at 12; b: loc at 16, string at record offset 23.
    let args = "__rel_loc char[] a; u32 x; __data_loc char[] b";
    let a = dyn_loc(8, 3).to_ne_bytes();
    let x = [0; 4];
    let rec = record(&[&a, &x, &dyn_loc(23, 3).to_ne_bytes(), b"hi\0", b"yo\0"]);
    assert_eq!(check(args, &rec), Ok(()));
    let rec = record(&[&a, &x, &dyn_loc(23, 4).to_ne_bytes(), b"hi\0", b"yo\0"]);
    assert_eq!(check(args, &rec), Err(Fault));
}

#[test]
fn no_validators_accepts_anything() {
    assert_eq!(validate(&[], core::iter::empty()), Ok(()));
}
