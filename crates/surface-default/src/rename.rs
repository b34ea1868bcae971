//! `rename_symbol`: a language server's rename, applied to every file it
//! names all or nothing (`--lsp`).

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use agent_tools::{ToolDef, ToolError, ToolResult};
use agent_tools_confine::ConfinedPath;
use agent_tools_error::ErrorCode;
use agent_tools_lsp::edit::{EditError, TextEdit, apply_edits, file_edits};
use agent_tools_lsp::{LspError, RequestError};
use agent_tools_walk::IgnoreMatcher;
use serde_json::{Value, json};

use crate::args::RenameSymbolArgs;
use crate::lsp::{answer_failure, position_at};
use crate::patch::rewrite_files;
use crate::services::Services;

const RENAME_SYMBOL: &str = "Rename a symbol everywhere the project's language server finds it \
(offered with --lsp): its definition and every use, across files, written all or nothing. The symbol \
is addressed as lsp does: path, line (1-based) and symbol as written on that line (column only to pick \
between occurrences). new_name is the new identifier. dry_run: true answers the unified diff of every \
file and writes nothing. The answer lists the files changed with their edit counts, then the \
diagnostics of the files written. A position the server says cannot be renamed (a keyword, a library's \
symbol) is refused. A rename that would change a file outside the workspace, or create, move or delete \
files, is refused whole; so is one that would change files the project ignores (.gitignore), naming \
them, unless include_ignored is true.";

/// `rename_symbol`, offered only with `--lsp`.
pub(crate) fn rename_tool() -> ToolDef<Services> {
    ToolDef::typed(
        "rename_symbol",
        RENAME_SYMBOL,
        true,
        |s: &Services, a: RenameSymbolArgs, call| run(s, &a, call.cancel.flag()),
    )
    .needing_lsp()
}

/// One file of the rename: where it is, and its edits in the steps the
/// server gave them (each against the result of the one before).
struct Target {
    path: ConfinedPath,
    steps: Vec<Vec<TextEdit>>,
}

impl Target {
    fn edits(&self) -> usize {
        self.steps.iter().map(Vec::len).sum()
    }
}

