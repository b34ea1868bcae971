//! The hunk search stays about linear in the file however the hunks' line
//! numbers jump, and the mode and read-only rules of the applier.

// Test helpers panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::mpsc;
use std::time::Duration;

use agent_tools_patch::{ErrorKind, FileStore, MemoryStore, PatchError, StoreError, apply_patch};

/// Runs `work` on a thread and fails the test if it takes longer than
/// `limit` (a guard against a hang, not a timing measurement).
fn within<T: Send + 'static>(limit: Duration, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(limit)
        .expect("the apply did not finish in time: the hunk search is not bounded")
}

fn numbered_file(lines: usize) -> String {
    let mut text = String::with_capacity(lines * 8);
    for i in 0..lines {
        text.push_str(&format!("L{i}\n"));
    }
    text
}

/// Hunk `i` changes line `L<2i+1>` and states its start as line 1 or as
/// line `far`, alternately: every other hunk claims to be near the end.
fn alternating_patch(hunks: usize, far: usize) -> String {
    let mut patch = String::from("--- a/big.txt\n+++ b/big.txt\n");
    for i in 0..hunks {
        let stated = if i % 2 == 0 { 1 } else { far };
        let line = 2 * i + 1;
        patch.push_str(&format!(
            "@@ -{stated},1 +{stated},1 @@\n-L{line}\n+M{line}\n"
        ));
    }
    patch
}

#[test]
fn hunks_whose_line_numbers_jump_back_and_forth_apply_in_linear_time() {
    // One million lines and 2000 hunks: the search around each stated line
    // used to cross the whole file for every other hunk (~10^9 steps).
    const LINES: usize = 1_000_000;
    const HUNKS: usize = 2000;
    let (store, report) = within(Duration::from_secs(20), || {
        let mut store = MemoryStore::new();
        store.insert("big.txt", numbered_file(LINES));
        let report = apply_patch(alternating_patch(HUNKS, LINES), &mut store).unwrap();
        (store, report)
    });
    let text = String::from_utf8(store.get("big.txt").unwrap().to_vec()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), LINES);
    for i in 0..HUNKS {
        let line = 2 * i + 1;
        assert_eq!(lines[line], format!("M{line}"));
        assert_eq!(lines[line - 1], format!("L{}", line - 1));
    }
    assert_eq!(lines[2 * HUNKS + 1], format!("L{}", 2 * HUNKS + 1));
    assert_eq!(report.files[0].hunks, HUNKS);
}

#[test]
fn ascending_line_numbers_far_past_the_end_give_up_with_a_clear_error() {
    // Each hunk's stated line lies far beyond the end of the file, so each
    // search would start at the end and walk back to the previous hunk.
    let mut store = MemoryStore::new();
    store.insert("f.txt", numbered_file(100_000));
    let before = store.clone();
    let mut patch = String::from("--- a/f.txt\n+++ b/f.txt\n");
    for i in 0..200 {
        let stated = 1 + i * 1_000_000;
        let line = 2 * i + 1;
        patch.push_str(&format!(
            "@@ -{stated},1 +{stated},1 @@\n-L{line}\n+M{line}\n"
        ));
    }
    let err = within(Duration::from_secs(20), move || {
        let err = apply_patch(patch, &mut store).unwrap_err();
        (err, store)
    });
    let (err, store) = err;
    assert_eq!(err.kind(), ErrorKind::PatchFailed);
    assert!(err.to_string().contains("gave up searching"), "{err}");
    let PatchError::HunkFailed { hunk, .. } = err else {
        panic!("not a hunk failure: {err}");
    };
    // About eight passes over the file were allowed.
    assert!((5..=12).contains(&hunk), "failed at hunk {hunk}");
    assert_eq!(store, before, "a failed patch changes nothing");
}

#[test]
fn hunks_out_of_order_are_searched_for_after_the_previous_one() {
    // Every hunk claims line 1, as hand-written patches often do; the
    // blocks are identical, so only the order tells them apart.
    let mut store = MemoryStore::new();
    store.insert(
        "f.rs",
        "fn a() {\n    x\n}\nfn b() {\n    x\n}\nfn c() {\n    x\n}\n",
    );
    let report = apply_patch(
        "--- a/f.rs\n+++ b/f.rs\n\
         @@ -1,2 +1,2 @@\n fn a() {\n-    x\n+    1\n\
         @@ -1,2 +1,2 @@\n fn b() {\n-    x\n+    2\n\
         @@ -1,2 +1,2 @@\n-    x\n+    3\n }\n",
        &mut store,
    )
    .unwrap();
    assert_eq!(
        store.get("f.rs").unwrap(),
        b"fn a() {\n    1\n}\nfn b() {\n    2\n}\nfn c() {\n    3\n}\n"
    );
    assert_eq!(
        report.to_string(),
        "M f.rs (3 hunks, hunk 2 applied at offset +3, hunk 3 applied at offset +7)"
    );
}

