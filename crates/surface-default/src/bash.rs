//! `bash`: the command runner, with its working directory confined.

use std::collections::BTreeMap;
use std::io::Write;
use std::num::NonZeroU64;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::args::BashArgs;
use agent_tools_bash::jobs::JobTable;
use agent_tools_bash::{OutputLimits, RunError, RunOutcome, RunRequest, SpillOpener};
use agent_tools_confine::{ConfinedPath, Workspace};
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use cap_std::fs::OpenOptions;
use serde_json::{Map, Value};

use crate::services::Services;
use agent_tools::CallContext;
use agent_tools::Config;
use agent_tools::ToolDef;

/// Where overflowing command output is kept, relative to the workspace root.
pub const SPILL_DIR: &str = ".agent-tools/spill";

const BASH: &str = "Run a shell command with `sh -c` in the workspace (or in cwd, inside it) and return \
{exit_code, stdout, stderr, signal, timed_out} as JSON. A non-zero exit is a normal result. stdin is \
closed; the call waits for the command to finish, so start servers in the background with their output \
redirected (e.g. `npm start > /tmp/out.log 2>&1 &`). timeout_ms defaults to 120000 and is capped by the \
server; on timeout the command's whole process group is killed and the partial output returned. Output \
beyond the budget is saved complete to a file under .agent-tools/spill/ named in the result; read it with \
read_file.";

pub(crate) fn bash_tool() -> ToolDef<Services> {
    ToolDef::typed("bash", BASH, true, run).bounding_itself()
}

/// Each stream may hold this much in memory before the command is killed
/// with output_limit; everything past the inline budget also goes to disk.
const HARD_CEILING_PER_STREAM: u64 = agent_tools_bash::DEFAULT_HARD_CEILING_PER_STREAM;

/// What to run: a shell command line, or a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    /// Run with `sh -c`.
    Shell(String),
    /// Run directly: the program (looked up in `PATH` when it has no `/`)
    /// and its arguments, each passed as it is.
    Argv(Vec<String>),
}

/// Runs `command` the way the default surface's `bash` tool does: in `cwd`
/// (the root when `None`; confined, `cwd_hint` names the argument in
/// errors), through the configured launcher, with the timeout clamped to
/// the server's maximum, stdout and stderr sharing `inline_budget` bytes
/// and the rest spilled under [`SPILL_DIR`], cancelled with the call.
/// What the command leaves running in the background becomes a job of
/// `jobs`, the connection's table, when given ([`Config::run_command`]).
///
/// The outcome and the error are the runner's: a timeout, a passed output
/// ceiling and a cancellation each carry the partial output, for the
/// surface to show in its own shape.
#[expect(
    clippy::too_many_arguments,
    reason = "each surface's command tool passes its own values; a struct would only rename them"
)]
pub fn run_command(
    services: &Services,
    command: CommandLine,
    cwd: Option<&str>,
    cwd_hint: &str,
    timeout_ms: Option<u64>,
    inline_budget: usize,
    jobs: Option<&JobTable>,
    call: &CallContext,
) -> Result<RunOutcome, RunError> {
    let workspace = services.files.workspace();
    let cwd = workspace.resolve_dir(cwd, cwd_hint)?;
    let spill = spill_folder(workspace)?;
    let config = &services.config;
    let timeout = agent_tools_bash::clamp_timeout(timeout_ms, config.bash_timeout_max_ms());
    let ceiling = NonZeroU64::new(HARD_CEILING_PER_STREAM).unwrap_or(NonZeroU64::MIN);
    sweep_spill_folder(workspace, &spill);
    let request = match command {
        CommandLine::Shell(line) => RunRequest::new(line, cwd.abs().to_path_buf(), spill.abs())?,
        CommandLine::Argv(argv) => RunRequest::argv(argv, cwd.abs().to_path_buf(), spill.abs())?,
    };
    let request = config.confine_command(
        request
            .with_timeout(timeout)
            .with_limits(OutputLimits::new(inline_budget, ceiling))
            .with_spill_display_dir(SPILL_DIR)
            .with_spill_opener(confined_spill_opener(workspace, &spill)?),
    );
    config.run_command(&request, jobs, call.cancel.flag())
}

