//! Serves a tool set over the Model Context Protocol on stdin/stdout.
//!
//! Anything that implements [`ToolSet`] can be served; [`agent_tools::AgentTools`]
//! does. Each `tools/call` runs on a thread of its own, at most
//! [`ServerLimits::max_concurrent_calls`] at once, so calls proceed in
//! parallel and a long command never stalls the protocol. A call's outcome is
//! mapped item by item ([`to_call_tool_response`]): text, image and audio
//! items as such, a binary blob as an embedded resource with its base64
//! bytes and MIME type, and a protocol error as a JSON-RPC error response.
//! On the default surface every failure is a result with `isError: true`
//! whose text is the JSON error envelope, so the model always sees why. When
//! the client cancels a request (`notifications/cancelled`), the call's
//! [`CancelToken`] is set. Each server (one connection) has one session of
//! the surface, shared by its calls.
//!
//! ```no_run
//! use agent_tools::Config;
//!
//! # async fn run() -> anyhow::Result<()> {
//! let tools = agent_tools_surface_default::open(Config::builder(".").build()?)?;
//! agent_tools_mcp::serve_stdio(tools).await?;
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::sync::Arc;

use agent_tools::{
    AgentTools, CallContext, CallOutcome, CancelToken, Cause, Content, Hints, ResourceBody,
    Session, Stage, ToolError,
};
use data_encoding::BASE64;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ResourceContents, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

mod call_line;
mod framing;
pub mod http;
mod roots;
pub mod shape;
mod stdio;
mod transport;
mod watchdog;

#[doc(hidden)]
pub use framing::{check_input, check_line};
use transport::{DirectCalls, Flow, FramedStdio};
pub use transport::{SERVER_BUSY, ServerLimits};

/// A tool as advertised to MCP clients.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: Cow<'static, str>,
    /// A short human-readable title.
    pub title: Cow<'static, str>,
    /// What it does, for the model.
    pub description: Cow<'static, str>,
    /// The JSON Schema of its arguments (an object schema).
    pub input_schema: Arc<Map<String, Value>>,
    /// Its annotations.
    pub hints: Hints,
    /// The JSON Schema of its structured output (an object schema), when
    /// its answers carry one (`structuredContent`).
    pub output_schema: Option<Arc<Map<String, Value>>>,
}

/// A set of tools the server can offer and call.
pub trait ToolSet: Send + Sync + 'static {
    /// The tools offered, in a stable order.
    fn tools(&self) -> Vec<ToolInfo>;
    /// Runs one call. Must not panic; unknown names are a failed outcome.
    fn call(&self, name: &str, args: Value, call: &CallContext) -> CallOutcome;
    /// What the server tells the client about the tools as a whole.
    fn instructions(&self) -> Cow<'static, str> {
        Cow::Borrowed("")
    }
    /// A new session, for one connection.
    fn new_session(&self) -> Session {
        Session::default()
    }
    /// Whether a call of `name` with `args` is brief: bounded small work
    /// on named files, nothing that waits (see `agent_tools::ToolDef::brief`
    /// and `brief_when`). The server may run such a call on the thread that
    /// received it. None is, by default.
    fn is_brief(&self, _name: &str, _args: &Map<String, Value>) -> bool {
        false
    }
    /// Whether the tool set takes its allowed directories from the client
    /// (MCP roots). No by default.
    fn wants_client_roots(&self) -> bool {
        false
    }
    /// Takes the directories the client announced as its roots.
    fn use_client_roots(&self, roots: &[std::path::PathBuf]) -> Result<(), String> {
        let _ = roots;
        Ok(())
    }
    /// A call the transport could not even hand over (its arguments are
    /// not an object, its request is too long or cannot be read), rendered
    /// as the tool set renders its own failures. By default, the JSON
    /// error envelope as text.
    fn reject(&self, error: ToolError, cancelled: bool) -> CallOutcome {
        let cause = if cancelled {
            Cause::Cancelled
        } else {
            Cause::Error(error.code())
        };
        CallOutcome::error_text(error.to_envelope_value().to_string(), cause)
    }
}

