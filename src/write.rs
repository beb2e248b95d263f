// SPDX-License-Identifier: GPL-2.0

//! The write path (upstream `user_events_write_core`): `[s32 write_index][payload]` becomes one
//! record for every consumer attached to the event.
//!
//! It takes no lock and allocates nothing. The event is found in the file's index table without
//! a lock; a write to an event some consumer listens to then runs in one [`WriteGuard`] section
//! (preemption and page faults disabled, the tracepoint read side held), left only to fault a
//! payload in. The payload is copied once and validated where it was copied, so a bad payload
//! is refused before any consumer sees it and no record is ever left half-written: straight
//! into the record when one ftrace file or perf is the only consumer recording (a failing
//! record is discarded unseen), else into a per-CPU bounce buffer whose validated bytes every
//! consumer then gets (upstream copies into each consumer's buffer separately). Nothing is
//! copied when no consumer would record. `Documentation/design.md` ("The write path") has the
//! steps.

use crate::{
    bindings,
    event::UserEvent,
    logic::{abi, stats::Stats, validate},
    probes::{self, Consumer, ProbeFn, Recorder},
    tracepoint::{self, WriteGuard},
    uaccess,
};
use core::{
    ptr::null_mut,
    sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering},
};
use kernel::{iov::IovIterSource, prelude::*};

/// Size of `struct trace_entry`, which heads every record.
const HEADER: usize = 8;

/// The largest payload recorded: perf's `PERF_MAX_TRACE_SIZE` (8192) less the header. Larger
/// writes succeed but record nothing, as upstream's consumers silently drop them too; they are
/// counted in `user_events_stats`.
pub(crate) const MAX_PAYLOAD: usize = 8192 - HEADER;

/// Bytes of bounce buffer per CPU.
const BOUNCE_SIZE: usize = HEADER + MAX_PAYLOAD;

/// The per-CPU bounce buffers, `nr_cpu_ids * BOUNCE_SIZE` bytes, set up at module load.
static BOUNCE: AtomicPtr<u8> = AtomicPtr::new(null_mut());
static BOUNCE_CPUS: AtomicUsize = AtomicUsize::new(0);

/// Writes dropped because the payload exceeded [`MAX_PAYLOAD`]; shown in `user_events_stats`.
static DROPPED_TOO_LARGE: AtomicU64 = AtomicU64::new(0);

/// The write path's counters, for `user_events_stats`.
pub(crate) fn stats() -> Stats {
    Stats {
        dropped_too_large: DROPPED_TOO_LARGE.load(Ordering::Relaxed),
        max_payload: MAX_PAYLOAD,
        ..Stats::default()
    }
}

/// Owns the bounce buffers; freed on drop (module unload, after every file is closed).
pub(crate) struct BounceBuffers {
    /// Kept only to own the memory `BOUNCE` points to.
    _buf: KVVec<u8>,
}

impl BounceBuffers {
    /// Allocates one buffer per possible CPU and publishes them to the write path.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: No preconditions.
        let cpus = unsafe { bindings::rue_nr_cpu_ids() } as usize;
        let len = cpus.checked_mul(BOUNCE_SIZE).ok_or(ENOMEM)?;
        let mut buf = KVVec::with_capacity(len, GFP_KERNEL)?;
        buf.resize(len, 0, GFP_KERNEL)?;
        BOUNCE_CPUS.store(cpus, Ordering::Relaxed);
        BOUNCE.store(buf.as_mut_ptr(), Ordering::Release);
        Ok(Self { _buf: buf })
    }
}

impl Drop for BounceBuffers {
    fn drop(&mut self) {
        BOUNCE.store(null_mut(), Ordering::Release);
    }
}

