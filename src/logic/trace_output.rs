// SPDX-License-Identifier: GPL-2.0

//! The `trace` text of one user event record, as 7.3's `user_event_print_trace()` →
//! `print_event_fields()` → `print_fields()` (`kernel/trace/trace_output.c`, not exported).
//!
//! ```text
//! __test_event: field1=0x1 (1) field2=0x2 (2)
//! __test_event:No fields found
//! ```
//!
//! Each field is printed by its `filter_type` (`filter_assign_type()` of the type string) and
//! size. The output is bytes, not necessarily UTF-8 (a printable Latin-1 `char`, a static
//! string), so it goes to a [`TraceSeq`], which the kernel side implements over `trace_seq`.
//! The kernel side also supplies `%pS`, which pure code cannot do.
//!
//! Integer values are read in native byte order, like the C casts.

use super::grammar::FieldSpec;
use core::fmt::{self, Write};

/// Where the text goes: upstream's `struct trace_seq`.
pub(crate) trait TraceSeq: Write {
    /// Appends raw bytes (`trace_seq_putmem()`); they need not be UTF-8.
    fn put_bytes(&mut self, bytes: &[u8]) -> fmt::Result;

    /// Prints `addr` as `%pS` does: `symbol+0x…/0x…` for a kernel address, else `0x<hex>`.
    fn put_symbol(&mut self, addr: u64) -> fmt::Result;

    /// `trace_adjust_address(iter->tr, addr)`: `addr` unless the instance holds a previous
    /// boot's persistent buffer.
    fn adjust_address(&self, addr: u64) -> u64;

    /// `(unsigned long)_stext`, the base of the 4-byte `caller_offs`/`parent_offs` fields.
    fn text_base(&self) -> u64;
}

/// `filter_type` of a field (`enum filter_type`), as far as a type string can produce it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FilterType {
    /// `FILTER_OTHER`: printed by size.
    Other,
    /// `FILTER_STATIC_STRING`: `char[N]`.
    StaticString,
    /// `FILTER_DYN_STRING`: `__data_loc … char …`.
    DynString,
    /// `FILTER_RDYN_STRING`: `__rel_loc … char …`.
    RdynString,
    /// `FILTER_PTR_STRING`: `char *`; the grammar cannot produce it (a type holds a space only
    /// after a known prefix).
    PtrString,
    /// `FILTER_CPUMASK`: `__data_loc cpumask_t`.
    Cpumask,
}

/// `filter_assign_type()` (`kernel/trace/trace_events_filter.c`): substring tests, in order.
pub(crate) fn filter_assign_type(ty: &str) -> FilterType {
    if ty.contains("__data_loc") {
        if ty.contains("char") {
            return FilterType::DynString;
        }
        if ty.contains("cpumask_t") {
            return FilterType::Cpumask;
        }
    }
    if ty.contains("__rel_loc") && ty.contains("char") {
        return FilterType::RdynString;
    }
    if ty.contains('[') && ty.contains("char") {
        return FilterType::StaticString;
    }
    if ty == "char *" || ty == "const char *" {
        return FilterType::PtrString;
    }
    FilterType::Other
}

/// `sizeof(long) == 8`: picks `print_fields()`'s branches for 4- and 8-byte values.
const LONG_IS_64: bool = usize::BITS == 64;

/// `PRECISION_MAX` of `lib/vsprintf.c`: `%.*s` precisions are clamped to `0..=PRECISION_MAX`.
const PRECISION_MAX: i64 = (1 << 15) - 1;

/// Writes the `trace` line of one record of the event `tp_name` whose fields are `fields`, in
/// declaration order. `record` is the entry as the iterator sees it (`iter->ent`, `ent_size`
/// bytes), header included.
pub(crate) fn write_trace_line<'a, S, I>(
    out: &mut S,
    tp_name: &str,
    fields: I,
    record: &[u8],
) -> fmt::Result
where
    S: TraceSeq + ?Sized,
    I: IntoIterator<Item = FieldSpec<'a>>,
{
    write!(out, "{tp_name}:")?;
    let mut fields = fields.into_iter().peekable();
    if fields.peek().is_none() {
        return out.write_str("No fields found\n");
    }
    for field in fields {
        write!(out, " {}=", field.name)?;
        print_field(out, &field, record)?;
    }
    out.write_char('\n')
}

