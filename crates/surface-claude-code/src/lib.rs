//! The `claude-code` surface: the tools Claude Code gives its models
//! (`Read`, `Write`, `Edit`, `MultiEdit`, `Glob`, `Grep`, `Bash`,
//! `KillShell`, `NotebookEdit`) with their parameter names and types, their
//! output formats and their messages, over the shared engine (see SPEC
//! section 10, "The Claude Code surface").
//!
//! Each connection has a [`ClaudeCodeSession`]: the files it read (with
//! what it saw of them) and its background commands. Writing to an existing
//! file, and every edit, needs a read of it in the session first, and is
//! refused when the file changed on disk since; the check and the write
//! happen under the path's locks.
//!
//! Paths are absolute and confined to the workspace root by handle, as on
//! every surface. Failures are `isError` results: Claude Code's input checks
//! wrapped in `<tool_use_error>`, failures while a tool ran bare, schema
//! violations as `<tool_use_error>InputValidationError: ...`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::path::Path;

use agent_tools::{
    CallContext, CallOutcome, Config, ErrorCode, Failure, Hints, Issue, Session, Stage,
    StartupError, Surface, ToolDef, ToolError, ToolResult,
};
use agent_tools_confine::ConfinedPath;
use agent_tools_surface_default::{DefaultSurface, Services};

mod args;
mod cells;
mod diagnostics;
mod edit;
mod lsp;
mod messages;
mod notebook;
mod pdf;
mod read;
mod search;
mod session;
mod shell;
mod tasks;

pub use messages::format_size;
pub use session::{ClaudeCodeSession, MAX_BACKGROUND_JOBS, MAX_READ_RECORDS};

use messages::{CHECK_FIELD, check};

/// The surface's name, as `--surface` takes it.
pub const CLAUDE_CODE_SURFACE: &str = "claude-code";

/// Lines Read shows when `limit` is not given.
pub const DEFAULT_READ_LINES: u64 = 2000;

/// The largest file Read shows whole when `limit` is not given.
pub const MAX_WHOLE_READ_BYTES: u64 = 256 * 1024;

/// Where the surface keeps command output (background output, output too
/// large to answer with), relative to the workspace root.
pub const OUTPUT_DIR: &str = ".agent-tools/claude-code";

/// The Claude Code surface.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClaudeCodeSurface;

/// BashOutput reads only, but what it returned is not returned again.
const CONSUMING_READ: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: false,
    open_world: false,
};

/// KillShell stops a process: destructive; a second call finds nothing to
/// stop and changes nothing more.
const STOP: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: true,
    open_world: false,
};

impl Surface for ClaudeCodeSurface {
    type State = Services;

    fn name(&self) -> &'static str {
        CLAUDE_CODE_SURFACE
    }

    fn summary(&self) -> &'static str {
        "the tools Claude Code gives its models (Read, Write, Edit, MultiEdit, Glob, Grep, Bash, \
         KillShell, NotebookEdit), absolute paths, read-before-write per connection, Claude \
         Code's formats and messages"
    }

    fn instructions(&self) -> &'static str {
        "Claude Code's file and shell tools, confined to one workspace folder. Paths are \
         absolute. Read a file before you Write over it or Edit it; a file changed on disk since \
         your Read must be read again. Read numbers lines as `number→text`; old_string in an \
         Edit is the text after the arrow."
    }

    fn open(&self, config: &Config) -> Result<Services, StartupError> {
        // The same engine handles as the default surface: one workspace,
        // one set of file tools and locks.
        DefaultSurface.open(config)
    }

    fn tools(&self) -> Vec<ToolDef<Services>> {
        vec![
            ToolDef::typed("Read", args::READ, false, read::read)
                .titled("Read file", Hints::READ)
                .bounding_itself()
                // Brief only for a small text file or image (see
                // read::is_brief): a large file's lines are counted, a PDF
                // or a notebook parsed, on a thread of their own.
                .brief_when(read::is_brief),
            ToolDef::typed("Glob", args::GLOB, false, search::glob)
                .titled("Find files by pattern", Hints::READ),
            ToolDef::typed("Grep", args::GREP, false, search::grep)
                .titled("Search file contents", Hints::READ),
            // The same content written twice leaves the same file.
            ToolDef::typed("Write", args::WRITE, true, edit::write)
                .titled("Write file", Hints::OVERWRITE),
            // A second identical edit finds its old text gone, or edits again.
            ToolDef::typed("Edit", args::EDIT, true, edit::edit).titled("Edit file", Hints::EDIT),
            ToolDef::typed("MultiEdit", args::MULTI_EDIT, true, edit::multi_edit)
                .titled("Edit file in several steps", Hints::EDIT),
            // An insert adds another cell each time.
            ToolDef::typed(
                "NotebookEdit",
                args::NOTEBOOK_EDIT,
                true,
                notebook::notebook_edit,
            )
            .titled("Edit notebook cell", Hints::EDIT),
            ToolDef::typed("Bash", args::BASH, true, shell::bash)
                .titled("Run shell command", Hints::RUN)
                .bounding_itself(),
            ToolDef::typed("KillShell", args::KILL_SHELL, true, shell::kill_shell)
                .titled("Stop background command", STOP)
                .bound_to_connection(),
            ToolDef::typed("BashOutput", tasks::BASH_OUTPUT, false, tasks::bash_output)
                .titled("Read background command output", CONSUMING_READ)
                .bound_to_connection(),
            ToolDef::typed("TaskOutput", tasks::TASK_OUTPUT, false, tasks::task_output)
                .titled("Get background task output", Hints::READ)
                .bound_to_connection(),
            ToolDef::typed("TaskStop", tasks::TASK_STOP, true, tasks::task_stop)
                .titled("Stop background task", STOP)
                .bound_to_connection(),
            // Asks a language server; offered only with --lsp.
            ToolDef::typed("LSP", args::LSP, false, lsp::lsp)
                .titled("Ask the language server", Hints::READ)
                .needing_lsp(),
        ]
    }

    fn render_error(&self, failure: Failure<'_>) -> CallOutcome {
        let cause = failure.cause();
        let text = match failure.stage {
            Stage::Lookup => format!(
                "<tool_use_error>Error: No such tool available: {}</tool_use_error>",
                failure.tool
            ),
            Stage::Validation => format!(
                "<tool_use_error>InputValidationError: {}</tool_use_error>",
                validation_text(failure.tool, &failure.issues, failure.error.message())
            ),
            Stage::Run => {
                let wrapped = failure
                    .error
                    .fields()
                    .get(CHECK_FIELD)
                    .is_some_and(|v| v == true);
                // Claude Code shows every failure's own text, whatever its
                // code; the snapshot of every code, stage and surface
                // (tests/surfaces.rs) makes a new code's rendering a visible
                // decision.
                let message = failure.error.message();
                if wrapped {
                    format!("<tool_use_error>{message}</tool_use_error>")
                } else {
                    message.to_owned()
                }
            }
        };
        CallOutcome::error_text(text, cause)
    }

    fn new_session(&self) -> Session {
        Session::new(ClaudeCodeSession::new())
    }
}

