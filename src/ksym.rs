// SPDX-License-Identifier: GPL-2.0

//! Finding kernel *data* that 7.3 does not export.
//!
//! `kallsyms_lookup_name()` is not exported and is IBT-sealed, so calling it through a pointer
//! traps on CPUs that enforce IBT. Instead the lookup is left to the exported
//! `register_kprobe()`: it resolves `symbol_name` and stores the address in `kp.addr` *before*
//! `check_kprobe_address_safe()` rejects anything that is not kernel text
//! (`register_kprobe()` in kernel/kprobes.c). For a data symbol the registration therefore fails
//! and leaves the address behind; no probe is ever armed and nothing is called.
//!
//! Only data is accepted. A name that registers successfully is text: the probe is removed at
//! once and the lookup is refused, so this module never obtains, let alone calls, the address
//! of a non-exported function.

use crate::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;

/// Returns the address of the kernel data symbol `name`, typed as `T`.
///
/// Fails with `ENOENT` if kallsyms does not know `name`, `EINVAL` if it names text, and
/// `ENOEXEC` if the address is not aligned for `T` (a sign of a lookup gone wrong).
pub(crate) fn resolve_data<T>(name: &CStr) -> Result<NonNull<T>> {
    let mut kp = bindings::kprobe {
        symbol_name: name.as_char_ptr(),
        ..Default::default()
    };
    // SAFETY: `kp` is zeroed apart from `symbol_name`, a NUL-terminated string that outlives
    // the call. If the registration succeeds, the probe is unregistered below before `kp` dies.
    let ret = unsafe { bindings::register_kprobe(&mut kp) };
    if ret == 0 {
        // SAFETY: `kp` was registered just above and is still alive.
        unsafe { bindings::unregister_kprobe(&mut kp) };
        pr_err!("symbol {name:?} is kernel text, expected data\n");
        return Err(EINVAL);
    }
    let Some(addr) = NonNull::new(kp.addr.cast::<T>()) else {
        pr_err!("cannot resolve symbol {name:?} (register_kprobe: {ret})\n");
        return Err(ENOENT);
    };
    if addr.as_ptr().align_offset(align_of::<T>()) != 0 {
        pr_err!("symbol {name:?} resolved to a misaligned address\n");
        return Err(ENOEXEC);
    }
    Ok(addr)
}
