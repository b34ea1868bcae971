//! End-to-end: write_file, edit_file and multi_edit through `AgentTools::call`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::facade;
use agent_tools_test_support::tree;

use std::sync::Arc;

use facade::{Sandbox, fail, fail_with, ok};
use serde_json::json;

// ---------------------------------------------------------------- write_file

#[test]
fn write_file_creates_with_exact_bytes_and_reports_the_count() {
    let sb = Sandbox::new();
    let tools = sb.tools();
    let text = ok(
        &tools,
        "write_file",
        json!({"path": "new.txt", "content": "no newline"}),
    );
    insta::assert_snapshot!(text, @"created new.txt (10 bytes)");
    assert_eq!(sb.read("new.txt"), b"no newline");

    // Multi-byte characters are counted in bytes, and CRLF is kept as given.
    let text = ok(
        &tools,
        "write_file",
        json!({"path": "dir-less.txt", "content": "é\r\n"}),
    );
    assert_eq!(text, "created dir-less.txt (4 bytes)");
    assert_eq!(sb.read("dir-less.txt"), "é\r\n".as_bytes());
}

#[test]
fn write_file_overwrites_and_says_so() {
    let sb = Sandbox::new();
    sb.write("a.txt", "old content\n");
    let tools = sb.tools();
    let text = ok(
        &tools,
        "write_file",
        json!({"path": "a.txt", "content": "x"}),
    );
    insta::assert_snapshot!(text, @"overwrote a.txt (1 byte)");
    assert_eq!(sb.read("a.txt"), b"x");

    let text = ok(
        &tools,
        "write_file",
        json!({"path": "a.txt", "content": ""}),
    );
    assert_eq!(text, "overwrote a.txt (0 bytes)");
    assert_eq!(sb.read("a.txt"), b"");
}

#[test]
fn write_file_into_a_subdirectory_and_by_absolute_path_inside() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("src")).unwrap();
    let tools = sb.tools();
    let abs = sb.path("src/lib.rs");
    let text = ok(
        &tools,
        "write_file",
        json!({"path": abs.to_str().unwrap(), "content": "pub fn f() {}\n"}),
    );
    assert_eq!(text, "created src/lib.rs (14 bytes)");
    assert_eq!(sb.read("src/lib.rs"), b"pub fn f() {}\n");
}

#[test]
fn write_file_with_a_missing_parent_is_not_found_and_creates_nothing() {
    let sb = Sandbox::new();
    let tools = sb.tools();
    let message = fail_with(
        &tools,
        "write_file",
        json!({"path": "missing/dir/f.txt", "content": "x"}),
        "not_found",
    );
    assert!(message.contains("missing/dir"), "{message}");
    assert!(tree::snapshot(&sb.root).is_empty());
}

#[test]
fn write_file_onto_a_directory_is_not_a_file() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("d")).unwrap();
    let tools = sb.tools();
    fail_with(
        &tools,
        "write_file",
        json!({"path": "d", "content": "x"}),
        "not_a_file",
    );
    fail_with(
        &tools,
        "write_file",
        json!({"path": ".", "content": "x"}),
        "not_a_file",
    );
    assert!(sb.path("d").is_dir());
    assert_eq!(tree::snapshot(&sb.root).len(), 1);
}

#[test]
fn write_file_never_writes_outside_the_workspace() {
    let sb = Sandbox::new();
    let outside = sb.outside();
    std::fs::create_dir(outside.join("elsewhere")).unwrap();
    std::fs::write(outside.join("victim.txt"), "keep me").unwrap();
    std::os::unix::fs::symlink(outside.join("elsewhere"), sb.path("link-dir")).unwrap();
    std::os::unix::fs::symlink(outside.join("victim.txt"), sb.path("link-file")).unwrap();
    std::os::unix::fs::symlink("../victim.txt", sb.path("rel-link")).unwrap();
    let before_outside = tree::snapshot(&outside);
    let tools = sb.tools();

    let victim = outside.join("victim.txt");
    let cases = [
        "../x.txt".to_string(),
        "../victim.txt".to_string(),
        "sub/../../x.txt".to_string(),
        victim.to_str().unwrap().to_string(),
        outside.join("abs-new.txt").to_str().unwrap().to_string(),
        "link-dir/x.txt".to_string(),
        "link-file".to_string(),
        "rel-link".to_string(),
    ];
    for path in cases {
        let message = fail_with(
            &tools,
            "write_file",
            json!({"path": path, "content": "pwned"}),
            "path_escape",
        );
        assert!(!message.is_empty());
    }
    tree::assert_same_tree(&before_outside, &tree::snapshot(&outside), "outside");
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
}

