//! The filesystem surface end to end: `agent-tools mcp --surface filesystem`
//! over stdio, each tool with the parameter names, output formats and
//! JSON-RPC error codes of an MCP filesystem server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::filesystem_calls;
use crate::mcp_client;
use agent_tools_test_support::tree;

use std::path::Path;

use mcp_client::McpClient;
use serde_json::{Value, json};

use filesystem_calls::{filesystem, ok, p, rpc_error};
use tree::sandbox;

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
            "directory_tree",
            "search_files",
            "glob_search",
            "bash",
            "start_process",
            "read_process_output",
            "interact_with_process",
            "force_terminate",
            "list_sessions",
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
        let open_world = ["bash", "start_process", "interact_with_process"]
            .contains(&tool["name"].as_str().unwrap());
        assert_eq!(hints["openWorldHint"], json!(open_world), "{tool}");
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
    // A move between two writable roots is one rename between their
    // handles.
    ok(
        &mut client,
        "move_file",
        json!({"source": p(&first.join("rel.txt")), "destination": p(&second.join("rel.txt"))}),
    );
    assert!(!first.join("rel.txt").exists());
    assert_eq!(
        std::fs::read_to_string(second.join("rel.txt")).unwrap(),
        "r"
    );
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

/// The layout of the review's C2: `A` writable, `A/ro` read-only (holding
/// `keep.txt`), `A/link -> ro`, and a second read-only root deeper down,
/// `A/vendor/lib`, under a plain directory of `A`. Answers the sandbox,
/// `A`, and the server started on them.
fn nested_read_only() -> (tempfile::TempDir, std::path::PathBuf, McpClient) {
    let (outer, root) = sandbox();
    let ro = root.join("ro");
    let lib = root.join("vendor/lib");
    std::fs::create_dir_all(&ro).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(ro.join("keep.txt"), "orig\n").unwrap();
    std::fs::write(lib.join("lib.rs"), "pub fn f() {}\n").unwrap();
    std::os::unix::fs::symlink("ro", root.join("link")).unwrap();
    std::fs::write(root.join("mine.txt"), "mine\n").unwrap();
    let client = filesystem(
        &root,
        &["--read-only-root", &p(&ro), "--read-only-root", &p(&lib)],
    );
    (outer, root, client)
}

#[test]
fn c2_no_spelling_writes_into_a_nested_read_only_root() {
    let (outer, a, mut client) = nested_read_only();
    let ro = a.join("ro");
    let before = tree::snapshot(outer.path());
    let abs = |rest: &str| format!("{}/{rest}", p(&a));
    let edit = json!([{"oldText": "orig", "newText": "EDITED"}]);
    let attempts = [
        // The control: the read-only root's own path.
        (
            "write_file",
            json!({"path": p(&ro.join("new.txt")), "content": "x"}),
        ),
        // The review's nine.
        ("write_file", json!({"path": "ro/new.txt", "content": "x"})),
        (
            "write_file",
            json!({"path": abs("ro/../ro/n2.txt"), "content": "x"}),
        ),
        (
            "write_file",
            json!({"path": abs("link/n3.txt"), "content": "x"}),
        ),
        ("edit_file", json!({"path": "ro/keep.txt", "edits": edit})),
        ("create_directory", json!({"path": "ro/newdir"})),
        (
            "move_file",
            json!({"source": abs("link/keep.txt"), "destination": abs("stolen.txt")}),
        ),
        ("delete_file", json!({"path": abs("ro")})),
        ("move_file", json!({"source": "ro", "destination": "moved"})),
        // More spellings of the same places.
        (
            "edit_file",
            json!({"path": abs("link/keep.txt"), "edits": edit}),
        ),
        (
            "write_file",
            json!({"path": abs("missing/../link/n4.txt"), "content": "x"}),
        ),
        (
            "write_file",
            json!({"path": "link/sub/n5.txt", "content": "x"}),
        ),
        ("create_directory", json!({"path": abs("link/d1/d2")})),
        ("delete_file", json!({"path": abs("link/keep.txt")})),
        ("delete_file", json!({"path": "ro/../ro"})),
        ("delete_file", json!({"path": abs("link/..")})),
        (
            "move_file",
            json!({"source": abs("mine.txt"), "destination": abs("link/mine.txt")}),
        ),
        (
            "move_file",
            json!({"source": abs("ro/."), "destination": abs("moved")}),
        ),
        // A directory holding a read-only root is not removed or moved.
        ("delete_file", json!({"path": abs("vendor")})),
        (
            "move_file",
            json!({"source": "vendor", "destination": "elsewhere"}),
        ),
        // Nor is the writable root itself, however named.
        ("delete_file", json!({"path": p(&a)})),
        ("delete_file", json!({"path": abs("ro/..")})),
        (
            "move_file",
            json!({"source": abs("link/.."), "destination": abs("x")}),
        ),
    ];
    for (tool, args) in attempts {
        let (code, message) = rpc_error(&mut client, tool, args.clone());
        assert_eq!(code, -32001, "{tool} {args}: {message}");
        assert_eq!(
            tree::snapshot(outer.path()),
            before,
            "{tool} {args} changed the tree"
        );
    }
    // Reads still reach the read-only root by every spelling, and the
    // writable root is still written.
    for spelling in [
        abs("ro/keep.txt"),
        abs("link/keep.txt"),
        "ro/keep.txt".into(),
    ] {
        assert_eq!(
            ok(&mut client, "read_file", json!({"path": spelling})),
            ["orig\n"]
        );
    }
    ok(
        &mut client,
        "write_file",
        json!({"path": abs("ro/../free.txt"), "content": "free"}),
    );
    assert_eq!(std::fs::read_to_string(a.join("free.txt")).unwrap(), "free");
    // A link to the read-only root is an entry of the writable one: it is
    // moved or removed itself, and the root stays.
    ok(
        &mut client,
        "move_file",
        json!({"source": abs("link"), "destination": abs("link2")}),
    );
    ok(&mut client, "delete_file", json!({"path": abs("link2")}));
    assert_eq!(
        std::fs::read_to_string(ro.join("keep.txt")).unwrap(),
        "orig\n"
    );
}

