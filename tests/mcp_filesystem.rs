//! The filesystem surface end to end: `agent-tools mcp --surface filesystem`
//! over stdio, each tool with the parameter names, output formats and
//! JSON-RPC error codes of an MCP filesystem server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

#[path = "support/mcp_client.rs"]
mod mcp_client;
#[path = "support/tree.rs"]
mod tree;

use std::path::Path;

use mcp_client::McpClient;
use serde_json::{Value, json};

use tree::sandbox;

/// Starts the filesystem surface; the server is killed if the test runs
/// past a minute, which makes a stuck call fail (the client sees stdout
/// close) instead of hanging.
fn filesystem(root: &Path, extra: &[&str]) -> McpClient {
    let mut args = vec!["--surface", "filesystem"];
    args.extend_from_slice(extra);
    McpClient::start_guarded(root, &args)
}

fn p(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

/// A call that must succeed: its text items.
fn ok(client: &mut McpClient, tool: &str, args: Value) -> Vec<String> {
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

/// A call that must fail with a JSON-RPC error: (code, message).
fn rpc_error(client: &mut McpClient, tool: &str, args: Value) -> (i64, String) {
    let response = client.request("tools/call", json!({"name": tool, "arguments": args}));
    let error = response
        .get("error")
        .unwrap_or_else(|| panic!("{tool}: expected a JSON-RPC error: {response}"));
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn lists_the_filesystem_tools_with_titles_and_hints() {
    let (_outer, root) = sandbox();
    let mut client = filesystem(&root, &[]);
    let listed = client.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<_> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "read_multiple_files",
            "list_directory",
            "get_file_info",
            "list_allowed_directories",
            "write_file",
            "create_directory",
            "move_file",
            "delete_file",
            "edit_file",
            "edit_files",
            "grep_files"
        ]
    );
    for tool in tools {
        assert!(tool["title"].is_string(), "{tool}");
        let hints = &tool["annotations"];
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(hints[hint].is_boolean(), "{tool}");
        }
        assert_eq!(hints["openWorldHint"], json!(false), "{tool}");
    }
}

#[test]
fn read_file_returns_text_and_decodes_utf16() {
    let (_outer, root) = sandbox();
    std::fs::write(root.join("a.txt"), "alpha\nbeta\n").unwrap();
    let mut utf16 = vec![0xFF, 0xFE];
    for unit in "héllo\n".encode_utf16() {
        utf16.extend_from_slice(&unit.to_le_bytes());
    }
    std::fs::write(root.join("u16.txt"), utf16).unwrap();
    let mut client = filesystem(&root, &[]);
    assert_eq!(
        ok(
            &mut client,
            "read_file",
            json!({"path": p(&root.join("a.txt"))})
        ),
        ["alpha\nbeta\n"]
    );
    assert_eq!(
        ok(
            &mut client,
            "read_file",
            json!({"path": p(&root.join("u16.txt"))})
        ),
        ["héllo\n"]
    );
    // A relative path is taken from the root.
    assert_eq!(
        ok(&mut client, "read_file", json!({"path": "a.txt"})),
        ["alpha\nbeta\n"]
    );
}

