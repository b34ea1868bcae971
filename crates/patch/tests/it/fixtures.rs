//! Fixture folders: `tests/fixtures/<case>/{before/,patch.diff,after/}`,
//! applied through the directory store and the memory store and compared
//! with `after/` as whole trees. The reports are snapshotted together.
// Test helpers panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use agent_tools_patch::{DirStore, apply, parse};
use common::{assert_exec_bits, assert_trees_equal, copy_tree, memory_store, read_tree};

fn fixture_cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut cases: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("patch.diff").is_file())
        .collect();
    cases.sort();
    cases
}

#[test]
fn fixtures_apply_to_whole_trees() {
    let cases = fixture_cases();
    assert!(cases.len() >= 10, "fixtures are missing");
    let mut reports = String::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let patch = parse(fs::read(case.join("patch.diff")).unwrap()).unwrap();
        let want = read_tree(&case.join("after"));

        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&case.join("before"), tmp.path());
        let report =
            apply(&patch, &mut DirStore::new(tmp.path())).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_trees_equal(&name, &read_tree(tmp.path()), &want);
        assert_exec_bits(&name, &patch, tmp.path());

        let mut mem = memory_store(&case.join("before"));
        let mem_report = apply(&patch, &mut mem).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_trees_equal(&name, &mem.files, &want);
        assert_eq!(report, mem_report);

        reports.push_str(&format!("{name}:\n{report}\n"));
    }
    insta::assert_snapshot!(reports);
}
