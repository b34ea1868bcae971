//! Atomic replacement of a file's content.
//!
//! The new bytes go to a temporary file created beside the target, beneath the
//! parent directory's handle (so the kernel keeps every step inside the
//! workspace), then the temporary file is flushed to disk and renamed over the
//! target, and the directory is flushed so the rename itself survives a crash.
//! A reader, or a crash at any moment, sees either the old content or the new
//! content under the target's name, never a mix.
//!
//! Just before the rename the target is looked at once more and compared with
//! what the writer saw when it read it ([`Expected`]): a file that another
//! program replaced or changed meanwhile is not overwritten; the write fails
//! with a message saying so. A target that did not exist must still not exist
//! (the rename refuses to replace anything).
//!
//! The temporary file is named `.<name>.agent-tools.tmp.<pid>.<counter>` and is
//! removed on every error path. Only a process killed between creating it and
//! renaming it can leave one behind; the next write into that directory
//! removes the leftovers of processes that are gone (in a directory of more
//! than 1024 entries, the first write of a process and then one a minute).
//!
//! An existing target keeps its permission bits (set-user-ID and set-group-ID
//! cleared, as a write by anyone but the owner would), its extended attributes
//! (and so its ACLs) where the process may set them, and, where the process
//! may set it, its owner. Being a rename, the write gives the target a new
//! inode: hard links to the old file keep the old content.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use agent_tools_confine::{ConfinedPath, Workspace};
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use cap_std::fs::{Dir, Metadata, MetadataExt, OpenOptions, OpenOptionsExt};

use crate::journaled;

/// What marks a temporary file as this tool's: it follows the target's name
/// and precedes the writer's pid and a counter.
pub(crate) const TEMP_MARK: &str = ".agent-tools.tmp.";

/// Longest slice of the target's name kept in a temporary name, so the
/// temporary name stays under the usual 255-byte limit.
const MAX_NAME_IN_TEMP: usize = 160;

/// How many names to try when a temporary name is taken.
const CREATE_ATTEMPTS: u32 = 16;

/// A directory with more entries than this is swept at most once per
/// [`SWEEP_INTERVAL`] by one process, so writes into a huge directory do not
/// each pay for reading it whole; smaller ones are swept before every write.
const SWEEP_EVERY_WRITE_UP_TO: usize = 1024;

/// How often a large directory is swept.
const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// A leftover whose pid is alive is still removed once it is this old: the
/// pid then belongs to some other process (pids are reused), since no write
/// takes anywhere near that long.
const STALE_AFTER: Duration = Duration::from_secs(60 * 60);

/// Directories remembered as swept; the memory is cleared past this many.
const MAX_SWEPT_DIRS: usize = 4096;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Large directories (by device and inode) this process swept, and when.
static SWEPT: LazyLock<Mutex<HashMap<(u64, u64), Instant>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The name of a fresh temporary sibling of `name`.
pub(crate) fn temp_name(name: &OsStr) -> OsString {
    let lossy = name.to_string_lossy();
    let kept = agent_tools_text::truncate_utf8(&lossy, MAX_NAME_IN_TEMP);
    let counter = COUNTER.fetch_add(1, Ordering::Relaxed);
    OsString::from(format!(
        ".{kept}{TEMP_MARK}{}.{counter}",
        std::process::id()
    ))
}

/// The pid in a name of the form `temp_name` makes, `None` for any other
/// name. Every part is checked, so a user's file that merely looks alike
/// (another suffix, a letter in the number, no leading dot) is not taken
/// for a leftover.
pub(crate) fn leftover_pid(name: &OsStr) -> Option<i32> {
    let name = name.to_str()?;
    let rest = name.strip_prefix('.')?;
    let at = rest.rfind(TEMP_MARK)?;
    if at == 0 {
        return None;
    }
    let (pid, counter) = rest[at + TEMP_MARK.len()..].split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(counter) {
        return None;
    }
    pid.parse().ok().filter(|pid| *pid > 0)
}

/// Whether a process with this pid exists (one we may not signal exists too).
fn process_alive(pid: i32) -> bool {
    use nix::errno::Errno;
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    !matches!(kill(Pid::from_raw(pid), None), Err(Errno::ESRCH))
}

/// Removes temporary files that killed writers left in `dir`. Only names
/// of this tool's pattern are considered, only regular files, never this
/// process's own (another thread may be writing it), and only when their
/// process is gone or they are older than [`STALE_AFTER`]. Best effort:
/// failures are ignored, since a leftover harms nothing but tidiness.
pub(crate) fn sweep_leftovers(dir: &Dir) {
    let Ok(meta) = dir.dir_metadata() else {
        return;
    };
    let key = (meta.dev(), meta.ino());
    {
        let swept = SWEPT.lock().unwrap_or_else(PoisonError::into_inner);
        if swept
            .get(&key)
            .is_some_and(|at| at.elapsed() < SWEEP_INTERVAL)
        {
            return;
        }
    }
    let seen = sweep_now(dir);
    let mut swept = SWEPT.lock().unwrap_or_else(PoisonError::into_inner);
    if seen > SWEEP_EVERY_WRITE_UP_TO {
        if swept.len() >= MAX_SWEPT_DIRS {
            swept.clear();
        }
        swept.insert(key, Instant::now());
    } else {
        swept.remove(&key);
    }
}