#[test]
fn read_file_error_codes() {
    let (outer, root) = sandbox();
    std::fs::write(outer.path().join("secret.txt"), "no").unwrap();
    std::os::unix::fs::symlink(outer.path().join("secret.txt"), root.join("link")).unwrap();
    std::fs::write(root.join("bin"), b"\x00\x01\x02binary").unwrap();
    let mut client = filesystem(&root, &[]);
    let (code, message) = rpc_error(
        &mut client,
        "read_file",
        json!({"path": p(&root.join("missing.txt"))}),
    );
    assert_eq!(code, -32002, "{message}");
    let (code, message) = rpc_error(
        &mut client,
        "read_file",
        json!({"path": p(&outer.path().join("secret.txt"))}),
    );
    assert_eq!(code, -32001, "{message}");
    let (code, message) = rpc_error(
        &mut client,
        "read_file",
        json!({"path": p(&root.join("link"))}),
    );
    assert_eq!(code, -32001, "a symlink out of the root: {message}");
    let (code, _) = rpc_error(&mut client, "read_file", json!({"path": "../ws2/x"}));
    assert_eq!(code, -32001);
    let (code, message) = rpc_error(&mut client, "read_file", json!({}));
    assert_eq!(code, -32602, "{message}");
    let (code, message) = rpc_error(&mut client, "read_file", json!({"path": 7}));
    assert_eq!(code, -32602, "{message}");
    let (code, message) = rpc_error(&mut client, "read_file", json!({"path": p(&root)}));
    assert_eq!(code, -32603, "a directory: {message}");
    let (code, message) = rpc_error(
        &mut client,
        "read_file",
        json!({"path": p(&root.join("bin"))}),
    );
    assert_eq!(code, -32603, "binary: {message}");
    let (code, message) = rpc_error(&mut client, "no_such_tool", json!({}));
    assert_eq!(code, -32602, "{message}");
}

#[test]
fn read_multiple_files_reports_failures_inline() {
    let (outer, root) = sandbox();
    std::fs::write(root.join("a.txt"), "A\n").unwrap();
    std::fs::write(root.join("b.txt"), "B\n").unwrap();
    let a = p(&root.join("a.txt"));
    let b = p(&root.join("b.txt"));
    let missing = p(&root.join("missing.txt"));
    let outside = p(&outer.path().join("x.txt"));
    let mut client = filesystem(&root, &[]);
    let items = ok(
        &mut client,
        "read_multiple_files",
        json!({"paths": [a, missing, b, outside]}),
    );
    assert_eq!(items.len(), 4);
    assert_eq!(items[0], format!("{a}:\nA\n"));
    assert!(
        items[1].starts_with(&format!("{missing}:\n[error: ")) && items[1].ends_with(']'),
        "{}",
        items[1]
    );
    assert_eq!(items[2], format!("{b}:\nB\n"));
    assert!(
        items[3].starts_with(&format!("{outside}:\n[error: ")),
        "{}",
        items[3]
    );

    let (code, message) = rpc_error(&mut client, "read_multiple_files", json!({}));
    assert_eq!(code, -32602, "missing paths: {message}");
    let many: Vec<String> = (0..51).map(|_| a.clone()).collect();
    let (code, message) = rpc_error(&mut client, "read_multiple_files", json!({"paths": many}));
    assert_eq!(code, -32602, "51 paths: {message}");
    let fifty: Vec<String> = (0..50).map(|_| a.clone()).collect();
    assert_eq!(
        ok(&mut client, "read_multiple_files", json!({"paths": fifty})).len(),
        50
    );
}

