// SPDX-License-Identifier: GPL-2.0

//! The command grammar of `DIAG_IOCSREG` `name_args` and `dynamic_events` `u:` lines, byte for
//! byte as upstream's `user_event_parse_cmd()`, `user_event_parse_fields()`,
//! `user_event_parse_field()`, `user_field_size()` and `user_field_array_size()`
//! (`kernel/trace/trace_events_user.c`), and the `name.<id>` of a multi-format event as
//! `user_event_set_tp_name()`.
//!
//! ```text
//! name[:FLAGS] [field[;field...]]
//! field:  type name  |  struct TYPENAME name SIZE
//! ```
//!
//! Upstream splits a writable copy of the command in place (`strpbrk`, `strsep`); here the same
//! splits are done on a borrowed `&str` and every piece (`name`, field `type`, field `name`) is a
//! sub-slice of the input. All splits happen at ASCII bytes, so every slice is on a `char`
//! boundary. Every grammar error is `-EINVAL` upstream, hence the single [`ParseError`].
//!
//! Upstream works on C strings, so nothing after a NUL byte is ever seen; the functions here
//! stop at the first NUL too.

use core::fmt::{self, Write};

/// A malformed command or field (upstream: `-EINVAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ParseError;

/// `sizeof(struct trace_entry)`: the payload, and so the first field, starts at this offset.
pub(crate) const TRACE_ENTRY_SIZE: u32 = 8;

/// `MAX_FIELD_ARRAY_SIZE`: the largest `N` of `char[N]`.
pub(crate) const MAX_FIELD_ARRAY_SIZE: u32 = 1024;

/// Largest end (`offset + size`) a field may have.
///
/// Upstream keeps `ftrace_event_field.offset`/`.size` and `min_size` in `int`, so past this it
/// overflows (undefined behaviour in C, garbage in practice). We reject such layouts with
/// `EINVAL` instead; only `struct` fields with absurd sizes can get there. This also bounds a
/// `struct` SIZE: upstream's `kstrtou32()` into an `int` turns SIZE ≥ 2^31 into a negative
/// "errno"; we answer `EINVAL`.
pub(crate) const FIELD_END_MAX: u32 = i32::MAX as u32;

/// `strscpy(val, …, sizeof(val))` buffer size in `user_field_array_size()`.
const ARRAY_SIZE_BUF: usize = 8;

/// The index of the first `byte`, an ASCII byte, in `s` (so a char boundary): a byte loop,
/// which for the few bytes of a command costs a fraction of `str::find`'s searcher.
fn find_byte(s: &str, byte: u8) -> Option<usize> {
    s.bytes().position(|b| b == byte)
}

/// `s.split_once(byte)` for an ASCII `byte`, with [`find_byte`].
fn split_once_byte(s: &str, byte: u8) -> Option<(&str, &str)> {
    let at = find_byte(s, byte)?;
    Some((s.get(..at)?, s.get(at + 1..)?))
}

/// `s.split(byte)` for an ASCII `byte`, with [`find_byte`].
fn split_byte(s: &str, byte: u8) -> impl Iterator<Item = &str> {
    let mut rest = Some(s);
    core::iter::from_fn(move || {
        let r = rest?;
        Some(match split_once_byte(r, byte) {
            Some((head, tail)) => {
                rest = Some(tail);
                head
            }
            None => {
                rest = None;
                r
            }
        })
    })
}

/// `bytes` as text, if they are UTF-8 (`core::str::from_utf8`): ASCII, what commands nearly
/// always are, is checked a word at a time (`<[u8]>::is_ascii`), where `from_utf8` took about
/// ten instructions a byte for a short command (performance.md, "Where the time goes").
pub(crate) fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        Some(unsafe { core::str::from_utf8_unchecked(bytes) })
    } else {
        core::str::from_utf8(bytes).ok()
    }
}

/// The part of `s` a C string function sees: everything before the first NUL.
pub(crate) fn c_str(s: &str) -> &str {
    match find_byte(s, 0) {
        // `find` returns a char boundary.
        Some(nul) => s.get(..nul).unwrap_or(""),
        None => s,
    }
}

/// The kernel's `isspace()` (`lib/ctype.c`): `\t \n \v \f \r`, space, and Latin-1 NBSP (0xA0).
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ' | 0xA0)
}