/// Sweeps `dir` now; returns how many entries it holds.
fn sweep_now(dir: &Dir) -> usize {
    let Ok(entries) = dir.entries() else {
        return 0;
    };
    let own = i32::try_from(std::process::id()).unwrap_or(0);
    let mut seen = 0;
    for entry in entries.flatten() {
        seen += 1;
        let name = entry.file_name();
        let Some(pid) = leftover_pid(&name) else {
            continue;
        };
        if pid == own {
            continue;
        }
        let Ok(meta) = dir.symlink_metadata(&name) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let stale = meta
            .modified()
            .ok()
            .and_then(|modified| SystemTime::now().duration_since(modified.into_std()).ok())
            .is_some_and(|age| age > STALE_AFTER);
        if stale || !process_alive(pid) {
            let _ = dir.remove_file(&name);
        }
    }
    seen
}

/// What a writer saw of a file when it read it: enough to tell, just before
/// replacing it, whether anyone replaced or changed it since.
///
/// The identity is the device and inode (a replacement by rename gives a new
/// inode) plus the size and modification time (a change in place keeps the
/// inode). A change in place that keeps the size and lands within the same
/// tick of the filesystem's clock as the read cannot be told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl FileStamp {
    /// The stamp of metadata read through the workspace's handle.
    pub fn of(meta: &Metadata) -> FileStamp {
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        }
    }

    /// The stamp of metadata from an open file (`File::metadata`).
    pub fn of_std(meta: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt as _;
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        }
    }

    /// The modification time recorded.
    pub fn modified(&self) -> std::time::SystemTime {
        let nanos = u32::try_from(self.mtime_nsec).unwrap_or(0);
        match u64::try_from(self.mtime) {
            Ok(secs) => std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos),
            Err(_) => {
                std::time::UNIX_EPOCH - std::time::Duration::from_secs(self.mtime.unsigned_abs())
                    + std::time::Duration::from_nanos(u64::from(nanos))
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn default_for_tests() -> FileStamp {
        FileStamp {
            dev: 0,
            ino: 0,
            len: 0,
            mtime: 0,
            mtime_nsec: 0,
        }
    }

    /// Whether both name the same file (device and inode), whatever its
    /// content.
    pub fn same_file(&self, other: &FileStamp) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// What a replacement must find under the target's name just before it
/// renames its new content into place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// Nothing: the file is being created. Whatever appeared meanwhile is
    /// not replaced.
    Absent,
    /// The file as the writer read it.
    Same(FileStamp),
}

impl Expected {
    /// `Same` for metadata of an existing target, `Absent` for none.
    pub fn from_existing(existing: Option<&Metadata>) -> Expected {
        existing.map_or(Expected::Absent, |meta| Expected::Same(FileStamp::of(meta)))
    }
}

/// Removes the temporary file when dropped, unless it was renamed into place.
struct TempGuard<'a> {
    dir: &'a Dir,
    name: Option<OsString>,
}

impl TempGuard<'_> {
    fn name(&self) -> &OsStr {
        self.name.as_deref().unwrap_or_default()
    }

    fn disarm(&mut self) {
        self.name = None;
    }
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            // Best effort: the error that got us here is the one to report.
            let _ = self.dir.remove_file(name);
        }
    }
}

/// Replaces the content of `path` with the concatenation of `parts`.
///
/// `existing` is the target's metadata as the caller saw it before reading
/// it (its permissions and owner are carried over, and the target must be
/// unchanged since), `None` when the file is being created (it gets the
/// default mode, subject to the umask, and must still not exist).
pub(crate) fn replace(
    workspace: &Workspace,
    path: &ConfinedPath,
    parts: &[&[u8]],
    existing: Option<&Metadata>,
) -> ToolResult<()> {
    replace_expecting(
        workspace,
        path,
        parts,
        existing,
        Expected::from_existing(existing),
    )
    .map(drop)
}

/// [`replace`] with an explicit expectation; returns the stamp of the new
/// content, so a caller that may write the same path again (a patch rolling
/// back) can expect exactly what it wrote.
pub(crate) fn replace_expecting(
    workspace: &Workspace,
    path: &ConfinedPath,
    parts: &[&[u8]],
    existing: Option<&Metadata>,
    expected: Expected,
) -> ToolResult<FileStamp> {
    let (dir, name) = workspace.open_parent(path)?;
    let fail = |err: io::Error| workspace.io_error(&err, path);
    sweep_leftovers(&dir);

    let (temp, file) = create_temp(&dir, &name).map_err(fail)?;
    let mut guard = TempGuard {
        dir: &dir,
        name: Some(temp),
    };
    let mut file = file.into_std();
    if let Some(meta) = existing {
        carry_over(&dir, &name, &file, meta).map_err(fail)?;
    }
    for part in parts {
        file.write_all(part).map_err(fail)?;
    }
    // Flushing changes neither the inode, the size nor the modification
    // time: this is the stamp the file will have.
    let new_meta = file.metadata().map_err(fail)?;
    let stamp = FileStamp::of_std(&new_meta);

    // The change is announced to the journal before the content is
    // flushed, so the journal's files are flushed in the same round.
    let announcement = match agent_tools_journal::current() {
        Some(recorder) => {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = new_meta.permissions().mode() & 0o7777;
            let written = journaled::Written {
                temp: guard.name(),
                meta: &new_meta,
            };
            let change =
                journaled::replacement(&recorder, &dir, &name, path, parts, Some(written), mode)?;
            let announcement = recorder
                .announce(vec![change])
                .map_err(journaled::journal_error)?;
            Some((recorder, announcement))
        }
        None => None,
    };
    let mut files = vec![&file];
    if let Some((_, announcement)) = &announcement {
        files.extend(announcement.files());
    }
    if let Err((index, err)) = sync_all_parallel(&files) {
        return Err(match &announcement {
            Some((_, announcement)) if index > 0 => {
                journaled::journal_error(announcement.flush_failed(err))
            }
            _ => fail(err),
        });
    }
    drop(files);
    drop(file);
    let announced = announcement.map(|(recorder, announcement)| (recorder, announcement.confirm()));
    let renamed = check_unchanged(&dir, &name, path, expected).and_then(|()| match expected {
        Expected::Same(_) => dir.rename(guard.name(), &dir, &name).map_err(fail),
        Expected::Absent => rename_no_replace(&dir, guard.name(), &name)
            .map_err(|err| created_meanwhile(err, path).unwrap_or_else(fail)),
    });
    journaled::settle(announced, renamed)?;
    guard.disarm();
    drop(guard);

    // The content is in place; flushing the directory makes the rename
    // durable. The handle itself may be path-only, so open the directory
    // again, for reading, to flush it.
    sync_dir(&dir).map_err(|err| dir_sync_failed(path, &err))?;
    Ok(stamp)
}

