// SPDX-License-Identifier: GPL-2.0

//! Enable-word mapping and validation (upstream's `user_reg_get()` checks and
//! `align_addr_bit()`).

use crate::logic::enable::{check_enable, u32_and_mask, word_and_bit};

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
fn u32_access_of_a_four_byte_word_is_the_word_itself() {
    assert_eq!(u32_and_mask(0x1000, 0), (0x1000, 1));
    assert_eq!(u32_and_mask(0x1000, 31), (0x1000, 1 << 31));
    assert_eq!(u32_and_mask(0x1004, 0), (0x1004, 1));
    assert_eq!(u32_and_mask(0x1004, 31), (0x1004, 1 << 31));
}

#[test]
fn u32_access_of_an_eight_byte_word_takes_the_half_holding_the_bit() {
    assert_eq!(u32_and_mask(0x1008, 5), (0x1008, 1 << 5));
    assert_eq!(u32_and_mask(0x1008, 32), (0x100c, 1));
    assert_eq!(u32_and_mask(0x1008, 63), (0x100c, 1 << 31));
}

#[test]
fn u32_access_stays_inside_the_long_for_every_legal_bit() {
    for addr in [0x1ff8u64, 0x1ffc] {
        let size = if addr % 8 == 0 { 8 } else { 4 };
        for bit in 0..size * 8 {
            let (long, long_bit) = word_and_bit(addr, bit);
            let (word, mask) = u32_and_mask(addr, bit);
            assert!(word >= long && word + 4 <= long + 8, "{addr:#x} bit {bit}");
            // The same bit of the same little-endian long.
            assert_eq!((word - long) * 8 + u64::from(mask.trailing_zeros()), u64::from(long_bit));
        }
    }
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
