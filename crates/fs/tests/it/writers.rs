//! write_file, edit_file and multi_edit through the FileTools API.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use agent_tools_confine::{Confinement, Workspace};
use agent_tools_error::ErrorCode;
use agent_tools_fs::{EditFileArgs, EditSpec, FileTools, Limits, MultiEditArgs, WriteFileArgs};
use tempfile::TempDir;

struct Fixture {
    _dir: TempDir,
    root: PathBuf,
    tools: FileTools,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_limits(Limits::default())
    }

    fn with_limits(limits: Limits) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        // The workspace is a subdirectory so escapes have somewhere to land.
        let root = dir.path().join("ws");
        fs::create_dir(&root).unwrap();
        let ws = Workspace::open(&root, Confinement::Confined).unwrap();
        let root = ws.root().to_path_buf();
        Fixture {
            _dir: dir,
            root,
            tools: FileTools::new(ws, limits),
        }
    }

    fn put(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        fs::write(&path, bytes).unwrap();
        path
    }

    fn get(&self, rel: &str) -> Vec<u8> {
        fs::read(self.root.join(rel)).unwrap()
    }

    fn edit(&self, rel: &str, old: &str, new: &str) -> agent_tools_error::ToolResult<String> {
        self.tools.edit_file(&EditFileArgs::new(rel, old, new))
    }

    /// Every entry of `dir` (relative to the root) that looks like a temporary file.
    fn temp_files(&self, dir: &str) -> Vec<String> {
        fs::read_dir(self.root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.contains(".tmp."))
            .collect()
    }
}

fn mtime(path: &Path) -> SystemTime {
    fs::metadata(path).unwrap().modified().unwrap()
}

/// Sets the mtime well in the past, so an unwanted rewrite would show.
fn age(path: &Path) {
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
}

// ---------------------------------------------------------------------------
// write_file

#[test]
fn write_creates_with_exact_bytes() {
    let fx = Fixture::new();
    let msg = fx
        .tools
        .write_file(&WriteFileArgs::new("new.rs", "fn main() {}"))
        .unwrap();
    assert_eq!(msg, "created new.rs (12 bytes)");
    assert_eq!(fx.get("new.rs"), b"fn main() {}");
    let msg = fx
        .tools
        .write_file(&WriteFileArgs::new("one", "x"))
        .unwrap();
    assert_eq!(msg, "created one (1 byte)");
    let msg = fx
        .tools
        .write_file(&WriteFileArgs::new("empty", ""))
        .unwrap();
    assert_eq!(msg, "created empty (0 bytes)");
    assert_eq!(fx.get("empty"), b"");
    assert!(fx.temp_files(".").is_empty());
}

#[test]
fn write_overwrites_without_touching_line_endings() {
    let fx = Fixture::new();
    fx.put("a.txt", "old content\n");
    fs::create_dir(fx.root.join("src")).unwrap();
    let msg = fx
        .tools
        .write_file(&WriteFileArgs::new("a.txt", "one\r\ntwo\nthree"))
        .unwrap();
    assert_eq!(msg, "overwrote a.txt (14 bytes)");
    assert_eq!(fx.get("a.txt"), b"one\r\ntwo\nthree");
    let msg = fx
        .tools
        .write_file(&WriteFileArgs::new("src/../src/b.rs", "\u{FEFF}é"))
        .unwrap();
    assert_eq!(msg, "created src/b.rs (5 bytes)");
    assert_eq!(fx.get("src/b.rs"), "\u{FEFF}é".as_bytes());
}

#[test]
fn write_needs_an_existing_parent() {
    let fx = Fixture::new();
    let err = fx
        .tools
        .write_file(&WriteFileArgs::new("no/such/dir/f.txt", "x"))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
    assert!(err.message().contains("no/such/dir"), "{}", err.message());
    insta::assert_snapshot!("write_missing_parent", err.message());
    assert!(!fx.root.join("no").exists());
}

#[test]
fn write_refuses_directories() {
    let fx = Fixture::new();
    fs::create_dir(fx.root.join("d")).unwrap();
    for target in ["d", ".", "d/"] {
        let err = fx
            .tools
            .write_file(&WriteFileArgs::new(target, "x"))
            .unwrap_err();
        assert_eq!(
            err.code(),
            ErrorCode::NotAFile,
            "{target}: {}",
            err.message()
        );
    }
    assert!(fx.root.join("d").is_dir());
    let err = fx
        .tools
        .write_file(&WriteFileArgs::new("d", "x"))
        .unwrap_err();
    insta::assert_snapshot!("write_directory", err.message());
    fx.put("file", "x");
    let err = fx
        .tools
        .write_file(&WriteFileArgs::new("file/child", "x"))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAFile, "{}", err.message());
}

#[test]
fn write_outside_the_root_is_path_escape_and_writes_nothing() {
    let fx = Fixture::new();
    let outside = fx.root.parent().unwrap().join("x");
    for target in ["../x".to_string(), outside.display().to_string()] {
        let err = fx
            .tools
            .write_file(&WriteFileArgs::new(target.as_str(), "pwned"))
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::PathEscape, "{target}");
        assert!(!outside.exists());
    }
    // Through a symlink pointing out of the root, too.
    symlink(fx.root.parent().unwrap(), fx.root.join("up")).unwrap();
    let err = fx
        .tools
        .write_file(&WriteFileArgs::new("up/x", "pwned"))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::PathEscape);
    assert!(!outside.exists());
    let err = fx.edit("../x", "a", "b").unwrap_err();
    assert_eq!(err.code(), ErrorCode::PathEscape);
}

