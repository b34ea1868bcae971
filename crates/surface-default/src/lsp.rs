//! `lsp`: code navigation through the language servers (`--lsp`).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use agent_tools::{ToolDef, ToolError, ToolResult};
use agent_tools_error::ErrorCode;
use agent_tools_lsp::position::{char_to_utf16_column, utf16_to_char_column};
use agent_tools_lsp::uri::uri_to_path;
use agent_tools_lsp::{LspClient, LspError, RequestError};
use agent_tools_walk::{IgnoreMatcher, WorkspaceIgnores};
use serde_json::{Value, json};

use crate::args::{LspArgs, LspOperation};
use crate::services::Services;

const LSP: &str = "Ask the project's language server about code (offered with --lsp). \
operation: definition, references, hover, implementations, incoming_calls, outgoing_calls (each needs \
line and symbol: the 1-based line and the identifier as written on it; column only to pick between \
occurrences on that line), document_symbols (the file's outline), workspace_symbols (needs query; \
path picks the language), diagnostics (the file's errors and warnings now, after any change made \
outside the tools). Locations print as 'path:line:col: text of that line'. Locations in files the \
project ignores (.gitignore, .ignore, the git excludes: dependencies, build output) are left out and \
counted unless include_ignored is true. When no server handles the file, or it is still starting, the \
answer says so in one bracketed line: fall back to grep.";

/// Results listed when `limit` is not given.
const DEFAULT_LIMIT: usize = 100;
/// Hover text longer than this is cut.
const MAX_HOVER_CHARS: usize = 4000;

/// `lsp`, offered only with `--lsp`.
pub(crate) fn lsp_tool() -> ToolDef<Services> {
    ToolDef::typed("lsp", LSP, false, |s: &Services, a: LspArgs, call| {
        run(s, &a, call.cancel.flag())
    })
    .needing_lsp()
}

fn run(services: &Services, args: &LspArgs, cancel: &AtomicBool) -> ToolResult<String> {
    let Some(client) = services.lsp() else {
        return Ok("[language servers are off: the server was started without --lsp]".to_owned());
    };
    let workspace = services.files.workspace();
    let target = workspace.resolve(&args.path)?;
    let path = target.abs().to_path_buf();
    let root = workspace.root().to_path_buf();
    let limit = args
        .limit
        .map_or(DEFAULT_LIMIT, |l| l.clamp(1, 1000) as usize);
    // Operations that list locations leave out those in ignored files,
    // as grep and glob would not show them; the rules are read once per
    // call, each directory's when a location first lies in it.
    let lists_locations = !matches!(
        args.operation,
        LspOperation::Diagnostics | LspOperation::DocumentSymbols | LspOperation::Hover
    );
    let ignores = if lists_locations && !args.include_ignored {
        Some(IgnoreMatcher::for_workspace(workspace)?)
    } else {
        None
    };
    let mut view = View {
        root: &root,
        lines: HashMap::new(),
        ignores,
        left_out: 0,
    };
    if args.operation == LspOperation::Diagnostics {
        std::fs::metadata(&path).map_err(|err| workspace.io_error(&err, &target))?;
        return match client.diagnostics(&path, cancel) {
            Ok(report) => Ok(report.render_plain(&report.relative_to(&root))),
            Err(err) => answer_failure(err),
        };
    }
    if args.operation == LspOperation::WorkspaceSymbols {
        let query = args
            .query
            .as_deref()
            .filter(|q| !q.is_empty())
            .ok_or_else(|| ToolError::invalid_input("workspace_symbols needs query"))?;
        return match client.workspace_request(
            &path,
            "workspace/symbol",
            json!({"query": query}),
            cancel,
        ) {
            Ok(result) => Ok(view.workspace_symbols(&result, limit)),
            Err(err) => answer_failure(err),
        };
    }
    let text = std::fs::read_to_string(&path).map_err(|err| workspace.io_error(&err, &target))?;
    if args.operation == LspOperation::DocumentSymbols {
        return match client.request(
            &path,
            "textDocument/documentSymbol",
            |uri| json!({"textDocument": {"uri": uri}}),
            cancel,
        ) {
            Ok(result) => Ok(view.document_symbols(&result, &path, limit)),
            Err(err) => answer_failure(err),
        };
    }
    let (line, character) = position(&text, args, target.display())?;
    let at = move |uri: &str| json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}});
    let result = match args.operation {
        LspOperation::Definition => client.request(&path, "textDocument/definition", at, cancel),
        LspOperation::Implementations => {
            client.request(&path, "textDocument/implementation", at, cancel)
        }
        LspOperation::References => client.request(
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
        LspOperation::IncomingCalls | LspOperation::OutgoingCalls => {
            calls(client, &path, args.operation, at, cancel)
        }
        LspOperation::Diagnostics
        | LspOperation::WorkspaceSymbols
        | LspOperation::DocumentSymbols => unreachable_operation(),
    };
    let result = match result {
        Ok(result) => result,
        Err(err) => return answer_failure(err),
    };
    Ok(match args.operation {
        LspOperation::Definition => view.locations(&result, "definition", limit),
        LspOperation::Implementations => view.locations(&result, "implementation", limit),
        LspOperation::References => view.locations(&result, "reference", limit),
        LspOperation::Hover => hover(&result),
        _ => view.calls(&result, args.operation, limit),
    })
}

