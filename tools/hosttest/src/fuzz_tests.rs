// SPDX-License-Identifier: GPL-2.0

//! Property tests over arbitrary input: the logic never panics, terminates within a bound
//! proportional to the input, keeps its layout invariants, validates records exactly by the
//! rule of upstream's `user_event_validate()`, and prints `print fmt:`, `dynamic_events` and
//! `trace` text of bounded length, with no `<OVERFLOW>` for a record that validated.
//!
//! Each property checks `RUE_FUZZ_ITERS` inputs (default: its own count, sized for `make
//! check`) drawn from the seed `RUE_FUZZ_SEED` (default: its own; decimal or `0x` hex, not 0).
//! `make host-fuzz` runs them in release mode with 10,000,000 inputs each. When an input fails,
//! the test prints the run's seed, the iteration, the input's own seed and the input, escaped;
//! `RUE_FUZZ_SEED=<input seed> RUE_FUZZ_ITERS=1` repeats exactly that input.
//!
//! Every input that ever failed goes into [`REGRESSIONS`] (`fuzz_regressions.rs`), which
//! every `cargo test` checks.

use crate::fuzz_regressions::REGRESSIONS;
use crate::logic::grammar::{fields, max_fields, min_size, parse_command, FieldSpec, Validator, FIELD_END_MAX};
use crate::logic::matching::fields_match;
use crate::logic::print_fmt::write_print_fmt;
use crate::logic::show::write_show_line;
use crate::logic::trace_output::{write_trace_line, TraceSeq};
use crate::logic::validate::validate;
use core::fmt;
use std::string::String;
use std::vec::Vec;

/// Deterministic xorshift64* generator. Its state is the seed of what it generates next: a
/// generator built from the state at the start of an input makes that input again.
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

/// Reads a number from the environment variable `name`: decimal or `0x` hex, `_` allowed;
/// `None` if it is unset or empty.
fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    let digits = value.trim().replace('_', "");
    if digits.is_empty() {
        return None;
    }
    let parsed = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => digits.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={value:?} is not a number")))
}

/// One run of a property: its seed and input count, and the input being checked, which it
/// prints, with how to repeat it, if the check panics.
struct Run {
    property: &'static str,
    /// The run's seed (`RUE_FUZZ_SEED`).
    seed: u64,
    /// Inputs to check (`RUE_FUZZ_ITERS`), and the property's own default.
    iters: u64,
    default_iters: u64,
    /// The input being checked: its index in the run, its own seed, the command and record.
    iteration: u64,
    input_seed: u64,
    cmd: String,
    record: Vec<u8>,
    /// An input is being checked (else the run is over, or not started).
    checking: bool,
}

impl Run {
    fn new(property: &'static str, default_seed: u64, default_iters: u64) -> Self {
        let seed = env_number("RUE_FUZZ_SEED").unwrap_or(default_seed);
        assert_ne!(seed, 0, "RUE_FUZZ_SEED=0: xorshift never leaves 0");
        Run {
            property,
            seed,
            iters: env_number("RUE_FUZZ_ITERS").unwrap_or(default_iters),
            default_iters,
            iteration: 0,
            input_seed: seed,
            cmd: String::new(),
            record: Vec::new(),
            checking: false,
        }
    }

    /// Starts input `iteration`, whose seed is `rng`'s state.
    fn start(&mut self, iteration: u64, rng: &Rng) {
        self.iteration = iteration;
        self.input_seed = rng.0;
        self.checking = true;
    }

    /// Whether the run checks at least the default number of inputs. Only such runs check
    /// coverage, which counts over the whole run: a repeated single input proves nothing
    /// about it.
    fn full(&self) -> bool {
        self.iters >= self.default_iters
    }

