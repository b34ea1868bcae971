//! The stdio transport: one loop from the client's lines to rmcp's model
//! types and back, with an answer for every request (also those that
//! cannot be parsed), and back-pressure on a client that sends faster
//! than calls finish or stops reading.
//!
//! rmcp's own line transport drops a line it cannot parse or that is too
//! long without a word, and reads on while responses pile up unwritten.
//! This one reads the lines itself (cut by [`crate::framing`]) and hands
//! rmcp only messages it parsed:
//!
//! * Reader. A task of its own reads stdin all the time. A line that may
//!   go on now (the session is open, nothing waits, rmcp may take more
//!   work) is read with rmcp's types at once. What frees work or asks
//!   nothing of it is acted on at once: `notifications/cancelled` removes
//!   a request still waiting here or is passed on ahead of everything, a
//!   `ping` and the client's responses are passed on ahead too, and end of
//!   input cancels every call. Everything else waits, as its raw line
//!   (a few bytes more than the line itself, no parsed tree), until rmcp
//!   may take more work: while [`ServerLimits::max_pending_requests`]
//!   requests are unanswered (or their lines pass `max_pending_bytes`), or
//!   [`ServerLimits::max_queued_bytes`] of responses wait to be written.
//!   Past [`ServerLimits::max_waiting_bytes`] of waiting lines a request
//!   is answered "server busy" at once, and a notification is dropped.
//! * Dispatcher. Every message read, at once or after waiting, is sorted
//!   in one place (`Link::dispatch`): a brief `tools/call` is run here on
//!   the runtime thread that read it, a call whose params rmcp's types
//!   refuse is answered here, everything else goes to rmcp.
//! * Writer. Every response, the ones made here and rmcp's alike, is
//!   shaped for its request's protocol version by [`crate::shape`] (the
//!   version the request's `_meta` names, else the one rmcp answered
//!   `initialize` with) before it is written.
//! * A line over [`ServerLimits::frame_bytes`] is skipped without being
//!   kept (only its first [`crate::framing::SCAN_PREFIX`] bytes are, to
//!   find its `id` and `method`). A `tools/call` is answered with a
//!   `too_large` tool result, anything else with JSON-RPC `-32600`. So is
//!   a line that holds more than [`ServerLimits::max_request_values`] JSON
//!   values, before any of it is parsed.
//! * A line that is not JSON (or nests deeper than the parser's limit, holds
//!   a number out of range or a lone surrogate) gets `-32700`; JSON that is
//!   not a JSON-RPC message gets `-32600`. Both carry the request's id, as
//!   its raw text, when it can be found. A `tools/call` among them gets an
//!   `invalid_input` tool result instead, as does one whose `arguments` is
//!   not an object. An `id` that is neither a string nor a number gets
//!   `-32600` with id `null`.
//! * The only waits on the reader itself: an answer it makes (a line too
//!   long, "server busy") waits until the client reads what was written
//!   before, so a client that neither reads nor stops sending cannot grow
//!   the server.
//! * End of input, or a write that fails, sets the shutdown token: every
//!   call is cancelled.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_tools::CancelToken;
use agent_tools::{CallOutcome, ErrorCode, ToolError};
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientNotification, ClientRequest, GetExtensions,
    GetMeta, JsonRpcMessage, JsonRpcRequest, ProtocolVersion, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::service::TxJsonRpcMessage;
use rmcp::transport::Transport;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::framing::{Frame, Head, IdMember, LineReader, scan_top_level, trim_line, within_values};
use crate::shape::shape_message;
use crate::stdio::{Input, Output};
use crate::watchdog::Watchdog;

/// JSON escaping makes a string at most this many times longer
/// (`\u0000` for one control byte).
const WORST_ESCAPE: u64 = 6;

/// Room for everything in a request besides one escaped file content.
const FRAME_SLACK: u64 = 1024 * 1024;

/// How long closing waits for queued responses to be written.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// What a waiting line costs besides its bytes (its entry in the queue and
/// the index by id), charged until it leaves the queue.
const WAITING_ENTRY_COST: usize = 96;

/// Messages passed on ahead of the waiting lines, at most; more wait in
/// line like any other (rmcp's loop takes them as fast as they come).
const URGENT_LIMIT: usize = 1024;

/// The JSON-RPC error code of "server busy" (one of the codes JSON-RPC
/// leaves to servers).
pub const SERVER_BUSY: i64 = -32000;

