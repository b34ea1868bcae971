//! The stdio transport: newline-delimited JSON-RPC with bounded frames,
//! an answer for every request (also those that cannot be parsed), and
//! back-pressure on a client that stops reading.
//!
//! rmcp's own line transport drops a line it cannot parse or that is too
//! long without a word, and reads on while responses pile up unwritten. This
//! one reads the lines itself and hands rmcp only messages it parsed:
//!
//! * A line over [`ServerLimits::frame_bytes`] is skipped without being
//!   kept (only its first [`SCAN_PREFIX`] bytes are, to find its `id` and
//!   `method`). A `tools/call` is answered with a `too_large` tool result,
//!   anything else with JSON-RPC `-32600`.
//! * A line that is not JSON (or nests deeper than the parser's limit, holds
//!   a number out of range or a lone surrogate) gets `-32700`; JSON that is
//!   not a JSON-RPC message gets `-32600`. Both carry the request's id when
//!   it can be found. A `tools/call` among them gets an `invalid_input` tool
//!   result instead, as does one whose `arguments` is not an object.
//! * Reading stops while too many requests are unanswered
//!   ([`ServerLimits::max_pending_requests`] / `max_pending_bytes`) or too
//!   many response bytes wait to be written ([`ServerLimits::max_queued_bytes`]).
//! * End of input, or a write that fails, sets the shutdown token: every
//!   call is cancelled.

use std::borrow::Cow;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_tools::CancelToken;
use agent_tools::{CallOutcome, ErrorCode, ToolError};
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetExtensions, JsonRpcMessage,
    JsonRpcRequest, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::TxJsonRpcMessage;
use rmcp::transport::Transport;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::watchdog::Watchdog;

/// How much of an oversized line is kept to look for its `id` and `method`.
pub const SCAN_PREFIX: usize = 64 * 1024;

/// JSON escaping makes a string at most this many times longer
/// (`\u0000` for one control byte).
const WORST_ESCAPE: u64 = 6;

/// Room for everything in a request besides one escaped file content.
const FRAME_SLACK: u64 = 1024 * 1024;

/// How long closing waits for queued responses to be written.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// The bounds the server keeps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// The longest request line read, in bytes.
    pub frame_bytes: usize,
    /// Requests read but not yet answered, at most.
    pub max_pending_requests: usize,
    /// Their lines' bytes together, at most (one more line may pass it).
    pub max_pending_bytes: usize,
    /// Response bytes waiting to be written before reading and starting
    /// calls pause.
    pub max_queued_bytes: usize,
    /// Tool calls running at once; more wait for a slot.
    pub max_concurrent_calls: usize,
}

impl ServerLimits {
    /// The limits for a tool set whose files may be `max_file_bytes` long.
    /// The frame fits a `write_file` of that much content however it is
    /// escaped: `6 × max_file_bytes + 1 MiB`.
    pub fn for_max_file_bytes(max_file_bytes: u64) -> Self {
        let frame = max_file_bytes
            .saturating_mul(WORST_ESCAPE)
            .saturating_add(FRAME_SLACK);
        let frame_bytes = usize::try_from(frame).unwrap_or(usize::MAX);
        ServerLimits {
            frame_bytes,
            // Each unanswered request holds a protocol-library task (tens
            // of KB in a debug build); twice the calls run at once.
            max_pending_requests: 128,
            max_pending_bytes: frame_bytes.max(64 * 1024 * 1024),
            max_queued_bytes: 4 * 1024 * 1024,
            max_concurrent_calls: 64,
        }
    }
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits::for_max_file_bytes(agent_tools::DEFAULT_MAX_FILE_BYTES)
    }
}

