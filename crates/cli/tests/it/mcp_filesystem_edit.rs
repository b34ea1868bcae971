//! `edit_file`, `edit_files` and `grep_files` of the filesystem surface end
//! to end over MCP stdio: every behaviour and worked example of seed 001
//! for them, with several allowed directories, one of them read-only.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::filesystem_calls;
use crate::mcp_client;
use agent_tools_test_support::tree;

use std::path::{Path, PathBuf};

use mcp_client::McpClient;
use serde_json::{Value, json};

use filesystem_calls::{filesystem, ok, ok1, p, rpc_error};
use tree::sandbox;

/// Three allowed directories: the first (read-write), a second
/// read-write one and a read-only one.
struct Roots {
    _outer: tempfile::TempDir,
    first: PathBuf,
    second: PathBuf,
    frozen: PathBuf,
}

fn three_roots() -> (Roots, McpClient) {
    let (outer, first) = sandbox();
    let second = outer.path().join("second");
    let frozen = outer.path().join("frozen");
    std::fs::create_dir_all(&second).unwrap();
    std::fs::create_dir_all(&frozen).unwrap();
    let second = std::fs::canonicalize(second).unwrap();
    let frozen = std::fs::canonicalize(frozen).unwrap();
    let client = filesystem(
        &first,
        &["--root", &p(&second), "--read-only-root", &p(&frozen)],
    );
    (
        Roots {
            _outer: outer,
            first,
            second,
            frozen,
        },
        client,
    )
}

fn edit(path: &Path, edits: Value) -> Value {
    json!({"path": p(path), "edits": edits})
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn the_new_tools_are_listed_with_truthful_hints() {
    let (_outer, root) = sandbox();
    let mut client = filesystem(&root, &[]);
    let listed = client.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"))
            .clone()
    };
    for (name, read_only) in [
        ("edit_file", false),
        ("edit_files", false),
        ("grep_files", true),
    ] {
        let tool = find(name);
        assert_eq!(
            tool["annotations"]["readOnlyHint"],
            json!(read_only),
            "{tool}"
        );
        assert_eq!(tool["annotations"]["openWorldHint"], json!(false), "{tool}");
    }
    let edit = find("edit_file");
    let item = &edit["inputSchema"]["properties"]["edits"]["items"]["properties"];
    for field in ["oldText", "newText", "limit", "isRegex", "caseInsensitive"] {
        assert!(item[field].is_object(), "{field}: {edit}");
    }
    assert!(edit["inputSchema"]["properties"]["dryRun"].is_object());
    let grep = find("grep_files");
    for field in [
        "regex",
        "directory",
        "globs",
        "excludeGlobs",
        "caseInsensitive",
        "contextLines",
        "maxResults",
    ] {
        assert!(
            grep["inputSchema"]["properties"][field].is_object(),
            "{field}"
        );
    }
}

#[test]
fn edit_file_replaces_a_unique_literal() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("a.txt");
    std::fs::write(&file, "alpha\nbeta\ngamma\n").unwrap();
    assert_eq!(
        ok1(
            &mut client,
            "edit_file",
            edit(&file, json!([{"oldText": "beta", "newText": "BETA"}]))
        ),
        format!("Successfully edited {}", p(&file))
    );
    assert_eq!(read(&file), "alpha\nBETA\ngamma\n");
    // newText defaults to "": the text is deleted.
    ok1(
        &mut client,
        "edit_file",
        edit(&file, json!([{"oldText": "BETA\n"}])),
    );
    assert_eq!(read(&file), "alpha\ngamma\n");
    // A relative path is taken from the first root.
    ok1(
        &mut client,
        "edit_file",
        json!({"path": "a.txt", "edits": [{"oldText": "gamma", "newText": "g"}]}),
    );
    assert_eq!(read(&file), "alpha\ng\n");
}