#[test]
fn write_through_a_symlink_replaces_its_target() {
    let fx = Fixture::new();
    fx.put("real.txt", "old");
    symlink("real.txt", fx.root.join("link.txt")).unwrap();
    let msg = fx
        .tools
        .write_file(&WriteFileArgs::new("link.txt", "new"))
        .unwrap();
    assert_eq!(msg, "overwrote real.txt (3 bytes)");
    assert_eq!(fx.get("real.txt"), b"new");
    assert!(
        fs::symlink_metadata(fx.root.join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let msg = fx.edit("link.txt", "new", "newer").unwrap();
    assert_eq!(msg, "edited real.txt: 1 replacement at line 1");
    assert_eq!(fx.get("real.txt"), b"newer");
    assert!(
        fs::symlink_metadata(fx.root.join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn permissions_are_kept() {
    let fx = Fixture::new();
    let path = fx.put("secret.conf", "key = 1\n");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    fx.edit("secret.conf", "key = 1", "key = 2").unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    fx.tools
        .write_file(&WriteFileArgs::new("secret.conf", "key = 3\n"))
        .unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    fx.tools
        .multi_edit(&MultiEditArgs::new(
            "secret.conf",
            vec![EditSpec::new("3", "4")],
        ))
        .unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o755
    );
    assert_eq!(fx.get("secret.conf"), b"key = 4\n");
}

#[test]
fn read_only_files_are_not_replaced() {
    let fx = Fixture::new();
    let path = fx.put("locked.txt", "keep\n");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let err = fx
        .tools
        .write_file(&WriteFileArgs::new("locked.txt", "x"))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::IoError);
    assert_eq!(
        err.message(),
        "locked.txt: the file is read-only; not changed"
    );
    let err = fx.edit("locked.txt", "keep", "x").unwrap_err();
    assert_eq!(err.code(), ErrorCode::IoError);
    assert_eq!(fx.get("locked.txt"), b"keep\n");
    assert!(fx.temp_files(".").is_empty());
}

// ---------------------------------------------------------------------------
// edit_file: exact matching

const RUST: &str = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";

#[test]
fn edit_replaces_one_exact_occurrence() {
    let fx = Fixture::new();
    fx.put("main.rs", RUST);
    let msg = fx.edit("main.rs", "let x = 1;", "let x = 2;").unwrap();
    assert_eq!(msg, "edited main.rs: 1 replacement at line 2");
    assert_eq!(fx.get("main.rs"), RUST.replace("x = 1", "x = 2").as_bytes());
    // Deleting is replacing with nothing.
    fx.edit("main.rs", "    println!(\"{x}\");\n", "").unwrap();
    assert_eq!(fx.get("main.rs"), b"fn main() {\n    let x = 2;\n}\n");
    assert!(fx.temp_files(".").is_empty());
}

#[test]
fn new_string_is_literal() {
    let fx = Fixture::new();
    fx.put("a.txt", "price: 10\n");
    fx.edit("a.txt", "10", "$1 $& $0 \\1 ${x} $$").unwrap();
    assert_eq!(fx.get("a.txt"), b"price: $1 $& $0 \\1 ${x} $$\n");
}

#[test]
fn replace_all_replaces_every_occurrence_left_to_right() {
    let fx = Fixture::new();
    fx.put("a.txt", "foo\nbar foo\nfoo foo\n");
    let msg = fx
        .tools
        .edit_file(&EditFileArgs::new("a.txt", "foo", "baz").all())
        .unwrap();
    assert_eq!(msg, "edited a.txt: 4 replacements at lines 1, 2, 3, 3");
    assert_eq!(fx.get("a.txt"), b"baz\nbar baz\nbaz baz\n");
    // Non-overlapping, left to right.
    fx.put("b.txt", "aaaaa");
    fx.tools
        .edit_file(&EditFileArgs::new("b.txt", "aa", "X").all())
        .unwrap();
    assert_eq!(fx.get("b.txt"), b"XXa");
    // One occurrence is fine with replace_all.
    let msg = fx
        .tools
        .edit_file(&EditFileArgs::new("b.txt", "XXa", "ok").all())
        .unwrap();
    assert_eq!(msg, "edited b.txt: 1 replacement at line 1");
}

#[test]
fn many_replacements_are_summarised() {
    let fx = Fixture::new();
    fx.put("a.txt", "x\n".repeat(25));
    let msg = fx
        .tools
        .edit_file(&EditFileArgs::new("a.txt", "x", "y").all())
        .unwrap();
    insta::assert_snapshot!("replace_all_many", msg);
}

#[test]
fn ambiguous_exact_match_changes_nothing() {
    let fx = Fixture::new();
    let path = fx.put("a.rs", "let a = 1;\nlet b = 1;\nlet c = 1;\n");
    age(&path);
    let before = mtime(&path);
    let err = fx.edit("a.rs", " = 1;", " = 2;").unwrap_err();
    assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
    insta::assert_snapshot!("ambiguous_exact", err.message());
    assert_eq!(fx.get("a.rs"), b"let a = 1;\nlet b = 1;\nlet c = 1;\n");
    assert_eq!(mtime(&path), before);
}

#[test]
fn invalid_edits_are_invalid_input() {
    let fx = Fixture::new();
    fx.put("a.txt", "abc");
    let err = fx.edit("a.txt", "b", "b").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    insta::assert_snapshot!("identical_strings", err.message());
    let err = fx.edit("a.txt", "", "x").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    assert!(err.message().contains("write_file"), "{}", err.message());
    insta::assert_snapshot!("empty_old_string", err.message());
    // Checked before the file: a missing file still says invalid_input.
    let err = fx.edit("missing.txt", "", "x").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    assert_eq!(fx.get("a.txt"), b"abc");
}

#[test]
fn files_that_cannot_be_edited() {
    let fx = Fixture::with_limits(Limits {
        max_file_bytes: 100,
        ..Limits::default()
    });
    let err = fx.edit("missing.txt", "a", "b").unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
    insta::assert_snapshot!("edit_missing_file", err.message());

    fs::create_dir(fx.root.join("dir")).unwrap();
    let err = fx.edit("dir", "a", "b").unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAFile);

    fx.put("big.txt", "a".repeat(101));
    let err = fx.edit("big.txt", "a", "b").unwrap_err();
    assert_eq!(err.code(), ErrorCode::TooLarge);
    insta::assert_snapshot!("edit_too_large", err.message());
    fx.put("fits.txt", "a".repeat(100));
    fx.tools
        .edit_file(&EditFileArgs::new("fits.txt", "a", "b").all())
        .unwrap();

    fx.put("bin.dat", b"ab\0cd");
    let err = fx.edit("bin.dat", "ab", "x").unwrap_err();
    assert_eq!(err.code(), ErrorCode::IsBinary);
    insta::assert_snapshot!("edit_binary", err.message());

    fx.put("bad.txt", b"ok \xff\xfe not utf8");
    let err = fx.edit("bad.txt", "ok", "x").unwrap_err();
    assert_eq!(err.code(), ErrorCode::IsBinary);
    insta::assert_snapshot!("edit_invalid_utf8", err.message());

    let mut utf16le = vec![0xFF, 0xFE];
    utf16le.extend("hello".encode_utf16().flat_map(u16::to_le_bytes));
    fx.put("le.txt", &utf16le);
    let err = fx.edit("le.txt", "hello", "x").unwrap_err();
    assert_eq!(err.code(), ErrorCode::IsBinary);
    insta::assert_snapshot!("edit_utf16", err.message());
    let mut utf16be = vec![0xFE, 0xFF];
    utf16be.extend("hello".encode_utf16().flat_map(u16::to_be_bytes));
    fx.put("be.txt", &utf16be);
    let err = fx
        .tools
        .multi_edit(&MultiEditArgs::new("be.txt", vec![EditSpec::new("h", "j")]))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::IsBinary);
    assert!(err.message().contains("UTF-16BE"), "{}", err.message());
    assert_eq!(fx.get("le.txt"), utf16le);
    assert_eq!(fx.get("be.txt"), utf16be);
}

// ---------------------------------------------------------------------------
// Line endings, BOM, and each tolerant level.

struct Case {
    name: &'static str,
    file: &'static str,
    old: &'static str,
    new: &'static str,
    expected: &'static str,
    tolerant: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "exact",
        file: "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n",
        old: "    let x = 1;\n    println!",
        new: "    let x = 2;\n    eprintln!",
        expected: "fn main() {\n    let x = 2;\n    eprintln!(\"{x}\");\n}\n",
        tolerant: false,
    },
    Case {
        name: "indentation",
        file: "impl A {\n    fn f(&self) {\n        if self.ok {\n            go();\n        }\n    }\n}\n",
        old: "if self.ok {\n    go();\n}\n",
        new: "if self.ok {\n    go();\n\n    log();\n}\n",
        expected: "impl A {\n    fn f(&self) {\n        if self.ok {\n            go();\n\n            log();\n        }\n    }\n}\n",
        tolerant: true,
    },
    Case {
        name: "trimmed_lines",
        file: "a = 1;   \nb = 2;\t\nc = 3;\n",
        old: "a = 1;\nb = 2;",
        new: "a = 10;\nb = 20;",
        expected: "a = 10;\nb = 20;\nc = 3;\n",
        tolerant: true,
    },
    Case {
        name: "whitespace",
        file: "let v = vec![1,   2,\t3];\nrest\n",
        old: "let v = vec![1, 2, 3];",
        new: "let v = vec![4];",
        expected: "let v = vec![4];\nrest\n",
        tolerant: true,
    },
    Case {
        name: "trimmed_substring",
        file: "x=compute(a);\nnext\n",
        old: "\ncompute(a)\n",
        new: "\ncompute(b)\n",
        expected: "x=compute(b);\nnext\n",
        tolerant: true,
    },
    Case {
        name: "typographic",
        file: "msg = \u{201C}don\u{2019}t panic\u{201D} \u{2014} ok\u{2026}\nnext\nend\n",
        old: "msg = \"don't panic\" - ok...\nnext",
        new: "msg = \"calm\"\nnext",
        // The file's curly quotes, as old_string's straight ones stood for.
        expected: "msg = \u{201C}calm\u{201D}\nnext\nend\n",
        tolerant: true,
    },
];

