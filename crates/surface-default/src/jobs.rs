//! `job_start`, `job_read`, `job_write`, `job_kill`, `job_list`: commands
//! that outlive the call that started them, on the connection's job table.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent_tools::{CallContext, Hints, ToolDef};

/// `job_read`: reads only, but each read without `from` moves the job's
/// cursor, so a repeat answers differently.
pub(crate) const READ_JOB: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: false,
    open_world: false,
};

/// `job_kill`: ends a process; a second kill changes nothing more.
pub(crate) const STOP_JOB: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: true,
    open_world: false,
};
use agent_tools_bash::RunRequest;
use agent_tools_bash::jobs::{
    DEFAULT_COLS, DEFAULT_ROWS, Job, JobMode, JobOrigin, JobRead, JobSpec, JobStatus, JobTable,
    ReadFrom, Wait,
};
use agent_tools_error::{ToolError, ToolResult};
use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::bash::{CommandLine, SPILL_DIR, job_log_file, job_request};
use crate::services::Services;

/// A connection's state on the default surface: its jobs. Dropping it (the
/// connection ended) kills every job still running.
///
/// ```
/// use agent_tools::{CallContext, Session};
/// use agent_tools_surface_default::DefaultSession;
///
/// let context = CallContext::in_session(Session::new(DefaultSession::default()));
/// let session = context.session.get::<DefaultSession>().unwrap();
/// assert!(session.jobs().list().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct DefaultSession {
    jobs: JobTable,
}

impl DefaultSession {
    /// The connection's jobs.
    pub fn jobs(&self) -> &JobTable {
        &self.jobs
    }
}

/// The shell jobs run in when it is there (else `/bin/sh`).
const JOB_SHELL: &str = "/bin/bash";

/// How long `job_start` waits by default (ms).
pub const START_WAIT_MS: u64 = 1000;
/// How long `job_write` waits by default (ms).
pub const WRITE_WAIT_MS: u64 = 500;
/// The longest wait a call may ask for (ms).
pub const MAX_WAIT_MS: u64 = 30_000;

const JOB_START: &str = "Start a shell command (`bash -c`) as a job that keeps running after this call: \
a dev server, a watcher, a REPL, a command that prompts. Returns {job_id, status, pid, output, ...} as \
JSON. tty=true runs it in a terminal (needed to type into it: REPLs, prompts, ssh); otherwise stdin is \
closed and stdout/stderr are pipes. The call waits up to wait_ms (default 1000, at most 30000) and ends \
early when the job exits, when wait_for (a regex) shows up in its output, or, without wait_for, once new \
output has been quiet for 300 ms. output is plain text (escapes stripped, progress lines collapsed); \
PAGER is cat and colour is off. Jobs die when the connection ends; at most 32 run at once (16 with a \
terminal). Read more with job_read, type with job_write, stop with job_kill.";

const JOB_READ: &str = "Read a job's output as plain text. Without from, returns what is new since the \
last read without from; from is a byte offset into the whole output (a negative one counts from the end) \
and leaves that position alone. from/to in the answer give the byte range returned, more says output past \
it exists, dropped_bytes how much fell off the front of the job's log (8 MiB kept per job). wait_ms \
(default 0, at most 30000) waits for exit, for wait_for (a regex) in the new output, or, without it, for \
new output to settle. screen=true adds a terminal job's screen as text (full-screen programs).";

const JOB_WRITE: &str = "Type into a job started with tty=true: input is sent as it is (add \\n or use \
the Enter key to submit a line), then keys, each a name: Enter, Tab, Escape, Backspace, Space, Up, Down, \
Left, Right, Home, End, PageUp, PageDown, Delete, F1..F12, C-a..C-z (C-c interrupts, C-d ends input), \
C-\\. A job without a terminal takes only C-c, C-\\ and C-z, sent as signals. At most 65536 bytes per \
write. cols and rows give the terminal a new size first (the program gets SIGWINCH); either alone keeps \
the other. Then waits like job_read (wait_ms default 500; only output printed after this input ends the \
wait) and returns the new output.";

const JOB_KILL: &str = "Stop a job. TERM (the default) stops its whole process tree, children that left \
its group included: TERM first, KILL 2 s later. INT, HUP, QUIT or KILL are sent once to its process group \
instead. Returns the job's status and unread output; killing an exited job is not an error.";