    /// Ends the inputs, and prints what the run saw (`cargo test -- --nocapture` shows it);
    /// what fails after this is the run's coverage check.
    fn done(&mut self, seen: fmt::Arguments<'_>) {
        self.checking = false;
        if self.property == REGRESSIONS_TEST {
            std::eprintln!("{}: {} entries: {seen}", self.property, self.iters);
        } else {
            std::eprintln!(
                "{}: {} inputs from RUE_FUZZ_SEED={:#x}: {seen}",
                self.property,
                self.iters,
                self.seed,
            );
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        if self.property == REGRESSIONS_TEST {
            std::eprintln!(
                "{}: entry {} of tools/hosttest/src/fuzz_regressions.rs failed\n\
                 input: ({:?}, b\"{}\")",
                self.property,
                self.iteration,
                self.cmd,
                self.record.escape_ascii(),
            );
            return;
        }
        if !self.checking {
            std::eprintln!(
                "{}: the run with RUE_FUZZ_SEED={:#x} RUE_FUZZ_ITERS={} failed its coverage check",
                self.property,
                self.seed,
                self.iters,
            );
            return;
        }
        std::eprintln!(
            "{}: input {} of the run with RUE_FUZZ_SEED={:#x} RUE_FUZZ_ITERS={} failed\n\
             input: ({:?}, b\"{}\")\n\
             repeat it: RUE_FUZZ_SEED={:#x} RUE_FUZZ_ITERS=1 cargo test -p rue-hosttest \
             fuzz_tests::{}\n\
             then add the input to tools/hosttest/src/fuzz_regressions.rs",
            self.property,
            self.iteration,
            self.seed,
            self.iters,
            self.cmd,
            self.record.escape_ascii(),
            self.input_seed,
            self.property,
        );
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
            mutate(rng, &mut s);
            s
        }
    }
}

/// One to four random edits of `s`: insert, delete or replace with pieces.
fn mutate(rng: &mut Rng, s: &mut String) {
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
}

/// Field types that parse, every kind the printer tells apart.
const TYPES: &[&str] = &[
    "u8",
    "s8",
    "char",
    "unsigned char",
    "u16",
    "s16",
    "short",
    "unsigned short",
    "u32",
    "s32",
    "int",
    "unsigned int",
    "u64",
    "s64",
    "char[1]",
    "char[20]",
    "char[0x14]",
    "char[010]",
    "unsigned char[3]",
    "char[1024]",
];

/// Loc types: what validators check, and the odd ones: without `[]`, one prefix naming the
/// other.
const LOC_TYPES: &[&str] = &[
    "__data_loc char[]",
    "__rel_loc char[]",
    "__data_loc unsigned char[]",
    "__rel_loc unsigned char[]",
    "__data_loc char",
    "__rel_loc char",
    "__data_loc u32[]",
    "__rel_loc u8[]",
    "__data_loc cpumask_t",
    "__rel_loc cpumask_t",
    "__data_loc __rel_loc_char",
    "__rel_loc __data_loc_char",
    "__rel_loc __data_loc",
];

/// `struct` types, some of which the printer takes for strings, loc words or arrays.
const STRUCT_TYPES: &[&str] = &[
    "struct foo",
    "struct __data_loc_char",
    "struct __rel_loc_char",
    "struct __data_loc",
    "struct __rel_loc",
    "struct char[",
    "struct u32",
];

const STRUCT_SIZES: &[u32] = &[1, 2, 3, 4, 5, 7, 8, 9, 16, 1024];

/// Field names, with the two the printer treats specially and ones that need escaping.
const NAMES: &[&str] = &[
    "a",
    "msg",
    "caller_offs",
    "parent_offs",
    "",
    "é",
    "à",
    "\"q\"",
    "n,m",
    "x=y",
    "\u{a0}",
];

/// What separates fields.
const SEPARATORS: &[&str] = &[";", "; ", ";\t", ";;", "; ;", ";\n"];

/// Separators that end the parse: a trailing space makes a third token, U+00A0 is not a space
/// to `skip_spaces()` (its first byte is 0xC2).
const BAD_SEPARATORS: &[&str] = &[" ;", ";\u{a0}"];

