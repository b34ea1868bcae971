//! The result of a finished command.

use std::path::{Path, PathBuf};

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
    /// Always `false` in a returned outcome: a timeout is an error. Kept so
    /// the shape is the same as the timeout envelope's.
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

impl RunOutcome {
    /// The outcome as a JSON object.
    pub fn to_json(&self) -> Value {
        let mut object = serde_json::Map::new();
        for (key, value) in self.fields() {
            object.insert(key.to_owned(), value);
        }
        Value::Object(object)
    }

    /// The outcome's fields in their serialized order, without the ones
    /// left out when they do not apply.
    pub(crate) fn fields(&self) -> Vec<(&'static str, Value)> {
        let mut fields = vec![
            ("exit_code", self.exit_code.map_or(Value::Null, Value::from)),
            ("stdout", Value::from(self.stdout.as_str())),
            ("stderr", Value::from(self.stderr.as_str())),
            (
                "signal",
                self.signal.as_deref().map_or(Value::Null, Value::from),
            ),
            ("timed_out", Value::Bool(self.timed_out)),
        ];
        let path = |p: &Path| Value::from(p.to_string_lossy().into_owned());
        if let Some(p) = &self.stdout_spill {
            fields.push(("stdout_spill", path(p)));
        }
        if let Some(p) = &self.stderr_spill {
            fields.push(("stderr_spill", path(p)));
        }
        if self.truncated {
            fields.push(("truncated", Value::Bool(true)));
        }
        if self.lossy {
            fields.push(("lossy", Value::Bool(true)));
        }
        if self.stdout_dropped > 0 {
            fields.push(("stdout_dropped", Value::from(self.stdout_dropped)));
        }
        if self.stderr_dropped > 0 {
            fields.push(("stderr_dropped", Value::from(self.stderr_dropped)));
        }
        fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_json_matches_serde() {
        let outcome = RunOutcome {
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
        };
        assert_eq!(outcome.to_json(), serde_json::to_value(&outcome).unwrap());
        let plain = RunOutcome {
            stdout_spill: None,
            truncated: false,
            lossy: false,
            ..outcome
        };
        assert_eq!(plain.to_json(), serde_json::to_value(&plain).unwrap());
    }
}
