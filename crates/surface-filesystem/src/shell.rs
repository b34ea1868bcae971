//! `bash`: one shell command in an allowed directory, through the engine's
//! runner (process group, timeout, the configured launcher), its streams
//! answered as two content items.

use std::fmt::Write as _;
use std::time::Duration;

use agent_tools::{CallContext, Content, Reply, ToolError, ToolResult};
use agent_tools_bash::{OutputLimits, RunError, RunRequest};

use crate::args::BashArgs;
use crate::roots::{Need, Roots};

pub(crate) const BASH: &str = "Run a shell command with `/bin/sh -c`. `workingDirectory` is an \
absolute directory inside an allowed directory (read-only ones included: the command's own \
writes are not checked); the first read-write allowed directory when omitted. `timeout` is in \
seconds (default 30, at most 60): at the deadline the command gets SIGTERM, 3 s later SIGKILL, \
and what it printed until then is kept. The first item is stdout (or `(no output)`) ending in \
`[exit code: N]`; a second item `[stderr]` follows when stderr is not empty. Each stream keeps \
its first 512 KB. A non-zero exit or a timeout marks the result as an error. stdin is closed.";

/// Seconds a command may run when the call does not say.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;
/// The most seconds a call may ask for.
pub const MAX_TIMEOUT_SECS: u64 = 60;
/// Between SIGTERM at the deadline and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(3);
/// What each stream keeps; the rest is dropped with a note.
pub const STREAM_BYTES: usize = 512 * 1024;

pub(crate) fn bash(roots: &Roots, args: BashArgs, call: &CallContext) -> ToolResult<Reply> {
    if !(1..=MAX_TIMEOUT_SECS).contains(&args.timeout) {
        return Err(ToolError::invalid_input(format!(
            "timeout: {} seconds; give 1 to {MAX_TIMEOUT_SECS}",
            args.timeout
        )));
    }
    // Reading is all a working directory needs: a command's own writes are
    // not confined (nothing in a shell is), so a read-only directory is no
    // less safe to run in than a writable one.
    let (root, cwd) = match &args.working_directory {
        Some(raw) => roots.resolve(raw, Need::Read)?,
        None => {
            let all = roots.list();
            let root = match all.iter().find(|root| root.writable()) {
                Some(root) => root.clone(),
                None => roots.first()?,
            };
            let path = root.workspace().root_path();
            (root, path)
        }
    };
    let ws = root.workspace();
    let cwd = ws.resolve_dir(
        Some(&cwd.abs().to_string_lossy()),
        "workingDirectory must be a directory",
    )?;
    let config = roots.config();
    let timeout =
        Duration::from_secs(args.timeout).min(Duration::from_millis(config.bash_timeout_max_ms()));
    // Output is cut, never spilled: the spill directory is never written.
    let request = config.confine_command(
        RunRequest::new(args.command, cwd.abs(), cwd.abs())?
            .with_timeout(timeout)
            .with_kill_grace(KILL_GRACE)
            .with_limits(OutputLimits::cut_per_stream(STREAM_BYTES)),
    );
    let jobs = call
        .session
        .get::<crate::process::FilesystemSession>()
        .map(crate::process::FilesystemSession::jobs);
    match config.run_command(&request, jobs, call.cancel.flag()) {
        Ok(outcome) => {
            let footer = match (outcome.exit_code, &outcome.signal) {
                (Some(code), _) => format!("[exit code: {code}]"),
                (None, Some(signal)) => format!("[exit code: none, killed by {signal}]"),
                (None, None) => "[exit code: unknown]".to_owned(),
            };
            let failed = outcome.exit_code != Some(0);
            let footer = match agent_tools_surface_default::sandbox_refusal_note(config, &outcome) {
                Some(note) => format!("{footer}\n[{note}]"),
                None => footer,
            };
            Ok(answer(
                &Streams {
                    stdout: &outcome.stdout,
                    stdout_dropped: outcome.stdout_dropped,
                    stderr: &outcome.stderr,
                    stderr_dropped: outcome.stderr_dropped,
                },
                &footer,
                failed,
            ))
        }
        // The runner's timeout carries what was printed until the deadline.
        Err(RunError::TimedOut { partial, .. }) => {
            let footer = format!(
                "[timed out after {} s: stopped with SIGTERM, then SIGKILL {} s later]",
                timeout.as_secs(),
                KILL_GRACE.as_secs()
            );
            Ok(answer(
                &Streams {
                    stdout: &partial.stdout,
                    stdout_dropped: partial.stdout_dropped,
                    stderr: &partial.stderr,
                    stderr_dropped: partial.stderr_dropped,
                },
                &footer,
                true,
            ))
        }
        Err(
            err @ (RunError::OverCeiling { .. } | RunError::Cancelled { .. } | RunError::Failed(_)),
        ) => Err(err.into()),
    }
}

struct Streams<'a> {
    stdout: &'a str,
    stdout_dropped: u64,
    stderr: &'a str,
    stderr_dropped: u64,
}

/// content[0]: stdout or `(no output)`, a cut note, the footer;
/// content[1]: `[stderr]` and stderr, only when there is some.
fn answer(streams: &Streams<'_>, footer: &str, is_error: bool) -> Reply {
    let mut first = if streams.stdout.is_empty() && streams.stdout_dropped == 0 {
        "(no output)".to_owned()
    } else {
        streams.stdout.to_owned()
    };
    push_cut_note(&mut first, "stdout", streams.stdout_dropped);
    if !first.ends_with('\n') {
        first.push('\n');
    }
    first.push_str(footer);
    let mut content = vec![Content::Text(first)];
    if !streams.stderr.is_empty() || streams.stderr_dropped > 0 {
        let mut second = format!("[stderr]\n{}", streams.stderr);
        push_cut_note(&mut second, "stderr", streams.stderr_dropped);
        content.push(Content::Text(second));
    }
    Reply { content, is_error }
}

fn push_cut_note(text: &mut String, stream: &str, dropped: u64) {
    if dropped > 0 {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let _ = write!(
            text,
            "[{stream} cut: {dropped} more bytes not shown; only the first {} KB of each stream \
             are kept]",
            STREAM_BYTES / 1024
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(reply: &Reply) -> Vec<&str> {
        reply.content.iter().filter_map(Content::as_text).collect()
    }

    #[test]
    fn answers_have_the_footer_and_stderr_only_when_there_is_some() {
        let quiet = Streams {
            stdout: "",
            stdout_dropped: 0,
            stderr: "",
            stderr_dropped: 0,
        };
        let reply = answer(&quiet, "[exit code: 0]", false);
        assert_eq!(texts(&reply), ["(no output)\n[exit code: 0]"]);
        assert!(!reply.is_error);
        let loud = Streams {
            stdout: "out",
            stdout_dropped: 3,
            stderr: "err\n",
            stderr_dropped: 0,
        };
        let reply = answer(&loud, "[exit code: 2]", true);
        assert_eq!(
            texts(&reply),
            [
                "out\n[stdout cut: 3 more bytes not shown; only the first 512 KB of each stream \
                 are kept]\n[exit code: 2]",
                "[stderr]\nerr\n"
            ]
        );
        assert!(reply.is_error);
    }
}
