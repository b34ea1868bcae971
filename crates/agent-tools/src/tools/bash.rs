//! `bash`: the command runner, with its working directory confined.

use std::io::Write;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use agent_tools_bash::{OutputLimits, RunRequest};
use agent_tools_confine::{ConfinedPath, Workspace};
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use cap_std::fs::OpenOptions;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::dispatch::CallContext;
use crate::registry::ToolDef;
use crate::services::Services;

/// Where overflowing command output is kept, relative to the workspace root.
pub const SPILL_DIR: &str = ".agent-tools/spill";

const BASH: &str = "Run a shell command with `sh -c` in the workspace (or in cwd, inside it) and return \
{exit_code, stdout, stderr, signal, timed_out} as JSON. A non-zero exit is a normal result. stdin is \
closed; the call waits for the command to finish, so start servers in the background with their output \
redirected (e.g. `npm start > /tmp/out.log 2>&1 &`). timeout_ms defaults to 120000 and is capped by the \
server; on timeout the command's whole process group is killed and the partial output returned. Output \
beyond the budget is saved complete to a file under .agent-tools/spill/ named in the result; read it with \
read_file.";

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BashArgs {
    /// The shell command.
    command: String,
    /// Working directory; the workspace root when omitted.
    #[serde(default)]
    cwd: Option<String>,
    /// Maximum run time in milliseconds (default 120000); larger values are
    /// capped at the server's maximum.
    #[serde(default)]
    #[schemars(range(min = 1))]
    timeout_ms: Option<u64>,
}

pub(crate) fn bash_tool() -> ToolDef {
    ToolDef::typed("bash", BASH, true, run).bounding_itself()
}

/// Each stream may hold this much in memory before the command is killed
/// with output_limit; everything past the inline budget also goes to disk.
const HARD_CEILING_PER_STREAM: u64 = 256 * 1024 * 1024;

fn run(services: &Services, args: BashArgs, call: &CallContext) -> ToolResult<String> {
    let workspace = services.files.workspace();
    let cwd = workspace.resolve_dir(args.cwd.as_deref(), "cwd must be a directory")?;
    // The spill folder goes through confinement like any path: a planted
    // `.agent-tools` symlink must not make the tool write outside the root.
    let spill = workspace.resolve(SPILL_DIR).map_err(|err| {
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
    })?;
    let config = &services.config;
    let max_output = config.max_output_bytes();
    let timeout = agent_tools_bash::clamp_timeout(args.timeout_ms, config.bash_timeout_max_ms());
    let ceiling = NonZeroU64::new(HARD_CEILING_PER_STREAM).unwrap_or(NonZeroU64::MIN);
    // Leave room for the JSON around the two streams inside the output cap.
    let inline_budget = max_output.saturating_sub(512).max(256);
    let request = RunRequest::new(args.command, cwd.abs().to_path_buf(), spill.abs())?
        .with_timeout(timeout)
        .with_limits(OutputLimits::new(inline_budget, ceiling))
        .with_spill_display_dir(SPILL_DIR);
    let spiller = Spiller {
        workspace,
        dir: &spill,
    };
    match agent_tools_bash::run(&request, call.cancel.flag()) {
        Ok(outcome) => {
            let Value::Object(mut object) = outcome.to_json() else {
                return Err(ToolError::internal("a run outcome is not a JSON object"));
            };
            fit_streams(&mut object, max_output, &spiller, |o| {
                Value::Object(o.clone()).to_string().len()
            })?;
            Ok(Value::Object(object).to_string())
        }
        // The timeout and output_limit envelopes carry the partial output:
        // they are bounded the same way.
        Err(err) if matches!(err.code(), ErrorCode::Timeout | ErrorCode::OutputLimit) => {
            let mut fields = err.fields().clone();
            let rebuild = |fields: &Map<String, Value>| {
                fields
                    .iter()
                    .fold(ToolError::new(err.code(), err.message()), |e, (k, v)| {
                        e.with_field(k.clone(), v.clone())
                    })
            };
            fit_streams(&mut fields, max_output, &spiller, |f| {
                rebuild(f).to_envelope_value().to_string().len()
            })?;
            Err(rebuild(&fields))
        }
        Err(err) => Err(err),
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
