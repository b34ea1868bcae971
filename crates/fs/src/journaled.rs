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
use agent_tools_journal::{Change, Image, LinkStamp, Op, Recorder, Token};
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
    // Kept by a hard link whatever its size: no read, no copy, no hash
    // now (the background pass seals it), and nothing to write back when
    // it is flushed with the call's files (its data is the file's own).
    // The file is about to be replaced by a rename or removed, so the
    // link is mostly the only name left to change it through.
    if let Some(key) = recorder
        .link(dir, name, stamp_of(meta), true)
        .map_err(journal_error)?
    {
        return Ok((Image::stored(key, mode, size), None));
    }
    if size >= LINK_FROM {
        // Not linkable (the journal on another filesystem, say): a copy
        // made by the kernel.
        if let Ok(file) = dir.open(name)
            && let Some(key) = recorder
                .copy_in(&mut file.into_std())
                .map_err(journal_error)?
        {
            return Ok((Image::stored(key, mode, size), None));
        }
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

/// A new content this large is kept by a hard link to the file written
/// (and an old one this large that cannot be linked by a kernel copy)
/// rather than read and stored: the write path then spends no time on it.
/// A smaller new content is stored at once (unflushed: the file itself
/// keeps it), which costs less than a link now and a seal later; what a
/// file held before is linked whatever its size (see [`image_of`]).
pub(crate) const LINK_FROM: u64 = 64 * 1024;

/// The journal's stamp of a file.
pub(crate) fn stamp_of(meta: &Metadata) -> LinkStamp {
    use cap_std::fs::MetadataExt;
    LinkStamp {
        ino: meta.ino(),
        size: meta.len(),
        mtime: meta.mtime(),
        mtime_nsec: meta.mtime_nsec(),
    }
}

/// The journal's stamp of an open file.
pub(crate) fn stamp_of_std(meta: &std::fs::Metadata) -> LinkStamp {
    use std::os::unix::fs::MetadataExt;
    LinkStamp {
        ino: meta.ino(),
        size: meta.len(),
        mtime: meta.mtime(),
        mtime_nsec: meta.mtime_nsec(),
    }
}

/// The new content of a replacement, already written to its temporary
/// file: the name in the target's directory and the file's metadata once
/// written, so a large one is kept by a link to that file.
pub(crate) struct Written<'a> {
    pub(crate) temp: &'a OsStr,
    pub(crate) meta: &'a std::fs::Metadata,
}

