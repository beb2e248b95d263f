// SPDX-License-Identifier: GPL-2.0

//! The test VM's console log, read back on the host.
//!
//! The guest's init (tools/vm/init) frames everything with `RUE-` marker lines: each program
//! between `RUE-PROG-BEGIN <name>` and `RUE-PROG-END <name> <rc>`, module load and unload
//! results, and the whole kernel log between `RUE-DMESG-BEGIN` and `RUE-DMESG-END`. This
//! crate turns that into test results and fails the run on any kernel report.

/// Outcome of one test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The test passed.
    Pass,
    /// The test failed; the string says why when the log does.
    Fail(String),
    /// The test was skipped, with the reason given; never counted as passed.
    Skip(String),
}

/// One result, named `<program>: <test>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestResult {
    /// `<program>: <test description>`.
    pub name: String,
    /// What happened.
    pub outcome: Outcome,
}

/// Kernel-log lines that fail a run: warnings, BUGs, lockdep, RCU, KASAN and kmemleak
/// reports, oopses and panics.
const REPORT_PATTERNS: &[&str] = &[
    "WARNING:",
    "BUG:",
    "BUG kmalloc",
    "kernel BUG",
    "Oops",
    "general protection fault",
    "Kernel panic",
    "KASAN:",
    "kmemleak: ",
    "unreferenced object",
    "possible recursive locking",
    "possible circular locking",
    "inconsistent lock state",
    "lock held when returning",
    "turning off the locking correctness validator",
    "suspicious RCU usage",
    "RCU stall",
    "rcu_preempt detected stalls",
    "rcu: INFO:",
    "UBSAN:",
    "CFI failure",
    "refcount_t:",
    "list_add corruption",
    "list_del corruption",
    "bad rss-counter",
    "Call Trace:",
    "hung_task",
    "soft lockup",
];

/// The kernel-log line that marks the end of boot: reports before it are boot reports.
const INIT_STARTED: &str = "Run /init as init process";

/// kmemleak lines that are normal, not reports.
const BENIGN_PATTERNS: &[&str] = &["kmemleak: Kernel memory leak detector initialized"];

/// Returns the kernel-log lines that are reports.
pub fn kernel_reports(dmesg: &[&str]) -> Vec<String> {
    dmesg
        .iter()
        .filter(|line| {
            REPORT_PATTERNS.iter().any(|p| line.contains(p))
                && !BENIGN_PATTERNS.iter().any(|p| line.contains(p))
        })
        .map(|line| line.to_string())
        .collect()
}

/// Parses a top-level TAP result line: `ok N desc`, `not ok N desc`, with `# SKIP reason`.
fn parse_tap(line: &str) -> Option<(String, Outcome)> {
    let (ok, rest) = if let Some(rest) = line.strip_prefix("ok ") {
        (true, rest)
    } else if let Some(rest) = line.strip_prefix("not ok ") {
        (false, rest)
    } else {
        return None;
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit()).trim();
    let (desc, directive) = match rest.find(" # ") {
        Some(i) => (&rest[..i], Some(rest[i + 3..].trim())),
        None => (rest, None),
    };
    if let Some(d) = directive {
        if d.len() >= 4 && d[..4].eq_ignore_ascii_case("skip") {
            return Some((desc.to_string(), Outcome::Skip(d[4..].trim().to_string())));
        }
    }
    let outcome = if ok { Outcome::Pass } else { Outcome::Fail(String::new()) };
    Some((desc.to_string(), outcome))
}

/// Everything read from one console log.
#[derive(Debug, Default)]
pub struct Report {
    /// Test results in log order.
    pub results: Vec<TestResult>,
    /// Kernel-log report lines from the run (from `/init` on).
    pub kernel_reports: Vec<String>,
    /// Kernel-log report lines from early boot, before `/init` ran: a kernel or emulator
    /// problem that no test or module code can have caused, but one that disables lock
    /// debugging for the rest of the run, so the run cannot be trusted either.
    pub boot_reports: Vec<String>,
}