#[test]
fn move_file_between_two_writable_roots_is_one_rename() {
    let (outer, first) = sandbox();
    let second = outer.path().join("second");
    std::fs::create_dir_all(&second).unwrap();
    std::fs::create_dir_all(first.join("tree/inner")).unwrap();
    std::fs::write(first.join("tree/inner/f.txt"), "f").unwrap();
    std::fs::write(first.join("a.txt"), "A").unwrap();
    std::fs::write(second.join("taken.txt"), "T").unwrap();
    let mut client = filesystem(&first, &["--root", &p(&second)]);
    // A file, into parents that are made.
    assert_eq!(
        ok(
            &mut client,
            "move_file",
            json!({"source": p(&first.join("a.txt")), "destination": p(&second.join("new/dir/a.txt"))}),
        ),
        [format!(
            "Successfully moved {} to {}",
            p(&first.join("a.txt")),
            p(&second.join("new/dir/a.txt"))
        )]
    );
    assert_eq!(
        std::fs::read_to_string(second.join("new/dir/a.txt")).unwrap(),
        "A"
    );
    assert!(!first.join("a.txt").exists());
    // A directory with everything in it, and back again.
    ok(
        &mut client,
        "move_file",
        json!({"source": p(&first.join("tree")), "destination": p(&second.join("tree"))}),
    );
    assert_eq!(
        std::fs::read_to_string(second.join("tree/inner/f.txt")).unwrap(),
        "f"
    );
    ok(
        &mut client,
        "move_file",
        json!({"source": "/".to_owned() + &p(&second.join("tree"))[1..], "destination": "tree"}),
    );
    assert!(first.join("tree/inner/f.txt").exists());
    // Never over an existing entry of the other root.
    std::fs::write(first.join("b.txt"), "B").unwrap();
    let before = tree::snapshot(outer.path());
    let (code, message) = rpc_error(
        &mut client,
        "move_file",
        json!({"source": p(&first.join("b.txt")), "destination": p(&second.join("taken.txt"))}),
    );
    assert_eq!(code, -32603, "{message}");
    assert_eq!(tree::snapshot(outer.path()), before);
    // Neither root can be moved into the other.
    let (code, message) = rpc_error(
        &mut client,
        "move_file",
        json!({"source": p(&second), "destination": p(&first.join("second"))}),
    );
    assert_eq!(code, -32001, "{message}");
    assert_eq!(tree::snapshot(outer.path()), before);
}

