// SPDX-License-Identifier: GPL-2.0

//! The write path (upstream `user_events_write_core`): `[s32 write_index][payload]` becomes one
//! record for every consumer attached to the event.
//!
//! It takes no lock and allocates nothing. The event is found in the file's index table without
//! a lock; a write to an event some consumer listens to then runs in one [`WriteGuard`] section
//! (preemption and page faults disabled, the tracepoint read side held), left only to fault a
//! payload in. The payload is copied once, from where it is in the writer's memory
//! ([`Source`]), and validated where it was copied, so a bad payload is refused before any
//! consumer sees it and no record is ever left half-written: straight into the ring buffer
//! record when one ftrace file is the only consumer recording (a failing record is discarded
//! unseen), else into this CPU's scratch record ([`Scratch`]), which perf alone takes as its
//! sample and whose validated bytes several consumers all get (upstream copies into each
//! consumer's buffer separately). Nothing is copied when no consumer would record.
//! `Documentation/design.md` ("The write path") has the steps.

use crate::{
    bindings,
    event::UserEvent,
    ftrace_record,
    logic::{abi, stats::Stats, validate},
    mirrors, perf_sample,
    probes::{Consumer, ProbeFn, Recorder},
    tracepoint::{self, WriteGuard},
    uaccess,
};
use core::{
    ptr::{null_mut, NonNull},
    sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering},
};
use kernel::{iov::IovIterSource, prelude::*};

/// Size of `struct trace_entry`, which heads every record.
const HEADER: usize = abi::TRACE_ENTRY_SIZE;

/// The largest payload recorded: perf's `PERF_MAX_TRACE_SIZE` (8192) less the header. Larger
/// writes succeed but record nothing, as upstream's consumers silently drop them too; they are
/// counted in `user_events_stats`.
pub(crate) const MAX_PAYLOAD: usize = 8192 - HEADER;

/// The largest record: the header and the largest payload, what perf takes as one sample.
const RECORD_SIZE: usize = HEADER + MAX_PAYLOAD;
const _: () = assert!(RECORD_SIZE == bindings::PERF_MAX_TRACE_SIZE as usize);

/// One CPU's scratch space for the write path, used by the section running on that CPU.
#[repr(C)]
pub(crate) struct Scratch {
    /// The registers a perf sample of a write is taken with ([`perf_sample::perf_submit`]). Zero
    /// from allocation; a sample fills in what `perf_fetch_caller_regs()` fills in, as perf's
    /// own per-CPU registers, whose other fields stay zero too.
    regs: bindings::pt_regs,
    /// A record, `[trace_entry][payload]`: where a payload is copied and validated when perf
    /// alone or several consumers record it.
    record: [u8; RECORD_SIZE],
}

/// The per-CPU scratch spaces, `SCRATCH_CPUS` of them, set up at module load.
static SCRATCH: AtomicPtr<Scratch> = AtomicPtr::new(null_mut());
static SCRATCH_CPUS: AtomicUsize = AtomicUsize::new(0);

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

/// Owns the scratch spaces; freed on drop (module unload, after every file is closed).
pub(crate) struct ScratchSpace {
    /// Kept only to own the memory `SCRATCH` points to.
    _buf: KVVec<u8>,
}

impl ScratchSpace {
    /// Allocates one zeroed [`Scratch`] per possible CPU and publishes them to the write path.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: No preconditions.
        let cpus = unsafe { bindings::rue_nr_cpu_ids() } as usize;
        let len = cpus.checked_mul(size_of::<Scratch>()).ok_or(ENOMEM)?;
        let mut buf = KVVec::with_capacity(len, GFP_KERNEL)?;
        buf.resize(len, 0, GFP_KERNEL)?;
        let base = buf.as_mut_ptr().cast::<Scratch>();
        // `kvmalloc` memory is aligned at least as `kmalloc`'s, for any `u64`.
        if !base.is_aligned() {
            return Err(EINVAL);
        }
        SCRATCH_CPUS.store(cpus, Ordering::Relaxed);
        SCRATCH.store(base, Ordering::Release);
        Ok(Self { _buf: buf })
    }
}

impl Drop for ScratchSpace {
    fn drop(&mut self) {
        SCRATCH.store(null_mut(), Ordering::Release);
    }
}

