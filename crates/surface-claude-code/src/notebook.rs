//! Jupyter notebooks: `Read` shows their cells in Claude Code's
//! `<cell id=...>` form, `NotebookEdit` replaces, inserts or deletes one.

use std::hash::{BuildHasher as _, Hasher as _};
use std::sync::atomic::{AtomicU64, Ordering};

use agent_tools::{CallContext, Content, ErrorCode, ToolResult};
use agent_tools_surface_default::Services;
use serde::Serialize as _;
use serde_json::{Map, Value, json};

use crate::args::{CellType, EditMode, NotebookEditArgs};
use crate::cells::Cell;
use crate::messages::{self, check};
use crate::read::extension;
use crate::{resolve_absolute, session_of};

/// Outputs of one cell longer than this are not shown; the answer says how
/// to read them instead.
const MAX_OUTPUT_CHARS: usize = 10_000;

/// The cells of a notebook, each a text item `<cell id="...">...</cell
/// id="...">` (a markdown cell says its type, a code cell in another
/// language than python says it), outputs after the source, PNG and JPEG
/// outputs as images. The notebook is read as it is parsed (see
/// [`crate::cells`]): no JSON tree is built, and rendering keeps nothing
/// once the answer is over [`MAX_WHOLE_READ_BYTES`](crate::MAX_WHOLE_READ_BYTES)
/// (it only counts on, for the size the refusal names).
pub(crate) fn render(bytes: &[u8], raw: &str) -> ToolResult<Vec<Content>> {
    let not_json = |_| check(ErrorCode::InvalidInput, messages::NOTEBOOK_NOT_JSON);
    // The metadata (for the language) comes after the cells in the files
    // Jupyter writes: a first pass reads it, skipping the cells.
    let lang = crate::cells::language(bytes)
        .map_err(not_json)?
        .unwrap_or_else(|| "python".to_owned());
    let max = crate::MAX_WHOLE_READ_BYTES as usize;
    let mut content = Vec::new();
    let mut total = 0usize;
    crate::cells::each_cell(bytes, |index, cell| {
        if total > max && cell.outputs.is_empty() {
            // Past the budget only the size counts: measured, not built.
            total = total.saturating_add(bare_cell_len(index, &cell, &lang));
            return;
        }
        let (text, images) = render_cell(index, cell, &lang, raw);
        total = total.saturating_add(text.len());
        if total <= max {
            content.push(Content::Text(text));
            content.extend(images);
        }
    })
    .map_err(not_json)?;
    if total > max {
        return Err(check(
            ErrorCode::TooLarge,
            messages::notebook_too_big(raw, total as u64, crate::MAX_WHOLE_READ_BYTES),
        ));
    }
    if content.is_empty() {
        content.push(Content::Text(messages::EMPTY_FILE.to_owned()));
    }
    Ok(content)
}

/// The length of [`render_cell`]'s text for a cell without outputs.
fn bare_cell_len(index: usize, cell: &Cell, lang: &str) -> usize {
    let id = match &cell.id {
        Some(id) => id.len(),
        None => "cell-".len() + index.checked_ilog10().unwrap_or(0) as usize + 1,
    };
    let kind = cell.cell_type.as_deref().unwrap_or("code");
    let meta = if kind != "code" {
        "<cell_type></cell_type>".len() + kind.len()
    } else if lang != "python" {
        "<language></language>".len() + lang.len()
    } else {
        0
    };
    "<cell id=\"\">".len() + "</cell id=\"\">".len() + 2 * id + meta + cell.source.len()
}

