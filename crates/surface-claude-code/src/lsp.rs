//! `LSP`: Claude Code's code-intelligence tool over the language servers
//! (`--lsp`), with its operation names and answer shapes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use agent_tools::{CallContext, ErrorCode, ToolResult};
use agent_tools_lsp::uri::uri_to_path;
use agent_tools_lsp::{LspError, RequestError};
use agent_tools_surface_default::Services;
use agent_tools_walk::IgnoreMatcher;
use serde_json::{Value, json};

use crate::args::{LspArgs, LspOperation};
use crate::messages::{check, thrown};

fn name(op: LspOperation) -> &'static str {
    match op {
        LspOperation::GoToDefinition => "goToDefinition",
        LspOperation::FindReferences => "findReferences",
        LspOperation::Hover => "hover",
        LspOperation::DocumentSymbol => "documentSymbol",
        LspOperation::WorkspaceSymbol => "workspaceSymbol",
        LspOperation::GoToImplementation => "goToImplementation",
        LspOperation::PrepareCallHierarchy => "prepareCallHierarchy",
        LspOperation::IncomingCalls => "incomingCalls",
        LspOperation::OutgoingCalls => "outgoingCalls",
    }
}

/// Runs one `LSP` call.
pub(crate) fn lsp(services: &Services, args: LspArgs, call: &CallContext) -> ToolResult<String> {
    let op = args.operation;
    let Some(client) = services.lsp() else {
        return Err(thrown(
            ErrorCode::InvalidInput,
            "LSP is not available: the server was started without --lsp",
        ));
    };
    let workspace = services.files().workspace();
    let target = workspace.resolve(&args.file_path)?;
    let path = target.abs().to_path_buf();
    if !path.is_file() {
        return Err(check(
            ErrorCode::NotFound,
            format!("File does not exist: {}", args.file_path),
        ));
    }
    let root = workspace.root().to_path_buf();
    let cancel = call.cancel.flag();
    // Claude Code sends its 1-based position less one, as is.
    let position = json!({
        "line": u32::try_from(args.line.saturating_sub(1)).unwrap_or(u32::MAX),
        "character": u32::try_from(args.character.saturating_sub(1)).unwrap_or(u32::MAX),
    });
    let at = |uri: &str| json!({"textDocument": {"uri": uri}, "position": position});
    let result = match op {
        LspOperation::GoToDefinition => {
            client.request(&path, "textDocument/definition", at, cancel)
        }
        LspOperation::GoToImplementation => {
            client.request(&path, "textDocument/implementation", at, cancel)
        }
        LspOperation::FindReferences => client.request(
            &path,
            "textDocument/references",
            |uri| {
                let mut params = at(uri);
                params["context"] = json!({"includeDeclaration": true});
                params
            },
            cancel,
        ),
        LspOperation::Hover => client.request(&path, "textDocument/hover", at, cancel),
        LspOperation::DocumentSymbol => client.request(
            &path,
            "textDocument/documentSymbol",
            |uri| json!({"textDocument": {"uri": uri}}),
            cancel,
        ),
        LspOperation::WorkspaceSymbol => client.workspace_request(
            &path,
            "workspace/symbol",
            json!({"query": args.query.clone().unwrap_or_default()}),
            cancel,
        ),
        LspOperation::PrepareCallHierarchy => {
            client.request(&path, "textDocument/prepareCallHierarchy", at, cancel)
        }
        LspOperation::IncomingCalls | LspOperation::OutgoingCalls => {
            match client.request(&path, "textDocument/prepareCallHierarchy", at, cancel) {
                Ok(items) => match items.as_array().and_then(|i| i.first()).cloned() {
                    // The first item, as Claude Code does.
                    Some(item) => client.request(
                        &path,
                        if op == LspOperation::IncomingCalls {
                            "callHierarchy/incomingCalls"
                        } else {
                            "callHierarchy/outgoingCalls"
                        },
                        |_| json!({"item": item}),
                        cancel,
                    ),
                    None => Ok(Value::Array(Vec::new())),
                },
                Err(err) => Err(err),
            }
        }
    };
    let result = match result {
        Ok(result) => result,
        Err(RequestError::NoServer(ext)) => {
            return Ok(format!(
                "No LSP server available for file type: {}",
                if ext.starts_with('.') {
                    ext
                } else {
                    String::new()
                }
            ));
        }
        Err(err @ RequestError::NotReady { .. }) => {
            return Err(thrown(
                ErrorCode::IoError,
                format!("Error performing {}: {err}", name(op)),
            ));
        }
        Err(RequestError::Lsp(err)) => {
            let code = match err {
                LspError::Timeout { .. } => ErrorCode::Timeout,
                _ => ErrorCode::IoError,
            };
            return Err(thrown(
                code,
                format!("Error performing {}: {err}", name(op)),
            ));
        }
    };
    // Claude Code drops locations in git-ignored files from these four
    // operations' lists (a single location is kept), saying nothing.
    let result = match (op, result) {
        (
            LspOperation::FindReferences
            | LspOperation::GoToDefinition
            | LspOperation::GoToImplementation
            | LspOperation::WorkspaceSymbol,
            Value::Array(items),
        ) => {
            let mut ignores = IgnoreMatcher::for_workspace(workspace)?;
            Value::Array(
                items
                    .into_iter()
                    .filter(|item| {
                        !location_uri(item)
                            .and_then(uri_to_path)
                            .is_some_and(|path| ignores.is_ignored_abs(&path))
                    })
                    .collect(),
            )
        }
        (_, result) => result,
    };
    let shown = |p: &Path| match p.strip_prefix(&root) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => p.to_string_lossy().into_owned(),
    };
    Ok(match op {
        LspOperation::GoToDefinition => definitions(&result, "definition", &shown),
        LspOperation::GoToImplementation => definitions(&result, "implementation", &shown),
        LspOperation::FindReferences => references(&result, &shown),
        LspOperation::Hover => hover(&result, args.line, args.character),
        LspOperation::DocumentSymbol => document_symbols(&result),
        LspOperation::WorkspaceSymbol => workspace_symbols(&result, &shown),
        LspOperation::PrepareCallHierarchy => call_items(&result, &shown),
        LspOperation::IncomingCalls => calls(&result, "from", "incoming", &shown),
        LspOperation::OutgoingCalls => calls(&result, "to", "outgoing", &shown),
    })
}

