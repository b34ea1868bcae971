//! What `--lsp` costs an edit to a file no language server handles (the
//! same `edit_file` with the servers on and off, side by side), and how
//! long an edit's answer waits for a warm pyright's error beyond pyright's
//! own publish time (our server over MCP and a direct LSP client, taking
//! turns).

use std::cell::Cell;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::str::FromStr as _;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use agent_tools::{AgentTools, Config, LspOptions, Surface as _};
use agent_tools_surface_default::DefaultSurface;
use agent_tools_test_support::mcp::McpClient;
use agent_tools_test_support::measure::load_text;
use anyhow::{Context as _, Result, bail};
use lsp_types::notification::{
    DidChangeTextDocument, DidOpenTextDocument, Exit, Initialized, Notification as _,
    PublishDiagnostics,
};
use lsp_types::request::{Initialize, Request as _, Shutdown, WorkspaceConfiguration};
use lsp_types::{
    ClientCapabilities, Diagnostic, DidChangeTextDocumentParams, DidOpenTextDocumentParams,
    InitializeParams, InitializedParams, NumberOrString, PublishDiagnosticsClientCapabilities,
    PublishDiagnosticsParams, TextDocumentClientCapabilities, TextDocumentContentChangeEvent,
    TextDocumentItem, Uri, VersionedTextDocumentIdentifier, WorkspaceFolder,
};
use serde_json::{Value, json};

use super::Ctx;
use crate::measure::{Stats, Step, interleaved};
use crate::report::{Table, duration};

/// The goal: `--lsp` adds less than this to such an edit (median).
const GOAL_MICROS: f64 = 100.0;

/// `edit_file` of a `.txt` file (which no built-in server handles) with
/// `--lsp` (the built-in table) and without, in process, taking turns: the
/// difference is what the servers' hook costs a write they do not concern
/// (a path resolution and a look-up by extension; nothing is started).
pub fn lsp(ctx: &Ctx<'_>) -> Result<Table> {
    eprintln!("lsp ...");
    let mut table = Table::new("Language servers (`--lsp`)");
    let text = "first line\nthe value is one\nlast line\n";
    // All in one folder, editing one file: where a file lies on the disk
    // moves a write's time by more than the hook costs.
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("notes.txt"), text)?;
    let open = |lsp: bool| -> Result<AgentTools> {
        let mut config = Config::builder(dir.path());
        if lsp {
            config = config.lsp(LspOptions::default());
        }
        Ok(agent_tools_surface_default::open(config.build()?)?)
    };
    let on = open(true)?;
    let off = open(false)?;
    // A second server without it: the difference between the two servers
    // without `--lsp` is how far apart two identical set-ups land.
    let same = open(false)?;
    // Each edit turns one word into the other, so every call writes.
    let edit = |tools: &AgentTools, flip: &Cell<bool>| -> Result<()> {
        let (old, new) = if flip.get() {
            ("two", "one")
        } else {
            ("one", "two")
        };
        flip.set(!flip.get());
        let result = tools.call(
            "edit_file",
            json!({"path": "notes.txt", "old_string": old, "new_string": new}),
        );
        if result.is_error {
            bail!("edit_file failed: {}", result.text);
        }
        if result.text.contains("diagnostics") {
            bail!("a server answered for a .txt file: {}", result.text);
        }
        Ok(())
    };
    let flip = Cell::new(false);
    let runs = ctx.pick(3000, 1000);
    let stats = interleaved(
        runs,
        &mut [
            Box::new(|| edit(&on, &flip)) as Step<'_>,
            Box::new(|| edit(&off, &flip)),
            Box::new(|| edit(&same, &flip)),
        ],
    )?;
    let (ours, bare) = (&stats[0], &stats[1]);
    table.timed(
        "`edit_file` of a `.txt` file, in process: with `--lsp` vs without",
        ours,
        bare,
    );
    let micros = |a: &Stats, b: &Stats| (a.median().as_secs_f64() - b.median().as_secs_f64()) * 1e6;
    let difference = micros(ours, bare);
    table.row(
        format!("cost of `--lsp` on an edit no server handles (median difference; goal < {GOAL_MICROS:.0} µs)"),
        format!("{difference:+.1} µs"),
        "—",
        "—",
    );
    table.row(
        "the same between two servers both without `--lsp` (how far apart identical set-ups land)",
        format!("{:+.1} µs", micros(&stats[2], bare)),
        "—",
        "—",
    );
    // The hook alone, which is all `--lsp` adds to such a write: timed in
    // batches, as one call is too short for the clock.
    let config = Config::builder(dir.path())
        .lsp(LspOptions::default())
        .build()?;
    let services = DefaultSurface.open(&config)?;
    let cancel = AtomicBool::new(false);
    let batch = 1000;
    let mut per_call = Vec::new();
    for _ in 0..ctx.pick(200, 50) {
        let started = Instant::now();
        for _ in 0..batch {
            let answer = services.with_diagnostics(String::from("ok"), &["notes.txt"], &cancel);
            if answer != "ok" {
                bail!("a server answered for a .txt file: {answer}");
            }
        }
        per_call.push(started.elapsed() / batch);
    }
    let hook = Stats::of(per_call);
    table.row(
        "the hook alone (`with_diagnostics` of that write: path resolution, look-up by extension)",
        format!("{} / {}", duration(hook.median()), duration(hook.mean())),
        "—",
        "—",
    );
    let hook_ok = hook.median() < Duration::from_secs_f64(GOAL_MICROS / 1e6);
    table.note(format!(
        "{runs} edits of each ({} build), interleaved, after one untimed warm-up; each flips a word of a \
         three-line file, so every call writes (atomically, through the engine's writer). \
         With `--lsp` the built-in server table is loaded; no server handles `.txt`, so none \
         is started and nothing is waited for. A write's own time (an atomic write, \
         fsync included) varies far more than the hook costs, so the median difference of whole \
         edits is mostly noise; the hook's own time is the figure that meets or misses the goal.{}",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        if hook_ok { "" } else { " **Goal missed.**" }
    ));
    warm_pyright(ctx, &mut table)?;
    Ok(table)
}