/// One cell's text item and its images.
fn render_cell(index: usize, cell: Cell, lang: &str, raw: &str) -> (String, Vec<Content>) {
    let id = cell.id.unwrap_or_else(|| format!("cell-{index}"));
    let kind = cell.cell_type.as_deref().unwrap_or("code");
    let meta = if kind != "code" {
        format!("<cell_type>{kind}</cell_type>")
    } else if lang != "python" {
        format!("<language>{lang}</language>")
    } else {
        String::new()
    };
    let mut text = format!("<cell id=\"{id}\">{meta}{}</cell id=\"{id}\">", cell.source);
    let mut images = Vec::new();
    let mut outputs = String::new();
    for output in cell.outputs {
        let piece = match output.output_type.as_deref() {
            Some("stream") => output.text,
            Some("error") => format!(
                "{}: {}",
                output.ename.unwrap_or_default(),
                output.evalue.unwrap_or_default()
            ),
            _ => {
                for (mime, encoded) in [("image/png", output.png), ("image/jpeg", output.jpeg)] {
                    let Some(encoded) = encoded else { continue };
                    let encoded: String = encoded.chars().filter(|c| !c.is_whitespace()).collect();
                    if let Ok(data) = data_encoding::BASE64.decode(encoded.as_bytes()) {
                        images.push(Content::Image {
                            data,
                            mime_type: mime.to_owned(),
                        });
                    }
                }
                output.plain
            }
        };
        if !piece.is_empty() {
            outputs.push('\n');
            outputs.push_str(&piece);
        }
        if outputs.len() > 4 * MAX_OUTPUT_CHARS {
            // Past the limit already, however the characters count: the
            // rest would only be dropped.
            break;
        }
    }
    if outputs.chars().count() > MAX_OUTPUT_CHARS {
        outputs = format!("\n{}", messages::notebook_outputs_too_large(raw, index));
        images.clear();
    }
    text.push_str(&outputs);
    (text, images)
}

pub(crate) fn notebook_edit(
    services: &Services,
    args: NotebookEditArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let session = session_of(call)?;
    let raw = args.notebook_path.as_str();
    let path = resolve_absolute(services, raw, "notebook_path")?;
    if extension(raw) != "ipynb" {
        return Err(check(ErrorCode::InvalidInput, messages::NOT_A_NOTEBOOK));
    }
    let mode = args.edit_mode.unwrap_or_default();
    if mode == EditMode::Insert && args.cell_type.is_none() {
        return Err(check(ErrorCode::InvalidInput, messages::CELL_TYPE_REQUIRED));
    }
    let (message, seen) = services
        .files()
        .update_locked(&path, |now| {
            let Some(now) = now else {
                return Err(check(ErrorCode::NotFound, messages::NOTEBOOK_MISSING));
            };
            let Some(seen) = session.seen(path.abs()) else {
                return Err(check(ErrorCode::InvalidInput, messages::NOT_READ));
            };
            if !seen.still_current(now) {
                return Err(check(
                    ErrorCode::InvalidInput,
                    messages::MODIFIED_SINCE_READ,
                ));
            }
            let mut notebook: Value = serde_json::from_slice(&now.bytes)
                .map_err(|_| check(ErrorCode::InvalidInput, messages::NOTEBOOK_NOT_JSON))?;
            let message = change(&mut notebook, &args, mode)?;
            Ok((Some(to_bytes(&notebook)?), message))
        })
        .map_err(|err| match err.code() {
            ErrorCode::NotAFile => check(ErrorCode::NotAFile, messages::NOTEBOOK_MISSING),
            _ => err,
        })?;
    if let Some(seen) = seen {
        session.record(path.abs(), seen);
    }
    // A notebook is a file written like any other: a server configured for
    // `.ipynb` gets its new text, and its new diagnostics follow.
    Ok(crate::diagnostics::after_write(
        services,
        path.abs(),
        message,
        call,
    ))
}

