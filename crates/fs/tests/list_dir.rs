//! list_dir through the FileTools API.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Ws;

use std::fs;
use std::os::unix::fs::symlink;

use agent_tools_error::{ErrorCode, ToolResult};
use agent_tools_fs::ListDirArgs;

fn tree(files: &[(&str, &str)]) -> Ws {
    common::tree(files)
}

impl Ws {
    fn list(&self, path: Option<&str>) -> ToolResult<String> {
        self.tools.list_dir(&ListDirArgs {
            path: path.map(str::to_string),
            ..ListDirArgs::default()
        })
    }

    fn code(&self, path: &str) -> ErrorCode {
        self.list(Some(path)).unwrap_err().code()
    }
}

#[test]
fn entries_are_sorted_with_directories_marked_and_symlinks_shown() {
    let ws = tree(&[
        ("zeta.txt", "z"),
        ("alpha.rs", "a"),
        ("Beta.md", "b"),
        (".hidden", "h"),
        (".config/", ""),
        ("src/main.rs", "fn main() {}"),
        ("empty/", ""),
        ("_under", ""),
    ]);
    symlink("alpha.rs", ws.root.join("link_to_file")).unwrap();
    symlink("src", ws.root.join("link_to_dir")).unwrap();
    symlink("nowhere", ws.root.join("dangling")).unwrap();
    let out = ws.list(None).unwrap();
    insta::assert_snapshot!("root_listing", out);
    assert_eq!(
        out,
        ".config/\n.hidden\nBeta.md\n_under\nalpha.rs\ndangling -> nowhere\nempty/\nlink_to_dir -> src\nlink_to_file -> alpha.rs\nsrc/\nzeta.txt\n"
    );
}

#[test]
fn the_default_path_is_the_root() {
    let ws = tree(&[("a", ""), ("d/b", "")]);
    let root = ws.list(None).unwrap();
    assert_eq!(root, "a\nd/\n");
    assert_eq!(ws.list(Some(".")).unwrap(), root);
    assert_eq!(ws.list(Some("")).unwrap(), root);
    assert_eq!(ws.list(Some(ws.root.to_str().unwrap())).unwrap(), root);
}

#[test]
fn a_subdirectory_lists_only_its_own_entries() {
    let ws = tree(&[("d/one", ""), ("d/two/deep.txt", ""), ("other", "")]);
    assert_eq!(ws.list(Some("d")).unwrap(), "one\ntwo/\n");
    assert_eq!(ws.list(Some("d/")).unwrap(), "one\ntwo/\n");
    assert_eq!(ws.list(Some("./d/two")).unwrap(), "deep.txt\n");
    // Through a symlink that stays inside.
    symlink("d", ws.root.join("alias")).unwrap();
    assert_eq!(ws.list(Some("alias")).unwrap(), "one\ntwo/\n");
}

#[test]
fn an_empty_directory_says_so() {
    let ws = tree(&[("nothing/", "")]);
    let out = ws.list(Some("nothing")).unwrap();
    assert_eq!(out, "(empty directory)");
    let empty_root = tree(&[]);
    assert_eq!(empty_root.list(None).unwrap(), "(empty directory)");
}

#[test]
fn a_file_is_not_a_directory() {
    let ws = tree(&[("file.txt", "x")]);
    let err = ws.list(Some("file.txt")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAFile);
    insta::assert_snapshot!("file_given", err.message());
}

#[test]
fn missing_directories_are_not_found() {
    let ws = tree(&[("d/", "")]);
    assert_eq!(ws.code("nope"), ErrorCode::NotFound);
    assert_eq!(ws.code("d/nope"), ErrorCode::NotFound);
}

#[test]
fn paths_leaving_the_root_are_refused() {
    let ws = tree(&[("d/", "")]);
    fs::write(ws.outside.join("secret.txt"), "s").unwrap();
    symlink(&ws.outside, ws.root.join("out")).unwrap();
    symlink("../outside", ws.root.join("rel_out")).unwrap();
    symlink("gone", ws.root.join("dangling")).unwrap();
    let outside = ws.outside.to_str().unwrap().to_string();
    for path in [
        "..",
        "../outside",
        "d/../..",
        &outside,
        "/",
        "out",
        "rel_out",
        "dangling",
    ] {
        assert_eq!(ws.code(path), ErrorCode::PathEscape, "{path}");
    }
    // The link itself is listed, but not followed.
    assert!(
        ws.list(None)
            .unwrap()
            .contains(&format!("out -> {outside}\n"))
    );
}
