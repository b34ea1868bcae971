//! The client: servers per language, started lazily in the workspace root,
//! restarted after a crash with backoff, disabled after repeated crashes,
//! stopped (then their process groups killed) when the client is dropped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::conn::Connection;
use crate::report::{FileDiagnostic, Note, Outcome, Report, Severity};
use crate::servers::{CRASH_WINDOW, ServerSpec, extension_of};
use crate::uri::path_to_uri;
use crate::{Launch, LspError};

/// Files larger than this are not sent to a server.
pub const MAX_DOCUMENT_BYTES: u64 = 10 << 20;
/// Documents kept open per server; the least recently used is closed past it.
pub const MAX_OPEN_DOCUMENTS: usize = 200;
/// How long a navigation request (readiness included) may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a server is given to shut down before its group is killed.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// The waits before restarting after the first, second, third... crash.
const BACKOFF: [Duration; 3] = [
    Duration::ZERO,
    Duration::from_secs(1),
    Duration::from_secs(5),
];

/// What the client is configured with.
#[derive(Debug, Clone)]
pub struct LspSettings {
    /// The workspace root servers run in.
    pub root: PathBuf,
    /// Candidate servers; per file the first that handles it and is found.
    pub servers: Vec<ServerSpec>,
    /// How long a write waits for its diagnostics.
    pub wait: Duration,
    /// The least serious diagnostic reported after a write.
    pub report: Severity,
    /// How servers are started.
    pub launch: Launch,
}

/// Where one server is in its life.
#[derive(Debug)]
enum Phase {
    Idle,
    Starting {
        conn: Arc<Connection>,
        init: i64,
    },
    Ready {
        conn: Arc<Connection>,
        pull: bool,
        /// The capabilities it announced in its `initialize` answer.
        capabilities: Arc<Value>,
    },
    Crashed {
        at: Instant,
        reason: String,
    },
    Disabled {
        reason: String,
    },
}

#[derive(Debug)]
struct Doc {
    version: i32,
    text: String,
    /// The connection generation it was opened in (0: not yet).
    opened_in: u64,
    used: u64,
    /// The count of publications when its text was last sent: a
    /// publication after it is about that text.
    sent_mark: u64,
    /// The file as it was on disk when its text was read, to notice a
    /// change made outside the tools (by a command) before the next request.
    stamp: Option<Stamp>,
}

/// What a file looked like on disk: a change in size, time or identity
/// means its text is read again (and sent, if it differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<std::time::SystemTime>,
    len: u64,
    inode: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            modified: meta.modified().ok(),
            len: meta.len(),
            inode: std::os::unix::fs::MetadataExt::ino(meta),
        }
    }
}

#[derive(Debug)]
struct Slot {
    spec: ServerSpec,
    phase: Phase,
    crashes: Vec<Instant>,
    docs: HashMap<PathBuf, Doc>,
    /// Counts connections, so documents know whether they are open in the
    /// current one.
    generation: u64,
    clock: u64,
}

/// How a server stands, for `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// Its name.
    pub name: String,
    /// Its command.
    pub command: String,
    /// Where it was found on `PATH`, if it was.
    pub found: Option<PathBuf>,
}

/// Language servers for one workspace root. Dropping it stops them all.
#[derive(Debug)]
pub struct LspClient {
    settings: LspSettings,
    /// Per extension, the index of the slot that handles it (first found).
    by_extension: HashMap<String, usize>,
    slots: Vec<Mutex<Slot>>,
}

/// Why a navigation request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// No configured server handles the file.
    #[error("no language server for {0} files")]
    NoServer(String),
    /// The server could not answer now.
    #[error("{}", .note.text(.server))]
    NotReady {
        /// The server.
        server: String,
        /// Why.
        note: Note,
    },
    /// The request failed.
    #[error(transparent)]
    Lsp(#[from] LspError),
}