fn run(services: &Services, args: &RenameSymbolArgs, cancel: &AtomicBool) -> ToolResult<String> {
    let Some(client) = services.lsp() else {
        return Ok("[language servers are off: the server was started without --lsp]".to_owned());
    };
    if args.new_name.trim().is_empty() {
        return Err(ToolError::invalid_input("new_name is empty"));
    }
    let workspace = services.files.workspace();
    let target = workspace.resolve(&args.path)?;
    let path = target.abs().to_path_buf();
    let text = std::fs::read_to_string(&path).map_err(|err| workspace.io_error(&err, &target))?;
    let (line, character) = position_at(
        &text,
        Some(args.line),
        Some(&args.symbol),
        args.column,
        target.display(),
    )?;
    let position = json!({"line": line, "character": character});
    // Where the server offers it, it is first asked whether the position
    // can be renamed at all: a keyword, a literal or a symbol of a library
    // is refused in the server's words rather than by an odd or empty edit.
    let prepared = client.request_if_offered(
        &path,
        "textDocument/prepareRename",
        |caps| caps["renameProvider"]["prepareProvider"] == Value::Bool(true),
        |uri| json!({"textDocument": {"uri": uri}, "position": position}),
        cancel,
    );
    match prepared {
        // Not offered, or a range (with or without a placeholder) or the
        // default behaviour: the position can be renamed.
        Ok(None) => {}
        Ok(Some(Value::Null)) => {
            return Err(ToolError::invalid_input(format!(
                "{}:{}: the language server says `{}` cannot be renamed there (a keyword, a \
                 literal, or a symbol defined outside the project; a server still analysing the \
                 project may answer so too: try again shortly); nothing was changed",
                target.display(),
                args.line,
                args.symbol
            )));
        }
        Ok(Some(_)) => {}
        Err(RequestError::Lsp(LspError::Server { message, .. })) => {
            return Err(refused(&args.symbol, &message));
        }
        Err(err) => return answer_failure(err),
    }
    let answer = client.request(
        &path,
        "textDocument/rename",
        |uri| {
            json!({"textDocument": {"uri": uri},
                "position": {"line": line, "character": character},
                "newName": args.new_name})
        },
        cancel,
    );
    let edit = match answer {
        Ok(edit) => edit,
        Err(RequestError::Lsp(LspError::Server { message, .. })) => {
            return Err(refused(&args.symbol, &message));
        }
        Err(err) => return answer_failure(err),
    };
    let nothing = || {
        ToolError::new(
            ErrorCode::NoMatch,
            format!(
                "{}:{}: the language server has nothing to rename at `{}` (a server still \
                 analysing the project may answer so: try again shortly)",
                target.display(),
                args.line,
                args.symbol
            ),
        )
    };
    if edit.is_null() {
        return Err(nothing());
    }
    let targets = targets(services, file_edits(&edit).map_err(|err| edit_error(&err))?)?;
    if targets.iter().all(|t| t.edits() == 0) {
        return Err(nothing());
    }
    if !args.include_ignored {
        refuse_ignored(services, &targets)?;
    }
    let paths: Vec<ConfinedPath> = targets.iter().map(|t| t.path.clone()).collect();
    let pairs = rewrite_files(services, &paths, args.dry_run, |contents| {
        targets
            .iter()
            .zip(contents)
            .map(|(t, bytes)| {
                let now_text = std::str::from_utf8(bytes).map_err(|_| {
                    ToolError::new(
                        ErrorCode::IsBinary,
                        format!(
                            "{}: is not UTF-8 text; nothing was changed",
                            t.path.display()
                        ),
                    )
                })?;
                // The server answered for the text it was sent: a file
                // changed since is not edited at positions meant for another.
                if t.path == target && now_text != text {
                    return Err(changed(&t.path));
                }
                let mut now = now_text.to_owned();
                for step in &t.steps {
                    now = apply_edits(&now, step).map_err(|err| {
                        ToolError::new(
                            ErrorCode::PatchFailed,
                            format!("{}: {err}; nothing was changed", t.path.display()),
                        )
                    })?;
                }
                Ok(now.into_bytes())
            })
            .collect()
    })?;
    let total: usize = targets.iter().map(Target::edits).sum();
    let files = targets.len();
    let mut out = if args.dry_run {
        format!(
            "dry run: renaming `{}` to `{}` would make {total} edit{} in {files} file{} (nothing written)",
            args.symbol,
            args.new_name,
            plural(total),
            plural(files)
        )
    } else {
        format!(
            "renamed `{}` to `{}`: {total} edit{} in {files} file{}",
            args.symbol,
            args.new_name,
            plural(total),
            plural(files)
        )
    };
    for t in &targets {
        let count = t.edits();
        let _ = write!(out, "\n{}: {count} edit{}", t.path.display(), plural(count));
    }
    if args.dry_run {
        let budget = services.files.limits().max_output_bytes;
        for (t, (before, after)) in targets.iter().zip(&pairs) {
            let shown = t.path.display();
            let diff = similar::TextDiff::from_lines(
                &*String::from_utf8_lossy(before),
                &*String::from_utf8_lossy(after),
            )
            .unified_diff()
            .context_radius(2)
            .header(&format!("a/{shown}"), &format!("b/{shown}"))
            .to_string();
            if out.len() + diff.len() > budget {
                out.push_str("\n\n… (the diff is cut here: it is longer than the output limit)");
                break;
            }
            out.push_str("\n\n");
            out.push_str(diff.trim_end_matches('\n'));
        }
        return Ok(out);
    }
    out.push('\n');
    let written: Vec<&str> = targets
        .iter()
        .zip(&pairs)
        .filter(|(_, (before, after))| before != after)
        .map(|(t, _)| t.path.display())
        .collect();
    Ok(services.with_diagnostics(out, &written, cancel))
}