/// An arbitrary command built from fields that mostly parse, sometimes mutated.
fn arbitrary_fields(rng: &mut Rng) -> String {
    let mut s = String::from(rng.pick(&["ev", "test", "é", ""]));
    for i in 0..rng.below(9) {
        s.push_str(match (i, rng.below(32)) {
            (0, _) => " ",
            (_, 0) => rng.pick(BAD_SEPARATORS),
            _ => rng.pick(SEPARATORS),
        });
        if rng.below(8) == 0 {
            s.push_str(rng.pick(&["\t", "  ", "\n"]));
        }
        let name = rng.pick(NAMES);
        match rng.below(6) {
            0 => {
                let ty = rng.pick(STRUCT_TYPES);
                let size = rng.pick(STRUCT_SIZES);
                s.push_str(&std::format!("{ty} {name} {size}"));
            }
            1 | 2 => s.push_str(&std::format!("{} {name}", rng.pick(LOC_TYPES))),
            _ => s.push_str(&std::format!("{} {name}", rng.pick(TYPES))),
        }
    }
    if rng.below(16) == 0 {
        mutate(rng, &mut s);
    }
    s
}

/// A record for fields `specs` that mostly passes validation: random bytes, loc words pointing
/// into the record, mostly past the static fields, `char` data ending in NUL. Sometimes too
/// short for the fields, a loc word left random, or room for loc sizes of 0x8000 and more
/// (which the printer reads as negative).
fn record_for(rng: &mut Rng, specs: &[FieldSpec<'_>], record: &mut Vec<u8>) {
    let end = specs.last().map_or(8, |f| f.end() as usize);
    let len = if end > 1 << 16 {
        rng.below(64)
    } else {
        match rng.below(256) {
            0..4 => rng.below(end + 1),
            4 => end + 0x8000 + rng.below(0x8000),
            _ => end + rng.below(40),
        }
    };
    record.clear();
    while record.len() < len.min(end + 64) {
        record.extend_from_slice(&rng.next().to_ne_bytes());
    }
    record.truncate(len);
    if record.len() < len {
        // Zeros, without a byte-by-byte loop in the unoptimised test build.
        record.extend_from_slice(&std::vec![0; len - record.len()]);
    }

    let mut locs = Vec::new();
    for v in specs.iter().filter_map(|f| f.validator()) {
        if rng.below(16) == 0 {
            continue;
        }
        let at = v.offset as usize;
        let base = if v.rel { at + 4 } else { 0 };
        let room = len.saturating_sub(end);
        let size = if room >= 0x8000 && rng.below(2) == 0 {
            0x8000 + rng.below(room.min(0xffff) - 0x8000 + 1)
        } else {
            rng.below(room.min(16) + 1)
        };
        // Past the static fields, or anywhere after the base.
        let start = if rng.below(4) != 0 && room >= size {
            end + rng.below(room - size + 1)
        } else {
            base + rng.below(len.saturating_sub(base) + 1)
        };
        let offset = (start - base).min(0xffff);
        let data_end = base + offset + size;
        if v.ensure_null && data_end > 0 && data_end <= len {
            record[data_end - 1] = 0;
        }
        locs.push((at, ((size as u32) << 16) | offset as u32));
    }
    for (at, word) in locs {
        if let Some(bytes) = record.get_mut(at..at + 4) {
            bytes.copy_from_slice(&word.to_ne_bytes());
        }
    }
}

/// Whether `part` is empty or a sub-slice of `whole` (same memory).
fn within(part: &str, whole: &str) -> bool {
    let (p, w) = (part.as_ptr() as usize, whole.as_ptr() as usize);
    part.is_empty() || (p >= w && p + part.len() <= w + whole.len())
}

/// A `trace_seq` that keeps the line, with `%pS` as `0x<hex>` (no symbols on the host).
#[derive(Default)]
struct Seq {
    out: Vec<u8>,
    /// Values written as `<OVERFLOW>`, the printer's answer to data past the record.
    overflows: usize,
}

/// Buffers reused from one input to the next.
#[derive(Default)]
struct Scratch {
    seq: Seq,
    text: String,
}

impl fmt::Write for Seq {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if s == "<OVERFLOW>" {
            self.overflows += 1;
        }
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
        // `caller_offs` and `parent_offs` wrap around past it.
        0xffff_ffff_8100_0000
    }
}

