//! End-to-end: the `agent-tools` binary speaking MCP over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::mcp_client;

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agent_tools_test_support::measure::{Process, status_bytes};
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
    assert_eq!(
        names,
        [
            "read_file",
            "list_dir",
            "glob",
            "grep",
            "job_read",
            "job_list"
        ]
    );
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
pub(crate) fn processes_with(marker: &str) -> Vec<i32> {
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
pub(crate) fn assert_gone_within(marker: &str, limit: Duration) {
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

pub(crate) fn wait_until_running(marker: &str) {
    let start = Instant::now();
    while processes_with(marker).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{marker} never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn unique(tag: &str) -> String {
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

/// A brief call is answered by the transport itself, with or without
/// metadata; the client must get the same answer either way.
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
    let rss = || -> u64 { status_bytes(Process::Pid(pid), "VmRSS").unwrap() / 1024 };
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
    // Still not reading: the end of input is seen all the same (it used
    // to wait behind the unread responses for good).
    drop(writer.join().unwrap());
    let started = Instant::now();
    client.wait_exit(Duration::from_secs(2));
    eprintln!("exit {:?} after the end of input", started.elapsed());
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

/// Resident memory of process `pid`: (now, peak) in kB.
fn rss_kb(pid: u32) -> (u64, u64) {
    let field = |name: &str| status_bytes(Process::Pid(pid), name).unwrap() / 1024;
    (field("VmRSS"), field("VmHWM"))
}

/// Reads messages until the response to `id`, and returns it with the
/// requests the server sent meanwhile (left unanswered).
fn read_until(client: &mut McpClient, id: u64, limit: Duration) -> (Value, Vec<Value>) {
    let start = Instant::now();
    let mut requests = Vec::new();
    loop {
        assert!(
            start.elapsed() < limit,
            "no answer to {id} within {limit:?}"
        );
        let message = client.next_message();
        if message["id"] == json!(id) && message.get("method").is_none() {
            return (message, requests);
        }
        if message.get("method").is_some() {
            requests.push(message);
        }
    }
}

/// The review's H2: with 128 requests unanswered the server read nothing,
/// so cancellations, a ping and the end of input waited for the commands'
/// timeouts.
#[test]
fn cancellations_pings_and_the_end_of_input_are_read_while_requests_wait() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]).guarded();
    let marker = unique("flood");
    let mut batch = String::new();
    let ids: Vec<u64> = (1000..1130).collect();
    for id in &ids {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": format!("sleep {marker}")}}});
        batch.push_str(&format!("{request}\n"));
    }
    client.send_raw(batch.as_bytes());
    wait_until_running(&marker);
    // 64 run, 64 wait for a slot, 2 wait in the transport's queue.
    let mut cancels = String::new();
    for id in &ids {
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "test"}});
        cancels.push_str(&format!("{cancel}\n"));
    }
    client.send_raw(cancels.as_bytes());
    let started = Instant::now();
    let ping = client.send_request("ping", json!({}));
    let pong = client.wait_for(ping);
    assert!(pong.get("result").is_some(), "{pong}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the pong took {:?}",
        started.elapsed()
    );
    assert_gone_within(&marker, Duration::from_secs(5));
    // The slots are free again.
    let (is_error, text) = client.call("bash", json!({"command": "echo free"}));
    assert!(!is_error, "{text}");

    // And the end of input is seen behind 128 unanswered requests.
    let marker = unique("flood-eof");
    let mut batch = String::new();
    for id in 2000..2130 {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": format!("sleep {marker}")}}});
        batch.push_str(&format!("{request}\n"));
    }
    client.send_raw(batch.as_bytes());
    wait_until_running(&marker);
    drop(client.take_stdin());
    let started = Instant::now();
    client.wait_exit(Duration::from_secs(2));
    eprintln!("exit {:?} after the end of input", started.elapsed());
    assert_gone_within(&marker, Duration::from_secs(5));
}