/// The request a job of the default surface (and of the surfaces built on
/// it) runs: `command` in `cwd` (the root when `None`; confined,
/// `cwd_hint` names the argument in errors), through the configured
/// launcher and sandbox, exactly as `bash` runs a command.
pub fn job_request(
    services: &Services,
    command: CommandLine,
    cwd: Option<&str>,
    cwd_hint: &str,
) -> ToolResult<RunRequest> {
    let workspace = services.files.workspace();
    let cwd = workspace.resolve_dir(cwd, cwd_hint)?;
    let spill = spill_folder(workspace)?;
    let request = match command {
        CommandLine::Shell(line) => RunRequest::new(line, cwd.abs().to_path_buf(), spill.abs())?,
        CommandLine::Argv(argv) => RunRequest::argv(argv, cwd.abs().to_path_buf(), spill.abs())?,
    };
    Ok(services.config.confine_command(request))
}

/// Creates the file `name` in the spill folder, through confinement, for a
/// job's raw output.
pub fn job_log_file(services: &Services, name: &str) -> ToolResult<std::fs::File> {
    let workspace = services.files.workspace();
    let spill = spill_folder(workspace)?;
    confined_spill_opener(workspace, &spill)?
        .open(name)
        .map_err(|err| {
            ToolError::new(
                ErrorCode::IoError,
                format!("cannot create a job log: {err}"),
            )
        })
}

/// The spill folder, through confinement like any path: a planted
/// `.agent-tools` symlink must not make the tool write outside the root.
fn spill_folder(workspace: &Workspace) -> ToolResult<ConfinedPath> {
    workspace.resolve(SPILL_DIR).map_err(|err| {
        if err.code() == ErrorCode::PathEscape {
            ToolError::new(
                ErrorCode::PathEscape,
                format!(
                    "the spill folder {SPILL_DIR} resolves outside the workspace root ({}); remove or fix that link",
                    err.message()
                ),
            )
        } else {
            err
        }
    })
}

fn run(services: &Services, args: BashArgs, call: &CallContext) -> ToolResult<String> {
    let workspace = services.files.workspace();
    // Resolved before the run: what the command does to the folder later
    // cannot redirect the facade's own spill files.
    let spill = spill_folder(workspace)?;
    let max_output = services.config.max_output_bytes();
    // Leave room for the JSON around the two streams inside the output cap.
    let inline_budget = max_output.saturating_sub(512).max(256);
    let result = run_command(
        services,
        CommandLine::Shell(args.command),
        args.cwd.as_deref(),
        "cwd must be a directory",
        args.timeout_ms,
        inline_budget,
        call.session
            .get::<crate::jobs::DefaultSession>()
            .map(crate::jobs::DefaultSession::jobs),
        call,
    );
    let spiller = Spiller {
        workspace,
        dir: &spill,
    };
    match result {
        Ok(outcome) => {
            let Value::Object(mut object) = outcome.to_json() else {
                return Err(ToolError::internal("a run outcome is not a JSON object"));
            };
            if let Some(note) = sandbox_refusal_note(&services.config, &outcome) {
                object.insert(SANDBOX_NOTE_FIELD.into(), Value::String(note));
            }
            fit_streams(&mut object, max_output, &spiller, |o| {
                Value::Object(o.clone()).to_string().len()
            })?;
            Ok(Value::Object(object).to_string())
        }
        Err(err) => Err(stopped_envelope(err, max_output, &spiller)?),
    }
}

/// The error of a command that did not finish, as this surface's envelope
/// shows it. The `timeout` and `output_limit` envelopes carry the partial
/// output (the outcome's fields but the exit code and signal: the code says
/// how it ended), bounded like a result; a cancelled call is `internal`,
/// whose envelope carries nothing, and a failure has no output.
fn stopped_envelope(
    err: RunError,
    max_output: usize,
    spiller: &Spiller<'_>,
) -> ToolResult<ToolError> {
    let partial = match &err {
        RunError::TimedOut { partial, .. } | RunError::OverCeiling { partial, .. } => {
            partial.to_json()
        }
        RunError::Cancelled { .. } | RunError::Failed(_) => return Ok(err.into()),
    };
    let Value::Object(mut fields) = partial else {
        return Err(ToolError::internal("a run outcome is not a JSON object"));
    };
    fields.remove("exit_code");
    fields.remove("signal");
    let bare = ToolError::from(err);
    let rebuild = |fields: &Map<String, Value>| {
        fields
            .iter()
            .fold(bare.clone(), |e, (k, v)| e.with_field(k.clone(), v.clone()))
    };
    fit_streams(&mut fields, max_output, spiller, |f| {
        rebuild(f).to_envelope_value().to_string().len()
    })?;
    Ok(rebuild(&fields))
}

