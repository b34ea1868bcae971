//! `bash`: the command runner, with its working directory confined.

use std::num::NonZeroU64;

use agent_tools_bash::{OutputLimits, RunRequest};
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use schemars::JsonSchema;
use serde::Deserialize;

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
    let cwd = match &args.cwd {
        Some(cwd) => workspace.resolve(cwd)?,
        None => workspace.root_path(),
    };
    let meta = workspace.metadata(&cwd)?;
    if !meta.is_dir() {
        return Err(ToolError::new(
            ErrorCode::NotAFile,
            format!("cwd {cwd}: is a file, not a directory"),
        ));
    }
    let config = &services.config;
    let timeout = agent_tools_bash::clamp_timeout(args.timeout_ms, config.bash_timeout_max_ms());
    let ceiling = NonZeroU64::new(HARD_CEILING_PER_STREAM).unwrap_or(NonZeroU64::MIN);
    // Leave room for the JSON around the two streams inside the output cap.
    let inline_budget = config.max_output_bytes().saturating_sub(512).max(256);
    let request = RunRequest::new(
        args.command,
        cwd.abs().to_path_buf(),
        workspace.root().join(SPILL_DIR),
    )?
    .with_timeout(timeout)
    .with_limits(OutputLimits::new(inline_budget, ceiling))
    .with_spill_display_dir(SPILL_DIR);
    let outcome = agent_tools_bash::run(&request, call.cancel.flag())?;
    Ok(outcome.to_json().to_string())
}
