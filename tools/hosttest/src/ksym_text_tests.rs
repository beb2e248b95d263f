// SPDX-License-Identifier: GPL-2.0

//! Parsing `sprint_symbol()` text, and the size rule of the load-time symbol checks.

use crate::logic::ksym_text::{fits, parse, Located};

#[test]
fn kernel_symbol_parses() {
    assert_eq!(
        parse(b"event_mutex+0x0/0xc0"),
        Some(Located { name: b"event_mutex", offset: 0, size: 0xc0, module: None })
    );
}

#[test]
fn module_symbol_parses_with_and_without_build_id() {
    let located = parse(b"rue_thing+0x8/0x20 [rust_user_events]").unwrap();
    assert_eq!(located.module, Some(&b"rust_user_events"[..]));
    assert_eq!((located.offset, located.size), (8, 0x20));
    let located = parse(b"f+0x0/0x10 [m 0123456789abcdef]").unwrap();
    assert_eq!(located.module, Some(&b"m"[..]));
}

#[test]
fn names_with_plus_and_dots_keep_all_but_the_offset() {
    let located = parse(b"__key.12+3+0x4/0x8").unwrap();
    assert_eq!(located.name, b"__key.12+3");
    assert_eq!((located.offset, located.size), (4, 8));
}

#[test]
fn anything_else_is_not_a_symbol() {
    for text in [
        &b"0xffffffff829ad040"[..],
        b"",
        b"+0x0/0x8",
        b"name+0x0",
        b"name+0/8",
        b"name+0x/0x8",
        b"name+0x0/0xg",
        b"name+0x0/0x10000000000000000",
        b"name+0x0/0x8 m",
        b"name+0x0/0x8 [m",
    ] {
        assert_eq!(parse(text), None, "{:?}", core::str::from_utf8(text));
    }
}

#[test]
fn size_rule() {
    let at = |size| Located { name: b"tracefs_mount", offset: 0, size, module: None };
    // A pointer, padded to KASAN's 32 bytes, or bare.
    assert!(fits(&at(32), b"tracefs_mount", 8));
    assert!(fits(&at(8), b"tracefs_mount", 8));
    // Too small for the type; larger is padding or data without a symbol.
    assert!(!fits(&at(4), b"tracefs_mount", 8));
    assert!(fits(&at(1056), b"tracefs_mount", 8));
    // Another symbol, inside one, or a module's.
    assert!(!fits(&at(8), b"tracefs_mount_count", 8));
    assert!(!fits(&Located { offset: 8, ..at(32) }, b"tracefs_mount", 8));
    assert!(!fits(&Located { module: Some(b"m"), ..at(8) }, b"tracefs_mount", 8));
}