/// Past the waiting budget (64 MiB of lines here) a request is answered
/// "server busy" at once, and cancelling still works.
#[test]
fn past_the_waiting_budget_requests_are_answered_server_busy() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &["--max-file-bytes", "1000"]).guarded();
    let marker = unique("busy");
    let mut batch = String::new();
    for id in 1000..1128 {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": format!("sleep {marker}")}}});
        batch.push_str(&format!("{request}\n"));
    }
    client.send_raw(batch.as_bytes());
    wait_until_running(&marker);
    // Lines of 1 MB (the frame is 1 MiB + 6,000 bytes) wait, 64 at most.
    let pad = "x".repeat(1_000_000);
    let mut stdin = client.take_stdin();
    let writer = std::thread::spawn(move || {
        for id in 5000..5080 {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list",
                "params": {"cursor": pad}});
            stdin.write_all(format!("{request}\n").as_bytes()).unwrap();
        }
        stdin
    });
    let mut busy = 0;
    while busy < 10 {
        let reply = client.next_message();
        let id = reply["id"].as_u64().unwrap();
        assert!((5000..5080).contains(&id), "{reply}");
        assert_eq!(reply["error"]["code"], json!(-32000), "{reply}");
        assert!(
            reply["error"]["message"].as_str().unwrap().contains("busy"),
            "{reply}"
        );
        busy += 1;
    }
    let mut stdin = writer.join().unwrap();
    // Cancel the sleeps: the waiting lines are served, and nothing more
    // is busy.
    for id in 1000..1128 {
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id}});
        stdin.write_all(format!("{cancel}\n").as_bytes()).unwrap();
    }
    assert_gone_within(&marker, Duration::from_secs(5));
    let mut listed = 0;
    while listed + busy < 80 {
        let reply = client.next_message();
        if reply["error"]["code"] == json!(-32000) {
            busy += 1;
        } else {
            assert!(reply["result"]["tools"].is_array(), "{reply}");
            listed += 1;
        }
    }
    eprintln!("{busy} busy, {listed} served");
    assert!(listed >= 60, "{listed} lists served");
    drop(stdin);
    client.wait_exit(Duration::from_secs(2));
}

/// Spawns the server with stdin and stdout on one end of a socket pair, as
/// some clients start servers; returns it and the other end.
fn spawn_on_a_socket(
    root: &std::path::Path,
) -> (std::process::Child, std::os::unix::net::UnixStream) {
    use std::os::fd::OwnedFd;
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let theirs_out = theirs.try_clone().unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .args(["mcp", "--root"])
        .arg(root)
        .stdin(std::process::Stdio::from(OwnedFd::from(theirs)))
        .stdout(std::process::Stdio::from(OwnedFd::from(theirs_out)))
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    (child, ours)
}

/// Sends `initialize`, `notifications/initialized` and `tools/list` over
/// `socket` and reads both answers.
fn open_session(socket: &mut std::os::unix::net::UnixStream) {
    use std::io::{BufRead, BufReader};
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "socket-client", "version": "0"}}}),
        // Sent at once with `initialize`: it must not overtake it.
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    socket.write_all(text.as_bytes()).unwrap();
    let mut reader = BufReader::new(socket.try_clone().unwrap());
    // Answers come in any order; each must be a result.
    let mut ids = Vec::new();
    for _ in 0..3 {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        assert!(reply.get("result").is_some(), "{reply}");
        ids.push(reply["id"].as_u64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3]);
}

