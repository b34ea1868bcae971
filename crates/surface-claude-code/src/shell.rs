//! `Bash` and `KillShell`: the facade's command runner for foreground
//! commands, the engine's background jobs for the rest.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use agent_tools::{CallContext, Content, ErrorCode, Reply, ToolResult};
use agent_tools_bash::jobs::{JobMode, JobSpec, JobStatus};
use agent_tools_bash::{RunError, RunRequest};
use agent_tools_confine::ConfinedPath;
use agent_tools_surface_default::{CommandLine, Services};
use cap_std::fs::OpenOptions;

use crate::args::{BashArgs, KillShellArgs};
use crate::messages::{self, thrown};
use crate::session::ClaudeCodeSession;
use crate::session::MAX_BACKGROUND_JOBS;
use crate::{OUTPUT_DIR, session_of, shown_abs};

/// Bash's timeout when none is given, in milliseconds: the runner's.
pub const DEFAULT_TIMEOUT_MS: u64 = agent_tools_bash::DEFAULT_TIMEOUT_MS;

/// The longest timeout Bash takes; longer ones are cut to it: the runner's
/// usual bound.
pub const MAX_TIMEOUT_MS: u64 = agent_tools_bash::DEFAULT_MAX_TIMEOUT_MS;

/// Output longer than this many characters is saved to a file and answered
/// with a preview.
pub const MAX_OUTPUT_CHARS: usize = 30_000;

/// The bytes of output kept in memory per call; past them a stream goes to
/// a spill file whole.
const INLINE_BUDGET: usize = 4 * 1024 * 1024;

/// Bytes of the preview of output saved to a file.
const PREVIEW_BYTES: usize = 2048;