/// Applies the edit to the parsed notebook; the answer's text.
fn change(notebook: &mut Value, args: &NotebookEditArgs, mode: EditMode) -> ToolResult<String> {
    let minor = notebook
        .get("nbformat_minor")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let major = notebook
        .get("nbformat")
        .and_then(Value::as_u64)
        .unwrap_or(4);
    let Some(cells) = notebook.get_mut("cells").and_then(Value::as_array_mut) else {
        return Err(check(ErrorCode::InvalidInput, messages::NOTEBOOK_NOT_JSON));
    };
    let target = match &args.cell_id {
        None if mode == EditMode::Insert => None,
        None => return Err(check(ErrorCode::InvalidInput, messages::CELL_ID_REQUIRED)),
        Some(id) => Some(find_cell(cells, id)?),
    };
    let source = args.new_source.as_str();
    match mode {
        EditMode::Replace => {
            let index = target.unwrap_or(0);
            let cell = &mut cells[index];
            if let Some(kind) = args.cell_type {
                cell["cell_type"] = json!(kind_name(kind));
            }
            cell["source"] = json!(source);
            if cell.get("cell_type").and_then(Value::as_str) == Some("code") {
                cell["outputs"] = json!([]);
                cell["execution_count"] = Value::Null;
            } else if let Some(object) = cell.as_object_mut() {
                object.remove("outputs");
                object.remove("execution_count");
            }
            let id = args.cell_id.clone().unwrap_or_default();
            Ok(messages::cell_updated(&id, source))
        }
        EditMode::Insert => {
            let kind = args.cell_type.unwrap_or(CellType::Code);
            let at = target.map_or(0, |index| index + 1);
            let mut cell = Map::new();
            cell.insert("cell_type".into(), json!(kind_name(kind)));
            let with_ids = major > 4 || (major == 4 && minor >= 5);
            let id = if with_ids {
                let id = fresh_id(cells);
                cell.insert("id".into(), json!(id));
                id
            } else {
                format!("cell-{at}")
            };
            cell.insert("metadata".into(), json!({}));
            cell.insert("source".into(), json!(source));
            if kind == CellType::Code {
                cell.insert("execution_count".into(), Value::Null);
                cell.insert("outputs".into(), json!([]));
            }
            cells.insert(at, Value::Object(cell));
            Ok(messages::cell_inserted(&id, source))
        }
        EditMode::Delete => {
            let index = target.unwrap_or(0);
            cells.remove(index);
            let id = args.cell_id.clone().unwrap_or_default();
            Ok(messages::cell_deleted(&id))
        }
    }
}

fn kind_name(kind: CellType) -> &'static str {
    match kind {
        CellType::Code => "code",
        CellType::Markdown => "markdown",
    }
}

/// The index of the cell with this id, or of `cell-N`.
fn find_cell(cells: &[Value], id: &str) -> ToolResult<usize> {
    if let Some(index) = cells
        .iter()
        .position(|cell| cell.get("id").and_then(Value::as_str) == Some(id))
    {
        return Ok(index);
    }
    if let Some(index) = id
        .strip_prefix("cell-")
        .and_then(|n| n.parse::<usize>().ok())
    {
        if index < cells.len() {
            return Ok(index);
        }
        return Err(check(
            ErrorCode::InvalidInput,
            messages::cell_index_missing(index),
        ));
    }
    Err(check(
        ErrorCode::InvalidInput,
        messages::cell_id_missing(id),
    ))
}

/// A new cell id, eight base-36 characters, unused in the notebook.
fn fresh_id(cells: &[Value]) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        let mut n = hasher.finish();
        let mut id = String::new();
        for _ in 0..8 {
            id.push(char::from_digit((n % 36) as u32, 36).unwrap_or('0'));
            n /= 36;
        }
        if !cells
            .iter()
            .any(|cell| cell.get("id").and_then(Value::as_str) == Some(&id))
        {
            return id;
        }
    }
}

