// SPDX-License-Identifier: GPL-2.0

//! The user_events UAPI (`include/uapi/linux/user_events.h`): ioctl numbers, the `user_reg` and
//! `user_unreg` structs and their checks, flags and limits.
//!
//! The ioctl numbers encode `sizeof(pointer)`, not the struct size, exactly as upstream
//! (`_IOWR('*', 0, struct user_reg *)`), so they are computed here with the generic `_IOC`
//! encoding rather than taken from a struct. A 32-bit program's numbers therefore differ from a
//! 64-bit program's (size 4, not 8): the `_COMPAT` ones, which only `compat_ioctl` accepts.

use core::mem::{offset_of, size_of};

/// `USER_EVENT_REG_PERSIST`.
pub(crate) const REG_PERSIST: u16 = 1 << 0;
/// `USER_EVENT_REG_MULTI_FORMAT`.
pub(crate) const REG_MULTI_FORMAT: u16 = 1 << 1;

/// The size of a record's `struct trace_entry` header, which every payload follows.
pub(crate) const TRACE_ENTRY_SIZE: usize = 8;

/// `DIAG_IOC_MAGIC`.
pub(crate) const DIAG_IOC_MAGIC: u32 = b'*' as u32;

const IOC_NRBITS: u32 = 8;
const IOC_TYPEBITS: u32 = 8;
const IOC_SIZEBITS: u32 = 14;
const IOC_NRSHIFT: u32 = 0;
const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// The generic `_IOC(dir, type, nr, size)` encoding.
const fn ioc(dir: u32, ty: u32, nr: u32, size: usize) -> u32 {
    // CAST: `size` is the size of a pointer (4 or 8), far below the 14-bit field.
    (dir << IOC_DIRSHIFT)
        | (ty << IOC_TYPESHIFT)
        | (nr << IOC_NRSHIFT)
        | ((size as u32) << IOC_SIZESHIFT)
}

/// `sizeof(void *)` on the target: what upstream's ioctl numbers encode.
const PTR_SIZE: usize = core::mem::size_of::<usize>();

/// `DIAG_IOCSREG`: `_IOWR('*', 0, struct user_reg *)`.
pub(crate) const DIAG_IOCSREG: u32 = ioc(IOC_READ | IOC_WRITE, DIAG_IOC_MAGIC, 0, PTR_SIZE);
/// `DIAG_IOCSDEL`: `_IOW('*', 1, char *)`.
pub(crate) const DIAG_IOCSDEL: u32 = ioc(IOC_WRITE, DIAG_IOC_MAGIC, 1, PTR_SIZE);
/// `DIAG_IOCSUNREG`: `_IOW('*', 2, struct user_unreg *)`.
pub(crate) const DIAG_IOCSUNREG: u32 = ioc(IOC_WRITE, DIAG_IOC_MAGIC, 2, PTR_SIZE);

/// `sizeof(void *)` in a 32-bit program (`compat_uptr_t`).
const COMPAT_PTR_SIZE: usize = 4;

/// `DIAG_IOCSREG` as a 32-bit program computes it.
pub(crate) const DIAG_IOCSREG_COMPAT: u32 =
    ioc(IOC_READ | IOC_WRITE, DIAG_IOC_MAGIC, 0, COMPAT_PTR_SIZE);
/// `DIAG_IOCSDEL` as a 32-bit program computes it.
pub(crate) const DIAG_IOCSDEL_COMPAT: u32 = ioc(IOC_WRITE, DIAG_IOC_MAGIC, 1, COMPAT_PTR_SIZE);
/// `DIAG_IOCSUNREG` as a 32-bit program computes it.
pub(crate) const DIAG_IOCSUNREG_COMPAT: u32 = ioc(IOC_WRITE, DIAG_IOC_MAGIC, 2, COMPAT_PTR_SIZE);

/// The commands `user_events_data` understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// `DIAG_IOCSREG`: register an event and an enable bit.
    Reg,
    /// `DIAG_IOCSDEL`: delete an event by name.
    Del,
    /// `DIAG_IOCSUNREG`: unregister an enable bit.
    Unreg,
}

