//! The codex patch format (`*** Begin Patch`).
//!
//! Fixture folders `tests/codex-fixtures/<case>/{before/,patch,after/}`
//! are applied through the directory store and the memory store and
//! compared with `after/` as whole trees; a case with an `error` file
//! instead of `after/` must fail with that error code and leave `before/`
//! exactly as it was. Reports and error messages are snapshotted.
// Test helpers panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use agent_tools_patch::{
    DirStore, ErrorKind, Format, MatchLevel, MemoryStore, Operation, apply, apply_patch, parse,
};
use common::{assert_trees_equal, copy_tree, memory_store, read_tree};
use proptest::prelude::*;

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/codex-fixtures");
    let mut cases: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("patch").is_file())
        .collect();
    cases.sort();
    cases
}

#[test]
fn codex_fixtures_apply_to_whole_trees_or_change_nothing() {
    let cases = cases();
    assert!(cases.len() >= 20, "codex fixtures are missing");
    let mut reports = String::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read(case.join("patch")).unwrap();
        let before = read_tree(&case.join("before"));

        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&case.join("before"), tmp.path());
        let dir_result = apply_patch(&text, &mut DirStore::new(tmp.path()));
        let mut mem = memory_store(&case.join("before"));
        let mem_result = apply_patch(&text, &mut mem);

        if let Ok(code) = fs::read_to_string(case.join("error")) {
            let err = dir_result.expect_err(&name);
            let mem_err = mem_result.expect_err(&name);
            assert_eq!(err.kind().code(), code.trim(), "{name}: {err}");
            assert_eq!(err.to_string(), mem_err.to_string(), "{name}");
            assert_trees_equal(&name, &read_tree(tmp.path()), &before);
            assert_trees_equal(&name, &mem.files, &before);
            reports.push_str(&format!("{name}: {} error\n{err}\n\n", err.kind()));
        } else {
            let want = read_tree(&case.join("after"));
            let report = dir_result.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_trees_equal(&name, &read_tree(tmp.path()), &want);
            let mem_report = mem_result.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_trees_equal(&name, &mem.files, &want);
            assert_eq!(report, mem_report, "{name}");
            reports.push_str(&format!("{name}:\n{report}\n\n"));
        }
    }
    insta::assert_snapshot!(reports);
}

#[test]
fn format_is_detected_from_the_text() {
    let codex = parse("\n\n*** Begin Patch\n*** Delete File: a\n*** End Patch").unwrap();
    assert_eq!(codex.files[0].format, Format::Codex);
    assert_eq!(codex.files[0].operation, Operation::Delete);
    let heredoc =
        parse("<<EOF\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n").unwrap();
    assert_eq!(heredoc.files[0].format, Format::Codex);
    let unified = parse("--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a\n+b\n").unwrap();
    assert_eq!(unified.files[0].format, Format::Unified);
}

fn fuzz_level(file: &str, patch_line: &str) -> Option<MatchLevel> {
    let mut store = MemoryStore::new();
    store.insert("f", file);
    let patch =
        format!("*** Begin Patch\n*** Update File: f\n@@\n-{patch_line}\n+new\n*** End Patch\n");
    let report = apply_patch(patch, &mut store).unwrap();
    assert_eq!(store.get("f"), Some(&b"new\n"[..]));
    report.files[0].fuzz
}

#[test]
fn each_fuzz_level_is_reported() {
    assert_eq!(fuzz_level("same\n", "same"), None);
    assert_eq!(
        fuzz_level("tail \n", "tail"),
        Some(MatchLevel::TrailingWhitespace)
    );
    assert_eq!(
        fuzz_level("  lead\n", "lead"),
        Some(MatchLevel::SurroundingWhitespace)
    );
    assert_eq!(
        fuzz_level("a\u{2014}b \u{2018}c\u{2019}\n", "a-b 'c'"),
        Some(MatchLevel::Punctuation)
    );
}

#[test]
fn an_exact_match_later_beats_a_fuzzy_one_earlier() {
    let mut store = MemoryStore::new();
    store.insert("f", "x \nx\n");
    let report = apply_patch(
        "*** Begin Patch\n*** Update File: f\n-x\n+y\n*** End Patch",
        &mut store,
    )
    .unwrap();
    assert_eq!(store.get("f"), Some(&b"x \ny\n"[..]));
    assert_eq!(report.files[0].fuzz, None);
}

