// SPDX-License-Identifier: GPL-2.0

//! The callbacks the tracing core calls on a user event: `class->reg` (a consumer attaches or
//! detaches), the ftrace probe (a write reaches an enabled ftrace file) and the `trace` text.
//!
//! Probe signature, as upstream (`user_event_func_t`): `(event, iter, tpdata, faulted)`. The
//! write path ([`crate::write`]) copies and validates the payload first, then calls the
//! module's own probes directly with it ([`ftrace_record`], [`perf_record`]) and any other probe
//! with a kernel iterator over it, so probes never fault.

use crate::{
    bindings, enabler,
    event::UserEvent,
    event_mutex::Held,
    logic::{
        abi,
        trace_output::{self, TraceSeq},
    },
    mirrors,
    symbols::{Direct, Discard},
    task,
    tracepoint::{self, Probe, ReadGuard},
};
use core::sync::atomic::{compiler_fence, AtomicI32, AtomicPtr, Ordering};
use core::{fmt, mem::MaybeUninit, ptr::NonNull};
use kernel::prelude::*;

/// A record's `trace_entry` header, which the payload follows.
const HEADER: usize = abi::TRACE_ENTRY_SIZE;

/// `EVENT_STATUS_FTRACE`.
pub(crate) const STATUS_FTRACE: u8 = 1 << 0;
/// `EVENT_STATUS_PERF`.
pub(crate) const STATUS_PERF: u8 = 1 << 1;
/// `EVENT_STATUS_OTHER`.
pub(crate) const STATUS_OTHER: u8 = 1 << 7;

/// A probe attached to a user event's tracepoint.
pub(crate) type ProbeFn =
    unsafe extern "C" fn(*mut UserEvent, *mut bindings::iov_iter, *mut c_void, *mut bool);

/// A consumer attached to a user event's tracepoint, told apart by its probe.
#[derive(Clone, Copy)]
pub(crate) enum Consumer {
    /// The module's ftrace probe, registered with this `trace_event_file`.
    Ftrace(*mut bindings::trace_event_file),
    /// The module's perf probe.
    Perf,
    /// Any other probe, called with upstream's probe contract, and its registration data.
    Other(ProbeFn, *mut c_void),
}

impl Consumer {
    /// The consumer `probe` stands for.
    #[inline(always)]
    pub(crate) fn of(probe: Probe) -> Self {
        if probe.func == ftrace_probe as *mut c_void {
            Self::Ftrace(probe.data.cast())
        } else if probe.func == perf_probe as *mut c_void {
            Self::Perf
        } else {
            // SAFETY: Every probe on a user event's tracepoint has upstream's
            // `user_event_func_t` prototype: the tracepoint is private to this module and probes
            // are attached through its `reg` callback (or by code following upstream's
            // documented contract).
            let func = unsafe { core::mem::transmute::<*mut c_void, ProbeFn>(probe.func) };
            Self::Other(func, probe.data)
        }
    }

    /// What this consumer needs to record a write now; `None` when it would record nothing,
    /// so the write need not copy its payload for it: an ftrace file that is off,
    /// soft-disabled without triggers or whose instance has `tracing_on` at 0, or a perf event
    /// on no CPU but another.
    ///
    /// A hint read without locks, as the consumers' own checks are: a consumer that turns on
    /// while the write runs may miss it, as with upstream.
    ///
    /// # Safety
    ///
    /// Under the tracepoint read lock with preemption disabled on CPU `cpu`; `event` is the
    /// registered event the consumer is attached to.
    #[inline(always)]
    pub(crate) unsafe fn recorder(self, event: &UserEvent, cpu: usize) -> Option<Recorder> {
        match self {
            Self::Ftrace(file) => {
                if file.is_null() {
                    return None;
                }
                // SAFETY: `file` is the live ftrace file the probe was registered with.
                let flags = unsafe { (*file).flags };
                if flags & bindings::EVENT_FILE_FL_ENABLED as c_ulong == 0 {
                    return None;
                }
                // Its triggers run on every write, recorded or not.
                if has_triggers(flags) {
                    return Some(Recorder::Ftrace(file, flags));
                }
                // A hint only where the reading of the flags is the audited one.
                if mirrors::TRIGGER_FAST
                    && flags & bindings::EVENT_FILE_FL_SOFT_DISABLED as c_ulong != 0
                {
                    return None;
                }
                // Not in a build whose kernel changed `tracing_on` (the gate `tracing_on`): the
                // ring buffer then declines the record itself.
                if !mirrors::TRACING_ON {
                    return Some(Recorder::Ftrace(file, flags));
                }
                // SAFETY: A live file's instance outlives it; the flag is an `int` that
                // `tracing_on` writes (`tracer_tracing_off`), read once.
                let off =
                    unsafe { core::ptr::addr_of!((*(*file).tr).buffer_disabled).read_volatile() };
                (off == 0).then_some(Recorder::Ftrace(file, flags))
            }
            // SAFETY: Guaranteed by the caller; this consumer is the perf probe, just seen in
            // the probe array.
            Self::Perf => unsafe { perf_head(event, cpu) }.map(Recorder::Perf),
            Self::Other(..) => Some(Recorder::Other),
        }
    }
}