#[test]
fn move_file_across_filesystems_is_refused_and_changes_nothing() {
    use std::os::unix::fs::MetadataExt;
    let (outer, first) = sandbox();
    let Ok(shm) = tempfile::tempdir_in("/dev/shm") else {
        eprintln!("skipped: no /dev/shm for a second filesystem");
        return;
    };
    let dev = |path: &Path| std::fs::metadata(path).unwrap().dev();
    if dev(&first) == dev(shm.path()) {
        eprintln!("skipped: /dev/shm and the temporary directory are one filesystem");
        return;
    }
    std::fs::write(first.join("f.txt"), "f").unwrap();
    std::fs::create_dir(first.join("d")).unwrap();
    std::fs::write(first.join("d/g.txt"), "g").unwrap();
    let mut client = filesystem(&first, &["--root", &p(shm.path())]);
    let before = (tree::snapshot(outer.path()), tree::snapshot(shm.path()));
    for (source, destination) in [
        (first.join("f.txt"), shm.path().join("f.txt")),
        (first.join("d"), shm.path().join("new/parents/d")),
        (shm.path().join("new"), first.join("new")),
    ] {
        let (code, message) = rpc_error(
            &mut client,
            "move_file",
            json!({"source": p(&source), "destination": p(&destination)}),
        );
        if source.starts_with(shm.path()) {
            // The source is missing: that is said first.
            assert_eq!(code, -32002, "{message}");
            continue;
        }
        assert_eq!(code, -32603, "{message}");
        assert!(message.contains("different filesystems"), "{message}");
        assert!(message.contains("nothing was moved"), "{message}");
        assert_eq!(
            (tree::snapshot(outer.path()), tree::snapshot(shm.path())),
            before,
            "nothing changed, no parent made"
        );
    }
}

/// The whole result of a call that must succeed.
fn result(client: &mut McpClient, tool: &str, args: Value) -> Value {
    let response = client.request("tools/call", json!({"name": tool, "arguments": args}));
    response
        .get("result")
        .unwrap_or_else(|| panic!("{tool}: no result: {response}"))
        .clone()
}

/// Two roots side by side (`work` read-write, `frozen` read-only) in one
/// sandbox, with the server started on both.
fn two_roots() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    McpClient,
) {
    let (outer, root) = sandbox();
    let work = root.join("work");
    let frozen = root.join("frozen");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&frozen).unwrap();
    let client = filesystem(&work, &["--read-only-root", &p(&frozen)]);
    (outer, work, frozen, client)
}

#[test]
fn read_file_answers_binary_files_as_media_or_embedded_blobs() {
    let (_outer, root) = sandbox();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01".to_vec();
    std::fs::write(root.join("pic.png"), &png).unwrap();
    let mut wav = b"RIFF\x24\0\0\0WAVEfmt \x10\0\0\0".to_vec();
    wav.extend_from_slice(&[0; 24]);
    std::fs::write(root.join("sound.wav"), &wav).unwrap();
    std::fs::write(root.join("data bin"), b"\x00\x01\x02binary").unwrap();
    std::fs::write(root.join("text.txt"), "plain\n").unwrap();
    let mut client = filesystem(&root, &[]);

    let image = result(
        &mut client,
        "read_file",
        json!({"path": p(&root.join("pic.png"))}),
    );
    assert_eq!(image["content"][0]["type"], "image", "{image}");
    assert_eq!(image["content"][0]["mimeType"], "image/png");
    assert_eq!(image["content"][0]["data"], "iVBORw0KGgoAAAANSUhEUgAAAAE=");

    let audio = result(
        &mut client,
        "read_file",
        json!({"path": p(&root.join("sound.wav"))}),
    );
    assert_eq!(audio["content"][0]["type"], "audio", "{audio}");
    assert!(
        audio["content"][0]["mimeType"]
            .as_str()
            .unwrap()
            .starts_with("audio/")
    );

    let blob = result(
        &mut client,
        "read_file",
        json!({"path": p(&root.join("data bin"))}),
    );
    let resource = &blob["content"][0];
    assert_eq!(resource["type"], "resource", "{blob}");
    assert_eq!(resource["resource"]["mimeType"], "application/octet-stream");
    assert_eq!(resource["resource"]["blob"], "AAECYmluYXJ5");
    let uri = resource["resource"]["uri"].as_str().unwrap();
    assert!(
        uri.starts_with("file:///") && uri.ends_with("/data%20bin"),
        "{uri}"
    );

    // The unadvertised reader of media gives the same for any file.
    let media = result(
        &mut client,
        "read_media_file",
        json!({"path": p(&root.join("pic.png"))}),
    );
    assert_eq!(media["content"][0]["type"], "image");
    let media = result(
        &mut client,
        "read_media_file",
        json!({"path": p(&root.join("text.txt"))}),
    );
    assert_eq!(media["content"][0]["resource"]["mimeType"], "text/plain");
    let (code, _) = rpc_error(
        &mut client,
        "read_media_file",
        json!({"path": p(&root.join("nope"))}),
    );
    assert_eq!(code, -32002);

    // A binary file in read_multiple_files is an inline error, not a blob.
    let items = ok(
        &mut client,
        "read_multiple_files",
        json!({"paths": [p(&root.join("data bin")), p(&root.join("text.txt"))]}),
    );
    assert!(
        items[0].contains("[error:") && items[0].contains("read_file"),
        "{items:?}"
    );
    assert_eq!(items[1], format!("{}:\nplain\n", p(&root.join("text.txt"))));
}

