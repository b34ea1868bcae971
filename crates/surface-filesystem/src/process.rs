//! DesktopCommander's process tools (`start_process`, `read_process_output`,
//! `interact_with_process`, `force_terminate`, `list_sessions`) on the
//! connection's job table, each process in a terminal so that REPLs, ssh
//! and sudo prompts work.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use agent_tools::{CallContext, ErrorCode, ToolError, ToolResult};
use agent_tools_bash::RunRequest;
use agent_tools_bash::jobs::{
    Job, JobMode, JobOrigin, JobSpec, JobStatus, JobTable, ReadFrom, SETTLE, Signal, Wait,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::roots::Roots;

/// The longest any of these tools waits (ms), whatever `timeout_ms` says.
pub const MAX_WAIT_MS: u64 = 30_000;
/// `read_process_output`'s wait when none is given (ms).
pub const READ_WAIT_MS: u64 = 5_000;
/// `interact_with_process`'s wait when none is given (ms).
pub const INTERACT_WAIT_MS: u64 = 8_000;
/// Lines `read_process_output` returns when `length` is not given.
pub const READ_LINES: usize = 1_000;
/// The newest bytes of output a line count or a page looks at.
const LINE_WINDOW: usize = 4 * 1024 * 1024;

/// A connection's state on the filesystem surface: its processes.
#[derive(Debug, Default)]
pub struct FilesystemSession {
    jobs: JobTable,
}

impl FilesystemSession {
    /// The connection's processes.
    pub fn jobs(&self) -> &JobTable {
        &self.jobs
    }
}

pub(crate) const START_PROCESS: &str = "Start a command in a terminal of its own (`shell -l -c \
command`, in the first writable allowed directory) and keep it running: REPLs, servers, ssh, \
prompts. Waits up to timeout_ms (at most 30000) for the command to exit or its output to settle, \
then answers `Process started with PID N (shell: S)`, the initial output as plain text, and whether \
the process finished, seems to wait for input, or still runs. Processes end when the connection \
ends.";

pub(crate) const READ_PROCESS_OUTPUT: &str = "Read a process's output by lines. offset 0 (the \
default) gives the lines new since the last such read, waiting up to timeout_ms (default 5000, at \
most 30000) for some; a positive offset reads from that line, a negative one the last lines. \
length caps the lines (default 1000). Ends with the exit code once the process is done.";

pub(crate) const INTERACT_WITH_PROCESS: &str = "Type input into a process started with \
start_process (a newline is added) and answer what it printed back (the echoed input and the \
trailing prompt left out), waiting up to timeout_ms (default 8000, at most 30000) for its output \
to settle or the process to exit.";

pub(crate) const FORCE_TERMINATE: &str = "Stop a process started with start_process, with every \
process it started (SIGTERM, then SIGKILL 2 s later).";

pub(crate) const LIST_SESSIONS: &str = "List the running processes started with start_process: \
PID, whether it seems blocked on input, and runtime; also those a shell command left running in \
the background (`cmd &`), marked `Background of: COMMAND`, which force_terminate stops too.";

/// Arguments of `start_process`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StartProcessArgs {
    /// The command line.
    #[schemars(length(min = 1))]
    command: String,
    /// Milliseconds to wait for initial output (at most 30000).
    timeout_ms: u64,
    /// The shell (default: $SHELL, else /bin/bash).
    #[serde(default)]
    shell: Option<String>,
    /// Accepted; timings are not reported.
    #[serde(default)]
    #[allow(dead_code)] // accepted for DesktopCommander's callers
    verbose_timing: Option<bool>,
}

/// Arguments of `read_process_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadProcessOutputArgs {
    /// The process id start_process answered.
    pid: i64,
    /// Milliseconds to wait for new output (default 5000, at most 30000).
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// 0: new lines since the last read (default); N > 0: from line N; N < 0: the last N lines.
    #[serde(default)]
    offset: Option<i64>,
    /// The most lines to return (default 1000).
    #[serde(default)]
    length: Option<u64>,
}

