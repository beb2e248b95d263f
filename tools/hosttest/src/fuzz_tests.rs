// SPDX-License-Identifier: GPL-2.0

//! Property tests over arbitrary input: the logic never panics, terminates within a bound
//! proportional to the input, and keeps its layout invariants.
//!
//! Each property checks `RUE_FUZZ_ITERS` inputs (default: its own count, sized for `make
//! check`) drawn from the seed `RUE_FUZZ_SEED` (default: its own; decimal or `0x` hex, not 0).
//! `make host-fuzz` runs them in release mode with 10,000,000 inputs each. When an input fails,
//! the test prints the run's seed, the iteration, the input's own seed and the input, escaped;
//! `RUE_FUZZ_SEED=<input seed> RUE_FUZZ_ITERS=1` repeats exactly that input.

use crate::logic::grammar::{fields, min_size, parse_command, FieldSpec, Validator, FIELD_END_MAX};
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
    /// Inputs to check (`RUE_FUZZ_ITERS`).
    iters: u64,
    /// The input being checked: its index in the run, its own seed, the command and record.
    iteration: u64,
    input_seed: u64,
    cmd: String,
    record: Vec<u8>,
}

impl Run {
    fn new(property: &'static str, default_seed: u64, default_iters: u64) -> Self {
        let seed = env_number("RUE_FUZZ_SEED").unwrap_or(default_seed);
        assert_ne!(seed, 0, "RUE_FUZZ_SEED=0: xorshift never leaves 0");
        Run {
            property,
            seed,
            iters: env_number("RUE_FUZZ_ITERS").unwrap_or(default_iters),
            iteration: 0,
            input_seed: seed,
            cmd: String::new(),
            record: Vec::new(),
        }
    }

    /// Starts input `iteration`, whose seed is `rng`'s state.
    fn start(&mut self, iteration: u64, rng: &Rng) {
        self.iteration = iteration;
        self.input_seed = rng.0;
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if std::thread::panicking() {
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

/// What [`check_case`] found, for the properties' coverage checks.
#[derive(Clone, Copy, Default)]
struct Seen {
    /// The whole field list parsed.
    parsed: bool,
}

/// Checks one input: the command `cmd` and a record `record` written to the event it
/// registers. Panics on any broken invariant.
fn check_case(cmd: &str, record: &[u8]) -> Seen {
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
    assert_eq!(min_size(c.args).is_ok(), !failed);
    if !failed {
        assert_eq!(min_size(c.args), Ok(end - 8));
    }

    let tuples = || specs.iter().map(|f| (f.ty, f.name, f.size, f.is_struct));
    let mut text = String::new();
    write_print_fmt(&mut text, specs.iter().map(|f| (f.ty, f.name))).unwrap();
    assert!(text.starts_with('"'));
    for fixup in [true, false] {
        let _ = fields_match(tuples(), c.args, fixup);
        let _ = fields_match(tuples(), cmd, fixup);
    }

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

    // Printing and validating the record against these fields.
    write_trace_line(&mut Null, "ev", specs.iter().copied(), record).unwrap();
    let _ = validate(record, specs.iter().filter_map(|f| f.validator()));
    Seen { parsed: !failed }
}

/// Below this many inputs a run skips its coverage checks, which count over the whole run (a
/// single repeated input proves nothing about coverage).
const COVERAGE_MIN_ITERS: u64 = 100_000;

#[test]
fn arbitrary_commands_never_break_the_logic() {
    let mut run = Run::new(
        "arbitrary_commands_never_break_the_logic",
        0x9e37_79b9_7f4a_7c15,
        200_000,
    );
    let mut rng = Rng(run.seed);
    let mut parsed = 0u64;
    for i in 0..run.iters {
        run.start(i, &rng);
        run.cmd = arbitrary(&mut rng);
        run.record.clear();
        for _ in 0..rng.below(64) {
            run.record.push(rng.next() as u8);
        }
        if check_case(&run.cmd, &run.record).parsed {
            parsed += 1;
        }
    }
    // The generator reaches the accepting paths, not just the errors.
    if run.iters >= COVERAGE_MIN_ITERS {
        assert!(parsed * 10 > run.iters, "{parsed}");
    }
}

/// The loc words of `record` that `validators` check are all in bounds, and `char` data ends
/// in NUL.
fn check_validated(record: &[u8], validators: &[Validator]) {
    for v in validators {
        let at = v.offset as usize;
        let word = u32::from_ne_bytes(record[at..at + 4].try_into().unwrap());
        let start = if v.rel { at + 4 } else { 0 } + (word & 0xffff) as usize;
        let end = start + (word >> 16) as usize;
        assert!(end <= record.len());
        if v.ensure_null {
            assert_eq!(record[end - 1], 0);
        }
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
    let mut valid = 0u64;
    for i in 0..run.iters {
        run.start(i, &rng);
        let record = &mut run.record;
        record.clear();
        for _ in 0..rng.below(48) {
            record.push(rng.next() as u8);
        }
        // Small loc words often, so that some records pass.
        for v in &validators {
            let at = v.offset as usize;
            if at + 4 <= record.len() && rng.below(2) == 0 {
                let word = (rng.below(8) as u32) << 16 | rng.below(40) as u32;
                record[at..at + 4].copy_from_slice(&word.to_ne_bytes());
            }
        }
        if validate(record, validators.iter().copied()).is_err() {
            continue;
        }
        check_validated(record, &validators);
        write_trace_line(&mut Null, "ev", specs.iter().copied(), record).unwrap();
        valid += 1;
    }
    // Some records pass (75 in the default run), so the bounds checks above ran.
    if run.iters >= COVERAGE_MIN_ITERS {
        assert!(valid * 2000 > run.iters, "{valid}");
    }
}
