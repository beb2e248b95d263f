// SPDX-License-Identifier: GPL-2.0

//! One event's line in `dynamic_events`, as upstream's `user_event_show()`
//! (`kernel/trace/trace_events_user.c`).
//!
//! ```text
//! u:test u32 count; char[20] msg; struct foo s 20
//! ```

use core::fmt::{self, Write};

/// `USER_EVENTS_PREFIX`: what marks a user event in `dynamic_events`.
pub(crate) const USER_EVENTS_PREFIX: &str = "u:";

/// Writes the `dynamic_events` line of the event registered as `reg_name` (not the multi-format
/// tracepoint name), with its fields as `(type, name, size, is_struct)` in declaration order.
///
/// Upstream appends the size when the type starts with `"struct "`, which for fields from
/// [`super::grammar::fields`] is exactly `is_struct`.
pub(crate) fn write_show_line<'a, W, I>(out: &mut W, reg_name: &str, fields: I) -> fmt::Result
where
    W: Write + ?Sized,
    I: Iterator<Item = (&'a str, &'a str, u32, bool)>,
{
    write!(out, "{USER_EVENTS_PREFIX}{reg_name}")?;
    for (i, (ty, name, size, is_struct)) in fields.enumerate() {
        out.write_str(if i == 0 { " " } else { "; " })?;
        write!(out, "{ty} {name}")?;
        if is_struct {
            // Upstream prints `int size` with `%d`; sizes from the grammar are below 2^31.
            write!(out, " {size}")?;
        }
    }
    out.write_char('\n')
}