/// Arguments of `interact_with_process`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct InteractArgs {
    /// The process id start_process answered.
    pid: i64,
    /// The input; a newline is added.
    input: String,
    /// Milliseconds to wait for the answer (default 8000, at most 30000).
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Wait for a prompt after the answer (default true); false: for the
    /// output to settle.
    #[serde(default)]
    wait_for_prompt: Option<bool>,
}

/// Arguments of `force_terminate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PidArgs {
    /// The process id start_process answered.
    pid: i64,
}

/// Arguments of `list_sessions` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoArgs {}

fn session(call: &CallContext) -> ToolResult<&FilesystemSession> {
    call.session
        .get::<FilesystemSession>()
        .ok_or_else(|| ToolError::internal("the call carries no filesystem session"))
}

/// The process with this pid: one started with `start_process`, or what a
/// plain shell command left running in the background.
fn find(session: &FilesystemSession, pid: i64) -> Option<Arc<Job>> {
    session
        .jobs
        .list()
        .into_iter()
        .chain(session.jobs.backgrounds())
        .find(|job| i64::from(job.pid()) == pid)
}

/// The longest command line `list_sessions` shows for a background process.
const SHOWN_COMMAND_CHARS: usize = 80;

fn no_session(pid: i64) -> ToolError {
    ToolError::new(
        ErrorCode::NotFound,
        format!("No session found for PID {pid}"),
    )
}

fn wait_ms(ms: Option<u64>, default: u64) -> Duration {
    Duration::from_millis(ms.unwrap_or(default).min(MAX_WAIT_MS))
}

fn user_shell() -> String {
    std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/bash".to_owned())
}

/// The prompt the last line ends with, when it looks like one of the
/// common shells', REPLs' and database clients'.
fn prompt_of(text: &str) -> Option<String> {
    const PROMPTS: [&str; 12] = [
        ">>>",
        "...",
        "mysql>",
        "postgres=#",
        "=#",
        "=>",
        "redis>",
        "irb>",
        "$",
        "#",
        "%",
        ">",
    ];
    let last = text.rsplit('\n').next()?.trim_end();
    if last.is_empty() {
        return None;
    }
    PROMPTS
        .iter()
        .find(|prompt| last.ends_with(*prompt))
        .map(|prompt| (*prompt).to_owned())
}

/// A prompt at the very end of the output (see [`prompt_of`]).
fn prompt_pattern() -> Option<regex::Regex> {
    regex::Regex::new(r"(>>>|\.\.\.|=#|=>|[$#%>]) ?\z").ok()
}

/// The line that says where the process stands.
fn state_line(job: &Job, status: &JobStatus, text: &str) -> String {
    if !status.is_running() {
        return format!("\n✅ Process {} has finished execution", job.pid());
    }
    match prompt_of(text) {
        Some(prompt) => format!(
            "\n🔄 Process {} is waiting for input (detected: \"{prompt}\")",
            job.pid()
        ),
        None => "\n⏳ Process is running. Use read_process_output to get more output.".to_owned(),
    }
}

pub(crate) fn start_process(
    roots: &Roots,
    args: StartProcessArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let session = session(call)?;
    let all = roots.list();
    let root = match all.iter().find(|root| root.writable()) {
        Some(root) => root.clone(),
        None => roots.first()?,
    };
    let cwd = root.workspace().root_path();
    let shell = args
        .shell
        .filter(|s| !s.is_empty())
        .unwrap_or_else(user_shell);
    let request = roots.config().confine_command(RunRequest::argv(
        vec![shell.clone(), "-l".into(), "-c".into(), args.command],
        cwd.abs(),
        cwd.abs(),
    )?);
    let job = session
        .jobs
        .start(JobSpec::new(request, JobMode::TERMINAL))
        .map_err(ToolError::from)?;
    let wait = Wait::for_output(wait_ms(Some(args.timeout_ms), 0), None);
    let read = job.read(ReadFrom::Cursor, LINE_WINDOW, &wait, call.cancel.flag())?;
    let mut text = format!(
        "Process started with PID {} (shell: {shell})\nInitial output:\n{}",
        job.pid(),
        read.text
    );
    text.push_str(&state_line(&job, &read.status, &read.text));
    Ok(text)
}