const JOB_LIST: &str = "List this connection's jobs, running and exited (the 64 newest exited ones are \
kept): job_id, kind, status, pid, command, exit_code, signal, runtime_ms, output_bytes, tty. kind \
\"job\" was started with job_start; kind \"background\" (job_id bg_N) is what a bash command left \
running in the background (`cmd &`): command and exit_code are that bash command's, and it is read \
and killed like a job. Both end with the connection.";

/// The job tools, with their titles and hints.
pub(crate) fn job_tools() -> Vec<ToolDef<Services>> {
    vec![
        ToolDef::typed("job_start", JOB_START, true, start)
            .bounding_itself()
            .bound_to_connection(),
        ToolDef::typed("job_read", JOB_READ, false, read)
            .bounding_itself()
            .bound_to_connection()
            .brief_when(read_is_brief),
        ToolDef::typed("job_write", JOB_WRITE, true, write)
            .bounding_itself()
            .bound_to_connection(),
        ToolDef::typed("job_kill", JOB_KILL, true, kill)
            .bounding_itself()
            .bound_to_connection(),
        ToolDef::typed("job_list", JOB_LIST, false, list)
            .bounding_itself()
            .bound_to_connection(),
    ]
}

/// Arguments of `job_start`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobStartArgs {
    /// The shell command.
    command: String,
    /// Working directory; the workspace root when omitted.
    #[serde(default)]
    cwd: Option<String>,
    /// Run in a terminal (default false): needed to type into the job.
    #[serde(default)]
    tty: bool,
    /// Text typed into the terminal right after the start (tty only).
    #[serde(default)]
    #[schemars(length(max = 65536))]
    input: Option<String>,
    /// Milliseconds to wait for output (default 1000, at most 30000).
    #[serde(default)]
    #[schemars(range(max = 30000))]
    wait_ms: Option<u64>,
    /// A regex: stop waiting once the output matches it.
    #[serde(default)]
    #[schemars(length(min = 1, max = 1000))]
    wait_for: Option<String>,
    /// Terminal width (default 120, 20 to 400).
    #[serde(default)]
    #[schemars(range(min = 20, max = 400))]
    cols: Option<u16>,
    /// Terminal height (default 40, 5 to 200).
    #[serde(default)]
    #[schemars(range(min = 5, max = 200))]
    rows: Option<u16>,
}

/// Arguments of `job_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobReadArgs {
    /// The job's id (e.g. "job_1", or "bg_1" for a background one).
    job_id: String,
    /// Byte offset to read from; negative counts from the end. Omitted:
    /// what is new since the last read.
    #[serde(default)]
    from: Option<i64>,
    /// The most bytes of output to return, at least 1 (default and
    /// ceiling: the server's output budget).
    #[serde(default)]
    #[schemars(range(min = 1))]
    max_bytes: Option<u64>,
    /// Milliseconds to wait for output (default 0, at most 30000).
    #[serde(default)]
    #[schemars(range(max = 30000))]
    wait_ms: Option<u64>,
    /// A regex: stop waiting once the new output matches it.
    #[serde(default)]
    #[schemars(length(min = 1, max = 1000))]
    wait_for: Option<String>,
    /// Also return a terminal job's screen as text (default false).
    #[serde(default)]
    screen: bool,
}

/// Whether `job_read` of `args` is brief (see `ToolDef::brief_when`): a
/// poll that does not wait and wants no screen only copies at most one
/// answer's worth of the log, under a lock no call holds while it waits
/// (a job's reader holds it for one chunk). Anything else may wait, so it
/// gets a thread of its own.
fn read_is_brief(_: &Services, args: &Map<String, Value>) -> bool {
    is_poll(args)
}

/// Whether `job_read`'s `args` ask neither for a wait nor for a screen.
fn is_poll(args: &Map<String, Value>) -> bool {
    let no_wait = match args.get("wait_ms") {
        None | Some(Value::Null) => true,
        Some(ms) => ms.as_u64() == Some(0),
    };
    let no_screen = args
        .get("screen")
        .is_none_or(|screen| matches!(screen, Value::Null | Value::Bool(false)));
    no_wait && no_screen && args.get("wait_for").is_none_or(Value::is_null)
}