/// Waits for `child` to exit; the time it took.
fn time_exit(child: &mut std::process::Child, started: Instant) -> Duration {
    loop {
        if child.try_wait().unwrap().is_some() {
            return started.elapsed();
        }
        if started.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("the server did not exit within 5 s");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Over a socket stdin was read by a blocking thread that the exit waited
/// a full second for.
#[test]
fn the_server_ends_quickly_on_a_socket_pair() {
    let dir = workspace();
    for end in ["INT", "TERM", "EOF"] {
        let mut best = Duration::MAX;
        // The best of three: a loaded machine may not run the server for
        // a while, but a server that waits for something waits every time.
        for _ in 0..3 {
            let (mut child, mut socket) = spawn_on_a_socket(dir.path());
            open_session(&mut socket);
            let started = Instant::now();
            match end {
                "EOF" => socket.shutdown(std::net::Shutdown::Write).unwrap(),
                signal => send_signal(&child, signal),
            }
            let took = time_exit(&mut child, started);
            eprintln!("socket pair, {end}: the server exited after {took:?}");
            best = best.min(took);
            if best < Duration::from_millis(500) {
                break;
            }
        }
        assert!(best < Duration::from_millis(500), "{end}: {best:?}");
    }
}

/// Sends `SIGINT` or `SIGTERM` to `child` (without starting `kill`, which
/// would be timed too).
fn send_signal(child: &std::process::Child, signal: &str) {
    use nix::sys::signal::Signal;
    let signal = match signal {
        "INT" => Signal::SIGINT,
        "TERM" => Signal::SIGTERM,
        other => panic!("no signal {other}"),
    };
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, signal).unwrap();
}

/// Whatever stdin is: on a terminal (read and written by threads of their
/// own, which the exit does not wait for) the server ends at once too.
#[test]
fn the_server_ends_quickly_on_a_terminal() {
    use std::io::{BufRead, BufReader};
    let dir = workspace();
    let mut done = Vec::new();
    for (end, attempt) in ["INT", "TERM"]
        .into_iter()
        .flat_map(|end| (0..3).map(move |attempt| (end, attempt)))
    {
        if done.contains(&end) {
            continue;
        }
        let pty = nix::pty::openpty(None, None).unwrap();
        // Raw: no echo of what we write, no newline translation.
        let mut modes = nix::sys::termios::tcgetattr(&pty.slave).unwrap();
        nix::sys::termios::cfmakeraw(&mut modes);
        nix::sys::termios::tcsetattr(&pty.slave, nix::sys::termios::SetArg::TCSANOW, &modes)
            .unwrap();
        let slave_out = pty.slave.try_clone().unwrap();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agent-tools"))
            .args(["mcp", "--root"])
            .arg(dir.path())
            .stdin(std::process::Stdio::from(pty.slave))
            .stdout(std::process::Stdio::from(slave_out))
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap();
        let mut terminal = std::fs::File::from(pty.master);
        let lines = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "tty-client", "version": "0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ];
        for line in lines {
            terminal.write_all(format!("{line}\n").as_bytes()).unwrap();
        }
        let mut reader = BufReader::new(terminal.try_clone().unwrap());
        for id in [1, 2] {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let reply: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(reply["id"], json!(id), "{reply}");
        }
        let started = Instant::now();
        send_signal(&child, end);
        let took = time_exit(&mut child, started);
        eprintln!("terminal, {end}: the server exited after {took:?}");
        // The best of three, as on a socket pair.
        if took < Duration::from_millis(500) {
            done.push(end);
        } else {
            assert!(attempt < 2 || done.contains(&end), "{end}: {took:?}");
        }
    }
}

/// Whatever stdin is: a file is read to its end and the server ends.
#[test]
fn the_server_ends_quickly_when_stdin_is_a_file() {
    let dir = workspace();
    let input = dir.path().join("requests.jsonl");
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "file-client", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&input, text).unwrap();
    let started = Instant::now();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .args(["mcp", "--root"])
        .arg(dir.path())
        .stdin(std::fs::File::open(&input).unwrap())
        .output()
        .unwrap();
    let took = started.elapsed();
    eprintln!("stdin a file: the server exited after {took:?}");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    // What came before the end is still answered.
    let ids: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["id"].clone())
        .collect();
    assert_eq!(ids, [json!(1), json!(2)], "{stdout}");
    assert!(took < Duration::from_secs(3), "{took:?}");
}

