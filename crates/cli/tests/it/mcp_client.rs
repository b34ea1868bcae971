//! The shared MCP client, started on this package's `agent-tools` binary:
//! the binary's path is only known while this test binary is compiled, so
//! the constructors that need it live here and the rest is the shared one.

use std::ops::{Deref, DerefMut};
use std::path::Path;

use agent_tools_test_support::mcp;
use serde_json::Value;

/// The binary under test.
fn program() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_agent-tools"))
}

/// [`mcp::McpClient`] on the `agent-tools` binary.
pub struct McpClient(mcp::McpClient);

impl McpClient {
    /// See [`mcp::McpClient::start_guarded`].
    pub fn start_guarded(root: &Path, extra: &[&str]) -> McpClient {
        McpClient(mcp::McpClient::start_guarded(program(), root, extra))
    }

    /// See [`mcp::McpClient::start`].
    pub fn start(root: &Path, extra: &[&str]) -> McpClient {
        McpClient(mcp::McpClient::start(program(), root, extra))
    }

    /// See [`mcp::McpClient::start_with`].
    pub fn start_with(
        args: &[String],
        capabilities: Value,
        roots: Option<Vec<String>>,
    ) -> McpClient {
        McpClient(mcp::McpClient::start_with(
            program(),
            args,
            capabilities,
            roots,
        ))
    }

    /// See [`mcp::McpClient::start_bare`].
    pub fn start_bare(args: &[String]) -> McpClient {
        McpClient(mcp::McpClient::start_bare(program(), args))
    }

    /// See [`mcp::McpClient::guarded`].
    pub fn guarded(self) -> McpClient {
        McpClient(self.0.guarded())
    }

    /// See [`mcp::McpClient::guarded_for`].
    pub fn guarded_for(self, limit: std::time::Duration) -> McpClient {
        McpClient(self.0.guarded_for(limit))
    }

    /// See [`mcp::McpClient::call_result`].
    pub fn call_result(response: &Value) -> (bool, String) {
        mcp::McpClient::call_result(response)
    }

    /// See [`mcp::McpClient::shutdown`].
    pub fn shutdown(self) -> std::process::ExitStatus {
        self.0.shutdown()
    }
}

impl From<mcp::McpClient> for McpClient {
    fn from(client: mcp::McpClient) -> McpClient {
        McpClient(client)
    }
}

impl Deref for McpClient {
    type Target = mcp::McpClient;

    fn deref(&self) -> &mcp::McpClient {
        &self.0
    }
}

impl DerefMut for McpClient {
    fn deref_mut(&mut self) -> &mut mcp::McpClient {
        &mut self.0
    }
}
