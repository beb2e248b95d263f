// SPDX-License-Identifier: GPL-2.0

//! ftrace as a consumer of user events: the ftrace probe, a record reserved in an instance's
//! ring buffer and written in place ([`FtraceRecord`]: through the tracing core's event layer,
//! or on the direct path, and discarded unseen when dropped), and an ftrace file's triggers.

use crate::{
    bindings,
    event::UserEvent,
    logic::abi,
    mirrors, percpu,
    symbols::{Direct, Discard},
    task, tracepoint,
};
use core::sync::atomic::{AtomicI32, AtomicPtr, Ordering};
use core::{mem::MaybeUninit, ptr::NonNull};
use kernel::prelude::*;

/// A record's `trace_entry` header, which the payload follows.
const HEADER: usize = abi::TRACE_ENTRY_SIZE;

/// The ftrace probe (upstream `user_event_ftrace`), as registered on the tracepoint.
///
/// The write path recognises this probe and calls [`ftrace_record`] with the payload directly;
/// this entry point serves any caller with the upstream probe contract.
///
/// # Safety
///
/// Called under the tracepoint read lock with preemption disabled, with a kernel iterator over
/// an already validated payload, and `tpdata` as registered by
/// [`crate::probes::rue_rust_user_event_reg`] (a `trace_event_file`).
pub(crate) unsafe extern "C" fn ftrace_probe(
    _event: *mut UserEvent,
    iter: *mut bindings::iov_iter,
    tpdata: *mut c_void,
    _faulted: *mut bool,
) {
    // SAFETY: The caller passes a valid iterator.
    let count = unsafe { bindings::rue_iov_iter_count(iter) };
    let mut core = CoreRoom::uninit();
    // SAFETY: As required by `ftrace_record`, guaranteed by the caller.
    let Some(mut record) = (unsafe { FtraceRecord::reserve(tpdata.cast(), count, &mut core) })
    else {
        return;
    };
    // SAFETY: `record` has room for `count` bytes after the header; the iterator is a kernel
    // iterator over `count` validated bytes, so the copy is complete and cannot fault.
    unsafe { bindings::_copy_from_iter(record.payload().as_mut_ptr().cast(), count, iter) };
    record.commit();
}

/// Records `payload` into the ring buffer of the ftrace instance `file` belongs to.
///
/// # Safety
///
/// Under the tracepoint read lock with preemption disabled; `file` the probe data registered
/// by [`crate::probes::rue_rust_user_event_reg`] for ftrace; `payload` validated.
pub(crate) unsafe fn ftrace_record(file: *mut bindings::trace_event_file, payload: &[u8]) {
    let mut core = CoreRoom::uninit();
    // SAFETY: Guaranteed by the caller.
    let Some(mut record) = (unsafe { FtraceRecord::reserve(file, payload.len(), &mut core) })
    else {
        return;
    };
    // SAFETY: The payload's room is writable for `payload.len()` bytes, and is not `payload`.
    unsafe { copy_to_record(record.payload().as_mut_ptr(), payload) };
    record.commit();
}

/// What discarding a reserved ftrace record needs ([`Discard`]), published once at load: the
/// write path runs in any writer's context and reaches no module state but statics.
static DISCARD_BUFFERED: AtomicPtr<*mut bindings::ring_buffer_event> =
    AtomicPtr::new(core::ptr::null_mut());
static DISCARD_BUFFERED_CNT: AtomicPtr<c_int> = AtomicPtr::new(core::ptr::null_mut());

/// Lets [`FtraceRecord`]s be discarded, with the resolved per-CPU variables.
pub(crate) fn enable_discard(discard: Discard) {
    DISCARD_BUFFERED_CNT.store(discard.buffered_cnt.as_ptr(), Ordering::Relaxed);
    DISCARD_BUFFERED.store(discard.buffered.as_ptr(), Ordering::Release);
}

/// True once reserved ftrace records can be discarded ([`enable_discard`]): the write path
/// then copies a payload straight into one ([`FtraceRecord`]). Never in a build whose kernel
/// changed `__trace_event_discard_commit()` (the gate `discard`, [`crate::mirrors`]).
#[inline(always)]
pub(crate) fn can_discard() -> bool {
    mirrors::DISCARD && !DISCARD_BUFFERED.load(Ordering::Acquire).is_null()
}