/// Every operation is dispatched above; this arm only satisfies the match.
fn unreachable_operation() -> Result<Value, RequestError> {
    Ok(Value::Null)
}

/// The LSP position (0-based line, UTF-16 column) of the symbol on the
/// line the arguments name.
fn position(text: &str, args: &LspArgs, shown: &str) -> ToolResult<(u32, u32)> {
    position_at(text, args.line, args.symbol.as_deref(), args.column, shown)
}

/// The LSP position of `symbol` (or `column`) on 1-based line `line`
/// (see [`position`]).
pub(crate) fn position_at(
    text: &str,
    line: Option<u32>,
    symbol: Option<&str>,
    column: Option<u32>,
    shown: &str,
) -> ToolResult<(u32, u32)> {
    let line_no = line.ok_or_else(|| {
        ToolError::invalid_input("this operation needs line (and symbol): the 1-based line")
    })?;
    let Some(line) = text.lines().nth(line_no.saturating_sub(1) as usize) else {
        return Err(ToolError::invalid_input(format!(
            "{shown} has {} lines; line {line_no} is past its end",
            text.lines().count()
        )));
    };
    let chars: Vec<char> = line.chars().collect();
    let column = match symbol.filter(|s| !s.is_empty()) {
        Some(symbol) => {
            let wanted: Vec<char> = symbol.chars().collect();
            let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
            let starts: Vec<usize> = (0..chars.len())
                .filter(|&i| chars[i..].starts_with(&wanted))
                .filter(|&i| {
                    let before = i == 0 || !ident(chars[i - 1]);
                    let after = chars.get(i + wanted.len()).is_none_or(|c| !ident(*c));
                    before && after
                })
                .collect();
            let pick = match column {
                Some(col) => {
                    let col = col as usize - 1;
                    starts
                        .iter()
                        .copied()
                        .find(|&s| (s..s + wanted.len()).contains(&col))
                }
                None => starts.first().copied(),
            };
            pick.ok_or_else(|| {
                ToolError::new(
                    ErrorCode::NoMatch,
                    format!(
                        "{shown}:{line_no}: `{symbol}` does not occur there{}; the line is: {}",
                        if column.is_some() && !starts.is_empty() {
                            " at that column"
                        } else {
                            ""
                        },
                        line.trim()
                    ),
                )
            })?
        }
        None => match column {
            Some(col) => (col as usize - 1).min(chars.len()),
            None => {
                return Err(ToolError::invalid_input(
                    "this operation needs symbol (the identifier as written on the line) or column",
                ));
            }
        },
    };
    Ok((
        line_no - 1,
        char_to_utf16_column(line, u32::try_from(column).unwrap_or(u32::MAX)),
    ))
}

