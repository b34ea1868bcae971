//! The surface end to end through the facade's pipeline: every message
//! verbatim, the session rules, the formats.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, SystemTime};

use agent_tools::{AgentTools, CallContext, CallOutcome, Config, Content, Session};
use serde_json::{Value, json};

use super::*;

struct Fixture {
    dir: tempfile::TempDir,
    tools: AgentTools,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::builder(dir.path()).build().unwrap();
    let tools = AgentTools::with_surface(config, ClaudeCodeSurface).unwrap();
    Fixture { dir, tools }
}

impl Fixture {
    fn abs(&self, rel: &str) -> String {
        self.dir.path().join(rel).to_string_lossy().into_owned()
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn content(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(rel)).unwrap()
    }

    fn call(&self, name: &str, args: Value) -> CallOutcome {
        self.tools.dispatch(name, args, &CallContext::default())
    }

    /// A successful call's text.
    fn ok(&self, name: &str, args: Value) -> String {
        let outcome = self.call(name, args);
        assert!(!outcome.is_error(), "{name} failed: {}", outcome.text());
        outcome.text().into_owned()
    }

    /// A failed call's text.
    fn err(&self, name: &str, args: Value) -> String {
        let outcome = self.call(name, args);
        assert!(outcome.is_error(), "{name} succeeded: {}", outcome.text());
        outcome.text().into_owned()
    }

    fn read(&self, rel: &str) -> String {
        self.ok("Read", json!({"file_path": self.abs(rel)}))
    }

    fn set_mtime(&self, rel: &str, seconds_ago: u64) {
        let file = std::fs::File::options()
            .write(true)
            .open(self.dir.path().join(rel))
            .unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago))
            .unwrap();
    }
}

fn wrapped(message: &str) -> String {
    format!("<tool_use_error>{message}</tool_use_error>")
}

// Read.

#[test]
fn read_numbers_lines_with_the_arrow_and_strips_crlf_and_bom() {
    let f = fixture();
    f.write("a.txt", "first\nsecond\n");
    assert_eq!(f.read("a.txt"), "     1\u{2192}first\n     2\u{2192}second");
    f.write("crlf.txt", "\u{FEFF}one\r\ntwo\r\n");
    assert_eq!(f.read("crlf.txt"), "     1\u{2192}one\n     2\u{2192}two");
    f.write("tabs.txt", "\tindented");
    assert_eq!(f.read("tabs.txt"), "     1\u{2192}\tindented");
}

#[test]
fn read_pages_with_offset_and_limit_and_says_where_to_go_on() {
    let f = fixture();
    let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    f.write("ten.txt", &text);
    let shown = f.ok(
        "Read",
        json!({"file_path": f.abs("ten.txt"), "offset": 4, "limit": 2}),
    );
    assert_eq!(
        shown,
        "     4\u{2192}line 4\n     5\u{2192}line 5\n[The file has 10 lines; lines from 6 on are not shown. Call Read with offset=6 to continue.]"
    );
    let last = f.ok("Read", json!({"file_path": f.abs("ten.txt"), "offset": 10}));
    assert_eq!(last, "    10\u{2192}line 10");
    let lines: String = (1..=2001).map(|n| format!("{n}\n")).collect();
    f.write("long.txt", &lines);
    let shown = f.read("long.txt");
    assert!(
        shown.contains("  2000\u{2192}2000\n[The file has 2001 lines; lines from 2001 on"),
        "{}",
        &shown[shown.len() - 200..]
    );
}

#[test]
fn read_cuts_long_lines_visibly() {
    let f = fixture();
    f.write("wide.txt", "x".repeat(2500));
    let shown = f.read("wide.txt");
    let expected = format!(
        "     1\u{2192}{}{} 500 more characters]",
        "x".repeat(2000),
        agent_tools_text::LINE_TRUNCATED_MARKER
    );
    assert_eq!(shown, expected);
}

#[test]
fn read_answers_empty_files_and_offsets_past_the_end_with_reminders() {
    let f = fixture();
    f.write("empty.txt", "");
    assert_eq!(
        f.read("empty.txt"),
        "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
    );
    f.write("three.txt", "a\nb\nc\n");
    assert_eq!(
        f.ok(
            "Read",
            json!({"file_path": f.abs("three.txt"), "offset": 7})
        ),
        "<system-reminder>Warning: the file exists but is shorter than the provided offset (7). The file has 3 lines.</system-reminder>"
    );
}