impl LspClient {
    /// A client for `settings`; nothing starts until a file needs it.
    pub fn new(settings: LspSettings) -> LspClient {
        let mut by_extension = HashMap::new();
        let mut slots = Vec::new();
        for spec in &settings.servers {
            if spec.locate().is_none() {
                continue;
            }
            let index = slots.len();
            for (ext, _) in &spec.extensions {
                by_extension
                    .entry(ext.to_ascii_lowercase())
                    .or_insert(index);
            }
            slots.push(Mutex::new(Slot {
                spec: spec.clone(),
                phase: Phase::Idle,
                crashes: Vec::new(),
                docs: HashMap::new(),
                generation: 0,
                clock: 0,
            }));
        }
        LspClient {
            settings,
            by_extension,
            slots,
        }
    }

    /// Each candidate server and whether it was found.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.settings
            .servers
            .iter()
            .map(|spec| ServerStatus {
                name: spec.name.clone(),
                command: spec.command.clone(),
                found: spec.locate(),
            })
            .collect()
    }

    /// The settings.
    pub fn settings(&self) -> &LspSettings {
        &self.settings
    }

    /// The name of the server that handles `path`, if any (cheap: no server
    /// is started).
    pub fn server_for(&self, path: &Path) -> Option<String> {
        let index = self.slot_index(path)?;
        Some(lock(&self.slots[index]).spec.name.clone())
    }

    fn slot_index(&self, path: &Path) -> Option<usize> {
        let ext = extension_of(path)?.to_ascii_lowercase();
        self.by_extension.get(&ext).copied()
    }

    /// After `path` (absolute) was written: tells its server the new text and
    /// waits, until the configured wait has passed or `cancel` is set, for
    /// the diagnostics of exactly that version. `None` when no server
    /// handles the file.
    pub fn after_write(&self, path: &Path, cancel: &AtomicBool) -> Option<Report> {
        let index = self.slot_index(path)?;
        let started = Instant::now();
        let deadline = started + self.settings.wait;
        let (server, outcome) = self.check(index, path, started, deadline, cancel, true);
        Some(Report {
            server,
            path: path.to_path_buf(),
            elapsed: started.elapsed(),
            outcome,
        })
    }

    /// The text and version tracked for `path`, if it is open (tests).
    #[cfg(test)]
    pub(crate) fn open_text(&self, path: &Path) -> Option<(String, i32)> {
        let index = self.slot_index(path)?;
        let slot = lock(&self.slots[index]);
        slot.docs
            .get(path)
            .map(|doc| (doc.text.clone(), doc.version))
    }

    /// The version and count of the diagnostics last published for
    /// `path` (tests).
    #[cfg(test)]
    pub(crate) fn published(&self, path: &Path) -> Option<(Option<i32>, usize)> {
        let index = self.slot_index(path)?;
        let slot = lock(&self.slots[index]);
        let Phase::Ready { conn, .. } = &slot.phase else {
            return None;
        };
        let state = conn.shared.lock();
        state
            .published
            .get(path)
            .map(|p| (p.version, p.items.len()))
    }

    /// After `path` was moved away or deleted: the server forgets it
    /// (`didClose`), so no answer is given for a file that is gone.
    pub fn closed(&self, path: &Path) {
        let Some(index) = self.slot_index(path) else {
            return;
        };
        let mut slot = lock(&self.slots[index]);
        if slot.docs.remove(path).is_some()
            && let Phase::Ready { conn, .. } = &slot.phase
        {
            let _ = conn.notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": path_to_uri(path)}}),
            );
        }
    }

    /// The diagnostics of `path` now (after bringing the server up to date
    /// with the file on disk), waiting as after a write.
    pub fn diagnostics(&self, path: &Path, cancel: &AtomicBool) -> Result<Report, RequestError> {
        let index = self.slot_index(path).ok_or_else(|| no_server(path))?;
        let started = Instant::now();
        let deadline = started + self.settings.wait.max(Duration::from_secs(1));
        let (server, outcome) = self.check(index, path, started, deadline, cancel, false);
        Ok(Report {
            server,
            path: path.to_path_buf(),
            elapsed: started.elapsed(),
            outcome,
        })
    }

    fn check(
        &self,
        index: usize,
        path: &Path,
        call_started: Instant,
        deadline: Instant,
        cancel: &AtomicBool,
        written: bool,
    ) -> (String, Outcome) {
        let mut slot = lock(&self.slots[index]);
        let server = slot.spec.name.clone();
        let (text, stamp) = match read_document(path) {
            Ok(read) => read,
            Err(reason) => return (server, Outcome::Note(Note::Unreadable { reason })),
        };
        let cancelled = || cancel.load(Ordering::Relaxed);
        // The diagnostics known before this text, to tell new ones apart.
        let before: Vec<(String, Option<String>)> = match &slot.phase {
            Phase::Ready { conn, .. } if written => conn
                .shared
                .lock()
                .published
                .get(path)
                .map(|p| {
                    p.items
                        .iter()
                        .map(|d| (d.message.clone(), code_of(d)))
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let conn = match self.ready(&mut slot, deadline, &cancelled) {
            Ok(conn) => conn,
            Err(note) => {
                // Kept, so the text is sent once the server is up.
                remember(&mut slot, path, text, stamp);
                return (server, Outcome::Note(note));
            }
        };
        let pull = matches!(slot.phase, Phase::Ready { pull: true, .. });
        let mark = conn.shared.lock().generation;
        // Other open files changed on disk (by a command) are sent first:
        // this file's diagnostics may depend on them.
        let others = match refresh_others(&mut slot, &conn, Some(path), mark) {
            Ok(others) => others,
            Err(err) => {
                let note = self.crashed(&mut slot, err.to_string());
                return (server, Outcome::Note(note));
            }
        };
        let (version, fresh_after) =
            match sync(&mut slot, &conn, path, text.clone(), stamp, written, mark) {
                Ok(synced) => synced,
                Err(err) => {
                    let note = self.crashed(&mut slot, err.to_string());
                    return (server, Outcome::Note(note));
                }
            };
        drop(slot);

        let items = if pull {
            let uri = path_to_uri(path);
            match conn.request(
                "textDocument/diagnostic",
                json!({"textDocument": {"uri": uri}}),
                deadline,
                &cancelled,
            ) {
                Ok(result) => Some(
                    result
                        .get("items")
                        .cloned()
                        .and_then(|items| serde_json::from_value(items).ok())
                        .unwrap_or_default(),
                ),
                Err(LspError::Timeout { .. }) => None,
                Err(err) => {
                    return (server, Outcome::Note(self.failed(index, &conn, err)));
                }
            }
        } else {
            // Only a set for this version counts; a server that sends no
            // version is taken at its first publication after the text was
            // sent (an unchanged text is not sent again, and such servers
            // do not publish again for it: what they said then stands).
            //
            // When other files were sent first, a set published after them
            // is waited for (the server checks this file again against
            // them); a server that publishes nothing new, as its set did
            // not change, leaves the set it gave for this version.
            let fresh_since = |newer_than: u64| {
                move |state: &crate::conn::State| {
                    state.published.get(path).is_some_and(|p| {
                        p.generation > newer_than
                            && match p.version {
                                Some(v) => v == version,
                                None => p.generation > fresh_after,
                            }
                    })
                }
            };
            let fresh = fresh_since(if others { mark } else { 0 });
            let mut arrived = conn.shared.wait_until(deadline, |state| {
                fresh(state) || state.exited.is_some() || cancelled()
            });
            let fresh = if others && !fresh(&conn.shared.lock()) {
                let cached = fresh_since(0);
                arrived = cached(&conn.shared.lock());
                cached
            } else {
                fresh
            };
            let versionless = {
                let state = conn.shared.lock();
                state
                    .published
                    .get(path)
                    .is_some_and(|p| p.version.is_none())
            };
            if arrived && versionless {
                settle(&conn, path, deadline);
            }
            let state = conn.shared.lock();
            if arrived && fresh(&state) {
                state.published.get(path).map(|p| p.items.clone())
            } else {
                None
            }
        };
        let Some(items) = items else {
            if cancelled() {
                return (server, Outcome::Note(Note::Cancelled));
            }
            if conn.gone().is_some() {
                let note = self.failed(
                    index,
                    &conn,
                    LspError::Exited {
                        server: server.clone(),
                        reason: String::new(),
                    },
                );
                return (server, Outcome::Note(note));
            }
            let indexing = !conn.shared.lock().progress.is_empty();
            // A server started by this very call is still on its first
            // analysis (loading its libraries), not slow to answer.
            let note = if conn.started >= call_started {
                Note::Starting
            } else if indexing {
                Note::Indexing
            } else {
                Note::NoAnswer {
                    waited: self.settings.wait,
                }
            };
            return (server, Outcome::Note(note));
        };
        let mut before = before;
        let mut diagnostics: Vec<FileDiagnostic> = items
            .iter()
            .filter(|d| Severity::of(d) <= self.settings.report)
            .map(|d| {
                let mut shown = FileDiagnostic::from_lsp(d, &text);
                let key = (d.message.clone(), code_of(d));
                if let Some(at) = before.iter().position(|b| *b == key) {
                    before.swap_remove(at);
                    shown.preexisting = true;
                }
                shown
            })
            .collect();
        diagnostics.sort_by_key(|d| (d.severity, d.line, d.column));
        (server, Outcome::Checked { diagnostics })
    }

    /// Sends `method` about `path` (opened first, and brought up to date
    /// with the file on disk, so a change made outside the tools is seen)
    /// with `params(uri)`, waiting for readiness and the answer up to
    /// [`REQUEST_TIMEOUT`].
    pub fn request(
        &self,
        path: &Path,
        method: &str,
        params: impl FnOnce(&str) -> Value,
        cancel: &AtomicBool,
    ) -> Result<Value, RequestError> {
        self.request_if_offered(path, method, |_| true, params, cancel)
            .map(Option::unwrap_or_default)
    }

    /// As [`request`](Self::request), but only when `offered` finds the
    /// request among the capabilities the server announced (its
    /// `initialize` answer's `capabilities`); `Ok(None)` when it is not
    /// (the file is opened and brought up to date all the same).
    pub fn request_if_offered(
        &self,
        path: &Path,
        method: &str,
        offered: impl FnOnce(&Value) -> bool,
        params: impl FnOnce(&str) -> Value,
        cancel: &AtomicBool,
    ) -> Result<Option<Value>, RequestError> {
        let index = self.slot_index(path).ok_or_else(|| no_server(path))?;
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let cancelled = || cancel.load(Ordering::Relaxed);
        let mut slot = lock(&self.slots[index]);
        let server = slot.spec.name.clone();
        let (text, stamp) = read_document(path).map_err(|reason| RequestError::NotReady {
            server: server.clone(),
            note: Note::Unreadable { reason },
        })?;
        let conn = match self.ready(&mut slot, deadline, &cancelled) {
            Ok(conn) => conn,
            Err(note) => {
                remember(&mut slot, path, text, stamp);
                return Err(RequestError::NotReady { server, note });
            }
        };
        let mark = conn.shared.lock().generation;
        // Every open file changed on disk is sent first, so no answer is
        // given for text that is no longer there.
        let synced = refresh_others(&mut slot, &conn, Some(path), mark)
            .and_then(|_| sync(&mut slot, &conn, path, text, stamp, false, mark));
        if let Err(err) = synced {
            let note = self.crashed(&mut slot, err.to_string());
            return Err(RequestError::NotReady { server, note });
        }
        let is_offered = match &slot.phase {
            Phase::Ready { capabilities, .. } => offered(capabilities),
            _ => offered(&Value::Null),
        };
        drop(slot);
        if !is_offered {
            return Ok(None);
        }
        let uri = path_to_uri(path);
        match conn.request(method, params(&uri), deadline, &cancelled) {
            Ok(value) => Ok(Some(value)),
            Err(err @ LspError::Exited { .. }) => {
                let note = self.failed(index, &conn, err);
                Err(RequestError::NotReady { server, note })
            }
            Err(err) => Err(err.into()),
        }
    }

    /// Sends a request that names no file (`workspace/symbol`) to the server
    /// that handles `like` (a file of the language wanted).
    pub fn workspace_request(
        &self,
        like: &Path,
        method: &str,
        params: Value,
        cancel: &AtomicBool,
    ) -> Result<Value, RequestError> {
        let index = self.slot_index(like).ok_or_else(|| no_server(like))?;
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let cancelled = || cancel.load(Ordering::Relaxed);
        let mut slot = lock(&self.slots[index]);
        let server = slot.spec.name.clone();
        let conn = self
            .ready(&mut slot, deadline, &cancelled)
            .map_err(|note| RequestError::NotReady {
                server: server.clone(),
                note,
            })?;
        let mark = conn.shared.lock().generation;
        if let Err(err) = refresh_others(&mut slot, &conn, None, mark) {
            let note = self.crashed(&mut slot, err.to_string());
            return Err(RequestError::NotReady { server, note });
        }
        drop(slot);
        Ok(conn.request(method, params, deadline, &cancelled)?)
    }

    /// A request failed because the server died: recorded as a crash.
    fn failed(&self, index: usize, conn: &Arc<Connection>, err: LspError) -> Note {
        let reason = conn.gone().unwrap_or_else(|| err.to_string());
        let mut slot = lock(&self.slots[index]);
        let same = match &slot.phase {
            Phase::Ready { conn: now, .. } | Phase::Starting { conn: now, .. } => {
                Arc::ptr_eq(now, conn)
            }
            _ => false,
        };
        if same {
            return self.crashed(&mut slot, reason);
        }
        match &slot.phase {
            Phase::Disabled { reason } => Note::Disabled {
                reason: reason.clone(),
            },
            _ => Note::Crashed { reason },
        }
    }

    /// Brings the slot's server to ready (starting or restarting it), waiting
    /// until `deadline` at most.
    fn ready(
        &self,
        slot: &mut Slot,
        deadline: Instant,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Arc<Connection>, Note> {
        loop {
            match &slot.phase {
                Phase::Disabled { reason } => {
                    return Err(Note::Disabled {
                        reason: reason.clone(),
                    });
                }
                Phase::Ready { conn, .. } => {
                    let conn = conn.clone();
                    match conn.gone() {
                        None => return Ok(conn),
                        // A crash is reported once; the next call restarts.
                        Some(reason) => return Err(self.crashed(slot, reason)),
                    }
                }
                Phase::Crashed { at, reason } => {
                    let recent = slot.crashes.len();
                    let backoff = BACKOFF[recent.saturating_sub(1).min(BACKOFF.len() - 1)];
                    if at.elapsed() < backoff {
                        return Err(Note::Crashed {
                            reason: format!(
                                "{reason}; restarting in {}",
                                crate::report::seconds(backoff - at.elapsed())
                            ),
                        });
                    }
                    slot.phase = Phase::Idle;
                }
                Phase::Idle => self.start(slot),
                Phase::Starting { conn, init } => {
                    let (conn, init) = (conn.clone(), *init);
                    match conn.wait_response(init, deadline, cancelled) {
                        Some(Ok(result)) => self.initialized(slot, conn, &result),
                        Some(Err(err)) => {
                            let reason = conn
                                .gone()
                                .unwrap_or_else(|| format!("initialize failed: {err}"));
                            let _ = self.crashed(slot, reason);
                        }
                        None => {
                            if conn.started.elapsed() >= slot.spec.startup_timeout {
                                let reason = format!(
                                    "it did not answer initialize within {}",
                                    crate::report::seconds(slot.spec.startup_timeout)
                                );
                                conn.kill_group();
                                slot.phase = Phase::Disabled { reason };
                            } else {
                                return Err(if cancelled() {
                                    Note::Cancelled
                                } else {
                                    Note::Starting
                                });
                            }
                        }
                    }
                }
            }
        }
    }

    fn start(&self, slot: &mut Slot) {
        let spec = &slot.spec;
        let root = &self.settings.root;
        let started = Connection::start(spec, root, &self.settings.launch, spec.settings.clone());
        let conn = match started {
            Ok(conn) => Arc::new(conn),
            Err(err) => {
                slot.phase = Phase::Disabled {
                    reason: err.to_string(),
                };
                return;
            }
        };
        let params = initialize_params(root, spec);
        match conn.send_request("initialize", params) {
            Ok(init) => {
                slot.generation += 1;
                slot.phase = Phase::Starting { conn, init };
            }
            Err(err) => {
                let reason = conn.gone().unwrap_or_else(|| err.to_string());
                let _ = self.crashed(slot, reason);
            }
        }
    }

    fn initialized(&self, slot: &mut Slot, conn: Arc<Connection>, result: &Value) {
        let caps = result.get("capabilities");
        let pull = caps
            .and_then(|c| c.get("diagnosticProvider"))
            .is_some_and(|p| !p.is_null());
        let sent = conn.notify("initialized", json!({})).and_then(|()| {
            if slot.spec.settings.is_null() {
                Ok(())
            } else {
                conn.notify(
                    "workspace/didChangeConfiguration",
                    json!({"settings": slot.spec.settings}),
                )
            }
        });
        if let Err(err) = sent {
            let _ = self.crashed(slot, err.to_string());
            return;
        }
        slot.phase = Phase::Ready {
            conn: conn.clone(),
            pull,
            capabilities: Arc::new(caps.cloned().unwrap_or(Value::Null)),
        };
        // Documents tracked before (or before a crash) are opened again.
        let generation = slot.generation;
        let paths: Vec<PathBuf> = slot.docs.keys().cloned().collect();
        for path in paths {
            let Some(language) = slot.spec.language_of(&path).map(str::to_owned) else {
                continue;
            };
            let Some(doc) = slot.docs.get_mut(&path) else {
                continue;
            };
            doc.version += 1;
            doc.opened_in = generation;
            let _ = conn.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": path_to_uri(&path), "languageId": language,
                    "version": doc.version, "text": doc.text}}),
            );
        }
    }

    /// Records a crash: restarted later with backoff, or disabled after
    /// more than `max_restarts` within [`CRASH_WINDOW`].
    fn crashed(&self, slot: &mut Slot, reason: String) -> Note {
        if let Phase::Ready { conn, .. } | Phase::Starting { conn, .. } = &slot.phase {
            conn.kill_group();
        }
        let now = Instant::now();
        slot.crashes
            .retain(|at| now.duration_since(*at) < CRASH_WINDOW);
        slot.crashes.push(now);
        let count = slot.crashes.len();
        if count > slot.spec.max_restarts as usize {
            let reason = format!(
                "it stopped {count} times within {} min; last: {reason}",
                CRASH_WINDOW.as_secs() / 60
            );
            slot.phase = Phase::Disabled {
                reason: reason.clone(),
            };
            Note::Disabled { reason }
        } else {
            slot.phase = Phase::Crashed {
                at: now,
                reason: reason.clone(),
            };
            Note::Crashed { reason }
        }
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        // Every server is asked at once, so the whole stop takes one grace.
        std::thread::scope(|scope| {
            for slot in &self.slots {
                let mut slot = lock(slot);
                let phase = std::mem::replace(&mut slot.phase, Phase::Idle);
                if let Phase::Ready { conn, .. } | Phase::Starting { conn, .. } = phase {
                    scope.spawn(move || conn.stop(SHUTDOWN_GRACE));
                }
            }
        });
    }
}