/// Arguments of `job_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobWriteArgs {
    /// The job's id (e.g. "job_1", or "bg_1" for a background one).
    job_id: String,
    /// Text to type, as it is.
    #[serde(default)]
    #[schemars(length(max = 65536))]
    input: Option<String>,
    /// Key names typed after the input, in order.
    #[serde(default)]
    #[schemars(length(max = 64))]
    keys: Option<Vec<String>>,
    /// Milliseconds to wait for output (default 500, at most 30000).
    #[serde(default)]
    #[schemars(range(max = 30000))]
    wait_ms: Option<u64>,
    /// A regex: stop waiting once the new output matches it.
    #[serde(default)]
    #[schemars(length(min = 1, max = 1000))]
    wait_for: Option<String>,
    /// New terminal width (20 to 400; tty jobs only), set before typing.
    #[serde(default)]
    #[schemars(range(min = 20, max = 400))]
    cols: Option<u16>,
    /// New terminal height (5 to 200; tty jobs only), set before typing.
    #[serde(default)]
    #[schemars(range(min = 5, max = 200))]
    rows: Option<u16>,
}

/// A signal `job_kill` sends.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub(crate) enum KillSignal {
    /// Stop the whole tree: TERM, then KILL after 2 s.
    #[serde(rename = "TERM")]
    Term,
    /// Interrupt, once.
    #[serde(rename = "INT")]
    Int,
    /// Hang up, once.
    #[serde(rename = "HUP")]
    Hup,
    /// Quit, once.
    #[serde(rename = "QUIT")]
    Quit,
    /// Kill the process group at once.
    #[serde(rename = "KILL")]
    Kill,
}

/// Arguments of `job_kill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobKillArgs {
    /// The job's id (e.g. "job_1", or "bg_1" for a background one).
    job_id: String,
    /// TERM (default), INT, HUP, QUIT or KILL.
    #[serde(default)]
    signal: Option<KillSignal>,
}

/// Arguments of `job_list` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobListArgs {}

fn session(call: &CallContext) -> ToolResult<&DefaultSession> {
    call.session
        .get::<DefaultSession>()
        .ok_or_else(|| ToolError::internal("the call carries no session for jobs"))
}

/// The connection's job that `raw` names.
fn job_of(call: &CallContext, raw: &str) -> ToolResult<Arc<Job>> {
    let jobs = &session(call)?.jobs;
    match parse_id(raw)? {
        (JobOrigin::Started, id) => jobs.get(id),
        (JobOrigin::Background, id) => jobs.background(id),
    }
    .map_err(ToolError::from)
}

/// The prefix of the ids of what `bash` commands left in the background.
const BACKGROUND_PREFIX: &str = "bg_";

/// `job_3` (or `3`) to a started job's 3; `bg_3` to a background one's.
fn parse_id(raw: &str) -> ToolResult<(JobOrigin, u64)> {
    let raw_trimmed = raw.trim();
    let (origin, number) = match raw_trimmed.strip_prefix(BACKGROUND_PREFIX) {
        Some(number) => (JobOrigin::Background, number),
        None => (
            JobOrigin::Started,
            raw_trimmed.strip_prefix("job_").unwrap_or(raw_trimmed),
        ),
    };
    number.parse().map(|id| (origin, id)).map_err(|_| {
        ToolError::invalid_input(format!(
            "job_id {raw:?} is not a job id like \"job_1\" (or \"bg_1\")"
        ))
    })
}

/// The id a job is shown with: `job_N`, or `bg_N` for what a `bash`
/// command left in the background.
fn job_name(job: &Job) -> String {
    match job.origin() {
        JobOrigin::Started => format!("job_{}", job.id()),
        JobOrigin::Background => format!("{BACKGROUND_PREFIX}{}", job.id()),
    }
}

fn pattern(raw: Option<&str>) -> ToolResult<Option<Regex>> {
    raw.map(|raw| {
        RegexBuilder::new(raw)
            .multi_line(true)
            .size_limit(1 << 20)
            .build()
            .map_err(|err| {
                ToolError::invalid_input(format!("wait_for is not a valid regex: {err}"))
            })
    })
    .transpose()
}

fn wait(ms: Option<u64>, default_ms: u64, wait_for: Option<&str>) -> ToolResult<Wait> {
    let max = Duration::from_millis(ms.unwrap_or(default_ms).min(MAX_WAIT_MS));
    Ok(Wait::for_output(max, pattern(wait_for)?))
}