#[test]
fn the_uniqueness_guard_refuses_and_limit_lifts_it() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("dup.txt");
    std::fs::write(&file, "x = 1\ny = 2\nx = 1\nx = 1\n").unwrap();
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(&file, json!([{"oldText": "x = 1", "newText": "x = 9"}])),
    );
    assert_eq!(code, -32603, "{message}");
    assert!(
        message.contains("oldText is not unique: found 3 occurrences"),
        "{message}"
    );
    assert!(message.contains("line 1, line 3, line 4"), "{message}");
    assert_eq!(read(&file), "x = 1\ny = 2\nx = 1\nx = 1\n");
    // limit: N replaces the first N; limit: 0 all of them.
    ok1(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "x = 1", "newText": "x = 2", "limit": 2}]),
        ),
    );
    assert_eq!(read(&file), "x = 2\ny = 2\nx = 2\nx = 1\n");
    ok1(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "= 2", "newText": "= 0", "limit": 0}]),
        ),
    );
    assert_eq!(read(&file), "x = 0\ny = 0\nx = 0\nx = 1\n");
    // A literal that is gone now errors rather than corrupting other text.
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "= 2", "newText": "= 0", "limit": 0}]),
        ),
    );
    assert_eq!(code, -32603);
    assert!(message.contains("oldText not found"), "{message}");
}

#[test]
fn whitespace_normalized_match_keeps_the_file_indentation() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("code.py");
    std::fs::write(
        &file,
        "class A:\n    def f(self):\n        if ok:\n            run()\n        return 1\n",
    )
    .unwrap();
    // Copied from a context with another indentation.
    ok1(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{
                "oldText": "if ok:\n    run()",
                "newText": "if ok:\n    prepare()\n    run()"
            }]),
        ),
    );
    assert_eq!(
        read(&file),
        "class A:\n    def f(self):\n        if ok:\n            prepare()\n            run()\n        return 1\n"
    );
}

#[test]
fn whitespace_normalized_matches_must_be_unique_too() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("twice.py");
    let text = "def a():\n    if ok:\n        run()\n\ndef b():\n  if ok:\n      run()\n";
    std::fs::write(&file, text).unwrap();
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "if ok:\n    run()", "newText": "pass"}]),
        ),
    );
    assert_eq!(code, -32603, "{message}");
    assert!(
        message.contains("oldText is not unique: found 2 whitespace-normalized matches"),
        "{message}"
    );
    assert_eq!(read(&file), text);
    // With limit above 1 there is no fallback at all.
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "if ok:\n    run()", "newText": "pass", "limit": 0}]),
        ),
    );
    assert_eq!(code, -32603);
    assert!(message.contains("oldText not found"), "{message}");
    // One normalized match, but a near miss at the depth oldText was
    // written at: the edit could land in the wrong place, so it is refused.
    let near = roots.first.join("near.py");
    let text = "def a():\n    total = compute(x, y)\n    return total\n\ndef b():\n        total = compute(x, z)\n        return total\n";
    std::fs::write(&near, text).unwrap();
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &near,
            json!([{
                "oldText": "        total = compute(x, y)\n        return total",
                "newText": "        return compute(x, y)"
            }]),
        ),
    );
    assert_eq!(code, -32603);
    assert!(
        message.contains("could land in the wrong place"),
        "{message}"
    );
    assert_eq!(read(&near), text);
}