fn crlf(text: &str) -> String {
    text.replace('\n', "\r\n")
}

#[test]
fn line_ending_and_bom_matrix_for_every_level() {
    let fx = Fixture::new();
    for case in CASES {
        for use_crlf in [false, true] {
            for bom in [false, true] {
                // The caller's strings are written with LF, and also with CRLF.
                for caller_crlf in [false, true] {
                    let label = format!(
                        "{} crlf={use_crlf} bom={bom} caller_crlf={caller_crlf}",
                        case.name
                    );
                    let convert = |s: &str| if use_crlf { crlf(s) } else { s.to_string() };
                    let prefix: &[u8] = if bom { b"\xEF\xBB\xBF" } else { b"" };
                    let mut content = prefix.to_vec();
                    content.extend_from_slice(convert(case.file).as_bytes());
                    let mut expected = prefix.to_vec();
                    expected.extend_from_slice(convert(case.expected).as_bytes());
                    fx.put("f.txt", &content);

                    let (old, new) = if caller_crlf {
                        (crlf(case.old), crlf(case.new))
                    } else {
                        (case.old.to_string(), case.new.to_string())
                    };
                    let msg = fx
                        .edit("f.txt", &old, &new)
                        .unwrap_or_else(|e| panic!("{label}: {}", e.message()));
                    assert_eq!(
                        String::from_utf8_lossy(&fx.get("f.txt")),
                        String::from_utf8_lossy(&expected),
                        "{label}"
                    );
                    assert_eq!(
                        msg.contains("matched tolerantly (old_string did not match exactly: "),
                        case.tolerant,
                        "{label}: {msg}"
                    );
                }
            }
        }
    }
    assert!(fx.temp_files(".").is_empty());
}

