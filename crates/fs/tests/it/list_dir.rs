//! list_dir through the FileTools API.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Ws;

use std::fs;
use std::os::unix::fs::symlink;

use agent_tools_error::{ErrorCode, ToolResult};
use agent_tools_fs::ListDirArgs;

fn tree(files: &[(&str, &str)]) -> Ws {
    common::tree(files)
}

/// The listing calls these tests make; a trait of this module's own because
/// another module of the binary gives `Ws` a `code` of its own.
trait ListCalls {
    fn list(&self, path: Option<&str>) -> ToolResult<String>;
    fn code(&self, path: &str) -> ErrorCode;
}

impl ListCalls for Ws {
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

use agent_tools_fs::GlobArgs;

/// Follows the footers of a paged listing from offset 0 until no footer is
/// left, returning every line shown (footers excluded) and the pages taken.
fn follow_pages(mut page: impl FnMut(u64) -> String) -> (Vec<String>, usize) {
    let mut shown = Vec::new();
    let mut offset = 0;
    let mut pages = 0;
    loop {
        let out = page(offset);
        pages += 1;
        assert!(pages < 100, "paging does not end");
        let mut next = None;
        for line in out.lines() {
            if let Some(rest) = line.strip_prefix('[') {
                let at = rest.find("offset=").expect(line) + "offset=".len();
                let digits: String = rest[at..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                next = Some(digits.parse::<u64>().unwrap());
            } else {
                shown.push(line.to_string());
            }
        }
        match next {
            Some(next) => {
                assert!(next > offset, "{out}");
                offset = next;
            }
            None => return (shown, pages),
        }
    }
}

#[test]
fn list_dir_and_glob_page_past_sixteen_thousand_entries() {
    let ws = tree(&[]);
    fs::create_dir(ws.root.join("many")).unwrap();
    let total = 20_000;
    for i in 0..total {
        fs::write(
            ws.root.join(format!("many/a-longer-file-name-{i:05}.txt")),
            "",
        )
        .unwrap();
    }
    let expected: Vec<String> = (0..total)
        .map(|i| format!("a-longer-file-name-{i:05}.txt"))
        .collect();

    let (listed, pages) = follow_pages(|offset| {
        ws.tools
            .list_dir(&ListDirArgs {
                path: Some("many".to_string()),
                offset,
                limit: None,
            })
            .unwrap()
    });
    assert_eq!(listed, expected);
    assert!(pages > 1, "one page cannot hold {total} entries");

    let (globbed, pages) = follow_pages(|offset| {
        ws.tools
            .glob(&GlobArgs {
                offset,
                ..GlobArgs::new("many/*")
            })
            .unwrap()
    });
    let mut globbed: Vec<String> = globbed
        .into_iter()
        .map(|p| p.strip_prefix("many/").unwrap().to_string())
        .collect();
    globbed.sort();
    assert_eq!(globbed, expected);
    assert!(pages > 1);

    // An explicit limit pages too, with the same footer.
    let page = ws
        .tools
        .list_dir(&ListDirArgs {
            path: Some("many".to_string()),
            offset: 10,
            limit: Some(2),
        })
        .unwrap();
    assert_eq!(
        page,
        "a-longer-file-name-00010.txt\na-longer-file-name-00011.txt\n[showing 11..12 of 20000; call again with offset=12 for more]\n"
    );
    let past = ws
        .tools
        .list_dir(&ListDirArgs {
            path: Some("many".to_string()),
            offset: 30_000,
            limit: None,
        })
        .unwrap();
    assert_eq!(
        past,
        "[offset 30000 is past the end of 20000 results; page from offset=0]\n"
    );
    let zero = ListDirArgs {
        limit: Some(0),
        ..ListDirArgs::default()
    };
    assert_eq!(
        ws.tools.list_dir(&zero).unwrap_err().code(),
        ErrorCode::InvalidInput
    );
}

#[test]
fn names_that_could_forge_entries_are_quoted() {
    let ws = tree(&[("plain.txt", "")]);
    fs::write(ws.root.join("fake.txt\nsecret.txt -> .."), "").unwrap();
    fs::write(ws.root.join("arrow -> here"), "").unwrap();
    fs::write(ws.root.join("evil\u{202E}txt.exe"), "").unwrap();
    symlink("target\nline", ws.root.join("link")).unwrap();
    use std::os::unix::ffi::OsStrExt;
    fs::write(ws.root.join(std::ffi::OsStr::from_bytes(b"caf\xe9")), "").unwrap();
    let out = ws.list(None).unwrap();
    assert_eq!(
        out,
        "\"arrow -> here\"\n\"evil\\u202etxt.exe\"\n\"fake.txt\\nsecret.txt -> ..\"\nlink -> \"target\\nline\"\nplain.txt\n\
         [note: 1 path was not looked at: \"caf\\xe9\" (the name is not UTF-8, which the file tools cannot address)]\n"
    );
}

#[test]
fn a_cancelled_listing_stops_with_an_error() {
    let ws = tree(&[("a", "")]);
    let cancel = std::sync::atomic::AtomicBool::new(true);
    let err = ws
        .tools
        .list_dir_with(&ListDirArgs::default(), &cancel)
        .unwrap_err();
    assert!(err.is_cancelled(), "{err:?}");
}
