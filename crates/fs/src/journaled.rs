//! The write path's reports to the undo journal.
//!
//! Every change the tools make passes through `atomic` (and directory
//! creation through [`make_dirs`]); each asks the journal whether the call
//! on this thread is being recorded ([`agent_tools_journal::current`]) and,
//! when it is, stores the content before and after and announces the
//! change before making it. Nothing here runs without `--journal`.
//!
//! A change the journal cannot record (its directory full, say) is not
//! made: an unrecorded change would make a later undo wrong without saying
//! so.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

use agent_tools_confine::{ConfinedPath, Workspace};
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_journal::{Change, Image, Op, Recorder, Token};
use cap_std::fs::{Dir, Metadata, PermissionsExt};

/// The journal's failure, as the tools report it.
pub(crate) fn journal_error(err: agent_tools_journal::JournalError) -> ToolError {
    ToolError::new(
        ErrorCode::IoError,
        format!("the undo journal could not record the change, so it was not made: {err}"),
    )
}

/// Permission bits of metadata read through a directory handle.
pub(crate) fn mode_of(meta: &Metadata) -> u32 {
    meta.permissions().mode() & 0o7777
}

/// The content of `name` in `dir` as an image: stored when it is a regular
/// file within the journal's cap, unstored (with the reason) otherwise.
pub(crate) fn image_of(
    recorder: &Recorder,
    dir: &Dir,
    name: &OsStr,
    meta: &Metadata,
) -> ToolResult<(Image, Option<String>)> {
    let mode = mode_of(meta);
    let size = meta.len();
    if !meta.is_file() {
        return Ok((
            Image::unstored(mode, size),
            Some("not a regular file".into()),
        ));
    }
    if size > recorder.max_file_bytes() {
        return Ok((
            Image::unstored(mode, size),
            Some(format!(
                "{size} bytes, over the journal's cap of {} bytes per file",
                recorder.max_file_bytes()
            )),
        ));
    }
    let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    let read = dir
        .open(name)
        .map(cap_std::fs::File::into_std)
        .and_then(|file| {
            file.take(recorder.max_file_bytes() + 1)
                .read_to_end(&mut data)
        });
    if let Err(err) = read {
        return Ok((
            Image::unstored(mode, size),
            Some(format!("could not be read: {err}")),
        ));
    }
    let hash = recorder.store(&data).map_err(journal_error)?;
    Ok((Image::stored(hash, mode, data.len() as u64), None))
}

/// An image of bytes about to be written.
pub(crate) fn image_of_bytes(
    recorder: &Recorder,
    parts: &[&[u8]],
    mode: u32,
) -> ToolResult<(Image, Option<String>)> {
    let size: usize = parts.iter().map(|p| p.len()).sum();
    if size as u64 > recorder.max_file_bytes() {
        return Ok((
            Image::unstored(mode, size as u64),
            Some(format!(
                "{size} bytes, over the journal's cap of {} bytes per file",
                recorder.max_file_bytes()
            )),
        ));
    }
    let hash = if parts.len() == 1 {
        recorder.store(parts[0])
    } else {
        recorder.store(&parts.concat())
    }
    .map_err(journal_error)?;
    Ok((Image::stored(hash, mode, size as u64), None))
}

/// The change replacing (or creating) `name`: before as it is on disk,
/// after as the bytes given.
pub(crate) fn replacement(
    recorder: &Recorder,
    dir: &Dir,
    name: &OsStr,
    path: &ConfinedPath,
    parts: &[&[u8]],
    after_mode: u32,
) -> ToolResult<Change> {
    let before = match dir.symlink_metadata(name) {
        Ok(meta) => Some(image_of(recorder, dir, name, &meta)?),
        Err(_) => None,
    };
    let (after, after_reason) = image_of_bytes(recorder, parts, after_mode)?;
    let op = if before.is_some() {
        Op::Modify
    } else {
        Op::Create
    };
    let (before, before_reason) = match before {
        Some((image, reason)) => (Some(image), reason),
        None => (None, None),
    };
    let mut change = Change::new(path.abs(), op, before, Some(after));
    change.not_undoable = before_reason.or(after_reason);
    Ok(change)
}

/// Announces `change` when a call is recorded; the token confirms or
/// withdraws it once the change was tried.
pub(crate) fn announce(recorder: &Recorder, change: Change) -> ToolResult<Token> {
    recorder.intent(change).map_err(journal_error)
}

/// Confirms or withdraws an announced change as `result` says.
pub(crate) fn settle<T>(
    announced: Option<(Recorder, Vec<Token>)>,
    result: ToolResult<T>,
) -> ToolResult<T> {
    if let Some((recorder, tokens)) = announced {
        for token in tokens {
            if result.is_ok() {
                recorder.done(token);
            } else {
                recorder.abort(token);
            }
        }
    }
    result
}