/// Longest text one field's value can print as in a record of `record_len` bytes: a
/// non-printable string of N bytes is N characters, then ` (` and N two-digit bytes with `:`
/// between them; the fixed-size values are at most 64 characters.
fn value_len_max(record_len: usize) -> usize {
    4 * record_len + 64
}

/// Decimal digits of `n`.
fn digits(mut n: u32) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
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

/// What [`check_case`] found, for the properties' coverage checks.
#[derive(Clone, Copy, Default)]
struct Seen {
    /// The whole field list parsed.
    parsed: bool,
    /// The fields have validators, the record carries all fields and passed validation.
    validated: bool,
}

/// Checks one input: the command `cmd` and a record `record` written to the event it
/// registers, and with `matching` whether the command and the `dynamic_events` line find the
/// event. Panics on any broken invariant.
fn check_case(cmd: &str, record: &[u8], matching: bool, scratch: &mut Scratch) -> Seen {
    let Ok(c) = parse_command(cmd) else {
        assert!(cmd
            .split('\0')
            .next()
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .contains(':'));
        return Seen::default();
    };
    assert!(within(c.name, cmd) && within(c.args, cmd));

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
    // The field list sized by `max_fields` has room for every field.
    assert!(specs.len() <= max_fields(c.args));

    // Packed, monotonic, within `int`.
    let mut end = 8u32;
    for f in &specs {
        assert_eq!(f.offset, end);
        assert!(f.size > 0);
        end = f.offset.checked_add(f.size).unwrap();
        assert!(end <= FIELD_END_MAX);
        assert!(within(f.ty, cmd) && within(f.name, cmd));
        assert_eq!(f.is_signed, !f.ty.starts_with('u'));
    }
    let size = min_size(c.args);
    assert_eq!(size.is_ok(), !failed);
    if !failed {
        assert_eq!(size, Ok(end - 8));
    }

    check_text(c.name, &specs, &mut scratch.text);
    if matching {
        check_matching(c.args, cmd, &specs, !failed, &scratch.text);
    }
    let validated = check_validation(specs.iter().filter_map(|f| f.validator()), record);
    check_trace(c.name, &specs, record, validated, &mut scratch.seq);
    Seen {
        parsed: !failed,
        validated: validated
            && !failed
            && record.len() >= end as usize
            && specs.iter().any(|f| f.validator().is_some()),
    }
}