/// How long a server that sends no versions must stay quiet about a file
/// before its last publication is taken as the answer: such servers publish
/// in stages (syntax first, types later), each replacing the last.
const SETTLE: Duration = Duration::from_millis(300);

/// Waits until `path` has had no new publication for [`SETTLE`], or
/// `deadline`.
fn settle(conn: &Connection, path: &Path, deadline: Instant) {
    loop {
        let seen = conn
            .shared
            .lock()
            .published
            .get(path)
            .map_or(0, |p| p.generation);
        let until = (Instant::now() + SETTLE).min(deadline);
        let newer = conn.shared.wait_until(until, |state| {
            state.exited.is_some()
                || state
                    .published
                    .get(path)
                    .is_some_and(|p| p.generation > seen)
        });
        if !newer || Instant::now() >= deadline || conn.shared.lock().exited.is_some() {
            return;
        }
    }
}

fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|poison| poison.into_inner())
}

fn no_server(path: &Path) -> RequestError {
    RequestError::NoServer(extension_of(path).unwrap_or_else(|| "extensionless".to_owned()))
}

fn code_of(d: &lsp_types::Diagnostic) -> Option<String> {
    d.code.as_ref().map(|c| match c {
        lsp_types::NumberOrString::Number(n) => n.to_string(),
        lsp_types::NumberOrString::String(s) => s.clone(),
    })
}

