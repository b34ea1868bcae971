//! The error model shared by every agent-tools crate.
//!
//! A tool either succeeds with text or fails with a [`ToolError`]: one of thirteen
//! stable [`ErrorCode`]s plus a human-readable message. On the wire a failure is
//! always a single JSON object, the *envelope*:
//!
//! ```json
//! {"error": "not_found", "message": "src/main.rs: no such file"}
//! ```
//!
//! Callers match on the code, never on the message. A few envelopes carry
//! extra fields next to the two above (a timed-out command's shows its
//! partial output); the surface that renders the envelope adds them with
//! [`ToolError::with_field`], from the typed outcome it was handed. A call
//! stopped by its caller is [`ToolError::cancelled`], known by
//! [`ToolError::is_cancelled`] rather than by any field.
//!
//! ```
//! use agent_tools_error::{ErrorCode, ToolError};
//!
//! let err = ToolError::new(ErrorCode::NoMatch, "old_string was not found in a.txt");
//! assert_eq!(err.code(), ErrorCode::NoMatch);
//! assert_eq!(
//!     err.to_envelope(),
//!     r#"{"error":"no_match","message":"old_string was not found in a.txt"}"#
//! );
//!
//! // Internal errors never carry their details out of the process.
//! let err = ToolError::internal("index out of bounds at foo.rs:12");
//! assert_eq!(err.to_envelope(), r#"{"error":"internal","message":"internal error"}"#);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::fmt;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The stable error codes. Serialized in `snake_case`; the set never shrinks and
/// the meaning of a code never changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(strum::EnumIter))]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Arguments failed schema or semantic validation.
    InvalidInput,
    /// A path does not exist, or the tool name is unknown or hidden.
    NotFound,
    /// A directory was given where a file was expected, or the reverse.
    NotAFile,
    /// The file looks binary and a text tool refuses it.
    IsBinary,
    /// An edit's `old_string` was not found.
    NoMatch,
    /// An edit's `old_string` matched more than one region.
    AmbiguousMatch,
    /// A patch hunk did not apply.
    PatchFailed,
    /// A command ran past its timeout.
    Timeout,
    /// A command's output passed the hard in-memory ceiling.
    OutputLimit,
    /// A file is larger than the configured maximum.
    TooLarge,
    /// A path resolved outside the workspace root.
    PathEscape,
    /// An underlying filesystem or process error.
    IoError,
    /// An unexpected failure inside the tool; details stay in the server log.
    Internal,
}

impl ErrorCode {
    /// Every code, in declaration order (a test holds it to the enum), for
    /// tables and tests that must cover each.
    pub const ALL: [ErrorCode; 13] = [
        ErrorCode::InvalidInput,
        ErrorCode::NotFound,
        ErrorCode::NotAFile,
        ErrorCode::IsBinary,
        ErrorCode::NoMatch,
        ErrorCode::AmbiguousMatch,
        ErrorCode::PatchFailed,
        ErrorCode::Timeout,
        ErrorCode::OutputLimit,
        ErrorCode::TooLarge,
        ErrorCode::PathEscape,
        ErrorCode::IoError,
        ErrorCode::Internal,
    ];

    /// The wire name of the code, e.g. `"not_found"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::NotFound => "not_found",
            ErrorCode::NotAFile => "not_a_file",
            ErrorCode::IsBinary => "is_binary",
            ErrorCode::NoMatch => "no_match",
            ErrorCode::AmbiguousMatch => "ambiguous_match",
            ErrorCode::PatchFailed => "patch_failed",
            ErrorCode::Timeout => "timeout",
            ErrorCode::OutputLimit => "output_limit",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::PathEscape => "path_escape",
            ErrorCode::IoError => "io_error",
            ErrorCode::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool failure: a stable code, a message for the caller, and optional extra
/// envelope fields.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    code: ErrorCode,
    message: String,
    fields: Map<String, Value>,
    origin: Origin,
}

/// Where an error came from, beyond its code. Kept out of the envelope's
/// fields: the wire shape of a cancelled call is its surface's business,
/// the fact that it was cancelled is the pipeline's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// The tool failed.
    Failed,
    /// The tool stopped because its caller cancelled the call.
    Cancelled,
}

