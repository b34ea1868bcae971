//! Parser tests: every header kind and every parse error, as snapshots.
// Test helpers panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_tools_patch::{ErrorKind, Operation, parse};

fn parsed(text: &str) -> String {
    format!("{:#?}", parse(text).unwrap())
}

fn error(text: &str) -> String {
    let e = parse(text).unwrap_err();
    format!("[{}] {e}", e.kind().code())
}

#[test]
fn plain_diff() {
    insta::assert_snapshot!(parsed(
        "--- a/src/lib.rs\t2024-01-01 10:00:00.000000000 +0000\n\
         +++ b/src/lib.rs\t2024-01-02 10:00:00.000000000 +0000\n\
         @@ -1,3 +1,3 @@ fn main() {\n \
         one\n\
         -two\n\
         +TWO\n \
         three\n"
    ));
}

#[test]
fn plain_diff_without_prefixes_keeps_names() {
    let p = parse("--- src/a.txt\n+++ src/a.txt\n@@ -1 +1 @@\n-x\n+y\n").unwrap();
    assert_eq!(p.files[0].old_path.as_deref(), Some("src/a.txt"));
    assert_eq!(p.files[0].operation, Operation::Modify);
}

#[test]
fn counts_omitted_mean_one() {
    insta::assert_snapshot!(parsed("--- a/f\n+++ b/f\n@@ -3 +3 @@\n-x\n+y\n"));
}

#[test]
fn git_modify_with_index() {
    insta::assert_snapshot!(parsed(
        "diff --git a/README b/README\n\
         index 3b18e51..a042389 100644\n\
         --- a/README\n\
         +++ b/README\n\
         @@ -1,2 +1,2 @@\n \
         hello\n\
         -world\n\
         +there\n"
    ));
}

#[test]
fn git_new_file() {
    insta::assert_snapshot!(parsed(
        "diff --git a/new.sh b/new.sh\n\
         new file mode 100755\n\
         index 0000000..e69de29\n\
         --- /dev/null\n\
         +++ b/new.sh\n\
         @@ -0,0 +1,2 @@\n\
         +#!/bin/sh\n\
         +echo hi\n"
    ));
}

#[test]
fn git_new_empty_file_has_no_hunks() {
    insta::assert_snapshot!(parsed(
        "diff --git a/empty b/empty\nnew file mode 100644\nindex 0000000..e69de29\n"
    ));
}

#[test]
fn git_deleted_file() {
    insta::assert_snapshot!(parsed(
        "diff --git a/old.txt b/old.txt\n\
         deleted file mode 100644\n\
         index 3b18e51..0000000\n\
         --- a/old.txt\n\
         +++ /dev/null\n\
         @@ -1,2 +0,0 @@\n\
         -a\n\
         -b\n"
    ));
}

#[test]
fn git_mode_change() {
    insta::assert_snapshot!(parsed(
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    ));
}

#[test]
fn git_rename_with_similarity() {
    insta::assert_snapshot!(parsed(
        "diff --git a/shell.c b/builtin/shell.c\n\
         similarity index 94%\n\
         rename from shell.c\n\
         rename to builtin/shell.c\n\
         index 1111111..2222222 100644\n\
         --- a/shell.c\n\
         +++ b/builtin/shell.c\n\
         @@ -1 +1 @@\n\
         -old\n\
         +new\n"
    ));
}

#[test]
fn git_pure_rename() {
    insta::assert_snapshot!(parsed(
        "diff --git a/a b/b\nsimilarity index 100%\nrename from a\nrename to b\n"
    ));
}

#[test]
fn git_copy() {
    insta::assert_snapshot!(parsed(
        "diff --git a/src.c b/dst.c\nsimilarity index 100%\ncopy from src.c\ncopy to dst.c\n"
    ));
}

#[test]
fn git_dissimilarity_rewrite() {
    insta::assert_snapshot!(parsed(
        "diff --git a/f b/f\ndissimilarity index 90%\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n"
    ));
}

