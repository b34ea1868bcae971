//! What a check after a write found, neutral of any surface's wording.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// An error.
    Error,
    /// A warning.
    Warning,
    /// Information.
    Information,
    /// A hint.
    Hint,
}

impl Severity {
    /// Its name as lines show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }

    pub(crate) fn of(diagnostic: &Diagnostic) -> Severity {
        match diagnostic.severity {
            Some(DiagnosticSeverity::WARNING) => Severity::Warning,
            Some(DiagnosticSeverity::INFORMATION) => Severity::Information,
            Some(DiagnosticSeverity::HINT) => Severity::Hint,
            // Unset means the client decides; an error is the safe reading.
            _ => Severity::Error,
        }
    }
}

/// One diagnostic, positions 1-based in characters as editors show them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiagnostic {
    /// Line, from 1.
    pub line: u32,
    /// Column in characters, from 1.
    pub column: u32,
    /// How serious.
    pub severity: Severity,
    /// The message (first line).
    pub message: String,
    /// The code, when the server gave one.
    pub code: Option<String>,
    /// Who reported it (`Pyright`, `ts`, ...).
    pub source: Option<String>,
    /// Whether the file had the same diagnostic before the write.
    pub preexisting: bool,
}

impl FileDiagnostic {
    pub(crate) fn from_lsp(diagnostic: &Diagnostic, text: &str) -> FileDiagnostic {
        let line = diagnostic.range.start.line;
        let column = crate::position::utf16_to_char_column(
            text.lines().nth(line as usize).unwrap_or(""),
            diagnostic.range.start.character,
        );
        FileDiagnostic {
            line: line.saturating_add(1),
            column: column.saturating_add(1),
            severity: Severity::of(diagnostic),
            message: diagnostic
                .message
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(400)
                .collect(),
            code: diagnostic.code.as_ref().map(|code| match code {
                NumberOrString::Number(n) => n.to_string(),
                NumberOrString::String(s) => s.clone(),
            }),
            source: diagnostic.source.clone(),
            preexisting: false,
        }
    }

    /// `path:line:col: error: message [code]`.
    pub fn line_for(&self, path: &str) -> String {
        let mut line = format!(
            "{path}:{}:{}: {}: {}",
            self.line,
            self.column,
            self.severity.as_str(),
            self.message
        );
        if let Some(code) = &self.code {
            let _ = write!(line, " [{code}]");
        }
        line
    }
}

/// Why no diagnostics could be given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The server has not finished `initialize`.
    Starting,
    /// The server is ready but reports work in progress (indexing) and sent
    /// nothing for this version in time.
    Indexing,
    /// Nothing for this version came within the wait.
    NoAnswer {
        /// How long was waited.
        waited: Duration,
    },
    /// The server crashed; it is restarted on a later call.
    Crashed {
        /// Exit status and last stderr line.
        reason: String,
    },
    /// The server is disabled for the rest of the session.
    Disabled {
        /// Why.
        reason: String,
    },
    /// The file could not be read back, or is too large to send.
    Unreadable {
        /// Why.
        reason: String,
    },
    /// The call was cancelled while waiting.
    Cancelled,
}

impl Note {
    /// One line saying it.
    pub fn text(&self, server: &str) -> String {
        match self {
            Note::Starting => format!("{server} is still starting; diagnostics on a later call"),
            Note::Indexing => format!("{server} is still indexing; diagnostics on a later call"),
            Note::NoAnswer { waited } => format!(
                "{server} sent no diagnostics for this version within {}",
                seconds(*waited)
            ),
            Note::Crashed { reason } => {
                format!("{server} crashed ({reason}); it is restarted on the next call")
            }
            Note::Disabled { reason } => format!("{server} is disabled: {reason}"),
            Note::Unreadable { reason } => format!("not sent to {server}: {reason}"),
            Note::Cancelled => "the wait for diagnostics was cancelled".to_owned(),
        }
    }
}

/// What the check after a write found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered for this version: its diagnostics, those reported
    /// (errors, or errors and warnings), errors first.
    Checked {
        /// The diagnostics reported.
        diagnostics: Vec<FileDiagnostic>,
    },
    /// No diagnostics, and why.
    Note(Note),
}