/// The field of a `bash` result that says the sandbox may have refused the
/// command something.
pub(crate) const SANDBOX_NOTE_FIELD: &str = "sandbox";

/// When a sandboxed command failed with a refusal in its output: one
/// sentence for the model saying what the sandbox allows, so that it does
/// not retry a refused write or connection blindly. Every surface's command
/// tool adds it in its own place (the default `bash` as a field, the others
/// as a line). "may": the refusal is read from the command's messages, not
/// known.
pub fn sandbox_refusal_note(config: &Config, outcome: &RunOutcome) -> Option<String> {
    config
        .sandbox()
        .filter(|_| outcome.maybe_sandbox_refusal)
        .map(|sandbox| sandbox_note(sandbox.policy()))
}

fn sandbox_note(policy: &agent_tools::SandboxPolicy) -> String {
    let writes = if policy.writable().is_empty() {
        "nowhere in the workspace (it is read-only)"
    } else if policy.vcs_writes() {
        "only inside the workspace"
    } else {
        "only inside the workspace (not in .git or other version-control folders)"
    };
    let network = if policy.network() {
        ""
    } else {
        "; the network is off"
    };
    format!(
        "the sandbox may have refused this: commands can write {writes}, in $TMPDIR and to /dev/null, and change no file's owner or extended attributes{network}"
    )
}

/// Spill files are created through the workspace's directory handle, by
/// their path below it, at the moment they are needed: a command that swaps
/// the spill folder for a link leading out of the root while it runs gets
/// `path_escape`, and nothing is written outside.
fn confined_spill_opener(workspace: &Workspace, spill: &ConfinedPath) -> ToolResult<SpillOpener> {
    let base = workspace
        .base_dir()
        .try_clone()
        .map_err(|err| workspace.io_error(&err, spill))?;
    let rel = spill.rel().to_path_buf();
    Ok(SpillOpener::new(move |name| {
        let escaped = |err: std::io::Error| {
            if agent_tools_confine::is_escape_error(&err) {
                std::io::Error::other(ToolError::new(
                    ErrorCode::PathEscape,
                    format!(
                        "the spill folder {SPILL_DIR} now leads outside the workspace root; the output was not saved"
                    ),
                ))
            } else {
                err
            }
        };
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let path = rel.join(name);
        let opened = match base.open_with(&path, &options) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                // The folder is made on first use. Its own failure (say, a
                // link in the way) shows in the second open, which is the
                // error worth reporting.
                let _ = base.create_dir_all(&rel);
                base.open_with(&path, &options)
            }
            other => other,
        };
        opened.map(cap_std::fs::File::into_std).map_err(escaped)
    }))
}

/// Spill files older than this are deleted.
const SPILL_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);
/// At most this many spill files are kept; beyond it the oldest go, but
/// only among those older than [`SPILL_MIN_AGE`].
const SPILL_MAX_FILES: usize = 256;
/// A spill file younger than this is never deleted: a call may still be
/// writing it, or the agent about to read it.
const SPILL_MIN_AGE: Duration = Duration::from_secs(60 * 60);
/// The folder is swept at most this often per process.
const SPILL_SWEEP_EVERY: Duration = Duration::from_secs(10 * 60);

