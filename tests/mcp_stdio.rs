//! End-to-end: the `agent-tools` binary speaking MCP over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

#[path = "support/mcp_client.rs"]
mod mcp_client;

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mcp_client::McpClient;
use serde_json::{Value, json};

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), "# demo\n").unwrap();
    dir
}

fn error_code(text: &str) -> String {
    let envelope: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not an envelope ({e}): {text}"));
    envelope["error"].as_str().unwrap().to_string()
}

#[test]
fn lists_all_nine_tools_with_object_schemas() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]);
    let response = client.request("tools/list", json!({}));
    let tools = response["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for expected in ["read_file", "list_dir", "glob", "grep"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
    }
    let read_file = tools.iter().find(|t| t["name"] == "read_file").unwrap();
    assert_eq!(read_file["annotations"]["readOnlyHint"], true);
    // Every tool has a title and all four hints, as `agent-tools tools`
    // lists them (pinned there by a snapshot).
    for tool in tools {
        assert!(
            tool["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{tool}"
        );
        assert_eq!(tool["annotations"]["title"], tool["title"], "{tool}");
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(tool["annotations"][hint].is_boolean(), "{hint}: {tool}");
        }
    }
    let bash = tools.iter().find(|t| t["name"] == "bash").unwrap();
    assert_eq!(bash["annotations"]["openWorldHint"], true);
    assert_eq!(bash["annotations"]["destructiveHint"], true);
    assert!(client.shutdown().success());
}

#[test]
fn read_only_server_lists_only_read_tools() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &["--read-only"]);
    let response = client.request("tools/list", json!({}));
    let names: Vec<String> = response["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["read_file", "list_dir", "glob", "grep"]);
}

#[test]
fn calls_return_text_and_errors_return_envelopes() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]);

    let (is_error, text) = client.call("read_file", json!({"path": "src/main.rs"}));
    assert!(!is_error);
    assert_eq!(
        text,
        "     1\tfn main() {\n     2\t    println!(\"hi\");\n     3\t}\n"
    );

    let (is_error, text) = client.call("list_dir", json!({}));
    assert!(!is_error);
    assert_eq!(text, "README.md\nsrc/\n");

    let (is_error, text) = client.call(
        "grep",
        json!({"pattern": "println", "output_mode": "content"}),
    );
    assert!(!is_error);
    assert_eq!(text, "src/main.rs:2:    println!(\"hi\");\n");

    let (is_error, text) = client.call("glob", json!({"pattern": "**/*.rs"}));
    assert!(!is_error);
    assert_eq!(text, "src/main.rs\n");

    let (is_error, text) = client.call("read_file", json!({"path": "../../etc/passwd"}));
    assert!(is_error);
    assert_eq!(error_code(&text), "path_escape");

    let (is_error, text) = client.call("read_file", json!({"path": "missing.txt"}));
    assert!(is_error);
    assert_eq!(error_code(&text), "not_found");

    let (is_error, text) = client.call("read_file", json!({"offset": 3}));
    assert!(is_error);
    assert_eq!(error_code(&text), "invalid_input");
}

#[test]
fn unknown_and_hidden_tools_are_not_found_results_not_rpc_errors() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &["--read-only"]);
    let response = client.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert!(response.get("error").is_none(), "{response}");
    let (is_error, text) = McpClient::call_result(&response);
    assert!(is_error);
    assert_eq!(error_code(&text), "not_found");

    let (is_error, text) = client.call("write_file", json!({"path": "x", "content": "y"}));
    assert!(is_error);
    assert_eq!(error_code(&text), "not_found");
    assert!(!dir.path().join("x").exists());
}

