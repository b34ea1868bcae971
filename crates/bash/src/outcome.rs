//! The result of a finished command.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr as _;
use std::time::Duration;

use agent_tools_error::{ErrorCode, ToolError};
use nix::sys::signal::Signal;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// How a command ended, with its captured output.
///
/// Serialized (see [`RunOutcome::to_json`]) as
///
/// ```json
/// {"exit_code": 0, "stdout": "hi\n", "stderr": "", "signal": null, "timed_out": false}
/// ```
///
/// plus, only when they apply: `stdout_spill` / `stderr_spill` (where the
/// complete stream was written), `truncated: true` (some output is only in a
/// spill file) and `lossy: true` (invalid UTF-8 was replaced by U+FFFD).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunOutcome {
    /// The shell's exit code; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// Inline stdout.
    pub stdout: String,
    /// Inline stderr.
    pub stderr: String,
    /// The name of the signal that ended the shell, e.g. `"SIGKILL"`
    /// (`"signal N"` for a number without a name).
    pub signal: Option<String>,
    /// Set only in the partial outcome of [`RunError::TimedOut`]: a
    /// returned outcome finished in time. Kept so that the shape is the same
    /// as the timeout envelope's.
    pub timed_out: bool,
    /// The spill file holding all of stdout, if stdout overflowed the budget.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "lossy_path")]
    pub stdout_spill: Option<PathBuf>,
    /// The spill file holding all of stderr, if stderr overflowed the budget.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "lossy_path")]
    pub stderr_spill: Option<PathBuf>,
    /// Some output is only in a spill file.
    #[serde(skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// Invalid UTF-8 in the inline output was replaced.
    #[serde(skip_serializing_if = "is_false")]
    pub lossy: bool,
    /// The command ran in a sandbox, failed, and its inline output holds a
    /// refusal message (`Permission denied`, `Connection refused`, ...):
    /// the sandbox **may** have refused it something. A hint for the
    /// caller to pass on, not part of the JSON shape (callers word it).
    #[serde(skip)]
    pub maybe_sandbox_refusal: bool,
    /// Bytes of stdout dropped past the cut (with
    /// [`OutputLimits::cut_per_stream`](crate::OutputLimits::cut_per_stream)).
    #[serde(skip_serializing_if = "is_zero")]
    pub stdout_dropped: u64,
    /// Bytes of stderr dropped past the cut.
    #[serde(skip_serializing_if = "is_zero")]
    pub stderr_dropped: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn lossy_path<S: Serializer>(path: &Option<PathBuf>, serializer: S) -> Result<S::Ok, S::Error> {
    match path {
        Some(path) => serializer.serialize_str(&path.to_string_lossy()),
        None => serializer.serialize_none(),
    }
}

/// What a shell reports as the exit code of a command a signal ended:
/// this plus the signal's number.
pub const SIGNAL_EXIT_BASE: i32 = 128;

impl RunOutcome {
    /// The outcome as a JSON object: its [`Serialize`] shape, the one way an
    /// outcome is written out.
    pub fn to_json(&self) -> Value {
        // Serializing strings, numbers and options cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The exit code as a shell reports it: the code, or
    /// [`SIGNAL_EXIT_BASE`] plus the number of the signal that ended the
    /// shell; -1 when neither is known (a shell that could not be reaped).
    pub fn shell_exit_code(&self) -> i32 {
        match (self.exit_code, &self.signal) {
            (Some(code), _) => code,
            (None, signal) => signal_exit_code(signal.as_deref()),
        }
    }
}

/// [`SIGNAL_EXIT_BASE`] plus the number of the signal named `name` (as
/// [`RunOutcome::signal`] names it); -1 for no signal or an unknown name.
pub fn signal_exit_code(name: Option<&str>) -> i32 {
    name.and_then(|name| Signal::from_str(name).ok())
        .map_or(-1, |signal| SIGNAL_EXIT_BASE + signal as i32)
}

/// Which of a command's output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamName {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl StreamName {
    /// `"stdout"` or `"stderr"`.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamName::Stdout => "stdout",
            StreamName::Stderr => "stderr",
        }
    }
}

impl fmt::Display for StreamName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why [`run`](crate::run) returned no finished outcome.
///
/// The three ways a command is stopped each carry what it had printed by
/// then (`partial`), for the caller to show in its own shape; turned into a
/// [`ToolError`] (with `?` or [`From`]) they keep their code and message
/// only: the partial output joins an error's envelope where that envelope
/// is rendered, not here.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The timeout passed; the group was killed. `partial.timed_out` is set.
    #[error("command timed out after {} ms", .after.as_millis())]
    TimedOut {
        /// The timeout that passed.
        after: Duration,
        /// The output until then.
        partial: Box<RunOutcome>,
    },
    /// A stream passed the hard ceiling; the group was killed.
    #[error("{stream} passed the output ceiling; the command was killed")]
    OverCeiling {
        /// The stream that passed it.
        stream: StreamName,
        /// The output until then.
        partial: Box<RunOutcome>,
    },
    /// The caller cancelled the call; the group was killed.
    #[error("command cancelled")]
    Cancelled {
        /// The output until then.
        partial: Box<RunOutcome>,
    },
    /// The command could not be started or watched, or its output not
    /// saved: `not_found` or `not_a_file` for a bad working directory,
    /// `invalid_input` for a sandbox without a launcher, `io_error`,
    /// `path_escape` from a spill opener, `internal`.
    #[error(transparent)]
    Failed(#[from] ToolError),
}

