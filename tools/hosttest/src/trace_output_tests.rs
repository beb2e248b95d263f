// SPDX-License-Identifier: GPL-2.0

//! The `trace` text of a record (7.3's `print_event_fields()` → `print_fields()`,
//! `kernel/trace/trace_output.c`).

use crate::logic::grammar::{fields, FieldSpec};
use crate::logic::trace_output::{filter_assign_type, write_trace_line, FilterType, TraceSeq};
use core::fmt;
use std::vec::Vec;

/// A byte sink whose `%pS` finds no symbols: it prints `0x<hex>` like `%pS` does then.
#[derive(Default)]
struct Seq {
    out: Vec<u8>,
    text_base: u64,
}

impl fmt::Write for Seq {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.out.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

impl TraceSeq for Seq {
    fn put_bytes(&mut self, bytes: &[u8]) -> fmt::Result {
        self.out.extend_from_slice(bytes);
        Ok(())
    }

    fn put_symbol(&mut self, addr: u64) -> fmt::Result {
        fmt::Write::write_fmt(self, format_args!("0x{addr:x}"))
    }

    fn adjust_address(&self, addr: u64) -> u64 {
        addr
    }

    fn text_base(&self) -> u64 {
        self.text_base
    }
}

fn specs(args: &str) -> Vec<FieldSpec<'_>> {
    fields(args).map(|f| f.unwrap()).collect()
}

/// The trace line of `record` (payload only; a zero header is prepended) for event `ev` with
/// field list `args`.
fn line_with(seq: &mut Seq, args: &str, payload: &[u8]) -> Vec<u8> {
    let mut record = std::vec![0u8; 8];
    record.extend_from_slice(payload);
    write_trace_line(seq, "ev", specs(args), &record).unwrap();
    core::mem::take(&mut seq.out)
}

fn line(args: &str, payload: &[u8]) -> Vec<u8> {
    line_with(&mut Seq::default(), args, payload)
}

