// SPDX-License-Identifier: GPL-2.0

//! Checks a written record against an event's `__data_loc`/`__rel_loc` validators, as upstream's
//! `user_event_validate()` (`kernel/trace/trace_events_user.c`; quirk Q14 in
//! Documentation/deviations.md).
//!
//! A loc word is a native-endian `u32`: low 16 bits offset, high 16 bits size (`DYN_LOC`).
//! `__data_loc` offsets count from the start of the record, i.e. they include the 8-byte
//! `trace_entry` header; `__rel_loc` offsets count from the end of the loc word. The data must
//! end within the record and, for `char` types, its last byte must be NUL. There is no lower
//! bound: data may overlap the header or the static fields.

use super::grammar::Validator;

/// A record that fails validation (upstream: `-EFAULT`, and the record is discarded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fault;

/// Size of a `__data_loc`/`__rel_loc` word.
const LOC_SIZE: u64 = 4;

/// Runs `validators` (declaration order) over `record`, the whole record including the 8-byte
/// header, exactly `sizeof(struct trace_entry) + payload` bytes long.
///
/// Upstream has no bounds check on the loc word itself because the caller already enforced
/// `min_size`; here a loc word outside the record is a [`Fault`] rather than a wild read.
pub(crate) fn validate(
    record: &[u8],
    validators: impl Iterator<Item = Validator>,
) -> Result<(), Fault> {
    // CAST: `usize` is at most 64 bits on every Linux target.
    let end = record.len() as u64;
    for v in validators {
        let loc_at = u64::from(v.offset);
        let loc = read_u32(record, loc_at).ok_or(Fault)?;
        let offset = u64::from(loc & 0xffff);
        let size = u64::from(loc >> 16);
        let start = if v.rel {
            loc_at.saturating_add(LOC_SIZE).saturating_add(offset)
        } else {
            offset
        };
        // Saturation never happens: every term is below 2^33.
        let pos = start.saturating_add(size);
        if pos > end {
            return Err(Fault);
        }
        if v.ensure_null {
            // Deviation: a `__data_loc` of offset 0 and size 0 makes upstream test the byte
            // *before* the record (`*(char *)(pos - 1)`, an out-of-bounds read). We treat it as a
            // missing NUL. A `__rel_loc` string always starts past its loc word, so only
            // `__data_loc` can get here.
            let last = pos.checked_sub(1).ok_or(Fault)?;
            let last = usize::try_from(last).map_err(|_| Fault)?;
            if record.get(last) != Some(&0) {
                return Err(Fault);
            }
        }
    }
    Ok(())
}

/// The native-endian `u32` at `at` in `record`, if it lies entirely inside.
fn read_u32(record: &[u8], at: u64) -> Option<u32> {
    let at = usize::try_from(at).ok()?;
    let bytes = record.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes(bytes.try_into().ok()?))
}
