//! `agent-tools mcp --listen`: Streamable HTTP on loopback, through a
//! plain HTTP client, both protocol eras.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp_stdio::{assert_gone_within, unique, wait_until_running};

const NEW: &str = "2026-07-28";
const OLD: &str = "2025-11-25";

/// A server on a free loopback port, killed when dropped.
struct Server {
    child: Child,
    url: String,
    _tokens: tempfile::NamedTempFile,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(root: &Path, extra: &[&str]) -> Server {
    let mut tokens = tempfile::NamedTempFile::new().unwrap();
    tokens
        .write_all(b"# two principals\nalice:tok-a\nbob:tok-b\n")
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .args(["mcp", "--listen", "127.0.0.1:0", "--root"])
        .arg(root)
        .arg("--token-file")
        .arg(tokens.path())
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    // The first line names the address.
    let mut line = Vec::new();
    let mut byte = [0u8];
    while stderr.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let line = String::from_utf8(line).unwrap();
    let url = line
        .strip_prefix("agent-tools: listening on ")
        .unwrap_or_else(|| panic!("no address: {line}"))
        .to_owned();
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Server {
        child,
        url,
        _tokens: tokens,
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// Posts one JSON-RPC message; the status, the session id and the JSON
/// answer (from plain JSON or the last SSE data line).
fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> (u16, Option<String>, Value) {
    let mut request = agent()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut response = request.send(body.to_string()).unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = response.body_mut().read_to_string().unwrap();
    let json = text
        .lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .find_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or(Value::String(text));
    (status, session, json)
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": NEW,
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A 2026-07-28 `tools/call`: no session, the version in `_meta` and the
/// routing headers.
fn call_new(server: &Server, token: &str, tool: &str, args: Value) -> Value {
    let auth = format!("Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": args, "_meta": meta()}});
    let (status, _, answer) = post(
        &server.url,
        &[
            ("authorization", &auth),
            ("mcp-protocol-version", NEW),
            ("mcp-method", "tools/call"),
            ("mcp-name", tool),
        ],
        &body,
    );
    assert_eq!(status, 200, "{answer}");
    answer["result"].clone()
}

fn list_new(server: &Server) -> Vec<String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": meta()}});
    let (status, _, answer) = post(
        &server.url,
        &[
            ("authorization", "Bearer tok-a"),
            ("mcp-protocol-version", NEW),
            ("mcp-method", "tools/list"),
        ],
        &body,
    );
    assert_eq!(status, 200, "{answer}");
    names(&answer)
}

fn names(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A 2025-11-25 client: initialize, then list and call in its session.
struct OldClient<'a> {
    server: &'a Server,
    auth: String,
    session: String,
}

impl<'a> OldClient<'a> {
    fn connect(server: &'a Server, token: &str) -> Self {
        let auth = format!("Bearer {token}");
        let (status, session, answer) = post(
            &server.url,
            &[("authorization", &auth)],
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": OLD, "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}}),
        );
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["result"]["protocolVersion"], OLD);
        let session = session.expect("a session id");
        let client = OldClient {
            server,
            auth,
            session,
        };
        let (status, _, _) = client.send(&json!({"jsonrpc": "2.0",
            "method": "notifications/initialized"}));
        assert_eq!(status, 202);
        client
    }

    fn send(&self, body: &Value) -> (u16, Option<String>, Value) {
        post(
            &self.server.url,
            &[
                ("authorization", &self.auth),
                ("mcp-session-id", &self.session),
                ("mcp-protocol-version", OLD),
            ],
            body,
        )
    }

    fn list(&self) -> Vec<String> {
        names(
            &self
                .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                .2,
        )
    }

    fn call(&self, tool: &str, args: Value) -> Value {
        let (status, _, answer) = self.send(&json!({"jsonrpc": "2.0", "id": 2,
            "method": "tools/call", "params": {"name": tool, "arguments": args}}));
        assert_eq!(status, 200, "{answer}");
        answer["result"].clone()
    }
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {result}"))
        .to_owned()
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    dir
}