/// The goal: an edit's answer carries a warm pyright's error within this
/// of pyright's own publish time (medians).
const GOAL_BEHIND_PYRIGHT: Duration = Duration::from_millis(500);

/// How long a cold pyright may take to answer its first document.
const COLD_START: Duration = Duration::from_secs(180);

/// How long a warm pyright may take to answer one change.
const ONE_CHANGE: Duration = Duration::from_secs(30);

/// The two-file project both sides edit: `main.py` calls `helper` of
/// `util.py`; the broken text passes a string where an int is declared.
const UTIL: &str = "def helper(x: int) -> int:\n    return x + 1\n";
const CLEAN: &str = "from util import helper\n\nhelper(1)\nhelper(2)\n";
const BROKEN: &str = "from util import helper\n\nhelper(\"one\")\nhelper(2)\n";
/// The rule pyright names the error by.
const ERROR_CODE: &str = "reportArgumentType";

/// The rows comparing a warm pyright's publish time, seen by a minimal
/// direct LSP client, with the time `edit_file` through our server takes
/// to answer with the same error: added to `table`, or a row saying why
/// it was skipped.
pub fn warm_pyright(ctx: &Ctx<'_>, table: &mut Table) -> Result<()> {
    let what = "`edit_file` introducing a type error, until its answer carries pyright's error \
                (over MCP stdio) vs a direct LSP client's `didChange` until pyright publishes it";
    let Some(program) = find_pyright() else {
        table.row(what, "skipped", "skipped", "—");
        table.note(
            "Warm pyright: skipped, `pyright-langserver` was found neither in \
             `AGENT_TOOLS_LSP_BIN` (an npm `node_modules/.bin` folder) nor on `PATH` \
             (`npm install pyright` and point `AGENT_TOOLS_LSP_BIN` at its `.bin`).",
        );
        return Ok(());
    };
    eprintln!("lsp: warm pyright ({}) ...", program.display());
    let project = |name: &str| -> Result<tempfile::TempDir> {
        let dir = tempfile::Builder::new().prefix(name).tempdir()?;
        std::fs::write(dir.path().join("util.py"), UTIL)?;
        std::fs::write(dir.path().join("main.py"), CLEAN)?;
        Ok(dir)
    };
    // Each side has its own project and its own pyright, so neither sees
    // the other's files change.
    let direct_dir = project("lsp-direct")?;
    let ours_dir = project("lsp-ours")?;
    // Pyright installed but unable to run (no `node`, a broken install)
    // is a row saying so; a failure on our side fails the bench.
    let mut direct = match Direct::start(&program, direct_dir.path()) {
        Ok(direct) => direct,
        Err(err) => {
            table.row(what, "skipped", "skipped", "—");
            table.note(format!(
                "Warm pyright: skipped, {} did not start as a language server: {err:#}.",
                program.display()
            ));
            return Ok(());
        }
    };
    let mut ours = Ours::start(ctx.exe()?, &program, ours_dir.path())?;
    let warm_up = 2;
    let runs = ctx.pick(15, 5);
    let mut samples = [Vec::with_capacity(runs), Vec::with_capacity(runs)];
    for round in 0..warm_up + runs {
        // Taking turns, each first every other round.
        for side in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
            let took = if side == 0 {
                direct.round()?
            } else {
                ours.round()?
            };
            if round >= warm_up {
                samples[side].push(took);
            }
        }
    }
    let [direct_samples, ours_samples] = samples;
    let (direct_stats, ours_stats) = (Stats::of(direct_samples), Stats::of(ours_samples));
    table.timed(what, &ours_stats, &direct_stats);
    let behind = ours_stats.median().saturating_sub(direct_stats.median());
    let ahead = direct_stats.median().saturating_sub(ours_stats.median());
    table.row(
        format!(
            "how long our answer waits beyond pyright's publish (median difference; goal ≤ {} ms)",
            GOAL_BEHIND_PYRIGHT.as_millis()
        ),
        if ahead > Duration::ZERO {
            format!("−{}", duration(ahead))
        } else {
            format!("+{}", duration(behind))
        },
        "—",
        "—",
    );
    direct.stop();
    ours.stop()?;
    table.note(format!(
        "Warm pyright ({}): {warm_up} untimed rounds after the first answer, then {runs} timed \
         rounds taking turns; each round introduces the error (timed) and removes it again \
         (untimed, waiting until it is gone). Ours: `agent-tools mcp --lsp` ({}) over stdio, \
         `edit_file` of `main.py`, the time until its answer arrives with `{ERROR_CODE}` in it \
         (the write, fsync included, the notification to pyright, the wait for its diagnostics \
         of that version, the answer). Theirs: a minimal LSP client in the bench (initialize, \
         didOpen, then full-text didChange), the time until pyright's publishDiagnostics of that \
         version carrying `{ERROR_CODE}`. Load average at the end: {}.{}",
        pyright_version(&program).unwrap_or_else(|| "version unknown".to_owned()),
        build_of(ctx.exe()?),
        load_text(),
        if behind <= GOAL_BEHIND_PYRIGHT {
            ""
        } else {
            " **Goal missed.**"
        }
    ));
    Ok(())
}

