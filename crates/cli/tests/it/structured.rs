//! Structured output (`--structured-output on`): every tool of the default
//! and filesystem surfaces called over MCP, each answer's
//! `structuredContent` validated against the tool's `outputSchema`, its
//! text the same as without the option; off, nothing of it shows.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use std::collections::BTreeMap;
use std::path::Path;

use crate::mcp_client::McpClient;
use agent_tools_test_support::tree::sandbox;
use serde_json::{Map, Value, json};

/// A 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0a, 0x49, 0x44, 0x41, 0x54,
    0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1, 0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// Tools whose answers depend on timing or process ids: their texts are
/// compared with every number masked, and the waits are generous.
const VOLATILE: &[&str] = &[
    "job_start",
    "job_read",
    "job_write",
    "job_kill",
    "job_list",
    "changes",
    "get_file_info",
    "start_process",
    "read_process_output",
    "interact_with_process",
    "force_terminate",
    "list_sessions",
];

pub(crate) fn workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let (outer, root) = sandbox();
    std::fs::write(root.join("a.txt"), "hello\nworld\n").unwrap();
    std::fs::write(root.join("pic.png"), PNG).unwrap();
    (outer, root)
}

/// The calls that exercise every tool of the default surface (and the
/// journal's two), in an order where each succeeds.
pub(crate) fn default_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("read_file", json!({"path": "a.txt"})),
        ("list_dir", json!({"path": "."})),
        ("glob", json!({"pattern": "*.txt"})),
        (
            "grep",
            json!({"pattern": "hello", "output_mode": "content"}),
        ),
        (
            "write_file",
            json!({"path": "b.txt", "content": "one\ntwo\n"}),
        ),
        ("changes", json!({})),
        ("undo", json!({"call": 1, "dry_run": true})),
        (
            "edit_file",
            json!({"path": "b.txt", "old_string": "one", "new_string": "uno"}),
        ),
        (
            "multi_edit",
            json!({"path": "b.txt", "edits": [{"old_string": "two", "new_string": "dos"}]}),
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: c.txt\n+new\n*** End Patch\n"}),
        ),
        ("bash", json!({"command": "echo out; echo err >&2"})),
        (
            "job_start",
            json!({"command": "echo ready; read x; echo got $x; sleep 30", "tty": true,
                "wait_for": "ready", "wait_ms": 20000}),
        ),
        (
            "job_write",
            json!({"job_id": "job_1", "input": "yes\n", "wait_for": "got yes", "wait_ms": 20000}),
        ),
        (
            "job_read",
            json!({"job_id": "job_1", "wait_ms": 0, "screen": true}),
        ),
        ("job_list", json!({})),
        ("job_kill", json!({"job_id": "job_1"})),
    ]
}

/// The calls that exercise every tool of the filesystem surface, unlisted
/// ones included.
pub(crate) fn filesystem_calls(root: &Path) -> Vec<(&'static str, Value)> {
    let p = |name: &str| root.join(name).display().to_string();
    vec![
        ("read_file", json!({"path": p("a.txt")})),
        ("read_file", json!({"path": p("pic.png")})),
        ("read_text_file", json!({"path": p("a.txt")})),
        ("read_media_file", json!({"path": p("pic.png")})),
        ("read_multiple_files", json!({"paths": [p("a.txt")]})),
        ("list_directory", json!({"path": p(".")})),
        ("get_file_info", json!({"path": p("a.txt")})),
        ("list_allowed_directories", json!({})),
        (
            "write_file",
            json!({"path": p("b.txt"), "content": "one\n"}),
        ),
        ("create_directory", json!({"path": p("d")})),
        (
            "move_file",
            json!({"source": p("b.txt"), "destination": p("d/b.txt")}),
        ),
        (
            "edit_file",
            json!({"path": p("d/b.txt"), "edits": [{"oldText": "one", "newText": "uno"}]}),
        ),
        (
            "edit_files",
            json!({"paths": [p("d/b.txt")], "edits": [{"oldText": "uno", "newText": "eins"}]}),
        ),
        ("delete_file", json!({"path": p("d/b.txt")})),
        ("directory_tree", json!({"path": p(".")})),
        (
            "search_files",
            json!({"directory": p("."), "nameContains": "a"}),
        ),
        (
            "glob_search",
            json!({"directory": p("."), "globs": ["*.txt"]}),
        ),
        ("grep_files", json!({"regex": "hello", "directory": p(".")})),
        ("bash", json!({"command": "echo out; echo err >&2"})),
        (
            "start_process",
            json!({"command": "echo ready; read x; echo got $x", "timeout_ms": 5000}),
        ),
        ("list_sessions", json!({})),
    ]
}