/// The notebook as Jupyter writes it: one-space indents, a final newline.
fn to_bytes(notebook: &Value) -> ToolResult<Vec<u8>> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    notebook
        .serialize(&mut serializer)
        .map_err(|err| agent_tools::ToolError::internal(format!("notebook not written: {err}")))?;
    out.push(b'\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Value {
        json!({
            "cells": [
                {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n", "text"]},
                {"cell_type": "code", "id": "calc", "metadata": {}, "execution_count": 1,
                 "source": "1 + 1", "outputs": [
                    {"output_type": "execute_result", "data": {"text/plain": ["2"]}, "metadata": {}, "execution_count": 1},
                    {"output_type": "stream", "name": "stdout", "text": ["hi\n"]}
                 ]}
            ],
            "metadata": {"language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5
        })
    }

    #[test]
    fn cells_render_in_claude_codes_form() {
        let bytes = serde_json::to_vec(&sample()).unwrap();
        let content = render(&bytes, "/w/n.ipynb").unwrap();
        let texts: Vec<&str> = content.iter().filter_map(Content::as_text).collect();
        assert_eq!(
            texts,
            [
                "<cell id=\"intro\"><cell_type>markdown</cell_type># Title\ntext</cell id=\"intro\">",
                "<cell id=\"calc\">1 + 1</cell id=\"calc\">\n2\nhi\n",
            ]
        );
        let mut other = sample();
        other["metadata"]["language_info"]["name"] = json!("julia");
        other["cells"][1].as_object_mut().unwrap().remove("id");
        let content = render(&serde_json::to_vec(&other).unwrap(), "/w/n.ipynb").unwrap();
        assert!(content[1].as_text().unwrap().starts_with(
            "<cell id=\"cell-1\"><language>julia</language>1 + 1</cell id=\"cell-1\">"
        ));
        assert_eq!(
            render(b"{", "/w/n.ipynb").unwrap_err().message(),
            "Notebook is not valid JSON."
        );
    }

    #[test]
    fn big_outputs_are_replaced_by_how_to_read_them() {
        let mut notebook = sample();
        notebook["cells"][1]["outputs"][1]["text"] = json!("x".repeat(MAX_OUTPUT_CHARS + 1));
        let content = render(&serde_json::to_vec(&notebook).unwrap(), "/w/n.ipynb").unwrap();
        assert!(content[1].as_text().unwrap().ends_with(
            "\nOutputs are too large to include. Use Bash with: cat /w/n.ipynb | jq '.cells[1].outputs'"
        ));
    }

    #[test]
    fn values_of_other_shapes_read_as_absent() {
        let odd = json!({
            "cells": [
                7,
                {"id": 3, "cell_type": ["x"], "source": {"a": 1}, "outputs": "none"},
                {"source": ["a", 1, "b"], "outputs": [
                    {"output_type": "stream", "text": 5},
                    {"output_type": "error", "ename": "E", "evalue": null},
                    "x"
                ]}
            ],
            "metadata": {"language_info": {"name": 12}, "kernelspec": {"language": "R"}}
        });
        let content = render(&serde_json::to_vec(&odd).unwrap(), "/w/n.ipynb").unwrap();
        let texts: Vec<&str> = content.iter().filter_map(Content::as_text).collect();
        assert_eq!(
            texts,
            [
                "<cell id=\"cell-0\"><language>R</language></cell id=\"cell-0\">",
                "<cell id=\"cell-1\"><language>R</language></cell id=\"cell-1\">",
                "<cell id=\"cell-2\"><language>R</language>ab</cell id=\"cell-2\">\nE: ",
            ]
        );
        for not_a_notebook in [&b"[1, 2]"[..], b"\"text\"", b"{}"] {
            let content = render(not_a_notebook, "/w/n.ipynb").unwrap();
            assert_eq!(content[0].as_text(), Some(messages::EMPTY_FILE));
        }
        assert!(render(b"{\"cells\": [}", "/w/n.ipynb").is_err());
    }

    /// 2 MiB of empty cells, like the review's 16 MiB notebook (smaller,
    /// for a debug build's speed).
    fn empty_cells() -> (Vec<u8>, usize) {
        let mut bytes = b"{\"cells\": [{}".to_vec();
        while bytes.len() < 2 << 20 {
            bytes.extend_from_slice(b",{}");
        }
        bytes.extend_from_slice(b"]}");
        let cells = (bytes.len() - 12) / 3 + 1;
        (bytes, cells)
    }

    #[test]
    fn a_notebook_of_many_cells_is_refused_with_its_whole_size() {
        let (bytes, cells) = empty_cells();
        let rendered: usize = (0..cells)
            .map(|index| format!("<cell id=\"cell-{index}\"></cell id=\"cell-{index}\">").len())
            .sum();
        assert_eq!(
            render(&bytes, "/w/n.ipynb").unwrap_err().message(),
            messages::notebook_too_big("/w/n.ipynb", rendered as u64, crate::MAX_WHOLE_READ_BYTES)
        );
    }

    #[test]
    fn a_bare_cells_length_is_its_rendered_length() {
        for (index, id, kind, source, lang) in [
            (0, None, None, "", "python"),
            (9, None, Some("markdown"), "# x", "python"),
            (10, Some("abc"), None, "1 + 1", "julia"),
            (12_345, None, Some("code"), "é", "R"),
        ] {
            let cell = || Cell {
                id: id.map(str::to_owned),
                cell_type: kind.map(str::to_owned),
                source: source.to_owned(),
                outputs: Vec::new(),
            };
            let (text, _) = render_cell(index, cell(), lang, "/w/n.ipynb");
            assert_eq!(bare_cell_len(index, &cell(), lang), text.len(), "{text}");
        }
    }

    /// Measured in a child (see [`crate::peak`]).
    #[test]
    fn notebook_read_for_measuring() {
        if !crate::peak::measuring("notebook::tests::notebook_read_for_measuring") {
            return;
        }
        let (bytes, _) = empty_cells();
        crate::peak::start();
        assert!(render(&bytes, "/w/n.ipynb").is_err());
        crate::peak::report();
    }

    #[test]
    fn a_notebook_of_many_cells_is_read_without_holding_them() {
        // Parsed into a JSON tree and copied, such a notebook took some
        // seventy times its size (1.14 GB for 16 MiB); the input is 2 MiB.
        let peak = crate::peak::peak_of_test("notebook::tests::notebook_read_for_measuring");
        assert!(peak < 40 << 20, "peak resident set {peak} bytes");
    }

    fn args(id: Option<&str>, mode: EditMode, kind: Option<CellType>) -> NotebookEditArgs {
        NotebookEditArgs {
            notebook_path: "/w/n.ipynb".into(),
            cell_id: id.map(str::to_owned),
            new_source: "print(3)".into(),
            cell_type: kind,
            edit_mode: Some(mode),
        }
    }

    #[test]
    fn replace_insert_and_delete() {
        let mut notebook = sample();
        let message = change(
            &mut notebook,
            &args(Some("calc"), EditMode::Replace, None),
            EditMode::Replace,
        )
        .unwrap();
        assert_eq!(message, "Updated cell calc with print(3)");
        assert_eq!(notebook["cells"][1]["source"], "print(3)");
        assert_eq!(notebook["cells"][1]["outputs"], json!([]));
        assert_eq!(notebook["cells"][1]["execution_count"], Value::Null);

        let message = change(
            &mut notebook,
            &args(Some("intro"), EditMode::Insert, Some(CellType::Code)),
            EditMode::Insert,
        )
        .unwrap();
        let new_id = notebook["cells"][1]["id"].as_str().unwrap().to_owned();
        assert_eq!(message, format!("Inserted cell {new_id} with print(3)"));
        assert_eq!(new_id.len(), 8);
        change(
            &mut notebook,
            &args(None, EditMode::Insert, Some(CellType::Markdown)),
            EditMode::Insert,
        )
        .unwrap();
        assert_eq!(notebook["cells"][0]["cell_type"], "markdown");
        assert_eq!(notebook["cells"].as_array().unwrap().len(), 4);

        let message = change(
            &mut notebook,
            &args(Some("cell-0"), EditMode::Delete, None),
            EditMode::Delete,
        )
        .unwrap();
        assert_eq!(message, "Deleted cell cell-0");
        assert_eq!(notebook["cells"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn missing_cells_and_ids_get_claude_codes_words() {
        let mut notebook = sample();
        let err = |id: Option<&str>, mode| {
            change(&mut sample(), &args(id, mode, None), mode)
                .unwrap_err()
                .message()
                .to_owned()
        };
        assert_eq!(
            err(Some("nope"), EditMode::Replace),
            "Cell with ID \"nope\" not found in notebook."
        );
        assert_eq!(
            err(Some("cell-9"), EditMode::Replace),
            "Cell with index 9 does not exist in notebook."
        );
        assert_eq!(
            err(None, EditMode::Delete),
            "Cell ID must be specified when not inserting a new cell."
        );
        let bytes = to_bytes(&notebook).unwrap();
        assert!(
            bytes.starts_with(b"{\n \"cells\": [\n  {"),
            "{}",
            String::from_utf8_lossy(&bytes)
        );
        notebook["cells"] = json!("x");
        assert_eq!(
            change(
                &mut notebook,
                &args(Some("a"), EditMode::Replace, None),
                EditMode::Replace
            )
            .unwrap_err()
            .message(),
            "Notebook is not valid JSON."
        );
    }
}