#[test]
fn a_large_file_needs_limit_and_is_then_streamed() {
    let f = fixture();
    let text: String = (1..=40_000).map(|n| format!("row {n:08}\n")).collect();
    f.write("big.txt", &text);
    let size = text.len() as u64;
    assert_eq!(
        f.err("Read", json!({"file_path": f.abs("big.txt")})),
        format!(
            "File content ({}) exceeds maximum allowed size (256KB). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file.",
            format_size(size)
        )
    );
    let shown = f.ok(
        "Read",
        json!({"file_path": f.abs("big.txt"), "offset": 20_000, "limit": 2}),
    );
    assert_eq!(
        shown,
        " 20000\u{2192}row 00020000\n 20001\u{2192}row 00020001\n[The file has 40000 lines; lines from 20002 on are not shown. Call Read with offset=20002 to continue.]"
    );
    assert_eq!(
        f.ok(
            "Read",
            json!({"file_path": f.abs("big.txt"), "offset": 50_000, "limit": 5})
        ),
        "<system-reminder>Warning: the file exists but is shorter than the provided offset (50000). The file has 40000 lines.</system-reminder>"
    );
}

#[test]
fn read_refuses_missing_files_with_a_suggestion_and_odd_paths() {
    let f = fixture();
    assert_eq!(
        f.err("Read", json!({"file_path": f.abs("nope.txt")})),
        "File does not exist."
    );
    f.write("notes.md", "x");
    assert_eq!(
        f.err("Read", json!({"file_path": f.abs("notes.txt")})),
        format!("File does not exist. Did you mean {}?", f.abs("notes.md"))
    );
    assert_eq!(
        f.err("Read", json!({"file_path": "notes.md"})),
        wrapped(
            "file_path must be an absolute path, not a relative one (got \"notes.md\"). Pass the full path, starting with /."
        )
    );
    assert_eq!(
        f.err("Read", json!({"file_path": "/etc/passwd"})),
        wrapped("File is in a directory that is denied by your permission settings.")
    );
    std::fs::create_dir(f.dir.path().join("sub")).unwrap();
    assert_eq!(
        f.err("Read", json!({"file_path": f.abs("sub")})),
        format!(
            "EISDIR: illegal operation on a directory, read '{}'",
            f.abs("sub")
        )
    );
    nix::unistd::mkfifo(
        &f.dir.path().join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    assert_eq!(
        f.err("Read", json!({"file_path": f.abs("pipe")})),
        format!(
            "Cannot read '{}': this device file would block or produce infinite output.",
            f.abs("pipe")
        )
    );
}

#[test]
fn binary_files_are_refused_by_extension_or_content() {
    let f = fixture();
    f.write("tool.exe", "MZ");
    assert_eq!(
        f.err("Read", json!({"file_path": f.abs("tool.exe")})),
        "This tool cannot read binary files. The file appears to be a binary .exe file. Please use appropriate tools for binary file analysis."
    );
    f.write("blob.txt", b"ab\0cd");
    assert_eq!(
        f.err("Read", json!({"file_path": f.abs("blob.txt")})),
        "This tool cannot read binary files. The file appears to be a binary .txt file. Please use appropriate tools for binary file analysis."
    );
    f.write("blob", b"ab\0cd");
    assert_eq!(
        f.err("Read", json!({"file_path": f.abs("blob")})),
        "This tool cannot read binary files. The file appears to be a binary file. Please use appropriate tools for binary file analysis."
    );
}

#[test]
fn images_come_back_as_image_content() {
    let f = fixture();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    f.write("pic.png", png);
    let outcome = f.call("Read", json!({"file_path": f.abs("pic.png")}));
    let CallOutcome::Result(result) = outcome else {
        panic!("not a result")
    };
    assert!(!result.is_error);
    assert_eq!(
        result.content,
        vec![Content::Image {
            data: png.to_vec(),
            mime_type: "image/png".into()
        }]
    );
    f.write("empty.jpg", "");
    assert_eq!(
        f.err("Read", json!({"file_path": f.abs("empty.jpg")})),
        format!("Image file is empty: {}", f.abs("empty.jpg"))
    );
}

#[test]
fn pdfs_and_notebooks_are_read_as_text() {
    let f = fixture();
    f.write(
        "doc.pdf",
        crate::pdf::tests::make_pdf(&[Some("Quarterly report")]),
    );
    let shown = f.read("doc.pdf");
    assert!(
        shown.starts_with(&format!("PDF file read: {} (", f.abs("doc.pdf"))),
        "{shown}"
    );
    assert!(shown.contains("Quarterly report"), "{shown}");
    assert_eq!(
        f.err("Read", json!({"file_path": f.abs("doc.pdf"), "pages": "x"})),
        "Invalid pages parameter: \"x\". Use formats like \"1-5\", \"3\", or \"10-20\". Pages are 1-indexed."
    );
    let notebook = json!({
        "cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": null}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5
    });
    f.write("n.ipynb", serde_json::to_vec(&notebook).unwrap());
    assert_eq!(f.read("n.ipynb"), "<cell id=\"c1\">x = 1</cell id=\"c1\">");
}

