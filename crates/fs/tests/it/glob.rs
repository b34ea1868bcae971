//! glob through the FileTools API: matching, ordering, the ignore policy and
//! confinement.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Ws;

use std::os::unix::fs::symlink;

use agent_tools_error::{ErrorCode, ToolResult};
use agent_tools_fs::GlobArgs;

/// A workspace holding `files`, every file with the same modification time,
/// so order falls back to the path.
fn tree(files: &[(&str, &str)]) -> Ws {
    let ws = common::tree(files);
    for (path, _) in files {
        if !path.ends_with('/') {
            ws.age(path, 1000);
        }
    }
    ws
}

/// The glob calls these tests make; a trait of this module's own because
/// another module of the binary gives `Ws` a `run` of its own.
trait GlobCalls {
    fn run(&self, args: GlobArgs) -> ToolResult<String>;
    fn glob(&self, pattern: &str) -> String;
    fn glob_all(&self, pattern: &str) -> String;
    fn glob_in(&self, path: &str, pattern: &str) -> ToolResult<String>;
}

impl GlobCalls for Ws {
    fn run(&self, args: GlobArgs) -> ToolResult<String> {
        self.tools.glob(&args)
    }

    fn glob(&self, pattern: &str) -> String {
        self.run(GlobArgs::new(pattern)).unwrap()
    }

    fn glob_all(&self, pattern: &str) -> String {
        self.run(GlobArgs {
            respect_gitignore: false,
            ..GlobArgs::new(pattern)
        })
        .unwrap()
    }

    fn glob_in(&self, path: &str, pattern: &str) -> ToolResult<String> {
        self.run(GlobArgs {
            path: Some(path.to_string()),
            ..GlobArgs::new(pattern)
        })
    }
}

fn lines(out: &str) -> Vec<&str> {
    out.lines().collect()
}

#[test]
fn only_files_are_listed() {
    let ws = tree(&[("a.txt", ""), ("dir.txt/inner", ""), ("empty.txt/", "")]);
    assert_eq!(ws.glob("*.txt"), "a.txt\n");
    assert_eq!(ws.glob("*"), "a.txt\n");
    assert_eq!(ws.glob("**"), "a.txt\ndir.txt/inner\n");
}

#[test]
fn most_recently_modified_first_then_by_path() {
    let ws = tree(&[
        ("old.rs", ""),
        ("new.rs", ""),
        ("mid_b.rs", ""),
        ("mid_a.rs", ""),
        ("sub/mid_c.rs", ""),
    ]);
    ws.age("old.rs", 10);
    ws.age("new.rs", 30);
    ws.age("mid_b.rs", 20);
    ws.age("mid_a.rs", 20);
    ws.age("sub/mid_c.rs", 20);
    let out = ws.glob("**/*.rs");
    insta::assert_snapshot!("mtime_order", out);
    assert_eq!(
        lines(&out),
        ["new.rs", "mid_a.rs", "mid_b.rs", "sub/mid_c.rs", "old.rs"]
    );
    // Touching a file moves it to the front.
    ws.age("old.rs", 40);
    assert_eq!(lines(&ws.glob("**/*.rs"))[0], "old.rs");
}

#[test]
fn hidden_files_and_directories_are_included() {
    let ws = tree(&[
        (".env", ""),
        (".github/workflows/ci.yml", ""),
        ("x.yml", ""),
    ]);
    assert_eq!(ws.glob("**/*.yml"), ".github/workflows/ci.yml\nx.yml\n");
    assert_eq!(ws.glob(".*"), ".env\n");
    assert_eq!(ws.glob("*"), ".env\nx.yml\n");
}

