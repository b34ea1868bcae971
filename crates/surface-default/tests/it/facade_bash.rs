//! End-to-end: the bash tool through `AgentTools::call`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::facade;

use std::time::{Duration, Instant};

use facade::{Sandbox, fail, fail_with, ok};
use serde_json::{Value, json};

fn run(tools: &agent_tools::AgentTools, args: Value) -> Value {
    let text = ok(tools, "bash", args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bash result is not JSON ({e}): {text}"))
}

#[test]
fn result_is_a_json_object_with_the_five_fields() {
    let sb = Sandbox::new();
    let tools = sb.tools();
    let result = run(
        &tools,
        json!({"command": "printf 'out\\n'; printf 'err\\n' >&2"}),
    );
    assert_eq!(
        result,
        json!({"exit_code": 0, "stdout": "out\n", "stderr": "err\n", "signal": null, "timed_out": false})
    );
    let keys: Vec<&str> = result
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 5, "{keys:?}");
}

#[test]
fn a_non_zero_exit_is_a_result_not_an_error() {
    let sb = Sandbox::new();
    let tools = sb.tools();
    let result = tools.call("bash", json!({"command": "echo failing >&2; exit 3"}));
    assert!(!result.is_error, "{}", result.text);
    let value: Value = serde_json::from_str(&result.text).unwrap();
    assert_eq!(value["exit_code"], 3);
    assert_eq!(value["stderr"], "failing\n");
    assert_eq!(value["timed_out"], false);

    let value = run(&tools, json!({"command": "kill -TERM $$"}));
    assert_eq!(value["exit_code"], Value::Null);
    assert_eq!(value["signal"], "SIGTERM");
}

#[test]
fn runs_in_the_root_or_in_cwd_inside_it() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("sub/dir")).unwrap();
    let tools = sb.tools();
    let value = run(&tools, json!({"command": "pwd -P"}));
    assert_eq!(value["stdout"], format!("{}\n", sb.root.display()));
    let value = run(&tools, json!({"command": "pwd -P", "cwd": "sub/dir"}));
    assert_eq!(
        value["stdout"],
        format!("{}\n", sb.path("sub/dir").display())
    );
    let abs = sb.path("sub");
    let value = run(
        &tools,
        json!({"command": "pwd -P", "cwd": abs.to_str().unwrap()}),
    );
    assert_eq!(value["stdout"], format!("{}\n", abs.display()));
    // Commands change the workspace like any other tool.
    run(
        &tools,
        json!({"command": "echo made > made.txt", "cwd": "sub"}),
    );
    assert_eq!(sb.read_string("sub/made.txt"), "made\n");
}

#[test]
fn a_bad_cwd_is_refused_before_running_anything() {
    let sb = Sandbox::new();
    sb.write("file.txt", "x");
    std::fs::create_dir(sb.outside().join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(sb.outside().join("elsewhere"), sb.path("out-link")).unwrap();
    let tools = sb.tools();
    let command = "echo ran > ran.txt";
    fail_with(
        &tools,
        "bash",
        json!({"command": command, "cwd": "missing"}),
        "not_found",
    );
    fail_with(
        &tools,
        "bash",
        json!({"command": command, "cwd": "file.txt"}),
        "not_a_file",
    );
    fail_with(
        &tools,
        "bash",
        json!({"command": command, "cwd": ".."}),
        "path_escape",
    );
    fail_with(
        &tools,
        "bash",
        json!({"command": command, "cwd": sb.outside().join("elsewhere").to_str().unwrap()}),
        "path_escape",
    );
    fail_with(
        &tools,
        "bash",
        json!({"command": command, "cwd": "out-link"}),
        "path_escape",
    );
    assert!(!sb.exists("ran.txt"));
    assert!(!sb.outside().join("ran.txt").exists());
    assert!(!sb.outside().join("elsewhere/ran.txt").exists());
}

#[test]
fn the_timeout_is_clamped_to_the_configured_maximum() {
    let sb = Sandbox::new();
    let tools = sb.tools_with(|b| b.bash_timeout_max_ms(300));
    let started = Instant::now();
    let (code, message, envelope) = fail(
        &tools,
        "bash",
        json!({"command": "echo partial; echo half >&2; sleep 30", "timeout_ms": 60000}),
    );
    let elapsed = started.elapsed();
    assert_eq!(code, "timeout", "{message}");
    assert!(
        elapsed >= Duration::from_millis(250) && elapsed < Duration::from_secs(5),
        "took {elapsed:?}"
    );
    assert_eq!(envelope["stdout"], "partial\n", "{envelope}");
    assert_eq!(envelope["stderr"], "half\n", "{envelope}");
    assert_eq!(envelope["timed_out"], true, "{envelope}");
}

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let sb = Sandbox::new();
    let tools = sb.tools_with(|b| b.bash_timeout_max_ms(60_000));
    // A background grandchild that would write a marker after the timeout,
    // and report its pid first.
    let command = "(sleep 1.5; echo late > marker.txt) & echo $! > bg.pid; sleep 30";
    let (code, message, _) = fail(
        &tools,
        "bash",
        json!({"command": command, "timeout_ms": 300}),
    );
    assert_eq!(code, "timeout", "{message}");
    let pid: i32 = sb.read_string("bg.pid").trim().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    while facade::is_pid_alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !facade::is_pid_alive(pid),
        "grandchild {pid} survived the timeout"
    );
    std::thread::sleep(Duration::from_millis(1800));
    assert!(
        !sb.exists("marker.txt"),
        "the grandchild wrote after the timeout"
    );
}

