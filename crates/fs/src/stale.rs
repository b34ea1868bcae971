//! What a caller saw of a file, and replacing the file only while it is
//! still what was seen: the comparison and the write happen under the
//! path's locks, so no other writer of this process (or of another that
//! takes the same file lock) slips in between.
//!
//! A file counts as unchanged when it is the very file seen, untouched:
//! the same device, inode, size, modification time and change time. The
//! change time is the one a program cannot set: a file replaced or
//! rewritten with its modification time put back (`cp -p`, `rsync -t`,
//! `tar x`, `touch -r`) still gets a new one. Otherwise, when the caller
//! saw all of the file, it counts as unchanged when its bytes hash to the
//! digest of what was seen: a `touch`, an editor saving the same bytes, a
//! `chmod`, or a filesystem that updates times on access, changes nothing
//! a caller relies on.
//!
//! Two writes within one tick of the filesystem's clock can share their
//! times; kernels since 6.13 give a file changed after its times were
//! read a finer time on the common filesystems, older ones leave that
//! window of a few milliseconds.

use std::sync::PoisonError;
use std::time::SystemTime;

use agent_tools_confine::ConfinedPath;
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use sha2::{Digest as _, Sha256};

use crate::FileTools;
use crate::atomic::{Expected, FileStamp};

/// A SHA-256 digest of a file's bytes.
pub type ContentDigest = [u8; 32];

/// The digest of `bytes`.
pub fn digest(bytes: &[u8]) -> ContentDigest {
    Sha256::digest(bytes).into()
}

/// Which file, in which state: what stays the same while nobody touches a
/// file, and changes (the change time at least) when anybody does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Identity {
    /// The identity in metadata read through a workspace handle.
    pub fn of(meta: &cap_std::fs::Metadata) -> Identity {
        use cap_std::fs::MetadataExt as _;
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The identity in metadata of an open file (`File::metadata`).
    pub fn of_std(meta: &std::fs::Metadata) -> Identity {
        use std::os::unix::fs::MetadataExt as _;
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// What a caller saw of a file: its modification time, its identity when
/// known, and the digest of its bytes when it saw all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    modified: SystemTime,
    identity: Option<Identity>,
    digest: Option<ContentDigest>,
}

impl Seen {
    /// A file seen with this modification time and, when the caller read
    /// it whole, these bytes; its identity unknown, so only the bytes can
    /// tell that it is unchanged.
    pub fn new(modified: SystemTime, content: Option<&[u8]>) -> Seen {
        Seen {
            modified,
            identity: None,
            digest: content.map(digest),
        }
    }

    /// A file seen with the metadata `meta` (of the descriptor it was read
    /// from, taken before reading) and, when the caller read it whole,
    /// these bytes.
    pub fn of(meta: &std::fs::Metadata, content: Option<&[u8]>) -> Seen {
        Seen {
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            identity: Some(Identity::of_std(meta)),
            digest: content.map(digest),
        }
    }

    /// The modification time seen.
    pub fn modified(&self) -> SystemTime {
        self.modified
    }

    /// Whether the digest of the bytes is known.
    pub fn has_digest(&self) -> bool {
        self.digest.is_some()
    }

    /// Whether `now` is still the file seen: the same file untouched (its
    /// identity, change time included, is the one seen), or byte for byte
    /// the same content. A matching modification time alone proves
    /// nothing: it can be set back.
    pub fn still_current(&self, now: &Snapshot) -> bool {
        if self.identity.is_some_and(|seen| seen == now.identity) {
            return true;
        }
        self.digest.is_some_and(|seen| seen == digest(&now.bytes))
    }
}

/// A file as it is now, read under its locks.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Its modification time.
    pub modified: SystemTime,
    stamp: FileStamp,
    identity: Identity,
}

