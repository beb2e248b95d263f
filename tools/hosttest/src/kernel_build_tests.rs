// SPDX-License-Identifier: GPL-2.0

//! The load-time comparison of the kernel build (`src/logic/kernel_build.rs`).

use crate::logic::kernel_build::*;

const DEBIAN: &[u8] = b"#1 SMP PREEMPT_DYNAMIC Debian 7.3.4-1~bpo13+1 (2026-10-01)";

#[test]
fn the_same_version_is_the_same_build() {
    assert!(same_build(Recorded::Exact(DEBIAN), DEBIAN));
}

#[test]
fn another_build_number_or_date_is_another_build() {
    let rebuilt = b"#2 SMP PREEMPT_DYNAMIC Debian 7.3.4-1~bpo13+1 (2026-10-01)";
    let redated = b"#1 SMP PREEMPT_DYNAMIC Debian 7.3.4-1~bpo13+1 (2026-10-02)";
    assert!(!same_build(Recorded::Exact(DEBIAN), rebuilt));
    assert!(!same_build(Recorded::Exact(DEBIAN), redated));
    assert!(!same_build(
        Recorded::Exact(DEBIAN),
        &DEBIAN[..DEBIAN.len() - 1]
    ));
    assert!(!same_build(Recorded::Exact(DEBIAN), b""));
}

#[test]
fn a_debian_upload_matches_its_own_builds_only() {
    let upload = Recorded::Contains(b"Debian 7.3.4-1~bpo13+1 ");
    assert!(same_build(upload, DEBIAN));
    assert!(same_build(
        upload,
        b"#1 SMP PREEMPT_RT Debian 7.3.4-1~bpo13+1 (2026-10-01)"
    ));
    // A same-ABI revision, and an upload whose version begins with the recorded one.
    assert!(!same_build(
        upload,
        b"#1 SMP PREEMPT_DYNAMIC Debian 7.3.4-2~bpo13+1 (2026-11-01)"
    ));
    assert!(!same_build(
        upload,
        b"#1 SMP PREEMPT_DYNAMIC Debian 7.3.4-1~bpo13+10 (2026-11-01)"
    ));
    assert!(!same_build(
        upload,
        b"#1 SMP PREEMPT_DYNAMIC Tue Nov 24 10:00:00 UTC 2026"
    ));
}

#[test]
fn an_empty_part_matches_nothing() {
    assert!(!same_build(Recorded::Contains(b""), DEBIAN));
}