#[test]
fn read_text_file_heads_and_tails_without_being_listed() {
    let (_outer, root) = sandbox();
    let lines: String = (1..=1000).map(|n| format!("line {n}\n")).collect();
    std::fs::write(root.join("log.txt"), lines).unwrap();
    let mut client = filesystem(&root, &[]);
    let listed = client.request("tools/list", json!({}));
    let names: Vec<_> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n == "read_text_file" || n == "read_media_file")
    );
    let path = p(&root.join("log.txt"));
    assert_eq!(
        ok(
            &mut client,
            "read_text_file",
            json!({"path": path, "head": 2})
        ),
        ["line 1\nline 2\n"]
    );
    assert_eq!(
        ok(
            &mut client,
            "read_text_file",
            json!({"path": path, "tail": 2})
        ),
        ["line 999\nline 1000\n"]
    );
    let whole = ok(&mut client, "read_text_file", json!({"path": path}));
    assert!(whole[0].starts_with("line 1\n") && whole[0].ends_with("line 1000\n"));
    let (code, message) = rpc_error(
        &mut client,
        "read_text_file",
        json!({"path": path, "head": 1, "tail": 1}),
    );
    assert_eq!(code, -32602, "{message}");
    let (code, _) = rpc_error(
        &mut client,
        "read_text_file",
        json!({"path": path, "head": -1}),
    );
    assert_eq!(code, -32602);
    let (code, _) = rpc_error(
        &mut client,
        "read_text_file",
        json!({"path": "/etc/passwd", "tail": 1}),
    );
    assert_eq!(code, -32001);
}

#[test]
fn search_files_matches_names_case_insensitively_with_legacy_names() {
    let (_outer, work, frozen, mut client) = two_roots();
    for dir in ["src/Config", "node_modules/config", "docs"] {
        std::fs::create_dir_all(work.join(dir)).unwrap();
    }
    std::fs::write(work.join("src/app_CONFIG.rs"), "").unwrap();
    std::fs::write(work.join("node_modules/config/index.js"), "").unwrap();
    std::fs::write(work.join("docs/readme.md"), "").unwrap();
    std::fs::write(frozen.join("config.toml"), "").unwrap();
    let w = |rel: &str| p(&work.join(rel));

    let found = ok(
        &mut client,
        "search_files",
        json!({"directory": p(&work), "nameContains": "config", "excludeGlobs": ["node_modules"]}),
    );
    assert_eq!(
        found,
        [format!("{}\n{}\n", w("src/Config"), w("src/app_CONFIG.rs"))]
    );
    // Directories and files alike; nothing is capped.
    let found = ok(
        &mut client,
        "search_files",
        json!({"directory": p(&work), "nameContains": "CONFIG"}),
    );
    assert_eq!(found[0].lines().count(), 3, "{found:?}");
    // The older names, and the newer winning over them.
    let legacy = ok(
        &mut client,
        "search_files",
        json!({"path": p(&work), "pattern": "config", "excludePatterns": ["node_modules"]}),
    );
    assert_eq!(
        legacy,
        [format!("{}\n{}\n", w("src/Config"), w("src/app_CONFIG.rs"))]
    );
    let both = ok(
        &mut client,
        "search_files",
        json!({"directory": p(&work), "path": "/nowhere", "nameContains": "readme", "pattern": "x"}),
    );
    assert_eq!(both, [format!("{}\n", w("docs/readme.md"))]);
    // A legacy pattern with glob characters is a glob over the relative path.
    let glob = ok(
        &mut client,
        "search_files",
        json!({"path": p(&work), "pattern": "**/*.md"}),
    );
    assert_eq!(glob, [format!("{}\n", w("docs/readme.md"))]);
    // The advertised schema names only the newer arguments.
    let listed = client.request("tools/list", json!({}));
    let tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_files")
        .unwrap()
        .clone();
    let properties = tool["inputSchema"]["properties"].as_object().unwrap();
    let mut keys: Vec<_> = properties.keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["directory", "excludeGlobs", "nameContains"]);
    assert_eq!(
        tool["inputSchema"]["required"],
        json!(["directory", "nameContains"])
    );

    // A read-only root is searched like any.
    let found = ok(
        &mut client,
        "search_files",
        json!({"directory": p(&frozen), "nameContains": "toml"}),
    );
    assert_eq!(found, [format!("{}\n", p(&frozen.join("config.toml")))]);
    assert_eq!(
        ok(
            &mut client,
            "search_files",
            json!({"directory": p(&work), "nameContains": "zzz"})
        ),
        ["(no matches found)\n"]
    );
    let (code, m) = rpc_error(&mut client, "search_files", json!({"nameContains": "x"}));
    assert_eq!(code, -32602, "{m}");
    let (code, m) = rpc_error(&mut client, "search_files", json!({"directory": p(&work)}));
    assert_eq!(code, -32602, "{m}");
    let (code, m) = rpc_error(
        &mut client,
        "search_files",
        json!({"directory": p(&work), "nameContains": ""}),
    );
    assert_eq!(code, -32602, "{m}");
    let (code, m) = rpc_error(
        &mut client,
        "search_files",
        json!({"directory": "/etc", "nameContains": "x"}),
    );
    assert_eq!(code, -32001, "{m}");
    let (code, m) = rpc_error(
        &mut client,
        "search_files",
        json!({"directory": w("gone"), "nameContains": "x"}),
    );
    assert_eq!(code, -32002, "{m}");
}