/// A command split into event name and field list (`user_event_parse_cmd()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Command<'a> {
    /// The registered event name (`reg_name`); not validated (quirk Q13), may be empty.
    pub(crate) name: &'a str,
    /// Everything after the first space: the field list for [`fields`], `""` if there is none.
    pub(crate) args: &'a str,
}

/// Splits `cmd` at its first `' '` (tab does not count) into name and args.
///
/// A `':'` in the name part introduces text flags, of which upstream supports none, so it is an
/// error ("u:name" over the ioctl fails the same way).
pub(crate) fn parse_command(cmd: &str) -> Result<Command<'_>, ParseError> {
    let cmd = c_str(cmd);
    let (name, args) = split_once_byte(cmd, b' ').unwrap_or((cmd, ""));
    if find_byte(name, b':').is_some() {
        return Err(ParseError);
    }
    Ok(Command { name, args })
}

/// One field of an event, as upstream's `struct ftrace_event_field` would hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FieldSpec<'a> {
    /// The type exactly as upstream keeps it: `"u32"`, `"unsigned int"`, `"struct foo"`,
    /// `"__rel_loc unsigned char[]"`, `"char[20]xyz"`.
    pub(crate) ty: &'a str,
    /// The field name; not validated, may even be empty (`"u32 "`).
    pub(crate) name: &'a str,
    /// Size in bytes: from the type, or the SIZE of a `struct` field.
    pub(crate) size: u32,
    /// Offset in the record, counting the 8-byte `trace_entry` header; fields are packed.
    pub(crate) offset: u32,
    /// `type[0] != 'u'`, upstream's rule (so `struct …` is signed).
    pub(crate) is_signed: bool,
    /// The field was declared `struct TYPENAME name SIZE`.
    pub(crate) is_struct: bool,
}

/// A check run on each written record for one `__data_loc`/`__rel_loc` field
/// (`struct user_event_validator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Validator {
    /// Offset of the 4-byte loc word in the record (header included).
    pub(crate) offset: u32,
    /// `VALIDATOR_REL`: a `__rel_loc` field, offsets count from the end of the loc word.
    pub(crate) rel: bool,
    /// `VALIDATOR_ENSURE_NULL`: the type contains `"char"`, the data must end in NUL.
    pub(crate) ensure_null: bool,
}

impl FieldSpec<'_> {
    /// First byte after the field.
    pub(crate) fn end(&self) -> u32 {
        // Never overflows: the parser only yields fields with `offset + size <= FIELD_END_MAX`.
        self.offset.saturating_add(self.size)
    }

    /// The validator upstream's `user_event_add_field()` adds for this field, if any.
    pub(crate) fn validator(&self) -> Option<Validator> {
        let rel = if self.ty.starts_with("__data_loc ") {
            false
        } else if self.ty.starts_with("__rel_loc ") {
            true
        } else {
            return None;
        };
        Some(Validator {
            offset: self.offset,
            rel,
            ensure_null: self.ty.contains("char"),
        })
    }
}

/// Iterator over the fields of an args string; see [`fields`].
#[derive(Clone, Debug)]
pub(crate) struct Fields<'a> {
    /// What `strsep(&args, ";")` has not consumed yet; `None` once done or after an error.
    rest: Option<&'a str>,
    /// Offset of the next field.
    offset: u32,
}

/// Parses the field list `args` (the `args` of a [`Command`]) like `user_event_parse_fields()`.
///
/// Yields each field in declaration order, skipping empty ones (`"u32 a;;u32 b"`, `" ;"`). The
/// first error is yielded as `Err` and ends the iteration.
pub(crate) fn fields(args: &str) -> Fields<'_> {
    Fields {
        rest: Some(c_str(args)),
        offset: TRACE_ENTRY_SIZE,
    }
}