/// The file a Location, LocationLink or SymbolInformation names.
fn location_uri(item: &Value) -> Option<&str> {
    item.get("uri")
        .or_else(|| item.get("targetUri"))
        .or_else(|| item.pointer("/location/uri"))
        .and_then(Value::as_str)
}

/// The locations of a definition-like answer (Location or LocationLink,
/// one or many), as `(path, line, character)`, 1-based.
fn locations(result: &Value) -> Vec<(PathBuf, u64, u64)> {
    let items = match result {
        Value::Array(items) => items.clone(),
        Value::Null => Vec::new(),
        one => vec![one.clone()],
    };
    items
        .iter()
        .filter_map(|item| {
            let (uri, range) = match item.get("targetUri") {
                Some(uri) => (uri, item.get("targetSelectionRange")?),
                None => (item.get("uri")?, item.get("range")?),
            };
            Some((
                uri_to_path(uri.as_str()?)?,
                range.pointer("/start/line")?.as_u64()? + 1,
                range.pointer("/start/character")?.as_u64()? + 1,
            ))
        })
        .collect()
}

fn definitions(result: &Value, noun: &str, shown: &dyn Fn(&Path) -> String) -> String {
    let found = locations(result);
    match found.as_slice() {
        [] => format!(
            "No {noun} found. The position may not be on a symbol, or the language server may not have indexed the workspace yet."
        ),
        [(path, line, col)] => {
            let verb = if noun == "definition" {
                "Defined in"
            } else {
                "Implemented in"
            };
            format!("{verb} {}:{line}:{col}", shown(path))
        }
        many => {
            let mut out = format!("Found {} {noun}s:", many.len());
            for (path, line, col) in many {
                let _ = write!(out, "\n  {}:{line}:{col}", shown(path));
            }
            out
        }
    }
}

