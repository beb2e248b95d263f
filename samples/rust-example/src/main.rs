// SPDX-License-Identifier: GPL-2.0

//! An instrumented Rust program using the `user_events` ABI directly, with `std` only.
//!
//! It registers the user event
//!
//! ```text
//! rue_example_rs u32 count; char[16] msg
//! ```
//!
//! through `/sys/kernel/tracing/user_events_data`, then tries to emit it `COUNT` times. The
//! kernel sets bit 31 of the 4-byte word [`ENABLED`] while any tracer (ftrace, perf, ...) has
//! the event enabled; each iteration checks that bit with one relaxed load and calls `writev()`
//! only when it is set.
//!
//! Usage: `rue_example_rs [COUNT [WAIT_SECONDS]]`. `COUNT` defaults to 5. With `WAIT_SECONDS`,
//! the program waits that long after registering for a tracer to enable the event before it
//! loops: the event exists only while a program has it registered, so this is how a script gets
//! to enable it (`echo 1 > /sys/kernel/tracing/events/user_events/rue_example_rs/enable`).
//!
//! It prints how many events it wrote and how many it skipped because nobody listened, and
//! exits 0 on success, 1 on a system-call failure, 2 on bad usage. This is the C sample
//! `samples/example.c` in Rust; real programs would rather use the `tracepoint` crate.

use std::{
    ffi::{c_int, c_ulong, CStr},
    fs::{File, OpenOptions},
    io::{self, IoSlice, Write},
    mem::size_of,
    os::unix::io::AsRawFd,
    process::ExitCode,
    sync::atomic::{AtomicU32, Ordering},
    thread,
    time::{Duration, Instant},
};

/// The tracefs file through which events are registered and written.
const DATA_FILE: &str = "/sys/kernel/tracing/user_events_data";

/// The event's name, as it appears under `events/user_events/`.
const EVENT: &str = "rue_example_rs";

/// The registration command: the event's name and fields.
const COMMAND: &CStr = c"rue_example_rs u32 count; char[16] msg";

/// The bit of [`ENABLED`] the kernel keeps set while the event is enabled.
const ENABLE_BIT: u8 = 31;

/// The message carried in the `msg` field (at most 15 bytes, NUL-padded to 16).
const MESSAGE: &[u8] = b"hello from rust";

/// Size of the payload: `u32 count` then `char[16] msg`.
const PAYLOAD_SIZE: usize = 4 + 16;

/// The enable word. The kernel sets and clears [`ENABLE_BIT`] in it with atomic bit operations
/// from another context while the event is registered, so it is only ever read atomically.
/// A `static` keeps its address valid for the whole life of the process.
static ENABLED: AtomicU32 = AtomicU32::new(0);

/// `struct user_reg` of `<linux/user_events.h>` (packed, 28 bytes).
#[repr(C, packed)]
struct UserReg {
    /// Input: size of this struct.
    size: u32,
    /// Input: bit in the enable word to use.
    enable_bit: u8,
    /// Input: size of the enable word in bytes (4 or 8).
    enable_size: u8,
    /// Input: `enum user_reg_flag` bits (none here).
    flags: u16,
    /// Input: address of the enable word.
    enable_addr: u64,
    /// Input: address of the NUL-terminated registration command.
    name_args: u64,
    /// Output: the index to put first in every write of this event.
    write_index: u32,
}

/// `struct user_unreg` of `<linux/user_events.h>` (packed, 16 bytes).
#[repr(C, packed)]
struct UserUnreg {
    /// Input: size of this struct.
    size: u32,
    /// Input: the bit given at registration.
    disable_bit: u8,
    /// Must be 0.
    reserved: u8,
    /// Must be 0.
    reserved2: u16,
    /// Input: the enable address given at registration.
    disable_addr: u64,
}

const _: () = assert!(size_of::<UserReg>() == 28 && size_of::<UserUnreg>() == 16);

