//! All or nothing: a patch whose late block fails leaves every file
//! byte-identical, whether it fails while staging or while committing.
// Test helpers panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;

use agent_tools_patch::{
    DirStore, ErrorKind, FileStore, FlushError, PatchError, StoreError, apply, parse,
};

const PATCH: &str = "\
diff --git a/created/deep/new.txt b/created/deep/new.txt
new file mode 100755
--- /dev/null
+++ b/created/deep/new.txt
@@ -0,0 +1,2 @@
+fresh
+file
diff --git a/old/name.txt b/moved/name.txt
similarity index 80%
rename from old/name.txt
rename to moved/name.txt
--- a/old/name.txt
+++ b/moved/name.txt
@@ -1,3 +1,3 @@
 keep
-edit me
+edited
 keep too
diff --git a/modify.txt b/modify.txt
old mode 100644
new mode 100755
--- a/modify.txt
+++ b/modify.txt
@@ -1,2 +1,2 @@
-one\r
+ONE\r
 two\r
diff --git a/doomed/delete.sh b/doomed/delete.sh
deleted file mode 100755
--- a/doomed/delete.sh
+++ /dev/null
@@ -1,2 +0,0 @@
-#!/bin/sh
-echo bye
diff --git a/last.txt b/last.txt
--- a/last.txt
+++ b/last.txt
@@ -1,2 +1,2 @@
 alpha
-beta
+BETA
";

/// Every entry under `root`: path, kind, mode and content.
fn snapshot(root: &Path) -> Vec<(String, String, Vec<u8>)> {
    let mut out = Vec::new();
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String, Vec<u8>)>) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = fs::metadata(&p).unwrap();
            #[cfg(unix)]
            let mode = {
                use std::os::unix::fs::PermissionsExt;
                format!("{:o}", meta.permissions().mode() & 0o777)
            };
            #[cfg(not(unix))]
            let mode = String::new();
            if meta.is_dir() {
                out.push((rel, format!("dir {mode}"), Vec::new()));
                walk(root, &p, out);
            } else {
                out.push((rel, format!("file {mode}"), fs::read(&p).unwrap()));
            }
        }
    }
    walk(root, root, &mut out);
    out
}

fn set_mode(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
}

fn setup(last: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    for (path, data) in [
        ("old/name.txt", "keep\nedit me\nkeep too\n"),
        ("modify.txt", "one\r\ntwo\r\n"),
        ("doomed/delete.sh", "#!/bin/sh\necho bye\n"),
        ("last.txt", last),
        ("untouched.txt", "same\n"),
    ] {
        fs::create_dir_all(r.join(path).parent().unwrap()).unwrap();
        fs::write(r.join(path), data).unwrap();
        set_mode(&r.join(path), 0o644);
    }
    set_mode(&r.join("doomed/delete.sh"), 0o750);
    dir
}

#[test]
fn the_patch_applies_when_nothing_fails() {
    let dir = setup("alpha\nbeta\n");
    let report = apply(&parse(PATCH).unwrap(), &mut DirStore::new(dir.path())).unwrap();
    insta::assert_snapshot!(report.to_string());
    let r = dir.path();
    assert_eq!(
        fs::read_to_string(r.join("created/deep/new.txt")).unwrap(),
        "fresh\nfile\n"
    );
    assert_eq!(
        fs::read_to_string(r.join("moved/name.txt")).unwrap(),
        "keep\nedited\nkeep too\n"
    );
    assert_eq!(
        fs::read_to_string(r.join("modify.txt")).unwrap(),
        "ONE\r\ntwo\r\n"
    );
    assert!(!r.join("old").exists() && !r.join("doomed").exists());
    assert_eq!(
        fs::read_to_string(r.join("last.txt")).unwrap(),
        "alpha\nBETA\n"
    );
}

#[test]
fn late_hunk_failure_while_staging_changes_nothing() {
    let dir = setup("alpha\ngamma\n");
    let before = snapshot(dir.path());
    let err = apply(&parse(PATCH).unwrap(), &mut DirStore::new(dir.path())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PatchFailed);
    assert!(
        err.to_string()
            .starts_with("last.txt: hunk #1 (@@ -1,2 +1,2 @@) does not apply"),
        "{err}"
    );
    assert_eq!(snapshot(dir.path()), before);
}

/// Wraps a store; the `fail_at`-th mutating call (1-based) fails, and with
/// `keep_failing` every later one does too (so the rollback fails). With
/// `batched`, batches reach the inner store and each flush is a call that
/// can fail (before the inner store commits its held writes); without, the
/// wrapper keeps the default (no batch), so the inner store writes each file
/// as it is asked to.
struct Flaky<S> {
    inner: S,
    calls: usize,
    fail_at: usize,
    keep_failing: bool,
    batched: bool,
}

impl<S> Flaky<S> {
    fn tick(&mut self) -> Result<(), StoreError> {
        self.calls += 1;
        if self.calls == self.fail_at || (self.keep_failing && self.calls > self.fail_at) {
            return Err(StoreError::Io(std::io::Error::other(format!(
                "injected failure #{}",
                self.calls
            ))));
        }
        Ok(())
    }
}

