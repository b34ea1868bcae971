//! Surfaces: named sets of tools over one engine, each with its own names,
//! schemas, descriptions, rendering of results and mapping of errors.

use agent_tools_error::ToolError;

use crate::config::{Config, StartupError};
use crate::context::Session;
use crate::registry::{ToolDef, ToolSpec};
use crate::result::{CallOutcome, Cause};

/// Where in the pipeline a call failed, for surfaces that word each
/// differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The tool is not offered (unknown, or hidden by read-only mode).
    Lookup,
    /// The arguments do not fit the tool's schema.
    Validation,
    /// The tool ran and failed.
    Run,
}

/// A failed call, for the surface to render.
#[derive(Debug)]
pub struct Failure<'a> {
    /// The tool's name as called.
    pub tool: &'a str,
    /// Where it failed.
    pub stage: Stage,
    /// The engine's (or the pipeline's) error.
    pub error: ToolError,
    /// Whether the caller had cancelled the call when it failed.
    pub cancelled: bool,
    /// At [`Stage::Validation`], what in the arguments broke the schema,
    /// typed (surfaces that word each issue their own way read these);
    /// empty otherwise.
    pub issues: Vec<Issue>,
}

/// One way the arguments of a call broke the tool's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Issue {
    /// A required argument is missing.
    Missing {
        /// Its name.
        param: String,
    },
    /// An argument has the wrong JSON type.
    WrongType {
        /// Its name.
        param: String,
        /// The type the schema asks for (`string`, `integer`, ...).
        expected: String,
        /// The type given.
        received: String,
    },
    /// An argument the tool does not take.
    Unexpected {
        /// Its name.
        param: String,
    },
    /// Anything else (a value out of range, a string not in an enum).
    Other {
        /// Where, as a JSON pointer into the arguments.
        at: String,
        /// What, in the validator's words.
        message: String,
    },
}

impl Failure<'_> {
    /// The typed cause: the cancellation, or the error's code.
    pub fn cause(&self) -> Cause {
        if self.cancelled {
            Cause::Cancelled
        } else {
            Cause::Error(self.error.code())
        }
    }
}

/// A tool surface: the tools a model family knows, over the shared engine.
///
/// The pipeline ([`crate::AgentTools`]) looks a call up among
/// [`tools`](Self::tools), validates its arguments, runs it with the state
/// [`open`](Self::open) built, bounds its text, and hands every failure to
/// [`render_error`](Self::render_error). A surface lives in a crate of its
/// own (`agent-tools-surface-<name>`) that depends on this one.
pub trait Surface: Send + Sync + 'static {
    /// What the tools work with: the engine handles built from the config.
    type State: Send + Sync + 'static;

    /// The surface's name, as `--surface` takes it.
    fn name(&self) -> &'static str;

    /// One line saying what the surface is for.
    fn summary(&self) -> &'static str;

    /// What the server tells the client about the tools as a whole.
    fn instructions(&self) -> &'static str;

    /// Builds the state from the config (opening the workspace, say).
    fn open(&self, config: &Config) -> Result<Self::State, StartupError>;

    /// Every tool, in listing order. In read-only mode only those whose
    /// hints say read-only are offered.
    fn tools(&self) -> Vec<ToolDef<Self::State>>;

    /// Renders a failure: as content with `isError`, or as a protocol error
    /// where the surface's contract says so. Match on
    /// `failure.error.code()`, exhaustively.
    fn render_error(&self, failure: Failure<'_>) -> CallOutcome;

    /// Whether the surface serves several allowed directories (the
    /// roots [`ConfigBuilder::also_root`](crate::ConfigBuilder::also_root)
    /// adds). A surface that does not serves the root alone, and a
    /// command line refuses extra roots for it rather than ignore them.
    fn serves_several_roots(&self) -> bool {
        false
    }

    /// Whether the surface offers structured output (an output schema per
    /// tool and a structured copy of each answer) when the configuration
    /// asks for it ([`Config::structured_output`](crate::Config::structured_output)).
    /// A surface that mirrors another program's tools has none unless
    /// those tools have one; opening it with structured output on fails.
    fn offers_structured_output(&self) -> bool {
        false
    }

    /// Replaces the allowed directories with those a client announced (MCP
    /// roots), for a surface that serves several and was started without
    /// any. The default keeps what the surface has.
    fn replace_roots(
        &self,
        state: &Self::State,
        roots: &[std::path::PathBuf],
    ) -> Result<(), StartupError> {
        let _ = (state, roots);
        Ok(())
    }

    /// A new session: the state kept for one connection. None by default.
    fn new_session(&self) -> Session {
        Session::default()
    }

    /// The warm index of the root, when the surface keeps one: the undo
    /// journal reads its file table to find what a command changed instead
    /// of walking the roots. None by default.
    fn workspace_index<'a>(
        &self,
        state: &'a Self::State,
    ) -> Option<&'a agent_tools_fs::WorkspaceIndex> {
        let _ = state;
        None
    }
}

/// The tools a surface offers in a mode, as clients see them (unlisted
/// tools left out: they can be called but are not advertised; so are those
/// that need language servers, which are off unless asked for).
pub fn offered_specs<S: Surface>(surface: &S, read_only: bool) -> Vec<ToolSpec> {
    surface
        .tools()
        .into_iter()
        .filter(|tool| tool.spec().listed() && !(read_only && tool.spec().mutating()))
        .filter(|tool| !tool.spec().needs_lsp())
        .map(|tool| tool.spec().clone())
        .collect()
}
