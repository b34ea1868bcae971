//! `BashOutput`, `TaskOutput` and `TaskStop`: reading and stopping the
//! commands `Bash` started with `run_in_background`, in Claude Code's
//! words (2.0's `BashOutput`, 2.1's `TaskOutput` and `TaskStop`).

use std::time::Duration;

use agent_tools::{CallContext, ErrorCode, ToolResult};
use agent_tools_bash::jobs::{Job, JobStatus, OutputStream, ReadFrom, Wait};
use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::messages::thrown;
use crate::session_of;
use agent_tools_surface_default::Services;

/// `TaskOutput`'s wait when none is given (ms).
pub const TASK_TIMEOUT_MS: u64 = 30_000;
/// The longest wait `TaskOutput` takes in its schema (ms); the server
/// waits at most [`agent_tools_bash::jobs::MAX_WAIT`] of it.
pub const TASK_MAX_TIMEOUT_MS: u64 = 600_000;
/// `TaskOutput` keeps the tail of longer output.
pub const TASK_MAX_OUTPUT_CHARS: usize = 32_000;
/// `BashOutput` answers at most this many bytes of new output per call;
/// the rest waits for the next.
const BASH_OUTPUT_BYTES: usize = 30_000;
/// A command quiet this long on a prompt-like last line is reported as
/// likely waiting for input.
pub const STALL: Duration = Duration::from_secs(45);

const STALL_NOTE: &str = "The command is likely blocked on an interactive prompt. Kill this task \
and re-run with piped input (e.g., `echo y | command`) or a non-interactive flag if one exists.";

pub(crate) const BASH_OUTPUT: &str = "Retrieve the output of a command started with Bash \
run_in_background: what it printed since the last check, stdout and stderr apart, with its status \
(running, completed, failed, killed) and exit code.";

pub(crate) const TASK_OUTPUT: &str = "Get the output of a background task started with Bash \
run_in_background: its status and its whole output (the last 32000 characters of longer output, \
with the path of the full file). block (default true) waits for the task to finish, up to timeout \
milliseconds.";

pub(crate) const TASK_STOP: &str = "Stop a running background task by its ID, with everything it \
started.";

/// Arguments of `BashOutput`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BashOutputArgs {
    /// The ID of the background shell to retrieve output from
    bash_id: String,
    /// Optional regular expression to filter the output lines. Only lines matching this regex will be included in the result. Any lines that do not match will no longer be available to read.
    #[serde(default)]
    filter: Option<String>,
}

/// Arguments of `TaskOutput`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskOutputArgs {
    /// The task ID to get output from
    task_id: String,
    /// Whether to wait for completion
    #[serde(default)]
    block: Option<bool>,
    /// Max wait time in ms (default 30000, at most 600000)
    #[serde(default)]
    #[schemars(range(max = 600000))]
    timeout: Option<u64>,
}

/// Arguments of `TaskStop`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskStopArgs {
    /// The ID of the background task to stop
    #[serde(default)]
    task_id: Option<String>,
    /// Deprecated: use task_id instead
    #[serde(default)]
    shell_id: Option<String>,
}

/// Claude Code's name for where a task stands.
fn status_name(status: &JobStatus) -> &'static str {
    match status {
        JobStatus::Running => "running",
        JobStatus::Exited { killed: true, .. } => "killed",
        JobStatus::Exited { code: Some(0), .. } => "completed",
        JobStatus::Exited { .. } => "failed",
    }
}

fn exit_code(status: &JobStatus) -> Option<i32> {
    match status {
        JobStatus::Exited { code, .. } => *code,
        JobStatus::Running => None,
    }
}

fn no_task(id: &str) -> agent_tools::ToolError {
    thrown(ErrorCode::NotFound, format!("No task found with ID: {id}"))
}

pub(crate) fn bash_output(
    _: &Services,
    args: BashOutputArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let job = session_of(call)?
        .job(&args.bash_id)
        .ok_or_else(|| no_shell(&args.bash_id))?;
    let filter = args
        .filter
        .as_deref()
        .map(|raw| {
            RegexBuilder::new(raw)
                .size_limit(1 << 20)
                .build()
                .map_err(|err| {
                    thrown(
                        ErrorCode::InvalidInput,
                        format!("Invalid regular expression in filter: {err}"),
                    )
                })
        })
        .transpose()?;
    let read = job.read(
        ReadFrom::Cursor,
        BASH_OUTPUT_BYTES,
        &Wait::none(),
        call.cancel.flag(),
    )?;
    let (mut stdout, mut stderr) = (String::new(), String::new());
    for (stream, text) in &read.parts {
        match stream {
            OutputStream::Stdout => stdout.push_str(text),
            OutputStream::Stderr => stderr.push_str(text),
        }
    }
    let keep = |text: String| match &filter {
        None => text,
        Some(re) => kept_lines(&text, re),
    };
    let (stdout, stderr) = (keep(stdout), keep(stderr));
    let mut parts = vec![format!("<status>{}</status>", status_name(&read.status))];
    if let Some(code) = exit_code(&read.status) {
        parts.push(format!("<exit_code>{code}</exit_code>"));
    }
    for (tag, text) in [("stdout", stdout.trim_end()), ("stderr", stderr.trim_end())] {
        if !text.is_empty() {
            parts.push(format!("<{tag}>\n{text}\n</{tag}>"));
        }
    }
    if let Some(note) = stall_note(&job, &read.status) {
        parts.push(note);
    }
    parts.push(format!(
        "<timestamp>{}</timestamp>",
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ")
    ));
    Ok(parts.join("\n\n"))
}

