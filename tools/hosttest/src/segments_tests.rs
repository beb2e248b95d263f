// SPDX-License-Identifier: GPL-2.0

//! The segmented index table's layout (`src/logic/segments.rs`).

use crate::logic::segments::{locate, segment_len, BASE, SEGMENTS};

#[test]
fn first_segments_hold_base_then_doubling() {
    for i in 0..BASE {
        assert_eq!(locate(i), Some((0, i)));
    }
    assert_eq!(locate(BASE), Some((1, 0)));
    assert_eq!(locate(3 * BASE - 1), Some((1, 2 * BASE - 1)));
    assert_eq!(locate(3 * BASE), Some((2, 0)));
    assert_eq!(segment_len(0), BASE);
    assert_eq!(segment_len(2), 4 * BASE);
}

#[test]
fn every_index_has_exactly_one_slot_in_order() {
    // Walking the indexes in order visits each segment's slots in order, segment after segment.
    let (mut seg, mut off) = (0, 0);
    for i in 0..200_000 {
        assert_eq!(locate(i), Some((seg, off)), "index {i}");
        off += 1;
        if off == segment_len(seg) {
            seg += 1;
            off = 0;
        }
    }
}

#[test]
fn every_write_index_fits() {
    let last = i32::MAX as usize;
    let (s, off) = locate(last).expect("i32::MAX fits");
    assert!(s < SEGMENTS);
    assert!(off < segment_len(s));
}

#[test]
fn past_the_last_segment_is_none() {
    let end: usize = (0..SEGMENTS).map(segment_len).sum();
    assert_eq!(
        locate(end - 1),
        Some((SEGMENTS - 1, segment_len(SEGMENTS - 1) - 1))
    );
    assert_eq!(locate(end), None);
    assert_eq!(locate(usize::MAX), None);
}