#[test]
fn git_quoted_names() {
    insta::assert_snapshot!(parsed(
        "diff --git \"a/sp ace\\tx\" \"b/sp ace\\tx\"\n\
         --- \"a/sp ace\\tx\"\n\
         +++ \"b/sp ace\\tx\"\n\
         @@ -1 +1 @@\n-\\303\\251\n+e\n"
    ));
}

#[test]
fn git_names_with_spaces_from_diff_line() {
    let p = parse("diff --git a/my file b/my file\nold mode 100644\nnew mode 100755\n").unwrap();
    assert_eq!(p.files[0].old_path.as_deref(), Some("my file"));
    assert_eq!(p.files[0].new_path.as_deref(), Some("my file"));
}

#[test]
fn no_newline_markers() {
    insta::assert_snapshot!(parsed(
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    ));
}

#[test]
fn no_newline_on_context_sets_both_sides() {
    let p = parse("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n")
        .unwrap();
    let h = &p.files[0].hunks[0];
    assert!(h.old_missing_newline && h.new_missing_newline);
}

#[test]
fn several_files_and_preamble_are_handled() {
    insta::assert_snapshot!(parsed(
        "From 1234 Mon Sep 17 00:00:00 2001\n\
         From: Someone <someone@example.invalid>\n\
         Subject: [PATCH] change things\n\
         \n\
         --- is not a header here\n\
         ---\n \
         a | 2 +-\n\
         \n\
         diff --git a/a b/a\n\
         --- a/a\n\
         +++ b/a\n\
         @@ -1 +1 @@\n\
         -1\n\
         +2\n\
         diff --git a/b b/b\n\
         --- a/b\n\
         +++ b/b\n\
         @@ -1 +1 @@\n\
         -3\n\
         +4\n\
         -- \n\
         2.43.0\n"
    ));
}

#[test]
fn crlf_patch_is_parsed_like_lf() {
    let lf =
        "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
    let crlf = lf.replace('\n', "\r\n");
    assert_eq!(parse(&crlf).unwrap(), parse(lf).unwrap());
}

#[test]
fn lf_patch_keeps_carriage_returns_of_content() {
    let p = parse("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\r\n+b\r\n").unwrap();
    assert_eq!(p.files[0].hunks[0].lines[0].content, b"a\r");
}

#[test]
fn empty_line_in_hunk_is_empty_context() {
    let p = parse("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n").unwrap();
    assert_eq!(p.files[0].hunks[0].lines.len(), 4);
}

#[test]
fn plain_create_and_delete_with_dev_null() {
    let p = parse(
        "--- /dev/null\n+++ b/new\n@@ -0,0 +1 @@\n+x\n--- a/old\n+++ /dev/null\n@@ -1 +0,0 @@\n-y\n",
    )
    .unwrap();
    assert_eq!(p.files[0].operation, Operation::Create);
    assert_eq!(p.files[0].new_path.as_deref(), Some("new"));
    assert_eq!(p.files[1].operation, Operation::Delete);
    assert_eq!(p.files[1].old_path.as_deref(), Some("old"));
}

#[test]
fn plain_different_names_is_a_rename() {
    let p = parse("--- a/x\n+++ b/y\n@@ -1 +1 @@\n-1\n+2\n").unwrap();
    assert_eq!(p.files[0].operation, Operation::Rename);
}

// ---- errors ----

#[test]
fn error_garbage() {
    insta::assert_snapshot!(error("this is not a patch\nat all\n"));
}

#[test]
fn error_empty_input() {
    insta::assert_snapshot!(error(""));
}

#[test]
fn error_hunk_without_file_header() {
    insta::assert_snapshot!(error("hello\n@@ -1 +1 @@\n-a\n+b\n"));
}

#[test]
fn error_missing_hunk_after_names() {
    insta::assert_snapshot!(error("--- a/f\n+++ b/f\nnot a hunk\n"));
}

