//! The server's integration tests, one binary: each module was once a test
//! binary of its own. They run the `agent-tools` binary through
//! [`mcp_client`], the shared MCP client bound to it.

mod cli;
mod filesystem_calls;
mod journal;
mod mcp_claude_code;
mod mcp_client;
mod mcp_codex;
mod mcp_filesystem;
mod mcp_filesystem_edit;
mod mcp_http;
mod mcp_jobs;
mod mcp_lsp;
mod mcp_mutating;
mod mcp_sandbox;
mod mcp_stdio;
mod structured;
mod surfaces;
