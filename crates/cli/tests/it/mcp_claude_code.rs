//! The Claude Code surface end to end: `agent-tools mcp --surface
//! claude-code` over stdio, and its session rules across connections.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::mcp_client;
use agent_tools_test_support::tree;

use std::path::Path;
use std::time::{Duration, SystemTime};

use mcp_client::McpClient;
use serde_json::json;

use tree::sandbox;

/// Starts the Claude Code surface; the server is killed if the test runs
/// past a minute, which makes a stuck call fail instead of hanging.
fn claude_code(root: &Path) -> McpClient {
    McpClient::start_guarded(root, &["--surface", "claude-code"])
}

fn p(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

const NOT_READ: &str = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>";
const MODIFIED: &str = "<tool_use_error>File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.</tool_use_error>";

fn set_mtime(path: &Path, seconds_ago: u64) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(seconds_ago))
        .unwrap();
}

#[test]
fn a_fresh_connection_has_read_nothing() {
    let (_outer, root) = sandbox();
    let file = root.join("a.txt");
    std::fs::write(&file, "one\n").unwrap();
    let mut first = claude_code(&root);
    let (is_error, text) = first.call("Read", json!({"file_path": p(&file)}));
    assert!(!is_error, "{text}");
    assert_eq!(text, "     1\u{2192}one");
    let edit = json!({"file_path": p(&file), "old_string": "one", "new_string": "two"});
    // Another connection: its session has read nothing.
    let mut second = claude_code(&root);
    assert_eq!(
        second.call("Edit", edit.clone()),
        (true, NOT_READ.to_owned())
    );
    assert_eq!(
        second.call("Write", json!({"file_path": p(&file), "content": "x"})),
        (true, NOT_READ.to_owned())
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n");
    // The first connection's read still counts for it.
    let (is_error, text) = first.call("Edit", edit);
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        format!("The file {} has been updated successfully.", p(&file))
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");
}

#[test]
fn an_external_change_between_read_and_edit_is_refused() {
    let (_outer, root) = sandbox();
    let file = root.join("a.txt");
    std::fs::write(&file, "one\n").unwrap();
    let mut client = claude_code(&root);
    assert!(!client.call("Read", json!({"file_path": p(&file)})).0);
    std::fs::write(&file, "changed by someone else\n").unwrap();
    set_mtime(&file, 30);
    let edit = json!({"file_path": p(&file), "old_string": "changed", "new_string": "x"});
    assert_eq!(
        client.call("Edit", edit.clone()),
        (true, MODIFIED.to_owned())
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "changed by someone else\n"
    );
    // Read again, and the edit goes through.
    assert!(!client.call("Read", json!({"file_path": p(&file)})).0);
    let (is_error, text) = client.call("Edit", edit);
    assert!(!is_error, "{text}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "x by someone else\n"
    );
}

#[test]
fn a_touch_without_a_change_is_not_refused() {
    let (_outer, root) = sandbox();
    let file = root.join("a.txt");
    std::fs::write(&file, "one\n").unwrap();
    let mut client = claude_code(&root);
    assert!(!client.call("Read", json!({"file_path": p(&file)})).0);
    set_mtime(&file, 30);
    let (is_error, text) = client.call(
        "Edit",
        json!({"file_path": p(&file), "old_string": "one", "new_string": "two"}),
    );
    assert!(!is_error, "{text}");
    // The edit refreshed the record: a second edit needs no new read.
    let (is_error, text) = client.call(
        "Edit",
        json!({"file_path": p(&file), "old_string": "two", "new_string": "three"}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "three\n");
}

#[test]
fn background_commands_die_with_the_connection() {
    let (_outer, root) = sandbox();
    let mut client = claude_code(&root);
    let marker = root.join("pid");
    let (is_error, text) = client.call(
        "Bash",
        json!({"command": format!("echo $$ > {}; exec sleep 60", p(&marker)), "run_in_background": true}),
    );
    assert!(!is_error, "{text}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let pid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&marker)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = client.shutdown();
    assert!(status.success() || status.code().is_some(), "{status:?}");
    let alive = || nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while alive() {
        assert!(
            std::time::Instant::now() < deadline,
            "the background command outlived its connection"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` is alive (a zombie is not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .is_some_and(|i| !stat[i + 1..].trim_start().starts_with(['Z', 'X']))
    })
}

/// Waits (bounded) for a number in `path`, written by a command.
fn pid_in(path: &Path) -> i32 {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_dies(pid: i32, after: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "a child that left its session survived {after}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn children_that_left_the_session_die_with_their_background_command() {
    let (_outer, root) = sandbox();
    let mut client = claude_code(&root);
    // The shell starts a child in a session of its own and is done at once.
    let start = |client: &mut McpClient, marker: &Path| {
        let (is_error, text) = client.call(
            "Bash",
            json!({
                "command": format!("setsid sh -c 'echo $$ > {}; exec sleep 300' & echo started", p(marker)),
                "run_in_background": true
            }),
        );
        assert!(!is_error, "{text}");
        let pid = pid_in(marker);
        // Past the shell's own end.
        std::thread::sleep(Duration::from_millis(300));
        assert!(alive(pid));
        pid
    };
    let first = start(&mut client, &root.join("first.pid"));
    let (is_error, text) = client.call("KillShell", json!({"shell_id": "bash_1"}));
    assert!(!is_error, "{text}");
    assert_dies(first, "KillShell");
    let second = start(&mut client, &root.join("second.pid"));
    client.shutdown();
    assert_dies(second, "the end of the connection");
}

/// A Read whose work is small is answered at once, also while Reads that
/// count the lines of huge files run: those are not brief, so they take
/// threads of their own instead of the runtime's places for brief calls.
#[test]
fn a_small_read_is_not_held_back_by_reads_that_count_lines() {
    let (_outer, root) = sandbox();
    let mut big = Vec::new();
    for name in ["big1.log", "big2.log"] {
        let path = root.join(name);
        let lines = "a line of text\n".repeat(1000);
        std::fs::write(&path, lines).unwrap();
        // Sparse: 2 GB to count, nothing on disk.
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(2 << 30)
            .unwrap();
        big.push(path);
    }
    let small = root.join("small.txt");
    std::fs::write(&small, "hello\n").unwrap();
    let mut client = claude_code(&root);
    let counting: Vec<u64> = big
        .iter()
        .map(|path| {
            client.send_request(
                "tools/call",
                json!({"name": "Read", "arguments": {"file_path": p(path), "offset": 1, "limit": 1}}),
            )
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let started = std::time::Instant::now();
    let (is_error, text) = client.call("Read", json!({"file_path": p(&small)}));
    let waited = started.elapsed();
    assert!(!is_error, "{text}");
    assert_eq!(text, "     1\u{2192}hello");
    assert!(
        waited < Duration::from_secs(2),
        "the small Read waited {waited:?}"
    );
    // Cancelled, they stop counting; a cancelled request gets no answer.
    for id in counting {
        client.notify("notifications/cancelled", json!({"requestId": id}));
    }
}

/// The texts of a background command's life: BashOutput's new output by
/// stream, TaskOutput's whole output after a blocking wait, TaskStop's
/// answer, and the unknown-id errors.
#[test]
fn background_commands_are_read_and_stopped_in_claude_codes_words() {
    let (_outer, root) = sandbox();
    let mut client = claude_code(&root);
    let mut transcript = String::new();
    let mut step = |client: &mut McpClient, name: &str, args: serde_json::Value| {
        let (is_error, text) = client.call(name, args.clone());
        let text = text
            .lines()
            .map(|line| {
                if line.starts_with("<timestamp>") {
                    "<timestamp>[now]</timestamp>"
                } else {
                    line
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let text = text.replace(&p(&root), "[root]");
        // The output file's name holds the pid and the time.
        let text = match (text.find("claude-code/"), text.find(".output")) {
            (Some(a), Some(b)) if a < b => format!("{}[file]{}", &text[..a + 12], &text[b..]),
            _ => text,
        };
        transcript.push_str(&format!("--- {name} {args} (error: {is_error})\n{text}\n"));
    };
    // Each step of the command waits for a gate the test opens once it has
    // seen the step before in the job's output, so the order in which the
    // two pipes are read cannot change the transcript.
    let command = "echo out; printf 'ok 1\\nno\\nok 2\\n'; until [ -e gate1 ]; do sleep 0.02; done; \
         echo err >&2; until [ -e gate2 ]; do sleep 0.02; done; echo late; exit 3";
    step(
        &mut client,
        "Bash",
        json!({"command": command, "run_in_background": true}),
    );
    // TaskOutput without blocking reads the whole output and consumes
    // nothing, so polling it leaves BashOutput's view untouched.
    let wait_for = |client: &mut McpClient, needle: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let (_, text) = client.call("TaskOutput", json!({"task_id": "bash_1", "block": false}));
            if text.contains(needle) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no {needle:?} in {text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(&mut client, "ok 2");
    std::fs::write(root.join("gate1"), "").unwrap();
    wait_for(&mut client, "err");
    step(
        &mut client,
        "BashOutput",
        json!({"bash_id": "bash_1", "filter": "^(ok|out|err)"}),
    );
    std::fs::write(root.join("gate2"), "").unwrap();
    step(
        &mut client,
        "TaskOutput",
        json!({"task_id": "bash_1", "timeout": 10000}),
    );
    step(&mut client, "BashOutput", json!({"bash_id": "bash_1"}));
    step(
        &mut client,
        "Bash",
        json!({"command": "sleep 30", "run_in_background": true}),
    );
    step(
        &mut client,
        "TaskOutput",
        json!({"task_id": "bash_2", "block": false}),
    );
    step(&mut client, "TaskStop", json!({"task_id": "bash_2"}));
    step(&mut client, "TaskStop", json!({"shell_id": "bash_1"}));
    step(&mut client, "TaskOutput", json!({"task_id": "bash_9"}));
    step(&mut client, "BashOutput", json!({"bash_id": "bash_9"}));
    insta::assert_snapshot!(transcript.replace(&format!("{}/", p(&root)), "[root]/"));
}