#[test]
fn unified_header_in_a_codex_patch_reads_as_context() {
    let mut store = MemoryStore::new();
    store.insert("f", "fn a() {\n    1\n}\nfn b() {\n    1\n}\n");
    apply_patch(
        "*** Begin Patch\n*** Update File: f\n@@ -4,3 +4,3 @@ fn b() {\n-    1\n+    2\n*** End Patch",
        &mut store,
    )
    .unwrap();
    assert_eq!(
        store.get("f"),
        Some(&b"fn a() {\n    1\n}\nfn b() {\n    2\n}\n"[..])
    );
}

fn error_of(file: &str, patch: &str) -> String {
    let mut store = MemoryStore::new();
    store.insert("f.txt", file);
    let before = store.clone();
    let err = apply_patch(patch, &mut store).unwrap_err();
    assert_eq!(store, before);
    format!("{}: {err}", err.kind())
}

#[test]
fn error_chunk_not_found() {
    insta::assert_snapshot!(error_of(
        "a\nb\n",
        "*** Begin Patch\n*** Update File: f.txt\n@@\n a\n-c\n+d\n*** End Patch\n"
    ));
}

/// A stale chunk (the model read the file before one of its lines changed)
/// is pointed at where it belongs, not at a line it shares with others.
#[test]
fn a_stale_chunk_is_pointed_at_its_region() {
    let mut file = String::new();
    for i in 1..=30 {
        file.push_str(&format!("fn f{i}() {{\n    work({i});\n}}\n"));
    }
    // Lines 31-33 hold f11; the chunk remembers it with another argument.
    let patch = "*** Begin Patch\n*** Update File: f.txt\n@@\n fn f11() {\n-    work(110);\n+    work(111);\n }\n*** End Patch\n";
    let message = error_of(&file, patch);
    assert!(
        message.contains(
            "The closest region is lines 31-33 of the file: 2 of the chunk's 3 old lines"
        ),
        "{message}"
    );
}

#[test]
fn error_chunk_not_at_end_of_file() {
    insta::assert_snapshot!(error_of(
        "a\nb\n",
        "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+A\n*** End of File\n*** End Patch\n"
    ));
}

#[test]
fn error_context_not_found() {
    insta::assert_snapshot!(error_of(
        "a\nb\n",
        "*** Begin Patch\n*** Update File: f.txt\n@@ class Missing\n-a\n+A\n*** End Patch\n"
    ));
}

#[test]
fn error_missing_end_patch() {
    insta::assert_snapshot!(error_of(
        "a\n",
        "*** Begin Patch\n*** Update File: f.txt\n-a\n+b\n"
    ));
}

#[test]
fn error_empty_update() {
    insta::assert_snapshot!(error_of(
        "a\n",
        "*** Begin Patch\n*** Update File: f.txt\n*** End Patch\n"
    ));
}

#[test]
fn error_no_file_sections() {
    insta::assert_snapshot!(error_of("a\n", "*** Begin Patch\n*** End Patch\n"));
}

#[test]
fn error_later_chunk_without_marker() {
    insta::assert_snapshot!(error_of(
        "a\nb\n",
        "*** Begin Patch\n*** Update File: f.txt\n-a\n+A\n*** Add File: g\n+x\n*** Update File: f.txt\n@@\n-b\n+B\n@@-9 +9 @@\n-x\n*** End Patch\n"
    ));
}

#[test]
fn error_end_of_file_without_lines() {
    insta::assert_snapshot!(error_of(
        "a\n",
        "*** Begin Patch\n*** Update File: f.txt\n@@\n*** End of File\n*** End Patch\n"
    ));
}

#[test]
fn error_unexpected_line() {
    insta::assert_snapshot!(error_of(
        "a\n",
        "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\nb\n*** End Patch\n"
    ));
}

#[test]
fn error_invalid_header() {
    insta::assert_snapshot!(error_of(
        "a\n",
        "*** Begin Patch\n*** Update File: f.txt\n-a\n+b\n*** Remove File: f.txt\n*** End Patch\n"
    ));
}