#[test]
fn regex_edits_follow_the_seed_examples() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("lines.txt");
    std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
    // `^(.*)$` wraps the first line; with limit 0 every line.
    ok1(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "^(.*)$", "newText": "[$1]", "isRegex": true}]),
        ),
    );
    assert_eq!(read(&file), "[one]\ntwo\nthree\n");
    ok1(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "^(\\w+)$", "newText": "<\\1>", "isRegex": true, "limit": 0}]),
        ),
    );
    assert_eq!(read(&file), "[one]\n<two>\n<three>\n");
    // Wrap a line in quotes: `(.*)` with `"\1"` or `"$1"`.
    let quoted = roots.first.join("quote.txt");
    std::fs::write(&quoted, "hello\n").unwrap();
    ok1(
        &mut client,
        "edit_file",
        edit(
            &quoted,
            json!([{"oldText": "(.*)", "newText": "\"\\1\"", "isRegex": true}]),
        ),
    );
    assert_eq!(read(&quoted), "\"hello\"\n");
    // \0, $0 and $& are the whole match; $$ a literal dollar.
    ok1(
        &mut client,
        "edit_file",
        edit(
            &quoted,
            json!([{"oldText": "hel+o", "newText": "\\0 $0 $& $$5", "isRegex": true}]),
        ),
    );
    assert_eq!(read(&quoted), "\"hello hello hello $5\"\n");
    // `.` does not cross a line break.
    let crossing = roots.first.join("cross.txt");
    std::fs::write(&crossing, "a\nb\n").unwrap();
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &crossing,
            json!([{"oldText": "a.b", "newText": "x", "isRegex": true}]),
        ),
    );
    assert_eq!(code, -32603);
    assert!(message.contains("pattern not found"), "{message}");
    // ECMAScript syntax the Rust dialect lacks: lookbehind.
    ok1(
        &mut client,
        "edit_file",
        edit(
            &crossing,
            json!([{"oldText": "(?<=a\\n)b", "newText": "B", "isRegex": true}]),
        ),
    );
    assert_eq!(read(&crossing), "a\nB\n");
}

#[test]
fn a_reference_to_a_missing_group_is_a_hard_error() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("g.txt");
    std::fs::write(&file, "value\n").unwrap();
    for new_text in ["\\1", "$1"] {
        let (code, message) = rpc_error(
            &mut client,
            "edit_file",
            edit(
                &file,
                json!([{"oldText": ".*", "newText": new_text, "isRegex": true}]),
            ),
        );
        assert_eq!(code, -32603, "{message}");
        assert!(
            message.contains(&format!("capture group 1 ({new_text})")),
            "{message}"
        );
    }
    assert_eq!(read(&file), "value\n");
}

#[test]
fn invalid_and_exploding_regexes_are_refused() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("r.txt");
    std::fs::write(&file, format!("{}!\n", "a".repeat(40))).unwrap();
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "(unclosed", "newText": "", "isRegex": true}]),
        ),
    );
    assert_eq!(code, -32603);
    assert!(message.contains("invalid regex"), "{message}");
    // Catastrophic backtracking on 40 characters would never finish; the
    // shape is refused before matching.
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "^(a+)+$", "newText": "", "isRegex": true}]),
        ),
    );
    assert_eq!(code, -32603);
    assert!(message.contains("exponential"), "{message}");
    assert_eq!(read(&file), format!("{}!\n", "a".repeat(40)));
}

#[test]
fn the_review_regexes_answer_or_are_refused_by_the_step_budget() {
    let (roots, mut client) = three_roots();
    let dir = roots.first.join("budget");
    std::fs::create_dir_all(&dir).unwrap();
    let bundle: String = (0..4000)
        .map(|i| {
            format!(
                "function f{i}(a,b){{var c=a+b;if(c>{}){{return c*2;}}return b;}}",
                i % 97
            )
        })
        .collect();
    std::fs::write(dir.join("bundle.min.js"), format!("/* TODO: */{bundle}\n")).unwrap();
    std::fs::write(dir.join("forty.txt"), format!("{}\n", "a".repeat(40))).unwrap();
    std::fs::write(dir.join("long.txt"), format!("{}\n", "a".repeat(3000))).unwrap();
    let shown = p(&dir);
    // The linear engine answers these at once.
    let grep = |client: &mut McpClient, regex: &str| {
        ok1(
            client,
            "grep_files",
            json!({"regex": regex, "directory": &shown}),
        )
    };
    assert_eq!(grep(&mut client, "if.*return.*TODO"), "[0 matches]\n");
    // (The 3,000-character line is shown cut.)
    let out = grep(&mut client, "(a?){40}a{40}");
    let forty_line = format!("{shown}/forty.txt:1:{}\n", "a".repeat(40));
    assert!(out.starts_with(&forty_line), "{out}");
    assert!(out.contains(&format!("\n{shown}/long.txt:1:aaa")), "{out}");
    assert!(out.ends_with("\n[2 matches]\n"), "{out}");
    // A lookahead needs regress: lines over its step budget are named.
    let out = grep(&mut client, "(?=a*)a*a*a*b");
    assert!(
        out.starts_with("[0 matches]\n[2 path(s) skipped: "),
        "{out}"
    );
    assert!(out.contains("long.txt (1 line(s) not searched"), "{out}");
    assert!(out.contains("step budget"), "{out}");
    // Edits: answered by the linear engine, or refused and left as they were.
    let forty = dir.join("forty.txt");
    ok1(
        &mut client,
        "edit_file",
        edit(
            &forty,
            json!([{"oldText": "(a?){40}a{40}", "newText": "X", "isRegex": true}]),
        ),
    );
    assert_eq!(read(&forty), "X\n");
    let long = dir.join("long.txt");
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &long,
            json!([{"oldText": "(?=a*)a*a*a*b", "newText": "", "isRegex": true}]),
        ),
    );
    assert_eq!(code, -32603);
    assert!(message.contains("step budget"), "{message}");
    assert!(message.contains("nothing was written"), "{message}");
    assert_eq!(read(&long), format!("{}\n", "a".repeat(3000)));
}