#[test]
fn tolerant_success_message() {
    let fx = Fixture::new();
    fx.put("a.rs", CASES[1].file);
    let msg = fx.edit("a.rs", CASES[1].old, CASES[1].new).unwrap();
    insta::assert_snapshot!("tolerant_success", msg);
}

#[test]
fn tabs_versus_spaces() {
    let fx = Fixture::new();
    // A tab-indented file, edited with a space-indented old_string.
    fx.put("tabs.go", "func f() {\n\tif ok {\n\t\trun()\n\t}\n}\n");
    let msg = fx
        .edit(
            "tabs.go",
            "    if ok {\n        run()\n    }",
            "    if ok {\n        run()\n        log()\n    }",
        )
        .unwrap();
    assert!(msg.contains("matched tolerantly"), "{msg}");
    assert!(
        msg.contains("indents with spaces where the file uses tabs"),
        "{msg}"
    );
    assert_eq!(
        fx.get("tabs.go"),
        b"func f() {\n\tif ok {\n\t\trun()\n\t\tlog()\n\t}\n}\n"
    );
    // A space-indented file, edited with a tab-indented old_string.
    fx.put("spaces.py", "def f():\n  if ok:\n    run()\n");
    fx.edit(
        "spaces.py",
        "\tif ok:\n\t\trun()",
        "\tif ok:\n\t\trun()\n\t\tlog()",
    )
    .unwrap();
    assert_eq!(
        fx.get("spaces.py"),
        b"def f():\n  if ok:\n    run()\n    log()\n"
    );
    // A uniform tab prefix is carried by indentation-flexible matching.
    fx.put("mixed.c", "\tint a;\n\tint b;\n");
    let msg = fx
        .edit("mixed.c", "int a;\nint b;", "int a;\nint c;")
        .unwrap();
    assert!(
        msg.contains("its base indentation is 0 columns where the file's block has 4"),
        "{msg}"
    );
    assert_eq!(fx.get("mixed.c"), b"\tint a;\n\tint c;\n");
}

#[test]
fn crlf_old_string_matches_an_lf_file_and_lf_matches_crlf() {
    let fx = Fixture::new();
    fx.put("lf.txt", "one\ntwo\nthree\n");
    let msg = fx.edit("lf.txt", "one\r\ntwo", "1\r\n2").unwrap();
    assert_eq!(msg, "edited lf.txt: 1 replacement at line 1");
    assert_eq!(fx.get("lf.txt"), b"1\n2\nthree\n");
    fx.put("crlf.txt", "one\r\ntwo\r\nthree\r\n");
    fx.edit("crlf.txt", "two\nthree\n", "2\n3\n4\n").unwrap();
    assert_eq!(fx.get("crlf.txt"), b"one\r\n2\r\n3\r\n4\r\n");
    // A file mixing endings: the caller's own endings are tried as well.
    fx.put("mixed.txt", "a\r\nb\r\nc\nd\r\n");
    fx.edit("mixed.txt", "c\nd", "C\nD").unwrap();
    assert_eq!(fx.get("mixed.txt"), b"a\r\nb\r\nC\nD\r\n");
}