/// `_IOC(dir, '*', nr, sizeof(void *))`: the user_events ioctls encode the size of a pointer,
/// not of the struct.
const fn diag_ioc(dir: c_ulong, nr: c_ulong) -> c_ulong {
    (dir << 30) | ((size_of::<*const u8>() as c_ulong) << 16) | ((b'*' as c_ulong) << 8) | nr
}

/// `DIAG_IOCSREG`: `_IOWR('*', 0, struct user_reg *)`.
const DIAG_IOCSREG: c_ulong = diag_ioc(3, 0);

/// `DIAG_IOCSUNREG`: `_IOW('*', 2, struct user_unreg *)`.
const DIAG_IOCSUNREG: c_ulong = diag_ioc(1, 2);

unsafe extern "C" {
    /// libc's `ioctl(2)` wrapper.
    fn ioctl(fd: c_int, request: c_ulong, ...) -> c_int;
}

/// True while some tracer has the event enabled: one relaxed load.
#[inline]
fn event_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed) & (1 << ENABLE_BIT) != 0
}

/// Registers [`COMMAND`] with [`ENABLED`]'s bit [`ENABLE_BIT`]; returns the write index.
fn register(file: &File) -> io::Result<u32> {
    let mut reg = UserReg {
        size: size_of::<UserReg>() as u32,
        enable_bit: ENABLE_BIT,
        enable_size: size_of::<AtomicU32>() as u8,
        flags: 0,
        enable_addr: ENABLED.as_ptr() as u64,
        name_args: COMMAND.as_ptr() as u64,
        write_index: 0,
    };
    // SAFETY: `reg` is a valid `struct user_reg` that the kernel reads and writes
    // (`write_index`) only during the call. `name_args` points to a NUL-terminated string in
    // static memory. `enable_addr` is a 4-byte aligned atomic in static memory that the kernel
    // may update at any time until `unregister` or exit; it is only accessed atomically here.
    let ret = unsafe { ioctl(file.as_raw_fd(), DIAG_IOCSREG, &raw mut reg) };
    if ret == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(reg.write_index)
}

/// Stops the kernel from updating [`ENABLED`] for this event.
fn unregister(file: &File) -> io::Result<()> {
    let mut unreg = UserUnreg {
        size: size_of::<UserUnreg>() as u32,
        disable_bit: ENABLE_BIT,
        reserved: 0,
        reserved2: 0,
        disable_addr: ENABLED.as_ptr() as u64,
    };
    // SAFETY: `unreg` is a valid `struct user_unreg` that the kernel only reads, during the call.
    let ret = unsafe { ioctl(file.as_raw_fd(), DIAG_IOCSUNREG, &raw mut unreg) };
    if ret == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The symbolic name of an errno value, e.g. `ENOENT`.
fn errno_name(errno: i32) -> &'static str {
    match errno {
        1 => "EPERM",
        2 => "ENOENT",
        4 => "EINTR",
        7 => "E2BIG",
        9 => "EBADF",
        12 => "ENOMEM",
        13 => "EACCES",
        14 => "EFAULT",
        16 => "EBUSY",
        17 => "EEXIST",
        19 => "ENODEV",
        22 => "EINVAL",
        24 => "EMFILE",
        25 => "ENOTTY",
        28 => "ENOSPC",
        30 => "EROFS",
        95 => "EOPNOTSUPP",
        98 => "EADDRINUSE",
        _ => "errno",
    }
}

/// Reports a failed call with errno's name and text, and `hint` if there is one.
fn fail(what: &str, err: &io::Error, hint: Option<&str>) {
    let errno = err.raw_os_error().unwrap_or(0);
    eprintln!("{EVENT}: {what}: {}: {err}", errno_name(errno));
    if let Some(hint) = hint {
        eprintln!("{EVENT}: {hint}");
    }
}