/// The review's L1: serde reads a derived struct from an array, so the
/// fast lane ran `read_file` for shapes rmcp refuses.
#[test]
fn the_fast_lane_takes_only_what_the_library_takes() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]);
    for tool in ["read_file", "bash"] {
        let args = if tool == "bash" {
            json!({"command": "echo hi"})
        } else {
            json!({"path": "README.md"})
        };
        // A top-level array: not a JSON-RPC message.
        client
            .send_raw(format!("[\"2.0\", 11, \"tools/call\", [\"{tool}\", {args}]]\n").as_bytes());
        let reply = client.next_message();
        assert_eq!(reply["error"]["code"], json!(-32600), "{tool}: {reply}");
        // params as an array: a bad call, the same for both tools.
        client.send_raw(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/call\",\"params\":[\"{tool}\",{args}]}}\n")
                .as_bytes(),
        );
        let reply = client.next_message();
        assert_eq!(reply["id"], json!(12), "{reply}");
        let (is_error, text) = McpClient::call_result(&reply);
        assert!(is_error, "{tool}: {text}");
        assert_eq!(error_code(&text), "invalid_input", "{tool}: {text}");
    }
    // A duplicate name: the same answer with and without metadata, and one
    // that says what is wrong.
    let answers: Vec<Value> = ["", r#","_meta":{"progressToken":"p"}"#]
        .iter()
        .map(|meta| {
            client.send_raw(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/call\",\"params\":{{\"name\":\"read_file\",\"name\":\"read_file\",\"arguments\":{{\"path\":\"README.md\"}}{meta}}}}}\n")
                    .as_bytes(),
            );
            client.next_message()
        })
        .collect();
    assert_eq!(answers[0], answers[1]);
    let (is_error, text) = McpClient::call_result(&answers[0]);
    assert!(is_error);
    assert!(text.contains("duplicate field `name`"), "{text}");
}

/// The metadata a request of a session without `initialize` carries.
fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stateless", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// The review's L2: a stray `notifications/initialized` turned the fast
/// lane on in a session opened without `initialize`.
#[test]
fn a_session_without_initialize_never_gets_the_fast_lane() {
    let dir = workspace();
    let args = ["--root".to_owned(), dir.path().to_str().unwrap().to_owned()];
    let mut client = McpClient::start_bare(&args).guarded();
    let call =
        json!({"name": "read_file", "arguments": {"path": "README.md"}, "_meta": stateless_meta()});
    let first = client.request("tools/call", call);
    let (is_error, text) = McpClient::call_result(&first);
    assert!(!is_error, "{text}");
    assert_eq!(first["result"]["resultType"], json!("complete"), "{first}");
    let bare = json!({"name": "read_file", "arguments": {"path": "README.md"}});
    let before = client.request("tools/call", bare.clone());
    assert_eq!(before["error"]["code"], json!(-32602), "{before}");
    client.notify("notifications/initialized", json!({}));
    let after = client.request("tools/call", bare);
    assert_eq!(
        after,
        before
            .as_object()
            .map(|o| {
                let mut o = o.clone();
                o.insert("id".into(), after["id"].clone());
                Value::Object(o)
            })
            .unwrap()
    );
    // The transport's own answers have the session's shape here too.
    let odd = client.request(
        "tools/call",
        json!({"name": "read_file", "arguments": "x", "_meta": stateless_meta()}),
    );
    assert_eq!(odd["result"]["resultType"], json!("complete"), "{odd}");
}