/// The text of `path`, and how the file looked before it was read (so a
/// change while reading shows as a different stamp next time).
fn read_document(path: &Path) -> Result<(String, Stamp), String> {
    let meta = std::fs::metadata(path).map_err(|err| format!("cannot read it: {err}"))?;
    let stamp = Stamp::of(&meta);
    if meta.len() > MAX_DOCUMENT_BYTES {
        return Err(format!(
            "the file is larger than {} MiB",
            MAX_DOCUMENT_BYTES >> 20
        ));
    }
    let bytes = std::fs::read(path).map_err(|err| format!("cannot read it: {err}"))?;
    let text = String::from_utf8(bytes).map_err(|_| "the file is not UTF-8".to_owned())?;
    Ok((text, stamp))
}

/// Sends the documents open in the server, other than `except`, whose file
/// changed on disk since their text was read (a command or another process
/// wrote it): the new text when it differs, or `didClose` when the file is
/// gone or can no longer be sent. Costs one `stat` per open document.
/// Returns whether anything was sent; publications after `mark` are then
/// about the new texts.
fn refresh_others(
    slot: &mut Slot,
    conn: &Connection,
    except: Option<&Path>,
    mark: u64,
) -> Result<bool, LspError> {
    let generation = slot.generation;
    let mut sent = false;
    let mut gone = Vec::new();
    for (path, doc) in &mut slot.docs {
        if doc.opened_in != generation || Some(path.as_path()) == except {
            continue;
        }
        let now = std::fs::metadata(path).map(|meta| Stamp::of(&meta));
        if now.as_ref().ok() == doc.stamp.as_ref() {
            continue;
        }
        let uri = path_to_uri(path);
        match read_document(path) {
            Ok((text, stamp)) => {
                doc.stamp = Some(stamp);
                if text != doc.text {
                    send_change(conn, doc, &uri, text, mark)?;
                    sent = true;
                }
            }
            Err(_) => {
                conn.notify(
                    "textDocument/didClose",
                    json!({"textDocument": {"uri": uri}}),
                )?;
                gone.push(path.clone());
                sent = true;
            }
        }
    }
    for path in gone {
        slot.docs.remove(&path);
    }
    Ok(sent)
}

