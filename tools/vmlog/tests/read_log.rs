// SPDX-License-Identifier: GPL-2.0

//! The VM log reader fails runs for the right reasons.

use rue_vmlog::{
    glob, programs_of_script, read_log, read_log_expecting, Expect, ExpectedSkips, Outcome,
};

const BANNER: &str = "[    0.0] Linux version 7.3.4 (clang 19)\n";
const PROBE: &str = "[    1.1] RUE-KMSG-PROBE\n";
const CLEAN_DMESG: &str = "RUE-DMESG-BEGIN\n[    0.0] Linux version 7.3.4 (clang 19)\n[    0.0] kmemleak: Kernel memory leak detector initialized (mem pool available: 15000)\n[    1.0] rust_user_events: user_events ready\n[    1.1] RUE-KMSG-PROBE\nRUE-DMESG-END\nRUE-VM-DONE\n";

/// The results a clean run adds to its programs': the command exited 0, the log is whole and
/// has no report.
const RUN_CHECKS: usize = 3;

fn log_with(body: &str, dmesg: &str) -> String {
    format!("boot noise\n{body}RUE-CMD-EXIT 0\n{dmesg}")
}

/// A dmesg section with `lines` between a whole log's banner and probe.
fn dmesg_with(lines: &str) -> String {
    format!("RUE-DMESG-BEGIN\n{BANNER}{lines}{PROBE}RUE-DMESG-END\nRUE-VM-DONE\n")
}

const ONE: &str = "RUE-PROG-BEGIN t\nTAP version 13\n1..1\nok 1 a\nRUE-PROG-END t 0\n";

fn failures(r: &rue_vmlog::Report) -> Vec<String> {
    r.results
        .iter()
        .filter_map(|t| match &t.outcome {
            Outcome::Fail(why) => Some(format!("{}: {why}", t.name)),
            _ => None,
        })
        .collect()
}

#[test]
fn passing_program_and_clean_log_pass() {
    let r = read_log(&log_with(ONE, CLEAN_DMESG));
    assert_eq!(r.totals(), (1 + RUN_CHECKS, 0, 0), "{:?}", r.results);
}

#[test]
fn warning_in_kernel_log_fails_the_run() {
    let dmesg = dmesg_with("[ 2.0] WARNING: CPU: 0 PID: 1 at src/rust_user_events_main.rs:10\n");
    let r = read_log(&log_with(ONE, &dmesg));
    assert_eq!(r.totals(), (RUN_CHECKS, 1, 0));
    assert_eq!(r.kernel_reports.len(), 1);
}

#[test]
fn each_report_kind_is_caught() {
    for line in [
        "BUG: KASAN: slab-use-after-free in foo",
        "WARNING: possible circular locking dependency detected",
        "WARNING: suspicious RCU usage",
        "kmemleak: 1 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
        "unreferenced object 0xffff888003a4e000 (size 64):",
        "BUG: sleeping function called from invalid context at kernel/locking/mutex.c:580",
        "Oops: general protection fault, probably for non-canonical address",
        "CFI failure at exec_probe+0x0/0x20 [rust_user_events] (target: exec_probe; expected type: 0x6d41a2e7)",
        "INFO: task rue_test:123 blocked for more than 120 seconds.",
        "\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message.",
        "watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [kworker/1:1:40]",
    ] {
        let dmesg = dmesg_with(&format!("[ 1.0] {line}\n"));
        let r = read_log(&log_with(ONE, &dmesg));
        assert_eq!(r.totals().1, 1, "not caught: {line}");
    }
}

#[test]
fn skips_are_listed_not_passed() {
    let log = log_with(
        "RUE-PROG-BEGIN t\n1..2\nok 1 a # SKIP no tracefs\nok 2 b\nRUE-PROG-END t 0\n",
        CLEAN_DMESG,
    );
    let r = read_log(&log);
    assert_eq!(r.totals(), (1 + RUN_CHECKS, 0, 1));
    assert!(matches!(&r.results[0].outcome, Outcome::Skip(why) if why == "no tracefs"));
}

