use agent_tools::{
    AgentTools, CommandSandbox, Config, DispatchResult, ErrorCode, IndexSettings, Launcher,
};

use super::*;
use serde_json::{Value, json};

fn workspace() -> (tempfile::TempDir, AgentTools) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
    let tools = crate::open(Config::builder(dir.path()).build().unwrap()).unwrap();
    (dir, tools)
}

fn code(result: &DispatchResult) -> Option<ErrorCode> {
    result.error_code()
}

#[test]
fn agent_tools_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<AgentTools>();
}

#[test]
fn every_schema_is_an_object_schema_without_refs() {
    for tool in agent_tools::offered_specs(&DefaultSurface, false) {
        let schema = tool.input_schema();
        assert_eq!(
            schema.get("type"),
            Some(&json!("object")),
            "{}",
            tool.name()
        );
        let text = serde_json::to_string(&**schema).unwrap();
        assert!(!text.contains("$ref"), "{} has a $ref: {text}", tool.name());
        assert!(!tool.description().is_empty());
    }
}

#[test]
fn unknown_tool_is_not_found() {
    let (_dir, tools) = workspace();
    let result = tools.call("no_such_tool", json!({}));
    assert_eq!(code(&result), Some(ErrorCode::NotFound));
    assert!(result.text.contains("unknown tool"));
}

#[test]
fn read_only_surface_hides_mutating_tools_from_list_and_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let tools = crate::open(Config::builder(dir.path()).read_only(true).build().unwrap()).unwrap();
    let names: Vec<_> = tools.list_tools().iter().map(|t| t.name()).collect();
    // The job readers stay: they only read (and find no job to read).
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
    for tool in agent_tools::offered_specs(&DefaultSurface, false)
        .iter()
        .filter(|t| t.mutating())
    {
        let result = tools.call(tool.name(), json!({}));
        assert_eq!(code(&result), Some(ErrorCode::NotFound), "{}", tool.name());
        assert!(result.text.contains("read-only"), "{}", result.text);
    }
}

#[test]
fn schema_violations_are_invalid_input_with_details() {
    let (_dir, tools) = workspace();
    let result = tools.call("read_file", json!({}));
    assert_eq!(code(&result), Some(ErrorCode::InvalidInput));
    assert!(result.text.contains("path"), "{}", result.text);

    let result = tools.call("read_file", json!({"path": "a.txt", "offset": "x"}));
    assert_eq!(code(&result), Some(ErrorCode::InvalidInput));
    assert!(result.text.contains("/offset"), "{}", result.text);

    let result = tools.call("read_file", json!({"path": "a.txt", "limit": 0}));
    assert_eq!(code(&result), Some(ErrorCode::InvalidInput));

    let result = tools.call("read_file", json!({"path": "a.txt", "bogus": 1}));
    assert_eq!(code(&result), Some(ErrorCode::InvalidInput));

    let result = tools.call("read_file", json!(["a.txt"]));
    assert_eq!(code(&result), Some(ErrorCode::InvalidInput));

    let result = tools.call("grep", json!({"pattern": "x", "output_mode": "lines"}));
    assert_eq!(code(&result), Some(ErrorCode::InvalidInput));
}

#[test]
fn defaults_are_filled_before_validation() {
    let (_dir, tools) = workspace();
    let result = tools.call("read_file", json!({"path": "a.txt"}));
    assert!(!result.is_error, "{}", result.text);
    assert_eq!(result.text, "     1\tone\n     2\ttwo\n     3\tthree\n");
    let result = tools.call("list_dir", Value::Null);
    assert_eq!(result.text, "a.txt\n");
}

#[test]
fn output_is_bounded_on_a_char_boundary() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wide.txt"), "é".repeat(3000)).unwrap();
    let tools = crate::open(
        Config::builder(dir.path())
            .max_output_bytes(2048)
            .build()
            .unwrap(),
    )
    .unwrap();
    // A single long line is shown truncated at 2000 chars (4000 bytes), over the cap.
    let result = tools.call("read_file", json!({"path": "wide.txt"}));
    assert!(!result.is_error);
    assert!(result.text.len() <= 2048, "{}", result.text.len());
    assert!(result.text.contains("[output truncated"), "{}", result.text);
}