#[test]
fn http_every_surface_lists_and_calls_in_both_protocol_eras() {
    let dir = workspace();
    let root = dir.path().canonicalize().unwrap();
    let a = root.join("a.txt").display().to_string();
    let cases: [(&str, &str, Value, &str); 5] = [
        (
            "agent-tools",
            "read_file",
            json!({"path": "a.txt"}),
            "hello",
        ),
        ("default", "read_file", json!({"path": "a.txt"}), "hello"),
        ("filesystem", "read_file", json!({"path": a}), "hello"),
        ("claude-code", "Read", json!({"file_path": a}), "hello"),
        (
            "codex",
            "shell",
            json!({"command": ["cat", "a.txt"]}),
            "hello",
        ),
    ];
    for (surface, tool, args, expected) in cases {
        let server = start(&root, &["--surface", surface]);
        let listed = list_new(&server);
        assert!(listed.iter().any(|n| n == tool), "{surface}: {listed:?}");
        let result = call_new(&server, "tok-a", tool, args.clone());
        assert_eq!(result["isError"], false, "{surface}: {result}");
        assert!(text(&result).contains(expected), "{surface}: {result}");
        let old = OldClient::connect(&server, "tok-b");
        assert_eq!(old.list(), listed, "{surface}");
        let result = old.call(tool, args);
        assert_eq!(result["isError"], false, "{surface}: {result}");
        assert!(text(&result).contains(expected), "{surface}: {result}");
    }
}

#[test]
fn http_refuses_no_token_a_wrong_token_a_foreign_origin_and_host() {
    let dir = workspace();
    let server = start(dir.path(), &["--allowed-origin", "http://localhost:*"]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": meta()}});
    let new = [("mcp-protocol-version", NEW), ("mcp-method", "tools/list")];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut headers = new.to_vec();
        headers.extend_from_slice(extra);
        post(&server.url, &headers, &list).0
    };
    assert_eq!(with(&[]), 401);
    assert_eq!(with(&[("authorization", "Bearer tok-c")]), 401);
    assert_eq!(with(&[("authorization", "tok-a")]), 401);
    assert_eq!(with(&[("authorization", "Bearer tok-a")]), 200);
    assert_eq!(
        with(&[
            ("authorization", "Bearer tok-a"),
            ("origin", "http://evil.example")
        ]),
        403
    );
    assert_eq!(
        with(&[
            ("authorization", "Bearer tok-a"),
            ("origin", "http://localhost:3000")
        ]),
        200
    );
    assert_eq!(
        with(&[("authorization", "Bearer tok-a"), ("host", "evil.example")]),
        403
    );
    // The routing header must match the body.
    assert_eq!(
        with(&[
            ("authorization", "Bearer tok-a"),
            ("mcp-method", "tools/call")
        ]),
        400
    );
}

#[test]
fn http_healthz_answers_without_a_token() {
    let dir = workspace();
    let server = start(dir.path(), &[]);
    let base = server.url.trim_end_matches("/mcp");
    let mut response = agent().get(&format!("{base}/healthz")).call().unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.body_mut().read_to_string().unwrap(), "ok\n");
}

#[test]
fn http_read_then_edit_across_requests_per_principal() {
    const NOT_READ: &str = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>";
    let dir = workspace();
    let root = dir.path().canonicalize().unwrap();
    let file = root.join("a.txt").display().to_string();
    let server = start(&root, &["--surface", "claude-code"]);
    let read = call_new(&server, "tok-a", "Read", json!({"file_path": file}));
    assert_eq!(read["isError"], false, "{read}");
    let edit = json!({"file_path": file, "old_string": "hello", "new_string": "bye"});
    // Bob read nothing: his state is his own.
    let refused = call_new(&server, "tok-b", "Edit", edit.clone());
    assert_eq!(text(&refused), NOT_READ);
    // An old-protocol session of alice's token has read nothing either.
    let old = OldClient::connect(&server, "tok-a");
    assert_eq!(text(&old.call("Edit", edit.clone())), NOT_READ);
    // Alice's next request edits what her last one read.
    let done = call_new(&server, "tok-a", "Edit", edit);
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "bye\n"
    );
}