#[test]
fn case_insensitive_literal_and_regex() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("c.txt");
    std::fs::write(&file, "Hello World\n").unwrap();
    ok1(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "hello world", "newText": "bye", "caseInsensitive": true}]),
        ),
    );
    assert_eq!(read(&file), "bye\n");
    ok1(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "^B(Y)E$", "newText": "$1", "caseInsensitive": true, "isRegex": true}]),
        ),
    );
    assert_eq!(read(&file), "y\n");
    // Without the flag the case must match.
    let (code, _) = rpc_error(
        &mut client,
        "edit_file",
        edit(&file, json!([{"oldText": "Y", "newText": "z"}])),
    );
    assert_eq!(code, -32603);
}

#[test]
fn edits_apply_in_order_all_or_nothing() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("seq.txt");
    std::fs::write(&file, "a\nb\n").unwrap();
    // The second edit sees the first one's result.
    ok1(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "a", "newText": "c"}, {"oldText": "c\nb", "newText": "d"}]),
        ),
    );
    assert_eq!(read(&file), "d\n");
    // A failing second edit leaves the file untouched.
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "d", "newText": "e"}, {"oldText": "missing", "newText": "x"}]),
        ),
    );
    assert_eq!(code, -32603);
    assert!(
        message.starts_with("edit 2 of 2: oldText not found"),
        "{message}"
    );
    assert_eq!(read(&file), "d\n");
}

#[test]
fn crlf_and_bom_are_kept() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("win.txt");
    std::fs::write(&file, b"\xEF\xBB\xBFone\r\ntwo\r\nthree\r\n").unwrap();
    ok1(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "one\ntwo", "newText": "1\n2\n2b"}]),
        ),
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"\xEF\xBB\xBF1\r\n2\r\n2b\r\nthree\r\n"
    );
    ok1(
        &mut client,
        "edit_file",
        edit(
            &file,
            json!([{"oldText": "^(\\w+)$", "newText": "<$1>", "isRegex": true, "limit": 0}]),
        ),
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"\xEF\xBB\xBF<1>\r\n<2>\r\n<2b>\r\n<three>\r\n"
    );
}