#[test]
fn error_update_of_missing_file_is_not_found() {
    let mut store = MemoryStore::new();
    let err = apply_patch(
        "*** Begin Patch\n*** Delete File: nope\n*** End Patch\n",
        &mut store,
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

#[test]
fn file_named_twice_is_refused() {
    let err = error_of(
        "a\n",
        "*** Begin Patch\n*** Update File: f.txt\n-a\n+b\n*** Update File: f.txt\n-b\n+c\n*** End Patch\n",
    );
    assert!(
        err.starts_with("invalid_input: f.txt: named more than once"),
        "{err}"
    );
}

#[test]
fn many_chunks_on_repetitive_file_stay_bounded() {
    // Every line the same: a naive search would try every position for
    // every chunk and every level.
    let n = 20_000;
    let mut store = MemoryStore::new();
    store.insert("f", "x\n".repeat(n));
    let mut patch = String::from("*** Begin Patch\n*** Update File: f\n");
    for _ in 0..2_000 {
        patch.push_str("@@\n x\n-y\n+z\n");
    }
    patch.push_str("*** End Patch\n");
    let err = apply_patch(patch, &mut store).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PatchFailed);
}

/// Lines from a small alphabet, so chunks have repeated context.
fn lines() -> impl Strategy<Value = Vec<&'static str>> {
    let line = prop::sample::select(vec!["a", "b", "c", "", "  x", "fn f() {", "}"]);
    prop::collection::vec(line, 0..30)
}

fn join(lines: &[&str], eol: &str, final_newline: bool) -> String {
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        out.push_str(l);
        if i + 1 < lines.len() || final_newline {
            out.push_str(eol);
        }
    }
    out
}

fn strip_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// A codex patch for `old` -> `new`, from `similar`'s grouped diff; a
/// chunk's leading context is widened back towards the previous chunk
/// until its first exact occurrence after the previous chunk is the place
/// it belongs (codex chunks are found by content, first match wins).
fn codex_patch(old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = String::from("*** Begin Patch\n*** Update File: f\n");
    let mut cursor = 0;
    for group in diff.grouped_ops(3) {
        let old_start = group[0].old_range().start;
        let old_end = group.last().unwrap().old_range().end;
        let mut start = old_start;
        loop {
            let pattern: Vec<&str> = old_lines[start..old_end]
                .iter()
                .map(|l| strip_eol(l))
                .collect();
            let first = (cursor..=old_lines.len().saturating_sub(pattern.len())).find(|&p| {
                pattern
                    .iter()
                    .enumerate()
                    .all(|(j, l)| strip_eol(old_lines[p + j]) == *l)
            });
            if pattern.is_empty() || first == Some(start) || start == cursor {
                break;
            }
            start -= 1;
        }
        out.push_str("@@\n");
        for line in &old_lines[start..old_start] {
            out.push_str(&format!(" {}\n", strip_eol(line)));
        }
        for op in &group {
            for change in diff.iter_changes(op) {
                let prefix = match change.tag() {
                    similar::ChangeTag::Equal => ' ',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                };
                out.push_str(&format!("{prefix}{}\n", strip_eol(change.value())));
            }
        }
        cursor = old_end;
    }
    out.push_str("*** End Patch\n");
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A codex patch generated from the diff of two random texts applies
    /// back to exactly the new text (same line ending throughout; inserted
    /// lines take the file's first line ending, so a changed file ends with
    /// a newline).
    #[test]
    fn codex_patches_round_trip(
        old in lines(),
        new in lines(),
        crlf in any::<bool>(),
        old_final_newline in any::<bool>(),
    ) {
        let eol = if crlf && !old.is_empty() && (old.len() > 1 || old_final_newline) { "\r\n" } else { "\n" };
        let old = join(&old, eol, old_final_newline);
        let new = join(&new, eol, true);
        if old == new {
            return Ok(());
        }
        let patch = codex_patch(&old, &new);
        let mut store = MemoryStore::new();
        store.insert("f", old.as_str());
        apply_patch(&patch, &mut store)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{patch}")))?;
        prop_assert_eq!(
            String::from_utf8_lossy(store.get("f").unwrap()),
            new,
            "patch:\n{}",
            patch
        );
    }
}

#[test]
fn report_names_fuzz_and_overwrite() {
    let mut store = MemoryStore::new();
    store.insert("a", "x \n");
    store.insert("b", "old\n");
    let patch =
        parse("*** Begin Patch\n*** Update File: a\n-x\n+y\n*** Add File: b\n+new\n*** End Patch")
            .unwrap();
    let report = apply(&patch, &mut store).unwrap();
    assert_eq!(
        report.to_string(),
        "M a (1 hunk, matched ignoring trailing whitespace)\nA b (1 hunk, overwrote the existing file)"
    );
}
