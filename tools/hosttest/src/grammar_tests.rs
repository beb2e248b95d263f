// SPDX-License-Identifier: GPL-2.0

//! The command grammar, field types, sizes and offsets, as upstream's `user_event_parse_cmd()` and
//! the functions it calls (`kernel/trace/trace_events_user.c`), and upstream's selftest dyn_test.c.

use crate::logic::grammar::*;
use std::string::String;
use std::vec::Vec;

/// All fields of `args`, or the first error.
fn parse(args: &str) -> Result<Vec<FieldSpec<'_>>, ParseError> {
    fields(args).collect()
}

/// The single field of `args`.
fn one(args: &str) -> FieldSpec<'_> {
    let specs = parse(args).unwrap_or_else(|_| panic!("{args:?} must parse"));
    assert_eq!(specs.len(), 1, "{args:?}");
    specs[0]
}

/// `(type, size, is_signed)` of the single field of `args`.
fn ty_size_signed(args: &str) -> (&str, u32, bool) {
    let f = one(args);
    (f.ty, f.size, f.is_signed)
}

/// A whole command as both the ioctl and dynamic_events see it: name, then every field.
fn command_parses(cmd: &str) -> bool {
    parse_command(cmd).is_ok_and(|c| parse(c.args).is_ok())
}

fn rejected(args: &str) -> bool {
    parse(args) == Err(ParseError)
}

// Top level (`user_event_parse_cmd()`).

#[test]
fn name_is_text_before_first_space() {
    let c = parse_command("test u32 a; u32 b").unwrap();
    assert_eq!(
        c,
        Command {
            name: "test",
            args: "u32 a; u32 b"
        }
    );
}

#[test]
fn command_without_space_has_empty_args() {
    assert_eq!(
        parse_command("test"),
        Ok(Command {
            name: "test",
            args: ""
        })
    );
    assert_eq!(parse(""), Ok(Vec::new()));
}

#[test]
fn only_a_space_separates_name_from_args() {
    assert_eq!(
        parse_command("test\tu32 a"),
        Ok(Command {
            name: "test\tu32",
            args: "a"
        })
    );
}

#[test]
fn colon_in_name_is_einval() {
    assert_eq!(parse_command("test:flag u32 a"), Err(ParseError));
    assert_eq!(parse_command("test:"), Err(ParseError));
    // The dynamic_events prefix is not accepted over the ioctl.
    assert_eq!(parse_command("u:test"), Err(ParseError));
}

#[test]
fn colon_after_the_first_space_belongs_to_args() {
    let c = parse_command("test u32 a:b").unwrap();
    assert_eq!(c.name, "test");
    assert_eq!(one(c.args).name, "a:b");
}

#[test]
fn name_is_not_validated() {
    for name in ["/x", "a.b", "é€", "-", "\t"] {
        let cmd = String::from(name) + " u32 a";
        assert_eq!(parse_command(&cmd).unwrap().name, name);
    }
    assert_eq!(
        parse_command(" u32 a"),
        Ok(Command {
            name: "",
            args: "u32 a"
        })
    );
    assert_eq!(parse_command(""), Ok(Command { name: "", args: "" }));
}

#[test]
fn text_after_nul_is_not_seen() {
    assert_eq!(
        parse_command("test\0 u32 a"),
        Ok(Command {
            name: "test",
            args: ""
        })
    );
    assert_eq!(
        parse_command("test\0:x"),
        Ok(Command {
            name: "test",
            args: ""
        })
    );
    assert_eq!(parse("u32 a\0;u32 b").unwrap().len(), 1);
}

#[test]
fn space_after_name_may_repeat() {
    assert!(command_parses("test  u32 a"));
    assert!(command_parses("test \t\n u32 a"));
}

// Splitting into fields, and whitespace (`user_event_parse_fields()`).

#[test]
fn trailing_semicolon_is_an_empty_field() {
    assert_eq!(parse("u32 x;").unwrap().len(), 1);
}

#[test]
fn empty_field_between_semicolons_is_ignored() {
    let specs = parse("u32 x;;u32 y").unwrap();
    assert_eq!(specs.iter().map(|f| f.name).collect::<Vec<_>>(), ["x", "y"]);
    assert_eq!(specs[1].offset, 12);
}