/// At least as many as the fields [`fields`] yields for `args`: its `;`-separated pieces that
/// are not all spaces (only those can hold a field). For sizing a field list once.
pub(crate) fn max_fields(args: &str) -> usize {
    c_str(args)
        .split(';')
        .filter(|piece| !piece.bytes().all(is_space))
        .count()
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<FieldSpec<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        // Each round consumes one `;`-separated segment, so this ends.
        loop {
            let rest = self.rest?;
            let field = match split_once_byte(rest, b';') {
                Some((field, tail)) => {
                    self.rest = Some(tail);
                    field
                }
                None => {
                    self.rest = None;
                    rest
                }
            };
            match parse_field(field, self.offset) {
                Ok(None) => continue,
                Ok(Some(spec)) => {
                    self.offset = spec.end();
                    return Some(Ok(spec));
                }
                Err(e) => {
                    self.rest = None;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// `min_size`: the static payload bytes every write must carry (after the write index).
///
/// `last offset + last size - 8`, 0 for an event without fields.
pub(crate) fn min_size(args: &str) -> Result<u32, ParseError> {
    let mut end = TRACE_ENTRY_SIZE;
    for spec in fields(args) {
        end = spec?.end();
    }
    // `end >= TRACE_ENTRY_SIZE`: offsets start there and only grow.
    end.checked_sub(TRACE_ENTRY_SIZE).ok_or(ParseError)
}

/// Checks a whole field list; `Ok(())` iff upstream's `user_event_parse_fields()` returns 0.
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "the kernel keeps these results per event")
)]
pub(crate) fn check_fields(args: &str) -> Result<(), ParseError> {
    min_size(args).map(|_| ())
}

/// Type prefixes that contain a space, in upstream's order; `true` marks `struct`.
const SPACED_PREFIXES: [(&str, bool); 6] = [
    ("unsigned ", false),
    ("struct ", true),
    ("__data_loc unsigned ", false),
    ("__data_loc ", false),
    ("__rel_loc unsigned ", false),
    ("__rel_loc ", false),
];

/// `skip_spaces()`.
fn skip_spaces(s: &str) -> Result<&str, ParseError> {
    let skip = s.bytes().take_while(|&b| is_space(b)).count();
    // Always a char boundary for a `&str` (0xA0 is never the first byte of a char), but stay
    // total rather than assume it.
    s.get(skip..).ok_or(ParseError)
}

/// `user_event_parse_field()`: one `;`-separated segment at `offset`; `Ok(None)` if empty.
fn parse_field(field: &str, offset: u32) -> Result<Option<FieldSpec<'_>>, ParseError> {
    let field = skip_spaces(field)?;
    if field.is_empty() {
        return Ok(None);
    }

    // Depth of the next token: 0 type, 1 name, 2 size (`FIELD_DEPTH_*`).
    let mut depth = 0u32;
    let mut ty = None;
    let mut is_struct = false;
    let mut tokens = field;
    if let Some(&(prefix, strct)) = SPACED_PREFIXES.iter().find(|(p, _)| field.starts_with(p)) {
        // The type runs to the first space after the prefix, which must exist. With a double
        // space (`"struct  foo a 20"`) that is the prefix's own end: type `"struct "`.
        let after = field.get(prefix.len()..).ok_or(ParseError)?;
        let space = find_byte(after, b' ').ok_or(ParseError)?;
        let ty_end = prefix.len().checked_add(space).ok_or(ParseError)?;
        ty = Some(field.get(..ty_end).ok_or(ParseError)?);
        tokens = after.get(space.saturating_add(1)..).ok_or(ParseError)?;
        is_struct = strct;
        depth = 1;
    }

    let mut name = None;
    let mut size = None;
    // `strsep(&field, " ")`: single spaces, empty tokens kept. At most three tokens are looked
    // at before the depth check fails.
    for part in split_byte(tokens, b' ') {
        match depth {
            0 => ty = Some(part),
            1 => name = Some(part),
            2 if is_struct => size = Some(kstrtou32(part.as_bytes(), 10).ok_or(ParseError)?),
            _ => return Err(ParseError),
        }
        depth = depth.saturating_add(1);
    }

    let (Some(ty), Some(name)) = (ty, name) else {
        return Err(ParseError);
    };
    let size = match size {
        Some(size) => size,
        None => user_field_size(ty)?,
    };
    if size == 0 || size > FIELD_END_MAX {
        return Err(ParseError);
    }
    let end = offset.checked_add(size).ok_or(ParseError)?;
    if end > FIELD_END_MAX {
        return Err(ParseError);
    }
    Ok(Some(FieldSpec {
        ty,
        name,
        size,
        offset,
        is_signed: !ty.starts_with('u'),
        is_struct,
    }))
}

