//! One running server: its process, a reader thread that files responses,
//! answers the server's requests and keeps what it publishes, and a ring of
//! its last stderr bytes for the reason when it dies.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use lsp_types::Diagnostic;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::framing::{self, MAX_MESSAGE_BYTES};
use crate::uri::uri_to_path;
use crate::{Launch, LspError, ServerSpec};

/// How much of a server's stderr is kept for the reason it died.
const STDERR_RING_BYTES: usize = 64 << 10;

/// The diagnostics a server last published for one file.
#[derive(Debug, Clone)]
pub(crate) struct Published {
    /// The document version the set is for, when the server said.
    pub version: Option<i32>,
    /// When it arrived, as a count of publications (see [`State::generation`]).
    pub generation: u64,
    /// The set.
    pub items: Vec<Diagnostic>,
}

/// What the reader thread shares with callers.
#[derive(Debug, Default)]
pub(crate) struct State {
    responses: HashMap<i64, Result<Value, LspError>>,
    waiting: HashSet<i64>,
    /// Pushed diagnostics by file.
    pub published: HashMap<PathBuf, Published>,
    /// Counts every publication, so a wait can ask for one newer than a mark.
    pub generation: u64,
    /// Work-done progress begun and not yet ended.
    pub progress: HashSet<String>,
    /// Set when the server's output closed: why.
    pub exited: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Waits until `done` holds or `deadline` passes; returns whether it held.
    pub(crate) fn wait_until(
        &self,
        deadline: Instant,
        mut done: impl FnMut(&State) -> bool,
    ) -> bool {
        let mut state = self.lock();
        loop {
            if done(&state) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            // Wakes at least every 50 ms so a caller's cancel flag, checked
            // in `done`, is seen.
            let wait = (deadline - now).min(Duration::from_millis(50));
            state = self
                .changed
                .wait_timeout(state, wait)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poison| poison.into_inner().0);
        }
    }
}

/// A started server.
#[derive(Debug)]
pub(crate) struct Connection {
    pub name: String,
    child: Mutex<Child>,
    /// `None` once closed (after `exit`), so a server waiting for its
    /// input to end does.
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    pub shared: Arc<Shared>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// Set when stderr closed, so a reason is read only once it is whole.
    stderr_done: Arc<AtomicBool>,
    next_id: AtomicI64,
    pub started: Instant,
    /// Set once the child was reaped: its pid (and group id) may then name
    /// another process, so nothing is signalled any more.
    reaped: AtomicBool,
}