impl ToolSet for AgentTools {
    fn tools(&self) -> Vec<ToolInfo> {
        self.list_tools()
            .into_iter()
            .map(|tool| ToolInfo {
                name: Cow::Borrowed(tool.name()),
                title: Cow::Borrowed(tool.title()),
                description: Cow::Borrowed(tool.description()),
                input_schema: tool.input_schema().clone(),
                hints: tool.hints(),
                // Declared only when the answers carry the copy: a client
                // that sees a schema rejects an answer without it.
                output_schema: self
                    .config()
                    .structured_output()
                    .then(|| tool.output_schema().clone()),
            })
            .collect()
    }

    fn call(&self, name: &str, args: Value, call: &CallContext) -> CallOutcome {
        self.dispatch(name, args, call)
    }

    fn instructions(&self) -> Cow<'static, str> {
        Cow::Borrowed(AgentTools::instructions(self))
    }

    fn new_session(&self) -> Session {
        AgentTools::new_session(self)
    }

    fn is_brief(&self, name: &str, args: &Map<String, Value>) -> bool {
        AgentTools::is_brief(self, name, args)
    }

    fn reject(&self, error: ToolError, cancelled: bool) -> CallOutcome {
        self.render_failure("", Stage::Validation, error, cancelled)
    }

    fn wants_client_roots(&self) -> bool {
        AgentTools::wants_client_roots(self)
    }

    fn use_client_roots(&self, roots: &[std::path::PathBuf]) -> Result<(), String> {
        AgentTools::use_client_roots(self, roots).map_err(|err| err.to_string())
    }
}

/// The MCP server for a tool set.
pub struct McpServer<T: ToolSet> {
    tools: Arc<T>,
    listed: Arc<Vec<Tool>>,
    flow: Arc<Flow>,
    session: Session,
    roots: Arc<roots::Refresher>,
    /// Over HTTP: the sessions of requests outside an MCP session, one per
    /// principal. `None` on stdio, where the connection is the session.
    principals: Option<Arc<http::PrincipalSessions>>,
}

impl<T: ToolSet> Clone for McpServer<T> {
    fn clone(&self) -> Self {
        McpServer {
            tools: self.tools.clone(),
            listed: self.listed.clone(),
            flow: self.flow.clone(),
            session: self.session.clone(),
            roots: self.roots.clone(),
            principals: self.principals.clone(),
        }
    }
}

impl<T: ToolSet> McpServer<T> {
    /// Wraps a tool set with the default [`ServerLimits`].
    pub fn new(tools: T) -> Self {
        Self::with_limits(tools, ServerLimits::default())
    }

    /// Wraps a tool set. The tool list is computed once: the set is fixed.
    pub fn with_limits(tools: T, limits: ServerLimits) -> Self {
        let listed = tools
            .tools()
            .into_iter()
            .map(|info| {
                let hints = info.hints;
                let mut tool = Tool::new(info.name, info.description, info.input_schema);
                tool.output_schema = info.output_schema;
                tool.with_title(info.title.clone()).annotate(
                    ToolAnnotations::with_title(info.title)
                        .read_only(hints.read_only)
                        .destructive(hints.destructive)
                        .idempotent(hints.idempotent)
                        .open_world(hints.open_world),
                )
            })
            .collect();
        let session = tools.new_session();
        McpServer {
            tools: Arc::new(tools),
            listed: Arc::new(listed),
            flow: Flow::new(limits),
            session,
            roots: Arc::default(),
            principals: None,
        }
    }

    /// A server sharing everything with this one but the session of the
    /// surface: a new connection's.
    fn with_fresh_session(&self) -> Self {
        McpServer {
            session: self.tools.new_session(),
            ..self.clone()
        }
    }