/// A consumer that would record a write now ([`Consumer::recorder`]), with what recording needs.
#[derive(Clone, Copy)]
pub(crate) enum Recorder {
    /// The module's ftrace probe's file, not null, and its flags as read, which say it is
    /// enabled.
    Ftrace(*mut bindings::trace_event_file, c_ulong),
    /// The module's perf probe, with this CPU's list of perf events on the event.
    Perf(NonNull<bindings::hlist_head>),
    /// Any other probe.
    Other,
}

/// Recomputes who consumes `event` and rewrites its enablers (`update_enable_bit_for`).
fn update_enable_bit_for(held: &mut Held, event: &UserEvent) {
    let tp = event.tracepoint();
    let mut status = 0;
    // SAFETY: `tp` is the event's registered tracepoint.
    if unsafe { tracepoint::enabled(tp) } {
        let guard = ReadGuard::lock();
        // SAFETY: As above.
        for probe in unsafe { guard.probes(tp) } {
            status |= match Consumer::of(probe) {
                Consumer::Ftrace(_) => STATUS_FTRACE,
                Consumer::Perf => STATUS_PERF,
                Consumer::Other(..) => STATUS_OTHER,
            };
        }
    }
    event.set_status(held, status);
    enabler::update_for(held, event);
}

/// `class->reg` (upstream `user_event_reg`), called by the tracing core with `event_mutex`
/// held when ftrace enables or disables the event, and when perf opens or closes it.
///
/// The core calls it through `rue_user_event_reg` (src/shim.c), which has the C prototype kCFI
/// checks (`enum trace_reg`).
///
/// # Safety
///
/// Called by the tracing core with a `call` of a registered [`UserEvent`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rue_rust_user_event_reg(
    call: *mut bindings::trace_event_call,
    ty: bindings::trace_reg,
    data: *mut c_void,
) -> c_int {
    // SAFETY: The core passes the call it registered.
    if unsafe { (*call).data }.is_null() {
        return ENOENT.to_errno();
    }
    // PERF_OPEN/CLOSE/ADD/DEL need nothing (perf then adds the event to its per-CPU list);
    // ADD/DEL come from the scheduler, without `event_mutex`.
    if !matches!(
        ty,
        bindings::trace_reg_TRACE_REG_REGISTER
            | bindings::trace_reg_TRACE_REG_UNREGISTER
            | bindings::trace_reg_TRACE_REG_PERF_REGISTER
            | bindings::trace_reg_TRACE_REG_PERF_UNREGISTER
    ) {
        return 0;
    }
    // SAFETY: `call` belongs to a registered event (safety requirements).
    let event = unsafe { UserEvent::from_call(call) };
    // SAFETY: The core holds `event_mutex` around (un)registrations: ftrace enable/disable and
    // perf_trace_init()/perf_trace_destroy().
    let mut held = unsafe { Held::assume_held() };
    let tp = event.tracepoint();
    // ftrace passes its `trace_event_file` as `data` (the probe's `tpdata`); perf passes none.
    let probe = if matches!(
        ty,
        bindings::trace_reg_TRACE_REG_REGISTER | bindings::trace_reg_TRACE_REG_UNREGISTER
    ) {
        ftrace_probe as *mut c_void
    } else {
        perf_probe as *mut c_void
    };
    if matches!(
        ty,
        bindings::trace_reg_TRACE_REG_REGISTER | bindings::trace_reg_TRACE_REG_PERF_REGISTER
    ) {
        // SAFETY: `tp` is the event's tracepoint and `probe` has the user event probe signature;
        // the core passes `data` until it unregisters, and the event outlives its probes.
        if let Err(e) = unsafe { tracepoint::register_probe(tp, probe, data) } {
            return e.to_errno();
        }
        event.get();
        update_enable_bit_for(&mut held, event);
    } else {
        // SAFETY: Undoes the registration of the same probe and data.
        unsafe { tracepoint::unregister_probe(tp, probe, data) };
        update_enable_bit_for(&mut held, event);
        event.put_locked(&mut held);
    }
    0
}

