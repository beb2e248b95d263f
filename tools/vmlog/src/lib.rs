// SPDX-License-Identifier: GPL-2.0

//! The test VM's console log, read back on the host.
//!
//! The guest's init (tools/vm/init) frames everything with `RUE-` marker lines: each program
//! between `RUE-PROG-BEGIN <name>` and `RUE-PROG-END <name> <rc>`, module load and unload
//! results, the command's exit status (`RUE-CMD-EXIT <rc>`), and the whole kernel log between
//! `RUE-DMESG-BEGIN` and `RUE-DMESG-END`. This crate turns that into test results and fails
//! the run on any kernel report, on any program that did not run to its end or reported a
//! different number of results than its TAP plan declared beforehand, and on any skip that
//! the kernel's list of expected skips does not name ([`ExpectedSkips`]).

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
/// reports, oopses and panics, hung tasks and lockups.
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
    "blocked for more than",
    "soft lockup",
    "hard LOCKUP",
];

/// The kernel-log line that marks the end of boot: reports before it are boot reports.
const INIT_STARTED: &str = "Run /init as init process";

/// The first line the kernel logs: while it is in the log, nothing has scrolled out of the
/// buffer, so the scan saw every line since boot.
const BOOT_BANNER: &str = "Linux version ";

/// A line the guest's init logs at `KERN_DEBUG`, below any console log level: found in the
/// kernel log, it shows that the scan reads the buffer whole, whatever the console prints.
pub const KMSG_PROBE: &str = "RUE-KMSG-PROBE";

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

/// A TAP line that counts: a result or a plan.
enum Tap {
    /// `ok N desc`, `not ok N desc`, with `# SKIP reason`.
    Result(String, Outcome),
    /// `1..N`, possibly `1..0 # SKIP reason`.
    Plan(usize, Option<String>),
}

/// Splits `text` at a TAP directive (a `#` at its start or after white space): the text before
/// it and, for a `SKIP` directive (any case, then white space or the end), the reason.
fn skip_directive(text: &str) -> (&str, Option<String>) {
    let bytes = text.as_bytes();
    let at = (0..bytes.len())
        .find(|&i| bytes[i] == b'#' && (i == 0 || bytes[i - 1].is_ascii_whitespace()));
    let Some(i) = at else {
        return (text, None);
    };
    let d = text[i + 1..].trim_start();
    let skip = d
        .as_bytes()
        .get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case(b"skip"))
        && d.as_bytes().get(4).is_none_or(|c| c.is_ascii_whitespace());
    (&text[..i], skip.then(|| d[4..].trim().to_string()))
}

/// Parses a top-level TAP line.
fn parse_tap(line: &str) -> Option<Tap> {
    if let Some(rest) = line.strip_prefix("1..") {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let n = rest[..digits].parse().ok()?;
        let (_, skip) = skip_directive(&rest[digits..]);
        return Some(Tap::Plan(n, skip));
    }
    let (ok, rest) = if let Some(rest) = line.strip_prefix("ok ") {
        (true, rest)
    } else if let Some(rest) = line.strip_prefix("not ok ") {
        (false, rest)
    } else {
        return None;
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit()).trim();
    let (desc, skip) = skip_directive(rest);
    let outcome = match skip {
        Some(why) => Outcome::Skip(why),
        None if ok => Outcome::Pass,
        None => Outcome::Fail(String::new()),
    };
    Some(Tap::Result(desc.trim().to_string(), outcome))
}

/// Matches `text` against `pattern`, in which `*` stands for any run of characters.
pub fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let mut parts: Vec<&str> = parts.collect();
    let Some(last) = parts.pop() else {
        return rest.is_empty();
    };
    for part in parts {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// One expected skip: a test name and the reason it gives, each a [`glob`] pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkipRule {
    /// Patterns of the kernel names the rule holds for (`check.sh`'s suite tags).
    pub kernels: Vec<String>,
    /// Pattern of the result's name, `<program>: <test>`.
    pub name: String,
    /// Pattern of the reason the test printed.
    pub reason: String,
    /// Line in the list, for messages.
    pub line: usize,
}

/// The skips a kernel is expected to have (tools/testing/expected-skips): any other skip fails
/// the run, so a test that stops running cannot pass as a skip.
///
/// The list is sections of rules. A section opens with `[KERNEL ...]`, patterns of the suite
/// names it holds for; each rule is `NAME | REASON`, patterns of the skipped result's name and of
/// its reason. `#` starts a comment line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpectedSkips {
    /// Every rule of the list.
    pub rules: Vec<SkipRule>,
}

