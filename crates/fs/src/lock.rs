//! Write locks, so two edits of one file never interleave their
//! read-modify-write and lose an update: per-path locks within this process,
//! and advisory file locks across processes.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use agent_tools_confine::{ConfinedPath, Workspace};
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use cap_std::fs::{OpenOptions, OpenOptionsExt};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// A map from path to a lock that lives as long as someone holds it; entries
/// whose lock is gone are swept as the map grows.
#[derive(Debug, Default)]
pub(crate) struct PathLocks {
    locks: Mutex<HashMap<PathBuf, Weak<Mutex<()>>>>,
}

impl PathLocks {
    /// The lock for `path`, shared with every other caller holding it now.
    pub(crate) fn lock_for(&self, path: &Path) -> Arc<Mutex<()>> {
        let mut map = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(existing) = map.get(path).and_then(Weak::upgrade) {
            return existing;
        }
        if map.len() >= 1024 {
            map.retain(|_, weak| weak.strong_count() > 0);
        }
        let lock = Arc::new(Mutex::new(()));
        map.insert(path.to_path_buf(), Arc::downgrade(&lock));
        lock
    }
}

/// How long a writer waits for another process's lock on a file before
/// giving up with an error (so a stuck process cannot hang every call).
pub(crate) const FILE_LOCK_WAIT: Duration = Duration::from_secs(10);

/// Cross-process advisory locks (`flock`) on files about to be rewritten,
/// held until dropped.
///
/// Every writer of agent-tools, in any process, takes the lock of a file's
/// current inode before reading it and keeps it until its replacement is
/// renamed into place. Since a replacement is a new inode, a writer that
/// waited on the old inode finds, once it gets the lock, that the path names
/// another file now; it then locks that one instead. Programs that do not
/// take the lock are not held back; the check before the rename (see
/// [`crate::atomic::Expected`]) catches their changes.
///
/// Each file stays open while held, locked or not (on a filesystem without
/// `flock`): an open file's inode cannot be freed, so its number cannot be
/// given to a new file meanwhile and fool the check before the rename.
#[derive(Debug, Default)]
pub struct FileLocks {
    held: Vec<(Held, (u64, u64))>,
}