#[test]
fn concurrent_requests_are_all_answered() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]);
    let ids: Vec<u64> = (0..32)
        .map(|i| {
            let args = if i % 2 == 0 {
                json!({"name": "read_file", "arguments": {"path": "README.md"}})
            } else {
                json!({"name": "grep", "arguments": {"pattern": "main"}})
            };
            client.send_request("tools/call", args)
        })
        .collect();
    for (i, id) in ids.into_iter().enumerate() {
        let (is_error, text) = McpClient::call_result(&client.wait_for(id));
        assert!(!is_error, "{text}");
        if i % 2 == 0 {
            assert_eq!(text, "     1\t# demo\n");
        } else {
            assert_eq!(text, "src/main.rs\n");
        }
    }
}

#[test]
fn startup_fails_clearly_for_a_missing_or_file_root() {
    let dir = workspace();
    for root in [dir.path().join("missing"), dir.path().join("README.md")] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_agent-tools"))
            .arg("mcp")
            .arg("--root")
            .arg(&root)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("workspace root"), "{stderr}");
        assert!(
            output.stdout.is_empty(),
            "nothing may be written to the protocol stream"
        );
    }
}

/// Pids of live processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rfind(')')
            .is_some_and(|i| stat[i + 1..].trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

/// Waits (bounded) until no live process carries `marker`.
fn assert_gone_within(marker: &str, limit: Duration) {
    let start = Instant::now();
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "processes with {marker} still alive after {limit:?}: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_until_running(marker: &str) {
    let start = Instant::now();
    while processes_with(marker).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{marker} never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn unique(tag: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    // A fractional sleep length no other test or process uses.
    format!(
        "{}.{}{}",
        300 + tag.len(),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

#[test]
fn unparsable_requests_get_an_error_and_the_server_lives_on() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &["--max-file-bytes", "1000"]);
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"README.md","x":{}{}}}}}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    );
    let cases: Vec<(String, Value, Option<i64>)> = vec![
        ("not json".into(), Value::Null, Some(-32700)),
        (
            r#"{"jsonrpc":"2.0","id":102,"method":"tools/list","params":{"x":1e400}}"#.into(),
            json!(102),
            Some(-32700),
        ),
        (deep, json!(101), None),
        (
            r#"{"jsonrpc":"2.0","id":103,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"\ud800"}}}"#.into(),
            json!(103),
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":104,"method":"tools/call","params":{"name":"read_file","arguments":{"offset":1e400}}}"#.into(),
            json!(104),
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s5","method":"tools/call","params":{"name":"read_file","arguments":[1]}}"#.into(),
            json!("s5"),
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":106,"method":"tools/call","params":{"name":"read_file","arguments":"x"}}"#.into(),
            json!(106),
            None,
        ),
        (r#"[1,2]"#.into(), Value::Null, Some(-32600)),
        (r#"{"jsonrpc":"2.0","id":107}"#.into(), json!(107), Some(-32600)),
        // Over the frame limit (6 × 1000 + 1 MiB): a call gets too_large,
        // anything else -32600, both with their id.
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":108,"method":"tools/call","params":{{"name":"write_file","arguments":{{"path":"a","content":"{}"}}}}}}"#,
                "\\\"".repeat(600_000)
            ),
            json!(108),
            None,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":109,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
                "x".repeat(1_100_000)
            ),
            json!(109),
            Some(-32600),
        ),
    ];
    for (line, id, rpc_code) in cases {
        client.send_raw(format!("{line}\n").as_bytes());
        let reply = client.next_message();
        assert_eq!(reply["id"], id, "{reply}");
        match rpc_code {
            Some(code) => assert_eq!(reply["error"]["code"], code, "{reply}"),
            None => {
                let (is_error, text) = McpClient::call_result(&reply);
                assert!(is_error);
                let expected = if id == json!(108) {
                    "too_large"
                } else {
                    "invalid_input"
                };
                assert_eq!(error_code(&text), expected, "{text}");
            }
        }
        // And the next request is served.
        let pong = client.request("ping", json!({}));
        assert!(pong.get("result").is_some(), "{pong}");
    }
    assert!(!dir.path().join("a").exists());
}