    /// The session a request uses: its principal's when it came over HTTP
    /// outside an MCP session, the connection's otherwise.
    fn session_for(&self, context: &RequestContext<RoleServer>) -> Session {
        self.principals
            .as_ref()
            .and_then(|principals| principals.for_request(&*self.tools, context))
            .unwrap_or_else(|| self.session.clone())
    }

    /// Cancels every call, running or waiting, and makes new ones return at
    /// once: what end of input and a termination signal do.
    pub fn shut_down(&self) {
        self.flow.shut_down();
    }
}

/// A call's outcome on the wire: a `tools/call` result whose items map one
/// to one (text, image, audio; a resource embedded with its text or its
/// base64 blob and MIME type) with the structured copy the tool set made
/// (`structuredContent`, never on an error), or a JSON-RPC error response.
/// The one place an outcome takes its wire form: every transport and call
/// path (rmcp's handler, the stdio fast lane, HTTP) goes through it.
pub fn to_call_tool_response(outcome: CallOutcome) -> Result<CallToolResponse, ErrorData> {
    to_call_tool_result(outcome).map(Into::into)
}

/// [`to_call_tool_response`], with the result as its own type.
pub fn to_call_tool_result(outcome: CallOutcome) -> Result<CallToolResult, ErrorData> {
    match outcome {
        CallOutcome::Result(result) => {
            let content = result.content.into_iter().map(content_block).collect();
            Ok(if result.is_error {
                CallToolResult::error(content)
            } else {
                let mut success = CallToolResult::success(content);
                success.structured_content = result.structured;
                success
            })
        }
        CallOutcome::Protocol(error) => Err(ErrorData::new(
            rmcp::model::ErrorCode(error.code.clamp(i32::MIN.into(), i32::MAX.into()) as i32),
            error.message,
            None,
        )),
    }
}

fn content_block(item: Content) -> ContentBlock {
    match item {
        Content::Text(text) => ContentBlock::text(text),
        Content::Image { data, mime_type } => ContentBlock::image(BASE64.encode(&data), mime_type),
        Content::Audio { data, mime_type } => ContentBlock::audio(BASE64.encode(&data), mime_type),
        Content::Resource {
            uri,
            mime_type,
            body,
        } => {
            let contents = match body {
                ResourceBody::Text(text) => ResourceContents::text(text, uri),
                ResourceBody::Blob(bytes) => ResourceContents::blob(BASE64.encode(&bytes), uri),
            };
            ContentBlock::resource(match mime_type {
                Some(mime_type) => contents.with_mime_type(mime_type),
                None => contents,
            })
        }
    }
}

impl<T: ToolSet> ServerHandler for McpServer<T> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "agent-tools",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(self.tools.instructions())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        roots::refresh(self.tools.clone(), context.peer, self.roots.clone());
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        roots::refresh(self.tools.clone(), context.peer, self.roots.clone());
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items((*self.listed).clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let flow = self.flow.clone();
        // Boxed: awaited here first, then handed on with the call.
        let mut cancelled = Box::pin({
            let request_ct = context.ct.clone();
            let shutdown = flow.shutdown.clone();
            async move {
                tokio::select! {
                    () = request_ct.cancelled() => {}
                    () = shutdown.cancelled() => {}
                }
            }
        });
        let call = CallContext {
            cancel: CancelToken::new(),
            session: self.session_for(&context),
            principal: http::principal_of(&context),
        };
        let tools = self.tools.clone();
        let name = request.name.into_owned();
        let brief = self
            .tools
            .is_brief(&name, request.arguments.as_ref().unwrap_or(&Map::new()));
        let args = request.arguments.map_or(Value::Null, Value::Object);
        // A call starts when a slot is free and the responses already made
        // are being read; until then it costs no thread. A brief call runs
        // right here, on the runtime thread that took the request: no
        // thread to start and none to wake, which is most of a small call's
        // round trip on an idle machine. At most one runtime thread fewer
        // than there are run brief calls at once (one stays free to serve
        // the protocol: a ping, a cancellation, the writer); more wait their
        // turn. Every other call gets a thread of its own, so a long one
        // never holds a runtime thread.
        let started = tokio::select! {
            biased;
            () = &mut cancelled => None,
            started = async {
                flow.wait_until(Flow::writer_keeps_up).await;
                let slot = flow.call_slots.clone().acquire_owned().await.ok()?;
                let inline = if brief {
                    flow.wait_inline(&context.id, &call.cancel).await
                } else {
                    None
                };
                Some((slot, inline))
            } => started,
        };
        let Some((slot, inline)) = started else {
            // Nobody is waiting for this answer: no error line in the log.
            return to_call_tool_response(self.tools.reject(
                ToolError::internal("call cancelled before it started"),
                true,
            ));
        };
        let result = match inline {
            Some(inline) => {
                // Nothing polls `cancelled` meanwhile: the reader and
                // shutdown set the call's flag through `inline` instead.
                let result = tools.call(&name, args, &call);
                drop(inline);
                drop(slot);
                result
            }
            None => run_on_own_thread(&self.tools, tools, name, args, call, slot, cancelled).await,
        };
        to_call_tool_response(result)
    }
}