#[test]
fn dry_run_shows_a_diff_and_writes_nothing() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("d.txt");
    std::fs::write(&file, "keep\nold\nkeep\n").unwrap();
    let diff = ok1(
        &mut client,
        "edit_file",
        json!({"path": p(&file), "dryRun": true, "edits": [{"oldText": "old", "newText": "new"}]}),
    );
    let name = p(&file);
    assert!(
        diff.starts_with(&format!("--- {name}\n+++ {name}\n@@ ")),
        "{diff}"
    );
    assert!(diff.contains("\n-old\n+new\n"), "{diff}");
    assert_eq!(read(&file), "keep\nold\nkeep\n");
    // An edit that changes nothing.
    assert_eq!(
        ok1(
            &mut client,
            "edit_file",
            json!({"path": p(&file), "dryRun": true, "edits": [{"oldText": "old", "newText": "old"}]}),
        ),
        "(no changes)"
    );
    // A pattern that matches nothing fails as a real write would.
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        json!({"path": p(&file), "dryRun": true, "edits": [{"oldText": "^zzz", "isRegex": true}]}),
    );
    assert_eq!(code, -32603);
    assert!(message.contains("pattern not found"), "{message}");
    // A missing file: the intended edits are listed.
    let missing = roots.first.join("missing.txt");
    let listed = ok1(
        &mut client,
        "edit_file",
        json!({"path": p(&missing), "dryRun": true, "edits": [
            {"oldText": "a", "newText": "b"},
            {"oldText": "^x$", "newText": "y", "isRegex": true, "limit": 0}
        ]}),
    );
    assert!(listed.contains("does not exist"), "{listed}");
    assert!(
        listed.contains("1. literal, 1 match: \"a\" -> \"b\""),
        "{listed}"
    );
    assert!(
        listed.contains("2. regex, all matches: \"^x$\" -> \"y\""),
        "{listed}"
    );
    assert!(!missing.exists());
}

#[test]
fn read_only_roots_allow_dry_runs_only() {
    let (roots, mut client) = three_roots();
    let file = roots.frozen.join("ro.txt");
    std::fs::write(&file, "frozen\n").unwrap();
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(&file, json!([{"oldText": "frozen", "newText": "thawed"}])),
    );
    assert_eq!(code, -32001, "{message}");
    assert!(message.contains("read-only"), "{message}");
    let diff = ok1(
        &mut client,
        "edit_file",
        json!({"path": p(&file), "dryRun": true, "edits": [{"oldText": "frozen", "newText": "thawed"}]}),
    );
    assert!(diff.contains("-frozen\n+thawed\n"), "{diff}");
    assert_eq!(read(&file), "frozen\n");
    // The second read-write root is edited beneath its own handle.
    let other = roots.second.join("s.txt");
    std::fs::write(&other, "s\n").unwrap();
    ok1(
        &mut client,
        "edit_file",
        edit(&other, json!([{"oldText": "s", "newText": "t"}])),
    );
    assert_eq!(read(&other), "t\n");
}

#[test]
fn edit_file_error_codes() {
    let (roots, mut client) = three_roots();
    let (outer_dir, _) = (roots._outer.path().to_path_buf(), ());
    std::fs::write(outer_dir.join("outside.txt"), "o\n").unwrap();
    let (code, _) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &outer_dir.join("outside.txt"),
            json!([{"oldText": "o", "newText": "p"}]),
        ),
    );
    assert_eq!(code, -32001);
    let (code, _) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &roots.first.join("nope.txt"),
            json!([{"oldText": "o", "newText": "p"}]),
        ),
    );
    assert_eq!(code, -32002);
    for args in [
        json!({"path": p(&roots.first.join("x"))}),
        json!({"path": p(&roots.first.join("x")), "edits": []}),
        json!({"edits": [{"oldText": "a"}]}),
        json!({"path": p(&roots.first.join("x")), "edits": [{"newText": "a"}]}),
    ] {
        let (code, message) = rpc_error(&mut client, "edit_file", args.clone());
        assert_eq!(code, -32602, "{args}: {message}");
    }
    let file = roots.first.join("e.txt");
    std::fs::write(&file, "e\n").unwrap();
    let (code, message) = rpc_error(
        &mut client,
        "edit_file",
        edit(&file, json!([{"oldText": "", "newText": "x"}])),
    );
    assert_eq!(code, -32602, "{message}");
    std::fs::write(roots.first.join("bin"), b"\x00\x01bin").unwrap();
    let (code, _) = rpc_error(
        &mut client,
        "edit_file",
        edit(
            &roots.first.join("bin"),
            json!([{"oldText": "bin", "newText": "x"}]),
        ),
    );
    assert_eq!(code, -32603);
}

