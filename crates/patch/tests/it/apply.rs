//! Applier tests: semantics, reports and every apply-time error.
// Test helpers panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_tools_patch::{
    Action, DirStore, ErrorKind, FileStore, MemoryStore, PatchError, Report, StoreError,
    apply_patch, check, parse,
};

fn mem(files: &[(&str, &str)]) -> MemoryStore {
    files.iter().map(|(p, c)| (*p, c.as_bytes())).collect()
}

fn get(store: &MemoryStore, path: &str) -> String {
    String::from_utf8(store.get(path).unwrap().to_vec()).unwrap()
}

fn fails(store: &mut MemoryStore, patch: &str) -> PatchError {
    let before = store.clone();
    let e = apply_patch(patch, store).unwrap_err();
    assert_eq!(*store, before, "a failed apply changed the store");
    e
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn modify_at_stated_line() {
    let mut s = mem(&[("f", "a\nb\nc\n")]);
    let r = apply_patch(
        "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(get(&s, "f"), "a\nB\nc\n");
    assert_eq!(r.to_string(), "M f (1 hunk)");
}

#[test]
fn offsets_are_found_and_reported() {
    // The file gained 3 lines at the top and lost 2 before the second hunk.
    let mut text = String::from("x\ny\nz\n");
    text.push_str(&numbered(30));
    let text = text.replace("line 15\nline 16\n", "");
    let mut s = mem(&[("src/a.rs", &text)]);
    let patch = "--- a/src/a.rs\n+++ b/src/a.rs\n\
        @@ -2,3 +2,3 @@\n line 2\n-line 3\n+LINE 3\n line 4\n\
        @@ -24,3 +24,3 @@\n line 24\n-line 25\n+LINE 25\n line 26\n";
    let r = apply_patch(patch, &mut s).unwrap();
    assert_eq!(
        r.to_string(),
        "M src/a.rs (2 hunks, hunk 1 applied at offset +3, hunk 2 applied at offset +1)"
    );
    assert_eq!(r.files[0].offsets[1].offset, 1);
    let out = get(&s, "src/a.rs");
    assert!(
        out.contains("line 2\nLINE 3\nline 4\n") && out.contains("line 24\nLINE 25\nline 26\n")
    );
}

#[test]
fn negative_offset() {
    let text = numbered(20).replace("line 1\nline 2\nline 3\n", "");
    let mut s = mem(&[("f", &text)]);
    let r = apply_patch(
        "--- a/f\n+++ b/f\n@@ -10,3 +10,3 @@\n line 10\n-line 11\n+X\n line 12\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(r.to_string(), "M f (1 hunk, hunk 1 applied at offset -3)");
    assert!(get(&s, "f").contains("line 10\nX\nline 12\n"));
}

#[test]
fn nearest_match_wins() {
    // "b c x" appears at lines 2, 7 and 16; the hunk says line 8, so the
    // nearest candidate (line 7, offset -1) wins over line 2 (-6) and 16 (+8).
    let text = "a\nb\nc\nx\nd\ne\nb\nc\nx\nh\ni\nj\nk\nl\nm\nb\nc\nx\ny\n";
    let mut s = mem(&[("f", text)]);
    let r = apply_patch(
        "--- a/f\n+++ b/f\n@@ -8,3 +8,3 @@\n b\n-c\n+C\n x\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(r.files[0].offsets[0].offset, -1);
    assert_eq!(get(&s, "f"), text.replacen("e\nb\nc\n", "e\nb\nC\n", 1));
}

#[test]
fn hunks_may_not_go_backwards() {
    let mut s = mem(&[("f", "a\nb\nc\nd\n")]);
    let e = fails(
        &mut s,
        "--- a/f\n+++ b/f\n@@ -3,1 +3,1 @@\n-c\n+C\n@@ -1,1 +1,1 @@\n-a\n+A\n",
    );
    insta::assert_snapshot!(format!("[{}] {e}", e.kind().code()));
}

#[test]
fn hunk_failure_names_file_hunk_and_lines() {
    let mut s = mem(&[("src/a.rs", "fn a() {}\nfn b() {}\n")]);
    let e = fails(
        &mut s,
        "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,2 @@\n fn a() {}\n-fn b() {}\n+fn c() {}\n\
         @@ -5,2 +5,2 @@\n fn x() {}\n-fn y() {}\n+fn z() {}\n",
    );
    assert_eq!(e.kind(), ErrorKind::PatchFailed);
    match &e {
        PatchError::HunkFailed {
            path, hunk, header, ..
        } => {
            assert_eq!(
                (path.as_str(), *hunk, header.as_str()),
                ("src/a.rs", 2, "@@ -5,2 +5,2 @@")
            );
        }
        other => panic!("{other:?}"),
    }
    insta::assert_snapshot!(e.to_string());
}

#[test]
fn hunk_failure_truncates_expected_lines() {
    let long = "y".repeat(300);
    let mut patch = format!("--- a/f\n+++ b/f\n@@ -1,20 +1,20 @@\n-{long}\n+z\n");
    for i in 0..19 {
        patch.push_str(&format!(" ctx {i}\n"));
    }
    let mut s = mem(&[("f", "nothing\n")]);
    insta::assert_snapshot!(fails(&mut s, &patch).to_string());
}

#[test]
fn no_fuzz_one_differing_line_fails() {
    let mut s = mem(&[("f", "a\nb\nc\nd\n")]);
    let e = fails(
        &mut s,
        "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n D\n",
    );
    assert_eq!(e.kind(), ErrorKind::PatchFailed);
}

#[test]
fn one_sided_context_prefers_the_file_start() {
    // Trailing context only, stated at line 1: the top is tried first even
    // though the stated line plus nothing would also be "nearest".
    let mut s = mem(&[("f", "a\nb\nc\nx\na\nb\nc\n")]);
    apply_patch(
        "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(get(&s, "f"), "A\nb\nc\nx\na\nb\nc\n");
    // When the top no longer matches, the hunk is searched for like any other.
    let mut s = mem(&[("f", "new top\na\nb\nc\n")]);
    let r = apply_patch(
        "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(r.to_string(), "M f (1 hunk, hunk 1 applied at offset +1)");
    let mut s = mem(&[("f", "new top\nb\nc\nd\n")]);
    let e = fails(
        &mut s,
        "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n",
    );
    insta::assert_snapshot!(e.to_string());
}

#[test]
fn one_sided_context_prefers_the_file_end() {
    // Leading context only: appended at the end, not after the nearer "c d".
    let mut s = mem(&[("f", "c\nd\nx\nc\nd\n")]);
    apply_patch("--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n c\n d\n+e\n", &mut s).unwrap();
    assert_eq!(get(&s, "f"), "c\nd\nx\nc\nd\ne\n");
    // A file that grew at the end: found by the search.
    let mut s = mem(&[("f", "a\nb\nc\nd\nmore\n")]);
    apply_patch("--- a/f\n+++ b/f\n@@ -3,2 +3,3 @@\n c\n d\n+e\n", &mut s).unwrap();
    assert_eq!(get(&s, "f"), "a\nb\nc\nd\ne\nmore\n");
}

#[test]
fn crlf_file_with_lf_patch_stays_crlf() {
    let mut s = mem(&[("f", "a\r\nb\r\nc\r\n")]);
    apply_patch(
        "--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n+B2\n c\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(get(&s, "f"), "a\r\nB\r\nB2\r\nc\r\n");
}

#[test]
fn crlf_patch_on_lf_file_stays_lf() {
    let mut s = mem(&[("f", "a\nb\nc\n")]);
    let patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n".replace('\n', "\r\n");
    apply_patch(&patch, &mut s).unwrap();
    assert_eq!(get(&s, "f"), "a\nB\nc\n");
}

#[test]
fn crlf_patch_on_crlf_file_stays_crlf() {
    let mut s = mem(&[("f", "a\r\nb\r\nc\r\n")]);
    let patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n".replace('\n', "\r\n");
    apply_patch(&patch, &mut s).unwrap();
    assert_eq!(get(&s, "f"), "a\r\nB\r\nc\r\n");
}

#[test]
fn exact_patch_of_mixed_endings_is_exact() {
    // A diff tool's output for a file with mixed endings carries the CRs.
    let mut s = mem(&[("f", "a\r\nb\nc\r\n")]);
    apply_patch(
        "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\r\n-b\n+B\r\n c\r\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(get(&s, "f"), "a\r\nB\r\nc\r\n");
}

#[test]
fn bom_is_kept() {
    let mut s = mem(&[("f", "\u{feff}a\nb\n")]);
    apply_patch("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n", &mut s).unwrap();
    assert_eq!(get(&s, "f"), "\u{feff}a\nc\n");
    // Replacing the first line keeps the BOM too, with or without it in the patch.
    apply_patch("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+z\n", &mut s).unwrap();
    assert_eq!(get(&s, "f"), "\u{feff}z\nc\n");
    apply_patch(
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-\u{feff}z\n+\u{feff}y\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(get(&s, "f"), "\u{feff}y\nc\n");
}

#[test]
fn no_newline_at_end_both_ways() {
    let mut s = mem(&[("f", "a\nb")]);
    apply_patch(
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(get(&s, "f"), "a\nb\n");
    apply_patch(
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(get(&s, "f"), "a\nc");
    apply_patch(
        "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n-a\n+A\n+A2\n c\n\\ No newline at end of file\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(get(&s, "f"), "A\nA2\nc");
}

#[test]
fn no_newline_marker_must_match_file() {
    let mut s = mem(&[("f", "a\nb\n")]);
    let e = fails(
        &mut s,
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n",
    );
    assert_eq!(e.kind(), ErrorKind::PatchFailed);
}

#[test]
fn no_newline_kept_on_crlf_file() {
    let mut s = mem(&[("f", "a\r\nb")]);
    apply_patch(
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(get(&s, "f"), "A\r\nb");
}

#[test]
fn create_uses_lf_and_delete_checks_content() {
    let mut s = mem(&[("old", "x\ny\n")]);
    let r = apply_patch(
        "--- /dev/null\n+++ b/dir/new\n@@ -0,0 +1,2 @@\n+1\n+2\n--- a/old\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(r.to_string(), "A dir/new (1 hunk)\nD old (1 hunk)");
    assert_eq!(get(&s, "dir/new"), "1\n2\n");
    assert!(s.get("old").is_none());
}

#[test]
fn delete_with_wrong_content_fails() {
    let mut s = mem(&[("old", "x\nchanged\n")]);
    let e = fails(
        &mut s,
        "--- a/old\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n",
    );
    assert_eq!(e.kind(), ErrorKind::PatchFailed);
}

#[test]
fn delete_not_covering_whole_file_fails() {
    let mut s = mem(&[("old", "x\ny\nz\n")]);
    let e = fails(
        &mut s,
        "diff --git a/old b/old\ndeleted file mode 100644\n--- a/old\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n",
    );
    insta::assert_snapshot!(format!("[{}] {e}", e.kind().code()));
}

#[test]
fn delete_without_hunks_removes_file() {
    let mut s = mem(&[("empty", "")]);
    let r = apply_patch(
        "diff --git a/empty b/empty\ndeleted file mode 100644\nindex e69de29..0000000\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(r.files[0].action, Action::Deleted);
    assert!(s.files.is_empty());
}

#[test]
fn rename_with_edit_and_pure_rename() {
    let mut s = mem(&[("a.txt", "1\n2\n3\n"), ("bin.dat", "\0\x01raw")]);
    s.executable.insert("bin.dat".into());
    let r = apply_patch(
        "diff --git a/a.txt b/sub/b.txt\nsimilarity index 80%\nrename from a.txt\nrename to sub/b.txt\n\
         --- a/a.txt\n+++ b/sub/b.txt\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n\
         diff --git a/bin.dat b/moved.dat\nsimilarity index 100%\nrename from bin.dat\nrename to moved.dat\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(
        r.to_string(),
        "R a.txt -> sub/b.txt (1 hunk)\nR bin.dat -> moved.dat"
    );
    assert_eq!(get(&s, "sub/b.txt"), "1\ntwo\n3\n");
    assert_eq!(s.get("moved.dat"), Some(&b"\0\x01raw"[..]));
    assert!(s.executable.contains("moved.dat"));
    assert_eq!(s.files.len(), 2);
}

#[test]
fn copy_keeps_source_and_reads_original() {
    // The source is also modified in the same patch: the copy starts from
    // the original content, as in git.
    let mut s = mem(&[("src.c", "a\nb\n")]);
    let r = apply_patch(
        "diff --git a/src.c b/dst.c\nsimilarity index 50%\ncopy from src.c\ncopy to dst.c\n\
         --- a/src.c\n+++ b/dst.c\n@@ -1,2 +1,2 @@\n a\n-b\n+copy\n\
         diff --git a/src.c b/src.c\n--- a/src.c\n+++ b/src.c\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(r.to_string(), "C src.c -> dst.c (1 hunk)\nM src.c (1 hunk)");
    assert_eq!(get(&s, "dst.c"), "a\ncopy\n");
    assert_eq!(get(&s, "src.c"), "A\nb\n");
}

#[test]
fn mode_change_in_memory_store_and_report() {
    let mut s = mem(&[("run.sh", "echo\n")]);
    let r = apply_patch(
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(r.to_string(), "M run.sh (mode 100644 -> 100755)");
    assert!(s.executable.contains("run.sh"));
    apply_patch(
        "diff --git a/run.sh b/run.sh\nold mode 100755\nnew mode 100644\n",
        &mut s,
    )
    .unwrap();
    assert!(!s.executable.contains("run.sh"));
}

#[cfg(unix)]
#[test]
fn mode_change_in_dir_store() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.sh"), "echo\n").unwrap();
    std::fs::set_permissions(
        dir.path().join("run.sh"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let mut store = DirStore::new(dir.path());
    apply_patch(
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\nindex 1..2\n--- a/run.sh\n+++ b/run.sh\n@@ -1 +1 @@\n-echo\n+echo hi\n\
         diff --git a/new.sh b/new.sh\nnew file mode 100755\n--- /dev/null\n+++ b/new.sh\n@@ -0,0 +1 @@\n+x\n",
        &mut store,
    )
    .unwrap();
    let mode = |p: &str| {
        std::fs::metadata(dir.path().join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("run.sh"), 0o755);
    assert_eq!(mode("new.sh"), 0o755);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("run.sh")).unwrap(),
        "echo hi\n"
    );
}

#[cfg(unix)]
#[test]
fn dir_store_keeps_permissions_and_prunes_empty_dirs() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    std::fs::write(dir.path().join("a/b/gone"), "x\n").unwrap();
    std::fs::write(dir.path().join("keep"), "k\n").unwrap();
    std::fs::set_permissions(
        dir.path().join("keep"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let mut store = DirStore::new(dir.path());
    apply_patch(
        "--- a/a/b/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n--- a/keep\n+++ b/keep\n@@ -1 +1 @@\n-k\n+K\n",
        &mut store,
    )
    .unwrap();
    assert!(!dir.path().join("a").exists(), "empty parents are removed");
    let meta = std::fs::metadata(dir.path().join("keep")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary files are left");
}

#[test]
fn create_existing_path_is_refused() {
    let mut s = mem(&[("f", "x\n")]);
    let e = fails(&mut s, "--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+y\n");
    insta::assert_snapshot!(format!("[{}] {e}", e.kind().code()));
}

#[test]
fn rename_onto_existing_path_is_refused() {
    let mut s = mem(&[("a", "x\n"), ("b", "y\n")]);
    let e = fails(&mut s, "diff --git a/a b/b\nrename from a\nrename to b\n");
    assert_eq!(e.kind(), ErrorKind::PatchFailed);
    let e = fails(&mut s, "diff --git a/a b/b\ncopy from a\ncopy to b\n");
    assert_eq!(e.kind(), ErrorKind::PatchFailed);
}

/// Found by fuzzing: the in-memory store let a file move beneath its own
/// name (`f` to `f/g`), which no file system allows, and the rollback of a
/// later failure could not move it back.
#[test]
fn rename_beneath_itself_is_refused_and_changes_nothing() {
    let mut s = mem(&[("f", "x\n")]);
    let before = s.clone();
    let e = fails(
        &mut s,
        "diff --git a/f b/f/g\nrename from f\nrename to f/g\n",
    );
    assert_eq!(e.kind(), ErrorKind::NotAFile, "{e}");
    assert_eq!(s, before);
}

#[test]
fn path_named_twice_is_refused() {
    let mut s = mem(&[("f", "x\n")]);
    let e = fails(
        &mut s,
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-y\n+z\n",
    );
    insta::assert_snapshot!(format!("[{}] {e}", e.kind().code()));
    let mut s = mem(&[("a", "x\n"), ("b", "y\n")]);
    let e = fails(
        &mut s,
        "diff --git a/a b/c\nrename from a\nrename to c\ndiff --git a/b b/c\nrename from b\nrename to c\n",
    );
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[test]
fn missing_file_is_not_found() {
    let mut s = mem(&[]);
    let e = fails(
        &mut s,
        "--- a/missing.rs\n+++ b/missing.rs\n@@ -1 +1 @@\n-x\n+y\n",
    );
    insta::assert_snapshot!(format!("[{}] {e}", e.kind().code()));
}

#[test]
fn directory_is_not_a_file() {
    let mut s = mem(&[("dir/inner", "x\n")]);
    let e = fails(&mut s, "--- a/dir\n+++ b/dir\n@@ -1 +1 @@\n-x\n+y\n");
    insta::assert_snapshot!(format!("[{}] {e}", e.kind().code()));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let e = apply_patch(
        "--- a/sub\n+++ b/sub\n@@ -1 +1 @@\n-x\n+y\n",
        &mut DirStore::new(dir.path()),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAFile);
}

#[test]
fn nul_bytes_are_binary() {
    let mut s = MemoryStore::new();
    s.insert("f", b"a\n\0b\n".to_vec());
    let e = apply_patch("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+c\n", &mut s).unwrap_err();
    insta::assert_snapshot!(format!("[{}] {e}", e.kind().code()));
}

#[test]
fn escaping_paths_are_refused() {
    let mut s = mem(&[]);
    let e = fails(
        &mut s,
        "--- /dev/null\n+++ b/../outside\n@@ -0,0 +1 @@\n+x\n",
    );
    insta::assert_snapshot!(format!("[{}] {e}", e.kind().code()));
    let dir = tempfile::tempdir().unwrap();
    let e = apply_patch(
        "--- /dev/null\n+++ /etc/x\n@@ -0,0 +1 @@\n+x\n",
        &mut DirStore::new(dir.path()),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PathEscape);
}

#[test]
fn symlinks_are_unsupported() {
    let mut s = mem(&[]);
    let e = fails(
        &mut s,
        "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+target\n\\ No newline at end of file\n",
    );
    insta::assert_snapshot!(format!("[{}] {e}", e.kind().code()));
}

/// A store that refuses big files, as the facade's will.
struct Limited(MemoryStore);

impl FileStore for Limited {
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        let data = self.0.read(path)?;
        if data.len() > 4 {
            return Err(StoreError::TooLarge {
                size: data.len() as u64,
                limit: 4,
            });
        }
        Ok(data)
    }
    fn exists(&self, path: &str) -> Result<bool, StoreError> {
        self.0.exists(path)
    }
    fn write(&mut self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        self.0.write(path, data)
    }
    fn remove(&mut self, path: &str) -> Result<(), StoreError> {
        self.0.remove(path)
    }
}

#[test]
fn store_errors_keep_their_class() {
    let mut s = Limited(mem(&[("big", "0123456789\n")]));
    let e = apply_patch(
        "--- a/big\n+++ b/big\n@@ -1 +1 @@\n-0123456789\n+x\n",
        &mut s,
    )
    .unwrap_err();
    insta::assert_snapshot!(format!("[{}] {e}", e.kind().code()));
    assert_eq!(e.path(), Some("big"));
    // The trait's default rename works through read/write/remove.
    let mut s = Limited(mem(&[("a", "x\n")]));
    apply_patch("diff --git a/a b/b\nrename from a\nrename to b\n", &mut s).unwrap();
    assert_eq!(s.0.get("b"), Some(&b"x\n"[..]));
}

#[test]
fn check_is_a_dry_run() {
    let s = mem(&[("f", "a\n")]);
    let patch = parse("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n").unwrap();
    let r = check(&patch, &s).unwrap();
    assert_eq!(r.to_string(), "M f (1 hunk)");
    assert_eq!(get(&s, "f"), "a\n");
}

#[test]
fn report_display_is_one_line_per_file() {
    let mut s = mem(&[
        ("m", &numbered(10)),
        ("d", "x\n"),
        ("r", "y\n"),
        ("c", "z\n"),
        ("x.sh", ""),
    ]);
    let patch = "--- a/m\n+++ b/m\n@@ -1,2 +1,2 @@\n-line 1\n+L1\n line 2\n@@ -7,3 +7,3 @@\n line 8\n-line 9\n+L9\n line 10\n\
        --- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+n\n\
        --- a/d\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n\
        diff --git a/r b/r2\nrename from r\nrename to r2\n\
        diff --git a/c b/c2\ncopy from c\ncopy to c2\n\
        diff --git a/x.sh b/x.sh\nold mode 100644\nnew mode 100755\n";
    let r: Report = apply_patch(patch, &mut s).unwrap();
    insta::assert_snapshot!(r.to_string());
}

#[test]
fn error_kinds_have_stable_codes() {
    let kinds = [
        ErrorKind::InvalidInput,
        ErrorKind::PatchFailed,
        ErrorKind::NotFound,
        ErrorKind::NotAFile,
        ErrorKind::IsBinary,
        ErrorKind::TooLarge,
        ErrorKind::PathEscape,
        ErrorKind::Io,
    ];
    let codes: Vec<_> = kinds.iter().map(|k| k.code()).collect();
    assert_eq!(
        codes,
        [
            "invalid_input",
            "patch_failed",
            "not_found",
            "not_a_file",
            "is_binary",
            "too_large",
            "path_escape",
            "io_error"
        ]
    );
}

#[test]
fn big_file_applies_in_linear_time() {
    // 200k identical lines with a unique anchor at the end: the hunk says
    // line 1, the context is found ~200k lines away.
    let mut text = "same\n".repeat(200_000);
    text.push_str("anchor\nend\n");
    let mut s = mem(&[("big", &text)]);
    let start = std::time::Instant::now();
    let r = apply_patch(
        "--- a/big\n+++ b/big\n@@ -2,2 +2,2 @@\n anchor\n-end\n+END\n",
        &mut s,
    )
    .unwrap();
    assert_eq!(r.files[0].offsets[0].offset, 199_999);
    assert!(get(&s, "big").ends_with("anchor\nEND\n"));
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
}