/// The lines of the job's output (its newest [`LINE_WINDOW`] bytes), a
/// trailing unfinished line included.
fn all_lines(job: &Job) -> ToolResult<Vec<String>> {
    let read = job.read(
        ReadFrom::Tail(LINE_WINDOW as u64),
        LINE_WINDOW,
        &Wait::none(),
        &AtomicBool::new(false),
    )?;
    Ok(lines_of(&read.text))
}

fn lines_of(text: &str) -> Vec<String> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return Vec::new();
    }
    text.split('\n').map(str::to_owned).collect()
}

fn completion(job: &Job, status: &JobStatus) -> String {
    match status {
        JobStatus::Running => String::new(),
        JobStatus::Exited { code, .. } => format!(
            "\n\n✅ Process completed with exit code {} (runtime: {:.2}s)",
            code.unwrap_or(-1),
            job.runtime().as_secs_f64()
        ),
    }
}

pub(crate) fn read_process_output(
    _: &Roots,
    args: ReadProcessOutputArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let job = find(session(call)?, args.pid).ok_or_else(|| no_session(args.pid))?;
    let length = usize::try_from(args.length.unwrap_or(READ_LINES as u64)).unwrap_or(usize::MAX);
    let offset = args.offset.unwrap_or(0);
    let (header, lines, status) = if offset == 0 {
        let wait = Wait::for_output(wait_ms(args.timeout_ms, READ_WAIT_MS), None);
        let read = job.read(ReadFrom::Cursor, LINE_WINDOW, &wait, call.cancel.flag())?;
        let new = lines_of(&read.text);
        let total = all_lines(&job)?.len();
        let shown: Vec<String> = new.into_iter().take(length).collect();
        (
            format!("[Reading {} new lines (total: {total} lines)]", shown.len()),
            shown,
            read.status,
        )
    } else {
        let status = job.status();
        let lines = all_lines(&job)?;
        let total = lines.len();
        if offset > 0 {
            let from = usize::try_from(offset).unwrap_or(usize::MAX).min(total);
            let shown: Vec<String> = lines[from..].iter().take(length).cloned().collect();
            let remaining = total - from - shown.len();
            (
                format!(
                    "[Reading {} lines from line {from} (total: {total} lines, {remaining} remaining)]",
                    shown.len()
                ),
                shown,
                status,
            )
        } else {
            let back = usize::try_from(offset.unsigned_abs())
                .unwrap_or(usize::MAX)
                .min(total)
                .min(length);
            let shown = lines[total - back..].to_vec();
            (
                format!(
                    "[Reading last {} lines (total: {total} lines)]",
                    shown.len()
                ),
                shown,
                status,
            )
        }
    };
    let body = if lines.is_empty() {
        "(No output in requested range)".to_owned()
    } else {
        lines.join("\n")
    };
    Ok(format!("{header}\n\n{body}{}", completion(&job, &status)))
}

