//! File stores: the trait the applier works through, a directory-backed
//! store and an in-memory one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use crate::error::ErrorKind;

/// Why a store operation failed.
///
/// Implementations outside this crate map their own failures onto these
/// variants; [`StoreError::from`] an [`io::Error`] already sorts "not found"
/// and "is a directory" into their own variants.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Nothing exists at the path.
    #[error("not found")]
    NotFound,
    /// The path exists but is not a regular file (e.g. a directory).
    #[error("not a regular file")]
    NotAFile,
    /// The path leaves the store's root (absolute, `..`, a symlink out).
    #[error("path escapes the root")]
    PathEscape,
    /// The file is larger than the store allows.
    #[error("file too large ({size} bytes; the limit is {limit})")]
    TooLarge {
        /// The file's size in bytes.
        size: u64,
        /// The store's limit in bytes.
        limit: u64,
    },
    /// The file has no write permission bit, and the store does not
    /// replace or delete such files.
    #[error("the file is read-only; not changed")]
    ReadOnly,
    /// Any other I/O failure.
    #[error("{0}")]
    Io(io::Error),
}

impl StoreError {
    /// The error class this maps to.
    pub fn kind(&self) -> ErrorKind {
        match self {
            StoreError::NotFound => ErrorKind::NotFound,
            StoreError::NotAFile => ErrorKind::NotAFile,
            StoreError::PathEscape => ErrorKind::PathEscape,
            StoreError::TooLarge { .. } => ErrorKind::TooLarge,
            StoreError::ReadOnly | StoreError::Io(_) => ErrorKind::Io,
        }
    }
}

impl From<io::Error> for StoreError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::NotFound => StoreError::NotFound,
            io::ErrorKind::IsADirectory | io::ErrorKind::NotADirectory => StoreError::NotAFile,
            _ => StoreError::Io(e),
        }
    }
}

/// Why [`FileStore::flush`] failed, and for which path.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct FlushError {
    /// The path whose write could not be completed.
    pub path: String,
    /// The store's error.
    #[source]
    pub source: StoreError,
}

/// A tree of files the applier reads and writes.
///
/// Paths are relative, `/`-separated, exactly as the patch names them after
/// the `a/`/`b/` prefixes are stripped. Implementations decide what a path
/// may be (and report [`StoreError::PathEscape`] or [`StoreError::TooLarge`]).
///
/// The applier first reads everything it needs through `&self`, and only
/// then writes; if a write fails it undoes the earlier ones through the same
/// methods.
pub trait FileStore {
    /// The whole content of the file at `path`.
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError>;

    /// Whether anything (file, directory, other) exists at `path`.
    fn exists(&self, path: &str) -> Result<bool, StoreError>;

    /// Replaces or creates the file at `path` with `data`, creating parent
    /// directories. An existing file keeps its permissions. Should be atomic.
    fn write(&mut self, path: &str, data: &[u8]) -> Result<(), StoreError>;

    /// Removes the file at `path`.
    fn remove(&mut self, path: &str) -> Result<(), StoreError>;

    /// Moves the file at `from` to `to` (which does not exist), keeping its
    /// bytes and, where the store has them, its permissions.
    ///
    /// The default reads, writes, copies the mode and removes.
    fn rename(&mut self, from: &str, to: &str) -> Result<(), StoreError> {
        let data = self.read(from)?;
        let mode = self.mode(from)?;
        self.write(to, &data)?;
        if let Some(mode) = mode {
            self.set_mode(to, mode)?;
        }
        self.remove(from)
    }

    /// The file's Unix permission bits (`0o7777` at most), or `None` when
    /// the store does not keep modes. The applier reads them to set or clear
    /// the executable bit for git mode changes, and to restore a deleted
    /// file's mode on rollback.
    ///
    /// The default returns `None`.
    fn mode(&self, path: &str) -> Result<Option<u32>, StoreError> {
        let _ = path;
        Ok(None)
    }

    /// Sets the file's permission bits. The default does nothing.
    fn set_mode(&mut self, path: &str, mode: u32) -> Result<(), StoreError> {
        let _ = (path, mode);
        Ok(())
    }

    /// Starts a batch: until [`FileStore::flush`], the store may hold
    /// writes back (e.g. write each to a temporary file without syncing or
    /// renaming it) so they can be made durable together. Reads, modes and
    /// existence must still see the held writes.
    ///
    /// The default does nothing: every write is complete when it returns.
    fn begin_batch(&mut self) {}

