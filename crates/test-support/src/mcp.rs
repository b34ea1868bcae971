//! A minimal MCP client over a stdio server child (`agent-tools mcp` or
//! another server), for tests and benchmarks: newline-delimited JSON-RPC,
//! responses matched by id. The `try_` calls return a [`ClientError`] (what a
//! benchmark reports); the others panic with it (what a test wants).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// Why a call to the server could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server could not be started.
    #[error("starting {program}: {source}")]
    Spawn {
        /// The program that was run.
        program: PathBuf,
        /// Why it did not start.
        source: std::io::Error,
    },
    /// Reading from or writing to the server failed.
    #[error("talking to the server: {0}")]
    Io(#[from] std::io::Error),
    /// The server closed its stdout before answering.
    #[error("the server closed stdout while waiting for response {id}")]
    Closed {
        /// The request left unanswered.
        id: u64,
    },
    /// The server wrote a line that is not JSON.
    #[error("bad JSON from the server: {source}: {line}")]
    BadJson {
        /// The line as read.
        line: String,
        /// Why it did not parse.
        source: serde_json::Error,
    },
    /// `initialize` was answered without a result.
    #[error("initialize failed: {0}")]
    Initialize(Value),
}

/// Reads the server's next message into `line` (reused, so a benchmark's
/// loop allocates nothing) and parses it; `waiting_for` names the response
/// awaited, for the error when stdout closes first. A free function, so a
/// flood can read while its writer thread holds stdin.
fn read_message(
    stdout: &mut BufReader<ChildStdout>,
    line: &mut String,
    waiting_for: u64,
) -> Result<Value, ClientError> {
    line.clear();
    if stdout.read_line(line)? == 0 {
        return Err(ClientError::Closed { id: waiting_for });
    }
    serde_json::from_str(line).map_err(|source| ClientError::BadJson {
        line: line.clone(),
        source,
    })
}

/// A running server child and the two ends of its stdio.
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
    /// The line being read, kept so a benchmark's loop allocates nothing.
    line: String,
}

impl McpClient {
    /// Like [`start`](Self::start), and the server is killed if the test
    /// runs past a minute: a stuck call then fails (the client sees stdout
    /// close) instead of hanging the test run.
    pub fn start_guarded(program: &Path, root: &Path, extra: &[&str]) -> McpClient {
        McpClient::start(program, root, extra).guarded()
    }

    /// Kills the server if the test runs past a minute (see
    /// [`start_guarded`](Self::start_guarded)).
    pub fn guarded(self) -> McpClient {
        self.guarded_for(std::time::Duration::from_secs(60))
    }

    /// Like [`McpClient::guarded`], with a limit of the test's choosing
    /// (tests that wait for real language servers to start need longer on
    /// a loaded machine).
    pub fn guarded_for(self, limit: std::time::Duration) -> McpClient {
        let client = self;
        let pid = nix::unistd::Pid::from_raw(i32::try_from(client.pid()).unwrap());
        std::thread::spawn(move || {
            std::thread::sleep(limit);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        });
        client
    }

    /// Starts `PROGRAM mcp --root ROOT EXTRA...` and performs the handshake.
    pub fn start(program: &Path, root: &Path, extra: &[&str]) -> McpClient {
        let mut args = vec!["--root".to_owned(), root.to_str().unwrap().to_owned()];
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        McpClient::start_with(program, &args, json!({}), None)
    }

    /// Starts `PROGRAM mcp ARGS...` (nothing added), declaring
    /// `capabilities` in the handshake and answering `roots/list` with
    /// `roots`.
    pub fn start_with(
        program: &Path,
        args: &[String],
        capabilities: Value,
        roots: Option<Vec<String>>,
    ) -> McpClient {
        let mut client = McpClient::start_bare(program, args);
        client.roots = roots;
        client
            .try_initialize(capabilities, "test-client")
            .unwrap_or_else(|e| panic!("{e}"));
        client
    }