/// The error for a target that changed on disk after the caller read it.
pub(crate) fn changed_on_disk(path: &ConfinedPath) -> ToolError {
    ToolError::new(
        ErrorCode::IoError,
        format!(
            "{path}: the file changed on disk since it was read (another program wrote it); nothing was written. Read it again and redo the change"
        ),
    )
}

fn created_on_disk(path: &ConfinedPath) -> ToolError {
    ToolError::new(
        ErrorCode::IoError,
        format!(
            "{path}: a file appeared at this path while the write was prepared (another program created it); nothing was written. Read it, then retry"
        ),
    )
}

fn created_meanwhile(err: io::Error, path: &ConfinedPath) -> Result<ToolError, io::Error> {
    if err.kind() == io::ErrorKind::AlreadyExists {
        Ok(created_on_disk(path))
    } else {
        Err(err)
    }
}

/// Compares what is under `name` now with what the writer expects.
pub(crate) fn check_unchanged(
    dir: &Dir,
    name: &OsStr,
    path: &ConfinedPath,
    expected: Expected,
) -> ToolResult<()> {
    let now = match dir.symlink_metadata(name) {
        Ok(meta) => Some(FileStamp::of(&meta)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => {
            return Err(ToolError::from_io(
                &err,
                std::path::Path::new(path.display()),
            ));
        }
    };
    match (expected, now) {
        (Expected::Absent, None) => Ok(()),
        (Expected::Absent, Some(_)) => Err(created_on_disk(path)),
        (Expected::Same(seen), Some(now)) if seen == now => Ok(()),
        (Expected::Same(_), _) => Err(changed_on_disk(path)),
    }
}

/// Renames `from` to `to` within `dir`, failing with `AlreadyExists` rather
/// than replacing an existing `to`. Both are single names (no `/`), so the
/// call cannot leave the directory.
fn rename_no_replace(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    use nix::errno::Errno;
    use nix::fcntl::{RenameFlags, renameat2};
    match renameat2(dir, from, dir, to, RenameFlags::RENAME_NOREPLACE) {
        Ok(()) => Ok(()),
        // A filesystem without the flag: the check just made is all there is.
        Err(Errno::EINVAL | Errno::ENOSYS | Errno::EOPNOTSUPP) => {
            if dir.symlink_metadata(to).is_ok() {
                return Err(io::Error::from(io::ErrorKind::AlreadyExists));
            }
            dir.rename(from, dir, to)
        }
        Err(errno) => Err(io::Error::from(errno)),
    }
}

/// Moves `from` to `to` (both inside the workspace) without replacing an
/// existing `to`, and only if `from` is still the file the caller saw.
pub fn rename_new(
    workspace: &Workspace,
    from: &ConfinedPath,
    to: &ConfinedPath,
    seen: Option<FileStamp>,
) -> ToolResult<()> {
    rename_new_between(workspace, from, workspace, to, seen)
}

/// [`rename_new`] from a path of one workspace to a path of another (two
/// allowed directories): each parent is opened beneath its own workspace's
/// handle (and checked against its fences), and one `renameat2` between
/// the two directory handles moves the entry, so the move is one atomic
/// step as within one workspace. Across filesystems the kernel refuses
/// (EXDEV): that is an `io_error` saying so, and nothing has moved.
pub fn rename_new_between(
    from_workspace: &Workspace,
    from: &ConfinedPath,
    to_workspace: &Workspace,
    to: &ConfinedPath,
    seen: Option<FileStamp>,
) -> ToolResult<()> {
    let (from_dir, from_name) = from_workspace.open_parent(from)?;
    let (to_dir, to_name) = to_workspace.open_parent(to)?;
    if let Some(seen) = seen {
        check_unchanged(&from_dir, &from_name, from, Expected::Same(seen))?;
    }
    let announced = match agent_tools_journal::current() {
        Some(recorder) => {
            let changes = journaled::move_changes(&recorder, &from_dir, &from_name, from, to)?;
            let tokens = journaled::announce(&recorder, changes)?;
            Some((recorder, tokens))
        }
        None => None,
    };
    journaled::settle(
        announced,
        move_entry(
            from_workspace,
            from,
            &from_dir,
            &from_name,
            to,
            &to_dir,
            &to_name,
        ),
    )
}

/// The rename of [`rename_new_between`], once announced.
fn move_entry(
    from_workspace: &Workspace,
    from: &ConfinedPath,
    from_dir: &Dir,
    from_name: &OsStr,
    to: &ConfinedPath,
    to_dir: &Dir,
    to_name: &OsStr,
) -> ToolResult<()> {
    use nix::errno::Errno;
    use nix::fcntl::{RenameFlags, renameat2};
    let result = match renameat2(
        from_dir,
        from_name,
        to_dir,
        to_name,
        RenameFlags::RENAME_NOREPLACE,
    ) {
        Ok(()) => Ok(()),
        Err(Errno::EINVAL | Errno::ENOSYS | Errno::EOPNOTSUPP) => {
            if to_dir.symlink_metadata(to_name).is_ok() {
                Err(io::Error::from(io::ErrorKind::AlreadyExists))
            } else {
                from_dir.rename(from_name, to_dir, to_name)
            }
        }
        Err(errno) => Err(io::Error::from(errno)),
    };
    result.map_err(|err| {
        if err.raw_os_error() == Some(Errno::EXDEV as i32) {
            return cross_device(
                agent_tools_confine::quote_os(from.abs().as_os_str()),
                agent_tools_confine::quote_os(to.abs().as_os_str()),
            );
        }
        created_meanwhile(err, to).unwrap_or_else(|err| from_workspace.io_error(&err, from))
    })?;
    let _ = sync_dir(to_dir);
    let _ = sync_dir(from_dir);
    Ok(())
}

/// The error for a move refused because `from` and `to` lie on different
/// filesystems (mounts): a rename cannot cross them, and a copy then a
/// delete would not be one atomic step, so nothing is moved. `from` and
/// `to` are the paths as the caller shows them.
pub fn cross_device(from: impl std::fmt::Display, to: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ErrorCode::IoError,
        format!(
            "{from} and {to} are on different filesystems; a move is one rename, which cannot \
             cross filesystems, so nothing was moved. Copy it instead (read it, write it at the \
             destination), then delete the source"
        ),
    )
}