/// The ftrace probe (upstream `user_event_ftrace`), as registered on the tracepoint.
///
/// The write path recognises this probe and calls [`ftrace_record`] with the payload directly;
/// this entry point serves any caller with the upstream probe contract.
///
/// # Safety
///
/// Called under the tracepoint read lock with preemption disabled, with a kernel iterator over
/// an already validated payload, and `tpdata` as registered by [`rue_rust_user_event_reg`] (a
/// `trace_event_file`).
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
/// by [`rue_rust_user_event_reg`] for ftrace; `payload` validated.
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
unsafe fn copy_to_record(dst: *mut u8, payload: &[u8]) {
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
    /// ([`Recorder::Ftrace`]).
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
                unsafe { this_cpu_set(TASKINFO_SAVE.load(Ordering::Acquire)) };
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

/// `__this_cpu_write(*flag, true)`.
///
/// # Safety
///
/// `flag` is the address of a per-CPU `bool`; preemption is disabled.
#[inline(always)]
unsafe fn this_cpu_set(flag: *mut bool) {
    #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
    if mirrors::PERCPU_INLINE {
        // SAFETY: One `%gs`-relative store to this CPU's copy (the caller's guarantee).
        unsafe {
            core::arch::asm!(
                "movb $1, %gs:({f})",
                f = in(reg) flag,
                options(att_syntax, nostack, preserves_flags),
            )
        };
        return;
    }
    // SAFETY: This CPU's copy of the per-CPU variable, stable while preemption is disabled.
    unsafe {
        let cpu = bindings::rue_smp_processor_id() as usize;
        if let Some(flag) = per_cpu_ptr(flag, cpu) {
            flag.write(true);
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

/// `per_cpu_ptr(ptr, cpu)`: CPU `cpu`'s instance of the per-CPU variable at `ptr`; `None` for a
/// CPU number out of range.
///
/// On x86-64 the offsets are the exported `__per_cpu_offset` array (asm-generic's
/// `per_cpu_offset()`, which x86 uses), read here rather than through a C call; elsewhere the
/// shim computes it.
#[inline(always)]
fn per_cpu_ptr<T>(ptr: *mut T, cpu: usize) -> Option<*mut T> {
    #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
    if mirrors::PERCPU_INLINE {
        // SAFETY: `__per_cpu_offset` is set up at boot and never written after init; this
        // borrow only reads it.
        let offsets: &[c_ulong] = unsafe { &*core::ptr::addr_of!(bindings::__per_cpu_offset) };
        // The kernel's `c_ulong` is `usize`.
        return Some(ptr.wrapping_byte_add(*offsets.get(cpu)?));
    }
    let cpu = c_uint::try_from(cpu).ok()?;
    // SAFETY: `ptr` is a per-CPU pointer; `per_cpu_ptr` only computes an address.
    Some(unsafe { bindings::rue_per_cpu_ptr(ptr.cast(), cpu) }.cast())
}

/// True while a BPF program is attached to the event (`bpf_prog_array_valid`: one read).
///
/// # Safety
///
/// `call` is a registered event's call.
#[inline(always)]
unsafe fn bpf_attached(call: *mut bindings::trace_event_call) -> bool {
    // SAFETY: `call` is live; `prog_array` is read once, as `READ_ONCE` does.
    !unsafe { core::ptr::addr_of!((*call).prog_array).read_volatile() }.is_null()
}

/// CPU `cpu`'s list of perf events on `event`, when a perf event on that CPU or a BPF program
/// takes samples of it.
///
/// # Safety
///
/// Preemption disabled on CPU `cpu`; `event` registered; the module's perf probe was seen on
/// the event's tracepoint in the same read-side section.
#[inline(always)]
unsafe fn perf_head(event: &UserEvent, cpu: usize) -> Option<NonNull<bindings::hlist_head>> {
    let call = event.call();
    // SAFETY: `call` is registered; read once. `perf_events` is allocated before the perf
    // probe is attached and freed (and set to null) by `perf_trace_event_unreg` only after the
    // probe is detached and `tracepoint_synchronize_unregister()` waited for sections like
    // this one, which saw the probe attached: it stays allocated until the section ends.
    let events = unsafe { core::ptr::addr_of!((*call).perf_events).read_volatile() };
    let head = NonNull::new(per_cpu_ptr(NonNull::new(events)?.as_ptr(), cpu)?)?;
    // SAFETY: `head` is this CPU's live list; `hlist_empty` is this one read of `first`.
    let empty = unsafe { core::ptr::addr_of!((*head.as_ptr()).first).read_volatile() }.is_null();
    // SAFETY: As above.
    (!empty || unsafe { bpf_attached(call) }).then_some(head)
}

/// `PERF_MAX_TRACE_SIZE`: the largest raw sample perf's per-CPU buffers hold.
const PERF_MAX_TRACE_SIZE: usize = 8192;

/// The perf probe (upstream `user_event_perf`), as registered on the tracepoint.
///
/// The write path recognises this probe and calls [`perf_record`] with the payload directly;
/// this entry point serves any caller with the upstream probe contract.
///
/// # Safety
///
/// As [`ftrace_probe`]; `event` is the registered event the probe was called for.
pub(crate) unsafe extern "C" fn perf_probe(
    event: *mut UserEvent,
    iter: *mut bindings::iov_iter,
    _tpdata: *mut c_void,
    _faulted: *mut bool,
) {
    // SAFETY: The caller passes a valid iterator.
    let count = unsafe { bindings::rue_iov_iter_count(iter) };
    // SAFETY: Preemption is disabled (the probe contract).
    let cpu = unsafe { bindings::rue_smp_processor_id() } as usize;
    // SAFETY: The caller passes the registered event, under the conditions `perf_emit` needs;
    // the kernel iterator over `count` validated bytes cannot fault.
    unsafe {
        perf_emit(&*event, cpu, count, |record| {
            // SAFETY: `record` has room for `count` bytes after the header.
            bindings::_copy_from_iter(record[HEADER..].as_mut_ptr().cast(), count, iter);
        })
    };
}

/// A raw perf sample `[trace_entry][payload]` for every perf event on this CPU, after the BPF
/// programs attached to the event ran on it.
///
/// Upstream submits with `perf_trace_buf_submit()`, which never runs BPF programs (spec §5.5);
/// `perf_trace_run_bpf_submit()` runs them with the record as their context, then submits to
/// perf if they let it through and someone listens.
///
/// # Safety
///
/// Under the tracepoint read lock with preemption disabled on CPU `cpu`, in which the module's
/// perf probe was seen attached to `event`; `event` registered; `payload` validated.
pub(crate) unsafe fn perf_record(event: &UserEvent, cpu: usize, payload: &[u8]) {
    // SAFETY: Guaranteed by the caller; `record` has room for the header and the payload.
    unsafe {
        perf_emit(event, cpu, payload.len(), |record| {
            // `record` is writable for `8 + payload.len()` bytes.
            copy_to_record(record[HEADER..].as_mut_ptr(), payload);
        })
    };
}

/// Allocates perf's per-CPU sample buffer for `8 + count` bytes, has `fill` write the
/// record's payload, and submits it, if a perf event on CPU `cpu` or a BPF program takes
/// samples of `event`.
///
/// # Safety
///
/// As [`perf_record`]; `fill` must write the `count` payload bytes after the header.
#[inline(always)]
unsafe fn perf_emit(event: &UserEvent, cpu: usize, count: usize, fill: impl FnOnce(&mut [u8])) {
    // SAFETY: Guaranteed by the caller.
    let Some(head) = (unsafe { perf_head(event, cpu) }) else {
        return;
    };
    let size = HEADER + count;
    let aligned = size.next_multiple_of(8);
    if aligned > PERF_MAX_TRACE_SIZE {
        // Upstream warns (Q12); the write path already counts and drops such payloads.
        return;
    }
    let mut regs: *mut bindings::pt_regs = core::ptr::null_mut();
    let mut rctx: c_int = 0;
    // CAST: `aligned` is at most 8192.
    // SAFETY: Preemption is disabled, as `perf_trace_buf_alloc` requires.
    let raw = unsafe { perf_trace_buf_alloc(aligned as c_int, &mut regs, &mut rctx) };
    if raw.is_null() {
        return;
    }
    // SAFETY: `raw` holds `aligned >= size` bytes, this CPU's until submitted.
    fill(unsafe { core::slice::from_raw_parts_mut(raw.cast::<u8>(), size) });
    // SAFETY: `raw`, `rctx` and `regs` come from `perf_trace_buf_alloc` above; `head` is this
    // CPU's list, just read; `raw` holds the record's `size` bytes.
    unsafe { perf_submit_raw(event.call(), head, raw, size, regs, rctx) };
}

/// Submits `record`, a validated `[trace_entry][payload]` in the write path's scratch space,
/// as a raw sample to the perf events in `head`, after the BPF programs attached to the event
/// ran on it, with `regs` filled in as the sample's registers: a sample taken without perf's
/// per-CPU buffer (`perf_trace_buf_alloc()`), so that with perf alone recording the payload is
/// copied once, into `record`, and validated where it is. perf writes the header. The sample
/// is dropped, as upstream drops it, when this CPU is in perf's software event context already
/// (`perf_swevent_get_recursion_context()`).
///
/// # Safety
///
/// In task context (not an interrupt), under the tracepoint read lock with preemption disabled,
/// in which the module's perf probe was seen attached to `event`; `event` registered; `head` is
/// this CPU's list of perf events on it, read in the same section ([`Consumer::recorder`]);
/// `record` and `regs` are this CPU's and nobody else's until this returns; `record` holds at
/// most [`PERF_MAX_TRACE_SIZE`] bytes.
#[inline(always)]
pub(crate) unsafe fn perf_submit(
    event: &UserEvent,
    head: NonNull<bindings::hlist_head>,
    record: &mut [u8],
    regs: &mut bindings::pt_regs,
) {
    let Some(rctx) = swevent_recursion_context() else {
        return;
    };
    fetch_caller_regs(regs);
    // SAFETY: `rctx` was just taken; `head` and `regs` per the caller; `record` holds the
    // record's bytes, at most `PERF_MAX_TRACE_SIZE`, until this returns.
    unsafe {
        perf_submit_raw(
            event.call(),
            head,
            record.as_mut_ptr().cast(),
            record.len(),
            regs,
            rctx,
        )
    };
}

/// `perf_swevent_get_recursion_context()` in task context, which the write path always runs
/// in: this task's recursion count of that context (`current->perf_recursion[0]`, the level
/// `interrupt_context_level()` gives there) taken, or `None` if perf is already running on this
/// task. Inline, where the exported function is a call of 19 instructions for these few;
/// `perf_tp_event()` gives the context back (`perf_swevent_put_recursion_context()`).
#[inline(always)]
fn swevent_recursion_context() -> Option<c_int> {
    let recursion = task::perf_recursion();
    // SAFETY: `current`'s own count in task context, which only this task changes there
    // (interrupts use the other levels).
    unsafe {
        if *recursion != 0 {
            return None;
        }
        *recursion = 1;
    }
    // `get_recursion_context()`'s `barrier()`: the count is raised before perf's work starts.
    compiler_fence(Ordering::SeqCst);
    Some(0)
}

/// Hands the raw sample `raw` of `size` bytes to the event's BPF programs and then to the
/// perf events in `head` (`perf_trace_run_bpf_submit()`, or without a BPF program straight
/// `perf_tp_event()`), releasing the recursion context `rctx`.
///
/// # Safety
///
/// `call` is a registered event's call; `head` is this CPU's list of perf events on it, read
/// in the tracepoint section this runs in (preemption disabled); `raw` holds `size` bytes, at
/// most [`PERF_MAX_TRACE_SIZE`]; `regs` is filled in; `rctx` is this CPU's recursion context,
/// taken for this sample.
#[inline(always)]
unsafe fn perf_submit_raw(
    call: *mut bindings::trace_event_call,
    head: NonNull<bindings::hlist_head>,
    raw: *mut c_void,
    size: usize,
    regs: *mut bindings::pt_regs,
    rctx: c_int,
) {
    // CAST: `size` is at most `PERF_MAX_TRACE_SIZE` (the caller's guarantee).
    let size = size as c_int;
    // SAFETY: `call` is registered.
    if mirrors::PERF_SUBMIT && !unsafe { bpf_attached(call) } {
        // What `perf_trace_run_bpf_submit` does without a BPF program, one call less.
        // SAFETY: The caller's guarantees; no task.
        unsafe {
            bindings::perf_tp_event(
                // CAST: `event.type` is the event type perf matches, a `u16` there (as
                // `perf_trace_run_bpf_submit` passes it).
                (*call).event.type_ as u16,
                1,
                raw,
                size,
                regs,
                head.as_ptr(),
                rctx,
                core::ptr::null_mut(),
            )
        };
        return;
    }
    // SAFETY: The caller's guarantees; no task.
    unsafe {
        bindings::perf_trace_run_bpf_submit(
            raw,
            size,
            rctx,
            call,
            1,
            regs,
            head.as_ptr(),
            core::ptr::null_mut(),
        )
    };
}

/// `perf_trace_buf_alloc()` and then `perf_fetch_caller_regs()` into the registers it hands
/// out, as upstream's perf probe does: this CPU's sample buffer of `size` bytes and a recursion
/// context, or null.
///
/// # Safety
///
/// Preemption is disabled until the buffer is submitted or released.
#[inline(always)]
unsafe fn perf_trace_buf_alloc(
    size: c_int,
    regs: &mut *mut bindings::pt_regs,
    rctx: &mut c_int,
) -> *mut c_void {
    // SAFETY: Preemption is disabled (the caller's guarantee); both pointers are writable.
    let raw = unsafe { bindings::perf_trace_buf_alloc(size, regs, rctx) };
    if !raw.is_null() {
        // SAFETY: With a buffer, perf set `*regs` to this CPU's register buffer for the
        // recursion context, ours until the sample is submitted or released.
        fetch_caller_regs(unsafe { &mut **regs });
    }
    raw
}

/// `perf_fetch_caller_regs()`: the registers a sample taken here is reported with.
///
/// Read here, inline in the probe, as the kernel's macro reads them in its caller: perf
/// unwinds a callchain from them while the probe's frame is still live (a C helper's frame
/// would be gone, and arm64's unwinder warns on the stale record it then finds).
/// - x86-64 (`perf_arch_fetch_caller_regs()`): the instruction pointer, the stack pointer the
///   unwinder starts from, the kernel code segment, no flags; no C call at all.
/// - arm64: the program counter, the frame pointer (`x29`, the frame record the unwinder
///   follows; Rust keeps frame pointers in the kernel) and the stack pointer, stored by the
///   shim with EL1h as the mode.
///
/// The instruction pointer is this code's own, where upstream records its probe's caller.
#[inline(always)]
fn fetch_caller_regs(regs: &mut bindings::pt_regs) {
    #[cfg(CONFIG_X86_64)]
    {
        let (ip, sp): (usize, usize);
        // SAFETY: Reads the instruction and stack pointers only.
        unsafe {
            core::arch::asm!(
                "lea 0(%rip), {ip}",
                "mov %rsp, {sp}",
                ip = out(reg) ip,
                sp = out(reg) sp,
                options(att_syntax, nomem, nostack, preserves_flags),
            )
        };
        regs.ip = ip;
        regs.sp = sp;
        regs.__bindgen_anon_1.csx = bindings::__KERNEL_CS.into();
        regs.flags = 0;
    }
    #[cfg(CONFIG_ARM64)]
    {
        let (pc, fp, sp): (usize, usize, usize);
        // SAFETY: Reads the program counter, frame pointer and stack pointer only.
        unsafe {
            core::arch::asm!(
                "adr {pc}, .",
                "mov {fp}, x29",
                "mov {sp}, sp",
                pc = out(reg) pc,
                fp = out(reg) fp,
                sp = out(reg) sp,
                options(nomem, nostack, preserves_flags),
            )
        };
        // SAFETY: `regs` is writable.
        unsafe { bindings::rue_perf_set_caller_regs(regs, pc, fp, sp) }
    }
}

/// `trace_seq` as the pure trace-output code's [`TraceSeq`].
struct Seq(*mut bindings::trace_seq);

impl fmt::Write for Seq {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.put_bytes(s.as_bytes())
    }
}

impl TraceSeq for Seq {
    fn put_bytes(&mut self, bytes: &[u8]) -> fmt::Result {
        let len = c_uint::try_from(bytes.len()).map_err(|_| fmt::Error)?;
        // SAFETY: `self.0` is the iterator's live `trace_seq`; `bytes` is readable.
        unsafe { bindings::trace_seq_putmem(self.0, bytes.as_ptr().cast(), len) };
        Ok(())
    }

    fn put_symbol(&mut self, addr: u64) -> fmt::Result {
        // SAFETY: `%pS` with one pointer-sized argument, as the format requires.
        unsafe {
            bindings::trace_seq_printf(self.0, c"%pS".as_char_ptr(), addr as usize as *const c_void)
        };
        Ok(())
    }

    fn adjust_address(&self, addr: u64) -> u64 {
        // `trace_adjust_address()` is not exported; it only changes addresses read back from a
        // previous boot's persistent buffer.
        addr
    }

    fn text_base(&self) -> u64 {
        0
    }
}

/// `event.funcs->trace`: the `trace` file's text for one record (upstream
/// `user_event_print_trace` → `print_event_fields`).
///
/// The core calls it through `rue_print_trace` (src/shim.c), which has the C prototype kCFI
/// checks (`enum print_line_t`).
///
/// # Safety
///
/// Called by the tracing core with an iterator positioned on a record of a user event.
#[no_mangle]
pub(crate) unsafe extern "C" fn rue_rust_print_trace(
    iter: *mut bindings::trace_iterator,
    _flags: c_int,
    event: *mut bindings::trace_event,
) -> bindings::print_line_t {
    // SAFETY: `event` is the `event` field of a registered call (container_of).
    let call = unsafe {
        event
            .byte_sub(core::mem::offset_of!(bindings::trace_event_call, event))
            .cast::<bindings::trace_event_call>()
    };
    // SAFETY: The record belongs to this call, which stays registered while it is printed.
    let ev = unsafe { UserEvent::from_call(call) };
    // SAFETY: The core passes a valid iterator whose `ent` holds `ent_size` bytes.
    let (seq, record) = unsafe {
        let it = &mut *iter;
        (
            &raw mut it.seq,
            core::slice::from_raw_parts(it.ent.cast::<u8>(), it.ent_size as usize),
        )
    };
    let mut out = Seq(seq);
    let _ = trace_output::write_trace_line(&mut out, ev.tp_name(), ev.fields(), record);
    // SAFETY: `seq` is the iterator's live trace_seq.
    unsafe { bindings::rue_trace_handle_return(seq) }
}