/// Parses a non-negative decimal argument no larger than `max`.
fn parse_arg(arg: &str, what: &str, max: u64) -> Result<u64, String> {
    match arg.parse::<u64>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(format!("bad {what} '{arg}' (0..{max})")),
    }
}

/// Waits up to `seconds` for a tracer to enable the event; returns whether one did.
fn wait_for_tracer(seconds: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < deadline {
        if event_enabled() {
            return true;
        }
        thread::sleep(Duration::from_millis(10));
    }
    event_enabled()
}

/// The payload for iteration `count`, laid out as the event's fields.
fn payload(count: u32) -> [u8; PAYLOAD_SIZE] {
    let mut p = [0u8; PAYLOAD_SIZE];
    p[..4].copy_from_slice(&count.to_ne_bytes());
    p[4..4 + MESSAGE.len()].copy_from_slice(MESSAGE);
    p
}

fn main() -> ExitCode {
    const USAGE: &str = "usage: rue_example_rs [COUNT [WAIT_SECONDS]]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [] => Ok((5, 0)),
        [count] => parse_arg(count, "COUNT", 1_000_000_000).map(|c| (c, 0)),
        [count, wait] => parse_arg(count, "COUNT", 1_000_000_000)
            .and_then(|c| Ok((c, parse_arg(wait, "WAIT_SECONDS", 3600)?))),
        _ => Err("too many arguments".into()),
    };
    let (count, wait) = match parsed {
        Ok(v) => v,
        Err(why) => {
            eprintln!("{EVENT}: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };

    let file = match OpenOptions::new().write(true).open(DATA_FILE) {
        Ok(f) => f,
        Err(e) => {
            let hint = match e.raw_os_error() {
                Some(2) => Some(
                    "user_events is not available: load rust_user_events.ko (or boot a kernel \
                     with CONFIG_USER_EVENTS=y) and mount tracefs on /sys/kernel/tracing",
                ),
                Some(13) => Some("writing user_events_data needs root or the file's group"),
                _ => None,
            };
            fail(&format!("open {DATA_FILE}"), &e, hint);
            return ExitCode::FAILURE;
        }
    };
    let write_index = match register(&file) {
        Ok(i) => i,
        Err(e) => {
            let hint = match e.raw_os_error() {
                Some(98) => Some("an event named rue_example_rs with other fields exists"),
                Some(25) => Some("user_events_data does not implement registration"),
                _ => None,
            };
            let what = format!("ioctl DIAG_IOCSREG \"{}\"", COMMAND.to_string_lossy());
            fail(&what, &e, hint);
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{EVENT}: registered \"{}\" (write index {write_index}, enable bit {ENABLE_BIT})",
        COMMAND.to_string_lossy()
    );

    if wait > 0 {
        println!("{EVENT}: waiting up to {wait} s for a tracer to enable user_events/{EVENT}");
        let _ = io::stdout().flush();
        if !wait_for_tracer(wait) {
            println!("{EVENT}: nobody enabled the event within {wait} s");
        }
    }

    // Every write starts with the 4-byte write index; the payload follows.
    let index = write_index.to_ne_bytes();
    let (mut written, mut skipped) = (0u64, 0u64);
    let mut ok = true;
    for i in 0..count {
        if !event_enabled() {
            skipped += 1;
            continue;
        }
        let data = payload(i as u32);
        match (&file).write_vectored(&[IoSlice::new(&index), IoSlice::new(&data)]) {
            Ok(n) if n == index.len() + data.len() => written += 1,
            Ok(n) => {
                eprintln!("{EVENT}: writev wrote {n} of {} bytes", index.len() + data.len());
                ok = false;
                break;
            }
            Err(e) => {
                fail("writev", &e, None);
                ok = false;
                break;
            }
        }
    }
    println!("{EVENT}: wrote {written} events, skipped {skipped} while nobody listened");

    if let Err(e) = unregister(&file) {
        fail("ioctl DIAG_IOCSUNREG", &e, None);
        ok = false;
    }
    drop(file);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