fn references(result: &Value, shown: &dyn Fn(&Path) -> String) -> String {
    let found = locations(result);
    if found.is_empty() {
        return "No references found. The position may not be on a symbol, or the language server may not have indexed the workspace yet.".to_owned();
    }
    let mut by_file: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for (path, line, col) in &found {
        by_file.entry(shown(path)).or_default().push((*line, *col));
    }
    let mut out = format!(
        "Found {} reference{} across {} file{}:",
        found.len(),
        if found.len() == 1 { "" } else { "s" },
        by_file.len(),
        if by_file.len() == 1 { "" } else { "s" }
    );
    for (file, places) in by_file {
        let _ = write!(out, "\n\n{file}:");
        for (line, col) in places {
            let _ = write!(out, "\n  Line {line}:{col}");
        }
    }
    out
}

fn hover(result: &Value, line: u64, character: u64) -> String {
    let text = agent_tools_lsp::hover_text(result);
    if text.trim().is_empty() {
        return "No hover information available at this position.".to_owned();
    }
    format!("Hover info at {line}:{character}:\n\n{text}")
}

fn kind(value: Option<&Value>) -> &'static str {
    value
        .and_then(agent_tools_lsp::symbol_kind_name)
        .unwrap_or("Unknown")
}

fn document_symbols(result: &Value) -> String {
    fn walk(item: &Value, depth: usize, out: &mut String) {
        if depth > 32 {
            return;
        }
        let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
        let detail = item
            .get("detail")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
            .map_or(String::new(), |d| format!(" {d}"));
        let line = item
            .pointer("/range/start/line")
            .or_else(|| item.pointer("/location/range/start/line"))
            .and_then(Value::as_u64)
            .map_or(0, |l| l + 1);
        let _ = write!(
            out,
            "\n{}{name} ({}){detail} - Line {line}",
            "  ".repeat(depth + 1),
            kind(item.get("kind"))
        );
        for child in item
            .get("children")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(child, depth + 1, out);
        }
    }
    let items = result.as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        return "No symbols found in document. The file may be empty, or the language server may not support document symbols for it.".to_owned();
    }
    let mut out = "Document symbols:".to_owned();
    for item in &items {
        walk(item, 0, &mut out);
    }
    out
}

fn workspace_symbols(result: &Value, shown: &dyn Fn(&Path) -> String) -> String {
    let items = result.as_array().cloned().unwrap_or_default();
    let mut by_file: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut count = 0;
    for item in &items {
        let Some(path) = item
            .pointer("/location/uri")
            .and_then(Value::as_str)
            .and_then(uri_to_path)
        else {
            continue;
        };
        let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
        let line = item
            .pointer("/location/range/start/line")
            .and_then(Value::as_u64)
            .map_or(String::new(), |l| format!(" - Line {}", l + 1));
        let container = item
            .get("containerName")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map_or(String::new(), |c| format!(" in {c}"));
        by_file.entry(shown(&path)).or_default().push(format!(
            "  {name} ({}){line}{container}",
            kind(item.get("kind"))
        ));
        count += 1;
    }
    if count == 0 {
        return "No symbols found in workspace. The query may match nothing, or the language server may not have indexed the workspace yet.".to_owned();
    }
    let mut out = format!(
        "Found {count} symbol{} in workspace:",
        if count == 1 { "" } else { "s" }
    );
    for (file, lines) in by_file {
        let _ = write!(out, "\n\n{file}:");
        for line in lines {
            let _ = write!(out, "\n{line}");
        }
    }
    out
}

fn item_line(item: &Value, shown: &dyn Fn(&Path) -> String) -> Option<String> {
    let name = item.get("name").and_then(Value::as_str)?;
    let path = uri_to_path(item.get("uri")?.as_str()?)?;
    let line = item.pointer("/selectionRange/start/line")?.as_u64()? + 1;
    Some(format!(
        "{name} ({}) - {}:{line}",
        kind(item.get("kind")),
        shown(&path)
    ))
}

fn call_items(result: &Value, shown: &dyn Fn(&Path) -> String) -> String {
    let lines: Vec<String> = result
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item_line(item, shown))
        .collect();
    if lines.is_empty() {
        return "No call hierarchy item found at this position.".to_owned();
    }
    let mut out = format!(
        "Found {} call hierarchy item{}:",
        lines.len(),
        if lines.len() == 1 { "" } else { "s" }
    );
    for line in lines {
        let _ = write!(out, "\n  {line}");
    }
    out
}

