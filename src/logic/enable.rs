// SPDX-License-Identifier: GPL-2.0

//! Where an enable bit lives: upstream's `align_addr_bit()` for a 64-bit little-endian kernel,
//! which always updates an `unsigned long`.

/// `sizeof(unsigned long)` on the kernels this module supports.
pub(crate) const LONG_SIZE: u64 = 8;

/// The `unsigned long` word and bit number to update for a registered `addr`/`bit`.
///
/// A 4-byte enable word that is not 8-aligned sits in the upper half of the long below it.
pub(crate) fn word_and_bit(addr: u64, bit: u8) -> (u64, u32) {
    if addr % LONG_SIZE == 0 {
        (addr, u32::from(bit))
    } else {
        (addr - addr % LONG_SIZE, u32::from(bit) + 32)
    }
}

/// The `u32` holding the enable bit, and the bit's mask in it: the same bit as
/// [`word_and_bit`]'s, for a 32-bit atomic access (a little-endian long's bit `n` is bit `n % 32`
/// of its `n / 32`th `u32`).
///
/// The `u32` lies inside the long, so it is on the same page.
pub(crate) fn u32_and_mask(addr: u64, bit: u8) -> (u64, u32) {
    let (word, bit) = word_and_bit(addr, bit);
    (word + u64::from(bit / 32) * 4, 1 << (bit % 32))
}

/// Checks the enable fields of a `struct user_reg` in upstream's order (`user_reg_get()`: size 4
/// or 8, address aligned to it, bit within it); `Err(())` means `EINVAL`.
pub(crate) fn check_enable(enable_size: u8, enable_addr: u64, enable_bit: u8) -> Result<(), ()> {
    if enable_size != 4 && enable_size != 8 {
        return Err(());
    }
    if enable_addr % u64::from(enable_size) != 0 {
        return Err(());
    }
    if u32::from(enable_bit) > u32::from(enable_size) * 8 - 1 {
        return Err(());
    }
    Ok(())
}
