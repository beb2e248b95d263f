// SPDX-License-Identifier: GPL-2.0

//! A tiny TAP harness for the guest tests: each test is a function returning
//! `Result<(), String>`; a panic or an `Err` fails it, and the process exits non-zero if any
//! test failed. The harness uses only `std`; the modules below serve the tests of real
//! clients (crates from crates.io), which see the module through a tracer: tracefs, ftrace's
//! binary records, perf's ring, and Microsoft's decoder. Every binary links statically.

pub mod decode;
pub mod ftrace;
pub mod perf;
pub mod tracefs;
pub mod tracer;

use std::{io::Error, process::Command};

/// One guest test.
pub struct Test {
    /// Name printed in the TAP line, e.g. `status_text_of_empty_group`.
    pub name: &'static str,
    /// The body.
    pub run: fn() -> Result<(), String>,
}

/// Runs `tests`, prints TAP version 13 and exits with 1 if any failed.
pub fn run(tests: &[Test]) -> ! {
    println!("TAP version 13");
    println!("1..{}", tests.len());
    let mut failed = 0;
    for (i, t) in tests.iter().enumerate() {
        let result = std::panic::catch_unwind(t.run).unwrap_or_else(|_| Err("panicked".into()));
        match result {
            Ok(()) => println!("ok {} {}", i + 1, t.name),
            Err(why) => {
                failed += 1;
                println!("# {}: {why}", t.name);
                println!("not ok {} {}", i + 1, t.name);
            }
        }
    }
    println!("# Totals: pass:{} fail:{failed}", tests.len() - failed);
    std::process::exit(if failed == 0 { 0 } else { 1 })
}

/// The argument a test binary is started with to play a client that registers, is enabled and
/// exits with everything still open, leaving the cleanup to the kernel.
pub const CHILD_ARG: &str = "register-and-exit";

/// In a process started with [`CHILD_ARG`], runs `child` and exits: 0 if it succeeded, 1 after
/// printing its error. Returns in any other process.
pub fn child_main(child: fn() -> Result<(), String>) {
    if std::env::args().nth(1).as_deref() != Some(CHILD_ARG) {
        return;
    }
    if let Err(e) = child() {
        println!("child: {e}");
        std::process::exit(1);
    }
    std::process::exit(0);
}

/// Runs this binary as the child ([`child_main`]) and checks that it succeeded and printed
/// `said`.
pub fn run_child(said: &str) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe)
        .arg(CHILD_ARG)
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure(
        out.status.success(),
        format!("child: {:?}: {stdout}", out.status),
    )?;
    ensure(stdout.contains(said), format!("child said {stdout:?}"))
}

/// Checks that a libc-style return value failed with `errno`.
pub fn expect_errno(what: &str, ret: isize, errno: i32) -> Result<(), String> {
    let got = Error::last_os_error().raw_os_error().unwrap_or(0);
    if ret == -1 && got == errno {
        Ok(())
    } else {
        Err(format!(
            "{what}: expected errno {errno}, got ret {ret} errno {got}"
        ))
    }
}

/// Checks a condition with a message.
pub fn ensure(cond: bool, msg: impl Into<String>) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(msg.into())
    }
}