#[test]
fn ambiguous_tolerant_match_leaves_the_file_untouched() {
    let fx = Fixture::new();
    let content = "fn a() {\n    call(1,  2);\n}\nfn b() {\n    call(1,\t2);\n}\n";
    let path = fx.put("a.rs", content);
    age(&path);
    let before = mtime(&path);
    let err = fx.edit("a.rs", "call(1, 2);", "call(3);").unwrap_err();
    assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
    insta::assert_snapshot!("ambiguous_tolerant", err.message());
    assert_eq!(fx.get("a.rs"), content.as_bytes());
    assert_eq!(mtime(&path), before);
    assert!(fx.temp_files(".").is_empty());
}

#[test]
fn replace_all_does_not_use_tolerant_matching() {
    let fx = Fixture::new();
    fx.put("a.rs", "    x();\n");
    let err = fx
        .tools
        .edit_file(&EditFileArgs::new("a.rs", "x( );", "y();").all())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoMatch);
    assert!(err.message().contains("replace_all"), "{}", err.message());
}

// ---------------------------------------------------------------------------
// no_match hints

const SERVICE: &str = "\
use std::io;

pub fn start(port: u16) -> io::Result<()> {
    let listener = bind(port)?;
    for conn in listener.incoming() {
        handle(conn?);
    }
    Ok(())
}

fn handle(conn: Conn) {
    log(\"conn\");
}
";

#[test]
fn no_match_names_the_closest_region() {
    let fx = Fixture::new();
    let path = fx.put("service.rs", SERVICE);
    age(&path);
    let before = mtime(&path);
    let err = fx
        .edit(
            "service.rs",
            "    let listener = bind(port)?;\n    for conn in listener.accept() {\n        handle(conn?);",
            "x",
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoMatch);
    insta::assert_snapshot!("no_match_closest", err.message());
    assert_eq!(mtime(&path), before);
}

#[test]
fn no_match_spots_line_number_prefixes() {
    let fx = Fixture::new();
    fx.put("service.rs", SERVICE);
    let err = fx
        .edit(
            "service.rs",
            "     4\t    let listener = bind(port)?;\n     5\t    for conn in listener.incoming() {",
            "x",
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoMatch);
    insta::assert_snapshot!("no_match_line_numbers", err.message());
}

#[test]
fn no_match_without_anything_close() {
    let fx = Fixture::new();
    fx.put("service.rs", SERVICE);
    let err = fx
        .edit("service.rs", "completely unrelated text", "x")
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoMatch);
    insta::assert_snapshot!("no_match_nothing_close", err.message());
}

#[test]
fn no_match_diff_is_capped() {
    let fx = Fixture::new();
    let mut file = String::new();
    let mut old = String::new();
    for i in 0..200 {
        file.push_str(&format!("line number {i} with some text in it\n"));
        old.push_str(&format!("line number {i} with other text in it\n"));
    }
    fx.put("long.txt", &file);
    let err = fx.edit("long.txt", &old, "x").unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoMatch);
    assert!(err.message().len() < 2200, "{}", err.message().len());
    assert!(err.message().contains("lines 1-200"), "{}", err.message());
}

// ---------------------------------------------------------------------------
// Regressions: the damage the old tolerant cascade did.

#[test]
fn collapsed_whitespace_no_longer_glues_lines() {
    let fx = Fixture::new();
    fx.put("a.py", "a = 1\n    b  = 2\n");
    let msg = fx.edit("a.py", "    b = 2", "    b = 3").unwrap();
    assert_eq!(fx.get("a.py"), b"a = 1\n    b = 3\n");
    assert!(
        msg.starts_with("edited a.py: 1 replacement at line 2, matched tolerantly"),
        "{msg}"
    );
    // The same through the typographic reading.
    fx.put("b.py", "a = 1\n    msg  = \u{201C}hi\u{201D}\n");
    let msg = fx
        .edit("b.py", "    msg = \"hi\"", "    msg = \"bye\"")
        .unwrap();
    // new_string's straight quotes are written curly, as the file writes
    // the ones old_string's stood for.
    assert_eq!(
        String::from_utf8(fx.get("b.py")).unwrap(),
        "a = 1\n    msg = \u{201C}bye\u{201D}\n"
    );
    assert!(msg.contains("U+201C left double quotation mark"), "{msg}");
    assert!(
        msg.contains("new_string was written as the file writes it: straight double quote as U+201C left double quotation mark, straight double quote as U+201D right double quotation mark"),
        "{msg}"
    );
    insta::assert_snapshot!("tolerant_typographic_success", msg);
}

