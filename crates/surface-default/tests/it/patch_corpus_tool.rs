//! Real commits through the `apply_patch` TOOL (confinement, store, report):
//! for every case of the corpus named by `AGENT_TOOLS_PATCH_CORPUS` (folders
//! `NNN/{patch.diff,before/,after/}`), applying `patch.diff` to a copy of
//! `before/` must leave a tree equal, byte for byte, to `after/`.
//!
//! When the variable is unset or names no folder, the test says it is
//! skipped and passes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::facade;
use agent_tools_test_support::tree;

use std::path::{Path, PathBuf};

use facade::Sandbox;
use serde_json::json;

const VAR: &str = "AGENT_TOOLS_PATCH_CORPUS";

fn corpus() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os(VAR) else {
        println!("patch_corpus_tool: skipped, {VAR} is not set");
        return None;
    };
    let dir = PathBuf::from(dir);
    if !dir.is_dir() {
        println!(
            "patch_corpus_tool: skipped, {VAR}={} is not a folder",
            dir.display()
        );
        return None;
    }
    Some(dir)
}

fn cases(dir: &Path) -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("patch.diff").is_file())
        .collect();
    cases.sort();
    cases
}

/// Applies one case through the tool; `Err` describes how it failed.
fn run_case(case: &Path) -> Result<(), String> {
    let sb = Sandbox::new();
    let before = case.join("before");
    if before.is_dir() {
        tree::copy_tree(&before, &sb.root);
    }
    let patch = std::fs::read(case.join("patch.diff")).unwrap();
    // The tool takes the patch as a JSON string: it must be UTF-8.
    let patch = String::from_utf8(patch).map_err(|e| format!("patch.diff is not UTF-8: {e}"))?;
    let tools = sb.tools();
    let result = tools.call("apply_patch", json!({"patch": patch}));
    if result.is_error {
        return Err(format!("apply_patch failed: {}", result.text));
    }
    if !result.text.starts_with("applied patch to ") {
        return Err(format!("unexpected report: {}", result.text));
    }
    let after = case.join("after");
    let expected = if after.is_dir() {
        tree::files(&after)
    } else {
        Default::default()
    };
    let got = tree::files(&sb.root);
    for (path, bytes) in &expected {
        match got.get(path) {
            None => return Err(format!("{path} is missing")),
            Some(have) if have != bytes => {
                return Err(format!(
                    "{path} differs ({} bytes, expected {})",
                    have.len(),
                    bytes.len()
                ));
            }
            _ => {}
        }
    }
    for path in got.keys() {
        if !expected.contains_key(path) {
            return Err(format!("{path} should not exist"));
        }
    }
    Ok(())
}

#[test]
fn every_corpus_case_reproduces_through_the_tool() {
    let Some(dir) = corpus() else {
        return;
    };
    let cases = cases(&dir);
    assert!(!cases.is_empty(), "no cases in {}", dir.display());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            run_case(case)
                .err()
                .map(|why| format!("{}: {why}", case.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    println!(
        "patch_corpus_tool: {} of {} cases reproduced",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
