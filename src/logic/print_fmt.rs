// SPDX-License-Identifier: GPL-2.0

//! The `print fmt:` of an event's `format` file, as upstream's `user_event_set_print_fmt()`
//! (`kernel/trace/trace_events_user.c`), with its `user_field_format()` and
//! `user_field_is_dyn_string()` for each field.
//!
//! ```text
//! "a=%u s=%s", REC->a, __get_rel_str(s)
//! ```

use core::fmt::{self, Write};

/// `user_field_format()`: the printf conversion for a field type.
///
/// Exact names first, then anything containing `"char["`; everything else ("likely struct") is
/// printed as 64-bit. So `__data_loc char s` (no `[`) gets `%llu` while its argument is still
/// `__get_str(s)`: an upstream quirk kept as is.
pub(crate) fn user_field_format(ty: &str) -> &'static str {
    match ty {
        "s64" => "%lld",
        "u64" => "%llu",
        "s32" | "int" | "s16" | "short" | "s8" | "char" => "%d",
        "u32" | "unsigned int" | "u16" | "unsigned short" | "u8" | "unsigned char" => "%u",
        _ if ty.contains("char[") => "%s",
        _ => "%llu",
    }
}

/// `user_field_is_dyn_string()`: the string helper for a `__data_loc`/`__rel_loc` type that
/// contains `"char"`, `None` for every other type.
pub(crate) fn dyn_string_func(ty: &str) -> Option<&'static str> {
    let func = if ty.starts_with("__data_loc ") {
        "__get_str"
    } else if ty.starts_with("__rel_loc ") {
        "__get_rel_str"
    } else {
        return None;
    };
    ty.contains("char").then_some(func)
}

/// Writes the print format of an event whose fields are `(type, name)` in declaration order.
///
/// `"` + `name=spec` joined by spaces + `"`, then `, arg` per field; `""` without fields.
/// Written piece by piece with `write_str`, not `write!`: every new event pays for this, and
/// the formatting machinery cost more than the pieces.
pub(crate) fn write_print_fmt<'a, W, I>(out: &mut W, fields: I) -> fmt::Result
where
    W: Write + ?Sized,
    I: Iterator<Item = (&'a str, &'a str)> + Clone,
{
    out.write_char('"')?;
    for (i, (ty, name)) in fields.clone().enumerate() {
        if i != 0 {
            out.write_char(' ')?;
        }
        out.write_str(name)?;
        out.write_char('=')?;
        out.write_str(user_field_format(ty))?;
    }
    out.write_char('"')?;
    for (ty, name) in fields {
        match dyn_string_func(ty) {
            Some(func) => {
                out.write_str(", ")?;
                out.write_str(func)?;
                out.write_char('(')?;
                out.write_str(name)?;
                out.write_char(')')?;
            }
            None => {
                out.write_str(", REC->")?;
                out.write_str(name)?;
            }
        }
    }
    Ok(())
}