/// Removes `path` only if it is still the file the caller saw.
pub fn remove_seen(
    workspace: &Workspace,
    path: &ConfinedPath,
    seen: Option<FileStamp>,
) -> ToolResult<()> {
    let (dir, name) = workspace.open_parent(path)?;
    if let Some(seen) = seen {
        check_unchanged(&dir, &name, path, Expected::Same(seen))?;
    }
    let announced = match agent_tools_journal::current() {
        Some(recorder) => {
            let meta = dir
                .symlink_metadata(&name)
                .map_err(|err| workspace.io_error(&err, path))?;
            let (before, reason) = journaled::image_of(&recorder, &dir, &name, &meta)?;
            let mut change = agent_tools_journal::Change::new(
                path.abs(),
                agent_tools_journal::Op::Delete,
                Some(before),
                None,
            );
            change.not_undoable = reason;
            Some((
                recorder.clone(),
                journaled::announce(&recorder, vec![change])?,
            ))
        }
        None => None,
    };
    journaled::settle(
        announced,
        dir.remove_file(&name)
            .map_err(|err| workspace.io_error(&err, path)),
    )?;
    let _ = sync_dir(&dir);
    Ok(())
}

/// Refuses to replace a file nobody may write to (mode without any write
/// bit): the rename would otherwise bypass the permission the file carries.
pub(crate) fn refuse_read_only(path: &ConfinedPath, meta: &Metadata) -> ToolResult<()> {
    if meta.permissions().readonly() {
        return Err(read_only(path));
    }
    Ok(())
}

/// The error for a file without any write permission bit.
pub fn read_only(path: &ConfinedPath) -> ToolError {
    ToolError::new(
        ErrorCode::IoError,
        format!("{path}: the file is read-only; not changed"),
    )
}

/// Opens `path` for reading without blocking (a FIFO swapped in after a
/// check cannot hang the open) and refuses anything but a regular file
/// (`not_a_file`). Returns the file and its metadata, taken from the open
/// file before any byte is read: the stamp a later replacement expects.
pub fn open_regular(
    workspace: &Workspace,
    path: &ConfinedPath,
) -> ToolResult<(std::fs::File, std::fs::Metadata)> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
    let rel = if path.rel().as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        path.rel()
    };
    let file = workspace
        .base_dir()
        .open_with(rel, &options)
        .map_err(|err| workspace.io_error(&err, path))?
        .into_std();
    let meta = file
        .metadata()
        .map_err(|err| workspace.io_error(&err, path))?;
    if meta.is_dir() {
        return Err(ToolError::new(
            ErrorCode::NotAFile,
            format!("{path}: is a directory"),
        ));
    }
    if !meta.is_file() {
        return Err(ToolError::new(
            ErrorCode::NotAFile,
            format!("{path}: is not a regular file"),
        ));
    }
    Ok((file, meta))
}

fn sync_dir(dir: &Dir) -> io::Result<()> {
    open_for_sync(dir)?.sync_all()
}