/// Writes one event: `iov` holds the index `index` was read from and the payload after it.
///
/// # Safety
///
/// `event` must stay registered for the call (the caller's file holds a reference).
#[inline(always)]
pub(crate) unsafe fn write_event(
    event: &UserEvent,
    iov: &mut IovIterSource<'_>,
    index: WriteIndex,
) -> Result {
    let payload = index.payload_len(iov);
    if payload < event.min_size as usize {
        return Err(EINVAL);
    }
    let tp = event.tracepoint();
    // SAFETY: `tp` is the registered event's tracepoint.
    if !unsafe { tracepoint::enabled(tp) } {
        return Err(EBADF);
    }
    index.consume(iov);
    let iter = iov.as_raw();
    if payload > MAX_PAYLOAD {
        // SAFETY: `iter` is a valid source iterator.
        if unsafe { bindings::fault_in_iov_iter_readable(iter, payload) } != 0 {
            return Err(EFAULT);
        }
        DROPPED_TOO_LARGE.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    }
    // The copy runs with page faults disabled. Upstream faults the whole payload in first; the
    // payload a program just wrote is nearly always present, so copy first and fault in only
    // what a short copy left, then copy once more: the same errors, one walk less per write.
    let mut faulted_in = false;
    loop {
        // This CPU's bounce buffer and the consumers' per-CPU records are ours while the guard
        // is held (writes never run in interrupt context).
        let guard = WriteGuard::lock();
        // SAFETY: The iterator is valid; `event` is registered.
        let result = unsafe { copy_validate_dispatch(event, iter, payload, &guard) };
        drop(guard);
        match result {
            Err(NotRecorded::Short(copied)) if !faulted_in => {
                // SAFETY: `iter` advanced by exactly `copied` bytes in the failed copy.
                unsafe { bindings::iov_iter_revert(iter, copied) };
                // SAFETY: `iter` is a valid source iterator.
                if unsafe { bindings::fault_in_iov_iter_readable(iter, payload) } != 0 {
                    return Err(EFAULT);
                }
                faulted_in = true;
            }
            Err(NotRecorded::Short(_)) => return Err(EFAULT),
            // As upstream, which faults the payload in before its consumers run: a payload
            // that cannot be read is `EFAULT` even when nothing is recorded.
            Err(NotRecorded::Nobody) => {
                // SAFETY: `iter` is a valid source iterator.
                if unsafe { bindings::fault_in_iov_iter_readable(iter, payload) } != 0 {
                    return Err(EFAULT);
                }
                return Ok(());
            }
            Err(NotRecorded::Failed(e)) => return Err(e),
            Ok(()) => return Ok(()),
        }
    }
}

/// Why [`copy_validate_dispatch`] recorded nothing.
enum NotRecorded {
    /// The copy stopped at a page that is not present after this many bytes.
    Short(usize),
    /// Any other error.
    Failed(Error),
    /// No consumer recorded it, and nothing was copied: the payload is still to be faulted in.
    Nobody,
}

