//! Undo of recorded calls, and the listing of what they changed.
//!
//! An undo plans every file first, against what is on disk now, then
//! writes all of them together (staged, flushed, then renamed; see
//! [`commit_staged`](crate::commit_staged)) or none:
//!
//! - a file that still holds what the call left is given back what it held
//!   before (a created file is removed, a deleted one recreated with its
//!   mode): **restored**;
//! - a file changed since, when both sides are text, gets the call's change
//!   reversed by a three-way merge (base: what the call left; ours: the disk;
//!   theirs: what was before): **merged**, unless the changes overlap;
//! - anything else is a **conflict**, and nothing at all is written, unless
//!   `force`, which writes the before side over whatever is there.
//!
//! Undoing several calls (back to a point) takes them newest first, each
//! against the state the later ones' undo leaves, so the result is what
//! undoing them one by one would give.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agent_tools_confine::{ConfinedPath, Workspace};
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_journal::{CallRecord, Change, ChangeState, Image, Journal, Op};

use crate::atomic::{Expected, FileStamp};
use crate::journaled::{journal_error, make_parents};

/// What to undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UndoRequest {
    /// Undo this call alone.
    pub call: Option<u64>,
    /// Undo every call after this one (newest first).
    pub to: Option<u64>,
    /// Plan and report, write nothing.
    pub dry_run: bool,
    /// Write the before side over files changed since (conflicts are
    /// overwritten, not merged).
    pub force: bool,
}

/// What undo does (or would do) to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Given back exactly what it held before the call.
    Restored,
    /// Changed since the call; the call's change was reversed by a merge.
    Merged,
    /// Already as it was before the call: nothing to do.
    Unchanged,
    /// Changed since the call in a way the undo cannot merge; the reason.
    Conflict(String),
    /// The call's change cannot be undone; the reason.
    NotUndoable(String),
    /// Written over a conflict because `force` was given.
    Forced,
}

impl Outcome {
    fn blocks(&self) -> bool {
        matches!(self, Outcome::Conflict(_) | Outcome::NotUndoable(_))
    }
}

/// The result of an undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoReport {
    /// The calls undone, newest first.
    pub calls: Vec<u64>,
    /// Per path, what was (or would be) done, in the order met.
    pub files: Vec<(PathBuf, Outcome)>,
    /// Whether anything was written.
    pub applied: bool,
}

impl UndoReport {
    /// Whether the undo was refused for conflicts.
    pub fn conflicted(&self) -> bool {
        self.files.iter().any(|(_, outcome)| outcome.blocks())
    }
}

/// A file's state in the plan: its content and mode, or absent.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Absent,
    File(Vec<u8>, u32),
    /// A directory (or anything not a regular file): left alone by file
    /// changes.
    Other,
}

/// A path planned: what is on disk (and its stamp, which the write
/// expects), and what it is to become.
#[derive(Debug)]
struct Planned {
    disk: State,
    stamp: Option<FileStamp>,
    target: State,
}

/// The workspace and path for an absolute path, from the first root that
/// holds it.
pub(crate) fn locate<'a>(
    workspaces: &'a [Workspace],
    abs: &Path,
) -> ToolResult<(&'a Workspace, ConfinedPath)> {
    for ws in workspaces {
        if let Some(rel) = ws.strip_root(abs) {
            let rel = rel.to_string_lossy();
            let rel = if rel.is_empty() { "." } else { &rel };
            return Ok((ws, ws.resolve(rel)?));
        }
    }
    Err(ToolError::new(
        ErrorCode::PathEscape,
        format!(
            "{}: not under an allowed directory of this server; it cannot be undone here",
            abs.display()
        ),
    ))
}

fn read_state(
    workspaces: &[Workspace],
    abs: &Path,
    cap: u64,
) -> ToolResult<(State, Option<FileStamp>)> {
    let (ws, path) = locate(workspaces, abs)?;
    let meta = match ws.symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(err) if err.code() == ErrorCode::NotFound => return Ok((State::Absent, None)),
        Err(err) => return Err(err),
    };
    if !meta.is_file() {
        return Ok((State::Other, None));
    }
    let (file, meta) = crate::atomic::open_regular(ws, &path)?;
    if meta.len() > cap {
        return Err(ToolError::new(
            ErrorCode::TooLarge,
            format!(
                "{}: {} bytes, over the cap of {cap}; it cannot be undone",
                abs.display(),
                meta.len()
            ),
        ));
    }
    let mut data = Vec::new();
    use std::io::Read;
    file.take(cap + 1)
        .read_to_end(&mut data)
        .map_err(|err| ws.io_error(&err, &path))?;
    use std::os::unix::fs::PermissionsExt;
    Ok((
        State::File(data, meta.permissions().mode() & 0o7777),
        Some(FileStamp::of_std(&meta)),
    ))
}

