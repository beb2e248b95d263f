// SPDX-License-Identifier: GPL-2.0

//! A user event's line in the `trace` file (`event.funcs->trace`), written by the pure
//! trace-output code ([`crate::logic::trace_output`]) into the core's `trace_seq`.

use crate::{
    bindings,
    event::UserEvent,
    logic::trace_output::{self, TraceSeq},
};
use core::fmt;
use kernel::prelude::*;

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
