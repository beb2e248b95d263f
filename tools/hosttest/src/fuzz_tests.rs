// SPDX-License-Identifier: GPL-2.0

//! Property tests over arbitrary input: the logic never panics, terminates within a bound
//! proportional to the input, and keeps its layout invariants.

use crate::logic::grammar::{fields, min_size, parse_command, FieldSpec, FIELD_END_MAX};
use crate::logic::matching::fields_match;
use crate::logic::print_fmt::write_print_fmt;
use crate::logic::show::write_show_line;
use crate::logic::trace_output::{write_trace_line, TraceSeq};
use crate::logic::validate::validate;
use core::fmt;
use std::string::String;
use std::vec::Vec;

/// Deterministic xorshift64* generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Pieces that reach deep into the grammar when strung together.
const PIECES: &[&str] = &[
    " ",
    "  ",
    ";",
    "; ",
    "\t",
    "\n",
    "u32",
    "s64",
    "u8",
    "char",
    "unsigned ",
    "struct ",
    "int",
    "__data_loc ",
    "__rel_loc ",
    "unsigned char",
    "char[",
    "]",
    "[",
    "0x",
    "0",
    "1",
    "20",
    "010",
    "+",
    "1024",
    "4294967295",
    "2147483647",
    "a",
    "name",
    ":",
    "\0",
    "é",
    "à",
    "\u{a0}",
    "#",
    "struct foo a 20",
    "char[20] s",
    "__rel_loc char[] d",
    "__data_loc char[] d",
    "x]y",
];

/// Valid commands to mutate.
const SEEDS: &[&str] = &[
    "test u32 a; u32 b",
    "test s64 a; s32 b; s16 c; s8 d; u8 e; unsigned short f; short g; unsigned char h",
    "test char[20] msg; struct foo s 20; __rel_loc char[] d; __data_loc unsigned char[] e",
    "test unsigned int a;u64 b;;char[0x14] c",
    "test",
    "test ;",
];

/// An arbitrary command: pieces, raw bytes, or a mutated seed.
fn arbitrary(rng: &mut Rng) -> String {
    match rng.below(3) {
        0 => {
            let mut s = String::new();
            for _ in 0..rng.below(24) {
                s.push_str(rng.pick(PIECES));
            }
            s
        }
        1 => {
            let bytes: Vec<u8> = (0..rng.below(48)).map(|_| rng.next() as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }
        _ => {
            let mut s = String::from(rng.pick(SEEDS));
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(s.len() + 1);
                if !s.is_char_boundary(at) {
                    continue;
                }
                match rng.below(3) {
                    0 => s.insert_str(at, rng.pick(PIECES)),
                    1 => {
                        let end = (at + 1 + rng.below(4)).min(s.len());
                        if s.is_char_boundary(end) {
                            s.replace_range(at..end, "");
                        }
                    }
                    _ => {
                        let end = (at + 1).min(s.len());
                        if s.is_char_boundary(end) {
                            s.replace_range(at..end, rng.pick(PIECES));
                        }
                    }
                }
            }
            s
        }
    }
}

/// Whether `part` is empty or a sub-slice of `whole` (same memory).
fn within(part: &str, whole: &str) -> bool {
    let (p, w) = (part.as_ptr() as usize, whole.as_ptr() as usize);
    part.is_empty() || (p >= w && p + part.len() <= w + whole.len())
}

/// A sink that drops everything.
struct Null;

impl fmt::Write for Null {
    fn write_str(&mut self, _: &str) -> fmt::Result {
        Ok(())
    }
}

impl TraceSeq for Null {
    fn put_bytes(&mut self, _: &[u8]) -> fmt::Result {
        Ok(())
    }
    fn put_symbol(&mut self, _: u64) -> fmt::Result {
        Ok(())
    }
    fn adjust_address(&self, addr: u64) -> u64 {
        addr
    }
    fn text_base(&self) -> u64 {
        u64::MAX
    }
}

/// Whether a parsed field is spelled so that its show text can be matched again: no
/// whitespace but the single spaces of a prefixed type, no `;`, a non-empty name.
fn canonical(f: &FieldSpec<'_>) -> bool {
    let plain = |s: &str| {
        !s.is_empty()
            && !s
                .bytes()
                .any(|b| b == b';' || crate::logic::grammar::is_space(b))
    };
    f.ty.split(' ').all(plain) && plain(f.name)
}