/// The directory opened for reading: its handle may be path-only, which
/// cannot be flushed.
fn open_for_sync(dir: &Dir) -> io::Result<std::fs::File> {
    let mut options = OpenOptions::new();
    options.read(true);
    Ok(dir.open_with(".", &options)?.into_std())
}

fn create_temp(dir: &Dir, name: &OsStr) -> io::Result<(OsString, cap_std::fs::File)> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let mut last = None;
    for _ in 0..CREATE_ATTEMPTS {
        let temp = temp_name(name);
        match dir.open_with(&temp, &options) {
            Ok(file) => return Ok((temp, file)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
}

/// The permission bits a replacement keeps: set-user-ID and set-group-ID
/// are cleared (as the kernel clears them when anyone but a privileged
/// owner writes the file), everything else stays.
pub(crate) fn kept_mode(mode: u32) -> u32 {
    mode & 0o1777
}

/// Extended attributes not carried over: the security namespace holds
/// labels the system assigns itself and file capabilities, which a write
/// clears (as it clears set-user-ID).
fn carried_xattr(name: &OsStr) -> bool {
    !name.as_encoded_bytes().starts_with(b"security.")
}

/// Gives the temporary file the target's extended attributes, owner and
/// permissions.
fn carry_over(dir: &Dir, name: &OsStr, file: &std::fs::File, meta: &Metadata) -> io::Result<()> {
    use cap_std::fs::PermissionsExt;
    use std::os::unix::fs::PermissionsExt as _;

    copy_xattrs(dir, name, file)?;
    // Owner before mode: changing the owner may clear permission bits,
    // which the mode below then sets again.
    let current = file.metadata()?;
    {
        use std::os::unix::fs::MetadataExt as _;
        if current.uid() != meta.uid() || current.gid() != meta.gid() {
            // Only a privileged process may give a file away; otherwise
            // keeping our own ownership is the best we can do.
            let _ = std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()));
        }
    }
    let mode = kept_mode(meta.permissions().mode());
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

/// Copies the target's extended attributes (user attributes, and the
/// system ones that hold ACLs) to the temporary file. A target that cannot
/// be opened for reading, or a filesystem without extended attributes, has
/// none to copy; an attribute that exists but cannot be set fails the write,
/// so nothing is lost silently.
fn copy_xattrs(dir: &Dir, name: &OsStr, file: &std::fs::File) -> io::Result<()> {
    use xattr::FileExt;
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags((nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_NOFOLLOW).bits());
    let Ok(target) = dir.open_with(name, &options) else {
        return Ok(());
    };
    let target = target.into_std();
    let Ok(names) = target.list_xattr() else {
        return Ok(());
    };
    for attr in names.filter(|attr| carried_xattr(attr)) {
        let Some(value) = target.get_xattr(&attr)? else {
            continue;
        };
        file.set_xattr(&attr, &value).map_err(|err| {
            io::Error::new(
                err.kind(),
                format!(
                    "could not carry over the extended attribute {}: {err}",
                    attr.to_string_lossy()
                ),
            )
        })?;
    }
    Ok(())
}

/// Most threads one batch syncs with. Each thread mostly waits in the
/// kernel for the disk, so more threads than cores pay off: the file
/// system folds concurrent syncs into one journal commit and one flush of
/// the device's cache.
const MAX_SYNC_THREADS: usize = 16;

/// Flushes every file to disk (`fsync`), several at once; returns the
/// index and error of a file that failed.
///
/// `fsync` rather than `fdatasync`: these files were just written whole,
/// so their size changed and `fdatasync` would flush the inode as well.
/// `sync_file_range` flushes neither the inode nor the device's cache, so
/// it makes nothing durable. The home of this rule for every write of the
/// tools, patches included. The calling thread flushes too; the others
/// are threads kept between rounds.
pub fn sync_all_parallel(files: &[&std::fs::File]) -> Result<(), (usize, io::Error)> {
    if files.len() <= 1 {
        return files
            .first()
            .map_or(Ok(()), |file| file.sync_all().map_err(|err| (0, err)));
    }
    // The helpers get their own descriptors of the files (a `dup` each, a
    // fraction of a microsecond): a round may end before a helper that was
    // asked too late even starts, and it must not hold the caller's.
    let mut owned = Vec::with_capacity(files.len());
    for (index, file) in files.iter().enumerate() {
        owned.push(file.try_clone().map_err(|err| (index, err))?);
    }
    let round = Arc::new(SyncRound {
        files: owned,
        next: AtomicUsize::new(0),
        failed: Mutex::new(None),
        state: Mutex::new(RoundState::default()),
        left: Condvar::new(),
    });
    SyncPool::get().help(&round, files.len().min(MAX_SYNC_THREADS) - 1);
    round.work();
    // Closed: a helper that starts from now on finds nothing to do. Only
    // those already at work are waited for (one busy with another round's
    // slow flush must not hold this one).
    let mut state = round.state.lock().unwrap_or_else(PoisonError::into_inner);
    state.closed = true;
    while state.working > 0 {
        state = round
            .left
            .wait(state)
            .unwrap_or_else(PoisonError::into_inner);
    }
    drop(state);
    match round
        .failed
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    {
        Some(failure) => Err(failure),
        None => Ok(()),
    }
}

/// One round of [`sync_all_parallel`]: its files, the index of the next to
/// flush, the first failure, and who is working on it.
struct SyncRound {
    files: Vec<std::fs::File>,
    next: AtomicUsize,
    failed: Mutex<Option<(usize, io::Error)>>,
    state: Mutex<RoundState>,
    left: Condvar,
}

#[derive(Default)]
struct RoundState {
    /// Helpers flushing now.
    working: usize,
    /// The caller has done its share and waits: no helper joins any more.
    closed: bool,
}

impl SyncRound {
    /// Flushes files until none is left or one fails.
    fn work(&self) {
        loop {
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(file) = self.files.get(index) else {
                break;
            };
            if let Err(err) = file.sync_all() {
                let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
                failed.get_or_insert((index, err));
                // The others stop too: the round has failed.
                self.next.store(self.files.len(), Ordering::Relaxed);
                break;
            }
        }
    }

    /// A helper's share: nothing if the round is closed.
    fn help(&self) {
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.closed {
                return;
            }
            state.working += 1;
        }
        self.work();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.working -= 1;
        if state.working == 0 {
            self.left.notify_all();
        }
    }
}

