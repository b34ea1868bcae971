//! `exec_command` and `write_stdin`: codex's unified exec, on the
//! connection's job table, with codex's schemas, clamps, session ids and
//! answer text.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent_tools::{CallContext, ToolResult};
use agent_tools_bash::jobs::{
    JobError, JobLimits, JobMode, JobSpec, JobStatus, JobTable, ReadFrom, Wait,
};
use agent_tools_error::{ErrorCode, ToolError};
use agent_tools_surface_default::{CommandLine, Services, job_request};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Number;

/// Processes one connection keeps, as codex does; past it the least
/// recently used one (not among the [`PROTECTED`] newest) is killed.
pub const MAX_PROCESSES: usize = 64;
/// The most recently used processes a prune never kills.
pub const PROTECTED: usize = 8;
/// Session ids count up from here.
pub const FIRST_SESSION_ID: u64 = 1000;
/// `yield_time_ms` of `exec_command` when not given.
pub const EXEC_YIELD_MS: u64 = 10_000;
/// `yield_time_ms` of `write_stdin` when not given.
pub const WRITE_YIELD_MS: u64 = 250;
/// `max_output_tokens` when not given.
pub const MAX_OUTPUT_TOKENS: u64 = 10_000;
/// Yield clamp of a call that runs or types: at least this...
const MIN_YIELD_MS: u64 = 250;
/// ... and at most this.
const MAX_YIELD_MS: u64 = 30_000;
/// Yield clamp of an empty poll: at least this (at most the job table's
/// own ceiling, under MCP clients' 60 s timeout).
const MIN_POLL_MS: u64 = 5_000;
/// codex waits this long after typing before it collects output.
const AFTER_WRITE: Duration = Duration::from_millis(100);
/// The most new output one call collects; the rest waits for the next.
const COLLECT_BYTES: usize = 1024 * 1024;
/// codex's terminal size.
const ROWS: u16 = 24;
const COLS: u16 = 80;

/// A connection's state on the codex surface: its processes.
#[derive(Debug)]
pub struct CodexSession {
    jobs: JobTable,
    used: Mutex<HashMap<u64, Instant>>,
}

impl Default for CodexSession {
    fn default() -> Self {
        CodexSession {
            jobs: JobTable::new(JobLimits {
                max_running: MAX_PROCESSES,
                ..JobLimits::default()
            }),
            used: Mutex::new(HashMap::new()),
        }
    }
}

impl CodexSession {
    /// The connection's processes.
    pub fn jobs(&self) -> &JobTable {
        &self.jobs
    }

    fn touch(&self, id: u64) {
        self.used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Instant::now());
    }

    fn forget(&self, id: u64) {
        self.used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        let _ = self.jobs.remove(id);
    }

    /// Makes room for one more process: kills the least recently used
    /// running one outside the newest [`PROTECTED`].
    fn prune(&self) {
        let running: Vec<u64> = self
            .jobs
            .list()
            .iter()
            .filter(|job| job.status().is_running())
            .map(|job| job.id())
            .collect();
        if running.len() < MAX_PROCESSES {
            return;
        }
        let victim = {
            let used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
            let mut by_use: Vec<(Instant, u64)> = running
                .iter()
                .map(|id| (used.get(id).copied().unwrap_or_else(Instant::now), *id))
                .collect();
            by_use.sort();
            by_use
                .len()
                .checked_sub(PROTECTED)
                .and_then(|keep_from| by_use[..keep_from].first().map(|(_, id)| *id))
        };
        if let Some(id) = victim {
            self.forget(id);
        }
    }
}