/// The review's L3: odd ids got no answer, or one the client cannot match;
/// the transport's own results carried `resultType`.
#[test]
fn odd_ids_are_answered_and_the_transports_results_have_the_sessions_shape() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]);
    for id in ["null", "true", r#"{"a":1}"#, "[1]"] {
        client.send_raw(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"README.md"}}}}}}"#)
                .as_bytes(),
        );
        client.send_raw(b"\n");
        let reply = client.next_message();
        assert_eq!(reply["id"], Value::Null, "{id}: {reply}");
        assert_eq!(reply["error"]["code"], json!(-32600), "{id}: {reply}");
    }
    for method in ["tools/call", "tools/list"] {
        client.send_raw(
            format!(r#"{{"jsonrpc":"2.0","id":99999999999999999999,"method":"{method}","params":{{"name":"read_file","arguments":{{"path":"README.md"}}}}}}"#)
                .as_bytes(),
        );
        client.send_raw(b"\n");
        let line = client.next_line();
        assert!(
            line.contains(r#""id":99999999999999999999"#),
            "{method}: {line}"
        );
    }
    // Answers the transport makes itself, in a session opened with
    // initialize: no resultType, like every other result of the session.
    let made_here = [
        json!({"name": "read_file", "arguments": "x"}),
        json!({"name": "read_file", "arguments": [1]}),
        json!({"name": "read_file", "arguments": {"path": "\u{1}"}, "x": 1}),
    ];
    for call in made_here {
        let reply = client.request("tools/call", call.clone());
        let result = &reply["result"];
        assert!(result.get("content").is_some(), "{call}: {reply}");
        assert!(result.get("resultType").is_none(), "{call}: {reply}");
    }
    let listed = client.request("tools/list", json!({}));
    assert!(listed["result"].get("resultType").is_none(), "{listed}");
}

/// The review's L4: each `roots/list_changed` sent its own `roots/list`,
/// waited for forever.
#[test]
fn a_flood_of_roots_changes_sends_one_roots_request_at_a_time() {
    let mut client = McpClient::start_with(
        &["--surface".into(), "filesystem".into()],
        json!({"roots": {"listChanged": true}}),
        None,
    )
    .guarded();
    let pid = client.pid();
    let notice = format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    );
    let mut stdin = client.take_stdin();
    let writer = std::thread::spawn(move || {
        let batch = notice.repeat(10_000);
        for _ in 0..10 {
            stdin.write_all(batch.as_bytes()).unwrap();
        }
        stdin
    });
    let mut stdin = writer.join().unwrap();
    stdin
        .write_all(
            format!(
                "{}\n",
                json!({"jsonrpc": "2.0", "id": 77, "method": "ping"})
            )
            .as_bytes(),
        )
        .unwrap();
    // The ping jumps the queue: give the notices time to be served too.
    let (_, mut requests) = read_until(&mut client, 77, Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(2));
    stdin
        .write_all(
            format!(
                "{}\n",
                json!({"jsonrpc": "2.0", "id": 78, "method": "tools/list"})
            )
            .as_bytes(),
        )
        .unwrap();
    let (_, more) = read_until(&mut client, 78, Duration::from_secs(30));
    requests.extend(more);
    let (rss, peak) = rss_kb(pid);
    eprintln!("after 100,000 roots changes: RSS {rss} kB, peak {peak} kB");
    let asked = requests
        .iter()
        .filter(|r| r["method"] == json!("roots/list"))
        .count();
    // The one after `initialized`, never answered: nothing more is sent.
    assert_eq!(asked, 1, "{asked} roots/list requests");
    assert!(peak < 200 * 1024, "peak {peak} kB");
    drop(stdin);
    client.wait_exit(Duration::from_secs(2));
}

/// The review's L5: a line of small numbers was parsed into a tree about
/// sixteen times its size before it was refused.
#[test]
fn a_request_of_millions_of_values_is_refused_before_it_is_parsed() {
    let dir = workspace();
    let mut client = McpClient::start(dir.path(), &[]);
    let pid = client.pid();
    // 84 MB: 42 million zeros in the arguments, as in the review.
    let zeros = "0,".repeat(42_000_000);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"README.md","x":[{zeros}0]}}}}}}"#
    );
    drop(zeros);
    let started = Instant::now();
    client.send_raw(line.as_bytes());
    client.send_raw(b"\n");
    let reply = client.next_message();
    let took = started.elapsed();
    let (is_error, text) = McpClient::call_result(&reply);
    assert!(is_error);
    assert_eq!(error_code(&text), "invalid_input", "{text}");
    assert!(text.contains("JSON values"), "{text}");
    let (_, peak) = rss_kb(pid);
    eprintln!("an 84 MB line of zeros: refused after {took:?}, server peak RSS {peak} kB");
    assert!(peak < 400 * 1024, "peak {peak} kB");
    // A smaller one with as many values as a tool may take is read.
    let (is_error, text) = client.call(
        "read_file",
        json!({"path": "README.md", "x": vec![0; 1000]}),
    );
    assert!(is_error, "{text}");
    assert!(!text.contains("JSON values"), "{text}");
}