/// Tracks `text` as the latest of `path` without sending it (the server is
/// not up): it is opened when the server is.
/// Sends `text` as the document's next version (whole, as every server
/// takes it), and remembers it with the mark of the diagnostics that were
/// current when it went out.
fn send_change(
    conn: &Connection,
    doc: &mut Doc,
    uri: &str,
    text: String,
    mark: u64,
) -> Result<(), LspError> {
    doc.version += 1;
    doc.text = text;
    doc.sent_mark = mark;
    conn.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": doc.version},
            "contentChanges": [{"text": doc.text}]}),
    )
}

fn remember(slot: &mut Slot, path: &Path, text: String, stamp: Stamp) {
    slot.clock += 1;
    let used = slot.clock;
    match slot.docs.get_mut(path) {
        Some(doc) => {
            doc.text = text;
            doc.used = used;
            doc.stamp = Some(stamp);
        }
        None => {
            evict(slot);
            slot.docs.insert(
                path.to_path_buf(),
                Doc {
                    version: 0,
                    text,
                    opened_in: 0,
                    used,
                    sent_mark: 0,
                    stamp: Some(stamp),
                },
            );
        }
    }
}

/// Closes the least recently used document when the cap is reached.
fn evict(slot: &mut Slot) {
    if slot.docs.len() < MAX_OPEN_DOCUMENTS {
        return;
    }
    let Some(oldest) = slot
        .docs
        .iter()
        .min_by_key(|(_, doc)| doc.used)
        .map(|(path, _)| path.clone())
    else {
        return;
    };
    slot.docs.remove(&oldest);
    if let Phase::Ready { conn, .. } = &slot.phase {
        let _ = conn.notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": path_to_uri(&oldest)}}),
        );
    }
}