/// Arguments of `exec_command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExecCommandArgs {
    /// Shell command to execute.
    cmd: String,
    /// Optional working directory to run the command in; defaults to the turn cwd.
    #[serde(default)]
    workdir: Option<String>,
    /// Shell binary to launch. Defaults to the user's default shell.
    #[serde(default)]
    shell: Option<String>,
    /// Whether to allocate a TTY for the command. Defaults to false (plain pipes); set to true to open a PTY and access TTY process.
    #[serde(default)]
    tty: Option<bool>,
    /// How long to wait (in milliseconds) for output before yielding.
    #[serde(default)]
    yield_time_ms: Option<Number>,
    /// Maximum number of tokens to return. Excess output will be truncated.
    #[serde(default)]
    max_output_tokens: Option<Number>,
    /// Whether to run the shell with -l/-i semantics. Defaults to true.
    #[serde(default)]
    login: Option<bool>,
}

/// Arguments of `write_stdin`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteStdinArgs {
    /// Identifier of the running unified exec session.
    session_id: Number,
    /// Bytes to write to stdin (may be empty to poll).
    #[serde(default)]
    chars: Option<String>,
    /// How long to wait (in milliseconds) for output before yielding.
    #[serde(default)]
    yield_time_ms: Option<Number>,
    /// Maximum number of tokens to return. Excess output will be truncated.
    #[serde(default)]
    max_output_tokens: Option<Number>,
}

fn session(call: &CallContext) -> ToolResult<&CodexSession> {
    call.session
        .get::<CodexSession>()
        .ok_or_else(|| ToolError::internal("the call carries no codex session"))
}

/// A number a model sent as milliseconds or tokens: negative and NaN are
/// 0, fractions are dropped.
fn whole(value: Option<&Number>, default: u64) -> u64 {
    match value.map(|n| n.as_f64().unwrap_or(0.0)) {
        None => default,
        Some(v) if v.is_nan() || v <= 0.0 => 0,
        // Saturates at u64::MAX.
        Some(v) => v as u64,
    }
}

fn user_shell() -> String {
    std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/bash".to_owned())
}

pub(crate) fn exec_command(
    services: &Services,
    args: ExecCommandArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let started = Instant::now();
    let session = session(call)?;
    let shell = args
        .shell
        .filter(|s| !s.is_empty())
        .unwrap_or_else(user_shell);
    let flag = if args.login.unwrap_or(true) {
        "-lc"
    } else {
        "-c"
    };
    let workdir = args.workdir.filter(|w| !w.is_empty());
    let failed = |err: ToolError| {
        ToolError::new(
            err.code(),
            format!("exec_command failed: {}", err.message()),
        )
    };
    let request = job_request(
        services,
        CommandLine::Argv(vec![shell, flag.to_owned(), args.cmd]),
        workdir.as_deref(),
        "workdir must be a directory",
    )
    .map_err(failed)?;
    let mode = if args.tty.unwrap_or(false) {
        JobMode::Terminal {
            rows: ROWS,
            cols: COLS,
        }
    } else {
        JobMode::Pipes
    };
    let mut spec = JobSpec::new(request, mode);
    for (key, value) in [
        ("NO_COLOR", "1"),
        ("TERM", "dumb"),
        ("LANG", "C.UTF-8"),
        ("LC_CTYPE", "C.UTF-8"),
        ("LC_ALL", "C.UTF-8"),
        ("COLORTERM", ""),
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
        ("GH_PAGER", "cat"),
        ("CODEX_CI", "1"),
    ] {
        spec = spec.with_env(key, value);
    }
    session.prune();
    let job = session
        .jobs
        .start(spec)
        .map_err(|err| failed(ToolError::from(err)))?;
    session.touch(job.id());
    let yield_ms =
        whole(args.yield_time_ms.as_ref(), EXEC_YIELD_MS).clamp(MIN_YIELD_MS, MAX_YIELD_MS);
    let read = job.read(
        ReadFrom::Cursor,
        COLLECT_BYTES,
        &Wait::until_exit(Duration::from_millis(yield_ms)),
        call.cancel.flag(),
    )?;
    let tokens = whole(args.max_output_tokens.as_ref(), MAX_OUTPUT_TOKENS);
    let text = answer(
        started.elapsed(),
        &read.status,
        FIRST_SESSION_ID - 1 + job.id(),
        &read.text,
        tokens,
    );
    if !read.status.is_running() {
        session.forget(job.id());
    }
    Ok(text)
}