/// The bounds the server keeps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// The longest request line read, in bytes.
    pub frame_bytes: usize,
    /// Requests handed on but not yet answered, at most.
    pub max_pending_requests: usize,
    /// Their lines' bytes together, at most (one more line may pass it).
    pub max_pending_bytes: usize,
    /// Response bytes waiting to be written before handing on requests and
    /// starting calls pause.
    pub max_queued_bytes: usize,
    /// Tool calls running at once; more wait for a slot.
    pub max_concurrent_calls: usize,
    /// Lines read but not yet handed on, held as their raw bytes, at most
    /// (at least one frame, so a full-size line always fits an empty
    /// queue). Past it a request is answered "server busy".
    pub max_waiting_bytes: usize,
    /// JSON values (every scalar, array and object counts one) a request
    /// may hold: a line is refused before it is parsed into a tree, which
    /// for a line of small numbers costs about sixteen times its size.
    pub max_request_values: usize,
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
            max_waiting_bytes: frame_bytes.max(64 * 1024 * 1024),
            // Far more than any tool's arguments need (an edit list, a
            // list of paths); a tree of this many values is tens of MB.
            max_request_values: 256 * 1024,
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
    /// A request other than `ping` was handed to rmcp: whatever comes
    /// later did not open the session.
    opened: AtomicBool,
    /// The session was opened with `initialize` (its first request but
    /// pings); its requests need no metadata of their own.
    opened_with_initialize: AtomicBool,
    /// The protocol version rmcp answered the opening `initialize` with:
    /// the version of every request of the session that names none in its
    /// `_meta`. Taken from the response as it is written, so it is what
    /// the client was told, not what it asked for.
    negotiated: OnceLock<ProtocolVersion>,
    /// The requests handed to rmcp that name a version of their own in
    /// `_meta`, by id, until their response is written (or they are
    /// cancelled): their responses are shaped for that version.
    request_versions: Mutex<HashMap<RequestId, ProtocolVersion>>,
    /// A session opened with `initialize` got its answer and then
    /// `notifications/initialized`: the transport may answer brief calls
    /// itself.
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