#[derive(Debug)]
enum Held {
    Locked(#[allow(dead_code)] Flock<std::fs::File>),
    Open(#[allow(dead_code)] std::fs::File),
}

impl FileLocks {
    /// How many files are locked (files that did not exist, or that could
    /// not be locked on their filesystem, are not counted).
    pub fn len(&self) -> usize {
        self.held
            .iter()
            .filter(|(held, _)| matches!(held, Held::Locked(_)))
            .count()
    }

    /// Whether no file is locked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Locks `path`'s current file too, waiting up to `wait` for another
    /// process to release it.
    pub(crate) fn add(
        &mut self,
        workspace: &Workspace,
        path: &ConfinedPath,
        wait: Duration,
    ) -> ToolResult<()> {
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(1);
        loop {
            let Some(file) = open_for_lock(workspace, path) else {
                return Ok(());
            };
            let Ok(meta) = file.metadata() else {
                return Ok(());
            };
            let id = (meta.dev(), meta.ino());
            if !meta.is_file() || self.held.iter().any(|(_, held)| *held == id) {
                // Not a file a writer would replace, or a hard link to one
                // already held (locking it again would wait on ourselves).
                return Ok(());
            }
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(lock) => {
                    if names_inode(workspace, path, id) {
                        self.held.push((Held::Locked(lock), id));
                        return Ok(());
                    }
                    // Replaced while we waited: lock what the path names now.
                    if Instant::now() >= deadline {
                        return Err(waited_too_long(path, wait));
                    }
                }
                Err((_, Errno::EWOULDBLOCK)) => {
                    if Instant::now() >= deadline {
                        return Err(waited_too_long(path, wait));
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                // A filesystem without flock (some network ones): writers
                // are not coordinated there, and the check before the rename
                // is all the protection there is.
                Err((file, Errno::ENOLCK | Errno::EOPNOTSUPP | Errno::EINVAL)) => {
                    self.held.push((Held::Open(file), id));
                    return Ok(());
                }
                Err((_, errno)) => {
                    return Err(workspace.io_error(&std::io::Error::from(errno), path));
                }
            }
        }
    }
}

/// The error for a file another process kept locked (or kept replacing)
/// for longer than a writer waits.
fn waited_too_long(path: &ConfinedPath, wait: Duration) -> ToolError {
    ToolError::new(
        ErrorCode::IoError,
        format!(
            "{path}: another process has been writing this file for over {} ms; nothing was changed. Try again later",
            wait.as_millis()
        ),
    )
}

/// Opens a file only to lock it: for reading, or for writing when reading
/// is not allowed, never blocking (a FIFO does not hang the open). `None`
/// when nothing can be opened there: nothing to lock, and the writer itself
/// reports what is wrong with the path.
fn open_for_lock(workspace: &Workspace, path: &ConfinedPath) -> Option<std::fs::File> {
    let rel = if path.rel().as_os_str().is_empty() {
        Path::new(".")
    } else {
        path.rel()
    };
    let nonblock = nix::fcntl::OFlag::O_NONBLOCK.bits();
    let mut read = OpenOptions::new();
    read.read(true).custom_flags(nonblock);
    let mut write = OpenOptions::new();
    write.write(true).custom_flags(nonblock);
    let dir = workspace.base_dir();
    dir.open_with(rel, &read)
        .or_else(|_| dir.open_with(rel, &write))
        .ok()
        .map(cap_std::fs::File::into_std)
}

/// Whether `path` still names the file with this device and inode.
fn names_inode(workspace: &Workspace, path: &ConfinedPath, id: (u64, u64)) -> bool {
    use cap_std::fs::MetadataExt as _;
    workspace
        .metadata(path)
        .is_ok_and(|meta| (meta.dev(), meta.ino()) == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_path_shares_a_lock_and_dead_entries_are_swept() {
        let locks = PathLocks::default();
        let a = locks.lock_for(Path::new("a"));
        let b = locks.lock_for(Path::new("a"));
        assert!(Arc::ptr_eq(&a, &b));
        let c = locks.lock_for(Path::new("c"));
        assert!(!Arc::ptr_eq(&a, &c));
        drop((a, b, c));
        for i in 0..2000 {
            let _held = locks.lock_for(Path::new(&format!("f{i}")));
        }
        assert!(locks.locks.lock().unwrap().len() <= 1025);
    }

    #[test]
    fn a_lock_held_too_long_by_another_process_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "x").unwrap();
        let ws = Workspace::open(dir.path(), agent_tools_confine::Confinement::Confined).unwrap();
        let path = ws.resolve("f.txt").unwrap();
        let held = Flock::lock(
            std::fs::File::open(dir.path().join("f.txt")).unwrap(),
            FlockArg::LockExclusive,
        )
        .unwrap();
        let mut locks = FileLocks::default();
        let err = locks
            .add(&ws, &path, Duration::from_millis(50))
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::IoError);
        assert!(
            err.message().contains("another process"),
            "{}",
            err.message()
        );
        assert!(locks.is_empty());

        drop(held);
        locks.add(&ws, &path, Duration::from_millis(50)).unwrap();
        assert_eq!(locks.len(), 1);
        // The same file again (as a hard link would be) does not wait on itself.
        locks.add(&ws, &path, Duration::from_millis(50)).unwrap();
        assert_eq!(locks.len(), 1);
        // Nothing to lock where nothing exists.
        let missing = ws.resolve("missing.txt").unwrap();
        locks.add(&ws, &missing, Duration::from_millis(50)).unwrap();
        assert_eq!(locks.len(), 1);
    }
}