#[test]
fn crashed_program_without_failures_counts_as_failed() {
    let log = log_with(
        "RUE-PROG-BEGIN t\n1..1\nok 1 a\nRUE-PROG-END t 139\n",
        CLEAN_DMESG,
    );
    assert_eq!(read_log(&log).totals(), (1 + RUN_CHECKS, 1, 0));
}

#[test]
fn program_without_results_fails() {
    let r = read_log(&log_with(
        "RUE-PROG-BEGIN t\n1..0\nRUE-PROG-END t 0\n",
        CLEAN_DMESG,
    ));
    assert_eq!(r.totals(), (RUN_CHECKS, 1, 0));
}

#[test]
fn vm_that_never_finishes_fails() {
    let r = read_log("boot noise\nRUE-PROG-BEGIN t\n1..1\nok 1 a\n");
    let (_, failed, _) = r.totals();
    assert_eq!(failed, 2, "{:?}", r.results);
}

#[test]
fn init_checks_count() {
    let r = read_log(&log_with(
        "RUE-CHECK ok insmod\nRUE-CHECK fail rmmod\n",
        CLEAN_DMESG,
    ));
    assert_eq!(r.totals(), (1 + RUN_CHECKS, 1, 0));
}

#[test]
fn nested_kselftest_lines_are_not_results() {
    let log = log_with(
        "RUE-PROG-BEGIN t\nTAP version 13\n1..1\n# Starting 1 tests\n#  RUN  user.a ...\n#            OK  user.a\nok 1 user.a\n# Totals: pass:1 fail:0\nRUE-PROG-END t 0\n",
        CLEAN_DMESG,
    );
    assert_eq!(read_log(&log).totals(), (1 + RUN_CHECKS, 0, 0));
}

#[test]
fn report_during_boot_is_kept_apart_and_fails() {
    let dmesg = dmesg_with(
        "[ 0.009] BUG: KASAN: wild-memory-access in do_raw_spin_lock\n[ 45.8] Run /init as init process\n",
    );
    let r = read_log(&log_with(ONE, &dmesg));
    assert_eq!(r.boot_reports.len(), 1);
    assert!(r.kernel_reports.is_empty());
    assert_eq!(r.totals(), (1 + RUN_CHECKS, 1, 0));
}

#[test]
fn report_after_init_is_a_run_report() {
    let dmesg = dmesg_with("[ 45.8] Run /init as init process\n[ 50.0] WARNING: at foo\n");
    let r = read_log(&log_with(ONE, &dmesg));
    assert!(r.boot_reports.is_empty());
    assert_eq!(r.kernel_reports.len(), 1);
}

#[test]
fn a_log_whose_start_scrolled_out_fails() {
    let dmesg = format!("RUE-DMESG-BEGIN\n[ 9.0] late line\n{PROBE}RUE-DMESG-END\nRUE-VM-DONE\n");
    let r = read_log(&log_with(ONE, &dmesg));
    assert_eq!(r.totals(), (1 + RUN_CHECKS - 1, 1, 0), "{:?}", r.results);
    assert!(
        failures(&r)[0].contains("boot banner"),
        "{:?}",
        failures(&r)
    );
}

#[test]
fn a_log_without_the_debug_level_probe_fails() {
    let dmesg = format!("RUE-DMESG-BEGIN\n{BANNER}RUE-DMESG-END\nRUE-VM-DONE\n");
    let r = read_log(&log_with(ONE, &dmesg));
    assert_eq!(r.totals().1, 1);
    assert!(
        failures(&r)[0].contains("RUE-KMSG-PROBE"),
        "{:?}",
        failures(&r)
    );
}

#[test]
fn the_command_must_exit_zero_and_say_so() {
    let log = format!("boot\n{ONE}RUE-CMD-EXIT 1\n{CLEAN_DMESG}");
    assert_eq!(read_log(&log).totals().1, 1);
    let log = format!("boot\n{ONE}{CLEAN_DMESG}");
    let r = read_log(&log);
    assert_eq!(r.totals().1, 1);
    assert!(
        failures(&r)[0].contains("RUE-CMD-EXIT"),
        "{:?}",
        failures(&r)
    );
}