fn calls(result: &Value, key: &str, noun: &str, shown: &dyn Fn(&Path) -> String) -> String {
    let mut lines = Vec::new();
    for call in result.as_array().into_iter().flatten() {
        let Some(line) = call.get(key).and_then(|item| item_line(item, shown)) else {
            continue;
        };
        let at: Vec<String> = call
            .get("fromRanges")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| {
                Some(format!(
                    "{}:{}",
                    r.pointer("/start/line")?.as_u64()? + 1,
                    r.pointer("/start/character")?.as_u64()? + 1
                ))
            })
            .collect();
        if at.is_empty() {
            lines.push(line);
        } else {
            lines.push(format!("{line} [calls at: {}]", at.join(", ")));
        }
    }
    if lines.is_empty() {
        return format!("No {noun} calls found.");
    }
    let mut out = format!(
        "Found {} {noun} call{}:",
        lines.len(),
        if lines.len() == 1 { "" } else { "s" }
    );
    for line in lines {
        let _ = write!(out, "\n  {line}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(p: &Path) -> String {
        p.strip_prefix("/w")
            .map_or(p.to_string_lossy().into_owned(), |r| {
                r.to_string_lossy().into_owned()
            })
    }

    fn loc(uri: &str, line: u64, col: u64) -> Value {
        json!({"uri": uri, "range": {"start": {"line": line, "character": col},
            "end": {"line": line, "character": col + 1}}})
    }

    #[test]
    fn answers_take_claude_codes_shapes() {
        assert_eq!(
            definitions(&loc("file:///w/util.py", 0, 4), "definition", &shown),
            "Defined in util.py:1:5"
        );
        assert_eq!(
            definitions(
                &json!([loc("file:///w/a.py", 0, 0), loc("file:///w/b.py", 2, 1)]),
                "definition",
                &shown
            ),
            "Found 2 definitions:\n  a.py:1:1\n  b.py:3:2"
        );
        assert!(
            definitions(&Value::Null, "definition", &shown).starts_with("No definition found.")
        );
        assert_eq!(
            references(
                &json!([
                    loc("file:///w/util.py", 0, 4),
                    loc("file:///w/main.py", 2, 0),
                    loc("file:///w/main.py", 3, 0)
                ]),
                &shown
            ),
            "Found 3 references across 2 files:\n\nmain.py:\n  Line 3:1\n  Line 4:1\n\nutil.py:\n  Line 1:5"
        );
        assert_eq!(
            hover(
                &json!({"contents": {"kind": "markdown", "value": "int"}}),
                3,
                1
            ),
            "Hover info at 3:1:\n\nint"
        );
        assert_eq!(
            document_symbols(&json!([{"name": "C", "kind": 5, "detail": "",
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}},
                "children": [{"name": "m", "kind": 6, "detail": "(self)",
                    "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}}]}])),
            "Document symbols:\n  C (Class) - Line 1\n    m (Method) (self) - Line 2"
        );
        assert_eq!(
            workspace_symbols(
                &json!([{"name": "helper", "kind": 12, "location": loc("file:///w/util.py", 0, 4)}]),
                &shown
            ),
            "Found 1 symbol in workspace:\n\nutil.py:\n  helper (Function) - Line 1"
        );
        let item = json!({"name": "main", "kind": 12, "uri": "file:///w/main.py",
            "selectionRange": {"start": {"line": 4, "character": 4}, "end": {"line": 4, "character": 8}}});
        assert_eq!(
            calls(
                &json!([{"from": item, "fromRanges": [{"start": {"line": 5, "character": 2}, "end": {"line": 5, "character": 8}}]}]),
                "from",
                "incoming",
                &shown
            ),
            "Found 1 incoming call:\n  main (Function) - main.py:5 [calls at: 6:3]"
        );
        assert_eq!(
            calls(&json!([]), "to", "outgoing", &shown),
            "No outgoing calls found."
        );
        assert_eq!(
            call_items(&json!([item]), &shown),
            "Found 1 call hierarchy item:\n  main (Function) - main.py:5"
        );
    }
}