#[test]
fn field_list_of_only_blanks_parses_to_nothing() {
    assert_eq!(parse(";"), Ok(Vec::new()));
    assert_eq!(parse(" ;\t; "), Ok(Vec::new()));
    assert!(command_parses("a ;"));
}

#[test]
fn leading_whitespace_of_a_field_is_skipped() {
    let specs = parse("u32 a;\t\n\x0b\x0c\r u32 b").unwrap();
    assert_eq!(specs[1].name, "b");
}

#[test]
fn two_spaces_between_type_and_name_is_einval() {
    assert!(rejected("u32  a"));
}

#[test]
fn trailing_space_is_einval() {
    assert!(rejected("u32 a "));
    assert!(rejected("u32 a ;u32 b"));
    // A dynamic_events line `u:t u32 a # c` is cut at '#', leaving a trailing space.
    assert!(!command_parses("t u32 a "));
}

#[test]
fn tab_inside_a_field_is_einval() {
    assert!(rejected("u32\ta"));
}

#[test]
fn single_trailing_space_gives_an_empty_name() {
    // Upstream `strsep()` yields an empty (non-NULL) name token, which is accepted.
    let f = one("u32 ");
    assert_eq!((f.ty, f.name, f.size), ("u32", "", 4));
    assert_eq!(one("u32 ;").name, "");
}

#[test]
fn newline_is_part_of_a_name() {
    assert_eq!(one("u32 a\n").name, "a\n");
}

// The field tokenizer (`user_event_parse_field()`).

#[test]
fn unsigned_prefix_keeps_both_words_in_the_type() {
    assert_eq!(one("unsigned int a").ty, "unsigned int");
    assert_eq!(one("unsigned short a").ty, "unsigned short");
}

#[test]
fn loc_prefixes_keep_all_words_in_the_type() {
    assert_eq!(
        one("__rel_loc unsigned char[] s").ty,
        "__rel_loc unsigned char[]"
    );
    assert_eq!(
        one("__data_loc unsigned char[] s").ty,
        "__data_loc unsigned char[]"
    );
    assert_eq!(one("__data_loc char[] s").ty, "__data_loc char[]");
    assert_eq!(one("__rel_loc char[] s").ty, "__rel_loc char[]");
}

#[test]
fn struct_field_has_type_name_and_size() {
    let f = one("struct foo a 20");
    assert_eq!(
        (f.ty, f.name, f.size, f.is_struct, f.is_signed),
        ("struct foo", "a", 20, true, true)
    );
}

#[test]
fn double_space_after_prefix_ends_the_type_at_the_prefix() {
    // Upstream's `strpbrk(field + len, " ")` finds the second space at once.
    assert!(rejected("struct  foo a 20"));
    assert!(rejected("unsigned  int a"));
    let f = one("struct  a 20");
    assert_eq!((f.ty, f.name, f.size), ("struct ", "a", 20));
    let f = one("__data_loc  s");
    assert_eq!((f.ty, f.name, f.size), ("__data_loc ", "s", 4));
}

#[test]
fn prefix_without_a_following_space_is_einval() {
    assert!(rejected("struct foo"));
    assert!(rejected("unsigned int"));
    assert!(rejected("__data_loc char[]"));
}

#[test]
fn size_token_only_for_struct() {
    assert!(rejected("char a 20"));
    assert!(rejected("u32 a 4"));
}

#[test]
fn struct_without_size_is_einval() {
    assert!(rejected("struct custom a"));
    assert!(rejected("struct custom a "));
}

#[test]
fn struct_size_zero_is_einval() {
    assert!(rejected("struct custom a 0"));
}

#[test]
fn fourth_token_is_einval() {
    assert!(rejected("struct custom a 20 x"));
    assert!(rejected("struct custom a 20 "));
}

#[test]
fn too_few_tokens_is_einval() {
    assert!(rejected("u32"));
    assert!(rejected("a"));
}

#[test]
fn struct_size_is_decimal_kstrtou32() {
    assert_eq!(one("struct x a +20").size, 20);
    assert_eq!(one("struct x a 020").size, 20);
    assert_eq!(one("struct x a 20\n").size, 20);
    assert!(rejected("struct x a 0x14"));
    assert!(rejected("struct x a -1"));
    assert!(rejected("struct x a 20\n\n"));
    assert!(rejected("struct x a 2o"));
}

