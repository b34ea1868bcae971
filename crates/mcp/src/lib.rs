//! Serves a tool set over the Model Context Protocol on stdin/stdout.
//!
//! Anything that implements [`ToolSet`] can be served; [`agent_tools::AgentTools`]
//! does. Each `tools/call` runs on a thread of its own, at most
//! [`ServerLimits::max_concurrent_calls`] at once, so calls proceed in
//! parallel and a long command never stalls the protocol. A tool's failure is
//! a normal result with `isError: true` whose text is the JSON error envelope,
//! never a JSON-RPC error, so the model always sees why. An unknown tool is
//! answered the same way, with `not_found`. When the client cancels a request
//! (`notifications/cancelled`), the call's [`CancelToken`] is set.
//!
//! ```no_run
//! use agent_tools::{AgentTools, Config};
//!
//! # async fn run() -> anyhow::Result<()> {
//! let tools = AgentTools::new(Config::builder(".").build()?)?;
//! agent_tools_mcp::serve_stdio(tools).await?;
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::sync::Arc;

use agent_tools::{AgentTools, CallContext, CancelToken, DispatchResult};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

mod transport;

pub use transport::ServerLimits;
use transport::{Flow, FramedStdio};

/// A tool as advertised to MCP clients.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: Cow<'static, str>,
    /// What it does, for the model.
    pub description: Cow<'static, str>,
    /// The JSON Schema of its arguments (an object schema).
    pub input_schema: Arc<Map<String, Value>>,
    /// True when the tool changes nothing.
    pub read_only: bool,
}

/// A set of tools the server can offer and call.
pub trait ToolSet: Send + Sync + 'static {
    /// The tools offered, in a stable order.
    fn tools(&self) -> Vec<ToolInfo>;
    /// Runs one call. Must not panic; unknown names are a `not_found` result.
    fn call(&self, name: &str, args: Value, call: &CallContext) -> DispatchResult;
}

impl ToolSet for AgentTools {
    fn tools(&self) -> Vec<ToolInfo> {
        self.list_tools()
            .into_iter()
            .map(|tool| ToolInfo {
                name: Cow::Borrowed(tool.name()),
                description: Cow::Borrowed(tool.description()),
                input_schema: tool.input_schema().clone(),
                read_only: !tool.mutating(),
            })
            .collect()
    }

    fn call(&self, name: &str, args: Value, call: &CallContext) -> DispatchResult {
        self.call_with(name, args, call)
    }
}

/// The MCP server for a tool set.
pub struct McpServer<T: ToolSet> {
    tools: Arc<T>,
    listed: Arc<Vec<Tool>>,
    flow: Arc<Flow>,
}

impl<T: ToolSet> Clone for McpServer<T> {
    fn clone(&self) -> Self {
        McpServer {
            tools: self.tools.clone(),
            listed: self.listed.clone(),
            flow: self.flow.clone(),
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
                Tool::new(info.name, info.description, info.input_schema).annotate(
                    ToolAnnotations::new()
                        .read_only(info.read_only)
                        .open_world(false),
                )
            })
            .collect();
        McpServer {
            tools: Arc::new(tools),
            listed: Arc::new(listed),
            flow: Flow::new(limits),
        }
    }

    /// Cancels every call, running or waiting, and makes new ones return at
    /// once: what end of input and a termination signal do.
    pub fn shut_down(&self) {
        self.flow.shutdown.cancel();
    }
}

/// What a dispatch result looks like on the wire: one text content, and
/// `isError` as the result says.
pub fn to_call_tool_result(result: DispatchResult) -> CallToolResult {
    let content = vec![ContentBlock::text(result.text)];
    if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

impl<T: ToolSet> ServerHandler for McpServer<T> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "agent-tools",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "File and shell tools confined to one workspace folder. Paths are relative to the \
                 workspace root (or absolute inside it). Failures come back as a JSON envelope \
                 {\"error\": code, \"message\": ...}; match on the code.",
            )
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
        let cancelled = {
            let request_ct = context.ct.clone();
            let shutdown = flow.shutdown.clone();
            async move {
                tokio::select! {
                    () = request_ct.cancelled() => {}
                    () = shutdown.cancelled() => {}
                }
            }
        };
        tokio::pin!(cancelled);
        // A call starts when a slot is free and the responses already made
        // are being read; until then it costs no thread.
        let slot = tokio::select! {
            biased;
            () = &mut cancelled => None,
            slot = async {
                flow.wait_until(Flow::writer_keeps_up).await;
                flow.call_slots.clone().acquire_owned().await.ok()
            } => slot,
        };
        let Some(slot) = slot else {
            return Ok(to_call_tool_result(DispatchResult {
                is_error: true,
                // Nobody is waiting for this answer: no error line in the log.
                text: agent_tools::ToolError::internal("call cancelled before it started")
                    .to_envelope_value()
                    .to_string(),
            })
            .into());
        };
        let call = CallContext {
            cancel: CancelToken::new(),
        };
        let cancel = call.cancel.clone();
        let tools = self.tools.clone();
        let name = request.name.into_owned();
        let args = request.arguments.map_or(Value::Null, Value::Object);
        // Each call runs on a thread of its own, not on the runtime's
        // blocking pool: a waiting command then never keeps the protocol
        // (a ping, a quick read) from being served, and the slot count
        // bounds the threads.
        let (done, result) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("tool-call".into())
            .spawn(move || {
                let result = tools.call(&name, args, &call);
                let _ = done.send(result);
                drop(slot);
            });
        let result = match spawned {
            Err(err) => DispatchResult {
                is_error: true,
                text: agent_tools::ToolError::internal(format!("cannot start a thread: {err}"))
                    .to_envelope(),
            },
            Ok(_) => {
                tokio::pin!(result);
                tokio::select! {
                    biased;
                    outcome = &mut result => outcome,
                    () = &mut cancelled => {
                        cancel.cancel();
                        result.await
                    }
                }
                .unwrap_or_else(|_| DispatchResult {
                    is_error: true,
                    text: agent_tools::ToolError::internal("the tool call ended without a result")
                        .to_envelope(),
                })
            }
        };
        Ok(to_call_tool_result(result).into())
    }
}

/// Serves `tools` on stdin/stdout with the default [`ServerLimits`] until
/// the client closes the connection.
pub async fn serve_stdio<T: ToolSet>(tools: T) -> anyhow::Result<()> {
    serve_stdio_with(tools, ServerLimits::default(), std::future::pending()).await
}

/// Serves `tools` on stdin/stdout until the client closes the connection or
/// `stop` completes (a termination signal, say). Either way every call still
/// running is cancelled (its commands killed) before this returns.
pub async fn serve_stdio_with<T: ToolSet>(
    tools: T,
    limits: ServerLimits,
    stop: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let server = McpServer::with_limits(tools, limits);
    let flow = server.flow.clone();
    // Pipes (how MCP clients start servers) go through the non-blocking
    // reactor; anything else falls back to the blocking standard streams.
    let (read, write) = rmcp::transport::stdio_pipes();
    let transport = FramedStdio::new(read, write, flow.clone());
    let running = server.serve(transport).await?;
    let shutdown = flow.shutdown.clone();
    tokio::select! {
        quit = running.waiting() => {
            shutdown.cancel();
            quit?;
        }
        () = stop => {
            shutdown.cancel();
        }
    }
    Ok(())
}
