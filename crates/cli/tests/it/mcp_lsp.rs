//! Language servers over MCP (`--lsp`): the scripted server in
//! `crates/lsp/testdata` for the deterministic cases, and real servers
//! (pyright, typescript-language-server) when `AGENT_TOOLS_LSP_BIN` names
//! the folder holding them (CI installs them there).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::mcp_client::McpClient;

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../lsp/testdata/fake_lsp.py");

/// A workspace and, beside it (not in it), the server config and the file
/// the fake servers write their pids to.
struct Setup {
    dir: tempfile::TempDir,
    side: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            dir: tempfile::tempdir().unwrap(),
            side: tempfile::tempdir().unwrap(),
        }
    }

    fn pids_file(&self) -> PathBuf {
        self.side.path().join("pids")
    }

    /// The file the fake servers log the document notifications they get to.
    fn log_file(&self) -> PathBuf {
        self.side.path().join("log")
    }

    /// The document notifications the fake servers got, as `method uri`.
    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.log_file())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `--lsp --lsp-config FILE` for the fake server in `mode` on `.fk`.
    fn fake_args(&self, mode: &str, extra: &[&str]) -> Vec<String> {
        self.fake_args_on(mode, &[".fk"], extra)
    }

    /// As [`fake_args`](Self::fake_args), the fake server handling `extensions`.
    fn fake_args_on(&self, mode: &str, extensions: &[&str], extra: &[&str]) -> Vec<String> {
        let config = self.side.path().join("lsp.json");
        let languages: serde_json::Map<String, serde_json::Value> = extensions
            .iter()
            .map(|ext| ((*ext).to_owned(), json!("fake")))
            .collect();
        let entry = json!({"fake": {
            "command": FAKE,
            "extensionToLanguage": languages,
            "env": {
                "FAKE_LSP_MODE": mode,
                "FAKE_LSP_PIDS": self.pids_file(),
                "FAKE_LSP_LOG": self.log_file(),
            },
            "maxRestarts": 1,
        }});
        std::fs::write(&config, entry.to_string()).unwrap();
        let mut args = vec![
            "--root".to_owned(),
            self.dir.path().to_str().unwrap().to_owned(),
            "--lsp".to_owned(),
            "--lsp-config".to_owned(),
            config.to_str().unwrap().to_owned(),
        ];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        args
    }

    fn start_fake(&self, mode: &str) -> McpClient {
        McpClient::start_with(&self.fake_args(mode, &[]), json!({}), None).guarded()
    }

    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.pids_file())
            .unwrap_or_default()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    }
}