/// `pyright-langserver` in `AGENT_TOOLS_LSP_BIN` (where CI installs the
/// servers), else on `PATH`.
fn find_pyright() -> Option<PathBuf> {
    let name = "pyright-langserver";
    let from_env = std::env::var_os("AGENT_TOOLS_LSP_BIN").map(|dir| PathBuf::from(dir).join(name));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join(name));
    from_env.into_iter().chain(on_path).find(|p| p.is_file())
}

/// Pyright's version, from the package beside its `.bin` folder.
fn pyright_version(program: &Path) -> Option<String> {
    let package = program.parent()?.parent()?.join("pyright/package.json");
    let text = std::fs::read_to_string(package).ok()?;
    let json: Value = serde_json::from_str(&text).ok()?;
    Some(format!("pyright {}", json.get("version")?.as_str()?))
}

/// The binary's path, and whether it is a debug or a release build as
/// far as its place in a target folder tells.
fn build_of(exe: &Path) -> String {
    let kind = exe
        .parent()
        .and_then(Path::file_name)
        .and_then(|name| name.to_str())
        .filter(|name| matches!(*name, "debug" | "release"))
        .map_or(String::new(), |name| format!(", a {name} build"));
    format!("{}{kind}", exe.display())
}

/// Our server with `--lsp`, finding pyright on its `PATH`.
struct Ours {
    client: McpClient,
}

