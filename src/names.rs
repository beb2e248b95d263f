// SPDX-License-Identifier: GPL-2.0

//! The names the module gives its files, its sysctl and its events' systems.
//!
//! They are upstream's, so that clients find the ABI where they look for it. A build for `make
//! bench`'s shared mode (`RUE_BESIDE=1`, Kbuild's `--cfg rue_beside`) loads beside the kernel's
//! own user_events instead, in one kernel, so that both are measured in the same boot: every
//! name is then prefixed with `rue_` (`Documentation/performance.md`, "The command").

use kernel::str::CStr;

/// Prefixes `$name` with `rue_` in a build beside the kernel's own user_events.
macro_rules! name {
    ($name:literal) => {{
        #[cfg(not(rue_beside))]
        let name = kernel::c_str!($name);
        #[cfg(rue_beside)]
        let name = kernel::c_str!(concat!("rue_", $name));
        name
    }};
}

/// The write and registration file at the tracefs root.
pub(crate) const DATA: &CStr = name!("user_events_data");
/// The list of events at the tracefs root.
pub(crate) const STATUS: &CStr = name!("user_events_status");
/// The module's counters at the tracefs root.
pub(crate) const STATS: &CStr = name!("user_events_stats");
/// The sysctl under `kernel.` that caps the number of events.
pub(crate) const MAX_SYSCTL: &CStr = name!("user_events_max");
/// The system of events registered without `USER_EVENT_REG_MULTI_FORMAT`.
pub(crate) const SYSTEM: &CStr = name!("user_events");
/// The system of multi-format events.
pub(crate) const SYSTEM_MULTI: &CStr = name!("user_events_multi");