/// An image of bytes about to be written.
pub(crate) fn image_of_bytes(
    recorder: &Recorder,
    dir: &Dir,
    parts: &[&[u8]],
    written: Option<Written<'_>>,
    mode: u32,
) -> ToolResult<(Image, Option<String>)> {
    let size: usize = parts.iter().map(|p| p.len()).sum();
    if let Some(written) = written
        && size as u64 >= LINK_FROM
        && size as u64 <= recorder.max_file_bytes()
        && written.meta.len() == size as u64
        && let Some(key) = recorder
            .link(dir, written.temp, stamp_of_std(written.meta), false)
            .map_err(journal_error)?
    {
        return Ok((Image::stored(key, mode, size as u64), None));
    }
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
        recorder.store_after(parts[0])
    } else {
        recorder.store_after(&parts.concat())
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
    written: Option<Written<'_>>,
    after_mode: u32,
) -> ToolResult<Change> {
    let before = match dir.symlink_metadata(name) {
        Ok(meta) => Some(image_of(recorder, dir, name, &meta)?),
        Err(_) => None,
    };
    let (after, after_reason) = image_of_bytes(recorder, dir, parts, written, after_mode)?;
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

/// Announces `changes` of a call being recorded, for a change that has no
/// file of its own to flush (a move, a delete): the journal's files are the
/// round. The tokens confirm or withdraw each once tried.
pub(crate) fn announce(recorder: &Recorder, changes: Vec<Change>) -> ToolResult<Vec<Token>> {
    recorder.intents(changes).map_err(journal_error)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Expected;
    use agent_tools_confine::Confinement;
    use agent_tools_journal::{ChangeState, Journal, Settings};
    use std::os::unix::fs::PermissionsExt as _;

    fn setup() -> (tempfile::TempDir, Workspace, std::sync::Arc<Journal>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        let ws = Workspace::open(dir.path().join("root"), Confinement::Confined).unwrap();
        let journal = Journal::open(Settings::new(dir.path().join("state"))).unwrap();
        (dir, ws, journal)
    }

    #[test]
    fn a_write_records_before_and_after_with_modes() {
        let (dir, ws, journal) = setup();
        let file = dir.path().join("root/a.txt");
        std::fs::write(&file, "old\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let path = ws.resolve("a.txt").unwrap();
        let scope = journal.begin("write_file", "test", "local");
        crate::write_atomic(&ws, &path, b"new\n", Expected::Absent).unwrap_err();
        let meta = ws.symlink_metadata(&path).unwrap();
        crate::write_atomic(
            &ws,
            &path,
            b"new\n",
            Expected::Same(crate::FileStamp::of(&meta)),
        )
        .unwrap();
        let id = scope.finish().unwrap().unwrap();
        let call = journal.call(id).unwrap().unwrap();
        // The refused write (the file exists) left no change behind.
        assert_eq!(call.changes.len(), 1, "{call:?}");
        let change = &call.changes[0];
        assert_eq!(change.state, ChangeState::Done);
        assert_eq!(change.change.op, Op::Modify);
        let before = change.change.before.as_ref().unwrap();
        let after = change.change.after.as_ref().unwrap();
        assert_eq!((before.mode, after.mode), (0o640, 0o640));
        assert_eq!(
            journal.content(before.hash.as_ref().unwrap()).unwrap(),
            b"old\n"
        );
        assert_eq!(
            journal.content(after.hash.as_ref().unwrap()).unwrap(),
            b"new\n"
        );
    }

    #[test]
    fn a_large_file_is_kept_by_links_and_undone_before_and_after_the_seal() {
        let (dir, ws, journal) = setup();
        let file = dir.path().join("root/big.txt");
        let old = "an old line of a large file\n".repeat(4000);
        let new = "a new line of a large file\n".repeat(4000);
        std::fs::write(&file, &old).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let path = ws.resolve("big.txt").unwrap();
        let write = |data: &str| {
            let meta = ws.symlink_metadata(&path).unwrap();
            let scope = journal.begin("write_file", "test", "local");
            crate::write_atomic(
                &ws,
                &path,
                data.as_bytes(),
                Expected::Same(crate::FileStamp::of(&meta)),
            )
            .unwrap();
            scope.finish().unwrap().unwrap()
        };
        let id = write(&new);
        let call = journal.call(id).unwrap().unwrap();
        let change = &call.changes[0].change;
        for side in [&change.before, &change.after] {
            let key = side.as_ref().unwrap().hash.as_deref().unwrap();
            assert!(agent_tools_journal::is_linked(key), "{key}");
        }
        let undo = |call| {
            let scope = journal.begin("undo", "test", "local");
            let report = crate::undo::undo(
                &journal,
                std::slice::from_ref(&ws),
                &crate::undo::UndoRequest {
                    call: Some(call),
                    ..Default::default()
                },
            )
            .unwrap();
            assert!(report.applied, "{report:?}");
            scope.finish().unwrap().unwrap()
        };
        let undone = undo(id);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), old);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
        // Sealed: the records name hashes, and undoing the undo redoes.
        journal.compact().unwrap();
        for id in [id, undone] {
            let call = journal.call(id).unwrap().unwrap();
            for change in &call.changes {
                for side in [&change.change.before, &change.change.after] {
                    let key = side.as_ref().unwrap().hash.as_deref().unwrap();
                    assert!(!agent_tools_journal::is_linked(key), "{key}");
                }
            }
        }
        undo(undone);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), new);
    }

    #[test]
    fn a_change_the_journal_cannot_record_is_not_made() {
        let (dir, ws, journal) = setup();
        let file = dir.path().join("root/a.txt");
        std::fs::write(&file, "old\n").unwrap();
        // The pending directory replaced by a file: no intent can be written.
        let pending = dir.path().join("state/pending");
        std::fs::remove_dir(&pending).unwrap();
        std::fs::write(&pending, "").unwrap();
        let path = ws.resolve("a.txt").unwrap();
        let meta = ws.symlink_metadata(&path).unwrap();
        let scope = journal.begin("write_file", "test", "local");
        let err = crate::write_atomic(
            &ws,
            &path,
            b"new\n",
            Expected::Same(crate::FileStamp::of(&meta)),
        )
        .unwrap_err();
        assert!(err.message().contains("undo journal"), "{err:?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n");
        let err = crate::remove_seen(&ws, &path, None).unwrap_err();
        assert!(err.message().contains("undo journal"), "{err:?}");
        assert!(file.exists());
        drop(scope);
    }

    #[test]
    fn staged_writes_moves_and_trees_are_recorded_and_a_file_over_the_cap_is_not_undoable() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("t/u")).unwrap();
        std::fs::write(root.join("t/u/f"), "f").unwrap();
        std::fs::write(root.join("big"), vec![b'x'; 64]).unwrap();
        let ws = Workspace::open(&root, Confinement::Confined).unwrap();
        let mut settings = Settings::new(dir.path().join("state"));
        settings.max_file_bytes = 32;
        let journal = Journal::open(settings).unwrap();
        let scope = journal.begin("apply_patch", "test", "local");
        let mut batch = vec![
            crate::stage_replace(&ws, &ws.resolve("n1").unwrap(), b"1", Expected::Absent).unwrap(),
            crate::stage_replace(&ws, &ws.resolve("n2").unwrap(), b"2", Expected::Absent).unwrap(),
        ];
        crate::commit_staged(&mut batch).unwrap();
        crate::rename_new(
            &ws,
            &ws.resolve("big").unwrap(),
            &ws.resolve("big2").unwrap(),
            None,
        )
        .unwrap();
        make_dirs(&ws, &ws.resolve("m/n").unwrap()).unwrap();
        let (parent, name) = ws.open_parent(&ws.resolve("t").unwrap()).unwrap();
        remove_tree(&parent, &name, &root.join("t")).unwrap();
        let id = scope.finish().unwrap().unwrap();
        let call = journal.call(id).unwrap().unwrap();
        let ops: Vec<(String, Op, bool)> = call
            .changes
            .iter()
            .map(|c| {
                let rel = c.change.path.strip_prefix(&root).unwrap();
                (
                    rel.display().to_string(),
                    c.change.op,
                    c.change.not_undoable.is_some(),
                )
            })
            .collect();
        let expected: Vec<(String, Op, bool)> = [
            ("n1", Op::Create, false),
            ("n2", Op::Create, false),
            ("big", Op::Delete, true),
            ("big2", Op::Create, true),
            ("m", Op::Mkdir, false),
            ("m/n", Op::Mkdir, false),
            ("t/u/f", Op::Delete, false),
            ("t/u", Op::Rmdir, false),
            ("t", Op::Rmdir, false),
        ]
        .into_iter()
        .map(|(p, o, n)| (p.to_owned(), o, n))
        .collect();
        assert_eq!(ops, expected);

        // The undo puts it all back, except what is not undoable, which
        // refuses it.
        let undo = |force| {
            crate::undo::undo(
                &journal,
                std::slice::from_ref(&ws),
                &crate::undo::UndoRequest {
                    call: Some(id),
                    force,
                    ..Default::default()
                },
            )
            .unwrap()
        };
        let report = undo(false);
        assert!(report.conflicted() && !report.applied, "{report:?}");
        assert!(root.join("n1").exists(), "nothing written on a refusal");
        let report = undo(true);
        assert!(report.conflicted() && !report.applied, "{report:?}");
    }
}