/// Copies a validated payload into a consumer's record: a ring buffer entry, or perf's per-CPU
/// sample buffer.
///
/// The stores bypass the cache, as upstream's `copy_from_iter_nocache` straight into the
/// record does: a record is read later, by a reader on any CPU, not by this one now. On x86 it
/// is `memcpy_flushcache`'s loop of `movnti`; a plain `memcpy` is `rep movsb` there, which
/// `make bench` measured at three times upstream's cost for a 4 KiB payload. Elsewhere it is a
/// plain copy, as upstream's is: arm64's `copy_from_iter_nocache` is the cached copy (its
/// `memcpy_flushcache` cleans each line to the point of persistence, for pmem, which a ring
/// buffer does not want).
///
/// # Safety
///
/// `dst` must be valid for writes of `payload.len()` bytes and not overlap `payload`.
#[inline(always)]
pub(crate) unsafe fn copy_to_record(dst: *mut u8, payload: &[u8]) {
    #[cfg(all(CONFIG_X86_64, CONFIG_ARCH_HAS_UACCESS_FLUSHCACHE))]
    // SAFETY: Guaranteed by the caller; the function only copies.
    unsafe {
        bindings::__memcpy_flushcache(dst.cast(), payload.as_ptr().cast(), payload.len())
    };
    #[cfg(not(all(CONFIG_X86_64, CONFIG_ARCH_HAS_UACCESS_FLUSHCACHE)))]
    // SAFETY: Guaranteed by the caller.
    unsafe {
        core::ptr::copy_nonoverlapping(payload.as_ptr(), dst, payload.len())
    };
}

/// A static key's count that says "on": the direct path is off until [`enable_direct`].
static KEY_UNRESOLVED: AtomicI32 = AtomicI32::new(1);

/// What the direct path needs ([`Direct`]), published once at load as [`DISCARD_BUFFERED`] is:
/// the counts of the two static keys (until then [`KEY_UNRESOLVED`]), and the per-CPU flag.
static PRINTK_COUNT: AtomicPtr<AtomicI32> =
    AtomicPtr::new(core::ptr::addr_of!(KEY_UNRESOLVED).cast_mut());
static EXPORTS_COUNT: AtomicPtr<AtomicI32> =
    AtomicPtr::new(core::ptr::addr_of!(KEY_UNRESOLVED).cast_mut());
static TASKINFO_SAVE: AtomicPtr<bool> = AtomicPtr::new(core::ptr::null_mut());

/// The count of the static key `key`, an `atomic_t` (an `int` the jump-label code changes
/// atomically).
fn key_count(key: NonNull<bindings::static_key>) -> *mut AtomicI32 {
    // SAFETY: `key` is a live static key; this computes the address of its count, reading
    // nothing. `AtomicI32` has the size and alignment of `int`.
    unsafe { core::ptr::addr_of_mut!((*key.as_ptr()).enabled.counter) }.cast()
}

/// Lets [`FtraceRecord::reserve`] take the direct path, with the resolved symbols.
pub(crate) fn enable_direct(direct: Direct) {
    PRINTK_COUNT.store(key_count(direct.printk_key), Ordering::Relaxed);
    EXPORTS_COUNT.store(key_count(direct.exports_key), Ordering::Relaxed);
    TASKINFO_SAVE.store(direct.taskinfo_save.as_ptr(), Ordering::Release);
}

/// A record reserved in the ring buffer of an ftrace file's instance, its `trace_entry` header
/// written: committed by [`FtraceRecord::commit`], discarded unseen when dropped.
///
/// # Invariants
///
/// `entry` is the reserved record, `8 + count` bytes, this CPU's until committed or discarded,
/// in the section (tracepoint read side, preemption disabled) it was reserved in.
pub(crate) struct FtraceRecord<'a> {
    how: Reserved<'a>,
    entry: *mut u8,
    count: usize,
}