#[test]
fn error_bad_hunk_header() {
    insta::assert_snapshot!(error("--- a/f\n+++ b/f\n@@ -x +1 @@\n-a\n+b\n"));
}

#[test]
fn error_hunk_header_without_numbers() {
    insta::assert_snapshot!(error("--- a/f\n+++ b/f\n@@ @@\n-a\n+b\n"));
}

#[test]
fn error_zero_start_with_count() {
    insta::assert_snapshot!(error("--- a/f\n+++ b/f\n@@ -0,1 +1 @@\n-a\n+b\n"));
}

#[test]
fn error_hunk_too_short_at_end() {
    insta::assert_snapshot!(error("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n"));
}

#[test]
fn error_hunk_too_short_before_next_hunk() {
    insta::assert_snapshot!(error(
        "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n@@ -10 +10 @@\n-x\n+y\n"
    ));
}

#[test]
fn error_hunk_too_long() {
    insta::assert_snapshot!(error("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n+c\n"));
}

#[test]
fn error_too_many_old_lines_inside_hunk() {
    insta::assert_snapshot!(error("--- a/f\n+++ b/f\n@@ -1,1 +1,2 @@\n-a\n-b\n+c\n+d\n"));
}

#[test]
fn error_bad_line_inside_hunk() {
    insta::assert_snapshot!(error("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n*b\n+c\n"));
}

#[test]
fn error_line_after_no_newline_marker() {
    insta::assert_snapshot!(error(
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n\\ No newline at end of file\n-b\n+c\n+d\n"
    ));
}

#[test]
fn error_both_sides_dev_null() {
    insta::assert_snapshot!(error("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n"));
}

#[test]
fn error_git_binary_patch() {
    let text = "diff --git a/img.png b/img.png\nindex 1..2 100644\nGIT binary patch\nliteral 5\nMcmZ?wbhEHb\n\n";
    insta::assert_snapshot!(error(text));
    assert_eq!(parse(text).unwrap_err().kind(), ErrorKind::IsBinary);
}

#[test]
fn error_binary_files_differ() {
    insta::assert_snapshot!(error(
        "diff --git a/img.png b/img.png\nindex 1..2 100644\nBinary files a/img.png and b/img.png differ\n"
    ));
    insta::assert_snapshot!(
        "plain_binary_files_differ",
        error("Binary files a/img.png and b/img.png differ\n")
    );
}

#[test]
fn error_bad_mode() {
    insta::assert_snapshot!(error(
        "diff --git a/f b/f\nold mode 100644\nnew mode 10x755\n"
    ));
}

#[test]
fn error_bad_similarity() {
    insta::assert_snapshot!(error(
        "diff --git a/a b/b\nsimilarity index 140%\nrename from a\nrename to b\n"
    ));
}

#[test]
fn error_rename_without_target() {
    insta::assert_snapshot!(error("diff --git a/a b/b\nrename from a\n"));
}

#[test]
fn error_git_block_changing_nothing() {
    insta::assert_snapshot!(error("diff --git a/a b/a\nindex 1..2 100644\n"));
}

#[test]
fn error_bad_quoted_name() {
    insta::assert_snapshot!(error("--- \"a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"));
}

#[test]
fn error_non_utf8_path() {
    let e = parse(b"--- a/\xff\n+++ b/\xff\n@@ -1 +1 @@\n-a\n+b\n".as_slice()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid patch at line 1: path is not valid UTF-8"
    );
}

#[test]
fn parse_errors_are_invalid_input() {
    for text in ["", "garbage", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n"] {
        assert_eq!(
            parse(text).unwrap_err().kind(),
            ErrorKind::InvalidInput,
            "{text:?}"
        );
    }
}

#[test]
fn crlf_patch_with_lf_trailer_is_still_crlf() {
    // A mail client converted the patch to CRLF but the signature is LF.
    let lf = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
    let crlf = format!("{}-- \n2.43.0\n", lf.replace('\n', "\r\n"));
    assert_eq!(parse(&crlf).unwrap(), parse(lf).unwrap());
}
