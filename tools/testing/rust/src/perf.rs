// SPDX-License-Identifier: GPL-2.0

//! perf on a user event as perf and one-collect attach: `perf_event_open()` of type
//! `PERF_TYPE_TRACEPOINT` on the event's id, `PERF_SAMPLE_RAW`, every write a sample, and the
//! mmap ring read back. A raw sample is the trace event's bytes (common fields first), padded
//! to 8 bytes with its 4-byte size.

use std::{
    io::Error,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    ptr,
    sync::atomic::{fence, Ordering},
};

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_SAMPLE_RAW: u64 = 1 << 10;
const PERF_RECORD_SAMPLE: u32 = 9;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// Data pages of the ring.
const RING_PAGES: usize = 16;

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER0`; the kernel zero-extends the rest.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// Offsets in `struct perf_event_mmap_page` (`include/uapi/linux/perf_event.h`).
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

/// A sampling perf event on one tracepoint and its mmap ring.
///
/// # Invariants
///
/// `base` is a shared mapping of `len` bytes of `fd`'s ring (the control page first), unmapped
/// only in `Drop`.
pub struct PerfRing {
    /// Closed after `Drop` unmaps the ring.
    _fd: OwnedFd,
    base: *mut u8,
    len: usize,
}

impl PerfRing {
    /// Opens a sample-every-event perf event on tracepoint `id` for task `pid` (0: this one)
    /// on any CPU, with a ring of its own.
    pub fn open(id: u16, pid: libc::pid_t) -> Result<Self, String> {
        let attr = PerfEventAttr {
            kind: PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: id.into(),
            sample_period: 1,
            sample_type: PERF_SAMPLE_RAW,
            wakeup_events: 1,
            ..Default::default()
        };
        // SAFETY: `attr` is a valid `perf_event_attr` prefix whose `size` says how long it is;
        // the other arguments are plain integers.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr,
                pid,
                -1,
                -1,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if ret < 0 {
            return Err(format!(
                "perf_event_open on tracepoint {id}, pid {pid}: {}",
                Error::last_os_error()
            ));
        }
        // SAFETY: `ret` is a new file descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(ret as i32) };
        // SAFETY: sysconf has no memory-safety preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = (RING_PAGES + 1) * page;
        // SAFETY: a new shared mapping of the perf fd, which the kernel sizes and checks.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(format!("mmap of the perf ring: {}", Error::last_os_error()));
        }
        Ok(Self {
            _fd: fd,
            base: base.cast(),
            len,
        })
    }

    fn control(&self, offset: usize) -> *mut u64 {
        // SAFETY: the control page's u64 fields lie within the mapping (type invariant).
        unsafe { self.base.add(offset).cast() }
    }

    /// Consumes the ring and returns the raw data of each sample in it. Any other record
    /// (a `PERF_RECORD_LOST`, say) is an error: every write must have left its sample.
    pub fn samples(&mut self) -> Result<Vec<Vec<u8>>, String> {
        // SAFETY: aligned u64 fields of the control page (type invariant); the kernel writes
        // data_head, so it is read volatile, and the data it covers after the fence.
        let (head, tail, offset, size) = unsafe {
            let head = ptr::read_volatile(self.control(DATA_HEAD));
            fence(Ordering::Acquire);
            (
                head,
                ptr::read_volatile(self.control(DATA_TAIL)),
                ptr::read_volatile(self.control(DATA_OFFSET)) as usize,
                ptr::read_volatile(self.control(DATA_SIZE)) as usize,
            )
        };
        if size == 0 || offset + size > self.len {
            return Err(format!(
                "perf ring: data at {offset}, {size} bytes, in a {}-byte mapping",
                self.len
            ));
        }
        // SAFETY: [offset, offset + size) lies in the mapping (checked above).
        let data = unsafe { std::slice::from_raw_parts(self.base.add(offset), size) };
        let byte = |pos: u64| data[(pos % size as u64) as usize];
        let bytes = |pos: u64, n: usize| (0..n as u64).map(|i| byte(pos + i)).collect::<Vec<u8>>();
        let mut out = Vec::new();
        let mut pos = tail;
        while pos < head {
            let hdr = bytes(pos, 8);
            let kind = u32::from_le_bytes(hdr[0..4].try_into().unwrap());
            let rec_size = u16::from_le_bytes(hdr[6..8].try_into().unwrap()) as u64;
            if rec_size < 8 {
                return Err(format!("perf record of {rec_size} bytes"));
            }
            if kind != PERF_RECORD_SAMPLE {
                return Err(format!("perf record of type {kind}, not a sample"));
            }
            let raw_size = u32::from_le_bytes(bytes(pos + 8, 4).try_into().unwrap()) as u64;
            if 12 + raw_size > rec_size {
                return Err(format!("raw size {raw_size} in a {rec_size}-byte sample"));
            }
            out.push(bytes(pos + 12, raw_size as usize));
            pos += rec_size;
        }
        fence(Ordering::Release);
        // SAFETY: data_tail is the reader's field of the control page (type invariant).
        unsafe { ptr::write_volatile(self.control(DATA_TAIL), head) };
        Ok(out)
    }
}

impl Drop for PerfRing {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are the mapping made in `open` (type invariant); nothing
        // refers to it once the ring is dropped.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}