#[test]
fn set_id_and_sticky_modes_are_refused() {
    for mode in ["104755", "102755", "101755"] {
        let mut store = MemoryStore::new();
        store.insert("run.sh", "echo\n");
        let err = apply_patch(
            format!("diff --git a/run.sh b/run.sh\nold mode 100755\nnew mode {mode}\n"),
            &mut store,
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{mode}: {err}");
        assert!(err.to_string().contains(mode), "{err}");
        assert!(!store.executable.contains("run.sh"));
    }
}

#[cfg(unix)]
#[test]
fn a_mode_change_sets_exactly_the_permission_bits_named() {
    use agent_tools_patch::DirStore;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret"), "s\n").unwrap();
    std::fs::write(dir.path().join("shared"), "s\n").unwrap();
    for name in ["secret", "shared"] {
        std::fs::set_permissions(
            dir.path().join(name),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
    }
    let mut store = DirStore::new(dir.path());
    let report = apply_patch(
        "diff --git a/secret b/secret\nold mode 100644\nnew mode 100600\n\
         diff --git a/shared b/shared\nold mode 100644\nnew mode 100664\n\
         diff --git a/made b/made\nnew file mode 100640\n--- /dev/null\n+++ b/made\n@@ -0,0 +1 @@\n+m\n",
        &mut store,
    )
    .unwrap();
    let mode = |p: &str| {
        std::fs::metadata(dir.path().join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("secret"), 0o600);
    assert_eq!(mode("shared"), 0o664);
    assert_eq!(mode("made"), 0o640);
    assert!(
        report
            .to_string()
            .contains("M secret (mode 100644 -> 100600)"),
        "{report}"
    );
}

/// A memory store that protects some files, as a directory store does for
/// files without a write bit.
struct Protected {
    inner: MemoryStore,
    read_only: &'static [&'static str],
}

impl FileStore for Protected {
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        self.inner.read(path)
    }
    fn exists(&self, path: &str) -> Result<bool, StoreError> {
        self.inner.exists(path)
    }
    fn write(&mut self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        self.inner.write(path, data)
    }
    fn remove(&mut self, path: &str) -> Result<(), StoreError> {
        self.inner.remove(path)
    }
    fn check_writable(&self, path: &str) -> Result<(), StoreError> {
        if self.read_only.contains(&path) {
            Err(StoreError::ReadOnly)
        } else {
            Ok(())
        }
    }
}

#[test]
fn read_only_files_are_not_modified_deleted_or_moved_with_edits() {
    let patches = [
        "--- a/ro\n+++ b/ro\n@@ -1 +1 @@\n-x\n+y\n",
        "--- a/ro\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
        "diff --git a/ro b/moved\nrename from ro\nrename to moved\n--- a/ro\n+++ b/moved\n@@ -1 +1 @@\n-x\n+y\n",
    ];
    for patch in patches {
        let mut store = Protected {
            inner: [("ro", "x\n"), ("rw", "x\n")].into_iter().collect(),
            read_only: &["ro"],
        };
        // A change to a writable file in the same patch is not made either.
        let patch = format!("--- a/rw\n+++ b/rw\n@@ -1 +1 @@\n-x\n+y\n{patch}");
        let err = apply_patch(&patch, &mut store).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io, "{err}");
        assert!(
            err.to_string().contains("ro: the file is read-only"),
            "{err}"
        );
        assert_eq!(store.inner.get("ro"), Some(&b"x\n"[..]));
        assert_eq!(store.inner.get("rw"), Some(&b"x\n"[..]));
    }
    // Copying from a read-only file only reads it.
    let mut store = Protected {
        inner: [("ro", "x\n")].into_iter().collect(),
        read_only: &["ro"],
    };
    apply_patch(
        "diff --git a/ro b/copy\ncopy from ro\ncopy to copy\n",
        &mut store,
    )
    .unwrap();
    assert_eq!(store.inner.get("copy"), Some(&b"x\n"[..]));
}