impl Connection {
    /// Starts `spec` in `root` through `launch` (the launcher and sandbox
    /// commands run under, or a process group of its own).
    pub fn start(
        spec: &ServerSpec,
        root: &Path,
        launch: &Launch,
        settings: Value,
    ) -> Result<Connection, LspError> {
        let mut command = match &launch.launcher {
            Some(launcher) => {
                let mut command = Command::new(launcher.program());
                command
                    .args(launcher.args())
                    .arg(agent_tools_bash::launcher::PARENT_PID_ARG)
                    .arg(std::process::id().to_string());
                if let Some(policy) = &launch.sandbox {
                    command.args(policy.to_args());
                }
                command.arg("--").arg(&spec.command);
                command
            }
            None if launch.sandbox.is_some() => {
                return Err(LspError::Start {
                    server: spec.name.clone(),
                    message: "a sandboxed server needs the launcher; none was given".to_owned(),
                });
            }
            None => {
                use std::os::unix::process::CommandExt;
                let mut command = Command::new(&spec.command);
                command.process_group(0);
                command
            }
        };
        command
            .args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|err| LspError::Start {
            server: spec.name.clone(),
            message: format!("cannot start {}: {err}", spec.command),
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(LspError::Start {
                server: spec.name.clone(),
                message: "no pipes to the server".to_owned(),
            });
        };
        let stdin = Arc::new(Mutex::new(Some(stdin)));
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let ring = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_done = Arc::new(AtomicBool::new(false));
        {
            let ring = ring.clone();
            let done = stderr_done.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("lsp-stderr-{}", spec.name))
                .spawn(move || {
                    keep_stderr(stderr, &ring);
                    done.store(true, Ordering::Release);
                });
            if spawned.is_err() {
                stderr_done.store(true, Ordering::Release);
            }
        }
        {
            let shared = shared.clone();
            let stdin = stdin.clone();
            let roots = json!([{"uri": crate::uri::path_to_uri(root), "name": "workspace"}]);
            let spawned = std::thread::Builder::new()
                .name(format!("lsp-reader-{}", spec.name))
                .spawn(move || read_loop(stdout, &shared, &stdin, &settings, &roots));
            if spawned.is_err() {
                let _ = child.kill();
                let _ = child.wait();
                return Err(LspError::Start {
                    server: spec.name.clone(),
                    message: "cannot start a reader thread".to_owned(),
                });
            }
        }
        Ok(Connection {
            name: spec.name.clone(),
            child: Mutex::new(child),
            stdin,
            shared,
            stderr: ring,
            stderr_done,
            next_id: AtomicI64::new(1),
            started: Instant::now(),
            reaped: AtomicBool::new(false),
        })
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) -> Result<(), LspError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Sends a request and returns its id; [`Self::wait_response`] collects
    /// the answer.
    pub fn send_request(&self, method: &str, params: Value) -> Result<i64, LspError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.shared.lock().waiting.insert(id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// The answer to request `id`, waiting until `deadline`; `None` when it
    /// has not come by then (the request stays pending, so a later wait can
    /// still collect it).
    pub fn wait_response(
        &self,
        id: i64,
        deadline: Instant,
        cancel: &dyn Fn() -> bool,
    ) -> Option<Result<Value, LspError>> {
        let mut answer = None;
        self.shared.wait_until(deadline, |state| {
            if state.responses.contains_key(&id) {
                return true;
            }
            state.exited.is_some() || cancel()
        });
        let mut state = self.shared.lock();
        if let Some(response) = state.responses.remove(&id) {
            state.waiting.remove(&id);
            answer = Some(response);
        } else if let Some(reason) = state.exited.clone() {
            state.waiting.remove(&id);
            answer = Some(Err(LspError::Exited {
                server: self.name.clone(),
                reason,
            }));
        }
        answer
    }

    /// Sends a request and waits for its answer until `deadline`; on time
    /// out the request is cancelled.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
        cancel: &dyn Fn() -> bool,
    ) -> Result<Value, LspError> {
        let id = self.send_request(method, params)?;
        match self.wait_response(id, deadline, cancel) {
            Some(answer) => answer,
            None => {
                self.shared.lock().waiting.remove(&id);
                let _ = self.notify("$/cancelRequest", json!({"id": id}));
                Err(LspError::Timeout {
                    server: self.name.clone(),
                    method: method.to_owned(),
                })
            }
        }
    }

    fn send(&self, message: &Value) -> Result<(), LspError> {
        let mut stdin = self
            .stdin
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let Some(stdin) = stdin.as_mut() else {
            return Err(LspError::Exited {
                server: self.name.clone(),
                reason: "its input was closed".to_owned(),
            });
        };
        framing::write_message(stdin, message).map_err(|err| LspError::Exited {
            server: self.name.clone(),
            reason: format!("cannot write to it: {err}"),
        })
    }

    /// Why the server is gone, if it is: its exit status and last stderr
    /// line.
    pub fn gone(&self) -> Option<String> {
        let closed = self.shared.lock().exited.clone();
        let mut status = self.child().try_wait().ok().flatten();
        if closed.is_none() && status.is_none() {
            return None;
        }
        // Output closes just before the exit: a moment's wait gets the
        // status, which says more.
        let until = Instant::now() + Duration::from_millis(200);
        while status.is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
            status = self.child().try_wait().ok().flatten();
        }
        while status.is_some()
            && !self.stderr_done.load(Ordering::Acquire)
            && Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        let how = match status {
            Some(status) => match (
                status.code(),
                std::os::unix::process::ExitStatusExt::signal(&status),
            ) {
                (Some(code), _) => format!("exited with code {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                _ => "exited".to_owned(),
            },
            None => closed.unwrap_or_default(),
        };
        let last = self.last_stderr_line();
        Some(match last {
            Some(line) => format!("{how}: {line}"),
            None => how,
        })
    }

    fn last_stderr_line(&self) -> Option<String> {
        let ring = self
            .stderr
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let bytes: Vec<u8> = ring.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        text.lines()
            .rev()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .map(|line| line.chars().take(200).collect())
    }

    /// Asks the server to shut down, waits up to `grace` for it, then ends
    /// its whole process group.
    pub fn stop(&self, grace: Duration) {
        let deadline = Instant::now() + grace;
        if self.gone().is_none() {
            let _ = self.request("shutdown", Value::Null, deadline, &|| false);
            let _ = self.notify("exit", Value::Null);
            // Closing its input ends a server that waits for that instead.
            drop(
                self.stdin
                    .lock()
                    .unwrap_or_else(|poison| poison.into_inner())
                    .take(),
            );
            while Instant::now() < deadline {
                if matches!(self.child().try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        self.kill_group();
    }

    /// `SIGTERM`s the process group (through a launcher this also reaches
    /// what left the group), then `SIGKILL`s it, and reaps the child.
    pub fn kill_group(&self) {
        if self.reaped.load(Ordering::Acquire) {
            return;
        }
        let pgid = Pid::from_raw(i32::try_from(self.pid()).unwrap_or(i32::MAX));
        let reaped = matches!(self.child().try_wait(), Ok(Some(_)));
        if !reaped {
            let _ = killpg(pgid, Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_millis(500);
            while Instant::now() < deadline {
                if matches!(self.child().try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // The group may outlive its leader.
        let _ = killpg(pgid, Signal::SIGKILL);
        let mut child = self.child();
        let _ = child.kill();
        let _ = child.wait();
        self.reaped.store(true, Ordering::Release);
    }

    /// The process id of the started process (the launcher's, with one).
    pub fn pid(&self) -> u32 {
        self.child().id()
    }

    fn child(&self) -> MutexGuard<'_, Child> {
        self.child
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.kill_group();
    }
}

fn keep_stderr(mut stderr: impl Read, ring: &Mutex<VecDeque<u8>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf) {
        if n == 0 {
            break;
        }
        let mut ring = ring.lock().unwrap_or_else(|poison| poison.into_inner());
        ring.extend(&buf[..n]);
        let excess = ring.len().saturating_sub(STDERR_RING_BYTES);
        ring.drain(..excess);
    }
}

fn read_loop(
    stdout: impl Read,
    shared: &Shared,
    stdin: &Mutex<Option<ChildStdin>>,
    settings: &Value,
    roots: &Value,
) {
    let mut reader = BufReader::new(stdout);
    let reason = loop {
        let message = match framing::read_message(&mut reader, MAX_MESSAGE_BYTES) {
            Ok(message) => message,
            Err(err) => break err.to_string(),
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").cloned();
        match (method, id) {
            (Some(method), Some(id)) => {
                let result = answer_server_request(method, message.get("params"), settings, roots);
                let reply = match result {
                    Some(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    None => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": format!("{method} is not supported")}}),
                };
                let mut stdin = stdin.lock().unwrap_or_else(|poison| poison.into_inner());
                if let Some(stdin) = stdin.as_mut() {
                    let _ = framing::write_message(stdin, &reply);
                }
            }
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { continue };
                let answer = match message.get("error") {
                    Some(error) => Err(LspError::Server {
                        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .chars()
                            .take(500)
                            .collect(),
                    }),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let mut state = shared.lock();
                // Answers nobody waits for (timed out, cancelled) are dropped,
                // so the map cannot grow.
                if state.waiting.contains(&id) {
                    state.responses.insert(id, answer);
                    shared.changed.notify_all();
                }
            }
            (Some(method), None) => on_notification(shared, method, message.get("params")),
            (None, None) => {}
        }
    };
    let mut state = shared.lock();
    state.exited = Some(reason);
    shared.changed.notify_all();
}

/// The answer to a request from the server; `None` for a method not
/// supported (a "method not found" error).
fn answer_server_request(
    method: &str,
    params: Option<&Value>,
    settings: &Value,
    roots: &Value,
) -> Option<Value> {
    match method {
        "workspace/configuration" => {
            let items = params
                .and_then(|p| p.get("items"))
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let answers = items
                .iter()
                .map(|item| {
                    let section = item.get("section").and_then(Value::as_str).unwrap_or("");
                    section_of(settings, section)
                })
                .collect();
            Some(Value::Array(answers))
        }
        "window/workDoneProgress/create"
        | "client/registerCapability"
        | "client/unregisterCapability"
        | "window/showMessageRequest"
        | "workspace/diagnostic/refresh"
        | "workspace/semanticTokens/refresh"
        | "workspace/inlayHint/refresh"
        | "workspace/codeLens/refresh" => Some(Value::Null),
        "workspace/workspaceFolders" => Some(roots.clone()),
        // Edits are made by the tools, through the engine's writer.
        "workspace/applyEdit" => {
            Some(json!({"applied": false, "failureReason": "edits are applied by the tools only"}))
        }
        _ => None,
    }
}

/// The part of the settings a dotted `section` names, or null.
fn section_of(settings: &Value, section: &str) -> Value {
    if section.is_empty() {
        return settings.clone();
    }
    let mut at = settings;
    for part in section.split('.') {
        match at.get(part) {
            Some(next) => at = next,
            None => return Value::Null,
        }
    }
    at.clone()
}

fn on_notification(shared: &Shared, method: &str, params: Option<&Value>) {
    let Some(params) = params else { return };
    match method {
        "textDocument/publishDiagnostics" => {
            let Some(path) = params
                .get("uri")
                .and_then(Value::as_str)
                .and_then(uri_to_path)
            else {
                return;
            };
            let version = params
                .get("version")
                .and_then(Value::as_i64)
                .and_then(|v| i32::try_from(v).ok());
            let items: Vec<Diagnostic> = params
                .get("diagnostics")
                .cloned()
                .and_then(|d| serde_json::from_value(d).ok())
                .unwrap_or_default();
            let mut state = shared.lock();
            state.generation += 1;
            let generation = state.generation;
            state.published.insert(
                path,
                Published {
                    version,
                    generation,
                    items,
                },
            );
            shared.changed.notify_all();
        }
        "$/progress" => {
            let token = match params.get("token") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => return,
            };
            let kind = params
                .get("value")
                .and_then(|v| v.get("kind"))
                .and_then(Value::as_str);
            let mut state = shared.lock();
            match kind {
                // Bounded: a server that never ends its tokens cannot grow
                // the set past this.
                Some("begin") if state.progress.len() < 256 => {
                    state.progress.insert(token);
                }
                Some("end") => {
                    state.progress.remove(&token);
                }
                _ => {}
            }
            shared.changed.notify_all();
        }
        _ => {}
    }
}