impl Ours {
    fn start(exe: &Path, program: &Path, root: &Path) -> Result<Ours> {
        let bin = program.parent().context("pyright has no folder")?;
        let mut path = std::ffi::OsString::from(bin);
        if let Some(rest) = std::env::var_os("PATH") {
            path.push(":");
            path.push(rest);
        }
        let mut command = Command::new(exe);
        command
            .arg("mcp")
            .arg("--root")
            .arg(root)
            // Wide enough that a loaded machine never turns an answer
            // into a "nothing received" note.
            .args(["--lsp", "--lsp-wait-ms", "10000"])
            .env("PATH", path)
            .stderr(Stdio::null());
        let mut client = McpClient::spawn(command).context("starting agent-tools mcp --lsp")?;
        client.try_initialize(json!({}), "xtask-bench")?;
        let mut ours = Ours { client };
        // The first write starts pyright; until it has answered once, the
        // answers say it is starting.
        let started = Instant::now();
        loop {
            let text = ours.write_clean()?;
            if text.contains("no errors in main.py") {
                break;
            }
            if started.elapsed() > COLD_START {
                bail!("pyright behind our server did not answer within {COLD_START:?}: {text}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(ours)
    }

    /// Calls `tool`; the answer's text.
    fn call(&mut self, tool: &str, args: Value) -> Result<String> {
        let response = self
            .client
            .try_request("tools/call", json!({"name": tool, "arguments": args}))?;
        let (is_error, text) = McpClient::call_result(&response);
        if is_error {
            bail!("{tool} failed: {text}");
        }
        Ok(text)
    }

    /// `write_file` of the clean `main.py` (which writes even when the
    /// text is the same, so each call is checked anew).
    fn write_clean(&mut self) -> Result<String> {
        self.call("write_file", json!({"path": "main.py", "content": CLEAN}))
    }

    /// `edit_file` of `main.py`.
    fn edit(&mut self, old: &str, new: &str) -> Result<String> {
        self.call(
            "edit_file",
            json!({"path": "main.py", "old_string": old, "new_string": new}),
        )
    }

    /// Introduces the error (timed, until the answer carries it) and
    /// removes it (untimed).
    fn round(&mut self) -> Result<Duration> {
        let started = Instant::now();
        let text = self.edit("helper(1)", "helper(\"one\")")?;
        let took = started.elapsed();
        if !text.contains(ERROR_CODE) || !text.contains("diagnostics (pyright, ") {
            bail!("our answer lacks pyright's error: {text}");
        }
        let text = self.edit("helper(\"one\")", "helper(1)")?;
        if !text.contains("no errors in main.py") {
            bail!("our answer after the fix is not clean: {text}");
        }
        Ok(took)
    }

    fn stop(self) -> Result<()> {
        self.client.try_shutdown()?;
        Ok(())
    }
}

/// The smallest LSP client that gets pyright's diagnostics: `initialize`,
/// `didOpen`, full-text `didChange`s, and answers to the requests pyright
/// sends meanwhile.
struct Direct {
    child: Child,
    stdin: ChildStdin,
    messages: mpsc::Receiver<Value>,
    next_id: i32,
    uri: Uri,
    version: i32,
}

/// The longest message the client reads; pyright's are kilobytes.
const MAX_MESSAGE: usize = 64 << 20;

impl Direct {
    fn start(program: &Path, root: &Path) -> Result<Direct> {
        let mut child = Command::new(program)
            .arg("--stdio")
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            bail!("pyright's pipes were not set up");
        };
        let (sender, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Ok(Some(message)) = read_message(&mut reader) {
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        let root_uri = file_uri(root)?;
        let mut direct = Direct {
            child,
            stdin,
            messages,
            next_id: 1,
            uri: file_uri(&root.join("main.py"))?,
            version: 1,
        };
        let params = InitializeParams {
            process_id: Some(std::process::id()),
            workspace_folders: Some(vec![WorkspaceFolder {
                uri: root_uri,
                name: "bench".to_owned(),
            }]),
            capabilities: ClientCapabilities {
                text_document: Some(TextDocumentClientCapabilities {
                    publish_diagnostics: Some(PublishDiagnosticsClientCapabilities {
                        version_support: Some(true),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let id = direct.request(Initialize::METHOD, serde_json::to_value(params)?)?;
        direct.wait(COLD_START, |m| {
            m.get("id") == Some(&json!(id)) && m.get("method").is_none()
        })?;
        direct.notify(
            Initialized::METHOD,
            serde_json::to_value(InitializedParams {})?,
        )?;
        let open = DidOpenTextDocumentParams {
            text_document: TextDocumentItem {
                uri: direct.uri.clone(),
                language_id: "python".to_owned(),
                version: direct.version,
                text: CLEAN.to_owned(),
            },
        };
        direct.notify(DidOpenTextDocument::METHOD, serde_json::to_value(open)?)?;
        let version = direct.version;
        direct.wait(COLD_START, |m| direct_publish(m, version).is_some())?;
        Ok(direct)
    }

    /// Sends the full text as the next version and waits for pyright's
    /// diagnostics of it that `done` accepts; the time from sending.
    fn change(&mut self, text: &str, done: fn(&[Diagnostic]) -> bool) -> Result<Duration> {
        self.version += 1;
        let change = DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier {
                uri: self.uri.clone(),
                version: self.version,
            },
            content_changes: vec![TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: text.to_owned(),
            }],
        };
        let started = Instant::now();
        self.notify(DidChangeTextDocument::METHOD, serde_json::to_value(change)?)?;
        let version = self.version;
        let uri = self.uri.clone();
        self.wait(ONE_CHANGE, |m| {
            direct_publish(m, version).is_some_and(|p| p.uri == uri && done(&p.diagnostics))
        })?;
        Ok(started.elapsed())
    }

    fn round(&mut self) -> Result<Duration> {
        let took = self.change(BROKEN, |d| d.iter().any(is_the_error))?;
        self.change(CLEAN, |d| !d.iter().any(is_the_error))?;
        Ok(took)
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len())?;
        self.stdin.flush()?;
        Ok(())
    }

    fn request(&mut self, method: &str, params: Value) -> Result<i32> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    fn notify(&mut self, method: &str, params: Value) -> Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Reads messages until one `until` accepts, answering pyright's
    /// requests on the way (configuration with nulls, as our server does
    /// without settings; the rest with null).
    fn wait(&mut self, limit: Duration, mut until: impl FnMut(&Value) -> bool) -> Result<Value> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.messages.recv_timeout(left) {
                Ok(message) => message,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    bail!("pyright sent nothing awaited within {limit:?}")
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => bail!("pyright closed its output"),
            };
            if let (Some(id), Some(method)) = (message.get("id"), message.get("method")) {
                let result = if method == WorkspaceConfiguration::METHOD {
                    let items = message["params"]["items"].as_array().map_or(0, Vec::len);
                    Value::Array(vec![Value::Null; items])
                } else {
                    Value::Null
                };
                self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))?;
                continue;
            }
            if until(&message) {
                return Ok(message);
            }
        }
    }

    /// `shutdown`, `exit`, and a wait for pyright to end (dropping kills it
    /// if it has not).
    fn stop(mut self) {
        if let Ok(id) = self.request(Shutdown::METHOD, Value::Null) {
            let _ = self.wait(Duration::from_secs(5), |m| m.get("id") == Some(&json!(id)));
            let _ = self.notify(Exit::METHOD, Value::Null);
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Direct {
    /// Whatever ended the run (a failed round included), pyright does not
    /// outlive it.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The diagnostics a message publishes for `version`, if it is such a
/// publication.
fn direct_publish(message: &Value, version: i32) -> Option<PublishDiagnosticsParams> {
    if message.get("method")? != PublishDiagnostics::METHOD {
        return None;
    }
    let params: PublishDiagnosticsParams =
        serde_json::from_value(message.get("params")?.clone()).ok()?;
    (params.version == Some(version)).then_some(params)
}

fn is_the_error(d: &Diagnostic) -> bool {
    d.code == Some(NumberOrString::String(ERROR_CODE.to_owned()))
}

fn file_uri(path: &Path) -> Result<Uri> {
    let text = path.to_str().context("a temporary path is not UTF-8")?;
    Uri::from_str(&format!("file://{text}")).map_err(|err| anyhow::anyhow!("{text}: {err}"))
}

/// One LSP message: `Content-Length` headers, a blank line, the body.
/// `Ok(None)` at the end of the output.
fn read_message(reader: &mut impl BufRead) -> Result<Option<Value>> {
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = Some(value.trim().parse::<usize>()?);
        }
    }
    let length = length.context("a message without Content-Length")?;
    if length > MAX_MESSAGE {
        bail!("a message of {length} bytes");
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(serde_json::from_slice(&body)?))
}