/// What the transport and the call handler share: the counters behind the
/// back-pressure, the call slots, and the shutdown token.
#[derive(Debug)]
pub(crate) struct Flow {
    pub(crate) limits: ServerLimits,
    pending: AtomicUsize,
    pending_bytes: AtomicUsize,
    queued_bytes: AtomicUsize,
    changed: Notify,
    pub(crate) call_slots: Arc<Semaphore>,
    pub(crate) shutdown: CancellationToken,
    /// The brief calls running on runtime threads now (their number is the
    /// places taken): request ids and cancel flags. Nothing polls a future
    /// while such a call runs, so the reader sets the flag itself when the
    /// client cancels the request, and shutdown sets them all.
    inline_cancels: Mutex<Vec<(RequestId, CancelToken)>>,
    /// The client sent `notifications/initialized`: the session was opened
    /// with the `initialize` handshake, so a request needs no metadata of
    /// its own and the transport may answer brief calls itself.
    handshake_done: AtomicBool,
    /// Wakes an idle runtime thread when a brief call runs long.
    watchdog: OnceLock<Watchdog>,
}

/// One brief call running on a runtime thread; its place and its entry
/// among the cancel flags are given back when it is dropped.
#[derive(Debug)]
pub(crate) struct InlineCall {
    flow: Arc<Flow>,
    id: RequestId,
}

impl Drop for InlineCall {
    fn drop(&mut self) {
        let mut cancels = lock(&self.flow.inline_cancels);
        if let Some(at) = cancels.iter().position(|(id, _)| *id == self.id) {
            cancels.swap_remove(at);
        }
        // Under the lock, so that a call starting now arms after this.
        if cancels.is_empty()
            && let Some(watchdog) = self.flow.watchdog.get()
        {
            watchdog.disarm();
        }
        drop(cancels);
        // A brief call may be waiting for this place.
        self.flow.notify();
    }
}

/// How many brief calls may run on runtime threads at once: all threads
/// of a multi-thread runtime but one, which stays free for the protocol;
/// none outside such a runtime.
fn inline_places() -> usize {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            handle.metrics().num_workers().saturating_sub(1)
        }
        _ => 0,
    }
}

/// The vector behind a mutex, whole even if a holder panicked (every
/// change to it is one push or one removal).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Flow {
    pub(crate) fn new(limits: ServerLimits) -> Arc<Self> {
        Arc::new(Flow {
            limits,
            pending: AtomicUsize::new(0),
            pending_bytes: AtomicUsize::new(0),
            queued_bytes: AtomicUsize::new(0),
            changed: Notify::new(),
            call_slots: Arc::new(Semaphore::new(limits.max_concurrent_calls.max(1))),
            shutdown: CancellationToken::new(),
            inline_cancels: Mutex::new(Vec::new()),
            handshake_done: AtomicBool::new(false),
            watchdog: OnceLock::new(),
        })
    }

    /// Watches brief calls from now on (see [`crate::watchdog`]): one
    /// that runs long gets an idle runtime thread woken to serve the
    /// protocol meanwhile.
    pub(crate) fn watch_brief_calls(&self, runtime: tokio::runtime::Handle) {
        if self.watchdog.get().is_none()
            && let Some(watchdog) = Watchdog::start(runtime)
        {
            let _ = self.watchdog.set(watchdog);
        }
    }

    /// Cancels every call, running or waiting, and makes new ones return at
    /// once.
    pub(crate) fn shut_down(&self) {
        self.shutdown.cancel();
        for (_, cancel) in lock(&self.inline_cancels).iter() {
            cancel.cancel();
        }
    }

    /// The client cancelled request `id`: when it is a brief call running
    /// on a runtime thread, set its flag (other calls are told through
    /// their request's token).
    fn cancel_inline(&self, id: &RequestId) {
        for (running, cancel) in lock(&self.inline_cancels).iter() {
            if running == id {
                cancel.cancel();
            }
        }
    }

    /// A place for brief call `id` on the current runtime thread, when one
    /// is free: the runtime must have several threads, and at most all but
    /// one of them run brief calls at once, so one is always left for the
    /// protocol. None on a single-threaded runtime.
    pub(crate) fn enter_inline(
        self: &Arc<Self>,
        id: &RequestId,
        cancel: &CancelToken,
    ) -> Option<InlineCall> {
        let places = inline_places();
        let mut cancels = lock(&self.inline_cancels);
        if cancels.len() >= places {
            return None;
        }
        cancels.push((id.clone(), cancel.clone()));
        let call = InlineCall {
            flow: self.clone(),
            id: id.clone(),
        };
        if let Some(watchdog) = self.watchdog.get() {
            watchdog.arm();
        }
        drop(cancels);
        // Shut down before the flag was listed: it would be missed.
        if self.shutdown.is_cancelled() {
            cancel.cancel();
        }
        Some(call)
    }

    /// A place for brief call `id`, waiting (without a thread) for one to
    /// come free: brief calls are work for a processor, so more of them at
    /// once than there are places gains nothing and holds more memory.
    /// None at once when the runtime has no places at all (one thread, or
    /// a current-thread runtime): the call then needs a thread of its own.
    pub(crate) async fn wait_inline(
        self: &Arc<Self>,
        id: &RequestId,
        cancel: &CancelToken,
    ) -> Option<InlineCall> {
        if inline_places() == 0 {
            return None;
        }
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(call) = self.enter_inline(id, cancel) {
                return Some(call);
            }
            changed.await;
        }
    }

    /// The writer keeps up: responses waiting are under the cap.
    pub(crate) fn writer_keeps_up(&self) -> bool {
        self.queued_bytes.load(Ordering::Acquire) < self.limits.max_queued_bytes
    }

    fn may_read(&self) -> bool {
        self.writer_keeps_up()
            && self.pending.load(Ordering::Acquire) < self.limits.max_pending_requests
            && self.pending_bytes.load(Ordering::Acquire) < self.limits.max_pending_bytes
    }

    /// Waits until `ready` holds; re-checked on every counter change.
    pub(crate) async fn wait_until(&self, ready: impl Fn(&Self) -> bool) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if ready(self) {
                return;
            }
            changed.await;
        }
    }

    fn notify(&self) {
        self.changed.notify_waiters();
    }
}

