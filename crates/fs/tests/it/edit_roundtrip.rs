//! Property: an edit followed by its inverse restores the file byte for byte,
//! for LF and CRLF files, with and without a byte-order mark.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;

use agent_tools_confine::{Confinement, Workspace};
use agent_tools_fs::{EditFileArgs, EditSpec, FileTools, Limits, MultiEditArgs};
use agent_tools_text::LineEnding;
use proptest::prelude::*;

/// A file: lines over a small alphabet (so substrings repeat often and
/// uniqueness matters), optionally CRLF, optionally with a BOM.
fn file_strategy() -> impl Strategy<Value = (Vec<String>, bool, bool, bool)> {
    (
        prop::collection::vec("[ a-c\t(){};é]{0,12}", 1..12),
        any::<bool>(), // CRLF
        any::<bool>(), // BOM
        any::<bool>(), // final line break
    )
}

fn render(lines: &[String], crlf: bool, final_break: bool) -> String {
    let ending = if crlf { "\r\n" } else { "\n" };
    let mut text = lines.join(ending);
    if final_break {
        text.push_str(ending);
    }
    text
}

fn occurrences(text: &str, needle: &str) -> usize {
    (0..text.len())
        .filter(|&i| text.is_char_boundary(i) && text[i..].starts_with(needle))
        .count()
}

fn round_trip(
    (lines, crlf, bom, final_break): (Vec<String>, bool, bool, bool),
    start: prop::sample::Index,
    len: prop::sample::Index,
    tag: u16,
    multi: bool,
) -> Result<(), TestCaseError> {
    let text = render(&lines, crlf, final_break);
    // Where old_string may start or end: character boundaries, but never
    // inside a CRLF pair, which is one line break.
    let splits = |at: usize| at > 0 && text[..at].ends_with('\r') && text[at..].starts_with('\n');
    let boundaries: Vec<usize> = (0..=text.len())
        .filter(|&i| text.is_char_boundary(i) && !splits(i))
        .collect();
    prop_assume!(boundaries.len() > 1);
    let from = boundaries[start.index(boundaries.len() - 1)];
    let rest: Vec<usize> = boundaries.iter().copied().filter(|&b| b > from).collect();
    let to = rest[len.index(rest.len())];
    let old = &text[from..to];
    prop_assume!(occurrences(&text, old) == 1);
    // The edit must not take every line break of the file with it, or the
    // file's line-ending style (and so the inverse's conversion) would change.
    let outside = format!("{}{}", &text[..from], &text[to..]);
    prop_assume!(!old.contains('\n') || outside.contains('\n'));
    prop_assume!(LineEnding::detect(&outside) == LineEnding::detect(&text) || !old.contains('\n'));
    // A replacement that occurs nowhere else (`#` is not in the alphabet).
    let new = format!("#{tag}#");

    let mut bytes = Vec::new();
    if bom {
        bytes.extend_from_slice(b"\xEF\xBB\xBF");
    }
    bytes.extend_from_slice(text.as_bytes());

    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::open(dir.path(), Confinement::Confined).unwrap();
    let tools = FileTools::new(ws, Limits::default());
    let path = dir.path().join("f.txt");
    fs::write(&path, &bytes).unwrap();

    let apply = |old: &str, new: &str| -> String {
        if multi {
            tools
                .multi_edit(&MultiEditArgs::new("f.txt", vec![EditSpec::new(old, new)]))
                .unwrap()
        } else {
            tools
                .edit_file(&EditFileArgs::new("f.txt", old, new))
                .unwrap()
        }
    };
    let first = apply(old, &new);
    prop_assert!(!first.contains("matched tolerantly"), "{first}");
    let edited = fs::read(&path).unwrap();
    prop_assert_eq!(edited.starts_with(b"\xEF\xBB\xBF"), bom);
    let second = apply(&new, old);
    prop_assert!(!second.contains("matched tolerantly"), "{second}");
    prop_assert_eq!(fs::read(&path).unwrap(), bytes);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        max_global_rejects: 100_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn edit_then_inverse_restores_the_bytes(
        file in file_strategy(),
        start in any::<prop::sample::Index>(),
        len in any::<prop::sample::Index>(),
        tag in any::<u16>(),
        multi in any::<bool>(),
    ) {
        round_trip(file, start, len, tag, multi)?;
    }
}