/// Opens `path` in the server or sends its new text, and returns the
/// version the server now has and the count of publications after which
/// one is about that text (`mark`, the count now, when the text is sent;
/// the count when it was last sent, when it is unchanged). A text equal to
/// what the server has sends nothing (unless `written`: then it is saved
/// again, which some servers need to check).
fn sync(
    slot: &mut Slot,
    conn: &Connection,
    path: &Path,
    text: String,
    stamp: Stamp,
    written: bool,
    mark: u64,
) -> Result<(i32, u64), LspError> {
    let generation = slot.generation;
    let language = slot
        .spec
        .language_of(path)
        .unwrap_or("plaintext")
        .to_owned();
    let uri = path_to_uri(path);
    slot.clock += 1;
    let used = slot.clock;
    if !slot.docs.contains_key(path) {
        evict(slot);
    }
    let doc = slot.docs.entry(path.to_path_buf()).or_insert(Doc {
        version: 0,
        text: String::new(),
        opened_in: 0,
        used,
        sent_mark: 0,
        stamp: None,
    });
    doc.used = used;
    doc.stamp = Some(stamp);
    if doc.opened_in != generation {
        doc.version += 1;
        doc.text = text;
        doc.opened_in = generation;
        doc.sent_mark = mark;
        conn.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": language,
                "version": doc.version, "text": doc.text}}),
        )?;
    } else if doc.text != text {
        send_change(conn, doc, &uri, text, mark)?;
    } else if !written {
        return Ok((doc.version, doc.sent_mark));
    }
    if written {
        conn.notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": uri}}),
        )?;
    }
    Ok((doc.version, doc.sent_mark))
}