/// The threads that help flush: kept between rounds, since starting a
/// thread for each file of each round cost more than the flushes it
/// overlapped on a busy machine (about 25 µs a thread; 240 µs for nine).
/// Grown on demand up to [`MAX_SYNC_THREADS`] − 1, then kept idle, blocked
/// on the queue. Hand-written rather than taken from a crate: a general
/// pool sizes itself by processors, and flushes want threads that wait on
/// the disk, more of them than there are processors.
struct SyncPool {
    queue: Mutex<std::sync::mpsc::Sender<Arc<SyncRound>>>,
    jobs: Arc<Mutex<std::sync::mpsc::Receiver<Arc<SyncRound>>>>,
    threads: AtomicUsize,
}

impl SyncPool {
    fn get() -> &'static SyncPool {
        static POOL: LazyLock<SyncPool> = LazyLock::new(|| {
            let (queue, jobs) = std::sync::mpsc::channel();
            SyncPool {
                queue: Mutex::new(queue),
                jobs: Arc::new(Mutex::new(jobs)),
                threads: AtomicUsize::new(0),
            }
        });
        &POOL
    }

    /// Asks `helpers` threads to join `round`, starting threads while the
    /// pool has fewer than that.
    fn help(&self, round: &Arc<SyncRound>, helpers: usize) {
        loop {
            // Counted before it starts, so two rounds at once cannot both
            // start the last thread the bound allows.
            if self.threads.fetch_add(1, Ordering::Relaxed) >= helpers {
                self.threads.fetch_sub(1, Ordering::Relaxed);
                break;
            }
            let jobs = Arc::clone(&self.jobs);
            let started = std::thread::Builder::new()
                .name("sync-files".into())
                .spawn(move || {
                    loop {
                        let job = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
                        match job {
                            Ok(round) => round.help(),
                            Err(_) => break,
                        }
                    }
                });
            if started.is_err() {
                // No thread to be had: the ones there are (and the caller)
                // do the work.
                self.threads.fetch_sub(1, Ordering::Relaxed);
                break;
            }
        }
        let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        for _ in 0..helpers {
            if queue.send(Arc::clone(round)).is_err() {
                break;
            }
        }
    }
}

/// A replacement written to its temporary file but not yet synced nor
/// renamed into place: the first half of `replace_expecting`, for callers
/// that change many files at once and want to sync them together
/// ([`commit_staged`]). Dropping it removes the temporary file, leaving the
/// target as it was.
#[derive(Debug)]
pub struct StagedWrite {
    dir: Dir,
    name: OsString,
    temp: Option<OsString>,
    file: std::fs::File,
    path: ConfinedPath,
    expected: Expected,
    stamp: FileStamp,
    /// The change to announce to the undo journal at commit, when the call
    /// is recorded, and its token once announced.
    journal: Option<(agent_tools_journal::Recorder, agent_tools_journal::Change)>,
    token: Option<agent_tools_journal::Token>,
}

impl StagedWrite {
    /// The stamp the target will have once the write is committed.
    pub fn stamp(&self) -> FileStamp {
        self.stamp
    }

    /// What the target must still be when the write is committed.
    pub fn expected(&self) -> Expected {
        self.expected
    }

    /// The target's path.
    pub fn path(&self) -> &ConfinedPath {
        &self.path
    }

    /// The new content's permission bits.
    pub fn mode(&self) -> io::Result<u32> {
        use std::os::unix::fs::PermissionsExt;
        Ok(self.file.metadata()?.permissions().mode() & 0o7777)
    }

    /// Sets the new content's permission bits; they arrive with the rename.
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        self.file
            .set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
    }

    /// The new content, read back from the temporary file.
    pub fn read(&self) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let temp = self.temp.as_deref().unwrap_or_default();
        let mut data = Vec::new();
        self.dir.open(temp)?.into_std().read_to_end(&mut data)?;
        Ok(data)
    }
}

impl Drop for StagedWrite {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            // Best effort: the write is abandoned, the target untouched.
            let _ = self.dir.remove_file(temp);
        }
    }
}