#[test]
fn a_plan_after_the_results_fails() {
    let log = log_with(
        "RUE-PROG-BEGIN t\nok 1 a\n1..1\nRUE-PROG-END t 0\n",
        CLEAN_DMESG,
    );
    let r = read_log(&log);
    assert_eq!(r.totals().1, 1);
    assert!(
        failures(&r)[0].contains("after its results"),
        "{:?}",
        failures(&r)
    );
}

#[test]
fn a_program_without_a_plan_fails() {
    let log = log_with("RUE-PROG-BEGIN t\nok 1 a\nRUE-PROG-END t 0\n", CLEAN_DMESG);
    let r = read_log(&log);
    assert_eq!(r.totals().1, 1);
    assert!(
        failures(&r)[0].contains("no TAP plan"),
        "{:?}",
        failures(&r)
    );
}

#[test]
fn fewer_results_than_planned_fail() {
    let log = log_with(
        "RUE-PROG-BEGIN t\n1..3\nok 1 a\nok 2 b\nRUE-PROG-END t 0\n",
        CLEAN_DMESG,
    );
    let r = read_log(&log);
    assert_eq!(r.totals(), (2 + RUN_CHECKS, 1, 0));
    assert!(
        failures(&r)[0].contains("planned 3 results, reported 2"),
        "{:?}",
        failures(&r)
    );
}

#[test]
fn a_listed_program_that_never_ran_fails() {
    let script = "rue-run t t\nrue-run 'upstream abi_test' abi_test -t forks\necho done\n";
    assert_eq!(programs_of_script(script), ["t", "upstream abi_test"]);
    let expect = Expect {
        programs: Some(programs_of_script(script)),
        skips: None,
    };
    let r = read_log_expecting(&log_with(ONE, CLEAN_DMESG), &expect);
    assert_eq!(
        failures(&r),
        ["upstream abi_test: did not run: the command lists it 1 time(s), the log ends it 0 time(s)"]
    );
}

#[test]
fn a_program_cut_off_by_the_next_fails() {
    let log = log_with(
        "RUE-PROG-BEGIN t\n1..1\nRUE-PROG-BEGIN u\n1..1\nok 1 b\nRUE-PROG-END u 0\n",
        CLEAN_DMESG,
    );
    let expect = Expect {
        programs: Some(vec!["t".into(), "u".into()]),
        skips: None,
    };
    let r = read_log_expecting(&log, &expect);
    assert_eq!(r.totals().1, 2, "{:?}", failures(&r));
}

const SKIPS: &str = "# comment\n[test]\nt: a | no fault injection*\n[debian-* experimental]\nt: * | the kernel has no CONFIG_KASAN\n";

#[test]
fn expected_skips_stay_skips_and_others_fail() {
    let list = ExpectedSkips::parse(SKIPS).unwrap();
    assert_eq!(list.rules.len(), 2);
    let log = log_with(
        "RUE-PROG-BEGIN t\n1..3\nok 1 a # SKIP no fault injection here\nok 2 b # SKIP the kernel has no CONFIG_KASAN\nok 3 c\nRUE-PROG-END t 0\n",
        CLEAN_DMESG,
    );
    let on = |kernel: &str| {
        let expect = Expect {
            programs: None,
            skips: Some((kernel.into(), list.clone())),
        };
        read_log_expecting(&log, &expect)
    };
    // On the test kernel, b's skip is not expected; on Debian's, a's is not.
    assert_eq!(on("test").totals(), (1 + RUN_CHECKS, 1, 1));
    assert!(failures(&on("test"))[0].starts_with("t: b: skipped (the kernel has no CONFIG_KASAN)"));
    assert_eq!(on("debian-arm64").totals(), (1 + RUN_CHECKS, 1, 1));
    assert_eq!(on("experimental").totals(), (1 + RUN_CHECKS, 1, 1));
    // Another reason for the same test is not the expected skip.
    let other = log_with(
        "RUE-PROG-BEGIN t\n1..1\nok 1 a # SKIP no user_events_data\nRUE-PROG-END t 0\n",
        CLEAN_DMESG,
    );
    let expect = Expect {
        programs: None,
        skips: Some(("test".into(), list)),
    };
    assert_eq!(read_log_expecting(&other, &expect).totals().1, 1);
}