// ---------------------------------------------------------------- edit_file

#[test]
fn edit_file_replaces_one_exact_unique_occurrence() {
    let sb = Sandbox::new();
    sb.write("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    let tools = sb.tools();
    let text = ok(
        &tools,
        "edit_file",
        json!({"path": "src/main.rs", "old_string": "\"hi\"", "new_string": "\"bye\""}),
    );
    insta::assert_snapshot!(text, @"edited src/main.rs: 1 replacement at line 2");
    assert_eq!(
        sb.read_string("src/main.rs"),
        "fn main() {\n    println!(\"bye\");\n}\n"
    );
}

#[test]
fn edit_file_replace_all_replaces_every_occurrence() {
    let sb = Sandbox::new();
    sb.write("a.txt", "foo bar foo\nfoo\n");
    let tools = sb.tools();
    let text = ok(
        &tools,
        "edit_file",
        json!({"path": "a.txt", "old_string": "foo", "new_string": "qux", "replace_all": true}),
    );
    insta::assert_snapshot!(text, @"edited a.txt: 3 replacements at lines 1, 1, 2");
    assert_eq!(sb.read_string("a.txt"), "qux bar qux\nqux\n");
}

#[test]
fn edit_file_ambiguous_match_changes_nothing() {
    let sb = Sandbox::new();
    sb.write("a.txt", "x = 1\ny = 2\nx = 1\n");
    let tools = sb.tools();
    let message = fail_with(
        &tools,
        "edit_file",
        json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 3"}),
        "ambiguous_match",
    );
    assert!(message.contains('2'), "should say how many: {message}");
    assert_eq!(sb.read_string("a.txt"), "x = 1\ny = 2\nx = 1\n");
}

#[test]
fn edit_file_no_match_names_the_closest_region() {
    let sb = Sandbox::new();
    let body = "fn alpha() {\n    let total = compute(1, 2);\n    total\n}\n\nfn beta() {}\n";
    sb.write("lib.rs", body);
    let tools = sb.tools();
    let message = fail_with(
        &tools,
        "edit_file",
        json!({
            "path": "lib.rs",
            "old_string": "    let total = compute(1, 3);\n    total",
            "new_string": "    42"
        }),
        "no_match",
    );
    assert!(message.contains("lib.rs"), "{message}");
    // The hint points at lines 2-3, where the almost-identical text is.
    assert!(message.contains("compute(1, 2)"), "{message}");
    assert!(
        message.contains("The closest region of the file:\n- lines 2-3, 96% similar"),
        "{message}"
    );
    assert_eq!(sb.read_string("lib.rs"), body);
}

#[test]
fn edit_file_identical_strings_are_invalid_input() {
    let sb = Sandbox::new();
    sb.write("a.txt", "same\n");
    let tools = sb.tools();
    fail_with(
        &tools,
        "edit_file",
        json!({"path": "a.txt", "old_string": "same", "new_string": "same"}),
        "invalid_input",
    );
    assert_eq!(sb.read_string("a.txt"), "same\n");
}

#[test]
fn edit_file_discloses_a_whitespace_tolerant_match() {
    let sb = Sandbox::new();
    sb.write(
        "a.py",
        "def f():\n    if x:\n        return 1\n    return 2\n",
    );
    let tools = sb.tools();
    // Indented by two spaces instead of four / eight: no exact match.
    let text = ok(
        &tools,
        "edit_file",
        json!({
            "path": "a.py",
            "old_string": "  if x:\n      return 1",
            "new_string": "  if y:\n      return 10"
        }),
    );
    insta::assert_snapshot!(
        text,
        @r"
    edited a.py: 1 replacement at lines 2-3, matched tolerantly (old_string did not match exactly: its base indentation is 2 columns where the file's block has 4); the file's lines were, and now are:
    -     if x:
    -         return 1
    +     if y:
    +         return 10
    "
    );
    // The replacement takes the file's indentation.
    assert_eq!(
        sb.read_string("a.py"),
        "def f():\n    if y:\n        return 10\n    return 2\n"
    );
}

#[test]
fn edit_file_keeps_crlf_line_endings() {
    let sb = Sandbox::new();
    sb.write("w.txt", "one\r\ntwo\r\nthree\r\n");
    let tools = sb.tools();
    ok(
        &tools,
        "edit_file",
        json!({"path": "w.txt", "old_string": "two\nthree", "new_string": "2\n2.5\n3"}),
    );
    assert_eq!(sb.read("w.txt"), b"one\r\n2\r\n2.5\r\n3\r\n");
}

#[test]
fn edit_file_keeps_the_utf8_bom() {
    let sb = Sandbox::new();
    sb.write("b.txt", "\u{feff}hello world\n");
    let tools = sb.tools();
    ok(
        &tools,
        "edit_file",
        json!({"path": "b.txt", "old_string": "hello", "new_string": "goodbye"}),
    );
    assert_eq!(sb.read("b.txt"), "\u{feff}goodbye world\n".as_bytes());
}

#[test]
fn edit_file_refuses_utf16_and_binary_files() {
    let sb = Sandbox::new();
    let mut utf16 = vec![0xff, 0xfe];
    for unit in "hello\n".encode_utf16() {
        utf16.extend_from_slice(&unit.to_le_bytes());
    }
    sb.write("u16.txt", &utf16);
    sb.write("bin.dat", b"abc\0def hello\n");
    let tools = sb.tools();
    for path in ["u16.txt", "bin.dat"] {
        fail_with(
            &tools,
            "edit_file",
            json!({"path": path, "old_string": "hello", "new_string": "bye"}),
            "is_binary",
        );
    }
    assert_eq!(sb.read("u16.txt"), utf16);
    assert_eq!(sb.read("bin.dat"), b"abc\0def hello\n");
}

#[test]
fn edit_file_refuses_a_file_over_max_file_bytes() {
    let sb = Sandbox::new();
    let big = "x".repeat(99) + "\n";
    sb.write("big.txt", &big);
    sb.write("small.txt", "x\n");
    let tools = sb.tools_with(|b| b.max_file_bytes(64));
    fail_with(
        &tools,
        "edit_file",
        json!({"path": "big.txt", "old_string": "xx", "new_string": "y", "replace_all": true}),
        "too_large",
    );
    fail_with(
        &tools,
        "multi_edit",
        json!({"path": "big.txt", "edits": [{"old_string": "x\n", "new_string": "y\n"}]}),
        "too_large",
    );
    assert_eq!(sb.read_string("big.txt"), big);
    ok(
        &tools,
        "edit_file",
        json!({"path": "small.txt", "old_string": "x", "new_string": "y"}),
    );
}

#[test]
fn edit_file_missing_file_is_not_found_and_escape_is_refused() {
    let sb = Sandbox::new();
    std::fs::write(sb.outside().join("o.txt"), "outside\n").unwrap();
    let tools = sb.tools();
    fail_with(
        &tools,
        "edit_file",
        json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
        "not_found",
    );
    assert!(!sb.exists("nope.txt"));
    fail_with(
        &tools,
        "edit_file",
        json!({"path": "../o.txt", "old_string": "outside", "new_string": "pwned"}),
        "path_escape",
    );
    assert_eq!(
        std::fs::read_to_string(sb.outside().join("o.txt")).unwrap(),
        "outside\n"
    );
}

// ---------------------------------------------------------------- multi_edit

#[test]
fn multi_edit_applies_every_edit_in_order() {
    let sb = Sandbox::new();
    sb.write("m.txt", "alpha\nbeta\ngamma\n");
    let tools = sb.tools();
    let text = ok(
        &tools,
        "multi_edit",
        json!({"path": "m.txt", "edits": [
            {"old_string": "alpha", "new_string": "ALPHA"},
            // Sees the result of edit 1.
            {"old_string": "ALPHA\nbeta", "new_string": "ALPHA\nBETA"},
            {"old_string": "a", "new_string": "4", "replace_all": true}
        ]}),
    );
    assert!(
        text.starts_with("edited m.txt: 3 edits applied\n"),
        "{text}"
    );
    assert!(text.contains("edit 3 of 3: "), "{text}");
    assert_eq!(sb.read_string("m.txt"), "ALPHA\nBETA\ng4mm4\n");
}

#[test]
fn multi_edit_failing_edit_3_of_4_writes_nothing() {
    let sb = Sandbox::new();
    let body = "one\ntwo\nthree\nfour\n";
    sb.write("m.txt", body);
    let before = tree::snapshot(&sb.root);
    let tools = sb.tools();
    let message = fail_with(
        &tools,
        "multi_edit",
        json!({"path": "m.txt", "edits": [
            {"old_string": "one", "new_string": "1"},
            {"old_string": "two", "new_string": "2"},
            {"old_string": "no such text anywhere", "new_string": "3"},
            {"old_string": "four", "new_string": "4"}
        ]}),
        "no_match",
    );
    assert!(message.starts_with("edit 3 of 4:"), "{message}");
    tree::assert_same_tree(
        &before,
        &tree::snapshot(&sb.root),
        "after a failed multi_edit",
    );

    // An ambiguous edit in the middle: same all-or-nothing.
    let (code, message, _) = fail(
        &tools,
        "multi_edit",
        json!({"path": "m.txt", "edits": [
            {"old_string": "one", "new_string": "x"},
            {"old_string": "x", "new_string": "y"},
            {"old_string": "o", "new_string": "0"},
            {"old_string": "four", "new_string": "4"}
        ]}),
    );
    assert_eq!(code, "ambiguous_match", "{message}");
    assert!(message.starts_with("edit 3 of 4:"), "{message}");
    tree::assert_same_tree(
        &before,
        &tree::snapshot(&sb.root),
        "after a failed multi_edit",
    );
}

#[test]
fn multi_edit_with_no_edits_is_invalid_input() {
    let sb = Sandbox::new();
    sb.write("m.txt", "x\n");
    let tools = sb.tools();
    fail_with(
        &tools,
        "multi_edit",
        json!({"path": "m.txt", "edits": []}),
        "invalid_input",
    );
    fail_with(
        &tools,
        "multi_edit",
        json!({"path": "m.txt", "edits": [{"old_string": "x", "new_string": "x"}]}),
        "invalid_input",
    );
    assert_eq!(sb.read_string("m.txt"), "x\n");
}

#[test]
fn multi_edit_schema_requires_at_least_one_edit() {
    let sb = Sandbox::new();
    let tools = sb.tools();
    let def = tools
        .list_tools()
        .into_iter()
        .find(|t| t.name() == "multi_edit")
        .unwrap();
    let schema = serde_json::Value::Object((**def.input_schema()).clone());
    assert_eq!(schema["properties"]["edits"]["minItems"], 1, "{schema}");
}

// ---------------------------------------------------------------- concurrency

#[test]
fn concurrent_edits_of_one_file_lose_no_update() {
    let sb = Sandbox::new();
    let markers: Vec<String> = (0..16).map(|i| format!("<marker-{i:02}>")).collect();
    sb.write("shared.txt", markers.join("\n") + "\n");
    let tools = Arc::new(sb.tools());
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let tools = tools.clone();
            std::thread::spawn(move || {
                let result = tools.call(
                    "edit_file",
                    json!({
                        "path": "shared.txt",
                        "old_string": format!("<marker-{i:02}>"),
                        "new_string": format!("done by thread {i}")
                    }),
                );
                assert!(!result.is_error, "thread {i}: {}", result.text);
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let expected: Vec<String> = (0..16).map(|i| format!("done by thread {i}")).collect();
    assert_eq!(sb.read_string("shared.txt"), expected.join("\n") + "\n");
    // No temporary file left beside it.
    assert_eq!(tree::snapshot(&sb.root).len(), 1);
}

#[test]
fn concurrent_writes_and_edits_of_different_files() {
    let sb = Sandbox::new();
    for i in 0..16 {
        sb.write(&format!("f{i}.txt"), format!("value {i}\n"));
    }
    let tools = Arc::new(sb.tools());
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let tools = tools.clone();
            std::thread::spawn(move || {
                for round in 0..10 {
                    let result = tools.call(
                        "edit_file",
                        json!({
                            "path": format!("f{i}.txt"),
                            "old_string": format!("value {i}\n"),
                            "new_string": format!("value {i}\nround {round}\n"),
                        }),
                    );
                    assert!(!result.is_error, "{}", result.text);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    for i in 0..16 {
        let text = sb.read_string(&format!("f{i}.txt"));
        let expected: String = std::iter::once(format!("value {i}\n"))
            .chain((0..10).rev().map(|r| format!("round {r}\n")))
            .collect();
        assert_eq!(text, expected);
    }
}
