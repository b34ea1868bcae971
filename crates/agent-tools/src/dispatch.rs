//! The five steps every call runs through: look up, validate, run, bound,
//! serialize.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_tools_error::{ErrorCode, ToolError};
use agent_tools_text::truncate_utf8;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::AgentTools;

/// The outcome of one call: always text, with a flag saying whether it is an
/// error envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DispatchResult {
    /// True when `text` is a JSON error envelope.
    pub is_error: bool,
    /// The tool's output, or the envelope.
    pub text: String,
}

impl DispatchResult {
    fn from_error(err: &ToolError) -> Self {
        DispatchResult {
            is_error: true,
            text: err.to_envelope(),
        }
    }

    /// The error code, when this is an error.
    pub fn error_code(&self) -> Option<ErrorCode> {
        if !self.is_error {
            return None;
        }
        let value: Value = serde_json::from_str(&self.text).ok()?;
        serde_json::from_value(value.get("error")?.clone()).ok()
    }
}

/// A flag a caller sets to ask a running call to stop (a command is killed;
/// quick file tools finish anyway). Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the call to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The raw flag, for back-ends that poll it.
    pub fn flag(&self) -> &AtomicBool {
        &self.0
    }
}

/// Per-call context handed to handlers.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// Set when the caller gives up on the call.
    pub cancel: CancelToken,
}

impl AgentTools {
    /// Runs one tool call. Never panics and never fails: every outcome,
    /// including a panic inside the tool, becomes a [`DispatchResult`].
    pub fn call(&self, name: &str, args: Value) -> DispatchResult {
        self.call_with(name, args, &CallContext::default())
    }

    /// Like [`call`](Self::call), with a context (for cancellation).
    pub fn call_with(&self, name: &str, args: Value, call: &CallContext) -> DispatchResult {
        // 1. Look up in the surface: hidden tools do not exist.
        let Some(index) = self.surface.iter().position(|tool| tool.def.name() == name) else {
            let why = if self.services.config.read_only()
                && crate::tools::all().iter().any(|t| t.name() == name)
            {
                format!("tool {name:?} is not available in read-only mode")
            } else {
                format!("unknown tool {name:?}")
            };
            return DispatchResult::from_error(&ToolError::new(ErrorCode::NotFound, why));
        };
        let tool = &self.surface[index];

        // 2. Validate, with defaults filled in.
        let mut args = match args {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        let Value::Object(object) = &mut args else {
            return DispatchResult::from_error(&ToolError::invalid_input(format!(
                "{name}: arguments must be a JSON object"
            )));
        };
        fill_defaults(object, tool.def.input_schema());
        let problems: Vec<String> = tool
            .validator
            .iter_errors(&args)
            .take(5)
            .map(|err| {
                let at = err.instance_path().to_string();
                if at.is_empty() {
                    err.to_string()
                } else {
                    format!("{at}: {err}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return DispatchResult::from_error(&ToolError::invalid_input(format!(
                "{name}: invalid arguments: {}",
                problems.join("; ")
            )));
        }

        // 3. Run; a panic is an internal error and leaves the tools usable.
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            tool.def.run(&self.services, args, call)
        }))
        .unwrap_or_else(|panic| {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a tool panicked".into());
            Err(ToolError::internal(format!("{name} panicked: {detail}")))
        });

        // 4 and 5. Bound and serialize.
        match outcome {
            Ok(text) if tool.def.bounded() => DispatchResult {
                is_error: false,
                text,
            },
            Ok(text) => DispatchResult {
                is_error: false,
                text: bound_output(text, self.services.config.max_output_bytes()),
            },
            // A call the caller gave up on failed because it was told to:
            // not worth an error line in the log.
            Err(err) if call.cancel.is_cancelled() => {
                tracing::debug!(tool = name, detail = err.detail(), "call cancelled");
                DispatchResult {
                    is_error: true,
                    text: err.to_envelope_value().to_string(),
                }
            }
            Err(err) => DispatchResult::from_error(&err),
        }
    }
}

/// Fills missing top-level properties that declare a default.
fn fill_defaults(args: &mut Map<String, Value>, schema: &Map<String, Value>) {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return;
    };
    for (key, property) in properties {
        if args.contains_key(key) {
            continue;
        }
        if let Some(default) = property.get("default") {
            args.insert(key.clone(), default.clone());
        }
    }
}

/// Cuts `text` to `max` bytes on a character boundary, ending with a note
/// that says how much was dropped.
pub(crate) fn bound_output(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let total = text.len();
    let note_room = 96;
    let keep = truncate_utf8(&text, max.saturating_sub(note_room)).len();
    text.truncate(keep);
    text.push_str(&format!(
        "\n[output truncated: showed {keep} of {total} bytes]\n"
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounding_keeps_short_text_and_cuts_long_text_on_a_boundary() {
        assert_eq!(bound_output("short".into(), 1024), "short");
        let long = "é".repeat(2000);
        let cut = bound_output(long, 1024);
        assert!(cut.len() <= 1024, "{}", cut.len());
        assert!(cut.ends_with("of 4000 bytes]\n"), "{cut}");
    }
}
