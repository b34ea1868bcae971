//! The two tools the undo journal adds to every surface when `--journal`
//! is on: one lists what calls changed, one takes calls back. Named in each
//! surface's style; the text they answer is the same everywhere, and so is
//! the code the CLI's `changes` and `undo` commands run.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use agent_tools_confine::Workspace;
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_fs::journal::{CallRecord, ChangeState, Journal, Op};
use agent_tools_fs::undo::{self, Outcome, UndoReport, UndoRequest};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::Config;
use crate::registry::{Hints, ToolDef};

/// Arguments of `changes`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangesArgs {
    /// The most calls to list, newest first (default 20).
    #[serde(default)]
    pub limit: Option<usize>,
    /// One call's id: show its unified diff.
    #[serde(default)]
    pub call: Option<u64>,
    /// List only calls that changed this path (absolute, or relative to
    /// the first root).
    #[serde(default)]
    pub path: Option<String>,
}

/// Arguments of `undo`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UndoArgs {
    /// Undo this call (an id from `changes`).
    #[serde(default)]
    pub call: Option<u64>,
    /// Undo every call after this one, newest first.
    #[serde(default)]
    pub to: Option<u64>,
    /// Only say what would be done.
    #[serde(default)]
    pub dry_run: bool,
    /// Write the content from before the call over files changed since
    /// (instead of refusing with a conflict).
    #[serde(default)]
    pub force: bool,
}

const CHANGES: &str = "Lists the changes this server's tools made to files, newest call first: the call's id, time and tool, each file with its operation and lines added and removed, and whether the call can be undone (and why not). With `call`, shows that call's unified diff. Read-only.";

const UNDO: &str = "Takes back what tool calls changed: one call (`call`), or every call after a point (`to`), newest first. All or nothing: a file still as the call left it gets its earlier content back exactly (a created file is removed, a deleted one recreated with its mode); one changed since gets the call's change reversed by a merge; an overlapping change is a conflict, and then nothing is written unless `force`. `dry_run` only reports. An undo is itself recorded, so it can be undone.";

/// The names of the two tools on a surface, in its style.
pub fn names(surface: &str) -> (&'static str, &'static str) {
    match surface {
        "claude-code" => ("Changes", "Undo"),
        "filesystem" => ("list_changes", "undo_changes"),
        _ => ("changes", "undo"),
    }
}

/// Where undo may write: the writable roots of the configuration.
pub fn workspaces(config: &Config) -> Vec<Workspace> {
    config
        .roots()
        .iter()
        .filter(|root| root.writable())
        .filter_map(|root| Workspace::open(&root.path, config.confinement()).ok())
        .collect()
}

/// The two tools, for a surface whose state they ignore.
pub(crate) fn tools<S: 'static>(surface: &str, config: &Config) -> Vec<ToolDef<S>> {
    let Some(active) = config.journal() else {
        return Vec::new();
    };
    let (changes_name, undo_name) = names(surface);
    let journal = Arc::clone(active.journal());
    let listing = Arc::clone(&journal);
    let roots: Arc<Vec<Workspace>> = Arc::new(workspaces(config));
    let listing_roots = Arc::clone(&roots);
    vec![
        ToolDef::typed_with(
            changes_name,
            CHANGES,
            false,
            move |_: &S, args: ChangesArgs, _| changes(&listing, &listing_roots, &args),
        )
        .titled("List changes", Hints::READ),
        ToolDef::typed_with(undo_name, UNDO, true, move |_: &S, args: UndoArgs, _| {
            run_undo(&journal, &roots, &args)
        })
        .titled("Undo changes", Hints::EDIT),
    ]
}

fn journal_error(err: agent_tools_fs::journal::JournalError) -> ToolError {
    ToolError::new(ErrorCode::IoError, err.to_string())
}

fn time_of(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .map_or_else(
            || secs.to_string(),
            |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        )
}

fn op_letter(op: Op) -> &'static str {
    match op {
        Op::Create => "A",
        Op::Modify => "M",
        Op::Delete => "D",
        Op::Mkdir => "mkdir",
        Op::Rmdir => "rmdir",
        Op::MoveDir => "R",
    }
}

/// Why a call cannot be undone, if it cannot.
fn not_undoable(call: &CallRecord) -> Option<String> {
    call.changes.iter().find_map(|change| {
        change
            .change
            .not_undoable
            .as_ref()
            .map(|why| format!("{}: {why}", change.change.path.display()))
    })
}