/// Arguments that make `tool` of a surface brief and succeed on
/// [`workspace`] (at `root`, canonical).
fn brief_args(surface: &str, tool: &str, root: &std::path::Path) -> Value {
    let file = root.join("src/main.rs");
    match (surface, tool) {
        // The job the test starts first (`cat src/main.rs`), read from its
        // start, so each call gets the same bytes.
        ("agent-tools", "job_read") => json!({"job_id": "job_1", "from": 0}),
        ("agent-tools", _) => json!({"path": "src/main.rs"}),
        (_, "Read") => json!({"file_path": file}),
        (_, "read_multiple_files") => json!({"paths": [file, root.join("README.md")]}),
        (_, "list_directory") => json!({"path": root.join("src")}),
        (_, "list_allowed_directories") => json!({}),
        _ => json!({"path": file}),
    }
}

/// One `tools/call` with id 5 and `meta` as its `_meta`, sent raw; the
/// response line as written.
fn call_line(client: &mut McpClient, name: &str, args: &Value, meta: Option<&Value>) -> String {
    let mut params = json!({"name": name, "arguments": args});
    if let Some(meta) = meta {
        params["_meta"] = meta.clone();
    }
    let request = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params});
    client.send_raw(format!("{request}\n").as_bytes());
    client.next_line()
}

/// Every brief tool of every surface gets the same bytes whichever way its
/// call goes: run by the transport (plain, or with `_meta` such as a
/// progress token) or by the protocol library (a request naming the
/// session's version in `_meta`, which the library checks), and its
/// answer is right.
#[test]
fn every_brief_tool_of_every_surface_answers_the_same_bytes_either_way() {
    let dir = workspace();
    let root = dir.path().canonicalize().unwrap();
    let expected = [
        ("agent-tools", &["read_file", "job_read"][..]),
        ("codex", &[]),
        (
            "filesystem",
            &[
                "read_file",
                "read_multiple_files",
                "list_directory",
                "get_file_info",
                "list_allowed_directories",
            ],
        ),
        ("claude-code", &["Read"]),
    ];
    let metas = [
        None,
        Some(json!({"progressToken": "p1"})),
        Some(json!({"progressToken": 7, "vendor/extra": {"a": [1, 2]}})),
        // Through the library: it reads the version a request names.
        Some(json!({"io.modelcontextprotocol/protocolVersion": "2025-06-18"})),
    ];
    for choice in agent_tools_cli::surfaces() {
        let surface = choice.name();
        let tools = choice
            .open(agent_tools::Config::builder(&root).build().unwrap())
            .unwrap();
        let brief: Vec<&str> = tools
            .list_tools()
            .iter()
            .map(|tool| tool.name())
            .filter(|name| {
                let args = brief_args(surface, name, &root);
                tools.is_brief(name, args.as_object().unwrap())
            })
            .collect();
        let (_, want) = expected.iter().find(|(name, _)| *name == surface).unwrap();
        assert_eq!(brief, *want, "the brief tools of {surface}");
        let mut client = McpClient::start_guarded(&root, &["--surface", surface]);
        if brief.contains(&"job_read") {
            let (is_error, text) = client.call(
                "job_start",
                json!({"command": "cat src/main.rs", "wait_ms": 20000}),
            );
            assert!(!is_error, "{text}");
            let started: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(started["job_id"], "job_1", "{started}");
            assert_eq!(started["status"], "exited", "{started}");
        }
        for name in brief {
            let args = brief_args(surface, name, &root);
            let lines: Vec<String> = metas
                .iter()
                .map(|meta| call_line(&mut client, name, &args, meta.as_ref()))
                .collect();
            for (line, meta) in lines.iter().zip(&metas).skip(1) {
                assert_eq!(line, &lines[0], "{surface} {name} with _meta {meta:?}");
            }
            let reply: Value = serde_json::from_str(&lines[0]).unwrap();
            let (is_error, text) = McpClient::call_result(&reply);
            assert!(!is_error, "{surface} {name}: {text}");
            let right = match name {
                "list_directory" => text.contains("main.rs"),
                "list_allowed_directories" => text.contains(root.to_str().unwrap()),
                "get_file_info" => text.contains("size"),
                "job_read" => serde_json::from_str::<Value>(&text).unwrap()["output"]
                    .as_str()
                    .is_some_and(|output| output.contains("println!(\"hi\");")),
                _ => text.contains("println!(\"hi\");"),
            };
            assert!(right, "{surface} {name}: {text}");
            assert!(reply["result"].get("resultType").is_none(), "{reply}");
        }
    }
}