/// Counts one request as unanswered for as long as it lives. It rides in
/// the request's extensions, which rmcp hands to the handler and drops with
/// it, so it is released however the request ends (answered, cancelled,
/// failed).
#[derive(Debug)]
struct PendingRequest {
    flow: Arc<Flow>,
    bytes: usize,
}

impl PendingRequest {
    fn new(flow: &Arc<Flow>, bytes: usize) -> Self {
        flow.pending.fetch_add(1, Ordering::AcqRel);
        flow.pending_bytes.fetch_add(bytes, Ordering::AcqRel);
        PendingRequest {
            flow: flow.clone(),
            bytes,
        }
    }
}

impl Drop for PendingRequest {
    fn drop(&mut self) {
        self.flow.pending.fetch_sub(1, Ordering::AcqRel);
        self.flow
            .pending_bytes
            .fetch_sub(self.bytes, Ordering::AcqRel);
        self.flow.notify();
    }
}

struct Outgoing {
    bytes: Vec<u8>,
    done: Option<oneshot::Sender<io::Result<()>>>,
}

/// A `tools/call` request with nothing but a name and arguments (an
/// object): no `_meta`, no task, no input responses, no request state, no
/// member of any other name, at any level a request has. Such a call needs
/// none of what rmcp does for a request, so the transport may answer it
/// itself; reading just this is also a fraction of reading any message.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainCall<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: PlainParams<'a>,
}

/// The params of a [`PlainCall`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Option<serde_json::Map<String, Value>>,
}

/// The output stream; whoever holds the lock writes whole messages.
type Stdout = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// What reading one line gave.
enum Frame {
    /// A whole line is in the buffer (without its newline).
    Line,
    /// A line longer than the frame limit went by; its start is in the buffer.
    Oversized,
    Eof,
}

/// The server side of the stdio transport.
pub(crate) struct FramedStdio<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    discarding: bool,
    out: Option<mpsc::UnboundedSender<Outgoing>>,
    /// The output, which the writer task and brief calls share.
    stdout: Stdout,
    writer: Option<tokio::task::JoinHandle<()>>,
    flow: Arc<Flow>,
    calls: Arc<dyn DirectCalls>,
}