#[test]
fn struct_size_of_2_pow_31_or_more_is_einval() {
    // Deviation: upstream returns the negative `int` size as its error code.
    assert!(rejected("struct x a 2147483648"));
    assert!(rejected("struct x a 4294967295"));
    assert!(rejected("struct x a 4294967296"));
}

#[test]
fn field_end_must_fit_in_int() {
    let f = one("struct x a 2147483639");
    assert_eq!(f.offset + f.size, FIELD_END_MAX);
    assert!(rejected("struct x a 2147483640"));
    assert!(rejected("struct x a 2000000000;struct x b 2000000000"));
}

#[test]
fn field_names_are_not_validated() {
    assert_eq!(one("u32 a-b.c[]").name, "a-b.c[]");
    assert_eq!(one("u32 é").name, "é");
}

// Accepted types (`user_field_size()`).

#[test]
fn fixed_size_types_have_their_c_size_and_sign() {
    let rows: [(&str, u32, bool); 14] = [
        ("s64", 8, true),
        ("u64", 8, false),
        ("s32", 4, true),
        ("u32", 4, false),
        ("int", 4, true),
        ("unsigned int", 4, false),
        ("s16", 2, true),
        ("u16", 2, false),
        ("short", 2, true),
        ("unsigned short", 2, false),
        ("s8", 1, true),
        ("u8", 1, false),
        ("char", 1, true),
        ("unsigned char", 1, false),
    ];
    for (ty, size, signed) in rows {
        let args = String::from(ty) + " n";
        assert_eq!(ty_size_signed(&args), (ty, size, signed), "{ty}");
    }
}

#[test]
fn static_char_arrays_have_n_bytes() {
    assert_eq!(ty_size_signed("char[20] n"), ("char[20]", 20, true));
    assert_eq!(
        ty_size_signed("unsigned char[20] n"),
        ("unsigned char[20]", 20, false)
    );
}

#[test]
fn loc_types_are_four_signed_bytes() {
    for ty in [
        "__data_loc char[]",
        "__data_loc unsigned char[]",
        "__rel_loc char[]",
        "__rel_loc unsigned char[]",
        "__data_loc cpumask_t",
        "__rel_loc u32",
        "__data_loc char",
    ] {
        let args = String::from(ty) + " n";
        assert_eq!(ty_size_signed(&args), (ty, 4, true), "{ty}");
    }
}

#[test]
fn struct_is_signed_because_it_does_not_start_with_u() {
    assert!(one("struct u a 4").is_signed);
}

#[test]
fn unknown_and_ambiguous_types_are_einval() {
    for ty in [
        "long", "bool", "__u32", "pid_t", "u32[4]", "char[]", "unsigned", "S64", "u64_t",
    ] {
        let args = String::from(ty) + " n";
        assert!(rejected(&args), "{ty}");
    }
    assert!(rejected("unsigned long n"));
    assert!(rejected("char [4] n"));
}

// Array sizes (`user_field_array_size()`).

#[test]
fn array_size_uses_kstrtouint_auto_base() {
    let rows = [
        ("char[20]", 20),
        ("char[0x14]", 20),
        ("char[0X14]", 20),
        ("char[010]", 8),
        ("char[+20]", 20),
        ("char[+0x14]", 20),
        ("char[1]", 1),
        ("char[1024]", 1024),
        ("char[0x400]", 1024),
        ("char[20\n]", 20),
    ];
    for (ty, size) in rows {
        let args = String::from(ty) + " n";
        assert_eq!(one(&args).size, size, "{ty}");
    }
}

#[test]
fn array_size_zero_is_einval() {
    assert!(rejected("char[0] n"));
    assert!(rejected("char[00] n"));
    assert!(rejected("char[0x0] n"));
}

#[test]
fn array_size_over_1024_is_einval() {
    assert!(rejected("char[1025] n"));
    assert!(rejected("char[9999] n"));
    assert!(rejected("char[0x401] n"));
    assert!(rejected("char[123456] n"));
}

