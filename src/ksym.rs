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
/// `ENOEXEC` if the address is not aligned for `T` or the two lookups below disagree (a sign of
/// a lookup gone wrong).
///
/// `register_kprobe()` hands the address to the architecture to adjust (`_kprobe_addr()`): on
/// x86-64 with IBT, `arch_adjust_kprobe_addr()` moves an address at offset 0 whose first four
/// bytes read as an `ENDBR64` instruction (or its poison) 4 bytes on, past the instruction it
/// takes them for. Data can hold those bytes: a per-CPU variable's symbol names its template,
/// in init memory the kernel frees after boot, which can then hold any page's contents (seen on
/// Debian's 7.2 kernel: `trace_buffered_event` resolved 4 bytes off, one boot in three). So the
/// symbol is looked up twice, at offset 0 and at offset 1, which no adjustment moves (it adjusts
/// offsets 0 and 4 only); the second gives the symbol less 1, the first the symbol or the
/// symbol plus 4. Where the object is one byte long and another symbol follows it at once, the
/// second lookup lands on that symbol instead, and only a result both lookups agree on is taken
/// (both cannot be moved: no 4-byte pattern the adjustment matches begins at its own second
/// byte).
pub(crate) fn resolve_data<T>(name: &CStr) -> Result<NonNull<T>> {
    let at_zero = lookup(name, 0)?;
    let at_one = lookup(name, 1)?.wrapping_sub(1);
    if at_zero != at_one && at_zero != at_one.wrapping_add(4) {
        pr_err!("symbol {name:?} resolved to two addresses\n");
        return Err(ENOEXEC);
    }
    let Some(addr) = NonNull::new(at_one as *mut T) else {
        pr_err!("cannot resolve symbol {name:?}\n");
        return Err(ENOENT);
    };
    if addr.as_ptr().align_offset(align_of::<T>()) != 0 {
        pr_err!("symbol {name:?} resolved to a misaligned address\n");
        return Err(ENOEXEC);
    }
    Ok(addr)
}

/// The address `register_kprobe()` resolves `name` plus `offset` to, for a data symbol.
fn lookup(name: &CStr, offset: u32) -> Result<usize> {
    let mut kp = bindings::kprobe {
        symbol_name: name.as_char_ptr(),
        offset,
        ..Default::default()
    };
    // SAFETY: `kp` is zeroed apart from `symbol_name`, a NUL-terminated string that outlives
    // the call, and `offset`. If the registration succeeds, the probe is unregistered below
    // before `kp` dies.
    let ret = unsafe { bindings::register_kprobe(&mut kp) };
    if ret == 0 {
        // SAFETY: `kp` was registered just above and is still alive.
        unsafe { bindings::unregister_kprobe(&mut kp) };
        pr_err!("symbol {name:?} is kernel text, expected data\n");
        return Err(EINVAL);
    }
    if kp.addr.is_null() {
        pr_err!("cannot resolve symbol {name:?} (register_kprobe: {ret})\n");
        return Err(ENOENT);
    }
    Ok(kp.addr as usize)
}
