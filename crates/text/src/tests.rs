use super::*;
use proptest::prelude::*;

#[test]
fn sniff_boms() {
    assert_eq!(Encoding::sniff(b"abc"), Encoding::Utf8);
    assert_eq!(Encoding::sniff(b"\xEF\xBB\xBFabc"), Encoding::Utf8Bom);
    assert_eq!(Encoding::sniff(b"\xFF\xFEa\0"), Encoding::Utf16Le);
    assert_eq!(Encoding::sniff(b"\xFE\xFF\0a"), Encoding::Utf16Be);
}

#[test]
fn utf16_with_bom_decodes_both_ways() {
    let mut le = vec![0xFF, 0xFE];
    let mut be = vec![0xFE, 0xFF];
    for unit in "héllo\n€".encode_utf16() {
        le.extend_from_slice(&unit.to_le_bytes());
        be.extend_from_slice(&unit.to_be_bytes());
    }
    assert_eq!(
        decode(&le).unwrap(),
        ("héllo\n€".to_string(), Encoding::Utf16Le)
    );
    assert_eq!(
        decode(&be).unwrap(),
        ("héllo\n€".to_string(), Encoding::Utf16Be)
    );
    assert!(!looks_binary(&le));
}

#[test]
fn odd_length_utf16_is_invalid() {
    let err = decode(b"\xFF\xFEa\0b").unwrap_err();
    assert_eq!(
        err,
        DecodeError::Invalid {
            encoding: Encoding::Utf16Le,
            offset: 2
        }
    );
}

#[test]
fn nul_byte_means_binary() {
    assert!(looks_binary(b"PNG\0\x01\x02"));
    assert_eq!(decode(b"a\0b"), Err(DecodeError::Binary));
    // A NUL past the sniff window does not count.
    let mut late = vec![b'a'; BINARY_SNIFF_BYTES];
    late.push(0);
    assert!(!looks_binary(&late));
}

#[test]
fn invalid_utf8_is_reported_with_offset_and_lossy_decoding_replaces() {
    let bytes = b"ok\xFFthen";
    assert_eq!(
        decode(bytes),
        Err(DecodeError::Invalid {
            encoding: Encoding::Utf8,
            offset: 2
        })
    );
    let (text, encoding, lossy) = decode_lossy(bytes).unwrap();
    assert_eq!(text, "ok\u{FFFD}then");
    assert_eq!(encoding, Encoding::Utf8);
    assert!(lossy);
}

#[test]
fn line_ending_detection() {
    assert_eq!(LineEnding::detect("a\nb\n"), LineEnding::Lf);
    assert_eq!(LineEnding::detect("a\r\nb\r\n"), LineEnding::CrLf);
    assert_eq!(LineEnding::detect("a\r\nb\n"), LineEnding::CrLf);
    assert_eq!(LineEnding::detect("a\r\nb\nc\n"), LineEnding::Lf);
    assert_eq!(LineEnding::detect("no break"), LineEnding::Lf);
}

#[test]
fn apply_line_ending() {
    assert_eq!(LineEnding::CrLf.apply("a\nb\r\nc"), "a\r\nb\r\nc");
    assert_eq!(LineEnding::Lf.apply("a\r\nb\r\n"), "a\nb\n");
    assert!(matches!(LineEnding::CrLf.apply("x\r\n"), Cow::Borrowed(_)));
    assert_eq!(LineEnding::CrLf.apply("\n"), "\r\n");
}

#[test]
fn utf16_is_not_written_back() {
    let file = TextFile {
        text: "x".into(),
        encoding: Encoding::Utf16Le,
    };
    assert_eq!(file.encode(), Err(Encoding::Utf16Le));
}

#[test]
fn truncation_respects_char_boundaries() {
    assert_eq!(truncate_utf8("héllo", 2), "h");
    assert_eq!(truncate_utf8("héllo", 3), "hé");
    assert_eq!(truncate_utf8("abc", 10), "abc");
    assert_eq!(truncate_utf8("€", 2), "");
    let bytes = "a€".as_bytes();
    assert_eq!(utf8_boundary(bytes, 2), 1);
    assert_eq!(utf8_boundary(bytes, 4), 4);
}

#[test]
fn a_start_inside_a_character_moves_to_the_next_one() {
    let text = "a€😀b".as_bytes();
    // "a" (1 byte), "€" (3), "😀" (4), "b" (1).
    let starts: Vec<usize> = (0..text.len())
        .map(|at| at + utf8_char_start(&text[at..]))
        .collect();
    assert_eq!(starts, [0, 1, 4, 4, 4, 8, 8, 8, 8]);
    assert_eq!(utf8_char_start(b""), 0);
    assert_eq!(utf8_char_start(&[0x82]), 1);
    // No sequence has four continuation bytes: the fourth is invalid on its
    // own, left for the decoder to show as U+FFFD.
    assert_eq!(utf8_char_start(&[0x80, 0x80, 0x80, 0x80, b'a']), 3);
    assert_eq!(utf8_char_start(&[0xFF, 0x80]), 0);
}