/// What the transport asks of the tool set directly, without rmcp.
pub(crate) trait DirectCalls: Send + Sync + 'static {
    /// A call the transport could not hand over, rendered as the tool set
    /// renders its failures.
    fn reject(&self, error: ToolError) -> CallOutcome;
    /// Whether a call of `name` with `args` is brief (see
    /// [`crate::ToolSet::is_brief`]).
    fn is_brief(&self, name: &str, args: &serde_json::Map<String, Value>) -> bool;
    /// Runs a brief call.
    fn call(&self, name: &str, args: Value, cancel: CancelToken) -> CallOutcome;
}

impl<R: AsyncRead + Send + Unpin + 'static> FramedStdio<R> {
    pub(crate) fn new<W: AsyncWrite + Send + Unpin + 'static>(
        read: R,
        write: W,
        flow: Arc<Flow>,
        calls: Arc<dyn DirectCalls>,
    ) -> Self {
        let (out, queue) = mpsc::unbounded_channel();
        let stdout: Stdout = Arc::new(tokio::sync::Mutex::new(Box::new(write)));
        let writer = tokio::spawn(write_loop(stdout.clone(), queue, flow.clone()));
        FramedStdio {
            stdout,
            reader: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            discarding: false,
            out: Some(out),
            writer: Some(writer),
            flow,
            calls,
        }
    }

    /// Reads one line into `self.line`, never holding more than the frame
    /// limit. Cancel-safe: partial progress stays in `self`.
    async fn next_frame(&mut self) -> io::Result<Frame> {
        let limit = self.flow.limits.frame_bytes;
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                if self.discarding {
                    self.discarding = false;
                    return Ok(Frame::Oversized);
                }
                // A last line without its newline still counts.
                return Ok(if self.line.is_empty() {
                    Frame::Eof
                } else {
                    Frame::Line
                });
            }
            let newline = memchr_newline(available);
            let take = newline.map_or(available.len(), |i| i + 1);
            let body = newline.map_or(available.len(), |i| i);
            if !self.discarding {
                if self.line.len().saturating_add(body) > limit {
                    let keep = SCAN_PREFIX.saturating_sub(self.line.len()).min(body);
                    self.line.truncate(SCAN_PREFIX);
                    self.line.extend_from_slice(&available[..keep]);
                    self.discarding = true;
                } else {
                    self.line.extend_from_slice(&available[..body]);
                }
            }
            self.reader.consume(take);
            if newline.is_some() {
                return Ok(if std::mem::take(&mut self.discarding) {
                    Frame::Oversized
                } else {
                    Frame::Line
                });
            }
        }
    }

    fn enqueue(&self, bytes: Vec<u8>, done: Option<oneshot::Sender<io::Result<()>>>) {
        if let Some(out) = &self.out {
            enqueue(out, &self.flow, bytes, done);
        }
    }

    fn reply(&self, message: &Value) {
        let mut bytes = message.to_string().into_bytes();
        bytes.push(b'\n');
        self.enqueue(bytes, None);
    }

    fn reply_rpc_error(&self, id: Option<Value>, code: i64, message: &str) {
        self.reply(&json!({
            "jsonrpc": "2.0",
            "id": id.unwrap_or(Value::Null),
            "error": {"code": code, "message": message},
        }));
    }

    /// Answers a `tools/call` that never reached the tool set, as the tool
    /// set renders a failure.
    fn reply_tool_error(&self, id: Value, error: ToolError) {
        let message = match crate::to_call_tool_result(self.calls.reject(error)) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        self.reply(&message);
    }

    /// Handles one whole line: a message for rmcp, or an answer of our own.
    fn take_line(&mut self) -> Option<ClientJsonRpcMessage> {
        let line = std::mem::take(&mut self.line);
        let mut text = line.strip_suffix(b"\r").unwrap_or(&line);
        text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            self.recycle(line);
            return None;
        }
        if self.answer_brief(text) {
            self.recycle(line);
            return None;
        }
        let message = match serde_json::from_slice::<ClientJsonRpcMessage>(text) {
            Ok(JsonRpcMessage::Request(request)) => self.hand_over(request, text.len()),
            Ok(JsonRpcMessage::Notification(notification)) => {
                match &notification.notification {
                    ClientNotification::CancelledNotification(cancelled) => {
                        if let Some(id) = &cancelled.params.request_id {
                            self.flow.cancel_inline(id);
                        }
                    }
                    ClientNotification::InitializedNotification(_) => {
                        self.flow.handshake_done.store(true, Ordering::Release);
                    }
                    _ => {}
                }
                Some(JsonRpcMessage::Notification(notification))
            }
            Ok(other) => Some(other),
            Err(err) => {
                self.answer_unparsable(text, &err);
                None
            }
        };
        self.recycle(line);
        message
    }

    /// Answers a brief `tools/call` here, without rmcp: the call runs as a
    /// task of its own on this runtime thread (so the reader goes on
    /// reading, and sees a cancellation), and its response goes straight
    /// to the writer. rmcp would pass it through four tasks and two
    /// channels, each a chance to wake an idle thread, which is most of a
    /// small call's round trip on an idle machine. Only a plain call (see
    /// [`PlainCall`]) of a session opened with the `initialize` handshake
    /// comes this way, when a place for a brief call is free; false leaves
    /// the line to rmcp.
    fn answer_brief(&self, text: &[u8]) -> bool {
        // A line that is no plain call fails here and is read again, in
        // full, by rmcp's types: that reading decides what it is.
        let Ok(plain) = serde_json::from_slice::<PlainCall<'_>>(text) else {
            return false;
        };
        if plain.jsonrpc != "2.0" || plain.method != "tools/call" {
            return false;
        }
        let ready = self.flow.handshake_done.load(Ordering::Acquire)
            && self.calls.is_brief(
                &plain.params.name,
                plain
                    .params
                    .arguments
                    .as_ref()
                    .unwrap_or(&serde_json::Map::new()),
            )
            && self.flow.writer_keeps_up()
            && !self.flow.shutdown.is_cancelled();
        if !ready {
            return false;
        }
        let Some(out) = self.out.clone() else {
            return false;
        };
        let Ok(slot) = self.flow.call_slots.clone().try_acquire_owned() else {
            return false;
        };
        let cancel = CancelToken::new();
        let Some(inline) = self.flow.enter_inline(&plain.id, &cancel) else {
            return false;
        };
        let pending = PendingRequest::new(&self.flow, text.len());
        let calls = self.calls.clone();
        let flow = self.flow.clone();
        let stdout = self.stdout.clone();
        let PlainCall { id, params, .. } = plain;
        let name = params.name.into_owned();
        let args = params.arguments.map_or(Value::Null, Value::Object);
        tokio::spawn(async move {
            let outcome = calls.call(&name, args, cancel);
            drop(inline);
            drop(slot);
            let message = match crate::to_call_tool_result(outcome) {
                Ok(result) => {
                    let mut result = ServerResult::CallToolResult(result);
                    // The shape rmcp gives a result for a session opened
                    // with `initialize` (a protocol version before
                    // 2026-07-28), the only kind answered here.
                    result.strip_result_type_for_legacy_peer();
                    result.strip_non_object_output_for_legacy_peer();
                    ServerJsonRpcMessage::response(result, id)
                }
                Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
            };
            match serde_json::to_vec(&message) {
                Ok(mut bytes) => {
                    bytes.push(b'\n');
                    write_now(&stdout, &out, &flow, bytes).await;
                }
                Err(err) => tracing::error!(error = %err, "a response cannot be written"),
            }
            drop(pending);
        });
        true
    }

    /// A request for rmcp, counted as unanswered until rmcp drops it.
    fn hand_over(
        &self,
        mut request: JsonRpcRequest<ClientRequest>,
        bytes: usize,
    ) -> Option<ClientJsonRpcMessage> {
        if let ClientRequest::CustomRequest(custom) = &request.request
            && custom.method == "tools/call"
        {
            // rmcp takes a call whose arguments are not an object for an
            // unknown method; it is a bad argument.
            let got = custom
                .params
                .as_ref()
                .and_then(|p| p.get("arguments"))
                .map_or("something else", json_type_name);
            let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
            self.reply_tool_error(
                id,
                ToolError::invalid_input(format!("the arguments must be a JSON object, not {got}")),
            );
            return None;
        }
        let guard = PendingRequest::new(&self.flow, bytes);
        request.request.extensions_mut().insert(Arc::new(guard));
        Some(JsonRpcMessage::Request(request))
    }

    /// Keeps the line buffer for the next line unless it grew large.
    fn recycle(&mut self, mut line: Vec<u8>) {
        line.clear();
        if line.capacity() > 1024 * 1024 {
            line.shrink_to(64 * 1024);
        }
        self.line = line;
    }

    fn answer_unparsable(&self, text: &[u8], err: &serde_json::Error) {
        #[derive(Deserialize)]
        struct Shallow<'a> {
            #[serde(default, borrow)]
            id: Option<&'a RawValue>,
            #[serde(default, borrow)]
            method: Option<Cow<'a, str>>,
        }
        // The outer object usually still parses when what failed lies in
        // the params (depth, a huge number, a lone surrogate): the parser
        // skips an unread value without those checks.
        let (id, method) = match serde_json::from_slice::<Shallow<'_>>(text) {
            Ok(shallow) => (
                shallow.id.and_then(|raw| request_id(raw.get().as_bytes())),
                shallow.method.map(Cow::into_owned),
            ),
            Err(_) => scan_top_level(text),
        };
        let syntax = matches!(
            err.classify(),
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof
        );
        match (id, method.as_deref()) {
            (Some(id), Some("tools/call")) => self.reply_tool_error(
                id,
                ToolError::invalid_input(format!("the request cannot be read: {err}")),
            ),
            // A notification of a shape we do not know: nothing to answer.
            (None, Some(_)) if !syntax => {
                tracing::debug!(error = %err, "ignoring a malformed notification");
            }
            (id, _) if syntax => {
                self.reply_rpc_error(id, -32700, &format!("parse error: {err}"));
            }
            (id, _) => self.reply_rpc_error(id, -32600, &format!("invalid request: {err}")),
        }
    }

    fn answer_oversized(&mut self) {
        let limit = self.flow.limits.frame_bytes;
        let (id, method) = scan_top_level(&self.line);
        let line = std::mem::take(&mut self.line);
        match (id, method.as_deref()) {
            (Some(id), Some("tools/call")) => self.reply_tool_error(
                id,
                ToolError::new(
                    ErrorCode::TooLarge,
                    format!(
                        "the request is longer than the server's limit of {limit} bytes per message \
                         (6 × max_file_bytes + 1 MiB); send less at once"
                    ),
                ),
            ),
            (id, _) => self.reply_rpc_error(
                id,
                -32600,
                &format!("invalid request: longer than the limit of {limit} bytes per message"),
            ),
        }
        self.recycle(line);
    }
}