/// # Safety
///
/// `iter` valid with `payload` bytes; `event` registered.
unsafe fn copy_validate_dispatch(
    event: &UserEvent,
    iter: *mut bindings::iov_iter,
    payload: usize,
    guard: &WriteGuard,
) -> core::result::Result<(), NotRecorded> {
    let tp = event.tracepoint();
    // Copy only for a consumer that would record: upstream's consumers copy into a record
    // they reserved, so with `tracing_on` at 0 (or only soft-disabled files) nothing is read.
    // SAFETY: `tp` is the registered event's tracepoint; under its read lock with preemption
    // disabled (`guard`), as `recorder` requires.
    // SAFETY: As above.
    let mut recording = unsafe { guard.probes(tp) }
        // SAFETY: As above.
        .filter_map(|probe| unsafe { Consumer::of(probe).recorder(event, guard.cpu()) });
    match (recording.next(), recording.next()) {
        (None, _) => return Err(NotRecorded::Nobody),
        // One consumer alone: the payload is copied once, straight into its record, and
        // validated there; a record that fails is discarded unseen.
        // A consumer may still decline once asked (a pid filter that leaves this task out, a
        // full or recursing buffer): then nothing was copied, and the payload is faulted in as
        // when nobody records, so an unreadable one is `EFAULT` as upstream's.
        (Some(Recorder::Ftrace(file)), None) => {
            let mut copied = false;
            // SAFETY: Under the read lock with preemption disabled; `file` is what the ftrace
            // registration passed; the closure writes the payload after the header or fails.
            let direct = unsafe {
                probes::ftrace_record_with(file, payload, |record| {
                    copied = true;
                    // `record` holds the header ftrace wrote and `payload` bytes; `iter` is
                    // valid. Validated with that header, as upstream validates its record.
                    copy_and_validate(event, record, iter, guard)
                })
            };
            if let Some(result) = direct {
                return declined_unless(copied, result);
            }
        }
        (Some(Recorder::Perf(head)), None) => {
            let mut copied = false;
            // SAFETY: As above; `event` is registered; `head` is what `recorder` just read.
            let result = unsafe {
                probes::perf_record_with(event, head, payload, |record| {
                    copied = true;
                    // perf writes the header at submission; until then it is zero, so that
                    // validation sees the same record whatever the buffer held before.
                    record[..HEADER].fill(0);
                    copy_and_validate(event, record, iter, guard)
                })
            };
            return declined_unless(copied, result);
        }
        _ => {}
    }
    let base = BOUNCE.load(Ordering::Acquire);
    let cpu = guard.cpu();
    if base.is_null() || cpu >= BOUNCE_CPUS.load(Ordering::Relaxed) {
        return Err(NotRecorded::Failed(EFAULT));
    }
    // SAFETY: `base` holds `BOUNCE_CPUS * BOUNCE_SIZE` bytes, this CPU's slice is in range and
    // used by nobody else while preemption is disabled.
    let record =
        unsafe { core::slice::from_raw_parts_mut(base.add(cpu * BOUNCE_SIZE), HEADER + payload) };
    record[..HEADER].fill(0);
    // SAFETY: `record` holds the header and `payload` bytes; `iter` is valid.
    unsafe { copy_and_validate(event, record, iter, guard) }?;
    let data = &record[HEADER..];
    let mut faulted = false;
    // SAFETY: As above.
    for probe in unsafe { guard.probes(tp) } {
        // The module's own probes are called directly with the payload; any other probe gets
        // upstream's probe contract, a kernel iterator.
        match Consumer::of(probe) {
            // SAFETY: Under the read lock with preemption disabled; `file` is what the ftrace
            // registration passed; `data` is validated.
            Consumer::Ftrace(file) => unsafe { probes::ftrace_record(file, data) },
            // SAFETY: As above; `event` is registered and this is its perf probe, just seen.
            Consumer::Perf => unsafe { probes::perf_record(event, cpu, data) },
            // SAFETY: `data` is readable for the duration of the call.
            Consumer::Other(f, probe_data) => unsafe {
                call_other_probe(event, f, probe_data, data, &mut faulted)
            },
        }
    }
    if faulted {
        Err(NotRecorded::Failed(EFAULT))
    } else {
        Ok(())
    }
}

/// `result` if the consumer copied the payload, else [`NotRecorded::Nobody`]: it declined once
/// asked, and the payload is still to be faulted in.
fn declined_unless(
    copied: bool,
    result: core::result::Result<(), NotRecorded>,
) -> core::result::Result<(), NotRecorded> {
    if copied {
        result
    } else {
        Err(NotRecorded::Nobody)
    }
}

/// Copies the payload from the writer's memory into `record` after its header, in `_guard`'s
/// section (page faults disabled: a page that is not present ends the copy short), and
/// validates the record.
///
/// The copy is `_copy_from_iter_nocache`, as upstream's `copy_nofault` into its record, called
/// without `copy_from_iter_nocache`'s `check_copy_size` as the kernel crate's `IovIterSource`
/// calls `_copy_from_iter`: the destination is a slice of exactly the bytes copied.
///
/// # Safety
///
/// `record` is the header and the payload's room; `iter` is valid with at least
/// `record.len() - HEADER` bytes.
#[inline(always)]
unsafe fn copy_and_validate(
    event: &UserEvent,
    record: &mut [u8],
    iter: *mut bindings::iov_iter,
    _guard: &WriteGuard,
) -> core::result::Result<(), NotRecorded> {
    let data = &mut record[HEADER..];
    // SAFETY: `data` has room for `data.len()` bytes; `iter` is valid; page faults are disabled
    // in the guard's section, so the copy never sleeps.
    let copied =
        unsafe { bindings::_copy_from_iter_nocache(data.as_mut_ptr().cast(), data.len(), iter) };
    if copied != data.len() {
        return Err(NotRecorded::Short(copied));
    }
    if !event.validators().is_empty()
        && validate::validate(record, event.validators().iter().copied()).is_err()
    {
        return Err(NotRecorded::Failed(EFAULT));
    }
    Ok(())
}