fn write(client: &mut McpClient, path: &str, content: &str) -> String {
    let (is_error, text) = client.call("write_file", json!({"path": path, "content": content}));
    assert!(!is_error, "{text}");
    text
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn assert_all_gone(pids: &[i32], limit: Duration) {
    let started = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        assert!(
            started.elapsed() < limit,
            "language servers still running: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tool_names(client: &mut McpClient) -> Vec<String> {
    let listed = client.request("tools/list", json!({}));
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn lsp_is_off_by_default_and_changes_nothing() {
    let setup = Setup::new();
    let mut client = McpClient::start_guarded(setup.dir.path(), &[]);
    assert!(!tool_names(&mut client).contains(&"lsp".to_owned()));
    assert_eq!(
        write(&mut client, "a.py", "x: int = 'no'\n"),
        "created a.py (14 bytes)"
    );
    let (is_error, text) = client.call("lsp", json!({"operation": "hover", "path": "a.py"}));
    assert!(is_error, "{text}");
    client.shutdown();
}

#[test]
fn lsp_an_edit_reports_the_errors_it_introduced_and_a_fix_clears_them() {
    let setup = Setup::new();
    let mut client = setup.start_fake("normal");
    assert!(tool_names(&mut client).contains(&"lsp".to_owned()));
    let text = write(&mut client, "a.fk", "fine\n");
    assert!(
        text.ends_with("\n\n") || text.contains("no errors in a.fk"),
        "{text}"
    );
    assert!(text.contains("diagnostics (fake, "), "{text}");
    let text = write(&mut client, "a.fk", "fine\nsome ERROR\n");
    assert!(
        text.contains("\na.fk:2:6: error: found error: some ERROR [E1]"),
        "{text}"
    );
    let (is_error, text) = client.call(
        "edit_file",
        json!({"path": "a.fk", "old_string": "some ERROR", "new_string": "all good"}),
    );
    assert!(!is_error, "{text}");
    assert!(text.contains("no errors in a.fk"), "{text}");
    assert!(!text.contains("found error"), "{text}");
    // Files no server handles get nothing added.
    assert_eq!(
        write(&mut client, "notes.txt", "ERROR"),
        "created notes.txt (5 bytes)"
    );
    client.shutdown();
}

#[test]
fn lsp_a_patch_reports_each_file_it_wrote() {
    let setup = Setup::new();
    let mut client = setup.start_fake("normal");
    let patch = "*** Begin Patch\n*** Add File: one.fk\n+ERROR one\n*** Add File: two.fk\n+fine\n*** End Patch\n";
    let (is_error, text) = client.call("apply_patch", json!({"patch": patch}));
    assert!(!is_error, "{text}");
    assert!(
        text.contains("one.fk:1:1: error: found error: ERROR one [E1]"),
        "{text}"
    );
    assert!(text.contains("no errors in two.fk"), "{text}");
    client.shutdown();
}

#[test]
fn lsp_navigation_and_outside_changes() {
    let setup = Setup::new();
    std::fs::write(setup.dir.path().join("b.fk"), "def helper\nhelper()\n").unwrap();
    let mut client = setup.start_fake("normal");
    let (is_error, text) = client.call(
        "lsp",
        json!({"operation": "references", "path": "b.fk", "line": 2, "symbol": "helper"}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "2 references in 1 file\nb.fk:1:5: def helper\nb.fk:2:1: helper()"
    );
    let (_, text) = client.call(
        "lsp",
        json!({"operation": "definition", "path": "b.fk", "line": 2, "symbol": "nothere"}),
    );
    assert!(text.contains("`nothere` does not occur there"), "{text}");
    // A change by a command reaches the server before the next question.
    let (is_error, text) = client.call("bash", json!({"command": "echo 'bad ERROR' > b.fk"}));
    assert!(!is_error, "{text}");
    let (is_error, text) = client.call("lsp", json!({"operation": "diagnostics", "path": "b.fk"}));
    assert!(!is_error, "{text}");
    assert!(
        text.contains("b.fk:1:5: error: found error: bad ERROR [E1]"),
        "{text}"
    );
    std::fs::write(setup.dir.path().join("x.txt"), "hello\n").unwrap();
    let (is_error, text) = client.call(
        "lsp",
        json!({"operation": "hover", "path": "x.txt", "line": 1, "symbol": "hello"}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "[no language server for .txt files; use grep meanwhile]"
    );
    client.shutdown();
}

#[test]
fn lsp_a_server_that_keeps_crashing_is_given_up_with_the_reason() {
    let setup = Setup::new();
    let mut client = setup.start_fake("crash");
    let text = write(&mut client, "a.fk", "x\n");
    assert!(
        text.contains("fake crashed (exited with code 3: fake: boom)"),
        "{text}"
    );
    let text = write(&mut client, "a.fk", "y\n");
    assert!(
        text.contains("fake is disabled: it stopped 2 times"),
        "{text}"
    );
    assert!(text.contains("fake: boom"), "{text}");
    let started = Instant::now();
    let text = write(&mut client, "a.fk", "z\n");
    assert!(text.contains("fake is disabled"), "{text}");
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(setup.pids().len(), 2);
    client.shutdown();
}

#[test]
fn lsp_a_server_that_never_answers_costs_an_edit_the_wait() {
    let setup = Setup::new();
    let args = setup.fake_args("noinit", &["--lsp-wait-ms", "500"]);
    let mut client = McpClient::start_with(&args, json!({}), None).guarded();
    let started = Instant::now();
    let text = write(&mut client, "a.fk", "x\n");
    let took = started.elapsed();
    assert!(text.contains("fake is still starting"), "{text}");
    assert!(took < Duration::from_millis(1500), "{took:?}");
    let pids = setup.pids();
    client.shutdown();
    assert_all_gone(&pids, Duration::from_secs(5));
}

#[test]
fn lsp_servers_end_with_the_server_on_end_of_input_and_on_sigkill() {
    for how in ["EOF", "KILL"] {
        let setup = Setup::new();
        let mut client = setup.start_fake("normal");
        write(&mut client, "a.fk", "x\n");
        let pids = setup.pids();
        assert_eq!(pids.len(), 1, "{how}");
        assert!(alive(pids[0]));
        match how {
            "EOF" => drop(client.take_stdin()),
            signal => client.signal(signal),
        }
        client.wait_exit(Duration::from_secs(10));
        assert_all_gone(&pids, Duration::from_secs(5));
    }
}

fn rename(client: &mut McpClient, args: serde_json::Value) -> (bool, String) {
    client.call("rename_symbol", args)
}

#[test]
fn lsp_default_surface_offers_rename_symbol_only_with_lsp_and_not_read_only() {
    let setup = Setup::new();
    let mut plain = McpClient::start_guarded(setup.dir.path(), &[]);
    assert!(!tool_names(&mut plain).contains(&"rename_symbol".to_owned()));
    plain.shutdown();
    let mut client = setup.start_fake("normal");
    let listed = client.request("tools/list", json!({}));
    let tools: Vec<_> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "lsp" || t["name"] == "rename_symbol")
        .cloned()
        .collect();
    insta::assert_json_snapshot!("default_lsp_tools", tools);
    client.shutdown();
    let args = setup.fake_args("normal", &["--read-only"]);
    let mut read_only = McpClient::start_with(&args, json!({}), None).guarded();
    let names = tool_names(&mut read_only);
    assert!(names.contains(&"lsp".to_owned()), "{names:?}");
    assert!(!names.contains(&"rename_symbol".to_owned()), "{names:?}");
    read_only.shutdown();
}

#[test]
fn lsp_rename_symbol_applies_the_servers_edit_or_shows_it() {
    let setup = Setup::new();
    let file = setup.dir.path().join("b.fk");
    std::fs::write(&file, "def helper\nhelper() # helpers\n").unwrap();
    let mut client = setup.start_fake("normal");
    let (is_error, text) = rename(
        &mut client,
        json!({"path": "b.fk", "line": 2, "symbol": "helper", "new_name": "assist", "dry_run": true}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(
            "dry run: renaming `helper` to `assist` would make 2 edits in 1 file (nothing written)\nb.fk: 2 edits\n\n--- a/b.fk\n+++ b/b.fk\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\n-def helper\n") && text.contains("\n+assist() # helpers"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "def helper\nhelper() # helpers\n"
    );
    let (is_error, text) = rename(
        &mut client,
        json!({"path": "b.fk", "line": 2, "symbol": "helper", "new_name": "assist"}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(
            "renamed `helper` to `assist`: 2 edits in 1 file\nb.fk: 2 edits\n\ndiagnostics (fake, "
        ),
        "{text}"
    );
    assert!(text.contains("no errors in b.fk"), "{text}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "def assist\nassist() # helpers\n"
    );
    client.shutdown();
}

#[test]
fn lsp_rename_symbol_refusals_change_nothing() {
    let setup = Setup::new();
    let file = setup.dir.path().join("b.fk");
    let original = "def helper\nhelper()\n";
    std::fs::write(&file, original).unwrap();
    let mut client = setup.start_fake("normal");
    let cases = [
        // No such symbol on that line: refused before the server is asked.
        (
            json!({"path": "b.fk", "line": 1, "symbol": "nothere", "new_name": "x"}),
            "no_match",
            "b.fk:1: `nothere` does not occur there; the line is: def helper",
        ),
        (
            json!({"path": "b.fk", "line": 2, "symbol": "helper", "new_name": "REFUSED"}),
            "invalid_input",
            "the language server refused to rename `helper`: cannot rename this symbol",
        ),
        (
            json!({"path": "b.fk", "line": 2, "symbol": "helper", "new_name": "NOTHING"}),
            "no_match",
            "b.fk:2: the language server has nothing to rename at `helper`",
        ),
        (
            json!({"path": "b.fk", "line": 2, "symbol": "helper", "new_name": "OUTSIDE"}),
            "path_escape",
            "the rename would change /outside-the-workspace/x.fk, outside the workspace; nothing was changed",
        ),
        (
            json!({"path": "b.fk", "line": 2, "symbol": "helper", "new_name": "CREATE"}),
            "invalid_input",
            "the server's edit would create a file",
        ),
        (
            json!({"path": "b.fk", "line": 2, "symbol": "helper", "new_name": " "}),
            "invalid_input",
            "new_name is empty",
        ),
    ];
    for (args, code, message) in cases {
        let (is_error, text) = rename(&mut client, args.clone());
        assert!(is_error, "{args}: {text}");
        let envelope: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(envelope["error"], code, "{args}: {text}");
        assert!(
            envelope["message"].as_str().unwrap().contains(message),
            "{args}: {text}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "{args}");
    }
    client.shutdown();
}

#[test]
fn lsp_rename_symbol_asks_prepare_rename_first_where_offered() {
    let setup = Setup::new();
    let file = setup.dir.path().join("b.fk");
    let original = "fixed = 1\nlocked = fixed\n";
    std::fs::write(&file, original).unwrap();
    let uri = format!("file://{}", file.canonicalize().unwrap().display());
    let mut client = setup.start_fake("normal");
    let cases = [
        (
            json!({"path": "b.fk", "line": 2, "symbol": "fixed", "new_name": "x"}),
            "b.fk:2: the language server says `fixed` cannot be renamed there",
        ),
        (
            json!({"path": "b.fk", "line": 2, "symbol": "locked", "new_name": "x"}),
            "the language server refused to rename `locked`: this symbol is locked; nothing was changed",
        ),
    ];
    for (args, message) in cases {
        let (is_error, text) = rename(&mut client, args.clone());
        assert!(is_error, "{args}: {text}");
        let envelope: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(envelope["error"], "invalid_input", "{args}: {text}");
        assert!(
            envelope["message"].as_str().unwrap().contains(message),
            "{args}: {text}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "{args}");
    }
    let log = setup.log();
    assert!(
        log.contains(&format!("textDocument/prepareRename {uri}")),
        "{log:?}"
    );
    // Refused at the prepare step: the rename itself was never asked.
    assert!(
        !log.contains(&format!("textDocument/rename {uri}")),
        "{log:?}"
    );
    client.shutdown();

    // A server that does not offer it is asked the rename directly.
    let setup = Setup::new();
    let file = setup.dir.path().join("b.fk");
    std::fs::write(&file, original).unwrap();
    let args = setup.fake_args("noprepare", &[]);
    let mut client = McpClient::start_with(&args, json!({}), None).guarded();
    let (is_error, text) = rename(
        &mut client,
        json!({"path": "b.fk", "line": 2, "symbol": "fixed", "new_name": "y"}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "y = 1\nlocked = y\n"
    );
    assert!(
        !setup
            .log()
            .iter()
            .any(|l| l.starts_with("textDocument/prepareRename")),
        "{:?}",
        setup.log()
    );
    client.shutdown();
}

#[test]
fn lsp_rename_symbol_refuses_ignored_files_unless_asked() {
    let setup = Setup::new();
    let root = setup.dir.path();
    std::fs::create_dir(root.join("gen")).unwrap();
    std::fs::write(root.join(".gitignore"), "gen/\n").unwrap();
    let source = "def helper\nhelper()\n";
    std::fs::write(root.join("b.fk"), source).unwrap();
    std::fs::write(root.join("gen/c.fk"), source).unwrap();
    let mut client = setup.start_fake("normal");
    // The fake server renames in every open document: open the ignored one.
    let (is_error, text) = client.call(
        "lsp",
        json!({"operation": "diagnostics", "path": "gen/c.fk"}),
    );
    assert!(!is_error, "{text}");
    for dry_run in [true, false] {
        let (is_error, text) = rename(
            &mut client,
            json!({"path": "b.fk", "line": 2, "symbol": "helper", "new_name": "assist", "dry_run": dry_run}),
        );
        assert!(is_error, "{text}");
        let envelope: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(envelope["error"], "invalid_input", "{text}");
        assert!(
            envelope["message"].as_str().unwrap().contains(
                "the rename would also change 1 file the project ignores (.gitignore, .ignore or the git excludes): gen/c.fk; nothing was changed. If they should change too, call again with include_ignored: true"
            ),
            "{text}"
        );
        assert_eq!(std::fs::read_to_string(root.join("b.fk")).unwrap(), source);
        assert_eq!(
            std::fs::read_to_string(root.join("gen/c.fk")).unwrap(),
            source
        );
    }
    let (is_error, text) = rename(
        &mut client,
        json!({"path": "b.fk", "line": 2, "symbol": "helper", "new_name": "assist", "include_ignored": true}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(
            "renamed `helper` to `assist`: 4 edits in 2 files\nb.fk: 2 edits\ngen/c.fk: 2 edits\n"
        ),
        "{text}"
    );
    let renamed = "def assist\nassist()\n";
    assert_eq!(std::fs::read_to_string(root.join("b.fk")).unwrap(), renamed);
    assert_eq!(
        std::fs::read_to_string(root.join("gen/c.fk")).unwrap(),
        renamed
    );
    client.shutdown();
}

#[test]
fn lsp_locations_in_ignored_files_are_left_out_and_counted_unless_asked() {
    let setup = Setup::new();
    let root = setup.dir.path();
    std::fs::create_dir_all(root.join("node_modules/lib")).unwrap();
    std::fs::write(root.join(".gitignore"), "node_modules/\n").unwrap();
    let source = "def helper\nhelper()\n";
    std::fs::write(root.join("b.fk"), source).unwrap();
    std::fs::write(root.join("node_modules/lib/c.fk"), source).unwrap();
    let mut client = setup.start_fake("normal");
    // The fake server answers with locations in every open document: open
    // the ignored one.
    let (is_error, text) = client.call(
        "lsp",
        json!({"operation": "diagnostics", "path": "node_modules/lib/c.fk"}),
    );
    assert!(!is_error, "{text}");
    let note = |n: usize, noun: &str| {
        format!(
            "[note: {n} {noun} in files the project ignores (.gitignore, .ignore, the git \
             excludes) left out; include_ignored: true lists them]"
        )
    };
    let references =
        json!({"operation": "references", "path": "b.fk", "line": 2, "symbol": "helper"});
    let (is_error, text) = client.call("lsp", references.clone());
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        format!(
            "2 references in 1 file\nb.fk:1:5: def helper\nb.fk:2:1: helper()\n{}",
            note(1, "reference")
        )
    );
    let mut kept = references;
    kept["include_ignored"] = json!(true);
    let (is_error, text) = client.call("lsp", kept);
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "3 references in 2 files\nb.fk:1:5: def helper\nb.fk:2:1: helper()\n\
         node_modules/lib/c.fk:1:5: def helper"
    );

    let symbols = json!({"operation": "workspace_symbols", "path": "b.fk", "query": "helper"});
    let (is_error, text) = client.call("lsp", symbols.clone());
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        format!("1 symbol\nhelper (Function) b.fk:1\n{}", note(1, "symbol"))
    );
    let mut kept = symbols;
    kept["include_ignored"] = json!(true);
    let (_, text) = client.call("lsp", kept);
    assert_eq!(
        text,
        "2 symbols\nhelper (Function) node_modules/lib/c.fk:1\nhelper (Function) b.fk:1"
    );

    // Everything found lies in ignored files: said so, not "none found".
    let definition = json!({"operation": "definition", "path": "node_modules/lib/c.fk",
        "line": 2, "symbol": "helper"});
    let (is_error, text) = client.call("lsp", definition.clone());
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        format!(
            "no definition found outside ignored files\n{}",
            note(1, "definition")
        )
    );
    let mut kept = definition;
    kept["include_ignored"] = json!(true);
    let (_, text) = client.call("lsp", kept);
    assert_eq!(
        text,
        "1 definition in 1 file\nnode_modules/lib/c.fk:1:5: def helper"
    );
    client.shutdown();
}

// ---- real servers -------------------------------------------------------

/// The folder holding `pyright-langserver` and `typescript-language-server`
/// (an npm `node_modules/.bin`), or `None` with a loud note.
fn real_servers(test: &str) -> Option<(PathBuf, std::sync::MutexGuard<'static, ()>)> {
    match std::env::var_os("AGENT_TOOLS_LSP_BIN") {
        Some(dir) => Some((
            PathBuf::from(dir),
            REAL_SERVERS
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )),
        None => {
            eprintln!(
                "SKIPPED {test}: AGENT_TOOLS_LSP_BIN is unset (the folder holding pyright-langserver \
                 and typescript-language-server; .ci/run installs them and sets it)"
            );
            None
        }
    }
}

fn start_real(bin: &Path, root: &Path) -> McpClient {
    start_real_with(bin, root, &[])
}

fn start_real_with(bin: &Path, root: &Path, extra: &[&str]) -> McpClient {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_agent-tools"));
    command
        .arg("mcp")
        .args([
            "--root",
            root.to_str().unwrap(),
            "--lsp",
            "--lsp-wait-ms",
            "5000",
        ])
        .args(extra)
        .env("PATH", path)
        .stderr(std::process::Stdio::inherit());
    let mut client = agent_tools_test_support::mcp::McpClient::spawn(command).unwrap();
    client.try_initialize(json!({}), "test-client").unwrap();
    // A cold language server loads its libraries first, slowly on a loaded
    // machine: the guard is wider than the wait below.
    McpClient::from(client).guarded_for(REAL_SERVER_GUARD)
}

/// How long a test with real servers may take before its server is killed.
const REAL_SERVER_GUARD: Duration = Duration::from_secs(300);

/// How long a test waits for a cold server's first diagnostics.
const COLD_START_WAIT: Duration = Duration::from_secs(180);

/// The tests with real servers run one at a time: two cold Node servers
/// starting together on a small machine take minutes, not seconds.
static REAL_SERVERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Writes until the answer carries diagnostics rather than a starting note
/// (a cold server loads its libraries first), at most `COLD_START_WAIT`.
fn write_until_checked(client: &mut McpClient, path: &str, content: &str) -> String {
    let started = Instant::now();
    loop {
        let text = write(client, path, content);
        if !text.contains("still starting") && !text.contains("sent no diagnostics") {
            return text;
        }
        assert!(started.elapsed() < COLD_START_WAIT, "{text}");
    }
}

fn child_pids_named(parent_tree_of: u32, needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) && descends(pid, parent_tree_of) {
            found.push(pid);
        }
    }
    found
}

fn descends(mut pid: i32, ancestor: u32) -> bool {
    for _ in 0..64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        let Some(ppid) = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            return false;
        };
        if ppid as u32 == ancestor {
            return true;
        }
        if ppid <= 1 {
            return false;
        }
        pid = ppid;
    }
    false
}

#[test]
fn lsp_pyright_reports_a_type_error_in_the_edit_answer_and_navigates() {
    let Some((bin, _one_at_a_time)) =
        real_servers("lsp_pyright_reports_a_type_error_in_the_edit_answer_and_navigates")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("util.py"),
        "def helper(x: int) -> int:\n    return x + 1\n",
    )
    .unwrap();
    // Generated code the project ignores, which uses it too.
    std::fs::create_dir(dir.path().join("gen")).unwrap();
    std::fs::write(dir.path().join(".gitignore"), "gen/\n").unwrap();
    std::fs::write(
        dir.path().join("gen/use.py"),
        "from util import helper\n\nhelper(3)\n",
    )
    .unwrap();
    let mut client = start_real(&bin, dir.path());
    let clean = "from util import helper\n\nhelper(1)\nhelper(2)\n";
    let text = write_until_checked(&mut client, "main.py", clean);
    assert!(text.contains("no errors in main.py"), "{text}");
    let text = write(
        &mut client,
        "main.py",
        "from util import helper\n\nhelper(\"one\")\nhelper(2)\n",
    );
    assert!(text.contains("diagnostics (pyright, "), "{text}");
    assert!(
        text.contains("main.py:3:8: error: Argument of type \"Literal['one']\"")
            && text.contains("[reportArgumentType]"),
        "{text}"
    );
    let text = write(&mut client, "main.py", clean);
    assert!(text.contains("no errors in main.py"), "{text}");
    assert!(!text.contains("reportArgumentType"), "{text}");

    let (is_error, text) = client.call(
        "lsp",
        json!({"operation": "definition", "path": "main.py", "line": 3, "symbol": "helper"}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.contains("util.py:1:5: def helper(x: int) -> int:"),
        "{text}"
    );
    let (is_error, text) = client.call(
        "lsp",
        json!({"operation": "references", "path": "util.py", "line": 1, "symbol": "helper"}),
    );
    assert!(!is_error, "{text}");
    assert!(text.starts_with("4 references in 2 files"), "{text}");
    assert!(!text.contains("gen/use.py"), "{text}");
    assert!(
        text.ends_with(
            "[note: 2 references in files the project ignores (.gitignore, .ignore, the git \
             excludes) left out; include_ignored: true lists them]"
        ),
        "{text}"
    );
    let (is_error, text) = client.call(
        "lsp",
        json!({"operation": "references", "path": "util.py", "line": 1, "symbol": "helper",
            "include_ignored": true}),
    );
    assert!(!is_error, "{text}");
    assert!(text.starts_with("6 references in 3 files"), "{text}");
    assert!(text.contains("gen/use.py:3:1: helper(3)"), "{text}");
    let (_, text) = client.call(
        "lsp",
        json!({"operation": "hover", "path": "main.py", "line": 3, "symbol": "helper"}),
    );
    assert!(text.contains("(x: int) -> int"), "{text}");
    let (_, text) = client.call(
        "lsp",
        json!({"operation": "document_symbols", "path": "util.py"}),
    );
    assert!(text.starts_with("helper (Function)"), "{text}");
    let (_, text) = client.call(
        "lsp",
        json!({"operation": "workspace_symbols", "path": "util.py", "query": "helper"}),
    );
    assert!(text.contains("helper (Function) util.py:1"), "{text}");

    let pid = client.pid();
    let servers = child_pids_named(pid, "pyright");
    assert!(!servers.is_empty(), "pyright runs beneath the server");
    drop(client.take_stdin());
    client.wait_exit(Duration::from_secs(15));
    assert_all_gone(&servers, Duration::from_secs(5));
}

#[test]
fn lsp_typescript_reports_a_type_error_in_the_edit_answer() {
    let Some((bin, _one_at_a_time)) =
        real_servers("lsp_typescript_reports_a_type_error_in_the_edit_answer")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("util.ts"),
        "export function helper(x: number): number {\n  return x + 1;\n}\n",
    )
    .unwrap();
    let mut client = start_real(&bin, dir.path());
    // The first edit after start: the error, or a note that the server is
    // still starting, never a hang or a failed write.
    let broken = "import { helper } from \"./util\";\n\nhelper(\"one\");\n";
    let first = write(&mut client, "main.ts", broken);
    assert!(
        first.contains("still starting") || first.contains("main.ts:3:8: error"),
        "{first}"
    );
    // Written again unchanged, a file keeps what the server said of it,
    // and the answer lists only what the write introduced (nothing): so
    // the error is looked for in the first answer that has diagnostics.
    let text = if first.contains("main.ts:3:8: error") {
        first
    } else {
        write_until_checked(&mut client, "main.ts", broken)
    };
    assert!(
        text.contains("main.ts:3:8: error: Argument of type 'string' is not assignable to parameter of type 'number'. [2345]"),
        "{text}"
    );
    let text = write(
        &mut client,
        "main.ts",
        "import { helper } from \"./util\";\n\nhelper(1);\n",
    );
    assert!(text.contains("no errors in main.ts"), "{text}");
    let (is_error, text) = client.call(
        "lsp",
        json!({"operation": "definition", "path": "main.ts", "line": 3, "symbol": "helper"}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.contains("util.ts:1:17: export function helper"),
        "{text}"
    );
    let servers = child_pids_named(client.pid(), "typescript-language-server");
    assert!(!servers.is_empty());
    drop(client.take_stdin());
    client.wait_exit(Duration::from_secs(15));
    assert_all_gone(&servers, Duration::from_secs(5));
}

#[test]
fn lsp_claude_code_surface_offers_its_lsp_tool_only_with_lsp() {
    let setup = Setup::new();
    let mut plain = McpClient::start_guarded(setup.dir.path(), &["--surface", "claude-code"]);
    assert!(!tool_names(&mut plain).contains(&"LSP".to_owned()));
    plain.shutdown();

    std::fs::write(setup.dir.path().join("b.fk"), "def helper\nhelper()\n").unwrap();
    let args = setup.fake_args("normal", &["--surface", "claude-code"]);
    let mut client = McpClient::start_with(&args, json!({}), None).guarded();
    let listed = client.request("tools/list", json!({}));
    let tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "LSP")
        .cloned()
        .unwrap();
    insta::assert_json_snapshot!("claude_code_lsp_tool", tool);
    let file = setup.dir.path().join("b.fk");
    let file = file.to_str().unwrap();
    let (is_error, text) = client.call(
        "LSP",
        json!({"operation": "findReferences", "filePath": file, "line": 2, "character": 1}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "Found 2 references across 1 file:\n\nb.fk:\n  Line 1:5\n  Line 2:1"
    );
    let (is_error, text) = client.call(
        "LSP",
        json!({"operation": "goToDefinition", "filePath": "b.fk", "line": 2, "character": 1}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(text, "Defined in b.fk:1:5");
    let (is_error, text) = client.call(
        "LSP",
        json!({"operation": "hover", "filePath": file, "line": 0, "character": 1}),
    );
    assert!(is_error, "{text}");
    std::fs::write(setup.dir.path().join("n.txt"), "x").unwrap();
    let (is_error, text) = client.call(
        "LSP",
        json!({"operation": "hover", "filePath": "n.txt", "line": 1, "character": 1}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(text, "No LSP server available for file type: .txt");
    let (is_error, text) = client.call(
        "LSP",
        json!({"operation": "hover", "filePath": "gone.fk", "line": 1, "character": 1}),
    );
    assert!(is_error);
    assert_eq!(
        text,
        "<tool_use_error>File does not exist: gone.fk</tool_use_error>"
    );
    client.shutdown();
}

#[test]
fn lsp_claude_code_drops_locations_in_ignored_files_as_claude_code_does() {
    let setup = Setup::new();
    let root = setup.dir.path();
    std::fs::create_dir_all(root.join("node_modules/lib")).unwrap();
    std::fs::write(root.join(".gitignore"), "node_modules/\n").unwrap();
    let source = "def helper\nhelper()\n";
    std::fs::write(root.join("b.fk"), source).unwrap();
    std::fs::write(root.join("node_modules/lib/c.fk"), source).unwrap();
    let args = setup.fake_args("normal", &["--surface", "claude-code"]);
    let mut client = McpClient::start_with(&args, json!({}), None).guarded();
    // Any operation opens the file first: the fake server then answers
    // with locations in the ignored one too.
    let (is_error, text) = client.call(
        "LSP",
        json!({"operation": "hover", "filePath": "node_modules/lib/c.fk", "line": 1, "character": 5}),
    );
    assert!(!is_error, "{text}");
    let (is_error, text) = client.call(
        "LSP",
        json!({"operation": "findReferences", "filePath": "b.fk", "line": 2, "character": 1}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "Found 2 references across 1 file:\n\nb.fk:\n  Line 1:5\n  Line 2:1"
    );
    let (is_error, text) = client.call(
        "LSP",
        json!({"operation": "workspaceSymbol", "filePath": "b.fk", "line": 1, "character": 1,
            "query": "helper"}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "Found 1 symbol in workspace:\n\nb.fk:\n  helper (Function) - Line 1"
    );
    // A single location (not a list) is kept, as Claude Code keeps it.
    let (is_error, text) = client.call(
        "LSP",
        json!({"operation": "goToDefinition", "filePath": "node_modules/lib/c.fk", "line": 2,
            "character": 1}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(text, "Defined in node_modules/lib/c.fk:1:5");
    client.shutdown();
}

#[test]
fn lsp_codex_patches_carry_the_diagnostics_too() {
    let setup = Setup::new();
    let args = setup.fake_args("normal", &["--surface", "codex"]);
    let mut client = McpClient::start_with(&args, json!({}), None).guarded();
    let patch = "*** Begin Patch\n*** Add File: one.fk\n+x ERROR\n*** End Patch\n";
    let (is_error, text) = client.call("apply_patch", json!({"input": patch}));
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("Success. Updated the following files:\nA one.fk\n"),
        "{text}"
    );
    assert!(
        text.contains("\none.fk:1:3: error: found error: x ERROR [E1]"),
        "{text}"
    );
    client.shutdown();
}

#[test]
fn lsp_filesystem_edit_files_reports_each_files_diagnostics_in_its_item() {
    let setup = Setup::new();
    let root = setup.dir.path();
    for name in ["one.fk", "two.fk", "notes.txt"] {
        std::fs::write(root.join(name), "value = 1\n").unwrap();
    }
    std::fs::write(root.join("same.fk"), "other = 2\n").unwrap();
    let args = setup.fake_args("normal", &["--surface", "filesystem"]);
    let mut client = McpClient::start_with(&args, json!({}), None).guarded();
    let response = client.request(
        "tools/call",
        json!({"name": "edit_files", "arguments": {
            "paths": [format!("{}/*.fk", root.display()), format!("{}/notes.txt", root.display())],
            "edits": [{"oldText": "value = 1", "newText": "value = ERROR"}],
        }}),
    );
    let items: Vec<String> = response["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(items.len(), 4, "{items:?}");
    let item = |name: &str| {
        items
            .iter()
            .find(|text| text.contains(&format!("{}/{name}", root.display())))
            .unwrap_or_else(|| panic!("no item for {name}: {items:?}"))
            .clone()
    };
    for name in ["one.fk", "two.fk"] {
        let text = item(name);
        let shown = format!("{}/{name}", root.display());
        assert!(text.contains("\n\ndiagnostics (fake, "), "{text}");
        assert!(
            text.contains(&format!(
                "\n{shown}:1:9: error: found error: value = ERROR [E1]"
            )),
            "{text}"
        );
    }
    // A file the edit did not change and a file no server handles: none.
    assert!(!item("same.fk").contains("diagnostics ("), "{items:?}");
    assert!(!item("notes.txt").contains("diagnostics ("), "{items:?}");
    // A dry run writes nothing and tells the server nothing.
    let before = setup.log().len();
    let (is_error, text) = client.call(
        "edit_files",
        json!({"paths": [format!("{}/one.fk", root.display())],
            "edits": [{"oldText": "ERROR", "newText": "2"}], "dryRun": true}),
    );
    assert!(!is_error, "{text}");
    assert!(!text.contains("diagnostics ("), "{text}");
    assert_eq!(setup.log().len(), before, "{:?}", setup.log());
    client.shutdown();
}

#[test]
fn lsp_claude_code_notebook_edit_carries_the_new_diagnostics() {
    let setup = Setup::new();
    let notebook = setup.dir.path().join("nb.ipynb");
    let cells = json!({"cells": [{"cell_type": "code", "id": "a1", "metadata": {},
        "source": "x = 1", "outputs": [], "execution_count": null}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5});
    std::fs::write(&notebook, serde_json::to_string_pretty(&cells).unwrap()).unwrap();
    let args = setup.fake_args_on("normal", &[".ipynb"], &["--surface", "claude-code"]);
    let mut client = McpClient::start_with(&args, json!({}), None).guarded();
    let path = notebook.to_str().unwrap();
    let (is_error, text) = client.call("Read", json!({"file_path": path}));
    assert!(!is_error, "{text}");
    let (is_error, text) = client.call(
        "NotebookEdit",
        json!({"notebook_path": path, "cell_id": "a1", "new_source": "x = ERROR"}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.contains(
            "\n\n<new-diagnostics>The following new diagnostic issues were detected:\n\nnb.ipynb:\n  ✘ [Line "
        ),
        "{text}"
    );
    assert!(
        text.ends_with("found error: \"source\": \"x = ERROR\", [E1] (fake)</new-diagnostics>")
            || text
                .ends_with("found error: \"source\": \"x = ERROR\" [E1] (fake)</new-diagnostics>"),
        "{text}"
    );
    // The fix: Claude Code's own answer, nothing added.
    let (is_error, text) = client.call(
        "NotebookEdit",
        json!({"notebook_path": path, "cell_id": "a1", "new_source": "x = 2"}),
    );
    assert!(!is_error, "{text}");
    assert!(!text.contains("<new-diagnostics>"), "{text}");
    client.shutdown();
}

#[test]
fn lsp_removed_files_are_closed_on_the_server() {
    let setup = Setup::new();
    let root = setup.dir.path();
    for name in ["a.fk", "b.fk", "c.fk"] {
        std::fs::write(root.join(name), "x = 1\n").unwrap();
    }
    let uri = |name: &str| format!("file://{}/{name}", root.canonicalize().unwrap().display());
    // Default surface: a patch that deletes one file and moves another.
    let mut client = setup.start_fake("normal");
    for name in ["a.fk", "b.fk"] {
        let (is_error, text) =
            client.call("lsp", json!({"operation": "diagnostics", "path": name}));
        assert!(!is_error, "{text}");
    }
    let patch = "*** Begin Patch\n*** Delete File: a.fk\n*** Update File: b.fk\n*** Move to: moved.fk\n@@\n-x = 1\n+x = 2\n*** End Patch\n";
    let (is_error, text) = client.call("apply_patch", json!({"patch": patch}));
    assert!(!is_error, "{text}");
    assert!(text.contains("no errors in moved.fk"), "{text}");
    let log = setup.log();
    for name in ["a.fk", "b.fk"] {
        let closed = format!("textDocument/didClose {}", uri(name));
        assert!(log.contains(&closed), "{closed} not in {log:?}");
    }
    client.shutdown();
    // Filesystem surface: delete_file.
    let args = setup.fake_args("normal", &["--surface", "filesystem"]);
    let mut client = McpClient::start_with(&args, json!({}), None).guarded();
    let c = root.join("c.fk");
    let c = c.to_str().unwrap();
    let (is_error, text) = client.call("write_file", json!({"path": c, "content": "x = 3\n"}));
    assert!(!is_error, "{text}");
    let (is_error, text) = client.call("delete_file", json!({"path": c}));
    assert!(!is_error, "{text}");
    // A notification has no answer: the server logs it when it gets to it.
    let closed = format!("textDocument/didClose {}", uri("c.fk"));
    let started = Instant::now();
    while !setup.log().contains(&closed) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{closed} not in {:?}",
            setup.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    client.shutdown();
}

/// Asks until the server answers rather than saying it is still starting
/// (a cold server loads its libraries first, and pyright answers a rename
/// with nothing until it has analysed the project), at most
/// `COLD_START_WAIT`.
fn call_until_ready(client: &mut McpClient, tool: &str, args: serde_json::Value) -> (bool, String) {
    let started = Instant::now();
    loop {
        let (is_error, text) = client.call(tool, args.clone());
        if !text.contains("still starting")
            && !text.contains("still indexing")
            && !text.contains("nothing to rename")
            && !text.contains("cannot be renamed there")
        {
            return (is_error, text);
        }
        assert!(started.elapsed() < COLD_START_WAIT, "{text}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn lsp_pyright_renames_across_files_all_at_once() {
    let Some((bin, _one_at_a_time)) = real_servers("lsp_pyright_renames_across_files_all_at_once")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let util = "def helper(x: int) -> int:\r\n    return x + 1\r\n";
    let main = "from util import helper\n\nhelper(1)  # helper\nhelper(2)";
    std::fs::write(dir.path().join("util.py"), util).unwrap();
    std::fs::write(dir.path().join("main.py"), main).unwrap();
    let mut client = start_real(&bin, dir.path());
    let args = json!({"path": "main.py", "line": 3, "symbol": "helper", "new_name": "assist", "dry_run": true});
    let (is_error, text) = call_until_ready(&mut client, "rename_symbol", args);
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(
            "dry run: renaming `helper` to `assist` would make 4 edits in 2 files (nothing written)"
        ),
        "{text}"
    );
    assert!(text.contains("\n+++ b/util.py\n"), "{text}");
    assert!(text.contains("\n+assist(1)  # helper\n"), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("util.py")).unwrap(),
        util
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("main.py")).unwrap(),
        main
    );

    let (is_error, text) = client.call(
        "rename_symbol",
        json!({"path": "main.py", "line": 3, "symbol": "helper", "new_name": "assist"}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("renamed `helper` to `assist`: 4 edits in 2 files\n"),
        "{text}"
    );
    assert!(
        text.contains("\nmain.py: 3 edits") && text.contains("\nutil.py: 1 edit"),
        "{text}"
    );
    assert!(text.contains("diagnostics (pyright, "), "{text}");
    // Byte-exact: line endings, the comment and the missing final newline
    // are as they were; only the name changed.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("util.py")).unwrap(),
        "def assist(x: int) -> int:\r\n    return x + 1\r\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("main.py")).unwrap(),
        "from util import assist\n\nassist(1)  # helper\nassist(2)"
    );
    // A symbol of the standard library: pyright's prepareRename refuses it,
    // and nothing is written.
    let (is_error, text) = client.call(
        "rename_symbol",
        json!({"path": "util.py", "line": 1, "symbol": "int", "new_name": "whole"}),
    );
    assert!(is_error, "{text}");
    assert!(
        text.contains("util.py:1: the language server says `int` cannot be renamed there"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("util.py")).unwrap(),
        "def assist(x: int) -> int:\r\n    return x + 1\r\n"
    );
    drop(client.take_stdin());
    client.wait_exit(Duration::from_secs(15));
}

/// Calls `tool` with the arguments `args(n)` gives for n = 1, 2, ... (each
/// a different text, so each is a change) until the answer contains
/// `wanted`, at most `COLD_START_WAIT` (a cold server says nothing of the
/// first texts it is sent).
fn edit_until(
    client: &mut McpClient,
    tool: &str,
    args: impl Fn(usize) -> serde_json::Value,
    wanted: &str,
) -> String {
    let started = Instant::now();
    for n in 1.. {
        let (is_error, text) = client.call(tool, args(n));
        assert!(!is_error, "{text}");
        if text.contains(wanted) {
            return text;
        }
        assert!(started.elapsed() < COLD_START_WAIT, "{text}");
    }
    unreachable!()
}

const PY_UTIL: &str = "def helper(x: int) -> int:\n    return x + 1\n";
const PY_CLEAN: &str = "from util import helper\n\nhelper(1)\n";

#[test]
fn lsp_pyright_errors_in_the_filesystem_surfaces_write_answers() {
    let Some((bin, _one_at_a_time)) =
        real_servers("lsp_pyright_errors_in_the_filesystem_surfaces_write_answers")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("util.py"), PY_UTIL).unwrap();
    let mut client = start_real_with(&bin, dir.path(), &["--surface", "filesystem"]);
    let root = dir.path().to_path_buf();
    let main = root.join("main.py");
    let main = main.to_str().unwrap();
    let text = edit_until(
        &mut client,
        "write_file",
        |n| json!({"path": main, "content": format!("from util import helper\n\nhelper(\"{n}\")\n")}),
        "reportArgumentType",
    );
    assert!(
        text.starts_with(&format!(
            "Successfully wrote {main}\n\ndiagnostics (pyright, "
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("\n{main}:3:8: error: Argument of type \"Literal[")),
        "{text}"
    );
    let (is_error, text) = client.call("write_file", json!({"path": main, "content": PY_CLEAN}));
    assert!(!is_error, "{text}");
    assert!(text.ends_with(&format!("\nno errors in {main}")), "{text}");
    // edit_file: the error comes back, and goes with the revert.
    let (is_error, text) = client.call(
        "edit_file",
        json!({"path": main, "edits": [{"oldText": "helper(1)", "newText": "helper(\"one\")"}]}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.contains(&format!(
            "\n{main}:3:8: error: Argument of type \"Literal['one']\""
        )),
        "{text}"
    );
    let (is_error, text) = client.call(
        "edit_file",
        json!({"path": main, "edits": [{"oldText": "helper(\"one\")", "newText": "helper(1)"}]}),
    );
    assert!(!is_error, "{text}");
    assert!(text.ends_with(&format!("\nno errors in {main}")), "{text}");
    assert!(!text.contains("reportArgumentType"), "{text}");
    // A move: checked under its new name.
    let moved = root.join("moved.py");
    let moved = moved.to_str().unwrap();
    let (is_error, text) = client.call("move_file", json!({"source": main, "destination": moved}));
    assert!(!is_error, "{text}");
    assert!(text.ends_with(&format!("\nno errors in {moved}")), "{text}");
    drop(client.take_stdin());
    client.wait_exit(Duration::from_secs(15));
}

#[test]
fn lsp_pyright_errors_in_the_claude_code_surfaces_write_answers() {
    let Some((bin, _one_at_a_time)) =
        real_servers("lsp_pyright_errors_in_the_claude_code_surfaces_write_answers")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("util.py"), PY_UTIL).unwrap();
    let mut client = start_real_with(&bin, dir.path(), &["--surface", "claude-code"]);
    let main = dir.path().join("main.py");
    let main = main.to_str().unwrap();
    let (is_error, text) = client.call("Write", json!({"file_path": main, "content": PY_CLEAN}));
    assert!(!is_error, "{text}");
    // Each Edit turns the previous call's text into a new broken one.
    let text = edit_until(
        &mut client,
        "Edit",
        |n| {
            let old = if n == 1 {
                "helper(1)".to_owned()
            } else {
                format!("helper(\"{}\")", n - 1)
            };
            json!({"file_path": main, "old_string": old, "new_string": format!("helper(\"{n}\")")})
        },
        "<new-diagnostics>",
    );
    assert!(
        text.starts_with(&format!(
            "The file {main} has been updated successfully.\n\n<new-diagnostics>The following new diagnostic issues were detected:\n\nmain.py:\n  ✘ [Line 3:8] Argument of type \"Literal["
        )),
        "{text}"
    );
    assert!(
        text.ends_with("[reportArgumentType] (Pyright)</new-diagnostics>"),
        "{text}"
    );
    // The revert: Claude Code's own answer, nothing added.
    let current = std::fs::read_to_string(dir.path().join("main.py")).unwrap();
    let (is_error, text) = client.call("Write", json!({"file_path": main, "content": PY_CLEAN}));
    assert!(!is_error, "{text}");
    assert_ne!(current, PY_CLEAN);
    assert_eq!(
        text,
        format!("The file {main} has been updated successfully.")
    );
    let (is_error, text) = client.call(
        "MultiEdit",
        json!({"file_path": main, "edits": [{"old_string": "helper(1)", "new_string": "helper(\"x\")"}]}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.contains("<new-diagnostics>") && text.contains("main.py:\n  ✘ [Line 3:8]"),
        "{text}"
    );
    drop(client.take_stdin());
    client.wait_exit(Duration::from_secs(15));
}

#[test]
fn lsp_pyright_sees_changes_made_by_bash() {
    let Some((bin, _one_at_a_time)) = real_servers("lsp_pyright_sees_changes_made_by_bash") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut client = start_real(&bin, dir.path());
    write(&mut client, "util.py", PY_UTIL);
    let text = write_until_checked(&mut client, "main.py", PY_CLEAN);
    assert!(text.contains("no errors in main.py"), "{text}");
    // The file asked about, broken by a command.
    let (is_error, text) = client.call(
        "bash",
        json!({"command": "printf 'from util import helper\\n\\nhelper(\"one\")\\n' > main.py"}),
    );
    assert!(!is_error, "{text}");
    let (is_error, text) = client.call(
        "lsp",
        json!({"operation": "diagnostics", "path": "main.py"}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.contains("main.py:3:8: error: Argument of type \"Literal['one']\"")
            && text.contains("[reportArgumentType]"),
        "{text}"
    );
    write(&mut client, "main.py", PY_CLEAN);
    // Another open file, changed by a command: the file asked about is
    // unchanged, yet its errors follow the other's new text.
    let (is_error, text) = client.call(
        "bash",
        json!({"command": "sed -i 's/x: int/x: str/' util.py"}),
    );
    assert!(!is_error, "{text}");
    let (is_error, text) = client.call(
        "lsp",
        json!({"operation": "diagnostics", "path": "main.py"}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.contains("main.py:3:8: error: Argument of type \"Literal[1]\"")
            && text.contains("[reportArgumentType]"),
        "{text}"
    );
    // And navigation answers for the text now there.
    let (is_error, text) = client.call(
        "lsp",
        json!({"operation": "hover", "path": "main.py", "line": 3, "symbol": "helper"}),
    );
    assert!(!is_error, "{text}");
    assert!(text.contains("(x: str) -> int"), "{text}");
    drop(client.take_stdin());
    client.wait_exit(Duration::from_secs(15));
}

#[test]
fn lsp_a_rename_is_one_call_of_the_journal_and_undone_whole() {
    let setup = Setup::new();
    let state = setup.side.path().join("journal");
    let state = state.to_str().unwrap();
    let args = setup.fake_args("normal", &["--journal", "--journal-dir", state]);
    let mut client = McpClient::start_with(&args, json!({}), None).guarded();
    write(&mut client, "b.fk", "def helper\n");
    write(&mut client, "c.fk", "helper()\r\nhelper()\r\n");
    let (is_error, text) = rename(
        &mut client,
        json!({"path": "b.fk", "line": 1, "symbol": "helper", "new_name": "assist"}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(
            "renamed `helper` to `assist`: 3 edits in 2 files\nb.fk: 1 edit\nc.fk: 2 edits\n"
        ),
        "{text}"
    );
    let read = |name: &str| std::fs::read_to_string(setup.dir.path().join(name)).unwrap();
    assert_eq!(read("c.fk"), "assist()\r\nassist()\r\n");
    let (is_error, listing) = client.call("changes", json!({"limit": 1}));
    assert!(!is_error, "{listing}");
    assert!(listing.contains("rename_symbol"), "{listing}");
    let id: u64 = listing
        .strip_prefix("call ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("{listing}"));
    let (is_error, text) = client.call("undo", json!({"call": id}));
    assert!(!is_error, "{text}");
    assert_eq!(read("b.fk"), "def helper\n");
    assert_eq!(read("c.fk"), "helper()\r\nhelper()\r\n");
    client.shutdown();
}