impl ExpectedSkips {
    /// Parses a list; an error names the line.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rules = Vec::new();
        let mut kernels: Option<Vec<String>> = None;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                let names: Vec<String> = section.split_whitespace().map(str::to_string).collect();
                if names.is_empty() {
                    return Err(format!("line {}: a section names no kernel", i + 1));
                }
                kernels = Some(names);
                continue;
            }
            let Some(kernels) = &kernels else {
                return Err(format!(
                    "line {}: a rule before any [KERNEL] section",
                    i + 1
                ));
            };
            let Some((name, reason)) = line.split_once(" | ") else {
                return Err(format!("line {}: not NAME | REASON", i + 1));
            };
            let (name, reason) = (name.trim(), reason.trim());
            if name.is_empty() || reason.is_empty() {
                return Err(format!("line {}: a rule needs a name and a reason", i + 1));
            }
            rules.push(SkipRule {
                kernels: kernels.clone(),
                name: name.to_string(),
                reason: reason.to_string(),
                line: i + 1,
            });
        }
        Ok(Self { rules })
    }

    /// The rule that expects a skip of `name` for `reason` on `kernel`, if any.
    pub fn find(&self, kernel: &str, name: &str, reason: &str) -> Option<&SkipRule> {
        self.rules.iter().find(|r| {
            r.kernels.iter().any(|k| glob(k, kernel))
                && glob(&r.name, name)
                && glob(&r.reason, reason)
        })
    }
}

/// What a run must show besides its own results.
#[derive(Clone, Debug, Default)]
pub struct Expect {
    /// The programs the command runs (`rue-run NAME` lines of its script): each must begin and
    /// end. `None`: not checked.
    pub programs: Option<Vec<String>>,
    /// The kernel's name and the skips it may have. `None`: every skip stays a skip (for logs
    /// read outside make check).
    pub skips: Option<(String, ExpectedSkips)>,
}

/// The program names a command script runs: the first word after `rue-run` on each line,
/// unquoted (`rue-run 'upstream abi_test' abi_test -t forks` names `upstream abi_test`).
pub fn programs_of_script(script: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in script.lines() {
        let Some(rest) = line.trim_start().strip_prefix("rue-run ") else {
            continue;
        };
        let rest = rest.trim_start();
        let name = if let Some(quoted) = rest.strip_prefix('\'') {
            quoted.split('\'').next().unwrap_or("")
        } else {
            rest.split_whitespace().next().unwrap_or("")
        };
        if !name.is_empty() {
            names.push(name.to_string());
        }
    }
    names
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
    TestResult {
        name: name.to_string(),
        outcome: Outcome::Fail(why.into()),
    }
}

fn pass(name: &str) -> TestResult {
    TestResult {
        name: name.to_string(),
        outcome: Outcome::Pass,
    }
}

/// The program being read: its name, where its results start, its plan and whether a result
/// came before the plan.
struct Program {
    name: String,
    first: usize,
    /// Its own TAP results, not counting what this reader adds.
    results: usize,
    plan: Option<usize>,
    plan_late: bool,
}

/// Reads a console log with no expectations beyond the log's own ([`read_log_expecting`]).
pub fn read_log(log: &str) -> Report {
    read_log_expecting(log, &Expect::default())
}

