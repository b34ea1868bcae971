//! End-to-end: the mutating tools through the `agent-tools` binary over MCP
//! stdio, cancellation of a running command, concurrent calls, and garbage
//! arguments for every tool.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::mcp_client;
use agent_tools_test_support::tree;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use mcp_client::McpClient;
use serde_json::{Value, json};

use tree::sandbox;

fn envelope(text: &str) -> (String, String, Value) {
    let value: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not an envelope ({e}): {text}"));
    (
        value["error"].as_str().unwrap().to_string(),
        value["message"].as_str().unwrap().to_string(),
        value,
    )
}

fn call_ok(client: &mut McpClient, name: &str, args: Value) -> String {
    let (is_error, text) = client.call(name, args.clone());
    assert!(!is_error, "{name}({args}) failed: {text}");
    text
}

fn call_err(client: &mut McpClient, name: &str, args: Value, code: &str) -> String {
    let (is_error, text) = client.call(name, args.clone());
    assert!(is_error, "{name}({args}) should fail: {text}");
    let (got, message, _) = envelope(&text);
    assert_eq!(got, code, "{name}({args}): {message}");
    message
}

/// Every live (non-zombie) process whose process group is `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // fields[0] is the state, fields[2] the process group.
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            members.push(pid);
        }
    }
    members
}

fn wait_for_file(path: &Path, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn writers_patch_and_bash_over_mcp() {
    let (_outer, root) = sandbox();
    std::fs::write(root.join("a.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    let mut client = McpClient::start(&root, &[]);

    let text = call_ok(
        &mut client,
        "write_file",
        json!({"path": "new.txt", "content": "hello"}),
    );
    assert_eq!(text, "created new.txt (5 bytes)");
    assert_eq!(std::fs::read(root.join("new.txt")).unwrap(), b"hello");

    let text = call_ok(
        &mut client,
        "edit_file",
        json!({"path": "new.txt", "old_string": "hello", "new_string": "hello, world"}),
    );
    assert_eq!(text, "edited new.txt: 1 replacement at line 1");
    assert_eq!(
        std::fs::read(root.join("new.txt")).unwrap(),
        b"hello, world"
    );

    let message = call_err(
        &mut client,
        "multi_edit",
        json!({"path": "a.txt", "edits": [
            {"old_string": "one", "new_string": "1"},
            {"old_string": "two", "new_string": "2"},
            {"old_string": "absent", "new_string": "3"},
            {"old_string": "four", "new_string": "4"}
        ]}),
        "no_match",
    );
    assert!(message.starts_with("edit 3 of 4:"), "{message}");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\ntwo\nthree\nfour\n"
    );

    let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n--- /dev/null\n+++ b/sub/b.txt\n@@ -0,0 +1 @@\n+bee\n";
    let text = call_ok(&mut client, "apply_patch", json!({"patch": patch}));
    assert_eq!(
        text,
        "applied patch to 2 files:\nM a.txt (1 hunk)\nA sub/b.txt (1 hunk)\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("sub/b.txt")).unwrap(),
        "bee\n"
    );

    let before = tree::snapshot(&root);
    call_err(
        &mut client,
        "write_file",
        json!({"path": "../escape.txt", "content": "x"}),
        "path_escape",
    );
    call_err(
        &mut client,
        "apply_patch",
        json!({"patch": "--- /dev/null\n+++ b/../evil\n@@ -0,0 +1 @@\n+evil\n"}),
        "path_escape",
    );
    call_err(
        &mut client,
        "bash",
        json!({"command": "touch x", "cwd": ".."}),
        "path_escape",
    );
    assert_eq!(tree::snapshot(&root), before);
    assert!(!root.parent().unwrap().join("escape.txt").exists());
    assert!(!root.parent().unwrap().join("evil").exists());

    let text = call_ok(
        &mut client,
        "bash",
        json!({"command": "cat a.txt | head -1; echo oops >&2; exit 7"}),
    );
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value,
        json!({"exit_code": 7, "stdout": "ONE\n", "stderr": "oops\n", "signal": null, "timed_out": false})
    );
    assert!(client.shutdown().success());
}

#[test]
fn bash_timeout_over_mcp_is_clamped_and_returns_the_envelope() {
    let (_outer, root) = sandbox();
    let mut client = McpClient::start(&root, &["--bash-timeout-max-ms", "300"]);
    let started = Instant::now();
    let (is_error, text) = client.call(
        "bash",
        json!({"command": "echo partial; sleep 30", "timeout_ms": 60000}),
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(is_error, "{text}");
    let (code, _, value) = envelope(&text);
    assert_eq!(code, "timeout");
    assert_eq!(value["stdout"], "partial\n");
    assert_eq!(value["timed_out"], true);
}

#[test]
fn read_only_server_refuses_every_mutating_tool() {
    let (_outer, root) = sandbox();
    std::fs::write(root.join("a.txt"), "x\n").unwrap();
    let before = tree::snapshot(&root);
    let mut client = McpClient::start(&root, &["--read-only"]);
    for (name, args) in [
        ("write_file", json!({"path": "a.txt", "content": "y"})),
        (
            "edit_file",
            json!({"path": "a.txt", "old_string": "x", "new_string": "y"}),
        ),
        (
            "multi_edit",
            json!({"path": "a.txt", "edits": [{"old_string": "x", "new_string": "y"}]}),
        ),
        (
            "apply_patch",
            json!({"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\n"}),
        ),
        ("bash", json!({"command": "echo y > a.txt"})),
    ] {
        call_err(&mut client, name, args, "not_found");
    }
    assert_eq!(tree::snapshot(&root), before);
}

#[test]
fn cancelling_a_running_command_kills_its_process_group() {
    let (_outer, root) = sandbox();
    let mut client = McpClient::start(&root, &[]);
    let id = client.send_request(
        "tools/call",
        json!({"name": "bash", "arguments": {
            "command": "cut -d' ' -f5 /proc/$$/stat > sh.pid; (sleep 3; echo late > bg-marker) & sleep 3; echo done > marker"
        }}),
    );
    let pid: i32 = wait_for_file(&root.join("sh.pid"), Duration::from_secs(10))
        .trim()
        .parse()
        .unwrap();
    assert!(!group_members(pid).is_empty(), "the command is not running");

    client.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "test"}),
    );
    let cancelled_at = Instant::now();
    while !group_members(pid).is_empty() {
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(2),
            "process group {pid} still alive 2 s after the cancellation: {:?}",
            group_members(pid)
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // The server still answers.
    let (is_error, text) = client.call("bash", json!({"command": "echo still here"}));
    assert!(!is_error, "{text}");
    assert!(text.contains("still here"), "{text}");

    // Past the time the command would have finished: nothing was written.
    std::thread::sleep(Duration::from_millis(3300).saturating_sub(cancelled_at.elapsed()));
    assert!(
        !root.join("marker").exists(),
        "the command ran to completion"
    );
    assert!(
        !root.join("bg-marker").exists(),
        "a background job survived"
    );
    assert!(client.shutdown().success());
}