// Write.

#[test]
fn write_creates_files_with_parents_exactly_and_overwrites_after_a_read() {
    let f = fixture();
    let path = f.abs("deep/er/new.txt");
    assert_eq!(
        f.ok("Write", json!({"file_path": path, "content": "a\r\nb"})),
        format!("File created successfully at: {path}")
    );
    assert_eq!(f.content("deep/er/new.txt"), "a\r\nb");
    f.write("old.txt", "old");
    assert_eq!(
        f.err(
            "Write",
            json!({"file_path": f.abs("old.txt"), "content": "new"})
        ),
        wrapped("File has not been read yet. Read it first before writing to it.")
    );
    assert_eq!(f.content("old.txt"), "old");
    f.read("old.txt");
    assert_eq!(
        f.ok(
            "Write",
            json!({"file_path": f.abs("old.txt"), "content": "new"})
        ),
        format!(
            "The file {} has been updated successfully.",
            f.abs("old.txt")
        )
    );
    // The write refreshed the record: a second write needs no new read.
    f.ok(
        "Write",
        json!({"file_path": f.abs("old.txt"), "content": "newer"}),
    );
    assert_eq!(f.content("old.txt"), "newer");
}

#[test]
fn a_change_on_disk_since_the_read_is_refused_and_a_touch_is_not() {
    let f = fixture();
    f.write("a.txt", "one\n");
    f.read("a.txt");
    f.set_mtime("a.txt", 100);
    // Only the time moved: the content is what was read.
    f.ok(
        "Edit",
        json!({"file_path": f.abs("a.txt"), "old_string": "one", "new_string": "two"}),
    );
    f.write("a.txt", "changed elsewhere\n");
    f.set_mtime("a.txt", 50);
    let refusal = wrapped(
        "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.",
    );
    assert_eq!(
        f.err(
            "Edit",
            json!({"file_path": f.abs("a.txt"), "old_string": "changed", "new_string": "x"})
        ),
        refusal
    );
    assert_eq!(
        f.err(
            "Write",
            json!({"file_path": f.abs("a.txt"), "content": "x"})
        ),
        refusal
    );
    assert_eq!(f.content("a.txt"), "changed elsewhere\n");
    f.read("a.txt");
    f.ok(
        "Write",
        json!({"file_path": f.abs("a.txt"), "content": "x"}),
    );
}

/// Puts back the modification time `was` of `rel`, as `cp -p`, `rsync -t`
/// or `touch -r` do.
fn restore_mtime(f: &Fixture, rel: &str, was: SystemTime) {
    let file = std::fs::File::options()
        .write(true)
        .open(f.dir.path().join(rel))
        .unwrap();
    file.set_modified(was).unwrap();
}

#[test]
fn a_file_replaced_with_its_modification_time_put_back_is_refused() {
    let f = fixture();
    let refusal = wrapped(
        "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.",
    );
    let mtime = |rel: &str| {
        std::fs::metadata(f.dir.path().join(rel))
            .unwrap()
            .modified()
            .unwrap()
    };
    // Rewritten in place, the same size, the time put back.
    f.write("a.txt", "VERSION ONE from the user\n");
    let was = mtime("a.txt");
    f.read("a.txt");
    f.write("a.txt", "VERSION TWO from the user\n");
    restore_mtime(&f, "a.txt", was);
    assert_eq!(mtime("a.txt"), was);
    assert_eq!(
        f.err(
            "Write",
            json!({"file_path": f.abs("a.txt"), "content": "the model's text\n"})
        ),
        refusal
    );
    assert_eq!(
        f.err(
            "Edit",
            json!({"file_path": f.abs("a.txt"), "old_string": "VERSION", "new_string": "v"})
        ),
        refusal
    );
    assert_eq!(f.content("a.txt"), "VERSION TWO from the user\n");
    // Replaced by another file (a rename over it), the time put back.
    f.write("b.txt", "first\n");
    let was = mtime("b.txt");
    f.read("b.txt");
    f.write("b.tmp", "second, longer\n");
    restore_mtime(&f, "b.tmp", was);
    std::fs::rename(f.dir.path().join("b.tmp"), f.dir.path().join("b.txt")).unwrap();
    assert_eq!(
        f.err(
            "Write",
            json!({"file_path": f.abs("b.txt"), "content": "x"})
        ),
        refusal
    );
    assert_eq!(f.content("b.txt"), "second, longer\n");
    // A change of its mode alone leaves the content as read: allowed.
    f.write("c.txt", "same\n");
    f.read("c.txt");
    let path = f.dir.path().join("c.txt");
    let mut mode = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o640);
    std::fs::set_permissions(&path, mode).unwrap();
    f.ok(
        "Edit",
        json!({"file_path": f.abs("c.txt"), "old_string": "same", "new_string": "new"}),
    );
    // And an edit after an edit needs no new read.
    f.ok(
        "Edit",
        json!({"file_path": f.abs("c.txt"), "old_string": "new", "new_string": "newer"}),
    );
    assert_eq!(f.content("c.txt"), "newer\n");
}

