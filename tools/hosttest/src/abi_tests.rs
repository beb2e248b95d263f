// SPDX-License-Identifier: GPL-2.0

//! The UAPI numbers match upstream's x86_64 and 32-bit values (`include/uapi/linux/user_events.h`).

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

#[test]
fn structs_have_the_uapi_layout() {
    // `include/uapi/linux/user_events.h`, both `__attribute__((__packed__))`.
    assert_eq!(core::mem::size_of::<UserReg>(), 28);
    assert_eq!(core::mem::align_of::<UserReg>(), 1);
    assert_eq!(core::mem::size_of::<UserUnreg>(), 16);
    assert_eq!(core::mem::align_of::<UserUnreg>(), 1);
    assert_eq!(USER_REG_MIN_SIZE, 28);
    assert_eq!(USER_UNREG_MIN_SIZE, 16);
    assert_eq!(USER_REG_WRITE_INDEX_OFFSET, 24);
}

#[test]
fn struct_size_accepts_min_to_page() {
    for (size, min) in [(28, 28), (29, 28), (4096, 28), (16, 16), (4096, 16)] {
        assert_eq!(struct_size(size, min, 4096), Ok(size as usize), "{size} {min}");
    }
}

#[test]
fn struct_size_refuses_above_a_page_first() {
    // E2BIG is checked before the minimum, as upstream (no size is both, but the order stays).
    for size in [4097, 8192, u32::MAX] {
        assert_eq!(struct_size(size, 28, 4096), Err(SizeError::TooBig), "{size}");
    }
    assert_eq!(struct_size(4097, 5000, 4096), Err(SizeError::TooBig));
}

#[test]
fn struct_size_refuses_below_the_minimum() {
    for size in [0, 4, 27] {
        assert_eq!(struct_size(size, 28, 4096), Err(SizeError::TooSmall), "{size}");
    }
    assert_eq!(struct_size(15, 16, 4096), Err(SizeError::TooSmall));
}

fn reg(enable_size: u8, enable_addr: u64, enable_bit: u8, flags: u16) -> UserReg {
    UserReg {
        size: 28,
        enable_bit,
        enable_size,
        flags,
        enable_addr,
        name_args: 0x2000,
        write_index: 0,
    }
}

#[test]
fn reg_accepts_the_known_flags() {
    for flags in [0, 1, 2, 3] {
        assert_eq!(reg(4, 0x1000, 31, flags).check(), Ok(()), "{flags:#x}");
    }
    assert_eq!(reg(8, 0x1000, 63, 0).check(), Ok(()));
}

#[test]
fn reg_refuses_unknown_flags() {
    for flags in [4, 5, 0x8000, u16::MAX] {
        assert_eq!(reg(4, 0x1000, 0, flags).check(), Err(()), "{flags:#x}");
    }
}

#[test]
fn reg_refuses_a_bad_enable_word() {
    assert_eq!(reg(2, 0x1000, 0, 0).check(), Err(()));
    assert_eq!(reg(4, 0x1002, 0, 0).check(), Err(()));
    assert_eq!(reg(4, 0x1000, 32, 0).check(), Err(()));
    assert_eq!(reg(8, 0x1004, 0, 0).check(), Err(()));
    assert_eq!(reg(8, 0x1000, 64, 0).check(), Err(()));
}

#[test]
fn unreg_refuses_reserved_bytes() {
    let ok = UserUnreg {
        size: 16,
        disable_bit: 7,
        reserved: 0,
        reserved2: 0,
        disable_addr: 0x1000,
    };
    assert_eq!(ok.check(), Ok(()));
    for (reserved, reserved2) in [(1, 0), (0, 1), (0, 0x100), (0xff, 0xffff)] {
        let bad = UserUnreg {
            reserved,
            reserved2,
            ..ok
        };
        assert_eq!(bad.check(), Err(()), "{reserved:#x} {reserved2:#x}");
    }
}

#[test]
fn reg_reads_the_bytes_a_program_writes() {
    // A little-endian `struct user_reg` as a C program lays it out.
    let bytes: [u8; 28] = [
        28, 0, 0, 0, // size
        5, 8, 2, 0, // enable_bit, enable_size, flags
        0x08, 0x10, 0, 0, 0, 0, 0, 0, // enable_addr
        0x00, 0x20, 0, 0, 0, 0, 0, 0, // name_args
        0, 0, 0, 0, // write_index
    ];
    // SAFETY: `UserReg` is 28 bytes of integers, packed: any 28 bytes are a value.
    let r: UserReg = unsafe { core::mem::transmute(bytes) };
    let UserReg {
        size,
        enable_bit,
        enable_size,
        flags,
        enable_addr,
        name_args,
        write_index,
    } = r;
    assert_eq!(
        (size, enable_bit, enable_size, flags, enable_addr, name_args, write_index),
        (28, 5, 8, 2, 0x1008, 0x2000, 0)
    );
}