impl Command {
    /// Decodes an ioctl number; `None` for anything else (upstream answers `ENOTTY`).
    pub(crate) fn from_ioctl(cmd: u32) -> Option<Self> {
        match cmd {
            DIAG_IOCSREG => Some(Self::Reg),
            DIAG_IOCSDEL => Some(Self::Del),
            DIAG_IOCSUNREG => Some(Self::Unreg),
            _ => None,
        }
    }

    /// Decodes the ioctl number of a 32-bit program (`compat_ioctl`); `None` for anything else,
    /// the 64-bit numbers included, as a 32-bit kernel would answer them.
    ///
    /// The structs need no translation: `struct user_reg` and `struct user_unreg` are packed
    /// with fixed-width fields (the addresses are `__u64`), so they read the same from both.
    pub(crate) fn from_compat_ioctl(cmd: u32) -> Option<Self> {
        match cmd {
            DIAG_IOCSREG_COMPAT => Some(Self::Reg),
            DIAG_IOCSDEL_COMPAT => Some(Self::Del),
            DIAG_IOCSUNREG_COMPAT => Some(Self::Unreg),
            _ => None,
        }
    }
}

/// `struct user_reg`: the argument of `DIAG_IOCSREG`.
///
/// Packed with fixed-width fields, so a 32-bit and a 64-bit program pass the same bytes. Later
/// versions may append fields: [`struct_size`] and the kernel's `copy_struct_from_user()`
/// accept a caller's larger struct if its tail is zero, and a smaller one down to
/// [`USER_REG_MIN_SIZE`].
#[repr(C, packed)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct UserReg {
    /// Size of the caller's struct, in bytes.
    pub(crate) size: u32,
    /// Bit to set in the enable word while the event is enabled.
    pub(crate) enable_bit: u8,
    /// Size of the enable word: 4 or 8.
    pub(crate) enable_size: u8,
    /// `USER_EVENT_REG_*` flags.
    pub(crate) flags: u16,
    /// Address of the enable word.
    pub(crate) enable_addr: u64,
    /// Address of the NUL-terminated `name [fields]` string.
    pub(crate) name_args: u64,
    /// Out: the write index of the event for this file.
    pub(crate) write_index: u32,
}

/// `struct user_unreg`: the argument of `DIAG_IOCSUNREG`, size-extensible as [`UserReg`].
#[repr(C, packed)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct UserUnreg {
    /// Size of the caller's struct, in bytes.
    pub(crate) size: u32,
    /// Bit the enabler was registered with.
    pub(crate) disable_bit: u8,
    /// `__reserved`: must be zero.
    pub(crate) reserved: u8,
    /// `__reserved2`: must be zero.
    pub(crate) reserved2: u16,
    /// Address the enabler was registered with.
    pub(crate) disable_addr: u64,
}

/// `offsetofend(struct user_reg, write_index)`: the smallest `struct user_reg` accepted.
pub(crate) const USER_REG_MIN_SIZE: usize = offset_of!(UserReg, write_index) + size_of::<u32>();
/// `offsetofend(struct user_unreg, disable_addr)`: the smallest `struct user_unreg` accepted.
pub(crate) const USER_UNREG_MIN_SIZE: usize =
    offset_of!(UserUnreg, disable_addr) + size_of::<u64>();
/// Where `DIAG_IOCSREG` writes the write index back in the caller's struct.
pub(crate) const USER_REG_WRITE_INDEX_OFFSET: usize = offset_of!(UserReg, write_index);

// The layout of `include/uapi/linux/user_events.h`.
const _: () = {
    assert!(size_of::<UserReg>() == 28);
    assert!(offset_of!(UserReg, size) == 0);
    assert!(offset_of!(UserReg, enable_bit) == 4);
    assert!(offset_of!(UserReg, enable_size) == 5);
    assert!(offset_of!(UserReg, flags) == 6);
    assert!(offset_of!(UserReg, enable_addr) == 8);
    assert!(offset_of!(UserReg, name_args) == 16);
    assert!(offset_of!(UserReg, write_index) == 24);
    assert!(USER_REG_MIN_SIZE == 28);
    assert!(size_of::<UserUnreg>() == 16);
    assert!(offset_of!(UserUnreg, size) == 0);
    assert!(offset_of!(UserUnreg, disable_bit) == 4);
    assert!(offset_of!(UserUnreg, reserved) == 5);
    assert!(offset_of!(UserUnreg, reserved2) == 6);
    assert!(offset_of!(UserUnreg, disable_addr) == 8);
    assert!(USER_UNREG_MIN_SIZE == 16);
};

