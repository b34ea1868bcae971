//! File and shell tools for AI coding agents, behind one small facade.
//!
//! [`AgentTools`] is built once from a [`Config`] (the workspace root and
//! limits) and a [`Surface`] ([`AgentTools::with_surface`]). It
//! offers the surface's tools ([`AgentTools::list_tools`]) and runs calls to
//! them ([`AgentTools::dispatch`]) through one pipeline:
//!
//! 1. look the tool up in the offered set (hidden or unknown: `not_found`);
//! 2. validate the arguments against the tool's JSON Schema, defaults filled;
//! 3. run the handler (paths confined to the root; a panic becomes `internal`);
//! 4. cut the text to `max_output_bytes` on a character boundary;
//! 5. render: content items ([`Content`]) with `is_error`, or a protocol
//!    error; failures as the surface words them (the default surface: a JSON
//!    error envelope), with their typed [`Cause`].
//!
//! [`AgentTools::call`] gives the same outcome as text with an error flag
//! ([`DispatchResult`]).
//!
//! This crate is the host: config, call context, registry, schemas and the
//! pipeline. It names no surface; each lives in a crate of its own that
//! depends on this one (`agent-tools-surface-default` is the default
//! surface, with the nine tools, and `AgentTools` opened on it is what most
//! callers want). There is no agent loop and no transport here: the
//! `agent-tools-mcp` crate serves a surface over MCP, and an agent can call
//! it directly.
//!
//! A surface of one tool, bound to the pipeline (arguments are validated
//! against the schema generated from `ShoutArgs` before the handler runs):
//!
//! ```
//! use agent_tools::{
//!     AgentTools, CallContext, CallOutcome, Config, Failure, Hints, StartupError, Surface,
//!     ToolDef, ToolResult,
//! };
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct ShoutArgs {
//!     /// What to say.
//!     text: String,
//! }
//!
//! fn shout(_: &(), args: ShoutArgs, _: &CallContext) -> ToolResult<String> {
//!     Ok(args.text.to_uppercase())
//! }
//!
//! #[derive(Default)]
//! struct Loud;
//!
//! impl Surface for Loud {
//!     type State = ();
//!     fn name(&self) -> &'static str { "loud" }
//!     fn summary(&self) -> &'static str { "one tool that shouts" }
//!     fn instructions(&self) -> &'static str { "Call shout." }
//!     fn open(&self, _: &Config) -> Result<(), StartupError> { Ok(()) }
//!     fn tools(&self) -> Vec<ToolDef<()>> {
//!         vec![ToolDef::typed("shout", "Says text louder.", false, shout).titled("Shout", Hints::READ)]
//!     }
//!     fn render_error(&self, failure: Failure<'_>) -> CallOutcome {
//!         CallOutcome::error_text(failure.error.message().to_string(), failure.cause())
//!     }
//! }
//!
//! # fn main() -> Result<(), StartupError> {
//! let root = std::env::temp_dir();
//! let tools = AgentTools::with_surface(Config::builder(&root).build()?, Loud)?;
//! assert_eq!(tools.call("shout", serde_json::json!({"text": "hi"})).text, "HI");
//! assert!(tools.call("shout", serde_json::json!({"txt": "hi"})).is_error);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

// Leaf modules first: nothing below imports what comes after it.
mod context;
mod result;
pub mod schema;
pub mod structured;

mod config;

mod registry;
mod surface;

mod catalog;
mod dispatch;
pub mod journal_tools;

pub use agent_tools_bash::Launcher;
pub use agent_tools_confine::Confinement;
pub use agent_tools_error::{ErrorCode, ToolError, ToolResult};
pub use agent_tools_fs::commands::{CommandMode as JournalCommands, DEFAULT_COMMAND_MAX_FILES};
pub use agent_tools_fs::journal::Durability as JournalDurability;
pub use agent_tools_fs::{IndexSettings, WorkspaceIndex};
pub use agent_tools_lsp as lsp;
pub use agent_tools_sandbox::{
    Coverage as SandboxCoverage, SandboxPolicy, TARGET_ABI as SANDBOX_TARGET_ABI, landlock_abi,
};
pub use catalog::SurfaceChoice;
pub use config::{
    ActiveJournal, ActiveSandbox, AllowedRoot, CommandSandbox, Config, ConfigBuilder,
    DEFAULT_BASH_TIMEOUT_MAX_MS, DEFAULT_INDEX_MEMORY_BYTES, DEFAULT_LSP_WAIT_MS,
    DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_OUTPUT_BYTES, JournalOptions, JournalSettings, LspOptions,
    LspReport, MAX_LSP_WAIT_MS, RootAccess, StartupError,
};
pub use context::{CallContext, CancelToken, Session};
pub use dispatch::AgentTools;
pub use registry::{BRIEF_READ_BYTES, BriefTest, Hints, ToolDef, ToolSpec};
pub use result::{
    CallOutcome, CallResult, Cause, Content, DispatchResult, ProtocolError, Reply, ResourceBody,
};
pub use structured::OutputKind;
pub use surface::{Failure, Issue, Stage, Surface, offered_specs};