#[test]
fn concurrent_edits_and_reads_are_all_answered() {
    let (_outer, root) = sandbox();
    for i in 0..16 {
        std::fs::write(root.join(format!("e{i}.txt")), format!("edit me {i}\n")).unwrap();
        std::fs::write(root.join(format!("r{i}.txt")), format!("read me {i}\n")).unwrap();
    }
    let mut client = McpClient::start(&root, &[]);
    let mut expected: HashMap<u64, (bool, String)> = HashMap::new();
    for i in 0..16 {
        let id = client.send_request(
            "tools/call",
            json!({"name": "edit_file", "arguments": {
                "path": format!("e{i}.txt"),
                "old_string": format!("edit me {i}"),
                "new_string": format!("edited {i}")
            }}),
        );
        expected.insert(
            id,
            (false, format!("edited e{i}.txt: 1 replacement at line 1")),
        );
        let id = client.send_request(
            "tools/call",
            json!({"name": "read_file", "arguments": {"path": format!("r{i}.txt")}}),
        );
        expected.insert(id, (false, format!("     1\tread me {i}\n")));
    }
    for (id, (want_error, want_text)) in expected {
        let response = client.wait_for(id);
        let (is_error, text) = McpClient::call_result(&response);
        assert_eq!(is_error, want_error, "{text}");
        assert_eq!(text, want_text);
    }
    for i in 0..16 {
        assert_eq!(
            std::fs::read_to_string(root.join(format!("e{i}.txt"))).unwrap(),
            format!("edited {i}\n")
        );
    }
}