#[test]
fn numbered_view_format() {
    let view = number_lines(["\tindented", "crlf\r", ""].into_iter(), 9, 11);
    insta::assert_snapshot!(view, @r"
         9		indented
        10	crlf
        11	
    ");
}

#[test]
fn number_column_grows_past_six_digits() {
    let view = number_lines(["x"].into_iter(), 1_234_567, 1_234_567);
    assert_eq!(view, "1234567\tx\n");
}

#[test]
fn long_lines_are_cut_with_a_marker() {
    let line = "é".repeat(MAX_LINE_CHARS + 5);
    let cut = truncate_line(&line);
    assert!(cut.starts_with(&"é".repeat(MAX_LINE_CHARS)));
    assert!(
        cut.ends_with("… [line truncated: 5 more characters]"),
        "{cut}"
    );
    assert_eq!(truncate_line("short"), "short");
}

#[test]
fn line_breaks_are_counted_once_and_the_ending_rule_follows() {
    assert_eq!(count_newlines(b""), 0);
    assert_eq!(count_newlines(b"a\r\nb\nc\r"), 2);
    assert_eq!(count_newlines(&[b'\n'; 40_000]), 40_000);
    let mixed = LineBreaks::count(b"a\r\nb\nc\r\n\r");
    assert_eq!(mixed, LineBreaks { all: 3, crlf: 2 });
    assert_eq!(mixed.dominant(), LineEnding::CrLf);
    assert!(!mixed.all_crlf());
    assert_eq!(LineBreaks::count(b"a\r\nb\n").dominant(), LineEnding::CrLf);
    assert_eq!(LineBreaks::count(b"a\r\nb\nc\n").dominant(), LineEnding::Lf);
    assert_eq!(LineBreaks::count(b"a\rb").dominant(), LineEnding::Lf);
    assert!(LineBreaks::count(b"a\r\nb\r\n").all_crlf());
    assert!(!LineBreaks::count(b"ab").all_crlf());
}

proptest! {
    #[test]
    fn line_breaks_agree_with_a_byte_by_byte_count(bytes in proptest::collection::vec(
        prop_oneof![Just(b'\n'), Just(b'\r'), Just(b'a')], 0..200,
    )) {
        let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
        let crlf = bytes.windows(2).filter(|w| w == b"\r\n").count();
        prop_assert_eq!(count_newlines(&bytes), newlines);
        prop_assert_eq!(LineBreaks::count(&bytes), LineBreaks { all: newlines, crlf });
    }
}

proptest! {
    #[test]
    fn utf8_round_trip_is_byte_exact(text in "[a-z\r\n é€\t]{0,200}", bom in any::<bool>()) {
        let mut bytes = if bom { vec![0xEF, 0xBB, 0xBF] } else { Vec::new() };
        bytes.extend_from_slice(text.as_bytes());
        let file = TextFile::decode(&bytes).unwrap();
        prop_assert_eq!(file.encode().unwrap(), bytes);
    }

    #[test]
    fn truncate_never_splits(text in "\\PC{0,50}", max in 0usize..200) {
        let cut = truncate_utf8(&text, max);
        prop_assert!(cut.len() <= max);
        prop_assert!(text.starts_with(cut));
        prop_assert!(cut.len() + 4 > max.min(text.len()));
    }

    #[test]
    fn crlf_apply_is_idempotent(text in "[ab\r\n]{0,60}") {
        let once = LineEnding::CrLf.apply(&text).into_owned();
        let twice = LineEnding::CrLf.apply(&once).into_owned();
        prop_assert_eq!(once, twice);
    }
}

#[test]
fn implausible_utf16_after_a_bom_is_binary() {
    let le = |text: &str| {
        let mut bytes = vec![0xFF, 0xFE];
        for unit in text.encode_utf16() {
            bytes.extend_from_slice(&unit.to_le_bytes());
        }
        bytes
    };
    // Real text, CJK and emoji (surrogate pairs) included, is text.
    assert!(!looks_binary(&le("plain text\r\n\tand more\n")));
    assert!(!looks_binary(&le("日本語のテキスト 😀\n")));
    // A UTF-32 LE BOM: NUL code units.
    assert!(looks_binary(&[0xFF, 0xFE, 0, 0, b'a', 0, 0, 0]));
    // NULs at odd places: a NUL unit.
    assert!(looks_binary(&[0xFF, 0xFE, b'a', 0, 0, 0, b'b', 0]));
    // An unpaired low surrogate, and a high one followed by a letter.
    assert!(looks_binary(&[0xFF, 0xFE, 0x00, 0xDC, b'a', 0]));
    assert!(looks_binary(&[0xFF, 0xFE, 0x00, 0xD8, b'a', 0]));
    // A high surrogate cut by the end of the window is not held against it.
    let mut cut = le(&"a".repeat(BINARY_SNIFF_BYTES / 2 - 2));
    cut.extend_from_slice(&[0x3D, 0xD8, 0x00, 0xDE]);
    assert!(!looks_binary(&cut));
    // Mostly control characters.
    assert!(looks_binary(&le("\u{1}\u{2}\u{3}ab")));
    assert!(!looks_binary(&le(&format!(
        "\u{1b}[31m{}",
        "red text ".repeat(4)
    ))));
    // Pseudo-random bytes behind a BOM.
    let mut state = 0x2545_F491_u32;
    let mut noise = vec![0xFF, 0xFE];
    for _ in 0..4096 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        noise.push((state & 0xFF) as u8);
    }
    assert!(looks_binary(&noise));
    assert_eq!(decode(&noise), Err(DecodeError::Binary));
}
