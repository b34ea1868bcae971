//! The `agent-tools call` and `agent-tools tools` commands.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

fn agent_tools() -> Command {
    Command::new(env!("CARGO_BIN_EXE_agent-tools"))
}

#[test]
fn call_prints_text_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let output = agent_tools()
        .args(["call", "--root"])
        .arg(dir.path())
        .args(["read_file", r#"{"path":"a.txt"}"#])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "     1\talpha\n");
}

#[test]
fn call_reads_arguments_from_stdin_and_exits_one_on_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = agent_tools()
        .args(["call", "--root"])
        .arg(dir.path())
        .args(["read_file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"path":"nope.txt"}"#)
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(envelope["error"], "not_found");
}

#[test]
fn call_with_bad_json_or_bad_root_fails_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let output = agent_tools()
        .args(["call", "--root"])
        .arg(dir.path())
        .args(["list_dir", "{nope"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not valid JSON"));

    let output = agent_tools()
        .args(["call", "--root"])
        .arg(dir.path().join("missing"))
        .arg("list_dir")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot be opened"));
}

#[test]
fn call_refuses_the_job_tools() {
    let dir = tempfile::tempdir().unwrap();
    for tool in ["job_start", "job_read", "job_list"] {
        let output = agent_tools()
            .args(["call", "--root"])
            .arg(dir.path())
            .args([tool, r#"{"command":"sleep 30"}"#])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{tool}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("live only as long as the connection"),
            "{stderr}"
        );
    }
}

#[test]
fn tools_prints_every_tool_with_its_schema() {
    let output = agent_tools().arg("tools").output().unwrap();
    assert!(output.status.success());
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert!(tools.len() >= 4);
    for tool in &tools {
        assert_eq!(tool["input_schema"]["type"], "object");
        assert!(tool["title"].is_string(), "{tool}");
        assert!(tool["annotations"]["readOnlyHint"].is_boolean(), "{tool}");
    }
    let output = agent_tools()
        .args(["tools", "--read-only"])
        .output()
        .unwrap();
    let read_only: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert!(read_only.iter().all(|t| t["mutating"] == false));
    let names: Vec<&str> = read_only
        .iter()
        .map(|t| t["name"].as_str().unwrap())
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
fn surfaces_lists_each_surface_with_what_it_is_for() {
    let output = agent_tools().arg("surfaces").output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let first = text.lines().next().unwrap();
    let (name, summary) = first.split_once('\t').unwrap();
    assert_eq!(name, "agent-tools");
    assert!(summary.contains("read_file"), "{summary}");
    assert!(
        text.lines().all(|line| line.split('\t').count() == 2),
        "{text}"
    );
    let codex = text
        .lines()
        .find_map(|line| line.strip_prefix("codex\t"))
        .unwrap_or_else(|| panic!("codex is not listed: {text}"));
    assert!(
        codex.contains("apply_patch") && codex.contains("shell"),
        "{codex}"
    );
}

#[test]
fn surface_is_chosen_by_name_and_an_unknown_one_is_refused_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let output = agent_tools()
        .args(["call", "--surface", "agent-tools", "--root"])
        .arg(dir.path())
        .args(["read_file", r#"{"path":"a.txt"}"#])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "     1\talpha\n");
    let listed = agent_tools()
        .args(["tools", "--surface", "agent-tools"])
        .output()
        .unwrap();
    assert_eq!(
        listed.stdout,
        agent_tools().arg("tools").output().unwrap().stdout
    );

    let root = dir.path().to_str().unwrap();
    for args in [
        vec!["mcp", "--surface", "nope", "--root", root],
        vec![
            "call",
            "--surface",
            "nope",
            "--root",
            root,
            "read_file",
            "{}",
        ],
        vec!["tools", "--surface", "nope"],
    ] {
        let output = agent_tools()
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(r#"unknown surface "nope""#) && stderr.contains("agent-tools"),
            "{args:?}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn call_into_a_closed_pipe_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("big.txt"), lines).unwrap();
    let mut child = agent_tools()
        .args(["call", "--root"])
        .arg(dir.path())
        .args(["read_file", r#"{"path":"big.txt"}"#])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end at once, as `| head -c0` would: every write fails
    // with EPIPE.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}

#[test]
fn extra_roots_are_refused_by_a_surface_that_serves_one_folder() {
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    for extra in ["--root", "--read-only-root"] {
        let output = agent_tools()
            .args(["call", "--root"])
            .arg(dir.path())
            .arg(extra)
            .arg(other.path())
            .args(["list_dir", "{}"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{extra}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("serves one folder"), "{extra}: {stderr}");
    }
    // The filesystem surface takes them, and a missing one fails at startup.
    let output = agent_tools()
        .args(["call", "--surface", "filesystem", "--root"])
        .arg(dir.path())
        .arg("--read-only-root")
        .arg(other.path().join("missing"))
        .args(["list_allowed_directories", "{}"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("missing"));
}

#[test]
fn a_root_is_required_except_by_a_surface_that_can_take_the_clients() {
    for surface in ["agent-tools", "codex"] {
        let output = agent_tools()
            .args(["call", "--surface", surface, "list_dir", "{}"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{surface}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("--root DIR is required"),
            "{surface}: {stderr}"
        );
    }
    // Without a root the filesystem surface starts, and refuses every path
    // until a client announces its roots (which `call` never does).
    let output = agent_tools()
        .args([
            "call",
            "--surface",
            "filesystem",
            "read_file",
            r#"{"path": "/etc/hostname"}"#,
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("no directory is allowed yet"), "{stdout}");
    // A read-only root alone is the first allowed directory.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "ro\n").unwrap();
    let output = agent_tools()
        .args(["call", "--surface", "filesystem", "--read-only-root"])
        .arg(dir.path())
        .args(["read_file", r#"{"path": "a.txt"}"#])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "ro\n");
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn the_sandbox_needs_its_folders_on_the_command_line() {
    // The policy is fixed at startup, before a client could announce roots.
    let output = agent_tools()
        .args(["call", "--surface", "filesystem", "--sandbox"])
        .args(["list_allowed_directories", "{}"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--sandbox needs the folders"), "{stderr}");
}

#[test]
fn a_server_with_an_index_budget_out_of_range_fails_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let output = agent_tools()
        .args(["mcp", "--root"])
        .arg(dir.path())
        .args(["--index-memory-mb", "0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("index_memory_bytes"), "{stderr}");
    // Without an index its budget is not looked at: the server starts, and
    // ends when its input closes before the client's first request.
    let output = agent_tools()
        .args(["mcp", "--no-index", "--root"])
        .arg(dir.path())
        .args(["--index-memory-mb", "0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("index_memory_bytes"), "{stderr}");
    assert!(stderr.contains("connection closed"), "{stderr}");
}