/// Writes `data` to a temporary file beside `path`, carrying over the
/// target's permissions, owner and extended attributes, without syncing or
/// renaming it: see [`StagedWrite`] and [`commit_staged`].
pub fn stage_replace(
    workspace: &Workspace,
    path: &ConfinedPath,
    data: &[u8],
    expected: Expected,
) -> ToolResult<StagedWrite> {
    let existing = match workspace.symlink_metadata(path) {
        Ok(meta) => Some(meta),
        Err(err) if err.code() == ErrorCode::NotFound => None,
        Err(err) => return Err(err),
    };
    let (dir, name) = workspace.open_parent(path)?;
    let fail = |err: io::Error| workspace.io_error(&err, path);
    sweep_leftovers(&dir);
    let (temp, file) = create_temp(&dir, &name).map_err(fail)?;
    let mut staged = StagedWrite {
        file: file.into_std(),
        dir,
        name,
        temp: Some(temp),
        path: path.clone(),
        expected,
        stamp: FileStamp {
            dev: 0,
            ino: 0,
            len: 0,
            mtime: 0,
            mtime_nsec: 0,
        },
        journal: None,
        token: None,
    };
    if let Some(meta) = &existing {
        carry_over(&staged.dir, &staged.name, &staged.file, meta).map_err(fail)?;
    }
    staged.file.write_all(data).map_err(fail)?;
    if let Some(recorder) = agent_tools_journal::current() {
        let mode = staged.mode().map_err(fail)?;
        let meta = staged.file.metadata().map_err(fail)?;
        let written = staged
            .temp
            .as_deref()
            .map(|temp| journaled::Written { temp, meta: &meta });
        let change = journaled::replacement(
            &recorder,
            &staged.dir,
            &staged.name,
            path,
            &[data],
            written,
            mode,
        )?;
        staged.journal = Some((recorder, change));
    }
    // Syncing and renaming change neither the inode, the size nor the
    // modification time: this is the stamp the committed file will have.
    staged.stamp = FileStamp::of_std(&staged.file.metadata().map_err(fail)?);
    Ok(staged)
}

/// Commits staged writes: syncs every temporary file (together, see
/// [`sync_all_parallel`]), then, each target checked as `replace` checks
/// it, renames each into place, then syncs each distinct directory once.
///
/// A rename happens only after every temporary file is on disk, and a
/// directory is synced after the renames into it, so a crash at any moment
/// leaves each target old or new, never partial. Committed writes leave
/// `batch`; on an error the writes not yet renamed stay in it (their
/// targets untouched), to be committed again or dropped.
pub fn commit_staged(batch: &mut Vec<StagedWrite>) -> ToolResult<()> {
    // Every change announced to the journal at once, its files flushed in
    // the same round as the contents, before the first rename.
    let unannounced: Vec<usize> = (0..batch.len())
        .filter(|&at| batch[at].journal.is_some() && batch[at].token.is_none())
        .collect();
    let announcement = match unannounced
        .first()
        .and_then(|&at| batch[at].journal.as_ref())
    {
        Some((recorder, _)) => {
            let changes = unannounced
                .iter()
                .filter_map(|&at| batch[at].journal.as_ref().map(|(_, change)| change.clone()))
                .collect();
            Some(
                recorder
                    .announce(changes)
                    .map_err(journaled::journal_error)?,
            )
        }
        None => None,
    };
    let mut files: Vec<&std::fs::File> = batch.iter().map(|staged| &staged.file).collect();
    if let Some(announcement) = &announcement {
        files.extend(announcement.files());
    }
    if let Err((index, err)) = sync_all_parallel(&files) {
        return Err(match batch.get(index) {
            Some(staged) => ToolError::from_io(&err, std::path::Path::new(staged.path.display())),
            None => match &announcement {
                Some(announcement) => journaled::journal_error(announcement.flush_failed(err)),
                None => ToolError::from_io(&err, std::path::Path::new("")),
            },
        });
    }
    drop(files);
    if let Some(announcement) = announcement {
        for (&at, token) in unannounced.iter().zip(announcement.confirm()) {
            batch[at].token = Some(token);
        }
    }
    let mut renamed: Vec<StagedWrite> = Vec::with_capacity(batch.len());
    let mut result = Ok(());
    while let Some(mut staged) = batch.pop() {
        if let Err(err) = rename_staged(&mut staged) {
            batch.push(staged);
            result = Err(err);
            break;
        }
        if let (Some((recorder, _)), Some(token)) = (&staged.journal, staged.token) {
            recorder.done(token);
        }
        renamed.push(staged);
    }
    // Writes left in the batch were not made: withdrawn, to be announced
    // again if committed again.
    for staged in batch.iter_mut() {
        if let (Some((recorder, _)), Some(token)) = (&staged.journal, staged.token.take()) {
            recorder.abort(token);
        }
    }
    // Each directory once, even when the renames failed part-way: what was
    // renamed is made durable either way.
    // The directories are synced together as well.
    let mut seen: Vec<(u64, u64)> = Vec::new();
    let mut dirs: Vec<(&ConfinedPath, std::fs::File)> = Vec::new();
    for staged in &renamed {
        let key = staged
            .dir
            .dir_metadata()
            .map(|meta| (meta.dev(), meta.ino()))
            .ok();
        if key.is_some_and(|key| seen.contains(&key)) {
            continue;
        }
        seen.extend(key);
        match open_for_sync(&staged.dir) {
            Ok(dir) => dirs.push((&staged.path, dir)),
            Err(err) => result = result.and(Err(dir_sync_failed(&staged.path, &err))),
        }
    }
    let files: Vec<&std::fs::File> = dirs.iter().map(|(_, dir)| dir).collect();
    if let Err((index, err)) = sync_all_parallel(&files) {
        result = result.and(Err(dir_sync_failed(dirs[index].0, &err)));
    }
    result
}

