//! End-to-end: the undo journal over MCP. Each writing tool's call is
//! undone byte for byte (modes included), several calls are rolled back to
//! a point, hand changes merge or conflict, a killed server leaves the
//! journal consistent, and the CLI undoes a call a running server made.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use agent_tools_test_support::tree;
use serde_json::{Value, json};

use crate::mcp_client::McpClient;

/// A root with a few files of distinct modes, and a state directory beside
/// it (outside the root).
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (outer, root) = tree::sandbox();
    std::fs::write(
        root.join("a.txt"),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
    )
    .unwrap();
    std::fs::set_permissions(root.join("a.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(
        root.join("src/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(root.join("gone.txt"), "delete me\n").unwrap();
    std::fs::set_permissions(
        root.join("gone.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let state = outer.path().join("state");
    (outer, root, state)
}

fn journal_args(state: &Path) -> Vec<String> {
    vec![
        "--journal".into(),
        "--journal-dir".into(),
        state.to_str().unwrap().into(),
    ]
}

fn start(root: &Path, state: &Path, surface: &str) -> McpClient {
    let mut args = journal_args(state);
    args.push("--surface".into());
    args.push(surface.into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    McpClient::start(root, &args)
}

/// Every entry of the tree with its mode.
fn with_modes(root: &Path) -> BTreeMap<String, (tree::Entry, u32)> {
    tree::snapshot(root)
        .into_iter()
        .map(|(path, entry)| {
            let mode = std::fs::symlink_metadata(root.join(&path))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777;
            (path, (entry, mode))
        })
        .collect()
}

fn call_ok(client: &mut McpClient, name: &str, args: Value) -> String {
    let (is_error, text) = client.call(name, args.clone());
    assert!(!is_error, "{name}({args}) failed: {text}");
    text
}

/// The id of the newest call `changes` lists.
fn newest_call(client: &mut McpClient, changes: &str) -> u64 {
    let listing = call_ok(client, changes, json!({"limit": 1}));
    listing
        .strip_prefix("call ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("no call listed: {listing}"))
}

/// Calls `tool` with `args`, then undoes that call, and checks the tree
/// (bytes and modes) is what it was before.
fn roundtrip(client: &mut McpClient, root: &Path, tool: &str, args: Value) {
    let before = with_modes(root);
    call_ok(client, tool, args.clone());
    assert_ne!(with_modes(root), before, "{tool}({args}) changed nothing");
    let id = newest_call(client, "changes");
    let text = call_ok(client, "undo", json!({"call": id}));
    assert!(text.starts_with("Undid call(s)"), "{text}");
    assert_eq!(
        with_modes(root),
        before,
        "{tool}({args}) was not undone exactly"
    );
}

#[test]
fn journal_each_writing_tool_of_the_default_surface_is_undone_exactly() {
    let (_outer, root, state) = setup();
    let mut client = start(&root, &state, "agent-tools");
    // create (with a new directory), modify, multi-edit.
    roundtrip(
        &mut client,
        &root,
        "write_file",
        json!({"path": "created.txt", "content": "fresh\n"}),
    );
    roundtrip(
        &mut client,
        &root,
        "write_file",
        json!({"path": "a.txt", "content": "replaced\n"}),
    );
    roundtrip(
        &mut client,
        &root,
        "edit_file",
        json!({"path": "src/run.sh", "old_string": "hi", "new_string": "hello"}),
    );
    roundtrip(
        &mut client,
        &root,
        "multi_edit",
        json!({"path": "a.txt", "edits": [
            {"old_string": "one", "new_string": "ONE"},
            {"old_string": "six", "new_string": "SIX"}
        ]}),
    );
    // A patch across files: modify, create, delete, move.
    let patch = "*** Begin Patch\n\
                 *** Update File: a.txt\n@@\n-two\n+TWO\n\
                 *** Add File: docs/b.txt\n+bee\n\
                 *** Delete File: gone.txt\n\
                 *** Update File: src/run.sh\n*** Move to: bin/run.sh\n@@\n-echo hi\n+echo moved\n\
                 *** End Patch\n";
    roundtrip(&mut client, &root, "apply_patch", json!({"patch": patch}));
    // The listing names each file with its operation and lines.
    let listing = call_ok(&mut client, "changes", json!({}));
    assert!(
        listing.contains("apply_patch (agent-tools, local): undoable"),
        "{listing}"
    );
    assert!(
        listing.contains(" D ") && listing.contains(" A "),
        "{listing}"
    );
    assert!(listing.contains("+1 -1"), "{listing}");
    client.shutdown();
}

#[test]
fn journal_filesystem_surface_moves_deletes_and_directories_are_undone() {
    let (_outer, root, state) = setup();
    let mut client = start(&root, &state, "filesystem");
    let at = |p: &str| root.join(p).to_str().unwrap().to_owned();
    let mut round = |tool: &str, args: Value| {
        let before = with_modes(&root);
        call_ok(&mut client, tool, args.clone());
        assert_ne!(with_modes(&root), before, "{tool} changed nothing");
        let id = newest_call(&mut client, "list_changes");
        call_ok(&mut client, "undo_changes", json!({"call": id}));
        assert_eq!(with_modes(&root), before, "{tool}({args}) not undone");
    };
    round(
        "move_file",
        json!({"source": at("a.txt"), "destination": at("moved/a.txt")}),
    );
    round(
        "move_file",
        json!({"source": at("src"), "destination": at("lib")}),
    );
    round("delete_file", json!({"path": at("gone.txt")}));
    round("delete_file", json!({"path": at("src")}));
    round("create_directory", json!({"path": at("x/y/z")}));
    round("write_file", json!({"path": at("w.txt"), "content": "w\n"}));
    client.shutdown();
}

#[test]
fn journal_claude_code_and_codex_surfaces_name_their_tools_and_undo() {
    let (_outer, root, state) = setup();
    let mut client = start(&root, &state, "claude-code");
    let before = with_modes(&root);
    call_ok(
        &mut client,
        "Write",
        json!({"file_path": root.join("c.txt").to_str().unwrap(), "content": "c\n"}),
    );
    let id = newest_call(&mut client, "Changes");
    call_ok(&mut client, "Undo", json!({"call": id}));
    assert_eq!(with_modes(&root), before);
    client.shutdown();

    let mut client = start(&root, &state, "codex");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-three\n+THREE\n*** End Patch\n";
    call_ok(&mut client, "apply_patch", json!({"input": patch}));
    let id = newest_call(&mut client, "changes");
    call_ok(&mut client, "undo", json!({"call": id}));
    assert_eq!(with_modes(&root), before);
    client.shutdown();
}

#[test]
fn journal_off_by_default_offers_no_tools_and_records_nothing() {
    let (_outer, root, _state) = setup();
    let mut client = McpClient::start(&root, &[]);
    let tools = client.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        !names.contains(&"changes") && !names.contains(&"undo"),
        "{names:?}"
    );
    client.shutdown();
}

#[test]
fn journal_tools_carry_titles_and_hints() {
    let (_outer, root, state) = setup();
    let mut client = start(&root, &state, "agent-tools");
    let tools = client.request("tools/list", json!({}));
    let find = |name: &str| {
        tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not listed"))
    };
    let changes = find("changes");
    assert_eq!(changes["annotations"]["readOnlyHint"], true);
    assert_eq!(changes["title"], "List changes");
    let undo = find("undo");
    assert_eq!(undo["annotations"]["readOnlyHint"], false);
    assert_eq!(undo["annotations"]["destructiveHint"], true);
    assert_eq!(undo["title"], "Undo changes");
    client.shutdown();
}

#[test]
fn journal_undo_to_a_point_rolls_back_several_calls_and_can_itself_be_undone() {
    let (_outer, root, state) = setup();
    let mut client = start(&root, &state, "agent-tools");
    let start_tree = with_modes(&root);
    call_ok(
        &mut client,
        "write_file",
        json!({"path": "first.txt", "content": "1\n"}),
    );
    let point = newest_call(&mut client, "changes");
    let at_point = with_modes(&root);
    call_ok(
        &mut client,
        "edit_file",
        json!({"path": "a.txt", "old_string": "one", "new_string": "uno"}),
    );
    call_ok(
        &mut client,
        "edit_file",
        json!({"path": "a.txt", "old_string": "uno", "new_string": "eins"}),
    );
    call_ok(
        &mut client,
        "write_file",
        json!({"path": "first.txt", "content": "2\n"}),
    );
    let after_all = with_modes(&root);
    let dry = call_ok(&mut client, "undo", json!({"to": point, "dry_run": true}));
    assert!(dry.contains("dry run"), "{dry}");
    assert_eq!(with_modes(&root), after_all, "a dry run writes nothing");
    call_ok(&mut client, "undo", json!({"to": point}));
    assert_eq!(with_modes(&root), at_point);
    // The undo is a call of its own: undoing it redoes the three.
    let undo_id = newest_call(&mut client, "changes");
    call_ok(&mut client, "undo", json!({"call": undo_id}));
    assert_eq!(with_modes(&root), after_all);
    call_ok(&mut client, "undo", json!({"to": 0}));
    assert_eq!(with_modes(&root), start_tree);
    client.shutdown();
}

#[test]
fn journal_hand_changes_merge_when_apart_and_conflict_when_overlapping() {
    let (_outer, root, state) = setup();
    let mut client = start(&root, &state, "agent-tools");
    call_ok(
        &mut client,
        "edit_file",
        json!({"path": "a.txt", "old_string": "two", "new_string": "TWO"}),
    );
    let id = newest_call(&mut client, "changes");
    // A hand change far from the call's: merged.
    let text = std::fs::read_to_string(root.join("a.txt")).unwrap();
    std::fs::write(root.join("a.txt"), text.replace("six", "SIX by hand")).unwrap();
    let undone = call_ok(&mut client, "undo", json!({"call": id}));
    assert!(undone.contains("merged"), "{undone}");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\ntwo\nthree\nfour\nfive\nSIX by hand\nseven\n"
    );

    // A hand change on the call's own line: a conflict, nothing written.
    call_ok(
        &mut client,
        "edit_file",
        json!({"path": "a.txt", "old_string": "four", "new_string": "FOUR"}),
    );
    let id = newest_call(&mut client, "changes");
    call_ok(
        &mut client,
        "write_file",
        json!({"path": "other.txt", "content": "x\n"}),
    );
    std::fs::write(
        root.join("a.txt"),
        "one\ntwo\nthree\nFOUR and more\nfive\nSIX by hand\nseven\n",
    )
    .unwrap();
    let before = with_modes(&root);
    let (is_error, text) = client.call("undo", json!({"to": id - 1}));
    assert!(is_error, "{text}");
    assert!(
        text.contains("conflict") && text.contains("a.txt"),
        "{text}"
    );
    assert!(text.contains("nothing was written"), "{text}");
    assert_eq!(with_modes(&root), before, "other.txt must stay too");
    // force writes the earlier content over the hand change.
    call_ok(&mut client, "undo", json!({"to": id - 1, "force": true}));
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\ntwo\nthree\nfour\nfive\nSIX by hand\nseven\n"
    );
    assert!(!root.join("other.txt").exists());
    client.shutdown();
}

#[test]
fn journal_state_directory_inside_a_root_is_refused() {
    let (_outer, root, _state) = setup();
    let output = Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .args([
            "mcp",
            "--root",
            root.to_str().unwrap(),
            "--journal",
            "--journal-dir",
        ])
        .arg(root.join(".journal"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("inside the served root"), "{stderr}");
    assert!(
        !root.join(".journal").exists(),
        "nothing made inside the root"
    );
}

#[test]
fn journal_cli_undoes_a_call_made_through_a_running_server() {
    let (_outer, root, state) = setup();
    let mut client = start(&root, &state, "agent-tools");
    let before = with_modes(&root);
    call_ok(
        &mut client,
        "edit_file",
        json!({"path": "a.txt", "old_string": "one", "new_string": "1"}),
    );
    let id = newest_call(&mut client, "changes");
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_agent-tools"))
            .args(args)
            .args([
                "--root",
                root.to_str().unwrap(),
                "--journal-dir",
                state.to_str().unwrap(),
            ])
            .output()
            .unwrap()
    };
    let listed = cli(&["changes"]);
    assert!(listed.status.success());
    assert!(String::from_utf8_lossy(&listed.stdout).contains("edit_file"));
    let undone = cli(&["undo", "--call", &id.to_string()]);
    assert!(
        undone.status.success(),
        "{}",
        String::from_utf8_lossy(&undone.stdout)
    );
    assert_eq!(with_modes(&root), before);
    // The server sees the CLI's undo in its listing, and keeps working.
    let listing = call_ok(&mut client, "changes", json!({"limit": 1}));
    assert!(listing.contains(&format!("undoes {id}")), "{listing}");
    call_ok(
        &mut client,
        "write_file",
        json!({"path": "after.txt", "content": "ok\n"}),
    );
    client.shutdown();
}

#[test]
fn journal_stays_bounded_under_many_calls() {
    let (_outer, root, state) = setup();
    let mut args = journal_args(&state);
    args.extend([
        "--journal-max-calls".into(),
        "20".into(),
        "--journal-durability".into(),
        "relaxed".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut client = McpClient::start(&root, &args);
    for n in 0..120 {
        call_ok(
            &mut client,
            "write_file",
            json!({"path": "f.txt", "content": format!("{n}\n")}),
        );
    }
    // Records only: the background sealer's temporaries (`NAME.tmp.PID.N`)
    // come and go beside them while it works.
    let calls = std::fs::read_dir(state.join("calls"))
        .unwrap()
        .filter(|entry| {
            let name = entry.as_ref().unwrap().file_name();
            name.to_str().unwrap().ends_with(".json")
        })
        .count();
    assert!(calls <= 20, "{calls} calls kept");
    let listing = call_ok(&mut client, "changes", json!({"limit": 100}));
    assert!(listing.lines().filter(|l| l.starts_with("call ")).count() <= 20);
    // The newest is still undoable.
    let id = newest_call(&mut client, "changes");
    call_ok(&mut client, "undo", json!({"call": id}));
    assert_eq!(
        std::fs::read_to_string(root.join("f.txt")).unwrap(),
        "118\n"
    );
    client.shutdown();
}

/// A server killed (SIGKILL) while writing: the next start resolves every
/// interrupted record, the journal lists only changes that are on disk,
/// and each listed call undoes.
#[test]
fn journal_sigkill_during_writes_leaves_it_consistent() {
    let (_outer, root, state) = setup();
    let mut client = start(&root, &state, "agent-tools");
    let big = "x".repeat(4 * 1024 * 1024);
    // Requests sent without waiting, then the kill lands among them.
    for n in 0..6 {
        client.send_request(
            "tools/call",
            json!({"name": "write_file", "arguments": {"path": format!("big{n}.txt"), "content": format!("{n}{big}")}}),
        );
    }
    std::thread::sleep(std::time::Duration::from_millis(150));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(client.pid()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = client.wait_exit(std::time::Duration::from_secs(10));

    let mut client = start(&root, &state, "agent-tools");
    assert_eq!(
        std::fs::read_dir(state.join("pending")).unwrap().count(),
        0,
        "the interrupted record was resolved at start"
    );
    let listing = call_ok(&mut client, "changes", json!({"limit": 100}));
    for line in listing.lines().filter(|l| l.starts_with("  A ")) {
        let path = line.split_whitespace().nth(1).unwrap();
        assert!(Path::new(path).exists(), "listed but not on disk: {line}");
    }
    call_ok(
        &mut client,
        "write_file",
        json!({"path": "marker.txt", "content": "m\n"}),
    );
    let (is_error, text) = client.call("undo", json!({"to": 0}));
    assert!(!is_error, "{text}");
    let left: Vec<String> = tree::snapshot(&root)
        .into_keys()
        .filter(|p| p.starts_with("big") || p == "marker.txt")
        .collect();
    assert!(left.is_empty(), "not undone: {left:?}");
    client.shutdown();
}

#[test]
fn journal_undo_refuses_unknown_calls_and_bad_arguments() {
    let (_outer, root, state) = setup();
    let mut client = start(&root, &state, "agent-tools");
    for (args, expected) in [
        (json!({"call": 99}), "no call 99"),
        (json!({"to": 5}), "nothing to undo"),
        (json!({}), "either `call`"),
        (json!({"call": 1, "to": 0}), "either `call`"),
    ] {
        let (is_error, text) = client.call("undo", args.clone());
        assert!(is_error && text.contains(expected), "{args}: {text}");
    }
    let (is_error, text) = client.call("changes", json!({"call": 42}));
    assert!(is_error && text.contains("no call 42"), "{text}");
    assert_eq!(
        call_ok(&mut client, "changes", json!({})),
        "No recorded changes.\n"
    );
    client.shutdown();
    let output = Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .args([
            "changes",
            "--root",
            root.to_str().unwrap(),
            "--journal-durability",
            "sometimes",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("expected full or relaxed"));
}

/// Starts a server on the default surface with the journal and `extra`
/// flags.
fn start_with(root: &Path, state: &Path, extra: &[&str]) -> McpClient {
    let mut args = journal_args(state);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    McpClient::start(root, &args)
}

/// The listing of one call (its header and lines), from `changes`.
fn listing_of(client: &mut McpClient, changes: &str, id: u64) -> String {
    let listing = call_ok(client, changes, json!({"limit": 50}));
    let head = format!("call {id} ");
    let start = listing
        .find(&head)
        .unwrap_or_else(|| panic!("call {id} not listed: {listing}"));
    let rest = &listing[start..];
    let end = rest[1..].find("\ncall ").map_or(rest.len(), |at| at + 2);
    rest[..end].to_owned()
}

#[test]
fn journal_commands_changes_are_listed_and_block_an_undo_that_would_overwrite_them() {
    // With the warm index (the server's default) and with a stat walk.
    for extra in [&[][..], &["--no-index"][..]] {
        let (_outer, root, state) = setup();
        let mut client = start_with(&root, &state, extra);
        call_ok(
            &mut client,
            "bash",
            json!({"command": "echo new > made.txt && echo more >> a.txt && rm gone.txt"}),
        );
        let id = newest_call(&mut client, "changes");
        let listing = listing_of(&mut client, "changes", id);
        assert!(
            listing.contains(" bash (agent-tools, local): not undoable: "),
            "{extra:?}: {listing}"
        );
        assert!(
            listing.contains("made by a command"),
            "{extra:?}: {listing}"
        );
        let made = root.join("made.txt");
        let a = root.join("a.txt");
        let gone = root.join("gone.txt");
        assert!(
            listing.contains(&format!("  A {} ", made.display())),
            "{extra:?}: {listing}"
        );
        assert!(
            listing.contains(&format!("  M {} ", a.display())),
            "{extra:?}: {listing}"
        );
        assert!(
            listing.contains(&format!("  D {} ", gone.display())),
            "{extra:?}: {listing}"
        );
        // The command's own call cannot be undone without the baseline.
        let before = with_modes(&root);
        let (is_error, text) = client.call("undo", json!({"call": id}));
        assert!(is_error && text.contains("not undoable"), "{text}");
        assert_eq!(with_modes(&root), before);

        // A tool call, then a command over its file: undoing the tool call
        // would overwrite the command's change, so it is refused, naming
        // the command's call, and nothing is written.
        call_ok(
            &mut client,
            "write_file",
            json!({"path": "w.txt", "content": "by the tool\n"}),
        );
        let tool_call = newest_call(&mut client, "changes");
        call_ok(
            &mut client,
            "bash",
            json!({"command": "printf 'by the command\\n' > w.txt && echo x > also.txt"}),
        );
        let command_call = newest_call(&mut client, "changes");
        assert!(command_call > tool_call);
        let before = with_modes(&root);
        let (is_error, text) = client.call("undo", json!({"call": tool_call}));
        assert!(is_error, "{extra:?}: {text}");
        assert!(text.contains("nothing was written"), "{text}");
        assert!(
            text.contains(&format!("call {command_call} (bash) changed it since")),
            "{extra:?}: {text}"
        );
        assert_eq!(with_modes(&root), before);
        client.shutdown();
    }
}

#[test]
fn journal_commands_of_every_surface_are_listed() {
    let (_outer, root, state) = setup();
    let cases: [(&str, &str, &str, Value); 3] = [
        (
            "claude-code",
            "Bash",
            "Changes",
            json!({"command": "echo c > by-claude-code.txt"}),
        ),
        (
            "codex",
            "shell",
            "changes",
            json!({"command": ["bash", "-c", "echo c > by-codex.txt"]}),
        ),
        (
            "filesystem",
            "bash",
            "list_changes",
            json!({"command": "echo c > by-filesystem.txt", "workingDirectory": root.to_str().unwrap()}),
        ),
    ];
    for (surface, tool, changes, args) in cases {
        let mut client = start(&root, &state, surface);
        call_ok(&mut client, tool, args);
        let id = newest_call(&mut client, changes);
        let listing = listing_of(&mut client, changes, id);
        let made = root.join(format!("by-{surface}.txt"));
        assert!(
            listing.contains(&format!(" {tool} ({surface}, local)"))
                && listing.contains(&format!("  A {} ", made.display())),
            "{surface}: {listing}"
        );
        client.shutdown();
    }
}

#[test]
fn journal_commands_baseline_undoes_sed_and_rm_exactly() {
    for extra in [&[][..], &["--no-index"][..]] {
        let (_outer, root, state) = setup();
        std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir(root.join("build")).unwrap();
        let mut args = vec!["--journal-commands", "baseline"];
        args.extend_from_slice(extra);
        let mut client = start_with(&root, &state, &args);
        let before = with_modes(&root);
        call_ok(
            &mut client,
            "bash",
            json!({"command": "sed -i 's/two/TWO/' a.txt && rm gone.txt && sed -i 's/hi/HI/' src/run.sh && echo out > build/x"}),
        );
        let id = newest_call(&mut client, "changes");
        let listing = listing_of(&mut client, "changes", id);
        assert!(listing.contains(": undoable"), "{extra:?}: {listing}");
        assert!(listing.contains("ignored files"), "{extra:?}: {listing}");
        assert!(!listing.contains("build/x"), "{extra:?}: {listing}");
        let text = call_ok(&mut client, "undo", json!({"call": id}));
        assert!(text.starts_with("Undid call(s)"), "{text}");
        // Every file as it was, modes included (the ignored one is not
        // covered, and stays).
        let mut after = with_modes(&root);
        after.remove("build/x");
        assert_eq!(after, before, "{extra:?}");

        // A second command after a tool call: the baseline holds what the
        // tool wrote, so the command is undone to it.
        call_ok(
            &mut client,
            "write_file",
            json!({"path": "a.txt", "content": "written\n"}),
        );
        let mut before = with_modes(&root);
        before.remove("build/x");
        call_ok(
            &mut client,
            "bash",
            json!({"command": "chmod 600 a.txt && echo again >> a.txt"}),
        );
        let id = newest_call(&mut client, "changes");
        call_ok(&mut client, "undo", json!({"call": id}));
        let mut after = with_modes(&root);
        after.remove("build/x");
        assert_eq!(after, before, "{extra:?}");
        client.shutdown();
    }
}

#[test]
fn journal_commands_detection_past_the_file_cap_says_it_was_skipped() {
    let (_outer, root, state) = setup();
    let mut client = start_with(
        &root,
        &state,
        &["--no-index", "--journal-command-max-files", "2"],
    );
    call_ok(&mut client, "bash", json!({"command": "echo x > new.txt"}));
    let id = newest_call(&mut client, "changes");
    let listing = listing_of(&mut client, "changes", id);
    assert!(
        listing.contains(
            "note: the command's changes were not looked for: the roots hold more than 2 files (--journal-command-max-files)"
        ),
        "{listing}"
    );
    assert!(!listing.contains("new.txt"), "{listing}");
    client.shutdown();
    // A value that is not a mode is refused at startup.
    let output = Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .args(["mcp", "--root", root.to_str().unwrap(), "--journal"])
        .args(["--journal-dir", state.to_str().unwrap()])
        .args(["--journal-commands", "sometimes"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("expected off, detect or baseline"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