#[test]
fn directory_tree_follows_the_depth_rule() {
    let (_outer, work, _frozen, mut client) = two_roots();
    std::fs::create_dir_all(work.join("a/b")).unwrap();
    std::fs::create_dir_all(work.join("skip")).unwrap();
    std::fs::write(work.join("a/b/deep.txt"), "").unwrap();
    std::fs::write(work.join("a/one.txt"), "").unwrap();
    std::fs::write(work.join("top.txt"), "").unwrap();
    let tree = |client: &mut McpClient, args: Value| -> Value {
        let items = ok(client, "directory_tree", args);
        assert_eq!(items.len(), 1, "{items:?}");
        serde_json::from_str(&items[0]).unwrap()
    };
    let full = tree(&mut client, json!({"path": p(&work)}));
    assert_eq!(
        full,
        json!({"name": "work", "type": "directory", "children": [
            {"name": "a", "type": "directory", "children": [
                {"name": "b", "type": "directory", "children": [
                    {"name": "deep.txt", "type": "file"}]},
                {"name": "one.txt", "type": "file"}]},
            {"name": "skip", "type": "directory", "children": []},
            {"name": "top.txt", "type": "file"}]})
    );
    assert_eq!(
        tree(&mut client, json!({"path": p(&work), "depth": 0})),
        json!({"name": "work", "type": "directory"})
    );
    assert_eq!(
        tree(&mut client, json!({"path": p(&work), "depth": 1})),
        json!({"name": "work", "type": "directory", "children": [
            {"name": "a", "type": "directory"},
            {"name": "skip", "type": "directory"},
            {"name": "top.txt", "type": "file"}]})
    );
    let two = tree(&mut client, json!({"path": p(&work), "depth": 2}));
    assert_eq!(
        two["children"][0]["children"][0],
        json!({"name": "b", "type": "directory"})
    );
    let excluded = tree(
        &mut client,
        json!({"path": p(&work), "excludePatterns": ["skip", "*.txt"]}),
    );
    assert_eq!(
        excluded,
        json!({"name": "work", "type": "directory", "children": [
            {"name": "a", "type": "directory", "children": [
                {"name": "b", "type": "directory", "children": []}]}]})
    );
    let (code, m) = rpc_error(
        &mut client,
        "directory_tree",
        json!({"path": p(&work.join("gone"))}),
    );
    assert_eq!(code, -32002, "{m}");
    let (code, m) = rpc_error(&mut client, "directory_tree", json!({"path": "/etc"}));
    assert_eq!(code, -32001, "{m}");
    let (code, m) = rpc_error(
        &mut client,
        "directory_tree",
        json!({"path": p(&work), "depth": -1}),
    );
    assert_eq!(code, -32602, "{m}");
}

#[test]
fn directory_tree_is_cut_to_the_output_limit_with_a_note() {
    let (_outer, root) = sandbox();
    for n in 0..400 {
        std::fs::write(
            root.join(format!("file-with-a-longish-name-{n:04}.txt")),
            "",
        )
        .unwrap();
    }
    let mut client = filesystem(&root, &["--max-output-bytes", "4096"]);
    let items = ok(&mut client, "directory_tree", json!({"path": p(&root)}));
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(items[0].len() <= 4096, "{}", items[0].len());
    let tree: Value = serde_json::from_str(&items[0]).unwrap();
    let shown = tree["children"].as_array().unwrap().len();
    assert!(shown > 10 && shown < 400, "{shown}");
    assert_eq!(
        tree["children"][0]["name"],
        "file-with-a-longish-name-0000.txt"
    );
    assert!(
        items[1].contains(&format!("{shown} of 400 entries shown")),
        "{}",
        items[1]
    );
}