#[test]
fn startup_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Config::builder(dir.path().join("missing"))
        .build()
        .unwrap_err();
    assert!(matches!(missing, StartupError::RootMissing { .. }));
    assert!(
        missing.to_string().contains("cannot be opened"),
        "{missing}"
    );
    std::fs::write(dir.path().join("file"), "").unwrap();
    let file = Config::builder(dir.path().join("file"))
        .build()
        .unwrap_err();
    assert!(matches!(file, StartupError::RootNotADirectory { .. }));
    let small = Config::builder(dir.path())
        .max_output_bytes(10)
        .build()
        .unwrap_err();
    assert!(small.to_string().contains("max_output_bytes"), "{small}");
    let tiny_index = Config::builder(dir.path())
        .index(IndexSettings {
            memory_budget_bytes: 1000,
            ..IndexSettings::default()
        })
        .build()
        .unwrap_err();
    assert!(
        tiny_index.to_string().contains("index_memory_bytes"),
        "{tiny_index}"
    );
}

#[test]
fn an_index_turned_on_in_the_config_answers_glob_and_grep() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "needle\n").unwrap();
    let config = Config::builder(dir.path())
        .index(IndexSettings::default())
        .build()
        .unwrap();
    assert!(config.index().is_some());
    let tools = crate::open(config).unwrap();
    let result = tools.call(
        "grep",
        json!({"pattern": "needle", "output_mode": "content"}),
    );
    assert_eq!(code(&result), None);
    // Written after the index started: seen all the same.
    std::fs::write(dir.path().join("b.txt"), "needle too\n").unwrap();
    let result = tools.call("glob", json!({"pattern": "*.txt"}));
    let text = &result.text;
    assert!(text.contains("b.txt"), "{text}");
}

