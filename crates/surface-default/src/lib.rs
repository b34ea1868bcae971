//! The default surface, `agent-tools`: nine tools (four read, five write or
//! run) whose failures are JSON error envelopes, and five job tools for
//! commands that outlive their call (`job_start`, `job_read`, `job_write`,
//! `job_kill`, `job_list`).
//!
//! It depends on the host crate `agent-tools` like every other surface.
//! Its state ([`Services`]: the config and the file tools) and its command
//! and patch paths ([`run_command`], [`apply_patch_text`]) are also the
//! engine the codex and Claude Code surfaces build their tools on, so that
//! confinement, all-or-nothing patches and the command rules are the same
//! on every surface.
//!
//! ```
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("greeting.txt"), "hello\n").unwrap();
//! let config = agent_tools::Config::builder(dir.path()).build().unwrap();
//! let tools = agent_tools_surface_default::open(config).unwrap();
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

use agent_tools::CallOutcome;
use agent_tools::{AgentTools, Config, StartupError};
use agent_tools::{Failure, Surface};
use agent_tools::{Hints, ToolDef};

pub mod answers;
mod args;
mod bash;
mod files;
mod jobs;
mod lsp;
mod patch;
mod rename;
mod services;

pub use bash::{
    CommandLine, SPILL_DIR, job_log_file, job_request, run_command, sandbox_refusal_note,
};
pub use jobs::DefaultSession;
pub use patch::apply_patch_text;
pub use services::Services;

/// The default surface: `read_file`, `list_dir`, `glob`, `grep`,
/// `write_file`, `edit_file`, `multi_edit`, `apply_patch`, `bash`, and the
/// job tools. Success
/// is the tool's text (bash's a JSON object); every failure is one text item
/// holding the JSON envelope `{"error": code, "message": ...}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultSurface;

/// The default surface's name.
pub const DEFAULT_SURFACE: &str = "agent-tools";

/// Opens the workspace and prepares the default surface's tools that the
/// config allows: [`AgentTools::with_surface`] with [`DefaultSurface`].
pub fn open(config: Config) -> Result<AgentTools, StartupError> {
    AgentTools::with_surface(config, DefaultSurface)
}

/// Each tool's title and hints, side by side so that their truth can be
/// checked at a glance (a test checks the table covers every tool).
const TITLES_AND_HINTS: [(&str, &str, Hints); 16] = [
    ("read_file", "Read file", Hints::READ),
    ("list_dir", "List directory", Hints::READ),
    ("glob", "Find files by glob", Hints::READ),
    ("grep", "Search file contents", Hints::READ),
    // The same content written twice leaves the same file.
    ("write_file", "Write file", Hints::OVERWRITE),
    // A second identical edit finds its old text gone, or edits again.
    ("edit_file", "Edit file", Hints::EDIT),
    ("multi_edit", "Edit file in several steps", Hints::EDIT),
    ("apply_patch", "Apply patch", Hints::EDIT),
    ("bash", "Run shell command", Hints::RUN),
    ("job_start", "Start background job", Hints::RUN),
    ("job_read", "Read job output", jobs::READ_JOB),
    ("job_write", "Type into job", Hints::RUN),
    ("job_kill", "Stop job", jobs::STOP_JOB),
    ("job_list", "List jobs", Hints::READ),
    // Asks a language server; changes nothing.
    ("lsp", "Ask the language server", Hints::READ),
    // Renaming again finds the old name gone (or renames a new one).
    ("rename_symbol", "Rename symbol", Hints::EDIT),
];

impl Surface for DefaultSurface {
    type State = Services;