/// The value behind a mutex, whole even if a holder panicked (every
/// change to what it guards is made whole before anything can panic).
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
            opened: AtomicBool::new(false),
            opened_with_initialize: AtomicBool::new(false),
            negotiated: OnceLock::new(),
            request_versions: Mutex::new(HashMap::new()),
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
        // The receiver hands out what is left and then ends.
        self.notify();
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

    /// rmcp may take another request: few enough are unanswered, and the
    /// writer keeps up.
    fn may_admit(&self) -> bool {
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

    /// The protocol version of the session's requests that name none: the
    /// one negotiated at `initialize`; before its answer, the newest with
    /// an `initialize`; in a session opened without it, the newest (such
    /// a session speaks 2026-07-28 or later, request by request).
    fn session_version(&self) -> ProtocolVersion {
        if let Some(version) = self.negotiated.get() {
            version.clone()
        } else if self.opened_with_initialize.load(Ordering::Acquire) {
            ProtocolVersion::LATEST_WITH_INITIALIZE
        } else {
            ProtocolVersion::LATEST
        }
    }

    /// The protocol version a request is answered in: the one its `_meta`
    /// names, else the session's.
    fn request_version(&self, named: Option<ProtocolVersion>) -> ProtocolVersion {
        named.unwrap_or_else(|| self.session_version())
    }

    /// Readies a message rmcp sends: notes the version an `initialize`
    /// answer negotiates, and shapes a response for its request's version.
    /// In a session opened without `initialize` rmcp's shape stands: each
    /// of its requests names its version, which rmcp reads.
    fn ready_to_send(&self, message: &mut ServerJsonRpcMessage) {
        let id = match message {
            JsonRpcMessage::Response(response) => {
                if let ServerResult::InitializeResult(opened) = &response.result
                    && self.opened_with_initialize.load(Ordering::Acquire)
                {
                    let _ = self.negotiated.set(opened.protocol_version.clone());
                }
                Some(&response.id)
            }
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => return,
        };
        let Some(negotiated) = self.negotiated.get() else {
            return;
        };
        let named = id.and_then(|id| lock(&self.request_versions).remove(id));
        shape_message(message, named.as_ref().unwrap_or(negotiated));
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

/// One message for the writer. Empty bytes write nothing: `done` then
/// says that everything queued before it was written.
struct Outgoing {
    bytes: Vec<u8>,
    done: Option<oneshot::Sender<io::Result<()>>>,
}

/// The output stream; whoever holds the lock writes whole messages.
type Stdout = Arc<tokio::sync::Mutex<Output>>;

/// A line waiting to be handed to rmcp (trimmed when it is parsed).
struct Waiting {
    line: Vec<u8>,
    id: Option<RequestId>,
}

/// A line at least this long is moved into the queue rather than copied:
/// a copy of a line near the frame limit would double what it costs.
const MOVE_LINES_FROM: usize = 64 * 1024;

/// What the reader has read and rmcp not yet taken.
#[derive(Default)]
struct Inbox {
    /// Passed on before anything waiting: cancellations, pings, the
    /// client's responses.
    urgent: VecDeque<ClientJsonRpcMessage>,
    /// A message read at once because nothing waited (see
    /// `Link::admit_now`), next in order after the urgent ones. One at
    /// most: while it is here, lines wait in the queue as raw bytes.
    ready: Option<ClientJsonRpcMessage>,
    /// Lines in the order read; a request cancelled while here leaves a
    /// hole (its bytes are given back at once, its entry when it leaves).
    waiting: VecDeque<Option<Waiting>>,
    /// How many entries left the front of `waiting`: the number of the
    /// entry at its front.
    left: u64,
    /// The entry numbers of waiting requests, by id.
    by_id: HashMap<RequestId, u64>,
    /// The bytes charged for `waiting`.
    waiting_bytes: usize,
    /// The input ended (or failed).
    ended: bool,
}

impl Inbox {
    fn push(&mut self, line: Vec<u8>, id: Option<RequestId>) {
        let number = self.left + self.waiting.len() as u64;
        if let Some(id) = &id {
            self.by_id.insert(id.clone(), number);
        }
        self.waiting_bytes += line.capacity() + WAITING_ENTRY_COST;
        self.waiting.push_back(Some(Waiting { line, id }));
    }

    fn pop(&mut self) -> Option<Waiting> {
        while let Some(entry) = self.waiting.pop_front() {
            let number = self.left;
            self.left += 1;
            self.waiting_bytes -= WAITING_ENTRY_COST;
            let Some(waiting) = entry else {
                continue;
            };
            self.waiting_bytes -= waiting.line.capacity();
            if let Some(id) = &waiting.id
                && self.by_id.get(id) == Some(&number)
            {
                self.by_id.remove(id);
            }
            return Some(waiting);
        }
        None
    }

    /// Takes request `id` out of the queue; false when it is not here.
    fn cancel(&mut self, id: &RequestId) -> bool {
        if matches!(&self.ready, Some(JsonRpcMessage::Request(request)) if request.id == *id) {
            // Its count of unanswered requests goes with it.
            self.ready = None;
            return true;
        }
        let Some(number) = self.by_id.remove(id) else {
            return false;
        };
        let at = usize::try_from(number - self.left).unwrap_or(usize::MAX);
        match self.waiting.get_mut(at).and_then(Option::take) {
            Some(waiting) => {
                self.waiting_bytes -= waiting.line.capacity();
                true
            }
            None => false,
        }
    }
}

/// What the reader task and the transport share.
struct Link {
    flow: Arc<Flow>,
    calls: Arc<dyn DirectCalls>,
    inbox: Mutex<Inbox>,
    out: mpsc::UnboundedSender<Outgoing>,
    /// The output, which the writer task and brief calls share.
    stdout: Stdout,
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

/// The server side of the stdio transport.
pub(crate) struct FramedStdio {
    link: Arc<Link>,
}

impl FramedStdio {
    /// Starts the reader and the writer on `read` and `write`.
    pub(crate) fn new(
        read: Input,
        write: Output,
        flow: Arc<Flow>,
        calls: Arc<dyn DirectCalls>,
    ) -> Self {
        let (out, queue) = mpsc::unbounded_channel();
        let stdout: Stdout = Arc::new(tokio::sync::Mutex::new(write));
        tokio::spawn(write_loop(stdout.clone(), queue, flow.clone()));
        let link = Arc::new(Link {
            flow,
            calls,
            inbox: Mutex::new(Inbox::default()),
            out,
            stdout,
        });
        let reader = LineReader::new(
            BufReader::with_capacity(64 * 1024, read),
            link.flow.limits.frame_bytes,
        );
        tokio::spawn(read_loop(reader, link.clone()));
        FramedStdio { link }
    }
}

/// Reads stdin until it ends, whatever rmcp is doing.
async fn read_loop(mut reader: LineReader<BufReader<Input>>, link: Arc<Link>) {
    loop {
        match reader.next_frame().await {
            Ok(Frame::Line) => link.on_line(&mut reader.split.line).await,
            Ok(Frame::Oversized) => link.answer_oversized(&reader.split.line).await,
            Ok(Frame::Eof) => break,
            Err(err) => {
                tracing::error!(error = %err, "reading stdin failed");
                break;
            }
        }
        reader.split.recycle();
    }
    lock(&link.inbox).ended = true;
    link.flow.shut_down();
}

impl Link {
    /// One whole line from the reader: read and sorted at once when it may
    /// go on now, acted on at once when it frees work or asks for none, or
    /// put in the queue (a long line is moved there, leaving `line` empty).
    async fn on_line(&self, line: &mut Vec<u8>) {
        let text = trim_line(line);
        if text.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        if !within_values(text, self.flow.limits.max_request_values) {
            // Refused unparsed, at once: it would only cost memory while
            // waiting.
            self.flow.wait_until(Flow::writer_keeps_up).await;
            self.answer_too_many_values(text);
            return;
        }
        if self.admit_now(text) {
            return;
        }
        let head = serde_json::from_slice::<Head<'_>>(text).ok();
        let id = head.as_ref().map_or(IdMember::Absent, |head| head.id);
        let method = head.as_ref().and_then(|head| head.method.as_deref());
        if self.jump_the_queue(text, method, id) {
            return;
        }
        let request_id = id
            .usable()
            .and_then(|raw| serde_json::from_str::<RequestId>(raw.get()).ok());
        let is_notification = method.is_some() && !id.present();
        let busy_id = id.usable().map(RawValue::to_owned);
        let limit = self.flow.limits.max_waiting_bytes;
        {
            let mut inbox = lock(&self.inbox);
            if inbox.waiting_bytes + line.capacity() + WAITING_ENTRY_COST <= limit
                || inbox.waiting.is_empty()
            {
                let kept = if line.len() >= MOVE_LINES_FROM {
                    std::mem::take(line)
                } else {
                    line.clone()
                };
                inbox.push(kept, request_id);
                drop(inbox);
                self.flow.notify();
                return;
            }
        }
        if is_notification {
            tracing::warn!("a notification was dropped: the server is busy with what came before");
            return;
        }
        // Stop reading until the client reads what was written before:
        // a client that neither reads nor stops sending is not answered
        // into memory without bound.
        self.flow.wait_until(Flow::writer_keeps_up).await;
        self.reply_rpc_error(
            busy_id.as_deref(),
            SERVER_BUSY,
            "server busy: too many requests wait to be served; send this one again later",
        );
    }

    /// Reads a line with rmcp's types at once and sorts it ([`Self::dispatch`])
    /// when it may go on now: the session is open (`initialize` answered,
    /// `notifications/initialized` come), nothing waits before it, and rmcp
    /// may take more work. Such a line is read once, and a brief call in
    /// it starts before the reader reads on. False leaves the line to the
    /// other ways.
    fn admit_now(&self, text: &[u8]) -> bool {
        if !self.flow.handshake_done.load(Ordering::Acquire)
            || !self.flow.may_admit()
            || self.flow.shutdown.is_cancelled()
        {
            return false;
        }
        {
            let inbox = lock(&self.inbox);
            if !inbox.waiting.is_empty() || inbox.ready.is_some() {
                return false;
            }
        }
        if let Some(message) = self.parse(text) {
            // Nothing waits, so this is the next message in order.
            lock(&self.inbox).ready = Some(message);
            self.flow.notify();
        }
        true
    }

    /// Acts at once on a line that frees work or asks for none:
    /// `notifications/cancelled` (a request still waiting here is taken
    /// out, anything else is passed on ahead), `ping` (passed on ahead
    /// while the client reads its answers) and the client's responses.
    fn jump_the_queue(&self, text: &[u8], method: Option<&str>, id: IdMember<'_>) -> bool {
        // Until the session is open nothing runs that could be freed, and
        // the opening request (`initialize`) must reach rmcp first.
        if !self.flow.opened.load(Ordering::Acquire) {
            return false;
        }
        let kind = match (method, id.present()) {
            (Some("notifications/cancelled"), false) => Urgent::Cancel,
            (Some("ping"), true) if self.flow.writer_keeps_up() => Urgent::Ping,
            (None, true) => Urgent::Response,
            _ => return false,
        };
        if lock(&self.inbox).urgent.len() >= URGENT_LIMIT {
            return false;
        }
        // Read whole by rmcp's types; anything they refuse waits in line
        // and is answered there.
        let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(text) else {
            return false;
        };
        let message = match (kind, message) {
            (Urgent::Cancel, JsonRpcMessage::Notification(notification)) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.cancelled(id);
                    // Never handed on: nobody else knows of it.
                    if lock(&self.inbox).cancel(id) {
                        return true;
                    }
                }
                JsonRpcMessage::Notification(notification)
            }
            (Urgent::Ping, JsonRpcMessage::Request(request)) => {
                match self.dispatch_request(request, text) {
                    Some(message) => message,
                    None => return true,
                }
            }
            (
                Urgent::Response,
                message @ (JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)),
            ) => message,
            _ => return false,
        };
        lock(&self.inbox).urgent.push_back(message);
        self.flow.notify();
        true
    }

    /// The next message for rmcp, if one may go now.
    fn next_message(&self) -> Next {
        let mut inbox = lock(&self.inbox);
        if let Some(message) = inbox.urgent.pop_front() {
            return Next::Message(message);
        }
        // Admitted when it was read.
        if let Some(message) = inbox.ready.take() {
            return Next::Message(message);
        }
        // After the end every call is cancelled, so what still waits is
        // answered at once; rmcp's bounds still hold while it is.
        let ended = inbox.ended || self.flow.shutdown.is_cancelled();
        if !self.flow.may_admit() {
            let drained = inbox.waiting.iter().all(Option::is_none);
            return if ended && drained {
                Next::Ended
            } else {
                Next::Wait
            };
        }
        let Some(waiting) = inbox.pop() else {
            return if ended { Next::Ended } else { Next::Wait };
        };
        drop(inbox);
        match self.parse(trim_line(&waiting.line)) {
            Some(message) => Next::Message(message),
            None => Next::Again,
        }
    }

    fn enqueue(&self, bytes: Vec<u8>, done: Option<oneshot::Sender<io::Result<()>>>) {
        enqueue(&self.out, &self.flow, bytes, done);
    }

    fn reply<T: Serialize>(&self, message: &T) {
        match serde_json::to_vec(message) {
            Ok(mut bytes) => {
                bytes.push(b'\n');
                self.enqueue(bytes, None);
            }
            Err(err) => tracing::error!(error = %err, "an answer cannot be written"),
        }
    }

    fn reply_rpc_error(&self, id: Option<&RawValue>, code: i64, message: &str) {
        self.reply(&Reply {
            jsonrpc: "2.0",
            id,
            result: None::<()>,
            error: Some(RpcError { code, message }),
        });
    }

    /// Answers a `tools/call` that never reached the tool set, as the tool
    /// set renders a failure and shaped as the session's other results.
    fn reply_tool_error(&self, id: &RawValue, error: ToolError, version: &ProtocolVersion) {
        match crate::to_call_tool_result(self.calls.reject(error)) {
            Ok(result) => {
                let mut result = ServerResult::CallToolResult(result);
                crate::shape::shape(&mut result, version);
                self.reply(&Reply {
                    jsonrpc: "2.0",
                    id: Some(id),
                    result: Some(result),
                    error: None::<()>,
                });
            }
            Err(mut error) => {
                crate::shape::shape_error(&mut error, version);
                self.reply(&Reply {
                    jsonrpc: "2.0",
                    id: Some(id),
                    result: None::<()>,
                    error: Some(error),
                });
            }
        }
    }

    /// Reads a line with rmcp's types and sorts it ([`Self::dispatch`]):
    /// a message for rmcp, or None when it was answered here.
    fn parse(&self, text: &[u8]) -> Option<ClientJsonRpcMessage> {
        if !within_values(text, self.flow.limits.max_request_values) {
            self.answer_too_many_values(text);
            return None;
        }
        let read = match crate::call_line::read_plain_call(text) {
            Some(message) => Ok(message),
            None => serde_json::from_slice::<ClientJsonRpcMessage>(text),
        };
        match read {
            Ok(message) => self.dispatch(message, text),
            Err(err) => {
                self.answer_unparsable(text, &err);
                None
            }
        }
    }

    /// The one place a message read from the client is sorted, whichever
    /// way its line came (at once, or after waiting in the queue): a brief
    /// call is run here, a call whose params rmcp cannot read is answered
    /// here, and everything else goes to rmcp (returned), a request
    /// counted as unanswered until rmcp drops it.
    fn dispatch(&self, message: ClientJsonRpcMessage, text: &[u8]) -> Option<ClientJsonRpcMessage> {
        match message {
            JsonRpcMessage::Request(request) => self.dispatch_request(request, text),
            JsonRpcMessage::Notification(notification) => {
                match &notification.notification {
                    ClientNotification::CancelledNotification(cancelled) => {
                        if let Some(id) = &cancelled.params.request_id {
                            self.cancelled(id);
                        }
                    }
                    ClientNotification::InitializedNotification(_) => {
                        // Only after the answer to `initialize` went out:
                        // the version of the session is known from then on.
                        let opened = self.flow.negotiated.get().is_some()
                            && self.flow.opened_with_initialize.load(Ordering::Acquire);
                        self.flow.handshake_done.store(opened, Ordering::Release);
                    }
                    _ => {}
                }
                Some(JsonRpcMessage::Notification(notification))
            }
            other => Some(other),
        }
    }

    /// The client cancelled request `id`: a brief call running here is
    /// told, and its response needs no version of its own any more.
    fn cancelled(&self, id: &RequestId) {
        self.flow.cancel_inline(id);
        lock(&self.flow.request_versions).remove(id);
    }

    /// Sorts a request (see [`Self::dispatch`]).
    fn dispatch_request(
        &self,
        mut request: JsonRpcRequest<ClientRequest>,
        text: &[u8],
    ) -> Option<ClientJsonRpcMessage> {
        if !matches!(request.request, ClientRequest::PingRequest(_))
            && !self.flow.opened.swap(true, Ordering::AcqRel)
            && matches!(request.request, ClientRequest::InitializeRequest(_))
        {
            self.flow
                .opened_with_initialize
                .store(true, Ordering::Release);
        }
        let named = request.request.get_meta().protocol_version();
        match &mut request.request {
            ClientRequest::CustomRequest(custom) if custom.method == "tools/call" => {
                // rmcp takes a call whose params it cannot read for an
                // unknown method; say what is wrong with them.
                let problem = unreadable_call(text, custom.params.as_ref());
                let version = self.flow.request_version(named);
                match serde_json::value::to_raw_value(&request.id) {
                    Ok(id) => {
                        self.reply_tool_error(&id, ToolError::invalid_input(problem), &version)
                    }
                    Err(err) => tracing::error!(error = %err, "a request id cannot be written"),
                }
                return None;
            }
            _ => {}
        }
        if named.is_none()
            && let ClientRequest::CallToolRequest(call) = &mut request.request
            && self.answer_brief(&request.id, &mut call.params, text.len())
        {
            return None;
        }
        if let Some(version) = named
            && self.flow.opened_with_initialize.load(Ordering::Acquire)
        {
            lock(&self.flow.request_versions).insert(request.id.clone(), version);
        }
        let guard = PendingRequest::new(&self.flow, text.len());
        request.request.extensions_mut().insert(Arc::new(guard));
        Some(JsonRpcMessage::Request(request))
    }

    /// Runs a brief call here, without rmcp: as a task of its own on this
    /// runtime thread (so the reader goes on reading, and sees a
    /// cancellation), its response going straight to the writer. rmcp
    /// would pass it through four tasks and two channels, each a chance to
    /// wake an idle thread, which is most of a small call's round trip on
    /// an idle machine. Only in a session whose version is settled (see
    /// [`Flow::handshake_done`]), for a request naming no version of its
    /// own (rmcp checks those), when a call slot and a place for a brief
    /// call are free; false leaves the call to rmcp. The answer is rmcp's
    /// to the byte: the same tool set call, the same result types, shaped
    /// by the same [`shape_message`] for the same version.
    fn answer_brief(
        &self,
        id: &RequestId,
        params: &mut CallToolRequestParams,
        bytes: usize,
    ) -> bool {
        if !self.flow.handshake_done.load(Ordering::Acquire)
            || self.flow.shutdown.is_cancelled()
            || !self.calls.is_brief(
                &params.name,
                params.arguments.as_ref().unwrap_or(&serde_json::Map::new()),
            )
        {
            return false;
        }
        let Ok(slot) = self.flow.call_slots.clone().try_acquire_owned() else {
            return false;
        };
        let cancel = CancelToken::new();
        let Some(inline) = self.flow.enter_inline(id, &cancel) else {
            return false;
        };
        let pending = PendingRequest::new(&self.flow, bytes);
        let calls = self.calls.clone();
        let flow = self.flow.clone();
        let stdout = self.stdout.clone();
        let out = self.out.clone();
        let id = id.clone();
        let name = std::mem::take(&mut params.name).into_owned();
        let args = params.arguments.take().map_or(Value::Null, Value::Object);
        let version = self.flow.session_version();
        tokio::spawn(async move {
            let outcome = calls.call(&name, args, cancel);
            drop(inline);
            drop(slot);
            let mut message = match crate::to_call_tool_result(outcome) {
                Ok(result) => {
                    ServerJsonRpcMessage::response(ServerResult::CallToolResult(result), id)
                }
                Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
            };
            shape_message(&mut message, &version);
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

    fn answer_unparsable(&self, text: &[u8], err: &serde_json::Error) {
        // The outer object usually still parses when what failed lies in
        // the params (depth, a huge number, a lone surrogate): the parser
        // skips an unread value without those checks.
        let (id, method) = match serde_json::from_slice::<Head<'_>>(text) {
            Ok(head) => (head.id, head.method),
            Err(_) => scan_top_level(text),
        };
        let syntax = matches!(
            err.classify(),
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof
        );
        match (id, id.usable(), method.as_deref()) {
            (_, Some(id), Some("tools/call")) => self.reply_tool_error(
                id,
                ToolError::invalid_input(format!("the request cannot be read: {err}")),
                &self.flow.session_version(),
            ),
            // A notification of a shape we do not know: nothing to answer.
            (IdMember::Absent, _, Some(_)) if !syntax => {
                tracing::debug!(error = %err, "ignoring a malformed notification");
            }
            (_, id, _) if syntax => {
                self.reply_rpc_error(id, -32700, &format!("parse error: {err}"));
            }
            // An id of a type JSON-RPC does not allow cannot be echoed.
            (IdMember::Present(_), None, _) => self.reply_rpc_error(
                None,
                -32600,
                "invalid request: the id must be a string or a number",
            ),
            (_, id, _) => self.reply_rpc_error(id, -32600, &format!("invalid request: {err}")),
        }
    }

    /// Answers a line the server will not read: over the frame limit, or
    /// holding too many values. Its id and method are found by a scan.
    fn refuse(&self, scanned: &[u8], code: ErrorCode, tool_message: String, rpc_message: &str) {
        let (id, method) = scan_top_level(scanned);
        match (id.usable(), method.as_deref()) {
            (Some(id), Some("tools/call")) => self.reply_tool_error(
                id,
                ToolError::new(code, tool_message),
                &self.flow.session_version(),
            ),
            (id, _) => self.reply_rpc_error(id, -32600, rpc_message),
        }
    }

    async fn answer_oversized(&self, start: &[u8]) {
        // Like "server busy": an answer made while reading waits for the
        // client to read what came before.
        self.flow.wait_until(Flow::writer_keeps_up).await;
        let limit = self.flow.limits.frame_bytes;
        self.refuse(
            start,
            ErrorCode::TooLarge,
            format!(
                "the request is longer than the server's limit of {limit} bytes per message \
                 (6 × max_file_bytes + 1 MiB); send less at once"
            ),
            &format!("invalid request: longer than the limit of {limit} bytes per message"),
        );
    }

    fn answer_too_many_values(&self, text: &[u8]) {
        let limit = self.flow.limits.max_request_values;
        self.refuse(
            text,
            ErrorCode::InvalidInput,
            format!(
                "the request holds more than {limit} JSON values; \
                 no tool takes that many, send less at once"
            ),
            &format!("invalid request: more than {limit} JSON values"),
        );
    }
}

/// What a line rmcp read as an unknown request (a `tools/call` whose
/// params its types refuse) has wrong; `params` as rmcp kept them, `text`
/// the line (which still has what a parsed map lost: a duplicate member).
fn unreadable_call(text: &[u8], params: Option<&Value>) -> String {
    #[derive(Deserialize)]
    struct CallShape {
        #[allow(dead_code)] // read only for its error
        params: CallToolRequestParams,
    }
    let Some(params) = params else {
        return "the call has no params: give the tool's name and arguments".into();
    };
    let Value::Object(members) = params else {
        return format!(
            "the call's params must be a JSON object, not {}",
            json_type_name(params)
        );
    };
    if let Some(arguments) = members.get("arguments")
        && !matches!(arguments, Value::Object(_) | Value::Null)
    {
        return format!(
            "the arguments must be a JSON object, not {}",
            json_type_name(arguments)
        );
    }
    match serde_json::from_slice::<CallShape>(text) {
        Err(err) => format!("the call's params cannot be read: {err}"),
        Ok(_) => "the call's params cannot be read".into(),
    }
}

/// Which lane a line jumps to.
#[derive(Clone, Copy)]
enum Urgent {
    Cancel,
    Ping,
    Response,
}

/// What the transport has for rmcp now.
// Made and taken apart at once, once per message: boxing the message
// would cost an allocation each time and save nothing.
#[allow(clippy::large_enum_variant)]
enum Next {
    Message(ClientJsonRpcMessage),
    /// A line was answered here; look again.
    Again,
    Wait,
    Ended,
}

/// An answer the transport makes itself, with the id as the request
/// wrote it.
#[derive(Serialize)]
struct Reply<'a, R, E> {
    jsonrpc: &'static str,
    id: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<R>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<E>,
}

#[derive(Serialize)]
struct RpcError<'a> {
    code: i64,
    message: &'a str,
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
        } else if bytes.is_empty() {
            Ok(())
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

impl Transport<RoleServer> for FramedStdio {
    type Error = io::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.link.flow.ready_to_send(&mut item);
        let (done, written) = oneshot::channel();
        match serde_json::to_vec(&item) {
            Ok(mut bytes) => {
                bytes.push(b'\n');
                self.link.enqueue(bytes, Some(done));
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

    /// Cancel-safe: it only waits for a change, and takes a message
    /// without waiting.
    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let changed = self.link.flow.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.link.next_message() {
                Next::Message(message) => return Some(message),
                // A flood of lines answered here must not hold this
                // thread: give way now and then.
                Next::Again => tokio::task::consume_budget().await,
                Next::Ended => return None,
                Next::Wait => changed.await,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Everything queued before this is written, or the client that
        // stopped reading is given up on.
        let (done, written) = oneshot::channel();
        self.link.enqueue(Vec::new(), Some(done));
        if tokio::time::timeout(CLOSE_WAIT, written).await.is_err() {
            tracing::warn!("responses still unwritten at exit were dropped");
        }
        Ok(())
    }
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

impl fmt::Debug for FramedStdio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FramedStdio").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn a_cancelled_request_leaves_the_queue_and_gives_back_its_bytes() {
        let mut inbox = Inbox::default();
        inbox.push(b"one".to_vec(), Some(RequestId::Number(1)));
        inbox.push(b"two".to_vec(), Some(RequestId::Number(2)));
        inbox.push(b"note".to_vec(), None);
        assert!(inbox.cancel(&RequestId::Number(2)));
        assert!(!inbox.cancel(&RequestId::Number(2)), "only once");
        assert!(!inbox.cancel(&RequestId::Number(9)));
        // The hole still costs its entry, not its line.
        assert_eq!(inbox.waiting_bytes, 3 + 4 + 3 * WAITING_ENTRY_COST);
        assert_eq!(&*inbox.pop().unwrap().line, b"one");
        assert!(!inbox.cancel(&RequestId::Number(1)), "already handed on");
        assert_eq!(&*inbox.pop().unwrap().line, b"note");
        assert!(inbox.pop().is_none());
        assert_eq!(inbox.waiting_bytes, 0);
        assert!(inbox.by_id.is_empty());
    }

    #[test]
    fn answers_carry_the_id_as_written() {
        let id: &RawValue = serde_json::from_str("99999999999999999999").unwrap();
        let text = serde_json::to_string(&Reply {
            jsonrpc: "2.0",
            id: Some(id),
            result: None::<()>,
            error: Some(RpcError {
                code: -32600,
                message: "x",
            }),
        })
        .unwrap();
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","id":99999999999999999999,"error":{"code":-32600,"message":"x"}}"#
        );
        let value: Value = serde_json::from_str(
            &serde_json::to_string(&Reply {
                jsonrpc: "2.0",
                id: None,
                result: Some(json!({})),
                error: None::<()>,
            })
            .unwrap(),
        )
        .unwrap();
        assert_eq!(value, json!({"jsonrpc": "2.0", "id": null, "result": {}}));
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
