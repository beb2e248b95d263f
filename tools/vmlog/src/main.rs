// SPDX-License-Identifier: GPL-2.0

//! `rue-vmlog LOG [SUMMARY]`: prints the results found in a test VM console log, then
//! `N passed, N failed` (skips listed and counted apart). Writes `passed failed skipped` to
//! SUMMARY if given. Exits 1 if anything failed, 3 if the only failure is a kernel report
//! during boot (before `/init`), which tools/vm/run.sh answers with one more boot.

use rue_vmlog::{read_log, Outcome};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: rue-vmlog LOG [SUMMARY]");
        return ExitCode::from(2);
    };
    let log = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => {
            eprintln!("rue-vmlog: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let report = read_log(&log);
    for r in &report.results {
        match &r.outcome {
            Outcome::Pass => println!("PASS {}", r.name),
            Outcome::Fail(why) if why.is_empty() => println!("FAIL {}", r.name),
            Outcome::Fail(why) => println!("FAIL {} ({why})", r.name),
            Outcome::Skip(why) => println!("SKIP {} ({why})", r.name),
        }
    }
    if !report.boot_reports.is_empty() {
        println!("kernel log reports during boot, before /init:");
        for line in &report.boot_reports {
            println!("  {line}");
        }
    }
    if !report.kernel_reports.is_empty() {
        println!("kernel log reports:");
        for line in &report.kernel_reports {
            println!("  {line}");
        }
    }
    let (passed, failed, skipped) = report.totals();
    if let Some(summary) = args.get(2) {
        if let Err(e) = std::fs::write(summary, format!("{passed} {failed} {skipped}\n")) {
            eprintln!("rue-vmlog: {summary}: {e}");
            return ExitCode::from(2);
        }
    }
    println!("vm: {passed} passed, {failed} failed, {skipped} skipped");
    let boot_only = failed == 1 && !report.boot_reports.is_empty();
    if failed == 0 {
        ExitCode::SUCCESS
    } else if boot_only {
        ExitCode::from(3)
    } else {
        ExitCode::FAILURE
    }
}