#[test]
fn concurrent_calls_from_many_threads() {
    let (_dir, tools) = workspace();
    let tools = std::sync::Arc::new(tools);
    let handles: Vec<_> = (0..16)
        .map(|i| {
            let tools = tools.clone();
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let result = if i % 2 == 0 {
                        tools.call(
                            "read_file",
                            json!({"path": "a.txt", "offset": 2, "limit": 1}),
                        )
                    } else {
                        tools.call("grep", json!({"pattern": "thr", "output_mode": "content"}))
                    };
                    assert!(!result.is_error, "{}", result.text);
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
}

#[test]
fn a_sandbox_without_a_launcher_is_refused_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let err = Config::builder(dir.path())
        .sandbox(CommandSandbox::On {
            network: false,
            vcs_writes: false,
        })
        .build()
        .unwrap_err();
    assert!(matches!(err, StartupError::SandboxNeedsLauncher), "{err}");
    assert!(err.to_string().contains("launcher"), "{err}");
}

#[test]
fn the_sandbox_policy_follows_the_root_and_the_mode() {
    if let Err(err) = agent_tools::landlock_abi() {
        eprintln!("skipped: no command sandbox on this machine: {err}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let launcher = Launcher::new("/bin/false", []);
    for (read_only, network) in [(false, false), (true, true)] {
        let vcs_writes = network;
        let config = Config::builder(dir.path())
            .bash_launcher(launcher.clone())
            .read_only(read_only)
            .sandbox(CommandSandbox::On {
                network,
                vcs_writes,
            })
            .build()
            .unwrap();
        let sandbox = config.sandbox().unwrap();
        let policy = sandbox.policy();
        let (writable, ro) = if read_only {
            (vec![], vec![root.clone()])
        } else {
            (vec![root.clone()], vec![])
        };
        assert_eq!(policy.writable(), writable);
        assert_eq!(policy.read_only(), ro);
        assert_eq!(policy.network(), network);
        assert_eq!(policy.vcs_writes(), vcs_writes);
        let tmp = sandbox.tmp_dir().to_path_buf();
        assert!(tmp.is_dir());
        assert_eq!(
            policy.tmp_dir(),
            Some(std::fs::canonicalize(&tmp).unwrap().as_path())
        );
        // The private folder lives as long as the config (and its clones).
        let clone = config.clone();
        drop(config);
        assert!(tmp.is_dir());
        drop(clone);
        assert!(!tmp.exists());
    }
    let off = Config::builder(dir.path()).build().unwrap();
    assert!(off.sandbox().is_none());
}

fn job_json(result: &agent_tools::DispatchResult) -> serde_json::Value {
    assert!(!result.is_error, "{}", result.text);
    serde_json::from_str(&result.text).unwrap()
}

#[test]
fn jobs_start_read_write_and_die() {
    let (_dir, tools) = workspace();
    let started = job_json(&tools.call(
        "job_start",
        json!({"command": "echo one; sleep 0.3; echo two", "wait_for": "one"}),
    ));
    assert_eq!(started["job_id"], "job_1");
    assert_eq!(started["status"], "running");
    assert_eq!(started["output"], "one\n");
    assert_eq!(started["matched"], true);
    assert_eq!(
        (started["from"].as_u64(), started["to"].as_u64()),
        (Some(0), Some(4))
    );
    assert!(
        started["log"]
            .as_str()
            .unwrap()
            .starts_with(".agent-tools/spill/job-")
    );
    let read = job_json(&tools.call("job_read", json!({"job_id": "job_1", "wait_ms": 10000})));
    assert_eq!(read["output"], "two\n");
    let done = job_json(&tools.call(
        "job_read",
        json!({"job_id": "job_1", "wait_ms": 10000, "from": 0}),
    ));
    assert_eq!(done["status"], "exited");
    assert_eq!(done["exit_code"], 0);
    assert_eq!(done["output"], "one\ntwo\n");
    let tail = job_json(&tools.call("job_read", json!({"job_id": "job_1", "from": -4})));
    assert_eq!(tail["output"], "two\n");
    let written = tools.call("job_write", json!({"job_id": "job_1", "input": "x"}));
    assert_eq!(code(&written), Some(ErrorCode::InvalidInput));
    assert!(written.text.contains("has exited"), "{}", written.text);
    let list = job_json(&tools.call("job_list", json!({})));
    assert_eq!(list["jobs"][0]["job_id"], "job_1");
    assert_eq!(list["jobs"][0]["status"], "exited");
    let killed = job_json(&tools.call("job_kill", json!({"job_id": "job_1"})));
    assert_eq!(killed["status"], "exited");
}

#[test]
fn job_calls_refuse_what_they_cannot_do() {
    let (_dir, tools) = workspace();
    let missing = tools.call("job_read", json!({"job_id": "job_9"}));
    assert_eq!(code(&missing), Some(ErrorCode::NotFound));
    let bad_id = tools.call("job_read", json!({"job_id": "nine"}));
    assert_eq!(code(&bad_id), Some(ErrorCode::InvalidInput));
    let no_tty = tools.call("job_start", json!({"command": "cat", "input": "x"}));
    assert_eq!(code(&no_tty), Some(ErrorCode::InvalidInput));
    let bad_regex = tools.call("job_start", json!({"command": "true", "wait_for": "("}));
    assert_eq!(code(&bad_regex), Some(ErrorCode::InvalidInput));
    let too_long = tools.call("job_start", json!({"command": "true", "wait_ms": 30001}));
    assert_eq!(code(&too_long), Some(ErrorCode::InvalidInput));
    let started = job_json(&tools.call(
        "job_start",
        json!({"command": "echo ready; sleep 30", "wait_for": "ready"}),
    ));
    let id = started["job_id"].as_str().unwrap().to_owned();
    let text = tools.call("job_write", json!({"job_id": id, "input": "hello"}));
    assert_eq!(code(&text), Some(ErrorCode::InvalidInput));
    assert!(text.text.contains("no terminal"), "{}", text.text);
    let empty = tools.call("job_write", json!({"job_id": id}));
    assert_eq!(code(&empty), Some(ErrorCode::InvalidInput));
    let interrupted = job_json(&tools.call(
        "job_write",
        json!({"job_id": id, "keys": ["C-c"], "wait_ms": 5000}),
    ));
    assert_eq!(interrupted["status"], "exited");
    assert_eq!(interrupted["signal"], "SIGINT");
}

#[test]
fn a_terminal_job_answers_a_prompt_and_shows_its_screen() {
    let (_dir, tools) = workspace();
    let started = job_json(&tools.call(
        "job_start",
        json!({"command": "printf 'Continue? (y/n) '; read a; echo \"got $a\"", "tty": true,
               "wait_for": "\\(y/n\\) $", "rows": 10, "cols": 40}),
    ));
    assert_eq!(started["output"], "Continue? (y/n) ");
    let id = started["job_id"].as_str().unwrap().to_owned();
    let answered = job_json(&tools.call(
        "job_write",
        json!({"job_id": id, "input": "y\n", "wait_ms": 5000, "wait_for": "got y"}),
    ));
    assert_eq!(answered["matched"], true);
    assert!(
        answered["output"].as_str().unwrap().contains("got y"),
        "{answered}"
    );
    let screen = job_json(&tools.call("job_read", json!({"job_id": id, "screen": true})));
    assert!(
        screen["screen"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Continue? (y/n) y\ngot y"),
        "{screen}"
    );
    assert_eq!(screen["screen"]["alternate_screen"], false);
}