#[test]
fn http_listen_refuses_unsafe_setups() {
    let dir = workspace();
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_agent-tools"))
            .arg("mcp")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2));
        String::from_utf8(output.stderr).unwrap()
    };
    let root = dir.path().to_str().unwrap();
    let err = run(&[
        "--listen",
        "0.0.0.0:0",
        "--root",
        root,
        "--insecure-no-auth-loopback",
    ]);
    assert!(err.contains("only on a loopback address"), "{err}");
    let err = run(&["--listen", "127.0.0.1:0", "--root", root]);
    assert!(err.contains("--listen needs a token"), "{err}");
    let err = run(&["--listen", "127.0.0.1:0", "--insecure-no-auth-loopback"]);
    assert!(err.contains("--listen needs --root"), "{err}");
    let err = run(&[
        "--listen",
        "127.0.0.1:0",
        "--root",
        root,
        "--token-env",
        "AGENT_TOOLS_TEST_UNSET_VAR",
    ]);
    assert!(err.contains("is not set"), "{err}");
    let tokens = dir.path().join("tokens");
    let with_file = |text: &str| {
        std::fs::write(&tokens, text).unwrap();
        run(&[
            "--listen",
            "127.0.0.1:0",
            "--root",
            root,
            "--token-file",
            tokens.to_str().unwrap(),
        ])
    };
    let err = with_file("a:x\na:y\n");
    assert!(err.contains("principal \"a\" is given twice"), "{err}");
    let err = with_file("a:\n");
    assert!(err.contains("principal \"a\" is empty"), "{err}");
    let err = with_file("# nothing\n");
    assert!(err.contains("--listen needs a token"), "{err}");
    let err = run(&[
        "--listen",
        "127.0.0.1:0",
        "--root",
        root,
        "--token-file",
        "/nonexistent/tokens",
    ]);
    assert!(err.contains("cannot read the token file"), "{err}");
}

/// Starts `sleep <marker>` through a 2026-07-28 call on a raw connection
/// and returns the connection, the call still running.
fn start_sleep(server: &Server, marker: &str) -> std::net::TcpStream {
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": format!("sleep {marker}")}, "_meta": meta()}})
    .to_string();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer tok-a\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: {NEW}\r\nMcp-Method: tools/call\r\nMcp-Name: bash\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    wait_until_running(&format!("sleep {marker}"));
    stream
}

#[test]
fn http_a_client_that_goes_away_cancels_its_call() {
    let dir = workspace();
    let server = start(dir.path(), &[]);
    let marker = unique("http-gone");
    let stream = start_sleep(&server, &marker);
    drop(stream);
    assert_gone_within(&format!("sleep {marker}"), Duration::from_secs(5));
    // The server lives on.
    assert!(!list_new(&server).is_empty());
}

#[test]
fn http_sigterm_ends_the_server_and_its_commands() {
    let dir = workspace();
    let mut server = start(dir.path(), &[]);
    let marker = unique("http-term");
    let _stream = start_sleep(&server, &marker);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "still serving");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    assert_gone_within(&format!("sleep {marker}"), Duration::from_secs(5));
}

/// The program `var` names, which `.ci/run` installs; without it the
/// test says it is skipped, and why, where a reader of the log sees it.
fn installed(var: &str, test: &str, what: &str) -> Option<String> {
    let found = std::env::var(var).ok();
    if found.is_none() {
        eprintln!("SKIPPED {test}: {var} is unset ({what})");
    }
    found
}

/// The variable naming a Python with the MCP SDK (`.ci/run` sets it).
const SDK_PYTHON: &str = "AGENT_TOOLS_MCP_PYTHON";