/// Claude Code's wording of schema violations: one line per issue under a
/// heading naming the tool.
fn validation_text(tool: &str, issues: &[Issue], fallback: &str) -> String {
    if issues.is_empty() {
        return format!("{tool} failed due to the following issue:\n{fallback}");
    }
    let lines: Vec<String> = issues
        .iter()
        .map(|issue| match issue {
            Issue::Missing { param } => format!("The required parameter `{param}` is missing"),
            Issue::WrongType {
                param,
                expected,
                received,
            } => format!(
                "The parameter `{param}` type is expected as `{}` but provided as `{}`",
                json_number_named(expected),
                json_number_named(received)
            ),
            Issue::Unexpected { param } => {
                format!("An unexpected parameter `{param}` was provided")
            }
            Issue::Other { at, message } => {
                let param = at.trim_start_matches('/');
                if param.is_empty() {
                    message.clone()
                } else {
                    format!("The parameter `{param}` is invalid: {message}")
                }
            }
        })
        .collect();
    let heading = if lines.len() == 1 { "issue" } else { "issues" };
    format!(
        "{tool} failed due to the following {heading}:\n{}",
        lines.join("\n")
    )
}

/// A JSON Schema type name as Claude Code's messages name it: its schemas
/// are checked by a library that knows one type of number, so a parameter
/// that takes whole numbers expects a `number`, and `5` is provided as a
/// `number`, never an `integer`.
fn json_number_named(types: &str) -> String {
    types
        .split(" | ")
        .map(|name| if name == "integer" { "number" } else { name })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The session of the call.
fn session_of(call: &CallContext) -> ToolResult<&ClaudeCodeSession> {
    call.session
        .get::<ClaudeCodeSession>()
        .ok_or_else(|| ToolError::internal("the call carries no Claude Code session"))
}

/// Resolves a path argument: absolute, inside the root (confined by
/// handle); outside it, Claude Code's permission refusal.
fn resolve_absolute(services: &Services, raw: &str, param: &str) -> ToolResult<ConfinedPath> {
    if !Path::new(raw).is_absolute() {
        return Err(check(
            ErrorCode::InvalidInput,
            messages::not_absolute(param, raw),
        ));
    }
    match services.files().workspace().resolve(raw) {
        Err(err) if err.code() == ErrorCode::PathEscape => {
            Err(check(ErrorCode::PathEscape, messages::DENIED))
        }
        other => other,
    }
}

/// How a confined path is shown in answers: absolute, under the root as it
/// was given.
fn shown_abs(services: &Services, path: &Path) -> String {
    let ws = services.files().workspace();
    let full = match (ws.given_root(), ws.strip_root(path)) {
        (Some(given), Some(rel)) => given.join(rel),
        _ => path.to_path_buf(),
    };
    full.to_string_lossy().into_owned()
}

#[cfg(test)]
mod peak;
#[cfg(test)]
mod tests;