/// `iter->ent_size`, an `int`, widened so no sum below overflows.
fn ent_size(record: &[u8]) -> i64 {
    i64::try_from(record.len()).unwrap_or(i64::MAX)
}

/// The `len` bytes of `record` at `offset`, if all inside.
fn bytes_at(record: &[u8], offset: i64, len: i64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    record.get(start..end)
}

/// `*(int *)pos` for a loc word at `offset`.
fn loc_at(record: &[u8], offset: i64) -> Option<i32> {
    Some(i32::from_ne_bytes(
        bytes_at(record, offset, 4)?.try_into().ok()?,
    ))
}

/// `(offset, len)` of a loc word as `print_fields()` decodes it: `int` arithmetic, so a size of
/// `0x8000` or more is negative, passes the bounds check and prints nothing.
fn decode_loc(loc: i32) -> (i64, i64) {
    (i64::from(loc & 0xffff), i64::from(loc >> 16))
}

/// One field's value, after its `" name="`.
fn print_field<S: TraceSeq + ?Sized>(
    out: &mut S,
    field: &FieldSpec<'_>,
    record: &[u8],
) -> fmt::Result {
    let offset = i64::from(field.offset);
    let size = i64::from(field.size);
    // `field->offset + field->size > iter->ent_size`.
    let Some(data) = bytes_at(record, offset, size) else {
        return out.write_str("<OVERFLOW>");
    };
    match filter_assign_type(field.ty) {
        // `"%.*s", field->size`.
        FilterType::StaticString => print_c_string(out, data, size),
        FilterType::DynString => print_dyn_string(out, record, offset, None),
        FilterType::RdynString => print_dyn_string(out, record, offset, Some(offset)),
        // Neither case exists in `print_fields()`: they print `<INVALID-TYPE>` (`PtrString`
        // would have a case, but no user event type can produce it).
        FilterType::Cpumask | FilterType::PtrString => out.write_str("<INVALID-TYPE>"),
        FilterType::Other => print_other(out, field, data, record),
    }
}

/// `FILTER_OTHER`: by size.
fn print_other<S: TraceSeq + ?Sized>(
    out: &mut S,
    field: &FieldSpec<'_>,
    data: &[u8],
    record: &[u8],
) -> fmt::Result {
    match *data {
        [b] => {
            if is_print(b) {
                out.write_char('\'')?;
                out.put_bytes(&[b])?;
                out.write_char('\'')?;
            }
            write!(out, "({b})")
        }
        [a, b] => {
            // `unsigned short` for both, so never negative.
            let v = u16::from_ne_bytes([a, b]);
            write!(out, "0x{v:x} ({v})")
        }
        [a, b, c, d] => {
            // Dynamic array info is 4 bytes: a loc word whose type has no `char`.
            if field.ty.contains("__data_loc") {
                return print_array(out, record, i64::from(field.offset), None);
            }
            if field.ty.contains("__rel_loc") {
                let offset = i64::from(field.offset);
                return print_array(out, record, offset, Some(offset));
            }
            let addr = u32::from_ne_bytes([a, b, c, d]);
            // Some fields reference offset from `_stext`.
            if field.name == "caller_offs" || field.name == "parent_offs" {
                let ip = u64::from(addr).wrapping_add(out.text_base());
                let ip = if LONG_IS_64 {
                    ip
                } else {
                    ip & u64::from(u32::MAX)
                };
                out.put_symbol(out.adjust_address(ip))?;
                out.write_char(' ')?;
            }
            // CAST: `(int)addr`, reinterpreting the bits.
            let signed = addr as i32;
            if LONG_IS_64 {
                write!(out, "0x{addr:x} ({signed})")
            } else {
                let adjusted = out.adjust_address(u64::from(addr));
                out.put_symbol(adjusted)?;
                // CAST: `(int)addr` of the adjusted 32-bit `unsigned long`.
                write!(out, " ({})", adjusted as u32 as i32)
            }
        }
        [a, b, c, d, e, f, g, h] => {
            let v = u64::from_ne_bytes([a, b, c, d, e, f, g, h]);
            if LONG_IS_64 {
                let v = out.adjust_address(v);
                out.put_symbol(v)?;
                // CAST: `%lld` of the `unsigned long long`, reinterpreting the bits.
                write!(out, " ({})", v as i64)
            } else {
                // CAST: as above.
                write!(out, "0x{v:x} ({})", v as i64)
            }
        }
        _ => out.write_str("<INVALID-SIZE>"),
    }
}