/// Results have the shape of the version negotiated at `initialize`,
/// whichever way a call goes. A client asking for 2026-07-28 (which has no
/// `initialize`) or an unknown later version is answered with 2025-11-25;
/// rmcp's handler shaped its own results for the version asked for, so
/// calls it answered carried `resultType` while the transport's did not.
/// A request naming a version in its `_meta` is answered in that version.
#[test]
fn results_have_the_shape_of_the_negotiated_version() {
    let dir = workspace();
    let asked_and_negotiated = [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ];
    let args = ["--root".to_owned(), dir.path().to_str().unwrap().to_owned()];
    for (asked, negotiated) in asked_and_negotiated {
        let mut client = McpClient::start_bare(&args).guarded();
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": asked,
                "capabilities": {},
                "clientInfo": {"name": "test-client", "version": "0"}
            }),
        );
        assert_eq!(
            init["result"]["protocolVersion"],
            json!(negotiated),
            "{init}"
        );
        client.notify("notifications/initialized", json!({}));
        let read = json!({"path": "src/main.rs"});
        let session = json!({"io.modelcontextprotocol/protocolVersion": negotiated});
        let brief = call_line(&mut client, "read_file", &read, None);
        let library = call_line(&mut client, "read_file", &read, Some(&session));
        assert_eq!(brief, library, "asked {asked}");
        let replies = [
            serde_json::from_str(&brief).unwrap(),
            client.request(
                "tools/call",
                json!({"name": "glob", "arguments": {"pattern": "**/*.rs"}}),
            ),
            client.request(
                "tools/call",
                json!({"name": "no_such_tool", "arguments": {}}),
            ),
            client.request("tools/call", json!({"name": "read_file", "arguments": "x"})),
            client.request("tools/list", json!({})),
        ];
        for reply in replies {
            let result = &reply["result"];
            assert!(result.is_object(), "asked {asked}: {reply}");
            assert!(result.get("resultType").is_none(), "asked {asked}: {reply}");
        }
        // A request naming 2026-07-28 itself, with the metadata that
        // version asks of a request, gets that version's shape.
        let own = client.request(
            "tools/call",
            json!({"name": "read_file", "arguments": read, "_meta": stateless_meta()}),
        );
        assert_eq!(own["result"]["resultType"], json!("complete"), "{own}");
        // And the session's requests after it keep the session's shape.
        let after: Value = serde_json::from_str(&call_line(
            &mut client,
            "glob",
            &json!({"pattern": "*.md"}),
            None,
        ))
        .unwrap();
        assert!(after["result"].get("resultType").is_none(), "{after}");
    }
}