/// The scratch space of the CPU `guard`'s section runs on.
///
/// # Safety
///
/// No other reference to it obtained in the same section is live.
#[expect(
    clippy::mut_from_ref,
    reason = "the guard proves the section; the caller, that the reference is the only one"
)]
#[inline(always)]
unsafe fn scratch(guard: &WriteGuard) -> Option<&mut Scratch> {
    let base = SCRATCH.load(Ordering::Acquire);
    let cpu = guard.cpu();
    if base.is_null() || cpu >= SCRATCH_CPUS.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: `base` holds `SCRATCH_CPUS` zero-initialised `Scratch`es (all-zero bytes are a
    // valid `Scratch`), alive while the module is; this CPU's is used only by the section
    // running on it, which holds preemption off (the guard), and only through this reference
    // (the caller's guarantee).
    Some(unsafe { &mut *base.add(cpu) })
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
    // The iterator is not moved: the payload is read where it is, after the index when that
    // was read in place.
    let src = Source {
        iter: iov.as_raw(),
        skip: index.skip(),
        own_iovec: index.payload_iovec,
    };
    if payload > MAX_PAYLOAD {
        // SAFETY: The iterator holds the index (if not moved past) and the payload.
        if unsafe { src.fault_in(payload) } {
            return Err(EFAULT);
        }
        DROPPED_TOO_LARGE.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    }
    // The copy runs with page faults disabled. Upstream faults the whole payload in first; the
    // payload a program just wrote is nearly always present, so copy first and fault in only
    // when a copy stopped short, then copy once more: the same errors, one walk less per write.
    let mut faulted_in = false;
    loop {
        // This CPU's scratch space and the consumers' per-CPU records are ours while the guard
        // is held (writes never run in interrupt context).
        let guard = WriteGuard::lock();
        // SAFETY: `src` holds `payload` bytes; `event` is registered.
        let result = unsafe { copy_validate_dispatch(event, &src, payload, &guard) };
        drop(guard);
        match result {
            Err(NotRecorded::Short) if !faulted_in => {
                // SAFETY: As above.
                if unsafe { src.fault_in(payload) } {
                    return Err(EFAULT);
                }
                faulted_in = true;
            }
            Err(NotRecorded::Short) => return Err(EFAULT),
            // As upstream, which faults the payload in before its consumers run: a payload
            // that cannot be read is `EFAULT` even when nothing is recorded.
            Err(NotRecorded::Nobody) => {
                // SAFETY: As above.
                if unsafe { src.fault_in(payload) } {
                    return Err(EFAULT);
                }
                return Ok(());
            }
            Err(NotRecorded::Failed(e)) => return Err(e),
            Ok(()) => return Ok(()),
        }
    }
}

/// Where a write's payload is: `skip` bytes on from the position of the iterator its index
/// was read from (the index itself, when [`read_index`] read it in place), which the write
/// path never moves.
struct Source {
    iter: *mut bindings::iov_iter,
    skip: usize,
    /// The iovec the payload starts, when [`read_index`] found the index in one of its own (the
    /// clients' shape).
    own_iovec: Option<NonNull<bindings::iovec>>,
}

impl Source {
    /// Copies the first `dst.len()` bytes of the payload into `dst` in `_guard`'s section (page
    /// faults disabled: a page that is not present ends the copy); whether every byte was
    /// copied. The iterator stays where it is.
    ///
    /// A write's own memory (`ITER_UBUF` and `ITER_IOVEC`: every `write(2)` and `writev(2)`) is
    /// copied segment by segment with `rue_copy_from_user_nofault` (a payload of up to 64
    /// bytes a word at a time, a longer one with the non-temporal copy upstream's
    /// `copy_from_iter_nocache` makes); any other iterator (io_uring's registered buffers) with
    /// `_copy_from_iter_nocache`, and moved back. Walking the iterator cost a 16-byte write 67
    /// instructions of its 98 for the copy (performance.md, "Where the time goes").
    ///
    /// # Safety
    ///
    /// `self.iter` is valid and holds at least `self.skip + dst.len()` bytes.
    #[inline(always)]
    unsafe fn copy_to(&self, dst: &mut [u8], _guard: &WriteGuard) -> bool {
        if let Some(iov) = self.own_iovec {
            // SAFETY: One of the iterator's iovecs, alive for the call.
            let seg = unsafe { iov.as_ref() };
            if seg.iov_len >= dst.len() {
                // SAFETY: Page faults are disabled in the guard's section.
                return unsafe { uaccess::copy_from_user_nofault(dst, seg.iov_base as usize) };
            }
        }
        // SAFETY: `iter` is valid (the caller's guarantee); `copy_from_user_nofault` runs in
        // the guard's section, with page faults disabled.
        unsafe {
            match user_segments(self.iter) {
                Some(UserSegments::Ubuf(base)) => {
                    uaccess::copy_from_user_nofault(dst, base.wrapping_add(self.skip))
                }
                Some(UserSegments::Iovec(iov, segs, offset)) => {
                    copy_from_iovecs(dst, iov, segs, offset + self.skip)
                }
                None => {
                    bindings::iov_iter_advance(self.iter, self.skip);
                    let copied = bindings::_copy_from_iter_nocache(
                        dst.as_mut_ptr().cast(),
                        dst.len(),
                        self.iter,
                    );
                    bindings::iov_iter_revert(self.iter, self.skip + copied);
                    copied == dst.len()
                }
            }
        }
    }

    /// Faults in the payload's `len` bytes (and a skipped index, already read) for a copy with
    /// page faults disabled: `fault_in_iov_iter_readable()`. True if any could not be.
    ///
    /// # Safety
    ///
    /// `self.iter` is valid and holds at least `self.skip + len` bytes.
    unsafe fn fault_in(&self, len: usize) -> bool {
        // SAFETY: The caller's guarantee; faulting in does not move the iterator.
        unsafe { bindings::fault_in_iov_iter_readable(self.iter, self.skip + len) != 0 }
    }
}

/// The segments of user memory a user-backed iterator reads from, at its position.
enum UserSegments {
    /// `ITER_UBUF`: one segment, from this address.
    Ubuf(usize),
    /// `ITER_IOVEC`: the first iovec, how many there are, and the offset into the first.
    Iovec(*const bindings::iovec, usize, usize),
}

/// The user memory `it` reads from next, if it iterates over user memory (`ITER_UBUF`,
/// `ITER_IOVEC`).
///
/// # Safety
///
/// `it` is a valid iterator.
#[inline(always)]
unsafe fn user_segments(it: *mut bindings::iov_iter) -> Option<UserSegments> {
    // Not in a build whose kernel changed the iterator's accessors (the gate `user_iovecs`,
    // `crate::mirrors`): every payload then goes through `_copy_from_iter_nocache`.
    if !mirrors::USER_IOVECS {
        return None;
    }
    // SAFETY: `it` is valid (the caller's guarantee). Both user-backed types keep their
    // segments in the union's first view: the base (`ubuf`) or the iovec array (`__iov`).
    let (it, view) = unsafe { (&*it, (*it).__bindgen_anon_1.__bindgen_anon_1.as_ref()) };
    match u32::from(it.iter_type) {
        bindings::iter_type_ITER_UBUF => {
            // SAFETY: `ubuf` is the member for `ITER_UBUF`.
            let base = unsafe { view.__bindgen_anon_1.ubuf } as usize;
            Some(UserSegments::Ubuf(base.wrapping_add(it.iov_offset)))
        }
        bindings::iter_type_ITER_IOVEC => {
            // SAFETY: `__iov` is the member for `ITER_IOVEC`, with `nr_segs` iovecs;
            // `nr_segs` is the second union's member for it.
            let (iov, segs) = unsafe { (view.__bindgen_anon_1.__iov, it.__bindgen_anon_2.nr_segs) };
            Some(UserSegments::Iovec(iov, segs, it.iov_offset))
        }
        _ => None,
    }
}

/// Copies `dst.len()` bytes of the `segs` iovecs from `iov`, starting `offset` bytes into the
/// first, into `dst`; whether every byte was copied. A payload in one segment, as clients
/// write it (an iovec for the index, then one for the payload), is one copy; one spread over
/// several is [`copy_from_iovecs_spread`]'s.
///
/// # Safety
///
/// `iov` points to `segs` iovecs (the kernel's copy of the writer's, alive for the call); page
/// faults are disabled, or the caller may sleep.
#[inline(always)]
unsafe fn copy_from_iovecs(
    dst: &mut [u8],
    mut iov: *const bindings::iovec,
    mut segs: usize,
    mut offset: usize,
) -> bool {
    // The segment the payload starts in.
    loop {
        if segs == 0 {
            return dst.is_empty();
        }
        // SAFETY: One of the `segs` iovecs.
        let len = unsafe { (*iov).iov_len };
        if offset < len {
            break;
        }
        offset -= len;
        // SAFETY: At most one past the last of the `segs` iovecs.
        iov = unsafe { iov.add(1) };
        segs -= 1;
    }
    // SAFETY: One of the `segs` iovecs, as above.
    let seg = unsafe { &*iov };
    if seg.iov_len - offset >= dst.len() {
        let src = (seg.iov_base as usize).wrapping_add(offset);
        // SAFETY: Page faults per the caller; any user address is checked by the copy.
        return unsafe { uaccess::copy_from_user_nofault(dst, src) };
    }
    // SAFETY: The caller's guarantees, for the `segs` iovecs left.
    unsafe { copy_from_iovecs_spread(dst, iov, segs, offset) }
}

/// [`copy_from_iovecs`] of a payload spread over several segments, `offset` inside the first.
///
/// # Safety
///
/// As [`copy_from_iovecs`].
#[inline(never)]
unsafe fn copy_from_iovecs_spread(
    dst: &mut [u8],
    mut iov: *const bindings::iovec,
    segs: usize,
    mut offset: usize,
) -> bool {
    let mut done = 0;
    for _ in 0..segs {
        if done == dst.len() {
            break;
        }
        // SAFETY: One of the `segs` iovecs.
        let seg = unsafe { &*iov };
        if offset < seg.iov_len {
            let n = (seg.iov_len - offset).min(dst.len() - done);
            let src = (seg.iov_base as usize).wrapping_add(offset);
            // SAFETY: Page faults per the caller; any user address is checked by the copy.
            if !unsafe { uaccess::copy_from_user_nofault(&mut dst[done..done + n], src) } {
                return false;
            }
            done += n;
            offset = 0;
        } else {
            offset -= seg.iov_len;
        }
        // SAFETY: At most one past the last of the `segs` iovecs.
        iov = unsafe { iov.add(1) };
    }
    done == dst.len()
}

/// Why [`copy_validate_dispatch`] recorded nothing.
enum NotRecorded {
    /// The copy stopped at a page that is not present.
    Short,
    /// Any other error.
    Failed(Error),
    /// No consumer recorded it, and nothing was copied: the payload is still to be faulted in.
    Nobody,
}

/// # Safety
///
/// `src` holds `payload` bytes; `event` registered.
#[inline(always)]
unsafe fn copy_validate_dispatch(
    event: &UserEvent,
    src: &Source,
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
        // One ftrace file alone: the payload is copied once, straight into its record, and
        // validated there; a record that fails is discarded unseen.
        // The file may still decline once asked (a pid filter that leaves this task out, a
        // full or recursing buffer): then nothing was copied, and the payload is faulted in as
        // when nobody records, so an unreadable one is `EFAULT` as upstream's. A file with
        // triggers takes the path below: its triggers run when its record is reserved, which
        // must happen once per write, and here a payload page that is not present yet means
        // a second reservation after the fault-in.
        (Some(Recorder::Ftrace(file, flags)), None) if ftrace_record::can_discard() => {
            let mut core = ftrace_record::CoreRoom::uninit();
            // SAFETY: Under the read lock with preemption disabled (`guard`); `file` is what the
            // ftrace registration passed, `flags` what `recorder` just read from it; the record
            // is committed or dropped in this section, and may be dropped (`can_discard`).
            let reserved = unsafe {
                ftrace_record::FtraceRecord::reserve_untriggered(file, flags, payload, &mut core)
            };
            if let Some(mut record) = reserved {
                // The record holds the header ftrace wrote and `payload` bytes; `src` holds
                // them. Validated with that header, as upstream validates its record; dropped
                // (discarded) if either fails.
                // SAFETY: As above.
                unsafe { copy_and_validate(event, record.record(), src, guard) }?;
                record.commit();
                return Ok(());
            }
            // Declined; unless for its triggers, which the general path runs.
            if !ftrace_record::has_triggers(flags) {
                return Err(NotRecorded::Nobody);
            }
            // SAFETY: As above.
            return unsafe { dispatch_to_all_cold(event, src, payload, guard) };
        }
        // perf alone: the payload is copied once, into this CPU's scratch record, validated
        // there and submitted from there, without perf's own per-CPU buffer.
        // Not in a build whose kernel changed perf's recursion context or submission (the
        // gate `perf_submit`, `crate::mirrors`): then perf's own buffer, below.
        (Some(Recorder::Perf(head)), None) if mirrors::PERF_SUBMIT => {
            // SAFETY: The first reference in this section.
            let scratch = unsafe { scratch(guard) }.ok_or(NotRecorded::Failed(EFAULT))?;
            let record = &mut scratch.record[..HEADER + payload];
            // perf writes the header at submission; until then it is zero, so that validation
            // sees the same record whatever the buffer held before.
            record[..HEADER].fill(0);
            // SAFETY: `record` holds the header and `payload` bytes; `src` holds them.
            unsafe { copy_and_validate(event, record, src, guard) }?;
            // SAFETY: A write, in task context; under the read lock with preemption disabled,
            // in which the perf probe was just seen; `event` is registered; `head` is what
            // `recorder` just read; `record` and `regs` are this CPU's, borrowed here; `record`
            // holds at most `RECORD_SIZE` bytes, `PERF_MAX_TRACE_SIZE`.
            unsafe { perf_sample::perf_submit(event, head, record, &mut scratch.regs) };
            return Ok(());
        }
        _ => {}
    }
    // SAFETY: As above.
    unsafe { dispatch_to_all(event, src, payload, guard) }
}