fn calls(
    client: &LspClient,
    path: &Path,
    operation: LspOperation,
    at: impl Fn(&str) -> Value,
    cancel: &AtomicBool,
) -> Result<Value, RequestError> {
    let items = client.request(path, "textDocument/prepareCallHierarchy", at, cancel)?;
    let Some(item) = items.as_array().and_then(|items| items.first()).cloned() else {
        return Ok(Value::Array(Vec::new()));
    };
    let method = if operation == LspOperation::IncomingCalls {
        "callHierarchy/incomingCalls"
    } else {
        "callHierarchy/outgoingCalls"
    };
    client.request(path, method, |_| json!({"item": item}), cancel)
}

/// Failures that leave the agent something to do instead (no server, not
/// ready yet) are answers with one bracketed line; a request that failed
/// or timed out is an error.
pub(crate) fn answer_failure(err: RequestError) -> ToolResult<String> {
    match err {
        RequestError::NoServer(_) | RequestError::NotReady { .. } => {
            Ok(format!("[{err}; use grep meanwhile]"))
        }
        RequestError::Lsp(LspError::Timeout { .. }) => {
            Err(ToolError::new(ErrorCode::Timeout, err.to_string()))
        }
        RequestError::Lsp(err) => Err(ToolError::new(ErrorCode::IoError, err.to_string())),
    }
}

fn hover(result: &Value) -> String {
    let mut text = agent_tools_lsp::hover_text(result);
    if text.trim().is_empty() {
        return "no hover information there".to_owned();
    }
    if text.chars().count() > MAX_HOVER_CHARS {
        text = text.chars().take(MAX_HOVER_CHARS).collect();
        text.push_str("\n… (cut)");
    }
    text
}

/// Turns server locations into grep-like lines, reading each file's lines
/// once.
struct View<'a> {
    root: &'a Path,
    lines: HashMap<PathBuf, Vec<String>>,
    /// The project's ignore rules, when locations in ignored files are
    /// left out.
    ignores: Option<WorkspaceIgnores<'a>>,
    /// How many locations were left out for lying in ignored files.
    left_out: usize,
}

