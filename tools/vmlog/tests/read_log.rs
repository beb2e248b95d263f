// SPDX-License-Identifier: GPL-2.0

//! The VM log reader fails runs for the right reasons.

use rue_vmlog::{read_log, Outcome};

const CLEAN_DMESG: &str = "RUE-DMESG-BEGIN\n[    0.0] kmemleak: Kernel memory leak detector initialized (mem pool available: 15000)\n[    1.0] rust_user_events: user_events ready\nRUE-DMESG-END\nRUE-VM-DONE\n";

fn log_with(body: &str, dmesg: &str) -> String {
    format!("boot noise\n{body}{dmesg}")
}

#[test]
fn passing_program_and_clean_log_pass() {
    let log = log_with("RUE-PROG-BEGIN t\nTAP version 13\n1..1\nok 1 a\nRUE-PROG-END t 0\n", CLEAN_DMESG);
    let r = read_log(&log);
    assert_eq!(r.totals(), (2, 0, 0), "{:?}", r.results);
}

#[test]
fn warning_in_kernel_log_fails_the_run() {
    let dmesg = "RUE-DMESG-BEGIN\n[ 2.0] WARNING: CPU: 0 PID: 1 at src/rust_user_events_main.rs:10\nRUE-DMESG-END\nRUE-VM-DONE\n";
    let r = read_log(&log_with("RUE-PROG-BEGIN t\nok 1 a\nRUE-PROG-END t 0\n", dmesg));
    assert_eq!(r.totals(), (1, 1, 0));
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
    ] {
        let dmesg = format!("RUE-DMESG-BEGIN\n[ 1.0] {line}\nRUE-DMESG-END\nRUE-VM-DONE\n");
        let r = read_log(&log_with("RUE-PROG-BEGIN t\nok 1 a\nRUE-PROG-END t 0\n", &dmesg));
        assert_eq!(r.totals().1, 1, "not caught: {line}");
    }
}

#[test]
fn skips_are_listed_not_passed() {
    let log = log_with("RUE-PROG-BEGIN t\nok 1 a # SKIP no tracefs\nok 2 b\nRUE-PROG-END t 0\n", CLEAN_DMESG);
    let r = read_log(&log);
    assert_eq!(r.totals(), (2, 0, 1));
    assert!(matches!(&r.results[0].outcome, Outcome::Skip(why) if why == "no tracefs"));
}

#[test]
fn crashed_program_without_failures_counts_as_failed() {
    let r = read_log(&log_with("RUE-PROG-BEGIN t\nok 1 a\nRUE-PROG-END t 139\n", CLEAN_DMESG));
    assert_eq!(r.totals(), (2, 1, 0));
}

#[test]
fn program_without_results_fails() {
    let r = read_log(&log_with("RUE-PROG-BEGIN t\nRUE-PROG-END t 0\n", CLEAN_DMESG));
    assert_eq!(r.totals(), (1, 1, 0));
}

#[test]
fn vm_that_never_finishes_fails() {
    let r = read_log("boot noise\nRUE-PROG-BEGIN t\nok 1 a\n");
    let (_, failed, _) = r.totals();
    assert_eq!(failed, 2, "{:?}", r.results);
}

#[test]
fn init_checks_count() {
    let r = read_log(&log_with("RUE-CHECK ok insmod\nRUE-CHECK fail rmmod\n", CLEAN_DMESG));
    assert_eq!(r.totals(), (2, 1, 0));
}

#[test]
fn nested_kselftest_lines_are_not_results() {
    let log = log_with(
        "RUE-PROG-BEGIN t\n# Starting 1 tests\n#  RUN  user.a ...\n#            OK  user.a\nok 1 user.a\n# Totals: pass:1 fail:0\nRUE-PROG-END t 0\n",
        CLEAN_DMESG,
    );
    assert_eq!(read_log(&log).totals(), (2, 0, 0));
}

#[test]
fn report_during_boot_is_kept_apart_and_fails() {
    let dmesg = "RUE-DMESG-BEGIN\n[ 0.009] BUG: KASAN: wild-memory-access in do_raw_spin_lock\n[ 45.8] Run /init as init process\nRUE-DMESG-END\nRUE-VM-DONE\n";
    let r = read_log(&log_with("RUE-PROG-BEGIN t\nok 1 a\nRUE-PROG-END t 0\n", dmesg));
    assert_eq!(r.boot_reports.len(), 1);
    assert!(r.kernel_reports.is_empty());
    assert_eq!(r.totals(), (2, 1, 0));
}

#[test]
fn report_after_init_is_a_run_report() {
    let dmesg = "RUE-DMESG-BEGIN\n[ 45.8] Run /init as init process\n[ 50.0] WARNING: at foo\nRUE-DMESG-END\nRUE-VM-DONE\n";
    let r = read_log(&log_with("RUE-PROG-BEGIN t\nok 1 a\nRUE-PROG-END t 0\n", dmesg));
    assert!(r.boot_reports.is_empty());
    assert_eq!(r.kernel_reports.len(), 1);
}