#[test]
fn a_stale_block_is_not_edited_at_another_depth() {
    let fx = Fixture::new();
    // The model read `production: env: LOG_LEVEL: info`, which has since
    // become `warn`; `staging` holds the old lines one level deeper.
    let content = "\
production:
  env:
    LOG_LEVEL: warn
    WORKERS: 4
staging:
  overrides:
    env:
      LOG_LEVEL: info
      WORKERS: 4
";
    fx.put("deploy.yaml", content);
    let err = fx
        .edit(
            "deploy.yaml",
            "  env:\n    LOG_LEVEL: info\n    WORKERS: 4",
            "  env:\n    LOG_LEVEL: debug\n    WORKERS: 4",
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
    insta::assert_snapshot!("stale_block_other_depth", err.message());
    assert!(err.message().contains("lines 7-9"), "{}", err.message());
    assert!(err.message().contains("lines 2-4"), "{}", err.message());
    assert_eq!(fx.get("deploy.yaml"), content.as_bytes());
}

#[test]
fn a_trailing_space_and_another_depth_are_two_matches() {
    let fx = Fixture::new();
    let content = "def a():\n    x = 1 \n    return x\nclass B:\n    def b(self):\n        x = 1\n        return x\n";
    fx.put("m.py", content);
    let err = fx
        .edit("m.py", "    x = 1\n    return x", "    x = 2\n    return x")
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
    assert!(
        err.message()
            .contains("- lines 2-3: trailing whitespace differs"),
        "{}",
        err.message()
    );
    assert!(
        err.message().contains("- lines 6-7: its base indentation"),
        "{}",
        err.message()
    );
    assert_eq!(fx.get("m.py"), content.as_bytes());
}

#[test]
fn no_tolerant_match_inside_a_name() {
    let fx = Fixture::new();
    fx.put("settings.py", "template_debug = False\n");
    let err = fx
        .edit("settings.py", "    debug = False\n", "    debug = True\n")
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoMatch);
    assert_eq!(fx.get("settings.py"), b"template_debug = False\n");
    fx.put("calc.py", "x = subtotal(a)\n");
    let err = fx
        .edit("calc.py", "\ntotal(a)\n", "\ntotal(b)\n")
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoMatch);
    assert_eq!(fx.get("calc.py"), b"x = subtotal(a)\n");
    // Exact matching stays literal: it edits inside names.
    fx.put("v.py", "handler_v2()\n");
    fx.edit("v.py", "_v2", "_v3").unwrap();
    assert_eq!(fx.get("v.py"), b"handler_v3()\n");
}

#[test]
fn reindents_by_unit_and_depth() {
    let fx = Fixture::new();
    fx.put(
        "a.py",
        "class A:\n    def f(self):\n        if x:\n            go()\n        return 1\n",
    );
    fx.edit(
        "a.py",
        "  def f(self):\n    if x:\n      go()",
        "  def f(self):\n    if x:\n      go()\n      if y:\n        stop()",
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(fx.get("a.py")).unwrap(),
        "class A:\n    def f(self):\n        if x:\n            go()\n            if y:\n                stop()\n        return 1\n"
    );
}

#[test]
fn hints_name_what_cannot_be_seen() {
    let fx = Fixture::new();
    // NFD in the file, NFC in old_string; a no-break space; a literal \n.
    fx.put(
        "t.txt",
        "name = \"Rene\u{301}\"\nprice = 10\u{a0}EUR\nsay(\"a\nb\")\n",
    );
    let err = fx
        .edit(
            "t.txt",
            "name = \"Ren\u{e9}\"\nprice = 10 EUR\nsay(\"a\\nb\")",
            "x",
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoMatch);
    insta::assert_snapshot!("no_match_invisible_differences", err.message());
    let err = fx
        .edit("t.txt", "name = \"Ren\u{e9}\"\nprice = 9 EUR", "x")
        .unwrap_err();
    let message = err.message();
    assert!(message.contains("Unicode normalization"), "{message}");
    assert!(message.contains("U+0065 U+0301"), "{message}");
    assert!(message.contains("U+00A0 no-break space"), "{message}");
    let err = fx.edit("t.txt", "say(\"a\\nb\")", "x").unwrap_err();
    assert!(
        err.message().contains("literal backslash-n"),
        "{}",
        err.message()
    );
}

#[test]
fn hints_name_every_close_region_and_whole_reformatted_calls() {
    let fx = Fixture::new();
    fx.put(
        "a.rs",
        "fn a() {\n    go(1, 2);\n}\nfn b() {\n    go(1, 2);\n}\n",
    );
    let err = fx.edit("a.rs", "    go(1, 3);", "x").unwrap_err();
    assert!(
        err.message().contains("- line 2, 88% similar"),
        "{}",
        err.message()
    );
    assert!(
        err.message().contains("- line 5, 88% similar"),
        "{}",
        err.message()
    );
    fx.put(
        "c.py",
        "x = 1\nresult = compute(\n    alpha,\n    beta,\n    gamma,\n)\ny = 2\n",
    );
    let err = fx
        .edit("c.py", "result = compute(alpha, beta, delta)", "x")
        .unwrap_err();
    assert!(err.message().contains("- lines 2-6, "), "{}", err.message());
}

#[test]
fn replace_all_is_held_to_the_file_limit_before_it_builds_the_result() {
    let fx = Fixture::with_limits(Limits {
        max_file_bytes: 200_000,
        ..Limits::default()
    });
    let content = "a".repeat(100_000);
    fx.put("a.txt", &content);
    let big = "B".repeat(1000);
    let err = fx
        .tools
        .edit_file(&EditFileArgs::new("a.txt", "a", &big).all())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TooLarge);
    insta::assert_snapshot!("replace_all_too_large", err.message());
    let err = fx
        .tools
        .multi_edit(&MultiEditArgs::new(
            "a.txt",
            vec![
                EditSpec::new("aa", "b").all(),
                EditSpec::new("b", "cccccc").all(),
            ],
        ))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TooLarge);
    assert!(
        err.message().starts_with("edit 2 of 2: "),
        "{}",
        err.message()
    );
    assert_eq!(fx.get("a.txt"), content.as_bytes());
}