impl View<'_> {
    /// Whether a location in `path` is listed; one left out is counted.
    fn keeps(&mut self, path: &Path) -> bool {
        let ignored = self
            .ignores
            .as_mut()
            .is_some_and(|ignores| ignores.is_ignored_abs(path));
        if ignored {
            self.left_out += 1;
        }
        !ignored
    }

    /// The closing note on what was left out (`noun` singular, `nouns`
    /// plural), or nothing.
    fn left_out_note(&self, noun: &str, nouns: &str) -> String {
        match self.left_out {
            0 => String::new(),
            n => format!(
                "\n[note: {n} {} in files the project ignores (.gitignore, .ignore, the git \
                 excludes) left out; include_ignored: true lists them]",
                if n == 1 { noun } else { nouns }
            ),
        }
    }

    /// The answer when nothing is listed: `none` when nothing was found at
    /// all, else that everything found lay in ignored files.
    fn nothing_listed(&self, none: String, noun: &str, nouns: &str) -> String {
        if self.left_out == 0 {
            return none;
        }
        format!(
            "no {noun} found outside ignored files{}",
            self.left_out_note(noun, nouns)
        )
    }

    fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(self.root) {
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => format!("[outside workspace] {}", path.display()),
        }
    }

    fn line_text(&mut self, path: &Path, line: u32) -> String {
        let inside = path.starts_with(self.root);
        let lines = self.lines.entry(path.to_path_buf()).or_insert_with(|| {
            // Files outside the workspace are named, never read.
            if !inside {
                return Vec::new();
            }
            std::fs::read_to_string(path)
                .map(|t| t.lines().map(str::to_owned).collect())
                .unwrap_or_default()
        });
        lines.get(line as usize).cloned().unwrap_or_default()
    }

    /// `path:line:col` (1-based, characters) and the line's text.
    fn location_line(&mut self, uri: &str, range: &Value) -> Option<(PathBuf, String)> {
        let path = uri_to_path(uri)?;
        let line = range.pointer("/start/line")?.as_u64()? as u32;
        let utf16 = range.pointer("/start/character")?.as_u64()? as u32;
        let text = self.line_text(&path, line);
        // A line not read (outside the workspace) keeps the server's count.
        let column = if text.is_empty() {
            utf16 + 1
        } else {
            utf16_to_char_column(&text, utf16) + 1
        };
        let mut out = format!("{}:{}:{column}", self.shown(&path), line + 1);
        let trimmed = text.trim();
        if !trimmed.is_empty() {
            let _ = write!(out, ": {}", trimmed.chars().take(200).collect::<String>());
        }
        Some((path, out))
    }

    fn locations(&mut self, result: &Value, noun: &str, limit: usize) -> String {
        let items: Vec<Value> = match result {
            Value::Array(items) => items.clone(),
            Value::Null => Vec::new(),
            one => vec![one.clone()],
        };
        let mut lines = Vec::new();
        let mut files = BTreeSet::new();
        for item in &items {
            // Location or LocationLink.
            let (uri, range) = match item.get("targetUri") {
                Some(uri) => (
                    uri,
                    item.get("targetSelectionRange")
                        .or_else(|| item.get("targetRange")),
                ),
                None => match item.get("uri") {
                    Some(uri) => (uri, item.get("range")),
                    None => continue,
                },
            };
            let (Some(uri), Some(range)) = (uri.as_str(), range) else {
                continue;
            };
            if uri_to_path(uri).is_some_and(|path| !self.keeps(&path)) {
                continue;
            }
            if let Some((path, line)) = self.location_line(uri, range) {
                files.insert(path);
                lines.push(line);
            }
        }
        let nouns = format!("{noun}s");
        if lines.is_empty() {
            return self.nothing_listed(
                format!(
                    "no {noun} found (the server may still be indexing, or the symbol has none)"
                ),
                noun,
                &nouns,
            );
        }
        let count = lines.len();
        let mut out = format!(
            "{count} {noun}{} in {} file{}",
            if count == 1 { "" } else { "s" },
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        );
        for line in lines.iter().take(limit) {
            let _ = write!(out, "\n{line}");
        }
        if count > limit {
            let _ = write!(out, "\n… and {} more (raise limit)", count - limit);
        }
        out.push_str(&self.left_out_note(noun, &nouns));
        out
    }

    fn document_symbols(&self, result: &Value, path: &Path, limit: usize) -> String {
        let mut lines = Vec::new();
        if let Some(items) = result.as_array() {
            for item in items {
                outline(item, 0, &mut lines);
            }
        }
        if lines.is_empty() {
            return format!("no symbols in {}", self.shown(path));
        }
        let count = lines.len();
        let mut out = lines.into_iter().take(limit).collect::<Vec<_>>().join("\n");
        if count > limit {
            let _ = write!(out, "\n… and {} more (raise limit)", count - limit);
        }
        out
    }

    fn workspace_symbols(&mut self, result: &Value, limit: usize) -> String {
        let items = result.as_array().cloned().unwrap_or_default();
        let mut lines = Vec::new();
        for item in &items {
            let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
            let kind = kind_name(item.get("kind"));
            let Some(uri) = item.pointer("/location/uri").and_then(Value::as_str) else {
                continue;
            };
            let Some(path) = uri_to_path(uri) else {
                continue;
            };
            if !self.keeps(&path) {
                continue;
            }
            let line = item
                .pointer("/location/range/start/line")
                .and_then(Value::as_u64)
                .map_or(String::new(), |l| format!(":{}", l + 1));
            let container = item
                .get("containerName")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map_or(String::new(), |c| format!(" in {c}"));
            lines.push(format!(
                "{name} ({kind}){container} {}{line}",
                self.shown(&path)
            ));
        }
        if lines.is_empty() {
            return self.nothing_listed(
                "no symbols found (the server may still be indexing)".to_owned(),
                "symbol",
                "symbols",
            );
        }
        let count = lines.len();
        let mut out = format!("{count} symbol{}", if count == 1 { "" } else { "s" });
        for line in lines.iter().take(limit) {
            let _ = write!(out, "\n{line}");
        }
        if count > limit {
            let _ = write!(out, "\n… and {} more (raise limit)", count - limit);
        }
        out.push_str(&self.left_out_note("symbol", "symbols"));
        out
    }

    fn calls(&mut self, result: &Value, operation: LspOperation, limit: usize) -> String {
        let key = if operation == LspOperation::IncomingCalls {
            "from"
        } else {
            "to"
        };
        let items = result.as_array().cloned().unwrap_or_default();
        let mut lines = Vec::new();
        for call in &items {
            let Some(item) = call.get(key) else { continue };
            let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
            let kind = kind_name(item.get("kind"));
            let Some(uri) = item.get("uri").and_then(Value::as_str) else {
                continue;
            };
            let Some(range) = item.get("selectionRange") else {
                continue;
            };
            if uri_to_path(uri).is_some_and(|path| !self.keeps(&path)) {
                continue;
            }
            if let Some((_, at)) = self.location_line(uri, range) {
                lines.push(format!("{name} ({kind}) {at}"));
            }
        }
        let noun = if key == "from" { "caller" } else { "callee" };
        let nouns = format!("{noun}s");
        if lines.is_empty() {
            return self.nothing_listed(format!("no {nouns} found"), noun, &nouns);
        }
        let count = lines.len();
        let mut out = format!("{count} {noun}{}", if count == 1 { "" } else { "s" });
        for line in lines.iter().take(limit) {
            let _ = write!(out, "\n{line}");
        }
        if count > limit {
            let _ = write!(out, "\n… and {} more (raise limit)", count - limit);
        }
        out.push_str(&self.left_out_note(noun, &nouns));
        out
    }
}