/// One edit: old_string is either a slice of the file or a short string from
/// the file's alphabet (so it may occur once, many times, or not at all).
fn edits_strategy() -> impl Strategy<Value = Vec<(String, String, bool)>> {
    prop::collection::vec(
        ("[a-c;(\n]{1,4}", "[a-c#\n]{0,4}", prop::bool::weighted(0.2)),
        1..8,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// multi_edit gives the same bytes as the same edits made one by one
    /// with edit_file, and fails (writing nothing) exactly when one of them
    /// would, with the same code.
    #[test]
    fn multi_edit_matches_sequential_edit_file(
        (lines, crlf, bom, final_break) in file_strategy(),
        edits in edits_strategy(),
    ) {
        let text = render(&lines, crlf, final_break);
        let mut bytes = Vec::new();
        if bom {
            bytes.extend_from_slice(b"\xEF\xBB\xBF");
        }
        bytes.extend_from_slice(text.as_bytes());

        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path(), Confinement::Confined).unwrap();
        let tools = FileTools::new(ws, Limits::default());
        fs::write(dir.path().join("one.txt"), &bytes).unwrap();
        fs::write(dir.path().join("many.txt"), &bytes).unwrap();

        let mut sequential = Ok(());
        for (index, (old, new, all)) in edits.iter().enumerate() {
            // multi_edit writes new line breaks in the line ending the file
            // had when read; edit_file can only see the file as it is now.
            // Once an earlier edit leaves a CRLF file without any line
            // break, the two rightly part ways: not a case to compare.
            let now = fs::read(dir.path().join("one.txt")).unwrap();
            prop_assume!(!(crlf && index > 0 && !now.contains(&b'\n')));
            let mut args = EditFileArgs::new("one.txt", old.as_str(), new.as_str());
            args.replace_all = *all;
            if let Err(err) = tools.edit_file(&args) {
                sequential = Err((index, err.code()));
                break;
            }
        }
        let specs = edits
            .iter()
            .map(|(old, new, all)| EditSpec { old_string: old.clone(), new_string: new.clone(), replace_all: *all })
            .collect();
        let batch = tools.multi_edit(&MultiEditArgs::new("many.txt", specs));
        // multi_edit checks every edit's arguments before touching the file.
        if let Some(invalid) = edits.iter().position(|(old, new, _)| old == new) {
            sequential = Err((invalid, agent_tools_error::ErrorCode::InvalidInput));
        }
        match sequential {
            Ok(()) => {
                prop_assert!(batch.is_ok(), "{:?}", batch);
                prop_assert_eq!(
                    fs::read(dir.path().join("many.txt")).unwrap(),
                    fs::read(dir.path().join("one.txt")).unwrap()
                );
            }
            Err((index, code)) => {
                let err = batch.unwrap_err();
                prop_assert_eq!(err.code(), code);
                let expected_prefix = format!("edit {} of {}: ", index + 1, edits.len());
                prop_assert!(err.message().starts_with(&expected_prefix), "{}", err.message());
                prop_assert_eq!(fs::read(dir.path().join("many.txt")).unwrap(), bytes);
            }
        }
    }
}

/// Inputs the edit matcher's fuzz target (fuzz/fuzz_targets/edit_match.rs)
/// once failed on: file text, old_string and new_string separated by 0xFF
/// bytes. An edit of whole lines whose new_string repeats old_string gives
/// the region back byte for byte; no input panics.
#[test]
fn saved_fuzz_inputs_of_the_matcher() {
    use agent_tools_fs::tolerant::{Verdict, locate};
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/edit-match-crashes");
    let mut count = 0;
    for entry in fs::read_dir(dir).unwrap() {
        let data = fs::read(entry.unwrap().path()).unwrap();
        let mut parts = data.splitn(3, |&b| b == 0xFF);
        let (text, old, new) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let (text, old, new) = (
            String::from_utf8_lossy(text),
            String::from_utf8_lossy(old),
            String::from_utf8_lossy(new),
        );
        let ending = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let _ = locate(&text, &old, &new, ending);
        if let Verdict::Unique(same) = locate(&text, &old, &old, ending) {
            let range = same.range.clone();
            let whole = (range.start == 0 || text[..range.start].ends_with('\n'))
                && (range.end == text.len()
                    || text[..range.end].ends_with('\n')
                    || text[range.end..].starts_with('\n')
                    || text[range.end..].starts_with("\r\n"));
            if whole {
                assert_eq!(same.replacement, &text[range]);
            }
        }
        count += 1;
    }
    assert!(count >= 2);
}
