//! Calls to the filesystem surface for its end-to-end tests: start it,
//! spell a path, expect a success's text items or a JSON-RPC error.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::{Value, json};

use crate::mcp_client::McpClient;

/// Starts the filesystem surface on `root` with `extra` arguments; the
/// server is killed if the test runs past a minute, which makes a stuck
/// call fail (the client sees stdout close) instead of hanging.
pub fn filesystem(root: &Path, extra: &[&str]) -> McpClient {
    let mut args = vec!["--surface", "filesystem"];
    args.extend_from_slice(extra);
    McpClient::start_guarded(root, &args)
}

/// A path as the tools take it.
pub fn p(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

/// A call that must succeed: its text items.
pub fn ok(client: &mut McpClient, tool: &str, args: Value) -> Vec<String> {
    let response = client.request("tools/call", json!({"name": tool, "arguments": args}));
    let result = response
        .get("result")
        .unwrap_or_else(|| panic!("{tool}: no result: {response}"));
    assert_ne!(result["isError"], json!(true), "{tool}: {response}");
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["text"].as_str().unwrap().to_owned())
        .collect()
}

/// The one text item of a call that must succeed.
pub fn ok1(client: &mut McpClient, tool: &str, args: Value) -> String {
    let items = ok(client, tool, args);
    assert_eq!(items.len(), 1, "{items:?}");
    items.into_iter().next().unwrap()
}

/// A call that must fail with a JSON-RPC error: (code, message).
pub fn rpc_error(client: &mut McpClient, tool: &str, args: Value) -> (i64, String) {
    let response = client.request("tools/call", json!({"name": tool, "arguments": args}));
    let error = response
        .get("error")
        .unwrap_or_else(|| panic!("{tool}: expected a JSON-RPC error: {response}"));
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    )
}
