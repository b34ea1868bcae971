//! The grep matcher over ECMAScript regexes reports exactly the lines
//! regress matches, whether or not a literal prefilter skips lines first
//! and whichever engine (linear or regress) answers; regex edits see the
//! matches regress would; and the work stays bounded (the `budget` module).

#![allow(clippy::unwrap_used)]

use std::sync::atomic::AtomicBool;

use agent_tools_fs::ecma::{EcmaBudget, EcmaMatcher, EcmaRegex, Found, Template};
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
        Just("(?=a)".to_string()),
        Just("(b)".to_string()),
        Just("(?:a|)".to_string()),
        Just(r"\s".to_string()),
    ];
    let quant = prop_oneof![
        Just(""),
        Just(""),
        Just("+"),
        Just("*"),
        Just("?"),
        Just("{2}"),
        Just("*?"),
        Just("??"),
        Just("{1,3}"),
    ];
    (atom, quant).prop_map(|(atom, quant)| {
        if matches!(atom.as_str(), "^" | "$" | r"\b" | "(?=a)") {
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
            Just('\u{2028}'),
            Just('\u{FEFF}'),
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
        // The step bound is an upper bound: a text over it is refused
        // (said, and checked by the `budget` module), not compared.
        if regex.step_bound(&text) > EcmaBudget::DEFAULT_STEPS {
            return Ok(());
        }
        let matcher = EcmaMatcher::new(regex.clone());
        prop_assert_eq!(reported(&matcher, &text), expected(&regex, &text), "{}", pattern);
        // Edits see regress's matches; with a template, the groups it
        // inserts too.
        let cancel = AtomicBool::new(false);
        let every_group = Template::parse(r"\1\2\3\4\5\6\7\8\9");
        let found: Vec<Found> = regex
            .matches(&text, Some(&every_group), &EcmaBudget::default(), &cancel)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let reference = regex.regress_matches(&text);
        prop_assert_eq!(&found, &reference, "{}", pattern);
        let ranges: Vec<_> = regex
            .matches(&text, None, &EcmaBudget::default(), &cancel)
            .unwrap()
            .map(|found| found.unwrap().range())
            .collect();
        let expected: Vec<_> = reference.iter().map(Found::range).collect();
        prop_assert_eq!(ranges, expected, "{}", pattern);
    }
}

/// The review's patterns, cancellation and the budgets.
mod budget {
    use std::path::Path;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use agent_tools_confine::{Confinement, Workspace};
    use agent_tools_error::ToolResult;
    use agent_tools_fs::ecma::{
        EcmaBudget, EcmaMatcher, EcmaRegex, EcmaSearch, EcmaStop, SearchFound, SearchRun,
    };
    use agent_tools_fs::{FileTools, Limits};
    use grep_matcher::Matcher;

    fn search(
        root: &Path,
        pattern: &str,
        budget: EcmaBudget,
        cancel: &AtomicBool,
    ) -> ToolResult<SearchFound> {
        let ws = Workspace::open(root, Confinement::Confined).unwrap();
        let tools = FileTools::new(ws, Limits::default());
        let matcher = EcmaMatcher::new(EcmaRegex::new(pattern, false).unwrap());
        let search = EcmaSearch {
            matcher: &matcher,
            context: 0,
            max_matches: 100,
            budget,
        };
        let base = tools.workspace().resolve_dir(Some("."), ".").unwrap();
        tools.ecma_search(&base, &search, &|_| true, cancel)
    }

    /// The review's minified bundle: one 240 KB line, its only TODO first.
    fn bundle() -> String {
        let mut seed: u64 = 1;
        let mut line = String::from("/* TODO: */");
        for i in 0..4000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let bound = (seed >> 33) % 100;
            line.push_str(&format!(
                "function f{i}(a,b){{var c=a+b;if(c>{bound}){{return c*2;}}return b;}}"
            ));
        }
        line.push('\n');
        line
    }

    fn names(found: &SearchFound) -> Vec<&str> {
        found.files.iter().map(|file| file.rel.as_str()).collect()
    }

    #[test]
    fn the_review_patterns_answer_or_are_refused_by_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bundle.min.js"), bundle()).unwrap();
        std::fs::write(
            dir.path().join("forty.txt"),
            format!("{}\n", "a".repeat(40)),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("long.txt"),
            format!("{}\n", "a".repeat(3000)),
        )
        .unwrap();
        std::fs::write(dir.path().join("short.txt"), "aaab\n").unwrap();
        let never = AtomicBool::new(false);

        // Linear: answered, and exactly (the TODO comes before any `if`).
        assert!(
            EcmaRegex::new("if.*return.*TODO", false)
                .unwrap()
                .is_linear()
        );
        let found = search(
            dir.path(),
            "if.*return.*TODO",
            EcmaBudget::default(),
            &never,
        )
        .unwrap();
        assert!(
            found.files.is_empty() && found.skipped.is_empty(),
            "{found:?}"
        );
        let found = search(
            dir.path(),
            "TODO.*if.*return",
            EcmaBudget::default(),
            &never,
        )
        .unwrap();
        assert_eq!(names(&found), ["bundle.min.js"]);

        assert!(EcmaRegex::new("(a?){40}a{40}", false).unwrap().is_linear());
        let found = search(dir.path(), "(a?){40}a{40}", EcmaBudget::default(), &never).unwrap();
        assert_eq!(names(&found), ["forty.txt", "long.txt"]);

        // A lookahead needs regress: the 3,000-character line (and the
        // bundle's) is over its step budget and said to be; the short one
        // is searched.
        assert!(!EcmaRegex::new("(?=a*)a*a*a*b", false).unwrap().is_linear());
        let found = search(dir.path(), "(?=a*)a*a*a*b", EcmaBudget::default(), &never).unwrap();
        assert_eq!(names(&found), ["short.txt"]);
        assert_eq!(found.skipped.len(), 2, "{:?}", found.skipped);
        assert!(
            found.skipped[0].starts_with("bundle.min.js"),
            "{:?}",
            found.skipped
        );
        assert!(
            found.skipped[1].starts_with("long.txt"),
            "{:?}",
            found.skipped
        );
        assert!(
            found.skipped[1].contains("step budget"),
            "{:?}",
            found.skipped
        );
    }

    #[test]
    fn regress_gets_at_most_the_call_time_budget() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x\n".repeat(100)).unwrap();
        let none = EcmaBudget {
            call_time: Duration::ZERO,
            ..EcmaBudget::default()
        };
        let never = AtomicBool::new(false);
        let err = search(dir.path(), r"(?<=x)y", none, &never).unwrap_err();
        assert!(err.message().contains("budget"), "{}", err.message());
        // The linear engine is not timed.
        assert!(search(dir.path(), "xy", none, &never).is_ok());
    }

    #[test]
    fn a_cancelled_search_stops_at_the_next_line() {
        for pattern in ["x+y", r"(?<=x)y"] {
            let matcher = EcmaMatcher::new(EcmaRegex::new(pattern, false).unwrap());
            let cancel = AtomicBool::new(true);
            let run = SearchRun::new(&matcher, EcmaBudget::default(), &cancel);
            let line_matcher = matcher.in_run(&run);
            assert_eq!(
                line_matcher.find_at(b"xy\nxy\n", 0),
                Err(EcmaStop::Cancelled),
                "{pattern}"
            );
            assert_eq!(run.stopped(), Some(&EcmaStop::Cancelled));
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "xy\n").unwrap();
        let err = search(
            dir.path(),
            r"(?<=x)y",
            EcmaBudget::default(),
            &AtomicBool::new(true),
        )
        .unwrap_err();
        assert!(err.is_cancelled(), "{err:?}");
    }

    #[test]
    fn cancelled_matches_stop_at_the_next_match() {
        let cancel = AtomicBool::new(true);
        for pattern in ["a", "(?=a)a"] {
            let regex = EcmaRegex::new(pattern, false).unwrap();
            let mut found = regex
                .matches("aaa", None, &EcmaBudget::default(), &cancel)
                .unwrap();
            assert_eq!(found.next(), Some(Err(EcmaStop::Cancelled)), "{pattern}");
            assert_eq!(found.next(), None);
        }
    }

    #[test]
    fn an_edit_text_over_the_step_budget_is_refused() {
        let regex = EcmaRegex::new("(?=a*)a*a*a*b", false).unwrap();
        let never = AtomicBool::new(false);
        let text = "a".repeat(3000);
        match regex.matches(&text, None, &EcmaBudget::default(), &never) {
            Err(EcmaStop::OverBudget { bytes, .. }) => assert_eq!(bytes, 3000),
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("not refused"),
        }
        let err = regex
            .matches(&text, None, &EcmaBudget::default(), &never)
            .err()
            .unwrap();
        assert!(err.to_string().contains("step budget"), "{err}");
        // A short text is matched by regress.
        let found: Vec<_> = regex
            .matches("aab", None, &EcmaBudget::default(), &never)
            .unwrap()
            .collect();
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn invalid_bytes_match_a_replacement_character_in_the_pattern() {
        // L7: the prefilter must not look for U+FFFD's UTF-8 in raw bytes.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9 needle\n").unwrap();
        let never = AtomicBool::new(false);
        for pattern in [r"caf\uFFFD needle", "caf\u{FFFD} needle", r"caf. needle"] {
            let matcher = EcmaMatcher::new(EcmaRegex::new(pattern, false).unwrap());
            assert!(
                matcher.find_at(b"caf\xe9 needle", 0).unwrap().is_some(),
                "{pattern}"
            );
            let found = search(dir.path(), pattern, EcmaBudget::default(), &never).unwrap();
            assert_eq!(names(&found), ["latin1.txt"], "{pattern}");
        }
    }
}
