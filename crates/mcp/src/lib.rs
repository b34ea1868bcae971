//! Serves a tool set over the Model Context Protocol on stdin/stdout.
//!
//! Anything that implements [`ToolSet`] can be served; [`agent_tools::AgentTools`]
//! does. Each `tools/call` runs as its own task, as blocking work the runtime
//! moves its other tasks away from, so calls proceed in parallel and a long
//! command never stalls the protocol. A tool's failure is
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
}

impl<T: ToolSet> Clone for McpServer<T> {
    fn clone(&self) -> Self {
        McpServer {
            tools: self.tools.clone(),
            listed: self.listed.clone(),
        }
    }
}

impl<T: ToolSet> McpServer<T> {
    /// Wraps a tool set. The tool list is computed once: the set is fixed.
    pub fn new(tools: T) -> Self {
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
        }
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
        let call = CallContext {
            cancel: CancelToken::new(),
        };
        // Forward the protocol's cancellation to the tool's flag.
        let watcher = {
            let cancel = call.cancel.clone();
            let ct = context.ct.clone();
            tokio::spawn(async move {
                ct.cancelled().await;
                cancel.cancel();
            })
        };
        let tools = self.tools.clone();
        let name = request.name.into_owned();
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let outcome = run_blocking(move || tools.call(&name, args, &call)).await;
        watcher.abort();
        let result = outcome.unwrap_or_else(|err| {
            tracing::error!(error = %err, "tool task failed");
            DispatchResult {
                is_error: true,
                text: agent_tools::ToolError::internal(err.to_string()).to_envelope(),
            }
        });
        Ok(to_call_tool_result(result).into())
    }
}

/// Runs a blocking tool call without stalling the protocol. On a
/// multi-threaded runtime the call runs in place and the runtime hands this
/// worker's other tasks to another thread, which saves the hand-off to the
/// blocking pool (about a third of a small call's round trip); on a
/// current-thread runtime, where that is not possible, it goes to the
/// blocking pool.
async fn run_blocking<F>(call: F) -> Result<DispatchResult, tokio::task::JoinError>
where
    F: FnOnce() -> DispatchResult + Send + 'static,
{
    match tokio::runtime::Handle::current().runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => Ok(tokio::task::block_in_place(call)),
        _ => tokio::task::spawn_blocking(call).await,
    }
}

/// Serves `tools` on stdin/stdout until the client closes the connection.
pub async fn serve_stdio<T: ToolSet>(tools: T) -> anyhow::Result<()> {
    let server = McpServer::new(tools);
    // Pipes (how MCP clients start servers) go through the non-blocking
    // reactor; anything else falls back to the blocking standard streams.
    let running = server.serve(rmcp::transport::stdio_pipes()).await?;
    running.waiting().await?;
    Ok(())
}