pub(crate) fn write_stdin(
    _: &Services,
    args: WriteStdinArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let started = Instant::now();
    let session = session(call)?;
    let shown = whole(Some(&args.session_id), 0);
    let unknown = || {
        ToolError::new(
            ErrorCode::NotFound,
            format!("write_stdin failed: Unknown process id {shown}"),
        )
    };
    let id = shown
        .checked_sub(FIRST_SESSION_ID - 1)
        .filter(|id| *id > 0)
        .ok_or_else(unknown)?;
    let job = session.jobs.get(id).map_err(|_| unknown())?;
    session.touch(id);
    let chars = args.chars.unwrap_or_default();
    let yield_ms = whole(args.yield_time_ms.as_ref(), WRITE_YIELD_MS);
    let yield_ms = if chars.is_empty() {
        yield_ms.max(MIN_POLL_MS)
    } else {
        match job.write(chars.as_bytes(), &[]) {
            Ok(_) => {}
            Err(JobError::NoStdin(_)) => {
                return Err(ToolError::new(
                    ErrorCode::InvalidInput,
                    "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open",
                ));
            }
            Err(JobError::Exited(_)) => return Err(unknown()),
            Err(err) => {
                let err = ToolError::from(err);
                return Err(ToolError::new(
                    err.code(),
                    format!("write_stdin failed: {}", err.message()),
                ));
            }
        }
        std::thread::sleep(AFTER_WRITE);
        yield_ms.clamp(MIN_YIELD_MS, MAX_YIELD_MS)
    };
    let read = job.read(
        ReadFrom::Cursor,
        COLLECT_BYTES,
        &Wait::until_exit(Duration::from_millis(yield_ms)),
        call.cancel.flag(),
    )?;
    let tokens = whole(args.max_output_tokens.as_ref(), MAX_OUTPUT_TOKENS);
    let text = answer(started.elapsed(), &read.status, shown, &read.text, tokens);
    if !read.status.is_running() {
        session.forget(id);
    }
    Ok(text)
}

/// codex's answer: the chunk id, the wall time, how the process stands,
/// the token count of the whole output and the output, cut in the middle
/// past `max_tokens`.
pub(crate) fn answer(
    wall: Duration,
    status: &JobStatus,
    session_id: u64,
    output: &str,
    max_tokens: u64,
) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "Chunk ID: {}", chunk_id());
    let _ = writeln!(text, "Wall time: {:.4} seconds", wall.as_secs_f64());
    match status {
        JobStatus::Running => {
            let _ = writeln!(text, "Process running with session ID {session_id}");
        }
        JobStatus::Exited { code, .. } => {
            // A death by signal reads -1, as codex reports it.
            let _ = writeln!(text, "Process exited with code {}", code.unwrap_or(-1));
        }
    }
    let tokens = approx_tokens(output.len());
    let _ = writeln!(text, "Original token count: {tokens}");
    text.push_str("Output:\n");
    text.push_str(&truncate(output, max_tokens));
    text
}

/// codex's estimate: four bytes a token, rounded up.
fn approx_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