fn image_state(journal: &Journal, image: &Option<Image>) -> ToolResult<Option<State>> {
    match image {
        None => Ok(Some(State::Absent)),
        Some(Image {
            hash: Some(hash),
            mode,
            ..
        }) => Ok(Some(State::File(
            journal.content(hash).map_err(journal_error)?,
            *mode,
        ))),
        Some(_) => Ok(None),
    }
}

/// Whether two states hold the same content (modes aside).
fn same_content(a: &State, b: &State) -> bool {
    match (a, b) {
        (State::Absent, State::Absent) => true,
        (State::File(x, _), State::File(y, _)) => x == y,
        _ => false,
    }
}

/// The calls a request names, newest first.
pub fn selected_calls(journal: &Journal, request: &UndoRequest) -> ToolResult<Vec<CallRecord>> {
    match (request.call, request.to) {
        (Some(id), None) => match journal.call(id).map_err(journal_error)? {
            Some(call) => Ok(vec![call]),
            None => Err(ToolError::new(
                ErrorCode::NotFound,
                format!("no call {id} in the journal (pruned, or it changed nothing)"),
            )),
        },
        (None, Some(to)) => {
            let calls: Vec<CallRecord> = journal
                .calls()
                .map_err(journal_error)?
                .into_iter()
                .filter(|call| call.id > to)
                .collect();
            if calls.is_empty() {
                return Err(ToolError::new(
                    ErrorCode::NotFound,
                    format!("no call after {to} in the journal: nothing to undo"),
                ));
            }
            Ok(calls)
        }
        _ => Err(ToolError::invalid_input(
            "undo: give either `call` (one call) or `to` (every call after it)",
        )),
    }
}

/// Undoes the calls `request` names: plans every file, refuses on a
/// conflict (unless `force`), and otherwise writes them all (unless
/// `dry_run`). The writes go through the write path, so a call being
/// recorded records the undo too (and it can itself be undone).
pub fn undo(
    journal: &Journal,
    workspaces: &[Workspace],
    request: &UndoRequest,
) -> ToolResult<UndoReport> {
    let calls = selected_calls(journal, request)?;
    let cap = journal.settings().max_file_bytes;
    let mut plan: BTreeMap<PathBuf, Planned> = BTreeMap::new();
    let mut files: Vec<(PathBuf, Outcome)> = Vec::new();
    let mut dir_moves: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut made_dirs: Vec<PathBuf> = Vec::new();
    let mut removed_dirs: Vec<PathBuf> = Vec::new();
    for call in &calls {
        for record in call.changes.iter().rev() {
            let change = &record.change;
            if record.state == ChangeState::Pending {
                continue;
            }
            match change.op {
                Op::Mkdir => {
                    made_dirs.push(change.path.clone());
                    continue;
                }
                Op::Rmdir => {
                    removed_dirs.push(change.path.clone());
                    continue;
                }
                Op::MoveDir => {
                    let outcome = plan_dir_move(workspaces, change);
                    if let Some(from) = &change.from
                        && outcome == Outcome::Restored
                    {
                        dir_moves.push((change.path.clone(), from.clone()));
                    }
                    files.push((change.path.clone(), outcome));
                    continue;
                }
                Op::Create | Op::Modify | Op::Delete => {}
            }
            if let Some(reason) = &change.not_undoable {
                files.push((change.path.clone(), Outcome::NotUndoable(reason.clone())));
                continue;
            }
            if !plan.contains_key(&change.path) {
                let (disk, stamp) = read_state(workspaces, &change.path, cap)?;
                plan.insert(
                    change.path.clone(),
                    Planned {
                        target: disk.clone(),
                        disk,
                        stamp,
                    },
                );
            }
            let Some(planned) = plan.get_mut(&change.path) else {
                continue;
            };
            let outcome = plan_file(journal, change, planned, request.force)?;
            files.push((change.path.clone(), outcome));
        }
    }
    if files
        .iter()
        .any(|(_, outcome)| matches!(outcome, Outcome::Conflict(_)))
    {
        name_changers(journal, &calls, &mut files)?;
    }
    let mut report = UndoReport {
        calls: calls.iter().map(|call| call.id).collect(),
        files,
        applied: false,
    };
    if report.conflicted() || request.dry_run {
        return Ok(report);
    }
    if let Some(recorder) = agent_tools_journal::current() {
        recorder.note_undoes(&report.calls);
    }
    apply(
        workspaces,
        &plan,
        &dir_moves,
        &made_dirs,
        &removed_dirs,
        request,
    )?;
    report.applied = true;
    Ok(report)
}