#[test]
fn array_size_text_of_eight_chars_or_more_is_einval() {
    // `strscpy()` into `char val[8]` truncates: the `]` and anything after it count.
    assert!(rejected("char[0x0000000000001] n"));
    assert!(rejected("char[1234567] n"));
    assert!(rejected("char[20]xyzwv n"));
    assert_eq!(one("char[20]xyzw n").ty, "char[20]xyzw");
}

#[test]
fn text_after_bracket_is_ignored_but_kept_in_the_type() {
    assert_eq!(ty_size_signed("char[20]xyz n"), ("char[20]xyz", 20, true));
}

#[test]
fn malformed_array_sizes_are_einval() {
    for ty in [
        "char[aa]",
        "char[-1]",
        "char[12",
        "char[",
        "char[]x",
        "char[0x]",
        "char[08]",
        "char[1 ]",
        "char[0xg]",
        "char[++1]",
        "char[1\n\n]",
        "char[\n]",
    ] {
        let args = String::from(ty) + " n";
        assert!(rejected(&args), "{ty:?}");
    }
}

#[test]
fn kstrtouint_rules() {
    assert_eq!(kstrtouint(b"0", 0), Some(0));
    assert_eq!(kstrtouint(b"0x1f", 0), Some(31));
    assert_eq!(kstrtouint(b"017", 0), Some(15));
    assert_eq!(kstrtouint(b"4294967295", 10), Some(u32::MAX));
    assert_eq!(kstrtouint(b"4294967296", 10), None);
    assert_eq!(kstrtouint(b"99999999999999999999999", 10), None);
    assert_eq!(kstrtouint(b"0x", 0), None);
    assert_eq!(kstrtouint(b"", 0), None);
    assert_eq!(kstrtouint(b"+", 0), None);
    assert_eq!(kstrtouint(b"1\n", 10), Some(1));
    assert_eq!(kstrtouint(b"\n", 10), None);
    assert_eq!(kstrtouint(b" 1", 10), None);
    assert_eq!(kstrtou32(b"0x14", 10), None);
}

// Offsets and min_size.

#[test]
fn fields_are_packed_from_offset_8() {
    let args = "s64 a; s32 b; s16 c; s8 d; u8 e; unsigned short f; short g; unsigned char h; \
                char i; int j; u64 k";
    let offsets: Vec<u32> = parse(args).unwrap().iter().map(|f| f.offset).collect();
    assert_eq!(offsets, [8, 16, 20, 22, 23, 24, 26, 28, 29, 30, 34]);
    assert_eq!(min_size(args), Ok(34));
}

#[test]
fn min_size_without_fields_is_zero() {
    assert_eq!(min_size(""), Ok(0));
    assert_eq!(min_size(" ; ;"), Ok(0));
}

#[test]
fn min_size_counts_arrays_and_structs() {
    assert_eq!(
        min_size("char[20] a; struct foo s 20; __rel_loc char[] d"),
        Ok(44)
    );
}

#[test]
fn min_size_of_a_bad_list_is_einval() {
    assert_eq!(min_size("u32 a; bogus b"), Err(ParseError));
    assert_eq!(check_fields("u32 a; bogus b"), Err(ParseError));
    assert_eq!(check_fields("u32 a"), Ok(()));
}

#[test]
fn iteration_stops_after_the_first_error() {
    let mut it = fields("u32 a;bad;u32 b");
    assert_eq!(it.next().map(|r| r.map(|f| f.name)), Some(Ok("a")));
    assert_eq!(it.next(), Some(Err(ParseError)));
    assert_eq!(it.next(), None);
    assert_eq!(it.next(), None);
}

// Validators (`user_event_add_field()`).

#[test]
fn data_loc_char_field_needs_a_nul() {
    let f = parse("u32 x; __data_loc char[] s").unwrap()[1];
    assert_eq!(
        f.validator(),
        Some(Validator {
            offset: 12,
            rel: false,
            ensure_null: true
        })
    );
}

#[test]
fn rel_loc_char_field_is_relative_and_needs_a_nul() {
    let f = one("__rel_loc unsigned char[] s");
    assert_eq!(
        f.validator(),
        Some(Validator {
            offset: 8,
            rel: true,
            ensure_null: true
        })
    );
}

