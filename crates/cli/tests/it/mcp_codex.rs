//! The codex surface end to end: `agent-tools mcp --surface codex` over
//! stdio, its two tools listed and called the way codex calls them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::mcp_client;
use agent_tools_test_support::tree;

use std::path::Path;

use mcp_client::McpClient;
use serde_json::{Value, json};

use tree::sandbox;

/// Starts the codex surface; the server is killed if the test runs past a
/// minute, which makes a stuck call fail (the client sees stdout close)
/// instead of hanging.
fn codex(root: &Path) -> McpClient {
    McpClient::start_guarded(root, &["--surface", "codex"])
}

/// A `shell` answer: (isError, output, exit code).
fn shell(client: &mut McpClient, args: Value) -> (bool, String, i64) {
    let (is_error, text) = client.call("shell", args);
    let value: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not codex JSON ({e}): {text}"));
    assert!(value["metadata"]["duration_seconds"].is_number(), "{text}");
    (
        is_error,
        value["output"].as_str().unwrap().to_owned(),
        value["metadata"]["exit_code"].as_i64().unwrap(),
    )
}

#[test]
fn lists_the_codex_tools() {
    let (_outer, root) = sandbox();
    let mut client = codex(&root);
    let listed = client.request("tools/list", json!({}));
    let tools = &listed["result"]["tools"];
    insta::assert_json_snapshot!("codex_tools_list", tools);
    let names: Vec<_> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["apply_patch", "shell", "exec_command", "write_stdin"]
    );
}

#[test]
fn a_codex_patch_adds_updates_deletes_and_moves() {
    let (_outer, root) = sandbox();
    std::fs::write(root.join("keep.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(root.join("old.txt"), "gone\n").unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "fn a() {\n    1\n}\n").unwrap();
    let mut client = codex(&root);
    let patch = [
        "*** Begin Patch",
        "*** Add File: docs/new.md",
        "+# New",
        "+text",
        "*** Update File: keep.txt",
        "@@",
        " one",
        "-two",
        "+TWO",
        " three",
        "*** Delete File: old.txt",
        "*** Update File: src/lib.rs",
        "*** Move to: src/moved.rs",
        "@@ fn a() {",
        "-    1",
        "+    2",
        "*** End Patch",
        "",
    ]
    .join("\n");
    let (is_error, text) = client.call("apply_patch", json!({"input": patch}));
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "Success. Updated the following files:\nA docs/new.md\nM keep.txt\nM src/moved.rs\nD old.txt\n"
    );
    let files = tree::files(&root);
    let expected: std::collections::BTreeMap<String, Vec<u8>> = [
        ("docs/new.md", "# New\ntext\n"),
        ("keep.txt", "one\nTWO\nthree\n"),
        ("src/moved.rs", "fn a() {\n    2\n}\n"),
    ]
    .into_iter()
    .map(|(p, c)| (p.to_owned(), c.as_bytes().to_vec()))
    .collect();
    assert_eq!(files, expected);
}

#[test]
fn a_failing_patch_changes_nothing_and_says_why_in_plain_text() {
    let (_outer, root) = sandbox();
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(root.join("b.txt"), "beta\n").unwrap();
    let before = tree::snapshot(&root);
    let mut client = codex(&root);
    let patch = "*** Begin Patch\n\
*** Add File: c.txt\n\
+new\n\
*** Update File: a.txt\n\
@@\n\
-alpha\n\
+ALPHA\n\
*** Delete File: b.txt\n\
*** Update File: b.txt\n\
@@\n\
-not there\n\
+x\n\
*** End Patch\n";
    let (is_error, text) = client.call("apply_patch", json!({"input": patch}));
    assert!(is_error);
    assert!(
        !text.starts_with('{'),
        "plain text, not an envelope: {text}"
    );
    tree::assert_same_tree(&before, &tree::snapshot(&root), "failed patch");

    // The last file's chunk does not match: codex's words, nothing written.
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n\
*** Update File: b.txt\n@@\n-not there\n+x\n*** End Patch\n";
    let (is_error, text) = client.call("apply_patch", json!({"input": patch}));
    assert!(is_error);
    assert!(
        text.contains("Failed to find expected lines in b.txt"),
        "{text}"
    );
    tree::assert_same_tree(&before, &tree::snapshot(&root), "failed patch");

    // A truncated patch never applies.
    let (is_error, text) = client.call(
        "apply_patch",
        json!({"input": "*** Begin Patch\n*** Add File: d.txt\n+x\n"}),
    );
    assert!(is_error, "{text}");
    tree::assert_same_tree(&before, &tree::snapshot(&root), "truncated patch");
}

#[test]
fn unified_diffs_are_accepted_too() {
    let (_outer, root) = sandbox();
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    let mut client = codex(&root);
    let diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-alpha\n+ALPHA\n";
    let (is_error, text) = client.call("apply_patch", json!({"input": diff}));
    assert!(!is_error, "{text}");
    assert_eq!(text, "Success. Updated the following files:\nM a.txt\n");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "ALPHA\n"
    );
}