/// Calls a probe that is not the module's own with upstream's contract: a kernel iterator over
/// `data`.
///
/// # Safety
///
/// `probe` is attached to `event`'s tracepoint, called under its read lock with preemption
/// disabled; `data` is the validated payload.
#[cold]
unsafe fn call_other_probe(
    event: &UserEvent,
    probe: ProbeFn,
    probe_data: *mut c_void,
    data: &[u8],
    faulted: &mut bool,
) {
    let kvec = bindings::kvec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    };
    let mut it = core::mem::MaybeUninit::<bindings::iov_iter>::uninit();
    // SAFETY: `it` is writable storage; `kvec` describes `data.len()` readable bytes that
    // outlive the probe call (probes only read through a source iterator).
    unsafe {
        bindings::iov_iter_kvec(it.as_mut_ptr(), bindings::ITER_SOURCE, &kvec, 1, data.len())
    };
    // SAFETY: Arguments as the probe contract requires; `it` is initialised above.
    unsafe {
        probe(
            core::ptr::from_ref(event).cast_mut(),
            it.as_mut_ptr(),
            probe_data,
            faulted,
        )
    };
}

/// A write's index, read from the head of its iterator by [`read_index`].
pub(crate) struct WriteIndex {
    /// The index into the file's table.
    pub(crate) value: usize,
    /// Whether the iterator is still at the index (read in place, consumed only by a write that
    /// goes on to its payload: [`WriteIndex::consume`]) or already past it (copied).
    in_place: bool,
}

impl WriteIndex {
    /// Bytes of payload after the index in `iov`, which [`read_index`] read this index from.
    #[inline(always)]
    pub(crate) fn payload_len(&self, iov: &IovIterSource<'_>) -> usize {
        if self.in_place {
            iov.len() - abi::WRITE_INDEX_SIZE
        } else {
            iov.len()
        }
    }

    /// Moves `iov`, which [`read_index`] read this index from, past the index to the payload.
    #[inline(always)]
    pub(crate) fn consume(self, iov: &mut IovIterSource<'_>) {
        if self.in_place {
            // SAFETY: `iov` wraps a valid iterator, borrowed mutably here, whose current segment
            // holds the index (`read_index` read it in place and nothing moved it since).
            #[cfg(CONFIG_X86_64)]
            unsafe {
                advance_user(iov.as_raw(), abi::WRITE_INDEX_SIZE)
            };
            // Only x86-64 reads the index in place.
            #[cfg(not(CONFIG_X86_64))]
            let _ = iov;
        }
    }
}

/// Reads and checks the 4-byte write index.
///
/// Upstream's `copy_from_iter`, but on x86-64 an index in the iterator's current segment (a
/// `write(2)` buffer, or the first iovec of a `writev(2)`: clients give the index an iovec of
/// its own) is read with one `get_user()` and the iterator left where it is until the write goes
/// on to its payload ([`WriteIndex::consume`]): no C call but the read, where
/// `copy_from_iter` took 5 % of an enabled write under emulation (performance.md, "Where the
/// time goes"), and nothing more for a write that fails its checks (`ENOENT`, `EBADF`). A fault
/// is `EFAULT` either way.
#[inline(always)]
pub(crate) fn read_index(iov: &mut IovIterSource<'_>) -> Result<WriteIndex> {
    let mut index = [0u8; abi::WRITE_INDEX_SIZE];
    #[cfg(CONFIG_X86_64)]
    let in_place = {
        let it = iov.as_raw();
        // SAFETY: `it` is the valid source iterator `iov` wraps, which this function borrows
        // mutably for its duration.
        match unsafe { user_segment_start(it, index.len()) } {
            Some(addr) => {
                index = uaccess::get_user_u32(addr)?.to_ne_bytes();
                true
            }
            None => false,
        }
    };
    #[cfg(not(CONFIG_X86_64))]
    let in_place = false;
    if !in_place && iov.copy_from_iter(&mut index) != index.len() {
        return Err(EFAULT);
    }
    let value = usize::try_from(i32::from_ne_bytes(index)).map_err(|_| EINVAL)?;
    Ok(WriteIndex { value, in_place })
}