#[test]
fn a_read_is_brief_only_when_its_work_is_small() {
    let f = fixture();
    f.write("small.txt", "a\n");
    f.write("big.log", vec![b'x'; (MAX_WHOLE_READ_BYTES + 1) as usize]);
    f.write("tiny.pdf", crate::pdf::tests::make_pdf(&[Some("x")]));
    f.write("n.ipynb", "{\"cells\": []}");
    let brief = |args: Value| f.tools.is_brief("Read", args.as_object().unwrap());
    assert!(brief(json!({"file_path": f.abs("small.txt")})));
    assert!(brief(
        json!({"file_path": f.abs("small.txt"), "offset": 1, "limit": 1})
    ));
    // Lines of a big file would be counted; PDFs and notebooks parsed.
    assert!(!brief(
        json!({"file_path": f.abs("big.log"), "offset": 1, "limit": 1})
    ));
    assert!(!brief(json!({"file_path": f.abs("tiny.pdf")})));
    assert!(!brief(json!({"file_path": f.abs("n.ipynb")})));
    // Failing at once is brief.
    assert!(brief(json!({"file_path": f.abs("missing.txt")})));
    assert!(brief(json!({"file_path": "/etc/passwd"})));
    assert!(brief(json!({"file_path": f.abs("")})));
    assert!(brief(json!({})));
    // Other tools are as they were marked.
    assert!(
        !f.tools
            .is_brief("Bash", json!({"command": "true"}).as_object().unwrap())
    );
    assert!(!f.tools.is_brief("Nope", &serde_json::Map::new()));
}

#[test]
fn a_new_session_has_read_nothing() {
    let f = fixture();
    f.write("a.txt", "one\n");
    f.read("a.txt");
    let fresh = CallContext::in_session(Session::new(ClaudeCodeSession::new()));
    let outcome = f.tools.dispatch(
        "Edit",
        json!({"file_path": f.abs("a.txt"), "old_string": "one", "new_string": "two"}),
        &fresh,
    );
    assert_eq!(
        outcome.text(),
        wrapped("File has not been read yet. Read it first before writing to it.")
    );
}

// Edit.

#[test]
fn edit_checks_in_claude_codes_order_with_its_messages() {
    let f = fixture();
    let a = f.abs("a.txt");
    assert_eq!(
        f.err(
            "Edit",
            json!({"file_path": a, "old_string": "x", "new_string": "x"})
        ),
        wrapped("No changes to make: old_string and new_string are exactly the same.")
    );
    assert_eq!(
        f.err(
            "Edit",
            json!({"file_path": a, "old_string": "x", "new_string": "y"})
        ),
        wrapped("File does not exist.")
    );
    assert_eq!(
        f.ok(
            "Edit",
            json!({"file_path": a, "old_string": "", "new_string": "created\n"})
        ),
        format!("The file {a} has been updated successfully.")
    );
    assert_eq!(f.content("a.txt"), "created\n");
    assert_eq!(
        f.err(
            "Edit",
            json!({"file_path": a, "old_string": "", "new_string": "again"})
        ),
        wrapped("Cannot create new file - file already exists.")
    );
    f.write("n.ipynb", "{}");
    assert_eq!(
        f.err(
            "Edit",
            json!({"file_path": f.abs("n.ipynb"), "old_string": "{", "new_string": "["})
        ),
        wrapped("File is a Jupyter Notebook. Use the NotebookEdit to edit this file.")
    );
    f.write("b.txt", "alpha beta alpha\n");
    let b = f.abs("b.txt");
    assert_eq!(
        f.err(
            "Edit",
            json!({"file_path": b, "old_string": "beta", "new_string": "gamma"})
        ),
        wrapped("File has not been read yet. Read it first before writing to it.")
    );
    f.read("b.txt");
    let not_found = f.err(
        "Edit",
        json!({"file_path": b, "old_string": "delta", "new_string": "x"}),
    );
    assert!(
        not_found
            .starts_with("<tool_use_error>String to replace not found in file.\nString: delta"),
        "{not_found}"
    );
    assert_eq!(
        f.err(
            "Edit",
            json!({"file_path": b, "old_string": "alpha", "new_string": "x"})
        ),
        wrapped(
            "Found 2 matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: alpha"
        )
    );
    assert_eq!(
        f.ok(
            "Edit",
            json!({"file_path": b, "old_string": "beta", "new_string": "gamma"})
        ),
        format!("The file {b} has been updated successfully.")
    );
    assert_eq!(
        f.ok(
            "Edit",
            json!({"file_path": b, "old_string": "alpha", "new_string": "x", "replace_all": true})
        ),
        format!("The file {b} has been updated. All occurrences were successfully replaced.")
    );
    assert_eq!(f.content("b.txt"), "x gamma x\n");
}

