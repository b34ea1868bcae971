//! The stdio transport: newline-delimited JSON-RPC with bounded frames,
//! an answer for every request (also those that cannot be parsed), and
//! back-pressure on a client that sends faster than calls finish or stops
//! reading.
//!
//! rmcp's own line transport drops a line it cannot parse or that is too
//! long without a word, and reads on while responses pile up unwritten. This
//! one reads the lines itself and hands rmcp only messages it parsed:
//!
//! * A task of its own reads stdin all the time. What frees work or asks
//!   nothing of it is acted on at once: `notifications/cancelled` removes a
//!   request still waiting here or is passed on ahead of everything, a
//!   `ping` and the client's responses are passed on ahead too, and end of
//!   input cancels every call. Everything else waits, as its raw line
//!   (a few bytes more than the line itself, no parsed tree), until rmcp
//!   may take more work: while [`ServerLimits::max_pending_requests`]
//!   requests are unanswered (or their lines pass `max_pending_bytes`), or
//!   [`ServerLimits::max_queued_bytes`] of responses wait to be written.
//!   Past [`ServerLimits::max_waiting_bytes`] of waiting lines a request
//!   is answered "server busy" at once, and a notification is dropped.
//! * A line over [`ServerLimits::frame_bytes`] is skipped without being
//!   kept (only its first [`SCAN_PREFIX`] bytes are, to find its `id` and
//!   `method`). A `tools/call` is answered with a `too_large` tool result,
//!   anything else with JSON-RPC `-32600`. So is a line that holds more
//!   than [`ServerLimits::max_request_values`] JSON values, before any of
//!   it is parsed.
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

use std::borrow::Cow;
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
    JsonRpcMessage, JsonRpcRequest, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::TxJsonRpcMessage;
use rmcp::transport::Transport;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::stdio::{Input, Output};
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
    /// pings). Such a session speaks a protocol version before 2026-07-28
    /// (that version has no `initialize`): its results carry no
    /// `resultType`, and its requests need no metadata of their own.
    opened_with_initialize: AtomicBool,
    /// A session opened with `initialize` got `notifications/initialized`:
    /// the transport may answer brief calls itself.
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

    /// Gives a result the transport makes itself the shape rmcp gives the
    /// session's results: a session opened with `initialize` speaks a
    /// version before 2026-07-28, which has no `resultType` and only
    /// object-shaped structured output.
    fn shape(&self, result: &mut ServerResult) {
        if self.opened_with_initialize.load(Ordering::Acquire) {
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
        }
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

/// A string member read without a copy when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// Sets a member once; a second time is an error, as it is for rmcp's
/// derived types.
fn set_once<T, E: de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(name));
    }
    *slot = Some(value);
    Ok(())
}

/// A `tools/call` request with nothing but a name and arguments (an
/// object): no `_meta`, no task, no input responses, no request state, no
/// member of any other name, at any level a request has. Such a call needs
/// none of what rmcp does for a request, so the transport may answer it
/// itself; reading just this is also a fraction of reading any message.
///
/// Read from JSON objects only, each member once: a derived type would
/// also read a struct from an array, which rmcp's path refuses, and the
/// fast lane must take nothing rmcp's path would not.
struct PlainCall<'a> {
    jsonrpc: Cow<'a, str>,
    id: RequestId,
    method: Cow<'a, str>,
    params: PlainParams<'a>,
}

/// The params of a [`PlainCall`].
struct PlainParams<'a> {
    name: Cow<'a, str>,
    arguments: Option<Map<String, Value>>,
}

impl<'de> Deserialize<'de> for PlainCall<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        const FIELDS: &[&str] = &["jsonrpc", "id", "method", "params"];
        struct CallVisitor;
        impl<'de> Visitor<'de> for CallVisitor {
            type Value = PlainCall<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC request object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut jsonrpc, mut id, mut method, mut params) = (None, None, None, None);
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    match &*key {
                        "jsonrpc" => {
                            set_once(&mut jsonrpc, map.next_value::<Text>()?.0, "jsonrpc")?
                        }
                        "id" => set_once(&mut id, map.next_value::<RequestId>()?, "id")?,
                        "method" => set_once(&mut method, map.next_value::<Text>()?.0, "method")?,
                        "params" => {
                            set_once(&mut params, map.next_value::<PlainParams>()?, "params")?
                        }
                        other => return Err(de::Error::unknown_field(other, FIELDS)),
                    }
                }
                Ok(PlainCall {
                    jsonrpc: jsonrpc.ok_or_else(|| de::Error::missing_field("jsonrpc"))?,
                    id: id.ok_or_else(|| de::Error::missing_field("id"))?,
                    method: method.ok_or_else(|| de::Error::missing_field("method"))?,
                    params: params.ok_or_else(|| de::Error::missing_field("params"))?,
                })
            }
        }
        deserializer.deserialize_map(CallVisitor)
    }
}