/// `mkdir -p` of `path` beneath the workspace's handle (see
/// [`Workspace::create_dir_all`]), each directory made recorded in the
/// undo journal when the call is recorded. Answers the directories made.
pub fn make_dirs(workspace: &Workspace, path: &ConfinedPath) -> ToolResult<Vec<ConfinedPath>> {
    let made = workspace.create_dir_all(path)?;
    if let Some(recorder) = agent_tools_journal::current() {
        for dir in &made {
            let change = Change::new(dir.abs(), Op::Mkdir, None, Some(Image::unstored(0o755, 0)));
            if let Err(err) = recorder.record_made(change) {
                // The directories stay: they are empty and harmless, and
                // the caller's write fails on this error.
                return Err(journal_error(err));
            }
        }
    }
    Ok(made)
}

/// [`make_dirs`] of the parent of `path` (nothing for a path at the top).
pub fn make_parents(workspace: &Workspace, path: &ConfinedPath) -> ToolResult<Vec<ConfinedPath>> {
    match path.rel().parent() {
        Some(parent) if !parent.as_os_str().is_empty() => {
            let parent = workspace.resolve(&parent.to_string_lossy())?;
            make_dirs(workspace, &parent)
        }
        _ => Ok(Vec::new()),
    }
}

/// Most files a removed tree may hold for its removal to be recorded file
/// by file; past it the removal is recorded as not undoable.
const MAX_TREE_FILES: usize = 10_000;

/// Removes the directory `name` of `dir` (at `abs`) with everything in it,
/// recording each file it held (content and mode) when the call is
/// recorded, so an undo recreates the tree. Symbolic links and special
/// files inside are recorded as not undoable.
pub fn remove_tree(dir: &Dir, name: &OsStr, abs: &Path) -> std::io::Result<()> {
    let Some(recorder) = agent_tools_journal::current() else {
        return dir.remove_dir_all(name);
    };
    let sub = dir.open_dir(name)?;
    let mut changes = Vec::new();
    let mut dirs = vec![Change::new(
        abs,
        Op::Rmdir,
        Some(Image::unstored(0o755, 0)),
        None,
    )];
    let mut stack: Vec<(Dir, PathBuf)> = vec![(sub, abs.to_path_buf())];
    let mut too_many = false;
    while let Some((here, at)) = stack.pop() {
        for entry in here.entries()? {
            let entry = entry?;
            let entry_name = entry.file_name();
            let meta = here.symlink_metadata(&entry_name)?;
            let path = at.join(&entry_name);
            if meta.is_dir() {
                dirs.push(Change::new(
                    &path,
                    Op::Rmdir,
                    Some(Image::unstored(mode_of(&meta), 0)),
                    None,
                ));
                stack.push((here.open_dir(&entry_name)?, path));
                continue;
            }
            if changes.len() >= MAX_TREE_FILES {
                too_many = true;
                break;
            }
            let (image, reason) = image_of(&recorder, &here, &entry_name, &meta)
                .map_err(|err| std::io::Error::other(err.message().to_owned()))?;
            let mut change = Change::new(&path, Op::Delete, Some(image), None);
            change.not_undoable = reason;
            changes.push(change);
        }
    }
    if too_many {
        for change in &mut changes {
            change.not_undoable = Some(format!(
                "part of a removed tree of more than {MAX_TREE_FILES} files"
            ));
        }
    }
    // Files first, then the directories deepest first: the order an undo
    // reverses (it makes the directories, then the files).
    dirs.reverse();
    changes.extend(dirs);
    let tokens = recorder
        .intents(changes)
        .map_err(|err| std::io::Error::other(err.to_string()))?;
    let result = dir.remove_dir_all(name);
    if result.is_ok() {
        for token in tokens {
            recorder.done(token);
        }
    }
    // A tree removed part-way: its changes stay announced, and the call's
    // end settles each against the disk.
    result
}

/// The changes of moving `from` to `to`: a file as its deletion and its
/// creation (so an undo needs nothing but contents), a directory as one
/// move.
pub(crate) fn move_changes(
    recorder: &Recorder,
    from_dir: &Dir,
    from_name: &OsStr,
    from: &ConfinedPath,
    to: &ConfinedPath,
) -> ToolResult<Vec<Change>> {
    let meta = from_dir
        .symlink_metadata(from_name)
        .map_err(|err| ToolError::from_io(&err, from.abs()))?;
    if meta.is_dir() {
        let mut change = Change::new(
            to.abs(),
            Op::MoveDir,
            None,
            Some(Image::unstored(mode_of(&meta), 0)),
        );
        change.from = Some(from.abs().to_path_buf());
        return Ok(vec![change]);
    }
    let (image, reason) = image_of(recorder, from_dir, from_name, &meta)?;
    let mut gone = Change::new(from.abs(), Op::Delete, Some(image.clone()), None);
    gone.not_undoable.clone_from(&reason);
    let mut made = Change::new(to.abs(), Op::Create, None, Some(image));
    made.not_undoable = reason;
    Ok(vec![gone, made])
}