#[test]
fn large_output_spills_to_a_file_readable_with_read_file() {
    let sb = Sandbox::new();
    let tools = sb.tools_with(|b| b.max_output_bytes(4096));
    let value = run(
        &tools,
        json!({"command": "i=0; while [ $i -lt 5000 ]; do echo \"line $i\"; i=$((i+1)); done"}),
    );
    assert_eq!(value["exit_code"], 0);
    assert_eq!(value["truncated"], true, "{value}");
    let spill = value["stdout_spill"]
        .as_str()
        .unwrap_or_else(|| panic!("{value}"));
    assert!(spill.starts_with(".agent-tools/spill/"), "{spill}");
    assert!((value["stdout"].as_str().unwrap().len()) < 4096);
    // The whole result stays within the output cap.
    assert!(
        value.to_string().len() <= 4096,
        "{}",
        value.to_string().len()
    );

    let on_disk = sb.read_string(spill);
    let expected: String = (0..5000).map(|i| format!("line {i}\n")).collect();
    assert_eq!(on_disk, expected);

    let text = ok(&tools, "read_file", json!({"path": spill, "limit": 3}));
    assert!(
        text.starts_with("     1\tline 0\n     2\tline 1\n     3\tline 2\n"),
        "{text}"
    );
    let text = ok(&tools, "read_file", json!({"path": spill, "offset": -1}));
    assert!(text.contains("line 4999"), "{text}");
}

#[test]
fn read_only_mode_hides_bash_and_the_writers() {
    let sb = Sandbox::new();
    sb.write("a.txt", "x\n");
    let before = std::fs::read(sb.path("a.txt")).unwrap();
    let tools = sb.tools_with(|b| b.read_only(true));
    let names: Vec<&str> = tools.list_tools().iter().map(|t| t.name()).collect();
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
    let calls = [
        ("bash", json!({"command": "echo pwned > a.txt"})),
        ("job_start", json!({"command": "echo pwned > a.txt"})),
        ("write_file", json!({"path": "a.txt", "content": "pwned"})),
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
    ];
    for (name, args) in calls {
        fail_with(&tools, name, args, "not_found");
    }
    assert_eq!(std::fs::read(sb.path("a.txt")).unwrap(), before);
}

#[test]
fn cancelling_through_the_call_context_kills_the_command() {
    let sb = Sandbox::new();
    let tools = std::sync::Arc::new(sb.tools());
    let call = agent_tools::CallContext::default();
    let cancel = call.cancel.clone();
    let worker = {
        let tools = tools.clone();
        std::thread::spawn(move || {
            tools.call_with(
                "bash",
                json!({"command": "echo $$ > sh.pid; sleep 30; echo done > marker.txt"}),
                &call,
            )
        })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !sb.exists("sh.pid") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(50));
    let pid: i32 = sb.read_string("sh.pid").trim().parse().unwrap();
    let started = Instant::now();
    cancel.cancel();
    let result = worker.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(result.is_error, "{}", result.text);
    assert!(result.is_cancelled(), "a cancelled call says so, typed");
    assert!(!facade::is_pid_alive(pid));
    assert!(!sb.exists("marker.txt"));
}

#[test]
fn bad_arguments_are_invalid_input() {
    let sb = Sandbox::new();
    let tools = sb.tools();
    for args in [
        json!({}),
        json!({"command": 5}),
        json!({"command": "true", "timeout_ms": "soon"}),
        json!({"command": "true", "timeout_ms": -1}),
        json!({"command": "true", "cwd": 3}),
        json!({"command": "true", "bogus": 1}),
        json!({"command": "echo a\u{0}b"}),
    ] {
        fail_with(&tools, "bash", args, "invalid_input");
    }
}