#[test]
fn loc_field_without_char_is_checked_for_bounds_only() {
    let f = one("__data_loc cpumask_t m");
    assert_eq!(
        f.validator(),
        Some(Validator {
            offset: 8,
            rel: false,
            ensure_null: false
        })
    );
}

#[test]
fn static_fields_have_no_validator() {
    for args in [
        "char[20] s",
        "u32 a",
        "struct __data_loc x 4",
        "unsigned char[4] s",
    ] {
        assert_eq!(one(args).validator(), None, "{args}");
    }
}

// Multi-format names (`user_event_set_tp_name()`).

#[test]
fn multi_format_name_appends_lowercase_hex_id() {
    let name = |n: &str, id: u64| {
        let mut s = String::new();
        tp_name_multi(&mut s, n, id).unwrap();
        s
    };
    assert_eq!(name("a", 0), "a.0");
    assert_eq!(name("b", 1), "b.1");
    assert_eq!(name("x", 10), "x.a");
    assert_eq!(name("x", 16), "x.10");
    assert_eq!(name("x", u64::MAX), "x.ffffffffffffffff");
}

// Upstream's selftest dyn_test.c (`tools/testing/selftests/user_events/`).

#[test]
fn dyn_test_basic_types_parse() {
    for ty in [
        "u64",
        "u32",
        "u16",
        "u8",
        "char",
        "unsigned char",
        "int",
        "unsigned int",
        "short",
        "unsigned short",
        "char[20]",
        "unsigned char[20]",
        "char[0x14]",
        "unsigned char[0x14]",
    ] {
        let cmd = String::from("__test_event ") + ty + " a";
        assert!(command_parses(&cmd), "{cmd}");
    }
}

#[test]
fn dyn_test_bad_basic_types_do_not_parse() {
    for ty in ["char[aa]", "char[9999]", "char[0x0000000000001]"] {
        let cmd = String::from("__test_event ") + ty + " a";
        assert!(!command_parses(&cmd), "{cmd}");
    }
}

#[test]
fn dyn_test_loc_types_parse() {
    for ty in [
        "__data_loc char[]",
        "__data_loc unsigned char[]",
        "__rel_loc char[]",
        "__rel_loc unsigned char[]",
    ] {
        let cmd = String::from("__test_event ") + ty + " a";
        assert!(command_parses(&cmd), "{cmd}");
    }
}

#[test]
fn dyn_test_size_types() {
    assert!(command_parses("__test_event struct custom a 20"));
    assert!(!command_parses("__test_event struct custom a"));
    assert!(!command_parses("__test_event char a 20"));
}

#[test]
fn utf8_takes_what_from_utf8_takes() {
    let cases: [&[u8]; 8] = [
        b"",
        b"__test_event u32 a",
        b"\x7f\x00ascii to the last byte",
        "caf\u{e9} u32 a".as_bytes(),
        "\u{1f600} \u{10ffff}".as_bytes(),
        b"\xff",
        b"ok so far \xc3",
        b"\xc3\x28 overlong and bad",
    ];
    for bytes in cases {
        assert_eq!(utf8(bytes), core::str::from_utf8(bytes).ok(), "{bytes:?}");
    }
    // Every single byte, and every two-byte sequence.
    for a in 0..=255u8 {
        assert_eq!(utf8(&[a]), core::str::from_utf8(&[a]).ok());
        for b in 0..=255u8 {
            assert_eq!(utf8(&[a, b]), core::str::from_utf8(&[a, b]).ok(), "{a:#x} {b:#x}");
        }
    }
}

#[test]
fn max_fields_bounds_the_fields_and_skips_empty_pieces() {
    for (args, max, count) in [
        ("", 0, 0),
        ("u32 a", 1, 1),
        ("u32 a;u64 b; char c[4]", 3, 3),
        ("u32 a;;u32 b", 2, 2),
        (" ; \t;\x0b", 0, 0),
        ("u32 a;", 1, 1),
        ("u32 a;bad;u32 b", 3, 1),
        ("u32 a\0;u32 b", 1, 1),
    ] {
        assert_eq!(max_fields(args), max, "{args:?}");
        assert_eq!(fields(args).map_while(Result::ok).count(), count, "{args:?}");
    }
}