/// Bytes of output one answer may carry: half the output budget less room
/// for the fields, since JSON may double every byte (`\n`, `\"`).
fn output_budget(services: &Services, screen: bool) -> usize {
    let budget = services
        .config
        .max_output_bytes()
        .saturating_sub(1024)
        .max(512)
        / 2;
    if screen { budget / 2 } else { budget }
}

static LOG_COUNTER: AtomicU64 = AtomicU64::new(0);

fn start(services: &Services, args: JobStartArgs, call: &CallContext) -> ToolResult<String> {
    let table = &session(call)?.jobs;
    if args.input.is_some() && !args.tty {
        return Err(ToolError::invalid_input(
            "input needs tty=true: a job without a terminal has its stdin closed",
        ));
    }
    let mut wait = wait(args.wait_ms, START_WAIT_MS, args.wait_for.as_deref())?;
    let mut request: RunRequest = job_request(
        services,
        CommandLine::Shell(args.command),
        args.cwd.as_deref(),
        "cwd must be a directory",
    )?;
    if std::path::Path::new(JOB_SHELL).exists() {
        // bash, unlike a plain sh, does not die of a Ctrl-C its foreground
        // program handled (a REPL's KeyboardInterrupt) once that program
        // exits normally.
        request = request.with_shell(JOB_SHELL);
    }
    let mode = if args.tty {
        JobMode::Terminal {
            rows: args.rows.unwrap_or(DEFAULT_ROWS),
            cols: args.cols.unwrap_or(DEFAULT_COLS),
        }
    } else {
        JobMode::Pipes
    };
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let name = format!(
        "job-{millis}-{}-{}.log",
        std::process::id(),
        LOG_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mut spec = JobSpec::new(request, mode);
    // The log file is a convenience; a job runs without one.
    if let Ok(file) = job_log_file(services, &name) {
        spec = spec.with_log_file(file, format!("{SPILL_DIR}/{name}"));
    }
    let job = table.start(spec).map_err(ToolError::from)?;
    if let Some(input) = &args.input {
        wait = wait.after(job.output_end());
        job.write(input.as_bytes(), &[]).map_err(ToolError::from)?;
    }
    new_output(services, &job, &wait, call)
}

fn read(services: &Services, args: JobReadArgs, call: &CallContext) -> ToolResult<String> {
    let job = job_of(call, &args.job_id)?;
    let wait = wait(args.wait_ms, 0, args.wait_for.as_deref())?;
    let from = match args.from {
        None => ReadFrom::Cursor,
        Some(from) if from < 0 => ReadFrom::Tail(from.unsigned_abs()),
        Some(from) => ReadFrom::Offset(from.unsigned_abs()),
    };
    let budget = output_budget(services, args.screen);
    let max = args.max_bytes.map_or(budget, |m| {
        usize::try_from(m).unwrap_or(usize::MAX).min(budget)
    });
    let read = job
        .read(from, max, &wait, call.cancel.flag())
        .map_err(ToolError::from)?;
    let screen = if args.screen {
        Some(screen_of(&job, budget))
    } else {
        None
    };
    Ok(view(&job, &read, screen).to_string())
}

fn write(services: &Services, args: JobWriteArgs, call: &CallContext) -> ToolResult<String> {
    let job = job_of(call, &args.job_id)?;
    let mut wait = wait(args.wait_ms, WRITE_WAIT_MS, args.wait_for.as_deref())?;
    let input = args.input.unwrap_or_default();
    let keys = args.keys.unwrap_or_default();
    let resize = args.cols.is_some() || args.rows.is_some();
    if input.is_empty() && keys.is_empty() && !resize {
        return Err(ToolError::invalid_input(
            "give input, keys, a new size (cols, rows) or several of them",
        ));
    }
    if resize {
        // A dimension not given stays as it is; a job without a terminal
        // has none and is refused by the resize.
        let (rows, cols) = job
            .screen()
            .map_or((DEFAULT_ROWS, DEFAULT_COLS), |screen| screen.size);
        job.resize(args.rows.unwrap_or(rows), args.cols.unwrap_or(cols))
            .map_err(ToolError::from)?;
    }
    if !input.is_empty() || !keys.is_empty() {
        // The answer to this input is what the wait is for: output that
        // came before it (a prompt not yet read) is returned but does not
        // end the wait.
        wait = wait.after(job.output_end());
        job.write(input.as_bytes(), &keys)
            .map_err(ToolError::from)?;
    }
    new_output(services, &job, &wait, call)
}

fn kill(services: &Services, args: JobKillArgs, call: &CallContext) -> ToolResult<String> {
    use agent_tools_bash::jobs::Signal;
    let job = job_of(call, &args.job_id)?;
    let signal = match args.signal.unwrap_or(KillSignal::Term) {
        KillSignal::Term => Signal::SIGTERM,
        KillSignal::Int => Signal::SIGINT,
        KillSignal::Hup => Signal::SIGHUP,
        KillSignal::Quit => Signal::SIGQUIT,
        KillSignal::Kill => Signal::SIGKILL,
    };
    job.kill(signal);
    new_output(
        services,
        &job,
        &Wait::until_exit(agent_tools_bash::jobs::EXIT_DRAIN),
        call,
    )
}

fn list(services: &Services, _: JobListArgs, call: &CallContext) -> ToolResult<String> {
    let table = &session(call)?.jobs;
    let mut jobs = table.list();
    jobs.extend(table.backgrounds());
    // Oldest first, so that a list over the budget keeps the newest.
    jobs.sort_by_key(|job| job.started_at());
    let budget = services.config.max_output_bytes();
    let mut rows = Vec::new();
    let mut size = 16;
    for job in jobs.iter().rev() {
        let row = list_row(job);
        size += row.to_string().len() + 1;
        if size > budget {
            break;
        }
        rows.push(row);
    }
    rows.reverse();
    Ok(json!({"jobs": rows}).to_string())
}

fn list_row(job: &Arc<Job>) -> Value {
    let status = job.status();
    let (exit_code, signal) = exit_of(&status);
    let kind = match job.origin() {
        JobOrigin::Started => "job",
        JobOrigin::Background => "background",
    };
    json!({
        "job_id": job_name(job),
        "kind": kind,
        "status": status.name(),
        "pid": job.pid(),
        "command": job.command(),
        "exit_code": exit_code,
        "signal": signal,
        "runtime_ms": u64::try_from(job.runtime().as_millis()).unwrap_or(u64::MAX),
        "output_bytes": job.output_end(),
        "tty": job.mode().is_terminal(),
    })
}

fn exit_of(status: &JobStatus) -> (Value, Value) {
    match status {
        JobStatus::Running => (Value::Null, Value::Null),
        JobStatus::Exited { code, signal, .. } => (json!(code), json!(signal)),
    }
}

fn screen_of(job: &Job, budget: usize) -> Value {
    match job.screen() {
        None => Value::Null,
        Some(screen) => {
            let mut text = screen.text;
            if text.len() > budget {
                let mut cut = budget;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            json!({
                "text": text,
                "alternate_screen": screen.alternate,
                "cursor": [screen.cursor.0, screen.cursor.1],
                "rows": screen.size.0,
                "cols": screen.size.1,
            })
        }
    }
}

/// A label for output that ends on what looks like a question or a prompt
/// while the job is quiet; it never ends a wait.
fn hint(job: &Job, read: &JobRead) -> Value {
    if !read.status.is_running() || read.more || job.quiet_for() < agent_tools_bash::jobs::SETTLE {
        return Value::Null;
    }
    let last = read.text.rsplit('\n').next().unwrap_or("");
    if looks_like_prompt(last) {
        json!("the job seems to wait for input; answer with job_write")
    } else {
        Value::Null
    }
}

fn looks_like_prompt(line: &str) -> bool {
    static PROMPT: std::sync::LazyLock<Option<Regex>> = std::sync::LazyLock::new(|| {
        Regex::new(
            r"(?i)(\(y/n\)|\[y/n\]|\(yes/no\)|password[^:]*:|passphrase[^:]*:|continue\?|overwrite\?|press (any key|enter)|(>>>|\.\.\.|[>$#%:?]) ?)\s*$",
        )
        .ok()
    });
    !line.trim().is_empty() && PROMPT.as_ref().is_some_and(|re| re.is_match(line))
}

/// The job's output since the last read (waiting as `wait` says), as the
/// answer of a start, a write or a kill shows it.
fn new_output(
    services: &Services,
    job: &Job,
    wait: &Wait,
    call: &CallContext,
) -> ToolResult<String> {
    let read = job
        .read(
            ReadFrom::Cursor,
            output_budget(services, false),
            wait,
            call.cancel.flag(),
        )
        .map_err(ToolError::from)?;
    Ok(view(job, &read, None).to_string())
}

fn view(job: &Job, read: &JobRead, screen: Option<Value>) -> Value {
    let (exit_code, signal) = exit_of(&read.status);
    let mut object = Map::new();
    object.insert("job_id".into(), json!(job_name(job)));
    object.insert("status".into(), json!(read.status.name()));
    object.insert("pid".into(), json!(job.pid()));
    object.insert("exit_code".into(), exit_code);
    object.insert("signal".into(), signal);
    object.insert("output".into(), json!(read.text));
    object.insert("from".into(), json!(read.from));
    object.insert("to".into(), json!(read.to));
    object.insert("more".into(), json!(read.more));
    object.insert("dropped_bytes".into(), json!(read.dropped_bytes));
    object.insert("matched".into(), json!(read.matched));
    object.insert(
        "waited_ms".into(),
        json!(u64::try_from(read.waited.as_millis()).unwrap_or(u64::MAX)),
    );
    object.insert("log".into(), json!(job.log_file()));
    object.insert("hint".into(), hint(job, read));
    if let Some(screen) = screen {
        object.insert("screen".into(), screen);
    }
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_state_the_constants() {
        use agent_tools_bash::jobs::{
            DEFAULT_MAX_EXITED_JOBS, DEFAULT_MAX_LOG_BYTES, DEFAULT_MAX_RUNNING_JOBS,
            DEFAULT_MAX_TERMINAL_JOBS, DEFAULT_MAX_WRITE_BYTES, SETTLE,
        };
        assert!(JOB_START.contains(&format!("default {START_WAIT_MS}, at most {MAX_WAIT_MS}")));
        assert!(JOB_START.contains(&format!("quiet for {} ms", SETTLE.as_millis())));
        assert!(JOB_START.contains(&format!(
            "at most {DEFAULT_MAX_RUNNING_JOBS} run at once ({DEFAULT_MAX_TERMINAL_JOBS} with a"
        )));
        assert!(JOB_READ.contains(&format!("{} MiB kept per job", DEFAULT_MAX_LOG_BYTES >> 20)));
        assert!(JOB_READ.contains(&format!("at most {MAX_WAIT_MS}")));
        assert!(JOB_WRITE.contains(&format!("At most {DEFAULT_MAX_WRITE_BYTES} bytes")));
        assert!(JOB_WRITE.contains(&format!("wait_ms default {WRITE_WAIT_MS}")));
        assert!(JOB_LIST.contains(&format!("the {DEFAULT_MAX_EXITED_JOBS} newest exited")));
        assert!(JOB_KILL.contains(&format!(
            "KILL {} s later",
            agent_tools_bash::KILL_GRACE.as_secs()
        )));
    }

    #[test]
    fn only_polls_that_neither_wait_nor_draw_are_brief() {
        let brief = |args: Value| is_poll(args.as_object().unwrap());
        assert!(brief(json!({"job_id": "job_1"})));
        assert!(brief(
            json!({"job_id": "job_1", "wait_ms": 0, "from": -100})
        ));
        assert!(brief(json!({"job_id": "job_1", "screen": false})));
        assert!(!brief(json!({"job_id": "job_1", "wait_ms": 1})));
        assert!(!brief(json!({"job_id": "job_1", "wait_ms": "0"})));
        assert!(!brief(json!({"job_id": "job_1", "wait_for": "x"})));
        assert!(!brief(json!({"job_id": "job_1", "screen": true})));
    }

    #[test]
    fn ids_and_prompts() {
        assert_eq!(parse_id("job_3").unwrap(), (JobOrigin::Started, 3));
        assert_eq!(parse_id("7").unwrap(), (JobOrigin::Started, 7));
        assert_eq!(parse_id("bg_2").unwrap(), (JobOrigin::Background, 2));
        assert!(parse_id("bash_1").is_err());
        assert!(parse_id("bg_x").is_err());
        assert!(looks_like_prompt(">>> "));
        assert!(looks_like_prompt("Continue? (y/n) "));
        assert!(looks_like_prompt("Password: "));
        assert!(!looks_like_prompt("collecting 12 items"));
        assert!(!looks_like_prompt(""));
        assert!(pattern(Some("(")).is_err());
    }
}
