#![allow(clippy::unwrap_used)]

use std::sync::atomic::AtomicBool;

use grep_matcher::Matcher;

use super::*;

fn all(regex: &EcmaRegex, text: &str) -> Vec<Found> {
    let cancel = AtomicBool::new(false);
    regex
        .matches(text, None, &EcmaBudget::default(), &cancel)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn matches(pattern: &str, text: &str) -> Vec<String> {
    let regex = EcmaRegex::new(pattern, false).unwrap();
    let found: Vec<String> = all(&regex, text)
        .iter()
        .map(|found| text[found.range()].to_string())
        .collect();
    // The same as regress's own, whichever engine answered.
    let reference: Vec<String> = regex
        .regress_matches(text)
        .iter()
        .map(|found| text[found.range()].to_string())
        .collect();
    assert_eq!(found, reference, "{pattern}");
    found
}

#[test]
fn anchors_match_at_every_line_and_dot_stays_on_its_line() {
    assert_eq!(matches("^(.*)$", "one\ntwo"), ["one", "two"]);
    assert_eq!(matches("a.b", "a\nb axb"), ["axb"]);
    assert_eq!(matches("^b", "a\nb"), ["b"]);
}

#[test]
fn speaks_ecmascript_not_the_rust_dialect() {
    // Lookbehind and backreferences exist only in ECMAScript.
    assert_eq!(matches(r"(?<=\$)\d+", "cost $42"), ["42"]);
    assert_eq!(matches(r"(\w)\1", "abccd"), ["cc"]);
    // `\d` is ASCII in ECMAScript, Unicode in Rust.
    assert_eq!(matches(r"\d", "٣7"), ["7"]);
    // `[^]` is any character.
    assert_eq!(matches("a[^]b", "a\nb"), ["a\nb"]);
}

#[test]
fn case_insensitive_when_asked() {
    let regex = EcmaRegex::new("hello", true).unwrap();
    assert!(!all(&regex, "say HeLLo").is_empty());
    let literal = EcmaRegex::literal("a.b(", true).unwrap();
    assert!(!all(&literal, "xA.B(").is_empty());
    assert!(all(&literal, "axb(").is_empty());
}

#[test]
fn counts_groups_as_regress_does() {
    for pattern in ["(a)(b)?", "(?<x>a)(?:b)(c)", "((a)|(b))", "a"] {
        let regex = EcmaRegex::new(pattern, false).unwrap();
        let text = "abc";
        for found in all(&regex, text).iter().chain(&regex.regress_matches(text)) {
            assert_eq!(found.groups.len() - 1, regex.groups(), "{pattern}");
        }
    }
}

#[test]
fn templates_referring_to_missing_groups_are_refused_by_name() {
    let regex = EcmaRegex::new(".*", false).unwrap();
    let err = regex.check_template(&Template::parse(r"\1")).unwrap_err();
    assert_eq!(
        err,
        EcmaError::MissingGroup {
            written: r"\1".into(),
            group: 1,
            groups: 0
        }
    );
    assert!(err.to_string().contains(r"capture group 1 (\1)"), "{err}");
    let regex = EcmaRegex::new("(a)", false).unwrap();
    assert!(
        regex
            .check_template(&Template::parse("$1 $& \\0 $$2"))
            .is_ok()
    );
    assert!(regex.check_template(&Template::parse("$2")).is_err());
}

#[test]
fn bad_and_explosive_patterns_are_refused() {
    assert!(matches!(
        EcmaRegex::new("(", false),
        Err(EcmaError::Syntax(_))
    ));
    assert!(matches!(
        EcmaRegex::new("(a+)+$", false),
        Err(EcmaError::Explosive(_))
    ));
    let long = "a".repeat(MAX_PATTERN_BYTES + 1);
    assert!(matches!(
        EcmaRegex::new(&long, false),
        Err(EcmaError::TooLong(_))
    ));
}

fn lines_found(pattern: &str, case_insensitive: bool, haystack: &str) -> Vec<usize> {
    let matcher = EcmaMatcher::new(EcmaRegex::new(pattern, case_insensitive).unwrap());
    let bytes = haystack.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(m) = matcher.find_at(bytes, at).unwrap() {
        found.push(bytes[..m.start()].iter().filter(|&&b| b == b'\n').count() + 1);
        // On to the next line, as the searcher does.
        at = memchr::memchr(b'\n', &bytes[m.start()..]).map_or(bytes.len(), |i| m.start() + i + 1);
    }
    found
}

#[test]
fn the_matcher_reports_lines_and_never_crosses_them() {
    let text = "fn main() {\n  let x = 1;\n}\nfn other() {}\n";
    assert_eq!(lines_found(r"fn \w+\(", false, text), [1, 4]);
    assert_eq!(lines_found(r"\{\s*\}", false, text), [4]);
    assert_eq!(lines_found("^}$", false, text), [3]);
    assert_eq!(lines_found("^$", false, "a\n\nb\n"), [2]);
    assert_eq!(lines_found("LET", true, text), [2]);
    // No match spans the `\n` between lines 1 and 2.
    assert_eq!(lines_found(r"\{\s+let", false, text), Vec::<usize>::new());
}

#[test]
fn the_prefilter_is_used_only_when_both_dialects_agree() {
    let with = |pattern: &str, icase: bool| {
        EcmaMatcher::new(EcmaRegex::new(pattern, icase).unwrap()).has_prefilter()
    };
    assert!(with(r"fn \w+", false));
    assert!(with(r"\w+Error\b", false));
    assert!(with("hello", true));
    // Non-ASCII characters are widened away: the ASCII around them stays.
    assert!(with("héllo", true));
    assert!(!with("é", true));
    assert!(!with(r"a\zb", false));
    assert!(!with(r"\w+", false));
    // Whatever the prefilter, the answers are regress's.
    let text = "azb\nAZB\nab\n";
    assert_eq!(lines_found(r"a\zb", false, text), [1]);
    assert_eq!(lines_found(r"a\zb", true, text), [1, 2]);
}

#[test]
fn whitespace_is_ecmascripts_whatever_the_prefilter() {
    // ECMAScript's `\s` takes U+FEFF, the Rust dialect's does not: a
    // prefilter built from the Rust reading must not drop such a line.
    let text = "a\u{FEFF}b\nzz a b\nq\u{FEFF}x\n";
    assert_eq!(lines_found(r"a\sb", false, text), [1, 2]);
    assert_eq!(lines_found(r"a\s+b", false, text), [1, 2]);
    assert_eq!(lines_found(r"a[\s]b", false, text), [1, 2]);
    assert_eq!(lines_found(r"q\sx", false, text), [3]);
    assert_eq!(lines_found(r"\sx", false, text), [3]);
    assert_eq!(lines_found(r"q\Sx", false, text), Vec::<usize>::new());
}

#[test]
fn invalid_utf8_lines_are_matched_as_decoded() {
    let matcher = EcmaMatcher::new(EcmaRegex::new("needle", false).unwrap());
    let haystack = b"ok\n\xff needle\n";
    let found = matcher.find_at(haystack, 0).unwrap().unwrap();
    assert_eq!(found.start(), 3);
}
