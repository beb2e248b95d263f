// SPDX-License-Identifier: GPL-2.0

//! Pure logic of user_events: no `kernel::` imports, only `core`, so every file here is also
//! compiled and unit-tested on the host (`tools/hosttest`, `cargo test`).

pub(crate) mod abi;
#[cfg_attr(not(test), expect(dead_code, reason = "used by the event glue (issue 3)"))]
pub(crate) mod grammar;
#[cfg_attr(not(test), expect(dead_code, reason = "used by the event glue (issue 3)"))]
pub(crate) mod matching;
#[cfg_attr(not(test), expect(dead_code, reason = "used by the event glue (issue 3)"))]
pub(crate) mod print_fmt;
#[cfg_attr(not(test), expect(dead_code, reason = "used by the event glue (issue 3)"))]
pub(crate) mod show;
pub(crate) mod status;
#[cfg_attr(not(test), expect(dead_code, reason = "used by the event glue (issue 3)"))]
pub(crate) mod trace_output;
#[cfg_attr(not(test), expect(dead_code, reason = "used by the event glue (issue 3)"))]
pub(crate) mod validate;