/// Adds to each conflict the newest later call (not being undone) that
/// changed the file, when the journal knows one: a command, say, whose
/// changes were detected.
fn name_changers(
    journal: &Journal,
    undone: &[CallRecord],
    files: &mut [(PathBuf, Outcome)],
) -> ToolResult<()> {
    let Some(oldest) = undone.iter().map(|call| call.id).min() else {
        return Ok(());
    };
    let later: Vec<CallRecord> = journal
        .calls()
        .map_err(journal_error)?
        .into_iter()
        .filter(|call| call.id > oldest && !undone.iter().any(|u| u.id == call.id))
        .collect();
    for (path, outcome) in files.iter_mut() {
        let Outcome::Conflict(why) = outcome else {
            continue;
        };
        // Newest first, as `calls` lists them.
        if let Some(call) = later
            .iter()
            .find(|call| call.changes.iter().any(|c| &c.change.path == path))
        {
            why.push_str(&format!(
                "; call {} ({}) changed it since",
                call.id, call.tool
            ));
        }
    }
    Ok(())
}

fn plan_dir_move(workspaces: &[Workspace], change: &Change) -> Outcome {
    let Some(from) = &change.from else {
        return Outcome::NotUndoable("the move's origin was not recorded".into());
    };
    let here = read_state(workspaces, &change.path, 0).map(|(s, _)| s);
    let there = read_state(workspaces, from, 0).map(|(s, _)| s);
    match (here, there) {
        (Ok(State::Other), Ok(State::Absent)) => Outcome::Restored,
        (Ok(State::Absent), Ok(State::Other)) => Outcome::Unchanged,
        (Err(err), _) | (_, Err(err)) => Outcome::Conflict(err.message().to_owned()),
        _ => Outcome::Conflict(format!(
            "the directory was moved or replaced since, or {} exists again",
            from.display()
        )),
    }
}

fn plan_file(
    journal: &Journal,
    change: &Change,
    planned: &mut Planned,
    force: bool,
) -> ToolResult<Outcome> {
    if let Some(reason) = &change.not_undoable {
        return Ok(Outcome::NotUndoable(reason.clone()));
    }
    let Some(before) = image_state(journal, &change.before)? else {
        return Ok(Outcome::NotUndoable(
            "the content before the call was not stored".into(),
        ));
    };
    let after = image_state(journal, &change.after)?;
    let now = &planned.target;
    if let Some(after) = &after
        && same_content(now, after)
    {
        planned.target = before;
        return Ok(Outcome::Restored);
    }
    if same_content(now, &before) {
        // Already as before; a mode the call changed is put back too.
        planned.target = before;
        return Ok(Outcome::Unchanged);
    }
    if let (Some(State::File(base, _)), State::File(ours, mode), State::File(theirs, _)) =
        (&after, now, &before)
        && let (Ok(base), Ok(ours), Ok(theirs)) = (
            std::str::from_utf8(base),
            std::str::from_utf8(ours),
            std::str::from_utf8(theirs),
        )
    {
        if let Ok(merged) = diffy::merge(base, ours, theirs) {
            planned.target = State::File(merged.into_bytes(), *mode);
            return Ok(Outcome::Merged);
        }
        if !force {
            return Ok(Outcome::Conflict(
                "changed since the call, where the call changed it (the changes overlap)".into(),
            ));
        }
    }
    let why = match (now, &after) {
        (State::Absent, _) => "deleted since the call",
        (State::Other, _) => "no longer a regular file",
        (State::File(..), Some(State::Absent)) => "created again since the call deleted it",
        _ => "changed since the call, and not mergeable (binary)",
    };
    if force {
        planned.target = before;
        return Ok(Outcome::Forced);
    }
    Ok(Outcome::Conflict(why.into()))
}