/// The bytes the loc word at `loc_offset` points at; `None` when the word or the data lies
/// past the record (`<OVERFLOW>`). A length `<= 0` gives no bytes.
///
/// `rel_base` is the field offset for `__rel_loc`, whose data starts after the loc word.
fn loc_bytes(record: &[u8], loc_offset: i64, rel_base: Option<i64>) -> Option<&[u8]> {
    let loc = loc_at(record, loc_offset)?;
    let (mut offset, len) = decode_loc(loc);
    if let Some(base) = rel_base {
        offset = offset.saturating_add(base).saturating_add(4);
    }
    if offset.saturating_add(len) > ent_size(record) {
        return None;
    }
    Some(bytes_at(record, offset, len.max(0)).unwrap_or(&[]))
}

/// `print_array()`: the bytes a non-string loc word points at, as `hh,hh,…`.
///
/// `rel_base` is the field offset for `__rel_loc`, whose data starts after the loc word.
fn print_array<S: TraceSeq + ?Sized>(
    out: &mut S,
    record: &[u8],
    loc_offset: i64,
    rel_base: Option<i64>,
) -> fmt::Result {
    // The caller checked that the 4-byte field is inside the record.
    let Some(bytes) = loc_bytes(record, loc_offset, rel_base) else {
        return out.write_str("<OVERFLOW>");
    };
    for (i, b) in bytes.iter().enumerate() {
        if i != 0 {
            out.write_char(',')?;
        }
        write!(out, "{b:02x}")?;
    }
    Ok(())
}

/// `FILTER_DYN_STRING`/`FILTER_RDYN_STRING`: the string a loc word points at.
///
/// All printable ASCII (NULs allowed): `%.*s`, so it stops at the first NUL. Otherwise every
/// byte, non-printables as `.`, then ` (hh:hh:…)`.
fn print_dyn_string<S: TraceSeq + ?Sized>(
    out: &mut S,
    record: &[u8],
    loc_offset: i64,
    rel_base: Option<i64>,
) -> fmt::Result {
    // Deviation: a `struct` type naming `__data_loc`/`__rel_loc` and `char` with a size below 4
    // makes upstream read the loc word past the field, maybe past the record; we print
    // `<OVERFLOW>` when it is past the record.
    let Some(bytes) = loc_bytes(record, loc_offset, rel_base) else {
        return out.write_str("<OVERFLOW>");
    };
    if bytes.iter().any(|&b| b != 0 && !is_ascii_print(b)) {
        for &b in bytes {
            if is_ascii_print(b) {
                out.put_bytes(&[b])?;
            } else {
                out.write_char('.')?;
            }
        }
        out.write_str(" (")?;
        for (i, b) in bytes.iter().enumerate() {
            if i != 0 {
                out.write_char(':')?;
            }
            // `char` is unsigned in the kernel (`-funsigned-char`): always two digits.
            write!(out, "{b:02x}")?;
        }
        out.write_char(')')
    } else {
        // `bytes` holds exactly the loc length (none for a negative one).
        print_c_string(out, bytes, i64::try_from(bytes.len()).unwrap_or(0))
    }
}

/// `"%.*s"` with `precision`: bytes up to the first NUL, at most `precision` (clamped to
/// `0..=PRECISION_MAX`, so a negative one prints nothing).
fn print_c_string<S: TraceSeq + ?Sized>(out: &mut S, bytes: &[u8], precision: i64) -> fmt::Result {
    let limit = usize::try_from(precision.clamp(0, PRECISION_MAX)).unwrap_or(0);
    let text = bytes.iter().take(limit).take_while(|&&b| b != 0).count();
    out.put_bytes(bytes.get(..text).unwrap_or(&[]))
}

/// The kernel's `isprint()`: ASCII space to `~`, and Latin-1 `0xa0..=0xff` (`lib/ctype.c`).
fn is_print(b: u8) -> bool {
    matches!(b, 0x20..=0x7e | 0xa0..=0xff)
}

/// `isascii(c) && isprint(c)`.
fn is_ascii_print(b: u8) -> bool {
    matches!(b, 0x20..=0x7e)
}