/// The tool set as the transport calls it, for the calls it answers
/// without rmcp.
struct Direct<T: ToolSet> {
    tools: Arc<T>,
    session: Session,
}

impl<T: ToolSet> DirectCalls for Direct<T> {
    fn reject(&self, error: ToolError) -> CallOutcome {
        self.tools.reject(error, false)
    }

    fn is_brief(&self, name: &str, args: &Map<String, Value>) -> bool {
        self.tools.is_brief(name, args)
    }

    fn call(&self, name: &str, args: Value, cancel: CancelToken) -> CallOutcome {
        let call = CallContext {
            cancel,
            session: self.session.clone(),
            // The fast lane serves stdio only: the local user.
            principal: None,
        };
        self.tools.call(name, args, &call)
    }
}

/// Runs a call on a thread of its own and waits for it, cancelling it when
/// `cancelled` completes first.
async fn run_on_own_thread<T: ToolSet>(
    own: &Arc<T>,
    tools: Arc<T>,
    name: String,
    args: Value,
    call: CallContext,
    slot: tokio::sync::OwnedSemaphorePermit,
    cancelled: impl std::future::Future<Output = ()>,
) -> CallOutcome {
    let cancel = call.cancel.clone();
    let (done, result) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("tool-call".into())
        .spawn(move || {
            let result = tools.call(&name, args, &call);
            let _ = done.send(result);
            drop(slot);
        });
    match spawned {
        Err(err) => own.reject(
            ToolError::internal(format!("cannot start a thread: {err}")),
            false,
        ),
        Ok(_) => {
            tokio::pin!(result);
            tokio::pin!(cancelled);
            tokio::select! {
                biased;
                outcome = &mut result => outcome,
                () = &mut cancelled => {
                    cancel.cancel();
                    result.await
                }
            }
            .unwrap_or_else(|_| {
                own.reject(
                    ToolError::internal("the tool call ended without a result"),
                    false,
                )
            })
        }
    }
}

/// Serves `tools` on stdin/stdout with the default [`ServerLimits`] until
/// the client closes the connection.
pub async fn serve_stdio<T: ToolSet>(tools: T) -> anyhow::Result<()> {
    serve_stdio_with(tools, ServerLimits::default(), std::future::pending()).await
}

/// How long the end waits for the answers already made to be written
/// (the calls were all cancelled): short, since the server must be gone
/// well within a tenth of a second of the signal or the end of input.
const END_GRACE: std::time::Duration = std::time::Duration::from_millis(50);