/// [`dispatch_to_all`] out of line, for one ftrace file with triggers alone: kept out of the
/// common paths' code.
///
/// # Safety
///
/// As [`dispatch_to_all`].
#[cold]
#[inline(never)]
unsafe fn dispatch_to_all_cold(
    event: &UserEvent,
    src: &Source,
    payload: usize,
    guard: &WriteGuard,
) -> core::result::Result<(), NotRecorded> {
    // SAFETY: The caller's guarantees.
    unsafe { dispatch_to_all(event, src, payload, guard) }
}

/// Copies and validates the payload into this CPU's scratch record, then calls every probe
/// with it: several consumers, a file with triggers, or a probe of someone else's.
///
/// # Safety
///
/// `src` holds `payload` bytes; `event` registered; under `guard`'s section.
#[inline(always)]
unsafe fn dispatch_to_all(
    event: &UserEvent,
    src: &Source,
    payload: usize,
    guard: &WriteGuard,
) -> core::result::Result<(), NotRecorded> {
    let tp = event.tracepoint();
    let cpu = guard.cpu();
    // SAFETY: The first reference in this section.
    let scratch = unsafe { scratch(guard) }.ok_or(NotRecorded::Failed(EFAULT))?;
    let record = &mut scratch.record[..HEADER + payload];
    record[..HEADER].fill(0);
    // SAFETY: `record` holds the header and `payload` bytes; `src` holds them.
    unsafe { copy_and_validate(event, record, src, guard) }
        // SAFETY: Under the tracepoint read lock with preemption disabled (`guard`).
        .map_err(|e| unsafe { invalid_payload_triggers(e, tp, guard) })?;
    let data = &record[HEADER..];
    let mut faulted = false;
    // SAFETY: As above.
    for probe in unsafe { guard.probes(tp) } {
        // The module's own probes are called directly with the payload; any other probe gets
        // upstream's probe contract, a kernel iterator.
        match Consumer::of(probe) {
            // SAFETY: Under the read lock with preemption disabled; `file` is what the ftrace
            // registration passed; `data` is validated.
            Consumer::Ftrace(file) => unsafe { ftrace_record::ftrace_record(file, data) },
            // SAFETY: As above; `event` is registered and this is its perf probe, just seen.
            Consumer::Perf => unsafe { perf_sample::perf_record(event, cpu, data) },
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

/// Passes on why a payload was not recorded. One that failed validation is recorded by nobody,
/// but upstream's ftrace probe runs a file's unconditional triggers before it copies and
/// validates: they run once for it here too, as they do when one ftrace file alone records
/// (its record is reserved, then discarded).
///
/// # Safety
///
/// `tp` is the registered event's tracepoint, `guard` the write section that read it.
#[cold]
#[inline(never)]
unsafe fn invalid_payload_triggers(
    e: NotRecorded,
    tp: *mut bindings::tracepoint,
    guard: &WriteGuard,
) -> NotRecorded {
    if !matches!(e, NotRecorded::Failed(_)) {
        return e;
    }
    // SAFETY: Under the read lock with preemption disabled (`guard`).
    for probe in unsafe { guard.probes(tp) } {
        if let Consumer::Ftrace(file) = Consumer::of(probe) {
            // SAFETY: As above; `file` is what the ftrace registration passed.
            unsafe { ftrace_record::run_triggers(file) };
        }
    }
    e
}

/// Copies the payload from the writer's memory into `record` after its header, in `guard`'s
/// section (page faults disabled: a page that is not present ends the copy short), and
/// validates the record.
///
/// # Safety
///
/// `record` is the header and the payload's room; `src` holds at least `record.len() - HEADER`
/// bytes.
#[inline(always)]
unsafe fn copy_and_validate(
    event: &UserEvent,
    record: &mut [u8],
    src: &Source,
    guard: &WriteGuard,
) -> core::result::Result<(), NotRecorded> {
    // SAFETY: `src` holds the payload's bytes (the caller's guarantee).
    if !unsafe { src.copy_to(&mut record[HEADER..], guard) } {
        return Err(NotRecorded::Short);
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
    /// Whether the iterator is still at the index (read in place; the write path reads the
    /// payload after it without moving the iterator: [`Source`]) or already past it (copied).
    in_place: bool,
    /// The iovec after the index's, when the index was read in place from an iovec of its own
    /// and another follows: where the payload starts.
    payload_iovec: Option<NonNull<bindings::iovec>>,
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

    /// Bytes of the iterator [`read_index`] read this index from that are still the index:
    /// the payload starts this far on.
    #[inline(always)]
    fn skip(&self) -> usize {
        if self.in_place {
            abi::WRITE_INDEX_SIZE
        } else {
            0
        }
    }
}

/// Reads and checks the 4-byte write index.
///
/// Upstream's `copy_from_iter`, but an index in the iterator's current segment (a `write(2)`
/// buffer, or the first iovec of a `writev(2)`: clients give the index an iovec of its own) is
/// read with one `get_user()` and the iterator left where it is (the payload is read after it,
/// [`Source`]): no C call but the read (on x86-64 not even that, [`uaccess::get_user_u32`]),
/// where `copy_from_iter` took 5 % of an enabled write under emulation (performance.md, "Where
/// the time goes"), and nothing more for a write that fails its checks (`ENOENT`, `EBADF`). A
/// fault is `EFAULT` either way.
#[inline(always)]
pub(crate) fn read_index(iov: &mut IovIterSource<'_>) -> Result<WriteIndex> {
    let mut index = [0u8; abi::WRITE_INDEX_SIZE];
    let it = iov.as_raw();
    // SAFETY: `it` is the valid source iterator `iov` wraps, which this function borrows
    // mutably for its duration.
    let (in_place, payload_iovec) = match unsafe { user_segment_start(it, index.len()) } {
        Some((addr, next)) => {
            index = uaccess::get_user_u32(addr)?.to_ne_bytes();
            (true, next)
        }
        None => (false, None),
    };
    if !in_place && iov.copy_from_iter(&mut index) != index.len() {
        return Err(EFAULT);
    }
    let value = usize::try_from(i32::from_ne_bytes(index)).map_err(|_| EINVAL)?;
    Ok(WriteIndex {
        value,
        in_place,
        payload_iovec,
    })
}

/// The address of the next byte of `it`, if it iterates over user memory (`ITER_UBUF`,
/// `ITER_IOVEC`) and its current segment holds at least `len` more bytes (`iter_iov_addr()`,
/// `iter_iov_len()`); and the next iovec, if the segment holds exactly those and another
/// follows.
///
/// # Safety
///
/// `it` is a valid iterator.
unsafe fn user_segment_start(
    it: *mut bindings::iov_iter,
    len: usize,
) -> Option<(usize, Option<NonNull<bindings::iovec>>)> {
    // SAFETY: `it` is valid (the caller's guarantee); `count` is the first view's bytes left.
    if unsafe { (*it).__bindgen_anon_1.__bindgen_anon_1.as_ref().count } < len {
        return None;
    }
    // SAFETY: As above.
    match unsafe { user_segments(it) }? {
        // The one segment holds the `count` bytes left.
        UserSegments::Ubuf(addr) => Some((addr, None)),
        UserSegments::Iovec(iov, segs, offset) => {
            // SAFETY: An `ITER_IOVEC` iterator with bytes left has its current iovec.
            let first = unsafe { &*iov };
            let left = first.iov_len.checked_sub(offset)?;
            if left < len {
                return None;
            }
            let addr = (first.iov_base as usize).wrapping_add(offset);
            // SAFETY: The next of the `segs` iovecs, if there is one.
            let next = (left == len && segs > 1).then(|| unsafe { iov.add(1) });
            Some((addr, next.and_then(|p| NonNull::new(p.cast_mut()))))
        }
    }
}