    /// Completes the writes held since [`FileStore::begin_batch`] and ends
    /// the batch. On an error, the writes not completed stay held (their
    /// targets unchanged) until the next write of the same path, a
    /// `flush`, or the store is dropped (which abandons them).
    ///
    /// The default does nothing.
    fn flush(&mut self) -> Result<(), FlushError> {
        Ok(())
    }

    /// Whether the applier may change the content of the file at `path`
    /// or delete it: [`StoreError::ReadOnly`] for a file the store protects.
    /// Asked for every file a patch modifies, deletes or renames with
    /// hunks, before anything is written.
    ///
    /// The default allows everything.
    fn check_writable(&self, path: &str) -> Result<(), StoreError> {
        let _ = path;
        Ok(())
    }
}

impl<S: FileStore + ?Sized> FileStore for &mut S {
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        (**self).read(path)
    }
    fn exists(&self, path: &str) -> Result<bool, StoreError> {
        (**self).exists(path)
    }
    fn write(&mut self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        (**self).write(path, data)
    }
    fn remove(&mut self, path: &str) -> Result<(), StoreError> {
        (**self).remove(path)
    }
    fn rename(&mut self, from: &str, to: &str) -> Result<(), StoreError> {
        (**self).rename(from, to)
    }
    fn mode(&self, path: &str) -> Result<Option<u32>, StoreError> {
        (**self).mode(path)
    }
    fn set_mode(&mut self, path: &str, mode: u32) -> Result<(), StoreError> {
        (**self).set_mode(path, mode)
    }
    fn check_writable(&self, path: &str) -> Result<(), StoreError> {
        (**self).check_writable(path)
    }
    fn begin_batch(&mut self) {
        (**self).begin_batch();
    }
    fn flush(&mut self) -> Result<(), FlushError> {
        (**self).flush()
    }
}

/// Checks that `path` is a plain relative path: not empty, not absolute,
/// no `..` components.
pub fn check_relative(path: &str) -> Result<(), StoreError> {
    if path.is_empty() {
        return Err(StoreError::NotFound);
    }
    for c in Path::new(path).components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(StoreError::PathEscape);
            }
        }
    }
    Ok(())
}

/// A store rooted at a directory on disk.
///
/// - Writes are atomic: a temporary file in the target's directory is
///   written, synced and renamed over the target; an existing target's
///   permissions are kept, a new file gets mode 0644 (on Unix).
/// - Parent directories of created files are created.
/// - Removing (or renaming away) the last file of a directory removes that
///   directory and any parents left empty, up to the root (as `git apply`
///   does).
/// - Permission bits are read and set on Unix; elsewhere modes are not
///   tracked.
///
/// Paths are checked with [`check_relative`] only: this store does not
/// defend against symlinks that lead out of the root. Wrap it (or implement
/// [`FileStore`] yourself) when that matters.
#[derive(Debug)]
pub struct DirStore {
    root: PathBuf,
    /// Whether writes are held until [`FileStore::flush`].
    batching: bool,
    /// Writes held in a batch: written to a temporary file beside the
    /// target, neither synced nor renamed yet.
    held: BTreeMap<String, HeldWrite>,
}

/// A write held in a batch.
#[derive(Debug)]
struct HeldWrite {
    full: PathBuf,
    temp: tempfile::NamedTempFile,
    /// Whether the target existed before the batch wrote it.
    existed: bool,
}

/// Most writes a batch should hold at once: past this a store commits the
/// held ones and the batch goes on, so a huge patch cannot run out of file
/// handles (each held write keeps its temporary file open).
pub const MAX_HELD_WRITES: usize = 256;

impl Clone for DirStore {
    /// A store on the same root, holding no writes.
    fn clone(&self) -> Self {
        DirStore::new(self.root.clone())
    }
}

impl DirStore {
    /// A store rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DirStore {
            root: root.into(),
            batching: false,
            held: BTreeMap::new(),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn resolve(&self, path: &str) -> Result<PathBuf, StoreError> {
        check_relative(path)?;
        Ok(self.root.join(path))
    }