/// The address of the next byte of `it`, if it iterates over user memory (`ITER_UBUF`,
/// `ITER_IOVEC`) and its current segment holds at least `len` more bytes (`iter_iov_addr()`,
/// `iter_iov_len()`).
///
/// # Safety
///
/// `it` is a valid iterator.
#[cfg(CONFIG_X86_64)]
unsafe fn user_segment_start(it: *mut bindings::iov_iter, len: usize) -> Option<usize> {
    // SAFETY: `it` is valid (the caller's guarantee). Both user-backed types keep their
    // segments in the union's first view: the base (`ubuf`) or the iovec array (`__iov`), and
    // the bytes left (`count`).
    let (it, view) = unsafe { (&*it, (*it).__bindgen_anon_1.__bindgen_anon_1.as_ref()) };
    if view.count < len {
        return None;
    }
    let (base, left) = match u32::from(it.iter_type) {
        bindings::iter_type_ITER_UBUF => {
            // SAFETY: `ubuf` is the member for `ITER_UBUF`, whose one segment is `count` long.
            let base = unsafe { view.__bindgen_anon_1.ubuf };
            (base as usize, view.count)
        }
        bindings::iter_type_ITER_IOVEC => {
            // SAFETY: `__iov` is the member for `ITER_IOVEC`: the kernel's copy of the writer's
            // iovecs, at least one while `count` is not zero, live for the call.
            let first = unsafe { &*view.__bindgen_anon_1.__iov };
            (
                first.iov_base as usize,
                first.iov_len.checked_sub(it.iov_offset)?,
            )
        }
        _ => return None,
    };
    (left >= len).then(|| base.wrapping_add(it.iov_offset))
}

/// `iov_iter_advance()` of a user-backed iterator by `len` bytes of its current segment
/// (`iov_iter_iovec_advance()`: a segment read to its end is left, and so are empty ones).
///
/// # Safety
///
/// `it` is valid and [`user_segment_start`] found `len` bytes in its current segment.
#[cfg(CONFIG_X86_64)]
unsafe fn advance_user(it: *mut bindings::iov_iter, len: usize) {
    // SAFETY: `it` is valid and ours to change (the caller's guarantee).
    let it = unsafe { &mut *it };
    // SAFETY: As in `user_segment_start`, the first view is the one in use.
    let view = unsafe { it.__bindgen_anon_1.__bindgen_anon_1.as_mut() };
    view.count -= len;
    if u32::from(it.iter_type) == bindings::iter_type_ITER_UBUF {
        it.iov_offset += len;
        return;
    }
    // SAFETY: An `ITER_IOVEC` iterator: `__iov` points to `nr_segs` iovecs.
    let (mut iov, mut segs) = unsafe { (view.__bindgen_anon_1.__iov, it.__bindgen_anon_2.nr_segs) };
    let mut offset = it.iov_offset + len;
    while segs > 0 {
        // SAFETY: `iov` is one of the `nr_segs` iovecs.
        let seg = unsafe { (*iov).iov_len };
        if offset < seg {
            break;
        }
        offset -= seg;
        // SAFETY: At most one past the last iovec.
        iov = unsafe { iov.add(1) };
        segs -= 1;
    }
    it.iov_offset = offset;
    it.__bindgen_anon_2.nr_segs = segs;
    view.__bindgen_anon_1.__iov = iov;
}