#[test]
fn a_not_found_edit_points_to_the_closest_region() {
    let f = fixture();
    f.write(
        "src.rs",
        "fn main() {\n    let total = 1;\n    println!(\"{total}\");\n}\n",
    );
    f.read("src.rs");
    let text = f.err(
        "Edit",
        json!({"file_path": f.abs("src.rs"), "old_string": "    let totl = 1;", "new_string": "x"}),
    );
    assert!(
        text.contains("\n\nThe closest region of the file:\n- line 2, "),
        "{text}"
    );
    assert!(text.contains("+    let total = 1;"), "{text}");
}

#[test]
fn multi_edit_is_all_or_nothing_and_names_the_failing_edit() {
    let f = fixture();
    f.write("m.txt", "one two three\n");
    let m = f.abs("m.txt");
    f.read("m.txt");
    assert_eq!(
        f.err(
            "MultiEdit",
            json!({"file_path": m, "edits": [
                {"old_string": "one", "new_string": "1"},
                {"old_string": "four", "new_string": "4"}
            ]})
        ),
        wrapped(
            "Edit 2 of 2 failed, so no edit was applied: String to replace not found in file.\nString: four\n\nNo part of the file is close to it; read the file again to see its current content."
        )
    );
    assert_eq!(f.content("m.txt"), "one two three\n");
    assert_eq!(
        f.ok(
            "MultiEdit",
            json!({"file_path": m, "edits": [
                {"old_string": "one", "new_string": "1"},
                {"old_string": "1 two", "new_string": "1 2"}
            ]})
        ),
        format!("The file {m} has been updated successfully with 2 edits.")
    );
    assert_eq!(f.content("m.txt"), "1 2 three\n");
    let created = f.abs("fresh.txt");
    f.ok(
        "MultiEdit",
        json!({"file_path": created, "edits": [
            {"old_string": "", "new_string": "a b"},
            {"old_string": "b", "new_string": "c"}
        ]}),
    );
    assert_eq!(f.content("fresh.txt"), "a c");
}

// Glob and Grep.

#[test]
fn glob_lists_oldest_first_with_hidden_and_ignored_files() {
    let f = fixture();
    f.write(".gitignore", "ignored.rs\n");
    f.write("new.rs", "");
    f.write("old.rs", "");
    f.write("ignored.rs", "");
    f.write(".hidden/h.rs", "");
    f.set_mtime("old.rs", 300);
    f.set_mtime("ignored.rs", 200);
    f.set_mtime(".hidden/h.rs", 100);
    assert_eq!(
        f.ok("Glob", json!({"pattern": "**/*.rs"})),
        [
            f.abs("old.rs"),
            f.abs("ignored.rs"),
            f.abs(".hidden/h.rs"),
            f.abs("new.rs")
        ]
        .join("\n")
    );
    assert_eq!(f.ok("Glob", json!({"pattern": "*.py"})), "No files found");
    assert_eq!(
        f.err("Glob", json!({"pattern": "*", "path": f.abs("missing")})),
        format!("Directory does not exist: {}", f.abs("missing"))
    );
    assert_eq!(
        f.err("Glob", json!({"pattern": "*", "path": f.abs("new.rs")})),
        format!("Path is not a directory: {}", f.abs("new.rs"))
    );
    for n in 0..101 {
        f.write(&format!("many/{n:03}.txt"), "");
    }
    let listed = f.ok("Glob", json!({"pattern": "*.txt", "path": f.abs("many")}));
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 101);
    assert_eq!(
        lines[100],
        "(Results are truncated. Consider using a more specific path or pattern.)"
    );
}