impl<S: FileStore> FileStore for Flaky<S> {
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        self.inner.read(path)
    }
    fn exists(&self, path: &str) -> Result<bool, StoreError> {
        self.inner.exists(path)
    }
    fn write(&mut self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        self.tick()?;
        self.inner.write(path, data)
    }
    fn remove(&mut self, path: &str) -> Result<(), StoreError> {
        self.tick()?;
        self.inner.remove(path)
    }
    fn rename(&mut self, from: &str, to: &str) -> Result<(), StoreError> {
        self.tick()?;
        self.inner.rename(from, to)
    }
    fn mode(&self, path: &str) -> Result<Option<u32>, StoreError> {
        self.inner.mode(path)
    }
    fn set_mode(&mut self, path: &str, mode: u32) -> Result<(), StoreError> {
        self.tick()?;
        self.inner.set_mode(path, mode)
    }
    fn begin_batch(&mut self) {
        if self.batched {
            self.inner.begin_batch();
        }
    }
    fn flush(&mut self) -> Result<(), FlushError> {
        if !self.batched {
            return Ok(());
        }
        self.tick().map_err(|source| FlushError {
            path: "(flush)".to_owned(),
            source,
        })?;
        self.inner.flush()
    }
}

#[test]
fn failure_at_every_commit_step_rolls_everything_back() {
    every_commit_step_fails_in_turn(true);
}

#[test]
fn failure_at_every_step_rolls_back_without_a_batch_too() {
    every_commit_step_fails_in_turn(false);
}

/// Fails each mutating call of a commit in turn (the flush included when
/// `batched`) and checks the tree is left exactly as it was.
fn every_commit_step_fails_in_turn(batched: bool) {
    let patch = parse(PATCH).unwrap();
    // Count the mutating calls of a successful apply.
    let dir = setup("alpha\nbeta\n");
    let mut counting = Flaky {
        inner: DirStore::new(dir.path()),
        calls: 0,
        fail_at: 0,
        keep_failing: false,
        batched,
    };
    apply(&patch, &mut counting).unwrap();
    // Whichever way it was committed, the result is whole.
    assert_eq!(
        fs::read_to_string(dir.path().join("last.txt")).unwrap(),
        "alpha\nBETA\n"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("created/deep/new.txt")).unwrap(),
        "fresh\nfile\n"
    );
    let steps = counting.calls;
    assert!(
        steps >= 7,
        "expected at least 7 mutating calls, saw {steps}"
    );

    for fail_at in 1..=steps {
        let dir = setup("alpha\nbeta\n");
        let before = snapshot(dir.path());
        let mut store = Flaky {
            inner: DirStore::new(dir.path()),
            calls: 0,
            fail_at,
            keep_failing: false,
            batched,
        };
        let err = apply(&patch, &mut store).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io, "step {fail_at}: {err}");
        assert!(
            err.to_string()
                .contains(&format!("injected failure #{fail_at}")),
            "{err}"
        );
        assert_eq!(
            snapshot(dir.path()),
            before,
            "step {fail_at} left changes behind"
        );
    }
}

#[test]
fn failure_at_every_commit_step_rolls_back_in_memory_too() {
    let patch = parse(PATCH).unwrap();
    let mut base = agent_tools_patch::MemoryStore::new();
    base.insert("old/name.txt", "keep\nedit me\nkeep too\n");
    base.insert("modify.txt", "one\r\ntwo\r\n");
    base.insert("doomed/delete.sh", "#!/bin/sh\necho bye\n");
    base.executable.insert("doomed/delete.sh".to_owned());
    base.insert("last.txt", "alpha\nbeta\n");
    for fail_at in 1..=9 {
        let mut store = Flaky {
            inner: base.clone(),
            calls: 0,
            fail_at,
            keep_failing: false,
            batched: true,
        };
        let result = apply(&patch, &mut store);
        if fail_at <= 8 {
            assert!(result.is_err(), "step {fail_at}");
            assert_eq!(store.inner, base, "step {fail_at} left changes behind");
        }
    }
}

#[test]
fn a_failing_rollback_is_reported() {
    let patch = parse(PATCH).unwrap();
    let dir = setup("alpha\nbeta\n");
    let mut store = Flaky {
        inner: DirStore::new(dir.path()),
        calls: 0,
        fail_at: 4,
        keep_failing: true,
        batched: true,
    };
    let err = apply(&patch, &mut store).unwrap_err();
    assert!(matches!(err, PatchError::RollbackFailed { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Io);
    insta::assert_snapshot!(err.to_string());
}

#[test]
fn replacing_whole_files_is_all_or_nothing_at_every_step() {
    use agent_tools_patch::{Replacement, replace_all};
    let mut base = agent_tools_patch::MemoryStore::new();
    base.insert("a.py", "def helper():\n");
    base.insert("b.py", "helper()\r\nhelper()\r\n");
    let replacements = vec![
        Replacement {
            path: "a.py".to_owned(),
            previous: b"def helper():\n".to_vec(),
            data: b"def assist():\n".to_vec(),
        },
        Replacement {
            path: "b.py".to_owned(),
            previous: b"helper()\r\nhelper()\r\n".to_vec(),
            data: b"assist()\r\nassist()\r\n".to_vec(),
        },
    ];
    // Two writes and the flush: each fails in turn, and nothing changes.
    for fail_at in 1..=3 {
        let mut store = Flaky {
            inner: base.clone(),
            calls: 0,
            fail_at,
            keep_failing: false,
            batched: true,
        };
        let err = replace_all(&replacements, &mut store).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io, "step {fail_at}: {err}");
        assert_eq!(store.inner, base, "step {fail_at} left changes behind");
    }
    let mut store = base.clone();
    replace_all(&replacements, &mut store).unwrap();
    assert_eq!(store.get("a.py").unwrap(), b"def assist():\n");
    assert_eq!(store.get("b.py").unwrap(), b"assist()\r\nassist()\r\n");
    let twice = vec![replacements[0].clone(), replacements[0].clone()];
    let err = replace_all(&twice, &mut base.clone()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}
