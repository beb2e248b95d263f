// SPDX-License-Identifier: GPL-2.0

//! The UAPI numbers match upstream's x86_64 and 32-bit values (spec §1.4).

use crate::logic::abi::*;

#[test]
fn ioctl_numbers_match_upstream_x86_64() {
    assert_eq!(DIAG_IOCSREG, 0xC008_2A00);
    assert_eq!(DIAG_IOCSDEL, 0x4008_2A01);
    assert_eq!(DIAG_IOCSUNREG, 0x4008_2A02);
}

#[test]
fn known_commands_decode() {
    assert_eq!(Command::from_ioctl(0xC008_2A00), Some(Command::Reg));
    assert_eq!(Command::from_ioctl(0x4008_2A01), Some(Command::Del));
    assert_eq!(Command::from_ioctl(0x4008_2A02), Some(Command::Unreg));
}

#[test]
fn other_commands_are_unknown() {
    // Same number with the 32-bit pointer size, a neighbour, and zero.
    for cmd in [0xC004_2A00, 0xC008_2A03, 0x4008_2B01, 0] {
        assert_eq!(Command::from_ioctl(cmd), None, "{cmd:#x}");
    }
}

#[test]
fn compat_ioctl_numbers_match_upstream_32_bit() {
    assert_eq!(DIAG_IOCSREG_COMPAT, 0xC004_2A00);
    assert_eq!(DIAG_IOCSDEL_COMPAT, 0x4004_2A01);
    assert_eq!(DIAG_IOCSUNREG_COMPAT, 0x4004_2A02);
}

#[test]
fn compat_commands_decode_only_the_32_bit_numbers() {
    assert_eq!(Command::from_compat_ioctl(0xC004_2A00), Some(Command::Reg));
    assert_eq!(Command::from_compat_ioctl(0x4004_2A01), Some(Command::Del));
    assert_eq!(Command::from_compat_ioctl(0x4004_2A02), Some(Command::Unreg));
    // The 64-bit numbers, a neighbour, and zero.
    for cmd in [0xC008_2A00, 0x4008_2A01, 0x4008_2A02, 0xC004_2A03, 0] {
        assert_eq!(Command::from_compat_ioctl(cmd), None, "{cmd:#x}");
    }
}

#[test]
fn file_modes_match_trace_mode_constants() {
    assert_eq!(DATA_FILE_MODE, 0o640);
    assert_eq!(STATUS_FILE_MODE, 0o440);
}

#[test]
fn group_mode_adds_group_write_to_the_data_file_only() {
    assert_eq!(DATA_FILE_GROUP_MODE, 0o660);
    assert_eq!(DATA_FILE_GROUP_MODE & !0o020, DATA_FILE_MODE);
    // The status and stats files already give their group read.
    assert_eq!(STATUS_FILE_MODE & 0o040, 0o040);
    assert_eq!(STATS_FILE_MODE & 0o040, 0o040);
}

#[test]
fn unset_group_param_keeps_root_only_files() {
    assert_eq!(group_param(-1), Ok(None));
}

#[test]
fn group_param_accepts_every_gid() {
    for gid in [0, 1, 4242, 65534, 0xffff_fffe] {
        assert_eq!(group_param(gid), Ok(Some(gid as u32)), "{gid}");
    }
}

#[test]
fn group_param_rejects_what_is_no_gid() {
    // (gid_t)-1, beyond 32 bits, and negatives other than the unset -1.
    for value in [0xffff_ffff, 0x1_0000_0000, -2, i64::MIN, i64::MAX] {
        assert_eq!(group_param(value), Err(InvalidGroup), "{value}");
    }
}
