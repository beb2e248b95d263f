// SPDX-License-Identifier: GPL-2.0

//! What differs between the `kernel` crates of the kernels the module is built for (Debian's
//! 7.2 and 7.3 series), each written once in a form both crates accept: `src/` has one text for
//! every kernel and no version test. Each item says which crate lacks what it stands for.

use crate::bindings;
use core::borrow::Borrow;
use kernel::prelude::*;

/// This module's `struct module` (C's `THIS_MODULE`): the owner a `file_operations` pins and the
/// module `try_module_get` takes. 7.3's crate gives it (`kernel::module::this_module`); 7.2's has
/// only the static its `module!` puts in the crate root, which no `const` can read. It is taken
/// here as both crates' `module!` takes it: from the `struct module` the module loader gives every
/// module, by its address only (the loader makes it before any code of the module runs and frees
/// it after the last).
pub(crate) const THIS_MODULE: *mut bindings::module = &raw mut bindings::__this_module;

/// An errno the module returns as upstream does: `E` is its number in `bindings`.
fn errno(e: u32) -> Error {
    // Positive and small: every errno `bindings` defines fits an `i32`.
    Error::from_errno(-(e as i32))
}

/// `ECANCELED`, which 7.3's `kernel::error::code` names and 7.2's does not.
pub(crate) fn ecanceled() -> Error {
    errno(bindings::ECANCELED)
}

/// `EADDRINUSE`, which 7.3's `kernel::error::code` names and 7.2's does not.
pub(crate) fn eaddrinuse() -> Error {
    errno(bindings::EADDRINUSE)
}

/// A module parameter's value, from what its `value()` returns: the value in 7.3's crate, a
/// reference to it in 7.2's.
pub(crate) fn param_value<T: Copy>(value: impl Borrow<T>) -> T {
    *value.borrow()
}