/// The message every `internal` envelope carries, whatever went wrong.
pub const INTERNAL_MESSAGE: &str = "internal error";

impl ToolError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            fields: Map::new(),
            origin: Origin::Failed,
        }
    }

    /// The error of a tool that stopped because its caller cancelled the
    /// call: `internal` on the wire (nobody waits for it), with `detail`
    /// (what was stopped) for the log. See [`ToolError::is_cancelled`].
    pub fn cancelled(detail: impl Into<String>) -> Self {
        ToolError {
            origin: Origin::Cancelled,
            ..Self::new(ErrorCode::Internal, detail)
        }
    }

    /// Whether this is the error of a cancelled call (made by
    /// [`ToolError::cancelled`]), as opposed to a failure.
    pub fn is_cancelled(&self) -> bool {
        self.origin == Origin::Cancelled
    }

    /// `invalid_input` with `message`.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidInput, message)
    }

    /// `internal`, keeping `detail` for the server log only.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, detail)
    }

    /// Maps an I/O error met while working on `path` to the matching code.
    ///
    /// Missing files become `not_found`; a directory where a file was expected
    /// (or the reverse) becomes `not_a_file`; everything else is `io_error`.
    pub fn from_io(err: &io::Error, path: &Path) -> Self {
        let shown = path.display();
        match err.kind() {
            io::ErrorKind::NotFound => Self::new(
                ErrorCode::NotFound,
                format!("{shown}: no such file or directory"),
            ),
            io::ErrorKind::IsADirectory => {
                Self::new(ErrorCode::NotAFile, format!("{shown}: is a directory"))
            }
            io::ErrorKind::NotADirectory => {
                Self::new(ErrorCode::NotAFile, format!("{shown}: not a directory"))
            }
            _ => Self::new(ErrorCode::IoError, format!("{shown}: {err}")),
        }
    }

    /// Adds an extra field to the envelope. `error` and `message` are reserved
    /// and ignored here.
    pub fn with_field(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        let key = key.into();
        if key != "error" && key != "message" {
            self.fields.insert(key, value.into());
        }
        self
    }

    /// Prefixes the message, e.g. `edit 3 of 4: `.
    pub fn with_prefix(mut self, prefix: impl fmt::Display) -> Self {
        self.message = format!("{prefix}{}", self.message);
        self
    }

    /// The same error (code, fields, and whether it was a cancellation) with
    /// its message, as the caller sees it, reworded by `reword`.
    pub fn reworded(mut self, reword: impl FnOnce(&str) -> String) -> Self {
        self.message = reword(self.message());
        self
    }

    /// The code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message as the caller will see it (`internal error` for `internal`).
    pub fn message(&self) -> &str {
        if self.code == ErrorCode::Internal {
            INTERNAL_MESSAGE
        } else {
            &self.message
        }
    }

    /// The full message, including the details of an `internal` error. For logs only.
    pub fn detail(&self) -> &str {
        &self.message
    }

    /// Extra envelope fields.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// The envelope as a JSON value.
    pub fn to_envelope_value(&self) -> Value {
        let mut object = Map::with_capacity(2 + self.fields.len());
        object.insert("error".into(), Value::String(self.code.as_str().into()));
        object.insert("message".into(), Value::String(self.message().into()));
        if self.code != ErrorCode::Internal {
            for (key, value) in &self.fields {
                object.insert(key.clone(), value.clone());
            }
        }
        Value::Object(object)
    }

    /// The envelope as compact JSON text. An `internal` error logs its details
    /// to the tracing subscriber (stderr in the server) and returns the generic
    /// message.
    pub fn to_envelope(&self) -> String {
        if self.code == ErrorCode::Internal {
            tracing::error!(detail = %self.message, "internal error");
        }
        self.to_envelope_value().to_string()
    }
}