/// stdout and stderr as Claude Code joins them: stdout without leading
/// blank lines or trailing whitespace, stderr trimmed, the non-empty ones
/// on separate lines.
pub(crate) fn joined_output(stdout: &str, stderr: &str) -> String {
    let stdout = stdout.trim_end();
    let stdout = match stdout.find(|c: char| c != '\n' && c != '\r') {
        Some(_) => {
            // Leading blank lines go; the first line keeps its indentation.
            let mut rest = stdout;
            while let Some(line_end) = rest.find('\n') {
                if rest[..line_end].trim().is_empty() {
                    rest = &rest[line_end + 1..];
                } else {
                    break;
                }
            }
            rest
        }
        None => "",
    };
    let stderr = stderr.trim();
    [stdout, stderr]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn bash(services: &Services, args: BashArgs, call: &CallContext) -> ToolResult<Reply> {
    if args.run_in_background == Some(true) {
        return background(services, args, call)
            .map(|text| Reply::items(vec![Content::Text(text)]));
    }
    let timeout = args
        .timeout
        .unwrap_or(DEFAULT_TIMEOUT_MS)
        .min(MAX_TIMEOUT_MS);
    let started = Instant::now();
    let result = agent_tools_surface_default::run_command(
        services,
        CommandLine::Shell(args.command),
        None,
        "",
        Some(timeout),
        INLINE_BUDGET,
        call.session
            .get::<ClaudeCodeSession>()
            .map(ClaudeCodeSession::jobs),
        call,
    );
    let text_reply = |text: String, is_error: bool| Reply {
        content: vec![Content::Text(text)],
        is_error,
    };
    match result {
        Ok(outcome) => {
            let spills: Vec<String> = [&outcome.stdout_spill, &outcome.stderr_spill]
                .into_iter()
                .flatten()
                .map(|path| spill_shown(services, &path.to_string_lossy()))
                .collect();
            let mut output = joined_output(&outcome.stdout, &outcome.stderr);
            if let Some(note) =
                agent_tools_surface_default::sandbox_refusal_note(services.config(), &outcome)
            {
                output.push_str(&format!("\n[{note}]"));
            }
            let output = bounded(services, output, &spills)?;
            match outcome.exit_code {
                Some(0) => Ok(text_reply(output, false)),
                Some(code) => Ok(text_reply(messages::exit_code(code, &output), true)),
                // 128 + the signal's number, as a shell reports it.
                None => Ok(text_reply(
                    messages::exit_code(outcome.shell_exit_code(), &output),
                    true,
                )),
            }
        }
        // A command stopped before it finished shows what it printed,
        // then why it stopped.
        Err(err) => {
            let (partial, why) = match &err {
                RunError::Cancelled { partial } => (partial, messages::ABORTED.to_owned()),
                RunError::TimedOut { partial, .. } => {
                    (partial, messages::timed_out(started.elapsed().as_millis()))
                }
                RunError::OverCeiling { partial, .. } => (partial, err.to_string()),
                RunError::Failed(_) => return Err(err.into()),
            };
            let spills: Vec<String> = [&partial.stdout_spill, &partial.stderr_spill]
                .into_iter()
                .flatten()
                .map(|path| spill_shown(services, &path.to_string_lossy()))
                .collect();
            let output = joined_output(&partial.stdout, &partial.stderr);
            let output = bounded(services, output, &spills)?;
            let text = if output.is_empty() {
                why
            } else {
                format!("{output}\n{why}")
            };
            Ok(text_reply(text, true))
        }
    }
}

/// A spill file's path (shown relative to the root by the runner) as an
/// absolute path.
fn spill_shown(services: &Services, shown: &str) -> String {
    let root = services.files().workspace().root_path();
    shown_abs(services, &root.abs().join(shown))
}

/// The output as answered: whole when short; else saved to a file under
/// [`OUTPUT_DIR`] (or, when the runner already saved a stream whole, that
/// file named) and answered with its first 2 KB.
fn bounded(services: &Services, output: String, spills: &[String]) -> ToolResult<String> {
    if spills.is_empty() && output.chars().count() <= MAX_OUTPUT_CHARS {
        return Ok(output);
    }
    let preview = agent_tools_text::truncate_utf8(&output, PREVIEW_BYTES).to_owned();
    if !spills.is_empty() {
        let size = spills
            .iter()
            .filter_map(|path| std::fs::metadata(path).ok())
            .map(|meta| meta.len())
            .sum::<u64>()
            .max(output.len() as u64);
        return Ok(messages::persisted_output(
            size,
            &spills.join(" and "),
            &preview,
        ));
    }
    let (path, shown) = output_file(services, "txt")?;
    services
        .files()
        .update_locked(&path, |_| Ok((Some(output.as_bytes().to_vec()), ())))?;
    Ok(messages::persisted_output(
        output.len() as u64,
        &shown,
        &preview,
    ))
}

/// A new file name under [`OUTPUT_DIR`]: unique in this process and
/// across processes (the pid and the time are in it).
fn output_file(services: &Services, extension: &str) -> ToolResult<(ConfinedPath, String)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!(
        "{OUTPUT_DIR}/{}-{nanos}-{}.{extension}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let ws = services.files().workspace();
    let path = ws.resolve(&name)?;
    let shown = shown_abs(services, path.abs());
    Ok((path, shown))
}

fn background(services: &Services, args: BashArgs, call: &CallContext) -> ToolResult<String> {
    let session = session_of(call)?;
    if session.background_count() >= MAX_BACKGROUND_JOBS {
        return Err(thrown(
            ErrorCode::InvalidInput,
            messages::too_many_background(MAX_BACKGROUND_JOBS),
        ));
    }
    let ws = services.files().workspace();
    let (path, shown) = output_file(services, "output")?;
    if let Some(parent) = path.rel().parent() {
        ws.base_dir()
            .create_dir_all(parent)
            .map_err(|err| ws.io_error(&err, &path))?;
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let file = ws
        .base_dir()
        .open_with(path.rel(), &options)
        .map_err(|err| ws.io_error(&err, &path))?
        .into_std();
    let root = ws.root_path();
    let spill = root.abs().join(agent_tools_surface_default::SPILL_DIR);
    let request = services.config().confine_command(RunRequest::new(
        args.command.clone(),
        root.abs(),
        spill,
    )?);
    let spec = JobSpec::new(request, JobMode::Pipes).with_log_file(file, shown.clone());
    let (id, _) = session.start_job(spec).map_err(|err| match err {
        agent_tools_bash::jobs::JobError::TooManyRunning { limit } => thrown(
            ErrorCode::InvalidInput,
            messages::too_many_background(limit),
        ),
        other => other.into(),
    })?;
    Ok(messages::background_started(&id, &shown))
}

pub(crate) fn kill_shell(
    _: &Services,
    args: KillShellArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let session = session_of(call)?;
    match session.stop_job(&args.shell_id) {
        None => Err(thrown(
            ErrorCode::NotFound,
            messages::no_shell(&args.shell_id),
        )),
        Some((command, JobStatus::Running)) => Ok(messages::shell_killed(&args.shell_id, &command)),
        Some((_, JobStatus::Exited { code, .. })) => {
            let status = match code {
                Some(code) => format!("exit code {code}"),
                None => "ended by a signal".to_owned(),
            };
            Ok(messages::shell_already_done(&args.shell_id, &status))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_joined_and_trimmed_like_claude_codes() {
        assert_eq!(joined_output("\n\n  a\nb  \n\n", "  err \n"), "  a\nb\nerr");
        assert_eq!(joined_output("", "e"), "e");
        assert_eq!(joined_output("o\n", ""), "o");
        assert_eq!(joined_output("\n \n", "\n"), "");
    }

    #[test]
    fn signals_are_128_plus_their_number() {
        assert_eq!(agent_tools_bash::signal_exit_code(Some("SIGKILL")), 137);
        assert_eq!(agent_tools_bash::signal_exit_code(Some("SIGTERM")), 143);
        assert_eq!(agent_tools_bash::signal_exit_code(None), -1);
    }
}