#[test]
fn large_tolerant_searches_finish() {
    // Quadratic matching would take minutes here, holding the write lock;
    // the deadline turns a regression into a failure rather than a hang.
    let fx = Arc::new(Fixture::new());
    fx.put("big.txt", "a\n".repeat(200_000));
    let worker = Arc::clone(&fx);
    let handle = std::thread::spawn(move || {
        let mut old = "a\n".repeat(5_000);
        old.push('b');
        let err = worker.edit("big.txt", &old, "c").unwrap_err();
        assert_eq!(err.code(), ErrorCode::NoMatch);
        let err = worker
            .edit("big.txt", &"  a\n".repeat(5_000), "c")
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
    });
    let deadline = SystemTime::now() + Duration::from_secs(20);
    while !handle.is_finished() {
        assert!(
            SystemTime::now() < deadline,
            "tolerant search took over 20 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    handle.join().unwrap();
}

// ---------------------------------------------------------------------------
// multi_edit

#[test]
fn multi_edit_applies_in_order() {
    let fx = Fixture::new();
    fx.put("main.rs", RUST);
    let msg = fx
        .tools
        .multi_edit(&MultiEditArgs::new(
            "main.rs",
            vec![
                EditSpec::new("let x = 1;", "let y = 1;"),
                // Sees the result of the first edit.
                EditSpec::new("{x}", "{y}"),
                EditSpec::new("y", "z").all(),
                EditSpec::new("println!(\"{z}\");", "  println!(\"{z}\");\n  done();"),
            ],
        ))
        .unwrap();
    insta::assert_snapshot!("multi_edit_success", msg);
    assert_eq!(
        String::from_utf8(fx.get("main.rs")).unwrap(),
        "fn main() {\n    let z = 1;\n      println!(\"{z}\");\n  done();\n}\n"
    );
}

#[test]
fn multi_edit_is_all_or_nothing() {
    let fx = Fixture::new();
    let path = fx.put("main.rs", RUST);
    age(&path);
    let before = mtime(&path);
    let err = fx
        .tools
        .multi_edit(&MultiEditArgs::new(
            "main.rs",
            vec![
                EditSpec::new("let x = 1;", "let y = 1;"),
                EditSpec::new("fn main", "fn start"),
                EditSpec::new("let x = 1;", "let x = 3;"),
                EditSpec::new("}", "};"),
            ],
        ))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoMatch);
    assert!(
        err.message().starts_with("edit 3 of 4: main.rs: "),
        "{}",
        err.message()
    );
    insta::assert_snapshot!("multi_edit_failure", err.message());
    assert_eq!(fx.get("main.rs"), RUST.as_bytes());
    assert_eq!(mtime(&path), before);

    let err = fx
        .tools
        .multi_edit(&MultiEditArgs::new(
            "main.rs",
            vec![EditSpec::new("main", "start"), EditSpec::new("x", "y")],
        ))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
    assert!(
        err.message().starts_with("edit 2 of 2: "),
        "{}",
        err.message()
    );

    let err = fx
        .tools
        .multi_edit(&MultiEditArgs::new(
            "main.rs",
            vec![
                EditSpec::new("main", "start"),
                EditSpec::new("x", "x"),
                EditSpec::new("", "x"),
            ],
        ))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    assert_eq!(
        err.message(),
        "edit 2 of 3: old_string and new_string are identical; there is nothing to change"
    );

    let err = fx
        .tools
        .multi_edit(&MultiEditArgs::new("main.rs", vec![]))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    assert_eq!(fx.get("main.rs"), RUST.as_bytes());
    assert_eq!(mtime(&path), before);
    assert!(fx.temp_files(".").is_empty());
}

#[test]
fn multi_edit_keeps_crlf_and_bom_and_uses_tolerant_matching() {
    let fx = Fixture::new();
    fx.put(
        "a.cs",
        "\u{FEFF}class A {\r\n\tvoid F() {\r\n\t\tG();\r\n\t}\r\n}\r\n",
    );
    let msg = fx
        .tools
        .multi_edit(&MultiEditArgs::new(
            "a.cs",
            vec![
                EditSpec::new("void F() {\n    G();\n}", "void F() {\n    H();\n}"),
                EditSpec::new("class A {\n", "class B {\n"),
            ],
        ))
        .unwrap();
    assert!(
        msg.contains("edit 1 of 2: 1 replacement at lines 2-4, matched tolerantly"),
        "{msg}"
    );
    assert_eq!(
        fx.get("a.cs"),
        "\u{FEFF}class B {\r\n\tvoid F() {\r\n\t\tH();\r\n\t}\r\n}\r\n".as_bytes()
    );
}

#[test]
fn multi_edit_speaks_of_the_file_as_read() {
    let fx = Fixture::new();
    fx.put("m.py", "a = 1\nb = 2\nc = 3\nd = 4\n");
    let err = fx
        .tools
        .multi_edit(&MultiEditArgs::new(
            "m.py",
            vec![
                EditSpec::new("a = 1\n", "a = 1\nx = 0\ny = 0\n"),
                EditSpec::new("d = 5", "d = 6"),
            ],
        ))
        .unwrap_err();
    // Line 4 as read, though the earlier edit moved it to line 6.
    assert!(err.message().contains("- line 4, "), "{}", err.message());
    let err = fx
        .tools
        .multi_edit(&MultiEditArgs::new(
            "m.py",
            vec![
                EditSpec::new("b = 2\nc = 3", "b = 20\nc = 30"),
                EditSpec::new("c = 3\nd = 4", "c = 3\nd = 40"),
            ],
        ))
        .unwrap_err();
    insta::assert_snapshot!("multi_edit_earlier_edit_changed_it", err.message());
    let msg = fx
        .tools
        .multi_edit(&MultiEditArgs::new(
            "m.py",
            vec![
                EditSpec::new("a = 1\n", "a = 1\nx = 0\ny = 0\n"),
                EditSpec::new("d  =  4", "d = 40"),
            ],
        ))
        .unwrap();
    assert!(
        msg.contains("edit 2 of 2: 1 replacement at line 4, matched tolerantly"),
        "{msg}"
    );
}

// ---------------------------------------------------------------------------
// Concurrency

#[test]
fn concurrent_edits_of_one_file_lose_no_update() {
    const THREADS: usize = 16;
    const ROUNDS: usize = 8;
    let fx = Arc::new(Fixture::new());
    let mut content = String::from("header\n");
    for t in 0..THREADS {
        content.push_str(&format!("marker-{t}-0\n"));
    }
    fx.put("shared.txt", &content);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let fx = Arc::clone(&fx);
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    let old = format!("marker-{t}-{round}\n");
                    let new = format!("marker-{t}-{}\n", round + 1);
                    if round % 2 == 0 {
                        fx.edit("shared.txt", &old, &new).unwrap();
                    } else {
                        fx.tools
                            .multi_edit(&MultiEditArgs::new(
                                "shared.txt",
                                vec![EditSpec::new(old, new)],
                            ))
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let mut expected = String::from("header\n");
    for t in 0..THREADS {
        expected.push_str(&format!("marker-{t}-{ROUNDS}\n"));
    }
    assert_eq!(String::from_utf8(fx.get("shared.txt")).unwrap(), expected);
    assert!(fx.temp_files(".").is_empty());
}

#[test]
fn concurrent_writes_of_different_files() {
    let fx = Arc::new(Fixture::new());
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let fx = Arc::clone(&fx);
            std::thread::spawn(move || {
                for round in 0..10 {
                    let name = format!("f{t}.txt");
                    fx.tools
                        .write_file(&WriteFileArgs::new(name, format!("{t}:{round}")))
                        .unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    for t in 0..8 {
        assert_eq!(fx.get(&format!("f{t}.txt")), format!("{t}:9").as_bytes());
    }
    assert!(fx.temp_files(".").is_empty());
}

/// A workspace on `dir` (confined).
fn workspace(dir: &Path) -> Workspace {
    Workspace::open(dir, Confinement::Confined).unwrap()
}

#[test]
fn rename_between_two_workspaces_is_one_rename() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    fs::create_dir_all(a.join("tree")).unwrap();
    fs::create_dir(&b).unwrap();
    fs::write(a.join("tree/f.txt"), "f").unwrap();
    let (wa, wb) = (workspace(&a), workspace(&b));
    let from = wa.resolve("tree").unwrap();
    let to = wb.resolve("moved").unwrap();
    agent_tools_fs::rename_new_between(&wa, &from, &wb, &to, None).unwrap();
    assert_eq!(fs::read_to_string(b.join("moved/f.txt")).unwrap(), "f");
    assert!(!a.join("tree").exists());
    // Never over an existing entry.
    fs::write(a.join("g.txt"), "g").unwrap();
    let err = agent_tools_fs::rename_new_between(
        &wa,
        &wa.resolve("g.txt").unwrap(),
        &wb,
        &wb.resolve("moved").unwrap(),
        None,
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::IoError, "{}", err.message());
    assert!(a.join("g.txt").exists());
}

#[test]
fn rename_across_filesystems_is_refused_clearly_and_moves_nothing() {
    use std::os::unix::fs::MetadataExt;
    let here = tempfile::tempdir().unwrap();
    let Ok(there) = tempfile::tempdir_in("/dev/shm") else {
        eprintln!("skipped: no /dev/shm to move across to");
        return;
    };
    let dev = |path: &Path| fs::metadata(path).unwrap().dev();
    if dev(here.path()) == dev(there.path()) {
        eprintln!("skipped: /dev/shm and the temporary directory are one filesystem");
        return;
    }
    fs::write(here.path().join("f.txt"), "f").unwrap();
    let (wa, wb) = (workspace(here.path()), workspace(there.path()));
    let err = agent_tools_fs::rename_new_between(
        &wa,
        &wa.resolve("f.txt").unwrap(),
        &wb,
        &wb.resolve("f.txt").unwrap(),
        None,
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::IoError);
    assert!(
        err.message().contains("different filesystems"),
        "{}",
        err.message()
    );
    assert_eq!(fs::read_to_string(here.path().join("f.txt")).unwrap(), "f");
    assert!(!there.path().join("f.txt").exists());
}