/// `DYN_LOC(offset, size)` as bytes.
fn loc(offset: u32, size: u32) -> [u8; 4] {
    ((size << 16) | offset).to_ne_bytes()
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn spec_example_two_u32_fields() {
    let payload = cat(&[&1u32.to_ne_bytes(), &2u32.to_ne_bytes()]);
    let mut record = std::vec![0u8; 8];
    record.extend_from_slice(&payload);
    let mut seq = Seq::default();
    let f = specs("u32 field1; u32 field2");
    write_trace_line(&mut seq, "__test_event", f, &record).unwrap();
    assert_eq!(seq.out, b"__test_event: field1=0x1 (1) field2=0x2 (2)\n");
}

#[test]
fn event_without_fields_says_so() {
    assert_eq!(line("", b""), b"ev:No fields found\n");
    assert_eq!(line("", b"extra"), b"ev:No fields found\n");
}

#[test]
fn printable_byte_is_quoted_before_its_value() {
    assert_eq!(line("u8 c", b"A"), b"ev: c='A'(65)\n");
    assert_eq!(line("char c", b" "), b"ev: c=' '(32)\n");
}

#[test]
fn non_printable_byte_is_only_its_value() {
    assert_eq!(line("s8 c", &[7]), b"ev: c=(7)\n");
    assert_eq!(line("s8 c", &[0x80]), b"ev: c=(128)\n");
    assert_eq!(line("s8 c", &[0x7f]), b"ev: c=(127)\n");
}

#[test]
fn latin1_byte_is_printable_and_written_raw() {
    assert_eq!(line("unsigned char c", &[0xe9]), b"ev: c='\xe9'(233)\n");
    assert_eq!(line("unsigned char c", &[0xa0]), b"ev: c='\xa0'(160)\n");
}

#[test]
fn two_bytes_print_unsigned_hex_and_decimal() {
    assert_eq!(
        line("s16 v", &(-1i16).to_ne_bytes()),
        b"ev: v=0xffff (65535)\n"
    );
    assert_eq!(line("u16 v", &300u16.to_ne_bytes()), b"ev: v=0x12c (300)\n");
}

#[test]
fn four_bytes_print_hex_and_signed_decimal() {
    assert_eq!(
        line("s32 v", &(-1i32).to_ne_bytes()),
        b"ev: v=0xffffffff (-1)\n"
    );
    assert_eq!(
        line("unsigned int v", &u32::MAX.to_ne_bytes()),
        b"ev: v=0xffffffff (-1)\n"
    );
    assert_eq!(line("int v", &42i32.to_ne_bytes()), b"ev: v=0x2a (42)\n");
}

#[test]
fn eight_bytes_print_symbol_and_signed_decimal() {
    assert_eq!(line("u64 v", &1u64.to_ne_bytes()), b"ev: v=0x1 (1)\n");
    assert_eq!(
        line("s64 v", &(-2i64).to_ne_bytes()),
        b"ev: v=0xfffffffffffffffe (-2)\n"
    );
}

#[test]
fn caller_offs_field_prints_a_text_symbol_first() {
    let mut seq = Seq {
        text_base: 0xffff_ffff_8100_0000,
        ..Seq::default()
    };
    assert_eq!(
        line_with(
            &mut seq,
            "u32 caller_offs; u32 parent_offs; u32 other",
            &cat(&[
                &0x10u32.to_ne_bytes(),
                &0x20u32.to_ne_bytes(),
                &0x30u32.to_ne_bytes()
            ])
        ),
        b"ev: caller_offs=0xffffffff81000010 0x10 (16) parent_offs=0xffffffff81000020 0x20 (32) \
          other=0x30 (48)\n"
    );
}

#[test]
fn structs_print_by_size() {
    assert_eq!(
        line("struct s a 4", &7u32.to_ne_bytes()),
        b"ev: a=0x7 (7)\n"
    );
    assert_eq!(
        line("struct s a 8", &7u64.to_ne_bytes()),
        b"ev: a=0x7 (7)\n"
    );
    assert_eq!(line("struct s a 1", b"x"), b"ev: a='x'(120)\n");
}

#[test]
fn struct_of_another_size_is_invalid_size() {
    assert_eq!(line("struct s a 3", b"abc"), b"ev: a=<INVALID-SIZE>\n");
    assert_eq!(line("struct s a 16", &[0; 16]), b"ev: a=<INVALID-SIZE>\n");
}

#[test]
fn field_beyond_the_record_is_overflow() {
    assert_eq!(
        line("u32 a; u32 b; u8 c", &[1, 0, 0, 0, 2, 0]),
        b"ev: a=0x1 (1) b=<OVERFLOW> c=<OVERFLOW>\n"
    );
    assert_eq!(
        line("u32 a; u8 b", &[1, 0, 0, 0, b'x']),
        b"ev: a=0x1 (1) b='x'(120)\n"
    );
}

#[test]
fn static_string_prints_up_to_nul_or_size() {
    assert_eq!(line("char[8] s", b"hi\0xxxxx"), b"ev: s=hi\n");
    assert_eq!(line("char[4] s", b"abcd"), b"ev: s=abcd\n");
    assert_eq!(
        line("unsigned char[4] s", b"a\x01\xffd"),
        b"ev: s=a\x01\xffd\n"
    );
}

#[test]
fn data_loc_string_is_record_relative() {
    let payload = cat(&[&loc(12, 6), b"hello\0"]);
    assert_eq!(line("__data_loc char[] s", &payload), b"ev: s=hello\n");
}

#[test]
fn rel_loc_string_is_relative_to_the_end_of_its_loc_word() {
    let payload = cat(&[&loc(4, 3), b"xxxxyo\0"]);
    assert_eq!(line("__rel_loc char[] s", &payload), b"ev: s=yo\n");
}

#[test]
fn printable_string_stops_at_nul() {
    let payload = cat(&[&loc(0, 6), b"ab\0cd\0"]);
    assert_eq!(line("__rel_loc char[] s", &payload), b"ev: s=ab\n");
}

#[test]
fn non_printable_string_is_escaped_with_hex_dump() {
    let payload = cat(&[&loc(0, 6), b"h\x01llo\0"]);
    assert_eq!(
        line("__rel_loc char[] s", &payload),
        b"ev: s=h.llo. (68:01:6c:6c:6f:00)\n"
    );
    let payload = cat(&[&loc(0, 2), b"\xe9\0"]);
    assert_eq!(line("__rel_loc char[] s", &payload), b"ev: s=.. (e9:00)\n");
}

#[test]
fn dyn_string_beyond_the_record_is_overflow() {
    let payload = cat(&[&loc(0, 7), b"hello\0"]);
    assert_eq!(line("__rel_loc char[] s", &payload), b"ev: s=<OVERFLOW>\n");
}

#[test]
fn dyn_string_with_negative_int_length_prints_nothing() {
    // `*(int *)pos >> 16` is negative from length 0x8000 on.
    let payload = cat(&[&loc(0, 0x8000), b"hello\0"]);
    assert_eq!(line("__rel_loc char[] s", &payload), b"ev: s=\n");
}

#[test]
fn empty_dyn_string_prints_nothing() {
    assert_eq!(line("__rel_loc char[] s", &loc(0, 0)), b"ev: s=\n");
}

#[test]
fn non_char_data_loc_prints_a_hex_array() {
    let payload = cat(&[&loc(12, 3), &[1, 0xab, 3]]);
    assert_eq!(line("__data_loc u32 a", &payload), b"ev: a=01,ab,03\n");
    let payload = cat(&[&loc(1, 2), &[1, 0xab, 3]]);
    assert_eq!(line("__rel_loc u32 a", &payload), b"ev: a=ab,03\n");
    let payload = cat(&[&loc(1, 3), &[1, 0xab, 3]]);
    assert_eq!(line("__rel_loc u32 a", &payload), b"ev: a=<OVERFLOW>\n");
}

#[test]
fn cpumask_is_invalid_type() {
    assert_eq!(
        line("__data_loc cpumask_t m", &loc(0, 0)),
        b"ev: m=<INVALID-TYPE>\n"
    );
}

#[test]
fn filter_types_follow_filter_assign_type() {
    let rows = [
        ("__data_loc char[]", FilterType::DynString),
        ("__data_loc char", FilterType::DynString),
        ("__data_loc cpumask_t", FilterType::Cpumask),
        ("__data_loc u32", FilterType::Other),
        ("__rel_loc unsigned char[]", FilterType::RdynString),
        ("__rel_loc u32", FilterType::Other),
        ("char[4]", FilterType::StaticString),
        ("unsigned char[4]", FilterType::StaticString),
        ("struct char[ x", FilterType::StaticString),
        ("char", FilterType::Other),
        ("struct foo", FilterType::Other),
        ("char *", FilterType::PtrString),
    ];
    for (ty, ft) in rows {
        assert_eq!(filter_assign_type(ty), ft, "{ty}");
    }
}