/// How an [`FtraceRecord`] was reserved, which says how to commit or discard it.
enum Reserved<'a> {
    /// On the direct path: the ring buffer and the event reserved in it.
    Direct(
        *mut bindings::trace_buffer,
        *mut bindings::ring_buffer_event,
    ),
    /// Through the tracing core's event layer, whose state is in the caller's [`CoreRoom`].
    Core(&'a mut bindings::trace_event_buffer),
}

/// Room on the caller's stack for the tracing core's state of a record reserved through its
/// event layer: the direct path leaves it untouched, and the record stays small enough to be
/// kept in registers.
pub(crate) struct CoreRoom(MaybeUninit<bindings::trace_event_buffer>);

impl CoreRoom {
    /// Room not yet written.
    #[inline(always)]
    pub(crate) fn uninit() -> Self {
        Self(MaybeUninit::uninit())
    }
}

impl<'a> FtraceRecord<'a> {
    /// Reserves a record of `count` payload bytes in the ring buffer of `file`'s instance, if
    /// `file` records now (enabled, not soft-disabled, the buffer not full or recursing).
    ///
    /// # Safety
    ///
    /// As [`ftrace_record`]. The record is committed or dropped in the same section, and
    /// dropped only after [`enable_discard`] ([`can_discard`]).
    #[inline(always)]
    pub(crate) unsafe fn reserve(
        file: *mut bindings::trace_event_file,
        count: usize,
        core: &'a mut CoreRoom,
    ) -> Option<Self> {
        if file.is_null() {
            return None;
        }
        // SAFETY: `file` is the live ftrace file the probe was registered with.
        let flags = unsafe { (*file).flags };
        if flags & bindings::EVENT_FILE_FL_ENABLED as c_ulong == 0 {
            return None;
        }
        // SAFETY: As above; `flags` says the file is enabled.
        unsafe { Self::reserve_enabled(file, flags, count, core) }
    }

    /// [`FtraceRecord::reserve`] for a file whose `flags`, just read, say it is enabled
    /// ([`crate::probes::Recorder::Ftrace`]).
    ///
    /// # Safety
    ///
    /// As [`FtraceRecord::reserve`]; `file` is not null, and `flags` was read from it in this
    /// section.
    #[inline(always)]
    pub(crate) unsafe fn reserve_enabled(
        file: *mut bindings::trace_event_file,
        flags: c_ulong,
        count: usize,
        core: &'a mut CoreRoom,
    ) -> Option<Self> {
        // SAFETY: `file` is live (the caller's guarantee).
        if unsafe { soft_disabled(file, flags) } {
            return None;
        }
        // SAFETY: As above; the file is not soft-disabled, and its triggers ran.
        unsafe { Self::reserve_checked(file, flags, count, core) }
    }

    /// [`FtraceRecord::reserve_enabled`] for a write whose payload may still have to be
    /// faulted in after the reservation, which is then made again: a file with triggers is
    /// declined (`None`, as a soft-disabled one), so that its triggers run once per write, from
    /// the caller's other path. Tested where the soft-disable check tests its rare flags, so the
    /// common case costs nothing more.
    ///
    /// # Safety
    ///
    /// As [`FtraceRecord::reserve_enabled`].
    #[inline(always)]
    pub(crate) unsafe fn reserve_untriggered(
        file: *mut bindings::trace_event_file,
        flags: c_ulong,
        count: usize,
        core: &'a mut CoreRoom,
    ) -> Option<Self> {
        // A file with triggers is declined before they run.
        if (!mirrors::TRIGGER_FAST || flags & SLOW != 0)
            && (has_triggers(flags)
                // SAFETY: `file` is live (the caller's guarantee).
                || unsafe { bindings::rue_trace_trigger_soft_disabled(file) })
        {
            return None;
        }
        // SAFETY: As above; the file is not soft-disabled and has no triggers.
        unsafe { Self::reserve_checked(file, flags, count, core) }
    }