/// Shorthand for results whose error is a [`ToolError`].
pub type ToolResult<T> = Result<T, ToolError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_serializes_to_its_wire_name() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, Value::String(code.as_str().to_string()));
            let back: ErrorCode = serde_json::from_value(json).unwrap();
            assert_eq!(back, code);
        }
    }

    #[test]
    fn all_lists_every_code_once_in_declaration_order() {
        use strum::IntoEnumIterator as _;
        let declared: Vec<ErrorCode> = ErrorCode::iter().collect();
        assert_eq!(ErrorCode::ALL.to_vec(), declared);
    }

    #[test]
    fn wire_names_are_the_contract() {
        let names: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            names,
            [
                "invalid_input",
                "not_found",
                "not_a_file",
                "is_binary",
                "no_match",
                "ambiguous_match",
                "patch_failed",
                "timeout",
                "output_limit",
                "too_large",
                "path_escape",
                "io_error",
                "internal"
            ]
        );
    }

    #[test]
    fn envelope_has_error_and_message() {
        let err = ToolError::new(ErrorCode::PathEscape, "../x leaves the workspace");
        let value: Value = serde_json::from_str(&err.to_envelope()).unwrap();
        assert_eq!(value["error"], "path_escape");
        assert_eq!(value["message"], "../x leaves the workspace");
        assert_eq!(value.as_object().unwrap().len(), 2);
    }

    #[test]
    fn extra_fields_join_the_envelope_but_cannot_replace_the_code() {
        let err = ToolError::new(ErrorCode::Timeout, "timed out after 10 ms")
            .with_field("stdout", "partial")
            .with_field("error", "not_found");
        let value = err.to_envelope_value();
        assert_eq!(value["error"], "timeout");
        assert_eq!(value["stdout"], "partial");
    }

    #[test]
    fn internal_hides_details_and_fields() {
        let err = ToolError::internal("secret path /etc/shadow").with_field("x", 1);
        assert_eq!(err.message(), INTERNAL_MESSAGE);
        assert_eq!(err.detail(), "secret path /etc/shadow");
        assert_eq!(
            err.to_envelope_value(),
            serde_json::json!({"error": "internal", "message": "internal error"})
        );
    }

    #[test]
    fn io_errors_map_to_codes() {
        let p = Path::new("a/b");
        let cases = [
            (io::ErrorKind::NotFound, ErrorCode::NotFound),
            (io::ErrorKind::IsADirectory, ErrorCode::NotAFile),
            (io::ErrorKind::NotADirectory, ErrorCode::NotAFile),
            (io::ErrorKind::PermissionDenied, ErrorCode::IoError),
            (io::ErrorKind::Other, ErrorCode::IoError),
        ];
        for (kind, code) in cases {
            let err = ToolError::from_io(&io::Error::from(kind), p);
            assert_eq!(err.code(), code, "{kind:?}");
            assert!(err.message().starts_with("a/b: "), "{}", err.message());
        }
    }

    #[test]
    fn cancellation_is_known_by_its_type_not_a_field() {
        let err = ToolError::cancelled("call cancelled");
        assert!(err.is_cancelled());
        assert_eq!(err.code(), ErrorCode::Internal);
        assert!(err.fields().is_empty());
        assert_eq!(
            err.to_envelope_value(),
            serde_json::json!({"error": "internal", "message": "internal error"})
        );
        assert!(!ToolError::internal("call cancelled").is_cancelled());
        assert!(
            !ToolError::internal("x")
                .with_field("cancelled", true)
                .is_cancelled()
        );
        assert!(err.with_prefix("edit 1 of 2: ").is_cancelled());
    }

    #[test]
    fn rewording_keeps_the_code_fields_and_cancellation() {
        let err = ToolError::new(ErrorCode::NoMatch, "not found")
            .with_field("hint", 1)
            .reworded(|m| format!("<{m}>"));
        assert_eq!(err.message(), "<not found>");
        assert_eq!(err.code(), ErrorCode::NoMatch);
        assert_eq!(err.fields()["hint"], 1);
        assert!(
            ToolError::cancelled("x")
                .reworded(str::to_owned)
                .is_cancelled()
        );
    }

    #[test]
    fn prefix_names_the_failing_step() {
        let err = ToolError::new(ErrorCode::NoMatch, "not found").with_prefix("edit 3 of 4: ");
        assert_eq!(err.message(), "edit 3 of 4: not found");
    }
}