/// The event's `print fmt:` and `dynamic_events` line, for fields `specs`; leaves the line
/// in `text`.
fn check_text(name: &str, specs: &[FieldSpec<'_>], text: &mut String) {
    // `"name=%u …", REC->name, …`: per field its name twice, at most 23 characters more.
    text.clear();
    write_print_fmt(text, specs.iter().map(|f| (f.ty, f.name))).unwrap();
    assert!(text.starts_with('"'));
    let most: usize = specs.iter().map(|f| 2 * f.name.len() + 23).sum();
    assert!(text.len() <= 2 + most, "{text:?}");

    // `u:name type name[ size]; …`, exactly.
    text.clear();
    let tuples = specs.iter().map(|f| (f.ty, f.name, f.size, f.is_struct));
    write_show_line(text, name, tuples).unwrap();
    let mut expected = 2 + name.len() + 1;
    for (i, f) in specs.iter().enumerate() {
        expected += if i == 0 { 1 } else { 2 } + f.ty.len() + 1 + f.name.len();
        if f.is_struct {
            expected += 1 + digits(f.size);
        }
    }
    assert_eq!(text.len(), expected, "{text:?}");
    assert!(text.starts_with("u:") && text[2..].starts_with(name) && text.ends_with('\n'));
}

/// Matching an event with fields `specs` (parsed from `args`, all of them if `complete`;
/// `cmd` is the whole command) against its own text and its `dynamic_events` line `line`.
fn check_matching(args: &str, cmd: &str, specs: &[FieldSpec<'_>], complete: bool, line: &str) {
    let tuples = || specs.iter().map(|f| (f.ty, f.name, f.size, f.is_struct));
    let _ = fields_match(tuples(), args, true);
    let _ = fields_match(tuples(), args, false);
    let _ = fields_match(tuples(), cmd, cmd.len().is_multiple_of(2));

    // What `dynamic_events` shows for a canonically spelled event finds it again.
    if complete && specs.iter().all(canonical) {
        let shown_args = line
            .strip_suffix('\n')
            .unwrap()
            .split_once(' ')
            .map_or("", |(_, a)| a);
        assert!(fields_match(tuples(), shown_args, true), "{line:?}");
        assert!(fields_match(tuples(), shown_args, false), "{line:?}");
    }
}

/// Whether `record` passes validator `v` by the rule of upstream's `user_event_validate()`,
/// computed without `validate()`: the loc word lies in the record, the data ends within it,
/// `char` data ends in NUL (and an empty `__data_loc` at offset 0 fails, our deviation).
fn passes(record: &[u8], v: &Validator) -> bool {
    let at = v.offset as usize;
    let Some(word) = record.get(at..at + 4) else {
        return false;
    };
    let word = u32::from_ne_bytes(word.try_into().unwrap());
    let start = if v.rel { at + 4 } else { 0 } + (word & 0xffff) as usize;
    let end = start + (word >> 16) as usize;
    end <= record.len() && (!v.ensure_null || (end > 0 && record[end - 1] == 0))
}

/// Validates `record` with `validators` and checks the answer against [`passes`]; returns
/// whether it validated.
fn check_validation<I: Iterator<Item = Validator> + Clone>(validators: I, record: &[u8]) -> bool {
    let valid = validate(record, validators.clone()).is_ok();
    assert_eq!(valid, validators.clone().all(|v| passes(record, &v)));
    valid
}

/// Prints `record`, which `valid`ated or not, for the tracepoint `tp_name` with fields
/// `specs`, into `seq`.
fn check_trace(tp_name: &str, specs: &[FieldSpec<'_>], record: &[u8], valid: bool, seq: &mut Seq) {
    seq.out.clear();
    seq.overflows = 0;
    write_trace_line(seq, tp_name, specs.iter().copied(), record).unwrap();
    let out = &seq.out;
    assert!(out.starts_with(tp_name.as_bytes()) && out[tp_name.len()] == b':');
    assert!(out.ends_with(b"\n"));
    if specs.is_empty() {
        assert_eq!(&out[tp_name.len()..], b":No fields found\n");
    } else {
        // `tp_name:`, per field ` name=value`, `\n`.
        let most: usize = specs
            .iter()
            .map(|f| 2 + f.name.len() + value_len_max(record.len()))
            .sum();
        assert!(
            out.len() <= tp_name.len() + 2 + most,
            "{}",
            out.escape_ascii()
        );
    }

    // In a record that carries every field and passed validation, no value lies past the end:
    // only a `struct` type that names a loc type has a loc word no validator checked.
    let end = specs.last().map_or(8, |f| f.end() as usize);
    let unchecked_loc = || {
        specs.iter().any(|f| {
            f.validator().is_none() && (f.ty.contains("__data_loc") || f.ty.contains("__rel_loc"))
        })
    };
    if valid && record.len() >= end && !unchecked_loc() {
        let named = specs.iter().filter(|f| f.name == "<OVERFLOW>").count();
        assert_eq!(seq.overflows, named, "{}", out.escape_ascii());
    }
}

#[test]
fn arbitrary_commands_never_break_the_logic() {
    let mut run = Run::new(
        "arbitrary_commands_never_break_the_logic",
        0x9e37_79b9_7f4a_7c15,
        200_000,
    );
    let mut rng = Rng(run.seed);
    let mut scratch = Scratch::default();
    let mut parsed = 0u64;
    for i in 0..run.iters {
        run.start(i, &rng);
        run.cmd = arbitrary(&mut rng);
        run.record.clear();
        let len = rng.below(64);
        run.record.extend((0..len).map(|_| rng.next() as u8));
        if check_case(&run.cmd, &run.record, true, &mut scratch).parsed {
            parsed += 1;
        }
    }
    run.done(format_args!("{parsed} parsed"));
    // The generator reaches the accepting paths, not just the errors (90,324 in the default
    // run).
    if run.full() {
        assert!(parsed * 10 > run.iters, "{parsed}");
    }
}

#[test]
fn arbitrary_records_validate_only_in_bounds() {
    let mut run = Run::new(
        "arbitrary_records_validate_only_in_bounds",
        0x1234_5678_9abc_def1,
        100_000,
    );
    let mut rng = Rng(run.seed);
    let args = "__rel_loc char[] a; u32 x; __data_loc char[] b; __data_loc cpumask_t m";
    let specs: Vec<_> = fields(args).map(|f| f.unwrap()).collect();
    let validators: Vec<_> = specs.iter().filter_map(|f| f.validator()).collect();
    assert_eq!(validators.len(), 3);
    run.cmd = std::format!("ev {args}");
    let mut scratch = Scratch::default();
    let mut valid = 0u64;
    for i in 0..run.iters {
        run.start(i, &rng);
        let record = &mut run.record;
        record.clear();
        let len = rng.below(48);
        record.extend((0..len).map(|_| rng.next() as u8));
        // Small loc words often, so that some records pass.
        for v in &validators {
            let at = v.offset as usize;
            if at + 4 <= record.len() && rng.below(2) == 0 {
                let word = (rng.below(8) as u32) << 16 | rng.below(40) as u32;
                record[at..at + 4].copy_from_slice(&word.to_ne_bytes());
            }
        }
        if check_validation(validators.iter().copied(), record) {
            check_trace("ev", &specs, record, true, &mut scratch.seq);
            valid += 1;
        }
    }
    run.done(format_args!("{valid} valid"));
    // Some records pass (75 in the default run), so the bounds checks above ran.
    if run.full() {
        assert!(valid * 2000 > run.iters, "{valid}");
    }
}

#[test]
fn records_that_validate_print_within_bounds() {
    let mut run = Run::new(
        "records_that_validate_print_within_bounds",
        0x2545_f491_4f6c_dd1d,
        2_000,
    );
    let mut rng = Rng(run.seed);
    let mut scratch = Scratch::default();
    let (mut parsed, mut validated) = (0u64, 0u64);
    for i in 0..run.iters {
        run.start(i, &rng);
        run.cmd = arbitrary_fields(&mut rng);
        let specs: Vec<_> = parse_command(&run.cmd)
            .map(|c| fields(c.args).map_while(Result::ok).collect())
            .unwrap_or_default();
        record_for(&mut rng, &specs, &mut run.record);
        // Matching is the commands property's; this one is about records.
        let seen = check_case(&run.cmd, &run.record, false, &mut scratch);
        parsed += u64::from(seen.parsed);
        validated += u64::from(seen.validated);
    }
    run.done(format_args!("{parsed} parsed, {validated} validated"));
    // Most field lists parse, and many records with loc fields validate (1,705 and 894 in
    // the default run).
    if run.full() {
        assert!(parsed * 4 > run.iters * 3, "{parsed}");
        assert!(validated * 3 > run.iters, "{validated}");
    }
}

/// Name of the test of the regression corpus, which prints its failures differently.
const REGRESSIONS_TEST: &str = "regressions_still_pass";

#[test]
fn regressions_still_pass() {
    // Not `Run::new()`: the corpus ignores `RUE_FUZZ_SEED` and `RUE_FUZZ_ITERS`.
    let mut run = Run {
        property: REGRESSIONS_TEST,
        seed: 1,
        iters: REGRESSIONS.len() as u64,
        default_iters: REGRESSIONS.len() as u64,
        iteration: 0,
        input_seed: 1,
        cmd: String::new(),
        record: Vec::new(),
        checking: true,
    };
    let mut scratch = Scratch::default();
    let mut parsed = 0;
    for (i, &(cmd, record)) in REGRESSIONS.iter().enumerate() {
        run.iteration = i as u64;
        run.cmd.clear();
        run.cmd.push_str(cmd);
        run.record.clear();
        run.record.extend_from_slice(record);
        parsed += usize::from(check_case(cmd, record, true, &mut scratch).parsed);
    }
    run.done(format_args!("{parsed} parsed"));
    // The corpus is there, and not only rejected commands.
    assert!(parsed > 20, "{parsed} of {}", REGRESSIONS.len());
}
