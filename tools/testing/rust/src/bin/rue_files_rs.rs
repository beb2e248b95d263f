// SPDX-License-Identifier: GPL-2.0

//! The tracefs files of rust_user_events, seen from a Rust program.

use rue_guest_tests::{ensure, expect_errno, run, Test};
use std::{
    ffi::c_void,
    fs::{self, File, OpenOptions},
    io::{IoSlice, Write},
    os::unix::fs::{FileTypeExt, PermissionsExt},
    os::unix::io::AsRawFd,
};

const TRACEFS: &str = "/sys/kernel/tracing";

extern "C" {
    fn ioctl(fd: i32, request: u64, ...) -> i32;
}

fn data_path() -> String {
    format!("{TRACEFS}/user_events_data")
}

fn open_data() -> Result<File, String> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(data_path())
        .map_err(|e| format!("open user_events_data: {e}"))
}

fn mode_of(name: &str, want: u32) -> Result<(), String> {
    let meta = fs::metadata(format!("{TRACEFS}/{name}")).map_err(|e| format!("{name}: {e}"))?;
    ensure(meta.file_type().is_file() && !meta.file_type().is_fifo(), format!("{name} is not a regular file"))?;
    let mode = meta.permissions().mode() & 0o7777;
    ensure(mode == want, format!("{name}: mode {mode:o}, want {want:o}"))
}

fn write_errno(bytes: &[u8], errno: i32) -> Result<(), String> {
    let mut f = open_data()?;
    match f.write(bytes) {
        Ok(n) => Err(format!("write of {bytes:?} returned {n}, want errno {errno}")),
        Err(e) if e.raw_os_error() == Some(errno) => Ok(()),
        Err(e) => Err(format!("write of {bytes:?}: {e}, want errno {errno}")),
    }
}

fn main() {
    run(&[
        Test { name: "data_file_is_regular_with_mode_0640", run: || mode_of("user_events_data", 0o640) },
        Test { name: "status_file_is_regular_with_mode_0440", run: || mode_of("user_events_status", 0o440) },
        Test {
            name: "status_of_empty_group_is_upstream_text",
            run: || {
                let text = fs::read_to_string(format!("{TRACEFS}/user_events_status")).map_err(|e| e.to_string())?;
                ensure(text == "\nActive: 0\nBusy: 0\n", format!("got {text:?}"))
            },
        },
        Test {
            name: "unknown_ioctl_gives_enotty",
            run: || {
                let f = open_data()?;
                for cmd in [0u64, 0x2a09, 0xc004_2a00] {
                    // SAFETY: An unknown request with a null argument reads no memory.
                    let ret = unsafe { ioctl(f.as_raw_fd(), cmd, std::ptr::null_mut::<c_void>()) };
                    expect_errno(&format!("ioctl {cmd:#x}"), ret as isize, 25 /* ENOTTY */)?;
                }
                Ok(())
            },
        },
        Test { name: "write_shorter_than_index_gives_efault", run: || write_errno(&[0, 0], 14) },
        Test { name: "write_negative_index_gives_einval", run: || write_errno(&(-1i32).to_ne_bytes(), 22) },
        Test { name: "write_unregistered_index_gives_enoent", run: || write_errno(&0i32.to_ne_bytes(), 2) },
        Test {
            name: "writev_reads_index_across_iovecs",
            run: || {
                let mut f = open_data()?;
                let neg = (-1i32).to_ne_bytes();
                let parts = [IoSlice::new(&neg[..1]), IoSlice::new(&neg[1..])];
                match f.write_vectored(&parts) {
                    Err(e) if e.raw_os_error() == Some(22) => Ok(()),
                    other => Err(format!("writev of split index -1: {other:?}, want EINVAL")),
                }
            },
        },
    ]);
}