#[test]
fn star_stays_in_one_directory_and_double_star_spans_many() {
    let ws = tree(&[
        ("top.rs", ""),
        ("src/lib.rs", ""),
        ("src/a/b/deep.rs", ""),
        ("src/a/notes.md", ""),
    ]);
    assert_eq!(ws.glob("*.rs"), "top.rs\n");
    assert_eq!(ws.glob("src/*.rs"), "src/lib.rs\n");
    assert_eq!(ws.glob("src/*"), "src/lib.rs\n");
    assert_eq!(ws.glob("**/*.rs"), "src/a/b/deep.rs\nsrc/lib.rs\ntop.rs\n");
    assert_eq!(ws.glob("src/**/*.rs"), "src/a/b/deep.rs\nsrc/lib.rs\n");
    assert_eq!(
        ws.glob("src/**"),
        "src/a/b/deep.rs\nsrc/a/notes.md\nsrc/lib.rs\n"
    );
    assert_eq!(ws.glob("**/b/*"), "src/a/b/deep.rs\n");
    assert_eq!(ws.glob("src/?/notes.md"), "src/a/notes.md\n");
    assert_eq!(ws.glob("[st]*.rs"), "top.rs\n");
    assert_eq!(ws.glob("./src/*.rs"), "src/lib.rs\n");
}

#[test]
fn braces_are_alternatives() {
    let ws = tree(&[("a.ts", ""), ("b.tsx", ""), ("c.js", ""), ("d/e.tsx", "")]);
    assert_eq!(ws.glob("*.{ts,tsx}"), "a.ts\nb.tsx\n");
    assert_eq!(ws.glob("**/*.{tsx,js}"), "b.tsx\nc.js\nd/e.tsx\n");
    assert_eq!(ws.glob("{a,d/*}.ts*"), "a.ts\nd/e.tsx\n");
}

#[test]
fn a_base_path_narrows_the_search_but_results_stay_root_relative() {
    let ws = tree(&[("src/a.rs", ""), ("src/inner/b.rs", ""), ("c.rs", "")]);
    assert_eq!(ws.glob_in("src", "*.rs").unwrap(), "src/a.rs\n");
    assert_eq!(
        ws.glob_in("src", "**/*.rs").unwrap(),
        "src/a.rs\nsrc/inner/b.rs\n"
    );
    assert_eq!(ws.glob_in("src/inner", "*").unwrap(), "src/inner/b.rs\n");
    // The pattern is relative to the base, so repeating the base finds nothing.
    assert_eq!(ws.glob_in("src", "src/*.rs").unwrap(), "(no matches)");
    // An absolute pattern under the base is accepted.
    let abs = format!("{}/src/*.rs", ws.root.display());
    assert_eq!(ws.glob_in("src", &abs).unwrap(), "src/a.rs\n");
    assert_eq!(
        ws.glob(&format!("{}/**/b.rs", ws.root.display())),
        "src/inner/b.rs\n"
    );
}

#[test]
fn nothing_matching_is_a_success() {
    let ws = tree(&[("a.txt", "")]);
    assert_eq!(ws.glob("*.nothing"), "(no matches)");
    let empty = tree(&[]);
    assert_eq!(empty.glob("**"), "(no matches)");
}

#[test]
fn gitignore_is_respected_without_a_git_directory() {
    let ws = tree(&[
        (".gitignore", "*.tmpout\nbuild/\n!keep.tmpout\n"),
        ("a.rs", ""),
        ("x.tmpout", ""),
        ("keep.tmpout", ""),
        ("build/gen.rs", ""),
        ("sub/y.tmpout", ""),
        ("sub/z.rs", ""),
    ]);
    assert_eq!(ws.glob("**/*.rs"), "a.rs\nsub/z.rs\n");
    assert_eq!(ws.glob("**/*.tmpout"), "keep.tmpout\n");
    assert_eq!(ws.glob("**/.gitignore"), ".gitignore\n");
    assert_eq!(
        ws.glob_all("**/*.{rs,tmpout}"),
        "a.rs\nbuild/gen.rs\nkeep.tmpout\nsub/y.tmpout\nsub/z.rs\nx.tmpout\n"
    );
}