impl<'de> Deserialize<'de> for PlainParams<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        const FIELDS: &[&str] = &["name", "arguments"];
        struct ParamsVisitor;
        impl<'de> Visitor<'de> for ParamsVisitor {
            type Value = PlainParams<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the params of a tool call")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut name, mut arguments) = (None, None);
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    match &*key {
                        "name" => set_once(&mut name, map.next_value::<Text>()?.0, "name")?,
                        "arguments" => set_once(
                            &mut arguments,
                            map.next_value::<Option<Map<String, Value>>>()?,
                            "arguments",
                        )?,
                        other => return Err(de::Error::unknown_field(other, FIELDS)),
                    }
                }
                Ok(PlainParams {
                    name: name.ok_or_else(|| de::Error::missing_field("name"))?,
                    arguments: arguments.flatten(),
                })
            }
        }
        deserializer.deserialize_map(ParamsVisitor)
    }
}

/// The `id` member of a message as written: absent, or its raw JSON.
/// Unlike an `Option`, this tells `"id": null` from no `id` at all.
#[derive(Default, Clone, Copy)]
enum IdMember<'a> {
    #[default]
    Absent,
    Present(&'a RawValue),
}

impl<'de: 'a, 'a> Deserialize<'de> for IdMember<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(deserializer).map(IdMember::Present)
    }
}

impl<'a> IdMember<'a> {
    /// The id as an answer may carry it: a string or a number, kept as
    /// written (a number past 64 bits stays exact); None for an id of any
    /// other type, which JSON-RPC does not allow.
    fn usable(self) -> Option<&'a RawValue> {
        match self {
            IdMember::Present(raw) if usable_id(raw.get().as_bytes()) => Some(raw),
            _ => None,
        }
    }

    fn present(self) -> bool {
        matches!(self, IdMember::Present(_))
    }
}

/// Whether raw JSON is an id JSON-RPC allows: a string or a number.
fn usable_id(raw: &[u8]) -> bool {
    matches!(raw.first(), Some(b'"' | b'-' | b'0'..=b'9'))
}

/// The top-level members a line is sorted by before it is parsed whole.
/// The derived reader would also take an array, harmlessly: this only
/// picks a lane, and the line is parsed whole by rmcp's types after.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: IdMember<'a>,
}

/// The output stream; whoever holds the lock writes whole messages.
type Stdout = Arc<tokio::sync::Mutex<Output>>;

/// What reading one line gave.
enum Frame {
    /// A whole line is in the buffer (without its newline).
    Line,
    /// A line longer than the frame limit went by; its start is in the buffer.
    Oversized,
    Eof,
}

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
        let reader = LineReader {
            reader: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            discarding: false,
            limit: link.flow.limits.frame_bytes,
        };
        tokio::spawn(read_loop(reader, link.clone()));
        FramedStdio { link }
    }
}

/// Splits the input into lines, never holding more than the frame limit.
struct LineReader {
    reader: BufReader<Input>,
    line: Vec<u8>,
    discarding: bool,
    limit: usize,
}

