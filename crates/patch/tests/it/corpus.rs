//! Applies every case of the real-history corpus (the folder named by
//! `AGENT_TOOLS_PATCH_CORPUS`, holding `NNN/{patch.diff,before/,after/}`)
//! through the directory store and the memory store, and compares the
//! result with `after/` byte for byte.
// Test helpers panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;
use std::path::PathBuf;

use agent_tools_patch::{DirStore, apply, parse};
use common::{assert_exec_bits, assert_trees_equal, copy_tree, memory_store, read_tree};

fn corpus_cases() -> Option<Vec<PathBuf>> {
    let Some(dir) = std::env::var_os("AGENT_TOOLS_PATCH_CORPUS") else {
        println!("corpus test skipped: AGENT_TOOLS_PATCH_CORPUS is not set");
        return None;
    };
    let dir = PathBuf::from(dir);
    if !dir.is_dir() {
        println!("corpus test skipped: {} is not a directory", dir.display());
        return None;
    }
    let mut cases: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("patch.diff").is_file())
        .collect();
    cases.sort();
    Some(cases)
}

#[test]
fn corpus_reproduces_every_case() {
    let Some(cases) = corpus_cases() else {
        return;
    };
    assert!(!cases.is_empty(), "the corpus folder holds no cases");
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read(case.join("patch.diff")).unwrap();
        let patch = parse(&text).unwrap_or_else(|e| panic!("{name}: parse: {e}"));
        let want = read_tree(&case.join("after"));

        // Directory store.
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&case.join("before"), tmp.path());
        let mut store = DirStore::new(tmp.path());
        apply(&patch, &mut store).unwrap_or_else(|e| panic!("{name}: dir apply: {e}"));
        assert_trees_equal(&name, &read_tree(tmp.path()), &want);
        assert_exec_bits(&name, &patch, tmp.path());

        // Memory store.
        let mut mem = memory_store(&case.join("before"));
        apply(&patch, &mut mem).unwrap_or_else(|e| panic!("{name}: memory apply: {e}"));
        assert_trees_equal(&name, &mem.files, &want);
    }
    println!("corpus: {} cases reproduced", cases.len());
}
