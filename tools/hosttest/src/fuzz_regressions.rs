// SPDX-License-Identifier: GPL-2.0

//! Inputs of the fuzz properties (`fuzz_tests.rs`) that must keep passing, checked by every
//! `cargo test` (`fuzz_tests::regressions_still_pass`).
//!
//! The rule: any input that ever fails a fuzz property, in `make check`, `make host-fuzz` or
//! a run of your own, is added here as the test printed it, with a line on what it broke, in
//! the same commit as the fix. Nothing is ever removed.
//!
//! Each entry is a command (`DIAG_IOCSREG` `name_args`) and a record written to the event it
//! registers: the 8-byte `trace_entry` header (here `0xee`), then the payload. Loc words
//! (`__data_loc`/`__rel_loc`, offset in the low 16 bits, size in the high 16) are written
//! little-endian, as on x86.

/// `(command, record)` pairs.
pub(crate) const REGRESSIONS: &[(&str, &[u8])] = &[
    // Failed the first version of `check_trace()`, whose length bound forgot "No fields found"
    // (a bug in the test, found while writing it: the printer was right).
    (
        "x]y;struct à010\ns64u321à4294967295char[unsigned char[__rel_loc struct foo a 20__data_loc \
        é0x:u8name[",
        b"\xd9\x18\xac\xfd\xdbT\xcd\x02\xcf\xfb\xc7Z\xc5\xf7\xe2\xd0h\x9a\x9bF\xf3\x80\x12rw\xed\
        \xe3\xb4\x02\xbc\xf5i\x1eM2\x9e",
    ),
    // Edge cases, each the subject of a unit test, a documented deviation or a quirk.
    //
    // A command without name or fields; only a NUL; text flags, which upstream does not support.
    ("", b""),
    ("\0", b""),
    (":", b""),
    ("a:b u32 c", b""),
    // Nothing after a NUL is seen.
    ("ev u32 a\0; u32 b", b"\xee\xee\xee\xee\xee\xee\xee\xee\x01\x00\x00\x00"),
    // An empty event name.
    (" u32 a", b"\xee\xee\xee\xee\xee\xee\xee\xee\x01\x02\x03\x04"),
    // The largest field end, `FIELD_END_MAX`, and one past it.
    ("ev struct x a 2147483639", b"\xee\xee\xee\xee\xee\xee\xee\xee\x01"),
    ("ev struct x a 2147483640", b""),
    // A SIZE that is a negative `int` upstream, and one past `u32`.
    ("ev struct x a 2147483648", b""),
    ("ev struct x a 4294967296", b""),
    // `kstrtou32()`: `+` and one trailing newline are allowed, hex is not.
    (
        "ev struct x a +20\n",
        b"\xee\xee\xee\xee\xee\xee\xee\xee\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\x0d\x0e\
        \x0f\x10\x11\x12\x13",
    ),
    ("ev struct x a 0x14", b""),
    // A double space makes the type `struct ` and shifts every token.
    ("ev struct  foo a 20", b"\xee\xee\xee\xee\xee\xee\xee\xee\x00\x00\x00\x00"),
    // A trailing space is a fourth token.
    ("ev struct foo a 20 ", b""),
    // Array sizes: the 8-byte `strscpy()` buffer, the 1024 limit, radix prefixes.
    ("ev char[1234567] s", b""),
    ("ev char[123456] s", b""),
    ("ev char[1024] s", b"\xee\xee\xee\xee\xee\xee\xee\xeeabc"),
    (
        "ev char[0x4] s; unsigned char[010] t",
        b"\xee\xee\xee\xee\xee\xee\xee\xeeabcd\x01\xff\x00x\x7f\x80\xa0\xe9",
    ),
    // Empty fields between separators.
    ("ev u32 a;;;; ;\t;u32 b", b"\xee\xee\xee\xee\xee\xee\xee\xee\x01\x00\x00\x00\x02\x00\x00\x00"),
    // No space after `;`: the matching fix-up.
    (
        "ev u32 a;u64 b",
        b"\xee\xee\xee\xee\xee\xee\xee\xee\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
    ),
    // U+00A0 is C2 A0 in UTF-8: the kernel's `isspace()` takes A0 for a space, `skip_spaces()`
    // sees C2 first.
    ("ev u32 à", b"\xee\xee\xee\xee\xee\xee\xee\xee\x00\x00\x00\x80"),
    ("ev \u{a0}u32 a", b"\xee\xee\xee\xee\xee\xee\xee\xee\x00\x00\x00\x00"),
    // Deviation: a `__data_loc` string at offset 0 of size 0 makes upstream read the byte before
    // the record; it fails here.
    ("ev __data_loc char[] s", b"\xee\xee\xee\xee\xee\xee\xee\xee\x00\x00\x00\x00"),
    // Deviation: a `struct` type naming a loc string type, smaller than a loc word: the
    // printer's loc word lies past the record.
    ("ev struct __data_loc_char s 2", b"\xee\xee\xee\xee\xee\xee\xee\xee\x01\x02"),
    // The validator checks `__rel_loc` (the prefix), the printer reads `__data_loc` (its first
    // test): both stay in bounds.
    ("ev __rel_loc __data_loc_char s", b"\xee\xee\xee\xee\xee\xee\xee\xee\x00\x00\x01\x00\x00"),
    // A loc size of 0x8000 and more is negative to the printer: it prints nothing, even past the
    // record.
    ("ev __rel_loc char[] s", b"\xee\xee\xee\xee\xee\xee\xee\xee\x00\x00\x00\x80hello\x00"),
    // `__rel_loc` arrays out of and in bounds, a non-printable string with its hex dump.
    ("ev __rel_loc u32 a", b"\xee\xee\xee\xee\xee\xee\xee\xee\x01\x00\x03\x00\x01\xab\x03"),
    ("ev __rel_loc u32 a", b"\xee\xee\xee\xee\xee\xee\xee\xee\x01\x00\x02\x00\x01\xab\x03"),
    ("ev __rel_loc char[] s", b"\xee\xee\xee\xee\xee\xee\xee\xee\x00\x00\x06\x00h\x01llo\x00"),
    // `cpumask_t` is `<INVALID-TYPE>`; its validator needs no NUL.
    ("ev __data_loc cpumask_t m", b"\xee\xee\xee\xee\xee\xee\xee\xee\x00\x00\x00\x00"),
    // `caller_offs` and `parent_offs` are offsets from `_stext`, which wrap.
    (
        "ev u32 caller_offs; u32 parent_offs",
        b"\xee\xee\xee\xee\xee\xee\xee\xee\xff\xff\xff\xff\xff\xff\xff\xff",
    ),
    // A printable Latin-1 byte, a signed byte, sizes the printer does not know.
    (
        "ev unsigned char c; s8 d; struct s e 3; struct s f 16",
        b"\xee\xee\xee\xee\xee\xee\xee\xee\xa0\x80abc\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\
        \x00\x00\x00\x00\x00",
    ),
    // A record shorter than its fields.
    ("ev s64 a; u16 b; s8 c", b"\xee\xee\xee\xee\xee\xee\xee\xee\x01\x02\x03"),
    // A field named like the printer's marker for data past the record.
    ("ev u32 <OVERFLOW>", b"\xee\xee\xee\xee\xee\xee\xee\xee\x01\x00\x00\x00"),
];
