// SPDX-License-Identifier: GPL-2.0

//! perf and BPF as consumers of user events: the perf probe, and a raw sample handed to the BPF
//! programs attached to the event and to the perf events on this CPU, from perf's per-CPU buffer
//! or, with perf alone recording, from the write path's scratch record ([`perf_submit`]).

use crate::{
    bindings, event::UserEvent, ftrace_record::copy_to_record, logic::abi, mirrors, percpu, task,
};
use core::ptr::NonNull;
use core::sync::atomic::{compiler_fence, Ordering};
use kernel::prelude::*;

/// A record's `trace_entry` header, which the payload follows.
const HEADER: usize = abi::TRACE_ENTRY_SIZE;

/// True while a BPF program is attached to the event (`bpf_prog_array_valid`: one read).
///
/// # Safety
///
/// `call` is a registered event's call.
#[inline(always)]
pub(crate) unsafe fn bpf_attached(call: *mut bindings::trace_event_call) -> bool {
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
pub(crate) unsafe fn perf_head(
    event: &UserEvent,
    cpu: usize,
) -> Option<NonNull<bindings::hlist_head>> {
    let call = event.call();
    // SAFETY: `call` is registered; read once. `perf_events` is allocated before the perf
    // probe is attached and freed (and set to null) by `perf_trace_event_unreg` only after the
    // probe is detached and `tracepoint_synchronize_unregister()` waited for sections like
    // this one, which saw the probe attached: it stays allocated until the section ends.
    let events = unsafe { core::ptr::addr_of!((*call).perf_events).read_volatile() };
    let head = NonNull::new(percpu::per_cpu_ptr(NonNull::new(events)?.as_ptr(), cpu)?)?;
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
/// As [`crate::ftrace_record::ftrace_probe`]; `event` is the registered event the probe was
/// called for.
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
/// Upstream's `user_event_perf()` submits with `perf_trace_buf_submit()`, which never runs BPF
/// programs; `perf_trace_run_bpf_submit()` runs them with the record as their context, then
/// submits to perf if they let it through and someone listens.
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
/// this CPU's list of perf events on it, read in the same section
/// ([`crate::probes::Consumer::recorder`]); `record` and `regs` are this CPU's and nobody else's
/// until this returns; `record` holds at most [`PERF_MAX_TRACE_SIZE`] bytes.
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