#[test]
fn grep_answers_in_claude_codes_forms() {
    let f = fixture();
    f.write("a.rs", "fn alpha() {}\nlet x = 1;\nfn beta() {}\n");
    f.write("b.py", "def alpha():\n    pass\n");
    f.set_mtime("a.rs", 100);
    assert_eq!(
        f.ok("Grep", json!({"pattern": "alpha"})),
        format!("Found 2 files\n{}\n{}", f.abs("b.py"), f.abs("a.rs"))
    );
    assert_eq!(
        f.ok("Grep", json!({"pattern": "alpha", "type": "rust"})),
        format!("Found 1 file\n{}", f.abs("a.rs"))
    );
    assert_eq!(
        f.ok("Grep", json!({"pattern": "alpha", "glob": "*.py"})),
        format!("Found 1 file\n{}", f.abs("b.py"))
    );
    assert_eq!(f.ok("Grep", json!({"pattern": "zeta"})), "No files found");
    let a = f.abs("a.rs");
    assert_eq!(
        f.ok(
            "Grep",
            json!({"pattern": "fn", "output_mode": "content", "path": a})
        ),
        format!("{a}:1:fn alpha() {{}}\n{a}:3:fn beta() {{}}")
    );
    assert_eq!(
        f.ok(
            "Grep",
            json!({"pattern": "beta", "output_mode": "content", "path": a, "-B": 1, "-n": false})
        ),
        format!("{a}-let x = 1;\n{a}:fn beta() {{}}")
    );
    assert_eq!(
        f.ok(
            "Grep",
            json!({"pattern": "fn \\w+", "output_mode": "content", "path": a, "-o": true})
        ),
        format!("{a}:1:fn alpha\n{a}:3:fn beta")
    );
    assert_eq!(
        f.ok(
            "Grep",
            json!({"pattern": "fn", "output_mode": "content", "path": a, "head_limit": 1})
        ),
        format!("{a}:1:fn alpha() {{}}\n\n[Showing results with pagination = limit: 1]")
    );
    assert_eq!(
        f.ok("Grep", json!({"pattern": "zeta", "output_mode": "content"})),
        "No matches found"
    );
    assert_eq!(
        f.ok("Grep", json!({"pattern": "fn|def", "output_mode": "count"})),
        format!(
            "{}:2\n{}:1\n\nFound 3 total occurrences across 2 files.",
            f.abs("a.rs"),
            f.abs("b.py")
        )
    );
    assert_eq!(
        f.ok(
            "Grep",
            json!({"pattern": "fn|def", "output_mode": "count", "head_limit": 1})
        ),
        format!(
            "{}:2\n\nFound 2 total occurrences across 1 file. with pagination = limit: 1",
            f.abs("a.rs")
        )
    );
    assert_eq!(
        f.err("Grep", json!({"pattern": "x", "path": f.abs("gone")})),
        format!("Path does not exist: {}", f.abs("gone"))
    );
}

// Bash and KillShell.

#[test]
fn bash_joins_output_and_reports_exit_codes() {
    let f = fixture();
    assert_eq!(
        f.ok(
            "Bash",
            json!({"command": "echo out; echo err >&2", "description": "print"})
        ),
        "out\nerr"
    );
    assert_eq!(
        f.err("Bash", json!({"command": "echo failing; exit 3"})),
        "Exit code 3\nfailing"
    );
    let text = f.ok("Bash", json!({"command": "yes 0123456789 | head -c 40000"}));
    assert!(
        text.starts_with("<persisted-output>\nOutput too large (39.1KB). Full output saved to: "),
        "{text}"
    );
    assert!(text.ends_with("\n...\n</persisted-output>"), "{text}");
    let saved = text
        .lines()
        .nth(1)
        .and_then(|line| line.split("saved to: ").nth(1))
        .unwrap();
    assert!(saved.starts_with(&f.abs(OUTPUT_DIR)), "{saved}");
    assert_eq!(std::fs::read_to_string(saved).unwrap().len(), 40_000);
}

#[test]
fn background_commands_run_detached_and_stop_on_request() {
    let f = fixture();
    let started = f.ok(
        "Bash",
        json!({"command": "echo ready; sleep 30", "run_in_background": true}),
    );
    let prefix = "Command running in background with ID: bash_1. Output is being written to: ";
    assert!(started.starts_with(prefix), "{started}");
    let output = &started[prefix.len()..];
    assert!(output.starts_with(&f.abs(OUTPUT_DIR)), "{output}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(output).unwrap_or_default() != "ready\n" {
        assert!(std::time::Instant::now() < deadline, "no output");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        f.ok("KillShell", json!({"shell_id": "bash_1"})),
        "Successfully killed shell: bash_1 (echo ready; sleep 30)"
    );
    assert_eq!(
        f.err("KillShell", json!({"shell_id": "bash_1"})),
        "No shell found with ID: bash_1"
    );
}