#[test]
fn glob_search_finds_files_sorted_and_capped() {
    let (_outer, work, _frozen, mut client) = two_roots();
    std::fs::create_dir_all(work.join("src/deep")).unwrap();
    std::fs::create_dir_all(work.join("target/x.rs")).unwrap();
    for file in [
        "src/b.rs",
        "src/a.rs",
        "src/deep/c.rs",
        "src/d.txt",
        "main.rs",
    ] {
        std::fs::write(work.join(file), "").unwrap();
    }
    let w = |rel: &str| p(&work.join(rel));
    let found = ok(
        &mut client,
        "glob_search",
        json!({"directory": p(&work), "globs": ["**/*.rs"], "excludeGlobs": ["src/deep"]}),
    );
    // Directories never come back, even when their names match.
    assert_eq!(
        found,
        [format!(
            "{}\n{}\n{}\n",
            w("main.rs"),
            w("src/a.rs"),
            w("src/b.rs")
        )]
    );
    let found = ok(
        &mut client,
        "glob_search",
        json!({"directory": p(&work), "globs": ["src/*.rs", "*.txt", "src/*.{txt,md}"], "max": 2}),
    );
    assert_eq!(
        found,
        [format!(
            "{}\n{}\n[2 of 3 matches shown; raise max (0 for no limit) or narrow the globs]\n",
            w("src/a.rs"),
            w("src/b.rs")
        )]
    );
    let all = ok(
        &mut client,
        "glob_search",
        json!({"directory": p(&work), "globs": ["**"], "max": 0}),
    );
    assert_eq!(all[0].lines().count(), 5, "{all:?}");
    // A glob that repeats the directory is taken relative to it.
    let absolute = ok(
        &mut client,
        "glob_search",
        json!({"directory": p(&work), "globs": [w("*.rs")]}),
    );
    assert_eq!(absolute, [format!("{}\n", w("main.rs"))]);
    assert_eq!(
        ok(
            &mut client,
            "glob_search",
            json!({"directory": p(&work), "globs": ["*.zip"]})
        ),
        ["(no matches found)\n"]
    );
    let (code, m) = rpc_error(&mut client, "glob_search", json!({"directory": p(&work)}));
    assert_eq!(code, -32602, "{m}");
    let (code, m) = rpc_error(&mut client, "glob_search", json!({"globs": ["*"]}));
    assert_eq!(code, -32602, "{m}");
    let (code, m) = rpc_error(
        &mut client,
        "glob_search",
        json!({"directory": p(&work), "globs": ["a["]}),
    );
    assert_eq!(code, -32602, "{m}");
    let (code, m) = rpc_error(
        &mut client,
        "glob_search",
        json!({"directory": p(&work), "globs": ["/etc/*"]}),
    );
    assert_eq!(code, -32602, "{m}");
    let (code, m) = rpc_error(
        &mut client,
        "glob_search",
        json!({"directory": "/etc", "globs": ["*"]}),
    );
    assert_eq!(code, -32001, "{m}");
}

