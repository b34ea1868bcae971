//! Language servers for agent-tools: code intelligence from the servers
//! editors use, for the errors an edit introduced and for navigation.
//!
//! An [`LspClient`] holds, for one workspace root, one server per language
//! (the first of [`LspSettings::servers`] that handles a file's extension
//! and is found on `PATH`). Nothing starts until a file needs it:
//!
//! * **Lifecycle.** A server is started over stdio (through the same
//!   launcher and sandbox as commands, when [`Launch`] names them), sent
//!   `initialize`, and is *starting* until it answers, *indexing* while it
//!   reports work-done progress, *ready* otherwise. Every wait is bounded:
//!   a call that finds the server still starting gets [`Note::Starting`]
//!   and the next call picks up where it left. A server that dies is
//!   restarted on a later call (after 0, 1, then 5 s); after more than
//!   [`ServerSpec::max_restarts`] deaths within ten minutes, or when it does
//!   not answer `initialize` within [`ServerSpec::startup_timeout`], it is
//!   disabled for the session with the reason (its exit status and last
//!   stderr line). Dropping the client asks each server to shut down, then
//!   kills its process group.
//! * **Protocol.** Own framing ([`framing`]) with a cap on a message's
//!   size; the server's requests for configuration, progress tokens,
//!   capability registration and workspace folders are answered; opened
//!   documents are tracked with their versions (full-text changes).
//! * **Diagnostics.** [`LspClient::after_write`] sends a written file's text
//!   and waits for the diagnostics of exactly that version: pulled when the
//!   server offers it, else the first publication carrying that version
//!   (or, from a server that sends none, the first after the change). An
//!   older set is never presented as current.
//!
//! ```
//! use std::time::Duration;
//! use agent_tools_lsp::{Launch, LspClient, LspSettings, Severity, builtin_servers};
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
//! let client = LspClient::new(LspSettings {
//!     root: dir.path().to_path_buf(),
//!     servers: builtin_servers(),
//!     wait: Duration::from_secs(3),
//!     report: Severity::Error,
//!     launch: Launch::default(),
//! });
//! // No server handles .txt files: nothing is started, nothing waited for.
//! let cancel = std::sync::atomic::AtomicBool::new(false);
//! assert!(client.after_write(&dir.path().join("notes.txt"), &cancel).is_none());
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod client;
mod conn;
pub mod edit;
pub mod framing;
pub mod position;
mod report;
mod servers;
pub mod uri;

use agent_tools_bash::Launcher;
use agent_tools_bash::sandbox::SandboxPolicy;

pub use client::{
    LspClient, LspSettings, MAX_DOCUMENT_BYTES, MAX_OPEN_DOCUMENTS, REQUEST_TIMEOUT, RequestError,
    SHUTDOWN_GRACE, ServerStatus,
};
pub use lsp_types;
pub use report::{
    FileDiagnostic, MAX_LISTED, Note, Outcome, Report, Severity, hover_text, symbol_kind_name,
};
pub use servers::{
    CRASH_WINDOW, DEFAULT_MAX_RESTARTS, DEFAULT_STARTUP_TIMEOUT, ServerConfigError, ServerSpec,
    builtin_servers, find_program, parse_lsp_json,
};

/// How servers are started: through the launcher commands use (so a server
/// dies with the process that started it and runs under the same sandbox),
/// or, without one, directly in a process group of its own.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// The launcher (the `agent-tools` binary's own subcommand).
    pub launcher: Option<Launcher>,
    /// The sandbox policy servers run under; needs the launcher.
    pub sandbox: Option<SandboxPolicy>,
}

/// Why talking to a server failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LspError {
    /// The server could not be started.
    #[error("{server} could not be started: {message}")]
    Start {
        /// The server.
        server: String,
        /// Why.
        message: String,
    },
    /// The server is gone.
    #[error("{server} stopped: {reason}")]
    Exited {
        /// The server.
        server: String,
        /// Exit status, last stderr line, or what failed.
        reason: String,
    },
    /// No answer in time.
    #[error("{server} did not answer {method} in time")]
    Timeout {
        /// The server.
        server: String,
        /// The request.
        method: String,
    },
    /// The server answered with an error.
    #[error("the language server answered with error {code}: {message}")]
    Server {
        /// The JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
}

#[cfg(test)]
mod tests;
