//! File and shell tools for AI coding agents, behind one small facade.
//!
//! [`AgentTools`] is built once from a [`Config`] (the workspace root and
//! limits). It offers a set of tools ([`AgentTools::list_tools`]) and runs
//! calls to them ([`AgentTools::call`]) through one pipeline:
//!
//! 1. look the tool up in the offered set (hidden or unknown: `not_found`);
//! 2. validate the arguments against the tool's JSON Schema, defaults filled;
//! 3. run the handler (paths confined to the root; a panic becomes `internal`);
//! 4. cut the output to `max_output_bytes` on a character boundary;
//! 5. return a [`DispatchResult`]: the text, or a JSON error envelope.
//!
//! There is no agent loop and no transport here: the `agent-tools-mcp` crate
//! serves this over MCP, and an agent can call it directly.
//!
//! ```
//! use agent_tools::{AgentTools, Config};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("greeting.txt"), "hello\n").unwrap();
//! let tools = AgentTools::new(Config::builder(dir.path()).build().unwrap()).unwrap();
//!
//! let result = tools.call("read_file", json!({"path": "greeting.txt"}));
//! assert!(!result.is_error);
//! assert_eq!(result.text, "     1\thello\n");
//!
//! let result = tools.call("read_file", json!({"path": "../etc/passwd"}));
//! assert!(result.is_error);
//! assert!(result.text.starts_with(r#"{"error":"path_escape""#));
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use agent_tools_confine::{Workspace, WorkspaceError};
use agent_tools_fs::FileTools;

mod config;
mod dispatch;
mod registry;
mod services;
mod tools;

pub use agent_tools_bash::Launcher;
pub use agent_tools_confine::Confinement;
pub use agent_tools_error::{ErrorCode, ToolError};
pub use config::{
    Config, ConfigBuilder, DEFAULT_BASH_TIMEOUT_MAX_MS, DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_OUTPUT_BYTES, StartupError,
};
pub use dispatch::{CallContext, CancelToken, DispatchResult};
pub use registry::ToolDef;

use services::Services;

/// A tool in the offered set, with its compiled argument validator.
struct Offered {
    def: ToolDef,
    validator: jsonschema::Validator,
}

/// The tools, bound to one workspace. `Send + Sync`: share it (for example in
/// an `Arc`) and make independent calls from many threads at once.
pub struct AgentTools {
    services: Services,
    surface: Vec<Offered>,
}

impl std::fmt::Debug for AgentTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTools")
            .field("config", &self.services.config)
            .field(
                "tools",
                &self
                    .surface
                    .iter()
                    .map(|t| t.def.name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl AgentTools {
    /// Opens the workspace and prepares the tools the config allows.
    pub fn new(config: Config) -> Result<Self, StartupError> {
        let workspace =
            Workspace::open(config.root(), config.confinement()).map_err(|err| match err {
                WorkspaceError::Missing { root, source } => {
                    StartupError::RootMissing { root, source }
                }
                WorkspaceError::NotADirectory { root } => StartupError::RootNotADirectory { root },
            })?;
        let files = FileTools::new(workspace, config.limits());
        let surface = Self::surface_for(config.read_only())
            .into_iter()
            .map(|def| {
                let schema = serde_json::Value::Object((**def.input_schema()).clone());
                let validator = jsonschema::validator_for(&schema).map_err(|err| {
                    StartupError::InvalidSchema {
                        tool: def.name(),
                        message: err.to_string(),
                    }
                })?;
                Ok(Offered { def, validator })
            })
            .collect::<Result<Vec<_>, StartupError>>()?;
        Ok(AgentTools {
            services: Services { config, files },
            surface,
        })
    }

    /// The tools offered in a mode: all of them, or only the read-only ones.
    /// Both listing and dispatch go through this, so what is advertised and
    /// what can be called are always the same set.
    pub fn surface_for(read_only: bool) -> Vec<ToolDef> {
        tools::all()
            .into_iter()
            .filter(|tool| !(read_only && tool.mutating()))
            .collect()
    }

    /// The tools this instance offers, in a stable order.
    pub fn list_tools(&self) -> Vec<ToolDef> {
        self.surface.iter().map(|tool| tool.def.clone()).collect()
    }

    /// The frozen configuration.
    pub fn config(&self) -> &Config {
        &self.services.config
    }
}

#[cfg(test)]
mod tests;