    /// The reservation once the file's soft-disable state and triggers were dealt with.
    ///
    /// # Safety
    ///
    /// As [`FtraceRecord::reserve_enabled`], and `trace_trigger_soft_disabled()` said false.
    #[inline(always)]
    unsafe fn reserve_checked(
        file: *mut bindings::trace_event_file,
        flags: c_ulong,
        count: usize,
        core: &'a mut CoreRoom,
    ) -> Option<Self> {
        // SAFETY: As above.
        let Some(buffer) = (unsafe { direct_buffer(file, flags) }) else {
            // SAFETY: As above.
            return unsafe { Self::reserve_core(file, count, core) };
        };
        // SAFETY: As above; `direct_buffer` found the instance's buffer, and nothing that the
        // event layer would do for this record.
        let (event, entry) = unsafe { direct_reserve(file, buffer, count) }?;
        // INVARIANT: Just reserved, `8 + count` bytes, in the caller's section.
        Some(Self {
            how: Reserved::Direct(buffer, event),
            entry,
            count,
        })
    }

    /// [`FtraceRecord::reserve_enabled`] through the tracing core's event layer.
    ///
    /// # Safety
    ///
    /// As [`FtraceRecord::reserve_enabled`].
    #[inline(always)]
    unsafe fn reserve_core(
        file: *mut bindings::trace_event_file,
        count: usize,
        core: &'a mut CoreRoom,
    ) -> Option<Self> {
        let fbuf = core.0.write(bindings::trace_event_buffer::default());
        // SAFETY: `file` is live (the caller's guarantee); `fbuf` is writable; the size
        // includes the header.
        let entry = unsafe { bindings::trace_event_buffer_reserve(fbuf, file, HEADER + count) };
        if entry.is_null() {
            return None;
        }
        // INVARIANT: Just reserved, `8 + count` bytes, in the caller's section.
        Some(Self {
            how: Reserved::Core(fbuf),
            entry: entry.cast(),
            count,
        })
    }

    /// The whole record: the header and the payload's room.
    #[inline(always)]
    pub(crate) fn record(&mut self) -> &mut [u8] {
        // SAFETY: `entry` holds `8 + count` bytes, ours until committed or discarded (type
        // invariants), and borrowed through `self`.
        unsafe { core::slice::from_raw_parts_mut(self.entry, HEADER + self.count) }
    }

    /// The room for the payload, after the header.
    #[inline(always)]
    fn payload(&mut self) -> &mut [u8] {
        &mut self.record()[HEADER..]
    }

    /// Commits the record, its payload written.
    #[inline(always)]
    pub(crate) fn commit(self) {
        let mut this = core::mem::ManuallyDrop::new(self);
        match &mut this.how {
            Reserved::Direct(buffer, _) => {
                // `__buffer_unlock_commit()`: the task's name is saved at the next context
                // switch.
                // SAFETY: Published by `enable_direct` before any file exists; a per-CPU `bool`.
                unsafe { percpu::this_cpu_set(TASKINFO_SAVE.load(Ordering::Acquire)) };
                // SAFETY: Reserved from `buffer` (type invariants), neither committed nor
                // discarded: `this` is not dropped.
                unsafe { bindings::ring_buffer_unlock_commit(*buffer) };
            }
            Reserved::Core(fbuf) => {
                // SAFETY: As above, reserved through the event layer.
                unsafe { bindings::trace_event_buffer_commit(&mut **fbuf) };
            }
        }
    }
}

impl Drop for FtraceRecord<'_> {
    /// Discards the record, never seen.
    #[inline(always)]
    fn drop(&mut self) {
        match &mut self.how {
            Reserved::Direct(buffer, event) => {
                // SAFETY: Reserved from `buffer` (type invariants), neither committed nor
                // discarded; this enables preemption as the commit would.
                unsafe { bindings::ring_buffer_discard_commit(*buffer, *event) };
            }
            Reserved::Core(fbuf) => {
                // SAFETY: Reserved and neither committed nor discarded; the per-CPU variables
                // were published by `enable_discard` (`reserve`'s caller's guarantee),
                // kernel-lifetime data.
                unsafe {
                    bindings::rue_trace_event_discard(
                        &mut **fbuf,
                        DISCARD_BUFFERED.load(Ordering::Acquire),
                        DISCARD_BUFFERED_CNT.load(Ordering::Relaxed),
                    )
                };
            }
        }
    }
}

