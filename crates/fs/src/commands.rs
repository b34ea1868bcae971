//! Commands' changes in the undo journal.
//!
//! A command (`bash` and the like) changes files without passing through
//! the write path, so the journal cannot hear about it change by change.
//! Instead the roots are looked at before and after the command, and the
//! difference is recorded as the command call's changes:
//!
//! - **detect** (the default): the table of the roots' non-ignored files
//!   (size, modification time; change time, inode and mode too when walked)
//!   is taken from the warm index when there is one, else by a walk that
//!   stats every file. What was created, modified or deleted is recorded
//!   with the content it was left with, so `changes` lists it and an undo
//!   of an earlier call that would overwrite it names the command. What
//!   the file held before is unknown: the command's call cannot be undone.
//! - **baseline**: before each command, the content of every non-ignored
//!   file whose stamp changed since the last command is stored (by hash:
//!   an unchanged file costs nothing after the first time), so the files a
//!   command changes are recorded with both sides and undo like a tool
//!   call's. The baseline's contents are pinned against the journal's
//!   sweep while the process lives, and bounded by half the journal's
//!   byte cap and its per-file cap; files left out are recorded as not
//!   undoable, with the reason.
//!
//! Past a number of files neither is attempted: the call's record says the
//! detection was skipped and why. Ignored files (the rules of `.gitignore`,
//! `.ignore` and the global excludes, and `.git/`) are never looked at;
//! the record says so.

use std::collections::HashMap;
use std::io::Read as _;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use agent_tools_confine::Workspace;
use agent_tools_index::WorkspaceIndex;
use agent_tools_journal::{Change, Image, Op, Recorder};
use agent_tools_walk::{Flow, Walk};

/// How commands' changes are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommandMode {
    /// Not looked for.
    Off,
    /// Detected and recorded with their after side; not undoable.
    #[default]
    Detect,
    /// Recorded with both sides from a content baseline kept before each
    /// command: undoable.
    Baseline,
}

/// The most files the roots may hold for a command's changes to be looked
/// for, unless configured otherwise.
pub const DEFAULT_COMMAND_MAX_FILES: usize = 100_000;

/// Why a command's changes were not recorded, said in its record.
const NOT_UNDOABLE: &str = "made by a command; what the file held before was not kept (--journal-commands baseline keeps it)";

/// What ignored files are, said in the record of a command that changed
/// something.
const IGNORED_NOTE: &str = "ignored files (.gitignore, .ignore, the global excludes) and .git/ were not looked at: a command's changes there are not recorded";

/// One file's stamp: what tells a change without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: u64,
    modified: SystemTime,
    /// Change time (nanoseconds), inode and mode, when the file was
    /// stat'ed (the index keeps neither): a `chmod` or a replacement of
    /// the same size and time shows in them.
    more: Option<(i128, u64, u32)>,
    /// A directory (its making or removal is recorded, nothing else).
    dir: bool,
}