#[test]
fn write_file_creates_parents_and_replaces_whole() {
    let (outer, root) = sandbox();
    let target = root.join("deep/er/new.txt");
    let mut client = filesystem(&root, &[]);
    assert_eq!(
        ok(
            &mut client,
            "write_file",
            json!({"path": p(&target), "content": "one\n"})
        ),
        [format!("Successfully wrote {}", p(&target))]
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "one\n");
    ok(
        &mut client,
        "write_file",
        json!({"path": p(&target), "content": "two"}),
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "two");

    let escape = outer.path().join("made/x.txt");
    let (code, message) = rpc_error(
        &mut client,
        "write_file",
        json!({"path": p(&escape), "content": "x"}),
    );
    assert_eq!(code, -32001, "{message}");
    assert!(
        !outer.path().join("made").exists(),
        "no directory made outside"
    );
    let (code, message) = rpc_error(&mut client, "write_file", json!({"path": p(&target)}));
    assert_eq!(code, -32602, "missing content: {message}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "two");
    let (code, message) = rpc_error(
        &mut client,
        "write_file",
        json!({"path": p(&root.join("deep")), "content": "x"}),
    );
    assert_eq!(code, -32603, "a directory: {message}");
    assert!(root.join("deep").is_dir());
}

#[test]
fn create_directory_is_mkdir_p() {
    let (outer, root) = sandbox();
    let dir = root.join("a/b/c");
    let mut client = filesystem(&root, &[]);
    ok(&mut client, "create_directory", json!({"path": p(&dir)}));
    assert!(dir.is_dir());
    // Again: already there, still a success.
    ok(&mut client, "create_directory", json!({"path": p(&dir)}));
    let (code, message) = rpc_error(
        &mut client,
        "create_directory",
        json!({"path": p(&outer.path().join("evil"))}),
    );
    assert_eq!(code, -32001, "{message}");
    assert!(!outer.path().join("evil").exists());
    std::fs::write(root.join("file"), "x").unwrap();
    let (code, message) = rpc_error(
        &mut client,
        "create_directory",
        json!({"path": p(&root.join("file/sub"))}),
    );
    assert_eq!(code, -32603, "under a file: {message}");
}

#[test]
fn list_directory_tags_and_sorts_entries() {
    let (_outer, root) = sandbox();
    std::fs::write(root.join("b.txt"), "").unwrap();
    std::fs::write(root.join("a.txt"), "").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::create_dir(root.join("Zed")).unwrap();
    let mut client = filesystem(&root, &[]);
    assert_eq!(
        ok(&mut client, "list_directory", json!({"path": p(&root)})),
        ["[DIR] Zed\n[FILE] a.txt\n[FILE] b.txt\n[DIR] sub\n"]
    );
    let (code, message) = rpc_error(
        &mut client,
        "list_directory",
        json!({"path": p(&root.join("nope"))}),
    );
    assert_eq!(code, -32002, "{message}");
    let (code, message) = rpc_error(&mut client, "list_directory", json!({"path": "/"}));
    assert_eq!(code, -32001, "{message}");
}

#[test]
fn get_file_info_gives_the_four_lines() {
    let (_outer, root) = sandbox();
    let file = root.join("f.txt");
    std::fs::write(&file, "12345").unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    let mut client = filesystem(&root, &[]);
    let text = ok(&mut client, "get_file_info", json!({"path": p(&file)})).remove(0);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(lines[0], "type: file");
    assert_eq!(lines[1], "size: 5");
    let modified = lines[2].strip_prefix("modified: ").unwrap();
    // ISO 8601, UTC: 2024-01-02T03:04:05Z
    assert_eq!(modified.len(), 20, "{modified}");
    assert!(modified.ends_with('Z') && modified.as_bytes()[10] == b'T');
    assert_eq!(lines[3], "permissions: 640");
    let text = ok(&mut client, "get_file_info", json!({"path": p(&root)})).remove(0);
    assert!(text.starts_with("type: directory\n"), "{text}");
    let (code, message) = rpc_error(
        &mut client,
        "get_file_info",
        json!({"path": p(&root.join("nope"))}),
    );
    assert_eq!(code, -32002, "{message}");
}

#[test]
fn list_allowed_directories_names_the_root_and_its_access() {
    let (_outer, root) = sandbox();
    let mut client = filesystem(&root, &[]);
    assert_eq!(
        ok(&mut client, "list_allowed_directories", json!({})),
        [format!("{} (read-write)\n", p(&root))]
    );
    let mut client = filesystem(&root, &["--read-only"]);
    assert_eq!(
        ok(&mut client, "list_allowed_directories", json!({})),
        [format!("{} (read-only)\n", p(&root))]
    );
    let (code, message) = rpc_error(
        &mut client,
        "write_file",
        json!({"path": p(&root.join("x")), "content": ""}),
    );
    assert_eq!(code, -32602, "hidden in read-only mode: {message}");
    assert!(!root.join("x").exists());
}

#[test]
fn move_file_creates_parents_and_never_overwrites() {
    let (outer, root) = sandbox();
    std::fs::write(root.join("a.txt"), "A").unwrap();
    std::fs::write(root.join("b.txt"), "B").unwrap();
    let mut client = filesystem(&root, &[]);
    let to = root.join("new/dir/a.txt");
    ok(
        &mut client,
        "move_file",
        json!({"source": p(&root.join("a.txt")), "destination": p(&to)}),
    );
    assert_eq!(std::fs::read_to_string(&to).unwrap(), "A");
    assert!(!root.join("a.txt").exists());

    let before = tree::snapshot(&root);
    let (code, message) = rpc_error(
        &mut client,
        "move_file",
        json!({"source": p(&to), "destination": p(&root.join("b.txt"))}),
    );
    assert_eq!(code, -32603, "existing destination: {message}");
    assert_eq!(tree::snapshot(&root), before, "nothing changed");

    let (code, message) = rpc_error(
        &mut client,
        "move_file",
        json!({"source": p(&root.join("gone")), "destination": p(&root.join("c"))}),
    );
    assert_eq!(code, -32002, "{message}");
    let (code, message) = rpc_error(
        &mut client,
        "move_file",
        json!({"source": p(&to), "destination": p(&outer.path().join("out.txt"))}),
    );
    assert_eq!(code, -32001, "{message}");
    assert_eq!(tree::snapshot(&root), before);
    let (code, message) = rpc_error(&mut client, "move_file", json!({"source": p(&to)}));
    assert_eq!(code, -32602, "{message}");
}

#[test]
fn delete_file_removes_files_trees_and_links_but_not_roots() {
    let (outer, root) = sandbox();
    std::fs::write(root.join("f.txt"), "x").unwrap();
    std::fs::create_dir_all(root.join("tree/inner")).unwrap();
    std::fs::write(root.join("tree/inner/g.txt"), "y").unwrap();
    std::fs::create_dir(root.join("kept")).unwrap();
    std::fs::write(root.join("kept/k.txt"), "k").unwrap();
    std::os::unix::fs::symlink(root.join("kept"), root.join("link")).unwrap();
    std::fs::write(outer.path().join("outside.txt"), "o").unwrap();
    std::os::unix::fs::symlink(outer.path().join("outside.txt"), root.join("out-link")).unwrap();
    let mut client = filesystem(&root, &[]);

    ok(
        &mut client,
        "delete_file",
        json!({"path": p(&root.join("f.txt"))}),
    );
    assert!(!root.join("f.txt").exists());
    ok(
        &mut client,
        "delete_file",
        json!({"path": p(&root.join("tree"))}),
    );
    assert!(!root.join("tree").exists());
    // A link is removed, never followed.
    ok(
        &mut client,
        "delete_file",
        json!({"path": p(&root.join("link"))}),
    );
    assert!(root.join("link").symlink_metadata().is_err());
    assert_eq!(
        std::fs::read_to_string(root.join("kept/k.txt")).unwrap(),
        "k"
    );
    ok(
        &mut client,
        "delete_file",
        json!({"path": p(&root.join("out-link"))}),
    );
    assert_eq!(
        std::fs::read_to_string(outer.path().join("outside.txt")).unwrap(),
        "o"
    );

    let (code, message) = rpc_error(&mut client, "delete_file", json!({"path": p(&root)}));
    assert_eq!(code, -32001, "the root: {message}");
    let (code, _) = rpc_error(&mut client, "delete_file", json!({"path": "."}));
    assert_eq!(code, -32001);
    assert!(root.is_dir());
    let (code, message) = rpc_error(
        &mut client,
        "delete_file",
        json!({"path": p(&root.join("gone"))}),
    );
    assert_eq!(code, -32002, "{message}");
    let (code, message) = rpc_error(
        &mut client,
        "delete_file",
        json!({"path": p(&outer.path().join("outside.txt"))}),
    );
    assert_eq!(code, -32001, "{message}");
    assert!(outer.path().join("outside.txt").exists());
}

#[test]
fn several_roots_each_keep_their_access() {
    let (outer, first) = sandbox();
    let second = outer.path().join("second");
    let frozen = outer.path().join("frozen");
    std::fs::create_dir_all(&second).unwrap();
    std::fs::create_dir_all(&frozen).unwrap();
    std::fs::write(frozen.join("keep.txt"), "kept\n").unwrap();
    let mut client = filesystem(
        &first,
        &["--root", &p(&second), "--read-only-root", &p(&frozen)],
    );
    assert_eq!(
        ok(&mut client, "list_allowed_directories", json!({})),
        [format!(
            "{} (read-write)\n{} (read-write)\n{} (read-only)\n",
            p(&first),
            p(&second),
            p(&frozen)
        )]
    );
    // A relative path is taken from the first root.
    ok(
        &mut client,
        "write_file",
        json!({"path": "rel.txt", "content": "r"}),
    );
    assert_eq!(std::fs::read_to_string(first.join("rel.txt")).unwrap(), "r");
    // Every root is written beneath its own handle.
    ok(
        &mut client,
        "write_file",
        json!({"path": p(&second.join("sub/s.txt")), "content": "s"}),
    );
    assert_eq!(
        std::fs::read_to_string(second.join("sub/s.txt")).unwrap(),
        "s"
    );
    // A read-only root reads, and refuses every write with -32001.
    assert_eq!(
        ok(
            &mut client,
            "read_file",
            json!({"path": p(&frozen.join("keep.txt"))})
        ),
        ["kept\n"]
    );
    for (tool, args) in [
        (
            "write_file",
            json!({"path": p(&frozen.join("keep.txt")), "content": "x"}),
        ),
        ("create_directory", json!({"path": p(&frozen.join("d"))})),
        ("delete_file", json!({"path": p(&frozen.join("keep.txt"))})),
        (
            "move_file",
            json!({"source": p(&frozen.join("keep.txt")), "destination": p(&frozen.join("k2"))}),
        ),
    ] {
        let (code, message) = rpc_error(&mut client, tool, args);
        assert_eq!(code, -32001, "{tool}: {message}");
        assert!(message.contains("read-only"), "{tool}: {message}");
    }
    assert_eq!(
        std::fs::read_to_string(frozen.join("keep.txt")).unwrap(),
        "kept\n"
    );
    assert!(!frozen.join("d").exists());
    // A path in none of the roots is -32001 and names them.
    let (code, message) = rpc_error(
        &mut client,
        "read_file",
        json!({"path": p(&outer.path().join("elsewhere.txt"))}),
    );
    assert_eq!(code, -32001, "{message}");
    assert!(message.contains(&p(&frozen)), "{message}");
    // A move between two roots is refused and moves nothing.
    let (code, message) = rpc_error(
        &mut client,
        "move_file",
        json!({"source": p(&first.join("rel.txt")), "destination": p(&second.join("rel.txt"))}),
    );
    assert_eq!(code, -32602, "{message}");
    assert!(first.join("rel.txt").exists() && !second.join("rel.txt").exists());
}

#[test]
fn a_read_only_root_nested_in_a_writable_one_stays_read_only() {
    let (_outer, root) = sandbox();
    let inner = root.join("vendor");
    std::fs::create_dir_all(&inner).unwrap();
    let mut client = filesystem(&root, &["--read-only-root", &p(&inner)]);
    let (code, message) = rpc_error(
        &mut client,
        "write_file",
        json!({"path": p(&inner.join("x.txt")), "content": "x"}),
    );
    assert_eq!(code, -32001, "{message}");
    assert!(!inner.join("x.txt").exists());
    ok(
        &mut client,
        "write_file",
        json!({"path": p(&root.join("x.txt")), "content": "x"}),
    );
}