impl FileTools {
    /// Reads the file at `path` (if there is one) under its in-process and
    /// cross-process locks, hands it to `decide`, and writes what `decide`
    /// returns atomically (beside the file, renamed over it, only if the
    /// file is still the one read; created if there was none, parents
    /// included), all before the locks are released. `decide` returning no
    /// bytes writes nothing.
    ///
    /// Returns `decide`'s value and, when something was written, what was
    /// written as [`Seen`] (the new modification time, the new bytes'
    /// digest). A file over `max_file_bytes` is `too_large`, a directory or
    /// other non-file `not_a_file`; neither reaches `decide`.
    pub fn update_locked<R>(
        &self,
        path: &ConfinedPath,
        decide: impl FnOnce(Option<&Snapshot>) -> ToolResult<(Option<Vec<u8>>, R)>,
    ) -> ToolResult<(R, Option<Seen>)> {
        let lock = self.write_locks.lock_for(path.abs());
        let _held = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let _file_lock = self.lock_files([path])?;
        let ws = self.workspace();
        let current = match ws.metadata(path) {
            Ok(meta) => {
                if meta.is_dir() || path.is_root() {
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
                crate::atomic::refuse_read_only(path, &meta)?;
                let max = self.limits().max_file_bytes;
                let too_large = |size: u64| {
                    ToolError::new(
                        ErrorCode::TooLarge,
                        format!("{path}: {size} bytes is over the {max} byte limit for editing"),
                    )
                };
                if meta.len() > max {
                    return Err(too_large(meta.len()));
                }
                let file = ws.open_file(path)?;
                let bytes = crate::read_bounded(file, max, meta.len())
                    .map_err(|err| ws.io_error(&err, path))?
                    .ok_or_else(|| too_large(max.saturating_add(1)))?;
                let modified = meta
                    .modified()
                    .map(cap_std::time::SystemTime::into_std)
                    .map_err(|err| ws.io_error(&err, path))?;
                Some(Snapshot {
                    bytes,
                    modified,
                    stamp: FileStamp::of(&meta),
                    identity: Identity::of(&meta),
                })
            }
            Err(err) if err.code() == ErrorCode::NotFound => None,
            Err(err) => return Err(err),
        };
        let (new, value) = decide(current.as_ref())?;
        let Some(new) = new else {
            return Ok((value, None));
        };
        let expected = match &current {
            Some(snapshot) => Expected::Same(snapshot.stamp),
            None => {
                create_parents(self, path)?;
                Expected::Absent
            }
        };
        let existing = match &current {
            Some(_) => Some(ws.metadata(path)?),
            None => None,
        };
        // The digest of what is written is computed on a second thread
        // while the write (and its flush to disk) runs.
        let (written, digest) = std::thread::scope(|scope| {
            let hashing = scope.spawn(|| digest(&new));
            let written =
                crate::atomic::replace_expecting(ws, path, &[&new], existing.as_ref(), expected);
            (written, hashing.join().ok())
        });
        let written = written?;
        // The identity after the rename (which gives the file a new change
        // time), when the file is still the one written: same inode, size
        // and modification time. Else only the digest vouches for it.
        let identity = ws
            .metadata(path)
            .ok()
            .map(|meta| (FileStamp::of(&meta), Identity::of(&meta)))
            .filter(|(now, _)| *now == written)
            .map(|(_, identity)| identity);
        let seen = Seen {
            modified: written.modified(),
            identity,
            digest,
        };
        Ok((value, Some(seen)))
    }
}

/// mkdir -p of the parent of `path`, beneath the root's handle.
fn create_parents(tools: &FileTools, path: &ConfinedPath) -> ToolResult<()> {
    let ws = tools.workspace();
    crate::journaled::make_parents(ws, path).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use agent_tools_confine::{Confinement, Workspace};

    fn tools(dir: &std::path::Path) -> FileTools {
        FileTools::new(
            Workspace::open(dir, Confinement::Confined).unwrap(),
            Limits::default(),
        )
    }

    #[test]
    fn a_moved_time_with_the_same_bytes_is_still_current() {
        let seen = Seen::new(SystemTime::UNIX_EPOCH, Some(b"abc"));
        let later = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(5);
        let snapshot = |bytes: &[u8], modified| Snapshot {
            bytes: bytes.to_vec(),
            modified,
            stamp: FileStamp::default_for_tests(),
            identity: Identity {
                dev: 1,
                ino: 2,
                len: bytes.len() as u64,
                mtime: (0, 0),
                ctime: (0, 0),
            },
        };
        // The same modification time with other bytes is a change.
        assert!(!seen.still_current(&snapshot(b"changed", SystemTime::UNIX_EPOCH)));
        assert!(seen.still_current(&snapshot(b"abc", later)));
        assert!(!seen.still_current(&snapshot(b"abd", later)));
        let partial = Seen::new(SystemTime::UNIX_EPOCH, None);
        assert!(!partial.has_digest());
        assert!(!partial.still_current(&snapshot(b"abc", later)));
    }

    #[test]
    fn an_untouched_file_is_current_by_its_identity_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "abc").unwrap();
        let tools = tools(dir.path());
        let path = tools.workspace().resolve("f").unwrap();
        let opened = std::fs::File::open(dir.path().join("f")).unwrap();
        // No digest: only the identity (taken from the descriptor, compared
        // with the path's metadata under the locks) can vouch for it.
        let seen = Seen::of(&opened.metadata().unwrap(), None);
        let ((), written) = tools
            .update_locked(&path, |now| {
                assert!(seen.still_current(now.unwrap()));
                Ok((Some(b"abd".to_vec()), ()))
            })
            .unwrap();
        // What the write records is current by its identity too.
        let written = written.unwrap();
        let without_digest = Seen {
            digest: None,
            ..written
        };
        tools
            .update_locked(&path, |now| {
                let now = now.unwrap();
                assert!(!seen.still_current(now));
                assert!(without_digest.still_current(now));
                Ok((None, ()))
            })
            .unwrap();
    }

    #[test]
    fn update_creates_with_parents_replaces_and_reports_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let tools = tools(dir.path());
        let path = tools.workspace().resolve("a/b/c.txt").unwrap();
        let ((), seen) = tools
            .update_locked(&path, |now| {
                assert!(now.is_none());
                Ok((Some(b"one".to_vec()), ()))
            })
            .unwrap();
        let seen = seen.unwrap();
        assert_eq!(std::fs::read(dir.path().join("a/b/c.txt")).unwrap(), b"one");
        let (was, again) = tools
            .update_locked(&path, |now| {
                let now = now.unwrap();
                assert!(seen.still_current(now));
                Ok((Some(b"two".to_vec()), now.bytes.clone()))
            })
            .unwrap();
        assert_eq!(was, b"one");
        assert!(again.is_some());
        assert_eq!(std::fs::read(dir.path().join("a/b/c.txt")).unwrap(), b"two");
        // Deciding to write nothing writes nothing.
        let ((), none) = tools.update_locked(&path, |_| Ok((None, ()))).unwrap();
        assert!(none.is_none());
    }

    #[test]
    fn a_refusal_leaves_the_file_and_non_files_never_reach_decide() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "keep").unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let tools = tools(dir.path());
        let path = tools.workspace().resolve("f").unwrap();
        let err = tools
            .update_locked(&path, |_| -> ToolResult<(Option<Vec<u8>>, ())> {
                Err(ToolError::invalid_input("no"))
            })
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput);
        assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"keep");
        let d = tools.workspace().resolve("d").unwrap();
        let err = tools
            .update_locked(&d, |_| -> ToolResult<(Option<Vec<u8>>, ())> {
                panic!("a directory reached decide")
            })
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::NotAFile);
    }

    #[test]
    fn a_file_over_the_limit_is_too_large() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big"), vec![b'x'; 64]).unwrap();
        let tools = FileTools::new(
            Workspace::open(dir.path(), Confinement::Confined).unwrap(),
            Limits {
                max_file_bytes: 16,
                max_output_bytes: 1024,
            },
        );
        let path = tools.workspace().resolve("big").unwrap();
        let err = tools
            .update_locked(&path, |_| -> ToolResult<(Option<Vec<u8>>, ())> {
                panic!("too large reached decide")
            })
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::TooLarge);
    }
}
