//! The engine's results for surfaces that print their own way: a line
//! window read by streaming, glob's files with their times, grep's files
//! with their lines, types and only-matching parts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use agent_tools_confine::{Confinement, Workspace};
use agent_tools_error::ErrorCode;
use agent_tools_fs::{FileTools, GlobArgs, GrepArgs, GrepQuery, Limits, OutputMode};

fn tools(dir: &std::path::Path, limits: Limits) -> FileTools {
    FileTools::new(Workspace::open(dir, Confinement::Confined).unwrap(), limits)
}

#[test]
fn a_window_of_a_large_file_is_read_without_loading_it() {
    let dir = tempfile::tempdir().unwrap();
    // Over the newline index's step, so checkpoints are used.
    let text: String = (1..=300_000).map(|n| format!("line {n}\n")).collect();
    std::fs::write(dir.path().join("big.txt"), &text).unwrap();
    let tools = tools(dir.path(), Limits::default());
    let path = tools.workspace().resolve("big.txt").unwrap();
    let cancel = AtomicBool::new(false);
    let window = tools.read_window(&path, 150_000, 3, &cancel).unwrap();
    assert_eq!(window.lines, ["line 150000", "line 150001", "line 150002"]);
    assert_eq!(
        (window.first, window.total, window.budget_hit),
        (150_000, 300_000, false)
    );
    assert_eq!(window.next_line(), Some(150_003));
    let end = tools.read_window(&path, 299_999, 10, &cancel).unwrap();
    assert_eq!(end.lines, ["line 299999", "line 300000"]);
    assert_eq!(end.next_line(), None);
    let past = tools.read_window(&path, 300_001, 10, &cancel).unwrap();
    assert!(past.lines.is_empty());
    assert_eq!(past.total, 300_000);
    assert_eq!(
        tools.read_window(&path, 0, 1, &cancel).unwrap_err().code(),
        ErrorCode::InvalidInput
    );
}

#[test]
fn a_window_stops_at_the_output_budget_and_refuses_binary_and_utf16() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("crlf.txt"), "\u{FEFF}a\r\nb\r\nc").unwrap();
    std::fs::write(dir.path().join("bin"), b"a\0b\n").unwrap();
    std::fs::write(dir.path().join("u16"), b"\xFF\xFEa\0\n\0").unwrap();
    std::fs::write(
        dir.path().join("wide"),
        format!("{}\n{}", "x".repeat(100), "y".repeat(100)),
    )
    .unwrap();
    let tools = tools(
        dir.path(),
        Limits {
            max_file_bytes: 1 << 20,
            max_output_bytes: 150,
        },
    );
    let cancel = AtomicBool::new(false);
    let read = |name: &str, first, limit| {
        let path = tools.workspace().resolve(name).unwrap();
        tools.read_window(&path, first, limit, &cancel)
    };
    let window = read("crlf.txt", 1, 10).unwrap();
    assert_eq!(window.lines, ["a", "b", "c"]);
    assert_eq!(window.total, 3);
    assert_eq!(read("bin", 1, 1).unwrap_err().code(), ErrorCode::IsBinary);
    assert_eq!(read("u16", 1, 1).unwrap_err().code(), ErrorCode::IsBinary);
    let window = read("wide", 1, 2).unwrap();
    assert_eq!(window.lines.len(), 1);
    assert!(window.budget_hit);
    assert_eq!(window.next_line(), Some(2));
}

#[test]
fn glob_files_carry_their_times_and_paths() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/a.rs"), "").unwrap();
    std::fs::write(dir.path().join(".gitignore"), "b.rs\n").unwrap();
    std::fs::write(dir.path().join("src/b.rs"), "").unwrap();
    let old = SystemTime::now() - Duration::from_secs(500);
    std::fs::File::options()
        .write(true)
        .open(dir.path().join("src/a.rs"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let tools = tools(dir.path(), Limits::default());
    let mut args = GlobArgs::new("*.rs");
    args.path = Some("src".into());
    let found = tools.glob_files(&args, &AtomicBool::new(false)).unwrap();
    let mut rels: Vec<_> = found.files.iter().map(|f| f.rel.as_str()).collect();
    rels.sort_unstable();
    assert_eq!(rels, ["a.rs"], "ignored files stay out when asked");
    args.respect_gitignore = false;
    let found = tools.glob_files(&args, &AtomicBool::new(false)).unwrap();
    let a = found.files.iter().find(|f| f.rel == "a.rs").unwrap();
    assert_eq!(a.shown, "src/a.rs");
    assert!(a.modified <= old + Duration::from_secs(1));
    assert_eq!(found.files.len(), 2);
}

#[test]
fn grep_files_filter_by_type_and_glob_and_give_only_matching_parts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "fn one() {}\nfn two() {}\n").unwrap();
    std::fs::write(dir.path().join("b.py"), "def one(): pass\n").unwrap();
    let tools = tools(dir.path(), Limits::default());
    let cancel = AtomicBool::new(false);
    let query = |pattern: &str, file_type: Option<&str>, globs: &[&str], only: bool| {
        let mut args = GrepArgs::new(pattern);
        args.output_mode = OutputMode::Content;
        GrepQuery {
            args,
            globs: globs.iter().map(|g| g.to_string()).collect(),
            file_type: file_type.map(str::to_owned),
            only_matching: only,
        }
    };
    let found = tools
        .grep_files(&query("one", None, &[], false), &cancel)
        .unwrap();
    let rels: Vec<_> = found.files.iter().map(|f| f.rel.as_str()).collect();
    assert_eq!(rels, ["a.rs", "b.py"]);
    let found = tools
        .grep_files(&query("one", Some("py"), &[], false), &cancel)
        .unwrap();
    assert_eq!(found.files.len(), 1);
    assert_eq!(found.files[0].rel, "b.py");
    let found = tools
        .grep_files(&query("one", None, &["*.rs", "*.txt"], false), &cancel)
        .unwrap();
    assert_eq!(found.files[0].rel, "a.rs");
    assert_eq!(found.files.len(), 1);
    let found = tools
        .grep_files(&query("one", None, &["!*.rs"], false), &cancel)
        .unwrap();
    assert_eq!(found.files[0].rel, "b.py");
    let found = tools
        .grep_files(&query(r"fn \w+", Some("rust"), &[], true), &cancel)
        .unwrap();
    let texts: Vec<_> = found.files[0]
        .lines
        .iter()
        .map(|l| (l.number, l.text.as_str()))
        .collect();
    assert_eq!(texts, [(1, "fn one"), (2, "fn two")]);
    assert_eq!(found.files[0].matches, 2);
    assert_eq!(
        tools
            .grep_files(&query("one", Some("no-such-type"), &[], false), &cancel)
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
}
