// SPDX-License-Identifier: GPL-2.0

//! `rue-vmlog LOG [SUMMARY] [--programs SCRIPT] [--skips LIST --kernel NAME]`: prints the
//! results found in a test VM console log, then `N passed, N failed, N skipped`. With
//! `--programs`, every program SCRIPT runs (its `rue-run NAME` lines) must have begun and ended;
//! with `--skips`, a skip that LIST (tools/testing/expected-skips) does not expect on kernel
//! NAME is a failure. Writes `passed failed skipped` to SUMMARY if given. Exits 1 if anything
//! failed, 3 if the only failure is a kernel report during boot (before `/init`), which
//! tools/vm/run.sh answers with one more boot, 2 on bad usage.

use rue_vmlog::{programs_of_script, read_log_expecting, Expect, ExpectedSkips, Outcome};
use std::process::ExitCode;

fn read(path: &str) -> Result<String, String> {
    std::fs::read(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|e| format!("{path}: {e}"))
}

struct Args {
    log: String,
    summary: Option<String>,
    expect: Expect,
}

fn parse_args() -> Result<Args, String> {
    let mut positional = Vec::new();
    let (mut programs, mut skips, mut kernel) = (None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--programs" => programs = Some(value()?),
            "--skips" => skips = Some(value()?),
            "--kernel" => kernel = Some(value()?),
            _ if arg.starts_with("--") => return Err(format!("unknown option {arg}")),
            _ => positional.push(arg),
        }
    }
    let mut positional = positional.into_iter();
    let log = positional.next().ok_or("no LOG")?;
    let summary = positional.next();
    let mut expect = Expect::default();
    if let Some(path) = programs {
        expect.programs = Some(programs_of_script(&read(&path)?));
    }
    match (skips, kernel) {
        (Some(path), Some(kernel)) => {
            let list = ExpectedSkips::parse(&read(&path)?).map_err(|e| format!("{path}: {e}"))?;
            expect.skips = Some((kernel, list));
        }
        (None, None) => {}
        _ => return Err("--skips and --kernel go together".into()),
    }
    Ok(Args {
        log,
        summary,
        expect,
    })
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("rue-vmlog: {e}");
            eprintln!(
                "usage: rue-vmlog LOG [SUMMARY] [--programs SCRIPT] [--skips LIST --kernel NAME]"
            );
            return ExitCode::from(2);
        }
    };
    let log = match read(&args.log) {
        Ok(log) => log,
        Err(e) => {
            eprintln!("rue-vmlog: {e}");
            return ExitCode::from(2);
        }
    };
    let report = read_log_expecting(&log, &args.expect);
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
    if let Some(summary) = &args.summary {
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