#[test]
fn edit_files_expands_globs_and_reports_failures_inline() {
    let (roots, mut client) = three_roots();
    std::fs::create_dir_all(roots.first.join("src/sub")).unwrap();
    std::fs::write(roots.first.join("src/a.rs"), "use old;\n").unwrap();
    std::fs::write(roots.first.join("src/sub/b.rs"), "use old;\n").unwrap();
    std::fs::write(roots.first.join("src/c.txt"), "use old;\n").unwrap();
    std::fs::write(roots.first.join("other.rs"), "nothing here\n").unwrap();
    let items = ok(
        &mut client,
        "edit_files",
        json!({
            "paths": [format!("{}/src/**/*.rs", p(&roots.first)), p(&roots.first.join("other.rs"))],
            "edits": [{"oldText": "old", "newText": "new"}]
        }),
    );
    assert_eq!(
        items,
        [
            format!("Successfully edited {}", p(&roots.first.join("src/a.rs"))),
            format!(
                "Successfully edited {}",
                p(&roots.first.join("src/sub/b.rs"))
            ),
            format!(
                "{}: [error -32603] oldText not found in {}; read the file again and copy the \
                 text to replace exactly",
                p(&roots.first.join("other.rs")),
                p(&roots.first.join("other.rs"))
            ),
        ]
    );
    assert_eq!(read(&roots.first.join("src/sub/b.rs")), "use new;\n");
    assert_eq!(read(&roots.first.join("src/c.txt")), "use old;\n");
    // A relative glob is anchored to the first root.
    let items = ok(
        &mut client,
        "edit_files",
        json!({"paths": ["src/*.txt"], "edits": [{"oldText": "old", "newText": "new"}], "dryRun": true}),
    );
    assert_eq!(items.len(), 1);
    assert!(items[0].contains("-use old;\n+use new;\n"), "{items:?}");
    assert_eq!(read(&roots.first.join("src/c.txt")), "use old;\n");
}

#[test]
fn edit_files_error_codes_and_read_only_roots() {
    let (roots, mut client) = three_roots();
    std::fs::write(roots.frozen.join("f.txt"), "f\n").unwrap();
    let (code, message) = rpc_error(
        &mut client,
        "edit_files",
        json!({"paths": [format!("{}/*.none", p(&roots.first))], "edits": [{"oldText": "a"}]}),
    );
    assert_eq!(code, -32002, "{message}");
    let outside = roots._outer.path().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("x.txt"), "x\n").unwrap();
    let (code, message) = rpc_error(
        &mut client,
        "edit_files",
        json!({"paths": [format!("{}/*.txt", p(&outside))], "edits": [{"oldText": "x"}]}),
    );
    assert_eq!(code, -32001, "{message}");
    let (code, _) = rpc_error(
        &mut client,
        "edit_files",
        json!({"paths": [], "edits": [{"oldText": "x"}]}),
    );
    assert_eq!(code, -32602);
    // Literal paths fail inline: one outside the roots, one missing (a
    // dry run lists the intended edits for it).
    let missing = roots.first.join("new.txt");
    let items = ok(
        &mut client,
        "edit_files",
        json!({
            "paths": [p(&outside.join("x.txt")), p(&missing)],
            "edits": [{"oldText": "x", "newText": "y"}],
            "dryRun": true
        }),
    );
    assert!(
        items[0].starts_with(&format!("{}: [error -32001]", p(&outside.join("x.txt")))),
        "{items:?}"
    );
    assert_eq!(
        items[1],
        format!(
            "{}: the file does not exist; intended edits:\n1. literal, 1 match: \"x\" -> \"y\"\n",
            p(&missing)
        )
    );
    let items = ok(
        &mut client,
        "edit_files",
        json!({"paths": [p(&missing)], "edits": [{"oldText": "x", "newText": "y"}]}),
    );
    assert!(
        items[0].starts_with(&format!("{}: [error -32002]", p(&missing))),
        "{items:?}"
    );
    // In a read-only root: a real edit fails inline with -32001; a dry run
    // previews.
    let glob = format!("{}/*.txt", p(&roots.frozen));
    let items = ok(
        &mut client,
        "edit_files",
        json!({"paths": [&glob], "edits": [{"oldText": "f", "newText": "g"}]}),
    );
    assert_eq!(items.len(), 1);
    assert!(
        items[0].starts_with(&format!(
            "{}: [error -32001]",
            p(&roots.frozen.join("f.txt"))
        )),
        "{items:?}"
    );
    let items = ok(
        &mut client,
        "edit_files",
        json!({"paths": [&glob], "edits": [{"oldText": "f", "newText": "g"}], "dryRun": true}),
    );
    assert!(items[0].contains("-f\n+g\n"), "{items:?}");
    assert_eq!(read(&roots.frozen.join("f.txt")), "f\n");
}