fn truncate(output: &str, max_tokens: u64) -> String {
    let budget = usize::try_from(max_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
    if output.len() <= budget {
        return output.to_owned();
    }
    let half = budget / 2;
    let mut head_end = half;
    while !output.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = output.len() - half;
    while !output.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let removed = approx_tokens(tail_start - head_end);
    format!(
        "Warning: truncated output (original token count: {})\nTotal output lines: {}\n\n{}…{removed} tokens truncated…{}",
        approx_tokens(output.len()),
        output.lines().count(),
        &output[..head_end],
        &output[tail_start..]
    )
}

/// Six hex digits, different for every chunk.
fn chunk_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let hash = RandomState::new().hash_one((n, Instant::now()));
    format!("{:06x}", hash & 0xff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_have_codex_layout_and_cut_in_the_middle() {
        let running = answer(
            Duration::from_millis(1002),
            &JobStatus::Running,
            1000,
            "hello\n",
            10_000,
        );
        let lines: Vec<&str> = running.lines().collect();
        assert_eq!(lines[0].len(), "Chunk ID: ".len() + 6);
        assert_eq!(
            &lines[1..],
            [
                "Wall time: 1.0020 seconds",
                "Process running with session ID 1000",
                "Original token count: 2",
                "Output:",
                "hello"
            ]
        );
        let exited = answer(
            Duration::ZERO,
            &JobStatus::Exited {
                code: None,
                signal: Some("SIGKILL".into()),
                killed: true,
            },
            1000,
            "",
            10,
        );
        assert!(
            exited.contains("\nProcess exited with code -1\n"),
            "{exited}"
        );
        let long = "a".repeat(100) + "\n" + &"b".repeat(100);
        let cut = truncate(&long, 10);
        assert_eq!(
            cut,
            format!(
                "Warning: truncated output (original token count: 51)\nTotal output lines: 2\n\n{}…41 tokens truncated…{}",
                "a".repeat(20),
                "b".repeat(20)
            )
        );
        assert_eq!(truncate("short", 10), "short");
        let number = |v: f64| Number::from_f64(v).unwrap();
        assert_eq!(whole(Some(&number(-5.0)), 3), 0);
        assert_eq!(whole(Some(&number(2.7)), 3), 2);
        assert_eq!(whole(None, 3), 3);
    }

    fn tools() -> (tempfile::TempDir, agent_tools::AgentTools) {
        let dir = tempfile::tempdir().unwrap();
        let config = agent_tools::Config::builder(dir.path()).build().unwrap();
        let tools = agent_tools::AgentTools::with_surface(config, crate::CodexSurface).unwrap();
        (dir, tools)
    }

    /// The text with its chunk id and wall time, which vary, blanked.
    fn steady(text: &str) -> String {
        text.lines()
            .map(|line| {
                if line.starts_with("Chunk ID: ") {
                    "Chunk ID: [6 hex]".to_owned()
                } else if line.starts_with("Wall time: ") {
                    "Wall time: [seconds]".to_owned()
                } else {
                    line.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_session_is_started_typed_into_and_ends_in_codex_words() {
        let (_dir, tools) = tools();
        let mut transcript = String::new();
        let mut step = |name: &str, args: serde_json::Value| {
            let result = tools.call(name, args.clone());
            transcript.push_str(&format!(
                "--- {name} {args} (error: {})\n{}\n",
                result.is_error,
                steady(&result.text)
            ));
        };
        step(
            "exec_command",
            serde_json::json!({"cmd": "echo hi", "login": false}),
        );
        step(
            "exec_command",
            serde_json::json!({"cmd": "python3 -q -i", "tty": true, "yield_time_ms": 5000, "login": false}),
        );
        step(
            "write_stdin",
            serde_json::json!({"session_id": 1001, "chars": "print(6 * 7)\n", "yield_time_ms": 3000}),
        );
        step(
            "write_stdin",
            serde_json::json!({"session_id": 1001, "chars": "exit()\n", "yield_time_ms": 5000}),
        );
        step(
            "write_stdin",
            serde_json::json!({"session_id": 1001, "chars": ""}),
        );
        step(
            "exec_command",
            serde_json::json!({"cmd": "echo started; sleep 20", "yield_time_ms": 2000, "login": false}),
        );
        step(
            "write_stdin",
            serde_json::json!({"session_id": 1002, "chars": "y\n"}),
        );
        step(
            "write_stdin",
            serde_json::json!({"session_id": 7, "chars": ""}),
        );
        step(
            "exec_command",
            serde_json::json!({"cmd": "seq 1 2000", "max_output_tokens": 20}),
        );
        step(
            "exec_command",
            serde_json::json!({"cmd": "true", "workdir": "missing"}),
        );
        insta::assert_snapshot!(transcript);
    }
}