pub(crate) fn interact_with_process(
    _: &Roots,
    args: InteractArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let job = find(session(call)?, args.pid).ok_or_else(|| no_session(args.pid))?;
    if !job.status().is_running() {
        return Err(ToolError::new(
            ErrorCode::InvalidInput,
            format!("No active session found for PID {}", args.pid),
        ));
    }
    let mut input = args.input.clone();
    input.push('\n');
    // A prompt printed before the input is not the answer to it.
    let fresh_from = job.output_end();
    job.write(input.as_bytes(), &[]).map_err(ToolError::from)?;
    let max = wait_ms(args.timeout_ms, INTERACT_WAIT_MS);
    // The echo of the input comes at once and the answer later: a quiet
    // moment between them must not end the wait when a prompt is awaited.
    let wait = if args.wait_for_prompt.unwrap_or(true) {
        Wait {
            max,
            pattern: prompt_pattern(),
            settle: false,
            fresh_from,
        }
    } else {
        Wait::for_output(max, None).after(fresh_from)
    };
    let read = job.read(ReadFrom::Cursor, LINE_WINDOW, &wait, call.cancel.flag())?;
    let timed_out = read.status.is_running() && read.waited + Duration::from_millis(5) >= max;
    let mut lines = lines_of(&read.text);
    // The terminal echoes what was typed; the prompt after the answer is
    // the state line's business.
    if lines
        .first()
        .is_some_and(|line| line.trim_end() == args.input.trim_end())
    {
        lines.remove(0);
    }
    let prompt = prompt_of(&read.text);
    if prompt.is_some() && read.status.is_running() {
        lines.pop();
    }
    let mut text = format!(
        "✅ Input executed in process {}:\n\n📤 Output:\n{}",
        args.pid,
        lines.join("\n")
    );
    if timed_out {
        text.push_str("\n⏱️ Response may be incomplete (timeout reached)");
    } else {
        text.push_str(&state_line(&job, &read.status, &read.text));
    }
    Ok(text)
}

pub(crate) fn force_terminate(_: &Roots, args: PidArgs, call: &CallContext) -> ToolResult<String> {
    let job = find(session(call)?, args.pid).filter(|job| job.status().is_running());
    let Some(job) = job else {
        return Ok(format!("No active session found for PID {}", args.pid));
    };
    job.kill(Signal::SIGTERM);
    Ok(format!(
        "Successfully initiated termination of session {}",
        args.pid
    ))
}

pub(crate) fn list_sessions(_: &Roots, _: NoArgs, call: &CallContext) -> ToolResult<String> {
    let mut text = String::new();
    let session = session(call)?;
    for job in session
        .jobs
        .list()
        .into_iter()
        .chain(session.jobs.backgrounds())
    {
        let status = job.status();
        if !status.is_running() {
            continue;
        }
        let tail = job.read(
            ReadFrom::Tail(1024),
            1024,
            &Wait::none(),
            &AtomicBool::new(false),
        );
        // A log that cannot be read shows no prompt; the listing goes on.
        let blocked =
            job.quiet_for() >= SETTLE && tail.is_ok_and(|tail| prompt_of(&tail.text).is_some());
        let _ = write!(
            text,
            "PID: {}, Blocked: {blocked}, Runtime: {}s",
            job.pid(),
            job.runtime().as_secs()
        );
        if job.origin() == JobOrigin::Background {
            let command: String = job.command().chars().take(SHOWN_COMMAND_CHARS).collect();
            let more = if command.len() < job.command().len() {
                "…"
            } else {
                ""
            };
            let _ = write!(text, ", Background of: {command}{more}");
        }
        text.push('\n');
    }
    if text.is_empty() {
        return Ok("No active sessions".to_owned());
    }
    text.pop();
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_and_lines() {
        assert_eq!(prompt_of("x\n>>> ").as_deref(), Some(">>>"));
        assert_eq!(prompt_of("user@host:~$ ").as_deref(), Some("$"));
        assert_eq!(prompt_of("collecting 3 items"), None);
        assert_eq!(prompt_of("done\n"), None);
        assert_eq!(lines_of("a\nb\n"), ["a", "b"]);
        assert_eq!(lines_of("a\nb"), ["a", "b"]);
        assert!(lines_of("").is_empty());
        let prompt = prompt_pattern().unwrap();
        assert!(prompt.is_match("42\n>>> "));
        assert!(prompt.is_match("user@host:~$ "));
        assert!(!prompt.is_match("print(6 * 7)\n"));
    }
}