#[test]
fn bash_answers_stdout_with_the_exit_code_and_stderr_apart() {
    let (_outer, work, frozen, mut client) = two_roots();
    // The default directory is the first read-write one.
    let ran = result(&mut client, "bash", json!({"command": "pwd"}));
    assert_eq!(ran["isError"], json!(false), "{ran}");
    assert_eq!(
        ran["content"][0]["text"],
        format!("{}\n[exit code: 0]", p(&work.canonicalize().unwrap()))
    );
    assert_eq!(ran["content"].as_array().unwrap().len(), 1);

    let quiet = result(&mut client, "bash", json!({"command": "true"}));
    assert_eq!(quiet["content"][0]["text"], "(no output)\n[exit code: 0]");

    let failed = result(
        &mut client,
        "bash",
        json!({"command": "echo out; echo err >&2; exit 3"}),
    );
    assert_eq!(failed["isError"], json!(true));
    assert_eq!(failed["content"][0]["text"], "out\n[exit code: 3]");
    assert_eq!(failed["content"][1]["text"], "[stderr]\nerr\n");

    // A read-only root may be the working directory.
    let there = result(
        &mut client,
        "bash",
        json!({"command": "ls", "workingDirectory": p(&frozen)}),
    );
    assert_eq!(there["isError"], json!(false), "{there}");

    let big = result(
        &mut client,
        "bash",
        json!({"command": "head -c 600000 /dev/zero | tr '\\0' a"}),
    );
    let text = big["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with(&"a".repeat(524_288)), "{}", text.len());
    assert!(
        text.contains("[stdout cut: 75712 more bytes not shown"),
        "{}",
        &text[524_288..]
    );
    assert!(text.ends_with("[exit code: 0]"));

    let (code, m) = rpc_error(&mut client, "bash", json!({}));
    assert_eq!(code, -32602, "{m}");
    let (code, m) = rpc_error(
        &mut client,
        "bash",
        json!({"command": "true", "timeout": 61}),
    );
    assert_eq!(code, -32602, "{m}");
    let (code, m) = rpc_error(
        &mut client,
        "bash",
        json!({"command": "true", "workingDirectory": "/tmp"}),
    );
    assert_eq!(code, -32001, "{m}");
    let (code, m) = rpc_error(
        &mut client,
        "bash",
        json!({"command": "true", "workingDirectory": p(&work.join("gone"))}),
    );
    assert_eq!(code, -32002, "{m}");
}

#[test]
fn bash_stops_a_command_at_its_timeout_and_keeps_what_it_printed() {
    let (_outer, root) = sandbox();
    let mut client = filesystem(&root, &[]);
    let stopped = result(
        &mut client,
        "bash",
        json!({"command": "echo partial; echo half >&2; sleep 30", "timeout": 1}),
    );
    assert_eq!(stopped["isError"], json!(true), "{stopped}");
    let text = stopped["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("partial\n[timed out after 1 s"), "{text}");
    assert_eq!(stopped["content"][1]["text"], "[stderr]\nhalf\n");
}

#[test]
fn read_only_mode_offers_no_bash() {
    let (_outer, root) = sandbox();
    let mut client = filesystem(&root, &["--read-only"]);
    let listed = client.request("tools/list", json!({}));
    let names: Vec<_> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!names.iter().any(|n| n == "bash"), "{names:?}");
    assert!(names.iter().any(|n| n == "search_files"), "{names:?}");
    let (code, m) = rpc_error(&mut client, "bash", json!({"command": "true"}));
    assert_eq!(code, -32602, "{m}");
    assert!(m.contains("read-only"), "{m}");
}

/// Polls list_allowed_directories until it is `expected` (a bounded wait:
/// the roots are asked for after the handshake, on a task of their own).
fn wait_for_allowed(client: &mut McpClient, expected: &str) {
    let mut last = Vec::new();
    for _ in 0..200 {
        last = ok(client, "list_allowed_directories", json!({}));
        if last == [expected] {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("allowed directories stayed {last:?}, expected {expected:?}");
}

#[test]
fn without_a_root_the_clients_roots_are_taken_and_refreshed() {
    let (_outer, root) = sandbox();
    let first = root.join("first dir");
    let second = root.join("second");
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    std::fs::write(second.join("s.txt"), "in second\n").unwrap();
    let uri = |path: &Path| format!("file://{}", p(path).replace(' ', "%20"));
    let mut client = McpClient::start_with(
        &["--surface".into(), "filesystem".into()],
        json!({"roots": {"listChanged": true}}),
        Some(vec![uri(&first), "https://example.invalid/x".into()]),
    )
    .guarded();
    wait_for_allowed(&mut client, &format!("{} (read-write)\n", p(&first)));
    ok(
        &mut client,
        "write_file",
        json!({"path": p(&first.join("f.txt")), "content": "x"}),
    );
    assert_eq!(std::fs::read_to_string(first.join("f.txt")).unwrap(), "x");

    client.roots = Some(vec![uri(&second)]);
    client.notify("notifications/roots/list_changed", json!({}));
    wait_for_allowed(&mut client, &format!("{} (read-write)\n", p(&second)));
    assert_eq!(
        ok(&mut client, "read_file", json!({"path": "s.txt"})),
        ["in second\n"]
    );
    let (code, _) = rpc_error(
        &mut client,
        "read_file",
        json!({"path": p(&first.join("f.txt"))}),
    );
    assert_eq!(code, -32001);
    assert_eq!(client.server_requests.get("roots/list"), Some(&2));
}

#[test]
fn without_a_root_or_client_roots_every_path_is_refused_clearly() {
    let (_outer, root) = sandbox();
    let mut client =
        McpClient::start_with(&["--surface".into(), "filesystem".into()], json!({}), None)
            .guarded();
    assert_eq!(
        ok(&mut client, "list_allowed_directories", json!({})),
        ["(no allowed directories yet)\n"]
    );
    let (code, message) = rpc_error(
        &mut client,
        "read_file",
        json!({"path": p(&root.join("x"))}),
    );
    assert_eq!(code, -32001);
    assert!(message.contains("no directory is allowed yet"), "{message}");
    let (code, message) = rpc_error(&mut client, "bash", json!({"command": "true"}));
    assert_eq!(code, -32001);
    assert!(message.contains("no directory is allowed yet"), "{message}");
    assert_eq!(client.server_requests.get("roots/list"), None);
}

/// DesktopCommander's process tools: a Python REPL started in a terminal,
/// driven to an answer, its output read by lines, listed and terminated.
#[test]
fn a_process_is_started_driven_read_and_terminated() {
    let (_outer, root) = sandbox();
    let mut client = filesystem(&root, &[]);
    let started = filesystem_calls::ok1(
        &mut client,
        "start_process",
        json!({"command": "python3 -q -i", "timeout_ms": 20000, "shell": "/bin/bash"}),
    );
    let pid: i64 = started
        .strip_prefix("Process started with PID ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("{started}"));
    assert_eq!(
        started,
        format!(
            "Process started with PID {pid} (shell: /bin/bash)\nInitial output:\n>>> \n🔄 Process {pid} is waiting for input (detected: \">>>\")"
        )
    );
    let answered = filesystem_calls::ok1(
        &mut client,
        "interact_with_process",
        json!({"pid": pid, "input": "print(6 * 7)"}),
    );
    assert_eq!(
        answered,
        format!(
            "✅ Input executed in process {pid}:\n\n📤 Output:\n42\n🔄 Process {pid} is waiting for input (detected: \">>>\")"
        )
    );
    let all = filesystem_calls::ok1(
        &mut client,
        "read_process_output",
        json!({"pid": pid, "offset": 1}),
    );
    assert_eq!(
        all,
        "[Reading 2 lines from line 1 (total: 3 lines, 0 remaining)]\n\n42\n>>> "
    );
    let last = filesystem_calls::ok1(
        &mut client,
        "read_process_output",
        json!({"pid": pid, "offset": -1}),
    );
    assert_eq!(last, "[Reading last 1 lines (total: 3 lines)]\n\n>>> ");
    let none_new = filesystem_calls::ok1(
        &mut client,
        "read_process_output",
        json!({"pid": pid, "timeout_ms": 300}),
    );
    assert_eq!(
        none_new,
        "[Reading 0 new lines (total: 3 lines)]\n\n(No output in requested range)"
    );
    let listed = filesystem_calls::ok1(&mut client, "list_sessions", json!({}));
    assert!(
        listed.starts_with(&format!("PID: {pid}, Blocked: true, Runtime: ")),
        "{listed}"
    );
    let stopped = filesystem_calls::ok1(&mut client, "force_terminate", json!({"pid": pid}));
    assert_eq!(
        stopped,
        format!("Successfully initiated termination of session {pid}")
    );
    let again = filesystem_calls::ok1(&mut client, "force_terminate", json!({"pid": pid}));
    assert_eq!(again, format!("No active session found for PID {pid}"));
    let ended = filesystem_calls::ok1(
        &mut client,
        "read_process_output",
        json!({"pid": pid, "offset": -5}),
    );
    assert!(
        ended.contains("\n\n✅ Process completed with exit code"),
        "{ended}"
    );
    assert_eq!(
        filesystem_calls::ok1(&mut client, "list_sessions", json!({})),
        "No active sessions"
    );
    let (code, message) = rpc_error(&mut client, "read_process_output", json!({"pid": 1}));
    assert_eq!(code, -32002, "{message}");
    assert!(message.contains("No session found for PID 1"), "{message}");
}

/// What a `bash` command leaves running in the background is listed by
/// `list_sessions`, marked with its command, and `force_terminate` stops it.
#[test]
fn background_children_of_bash_are_listed_and_terminated() {
    let (_outer, root) = sandbox();
    let mut client = filesystem(&root, &[]);
    let marker = root.join("child.pid");
    let _ = filesystem_calls::ok1(
        &mut client,
        "bash",
        json!({"command": format!("setsid sh -c 'echo $$ > {}; exec sleep 300' &", marker.display())}),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let child: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&marker)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline, "no pid written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let listed = filesystem_calls::ok1(&mut client, "list_sessions", json!({}));
    let pid: i64 = listed
        .strip_prefix("PID: ")
        .and_then(|rest| rest.split(',').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        listed.ends_with(&format!(
            ", Background of: setsid sh -c 'echo $$ > {}; exec sleep 300' &",
            marker.display()
        )),
        "{listed}"
    );
    let stopped = filesystem_calls::ok1(&mut client, "force_terminate", json!({"pid": pid}));
    assert_eq!(
        stopped,
        format!("Successfully initiated termination of session {pid}")
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .is_some_and(|i| !stat[i + 1..].trim_start().starts_with(['Z', 'X']))
    }) {
        assert!(
            std::time::Instant::now() < deadline,
            "force_terminate left the child"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        filesystem_calls::ok1(&mut client, "list_sessions", json!({})),
        "No active sessions"
    );
}
