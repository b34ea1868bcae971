//! The grep matcher over ECMAScript regexes reports exactly the lines
//! regress matches, whether or not a literal prefilter skips lines first.

#![allow(clippy::unwrap_used)]

use agent_tools_fs::ecma::{EcmaMatcher, EcmaRegex};
use grep_matcher::Matcher;
use proptest::prelude::*;

/// Pieces patterns are made of: literals (a prefilter is extracted from
/// them), classes and escapes both dialects read alike, and ones they do
/// not (so no prefilter is used).
fn piece() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        Just("foo".to_string()),
        Just("ab".to_string()),
        Just("a".to_string()),
        Just("B".to_string()),
        Just("[a-c]".to_string()),
        Just(r"\d".to_string()),
        Just(r"\w".to_string()),
        Just(".".to_string()),
        Just(" ".to_string()),
        Just(r"\z".to_string()),
        Just("(?:o|0)".to_string()),
        Just("^".to_string()),
        Just("$".to_string()),
        Just(r"\b".to_string()),
    ];
    let quant = prop_oneof![
        Just(""),
        Just(""),
        Just("+"),
        Just("*"),
        Just("?"),
        Just("{2}"),
    ];
    (atom, quant).prop_map(|(atom, quant)| {
        if matches!(atom.as_str(), "^" | "$" | r"\b") {
            atom
        } else {
            format!("{atom}{quant}")
        }
    })
}

fn pattern() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(piece(), 1..5),
        proptest::option::of(proptest::collection::vec(piece(), 1..3)),
    )
        .prop_map(|(first, second)| match second {
            Some(second) => format!("{}|{}", first.concat(), second.concat()),
            None => first.concat(),
        })
}

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('a'),
            Just('b'),
            Just('c'),
            Just('f'),
            Just('o'),
            Just('A'),
            Just('B'),
            Just('0'),
            Just('7'),
            Just('z'),
            Just(' '),
            Just('_'),
            Just('\n'),
            Just('\r'),
            Just('é'),
        ],
        0..120,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

/// The lines (0-based) the matcher reports, walking as the searcher does.
fn reported(matcher: &EcmaMatcher, text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some(found) = matcher.find_at(bytes, at).unwrap() else {
            break;
        };
        let line = bytes[..found.start()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        lines.push(line);
        at = memchr::memchr(b'\n', &bytes[found.start()..])
            .map_or(bytes.len(), |i| found.start() + i + 1);
    }
    lines
}

/// The lines regress itself matches, one at a time.
fn expected(regex: &EcmaRegex, text: &str) -> Vec<usize> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    if text.ends_with('\n') || text.is_empty() {
        lines.pop();
    }
    lines
        .iter()
        .enumerate()
        .filter(|(_, line)| regex.find_from(line, 0).is_some())
        .map(|(index, _)| index)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn the_matcher_reports_what_regress_matches(
        pattern in pattern(),
        text in text(),
        case_insensitive in any::<bool>(),
    ) {
        let Ok(regex) = EcmaRegex::new(&pattern, case_insensitive) else {
            return Ok(());
        };
        let matcher = EcmaMatcher::new(regex.clone());
        prop_assert_eq!(reported(&matcher, &text), expected(&regex, &text), "{}", pattern);
    }
}