/// The ring buffer of `file`'s instance, if a record of `file` needs nothing from the tracing
/// core's event layer but the ring buffer's reserve and commit: the direct path.
///
/// `trace_event_buffer_reserve()` and `trace_event_buffer_commit()` wrap the ring buffer's
/// `ring_buffer_lock_reserve()` and `ring_buffer_unlock_commit()`, and for a file without pid
/// filter, filter, soft-disable or conditional trigger (whose triggers already ran in
/// [`soft_disabled`]), in an instance that records no stack traces, with no console printing or
/// export of events registered, what they add is the record's header and the per-CPU
/// "save this task's name" flag, which [`direct_reserve`] and [`FtraceRecord::commit`] write
/// themselves: five calls into the tracing core fewer per record
/// (Documentation/performance.md). The flags are a hint read without locks, as the core reads
/// them: a filter attached while a write runs may miss that write, as with the core's own path.
///
/// # Safety
///
/// As [`ftrace_record`]; `flags` was just read from `file`.
#[inline(always)]
unsafe fn direct_buffer(
    file: *mut bindings::trace_event_file,
    flags: c_ulong,
) -> Option<*mut bindings::trace_buffer> {
    const EVENT_LAYER: c_ulong = (bindings::EVENT_FILE_FL_PID_FILTER
        | bindings::EVENT_FILE_FL_FILTERED
        | bindings::EVENT_FILE_FL_SOFT_DISABLED
        | bindings::EVENT_FILE_FL_TRIGGER_COND) as c_ulong;
    const STACKS: u64 = (1 << bindings::trace_iterator_bits_TRACE_ITER_STACKTRACE_BIT)
        | (1 << bindings::trace_iterator_bits_TRACE_ITER_USERSTACKTRACE_BIT);
    // Never in a build whose kernel changed a body this path stands in for (the gate `direct`,
    // [`crate::mirrors`]).
    if !(mirrors::DIRECT && mirrors::STATIC_KEY) || flags & EVENT_LAYER != 0 {
        return None;
    }
    // SAFETY: Both counts are kernel-lifetime statics' (published by `enable_direct`) or
    // `KEY_UNRESOLVED`; read once, as `static_key_enabled()` reads them.
    let (printk, exports) = unsafe {
        (
            (*PRINTK_COUNT.load(Ordering::Relaxed)).load(Ordering::Relaxed),
            (*EXPORTS_COUNT.load(Ordering::Relaxed)).load(Ordering::Relaxed),
        )
    };
    // Not zero: on, or being turned on (-1 while its jump labels are patched).
    if printk != 0 || exports != 0 {
        return None;
    }
    // SAFETY: A live file's instance outlives it; its options are read once.
    let tr = unsafe { (*file).tr };
    // SAFETY: As above.
    let options = unsafe { core::ptr::addr_of!((*tr).trace_flags).read_volatile() };
    if options & STACKS != 0 {
        return None;
    }
    // SAFETY: As above; the instance's buffer, read once, as `trace_event_buffer_lock_reserve`
    // reads it.
    let buffer = unsafe { core::ptr::addr_of!((*tr).array_buffer.buffer).read_volatile() };
    (!buffer.is_null()).then_some(buffer)
}

/// [`FtraceRecord::reserve`] on the direct path ([`direct_buffer`]), as
/// `trace_event_buffer_reserve()` runs for such a file, with the ring buffer's call: the event
/// reserved and its record, the header written.
///
/// # Safety
///
/// As [`FtraceRecord::reserve`]; `buffer` is what [`direct_buffer`] returned for `file` in this
/// section.
#[inline(always)]
unsafe fn direct_reserve(
    file: *mut bindings::trace_event_file,
    buffer: *mut bindings::trace_buffer,
    count: usize,
) -> Option<(*mut bindings::ring_buffer_event, *mut u8)> {
    // SAFETY: `file` is live, and so is its call; the type is the one `register_trace_event`
    // gave it, which fits the header's `unsigned short`.
    let ty = unsafe { (*(*file).event_call).event.type_ } as u16;
    // Before the reserve, which disables preemption once more: the header counts the writer's
    // context as the core's does (`tracing_generic_entry_update()`).
    let ctx = tracepoint::trace_ctx();
    let header = bindings::trace_entry {
        type_: ty,
        // CAST: The flags are bits 16 to 23 of the context, the depths bits 0 to 7.
        flags: (ctx >> 16) as u8,
        // CAST: As above.
        preempt_count: ctx as u8,
        pid: task::pid(),
    };
    // SAFETY: `buffer` is the instance's live ring buffer (the caller's guarantee); the length
    // includes the header.
    let event = unsafe { bindings::ring_buffer_lock_reserve(buffer, HEADER + count) };
    if event.is_null() {
        return None;
    }
    // SAFETY: `event` was just reserved for this CPU.
    let entry = unsafe { event_data(event) };
    // SAFETY: `entry` has room for at least the 8-byte header, and `trace_entry` has no
    // alignment beyond the ring buffer's 4 bytes.
    unsafe { entry.cast::<bindings::trace_entry>().write(header) };
    Some((event, entry))
}