/// `user_field_size()`: the size of a non-`struct` type; `Ok(0)` is possible (`char[0]`).
fn user_field_size(ty: &str) -> Result<u32, ParseError> {
    // "long is not allowed from a user, since it's ambiguous in size".
    let size = match ty {
        "s64" | "u64" => 8,
        "s32" | "u32" | "int" | "unsigned int" => 4,
        "s16" | "u16" | "short" | "unsigned short" => 2,
        "s8" | "u8" | "char" | "unsigned char" => 1,
        _ if ty.starts_with("char[") || ty.starts_with("unsigned char[") => {
            return user_field_array_size(ty.as_bytes());
        }
        _ if ty.starts_with("__data_loc ") || ty.starts_with("__rel_loc ") => 4,
        _ => return Err(ParseError),
    };
    Ok(size)
}

/// `user_field_array_size()`: `N` of `…[N]…`.
fn user_field_array_size(ty: &[u8]) -> Result<u32, ParseError> {
    let start = ty.iter().position(|&b| b == b'[').ok_or(ParseError)?;
    let after = ty.get(start.saturating_add(1)..).ok_or(ParseError)?;
    // `strscpy()` into `char val[8]` fails (`<= 0`) when empty or truncated.
    if after.is_empty() || after.len() >= ARRAY_SIZE_BUF {
        return Err(ParseError);
    }
    let bracket = after.iter().position(|&b| b == b']').ok_or(ParseError)?;
    let val = after.get(..bracket).ok_or(ParseError)?;
    let size = kstrtouint(val, 0).ok_or(ParseError)?;
    if size > MAX_FIELD_ARRAY_SIZE {
        return Err(ParseError);
    }
    Ok(size)
}

/// `kstrtouint(s, base, …)` (`lib/kstrtox.c`) on a string without NUL; `None` on any error.
pub(crate) fn kstrtouint(s: &[u8], base: u32) -> Option<u32> {
    u32::try_from(kstrtoull(s, base)?).ok()
}

/// `kstrtou32()`: the same as [`kstrtouint`].
pub(crate) fn kstrtou32(s: &[u8], base: u32) -> Option<u32> {
    kstrtouint(s, base)
}

/// `kstrtoull()`: optional `+`, radix auto-detection for base 0 (`0x` hex, `0` octal), digits,
/// at most one trailing `'\n'`, nothing else.
fn kstrtoull(s: &[u8], base: u32) -> Option<u64> {
    let s = s.strip_prefix(b"+").unwrap_or(s);
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    // `_parse_integer_fixup_radix()`; `_tolower(c)` is `c | 0x20`.
    let mut base = base;
    if base == 0 {
        base = if at(0) != b'0' {
            10
        } else if at(1) | 0x20 == b'x' && at(2).is_ascii_hexdigit() {
            16
        } else {
            8
        };
    }
    let mut digits = s;
    if base == 16 && at(0) == b'0' && at(1) | 0x20 == b'x' {
        digits = s.get(2..)?;
    }

    // `_parse_integer_limit()`.
    let mut res: u64 = 0;
    let mut overflow = false;
    let mut used = 0usize;
    // `'0'..='9'`, or `'a'..='f'` after `_tolower()`: exactly what `to_digit(16)` accepts.
    while let Some(val) = digits
        .get(used)
        .and_then(|&c| char::from(c).to_digit(16))
        .filter(|&val| val < base)
    {
        match res
            .checked_mul(u64::from(base))
            .and_then(|r| r.checked_add(u64::from(val)))
        {
            Some(r) => res = r,
            None => overflow = true,
        }
        used = used.saturating_add(1);
    }
    if overflow || used == 0 {
        return None;
    }
    let tail = digits.get(used..)?;
    let tail = tail.strip_prefix(b"\n").unwrap_or(tail);
    tail.is_empty().then_some(res)
}

/// Writes the tracepoint name of a multi-format event: `name.<id in lowercase hex>`
/// (`user_event_set_tp_name()`, `"%s.%llx"`).
pub(crate) fn tp_name_multi<W: Write + ?Sized>(out: &mut W, name: &str, id: u64) -> fmt::Result {
    write!(out, "{name}.{id:x}")
}