/// The filesystem process calls that need the pid `start_process` gave.
pub(crate) fn process_calls(pid: i64) -> Vec<(&'static str, Value)> {
    vec![
        (
            "interact_with_process",
            json!({"pid": pid, "input": "yes", "timeout_ms": 5000}),
        ),
        ("read_process_output", json!({"pid": pid, "timeout_ms": 0})),
        ("force_terminate", json!({"pid": pid})),
    ]
}

/// The output schemas a server lists, by tool name.
fn listed_schemas(client: &mut McpClient) -> BTreeMap<String, Option<Value>> {
    let listed = client.request("tools/list", json!({}));
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            (
                tool["name"].as_str().unwrap().to_owned(),
                tool.get("outputSchema").cloned(),
            )
        })
        .collect()
}

/// `schema` with every object schema closed (`additionalProperties:
/// false`): a field an answer has and the schema does not name fails.
fn closed(schema: &Value) -> Value {
    let mut schema = schema.clone();
    fn close(schema: &mut Value) {
        let Value::Object(map) = schema else { return };
        if map.contains_key("properties") {
            map.entry("additionalProperties")
                .or_insert(Value::Bool(false));
        }
        if let Some(Value::Object(properties)) = map.get_mut("properties") {
            properties.values_mut().for_each(close);
        }
        if let Some(items) = map.get_mut("items") {
            close(items);
        }
    }
    close(&mut schema);
    schema
}

fn validate(tool: &str, schema: &Value, value: &Value) {
    let validator = jsonschema::validator_for(&closed(schema)).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(value)
        .map(|err| format!("{}: {err}", err.instance_path()))
        .collect();
    assert!(problems.is_empty(), "{tool}: {problems:#?}\n{value}");
}

/// The text items of a result, joined as the structured copy joins them.
fn joined_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|item| item["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// Every number masked, for texts that hold process ids and times.
fn masked(text: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for ch in text.chars() {
        if ch.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(ch);
        }
    }
    out
}

