//! A server's `WorkspaceEdit` (the answer to `textDocument/rename`) as
//! plain per-file text edits, and those edits applied to a file's text.
//!
//! Only text edits are taken: a workspace edit that also creates, renames
//! or deletes files is refused whole, since the tools apply edits to files
//! that exist and nothing else.

use std::path::PathBuf;

use serde_json::Value;

use crate::uri::uri_to_path;

/// One replacement in a file: the text between two positions (0-based
/// line, UTF-16 column, as the protocol counts) becomes `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    /// Start line, from 0.
    pub start_line: u32,
    /// Start column in UTF-16 code units, from 0.
    pub start_character: u32,
    /// End line, from 0.
    pub end_line: u32,
    /// End column in UTF-16 code units, from 0.
    pub end_character: u32,
    /// The replacement.
    pub new_text: String,
}

/// The edits of one file, in the order the server gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdits {
    /// The file (absolute, as the server's URI names it).
    pub path: PathBuf,
    /// Its edits, all against the same text.
    pub edits: Vec<TextEdit>,
}

/// Why a workspace edit cannot be applied as text edits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The edit creates, renames or deletes a file.
    #[error("the server's edit would {kind} a file ({uri}); only text edits are applied")]
    ResourceOperation {
        /// `create`, `rename` or `delete`.
        kind: String,
        /// The file it names.
        uri: String,
    },
    /// A URI that names no local file.
    #[error("the server's edit names {0}, which is not a local file")]
    NotAFile(String),
    /// The answer is not a workspace edit.
    #[error("the server's answer is not a workspace edit: {0}")]
    Malformed(String),
    /// An edit starts after it ends, or past the end of the text.
    #[error("an edit's range {0} does not lie in the file as it is now")]
    OutOfRange(String),
    /// Two edits of one file overlap.
    #[error("two edits overlap at {0}")]
    Overlap(String),
}

/// The per-file edits of `edit` (a `WorkspaceEdit`): its `documentChanges`
/// when present, else its `changes`. A file named twice (in successive
/// document changes) appears twice, in order: each applies to the result
/// of the one before.
pub fn file_edits(edit: &Value) -> Result<Vec<FileEdits>, EditError> {
    let mut out = Vec::new();
    if let Some(changes) = edit.get("documentChanges").filter(|v| !v.is_null()) {
        let changes = changes
            .as_array()
            .ok_or_else(|| EditError::Malformed("documentChanges is not a list".into()))?;
        for change in changes {
            if let Some(kind) = change.get("kind").and_then(Value::as_str) {
                let uri = change
                    .get("uri")
                    .or_else(|| change.get("oldUri"))
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                return Err(EditError::ResourceOperation {
                    kind: kind.to_owned(),
                    uri: uri.to_owned(),
                });
            }
            let uri = change
                .pointer("/textDocument/uri")
                .and_then(Value::as_str)
                .ok_or_else(|| EditError::Malformed("a document change names no file".into()))?;
            let edits = change
                .get("edits")
                .ok_or_else(|| EditError::Malformed(format!("no edits for {uri}")))?;
            out.push(FileEdits {
                path: local(uri)?,
                edits: text_edits(edits)?,
            });
        }
        return Ok(out);
    }
    if let Some(changes) = edit.get("changes").filter(|v| !v.is_null()) {
        let changes = changes
            .as_object()
            .ok_or_else(|| EditError::Malformed("changes is not a map".into()))?;
        for (uri, edits) in changes {
            out.push(FileEdits {
                path: local(uri)?,
                edits: text_edits(edits)?,
            });
        }
    }
    Ok(out)
}

fn local(uri: &str) -> Result<PathBuf, EditError> {
    uri_to_path(uri).ok_or_else(|| EditError::NotAFile(uri.to_owned()))
}

fn text_edits(edits: &Value) -> Result<Vec<TextEdit>, EditError> {
    let edits = edits
        .as_array()
        .ok_or_else(|| EditError::Malformed("edits is not a list".into()))?;
    edits
        .iter()
        .map(|edit| {
            let number = |pointer: &str| {
                edit.pointer(pointer)
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| EditError::Malformed(format!("an edit has no {pointer}")))
            };
            // A snippet edit (`SnippetTextEdit`) has no plain text to apply.
            let new_text = edit
                .get("newText")
                .and_then(Value::as_str)
                .ok_or_else(|| EditError::Malformed("an edit has no newText".into()))?;
            Ok(TextEdit {
                start_line: number("/range/start/line")?,
                start_character: number("/range/start/character")?,
                end_line: number("/range/end/line")?,
                end_character: number("/range/end/character")?,
                new_text: new_text.to_owned(),
            })
        })
        .collect()
}

/// The byte offset of each line's start in `text`; lines end at `\n`,
/// `\r\n` or a lone `\r`, as the protocol counts them.
fn line_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut starts = vec![0];
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => starts.push(i + 1),
            b'\r' if bytes.get(i + 1) != Some(&b'\n') => starts.push(i + 1),
            _ => {}
        }
        i += 1;
    }
    starts
}

