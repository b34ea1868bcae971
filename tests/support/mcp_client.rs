//! A minimal MCP client over the `agent-tools mcp` child's stdio, for tests
//! and benchmarks: newline-delimited JSON-RPC, responses matched by id.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

pub struct McpClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// Responses read while waiting for another id (answers arrive in any order).
    early: HashMap<u64, Value>,
    /// The roots this client answers `roots/list` with (as `file://` URIs);
    /// `None` answers that request, like any other from the server, with
    /// method not found.
    pub roots: Option<Vec<String>>,
    /// How many requests the server sent, by method.
    pub server_requests: HashMap<String, usize>,
}

impl McpClient {
    /// Like [`start`](Self::start), and the server is killed if the test
    /// runs past a minute: a stuck call then fails (the client sees stdout
    /// close) instead of hanging the test run.
    pub fn start_guarded(root: &Path, extra: &[&str]) -> McpClient {
        McpClient::start(root, extra).guarded()
    }

    /// Kills the server if the test runs past a minute (see
    /// [`start_guarded`](Self::start_guarded)).
    pub fn guarded(self) -> McpClient {
        let client = self;
        let pid = nix::unistd::Pid::from_raw(i32::try_from(client.pid()).unwrap());
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(60));
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        });
        client
    }

    /// Starts `agent-tools mcp --root ROOT EXTRA...` and performs the handshake.
    pub fn start(root: &Path, extra: &[&str]) -> McpClient {
        let mut args = vec!["--root".to_owned(), root.to_str().unwrap().to_owned()];
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        McpClient::start_with(&args, json!({}), None)
    }

    /// Starts `agent-tools mcp ARGS...` (nothing added), declaring
    /// `capabilities` in the handshake and answering `roots/list` with
    /// `roots`; killed like [`start_guarded`](Self::start_guarded).
    pub fn start_with(
        args: &[String],
        capabilities: Value,
        roots: Option<Vec<String>>,
    ) -> McpClient {
        let mut client = McpClient::start_bare(args);
        client.roots = roots;
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities,
                "clientInfo": {"name": "test-client", "version": "0"}
            }),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        client.notify("notifications/initialized", json!({}));
        client
    }

    /// Starts `agent-tools mcp ARGS...` without a handshake (a session
    /// without `initialize`, or none at all).
    pub fn start_bare(args: &[String]) -> McpClient {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agent-tools"))
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn agent-tools");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        McpClient {
            child,
            stdin,
            stdout,
            next_id: 1,
            early: HashMap::new(),
            roots: None,
            server_requests: HashMap::new(),
        }
    }

    pub fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_string(message).unwrap();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Reads messages until the response with `id`; notifications are skipped.
    pub fn wait_for(&mut self, id: u64) -> Value {
        if let Some(message) = self.early.remove(&id) {
            return message;
        }
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(
                n > 0,
                "server closed stdout while waiting for response {id}"
            );
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("bad JSON from server: {e}: {line}"));
            if message.get("method").is_some() && message.get("id").is_some() {
                self.answer_server_request(&message);
                continue;
            }
            match message.get("id").and_then(Value::as_u64) {
                Some(got) if got == id => return message,
                Some(other) => {
                    self.early.insert(other, message);
                }
                None => {}
            }
        }
    }

    /// Answers a request the server sent: `roots/list` with [`roots`](Self::roots)
    /// when set, anything else with method not found.
    fn answer_server_request(&mut self, request: &Value) {
        let method = request["method"].as_str().unwrap_or("").to_owned();
        *self.server_requests.entry(method.clone()).or_default() += 1;
        let id = request["id"].clone();
        let answer = match (&self.roots, method.as_str()) {
            (Some(roots), "roots/list") => {
                let roots: Vec<Value> = roots.iter().map(|uri| json!({"uri": uri})).collect();
                json!({"jsonrpc": "2.0", "id": id, "result": {"roots": roots}})
            }
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})
            }
        };
        self.send(&answer);
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.wait_for(id)
    }

    /// Calls a tool; returns (isError, first text content).
    pub fn call(&mut self, name: &str, args: Value) -> (bool, String) {
        let response = self.request("tools/call", json!({"name": name, "arguments": args}));
        Self::call_result(&response)
    }

    pub fn call_result(response: &Value) -> (bool, String) {
        let result = response
            .get("result")
            .unwrap_or_else(|| panic!("no result: {response}"));
        let is_error = result
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text: {response}"))
            .to_string();
        (is_error, text)
    }

    /// Writes raw bytes (a line, or part of one) to the server's stdin.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Reads the next message, whatever it is.
    pub fn next_message(&mut self) -> Value {
        let line = self.next_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad JSON from server: {e}: {line}"))
    }

    /// Reads the next line as the server wrote it.
    pub fn next_line(&mut self) -> String {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "server closed stdout");
        line
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Gives up the stdin pipe (to write from another thread, or to close).
    pub fn take_stdin(&mut self) -> ChildStdin {
        let (_read, write) = std::io::pipe().unwrap();
        std::mem::replace(
            &mut self.stdin,
            ChildStdin::from(std::os::fd::OwnedFd::from(write)),
        )
    }

    /// Waits at most `limit` for the server to exit; kills it and fails if
    /// it does not.
    pub fn wait_exit(&mut self, limit: std::time::Duration) -> std::process::ExitStatus {
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                panic!("the server did not exit within {limit:?}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Sends a signal to the server.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Closes stdin and waits for the server to exit.
    pub fn shutdown(mut self) -> std::process::ExitStatus {
        drop(self.stdin);
        self.child.wait().unwrap()
    }
}