/// The text of `changes`.
pub fn changes(journal: &Journal, roots: &[Workspace], args: &ChangesArgs) -> ToolResult<String> {
    if let Some(id) = args.call {
        let Some(call) = journal.call(id).map_err(journal_error)? else {
            return Err(ToolError::new(
                ErrorCode::NotFound,
                format!("no call {id} in the journal (pruned, or it changed nothing)"),
            ));
        };
        let mut out = header(&call, &HashMap::new());
        for change in &call.changes {
            let diff = undo::change_diff(journal, &change.change);
            if diff.is_empty() {
                let _ = writeln!(
                    out,
                    "{} {} (no text diff)",
                    op_letter(change.change.op),
                    change.change.path.display()
                );
            } else {
                out.push_str(&diff);
            }
        }
        return Ok(out);
    }
    let wanted = match &args.path {
        None => None,
        Some(path) => Some(resolve_shown(roots, path)?),
    };
    let calls = journal.calls().map_err(journal_error)?;
    let mut undone_by: HashMap<u64, u64> = HashMap::new();
    for call in &calls {
        for id in &call.undoes {
            undone_by.entry(*id).or_insert(call.id);
        }
    }
    let limit = args.limit.unwrap_or(20).max(1);
    let mut out = String::new();
    let mut shown = 0;
    for call in &calls {
        if let Some(wanted) = &wanted
            && !call.changes.iter().any(|c| &c.change.path == wanted)
        {
            continue;
        }
        if shown == limit {
            let _ = writeln!(out, "(more calls not shown; raise `limit`)");
            break;
        }
        shown += 1;
        out.push_str(&header(call, &undone_by));
        for change in &call.changes {
            let counts = undo::line_counts(journal, &change.change)
                .map_or_else(|| "binary".to_owned(), |(a, d)| format!("+{a} -{d}"));
            let moved = change
                .change
                .from
                .as_ref()
                .map(|from| format!(" (from {})", from.display()))
                .unwrap_or_default();
            let state = match change.state {
                ChangeState::Unknown => " (interrupted: outcome unknown)",
                _ => "",
            };
            let _ = writeln!(
                out,
                "  {} {}{moved} {counts}{state}",
                op_letter(change.change.op),
                change.change.path.display()
            );
        }
    }
    if shown == 0 {
        out.push_str("No recorded changes.\n");
    }
    Ok(out)
}

fn header(call: &CallRecord, undone_by: &HashMap<u64, u64>) -> String {
    let status = match not_undoable(call) {
        Some(why) => format!("not undoable: {why}"),
        None => "undoable".to_owned(),
    };
    let undone = undone_by
        .get(&call.id)
        .map(|by| format!(", undone by call {by}"))
        .unwrap_or_default();
    let undoes = if call.undoes.is_empty() {
        String::new()
    } else {
        format!(
            ", undoes {}",
            call.undoes
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut out = format!(
        "call {} {} {} ({}, {}){undoes}: {status}{undone}\n",
        call.id,
        time_of(call.time),
        call.tool,
        call.surface,
        call.principal
    );
    for note in &call.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    out
}

fn resolve_shown(roots: &[Workspace], path: &str) -> ToolResult<std::path::PathBuf> {
    if std::path::Path::new(path).is_absolute() {
        return Ok(std::path::PathBuf::from(path));
    }
    match roots.first() {
        Some(ws) => Ok(ws.resolve(path)?.abs().to_path_buf()),
        None => Ok(std::path::PathBuf::from(path)),
    }
}

/// Runs `undo` and renders its report; a conflict is an error naming the
/// files, with nothing written.
pub fn run_undo(journal: &Journal, roots: &[Workspace], args: &UndoArgs) -> ToolResult<String> {
    let request = UndoRequest {
        call: args.call,
        to: args.to,
        dry_run: args.dry_run,
        force: args.force,
    };
    let report = undo::undo(journal, roots, &request)?;
    let text = render(&report);
    if report.conflicted() {
        return Err(ToolError::new(
            ErrorCode::IoError,
            format!(
                "undo refused, nothing was written:\n{text}Pass force to write the earlier content over these files anyway."
            ),
        ));
    }
    Ok(text)
}

fn render(report: &UndoReport) -> String {
    let calls = report
        .calls
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = if report.applied {
        format!("Undid call(s) {calls}.\n")
    } else if report.conflicted() {
        format!("Cannot undo call(s) {calls}:\n")
    } else {
        format!("Would undo call(s) {calls} (dry run, nothing written):\n")
    };
    for (path, outcome) in &report.files {
        let what = match outcome {
            Outcome::Restored => "restored".to_owned(),
            Outcome::Merged => "merged (changed since; the call's change reversed)".to_owned(),
            Outcome::Unchanged => "already as before".to_owned(),
            Outcome::Forced => "overwritten (force)".to_owned(),
            Outcome::Conflict(why) => format!("conflict: {why}"),
            Outcome::NotUndoable(why) => format!("not undoable: {why}"),
        };
        let _ = writeln!(out, "  {}: {what}", path.display());
    }
    out
}