/// Queues one whole response for the writer, counted until written.
fn enqueue(
    out: &mpsc::UnboundedSender<Outgoing>,
    flow: &Flow,
    bytes: Vec<u8>,
    done: Option<oneshot::Sender<io::Result<()>>>,
) {
    let len = bytes.len();
    flow.queued_bytes.fetch_add(len, Ordering::AcqRel);
    if out.send(Outgoing { bytes, done }).is_err() {
        flow.queued_bytes.fetch_sub(len, Ordering::AcqRel);
    }
}

/// Writes a response at once when nothing else is being written or waits
/// to be, without waking the writer task (one thread less to wake on an
/// idle machine); queues it otherwise.
async fn write_now(
    stdout: &Stdout,
    out: &mpsc::UnboundedSender<Outgoing>,
    flow: &Flow,
    bytes: Vec<u8>,
) {
    let idle = flow.queued_bytes.load(Ordering::Acquire) == 0;
    let held = if idle { stdout.try_lock().ok() } else { None };
    let Some(mut write) = held else {
        enqueue(out, flow, bytes, None);
        return;
    };
    // Counted while written, so a client that stops reading stops the
    // reader as it does for queued responses.
    flow.queued_bytes.fetch_add(bytes.len(), Ordering::AcqRel);
    let result = write_message(&mut **write, &bytes).await;
    drop(write);
    flow.queued_bytes.fetch_sub(bytes.len(), Ordering::AcqRel);
    flow.notify();
    if result.is_err() {
        // Nobody reads any more: stop the work being done for them.
        flow.shut_down();
    }
}