fn apply(
    workspaces: &[Workspace],
    plan: &BTreeMap<PathBuf, Planned>,
    dir_moves: &[(PathBuf, PathBuf)],
    made_dirs: &[PathBuf],
    removed_dirs: &[PathBuf],
    request: &UndoRequest,
) -> ToolResult<()> {
    // Directories moved back first: files planned inside them are named
    // by their old paths.
    for (here, there) in dir_moves {
        let (from_ws, from) = locate(workspaces, here)?;
        let (to_ws, to) = locate(workspaces, there)?;
        make_parents(to_ws, &to)?;
        crate::atomic::rename_new_between(from_ws, &from, to_ws, &to, None)?;
    }
    // Directories the calls removed come back (shallowest first).
    let mut again: Vec<&PathBuf> = removed_dirs.iter().collect();
    again.sort_by_key(|p| p.components().count());
    for dir in again {
        let (ws, path) = locate(workspaces, dir)?;
        crate::journaled::make_dirs(ws, &path)?;
    }
    let mut locks = crate::lock::FileLocks::default();
    let mut batch = Vec::new();
    let mut removals = Vec::new();
    for (abs, planned) in plan {
        if planned.target == planned.disk {
            continue;
        }
        let (ws, path) = locate(workspaces, abs)?;
        locks.add(ws, &path, crate::lock::FILE_LOCK_WAIT)?;
        let expected = match planned.stamp {
            Some(stamp) => Expected::Same(stamp),
            None if request.force && planned.disk != State::Absent => continue,
            None => Expected::Absent,
        };
        match &planned.target {
            State::File(data, mode) => {
                make_parents(ws, &path)?;
                let staged = crate::atomic::stage_replace(ws, &path, data, expected)?;
                staged
                    .set_mode(*mode)
                    .map_err(|err| ws.io_error(&err, &path))?;
                batch.push(staged);
            }
            State::Absent => removals.push((ws, path, planned.stamp)),
            State::Other => {}
        }
    }
    crate::atomic::commit_staged(&mut batch)?;
    for (ws, path, stamp) in removals {
        crate::atomic::remove_seen(ws, &path, stamp)?;
    }
    // Directories the calls made go, deepest first, when empty now.
    let mut made: Vec<&PathBuf> = made_dirs.iter().collect();
    made.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for dir in made {
        let (ws, path) = locate(workspaces, dir)?;
        let (parent, name) = ws.open_parent(&path)?;
        // Not empty (files put there since): kept, harmlessly.
        if parent.remove_dir(&name).is_ok()
            && let Some(recorder) = agent_tools_journal::current()
        {
            let change = Change::new(dir, Op::Rmdir, Some(Image::unstored(0o755, 0)), None);
            recorder.record_made(change).map_err(journal_error)?;
        }
    }
    Ok(())
}

/// Lines added and removed between two contents (`None` for binary or
/// unstored ones).
pub fn line_counts(journal: &Journal, change: &Change) -> Option<(usize, usize)> {
    let text = |image: &Option<Image>| -> Option<String> {
        match image {
            None => Some(String::new()),
            Some(Image {
                hash: Some(hash), ..
            }) => String::from_utf8(journal.content(hash).ok()?).ok(),
            Some(_) => None,
        }
    };
    let before = text(&change.before)?;
    let after = text(&change.after)?;
    let diff = similar::TextDiff::from_lines(&before, &after);
    let mut added = 0;
    let mut removed = 0;
    for op in diff.iter_all_changes() {
        match op.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    Some((added, removed))
}

/// The unified diff of one change (empty for binary or unstored ones).
pub fn change_diff(journal: &Journal, change: &Change) -> String {
    let text = |image: &Option<Image>| -> Option<String> {
        match image {
            None => Some(String::new()),
            Some(Image {
                hash: Some(hash), ..
            }) => String::from_utf8(journal.content(hash).ok()?).ok(),
            Some(_) => None,
        }
    };
    let (Some(before), Some(after)) = (text(&change.before), text(&change.after)) else {
        return String::new();
    };
    let path = change.path.display().to_string();
    similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .header(&format!("a{path}"), &format!("b{path}"))
        .to_string()
}