#[test]
fn http_python_sdk_lists_and_calls_every_surface_in_both_eras() {
    let Some(python) = installed(
        SDK_PYTHON,
        "http_python_sdk_lists_and_calls_every_surface_in_both_eras",
        "no Python with the MCP SDK named",
    ) else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/sdk_client.py");
    let dir = workspace();
    let root = dir.path().canonicalize().unwrap();
    let a = root.join("a.txt").display().to_string();
    let cases = [
        ("agent-tools", "read_file", json!({"path": "a.txt"})),
        ("filesystem", "read_file", json!({"path": a})),
        ("claude-code", "Read", json!({"file_path": a})),
        ("codex", "shell", json!({"command": ["cat", "a.txt"]})),
    ];
    for (surface, tool, args) in cases {
        let server = start(&root, &["--surface", surface]);
        let output = Command::new(&python)
            .arg(&script)
            .args([&server.url, "tok-a", tool, &args.to_string(), "hello"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{surface}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("initialize 2025-11-25 ok"), "{stdout}");
        assert!(stdout.contains("discover 2026-07-28 ok"), "{stdout}");
    }
}

/// Over HTTP the structured copy and the text are those stdio answers.
#[test]
fn http_answers_the_structured_copy_stdio_answers() {
    let (_outer, root) = crate::structured::workspace();
    let server = start(&root, &["--structured-output", "on"]);
    let over_http = call_new(&server, "tok-a", "read_file", json!({"path": "a.txt"}));
    let mut stdio =
        crate::mcp_client::McpClient::start_guarded(&root, &["--structured-output", "on"]);
    let over_stdio = stdio.request(
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "a.txt"}}),
    );
    let (http, stdio) = (&over_http, &over_stdio["result"]);
    assert!(http["structuredContent"].is_object(), "{over_http}");
    assert_eq!(http["structuredContent"], stdio["structuredContent"]);
    assert_eq!(http["content"], stdio["content"]);
}