impl LineReader {
    /// Reads one line into `self.line`.
    async fn next_frame(&mut self) -> io::Result<Frame> {
        let limit = self.limit;
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

    /// Empties the line buffer, keeping it for the next line unless it
    /// grew large.
    fn recycle(&mut self) {
        self.line.clear();
        if self.line.capacity() > 1024 * 1024 {
            self.line.shrink_to(64 * 1024);
        }
    }
}

/// Reads stdin until it ends, whatever rmcp is doing.
async fn read_loop(mut reader: LineReader, link: Arc<Link>) {
    loop {
        match reader.next_frame().await {
            Ok(Frame::Line) => link.on_line(&mut reader.line).await,
            Ok(Frame::Oversized) => link.answer_oversized(&reader.line).await,
            Ok(Frame::Eof) => break,
            Err(err) => {
                tracing::error!(error = %err, "reading stdin failed");
                break;
            }
        }
        reader.recycle();
    }
    lock(&link.inbox).ended = true;
    link.flow.shut_down();
}

/// The text of a line without a trailing `\r` and a leading byte order
/// mark.
fn trim_line(line: &[u8]) -> &[u8] {
    let text = line.strip_suffix(b"\r").unwrap_or(line);
    text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text)
}

/// An upper bound of the JSON values in `text`, however broken it is: one,
/// plus every `[`, `{` and `,` outside strings (each value but the first
/// follows one of them).
pub(crate) fn values_at_most(text: &[u8]) -> usize {
    let mut count = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in text {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b'[' | b'{' | b',' => count += 1,
                _ => {}
            }
        }
    }
    count
}

/// Whether `text` holds at most `limit` JSON values (a shorter line
/// cannot hold more, so it is not scanned).
fn within_values(text: &[u8], limit: usize) -> bool {
    text.len() < limit || values_at_most(text) <= limit
}

/// The first JSON-RPC message of `text`, when it is one and the fast lane
/// would take it: a plain `tools/call` (see [`PlainCall`]).
fn plain_call(text: &[u8]) -> Option<PlainCall<'_>> {
    let plain = serde_json::from_slice::<PlainCall<'_>>(text).ok()?;
    (plain.jsonrpc == "2.0" && plain.method == "tools/call").then_some(plain)
}