#[test]
fn arbitrary_commands_never_break_the_logic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut parsed = 0usize;
    for _ in 0..200_000 {
        let cmd = arbitrary(&mut rng);
        let Ok(c) = parse_command(&cmd) else {
            assert!(cmd
                .split('\0')
                .next()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .contains(':'));
            continue;
        };
        assert!(within(c.name, &cmd) && within(c.args, &cmd));

        // Terminates within one step per `;` segment, and at the first error.
        let mut specs = Vec::new();
        let mut failed = false;
        let mut steps = 0usize;
        for r in fields(c.args) {
            steps += 1;
            assert!(steps <= c.args.len() + 1);
            assert!(!failed, "nothing after an error");
            match r {
                Ok(f) => specs.push(f),
                Err(_) => failed = true,
            }
        }

        // Packed, monotonic, within `int`.
        let mut end = 8u32;
        for f in &specs {
            assert_eq!(f.offset, end);
            assert!(f.size > 0);
            end = f.offset.checked_add(f.size).unwrap();
            assert!(end <= FIELD_END_MAX);
            assert!(within(f.ty, &cmd) && within(f.name, &cmd));
            assert_eq!(f.is_signed, !f.ty.starts_with('u'));
        }
        assert_eq!(min_size(c.args).is_ok(), !failed);
        if !failed {
            parsed += 1;
            assert_eq!(min_size(c.args), Ok(end - 8));
        }

        let tuples = || specs.iter().map(|f| (f.ty, f.name, f.size, f.is_struct));
        let mut text = String::new();
        write_print_fmt(&mut text, specs.iter().map(|f| (f.ty, f.name))).unwrap();
        assert!(text.starts_with('"'));
        let _ = fields_match(tuples(), c.args, true);
        let _ = fields_match(tuples(), c.args, false);
        let _ = fields_match(tuples(), &cmd, rng.below(2) == 0);

        // What `dynamic_events` shows for a canonically spelled event finds it again.
        if !failed && specs.iter().all(canonical) {
            let mut line = String::new();
            write_show_line(&mut line, c.name, tuples()).unwrap();
            let shown_args = line
                .strip_suffix('\n')
                .unwrap()
                .split_once(' ')
                .map_or("", |(_, a)| a);
            assert!(fields_match(tuples(), shown_args, true), "{line:?}");
            assert!(fields_match(tuples(), shown_args, false), "{line:?}");
        }

        // Printing and validating an arbitrary record against these fields.
        let record: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
        write_trace_line(&mut Null, "ev", specs.iter().copied(), &record).unwrap();
        let _ = validate(&record, specs.iter().filter_map(|f| f.validator()));
    }
    // The generator reaches the accepting paths, not just the errors.
    assert!(parsed > 20_000, "{parsed}");
}

#[test]
fn arbitrary_records_validate_only_in_bounds() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let args = "__rel_loc char[] a; u32 x; __data_loc char[] b; __data_loc cpumask_t m";
    let specs: Vec<_> = fields(args).map(|f| f.unwrap()).collect();
    let validators: Vec<_> = specs.iter().filter_map(|f| f.validator()).collect();
    assert_eq!(validators.len(), 3);
    let mut valid = 0;
    for _ in 0..100_000 {
        let mut record: Vec<u8> = (0..rng.below(48)).map(|_| rng.next() as u8).collect();
        // Small loc words often, so that some records pass.
        for v in &validators {
            let at = v.offset as usize;
            if at + 4 <= record.len() && rng.below(2) == 0 {
                let word = (rng.below(8) as u32) << 16 | rng.below(40) as u32;
                record[at..at + 4].copy_from_slice(&word.to_ne_bytes());
            }
        }
        if validate(&record, validators.iter().copied()).is_err() {
            continue;
        }
        for v in &validators {
            let at = v.offset as usize;
            let word = u32::from_ne_bytes(record[at..at + 4].try_into().unwrap());
            let start = if v.rel { at + 4 } else { 0 } + (word & 0xffff) as usize;
            let end = start + (word >> 16) as usize;
            assert!(end <= record.len());
            if v.ensure_null {
                assert_eq!(record[end - 1], 0);
            }
        }
        write_trace_line(&mut Null, "ev", specs.iter().copied(), &record).unwrap();
        valid += 1;
    }
    // Some records pass (75 with this seed), so the bounds checks above ran.
    assert!(valid > 50, "{valid}");
}