/// Runs `calls` on a server, returning each call's result.
fn run(client: &mut McpClient, calls: &[(&'static str, Value)]) -> Vec<(&'static str, Value)> {
    calls
        .iter()
        .map(|(tool, args)| {
            let response = client.request("tools/call", json!({"name": tool, "arguments": args}));
            let result = response["result"].clone();
            assert_eq!(result["isError"], false, "{tool}: {response}");
            (*tool, result)
        })
        .collect()
}

/// The pid a filesystem `start_process` answer names.
fn started_pid(result: &Value) -> i64 {
    let text = joined_text(result);
    text.strip_prefix("Process started with PID ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("{text}"))
}

/// What a run of every call gives: the output schemas listed, each
/// call's result, and the workspace root (to be masked in texts).
struct Run {
    schemas: BTreeMap<String, Option<Value>>,
    results: Vec<(&'static str, Value)>,
    root: String,
}

/// Runs every call of a surface on a fresh workspace, with the option on
/// or off.
fn every_call(surface: &str, structured: &str) -> Run {
    let (_outer, root) = workspace();
    let journal = tempfile::tempdir().unwrap();
    let journal_dir = journal.path().display().to_string();
    let mut args = vec!["--surface", surface, "--structured-output", structured];
    if surface == "agent-tools" {
        args.extend(["--journal", "--journal-dir", &journal_dir]);
    }
    let mut client = McpClient::start_guarded(&root, &args);
    let schemas = listed_schemas(&mut client);
    let results = if surface == "agent-tools" {
        run(&mut client, &default_calls())
    } else {
        let mut results = run(&mut client, &filesystem_calls(&root));
        let pid = started_pid(
            &results
                .iter()
                .find(|(t, _)| *t == "start_process")
                .unwrap()
                .1,
        );
        results.extend(run(&mut client, &process_calls(pid)));
        results
    };
    Run {
        schemas,
        results,
        root: root.display().to_string(),
    }
}

/// Every surface's output schema of every tool, unlisted ones included.
fn declared_schemas(surface: &str) -> BTreeMap<&'static str, Value> {
    let choice = agent_tools_cli::surface(surface).unwrap();
    choice
        .every_tool()
        .into_iter()
        .map(|tool| (tool.name(), Value::Object((**tool.output_schema()).clone())))
        .chain(
            // The journal's tools, which the host adds to every surface.
            [("changes", text_schema()), ("undo", text_schema())],
        )
        .collect()
}

fn text_schema() -> Value {
    let tools = agent_tools_cli::surface("agent-tools")
        .unwrap()
        .every_tool();
    let read = tools.iter().find(|t| t.name() == "read_file").unwrap();
    Value::Object((**read.output_schema()).clone())
}

fn check_surface(surface: &str) {
    let Run {
        schemas: on_schemas,
        results: on,
        root: on_root,
    } = every_call(surface, "on");
    let Run {
        schemas: off_schemas,
        results: off,
        root: off_root,
    } = every_call(surface, "off");
    // The two workspaces differ in name only.
    let shown = |content: &Value, root: &str| content.to_string().replace(root, "ROOT");
    let declared = declared_schemas(surface);
    // Off: no schema listed; on: each listed tool's declared one.
    assert!(
        off_schemas.values().all(Option::is_none),
        "{off_schemas:#?}"
    );
    for (name, schema) in &on_schemas {
        assert_eq!(schema.as_ref(), declared.get(name.as_str()), "{name}");
    }
    let called: std::collections::BTreeSet<&str> = on.iter().map(|(t, _)| *t).collect();
    for name in on_schemas.keys() {
        assert!(
            called.contains(name.as_str()),
            "{surface}: {name} never called"
        );
    }
    for ((tool, with), (_, without)) in on.iter().zip(&off) {
        assert!(
            without.get("structuredContent").is_none(),
            "{tool}: {without}"
        );
        let copy = with
            .get("structuredContent")
            .unwrap_or_else(|| panic!("{tool}: no structuredContent: {with}"));
        validate(tool, &declared[tool], copy);
        // The copy is derived from the text, which is as without it.
        match copy.get("content") {
            Some(Value::String(text)) => assert_eq!(*text, joined_text(with), "{tool}"),
            _ => {
                let parsed: Value = serde_json::from_str(&joined_text(with)).unwrap();
                assert_eq!(*copy, without_nulls(&parsed), "{tool}");
            }
        }
        let (with, without) = (
            shown(&with["content"], &on_root),
            shown(&without["content"], &off_root),
        );
        if VOLATILE.contains(tool) {
            assert_eq!(masked(&with), masked(&without), "{tool}");
        } else {
            assert_eq!(with, without, "{tool}");
        }
    }
}

#[test]
fn every_default_tool_answers_its_declared_schema_with_its_text_unchanged() {
    check_surface("agent-tools");
}

#[test]
fn every_filesystem_tool_answers_its_declared_schema_with_its_text_unchanged() {
    check_surface("filesystem");
}

#[test]
fn output_schemas_are_portable_and_pinned() {
    let mut pinned = Map::new();
    for choice in agent_tools_cli::surfaces() {
        for tool in choice.every_tool() {
            let problems = agent_tools::schema::portability_problems(tool.output_schema());
            assert!(
                problems.is_empty(),
                "{}/{}: {problems:#?}",
                choice.name(),
                tool.name()
            );
        }
        if ["agent-tools", "filesystem"].contains(&choice.name()) {
            let schemas: Map<String, Value> = choice
                .every_tool()
                .into_iter()
                .map(|tool| {
                    (
                        tool.name().to_owned(),
                        Value::Object((**tool.output_schema()).clone()),
                    )
                })
                .collect();
            pinned.insert(choice.name().to_owned(), Value::Object(schemas));
        }
    }
    insta::assert_json_snapshot!("output_schemas", pinned);
}

#[test]
fn a_copy_past_the_output_budget_is_left_out_and_the_text_kept() {
    let (_outer, root) = workspace();
    // A file whose numbered text fits 2 KiB alone, but not with its copy.
    std::fs::write(root.join("big.txt"), "x".repeat(1200)).unwrap();
    let args = ["--structured-output", "on", "--max-output-bytes", "2048"];
    let mut client = McpClient::start_guarded(&root, &args);
    let mut plain = McpClient::start_guarded(&root, &["--max-output-bytes", "2048"]);
    let call = json!({"name": "read_file", "arguments": {"path": "big.txt"}});
    let with = client.request("tools/call", call.clone())["result"].clone();
    let without = plain.request("tools/call", call)["result"].clone();
    assert_eq!(with["isError"], false, "{with}");
    assert!(with.get("structuredContent").is_none(), "{with}");
    assert_eq!(with["content"], without["content"]);
    // A small one in the same server keeps its copy.
    let small = client.request(
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "a.txt"}}),
    );
    assert_eq!(
        small["result"]["structuredContent"],
        json!({"content": "     1\thello\n     2\tworld\n"})
    );
}