impl Report {
    /// Number of passed, failed and skipped results.
    pub fn totals(&self) -> (usize, usize, usize) {
        let mut t = (0, 0, 0);
        for r in &self.results {
            match r.outcome {
                Outcome::Pass => t.0 += 1,
                Outcome::Fail(_) => t.1 += 1,
                Outcome::Skip(_) => t.2 += 1,
            }
        }
        t
    }
}

fn fail(name: &str, why: impl Into<String>) -> TestResult {
    TestResult { name: name.to_string(), outcome: Outcome::Fail(why.into()) }
}

/// Reads a console log. Besides the programs' own TAP results, it adds checks of its own:
/// the VM finished, each program exited cleanly or reported its failures, the module loaded
/// and unloaded, and the kernel log is free of reports.
pub fn read_log(log: &str) -> Report {
    let mut report = Report::default();
    let mut program: Option<(String, usize)> = None;
    let mut in_dmesg = false;
    let mut dmesg: Vec<&str> = Vec::new();
    let mut finished = false;
    let mut dmesg_seen = false;

    for raw in log.lines() {
        let line = raw.trim_end_matches('\r');
        if in_dmesg {
            if line == "RUE-DMESG-END" {
                in_dmesg = false;
            } else {
                dmesg.push(line);
            }
            continue;
        }
        let mut words = line.split_whitespace();
        match words.next() {
            Some("RUE-PROG-BEGIN") => {
                let name = words.collect::<Vec<_>>().join(" ");
                program = Some((name, report.results.len()));
            }
            Some("RUE-PROG-END") => {
                let rc = words.last().unwrap_or("?");
                if let Some((name, first)) = program.take() {
                    let failed_inside = report.results[first..]
                        .iter()
                        .any(|r| matches!(r.outcome, Outcome::Fail(_)));
                    let ran_any = report.results.len() > first;
                    if rc != "0" && !failed_inside {
                        report.results.push(fail(&name, format!("exited with status {rc}")));
                    } else if !ran_any {
                        report.results.push(fail(&name, "reported no test result"));
                    }
                }
            }
            Some("RUE-CHECK") => {
                // RUE-CHECK <ok|fail> <name...>: a check made by the guest's init itself.
                let verdict = words.next().unwrap_or("fail");
                let name = words.collect::<Vec<_>>().join(" ");
                report.results.push(if verdict == "ok" {
                    TestResult { name, outcome: Outcome::Pass }
                } else {
                    fail(&name, "")
                });
            }
            Some("RUE-DMESG-BEGIN") => {
                in_dmesg = true;
                dmesg_seen = true;
            }
            Some("RUE-VM-DONE") => finished = true,
            _ => {
                if let Some((desc, outcome)) = parse_tap(line) {
                    let prefix = program.as_ref().map(|(n, _)| n.as_str()).unwrap_or("vm");
                    report.results.push(TestResult { name: format!("{prefix}: {desc}"), outcome });
                }
            }
        }
    }
    if let Some((name, _)) = program {
        report.results.push(fail(&name, "did not finish (VM stopped while it ran)"));
    }
    let init_at = dmesg.iter().position(|l| l.contains(INIT_STARTED)).unwrap_or(0);
    report.boot_reports = kernel_reports(&dmesg[..init_at]);
    report.kernel_reports = kernel_reports(&dmesg[init_at..]);
    if !report.boot_reports.is_empty() {
        report.results.push(fail(
            "vm: kernel booted without a report before /init",
            format!("{} report line(s)", report.boot_reports.len()),
        ));
    }
    if !finished || !dmesg_seen {
        report.results.push(fail("vm: finished and collected the kernel log", "no end marker"));
    } else if report.kernel_reports.is_empty() {
        report.results.push(TestResult {
            name: "vm: kernel log has no WARNING/BUG/lockdep/RCU/KASAN/kmemleak report".into(),
            outcome: Outcome::Pass,
        });
    } else {
        report.results.push(fail(
            "vm: kernel log has no WARNING/BUG/lockdep/RCU/KASAN/kmemleak report",
            format!("{} report line(s)", report.kernel_reports.len()),
        ));
    }
    report
}