/// Deletes old spill files: those past [`SPILL_MAX_AGE`], and the oldest past
/// [`SPILL_MAX_FILES`]. Runs on the first `bash` call of the process and
/// then at most every [`SPILL_SWEEP_EVERY`] per spill folder. Only regular files named
/// `bash-*` are touched, through the directory handle; failures are ignored
/// (a sweep is housekeeping, never a reason to fail a call).
fn sweep_spill_folder(workspace: &Workspace, spill: &ConfinedPath) {
    // When each spill folder was last swept (one per workspace root).
    static LAST_SWEEP: Mutex<BTreeMap<PathBuf, SystemTime>> = Mutex::new(BTreeMap::new());
    let now = SystemTime::now();
    {
        let Ok(mut swept) = LAST_SWEEP.lock() else {
            return;
        };
        let key = spill.abs().to_path_buf();
        if swept
            .get(&key)
            .and_then(|at| now.duration_since(*at).ok())
            .is_some_and(|since| since < SPILL_SWEEP_EVERY)
        {
            return;
        }
        swept.insert(key, now);
    }
    let Ok(dir) = workspace.open_dir(spill) else {
        return;
    };
    let Ok(entries) = dir.entries() else { return };
    let mut kept = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with("bash-") {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m.into_std()).ok())
            .unwrap_or(Duration::ZERO);
        if age >= SPILL_MAX_AGE {
            let _ = dir.remove_file(name);
        } else {
            kept.push((age, name.to_owned()));
        }
    }
    if kept.len() > SPILL_MAX_FILES {
        // Youngest first; everything past the cap that is old enough goes.
        kept.sort();
        for (age, name) in kept.into_iter().skip(SPILL_MAX_FILES) {
            if age >= SPILL_MIN_AGE {
                let _ = dir.remove_file(&name);
            }
        }
    }
}

/// Writes a stream the facade had to cut into a spill file of its own.
struct Spiller<'a> {
    workspace: &'a Workspace,
    dir: &'a ConfinedPath,
}

impl Spiller<'_> {
    /// Saves `text` as `<id>.<stream>` in the spill folder; returns the path
    /// to show (relative to the root).
    fn save(&self, stream: &str, text: &str) -> ToolResult<String> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = self.workspace.base_dir();
        let rel = self.dir.rel();
        base.create_dir_all(rel)
            .map_err(|err| self.workspace.io_error(&err, self.dir))?;
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let mut attempt = 0u32;
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = format!("bash-{millis}-{}-cut{n}.{stream}", std::process::id());
            match base.open_with(rel.join(&name), &options) {
                Ok(file) => {
                    let mut file = file.into_std();
                    file.write_all(text.as_bytes())
                        .map_err(|err| self.workspace.io_error(&err, self.dir))?;
                    return Ok(format!("{SPILL_DIR}/{name}"));
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && attempt < 16 => {
                    attempt += 1;
                }
                Err(err) => return Err(self.workspace.io_error(&err, self.dir)),
            }
        }
    }
}

/// The runner keeps the escaped size of stdout and stderr within the inline
/// budget, but invalid UTF-8 (each bad byte may become a three-byte U+FFFD)
/// and the fields around the streams can still push the result past
/// `max_output_bytes`, and the tool is not cut by dispatch (cutting it
/// would break the JSON). Shortens the inline streams, longest first, until
/// the measured text fits; a stream cut here that had no spill file gets
/// one, so no output is lost, and `truncated` is set.
fn fit_streams(
    object: &mut Map<String, Value>,
    max: usize,
    spiller: &Spiller<'_>,
    measure: impl Fn(&Map<String, Value>) -> usize,
) -> ToolResult<()> {
    for _ in 0..16 {
        let len = measure(object);
        if len <= max {
            return Ok(());
        }
        let over = len - max;
        let inline_len = |key: &str| object.get(key).and_then(Value::as_str).map_or(0, str::len);
        let stream = if inline_len("stdout") >= inline_len("stderr") {
            "stdout"
        } else {
            "stderr"
        };
        let Some(Value::String(text)) = object.get(stream) else {
            break;
        };
        if text.is_empty() {
            break;
        }
        let spill_key = format!("{stream}_spill");
        if !object.contains_key(&spill_key) {
            let shown = spiller.save(stream, text)?;
            object.insert(spill_key, Value::String(shown));
        }
        object.insert("truncated".into(), Value::Bool(true));
        let Some(Value::String(text)) = object.get_mut(stream) else {
            break;
        };
        // Drop characters from the end until their escaped size covers the
        // excess: no more is cut than needed, however heavily they escape.
        let mut keep = text.len();
        let mut dropped = 0;
        for (at, ch) in text.char_indices().rev() {
            if dropped >= over {
                break;
            }
            let mut utf8 = [0u8; 4];
            dropped += ch
                .encode_utf8(&mut utf8)
                .bytes()
                .map(agent_tools_bash::json_escaped_len)
                .sum::<usize>();
            keep = at;
        }
        text.truncate(keep);
    }
    if measure(object) > max {
        return Err(ToolError::internal(
            "the bash result does not fit in max_output_bytes even without its output",
        ));
    }
    Ok(())
}