async fn write_message(
    write: &mut (dyn AsyncWrite + Send + Unpin),
    bytes: &[u8],
) -> io::Result<()> {
    write.write_all(bytes).await?;
    write.flush().await
}

async fn write_loop(stdout: Stdout, mut queue: mpsc::UnboundedReceiver<Outgoing>, flow: Arc<Flow>) {
    let mut broken = false;
    while let Some(Outgoing { bytes, done }) = queue.recv().await {
        let result = if broken {
            Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "stdout is closed",
            ))
        } else {
            write_message(&mut **stdout.lock().await, &bytes).await
        };
        flow.queued_bytes.fetch_sub(bytes.len(), Ordering::AcqRel);
        flow.notify();
        if result.is_err() && !broken {
            // Nobody reads any more: stop the work being done for them.
            broken = true;
            flow.shut_down();
        }
        if let Some(done) = done {
            let _ = done.send(result);
        }
    }
}

impl<R: AsyncRead + Send + Unpin + 'static> Transport<RoleServer> for FramedStdio<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (done, written) = oneshot::channel();
        match serde_json::to_vec(&item) {
            Ok(mut bytes) => {
                bytes.push(b'\n');
                self.enqueue(bytes, Some(done));
            }
            Err(err) => {
                let _ = done.send(Err(io::Error::other(err)));
            }
        }
        async move {
            written.await.unwrap_or_else(|_| {
                Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the writer has stopped",
                ))
            })
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let flow = self.flow.clone();
            flow.wait_until(Flow::may_read).await;
            match self.next_frame().await {
                Ok(Frame::Line) => {
                    if let Some(message) = self.take_line() {
                        return Some(message);
                    }
                }
                Ok(Frame::Oversized) => self.answer_oversized(),
                Ok(Frame::Eof) => {
                    self.flow.shut_down();
                    return None;
                }
                Err(err) => {
                    tracing::error!(error = %err, "reading stdin failed");
                    self.flow.shut_down();
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.out.take());
        if let Some(writer) = self.writer.take() {
            // A client that stopped reading must not keep us from exiting.
            if tokio::time::timeout(CLOSE_WAIT, writer).await.is_err() {
                tracing::warn!("responses still unwritten at exit were dropped");
            }
        }
        Ok(())
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON-RPC id (an integer or a string) from its JSON text.
fn request_id(raw: &[u8]) -> Option<Value> {
    match serde_json::from_slice::<Value>(raw).ok()? {
        id @ (Value::String(_) | Value::Number(_)) => Some(id),
        _ => None,
    }
}

/// Finds `id` and `method` among the top-level members of what may be a
/// broken or cut-off JSON object. Hand-written because no parser reads on
/// past an error or a truncation; this one only tracks strings and nesting
/// and gives up at the first thing it does not expect.
fn scan_top_level(bytes: &[u8]) -> (Option<Value>, Option<String>) {
    let mut id = None;
    let mut method = None;
    let mut at = skip_ws(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return (id, method);
    }
    at += 1;
    loop {
        at = skip_ws(bytes, at);
        let Some(key_end) = string_end(bytes, at) else {
            break;
        };
        let key = &bytes[at..key_end];
        at = skip_ws(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            break;
        }
        at = skip_ws(bytes, at + 1);
        let Some(value_end) = value_end(bytes, at) else {
            break;
        };
        let value = &bytes[at..value_end];
        match key {
            b"\"id\"" => id = request_id(value),
            b"\"method\"" => method = serde_json::from_slice::<String>(value).ok(),
            _ => {}
        }
        at = skip_ws(bytes, value_end);
        if bytes.get(at) != Some(&b',') {
            break;
        }
        at += 1;
    }
    (id, method)
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The end (one past the closing quote) of the string starting at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The end of the value starting at `at`: a string, a nested object or
/// array (skipped by counting brackets outside strings), or a bare token.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let len = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                .unwrap_or(bytes.len() - at);
            Some(at + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime(workers: usize) -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .build()
            .unwrap()
    }

    #[test]
    fn brief_calls_leave_one_runtime_thread_free() {
        let flow = Flow::new(ServerLimits::default());
        let (one, two) = (RequestId::Number(1), RequestId::Number(2));
        let (a, b) = (CancelToken::new(), CancelToken::new());
        runtime(2).block_on(async {
            let first = flow.enter_inline(&one, &a);
            assert!(first.is_some(), "one of two threads may run a brief call");
            assert!(
                flow.enter_inline(&two, &b).is_none(),
                "the other stays free"
            );
            drop(first);
            assert!(flow.enter_inline(&two, &b).is_some(), "the place came back");
        });
        runtime(1).block_on(async {
            assert!(flow.enter_inline(&one, &a).is_none(), "one thread: never");
        });
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(async {
                assert!(
                    flow.enter_inline(&one, &a).is_none(),
                    "current thread: never"
                );
            });
        assert!(
            flow.enter_inline(&one, &a).is_none(),
            "outside a runtime: never"
        );
    }

    #[test]
    fn a_brief_call_is_cancelled_by_its_request_id_and_by_shutdown() {
        let flow = Flow::new(ServerLimits::default());
        let (one, two) = (RequestId::Number(1), RequestId::String("two".into()));
        let (a, b) = (CancelToken::new(), CancelToken::new());
        runtime(3).block_on(async {
            let _first = flow.enter_inline(&one, &a).unwrap();
            let second = flow.enter_inline(&two, &b).unwrap();
            flow.cancel_inline(&RequestId::Number(3));
            assert!(!a.is_cancelled() && !b.is_cancelled(), "another id");
            flow.cancel_inline(&one);
            assert!(a.is_cancelled() && !b.is_cancelled());
            drop(second);
            // Gone from the list: a late cancellation reaches nothing.
            flow.cancel_inline(&two);
            assert!(!b.is_cancelled());
            let c = CancelToken::new();
            let _third = flow.enter_inline(&two, &c).unwrap();
            flow.shut_down();
            assert!(c.is_cancelled(), "shutdown cancels running brief calls");
            // After shutdown, a brief call starts cancelled.
            drop(_third);
            let d = CancelToken::new();
            let _fourth = flow.enter_inline(&RequestId::Number(4), &d).unwrap();
            assert!(d.is_cancelled());
        });
    }

    #[test]
    fn scans_id_and_method_from_broken_or_cut_objects() {
        let (id, method) = scan_top_level(
            br#"{"jsonrpc":"2.0","params":{"id":9,"x":[{"]":1}]},"id":7,"method":"tools/call","params":{"arguments":{"content":"\"aaa"#,
        );
        assert_eq!(id, Some(json!(7)));
        assert_eq!(method.as_deref(), Some("tools/call"));
        let (id, method) = scan_top_level(br#" { "id" : "a\"b" , "method": 5 "#);
        assert_eq!(id, Some(json!("a\"b")));
        assert_eq!(method, None);
        assert_eq!(scan_top_level(b"not json"), (None, None));
        assert_eq!(scan_top_level(br#"[{"id":1}]"#), (None, None));
        assert_eq!(scan_top_level(br#"{"id":{"x":1}}"#), (None, None));
    }

    #[test]
    fn the_frame_fits_a_fully_escaped_file() {
        let limits = ServerLimits::for_max_file_bytes(16 * 1024 * 1024);
        assert_eq!(limits.frame_bytes, 6 * 16 * 1024 * 1024 + 1024 * 1024);
        assert_eq!(
            ServerLimits::for_max_file_bytes(u64::MAX).frame_bytes,
            usize::MAX
        );
    }
}
