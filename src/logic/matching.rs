// SPDX-License-Identifier: GPL-2.0

//! "Same event" matching: does a command's field list describe an existing event?
//! Upstream's `user_event_argv_split()` + `user_fields_match()` (`find_user_event()`) and
//! `user_event_match()` (dynamic_events delete), `kernel/trace/trace_events_user.c`.
//!
//! The args are split into whitespace-separated words (`argv_split()`); on the registration
//! path a space is first inserted after every `';'` not followed by whitespace. Each field then
//! takes the words up to and including the first one that contains a `';'`, joined by single
//! spaces, and that must equal `"<type> <name>"` (`+ " <size>"` for `struct`, `+ ";"` if the
//! words ended in a `';'` word). All words must be used. So matching normalises whitespace
//! where the parser does not (quirk Q5), and empty fields (`"u32 a;;u32 b"`) leave a lone `";"`
//! word that no field can match (quirk Q4).
//!
//! Nothing is allocated: words are re-scanned from the borrowed args and compared byte by byte.

use super::abi::{USER_EVENTS_MULTI_SYSTEM, USER_EVENTS_SYSTEM};
use super::grammar::{c_str, is_space};
use core::fmt::{self, Write};

/// The words of an args string, as `argv_split()` returns them.
#[derive(Clone, Debug)]
struct Argv<'a> {
    /// Not yet split.
    rest: &'a [u8],
    /// `user_event_argv_split()`'s fix-up: every `';'` also ends a word.
    fixup_semicolons: bool,
}

impl<'a> Iterator for Argv<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let skip = self.rest.iter().take_while(|&&b| is_space(b)).count();
        let rest = self.rest.get(skip..)?;
        if rest.is_empty() {
            self.rest = rest;
            return None;
        }
        let fixup = self.fixup_semicolons;
        // Ends before a space, or (with the fix-up) just after a `';'`; at least one byte.
        let len = rest
            .iter()
            .position(|&b| is_space(b) || (fixup && b == b';'))
            .map_or(rest.len(), |i| {
                if rest.get(i) == Some(&b';') {
                    i.saturating_add(1)
                } else {
                    i
                }
            });
        let word = rest.get(..len)?;
        self.rest = rest.get(len..)?;
        Some(word)
    }
}

/// A [`Write`] that checks that what is written equals `expected`, byte by byte.
struct Compare<I> {
    /// The bytes still to be matched.
    expected: I,
}

impl<I: Iterator<Item = u8>> Write for Compare<I> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if self.expected.next() != Some(b) {
                return Err(fmt::Error);
            }
        }
        Ok(())
    }
}

/// `user_field_match()`: whether the words of `candidate` (joined by single spaces) spell the
/// field `(ty, name, size, is_struct)`, with a trailing `;` iff `colon`.
fn field_matches<'a>(
    candidate: impl Iterator<Item = &'a [u8]>,
    (ty, name, size, is_struct): (&str, &str, u32, bool),
    colon: bool,
) -> bool {
    let joined = candidate.enumerate().flat_map(|(i, word)| {
        (i != 0)
            .then_some(b' ')
            .into_iter()
            .chain(word.iter().copied())
    });
    let mut cmp = Compare { expected: joined };
    write_field_string(&mut cmp, ty, name, size, is_struct, colon).is_ok()
        && cmp.expected.next().is_none()
}

/// `user_field_set_string()`: `"<type> <name>[ <size>][;]"`.
fn write_field_string<W: Write>(
    out: &mut W,
    ty: &str,
    name: &str,
    size: u32,
    is_struct: bool,
    colon: bool,
) -> fmt::Result {
    out.write_str(ty)?;
    out.write_char(' ')?;
    out.write_str(name)?;
    if is_struct {
        // Upstream: `" %d"` of the `int` size; sizes from the grammar are below 2^31.
        write!(out, " {size}")?;
    }
    if colon {
        out.write_char(';')?;
    }
    Ok(())
}

/// `user_fields_match()`: whether an event with `registered` fields, `(type, name, size,
/// is_struct)` in declaration order, is the one `args` describes.
///
/// `fixup_semicolons` is `true` on the registration and `u:` create paths
/// (`user_event_argv_split()`), `false` on the dynamic_events delete path (plain `argv_split()`
/// of the line). Without words, only an event without fields matches.
pub(crate) fn fields_match<'a, I>(registered: I, args: &str, fixup_semicolons: bool) -> bool
where
    I: Iterator<Item = (&'a str, &'a str, u32, bool)>,
{
    let mut argv = Argv {
        rest: c_str(args).as_bytes(),
        fixup_semicolons,
    };
    let mut registered = registered.peekable();
    if argv.clone().next().is_none() {
        return registered.peek().is_none();
    }
    for field in registered {
        let start = argv.clone();
        // `*iout >= argc`: no words left for this field.
        let mut count = 0usize;
        let mut colon = false;
        // `user_dyn_field_set_string()`: words up to and including the first with a `';'`.
        for word in argv.by_ref() {
            count = count.saturating_add(1);
            if word.contains(&b';') {
                colon = true;
                break;
            }
        }
        if count == 0 || !field_matches(start.take(count), field, colon) {
            return false;
        }
    }
    // `i != argc`: words left over.
    argv.next().is_none()
}

/// Whether `system`, given in a dynamic_events delete command, may name a user event: either
/// system name is accepted for every user event, whatever its flavour (quirk Q10).
pub(crate) fn system_matches(system: &str) -> bool {
    system == USER_EVENTS_SYSTEM || system == USER_EVENTS_MULTI_SYSTEM
}