fn rename_staged(staged: &mut StagedWrite) -> ToolResult<()> {
    let path = &staged.path;
    let temp = staged.temp.as_deref().unwrap_or_default();
    check_unchanged(&staged.dir, &staged.name, path, staged.expected)?;
    let renamed = match staged.expected {
        Expected::Same(_) => staged.dir.rename(temp, &staged.dir, &staged.name),
        Expected::Absent => rename_no_replace(&staged.dir, temp, &staged.name),
    };
    renamed.map_err(|err| {
        created_meanwhile(err, path)
            .unwrap_or_else(|err| ToolError::from_io(&err, std::path::Path::new(path.display())))
    })?;
    staged.temp = None;
    Ok(())
}

fn dir_sync_failed(path: &ConfinedPath, err: &io::Error) -> ToolError {
    ToolError::new(
        ErrorCode::IoError,
        format!(
            "{path}: the new content was written, but flushing its directory to disk failed: {err}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syncing_together_names_the_file_that_failed() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let mut files = Vec::new();
        for at in 0..3 {
            files.push(std::fs::File::create(dir.path().join(at.to_string()))?);
        }
        // A pipe cannot be synced (EINVAL).
        let (reader, _writer) = std::io::pipe()?;
        let pipe = std::fs::File::from(std::os::fd::OwnedFd::from(reader));
        let all: Vec<&std::fs::File> = files.iter().collect();
        assert!(sync_all_parallel(&all).is_ok());
        for at in 0..=files.len() {
            let mut some: Vec<&std::fs::File> = files.iter().collect();
            some.insert(at, &pipe);
            let failed = sync_all_parallel(&some).map_err(|(index, _)| index);
            assert_eq!(failed, Err(at));
        }
        Ok(())
    }

    /// Rounds from many threads at once share the kept threads: each ends,
    /// with its own outcome (the pipe fails only the rounds that hold it),
    /// and the pool never holds more threads than one round may use.
    #[test]
    fn rounds_at_once_share_the_kept_threads_and_keep_their_outcomes() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let mut files = Vec::new();
        for at in 0..40 {
            files.push(std::fs::File::create(dir.path().join(at.to_string()))?);
        }
        let (reader, _writer) = std::io::pipe()?;
        let pipe = std::fs::File::from(std::os::fd::OwnedFd::from(reader));
        std::thread::scope(|scope| {
            for caller in 0..12 {
                let (files, pipe) = (&files, &pipe);
                scope.spawn(move || {
                    for round in 0..5 {
                        let take = 2 + (caller * 7 + round * 3) % 30;
                        let mut some: Vec<&std::fs::File> = files.iter().take(take).collect();
                        if caller % 3 == 0 {
                            some.insert(take / 2, pipe);
                            let failed = sync_all_parallel(&some).map_err(|(index, _)| index);
                            assert_eq!(failed, Err(take / 2));
                        } else {
                            assert!(sync_all_parallel(&some).is_ok());
                        }
                    }
                });
            }
        });
        assert!(SyncPool::get().threads.load(Ordering::Relaxed) < MAX_SYNC_THREADS);
        Ok(())
    }

    #[test]
    fn temp_names_are_hidden_unique_bounded_and_recognised() {
        let a = temp_name(OsStr::new("main.rs"));
        let b = temp_name(OsStr::new("main.rs"));
        assert_ne!(a, b);
        assert_eq!(leftover_pid(&a), i32::try_from(std::process::id()).ok());
        let a = a.to_string_lossy().into_owned();
        assert!(a.starts_with(".main.rs.agent-tools.tmp."), "{a}");
        let long = "x".repeat(300);
        let long = temp_name(OsStr::new(&long));
        assert!(long.len() < 255);
        assert!(leftover_pid(&long).is_some());
    }

    #[test]
    fn only_the_exact_pattern_is_a_leftover() {
        for name in [
            "main.rs.agent-tools.tmp.12.3",    // no leading dot
            ".main.rs.agent-tools.tmp.12",     // no counter
            ".main.rs.agent-tools.tmp.12.3.4", // one part too many
            ".main.rs.agent-tools.tmp.1x.3",   // not a number
            ".main.rs.agent-tools.tmp..3",     // empty pid
            ".main.rs.agent-tools.tmp.0.3",    // pid 0
            ".agent-tools.tmp.12.3",           // no target name
            ".main.rs.tmp.12.3",               // the old pattern
            ".main.rs.agent-tools.temp.12.3",
            ".main.rs.agent-tools.tmp.99999999999.3", // not a pid
        ] {
            assert_eq!(leftover_pid(OsStr::new(name)), None, "{name}");
        }
        assert_eq!(
            leftover_pid(OsStr::new(".a.agent-tools.tmp.agent-tools.tmp.12.3")),
            Some(12)
        );
    }

    #[test]
    fn set_id_bits_are_cleared_and_the_rest_kept() {
        assert_eq!(kept_mode(0o104755), 0o755);
        assert_eq!(kept_mode(0o2644), 0o644);
        assert_eq!(kept_mode(0o1777), 0o1777);
        assert_eq!(kept_mode(0o600), 0o600);
    }
}