/// With `--structured-output on`, the Python SDK (which checks every
/// answer's `structuredContent` against the tool's `outputSchema`) takes
/// the answer of every tool of the default and filesystem surfaces.
#[test]
fn http_python_sdk_takes_every_structured_answer() {
    let Some(python) = installed(
        SDK_PYTHON,
        "http_python_sdk_takes_every_structured_answer",
        "no Python with the MCP SDK named",
    ) else {
        return;
    };
    use crate::structured;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/sdk_structured.py");
    for surface in ["agent-tools", "filesystem"] {
        let (_outer, root) = structured::workspace();
        let journal = tempfile::tempdir().unwrap();
        let journal_dir = journal.path().display().to_string();
        let mut extra = vec!["--surface", surface, "--structured-output", "on"];
        let calls = if surface == "agent-tools" {
            extra.extend(["--journal", "--journal-dir", &journal_dir]);
            structured::default_calls()
        } else {
            let mut calls = structured::filesystem_calls(&root);
            calls.extend(
                structured::process_calls(0)
                    .into_iter()
                    .map(|(tool, mut args)| {
                        args["pid"] = json!("$PID");
                        (tool, args)
                    }),
            );
            calls
        };
        let server = start(&root, &extra);
        let calls: Vec<Value> = calls
            .into_iter()
            .map(|(tool, args)| json!([tool, args]))
            .collect();
        let output = Command::new(&python)
            .arg(&script)
            .args([
                &server.url,
                "tok-a",
                &Value::Array(calls.clone()).to_string(),
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{surface}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(stdout.lines().count(), calls.len(), "{surface}: {stdout}");
    }
}

#[test]
fn stdio_2026_07_28_client_without_initialize_lists_calls_and_keeps_read_state() {
    use std::io::BufRead;
    let dir = workspace();
    let root = dir.path().canonicalize().unwrap();
    let file = root.join("a.txt").display().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .args(["mcp", "--surface", "claude-code", "--root"])
        .arg(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut ask = |id: u64, method: &str, mut params: Value| {
        params["_meta"] = meta();
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["id"], id, "{answer}");
        answer["result"].clone()
    };
    let discovered = ask(1, "server/discover", json!({}));
    assert!(
        discovered["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!(NEW)),
        "{discovered}"
    );
    let listed = ask(2, "tools/list", json!({}));
    assert!(listed["tools"].as_array().unwrap().len() > 3, "{listed}");
    let read = ask(
        3,
        "tools/call",
        json!({"name": "Read", "arguments": {"file_path": file}}),
    );
    assert_eq!(read["isError"], false, "{read}");
    // The connection is the state's home: no session was ever opened.
    let edit = ask(
        4,
        "tools/call",
        json!({"name": "Edit", "arguments":
            {"file_path": file, "old_string": "hello", "new_string": "bye"}}),
    );
    assert_eq!(edit["isError"], false, "{edit}");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "bye\n"
    );
    drop(stdin);
    child.wait().unwrap();
}

#[test]
fn http_requests_past_the_bound_are_answered_503() {
    let dir = workspace();
    let server = start(dir.path(), &["--max-concurrent-requests", "1"]);
    let marker = unique("http-busy");
    let stream = start_sleep(&server, &marker);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": meta()}});
    let headers = [
        ("authorization", "Bearer tok-a"),
        ("mcp-protocol-version", NEW),
        ("mcp-method", "tools/list"),
    ];
    assert_eq!(post(&server.url, &headers, &list).0, 503);
    drop(stream);
    assert_gone_within(&format!("sleep {marker}"), Duration::from_secs(5));
    assert_eq!(post(&server.url, &headers, &list).0, 200);
}

/// Sends SIGTERM to the server; how long it took to exit (it must exit 0
/// within `limit`).
fn terminate(server: &mut Server, limit: Duration) -> Duration {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < limit, "still serving after {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status}");
    start.elapsed()
}

/// Calls `tool` until its text contains `needle` (the job's output arrives
/// when it arrives).
fn poll_text(mut call: impl FnMut() -> Value, needle: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let result = call();
        if result["isError"] == false && text(&result).contains(needle) {
            return result;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {needle:?} in {result}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Opens the standalone SSE stream of an old-protocol session (what the
/// Python SDK keeps open all along) and leaves it open.
fn open_event_stream(server: &Server, client: &OldClient) -> std::net::TcpStream {
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {}\r\n\
         Accept: text/event-stream\r\nMcp-Session-Id: {}\r\n\
         MCP-Protocol-Version: {OLD}\r\n\r\n",
        client.auth, client.session
    )
    .unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "{}", String::from_utf8_lossy(&head));
    stream
}

#[test]
fn http_background_jobs_are_read_later_and_killed_at_sigterm() {
    let dir = workspace();
    let mut server = start(dir.path(), &[]);
    // A stateless job, kept by alice's principal session.
    let stateless = unique("http-job-new");
    let started = call_new(
        &server,
        "tok-a",
        "job_start",
        json!({"command": format!("echo started-new; exec sleep {stateless}"), "wait_ms": 0}),
    );
    assert_eq!(started["isError"], false, "{started}");
    let id: Value = serde_json::from_str(&text(&started)).unwrap();
    let id = id["job_id"].as_str().unwrap().to_owned();
    poll_text(
        || {
            call_new(
                &server,
                "tok-a",
                "job_read",
                json!({"job_id": id, "from": 0}),
            )
        },
        "started-new",
    );
    // Bob's principal has no such job.
    let other = call_new(&server, "tok-b", "job_read", json!({"job_id": id}));
    assert_eq!(other["isError"], true, "{other}");
    // A job in an old-protocol session, whose event stream stays open.
    let old = OldClient::connect(&server, "tok-b");
    let in_session = unique("http-job-old");
    let started = old.call(
        "job_start",
        json!({"command": format!("echo started-old; exec sleep {in_session}"), "wait_ms": 0}),
    );
    assert_eq!(started["isError"], false, "{started}");
    poll_text(
        || old.call("job_read", json!({"job_id": "job_1", "from": 0})),
        "started-old",
    );
    let _events = open_event_stream(&server, &old);
    wait_until_running(&format!("sleep {stateless}"));
    wait_until_running(&format!("sleep {in_session}"));
    let took = terminate(&mut server, Duration::from_secs(5));
    eprintln!("SIGTERM with an open session and two jobs: exited in {took:?}");
    assert!(took < Duration::from_millis(1500), "exit took {took:?}");
    assert_gone_within(&format!("sleep {stateless}"), Duration::from_secs(5));
    assert_gone_within(&format!("sleep {in_session}"), Duration::from_secs(5));
}

#[test]
fn http_claude_code_background_bash_is_read_later_and_killed_at_sigterm() {
    let dir = workspace();
    let mut server = start(dir.path(), &["--surface", "claude-code"]);
    let marker = unique("http-bg");
    let started = call_new(
        &server,
        "tok-a",
        "Bash",
        json!({"command": format!("echo bg-started; exec sleep {marker}"),
            "run_in_background": true}),
    );
    assert_eq!(started["isError"], false, "{started}");
    assert!(text(&started).contains("bash_1"), "{started}");
    poll_text(
        || {
            call_new(
                &server,
                "tok-a",
                "TaskOutput",
                json!({"task_id": "bash_1", "block": false}),
            )
        },
        "bg-started",
    );
    wait_until_running(&format!("sleep {marker}"));
    let took = terminate(&mut server, Duration::from_secs(5));
    eprintln!("SIGTERM with a background command: exited in {took:?}");
    assert_gone_within(&format!("sleep {marker}"), Duration::from_secs(5));
}

#[test]
fn http_sigterm_is_prompt_with_an_open_session_calls_under_way_and_a_half_sent_request() {
    let dir = workspace();
    let mut server = start(dir.path(), &[]);
    let old = OldClient::connect(&server, "tok-b");
    let _events = open_event_stream(&server, &old);
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    // A call under way inside the session, and one outside any.
    let in_session = unique("http-end-old");
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": format!("sleep {in_session}")}}})
    .to_string();
    let mut call = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        call,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {}\r\nMcp-Session-Id: {}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: {OLD}\r\nContent-Length: {}\r\n\r\n{body}",
        old.auth,
        old.session,
        body.len()
    )
    .unwrap();
    wait_until_running(&format!("sleep {in_session}"));
    let stateless = unique("http-end-new");
    let mut stateless_call = start_sleep(&server, &stateless);
    // An idle connection, and one whose client stopped halfway through its
    // headers: the server's graceful end would wait for the latter.
    let _idle = std::net::TcpStream::connect(&addr).unwrap();
    let mut half = std::net::TcpStream::connect(&addr).unwrap();
    write!(half, "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n").unwrap();
    // The half-sent headers have reached the server once a later request
    // on another connection is answered (connections are served in order
    // of acceptance, each on a task of its own).
    assert!(!list_new(&server).is_empty());
    let took = terminate(&mut server, Duration::from_secs(10));
    eprintln!("SIGTERM with an open session, two calls and a half-sent request: {took:?}");
    // The end waited at most 2 s for connections before; it waits for
    // answers now.
    assert!(took < Duration::from_millis(1500), "exit took {took:?}");
    assert_gone_within(&format!("sleep {in_session}"), Duration::from_secs(5));
    assert_gone_within(&format!("sleep {stateless}"), Duration::from_secs(5));
    // The stateless call was answered before the end.
    let mut answer = String::new();
    let _ = stateless_call.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
}

#[test]
fn http_connections_past_the_bound_are_answered_503_and_closed() {
    let dir = workspace();
    let server = start(dir.path(), &["--max-connections", "2"]);
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": meta()}});
    let headers = [
        ("authorization", "Bearer tok-a"),
        ("mcp-protocol-version", NEW),
        ("mcp-method", "tools/list"),
    ];
    // Two idle connections take both places; the server accepts in order,
    // so a third one is refused once both are taken.
    let first = std::net::TcpStream::connect(&addr).unwrap();
    let _second = std::net::TcpStream::connect(&addr).unwrap();
    let (status, _, answer) = post(&server.url, &headers, &list);
    assert_eq!(status, 503, "{answer}");
    assert_eq!(answer, "too many connections open\n");
    // A place comes free when a connection closes.
    drop(first);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _, answer) = post(&server.url, &headers, &list);
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "{answer}");
        assert!(std::time::Instant::now() < deadline, "no place came free");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The variable naming the MCP Inspector's `mcp-inspector` program
