//! The diagnostics a write introduced, in Claude Code's words: the
//! `<new-diagnostics>` block Claude Code adds to the next turn, added here
//! to the write's own answer (an MCP server has no turn to add it to).
//!
//! Only what is new is told, as Claude Code does: a clean file, a server
//! still starting or gone, add nothing, so the answer stays Claude Code's
//! own text.

use std::fmt::Write as _;
use std::path::Path;

use agent_tools::CallContext;
use agent_tools_lsp::{FileDiagnostic, Outcome, Report, Severity};
use agent_tools_surface_default::Services;

/// At most this many diagnostics per file, as Claude Code lists them.
const MAX_PER_FILE: usize = 10;
/// At most this many in all.
const MAX_TOTAL: usize = 30;
/// The summary is cut at this many characters.
const MAX_CHARS: usize = 4000;
const TRUNCATED: &str = "…[truncated]";

/// `answer`, followed by the new diagnostics of `path` (as written) when
/// a server reports some.
pub(crate) fn after_write(
    services: &Services,
    path: &Path,
    answer: String,
    call: &CallContext,
) -> String {
    let Some(name) = path.to_str() else {
        return answer;
    };
    let reports = services.diagnostics_after_write(&[name], call.cancel.flag());
    match summary(&reports) {
        Some(summary) => format!(
            "{answer}\n\n<new-diagnostics>The following new diagnostic issues were detected:\n\n{summary}</new-diagnostics>"
        ),
        None => answer,
    }
}

/// Claude Code's glyph for a severity.
fn glyph(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "✘",
        Severity::Warning => "⚠",
        Severity::Information => "ℹ",
        Severity::Hint => "★",
    }
}

/// `name:` then `  ✘ [Line L:C] message [code] (source)` per diagnostic,
/// files apart by a blank line; `None` when nothing is new.
fn summary(reports: &[Report]) -> Option<String> {
    let mut sections = Vec::new();
    let mut total = 0;
    for report in reports {
        let Outcome::Checked { diagnostics } = &report.outcome else {
            continue;
        };
        let new: Vec<&FileDiagnostic> = diagnostics
            .iter()
            .filter(|d| !d.preexisting)
            .take(MAX_PER_FILE.min(MAX_TOTAL - total))
            .collect();
        if new.is_empty() {
            continue;
        }
        total += new.len();
        let name = report
            .path
            .file_name()
            .map_or_else(|| report.path.to_string_lossy(), |n| n.to_string_lossy());
        let mut section = format!("{name}:");
        for d in new {
            let _ = write!(
                section,
                "\n  {} [Line {}:{}] {}",
                glyph(d.severity),
                d.line,
                d.column,
                d.message
            );
            if let Some(code) = &d.code {
                let _ = write!(section, " [{code}]");
            }
            if let Some(source) = &d.source {
                let _ = write!(section, " ({source})");
            }
        }
        sections.push(section);
        if total >= MAX_TOTAL {
            break;
        }
    }
    if sections.is_empty() {
        return None;
    }
    let mut out = sections.join("\n\n");
    if out.chars().count() > MAX_CHARS {
        out = out
            .chars()
            .take(MAX_CHARS - TRUNCATED.chars().count())
            .collect();
        out.push_str(TRUNCATED);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_tools_lsp::Note;
    use std::time::Duration;

    fn diagnostic(line: u32, message: &str, preexisting: bool) -> FileDiagnostic {
        FileDiagnostic {
            line,
            column: 8,
            severity: Severity::Error,
            message: message.to_owned(),
            code: Some("reportArgumentType".to_owned()),
            source: Some("Pyright".to_owned()),
            preexisting,
        }
    }

    fn report(path: &str, outcome: Outcome) -> Report {
        Report {
            server: "pyright".to_owned(),
            path: path.into(),
            elapsed: Duration::from_millis(300),
            outcome,
        }
    }

    #[test]
    fn only_new_diagnostics_are_told_in_claude_codes_form() {
        let reports = [
            report(
                "/w/src/main.py",
                Outcome::Checked {
                    diagnostics: vec![diagnostic(3, "bad", false), diagnostic(4, "old", true)],
                },
            ),
            report("/w/b.py", Outcome::Note(Note::Starting)),
            report(
                "/w/c.py",
                Outcome::Checked {
                    diagnostics: vec![],
                },
            ),
        ];
        assert_eq!(
            summary(&reports).unwrap(),
            "main.py:\n  ✘ [Line 3:8] bad [reportArgumentType] (Pyright)"
        );
        assert_eq!(summary(&reports[1..]), None);
        let many: Vec<_> = (1..=15).map(|n| diagnostic(n, "x", false)).collect();
        let text = summary(&[report("/w/a.py", Outcome::Checked { diagnostics: many })]).unwrap();
        assert_eq!(text.lines().count(), 1 + MAX_PER_FILE);
        let long = vec![diagnostic(1, &"y".repeat(5000), false)];
        let text = summary(&[report("/w/a.py", Outcome::Checked { diagnostics: long })]).unwrap();
        assert!(text.ends_with(TRUNCATED) && text.chars().count() == MAX_CHARS);
    }
}
