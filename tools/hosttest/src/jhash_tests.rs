// SPDX-License-Identifier: GPL-2.0

//! `jhash` is lookup3's `hashlittle`: its published test vectors.

use crate::logic::jhash::{bucket_of, jhash, key};

#[test]
fn empty_key_hashes_to_initval_constant() {
    assert_eq!(jhash(b"", 0), 0xdead_beef);
}

#[test]
fn lookup3_reference_vectors() {
    assert_eq!(jhash(b"Four score and seven years ago", 0), 0x1777_0551);
    assert_eq!(jhash(b"Four score and seven years ago", 1), 0xcd62_8161);
}

#[test]
fn every_tail_length_is_stable_and_distinct() {
    let key = b"abcdefghijklmnopqrstuvwxyz";
    let mut seen = std::vec::Vec::new();
    for n in 0..=key.len() {
        let h = jhash(&key[..n], 0);
        assert!(!seen.contains(&h), "collision at length {n}");
        seen.push(h);
    }
}

#[test]
fn bucket_is_top_byte_of_golden_ratio_product() {
    let h = jhash(b"__test_event", 0);
    assert_eq!(key(b"__test_event"), h);
    assert_eq!(
        bucket_of(key(b"__test_event")),
        (h.wrapping_mul(0x61C8_8647) >> 24) as u8
    );
}