/// (`.ci/run` installs it from npm beside the language servers).
const INSPECTOR: &str = "AGENT_TOOLS_MCP_INSPECTOR";

#[test]
fn http_the_mcp_inspector_cli_calls_a_tool_with_the_token() {
    let Some(inspector) = installed(
        INSPECTOR,
        "http_the_mcp_inspector_cli_calls_a_tool_with_the_token",
        "the path of @modelcontextprotocol/inspector's mcp-inspector; .ci/run installs it and sets it",
    ) else {
        return;
    };
    let inspector = std::path::PathBuf::from(inspector);
    assert!(
        inspector.exists(),
        "{INSPECTOR} names {inspector:?}, which is absent"
    );
    let dir = workspace();
    let server = start(dir.path(), &[]);
    // The Inspector keeps a catalog and storage under the home folder.
    let home = tempfile::tempdir().unwrap();
    let run = |token: &str| {
        Command::new(&inspector)
            .args(["--cli", &server.url, "--transport", "http", "--header"])
            .arg(format!("Authorization: Bearer {token}"))
            .args([
                "--method",
                "tools/call",
                "--tool-name",
                "read_file",
                "--tool-arg",
                "path=a.txt",
            ])
            .env("HOME", home.path())
            .env("MCP_CATALOG_PATH", home.path().join("mcp.json"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let output = run("tok-a");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(text(&result), "     1\thello\n");
    // A wrong token is refused: the Inspector, seeing 401, would need
    // OAuth and gives up.
    let output = run("tok-wrong");
    assert!(!output.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(said.contains("auth"), "{said}");
    assert!(!said.contains("hello"), "{said}");
}

#[test]
fn http_the_journal_records_each_calls_principal() {
    let dir = workspace();
    let state = tempfile::tempdir().unwrap();
    let server = start(
        dir.path(),
        &["--journal", "--journal-dir", state.path().to_str().unwrap()],
    );
    // Alice without a session, Bob inside one: both are named.
    let written = call_new(
        &server,
        "tok-a",
        "write_file",
        json!({"path": "by-alice.txt", "content": "a\n"}),
    );
    assert_eq!(written["isError"], false, "{written}");
    let bob = OldClient::connect(&server, "tok-b");
    let written = bob.call(
        "write_file",
        json!({"path": "by-bob.txt", "content": "b\n"}),
    );
    assert_eq!(written["isError"], false, "{written}");
    let listing = text(&call_new(&server, "tok-a", "changes", json!({})));
    let line_of = |file: &str| {
        let at = listing
            .find(file)
            .unwrap_or_else(|| panic!("no {file}: {listing}"));
        // The call's header line comes right before its files.
        listing[..at]
            .lines()
            .rev()
            .find(|l| l.starts_with("call "))
            .unwrap()
            .to_owned()
    };
    assert!(
        line_of("by-alice.txt").contains("write_file (agent-tools, alice)"),
        "{listing}"
    );
    assert!(
        line_of("by-bob.txt").contains("write_file (agent-tools, bob)"),
        "{listing}"
    );
    assert!(!listing.contains("local"), "{listing}");
}

#[test]
fn http_a_session_is_refused_to_another_principals_token() {
    const NOT_READ: &str = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>";
    let dir = workspace();
    let root = dir.path().canonicalize().unwrap();
    let file = root.join("a.txt").display().to_string();
    let server = start(&root, &["--surface", "claude-code"]);
    let alice = OldClient::connect(&server, "tok-a");
    let read = alice.call("Read", json!({"file_path": file}));
    assert_eq!(read["isError"], false, "{read}");
    // Bob presents alice's session id with his own token.
    let stolen = OldClient {
        server: &server,
        auth: "Bearer tok-b".into(),
        session: alice.session.clone(),
    };
    let edit = json!({"file_path": file, "old_string": "hello", "new_string": "bye"});
    let (status, _, answer) = stolen.send(&json!({"jsonrpc": "2.0", "id": 2,
        "method": "tools/call", "params": {"name": "Edit", "arguments": edit}}));
    assert_eq!(status, 403, "{answer}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello\n");
    // Bob's own session read nothing; alice's goes on.
    let bob = OldClient::connect(&server, "tok-b");
    assert_eq!(text(&bob.call("Edit", edit.clone())), NOT_READ);
    let done = alice.call("Edit", edit);
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "bye\n");
}