impl Stamp {
    fn of(stat: &nix::sys::stat::FileStat) -> Stamp {
        let nanos = |secs: i64, nsecs: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsecs);
        let modified = nanos(stat.st_mtime, stat.st_mtime_nsec);
        let modified = u64::try_from(modified)
            .map(|ns| SystemTime::UNIX_EPOCH + std::time::Duration::from_nanos(ns))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        Stamp {
            size: u64::try_from(stat.st_size).unwrap_or(0),
            modified,
            more: Some((
                nanos(stat.st_ctime, stat.st_ctime_nsec),
                stat.st_ino,
                stat.st_mode & 0o7777,
            )),
            dir: stat.st_mode & nix::libc::S_IFMT == nix::libc::S_IFDIR,
        }
    }

    /// Whether two stamps say the file is unchanged (comparing what both
    /// know).
    fn same(&self, other: &Stamp) -> bool {
        self.size == other.size
            && self.modified == other.modified
            && match (self.more, other.more) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

/// A file of the roots: its root's place among the workspaces and its path
/// relative to that root. Not the absolute path: a table of every file is
/// made before and after each command, and joining, hashing and comparing
/// whole paths was most of what that cost. Absolute paths are made only for
/// what changed.
type Key = (usize, Arc<str>);

/// The roots' files (foldhash: the standard SipHash was a good part of the
/// cost of a table).
type Table = HashMap<Key, Stamp, foldhash::fast::RandomState>;

/// The absolute path of `key`.
fn absolute(workspaces: &[Workspace], key: &Key) -> Option<PathBuf> {
    workspaces.get(key.0).map(|ws| ws.root().join(&*key.1))
}

/// A file kept in the baseline.
#[derive(Debug, Clone)]
struct Kept {
    stamp: Stamp,
    image: Image,
    /// Why the content was not stored, when it was not.
    left_out: Option<String>,
}

#[derive(Debug, Default)]
struct Baseline {
    files: HashMap<Key, Kept, foldhash::fast::RandomState>,
    /// Bytes of the contents stored for it (counted per file: contents
    /// shared by several files are counted for each, which errs low).
    bytes: u64,
}

/// Looks for the changes of commands: one per server, shared by its calls.
#[derive(Debug)]
pub struct CommandWatch {
    mode: CommandMode,
    max_files: usize,
    baseline: Mutex<Baseline>,
}

/// What was seen before a command ([`CommandWatch::before`]).
#[derive(Debug)]
pub struct Watching {
    recorder: Recorder,
    before: Result<Table, String>,
}

impl CommandWatch {
    /// A watch in `mode`, giving up past `max_files` files.
    pub fn new(mode: CommandMode, max_files: usize) -> CommandWatch {
        CommandWatch {
            mode,
            max_files,
            baseline: Mutex::new(Baseline::default()),
        }
    }

    /// The mode.
    pub fn mode(&self) -> CommandMode {
        self.mode
    }

    /// Before a command of the call recorded on this thread: the roots'
    /// table (and, in baseline mode, the baseline topped up). `None` when
    /// no call is recorded or commands are not watched.
    pub fn before(
        &self,
        workspaces: &[Workspace],
        index: Option<&WorkspaceIndex>,
    ) -> Option<Watching> {
        if self.mode == CommandMode::Off {
            return None;
        }
        let recorder = agent_tools_journal::current()?;
        let before = self.table(workspaces, index);
        if self.mode == CommandMode::Baseline
            && let Ok(table) = &before
        {
            self.top_up(&recorder, workspaces, table);
        }
        Some(Watching { recorder, before })
    }

    /// After the command: records what changed since [`before`](Self::before)
    /// in the call's record (or why it was not looked for).
    pub fn after(
        &self,
        watching: Watching,
        workspaces: &[Workspace],
        index: Option<&WorkspaceIndex>,
    ) {
        let Watching { recorder, before } = watching;
        let outcome = before.and_then(|before| {
            self.table(workspaces, index)
                .map(|after| self.record(&recorder, workspaces, &before, &after))
        });
        let noted = match outcome {
            Ok(Ok(0)) => Ok(()),
            Ok(Ok(_)) => recorder.note(IGNORED_NOTE),
            Ok(Err(err)) => recorder.note(format!(
                "the command's changes could not all be recorded: {err}"
            )),
            Err(why) => recorder.note(format!("the command's changes were not looked for: {why}")),
        };
        if let Err(err) = noted {
            tracing::warn!(%err, "could not note a command's changes in the journal");
        }
    }

    /// The roots' table: from the index when it covers the one root and
    /// can answer, else walked. `Err` says why it was not taken.
    fn table(
        &self,
        workspaces: &[Workspace],
        index: Option<&WorkspaceIndex>,
    ) -> Result<Table, String> {
        let too_many = || {
            format!(
                "the roots hold more than {} files (--journal-command-max-files)",
                self.max_files
            )
        };
        if let (Some(index), [ws]) = (index, workspaces)
            && index.root() == ws.root()
            // Files and directories in one wait on the watcher, unsorted.
            && let Ok(snapshot) = index.snapshot("")
        {
            if snapshot.files.len() > self.max_files {
                return Err(too_many());
            }
            let dir = Stamp {
                size: 0,
                modified: SystemTime::UNIX_EPOCH,
                more: None,
                dir: true,
            };
            let mut table = Table::default();
            table.reserve(snapshot.files.len() + snapshot.dirs.len());
            table.extend(snapshot.files.into_iter().map(|file| {
                (
                    (0, file.path),
                    Stamp {
                        size: file.size,
                        modified: file.modified,
                        more: None,
                        dir: false,
                    },
                )
            }));
            table.extend(
                snapshot
                    .dirs
                    .into_iter()
                    .map(|rel| ((0, Arc::from(rel)), dir)),
            );
            return Ok(table);
        }
        let mut table = Table::default();
        // Roots may lie one inside another: a file is kept once, under
        // the first root that holds it, as by its absolute path.
        let mut seen = std::collections::HashSet::<PathBuf, foldhash::fast::RandomState>::default();
        let count = AtomicUsize::new(0);
        let over = AtomicBool::new(false);
        for (place, ws) in workspaces.iter().enumerate() {
            let base = ws.root_path();
            let cancel = AtomicBool::new(false);
            let walk = Walk {
                workspace: ws,
                base: &base,
                respect_gitignore: true,
                cancel: &cancel,
                // Directories too: a command's making or removing one is
                // recorded.
                visit_dirs: true,
                max_depth: None,
                exclude: None,
            };
            let walked = walk
                .run(
                    || (),
                    |_, entry, sink| {
                        if !entry.is_dir && count.fetch_add(1, Ordering::Relaxed) >= self.max_files
                        {
                            over.store(true, Ordering::Relaxed);
                            return Flow::Quit;
                        }
                        if let Ok(stat) = nix::sys::stat::fstatat(
                            entry.dir,
                            entry.name,
                            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                        ) {
                            sink.found.push((entry.rel.to_owned(), Stamp::of(&stat)));
                        }
                        Flow::Continue
                    },
                )
                .map_err(|err| format!("{}: {}", ws.root().display(), err.message()))?;
            if over.load(Ordering::Relaxed) {
                return Err(too_many());
            }
            for (rel, stamp) in walked.found {
                if workspaces.len() == 1 || seen.insert(ws.root().join(&rel)) {
                    table.entry((place, Arc::from(rel))).or_insert(stamp);
                }
            }
        }
        Ok(table)
    }

    /// Stores the content of every file whose stamp changed since the
    /// baseline last saw it, drops the files gone, and pins what is kept.
    fn top_up(&self, recorder: &Recorder, workspaces: &[Workspace], table: &Table) {
        let journal = recorder.journal();
        let cap = journal.settings().max_bytes / 2;
        let mut baseline = self.baseline.lock().unwrap_or_else(PoisonError::into_inner);
        let mut changed = false;
        let gone: Vec<Key> = baseline
            .files
            .keys()
            .filter(|key| !table.contains_key(*key))
            .cloned()
            .collect();
        for key in gone {
            if let Some(kept) = baseline.files.remove(&key) {
                baseline.bytes -= stored_size(&kept);
                changed = true;
            }
        }
        for (key, stamp) in table {
            if stamp.dir {
                continue;
            }
            if baseline
                .files
                .get(key)
                .is_some_and(|kept| kept.stamp.same(stamp))
            {
                continue;
            }
            if let Some(old) = baseline.files.remove(key) {
                baseline.bytes -= stored_size(&old);
            }
            changed = true;
            let room = cap.saturating_sub(baseline.bytes);
            let Some(read) = absolute(workspaces, key)
                .and_then(|path| read_image(recorder, workspaces, &path, room))
            else {
                continue;
            };
            let kept = Kept {
                stamp: *stamp,
                image: read.image,
                left_out: read.left_out,
            };
            baseline.bytes += stored_size(&kept);
            baseline.files.insert(key.clone(), kept);
        }
        if changed {
            // The pre-images were stored unflushed (a flush each would cost
            // a disk round trip per file): one flush for all, before the
            // command can change any of them.
            if let Err(err) = journal.flush_stored() {
                tracing::warn!(%err, "could not flush the command baseline");
            }
            pin(journal, &baseline);
        }
    }

    /// Records the difference of two tables; answers how many changes.
    fn record<'a>(
        &self,
        recorder: &Recorder,
        workspaces: &[Workspace],
        before: &'a Table,
        after: &'a Table,
    ) -> agent_tools_journal::Result<usize> {
        let mut paths: Vec<(&Key, Op)> = Vec::new();
        let (mut made, mut removed) = (Vec::new(), Vec::new());
        for (path, stamp) in after {
            match before.get(path) {
                None if stamp.dir => made.push((path, stamp)),
                None => paths.push((path, Op::Create)),
                // A directory's entries changed: its files say how.
                Some(old) if old.dir && stamp.dir => {}
                // A file replaced by a directory, or the reverse.
                Some(old) if old.dir => {
                    removed.push((path, old));
                    paths.push((path, Op::Create));
                }
                Some(_) if stamp.dir => {
                    paths.push((path, Op::Delete));
                    made.push((path, stamp));
                }
                Some(old) if !old.same(stamp) => paths.push((path, Op::Modify)),
                Some(_) => {}
            }
        }
        for (path, stamp) in before {
            if !after.contains_key(path) {
                if stamp.dir {
                    removed.push((path, stamp));
                } else {
                    paths.push((path, Op::Delete));
                }
            }
        }
        // Only what changed gets its absolute path, by which it is ordered.
        let with_path = |key: &Key| absolute(workspaces, key);
        let mut paths: Vec<(PathBuf, &Key, Op)> = paths
            .into_iter()
            .filter_map(|(key, op)| Some((with_path(key)?, key, op)))
            .collect();
        let placed = |dirs: Vec<(&'a Key, &'a Stamp)>| -> Vec<(PathBuf, &'a Stamp)> {
            dirs.into_iter()
                .filter_map(|(key, stamp)| Some((with_path(key)?, stamp)))
                .collect()
        };
        let (mut made, mut removed) = (placed(made), placed(removed));
        paths.sort_by(|a, b| a.0.cmp(&b.0));
        made.sort_by(|a, b| a.0.cmp(&b.0));
        // Deepest first, as they went.
        removed.sort_by(|a, b| b.0.cmp(&a.0));
        let dir_mode = |stamp: &Stamp| stamp.more.map_or(0o755, |(_, _, mode)| mode);
        let mut count = 0;
        // Parents before the files in them; an undo takes a call's
        // changes in reverse, so it removes them after the files.
        for (path, stamp) in made {
            let change = Change::new(
                path,
                Op::Mkdir,
                None,
                Some(Image::unstored(dir_mode(stamp), 0)),
            );
            recorder.record_made(change)?;
            count += 1;
        }
        let mut baseline = self.baseline.lock().unwrap_or_else(PoisonError::into_inner);
        let cap = recorder.max_file_bytes();
        for (path, key, op) in paths {
            let now = match op {
                Op::Delete => None,
                _ => read_image(recorder, workspaces, &path, cap),
            };
            // Gone again before it could be read: nothing to record.
            if now.is_none() && op != Op::Delete {
                continue;
            }
            let (before_image, before_left_out) = match (self.mode, op) {
                (_, Op::Create) => (None, None),
                (CommandMode::Baseline, _) => match baseline.files.get(key) {
                    Some(kept) => (Some(kept.image.clone()), kept.left_out.clone()),
                    None => (None, Some("not in the command baseline".to_owned())),
                },
                _ => {
                    let stamp = &before[key];
                    let mode = stamp.more.map_or(0o644, |(_, _, mode)| mode);
                    (Some(Image::unstored(mode, stamp.size)), None)
                }
            };
            let (after_image, after_left_out) = match now {
                Some(read) => (Some(read.image), read.left_out),
                None => (None, None),
            };
            let mut change = Change::new(path, op, before_image, after_image.clone());
            change.not_undoable = match self.mode {
                CommandMode::Baseline => before_left_out.or(after_left_out),
                _ => Some(NOT_UNDOABLE.to_owned()),
            };
            recorder.record_made(change)?;
            count += 1;
            // What was just read is the baseline of the next command.
            if self.mode == CommandMode::Baseline {
                if let Some(old) = baseline.files.remove(key) {
                    baseline.bytes -= stored_size(&old);
                }
                if let (Some(image), Some(stamp)) = (after_image, after.get(key)) {
                    let kept = Kept {
                        stamp: *stamp,
                        image,
                        left_out: None,
                    };
                    baseline.bytes += stored_size(&kept);
                    baseline.files.insert(key.clone(), kept);
                }
            }
        }
        drop(baseline);
        // After the files that were in them, deepest first: an undo makes
        // them again before it puts the files back.
        for (path, stamp) in removed {
            let change = Change::new(
                path,
                Op::Rmdir,
                Some(Image::unstored(dir_mode(stamp), 0)),
                None,
            );
            recorder.record_made(change)?;
            count += 1;
        }
        if self.mode == CommandMode::Baseline && count > 0 {
            let baseline = self.baseline.lock().unwrap_or_else(PoisonError::into_inner);
            pin(recorder.journal(), &baseline);
        }
        Ok(count)
    }
}

