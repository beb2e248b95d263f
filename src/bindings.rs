// SPDX-License-Identifier: GPL-2.0

//! Raw bindings for the tracing headers that `kernel::bindings` does not cover.
//!
//! Generated at build time by `Kbuild` (`cmd_rue_bindgen`) from `include/rue_bindings.h`, with
//! bindgen's layout tests on. Items declared elsewhere resolve through the glob import of
//! `kernel::bindings`, so e.g. `file_operations` is the kernel crate's own type; local items
//! shadow it (the complete `trace_event_call` replaces the kernel crate's opaque one).

#![allow(
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr,
    clippy::cast_lossless,
    clippy::as_underscore
)]

pub(crate) use kernel::bindings::*;
use kernel::ffi;
use pin_init::MaybeZeroable;

include!(concat!(env!("RUE_OBJ_DIR"), "/bindings_generated.rs"));