    /// Writes `data` to a fresh temporary file beside `full` with the given
    /// permissions (or, for `None`, the target's, or 0644 for a new file).
    /// Returns the file and whether the target exists.
    fn write_temp(
        full: &Path,
        data: &[u8],
        permissions: Option<fs::Permissions>,
    ) -> Result<(tempfile::NamedTempFile, bool), StoreError> {
        let parent = full.parent().ok_or(StoreError::PathEscape)?;
        fs::create_dir_all(parent)?;
        let existing = match fs::metadata(full) {
            Ok(m) if m.is_dir() => return Err(StoreError::NotAFile),
            Ok(m) => Some(m.permissions()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        let existed = existing.is_some();
        let mut tmp = tempfile::Builder::new()
            .prefix(".patch-")
            .suffix(".tmp")
            .tempfile_in(parent)
            .map_err(StoreError::Io)?;
        tmp.write_all(data).map_err(StoreError::Io)?;
        match permissions.or(existing) {
            Some(p) => fs::set_permissions(tmp.path(), p).map_err(StoreError::Io)?,
            None => set_default_permissions(tmp.path())?,
        }
        Ok((tmp, existed))
    }

    /// Commits the held writes: syncs their temporary files together, then
    /// renames each into place, then syncs each distinct folder once. A
    /// write not yet renamed when an error occurs stays held.
    fn commit_held(&mut self) -> Result<(), FlushError> {
        let held: Vec<(&String, &HeldWrite)> = self.held.iter().collect();
        let files: Vec<&fs::File> = held.iter().map(|(_, w)| w.temp.as_file()).collect();
        if let Err((index, err)) = sync_all_parallel(&files) {
            return Err(FlushError {
                path: held[index].0.clone(),
                source: StoreError::Io(err),
            });
        }
        let mut folders = BTreeSet::new();
        let mut result = Ok(());
        while let Some((path, write)) = self.held.pop_first() {
            let HeldWrite {
                full,
                temp,
                existed,
            } = write;
            match temp.persist(&full) {
                Ok(_) => {
                    if let Some(parent) = full.parent() {
                        folders.insert(parent.to_path_buf());
                    }
                }
                Err(e) => {
                    let source = StoreError::Io(e.error);
                    self.held.insert(
                        path.clone(),
                        HeldWrite {
                            full,
                            temp: e.file,
                            existed,
                        },
                    );
                    result = Err(FlushError { path, source });
                    break;
                }
            }
        }
        // Best effort, as for a single write; the folders are synced
        // together too.
        let folders: Vec<fs::File> = folders
            .iter()
            .filter_map(|folder| fs::File::open(folder).ok())
            .collect();
        let _ = sync_all_parallel(&folders.iter().collect::<Vec<_>>());
        result
    }

    fn prune_empty_parents(&self, file: &Path) {
        let mut dir = file.parent();
        while let Some(d) = dir {
            if d == self.root || !d.starts_with(&self.root) || fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
}

impl FileStore for DirStore {
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        let full = self.resolve(path)?;
        if let Some(held) = self.held.get(path) {
            return Ok(fs::read(held.temp.path())?);
        }
        if fs::metadata(&full)?.is_dir() {
            return Err(StoreError::NotAFile);
        }
        Ok(fs::read(full)?)
    }

    fn exists(&self, path: &str) -> Result<bool, StoreError> {
        let full = self.resolve(path)?;
        if self.held.contains_key(path) {
            return Ok(true);
        }
        match fs::symlink_metadata(full) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn write(&mut self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        let full = self.resolve(path)?;
        let mut permissions = None;
        let mut existed = None;
        if let Some(held) = self.held.remove(path) {
            // Writing a held path again is a rollback putting back what was
            // there; when the file on disk still is exactly that, dropping
            // the held write is all it takes.
            if held.existed && fs::read(&held.full).is_ok_and(|on_disk| on_disk == data) {
                return Ok(());
            }
            permissions = Some(fs::metadata(held.temp.path())?.permissions());
            existed = Some(held.existed);
        }
        if !self.batching {
            let (tmp, _) = Self::write_temp(&full, data, permissions)?;
            tmp.as_file().sync_all().map_err(StoreError::Io)?;
            tmp.persist(&full).map_err(|e| StoreError::Io(e.error))?;
            if let Some(parent) = full.parent() {
                sync_dir(parent);
            }
            return Ok(());
        }
        if self.held.len() >= MAX_HELD_WRITES {
            self.commit_held().map_err(|e| e.source)?;
        }
        let (temp, exists_now) = Self::write_temp(&full, data, permissions)?;
        self.held.insert(
            path.to_owned(),
            HeldWrite {
                full,
                temp,
                existed: existed.unwrap_or(exists_now),
            },
        );
        Ok(())
    }

    fn remove(&mut self, path: &str) -> Result<(), StoreError> {
        let full = self.resolve(path)?;
        if let Some(held) = self.held.remove(path)
            && !held.existed
        {
            // A file the batch created and never committed: dropping the
            // write removes it; the folders made for it go too.
            drop(held);
            self.prune_empty_parents(&full);
            return Ok(());
        }
        if fs::symlink_metadata(&full)?.is_dir() {
            return Err(StoreError::NotAFile);
        }
        fs::remove_file(&full)?;
        if let Some(parent) = full.parent() {
            sync_dir(parent);
        }
        self.prune_empty_parents(&full);
        Ok(())
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), StoreError> {
        let src = self.resolve(from)?;
        let dst = self.resolve(to)?;
        if self.held.contains_key(from) || self.held.contains_key(to) {
            // Only a rollback moves a file the batch wrote: commit first.
            self.commit_held().map_err(|e| e.source)?;
        }
        if fs::symlink_metadata(&src)?.is_dir() {
            return Err(StoreError::NotAFile);
        }
        if fs::symlink_metadata(&dst).is_ok() {
            return Err(StoreError::Io(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{to} already exists"),
            )));
        }
        let parent = dst.parent().ok_or(StoreError::PathEscape)?;
        fs::create_dir_all(parent)?;
        fs::rename(&src, &dst)?;
        sync_dir(parent);
        self.prune_empty_parents(&src);
        Ok(())
    }

    fn mode(&self, path: &str) -> Result<Option<u32>, StoreError> {
        let full = self.resolve(path)?;
        let meta = match self.held.get(path) {
            Some(held) => fs::metadata(held.temp.path())?,
            None => fs::metadata(full)?,
        };
        Ok(permission_bits(&meta))
    }

    fn set_mode(&mut self, path: &str, mode: u32) -> Result<(), StoreError> {
        let full = self.resolve(path)?;
        match self.held.get(path) {
            // The mode arrives with the content, in the same rename.
            Some(held) => set_permission_bits(held.temp.path(), mode),
            None => set_permission_bits(&full, mode),
        }
    }

    fn begin_batch(&mut self) {
        self.batching = true;
    }

    fn flush(&mut self) -> Result<(), FlushError> {
        self.batching = false;
        self.commit_held()
    }
}

#[cfg(unix)]
fn permission_bits(meta: &fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    Some(meta.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn permission_bits(_meta: &fs::Metadata) -> Option<u32> {
    None
}

#[cfg(unix)]
fn set_permission_bits(full: &Path, mode: u32) -> Result<(), StoreError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(full, fs::Permissions::from_mode(mode & 0o7777))?;
    Ok(())
}

#[cfg(not(unix))]
fn set_permission_bits(_full: &Path, _mode: u32) -> Result<(), StoreError> {
    Ok(())
}

#[cfg(unix)]
fn set_default_permissions(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o644)).map_err(StoreError::Io)
}

#[cfg(not(unix))]
fn set_default_permissions(_path: &Path) -> Result<(), StoreError> {
    Ok(())
}

/// Most threads one batch syncs with. Each thread mostly waits in the
/// kernel for the disk, so more threads than cores pay off: the file
/// system folds concurrent syncs into one journal commit and one flush of
/// the device's cache.
const MAX_SYNC_THREADS: usize = 16;

/// Flushes every file to disk (`fsync`), several at once; returns the
/// index and error of a file that failed. The file tools' atomic writes
/// (`agent-tools-fs`) hold the same rule and say why it is shaped so; this
/// crate keeps its own copy for [`DirStore`] because it depends on nothing
/// else of the project, so it can be used alone.
pub(crate) fn sync_all_parallel(files: &[&fs::File]) -> Result<(), (usize, io::Error)> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Mutex, PoisonError};
    if files.len() <= 1 {
        return files
            .first()
            .map_or(Ok(()), |file| file.sync_all().map_err(|err| (0, err)));
    }
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<(usize, io::Error)>> = Mutex::new(None);
    let work = || {
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(file) = files.get(index) else {
                break;
            };
            if let Err(err) = file.sync_all() {
                let mut failed = failed.lock().unwrap_or_else(PoisonError::into_inner);
                failed.get_or_insert((index, err));
                break;
            }
        }
    };
    // The calling thread syncs too: one thread fewer to start (a start
    // waits for the process's memory map and, on a busy machine, for a
    // processor): with two files, one.
    std::thread::scope(|scope| {
        for _ in 1..files.len().min(MAX_SYNC_THREADS) {
            scope.spawn(work);
        }
        work();
    });
    match failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(failure) => Err(failure),
        None => Ok(()),
    }
}