#[test]
fn a_write_of_max_file_bytes_fits_the_frame_however_escaped() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &["--max-file-bytes", "200000"]);
    let content = "\u{1}".repeat(200_000);
    let (is_error, text) =
        client.call("write_file", json!({"path": "ctl.bin", "content": content}));
    assert!(!is_error, "{text}");
    assert_eq!(
        std::fs::read(dir.path().join("ctl.bin")).unwrap().len(),
        200_000
    );
}

/// A brief call is answered by the transport itself unless it carries
/// metadata; either way the client must get the same answer.
#[test]
fn a_brief_call_gets_the_same_answer_with_or_without_metadata() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]);
    let calls = [
        json!({"name": "read_file", "arguments": {"path": "src/main.rs", "offset": 2}}),
        json!({"name": "read_file", "arguments": {"path": "missing.rs"}}),
        json!({"name": "read_file", "arguments": {"path": 7}}),
        json!({"name": "read_file", "arguments": {"path": "../outside"}}),
    ];
    for call in calls {
        let mut with_meta = call.clone();
        with_meta["_meta"] = json!({"progressToken": "p1"});
        let plain = client.request("tools/call", call.clone());
        let routed = client.request("tools/call", with_meta);
        assert_eq!(plain["result"], routed["result"], "{call}");
        assert_eq!(plain["error"], routed["error"], "{call}");
        assert!(plain.get("result").is_some(), "{plain}");
    }
    // Pipelined: every brief call is answered once, under its own id,
    // however the answers interleave with the writer's.
    let ids: Vec<u64> = (0..200)
        .map(|i| {
            let path = if i % 3 == 0 {
                "README.md"
            } else {
                "src/main.rs"
            };
            client.send_request(
                "tools/call",
                json!({"name": "read_file", "arguments": {"path": path}}),
            )
        })
        .collect();
    for (i, id) in ids.into_iter().enumerate() {
        let (is_error, text) = McpClient::call_result(&client.wait_for(id));
        assert!(!is_error, "{text}");
        assert_eq!(text.lines().count(), if i % 3 == 0 { 1 } else { 3 });
    }
}

/// A brief call runs on the thread that was watching stdin; one that turns
/// out long (the first line count of a 64 MB file) must not hold back the
/// messages behind it.
#[test]
fn a_long_brief_call_does_not_hold_back_a_ping() {
    let dir = workspace();
    let line = "y".repeat(99) + "\n";
    std::fs::write(dir.path().join("big.log"), line.repeat(640 * 1024)).unwrap();
    let mut client = McpClient::start(dir.path(), &["--max-file-bytes", "100000000"]);
    for round in 0..2 {
        // Another file each round: the first count of a file is the long part.
        let name = format!("big{round}.log");
        std::fs::copy(dir.path().join("big.log"), dir.path().join(&name)).unwrap();
        let read = client.send_request(
            "tools/call",
            json!({"name": "read_file", "arguments": {"path": name, "offset": 600_000, "limit": 2}}),
        );
        // Let the read start before the ping arrives.
        std::thread::sleep(Duration::from_millis(20));
        let ping = client.send_request("ping", json!({}));
        let first = client.next_message();
        assert_eq!(
            first["id"],
            json!(ping),
            "the ping waited for the read: {first}"
        );
        let (is_error, text) = McpClient::call_result(&client.wait_for(read));
        assert!(!is_error, "{text}");
        assert!(text.starts_with("600000\t"), "{text}");
    }
}