// NotebookEdit.

#[test]
fn notebook_edit_needs_a_read_and_rewrites_the_cell() {
    let f = fixture();
    let notebook = json!({
        "cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": 3}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5
    });
    f.write("n.ipynb", serde_json::to_vec(&notebook).unwrap());
    let n = f.abs("n.ipynb");
    let edit = json!({"notebook_path": n, "cell_id": "c1", "new_source": "x = 2"});
    assert_eq!(
        f.err("NotebookEdit", edit.clone()),
        wrapped("File has not been read yet. Read it first before writing to it.")
    );
    f.read("n.ipynb");
    assert_eq!(f.ok("NotebookEdit", edit), "Updated cell c1 with x = 2");
    let saved: Value = serde_json::from_str(&f.content("n.ipynb")).unwrap();
    assert_eq!(saved["cells"][0]["source"], "x = 2");
    assert_eq!(saved["cells"][0]["execution_count"], Value::Null);
    assert_eq!(
        f.err(
            "NotebookEdit",
            json!({"notebook_path": f.abs("a.txt"), "new_source": "x"})
        ),
        wrapped(
            "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool."
        )
    );
    assert_eq!(
        f.err(
            "NotebookEdit",
            json!({"notebook_path": n, "new_source": "x", "edit_mode": "insert"})
        ),
        wrapped("Cell type is required when using edit_mode=insert.")
    );
    assert_eq!(
        f.err(
            "NotebookEdit",
            json!({"notebook_path": f.abs("gone.ipynb"), "cell_id": "a", "new_source": "x"})
        ),
        wrapped("Notebook file does not exist.")
    );
}

// The envelope.

#[test]
fn schema_violations_are_worded_like_claude_codes() {
    let f = fixture();
    assert_eq!(
        f.err("Read", json!({})),
        "<tool_use_error>InputValidationError: Read failed due to the following issue:\nThe required parameter `file_path` is missing</tool_use_error>"
    );
    assert_eq!(
        f.err("Read", json!({"file_path": 5})),
        "<tool_use_error>InputValidationError: Read failed due to the following issue:\nThe parameter `file_path` type is expected as `string` but provided as `number`</tool_use_error>"
    );
    // JSON has one number type, and Claude Code's messages name it so,
    // for a parameter that takes whole numbers too.
    assert_eq!(
        f.err("Read", json!({"file_path": "/x", "offset": "5"})),
        "<tool_use_error>InputValidationError: Read failed due to the following issue:\nThe parameter `offset` type is expected as `number` but provided as `string`</tool_use_error>"
    );
    assert_eq!(
        f.err("Bash", json!({"command": "true", "run_in_background": 1})),
        "<tool_use_error>InputValidationError: Bash failed due to the following issue:\nThe parameter `run_in_background` type is expected as `boolean` but provided as `number`</tool_use_error>"
    );
    assert_eq!(
        f.err(
            "Edit",
            json!({"file_path": "/x", "old_string": "a", "new_string": "b", "bogus": 1})
        ),
        "<tool_use_error>InputValidationError: Edit failed due to the following issue:\nAn unexpected parameter `bogus` was provided</tool_use_error>"
    );
    assert_eq!(
        f.err("Write", json!({})),
        "<tool_use_error>InputValidationError: Write failed due to the following issues:\nThe required parameter `file_path` is missing\nThe required parameter `content` is missing</tool_use_error>"
    );
    assert_eq!(
        f.err("Nope", json!({})),
        "<tool_use_error>Error: No such tool available: Nope</tool_use_error>"
    );
}

#[test]
fn every_tool_is_offered_with_a_title_and_truthful_hints() {
    let names: Vec<_> = ClaudeCodeSurface
        .tools()
        .iter()
        .map(|tool| tool.name())
        .collect();
    assert_eq!(
        names,
        [
            "Read",
            "Glob",
            "Grep",
            "Write",
            "Edit",
            "MultiEdit",
            "NotebookEdit",
            "Bash",
            "KillShell",
            "BashOutput",
            "TaskOutput",
            "TaskStop",
            "LSP"
        ]
    );
    for tool in ClaudeCodeSurface.tools() {
        let hints = tool.spec().hints();
        let reads = matches!(
            tool.name(),
            "Read" | "Glob" | "Grep" | "BashOutput" | "TaskOutput" | "LSP"
        );
        // Only LSP needs the language servers (`--lsp`).
        assert_eq!(tool.spec().needs_lsp(), tool.name() == "LSP");
        assert_eq!(hints.read_only, reads, "{}", tool.name());
        assert_eq!(hints.open_world, tool.name() == "Bash", "{}", tool.name());
    }
    assert!(Path::new(OUTPUT_DIR).starts_with(".agent-tools"));
}