/// Reads a console log. Besides the programs' own TAP results, it adds checks of its own: the
/// VM finished and the command ran to its end with status 0; each program the command lists
/// began and ended; each exited cleanly or reported its failures, declared its TAP plan before
/// its results and reported as many as it planned; the module loaded and unloaded; the kernel
/// log is whole (its first line still in the buffer, a debug-level line in it) and free of
/// reports; every skip is one `expect` lists for this kernel.
pub fn read_log_expecting(log: &str, expect: &Expect) -> Report {
    let mut report = Report::default();
    let mut program: Option<Program> = None;
    let mut ended: Vec<String> = Vec::new();
    let mut in_dmesg = false;
    let mut dmesg: Vec<&str> = Vec::new();
    let mut finished = false;
    let mut dmesg_seen = false;
    let mut cmd_exit: Option<String> = None;

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
                if let Some(p) = program.take() {
                    report
                        .results
                        .push(fail(&p.name, "did not end before the next began"));
                }
                program = Some(Program {
                    name,
                    first: report.results.len(),
                    results: 0,
                    plan: None,
                    plan_late: false,
                });
            }
            Some("RUE-PROG-END") => {
                let rc = words.next_back().unwrap_or("?");
                let name = words.collect::<Vec<_>>().join(" ");
                if let Some(p) = program.take() {
                    if p.name != name {
                        let why = format!("ended as another program, {name:?}");
                        report.results.push(fail(&p.name, why));
                    }
                    end_program(&mut report, &p, rc);
                    ended.push(p.name);
                }
            }
            Some("RUE-CHECK") => {
                // RUE-CHECK <ok|fail> <name...>: a check made by the guest's init itself.
                let verdict = words.next().unwrap_or("fail");
                let name = words.collect::<Vec<_>>().join(" ");
                report.results.push(if verdict == "ok" {
                    pass(&name)
                } else {
                    fail(&name, "")
                });
            }
            Some("RUE-CMD-EXIT") => cmd_exit = Some(words.next().unwrap_or("?").to_string()),
            Some("RUE-DMESG-BEGIN") => {
                in_dmesg = true;
                dmesg_seen = true;
            }
            Some("RUE-VM-DONE") => finished = true,
            _ => match (parse_tap(line), program.as_mut()) {
                (Some(Tap::Result(desc, outcome)), mut p) => {
                    if let Some(p) = p.as_mut() {
                        p.results += 1;
                    }
                    let prefix = p.as_ref().map(|p| p.name.as_str()).unwrap_or("vm");
                    let name = format!("{prefix}: {desc}");
                    report.results.push(TestResult { name, outcome });
                }
                (Some(Tap::Plan(n, skip)), Some(p)) => {
                    if p.plan.is_some() {
                        report
                            .results
                            .push(fail(&p.name, "declared a second TAP plan"));
                    }
                    p.plan_late |= p.results > 0;
                    p.plan = Some(n);
                    if let (0, Some(why)) = (n, skip) {
                        // `1..0 # SKIP reason`: the whole program skipped.
                        let name = format!("{}: all of its tests", p.name);
                        report.results.push(TestResult {
                            name,
                            outcome: Outcome::Skip(why),
                        });
                        p.plan = None;
                    }
                }
                _ => {}
            },
        }
    }
    if let Some(p) = program {
        report
            .results
            .push(fail(&p.name, "did not finish (VM stopped while it ran)"));
    }
    if let Some(programs) = &expect.programs {
        // As many ends of each name as the script lists runs of it (the upstream tests run one
        // program under one name several times).
        let mut seen: Vec<&String> = Vec::new();
        for name in programs {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            let listed = programs.iter().filter(|n| *n == name).count();
            let runs = ended.iter().filter(|n| *n == name).count();
            if runs < listed {
                let why = format!(
                    "did not run: the command lists it {listed} time(s), the log ends it {runs} time(s)"
                );
                report.results.push(fail(name, why));
            }
        }
    }
    match cmd_exit.as_deref() {
        Some("0") => report
            .results
            .push(pass("vm: the command ran to its end and exited 0")),
        Some(rc) => report.results.push(fail(
            "vm: the command ran to its end and exited 0",
            format!("exited {rc}"),
        )),
        None if finished => report.results.push(fail(
            "vm: the command ran to its end and exited 0",
            "no RUE-CMD-EXIT line",
        )),
        None => {}
    }
    if let Some((kernel, skips)) = &expect.skips {
        for r in report.results.iter_mut() {
            if let Outcome::Skip(why) = &r.outcome {
                if skips.find(kernel, &r.name, why).is_none() {
                    r.outcome = Outcome::Fail(format!(
                        "skipped ({why}), which tools/testing/expected-skips does not expect on {kernel}"
                    ));
                }
            }
        }
    }
    let init_at = dmesg
        .iter()
        .position(|l| l.contains(INIT_STARTED))
        .unwrap_or(0);
    report.boot_reports = kernel_reports(&dmesg[..init_at]);
    report.kernel_reports = kernel_reports(&dmesg[init_at..]);
    if !report.boot_reports.is_empty() {
        report.results.push(fail(
            "vm: kernel booted without a report before /init",
            format!("{} report line(s)", report.boot_reports.len()),
        ));
    }
    const CLEAN: &str = "vm: kernel log has no WARNING/BUG/lockdep/RCU/KASAN/kmemleak/hang report";
    const WHOLE: &str =
        "vm: the kernel log is whole: its boot banner and a debug-level line are in it";
    if !finished || !dmesg_seen {
        report.results.push(fail(
            "vm: finished and collected the kernel log",
            "no end marker",
        ));
        return report;
    }
    if !dmesg.iter().any(|l| l.contains(BOOT_BANNER)) {
        report.results.push(fail(
            WHOLE,
            "no boot banner: the start of the log scrolled out",
        ));
    } else if !dmesg.iter().any(|l| l.contains(KMSG_PROBE)) {
        report
            .results
            .push(fail(WHOLE, format!("no {KMSG_PROBE} line")));
    } else {
        report.results.push(pass(WHOLE));
    }
    if report.kernel_reports.is_empty() {
        report.results.push(pass(CLEAN));
    } else {
        report.results.push(fail(
            CLEAN,
            format!("{} report line(s)", report.kernel_reports.len()),
        ));
    }
    report
}

/// The checks at a program's end: its exit status, its results and its plan.
fn end_program(report: &mut Report, p: &Program, rc: &str) {
    let results = &report.results[p.first..];
    let failed_inside = results
        .iter()
        .any(|r| matches!(r.outcome, Outcome::Fail(_)));
    let count = p.results;
    let whole_skip = results
        .iter()
        .any(|r| r.name == format!("{}: all of its tests", p.name));
    if rc != "0" && !failed_inside {
        report
            .results
            .push(fail(&p.name, format!("exited with status {rc}")));
    } else if count == 0 && !whole_skip {
        report
            .results
            .push(fail(&p.name, "reported no test result"));
    }
    if whole_skip {
        if count > 0 {
            let why = "skipped as a whole (1..0 # SKIP), yet reported results";
            report.results.push(fail(&p.name, why));
        }
        return;
    }
    match p.plan {
        None => report
            .results
            .push(fail(&p.name, "declared no TAP plan (1..N)")),
        Some(_) if p.plan_late => report
            .results
            .push(fail(&p.name, "declared its TAP plan after its results")),
        Some(n) if n != count => report.results.push(fail(
            &p.name,
            format!("planned {n} results, reported {count}"),
        )),
        Some(_) => {}
    }
}