/// The check after one file was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The server asked.
    pub server: String,
    /// The file, absolute.
    pub path: PathBuf,
    /// How long the answer took.
    pub elapsed: Duration,
    /// What was found.
    pub outcome: Outcome,
}

/// At most this many diagnostics are listed per file.
pub const MAX_LISTED: usize = 20;

impl Report {
    /// The block the default, filesystem and codex surfaces append:
    /// `diagnostics (server, 0.3 s):`, then one `path:line:col: error:
    /// message [code]` line per new diagnostic, a count of those already
    /// there before the write, or `no errors in path`; a note when there is
    /// nothing to report. `shown` is the path as the surface names it.
    pub fn render_plain(&self, shown: &str) -> String {
        let mut out = format!("diagnostics ({}, {}):", self.server, seconds(self.elapsed));
        match &self.outcome {
            Outcome::Note(note) => {
                let _ = write!(out, "\n{}", note.text(&self.server));
            }
            Outcome::Checked { diagnostics } if diagnostics.is_empty() => {
                let _ = write!(out, "\nno errors in {shown}");
            }
            Outcome::Checked { diagnostics } => {
                let new: Vec<_> = diagnostics.iter().filter(|d| !d.preexisting).collect();
                let old = diagnostics.len() - new.len();
                for diagnostic in new.iter().take(MAX_LISTED) {
                    let _ = write!(out, "\n{}", diagnostic.line_for(shown));
                }
                if new.len() > MAX_LISTED {
                    let _ = write!(out, "\n… and {} more", new.len() - MAX_LISTED);
                }
                if old > 0 {
                    let _ = write!(
                        out,
                        "\n({old} {} already there before this write)",
                        if old == 1 {
                            "problem was"
                        } else {
                            "problems were"
                        }
                    );
                }
            }
        }
        out
    }

    /// The path relative to `root` when beneath it.
    pub fn relative_to<'a>(&'a self, root: &Path) -> std::borrow::Cow<'a, str> {
        match self.path.strip_prefix(root) {
            Ok(rel) => rel.to_string_lossy(),
            Err(_) => self.path.to_string_lossy(),
        }
    }
}

/// `0.3 s`.
pub(crate) fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

/// The name of an LSP `SymbolKind` number (1 `File` to 26 `TypeParameter`),
/// as the answers of every surface write it; `None` for a number outside
/// the protocol's list.
pub fn symbol_kind_name(kind: &serde_json::Value) -> Option<&'static str> {
    const KINDS: [&str; 26] = [
        "File",
        "Module",
        "Namespace",
        "Package",
        "Class",
        "Method",
        "Property",
        "Field",
        "Constructor",
        "Enum",
        "Interface",
        "Function",
        "Variable",
        "Constant",
        "String",
        "Number",
        "Boolean",
        "Array",
        "Object",
        "Key",
        "Null",
        "EnumMember",
        "Struct",
        "Event",
        "Operator",
        "TypeParameter",
    ];
    let index = usize::try_from(kind.as_u64()?).ok()?.checked_sub(1)?;
    KINDS.get(index).copied()
}

/// The text of a `textDocument/hover` answer: its `contents` as a string, a
/// `MarkupContent` or `MarkedString` (`value`), or a list of those joined
/// by blank lines; empty when there is none. Each surface words the
/// answer around it.
pub fn hover_text(result: &serde_json::Value) -> String {
    use serde_json::Value;
    match result.get("contents") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => o
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| {
                p.as_str()
                    .or_else(|| p.get("value").and_then(Value::as_str))
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::hover_text;
    use serde_json::json;

    #[test]
    fn hover_text_takes_every_shape_of_contents() {
        assert_eq!(hover_text(&json!({"contents": "plain"})), "plain");
        assert_eq!(
            hover_text(&json!({"contents": {"kind": "markdown", "value": "int"}})),
            "int"
        );
        assert_eq!(
            hover_text(&json!({"contents": ["a", {"language": "python", "value": "b"}, 3]})),
            "a\n\nb"
        );
        assert_eq!(hover_text(&json!(null)), "");
        assert_eq!(hover_text(&json!({"contents": 5})), "");
    }
}