#[test]
fn slow_calls_run_in_parallel_and_do_not_stall_quick_ones() {
    let (_dir, root) = sandbox();
    std::fs::write(root.join("note.txt"), "quick\n").unwrap();
    let mut client = McpClient::start(&root, &[]);
    let started = Instant::now();
    let slow: Vec<u64> = (0..2)
        .map(|_| {
            client.send_request(
                "tools/call",
                json!({"name": "bash", "arguments": {"command": "sleep 1"}}),
            )
        })
        .collect();
    let quick = client.send_request(
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "note.txt"}}),
    );
    let (is_error, text) = McpClient::call_result(&client.wait_for(quick));
    assert!(!is_error, "{text}");
    assert!(
        started.elapsed() < Duration::from_millis(800),
        "a quick call waited for slow ones: {:?}",
        started.elapsed()
    );
    for id in slow {
        let (is_error, text) = McpClient::call_result(&client.wait_for(id));
        assert!(!is_error, "{text}");
    }
    // Two one-second commands side by side, not one after the other.
    assert!(
        started.elapsed() < Duration::from_millis(1800),
        "slow calls ran one after another: {:?}",
        started.elapsed()
    );
}

#[test]
fn garbage_arguments_to_every_tool_get_invalid_input_envelopes() {
    let (_outer, root) = sandbox();
    std::fs::write(root.join("a.txt"), "x\n").unwrap();
    let before = tree::snapshot(&root);
    let mut client = McpClient::start(&root, &[]);
    let listed = client.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 14);
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let schema = &tool["inputSchema"];
        // A tool without arguments (job_list) has no properties.
        let properties = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        let mut cases: Vec<Value> = Vec::new();
        // Each property given a value of the wrong type.
        for (key, property) in &properties {
            let wrong = match property["type"].as_str() {
                Some("string") => json!(12345),
                Some("boolean") => json!("yes"),
                Some("integer") | Some("number") => json!("many"),
                Some("array") => json!("not an array"),
                _ => json!({"nested": [1, 2, 3]}),
            };
            let mut args = serde_json::Map::new();
            for r in &required {
                args.insert((*r).to_string(), good_value(name, r));
            }
            args.insert(key.clone(), wrong);
            cases.push(Value::Object(args));
        }
        // Each required field missing.
        for missing in &required {
            let mut args = serde_json::Map::new();
            for r in required.iter().filter(|r| *r != missing) {
                args.insert((*r).to_string(), good_value(name, r));
            }
            cases.push(Value::Object(args));
        }
        // No arguments at all.
        if !required.is_empty() {
            cases.push(Value::Null);
        }
        // Everything wrong at once.
        cases.push(
            json!({"path": [], "pattern": null, "edits": {}, "command": false, "patch": 1.5}),
        );
        for args in cases {
            let params = if args.is_null() {
                json!({"name": name})
            } else {
                json!({"name": name, "arguments": args})
            };
            let response = client.request("tools/call", params);
            assert!(
                response.get("error").is_none(),
                "{name}({args}) got a JSON-RPC error: {response}"
            );
            let (is_error, text) = McpClient::call_result(&response);
            assert!(is_error, "{name}({args}) should fail: {text}");
            let (code, message, _) = envelope(&text);
            assert_eq!(code, "invalid_input", "{name}({args}): {message}");
        }
    }
    // Still alive, and nothing changed.
    let (is_error, _) = client.call("read_file", json!({"path": "a.txt"}));
    assert!(!is_error);
    assert_eq!(tree::snapshot(&root), before);
    assert!(client.shutdown().success());
}

/// A valid value for a required field (so that only the field under test is wrong).
fn good_value(tool: &str, field: &str) -> Value {
    match (tool, field) {
        (_, "edits") => json!([{"old_string": "x", "new_string": "y"}]),
        (_, "patch") => json!("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\n"),
        (_, "command") => json!("echo should-not-run > ran.txt"),
        (_, "path") => json!("a.txt"),
        (_, "pattern") => json!("x"),
        (_, "old_string") => json!("x"),
        (_, "new_string") => json!("y"),
        (_, "content") => json!("y"),
        _ => json!("x"),
    }
}
