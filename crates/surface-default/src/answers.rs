//! The JSON answers of the tools that answer JSON (`bash` and the job
//! tools), as types: their schemas are the tools' output schemas when
//! structured output is on. The other tools answer text, and their
//! structured copy is that text (`{"content": ...}`, the host's default).
//!
//! A field the text writes as `null` is absent from the structured copy
//! (the portable schema names one type per field), so each such field is
//! an `Option` here. The schemas stay open (a client that validates
//! takes a field added later); the tests validate every answer against
//! them closed, so a field added to an answer without being added here
//! fails them.

use agent_tools::ToolDef;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::services::Services;

/// Declares the output schema of `tool` when it answers JSON.
pub(crate) fn declare(tool: ToolDef<Services>) -> ToolDef<Services> {
    match tool.name() {
        "bash" => tool.answering_json::<BashAnswer>(),
        "job_start" | "job_read" | "job_write" | "job_kill" => tool.answering_json::<JobAnswer>(),
        "job_list" => tool.answering_json::<JobListAnswer>(),
        _ => tool,
    }
}

/// What `bash` answers: how the command ended and its output.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct BashAnswer {
    /// The shell's exit code; absent when a signal ended it.
    pub exit_code: Option<i32>,
    /// The command's standard output (inline part).
    pub stdout: String,
    /// The command's standard error (inline part).
    pub stderr: String,
    /// The signal that ended the shell (`SIGKILL`...), when one did.
    pub signal: Option<String>,
    /// Always false in an answer (a timeout is an error envelope).
    pub timed_out: bool,
    /// Where all of stdout was saved, when it passed the budget.
    pub stdout_spill: Option<String>,
    /// Where all of stderr was saved, when it passed the budget.
    pub stderr_spill: Option<String>,
    /// Some output is only in a spill file.
    pub truncated: Option<bool>,
    /// Invalid UTF-8 in the output was replaced.
    pub lossy: Option<bool>,
    /// Bytes of stdout dropped past the cut.
    pub stdout_dropped: Option<u64>,
    /// Bytes of stderr dropped past the cut.
    pub stderr_dropped: Option<u64>,
    /// What the sandbox allows, when it may have refused the command
    /// something.
    pub sandbox: Option<String>,
}

/// What `job_start`, `job_read`, `job_write` and `job_kill` answer: the
/// job's state and the output read.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct JobAnswer {
    /// The job's id (`job_N`, or `bg_N` for a plain command's background).
    pub job_id: String,
    /// `running` or `exited`.
    pub status: String,
    /// The process id of the job's shell.
    pub pid: i32,
    /// The exit code, once the job exited with one.
    pub exit_code: Option<i32>,
    /// The signal that ended the job, when one did.
    pub signal: Option<String>,
    /// The output read by this call.
    pub output: String,
    /// The byte offset the output starts at.
    pub from: u64,
    /// The byte offset after the output.
    pub to: u64,
    /// More output is waiting past `to`.
    pub more: bool,
    /// Bytes dropped from the start of the buffer before they were read.
    pub dropped_bytes: u64,
    /// Whether the awaited pattern showed, when one was given.
    pub matched: Option<bool>,
    /// How long the call waited, in milliseconds.
    pub waited_ms: u64,
    /// The file holding the job's whole output, when there is one.
    pub log: Option<String>,
    /// A note for the model (the job seems to wait for input).
    pub hint: Option<String>,
    /// The terminal's screen, for a job started with a terminal.
    pub screen: Option<JobScreen>,
}

/// A terminal job's screen.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct JobScreen {
    /// The screen's text, line by line.
    pub text: String,
    /// The program switched to the alternate screen.
    pub alternate_screen: bool,
    /// The cursor's row and column.
    pub cursor: Vec<u64>,
    /// The terminal's height in rows.
    pub rows: u64,
    /// The terminal's width in columns.
    pub cols: u64,
}

/// What `job_list` answers.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct JobListAnswer {
    /// The connection's jobs, oldest first.
    pub jobs: Vec<JobRow>,
}

/// One job of `job_list`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct JobRow {
    /// The job's id (`job_N`, or `bg_N` for a plain command's background).
    pub job_id: String,
    /// `job` for a started job, `background` for what a plain command
    /// left running.
    pub kind: String,
    /// `running` or `exited`.
    pub status: String,
    /// The process id of the job's shell.
    pub pid: i32,
    /// The command line.
    pub command: String,
    /// The exit code, once the job exited with one.
    pub exit_code: Option<i32>,
    /// The signal that ended the job, when one did.
    pub signal: Option<String>,
    /// How long the job has run, in milliseconds.
    pub runtime_ms: u64,
    /// Bytes of output so far.
    pub output_bytes: u64,
    /// Whether the job runs with a terminal.
    pub tty: bool,
}