    fn name(&self) -> &'static str {
        DEFAULT_SURFACE
    }

    fn summary(&self) -> &'static str {
        "the agent-tools tools (read_file, list_dir, glob, grep, write_file, edit_file, \
         multi_edit, apply_patch, bash, and the job tools job_start, job_read, job_write, \
         job_kill, job_list), paths relative to one workspace root, errors as JSON \
         envelopes with stable codes"
    }

    fn instructions(&self) -> &'static str {
        "File and shell tools confined to one workspace folder. Paths are relative to the \
         workspace root (or absolute inside it). Failures come back as a JSON envelope \
         {\"error\": code, \"message\": ...}; match on the code."
    }

    fn open(&self, config: &Config) -> Result<Services, StartupError> {
        let workspace =
            Workspace::open(config.root(), config.confinement()).map_err(|err| match err {
                WorkspaceError::Missing { root, source } => {
                    StartupError::RootMissing { root, source }
                }
                WorkspaceError::NotADirectory { root } => StartupError::RootNotADirectory { root },
            })?;
        let mut files = FileTools::new(workspace, config.limits());
        if let Some(settings) = config.index() {
            files = files.with_index(settings);
        }
        Ok(Services::new(config, files))
    }

    fn tools(&self) -> Vec<ToolDef<Services>> {
        all()
    }

    fn offers_structured_output(&self) -> bool {
        true
    }

    fn new_session(&self) -> agent_tools::Session {
        // The connection's jobs live, and die, with it.
        agent_tools::Session::new(DefaultSession::default())
    }

    fn workspace_index<'a>(&self, state: &'a Services) -> Option<&'a agent_tools::WorkspaceIndex> {
        state.files().index()
    }

    fn render_error(&self, failure: Failure<'_>) -> CallOutcome {
        // Every code, at every stage, is its envelope on this surface; the
        // snapshot of every code, stage and surface (tests/surfaces.rs) makes
        // a new code's rendering a visible decision.
        CallOutcome::error_text(
            failure.error.to_envelope_value().to_string(),
            failure.cause(),
        )
    }
}

/// Every tool, read-only ones first, with its title and hints.
pub(crate) fn all() -> Vec<ToolDef<Services>> {
    let mut tools = files::read_tools();
    tools.extend(files::write_tools());
    tools.push(patch::apply_patch_tool());
    tools.push(bash::bash_tool());
    tools.extend(jobs::job_tools());
    tools.push(lsp::lsp_tool());
    tools.push(rename::rename_tool());
    tools
        .into_iter()
        .map(|tool| {
            match TITLES_AND_HINTS
                .iter()
                .find(|(name, _, _)| *name == tool.name())
            {
                Some((_, title, hints)) => tool.titled(title, *hints),
                None => tool,
            }
        })
        .map(answers::declare)
        .collect()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod surface_tests {
    use super::*;

    #[test]
    fn every_tool_has_a_title_and_hints_and_every_entry_a_tool() {
        let tools = all();
        let names: Vec<_> = tools.iter().map(ToolDef::name).collect();
        let listed: Vec<_> = TITLES_AND_HINTS.iter().map(|(name, _, _)| *name).collect();
        assert_eq!(names, listed);
        for tool in &tools {
            assert_ne!(
                tool.spec().title(),
                tool.name(),
                "{} has no title",
                tool.name()
            );
        }
    }

    #[test]
    fn hints_say_what_each_tool_does() {
        let hints = |name: &str| {
            all()
                .into_iter()
                .find(|t| t.name() == name)
                .map(|t| t.spec().hints())
                .unwrap()
        };
        for name in ["read_file", "list_dir", "glob", "grep"] {
            assert!(hints(name).read_only, "{name}");
            assert!(!hints(name).open_world, "{name}");
        }
        let write = hints("write_file");
        assert!(!write.read_only && write.destructive && write.idempotent);
        for name in ["edit_file", "multi_edit", "apply_patch"] {
            let edit = hints(name);
            assert!(
                !edit.read_only && edit.destructive && !edit.idempotent,
                "{name}"
            );
            assert!(!edit.open_world, "{name}");
        }
        let bash = hints("bash");
        assert!(!bash.read_only && bash.destructive && !bash.idempotent && bash.open_world);
    }
}

/// The README's Rust examples, compiled as doctests so they cannot drift
/// from the API (the README is written against this crate and the host).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;
