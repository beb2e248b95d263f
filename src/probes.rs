// SPDX-License-Identifier: GPL-2.0

//! The consumers attached to a user event's tracepoint, told apart by their probe ([`Consumer`],
//! [`Recorder`]), and `class->reg`, the callback the tracing core calls when a consumer attaches
//! or detaches. The module's own consumers are in [`crate::ftrace_record`] and
//! [`crate::perf_sample`]; an event's `trace` text is [`crate::trace_text`]'s.
//!
//! Probe signature, as upstream (`user_event_func_t`): `(event, iter, tpdata, faulted)`. The
//! write path ([`crate::write`]) copies and validates the payload first, then calls the
//! module's own probes directly with it ([`crate::ftrace_record::ftrace_record`],
//! [`crate::perf_sample::perf_record`]) and any other probe
//! with a kernel iterator over it, so probes never fault.

use crate::{
    bindings, enabler,
    event::UserEvent,
    event_mutex::Held,
    ftrace_record::{ftrace_probe, has_triggers},
    mirrors,
    perf_sample::{perf_head, perf_probe},
    tracepoint::{self, Probe, ReadGuard},
};
use core::ptr::NonNull;
use kernel::prelude::*;

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