#[test]
fn a_whole_program_skip_is_a_skip_to_expect() {
    let log = log_with(
        "RUE-PROG-BEGIN t\nTAP version 13\n1..0 # SKIP no user_events_data\nRUE-PROG-END t 0\n",
        CLEAN_DMESG,
    );
    assert_eq!(
        read_log(&log).totals(),
        (RUN_CHECKS, 0, 1),
        "{:?}",
        read_log(&log).results
    );
    let expect = Expect {
        programs: None,
        skips: Some(("test".into(), ExpectedSkips::parse(SKIPS).unwrap())),
    };
    assert_eq!(
        read_log_expecting(&log, &expect).totals(),
        (RUN_CHECKS, 1, 0)
    );
}

#[test]
fn the_skip_list_is_parsed_strictly() {
    assert!(ExpectedSkips::parse("t: a | reason\n").is_err());
    assert!(ExpectedSkips::parse("[test]\nt: a\n").is_err());
    assert!(ExpectedSkips::parse("[test]\nt: a | \n").is_err());
    assert!(ExpectedSkips::parse("[]\n").is_err());
}

#[test]
fn globs_match_whole_texts() {
    assert!(glob("debian-*", "debian-arm64"));
    assert!(!glob("debian-*", "test"));
    assert!(glob("a*c*e", "abcde"));
    assert!(!glob("a*c", "abcd"));
    assert!(glob("exact", "exact"));
    assert!(!glob("exact", "exactly"));
    assert!(glob("*", ""));
    assert!(glob("ab*ab", "abab"));
    assert!(!glob("ab*ab", "aba"));
}

#[test]
fn a_program_listed_twice_must_end_twice() {
    let script =
        "rue-run 'upstream abi_test' abi_test -t a\nrue-run 'upstream abi_test' abi_test -t b\n";
    let one = "RUE-PROG-BEGIN upstream abi_test\n1..1\nok 1 a\nRUE-PROG-END upstream abi_test 0\n";
    let expect = Expect {
        programs: Some(programs_of_script(script)),
        skips: None,
    };
    let r = read_log_expecting(&log_with(one, CLEAN_DMESG), &expect);
    assert_eq!(r.totals().1, 1, "{:?}", failures(&r));
    let r = read_log_expecting(&log_with(&format!("{one}{one}"), CLEAN_DMESG), &expect);
    assert_eq!(r.totals().1, 0, "{:?}", failures(&r));
}

#[test]
fn an_end_marker_of_another_program_fails() {
    let log = log_with(
        "RUE-PROG-BEGIN t\n1..1\nok 1 a\nRUE-PROG-END u 0\n",
        CLEAN_DMESG,
    );
    assert_eq!(read_log(&log).totals().1, 1);
}

#[test]
fn every_form_of_skip_directive_is_a_skip() {
    for line in [
        "ok 1 # SKIP no memcg",
        "ok 1 a #SKIP no memcg",
        "ok 1 a\t# skip no memcg",
        "ok 1 a # Skip",
        "ok 1 a # SKIP\tno memcg",
    ] {
        let log = log_with(
            &format!("RUE-PROG-BEGIN t\n1..1\n{line}\nRUE-PROG-END t 0\n"),
            CLEAN_DMESG,
        );
        assert_eq!(read_log(&log).totals().2, 1, "not a skip: {line:?}");
    }
    // Not skips: a word that only starts with "skip", a '#' inside a word, another directive.
    for line in [
        "ok 1 a # skipped 2 entries",
        "ok 1 a#SKIP x",
        "ok 1 a # TODO later",
        "ok 1 a # é-x",
    ] {
        let log = log_with(
            &format!("RUE-PROG-BEGIN t\n1..1\n{line}\nRUE-PROG-END t 0\n"),
            CLEAN_DMESG,
        );
        assert_eq!(read_log(&log).totals(), (1 + RUN_CHECKS, 0, 0), "{line:?}");
    }
}