fn initialize_params(root: &Path, spec: &ServerSpec) -> Value {
    let uri = path_to_uri(root);
    let mut params = json!({
        "processId": std::process::id(),
        "clientInfo": {"name": "agent-tools", "version": env!("CARGO_PKG_VERSION")},
        "rootUri": uri,
        "rootPath": root.to_string_lossy(),
        "workspaceFolders": [{"uri": uri, "name": "workspace"}],
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "window": {"workDoneProgress": true},
            "workspace": {
                "configuration": true,
                "workspaceFolders": true,
                "didChangeConfiguration": {"dynamicRegistration": true},
                "symbol": {"dynamicRegistration": false}
            },
            "textDocument": {
                "synchronization": {"dynamicRegistration": false, "didSave": true},
                "publishDiagnostics": {"relatedInformation": false, "versionSupport": true},
                "definition": {"linkSupport": true},
                "implementation": {"linkSupport": true},
                "references": {},
                "hover": {"contentFormat": ["plaintext", "markdown"]},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                // prepareRename is asked first where offered: a position that
                // cannot be renamed is refused before any edit is computed.
                "rename": {"dynamicRegistration": false, "prepareSupport": true},
                "callHierarchy": {}
            },
            "experimental": {"serverStatusNotification": true}
        }
    });
    if let Some(options) = &spec.initialization_options {
        params["initializationOptions"] = options.clone();
    }
    params
}
