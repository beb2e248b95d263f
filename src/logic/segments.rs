// SPDX-License-Identifier: GPL-2.0

//! Where a file's write index lives in its segmented index table (`crate::file_info`).
//!
//! Segment `s` holds `BASE << s` entries and starts at index `BASE * (2^s - 1)`: each segment
//! doubles the table, so a table of `n` entries has `O(log n)` segments, none is ever moved or
//! copied when the table grows, and a lookup is two loads with no lock.

/// Entries in segment 0.
pub(crate) const BASE: usize = 4;

/// Segments a table can have: enough for every non-negative `i32` write index.
pub(crate) const SEGMENTS: usize = 30;

/// Entries in segment `s`.
pub(crate) const fn segment_len(s: usize) -> usize {
    BASE << s
}

/// The segment and the offset in it of write index `index`; `None` past the last segment.
pub(crate) fn locate(index: usize) -> Option<(usize, usize)> {
    // Segment `s` covers `q = index / BASE + 1` in `[2^s, 2^(s+1))`.
    let q = (index / BASE).checked_add(1)?;
    let s = (usize::BITS - 1 - q.leading_zeros()) as usize;
    if s >= SEGMENTS {
        return None;
    }
    Some((s, index - BASE * ((1 << s) - 1)))
}
