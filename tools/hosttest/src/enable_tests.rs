// SPDX-License-Identifier: GPL-2.0

//! Enable-word mapping and validation (spec §1.5, §1.6).

use crate::logic::enable::{check_enable, word_and_bit};

#[test]
fn aligned_word_is_used_directly() {
    assert_eq!(word_and_bit(0x1000, 0), (0x1000, 0));
    assert_eq!(word_and_bit(0x1000, 63), (0x1000, 63));
    assert_eq!(word_and_bit(0x1008, 31), (0x1008, 31));
}

#[test]
fn four_byte_word_off_eight_alignment_is_upper_half_of_long() {
    assert_eq!(word_and_bit(0x1004, 0), (0x1000, 32));
    assert_eq!(word_and_bit(0x1004, 31), (0x1000, 63));
}

#[test]
fn sizes_four_and_eight_only() {
    for size in [0u8, 1, 2, 3, 5, 6, 7, 9, 16, 128] {
        assert_eq!(check_enable(size, 0x1000, 0), Err(()), "size {size}");
    }
    assert_eq!(check_enable(4, 0x1000, 0), Ok(()));
    assert_eq!(check_enable(8, 0x1000, 0), Ok(()));
}

#[test]
fn address_must_be_naturally_aligned() {
    assert_eq!(check_enable(4, 0x1002, 0), Err(()));
    assert_eq!(check_enable(4, 0x1004, 0), Ok(()));
    assert_eq!(check_enable(8, 0x1004, 0), Err(()));
}

#[test]
fn bit_must_fit_the_word() {
    assert_eq!(check_enable(4, 0x1000, 31), Ok(()));
    assert_eq!(check_enable(4, 0x1000, 32), Err(()));
    assert_eq!(check_enable(8, 0x1000, 63), Ok(()));
    assert_eq!(check_enable(8, 0x1000, 64), Err(()));
}