/// `USER_EVENT_REG_MAX`: one past the last flag (`USER_EVENT_REG_PERSIST` and
/// `USER_EVENT_REG_MULTI_FORMAT`, which `event.rs` interprets).
pub(crate) const USER_EVENT_REG_MAX: u16 = 1 << 2;

/// Why the leading `size` of a user struct is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SizeError {
    /// Larger than a page (`E2BIG`).
    TooBig,
    /// Smaller than the struct's minimum (`EINVAL`).
    TooSmall,
}

/// Checks the `size` a caller put at the start of a UAPI struct, as upstream's `user_reg_get`
/// and `user_unreg_get` do before `copy_struct_from_user()`: at most a page, at least `min`.
pub(crate) fn struct_size(size: u32, min: usize, page_size: usize) -> Result<usize, SizeError> {
    // CAST: `u32` fits `usize` on every target of the module (32 and 64 bits).
    let size = size as usize;
    if size > page_size {
        return Err(SizeError::TooBig);
    }
    if size < min {
        return Err(SizeError::TooSmall);
    }
    Ok(size)
}

impl UserReg {
    /// Upstream `user_reg_get`'s checks after the copy, in its order: only known flags, then
    /// the enable word's size, alignment and bit (`EINVAL`). The address range (`access_ok`,
    /// `EFAULT`) is the caller's to check, last.
    pub(crate) fn check(&self) -> Result<(), ()> {
        if self.flags & !(USER_EVENT_REG_MAX - 1) != 0 {
            return Err(());
        }
        super::enable::check_enable(self.enable_size, self.enable_addr, self.enable_bit)
    }
}

impl UserUnreg {
    /// Upstream `user_unreg_get`: the reserved fields must be zero (`EINVAL`).
    pub(crate) fn check(&self) -> Result<(), ()> {
        if self.reserved != 0 || self.reserved2 != 0 {
            return Err(());
        }
        Ok(())
    }
}

/// Size of the 4-byte write index that prefixes every `write()`/`writev()` payload.
pub(crate) const WRITE_INDEX_SIZE: usize = 4;

/// `USER_EVENTS_SYSTEM`: the trace system of single-format events.
pub(crate) const USER_EVENTS_SYSTEM: &str = "user_events";
/// `USER_EVENTS_MULTI_SYSTEM`: the trace system of multi-format events.
pub(crate) const USER_EVENTS_MULTI_SYSTEM: &str = "user_events_multi";

/// Mode of `user_events_data` (`TRACE_MODE_WRITE`).
pub(crate) const DATA_FILE_MODE: u16 = 0o640;
/// Mode of `user_events_status` (`TRACE_MODE_READ`).
pub(crate) const STATUS_FILE_MODE: u16 = 0o440;
/// Mode of `user_events_stats`, this module's counters (`TRACE_MODE_READ`, as the status).
pub(crate) const STATS_FILE_MODE: u16 = 0o440;
/// Mode of `user_events_data` when the `group` parameter names a group: its members may
/// register and write, as root may.
pub(crate) const DATA_FILE_GROUP_MODE: u16 = 0o660;

/// The `group` module parameter's value when unset: the files stay root's, as upstream.
pub(crate) const GROUP_UNSET: i64 = -1;

/// A `group` module parameter that is neither unset nor a gid.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct InvalidGroup;

/// The gid the `group` module parameter asks for, `None` when it is unset.
///
/// A gid is `0..=0xffff_fffe`; `0xffff_ffff` is `(gid_t)-1`, which means "no change" to
/// `chown(2)` and is never a group.
pub(crate) fn group_param(value: i64) -> Result<Option<u32>, InvalidGroup> {
    if value == GROUP_UNSET {
        return Ok(None);
    }
    match u32::try_from(value) {
        Ok(gid) if gid != u32::MAX => Ok(Some(gid)),
        _ => Err(InvalidGroup),
    }
}