#[test]
fn an_error_result_carries_no_copy() {
    let (_outer, root) = workspace();
    let mut client = McpClient::start_guarded(&root, &["--structured-output", "on"]);
    let failed = client.request(
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "missing.txt"}}),
    );
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert!(
        failed["result"].get("structuredContent").is_none(),
        "{failed}"
    );
    // A command's non-zero exit is a success on the default surface.
    let exited = client.request(
        "tools/call",
        json!({"name": "bash", "arguments": {"command": "exit 3"}}),
    );
    assert_eq!(
        exited["result"]["structuredContent"]["exit_code"], 3,
        "{exited}"
    );
}

/// A brief call answered by the stdio fast lane and the same call through
/// the protocol library (a request naming its version goes there) carry
/// the same bytes, the structured copy included.
#[test]
fn the_fast_lane_and_the_library_path_answer_the_same_bytes() {
    let (_outer, root) = workspace();
    let mut client = McpClient::start_guarded(&root, &["--structured-output", "on"]);
    let mut ask = |id: u64, meta: &str| {
        client.send_raw(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"read_file\",\"arguments\":{{\"path\":\"a.txt\"}}{meta}}}}}\n")
                .as_bytes(),
        );
        client.next_line()
    };
    let fast = ask(101, "");
    let library = ask(
        102,
        r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}"#,
    );
    assert!(
        fast.contains(r#""structuredContent":{"content":"#),
        "{fast}"
    );
    assert_eq!(fast.replace("101", "ID"), library.replace("102", "ID"));
}

/// The Claude Code and codex surfaces mirror tools that declare no output
/// schema: asking them for structured output fails at start-up.
#[test]
fn surfaces_without_structured_output_refuse_it() {
    let (_outer, root) = workspace();
    for surface in ["claude-code", "codex"] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_agent-tools"))
            .args([
                "mcp",
                "--surface",
                surface,
                "--structured-output",
                "on",
                "--root",
            ])
            .arg(&root)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!output.status.success(), "{surface}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!("the {surface} surface has no structured output")),
            "{stderr}"
        );
        assert!(output.stdout.is_empty());
    }
}