#[test]
fn output_that_grows_when_escaped_still_fits_the_cap_and_is_kept_whole() {
    let sb = Sandbox::new();
    let tools = sb.tools_with(|b| b.max_output_bytes(2048));
    // 1500 control bytes: within the inline budget as raw bytes, but six
    // times longer as JSON (`\u0001`). Also some quotes on stderr.
    let value = run(
        &tools,
        json!({"command": "i=0; while [ $i -lt 1500 ]; do printf '\\001'; i=$((i+1)); done; printf '\"%.0s' $(seq 300) >&2"}),
    );
    let text = value.to_string();
    assert!(text.len() <= 2048, "{} bytes: {text}", text.len());
    assert_eq!(value["exit_code"], 0);
    assert_eq!(value["truncated"], true, "{value}");
    let spill = value["stdout_spill"]
        .as_str()
        .unwrap_or_else(|| panic!("{value}"));
    assert!(spill.starts_with(".agent-tools/spill/"), "{spill}");
    assert_eq!(
        sb.read(spill),
        vec![1u8; 1500],
        "the spill file holds all of stdout"
    );
    let inline = value["stdout"].as_str().unwrap();
    assert!(inline.bytes().all(|b| b == 1));
    // stderr is either whole inline or whole in its own spill file.
    match value["stderr_spill"].as_str() {
        Some(path) => assert_eq!(sb.read(path), vec![b'"'; 300]),
        None => assert_eq!(value["stderr"], "\"".repeat(300)),
    }
}

#[test]
fn a_timeout_envelope_with_escaped_output_fits_the_cap() {
    let sb = Sandbox::new();
    let tools = sb.tools_with(|b| b.max_output_bytes(2048).bash_timeout_max_ms(300));
    let result = tools.call(
        "bash",
        json!({"command": "i=0; while [ $i -lt 1500 ]; do printf '\\n'; i=$((i+1)); done; sleep 30"}),
    );
    assert!(
        result.text.len() <= 2048,
        "{} bytes: {}",
        result.text.len(),
        result.text
    );
    let (code, _, envelope) = facade::envelope("bash", &json!({}), &result);
    assert_eq!(code, "timeout");
    assert_eq!(envelope["timed_out"], true);
    let spill = envelope["stdout_spill"]
        .as_str()
        .unwrap_or_else(|| panic!("{envelope}"));
    assert_eq!(sb.read_string(spill), "\n".repeat(1500));
}

#[test]
fn a_spill_folder_linked_outside_is_refused() {
    let sb = Sandbox::new();
    let outside = sb.outside().join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, sb.path(".agent-tools")).unwrap();
    let tools = sb.tools_with(|b| b.max_output_bytes(1024));
    let (code, message, _) = fail(&tools, "bash", json!({"command": "seq 1 100000"}));
    assert_eq!(code, "path_escape", "{message}");
    assert!(message.contains(".agent-tools"), "{message}");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "wrote outside the root"
    );
}

#[test]
fn heavily_escaped_output_still_fills_the_inline_budget() {
    let sb = Sandbox::new();
    let tools = sb.tools_with(|b| b.max_output_bytes(64 * 1024));
    for (command, unit) in [
        // Colour codes: each ESC is six bytes once escaped.
        (
            "i=0; while [ $i -lt 25000 ]; do printf '\\033[31mX\\033[0m\\n'; i=$((i+1)); done",
            "\u{1b}[31mX\u{1b}[0m\n",
        ),
        // NULs: six bytes each.
        ("head -c 100000 /dev/zero", "\0"),
    ] {
        let value = run(&tools, json!({"command": command}));
        let text = value.to_string();
        assert!(text.len() <= 64 * 1024, "{} bytes", text.len());
        assert_eq!(value["truncated"], true);
        let inline = value["stdout"].as_str().unwrap();
        assert!(unit.repeat(200_000).starts_with(inline));
        // The inline part uses most of the budget instead of a sliver of it.
        assert!(
            text.len() > 60 * 1024,
            "only {} of {} bytes used; {} characters inline",
            text.len(),
            64 * 1024,
            inline.len()
        );
    }
}

#[test]
fn a_spill_folder_swapped_for_a_link_while_the_command_runs_is_not_followed() {
    let sb = Sandbox::new();
    let outside = sb.outside().join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    let tools = sb.tools_with(|b| b.max_output_bytes(1024));
    // Checked before the run, the folder is fine; the command then swaps it.
    let command = format!(
        "rm -rf .agent-tools; mkdir .agent-tools; ln -s '{}' .agent-tools/spill; seq 1 100000",
        outside.display()
    );
    let (code, message, _) = fail(&tools, "bash", json!({ "command": command }));
    assert_eq!(code, "path_escape", "{message}");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "wrote outside the root"
    );
}

#[test]
fn old_spill_files_are_swept_and_others_kept() {
    let sb = Sandbox::new();
    sb.write(".agent-tools/spill/bash-old.stdout", "old");
    sb.write(".agent-tools/spill/bash-new.stdout", "new");
    sb.write(".agent-tools/spill/notes.txt", "not ours");
    let old = std::fs::File::options()
        .write(true)
        .open(sb.path(".agent-tools/spill/bash-old.stdout"))
        .unwrap();
    old.set_modified(std::time::SystemTime::now() - Duration::from_secs(2 * 24 * 3600))
        .unwrap();
    let tools = sb.tools();
    run(&tools, json!({"command": "true"}));
    assert!(!sb.exists(".agent-tools/spill/bash-old.stdout"));
    assert!(sb.exists(".agent-tools/spill/bash-new.stdout"));
    assert!(sb.exists(".agent-tools/spill/notes.txt"));
}