fn grep_tree(root: &Path) {
    std::fs::create_dir_all(root.join("app/sub")).unwrap();
    std::fs::write(
        root.join("app/main.swift"),
        "import UIKit\n// TODO: one\nlet a = 1\nlet b = 2\n// todo: two\n",
    )
    .unwrap();
    std::fs::write(root.join("app/sub/deep.swift"), "// TODO: deep\n").unwrap();
    std::fs::write(root.join("app/notes.md"), "TODO: notes\n").unwrap();
    std::fs::write(root.join("top.swift"), "// TODO: top\n").unwrap();
    let mut binary = b"TODO: binary\n\x00".to_vec();
    binary.extend_from_slice(b"TODO again\n");
    std::fs::write(root.join("app/blob.bin"), binary).unwrap();
}

#[test]
fn grep_files_searches_a_directory_in_grep_style() {
    let (roots, mut client) = three_roots();
    grep_tree(&roots.first);
    let app = p(&roots.first.join("app"));
    let out = ok1(
        &mut client,
        "grep_files",
        json!({"regex": "TODO", "directory": &app}),
    );
    assert_eq!(
        out,
        format!(
            "{app}/main.swift:2:// TODO: one\n{app}/notes.md:1:TODO: notes\n{app}/sub/deep.swift:1:// TODO: deep\n[3 matches]\n"
        )
    );
    // The seed's example: TODO in Swift files under one directory.
    let out = ok1(
        &mut client,
        "grep_files",
        json!({"regex": "TODO", "directory": &app, "globs": ["**/*.swift"]}),
    );
    assert_eq!(
        out,
        format!(
            "{app}/main.swift:2:// TODO: one\n{app}/sub/deep.swift:1:// TODO: deep\n[2 matches]\n"
        )
    );
    // Case-insensitive, and ECMAScript syntax (lookbehind).
    let out = ok1(
        &mut client,
        "grep_files",
        json!({"regex": "(?<=// )todo", "directory": &app, "caseInsensitive": true, "globs": ["*.swift"]}),
    );
    assert_eq!(
        out,
        format!("{app}/main.swift:2:// TODO: one\n{app}/main.swift:5:// todo: two\n[2 matches]\n")
    );
    // excludeGlobs: a name at any depth, or a directory and all under it.
    let out = ok1(
        &mut client,
        "grep_files",
        json!({"regex": "TODO", "directory": &app, "excludeGlobs": ["*.md", "sub"]}),
    );
    assert_eq!(
        out,
        format!("{app}/main.swift:2:// TODO: one\n[1 matches]\n")
    );
    // Nothing found.
    assert_eq!(
        ok1(
            &mut client,
            "grep_files",
            json!({"regex": "absent", "directory": &app}),
        ),
        "[0 matches]\n"
    );
}