impl Link {
    /// One whole line from the reader: acted on at once, answered by the
    /// fast lane, or put in the queue (a long line is moved there, leaving
    /// `line` empty).
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
        if self.answer_brief(text) {
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
                    self.flow.cancel_inline(id);
                    // Never handed on: nobody else knows of it.
                    if lock(&self.inbox).cancel(id) {
                        return true;
                    }
                }
                JsonRpcMessage::Notification(notification)
            }
            (Urgent::Ping, JsonRpcMessage::Request(request)) => {
                match self.hand_over(request, text) {
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
    fn reply_tool_error(&self, id: &RawValue, error: ToolError) {
        match crate::to_call_tool_result(self.calls.reject(error)) {
            Ok(result) => {
                let mut result = ServerResult::CallToolResult(result);
                self.flow.shape(&mut result);
                self.reply(&Reply {
                    jsonrpc: "2.0",
                    id: Some(id),
                    result: Some(result),
                    error: None::<()>,
                });
            }
            Err(error) => self.reply(&Reply {
                jsonrpc: "2.0",
                id: Some(id),
                result: None::<()>,
                error: Some(error),
            }),
        }
    }

    /// Reads a waiting line with rmcp's types: a message for rmcp, or an
    /// answer of our own.
    fn parse(&self, text: &[u8]) -> Option<ClientJsonRpcMessage> {
        if !within_values(text, self.flow.limits.max_request_values) {
            self.answer_too_many_values(text);
            return None;
        }
        match serde_json::from_slice::<ClientJsonRpcMessage>(text) {
            Ok(JsonRpcMessage::Request(request)) => self.hand_over(request, text),
            Ok(JsonRpcMessage::Notification(notification)) => {
                match &notification.notification {
                    ClientNotification::CancelledNotification(cancelled) => {
                        if let Some(id) = &cancelled.params.request_id {
                            self.flow.cancel_inline(id);
                        }
                    }
                    ClientNotification::InitializedNotification(_) => {
                        let opened = self.flow.opened_with_initialize.load(Ordering::Acquire);
                        self.flow.handshake_done.store(opened, Ordering::Release);
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
        }
    }

    /// Answers a brief `tools/call` here, without rmcp: the call runs as a
    /// task of its own on this runtime thread (so the reader goes on
    /// reading, and sees a cancellation), and its response goes straight
    /// to the writer. rmcp would pass it through four tasks and two
    /// channels, each a chance to wake an idle thread, which is most of a
    /// small call's round trip on an idle machine. Only a plain call (see
    /// [`PlainCall`]) of a session opened with the `initialize` handshake
    /// comes this way, when nothing waits before it, rmcp may take more
    /// work and a place for a brief call is free; false leaves the line
    /// to the queue.
    fn answer_brief(&self, text: &[u8]) -> bool {
        if !self.flow.handshake_done.load(Ordering::Acquire) {
            return false;
        }
        // A line that is no plain call fails here and is read again, in
        // full, by rmcp's types: that reading decides what it is.
        let Some(plain) = plain_call(text) else {
            return false;
        };
        let ready = self.calls.is_brief(
            &plain.params.name,
            plain.params.arguments.as_ref().unwrap_or(&Map::new()),
        ) && self.flow.may_admit()
            && !self.flow.shutdown.is_cancelled()
            && lock(&self.inbox).waiting.is_empty();
        if !ready {
            return false;
        }
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
        let out = self.out.clone();
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
                    // Only a session opened with `initialize` comes here.
                    flow.shape(&mut result);
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

    /// A request for rmcp (read from `text`), counted as unanswered until
    /// rmcp drops it.
    fn hand_over(
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
        if let ClientRequest::CustomRequest(custom) = &request.request
            && custom.method == "tools/call"
        {
            // rmcp takes a call whose params it cannot read for an unknown
            // method; say what is wrong with them.
            let problem = unreadable_call(text, custom.params.as_ref());
            match serde_json::value::to_raw_value(&request.id) {
                Ok(id) => self.reply_tool_error(&id, ToolError::invalid_input(problem)),
                Err(err) => tracing::error!(error = %err, "a request id cannot be written"),
            }
            return None;
        }
        let guard = PendingRequest::new(&self.flow, text.len());
        request.request.extensions_mut().insert(Arc::new(guard));
        Some(JsonRpcMessage::Request(request))
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
            (Some(id), Some("tools/call")) => {
                self.reply_tool_error(id, ToolError::new(code, tool_message))
            }
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
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
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

/// Finds `id` and `method` among the top-level members of what may be a
/// broken or cut-off JSON object. Hand-written because no parser reads on
/// past an error or a truncation; this one only tracks strings and nesting
/// and gives up at the first thing it does not expect.
fn scan_top_level(bytes: &[u8]) -> (IdMember<'_>, Option<Cow<'_, str>>) {
    let mut id = IdMember::Absent;
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
            b"\"id\"" => {
                id = serde_json::from_slice::<&RawValue>(value)
                    .map_or(IdMember::Absent, IdMember::Present);
            }
            b"\"method\"" => {
                method = serde_json::from_slice::<Text<'_>>(value)
                    .ok()
                    .map(|text| text.0);
            }
            _ => {}
        }
        if matches!(id, IdMember::Present(_)) && method.is_some() {
            break;
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
                        // A closer with nothing open: not a value.
                        depth = depth.checked_sub(1)?;
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

/// For the fuzz target: reads `line` as the transport does, without a
/// server, and checks what must hold for any input. Panics when it does
/// not:
///
/// * the scanners (values, top-level members) take anything;
/// * the fast lane takes only what rmcp's path takes too, and reads it
///   the same: the same id, tool name and arguments, and no metadata.
#[doc(hidden)]
pub fn check_line(line: &[u8]) {
    let text = trim_line(line);
    let values = values_at_most(text);
    assert!(values <= text.len() + 1, "more values than bytes");
    let _ = scan_top_level(text);
    let _ = serde_json::from_slice::<Head<'_>>(text);
    let Some(plain) = plain_call(text) else {
        return;
    };
    let library = serde_json::from_slice::<ClientJsonRpcMessage>(text);
    let Ok(JsonRpcMessage::Request(request)) = library else {
        panic!("the fast lane took a line rmcp refuses: {library:?}");
    };
    assert_eq!(request.id, plain.id, "the ids differ");
    let ClientRequest::CallToolRequest(call) = request.request else {
        panic!(
            "rmcp reads the line as another request: {:?}",
            request.request
        );
    };
    assert_eq!(call.params.name, plain.params.name, "the names differ");
    assert_eq!(
        call.params.arguments, plain.params.arguments,
        "the arguments differ"
    );
    assert!(call.params.meta.is_none(), "rmcp found metadata");
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

    fn raw(member: IdMember<'_>) -> Option<&str> {
        match member {
            IdMember::Present(raw) => Some(raw.get()),
            IdMember::Absent => None,
        }
    }

    #[test]
    fn scans_id_and_method_from_broken_or_cut_objects() {
        let (id, method) = scan_top_level(
            br#"{"jsonrpc":"2.0","params":{"id":9,"x":[{"]":1}]},"id":7,"method":"tools/call","params":{"arguments":{"content":"\"aaa"#,
        );
        assert_eq!(raw(id), Some("7"));
        assert_eq!(method.as_deref(), Some("tools/call"));
        let (id, method) = scan_top_level(br#" { "id" : "a\"b" , "method": 5 "#);
        assert_eq!(raw(id), Some(r#""a\"b""#));
        assert_eq!(method, None);
        let (id, method) = scan_top_level(b"not json");
        assert!(raw(id).is_none() && method.is_none());
        assert!(raw(scan_top_level(br#"[{"id":1}]"#).0).is_none());
        // An object id is found, and is no id an answer may carry.
        let (id, _) = scan_top_level(br#"{"id":{"x":1}}"#);
        assert_eq!(raw(id), Some(r#"{"x":1}"#));
        assert!(id.usable().is_none());
        // A number past 64 bits is kept as written.
        let (id, _) = scan_top_level(br#"{"id":99999999999999999999,"method":"x"#);
        assert_eq!(id.usable().map(RawValue::get), Some("99999999999999999999"));
        // A stray closer ends the scan instead of underflowing.
        assert!(raw(scan_top_level(br#"{"a":]],"id":1}"#).0).is_none());
    }

    #[test]
    fn the_fast_lane_reads_objects_only_and_each_member_once() {
        let plain = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a"}}}"#;
        let call = plain_call(plain).expect("a plain call");
        assert_eq!(call.params.name, "read_file");
        check_line(plain);
        let refused: [&[u8]; 6] = [
            br#"["2.0",11,"tools/call",["read_file",{"path":"a.txt"}]]"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["read_file",{"path":"a"}]}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","name":"bash","arguments":{}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"read_file"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","_meta":{}}}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"read_file"}}"#,
        ];
        for line in refused {
            assert!(
                plain_call(line).is_none(),
                "{}",
                String::from_utf8_lossy(line)
            );
            check_line(line);
        }
    }

    /// What the fuzz target checks, on lines mutated from real requests:
    /// bytes flipped, dropped, doubled and cut (a fixed xorshift seed, so
    /// a failure repeats).
    #[test]
    fn mutated_requests_hold_what_the_fuzz_target_checks() {
        let seeds: [&[u8]; 4] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a","offset":2}}}"#,
            br#"{"jsonrpc":"2.0","id":"x"y","method":"tools/call","params":{"name":"read_file","arguments":null}}"#,
            br#"{"method":"tools/call","id":7,"params":{"arguments":{"k":[1,{"a":"]"}]},"name":"grep"},"jsonrpc":"2.0"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
        ];
        let alphabet = br#"{}[]",:\ 0123456789.eE+-nulltruefalse"#;
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..20_000 {
            let mut line = seeds[round % seeds.len()].to_vec();
            for _ in 0..=(next() % 3) {
                let last = line.len() - 1;
                let at = (next() as usize) % line.len();
                let byte = alphabet[(next() as usize) % alphabet.len()];
                match next() % 4 {
                    0 => line[at.min(last)] = byte,
                    1 => {
                        line.remove(at.min(last));
                    }
                    2 => line.insert(at, byte),
                    _ => line.truncate(at),
                }
                if line.is_empty() {
                    line.push(b'{');
                }
            }
            check_line(&line);
        }
    }

    #[test]
    fn values_are_counted_without_parsing() {
        assert_eq!(values_at_most(b"0"), 1);
        assert_eq!(values_at_most(b"[0,0,0]"), 4);
        assert_eq!(values_at_most(br#"{"a":"[,{,\"","b":[]}"#), 4);
        assert!(
            within_values(&[b' '; 100], 10),
            "short lines are not scanned"
        );
        let zeros = format!("[{}0]", "0,".repeat(100));
        assert!(!within_values(zeros.as_bytes(), 100));
        assert!(within_values(zeros.as_bytes(), 102));
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