/// Serves `tools` on stdin/stdout until the client closes the connection or
/// `stop` completes (a termination signal, say). Either way every call still
/// running is cancelled (its commands killed) and this returns at once
/// (within `END_GRACE`), whatever stdin and stdout are and whatever the
/// calls do.
pub async fn serve_stdio_with<T: ToolSet>(
    tools: T,
    limits: ServerLimits,
    stop: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let server = McpServer::with_limits(tools, limits);
    let flow = server.flow.clone();
    flow.watch_brief_calls(tokio::runtime::Handle::current());
    let direct = Arc::new(Direct {
        tools: server.tools.clone(),
        session: server.session.clone(),
    });
    let transport = FramedStdio::new(stdio::stdin(), stdio::stdout(), flow.clone(), direct);
    let serving = async move {
        let running = server.serve(transport).await?;
        running.waiting().await?;
        anyhow::Ok(())
    };
    tokio::pin!(serving);
    // The end of input and a failed write end the session through the
    // shutdown token, without waiting for rmcp to notice.
    let ended = flow.shutdown.clone();
    tokio::select! {
        biased;
        served = &mut serving => {
            flow.shut_down();
            return served;
        }
        () = stop => {}
        () = ended.cancelled() => {}
    }
    flow.shut_down();
    if !flow.writer_keeps_up() {
        // The client is not reading: no answer would get through.
        return Ok(());
    }
    match tokio::time::timeout(END_GRACE, &mut serving).await {
        Ok(served) => served,
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_tools::{CallResult, ErrorCode, ProtocolError};
    use serde_json::json;

    #[test]
    fn every_content_item_maps_to_its_mcp_kind() {
        let outcome = CallOutcome::Result(CallResult {
            content: vec![
                Content::text("hello"),
                Content::Image {
                    data: b"png".to_vec(),
                    mime_type: "image/png".into(),
                },
                Content::Audio {
                    data: b"wav".to_vec(),
                    mime_type: "audio/wav".into(),
                },
                Content::blob("file:///a.bin", "application/octet-stream", vec![0, 255]),
                Content::Resource {
                    uri: "file:///a.txt".into(),
                    mime_type: None,
                    body: ResourceBody::Text("text".into()),
                },
            ],
            is_error: false,
            cause: None,
            structured: None,
        });
        let result = to_call_tool_result(outcome).unwrap();
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(
            wire["content"],
            json!([
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "cG5n", "mimeType": "image/png"},
                {"type": "audio", "data": "d2F2", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {
                    "uri": "file:///a.bin", "mimeType": "application/octet-stream", "blob": "AP8="
                }},
                // rmcp names text without a MIME type text/plain.
                {"type": "resource", "resource": {
                    "uri": "file:///a.txt", "mimeType": "text/plain", "text": "text"
                }},
            ])
        );
        assert_eq!(wire["isError"], json!(false));
    }

    #[test]
    fn the_structured_copy_goes_out_with_a_success_only() {
        let outcome = |is_error| {
            CallOutcome::Result(CallResult {
                content: vec![Content::text("hi")],
                is_error,
                cause: None,
                structured: Some(json!({"content": "hi"})),
            })
        };
        let wire = serde_json::to_value(to_call_tool_result(outcome(false)).unwrap()).unwrap();
        assert_eq!(wire["structuredContent"], json!({"content": "hi"}));
        assert_eq!(wire["content"], json!([{"type": "text", "text": "hi"}]));
        let wire = serde_json::to_value(to_call_tool_result(outcome(true)).unwrap()).unwrap();
        assert!(wire.get("structuredContent").is_none(), "{wire}");
    }

    #[test]
    fn an_error_result_and_a_protocol_error_keep_their_shapes() {
        let failed = CallOutcome::error_text("{}".into(), Cause::Error(ErrorCode::NotFound));
        let wire = serde_json::to_value(to_call_tool_result(failed).unwrap()).unwrap();
        assert_eq!(wire["isError"], json!(true));
        assert_eq!(wire["content"], json!([{"type": "text", "text": "{}"}]));

        let protocol = CallOutcome::Protocol(ProtocolError {
            code: -32001,
            message: "path not allowed".into(),
            cause: Some(Cause::Error(ErrorCode::PathEscape)),
        });
        let error = to_call_tool_result(protocol).unwrap_err();
        assert_eq!(error.code.0, -32001);
        assert_eq!(error.message, "path not allowed");
    }
}