/// `ring_buffer_event_data(event)` for an event just reserved (`rb_event_data()`, in
/// kernel/trace/ring_buffer.c): past a time extension (8 bytes, `RINGBUF_TYPE_TIME_EXTEND` or
/// above), the data starts at `array[0]` when the length is in `type_len`, else at `array[1]`.
/// The exported function does the same in a call.
///
/// # Safety
///
/// `event` is a reserved, uncommitted event.
#[inline(always)]
unsafe fn event_data(event: *mut bindings::ring_buffer_event) -> *mut u8 {
    /// `RB_LEN_TIME_EXTEND`: a time extension's 8 bytes (kernel/trace/ring_buffer.c).
    const TIME_EXTEND_LEN: usize = 8;
    let mut event = event;
    // SAFETY: `event` is reserved (the caller's guarantee); a time extension is followed by the
    // event it extends, in the same reservation.
    unsafe {
        if (*event).type_len() >= bindings::ring_buffer_type_RINGBUF_TYPE_TIME_EXTEND {
            event = event.byte_add(TIME_EXTEND_LEN);
        }
        let array = core::ptr::addr_of_mut!((*event).array).cast::<u32>();
        if (*event).type_len() == 0 {
            array.add(1).cast()
        } else {
            array.cast()
        }
    }
}

/// True if an ftrace file with these `flags` has triggers that run on every write
/// (`EVENT_FILE_FL_TRIGGER_MODE`).
#[inline(always)]
pub(crate) fn has_triggers(flags: c_ulong) -> bool {
    flags & bindings::EVENT_FILE_FL_TRIGGER_MODE as c_ulong != 0
}

/// Runs the unconditional triggers of an ftrace consumer, if it is enabled and has any, for a
/// write that records nothing ([`crate::write`]).
///
/// # Safety
///
/// As [`ftrace_record`].
#[cold]
pub(crate) unsafe fn run_triggers(file: *mut bindings::trace_event_file) {
    if file.is_null() {
        return;
    }
    // SAFETY: `file` is the live ftrace file the probe was registered with.
    let flags = unsafe { (*file).flags };
    if flags & bindings::EVENT_FILE_FL_ENABLED as c_ulong != 0 && has_triggers(flags) {
        // SAFETY: As above. Whether the file is soft-disabled does not matter: nothing is
        // recorded either way.
        let _ = unsafe { bindings::rue_trace_trigger_soft_disabled(file) };
    }
}

/// The flags that send `trace_trigger_soft_disabled()` past its first test.
const SLOW: c_ulong = (bindings::EVENT_FILE_FL_TRIGGER_MODE
    | bindings::EVENT_FILE_FL_SOFT_DISABLED
    | bindings::EVENT_FILE_FL_PID_FILTER) as c_ulong;

/// `trace_trigger_soft_disabled(file)` for a file whose `flags` were just read: its common case
/// (no trigger, not soft-disabled, no pid filter) is one test here, the rest the C inline.
///
/// # Safety
///
/// As [`ftrace_record`].
#[inline(always)]
unsafe fn soft_disabled(file: *mut bindings::trace_event_file, flags: c_ulong) -> bool {
    // SAFETY: `file` is live (the caller's guarantee).
    (!mirrors::TRIGGER_FAST || flags & SLOW != 0)
        // SAFETY: As above.
        && unsafe { bindings::rue_trace_trigger_soft_disabled(file) }
}