/// Pins the baseline's contents against the journal's sweep.
fn pin(journal: &agent_tools_journal::Journal, baseline: &Baseline) {
    let mut hashes: Vec<String> = baseline
        .files
        .values()
        .filter_map(|kept| kept.image.hash.clone())
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    if let Err(err) = journal.pin(&hashes) {
        // Unpinned, a prune may sweep them: the undo of a later command
        // then finds the content missing and refuses, saying so.
        tracing::warn!(%err, "could not pin the command baseline");
    }
}

fn stored_size(kept: &Kept) -> u64 {
    if kept.image.hash.is_some() {
        kept.image.size
    } else {
        0
    }
}

struct Read {
    image: Image,
    left_out: Option<String>,
}

/// The content and mode of `path` now, stored when it is a regular file of
/// at most `room` bytes (and the journal's per-file cap); `None` when it is
/// gone or under no root.
fn read_image(
    recorder: &Recorder,
    workspaces: &[Workspace],
    path: &std::path::Path,
    room: u64,
) -> Option<Read> {
    let (ws, confined) = crate::undo::locate(workspaces, path).ok()?;
    let (file, meta) = crate::atomic::open_regular(ws, &confined).ok()?;
    let mode = meta.permissions().mode() & 0o7777;
    let size = meta.len();
    let cap = recorder.max_file_bytes();
    let left_out = |why: String| Read {
        image: Image::unstored(mode, size),
        left_out: Some(why),
    };
    if size > cap {
        return Some(left_out(format!(
            "{size} bytes, over the journal's cap of {cap} bytes per file"
        )));
    }
    if size > room {
        return Some(left_out(
            "the command baseline is full (half of --journal-max-mb)".to_owned(),
        ));
    }
    let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    if let Err(err) = file.take(cap + 1).read_to_end(&mut data) {
        return Some(left_out(format!("could not be read: {err}")));
    }
    // Either side unflushed: a baseline's pre-images are flushed together
    // once read (CommandWatch::top_up); a post-image is on disk in the file.
    let stored = recorder.store_after(&data);
    Some(match stored {
        Ok(hash) => Read {
            image: Image::stored(hash, mode, data.len() as u64),
            left_out: None,
        },
        Err(err) => left_out(format!("could not be stored: {err}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_tools_confine::Confinement;
    use agent_tools_journal::{CallRecord, Journal, Settings};
    use std::sync::Arc;

    fn setup(settings: impl FnOnce(&mut Settings)) -> (tempfile::TempDir, Workspace, Arc<Journal>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        let ws = Workspace::open(dir.path().join("root"), Confinement::Confined).unwrap();
        let mut s = Settings::new(dir.path().join("state"));
        settings(&mut s);
        let journal = Journal::open(s).unwrap();
        (dir, ws, journal)
    }

    /// Runs `command` (a closure standing for it) between the watch's two
    /// looks, in a recorded call; answers the call's record.
    fn watched(
        journal: &Arc<Journal>,
        watch: &CommandWatch,
        ws: &Workspace,
        command: impl FnOnce(),
    ) -> Option<CallRecord> {
        let scope = journal.begin("bash", "test", "local");
        let watching = watch.before(std::slice::from_ref(ws), None);
        command();
        if let Some(watching) = watching {
            watch.after(watching, std::slice::from_ref(ws), None);
        }
        let id = scope.finish().unwrap()?;
        journal.call(id).unwrap()
    }

    fn reasons(call: &CallRecord) -> Vec<(String, Option<String>)> {
        call.changes
            .iter()
            .map(|c| {
                (
                    c.change
                        .path
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                    c.change.not_undoable.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn off_looks_for_nothing_and_a_mode_change_alone_is_seen() {
        let (dir, ws, journal) = setup(|_| {});
        let file = dir.path().join("root/a");
        std::fs::write(&file, "a").unwrap();
        let off = CommandWatch::new(CommandMode::Off, 100);
        let call = watched(&journal, &off, &ws, || std::fs::write(&file, "b").unwrap());
        assert!(call.is_none());

        let detect = CommandWatch::new(CommandMode::Detect, 100);
        let call = watched(&journal, &detect, &ws, || {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        })
        .unwrap();
        assert_eq!(call.changes.len(), 1, "{call:?}");
        assert_eq!(call.changes[0].change.op, Op::Modify);
        assert_eq!(call.changes[0].change.after.as_ref().unwrap().mode, 0o600);
        assert!(call.changes[0].change.not_undoable.is_some());
    }

    #[test]
    fn a_file_under_two_roots_one_inside_the_other_is_recorded_once() {
        let (dir, outer, journal) = setup(|_| {});
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("inner/d")).unwrap();
        std::fs::write(root.join("inner/d/kept"), "k").unwrap();
        let inner = Workspace::open(root.join("inner"), Confinement::Confined).unwrap();
        let roots = [outer, inner];
        let detect = CommandWatch::new(CommandMode::Detect, 100);
        let scope = journal.begin("bash", "test", "local");
        let watching = detect.before(&roots, None).unwrap();
        std::fs::write(root.join("inner/d/new"), "n").unwrap();
        std::fs::write(root.join("inner/d/kept"), "changed").unwrap();
        detect.after(watching, &roots, None);
        let id = scope.finish().unwrap().unwrap();
        let call = journal.call(id).unwrap().unwrap();
        let mut seen: Vec<(PathBuf, Op)> = call
            .changes
            .iter()
            .map(|c| (c.change.path.clone(), c.change.op))
            .collect();
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            seen,
            vec![
                (root.join("inner/d/kept"), Op::Modify),
                (root.join("inner/d/new"), Op::Create),
            ],
            "{call:?}"
        );
    }

    #[test]
    fn directories_a_command_makes_or_removes_are_recorded_and_undone() {
        let (dir, ws, journal) = setup(|_| {});
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("old/inner")).unwrap();
        std::fs::write(root.join("old/inner/f"), "f\n").unwrap();
        let watch = CommandWatch::new(CommandMode::Baseline, 100);
        // A first command tops the baseline up.
        watched(&journal, &watch, &ws, || {});
        let call = watched(&journal, &watch, &ws, || {
            std::fs::remove_dir_all(root.join("old")).unwrap();
            std::fs::create_dir_all(root.join("new/sub")).unwrap();
        })
        .unwrap();
        let ops: Vec<(String, Op)> = call
            .changes
            .iter()
            .map(|c| {
                let rel = c.change.path.strip_prefix(&root).unwrap();
                (rel.display().to_string(), c.change.op)
            })
            .collect();
        assert_eq!(
            ops,
            [
                ("new".to_owned(), Op::Mkdir),
                ("new/sub".to_owned(), Op::Mkdir),
                ("old/inner/f".to_owned(), Op::Delete),
                ("old/inner".to_owned(), Op::Rmdir),
                ("old".to_owned(), Op::Rmdir),
            ]
        );
        let report = crate::undo::undo(
            &journal,
            std::slice::from_ref(&ws),
            &crate::undo::UndoRequest {
                call: Some(call.id),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(report.applied, "{report:?}");
        assert_eq!(
            std::fs::read_to_string(root.join("old/inner/f")).unwrap(),
            "f\n"
        );
        assert!(!root.join("new").exists());
    }

    #[test]
    fn files_past_the_baseline_room_or_the_file_cap_are_recorded_not_undoable() {
        // 64 bytes of content: the baseline gets half of it.
        let (dir, ws, journal) = setup(|s| {
            s.max_bytes = 64;
            s.max_file_bytes = 40;
        });
        let root = dir.path().join("root");
        std::fs::write(root.join("a"), [b'a'; 20]).unwrap();
        std::fs::write(root.join("b"), [b'b'; 20]).unwrap();
        std::fs::write(root.join("big"), [b'c'; 50]).unwrap();
        let watch = CommandWatch::new(CommandMode::Baseline, 100);
        let call = watched(&journal, &watch, &ws, || {
            for name in ["a", "b", "big"] {
                std::fs::write(root.join(name), "changed").unwrap();
            }
        })
        .unwrap();
        let mut got = reasons(&call);
        got.sort();
        // One of a and b fit in the 32 bytes, the other did not.
        let full: Vec<_> = got
            .iter()
            .filter(|(_, why)| {
                why.as_deref()
                    .is_some_and(|w| w.contains("baseline is full"))
            })
            .map(|(name, _)| name.as_str())
            .collect();
        assert_eq!(full.len(), 1, "{got:?}");
        assert!(got.iter().any(|(name, why)| name.as_str() != full[0]
            && name.as_str() != "big"
            && why.is_none()));
        let (_, big) = got.iter().find(|(name, _)| name == "big").unwrap();
        assert!(
            big.as_deref()
                .is_some_and(|w| w.contains("over the journal's cap")),
            "{got:?}"
        );
    }
}