/// The server's refusal (an error answer), in its words.
fn refused(symbol: &str, message: &str) -> ToolError {
    ToolError::invalid_input(format!(
        "the language server refused to rename `{symbol}`: {message}; nothing was changed"
    ))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn changed(path: &ConfinedPath) -> ToolError {
    ToolError::new(
        ErrorCode::PatchFailed,
        format!(
            "{}: changed while the language server was asked; nothing was changed, try again",
            path.display()
        ),
    )
}

/// The files of the server's edit, each confined to the workspace (one
/// outside refuses the whole rename), in the order first named.
fn targets(
    services: &Services,
    edits: Vec<agent_tools_lsp::edit::FileEdits>,
) -> ToolResult<Vec<Target>> {
    let mut targets: Vec<Target> = Vec::new();
    for file in edits {
        let resolved = resolve_abs(services, &file.path)?;
        match targets.iter_mut().find(|t| t.path == resolved) {
            Some(target) => target.steps.push(file.edits),
            None => targets.push(Target {
                path: resolved,
                steps: vec![file.edits],
            }),
        }
    }
    Ok(targets)
}

/// The most ignored files a refusal names one by one.
const MAX_NAMED_IGNORED: usize = 5;

/// Refuses the whole rename when the server's edit would change files the
/// project's ignore rules leave out (build output, vendored or generated
/// code, a virtual environment): the model asked for its source to change,
/// and a search or a commit would not show these. It names them, and how to
/// go ahead when they are meant.
fn refuse_ignored(services: &Services, targets: &[Target]) -> ToolResult<()> {
    // One matcher for all targets: each directory's rules are read once.
    let mut ignores = IgnoreMatcher::for_workspace(services.files.workspace())?;
    let ignored: Vec<&str> = targets
        .iter()
        .filter(|t| t.edits() > 0 && ignores.is_ignored_abs(t.path.abs()))
        .map(|t| t.path.display())
        .collect();
    if ignored.is_empty() {
        return Ok(());
    }
    let mut named = ignored
        .iter()
        .take(MAX_NAMED_IGNORED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if ignored.len() > MAX_NAMED_IGNORED {
        let _ = write!(named, " and {} more", ignored.len() - MAX_NAMED_IGNORED);
    }
    Err(ToolError::invalid_input(format!(
        "the rename would also change {} file{} the project ignores (.gitignore, .ignore or the \
         git excludes): {named}; nothing was changed. If they should change too, call again \
         with include_ignored: true",
        ignored.len(),
        plural(ignored.len())
    )))
}

fn resolve_abs(services: &Services, path: &Path) -> ToolResult<ConfinedPath> {
    let workspace = services.files.workspace();
    let Some(name) = path.to_str() else {
        return Err(ToolError::new(
            ErrorCode::InvalidInput,
            format!(
                "the rename would change {}, whose name is not UTF-8; nothing was changed",
                path.display()
            ),
        ));
    };
    workspace.resolve(name).map_err(|err| {
        if err.code() == ErrorCode::PathEscape {
            ToolError::new(
                ErrorCode::PathEscape,
                format!(
                    "the rename would change {name}, outside the workspace; nothing was changed"
                ),
            )
        } else {
            err
        }
    })
}

fn edit_error(err: &EditError) -> ToolError {
    let code = match err {
        EditError::ResourceOperation { .. } => ErrorCode::InvalidInput,
        EditError::NotAFile(_) => ErrorCode::PathEscape,
        EditError::Malformed(_) => ErrorCode::IoError,
        EditError::OutOfRange(_) | EditError::Overlap(_) => ErrorCode::PatchFailed,
    };
    ToolError::new(code, format!("{err}; nothing was changed"))
}