    /// Starts `PROGRAM mcp ARGS...` without a handshake (a session
    /// without `initialize`, or none at all).
    pub fn start_bare(program: &Path, args: &[String]) -> McpClient {
        let mut command = Command::new(program);
        command.arg("mcp").args(args).stderr(Stdio::inherit());
        McpClient::spawn(command).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts any stdio MCP server `command` (its stdin and stdout are
    /// piped here; its stderr is left as the command has it), without a
    /// handshake.
    pub fn spawn(mut command: Command) -> Result<McpClient, ClientError> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|source| ClientError::Spawn {
                program: PathBuf::from(command.get_program()),
                source,
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            unreachable!("both ends were piped just above");
        };
        Ok(McpClient {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            next_id: 1,
            early: HashMap::new(),
            roots: None,
            server_requests: HashMap::new(),
            line: String::new(),
        })
    }

    /// The handshake: `initialize` declaring `capabilities` as client
    /// `name`, then `notifications/initialized`; returns the server's answer.
    pub fn try_initialize(
        &mut self,
        capabilities: Value,
        name: &str,
    ) -> Result<Value, ClientError> {
        let init = self.try_request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities,
                "clientInfo": {"name": name, "version": "0"}
            }),
        )?;
        if init.get("result").is_none() {
            return Err(ClientError::Initialize(init));
        }
        self.try_send(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}}),
        )?;
        Ok(init)
    }

    /// Writes one message as a line.
    pub fn try_send(&mut self, message: &Value) -> Result<(), ClientError> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Writes one message as a line; panics if the server is gone.
    pub fn send(&mut self, message: &Value) {
        self.try_send(message).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request without waiting; returns its id.
    pub fn try_send_request(&mut self, method: &str, params: Value) -> Result<u64, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        self.try_send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.try_send_request(method, params)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Reads messages until the response with `id`; notifications are
    /// skipped, requests from the server answered, other responses kept.
    pub fn try_wait_for(&mut self, id: u64) -> Result<Value, ClientError> {
        if let Some(message) = self.early.remove(&id) {
            return Ok(message);
        }
        loop {
            let message = read_message(&mut self.stdout, &mut self.line, id)?;
            if message.get("method").is_some() && message.get("id").is_some() {
                self.answer_server_request(&message)?;
                continue;
            }
            match message.get("id").and_then(Value::as_u64) {
                Some(got) if got == id => return Ok(message),
                Some(other) => {
                    self.early.insert(other, message);
                }
                None => {}
            }
        }
    }

    /// Sends `calls` requests of `method` with `params` at once (from a
    /// writer thread, so the server's answers are read meanwhile and
    /// neither side's pipe fills up), then reads until every one is
    /// answered; returns the responses in the order they arrived. Other
    /// messages are handled as [`try_wait_for`](Self::try_wait_for) does.
    pub fn try_flood(
        &mut self,
        method: &str,
        params: &Value,
        calls: usize,
    ) -> Result<Vec<Value>, ClientError> {
        let first = self.next_id;
        let count = u64::try_from(calls).expect("a count fits in u64");
        self.next_id += count;
        let mut batch = String::new();
        for id in first..first + count {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            batch.push_str(&request.to_string());
            batch.push('\n');
        }
        let stdin = &mut self.stdin;
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || {
                stdin
                    .write_all(batch.as_bytes())
                    .and_then(|()| stdin.flush())
            });
            let mut answers = Vec::with_capacity(calls);
            let mut id = first;
            while id < first + count {
                // Answers come in any order; collect them by id.
                if let Some(message) = self.early.remove(&id) {
                    answers.push(message);
                    id += 1;
                    continue;
                }
                let message = read_message(&mut self.stdout, &mut self.line, id)?;
                if let Some(got) = message.get("id").and_then(Value::as_u64)
                    && message.get("method").is_none()
                {
                    self.early.insert(got, message);
                }
            }
            writer.join().expect("the flood writer does not panic")?;
            Ok(answers)
        })
    }

    /// Reads messages until the response with `id` (see
    /// [`try_wait_for`](Self::try_wait_for)).
    pub fn wait_for(&mut self, id: u64) -> Value {
        self.try_wait_for(id).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Answers a request the server sent: `roots/list` with [`roots`](Self::roots)
    /// when set, anything else with method not found.
    fn answer_server_request(&mut self, request: &Value) -> Result<(), ClientError> {
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
        self.try_send(&answer)
    }

    /// Sends a request and waits for its response.
    pub fn try_request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = self.try_send_request(method, params)?;
        self.try_wait_for(id)
    }

    /// Sends a request and waits for its response; panics if the server is gone.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.try_request(method, params)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Calls a tool; returns (isError, first text content).
    pub fn call(&mut self, name: &str, args: Value) -> (bool, String) {
        let response = self.request("tools/call", json!({"name": name, "arguments": args}));
        Self::call_result(&response)
    }

    /// A `tools/call` response's (isError, first text content).
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
    pub fn try_shutdown(mut self) -> Result<std::process::ExitStatus, ClientError> {
        drop(self.stdin);
        Ok(self.child.wait()?)
    }

    /// Closes stdin and waits for the server to exit.
    pub fn shutdown(self) -> std::process::ExitStatus {
        self.try_shutdown().unwrap_or_else(|e| panic!("{e}"))
    }
}