#[test]
fn gitignore_is_respected_in_a_git_repository_and_dot_git_is_skipped() {
    let ws = tree(&[
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".git/config", ""),
        (".git/info/exclude", "*.excluded\n"),
        (".gitignore", "/target\n"),
        ("src/main.rs", ""),
        ("target/debug/out.rs", ""),
        ("notes.excluded", ""),
    ]);
    assert_eq!(ws.glob("**/*"), ".gitignore\nsrc/main.rs\n");
    assert_eq!(ws.glob(".git/*"), "(no matches)");
    assert_eq!(ws.glob("**/HEAD"), "(no matches)");
    let all = ws.glob_all("**/*");
    assert_eq!(
        lines(&all),
        [
            ".git/HEAD",
            ".git/config",
            ".git/info/exclude",
            ".gitignore",
            "notes.excluded",
            "src/main.rs",
            "target/debug/out.rs",
        ]
    );
    assert_eq!(ws.glob_all("**/HEAD"), ".git/HEAD\n");
}

#[test]
fn nested_gitignore_and_ignore_files_apply_below_them() {
    let ws = tree(&[
        ("a/.gitignore", "*.gen\n"),
        ("a/x.gen", ""),
        ("a/deeper/y.gen", ""),
        ("b/z.gen", ""),
        (".ignore", "secret_*\n"),
        ("secret_key", ""),
        ("b/secret_other", ""),
        ("b/.ignore", "!secret_allowed\n"),
        ("b/secret_allowed", ""),
    ]);
    assert_eq!(ws.glob("**/*.gen"), "b/z.gen\n");
    assert_eq!(ws.glob("**/secret_*"), "b/secret_allowed\n");
    assert_eq!(
        ws.glob_all("**/*.gen"),
        "a/deeper/y.gen\na/x.gen\nb/z.gen\n"
    );
}

#[test]
fn the_root_ignore_files_apply_to_a_base_below_it() {
    let ws = tree(&[
        (".gitignore", "*.tmpout\n"),
        ("sub/a.tmpout", ""),
        ("sub/b.rs", ""),
    ]);
    assert_eq!(ws.glob_in("sub", "*").unwrap(), "sub/b.rs\n");
}

#[test]
fn a_bad_pattern_is_invalid_input() {
    let ws = tree(&[("a", "")]);
    for pattern in ["a[", "{a,b", "[z-a]"] {
        let err = ws.run(GlobArgs::new(pattern)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput, "{pattern}");
    }
    let err = ws.run(GlobArgs::new("a[")).unwrap_err();
    insta::assert_snapshot!("bad_glob", err.message());
}

#[test]
fn base_path_errors() {
    let ws = tree(&[("file.txt", "")]);
    assert_eq!(
        ws.glob_in("nope", "*").unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        ws.glob_in("file.txt", "*").unwrap_err().code(),
        ErrorCode::NotAFile
    );
    let outside = ws.outside.to_str().unwrap().to_string();
    symlink(&ws.outside, ws.root.join("out")).unwrap();
    for base in ["..", "../outside", &outside, "out"] {
        assert_eq!(
            ws.glob_in(base, "*").unwrap_err().code(),
            ErrorCode::PathEscape,
            "{base}"
        );
    }
}

#[test]
fn symlinks_are_not_followed() {
    let ws = tree(&[("real/inside.txt", ""), ("top.txt", "")]);
    symlink(&ws.outside, ws.root.join("out_dir")).unwrap();
    symlink(ws.outside.join("secret.txt"), ws.root.join("out_file.txt")).unwrap();
    symlink("real", ws.root.join("in_dir")).unwrap();
    symlink("top.txt", ws.root.join("in_file.txt")).unwrap();
    assert_eq!(ws.glob("**/*.txt"), "real/inside.txt\ntop.txt\n");
    assert_eq!(ws.glob_all("**/*"), "real/inside.txt\ntop.txt\n");
    assert_eq!(ws.glob("**/secret*"), "(no matches)");
}
