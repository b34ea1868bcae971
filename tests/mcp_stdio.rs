//! End-to-end: the `agent-tools` binary speaking MCP over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

#[path = "support/mcp_client.rs"]
mod mcp_client;

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
