//! Round trip: a unified diff written for two random texts by another
//! library (`similar`, and `diffy` as a second, independent producer),
//! parsed and applied to the old text, gives the new text back exactly.
// Test helpers panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_tools_patch::{MemoryStore, apply, parse};
use proptest::prelude::*;

/// A text of lines from a small alphabet (so diffs have repeated, movable
/// context), with or without a final newline, with LF, CRLF or mixed ends.
fn text() -> impl Strategy<Value = String> {
    let line = prop::sample::select(vec!["a", "b", "c", "d", "", "  x", "fn f() {", "}"]);
    (
        prop::collection::vec((line, prop::bool::weighted(0.15)), 0..40),
        any::<bool>(),
        prop::sample::select(vec![0u8, 0, 1, 2]),
    )
        .prop_map(|(lines, final_newline, style)| {
            let mut out = String::new();
            let count = lines.len();
            for (i, (l, cr)) in lines.into_iter().enumerate() {
                out.push_str(l);
                if i + 1 < count || final_newline {
                    // style 0: LF; 1: CRLF; 2: mixed.
                    if style == 1 || (style == 2 && cr) {
                        out.push('\r');
                    }
                    out.push('\n');
                }
            }
            out
        })
}

/// Which library writes the diff.
#[derive(Debug, Clone, Copy)]
enum Producer {
    Similar,
    Diffy,
}

fn diff_of(producer: Producer, old: &str, new: &str) -> String {
    match producer {
        Producer::Similar => similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .header("a/f", "b/f")
            .to_string(),
        Producer::Diffy => {
            if old == new {
                // diffy writes the two header lines even with no hunk.
                return String::new();
            }
            diffy::DiffOptions::new()
                .set_original_filename("a/f")
                .set_modified_filename("b/f")
                .create_patch(old, new)
                .to_string()
        }
    }
}

fn roundtrip(old: &str, new: &str) -> Result<(), TestCaseError> {
    roundtrip_with(Producer::Similar, old, new)?;
    roundtrip_with(Producer::Diffy, old, new)
}

fn roundtrip_with(producer: Producer, old: &str, new: &str) -> Result<(), TestCaseError> {
    let diff = diff_of(producer, old, new);
    if old == new {
        prop_assert!(diff.is_empty());
        return Ok(());
    }
    let patch =
        parse(&diff).map_err(|e| TestCaseError::fail(format!("{producer:?}: {e}\n{diff}")))?;
    let mut store = MemoryStore::new();
    store.insert("f", old);
    apply(&patch, &mut store)
        .map_err(|e| TestCaseError::fail(format!("{producer:?}: {e}\n{diff}")))?;
    prop_assert_eq!(
        store.get("f"),
        Some(new.as_bytes()),
        "{:?} diff:\n{}",
        producer,
        diff
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(768))]

    #[test]
    fn similar_diffs_round_trip(old in text(), new in text()) {
        roundtrip(&old, &new)?;
    }

    /// Small edits of one text: the common case, with hunks separated by
    /// unchanged stretches.
    #[test]
    fn similar_diffs_round_trip_small_edits(
        old in text(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(vec!["", "new", "b", "}"])), 1..5),
    ) {
        let mut lines: Vec<String> = old.split_inclusive('\n').map(str::to_owned).collect();
        for (at, with) in edits {
            if lines.is_empty() {
                lines.push(format!("{with}\n"));
                continue;
            }
            let i = at.index(lines.len());
            let end = if lines[i].ends_with("\r\n") { "\r\n" } else if lines[i].ends_with('\n') { "\n" } else { "" };
            lines[i] = format!("{with}{end}");
        }
        roundtrip(&old, &lines.concat())?;
    }
}

#[test]
fn roundtrip_examples() {
    for (old, new) in [
        ("", "a\n"),
        ("a\n", ""),
        ("a", "b"),
        ("a\r\nb\r\n", "a\r\nc\r\n"),
        ("a\nb", "a\nb\n"),
        ("a\r\nb\nc", "a\nb\r\nc\r\n"),
    ] {
        roundtrip(old, new).unwrap();
    }
}