#[test]
fn grep_files_context_groups_and_truncation() {
    let (roots, mut client) = three_roots();
    let file = roots.first.join("ctx.txt");
    std::fs::write(&file, "a\nhit 1\nb\nc\nd\ne\nhit 2\nf\n").unwrap();
    let name = p(&file);
    let out = ok1(
        &mut client,
        "grep_files",
        json!({"regex": "^hit", "directory": p(&roots.first), "contextLines": 1}),
    );
    assert_eq!(
        out,
        format!(
            "{name}-1-a\n{name}:2:hit 1\n{name}-3-b\n--\n{name}-6-e\n{name}:7:hit 2\n{name}-8-f\n[2 matches]\n"
        )
    );
    let out = ok1(
        &mut client,
        "grep_files",
        json!({"regex": "^hit", "directory": p(&roots.first), "maxResults": 1}),
    );
    assert!(out.starts_with("[results truncated"), "{out}");
    assert!(
        out.ends_with(&format!("{name}:2:hit 1\n[1 matches]\n")),
        "{out}"
    );
    let (code, _) = rpc_error(
        &mut client,
        "grep_files",
        json!({"regex": "x", "directory": p(&roots.first), "contextLines": 51}),
    );
    assert_eq!(code, -32602);
    let (code, _) = rpc_error(
        &mut client,
        "grep_files",
        json!({"regex": "x", "directory": p(&roots.first), "maxResults": 10001}),
    );
    assert_eq!(code, -32602);
}

#[test]
fn grep_files_relative_globs_without_directory_use_the_first_root() {
    let (roots, mut client) = three_roots();
    grep_tree(&roots.first);
    std::fs::write(roots.second.join("two.swift"), "// TODO: second\n").unwrap();
    std::fs::write(roots.frozen.join("ro.swift"), "// TODO: frozen\n").unwrap();
    let first = p(&roots.first);
    let out = ok1(
        &mut client,
        "grep_files",
        json!({"regex": "TODO", "globs": ["*.swift"]}),
    );
    assert_eq!(
        out,
        format!("{first}/top.swift:1:// TODO: top\n[1 matches]\n")
    );
    // Absolute globs reach the other roots, read-only ones included.
    let out = ok1(
        &mut client,
        "grep_files",
        json!({"regex": "TODO", "globs": [
            format!("{}/*.swift", p(&roots.second)),
            format!("{}/**/*.swift", p(&roots.frozen))
        ]}),
    );
    assert_eq!(
        out,
        format!(
            "{}/ro.swift:1:// TODO: frozen\n{}/two.swift:1:// TODO: second\n[2 matches]\n",
            p(&roots.frozen),
            p(&roots.second)
        )
    );
    // A glob outside every root is skipped with a note, not fatal.
    let out = ok1(
        &mut client,
        "grep_files",
        json!({"regex": "TODO", "globs": ["*.swift", "/definitely/elsewhere/*.swift"]}),
    );
    assert!(
        out.ends_with(
            "[1 matches]\n[1 path(s) skipped: /definitely/elsewhere/*.swift (outside the allowed directories)]\n"
        ),
        "{out}"
    );
}

#[test]
fn grep_files_error_codes() {
    let (roots, mut client) = three_roots();
    let dir = p(&roots.first);
    for args in [
        json!({"directory": &dir}),
        json!({"regex": true, "directory": &dir}),
        json!({"regex": "x"}),
        json!({"regex": "x", "globs": []}),
    ] {
        let (code, message) = rpc_error(&mut client, "grep_files", args.clone());
        assert_eq!(code, -32602, "{args}: {message}");
    }
    let (code, message) = rpc_error(
        &mut client,
        "grep_files",
        json!({"regex": "(", "directory": &dir}),
    );
    assert_eq!(code, -32603, "{message}");
    assert!(message.contains("invalid regex"), "{message}");
    let (code, _) = rpc_error(
        &mut client,
        "grep_files",
        json!({"regex": "x", "directory": "/"}),
    );
    assert_eq!(code, -32001);
    let (code, _) = rpc_error(
        &mut client,
        "grep_files",
        json!({"regex": "x", "directory": p(&roots.first.join("missing"))}),
    );
    assert_eq!(code, -32002);
}