impl RunError {
    /// The error code the failure maps to.
    pub fn code(&self) -> ErrorCode {
        match self {
            RunError::TimedOut { .. } => ErrorCode::Timeout,
            RunError::OverCeiling { .. } => ErrorCode::OutputLimit,
            RunError::Cancelled { .. } => ErrorCode::Internal,
            RunError::Failed(err) => err.code(),
        }
    }

    /// The output the command had printed when it was stopped; `None` when
    /// it failed instead.
    pub fn partial(&self) -> Option<&RunOutcome> {
        match self {
            RunError::TimedOut { partial, .. }
            | RunError::OverCeiling { partial, .. }
            | RunError::Cancelled { partial } => Some(partial),
            RunError::Failed(_) => None,
        }
    }

    /// Whether the caller cancelled the run.
    pub fn is_cancelled(&self) -> bool {
        match self {
            RunError::Cancelled { .. } => true,
            RunError::Failed(err) => err.is_cancelled(),
            RunError::TimedOut { .. } | RunError::OverCeiling { .. } => false,
        }
    }
}

impl From<RunError> for ToolError {
    fn from(err: RunError) -> Self {
        match err {
            RunError::TimedOut { .. } | RunError::OverCeiling { .. } => {
                ToolError::new(err.code(), err.to_string())
            }
            RunError::Cancelled { .. } => ToolError::cancelled(err.to_string()),
            RunError::Failed(err) => err,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome() -> RunOutcome {
        RunOutcome {
            exit_code: None,
            stdout: "a".into(),
            stderr: "b".into(),
            signal: Some("SIGTERM".into()),
            timed_out: false,
            stdout_spill: Some(PathBuf::from(".agent-tools/spill/x.stdout")),
            stderr_spill: None,
            truncated: true,
            lossy: true,
            stdout_dropped: 7,
            stderr_dropped: 0,
            maybe_sandbox_refusal: true,
        }
    }

    #[test]
    fn to_json_has_the_documented_shape() {
        assert_eq!(
            outcome().to_json(),
            serde_json::json!({
                "exit_code": null, "stdout": "a", "stderr": "b", "signal": "SIGTERM",
                "timed_out": false, "stdout_spill": ".agent-tools/spill/x.stdout",
                "truncated": true, "lossy": true, "stdout_dropped": 7
            })
        );
        let plain = RunOutcome {
            exit_code: Some(0),
            signal: None,
            stdout_spill: None,
            truncated: false,
            lossy: false,
            stdout_dropped: 0,
            ..outcome()
        };
        assert_eq!(
            plain.to_json(),
            serde_json::json!({
                "exit_code": 0, "stdout": "a", "stderr": "b", "signal": null, "timed_out": false
            })
        );
    }

    #[test]
    fn a_signal_reads_as_128_plus_its_number() {
        assert_eq!(outcome().shell_exit_code(), 128 + 15);
        let killed = RunOutcome {
            signal: Some("SIGKILL".into()),
            ..outcome()
        };
        assert_eq!(killed.shell_exit_code(), 137);
        let exited = RunOutcome {
            exit_code: Some(3),
            signal: None,
            ..outcome()
        };
        assert_eq!(exited.shell_exit_code(), 3);
        let unknown = RunOutcome {
            signal: Some("signal 99".into()),
            ..outcome()
        };
        assert_eq!(unknown.shell_exit_code(), -1);
        assert_eq!(signal_exit_code(None), -1);
    }

    #[test]
    fn a_stopped_run_becomes_an_error_without_its_output() {
        let timed_out = RunError::TimedOut {
            after: Duration::from_millis(300),
            partial: Box::new(outcome()),
        };
        assert_eq!(timed_out.partial(), Some(&outcome()));
        let err = ToolError::from(timed_out);
        assert_eq!(err.code(), ErrorCode::Timeout);
        assert_eq!(err.message(), "command timed out after 300 ms");
        assert!(err.fields().is_empty());

        let over = RunError::OverCeiling {
            stream: StreamName::Stderr,
            partial: Box::new(outcome()),
        };
        assert_eq!(over.code(), ErrorCode::OutputLimit);
        assert_eq!(
            ToolError::from(over).message(),
            "stderr passed the output ceiling; the command was killed"
        );

        let cancelled = RunError::Cancelled {
            partial: Box::new(outcome()),
        };
        assert!(cancelled.is_cancelled());
        let err = ToolError::from(cancelled);
        assert!(err.is_cancelled());
        assert_eq!(err.detail(), "command cancelled");

        let failed = RunError::from(ToolError::new(ErrorCode::IoError, "x"));
        assert!(failed.partial().is_none());
        assert!(!failed.is_cancelled());
        assert_eq!(ToolError::from(failed).code(), ErrorCode::IoError);
    }
}