/// Best-effort sync of a directory so a rename in it is durable.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// A store held in memory: file contents by path, plus the set of
/// executable paths (its modes are `0o755` for those, `0o644` otherwise).
///
/// A path is a directory when some file lives under it (`dir/file`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryStore {
    /// File contents by relative path.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Paths of files whose executable bit is set.
    pub executable: BTreeSet<String>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a file.
    pub fn insert(&mut self, path: impl Into<String>, data: impl Into<Vec<u8>>) {
        self.files.insert(path.into(), data.into());
    }

    /// The content of a file, if present.
    pub fn get(&self, path: &str) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    fn is_dir(&self, path: &str) -> bool {
        let prefix = format!("{path}/");
        self.files
            .range(prefix.clone()..)
            .next()
            .is_some_and(|(k, _)| k.starts_with(&prefix))
    }

    fn parent_is_file(&self, path: &str) -> bool {
        path.match_indices('/')
            .any(|(i, _)| self.files.contains_key(&path[..i]))
    }
}

impl<K: Into<String>, V: Into<Vec<u8>>> FromIterator<(K, V)> for MemoryStore {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(iter: T) -> Self {
        let mut store = MemoryStore::new();
        for (k, v) in iter {
            store.insert(k, v);
        }
        store
    }
}

impl FileStore for MemoryStore {
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        check_relative(path)?;
        match self.files.get(path) {
            Some(data) => Ok(data.clone()),
            None if self.is_dir(path) => Err(StoreError::NotAFile),
            None => Err(StoreError::NotFound),
        }
    }

    fn exists(&self, path: &str) -> Result<bool, StoreError> {
        check_relative(path)?;
        Ok(self.files.contains_key(path) || self.is_dir(path))
    }

    fn write(&mut self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        check_relative(path)?;
        if self.is_dir(path) || self.parent_is_file(path) {
            return Err(StoreError::NotAFile);
        }
        self.files.insert(path.to_owned(), data.to_vec());
        Ok(())
    }

    fn remove(&mut self, path: &str) -> Result<(), StoreError> {
        check_relative(path)?;
        match self.files.remove(path) {
            Some(_) => {
                self.executable.remove(path);
                Ok(())
            }
            None if self.is_dir(path) => Err(StoreError::NotAFile),
            None => Err(StoreError::NotFound),
        }
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), StoreError> {
        check_relative(to)?;
        let data = self.read(from)?;
        if self.exists(to)? {
            return Err(StoreError::Io(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{to} already exists"),
            )));
        }
        // As on a file system, nothing can be created beneath a file, the
        // file being moved included (`a` cannot become `a/b`).
        if self.parent_is_file(to) {
            return Err(StoreError::NotAFile);
        }
        let exec = self.executable.contains(from);
        self.remove(from)?;
        if let Err(e) = self.write(to, &data) {
            self.files.insert(from.to_owned(), data);
            if exec {
                self.executable.insert(from.to_owned());
            }
            return Err(e);
        }
        if exec {
            self.executable.insert(to.to_owned());
        }
        Ok(())
    }

    fn mode(&self, path: &str) -> Result<Option<u32>, StoreError> {
        check_relative(path)?;
        if !self.files.contains_key(path) {
            return Err(StoreError::NotFound);
        }
        Ok(Some(if self.executable.contains(path) {
            0o755
        } else {
            0o644
        }))
    }

    fn set_mode(&mut self, path: &str, mode: u32) -> Result<(), StoreError> {
        check_relative(path)?;
        if !self.files.contains_key(path) {
            return Err(StoreError::NotFound);
        }
        if mode & 0o111 != 0 {
            self.executable.insert(path.to_owned());
        } else {
            self.executable.remove(path);
        }
        Ok(())
    }
}
