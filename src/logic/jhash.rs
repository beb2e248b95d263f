// SPDX-License-Identifier: GPL-2.0

//! `jhash()` (include/linux/jhash.h, Bob Jenkins' lookup3) and the bucket upstream's
//! `register_table` (`DECLARE_HASHTABLE(register_table, 8)`) puts an event name in. The
//! status file lists events in that bucket order (quirk Q11, kept).

const JHASH_INITVAL: u32 = 0xdead_beef;

fn rot(x: u32, k: u32) -> u32 {
    x.rotate_left(k)
}

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= rot(*c, 4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= rot(*a, 6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= rot(*b, 8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= rot(*c, 16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= rot(*a, 19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= rot(*b, 4);
    *b = b.wrapping_add(*a);
}

fn final_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(rot(*b, 14));
    *a ^= *c;
    *a = a.wrapping_sub(rot(*c, 11));
    *b ^= *a;
    *b = b.wrapping_sub(rot(*a, 25));
    *c ^= *b;
    *c = c.wrapping_sub(rot(*b, 16));
    *a ^= *c;
    *a = a.wrapping_sub(rot(*c, 4));
    *b ^= *a;
    *b = b.wrapping_sub(rot(*a, 14));
    *c ^= *b;
    *c = c.wrapping_sub(rot(*b, 24));
}

fn word(bytes: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    for (d, s) in w.iter_mut().zip(bytes) {
        *d = *s;
    }
    u32::from_le_bytes(w)
}

/// `jhash(key, length, initval)` on a little-endian machine.
pub(crate) fn jhash(key: &[u8], initval: u32) -> u32 {
    // CAST: Event names are at most 511 bytes; upstream passes `strlen` as `u32` too.
    let len = key.len() as u32;
    let mut a = JHASH_INITVAL.wrapping_add(len).wrapping_add(initval);
    let mut b = a;
    let mut c = a;
    let mut rest = key;
    while rest.len() > 12 {
        a = a.wrapping_add(word(&rest[..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    // The last 1..=12 bytes, zero-padded (the switch of fall-throughs in jhash.h).
    a = a.wrapping_add(word(rest.get(..4).unwrap_or(rest)));
    b = b.wrapping_add(word(
        rest.get(4..)
            .map(|r| r.get(..4).unwrap_or(r))
            .unwrap_or(&[]),
    ));
    c = c.wrapping_add(word(rest.get(8..).unwrap_or(&[])));
    final_mix(&mut a, &mut b, &mut c);
    c
}

/// The `register_table` key of an event name: `jhash(name, strlen(name), 0)`.
pub(crate) fn key(name: &[u8]) -> u32 {
    jhash(name, 0)
}

/// The `register_table` bucket of a [`key`]: `hash_min(key, 8)`.
pub(crate) fn bucket_of(key: u32) -> u8 {
    const GOLDEN_RATIO_32: u32 = 0x61C8_8647;
    // CAST: `hash_32(val, 8)` keeps the top 8 bits.
    (key.wrapping_mul(GOLDEN_RATIO_32) >> 24) as u8
}