fn no_shell(id: &str) -> agent_tools::ToolError {
    thrown(ErrorCode::NotFound, crate::messages::no_shell(id))
}

fn kept_lines(text: &str, re: &Regex) -> String {
    text.split_inclusive('\n')
        .filter(|line| re.is_match(line.trim_end_matches('\n')))
        .collect()
}

pub(crate) fn task_output(
    _: &Services,
    args: TaskOutputArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let job = session_of(call)?
        .job(&args.task_id)
        .ok_or_else(|| no_task(&args.task_id))?;
    let block = args.block.unwrap_or(true);
    let timeout = args
        .timeout
        .unwrap_or(TASK_TIMEOUT_MS)
        .min(TASK_MAX_TIMEOUT_MS);
    let wait = if block {
        Wait::until_exit(Duration::from_millis(timeout))
    } else {
        Wait::none()
    };
    // The wait, then the whole output's tail (the cursor is BashOutput's).
    let waited = job.read(ReadFrom::Tail(0), 0, &wait, call.cancel.flag())?;
    let status = waited.status;
    let retrieval = match (&status, block) {
        (JobStatus::Running, true) => "timeout",
        (JobStatus::Running, false) => "not_ready",
        _ => "success",
    };
    let tail = job.read(
        ReadFrom::Tail((TASK_MAX_OUTPUT_CHARS * 4) as u64),
        TASK_MAX_OUTPUT_CHARS * 4,
        &Wait::none(),
        call.cancel.flag(),
    )?;
    let chars = tail.text.chars().count();
    let output = if chars > TASK_MAX_OUTPUT_CHARS || tail.from > 0 {
        let skip = chars.saturating_sub(TASK_MAX_OUTPUT_CHARS);
        let kept: String = tail.text.chars().skip(skip).collect();
        let path = job.log_file().unwrap_or_default();
        format!("[Truncated. Full output: {path}]\n\n{kept}")
    } else {
        tail.text
    };
    let mut parts = vec![
        format!("<retrieval_status>{retrieval}</retrieval_status>"),
        format!("<task_id>{}</task_id>", args.task_id),
        "<task_type>local_bash</task_type>".to_owned(),
        format!("<status>{}</status>", status_name(&status)),
    ];
    if let Some(code) = exit_code(&status) {
        parts.push(format!("<exit_code>{code}</exit_code>"));
    }
    let output = output.trim_end();
    if !output.is_empty() {
        parts.push(format!("<output>\n{output}\n</output>"));
    }
    if let Some(note) = stall_note(&job, &status) {
        parts.push(note);
    }
    Ok(parts.join("\n\n"))
}

pub(crate) fn task_stop(
    _: &Services,
    args: TaskStopArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let Some(id) = args.task_id.or(args.shell_id) else {
        return Err(thrown(
            ErrorCode::InvalidInput,
            "Missing required parameter: task_id",
        ));
    };
    let session = session_of(call)?;
    let job = session.job(&id).ok_or_else(|| no_task(&id))?;
    let status = job.status();
    if !status.is_running() {
        return Err(thrown(
            ErrorCode::InvalidInput,
            format!(
                "Task {id} is not running (status: {})",
                status_name(&status)
            ),
        ));
    }
    let (command, _) = session.stop_job(&id).ok_or_else(|| no_task(&id))?;
    Ok(json!({
        "message": format!("Successfully stopped task: {id} ({command})"),
        "task_id": id,
        "task_type": "local_bash",
        "command": command,
    })
    .to_string())
}

/// Claude Code's note for a command that stopped printing on what looks
/// like a question: it will wait for an answer nobody can type.
fn stall_note(job: &Job, status: &JobStatus) -> Option<String> {
    if !status.is_running() || job.quiet_for() < STALL {
        return None;
    }
    let tail = job
        .read(
            ReadFrom::Tail(1024),
            1024,
            &Wait::none(),
            &std::sync::atomic::AtomicBool::new(false),
        )
        .ok()?;
    let last = tail.text.trim_end_matches('\n').rsplit('\n').next()?;
    looks_like_prompt(last).then(|| STALL_NOTE.to_owned())
}

fn looks_like_prompt(line: &str) -> bool {
    static PROMPT: std::sync::LazyLock<Option<Regex>> = std::sync::LazyLock::new(|| {
        Regex::new(
            r"(?i)(\(y/n\)|\[y/n\]|\(yes/no\)|\b(do you|would you|shall i|are you sure|ready to)\b.*\?\s*$|press (any key|enter)|continue\?|overwrite\?)",
        )
        .ok()
    });
    PROMPT.as_ref().is_some_and(|re| re.is_match(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_recognised_and_lines_filtered() {
        assert!(looks_like_prompt("Overwrite existing file? (y/n)"));
        assert!(looks_like_prompt("Are you sure you want to continue?"));
        assert!(looks_like_prompt("Press Enter to go on"));
        assert!(!looks_like_prompt("collecting ... 12 items"));
        let re = Regex::new("^ok").unwrap();
        assert_eq!(kept_lines("ok 1\nbad\nok 2", &re), "ok 1\nok 2");
        assert_eq!(
            status_name(&JobStatus::Exited {
                code: Some(1),
                signal: None,
                killed: false
            }),
            "failed"
        );
        assert_eq!(
            status_name(&JobStatus::Exited {
                code: None,
                signal: Some("SIGTERM".into()),
                killed: true
            }),
            "killed"
        );
    }
}