#[test]
fn a_client_that_stops_reading_does_not_grow_the_server() {
    let dir = workspace();
    let line = "x".repeat(1023) + "\n";
    std::fs::write(dir.path().join("big.txt"), line.repeat(1024)).unwrap();
    let mut client = McpClient::start(dir.path(), &[]);
    let pid = client.pid();
    let mut stdin = client.take_stdin();
    // The input stays open (closing it would end the server): the server
    // reads every request, and holds those it cannot start yet as lines.
    let writer = std::thread::spawn(move || {
        for id in 1000..3000 {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "read_file", "arguments": {"path": "big.txt"}}});
            if stdin.write_all(format!("{request}\n").as_bytes()).is_err() {
                break;
            }
        }
        stdin
    });
    let rss = || -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let mut peak = 0;
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(100));
        peak = peak.max(rss());
    }
    eprintln!("server RSS peaked at {peak} kB");
    // Without back-pressure this grew past 450 MB. With it, memory is what
    // the calls in flight hold (brief calls run one per runtime thread but
    // one; each a 1 MB file, its text and its answer), the unanswered
    // requests (at most 128, each a protocol-library task) and the bounded
    // queues: about 80 MB in a debug build.
    assert!(peak < 256 * 1024, "RSS peaked at {peak} kB");
    client.signal("KILL");
    client.wait_exit(Duration::from_secs(10));
    let _ = writer.join();
}

#[test]
fn ping_is_answered_while_many_commands_run() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]);
    let marker = unique("ping");
    for _ in 0..100 {
        client.send_request(
            "tools/call",
            json!({"name": "bash", "arguments": {"command": format!("sleep {marker}")}}),
        );
    }
    wait_until_running(&marker);
    let id = client.send_request("ping", json!({}));
    // The first message back is the ping's answer: every command sleeps on.
    let reply = client.next_message();
    assert_eq!(reply["id"], id, "{reply}");
    client.take_stdin();
    client.wait_exit(Duration::from_secs(15));
    assert_gone_within(&marker, Duration::from_secs(5));
}

fn run_sleep_then(signal_or_eof: &str) {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]);
    let marker = unique(signal_or_eof);
    client.send_request(
        "tools/call",
        json!({"name": "bash", "arguments": {"command": format!("sleep {marker}; echo done")}}),
    );
    wait_until_running(&marker);
    match signal_or_eof {
        "EOF" => drop(client.take_stdin()),
        signal => client.signal(signal),
    }
    if signal_or_eof != "KILL" {
        client.wait_exit(Duration::from_secs(10));
    }
    assert_gone_within(&marker, Duration::from_secs(5));
    if signal_or_eof == "KILL" {
        client.wait_exit(Duration::from_secs(10));
    }
}

#[test]
fn commands_die_with_a_terminated_server() {
    run_sleep_then("TERM");
    run_sleep_then("INT");
}

#[test]
fn commands_die_with_a_killed_server() {
    run_sleep_then("KILL");
}

#[test]
fn end_of_input_during_a_command_always_ends_the_server() {
    for _ in 0..20 {
        run_sleep_then("EOF");
    }
}

#[test]
fn children_that_left_the_group_die_on_timeout_and_on_cancel() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]);
    let marker = unique("setsid");
    let command = format!("setsid sleep {marker} >/dev/null 2>&1 & sleep 30");
    let (is_error, text) = client.call("bash", json!({"command": command, "timeout_ms": 1000}));
    assert!(is_error);
    assert_eq!(error_code(&text), "timeout");
    assert_gone_within(&marker, Duration::from_secs(5));

    let marker = unique("setsid-cancel");
    let command = format!("setsid sleep {marker} >/dev/null 2>&1 & sleep 30");
    let id = client.send_request(
        "tools/call",
        json!({"name": "bash", "arguments": {"command": command}}),
    );
    wait_until_running(&marker);
    client.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "test"}),
    );
    assert_gone_within(&marker, Duration::from_secs(5));
    let (is_error, _) = client.call("bash", json!({"command": "true"}));
    assert!(!is_error);
}

#[test]
fn commands_cannot_reach_the_server_through_their_parent() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]);
    let server = client.pid();
    let (is_error, text) = client.call("bash", json!({"command": "echo $PPID"}));
    assert!(!is_error, "{text}");
    let value: Value = serde_json::from_str(&text).unwrap();
    let ppid: u32 = value["stdout"].as_str().unwrap().trim().parse().unwrap();
    assert_ne!(ppid, server, "the shell's parent is the server itself");
}