// The remaining refusals.

fn small_fixture(max_file_bytes: u64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::builder(dir.path())
        .max_file_bytes(max_file_bytes)
        .build()
        .unwrap();
    let tools = AgentTools::with_surface(config, ClaudeCodeSurface).unwrap();
    Fixture { dir, tools }
}

#[test]
fn files_over_the_limit_are_refused_in_claude_codes_words() {
    let f = small_fixture(1024);
    f.write("big.txt", "x\n".repeat(1000));
    assert_eq!(
        f.err(
            "Edit",
            json!({"file_path": f.abs("big.txt"), "old_string": "x", "new_string": "y"})
        ),
        wrapped("File is too large to edit (2KB). Maximum editable file size is 1KB.")
    );
    f.write("big.png", vec![1u8; 2000]);
    assert_eq!(
        f.err("Read", json!({"file_path": f.abs("big.png")})),
        format!(
            "Image file {} is 2KB, over the 1KB this server reads at once.",
            f.abs("big.png")
        )
    );
}

#[test]
fn edits_refuse_files_that_are_not_utf8() {
    let f = fixture();
    f.write("latin1.txt", b"caf\xe9\n");
    f.read("latin1.txt");
    assert_eq!(
        f.err(
            "Edit",
            json!({"file_path": f.abs("latin1.txt"), "old_string": "caf", "new_string": "tea"})
        ),
        wrapped(
            "This tool edits UTF-8 text files only; the file is not valid UTF-8 (or is UTF-16). Replace it whole with Write instead."
        )
    );
    assert_eq!(
        std::fs::read(f.dir.path().join("latin1.txt")).unwrap(),
        b"caf\xe9\n"
    );
}

#[test]
fn a_notebook_too_big_to_show_says_how_to_read_it() {
    let f = fixture();
    let cells: Vec<Value> = (0..40)
        .map(|n| json!({"cell_type": "code", "id": format!("c{n}"), "metadata": {}, "source": "y".repeat(8000), "outputs": []}))
        .collect();
    let notebook = json!({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5});
    f.write("big.ipynb", serde_json::to_vec(&notebook).unwrap());
    let text = f.err("Read", json!({"file_path": f.abs("big.ipynb")}));
    assert!(
        text.starts_with("<tool_use_error>Notebook content (")
            && text.contains("exceeds maximum allowed size (256KB). Use Bash with jq to read specific portions:\n  cat \""),
        "{text}"
    );
}

#[test]
fn bash_timeouts_say_so_and_finished_background_commands_report_their_exit() {
    let f = fixture();
    let text = f.err(
        "Bash",
        json!({"command": "echo before; sleep 20", "timeout": 300}),
    );
    assert!(
        text.starts_with("before\n<error>Command timed out after "),
        "{text}"
    );
    assert!(text.ends_with(" ms and was stopped</error>"), "{text}");
    // The reaper records the exit shortly after the shell ends; a try that
    // came too early stopped the command instead, and the next one waits
    // longer.
    for attempt in 1..=10u64 {
        f.ok(
            "Bash",
            json!({"command": "exit 4", "run_in_background": true}),
        );
        std::thread::sleep(Duration::from_millis(100 * attempt));
        let id = format!("bash_{attempt}");
        let answer = f.ok("KillShell", json!({"shell_id": id}));
        if answer.starts_with(&format!("Shell {id} had already finished")) {
            assert_eq!(
                answer,
                format!(
                    "Shell {id} had already finished (exit code 4); whatever it left running was stopped."
                )
            );
            return;
        }
    }
    panic!("no background command was seen to finish");
}

#[test]
fn a_session_runs_a_bounded_number_of_background_commands() {
    let f = fixture();
    for _ in 0..MAX_BACKGROUND_JOBS {
        f.ok(
            "Bash",
            json!({"command": "sleep 30", "run_in_background": true}),
        );
    }
    assert_eq!(
        f.err(
            "Bash",
            json!({"command": "sleep 30", "run_in_background": true})
        ),
        "32 background commands are already running in this session; stop one with KillShell first."
    );
}