/// The byte offset of (line, UTF-16 column); a column past the line's end
/// means its end (as the protocol says), a line past the text's end is an
/// error.
fn offset(text: &str, starts: &[usize], line: u32, character: u32) -> Option<usize> {
    let start = *starts.get(line as usize)?;
    let end = starts.get(line as usize + 1).copied().unwrap_or(text.len());
    let content = text[start..end].trim_end_matches(['\n', '\r']);
    let mut units = 0u32;
    for (at, c) in content.char_indices() {
        if units >= character {
            return Some(start + at);
        }
        units += c.len_utf16() as u32;
    }
    Some(start + content.len())
}

/// `text` with `edits` applied (all against `text`; edits at one place
/// apply in the order given). Overlapping edits, or ranges that are not
/// in the text, are refused.
pub fn apply_edits(text: &str, edits: &[TextEdit]) -> Result<String, EditError> {
    let starts = line_starts(text);
    let mut spans = Vec::with_capacity(edits.len());
    for edit in edits {
        let shown = format!(
            "{}:{}-{}:{}",
            edit.start_line + 1,
            edit.start_character + 1,
            edit.end_line + 1,
            edit.end_character + 1
        );
        let start = offset(text, &starts, edit.start_line, edit.start_character);
        let end = offset(text, &starts, edit.end_line, edit.end_character);
        match (start, end) {
            (Some(start), Some(end)) if start <= end => spans.push((start, end, edit, shown)),
            _ => return Err(EditError::OutOfRange(shown)),
        }
    }
    // Stable: inserts at one place keep their order.
    spans.sort_by_key(|(start, end, _, _)| (*start, *end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, edit, shown) in spans {
        if start < at {
            return Err(EditError::Overlap(shown));
        }
        out.push_str(&text[at..start]);
        out.push_str(&edit.new_text);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edit(l1: u32, c1: u32, l2: u32, c2: u32, new: &str) -> TextEdit {
        TextEdit {
            start_line: l1,
            start_character: c1,
            end_line: l2,
            end_character: c2,
            new_text: new.to_owned(),
        }
    }

    #[test]
    fn edits_apply_against_the_original_text_in_utf16_columns() {
        let text = "def helper(x):\r\n    s = '😀'; helper(1)\n";
        let out = apply_edits(
            text,
            &[edit(1, 14, 1, 20, "assist"), edit(0, 4, 0, 10, "assist")],
        )
        .unwrap();
        assert_eq!(out, "def assist(x):\r\n    s = '😀'; assist(1)\n");
        // Two inserts at one place keep their order; a column past the end
        // of a line is its end.
        let out = apply_edits("ab\ncd", &[edit(0, 9, 0, 9, "1"), edit(0, 2, 0, 2, "2")]).unwrap();
        assert_eq!(out, "ab12\ncd");
        assert_eq!(
            apply_edits("ab", &[edit(1, 0, 1, 0, "x")]).unwrap_err(),
            EditError::OutOfRange("2:1-2:1".into())
        );
        assert_eq!(
            apply_edits("abcdef", &[edit(0, 0, 0, 3, "x"), edit(0, 2, 0, 4, "y")]).unwrap_err(),
            EditError::Overlap("1:3-1:5".into())
        );
        assert!(matches!(
            apply_edits("abc", &[edit(0, 2, 0, 1, "x")]),
            Err(EditError::OutOfRange(_))
        ));
        // A lone carriage return ends a line too.
        assert_eq!(
            apply_edits("a\rb", &[edit(1, 0, 1, 1, "c")]).unwrap(),
            "a\rc"
        );
    }

    #[test]
    fn workspace_edits_are_read_in_both_shapes_and_file_operations_refused() {
        let range =
            json!({"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 10}});
        let changes = json!({"changes": {"file:///w/a.py": [{"range": range, "newText": "b"}]}});
        let got = file_edits(&changes).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].path, PathBuf::from("/w/a.py"));
        assert_eq!(got[0].edits, [edit(0, 4, 0, 10, "b")]);
        let documents = json!({"documentChanges": [
            {"textDocument": {"uri": "file:///w/a.py", "version": 3},
             "edits": [{"range": range, "newText": "b", "annotationId": "x"}]}]});
        assert_eq!(file_edits(&documents).unwrap(), got);
        let create = json!({"documentChanges": [{"kind": "create", "uri": "file:///w/new.py"}]});
        assert_eq!(
            file_edits(&create).unwrap_err().to_string(),
            "the server's edit would create a file (file:///w/new.py); only text edits are applied"
        );
        let rename = json!({"documentChanges": [{"kind": "rename", "oldUri": "file:///w/a.py", "newUri": "file:///w/b.py"}]});
        assert!(
            matches!(file_edits(&rename), Err(EditError::ResourceOperation { kind, .. }) if kind == "rename")
        );
        let remote = json!({"changes": {"https://x/a.py": []}});
        assert_eq!(
            file_edits(&remote).unwrap_err(),
            EditError::NotAFile("https://x/a.py".into())
        );
        assert!(matches!(
            file_edits(&json!({"changes": []})),
            Err(EditError::Malformed(_))
        ));
        assert!(file_edits(&json!({})).unwrap().is_empty());
    }
}