#[test]
fn shell_runs_an_argv_and_answers_like_codex() {
    let (_outer, root) = sandbox();
    std::fs::write(root.join("here.txt"), "x").unwrap();
    let mut client = codex(&root);

    let (is_error, output, code) = shell(&mut client, json!({"command": ["ls"]}));
    assert!(!is_error);
    assert_eq!((output.as_str(), code), ("here.txt\n", 0));

    // stdout then stderr, in one output; a non-zero exit is reported as a
    // failed call, as codex marks it.
    let (is_error, output, code) = shell(
        &mut client,
        json!({"command": ["bash", "-c", "echo err >&2; echo out; exit 3"]}),
    );
    assert!(is_error);
    assert_eq!((output.as_str(), code), ("out\nerr\n", 3));

    // No shell in between: the argument arrives as written.
    let (_, output, _) = shell(
        &mut client,
        json!({"command": ["printf", "%s|", "$HOME", "a b"]}),
    );
    assert_eq!(output, "$HOME|a b|");

    // A missing program is a plain-text failure naming it.
    let (is_error, text) = client.call("shell", json!({"command": ["no-such-program-here-7"]}));
    assert!(is_error);
    assert!(text.contains("no-such-program-here-7"), "{text}");
}

#[test]
fn shell_workdir_is_confined_to_the_root() {
    let (outer, root) = sandbox();
    std::fs::create_dir(root.join("sub")).unwrap();
    let mut client = codex(&root);
    let (is_error, output, _) = shell(&mut client, json!({"command": ["pwd"], "workdir": "sub"}));
    assert!(!is_error);
    assert_eq!(output.trim_end(), root.join("sub").to_str().unwrap());

    for outside in ["..", outer.path().to_str().unwrap(), "/"] {
        let (is_error, text) =
            client.call("shell", json!({"command": ["pwd"], "workdir": outside}));
        assert!(is_error, "{outside}: {text}");
        assert!(!text.starts_with('{'), "{text}");
        assert!(text.contains("workspace root"), "{outside}: {text}");
    }
    let (is_error, text) = client.call("shell", json!({"command": ["pwd"], "workdir": "nope"}));
    assert!(is_error, "{text}");
    let (is_error, text) = client.call("shell", json!({"command": []}));
    assert!(is_error, "{text}");
}

#[test]
fn shell_timeout_answers_with_the_output_so_far_and_124() {
    let (_outer, root) = sandbox();
    let mut client = codex(&root);
    let (is_error, output, code) = shell(
        &mut client,
        json!({"command": ["bash", "-c", "echo started; sleep 30"], "timeout_ms": 300}),
    );
    assert!(is_error);
    assert_eq!(code, 124);
    assert!(
        output.starts_with("command timed out after ")
            && output.ends_with(" milliseconds\nstarted\n"),
        "{output}"
    );
}

/// A Python REPL through `exec_command` and `write_stdin`: an answer, a
/// Ctrl-C (`\u0003`) that interrupts without ending it, and the exit; a
/// session started by a connection dies with it.
#[test]
fn a_repl_session_is_driven_interrupted_and_ended() {
    let (_outer, root) = sandbox();
    let mut client = codex(&root);
    let (is_error, text) = client.call(
        "exec_command",
        json!({"cmd": "python3 -q -i", "tty": true, "yield_time_ms": 2000}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.contains("Process running with session ID 1000\n"),
        "{text}"
    );
    let (_, text) = client.call(
        "write_stdin",
        json!({"session_id": 1000, "chars": "import time; time.sleep(30)\n", "yield_time_ms": 300}),
    );
    assert!(text.contains("session ID 1000"), "{text}");
    let (_, text) = client.call(
        "write_stdin",
        json!({"session_id": 1000, "chars": "\u{3}", "yield_time_ms": 4000}),
    );
    assert!(text.contains("KeyboardInterrupt"), "{text}");
    assert!(
        text.contains("Process running with session ID 1000"),
        "{text}"
    );
    let (_, text) = client.call(
        "write_stdin",
        json!({"session_id": 1000, "chars": "print(6 * 7)\nexit()\n", "yield_time_ms": 5000}),
    );
    assert!(text.contains("\n42\n"), "{text}");
    assert!(text.contains("Process exited with code 0\n"), "{text}");
    let (is_error, text) = client.call(
        "exec_command",
        json!({"cmd": format!("echo $$ > {}/pid; exec sleep 300", root.display()), "yield_time_ms": 500}),
    );
    assert!(!is_error, "{text}");
    // The shell may take its time to start on a busy machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let pid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(root.join("pid"))
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the session never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    client.shutdown();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the session outlived its connection"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// What a `shell` command leaves in the background outlives the call but
/// not the connection.
#[test]
fn background_children_of_shell_die_with_the_connection() {
    let (_outer, root) = sandbox();
    let mut client = codex(&root);
    let marker = root.join("child.pid");
    let script = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 300' &",
        marker.display()
    );
    let (is_error, output, code) = shell(&mut client, json!({"command": ["sh", "-c", script]}));
    assert!(!is_error && code == 0, "{output}");
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rfind(')')
                .is_some_and(|i| !stat[i + 1..].trim_start().starts_with(['Z', 'X']))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let pid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&marker)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline, "no pid written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(alive(pid), "the child did not outlive the call");
    client.shutdown();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "the child outlived the connection"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