/// `name (Kind) lines a-b`, children indented; flat symbol lists too.
fn outline(item: &Value, depth: usize, out: &mut Vec<String>) {
    // Bounded, whatever a server nests.
    if depth > 32 || out.len() > 10_000 {
        return;
    }
    let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
    let kind = kind_name(item.get("kind"));
    let range = item
        .get("range")
        .or_else(|| item.pointer("/location/range"));
    let lines = range
        .and_then(|r| {
            let start = r.pointer("/start/line")?.as_u64()? + 1;
            let end = r.pointer("/end/line")?.as_u64()? + 1;
            Some(if start == end {
                format!("line {start}")
            } else {
                format!("lines {start}-{end}")
            })
        })
        .unwrap_or_default();
    out.push(format!("{}{name} ({kind}) {lines}", "  ".repeat(depth)));
    if let Some(children) = item.get("children").and_then(Value::as_array) {
        for child in children {
            outline(child, depth + 1, out);
        }
    }
}

fn kind_name(kind: Option<&Value>) -> &'static str {
    kind.and_then(agent_tools_lsp::symbol_kind_name)
        .unwrap_or("Symbol")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: Option<u32>, symbol: Option<&str>, column: Option<u32>) -> LspArgs {
        LspArgs {
            operation: LspOperation::Definition,
            path: "a.py".to_owned(),
            line,
            symbol: symbol.map(str::to_owned),
            column,
            query: None,
            limit: None,
            include_ignored: false,
        }
    }

    #[test]
    fn a_symbol_is_found_on_its_line_as_a_whole_word() {
        let text = "x = 1\nhelpers = helper(helper_x, helper)\n";
        assert_eq!(
            position(text, &args(Some(2), Some("helper"), None), "a.py").unwrap(),
            (1, 10)
        );
        assert_eq!(
            position(text, &args(Some(2), Some("helper"), Some(29)), "a.py").unwrap(),
            (1, 27)
        );
        assert_eq!(
            position(text, &args(Some(2), None, Some(3)), "a.py").unwrap(),
            (1, 2)
        );
        // Columns are characters; the server gets UTF-16 units.
        assert_eq!(
            position("s = '😀'; go()\n", &args(Some(1), Some("go"), None), "a.py").unwrap(),
            (0, 10)
        );
    }

    #[test]
    fn a_missing_symbol_or_line_is_refused() {
        let text = "x = 1\n";
        let err = position(text, &args(Some(1), Some("y"), None), "a.py").unwrap_err();
        assert_eq!(err.code(), ErrorCode::NoMatch);
        assert!(
            err.to_string()
                .contains("a.py:1: `y` does not occur there; the line is: x = 1")
        );
        let err = position(text, &args(Some(1), Some("x"), Some(3)), "a.py").unwrap_err();
        assert!(err.to_string().contains("at that column"), "{err}");
        let err = position(text, &args(Some(5), Some("x"), None), "a.py").unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput);
        let err = position(text, &args(None, Some("x"), None), "a.py").unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput);
        let err = position(text, &args(Some(1), None, None), "a.py").unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput);
    }

    #[test]
    fn locations_read_like_grep_and_outside_files_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("u.py"), "def helper(x):\n    return x\n").unwrap();
        let uri = agent_tools_lsp::uri::path_to_uri(&dir.path().join("u.py"));
        let mut view = View {
            root: dir.path(),
            lines: HashMap::new(),
            ignores: None,
            left_out: 0,
        };
        let range =
            json!({"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 10}});
        let out = view.locations(
            &json!([{"uri": uri, "range": range},
                {"targetUri": "file:///etc/passwd", "targetRange": range}]),
            "reference",
            100,
        );
        assert_eq!(
            out,
            "2 references in 2 files\nu.py:1:5: def helper(x):\n[outside workspace] /etc/passwd:1:5"
        );
        assert_eq!(
            view.locations(&json!(null), "definition", 100),
            "no definition found (the server may still be indexing, or the symbol has none)"
        );
        let out = view.locations(
            &json!([{"uri": uri, "range": range}, {"uri": uri, "range": range}]),
            "reference",
            1,
        );
        assert!(out.ends_with("… and 1 more (raise limit)"), "{out}");
    }

    #[test]
    fn locations_in_ignored_files_are_left_out_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("build")).unwrap();
        std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
        std::fs::write(dir.path().join("u.py"), "def helper(x):\n").unwrap();
        std::fs::write(dir.path().join("build/u.py"), "def helper(x):\n").unwrap();
        let ws = agent_tools_confine::Workspace::open(
            dir.path(),
            agent_tools_confine::Confinement::Confined,
        )
        .unwrap();
        let uri = |rel: &str| agent_tools_lsp::uri::path_to_uri(&dir.path().join(rel));
        let range =
            json!({"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 10}});
        let found = json!([{"uri": uri("build/u.py"), "range": range},
            {"uri": uri("u.py"), "range": range},
            {"uri": uri("build/u.py"), "range": range}]);
        let mut view = View {
            root: dir.path(),
            lines: HashMap::new(),
            ignores: Some(IgnoreMatcher::for_workspace(&ws).unwrap()),
            left_out: 0,
        };
        assert_eq!(
            view.locations(&found, "reference", 100),
            "1 reference in 1 file\nu.py:1:5: def helper(x):\n[note: 2 references in files the \
             project ignores (.gitignore, .ignore, the git excludes) left out; include_ignored: \
             true lists them]"
        );
        let mut view = View {
            root: dir.path(),
            lines: HashMap::new(),
            ignores: Some(IgnoreMatcher::for_workspace(&ws).unwrap()),
            left_out: 0,
        };
        let calls = json!([{"from": {"name": "f", "kind": 12, "uri": uri("build/u.py"),
            "selectionRange": range}}]);
        assert_eq!(
            view.calls(&calls, LspOperation::IncomingCalls, 100),
            "no caller found outside ignored files\n[note: 1 caller in files the project ignores \
             (.gitignore, .ignore, the git excludes) left out; include_ignored: true lists them]"
        );
        // Without the rules, everything is listed.
        let mut view = View {
            root: dir.path(),
            lines: HashMap::new(),
            ignores: None,
            left_out: 0,
        };
        assert!(
            view.locations(&found, "reference", 100)
                .starts_with("3 references in 2 files\nbuild/u.py:1:5")
        );
    }

    #[test]
    fn outlines_and_hovers_are_bounded_text() {
        let mut lines = Vec::new();
        outline(
            &json!({"name": "C", "kind": 5, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}},
                "children": [{"name": "m", "kind": 6, "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 9}}}]}),
            0,
            &mut lines,
        );
        assert_eq!(lines, ["C (Class) lines 1-4", "  m (Method) line 2"]);
        assert_eq!(
            hover(&json!({"contents": {"kind": "markdown", "value": "int"}})),
            "int"
        );
        assert_eq!(hover(&json!(null)), "no hover information there");
        let long = hover(&json!({"contents": "x".repeat(5000)}));
        assert!(long.ends_with("… (cut)") && long.chars().count() < 4100);
    }
}
