//! The undo journal of agent-tools: what every tool call changed, kept so it
//! can be listed and taken back.
//!
//! The journal lives in a state directory of its own, outside every root
//! the tools serve (a search would otherwise find it, a `rm -rf .` delete
//! it). It holds:
//!
//! - `objects/`: file contents, addressed by their BLAKE3 hash, so a
//!   content kept by many calls is stored once. Written raw, then
//!   compressed with zstd by a background pass ([`Journal::compact`]).
//!   Large contents are first kept by a hard link to the file that holds
//!   them, under a provisional key ([`LINKED`], `objects/in/`), so the write
//!   path neither reads nor copies them; the same pass seals them under
//!   their hash ([`Journal::seal`]).
//! - `calls/<id>.json`: one record per call that changed something: the
//!   call's id, time, tool, surface and principal, and per file the path,
//!   the operation and the content hash and mode before and after
//!   ([`CallRecord`]). The file is the call's pending log, renamed, whose
//!   last line holds the whole record; a background pass may rewrite it as
//!   the record alone.
//! - `pending/<id>.json`: the write-ahead record of a call in flight, a
//!   log of one JSON line per announcement. Each change is appended to it,
//!   and it is flushed to disk (with the contents it names, in the same
//!   round as the write path's own files: [`Recorder::announce`]), before
//!   the file is changed; the call's end moves it to `calls/`. A record left in
//!   `pending/` by a process that died is resolved the next time a journal
//!   is opened on the directory: each change is compared with the disk and
//!   kept as done, dropped as never made, or kept with the note that its
//!   outcome is unknown.
//!
//! Writers never call the journal directly: a host opens a [`CallScope`]
//! around a tool call ([`Journal::begin`]), and the one atomic-write path of
//! the file tools asks [`current`] whether a call is being recorded on this
//! thread, stores the contents ([`Recorder::store`]) and brackets each
//! change with [`Recorder::intent`] and [`Recorder::done`].
//!
//! The journal is bounded by the number of calls, their age and the bytes
//! of stored content ([`Settings`]); the oldest calls go first, then every
//! content no remaining call refers to.
//!
//! ```
//! use agent_tools_journal::{Change, Image, Journal, Op, Settings};
//!
//! let state = tempfile::tempdir().unwrap();
//! let journal = Journal::open(Settings::new(state.path())).unwrap();
//! {
//!     let _scope = journal.begin("write_file", "default", "local");
//!     let recorder = agent_tools_journal::current().unwrap();
//!     let after = recorder.store(b"hello\n").unwrap();
//!     let change = Change::new("/work/a.txt", Op::Create, None, Some(Image::stored(after, 0o644, 6)));
//!     let token = recorder.intent(change).unwrap();
//!     // ... the file is written here ...
//!     recorder.done(token);
//! }
//! let calls = journal.calls().unwrap();
//! assert_eq!(calls.len(), 1);
//! assert_eq!(calls[0].tool, "write_file");
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::cell::RefCell;
use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

/// What can go wrong in the journal.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// A file of the journal could not be read or written.
    #[error("journal: {what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The journal file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The state directory lies inside a root the tools serve.
    #[error(
        "the journal's directory {dir} lies inside the served root {root}: a search would read it and a command could delete it; choose a directory outside every root (--journal-dir)"
    )]
    InsideRoot {
        /// The state directory.
        dir: PathBuf,
        /// The root it lies in.
        root: PathBuf,
    },
    /// A record could not be parsed.
    #[error("journal: {path} is not a valid record: {message}")]
    Corrupt {
        /// The record.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A stored content is missing.
    #[error("journal: the stored content {hash} is missing")]
    MissingContent {
        /// Its hash.
        hash: String,
    },
    /// A content kept by a link to the file that held it was changed in
    /// place (written without a rename) before the journal copied it.
    #[error(
        "journal: the content kept as {key} was changed in place by another program before the journal copied it"
    )]
    ChangedInPlace {
        /// Its provisional key.
        key: String,
    },
}

/// The journal's results.
pub type Result<T> = std::result::Result<T, JournalError>;

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> JournalError + 'a {
    move |source| JournalError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// How much the journal flushes to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Each stored pre-image and each write-ahead record is flushed before
    /// the file changes: a crash loses no undo data.
    #[default]
    Full,
    /// Nothing of the journal is flushed: a crash may lose undo data (never
    /// file data, which the write path flushes either way).
    Relaxed,
}

/// Where the journal lives and how much it keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The state directory.
    pub dir: PathBuf,
    /// The most calls kept.
    pub max_calls: usize,
    /// The oldest call kept.
    pub max_age: Duration,
    /// The most bytes of stored content kept (as stored, compressed or not).
    pub max_bytes: u64,
    /// A file larger than this is not stored: its change is recorded as not
    /// undoable, with the reason.
    pub max_file_bytes: u64,
    /// How much is flushed to disk.
    pub durability: Durability,
}

impl Settings {
    /// 10,000 calls.
    pub const DEFAULT_MAX_CALLS: usize = 10_000;
    /// Seven days.
    pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
    /// 512 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 512 * 1024 * 1024;
    /// 16 MiB, the file tools' own cap.
    pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

    /// The defaults, in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Settings {
        Settings {
            dir: dir.into(),
            max_calls: Self::DEFAULT_MAX_CALLS,
            max_age: Self::DEFAULT_MAX_AGE,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            max_file_bytes: Self::DEFAULT_MAX_FILE_BYTES,
            durability: Durability::Full,
        }
    }

    /// The default state directory for a set of roots:
    /// `$XDG_STATE_HOME/agent-tools/journal/<hash of the roots>` (or
    /// `~/.local/state/...`), so two servers on different folders keep
    /// apart and two on the same folder share one journal.
    pub fn default_dir(roots: &[PathBuf]) -> Option<PathBuf> {
        let base = std::env::var_os("XDG_STATE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|home| PathBuf::from(home).join(".local/state"))
            })?;
        let mut hasher = blake3::Hasher::new();
        for root in roots {
            hasher.update(root.as_os_str().as_encoded_bytes());
            hasher.update(b"\0");
        }
        let hash = hasher.finalize().to_hex();
        Some(
            base.join("agent-tools")
                .join("journal")
                .join(&hash.as_str()[..16]),
        )
    }

    /// Refuses a state directory inside (or equal to) any of `roots`, or
    /// one that contains a root (a walk of the state directory would then
    /// not be the journal's alone). Paths are compared after resolving
    /// symbolic links where they exist.
    pub fn check_outside(&self, roots: &[PathBuf]) -> Result<()> {
        let dir = resolved(&self.dir);
        for root in roots {
            let root = resolved(root);
            if dir.starts_with(&root) {
                return Err(JournalError::InsideRoot {
                    dir: self.dir.clone(),
                    root,
                });
            }
        }
        Ok(())
    }
}

/// `path` with symbolic links resolved as far as it exists; the rest
/// appended as written.
fn resolved(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path.to_path_buf();
    loop {
        if let Ok(real) = fs::canonicalize(&at) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (at.file_name().map(|n| n.to_os_string()), at.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                at = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// What a change did to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// A file was created.
    Create,
    /// A file's content (or mode) was replaced.
    Modify,
    /// A file was deleted.
    Delete,
    /// A directory was created.
    Mkdir,
    /// A directory was moved here from [`Change::from`].
    MoveDir,
    /// An (emptied) directory was removed.
    Rmdir,
}

/// One side of a change: a file's content (by hash) and mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// The content's hash; `None` when it was not stored (see
    /// [`Change::not_undoable`]).
    pub hash: Option<String>,
    /// The permission bits.
    pub mode: u32,
    /// The size in bytes.
    pub size: u64,
}

impl Image {
    /// A stored content.
    pub fn stored(hash: String, mode: u32, size: u64) -> Image {
        Image {
            hash: Some(hash),
            mode,
            size,
        }
    }

    /// A content that was not stored.
    pub fn unstored(mode: u32, size: u64) -> Image {
        Image {
            hash: None,
            mode,
            size,
        }
    }
}

/// One change to one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The absolute path changed.
    pub path: PathBuf,
    /// What was done.
    pub op: Op,
    /// For a moved directory: where it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<PathBuf>,
    /// The file before (`None`: it did not exist).
    pub before: Option<Image>,
    /// The file after (`None`: it no longer exists).
    pub after: Option<Image>,
    /// Why the change cannot be undone, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_undoable: Option<String>,
}

impl Change {
    /// A change of `path`.
    pub fn new(
        path: impl Into<PathBuf>,
        op: Op,
        before: Option<Image>,
        after: Option<Image>,
    ) -> Change {
        Change {
            path: path.into(),
            op,
            from: None,
            before,
            after,
            not_undoable: None,
        }
    }
}

/// Where a recorded change stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ChangeState {
    /// Made.
    #[default]
    Done,
    /// Announced, not yet made (only in a pending record).
    Pending,
    /// Announced by a process that died, and the disk matches neither side.
    Unknown,
}

/// A change with its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeRecord {
    /// The change.
    #[serde(flatten)]
    pub change: Change,
    /// Its state.
    #[serde(default)]
    pub state: ChangeState,
}

/// What one call changed. The default is the empty record of id 0, which
/// stands for "no batch read yet".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The call's id, increasing.
    pub id: u64,
    /// When the call started, in seconds since the Unix epoch.
    pub time: u64,
    /// The tool's name.
    pub tool: String,
    /// The surface's name.
    pub surface: String,
    /// Who called.
    pub principal: String,
    /// The process that made the call.
    pub pid: u32,
    /// The calls this one undid, when it was an undo.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undoes: Vec<u64>,
    /// The changes, in the order they were made.
    pub changes: Vec<ChangeRecord>,
    /// What the call's record says beyond its changes (a command whose
    /// changes were not looked for, and why; what was left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The journal in one state directory. Share it in an `Arc`.
#[derive(Debug)]
pub struct Journal {
    settings: Settings,
    /// The lock file, held with `flock` (across processes) while the
    /// journal's files are changed; the mutex serializes this process's
    /// threads, since one open file holds one lock.
    lock: Mutex<File>,
    /// Calls finished since the last prune.
    since_prune: AtomicU64,
    /// Bytes stored since the last prune.
    stored_since_prune: AtomicU64,
    /// Calls and bytes found at the last prune.
    baseline: Mutex<(u64, u64)>,
    /// Whether a compaction pass is running.
    compacting: Arc<AtomicBool>,
    /// When the journal was opened: the clock of `last_filed`.
    opened: std::time::Instant,
    /// When the last call was filed, in nanoseconds after `opened`.
    last_filed: AtomicU64,
    /// Contents stored raw since the last compaction pass began.
    raw_since_compact: AtomicU64,
    /// Those contents' files, for the background pass to compress without
    /// listing every content (which grows with the journal).
    raw: Mutex<Vec<PathBuf>>,
    /// Whether the next background pass lists every content (the first of
    /// a process: contents a process that ended left raw).
    full_pass_due: AtomicBool,
    /// Finished calls whose records still name linked contents
    /// ([`LINKED`]): the next compaction pass seals them.
    to_seal: Mutex<std::collections::BTreeSet<u64>>,
    /// Held by a compaction pass.
    pass: Mutex<()>,
}

/// The key prefix of a content kept by a hard link to the file that held
/// it (or, across filesystems, a kernel copy), not yet hashed: the write
/// path then neither reads nor copies the file. The rest of the key is the
/// kept file's [`LinkStamp`], which reading it checks. A background pass
/// ([`Journal::compact`]) hashes and compresses it and puts the hash in the
/// records in its place.
pub const LINKED: &str = "in/";

/// The files below `objects/` holding linked contents.
const LINKED_DIR: &str = "in";

/// What a linked content's file must still be for it to hold what was
/// kept: its inode, size and modification time when it was linked. A
/// program that rewrites the file in place changes the time (and mostly
/// the size); a rename over the user's name leaves the kept file alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkStamp {
    /// The inode.
    pub ino: u64,
    /// The size in bytes.
    pub size: u64,
    /// The modification time, seconds.
    pub mtime: i64,
    /// The modification time, nanoseconds.
    pub mtime_nsec: i64,
}

impl LinkStamp {
    fn of_meta(meta: &fs::Metadata) -> LinkStamp {
        use std::os::unix::fs::MetadataExt;
        LinkStamp {
            ino: meta.ino(),
            size: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        }
    }

    /// The file name: the stamp, then what makes it unique.
    fn name(&self) -> String {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        format!(
            "{}-{}-{}.{}-{}-{}",
            self.ino,
            self.size,
            self.mtime,
            self.mtime_nsec,
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        )
    }

    fn parse(name: &str) -> Option<LinkStamp> {
        let mut parts = name.split('-');
        let ino = parts.next()?.parse().ok()?;
        let size = parts.next()?.parse().ok()?;
        let (mtime, mtime_nsec) = parts.next()?.split_once('.')?;
        Some(LinkStamp {
            ino,
            size,
            mtime: mtime.parse().ok()?,
            mtime_nsec: mtime_nsec.parse().ok()?,
        })
    }
}

/// Whether `key` names a linked content, not yet hashed.
pub fn is_linked(key: &str) -> bool {
    key.starts_with(LINKED)
}

/// The journal's lock, held across processes until dropped.
pub struct JournalLock<'a> {
    _guard: std::sync::MutexGuard<'a, File>,
    _flock: Option<Flock<File>>,
}

impl std::fmt::Debug for JournalLock<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JournalLock")
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn record_name(id: u64) -> String {
    format!("{id:016}.json")
}

fn id_of(name: &str) -> Option<u64> {
    name.strip_suffix(".json")?.parse().ok()
}

/// Writes `data` to `path` through a temporary file and a rename, flushed
/// when `sync` is set.
fn write_replace(path: &Path, data: &[u8], sync: bool) -> Result<()> {
    let temp = temp_beside(path);
    let written = (|| -> io::Result<()> {
        let mut file = File::create(&temp)?;
        file.write_all(data)?;
        if sync {
            file.sync_all()?;
        }
        fs::rename(&temp, path)?;
        if sync && let Some(parent) = path.parent() {
            File::open(parent)?.sync_all()?;
        }
        Ok(())
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written.map_err(io_err("writing", path))
}

impl Journal {
    /// Opens (creating) the journal in `settings.dir`, resolves what dead
    /// processes left pending, and prunes it to its bounds.
    pub fn open(settings: Settings) -> Result<Arc<Journal>> {
        for sub in ["objects", "objects/in", "calls", "pending", "pins"] {
            let dir = settings.dir.join(sub);
            fs::create_dir_all(&dir).map_err(io_err("creating", &dir))?;
        }
        let lock_path = settings.dir.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err("opening", &lock_path))?;
        let journal = Arc::new(Journal {
            settings,
            lock: Mutex::new(lock),
            since_prune: AtomicU64::new(0),
            stored_since_prune: AtomicU64::new(0),
            baseline: Mutex::new((0, 0)),
            compacting: Arc::new(AtomicBool::new(false)),
            opened: std::time::Instant::now(),
            last_filed: AtomicU64::new(0),
            raw_since_compact: AtomicU64::new(1),
            raw: Mutex::new(Vec::new()),
            full_pass_due: AtomicBool::new(true),
            to_seal: Mutex::new(std::collections::BTreeSet::new()),
            pass: Mutex::new(()),
        });
        journal.recover()?;
        journal.prune()?;
        Ok(journal)
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Takes the journal's lock: across processes (`flock`) and threads.
    /// Recovery, pruning and the sealing pass hold it while they rewrite
    /// or remove records and contents. An undo does not: it is kept in
    /// step with other writers by the locks of the files it restores
    /// (taken by the file tools), and a record sealed under it leaves its
    /// hash behind for a reader of the older record.
    pub fn lock(&self) -> Result<JournalLock<'_>> {
        let guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let file = guard
            .try_clone()
            .map_err(io_err("locking", &self.settings.dir))?;
        // A filesystem without flock: the in-process mutex is all there is.
        let flock = Flock::lock(file, FlockArg::LockExclusive).ok();
        Ok(JournalLock {
            _guard: guard,
            _flock: flock,
        })
    }

    /// Starts recording a call on this thread: changes the write path
    /// reports until the scope is dropped belong to it. Scopes do not nest:
    /// a second one on the same thread replaces the first until dropped.
    pub fn begin(self: &Arc<Self>, tool: &str, surface: &str, principal: &str) -> CallScope {
        let call = Arc::new(CallState {
            journal: Arc::clone(self),
            record: Mutex::new(CallRecord {
                id: 0,
                time: now_secs(),
                tool: tool.to_owned(),
                surface: surface.to_owned(),
                principal: principal.to_owned(),
                pid: std::process::id(),
                undoes: Vec::new(),
                changes: Vec::new(),
                notes: Vec::new(),
            }),
            to_flush: Mutex::new(Vec::new()),
            log: Mutex::new(PendingLog::default()),
        });
        let previous = CURRENT.with(|current| current.replace(Some(Recorder(call.clone()))));
        CallScope { call, previous }
    }

    fn objects(&self) -> PathBuf {
        self.settings.dir.join("objects")
    }

    fn object_path(&self, hash: &str) -> PathBuf {
        if let Some(rest) = hash.strip_prefix(LINKED) {
            return self.objects().join(LINKED_DIR).join(rest);
        }
        let (head, tail) = hash.split_at(2.min(hash.len()));
        self.objects().join(head).join(tail)
    }

    /// Stores `data` (once per distinct content); returns its hash.
    /// Flushed under [`Durability::Full`]: for contents that exist nowhere
    /// else once the change is made (what a file held before).
    pub fn store(&self, data: &[u8]) -> Result<String> {
        self.store_with(data, self.settings.durability == Durability::Full)
            .map(|(hash, _)| hash)
    }

    /// Stores `data` without flushing it: for what a file is about to
    /// hold, which the file itself keeps (the write path flushes it); a
    /// crash that loses it loses nothing an undo of this change needs.
    pub fn store_unflushed(&self, data: &[u8]) -> Result<String> {
        self.store_with(data, false).map(|(hash, _)| hash)
    }

    /// Flushes everything stored unflushed so far, in one call for the
    /// whole filesystem (under [`Durability::Full`]; nothing otherwise):
    /// for many pre-images stored at once with
    /// [`store_unflushed`](Self::store_unflushed), where a flush each would
    /// cost a disk round trip per file.
    pub fn flush_stored(&self) -> Result<()> {
        if self.settings.durability != Durability::Full {
            return Ok(());
        }
        let objects = self.objects();
        let dir = File::open(&objects).map_err(io_err("opening", &objects))?;
        nix::unistd::syncfs(&dir)
            .map_err(|errno| io_err("flushing", &objects)(io::Error::from(errno)))
    }

    /// [`store`](Self::store) flushed as `sync` says; also answers the
    /// folder it made for the content, if it made one (its own entry then
    /// needs a flush as well).
    fn store_with(&self, data: &[u8], sync: bool) -> Result<(String, Option<PathBuf>)> {
        let hash = blake3::hash(data).to_hex().to_string();
        let path = self.object_path(&hash);
        let packed = path.with_extension("zst");
        if path.exists() || packed.exists() {
            if sync {
                // Stored before, perhaps unflushed: flushing a file with
                // nothing dirty is cheap. (A compressed one was flushed by
                // compaction under this durability.)
                if let Ok(file) = File::open(&path) {
                    file.sync_all().map_err(io_err("flushing", &path))?;
                }
            }
            return Ok((hash, None));
        }
        let mut made = None;
        if let Some(parent) = path.parent()
            && !parent.is_dir()
        {
            fs::create_dir_all(parent).map_err(io_err("creating", parent))?;
            if sync {
                File::open(self.objects())
                    .and_then(|dir| dir.sync_all())
                    .map_err(io_err("flushing", parent))?;
            }
            made = Some(parent.to_path_buf());
        }
        write_replace(&path, data, sync)?;
        self.stored_since_prune
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        self.raw_since_compact.fetch_add(1, Ordering::Relaxed);
        let mut raw = self.raw.lock().unwrap_or_else(PoisonError::into_inner);
        if raw.len() < MAX_RAW_TRACKED {
            raw.push(path);
        } else {
            self.full_pass_due.store(true, Ordering::Relaxed);
        }
        Ok((hash, made))
    }

    /// Keeps the file `name` of the directory `dir` as a content by a hard
    /// link, without reading it: for a file about to be replaced by a
    /// rename or removed (what it held then lives on only here) and for a
    /// new file's content. Answers the provisional key ([`LINKED`]), or
    /// `None` when the file cannot be linked (another filesystem, no
    /// permission) or is no longer `stamp`: the caller then stores a copy.
    /// Nothing is flushed here; see [`Recorder::link`].
    pub fn link(
        &self,
        dir: impl std::os::fd::AsFd,
        name: &std::ffi::OsStr,
        stamp: LinkStamp,
    ) -> Result<Option<String>> {
        use nix::fcntl::{AT_FDCWD, AtFlags};
        let rest = stamp.name();
        let target = self.objects().join(LINKED_DIR).join(&rest);
        if nix::unistd::linkat(dir, name, AT_FDCWD, &target, AtFlags::empty()).is_err() {
            return Ok(None);
        }
        // The name may have been given another file since the caller
        // looked: then the link holds something else, and is undone.
        let linked = fs::symlink_metadata(&target).map_err(io_err("linking", &target))?;
        if LinkStamp::of_meta(&linked) != stamp {
            let _ = fs::remove_file(&target);
            return Ok(None);
        }
        self.stored_since_prune
            .fetch_add(stamp.size, Ordering::Relaxed);
        Ok(Some(format!("{LINKED}{rest}")))
    }

    /// Keeps a copy of `file` as a linked content (for a file that cannot
    /// be linked): copied by the kernel (`copy_file_range`, a reflink
    /// where the filesystem shares blocks), not through memory, and hashed
    /// later like a link. `None` when the file changed while it was copied.
    pub fn copy_in(&self, file: &mut File) -> Result<Option<String>> {
        let source_before = file
            .metadata()
            .map_err(io_err("copying", &self.objects()))?;
        let temp = self
            .objects()
            .join(LINKED_DIR)
            .join(format!("copy{}", LinkStamp::of_meta(&source_before).name()));
        let copied = (|| -> io::Result<fs::Metadata> {
            let mut out = File::create(&temp)?;
            io::copy(file, &mut out)?;
            out.metadata()
        })();
        let copied = match copied {
            Ok(meta) => meta,
            Err(err) => {
                let _ = fs::remove_file(&temp);
                return Err(io_err("copying into", &temp)(err));
            }
        };
        let source_after = file.metadata().map_err(io_err("copying", &temp))?;
        if LinkStamp::of_meta(&source_before) != LinkStamp::of_meta(&source_after)
            || copied.len() != source_after.len()
        {
            let _ = fs::remove_file(&temp);
            return Ok(None);
        }
        let rest = LinkStamp::of_meta(&copied).name();
        let target = self.objects().join(LINKED_DIR).join(&rest);
        if let Err(err) = fs::rename(&temp, &target) {
            let _ = fs::remove_file(&temp);
            return Err(io_err("copying into", &target)(err));
        }
        self.stored_since_prune
            .fetch_add(copied.len(), Ordering::Relaxed);
        Ok(Some(format!("{LINKED}{rest}")))
    }

    /// A linked content, checked against its stamp before and after it is
    /// read.
    fn linked_content(&self, key: &str) -> Result<Vec<u8>> {
        let path = self.object_path(key);
        let stamp = key
            .strip_prefix(LINKED)
            .and_then(LinkStamp::parse)
            .ok_or_else(|| JournalError::Corrupt {
                path: path.clone(),
                message: "not the name of a linked content".into(),
            })?;
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                // Sealed since the caller read its record: the seal left
                // the hash it was stored under.
                if let Ok(hash) = fs::read_to_string(forward_of(&path))
                    && !is_linked(&hash)
                {
                    return self.content(hash.trim());
                }
                return Err(JournalError::MissingContent {
                    hash: key.to_owned(),
                });
            }
            Err(err) => return Err(io_err("reading", &path)(err)),
        };
        let check = |file: &File| -> Result<()> {
            let meta = file.metadata().map_err(io_err("reading", &path))?;
            if LinkStamp::of_meta(&meta) == stamp {
                Ok(())
            } else {
                Err(JournalError::ChangedInPlace {
                    key: key.to_owned(),
                })
            }
        };
        check(&file)?;
        let mut data = Vec::with_capacity(usize::try_from(stamp.size).unwrap_or(0));
        file.read_to_end(&mut data)
            .map_err(io_err("reading", &path))?;
        check(&file)?;
        Ok(data)
    }

    /// The content stored under `hash` (or a provisional key, [`LINKED`]).
    pub fn content(&self, hash: &str) -> Result<Vec<u8>> {
        if is_linked(hash) {
            return self.linked_content(hash);
        }
        let path = self.object_path(hash);
        match fs::read(&path) {
            Ok(data) => return Ok(data),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(io_err("reading", &path)(err)),
        }
        let packed = path.with_extension("zst");
        match File::open(&packed) {
            Ok(file) => {
                let mut data = Vec::new();
                zstd::stream::read::Decoder::new(file)
                    .and_then(|mut decoder| decoder.read_to_end(&mut data))
                    .map_err(io_err("decompressing", &packed))?;
                Ok(data)
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                Err(JournalError::MissingContent {
                    hash: hash.to_owned(),
                })
            }
            Err(err) => Err(io_err("reading", &packed)(err)),
        }
    }

    /// Every finished call, newest first.
    pub fn calls(&self) -> Result<Vec<CallRecord>> {
        let mut ids = self.ids("calls")?;
        ids.sort_unstable_by(|a, b| b.cmp(a));
        let mut calls = Vec::with_capacity(ids.len());
        for id in ids {
            // A record pruned by another process meanwhile is skipped.
            if let Some(call) = self.call(id)? {
                calls.push(call);
            }
        }
        Ok(calls)
    }

    /// One finished call.
    pub fn call(&self, id: u64) -> Result<Option<CallRecord>> {
        let path = self.record_path("calls", id);
        read_record(&path)
    }

    fn ids(&self, sub: &str) -> Result<Vec<u64>> {
        let dir = self.settings.dir.join(sub);
        let mut ids = Vec::new();
        for entry in fs::read_dir(&dir).map_err(io_err("listing", &dir))? {
            let entry = entry.map_err(io_err("listing", &dir))?;
            if let Some(id) = entry.file_name().to_str().and_then(id_of) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    /// The next call id: one past every id finished or pending. Taken with
    /// the lock held.
    fn next_id(&self) -> Result<u64> {
        let counter = self.settings.dir.join("next");
        let stored = fs::read_to_string(&counter)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok());
        // The counter alone, when there is one (it is only written under
        // the lock); listing every record per call would cost milliseconds
        // in a full journal. Without it (a new or damaged journal), one past
        // every id on disk.
        let taken = |id: u64| {
            ["calls", "pending"]
                .iter()
                .any(|sub| self.settings.dir.join(sub).join(record_name(id)).exists())
        };
        let id = match stored {
            // A counter behind the records (a crash lost its last update)
            // would hand out a used id: then the records decide.
            Some(next) if !taken(next.max(1)) => next.max(1),
            _ => self
                .ids("calls")?
                .into_iter()
                .chain(self.ids("pending")?)
                .max()
                .map_or(1, |max| max + 1),
        };
        // Rewritten in place (no temporary file and rename per call), at
        // one width (every u64 fits in 20 digits) so the file never
        // shrinks: truncating it instead made the filesystem wait for its
        // journal, 1–3 ms a call. A counter torn by a crash reads as none
        // or as one behind the records, and the records then decide, as
        // above.
        let write = || -> io::Result<()> {
            use std::os::unix::fs::FileExt;
            let file = OpenOptions::new()
                .write(true)
                .create(true)
                // A counter that did not parse (damaged, or longer than
                // this width) is cut, so it parses from now on.
                .truncate(stored.is_none())
                .open(&counter)?;
            file.write_all_at(format!("{:020}\n", id + 1).as_bytes(), 0)
        };
        write().map_err(io_err("writing", &counter))?;
        Ok(id)
    }

    /// Appends one batch of a call's changes to its pending log
    /// (`pending/<id>.json`, one JSON record a line: the call's fields as
    /// they stand, and the changes not logged before), creating the log
    /// with its first batch. Nothing is flushed here: under
    /// [`Durability::Full`] the files to flush (the log, and its folder
    /// when the log is new) are added to `flush`, which the caller flushes
    /// in one round with the rest of the call's files, before any change
    /// of the batch is made. A line is only appended once the one before it
    /// was flushed, so a crash can tear only the last, whose changes were
    /// then never made ([`read_pending`] drops it).
    fn append_pending(
        &self,
        log: &mut PendingLog,
        record: &CallRecord,
        flush: &mut Vec<File>,
    ) -> Result<()> {
        let pending = self.settings.dir.join("pending");
        let path = pending.join(record_name(record.id));
        let batch = CallRecord {
            changes: record.changes[log.logged.min(record.changes.len())..].to_vec(),
            ..record.clone()
        };
        let mut line = to_json(&batch, &path)?;
        line.push(b'\n');
        let full = self.settings.durability == Durability::Full;
        let created = log.file.is_none();
        if created {
            let file = OpenOptions::new()
                .append(true)
                .create_new(true)
                .open(&path)
                .map_err(io_err("writing", &path))?;
            log.file = Some(file);
        }
        let Some(file) = log.file.as_mut() else {
            return Ok(());
        };
        if let Err(err) = file.write_all(&line) {
            if created {
                // Nothing of it counts: a later batch starts a new log.
                log.file = None;
                let _ = fs::remove_file(&path);
            }
            return Err(io_err("writing", &path)(err));
        }
        log.logged = record.changes.len();
        if full {
            flush.push(file.try_clone().map_err(io_err("flushing", &path))?);
            if created {
                flush.push(File::open(&pending).map_err(io_err("flushing", &pending))?);
            }
        }
        Ok(())
    }

    /// Writes `record` as a call's whole pending log, flushed (for tests
    /// and tools that set one up by hand).
    #[cfg(test)]
    fn write_pending(&self, record: &CallRecord) -> Result<()> {
        let path = self.record_path("pending", record.id);
        let _ = fs::remove_file(&path);
        let mut log = PendingLog::default();
        let mut flush = Vec::new();
        self.append_pending(&mut log, record, &mut flush)?;
        flush_files(&flush, &self.settings.dir)
    }

    /// Where call `id`'s record lives in `sub` (`pending` or `calls`).
    fn record_path(&self, sub: &str, id: u64) -> PathBuf {
        self.settings.dir.join(sub).join(record_name(id))
    }

    /// Moves a call from `pending/` to `calls/` (or drops it when it holds
    /// no change): its whole record is appended to its log as a last line
    /// ([`Filed`]) and the log renamed into `calls/`. No new file is made:
    /// making one right after the write path's folder flush waited about
    /// half a millisecond for the disk, most of what the journal added to
    /// a small call. A call without a log (nothing was announced) gets a
    /// record file of its own.
    fn finish(&self, record: &CallRecord) -> Result<()> {
        let pending = self.record_path("pending", record.id);
        if record.changes.is_empty() && record.notes.is_empty() {
            return match fs::remove_file(&pending) {
                Ok(()) => Ok(()),
                Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(err) => Err(io_err("removing", &pending)(err)),
            };
        }
        let path = self.record_path("calls", record.id);
        match OpenOptions::new().append(true).open(&pending) {
            Ok(mut log) => {
                // On a line of its own even after a line a crash tore
                // (recovery files such logs too): the blank line between
                // is skipped by every reader.
                let mut line = vec![b'\n'];
                line.extend(to_json(&FiledRef { filed: record }, &path)?);
                line.push(b'\n');
                log.write_all(&line).map_err(io_err("writing", &pending))?;
                fs::rename(&pending, &path).map_err(io_err("writing", &path))
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                write_replace(&path, &to_json(record, &path)?, false)
            }
            Err(err) => Err(io_err("writing", &pending)(err)),
        }
    }

    /// Resolves the pending records of processes that are gone: each
    /// pending change is compared with the disk.
    fn recover(&self) -> Result<()> {
        let _lock = self.lock()?;
        let own = std::process::id();
        self.sweep_dead_temporaries(own)?;
        for id in self.ids("pending")? {
            let path = self.record_path("pending", id);
            let Some(mut record) = read_pending(&path)? else {
                continue;
            };
            if record.id == 0 {
                // Torn before its first batch was on disk (read under the
                // lock, which every append holds, so not one being
                // written): it announced nothing that was made.
                tracing::info!(call = id, "removed a torn pending record");
                match fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                    Err(err) => return Err(io_err("removing", &path)(err)),
                }
                continue;
            }
            if record.pid != own && process_alive(record.pid) {
                continue;
            }
            let mut kept = Vec::with_capacity(record.changes.len());
            for mut change in record.changes {
                if change.state == ChangeState::Pending {
                    match self.settle(&change.change) {
                        Settled::Made => change.state = ChangeState::Done,
                        Settled::NotMade => continue,
                        Settled::Unknown => change.state = ChangeState::Unknown,
                    }
                }
                kept.push(change);
            }
            record.changes = kept;
            tracing::info!(call = record.id, "resolved an interrupted call's record");
            self.finish(&record)?;
        }
        Ok(())
    }

    /// Removes the temporary files (`NAME.tmp.PID.N`, see
    /// [`write_replace`]) that a process which died
    /// mid-write left in `pending/` and `calls/`. A temporary record was
    /// never renamed into place, so nothing it announced was made; keeping
    /// it would only grow the folder. Another live process's (and this
    /// one's) are left alone: they may be writing now.
    fn sweep_dead_temporaries(&self, own: u32) -> Result<()> {
        for sub in ["pending", "calls"] {
            let dir = self.settings.dir.join(sub);
            for entry in fs::read_dir(&dir).map_err(io_err("listing", &dir))? {
                let entry = entry.map_err(io_err("listing", &dir))?;
                let name = entry.file_name();
                let Some(pid) = name.to_str().and_then(temporary_owner) else {
                    continue;
                };
                if pid != own && !process_alive(pid) {
                    match fs::remove_file(entry.path()) {
                        Ok(()) => {}
                        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                        Err(err) => return Err(io_err("removing", &entry.path())(err)),
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether an announced change is on the disk.
    fn settle(&self, change: &Change) -> Settled {
        let now = disk_hash(&change.path);
        let matches = |image: &Option<Image>| match (image, &now) {
            (None, DiskState::Absent) => true,
            // A linked content: the very file, or one with its content.
            (Some(Image { hash: Some(h), .. }), DiskState::File(now)) if is_linked(h) => {
                let same_file = h
                    .strip_prefix(LINKED)
                    .and_then(LinkStamp::parse)
                    .zip(fs::symlink_metadata(&change.path).ok())
                    .is_some_and(|(stamp, meta)| LinkStamp::of_meta(&meta) == stamp);
                same_file || self.linked_content(h).is_ok_and(|data| hash(&data) == *now)
            }
            (Some(Image { hash: Some(h), .. }), DiskState::File(now)) => h == now,
            (Some(_), DiskState::Dir) => change.op == Op::Mkdir || change.op == Op::MoveDir,
            _ => false,
        };
        if change.op == Op::Rmdir {
            return if matches!(now, DiskState::Absent) {
                Settled::Made
            } else {
                Settled::NotMade
            };
        }
        if change.op == Op::Mkdir || change.op == Op::MoveDir {
            return if matches!(now, DiskState::Dir) {
                Settled::Made
            } else {
                Settled::NotMade
            };
        }
        if matches(&change.after) {
            Settled::Made
        } else if matches(&change.before) {
            Settled::NotMade
        } else {
            Settled::Unknown
        }
    }

    /// Prunes to the bounds: the oldest calls past the count, the age or
    /// the bytes go, then every stored content no call refers to.
    pub fn prune(&self) -> Result<PruneReport> {
        let _lock = self.lock()?;
        let mut ids = self.ids("calls")?;
        ids.sort_unstable();
        let oldest_kept = now_secs().saturating_sub(self.settings.max_age.as_secs());
        let mut report = PruneReport::default();
        // Keep a margin under the count so a prune is not needed on every
        // call once the journal is full.
        let keep = if ids.len() > self.settings.max_calls {
            self.settings.max_calls - self.settings.max_calls / 10
        } else {
            ids.len()
        };
        let mut records = Vec::with_capacity(ids.len());
        for (at, id) in ids.iter().enumerate() {
            let path = self.record_path("calls", *id);
            let record = read_record(&path)?;
            let too_many = at < ids.len() - keep;
            let too_old = record.as_ref().is_some_and(|r| r.time < oldest_kept);
            if too_many || too_old || record.is_none() {
                let _ = fs::remove_file(&path);
                report.calls_dropped += 1;
            } else if let Some(record) = record {
                records.push(record);
            }
        }
        // Referenced contents, also of pending calls (they are in flight).
        let mut pending = Vec::new();
        for id in self.ids("pending")? {
            let path = self.record_path("pending", id);
            pending.extend(read_pending(&path)?);
        }
        let pinned = self.pinned()?;
        let objects = self.list_objects()?;
        let mut total: u64 = objects.iter().map(|(_, _, size)| size).sum();
        // Past the byte bound, drop the oldest calls until under it
        // (counting what each one alone refers to is not worth it: the
        // sweep below measures).
        loop {
            let mut referenced = referenced(records.iter().chain(pending.iter()));
            referenced.extend(pinned.iter().cloned());
            let live: u64 = objects
                .iter()
                .filter(|(hash, _, _)| referenced.contains(hash))
                .map(|(_, _, size)| size)
                .sum();
            if live <= self.settings.max_bytes || records.is_empty() {
                for (hash, path, size) in &objects {
                    if !referenced.contains(hash) && fs::remove_file(path).is_ok() {
                        report.contents_dropped += 1;
                        total -= size;
                    }
                }
                break;
            }
            let dropped = records.remove(0);
            let path = self.record_path("calls", dropped.id);
            let _ = fs::remove_file(&path);
            report.calls_dropped += 1;
        }
        {
            // Calls filed with linked contents and not sealed (by a process
            // that ended first): sealed by this one.
            let mut to_seal = self.to_seal.lock().unwrap_or_else(PoisonError::into_inner);
            for record in &records {
                if !linked_keys(record).is_empty() {
                    to_seal.insert(record.id);
                }
            }
        }
        report.calls_kept = records.len();
        report.bytes_kept = total;
        self.since_prune.store(0, Ordering::Relaxed);
        self.stored_since_prune.store(0, Ordering::Relaxed);
        *self.baseline.lock().unwrap_or_else(PoisonError::into_inner) =
            (records.len() as u64, total);
        Ok(report)
    }

    /// Keeps the contents `hashes` from the sweep while this process lives,
    /// in place of what it pinned before: contents stored ahead of any
    /// call that refers to them (the command baseline's). Kept in
    /// `pins/<process id>.json`, so another process's prune sees them too.
    pub fn pin(&self, hashes: &[String]) -> Result<()> {
        let path = self
            .settings
            .dir
            .join("pins")
            .join(format!("{}.json", std::process::id()));
        let data = to_json(hashes, &path)?;
        let _lock = self.lock()?;
        write_replace(&path, &data, self.settings.durability == Durability::Full)
    }

    /// The contents pinned by live processes; the pins of dead ones are
    /// removed. Called with the lock held.
    fn pinned(&self) -> Result<HashSet<String>> {
        let dir = self.settings.dir.join("pins");
        let mut set = HashSet::new();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            // A journal made before pins existed.
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(set),
            Err(err) => return Err(io_err("listing", &dir)(err)),
        };
        let own = std::process::id();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_suffix(".json")
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid != own && !process_alive(pid) {
                let _ = fs::remove_file(entry.path());
                continue;
            }
            let Ok(data) = fs::read(entry.path()) else {
                continue;
            };
            let hashes: Vec<String> =
                serde_json::from_slice(&data).map_err(|err| JournalError::Corrupt {
                    path: entry.path(),
                    message: err.to_string(),
                })?;
            set.extend(hashes);
        }
        Ok(set)
    }

    /// Every stored content: hash, file and size on disk.
    fn list_objects(&self) -> Result<Vec<(String, PathBuf, u64)>> {
        let root = self.objects();
        let mut found = Vec::new();
        for head in fs::read_dir(&root).map_err(io_err("listing", &root))? {
            let head = head.map_err(io_err("listing", &root))?;
            let head_name = head.file_name().to_string_lossy().into_owned();
            let Ok(entries) = fs::read_dir(head.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.contains(".tmp.") || (head_name == LINKED_DIR && name.starts_with("copy")) {
                    // A write in flight, or the leftover of a killed
                    // writer (unreferenced by construction: the record
                    // comes after the content); an hour old, the latter.
                    let stale = entry
                        .metadata()
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > Duration::from_secs(3600));
                    if stale {
                        let _ = fs::remove_file(entry.path());
                    }
                    continue;
                }
                let tail = name.strip_suffix(".zst").unwrap_or(&name);
                let size = entry.metadata().map_or(0, |m| m.len());
                let key = if head_name == LINKED_DIR {
                    format!("{LINKED}{tail}")
                } else {
                    format!("{head_name}{tail}")
                };
                found.push((key, entry.path(), size));
            }
        }
        Ok(found)
    }

    /// Compresses stored contents still raw (zstd, level 3): run in the
    /// background after calls, since compressing inline would cost about
    /// as much as the write itself. Returns how many were compressed.
    pub fn compact(&self) -> Result<usize> {
        // One pass at a time: a caller waits for the background pass
        // (which may hold the calls it wants sealed) to end.
        let _pass = self.pass.lock().unwrap_or_else(PoisonError::into_inner);
        self.seal()?;
        // Every raw content is listed here: those noted so far are among them.
        self.raw
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let raw = self
            .list_objects()?
            .into_iter()
            .filter(|(key, path, _)| {
                !is_linked(key) && path.extension().is_none_or(|ext| ext != "zst")
            })
            .map(|(_, path, _)| path)
            .collect();
        self.compress(raw)
    }

    /// The background pass: seals, then compresses the contents this
    /// process stored raw since the last pass (all of them, listed, when a
    /// full pass is due).
    fn compact_recent(&self) -> Result<usize> {
        if self.full_pass_due.swap(false, Ordering::Relaxed) {
            return self.compact();
        }
        let _pass = self.pass.lock().unwrap_or_else(PoisonError::into_inner);
        self.seal()?;
        let raw = std::mem::take(&mut *self.raw.lock().unwrap_or_else(PoisonError::into_inner));
        self.compress(raw)
    }

    /// Compresses the raw contents `paths` (those under 512 bytes, or that
    /// do not shrink, stay raw): each written compressed, all flushed in
    /// one round under [`Durability::Full`], then the raw files removed.
    fn compress(&self, paths: Vec<PathBuf>) -> Result<usize> {
        let mut written = Vec::new();
        for path in paths {
            let Ok(data) = fs::read(&path) else {
                // Compressed or swept meanwhile.
                continue;
            };
            if data.len() < 512 {
                continue;
            }
            let packed = zstd::bulk::compress(&data, 3).map_err(io_err("compressing", &path))?;
            if packed.len() >= data.len() {
                continue;
            }
            let target = path.with_extension("zst");
            write_replace(&target, &packed, false)?;
            written.push((path, target));
        }
        if written.is_empty() {
            return Ok(0);
        }
        if self.settings.durability == Durability::Full {
            // The compressed form is on disk before the raw one goes.
            let targets: Vec<PathBuf> = written.iter().map(|(_, target)| target.clone()).collect();
            let mut files = Vec::new();
            open_for_flush(&targets, &mut files)?;
            flush_files(&files, &self.objects())?;
        }
        // Under the lock, so a reader between the two steps finds one of
        // them (content() tries the raw file first, then the packed).
        let _lock = self.lock()?;
        for (path, _) in &written {
            let _ = fs::remove_file(path);
        }
        Ok(written.len())
    }

    /// Seals the linked contents of the calls waiting for it: each is read
    /// (checked against its stamp), hashed and stored compressed under its
    /// hash (once per distinct content), the records name the hash in its
    /// place, and the link goes. A content changed in place before this
    /// (a program that rewrote the file without a rename) is lost: its
    /// change is marked not undoable, with the reason.
    ///
    /// Under [`Durability::Full`] the pass costs two rounds of flushes
    /// however many calls it seals: the contents and the records' new
    /// versions (written beside them) together, then, once the records
    /// took their names, their folder. The lock is not held across a
    /// flush, so calls being recorded meanwhile do not wait for the disk.
    pub fn seal(&self) -> Result<usize> {
        let ids: Vec<u64> =
            std::mem::take(&mut *self.to_seal.lock().unwrap_or_else(PoisonError::into_inner))
                .into_iter()
                .collect();
        let full = self.settings.durability == Durability::Full;
        // Read, hashed, stored and the new records written outside the
        // lock (contents are written once under their hash, so two
        // sealers agree).
        let mut sealing = Vec::new();
        let mut to_flush = Vec::new();
        for id in ids {
            let path = self.record_path("calls", id);
            let Some(record) = read_record(&path)? else {
                continue;
            };
            let keys = linked_keys(&record);
            if keys.is_empty() {
                continue;
            }
            let mut outcome: Vec<(String, std::result::Result<String, String>)> = Vec::new();
            for key in keys {
                let result = match self.content(&key) {
                    Ok(data) => Ok(self.store_packed(&data, &mut to_flush)?),
                    Err(err @ JournalError::ChangedInPlace { .. }) => Err(err.to_string()),
                    Err(err @ JournalError::MissingContent { .. }) => Err(err.to_string()),
                    Err(err) => return Err(err),
                };
                outcome.push((key, result));
            }
            let mut sealed = record.clone();
            if !apply_seal(&mut sealed, &outcome) {
                continue;
            }
            let temp = temp_beside(&path);
            let data = to_json(&sealed, &path)?;
            fs::write(&temp, &data).map_err(io_err("writing", &temp))?;
            to_flush.push(temp.clone());
            sealing.push(Sealing {
                path,
                read: record,
                temp,
                outcome,
            });
        }
        let result = self.seal_records(&sealing, &to_flush, full);
        for item in &sealing {
            let _ = fs::remove_file(&item.temp);
        }
        result
    }

    /// The second half of [`seal`](Self::seal): flushes the contents and
    /// the records' new versions, renames each record into place (under
    /// the lock, and only if it is still as read; else it is sealed again
    /// there), flushes the records' folder, then removes the links.
    fn seal_records(&self, sealing: &[Sealing], to_flush: &[PathBuf], full: bool) -> Result<usize> {
        if full && !to_flush.is_empty() {
            let mut files = Vec::new();
            open_for_flush(to_flush, &mut files)?;
            flush_files(&files, &self.objects())?;
        }
        let mut sealed = 0;
        let mut done = Vec::new();
        let mut again = Vec::new();
        {
            let _lock = self.lock()?;
            for item in sealing {
                // A content stored above is referred to by no record until
                // the record is renamed: another process's prune may have
                // swept it meanwhile. Then the record keeps its links (and
                // they their files) until the next pass.
                if item
                    .outcome
                    .iter()
                    .any(|(_, result)| result.as_ref().is_ok_and(|hash| !self.has_content(hash)))
                {
                    again.push(item.read.id);
                    continue;
                }
                // Read again: another process may have sealed or pruned it.
                let Some(mut now) = read_record(&item.path)? else {
                    continue;
                };
                if now == item.read {
                    fs::rename(&item.temp, &item.path).map_err(io_err("writing", &item.path))?;
                } else if apply_seal(&mut now, &item.outcome) {
                    let data = to_json(&now, &item.path)?;
                    write_replace(&item.path, &data, full)?;
                }
                sealed += 1;
                done.push(item.path.clone());
            }
        }
        if full && !done.is_empty() {
            let calls = self.settings.dir.join("calls");
            let files = vec![File::open(&calls).map_err(io_err("flushing", &calls))?];
            flush_files(&files, &calls)?;
        }
        self.to_seal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(again.iter().copied());
        for item in sealing {
            if again.contains(&item.read.id) {
                continue;
            }
            for (key, result) in &item.outcome {
                let path = self.object_path(key);
                // A reader that read the record before this finds the
                // content by the hash left here (swept by the next prune,
                // as nothing refers to it).
                if let Ok(hash) = result {
                    let _ = fs::write(forward_of(&path), hash);
                }
                let _ = fs::remove_file(&path);
            }
        }
        Ok(sealed)
    }

    /// Stores `data` compressed under its hash unless it is stored;
    /// returns the hash. Not flushed: its file is added to `to_flush`.
    fn store_packed(&self, data: &[u8], to_flush: &mut Vec<PathBuf>) -> Result<String> {
        let hash = hash(data);
        if self.has_content(&hash) {
            return Ok(hash);
        }
        let path = self.object_path(&hash);
        if let Some(parent) = path.parent()
            && !parent.is_dir()
        {
            fs::create_dir_all(parent).map_err(io_err("creating", parent))?;
            to_flush.push(parent.to_path_buf());
        }
        let packed = zstd::bulk::compress(data, 3).map_err(io_err("compressing", &path))?;
        let target = if packed.len() < data.len() {
            write_replace(&path.with_extension("zst"), &packed, false)?;
            path.with_extension("zst")
        } else {
            write_replace(&path, data, false)?;
            path
        };
        to_flush.push(target);
        Ok(hash)
    }

    /// Waits, on the background pass's thread, until no call has been
    /// filed for [`COMPACT_AFTER_PAUSE`] (at most [`COMPACT_DEFER_AT_MOST`]):
    /// the pass's flushes would otherwise share the disk with the next
    /// calls' (a file made while another's flush is under way waits for
    /// it). False when the thread holds the last handle of the journal:
    /// nobody uses it any more, and the next journal opened on the
    /// directory takes up what was left (its prune finds the calls to seal;
    /// its first pass lists every raw content).
    fn wait_for_a_pause(self: &Arc<Self>) -> bool {
        let waiting = std::time::Instant::now();
        loop {
            if Arc::strong_count(self) == 1 {
                return false;
            }
            let quiet = self.since_last_filed();
            if quiet >= COMPACT_AFTER_PAUSE || waiting.elapsed() >= COMPACT_DEFER_AT_MOST {
                return true;
            }
            std::thread::sleep(COMPACT_AFTER_PAUSE - quiet);
        }
    }

    /// How long ago the last call was filed by this journal.
    fn since_last_filed(&self) -> Duration {
        let filed = Duration::from_nanos(self.last_filed.load(Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(filed)
    }

    /// Starts a compaction pass on a thread of its own unless one runs.
    fn compact_in_background(self: &Arc<Self>) {
        let now = u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_filed.store(now, Ordering::Relaxed);
        // Nothing new to compress or seal: no pass (each lists every
        // content).
        let to_seal = !self
            .to_seal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty();
        if (self.raw_since_compact.load(Ordering::Relaxed) == 0 && !to_seal)
            || self.compacting.swap(true, Ordering::AcqRel)
        {
            return;
        }
        self.raw_since_compact.store(0, Ordering::Relaxed);
        let journal = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("journal-compact".into())
            .spawn(move || {
                // The lowest priority: sealing and compressing a large
                // content takes tens of milliseconds of processor time,
                // which the tools' next calls must not wait behind. (On
                // Linux the niceness is the thread's.) A failure leaves
                // the priority as it was: only speed depends on it.
                let _ = rustix::process::setpriority_process(None, 19);
                if !journal.wait_for_a_pause() {
                    journal.compacting.store(false, Ordering::Release);
                    return;
                }
                if let Err(err) = journal.compact_recent() {
                    tracing::warn!(%err, "journal compaction failed");
                }
                journal.compacting.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.compacting.store(false, Ordering::Release);
        }
    }

    /// Whether the content `hash` is stored (raw or compressed).
    fn has_content(&self, hash: &str) -> bool {
        let path = self.object_path(hash);
        path.exists() || path.with_extension("zst").exists()
    }

    /// Whether the journal may be past a bound, judging by what was added
    /// since the last prune.
    fn over_bounds(&self) -> bool {
        let (calls, bytes) = *self.baseline.lock().unwrap_or_else(PoisonError::into_inner);
        let calls = calls + self.since_prune.load(Ordering::Relaxed);
        let bytes = bytes + self.stored_since_prune.load(Ordering::Relaxed);
        calls > self.settings.max_calls as u64
            || bytes > self.settings.max_bytes
            // Age: a prune now and then.
            || self.since_prune.load(Ordering::Relaxed) >= 1000
    }
}

/// What a prune did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PruneReport {
    /// Calls removed.
    pub calls_dropped: usize,
    /// Stored contents removed.
    pub contents_dropped: usize,
    /// Calls kept.
    pub calls_kept: usize,
    /// Bytes of stored content kept.
    pub bytes_kept: u64,
}

/// A record being sealed ([`Journal::seal`]): where it is, as it was
/// read, its new version written beside it, and what became of each of
/// its linked contents.
struct Sealing {
    path: PathBuf,
    read: CallRecord,
    temp: PathBuf,
    outcome: Vec<(String, std::result::Result<String, String>)>,
}

/// Puts the outcome of sealing its linked contents in `record`: each key
/// replaced by its hash, or, for a content lost, by none with the reason.
/// Whether it changed.
fn apply_seal(
    record: &mut CallRecord,
    outcome: &[(String, std::result::Result<String, String>)],
) -> bool {
    let mut changed = false;
    for change in &mut record.changes {
        let ChangeRecord { change, .. } = change;
        for side in [&mut change.before, &mut change.after]
            .into_iter()
            .flatten()
        {
            let Some(key) = side.hash.clone() else {
                continue;
            };
            let Some((_, result)) = outcome.iter().find(|(k, _)| *k == key) else {
                continue;
            };
            changed = true;
            match result {
                Ok(hash) => side.hash = Some(hash.clone()),
                Err(reason) => {
                    side.hash = None;
                    change
                        .not_undoable
                        .get_or_insert_with(|| format!("its content was lost: {reason}"));
                }
            }
        }
    }
    changed
}

/// A temporary name beside `path` (`NAME.tmp.PID.N`, swept when its
/// process is gone). Unique per process and write, from one counter for
/// every writer: two threads may write one name (a content and its
/// compressed form share a stem; the sealer and a prune one record).
fn temp_beside(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(
        ".tmp.{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    PathBuf::from(temp)
}

/// Where a sealed linked content's hash is left for readers of older
/// records.
fn forward_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".sealed");
    PathBuf::from(name)
}

/// The linked contents ([`LINKED`]) a record names.
fn linked_keys(record: &CallRecord) -> Vec<String> {
    let mut keys = Vec::new();
    for change in &record.changes {
        for image in [&change.change.before, &change.change.after]
            .into_iter()
            .flatten()
        {
            if let Some(key) = &image.hash
                && is_linked(key)
                && !keys.contains(key)
            {
                keys.push(key.clone());
            }
        }
    }
    keys
}

/// Most raw contents a process notes for its background pass; past it
/// the pass lists every content instead.
const MAX_RAW_TRACKED: usize = 100_000;

/// How long the calls must pause before the background pass runs.
const COMPACT_AFTER_PAUSE: Duration = Duration::from_millis(250);

/// The longest the background pass waits for a pause: calls that never
/// pause do not keep their contents uncompressed.
const COMPACT_DEFER_AT_MOST: Duration = Duration::from_secs(10);

/// Most threads one round of flushes uses: each mostly waits for the
/// disk, and the filesystem folds flushes made at once into one commit.
const MAX_FLUSH_THREADS: usize = 16;

/// Opens the contents `paths` and the folders holding them, for a round
/// of flushes ([`flush_files`]). A content swept by a prune meanwhile is
/// skipped: the announcement naming it is refused under the lock.
fn open_for_flush(paths: &[PathBuf], out: &mut Vec<File>) -> Result<()> {
    let mut dirs: Vec<&Path> = paths.iter().filter_map(|p| p.parent()).collect();
    dirs.sort_unstable();
    dirs.dedup();
    for path in paths.iter().map(PathBuf::as_path).chain(dirs) {
        match File::open(path) {
            Ok(file) => out.push(file),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(io_err("flushing", path)(err)),
        }
    }
    Ok(())
}

/// Flushes `files` (contents, records, folders) all at once: scoped
/// threads over a shared index, the calling thread one of them.
fn flush_files(files: &[File], dir: &Path) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed: Mutex<Option<JournalError>> = Mutex::new(None);
    let work = || {
        loop {
            let at = next.fetch_add(1, Ordering::Relaxed);
            let Some(file) = files.get(at) else {
                break;
            };
            if let Err(err) = file.sync_all() {
                failed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert(io_err("flushing", dir)(err));
                break;
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..files.len().min(MAX_FLUSH_THREADS) {
            scope.spawn(work);
        }
        work();
    });
    match failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

fn referenced<'a>(records: impl Iterator<Item = &'a CallRecord>) -> HashSet<String> {
    let mut set = HashSet::new();
    for record in records {
        for change in &record.changes {
            for image in [&change.change.before, &change.change.after]
                .into_iter()
                .flatten()
            {
                if let Some(hash) = &image.hash {
                    set.insert(hash.clone());
                }
            }
        }
    }
    set
}

/// A call's record as the last line of its log, once the call has ended
/// ([`Journal::finish`]): the whole record, in place of the batches before
/// it. Its own shape (one field), so no batch line reads as one.
#[derive(Deserialize)]
struct Filed {
    filed: CallRecord,
}

/// [`Filed`] as it is written.
#[derive(Serialize)]
struct FiledRef<'a> {
    filed: &'a CallRecord,
}

/// `value` as JSON; a failure (which the journal's own types never cause)
/// names the file it was meant for.
fn to_json<T: Serialize + ?Sized>(value: &T, path: &Path) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|err| JournalError::Corrupt {
        path: path.to_path_buf(),
        message: err.to_string(),
    })
}

/// The record in `calls/`: a record alone (written whole, or sealed), or a
/// call's log ending with its [`Filed`] record.
fn read_record(path: &Path) -> Result<Option<CallRecord>> {
    let data = match fs::read(path) {
        Ok(data) => data,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io_err("reading", path)(err)),
    };
    let body = data.strip_suffix(b"\n").unwrap_or(&data);
    let last = match body.iter().rposition(|&byte| byte == b'\n') {
        Some(at) => &body[at + 1..],
        None => body,
    };
    if let Ok(Filed { filed }) = serde_json::from_slice::<Filed>(last) {
        return Ok(Some(filed));
    }
    // Not a filed log: the whole file is one record (a log whose last
    // line was torn is no record, and is reported as such).
    serde_json::from_slice(&data)
        .map(Some)
        .map_err(|err| JournalError::Corrupt {
            path: path.to_path_buf(),
            message: err.to_string(),
        })
}

/// A call's pending log ([`Journal::append_pending`]) as one record: the
/// fields of its last line, the changes of every line in order. A line
/// that does not parse ends it: a crash tore it before its batch was
/// flushed, so nothing it announced was made, and nothing follows it
/// (each line is appended only once the one before it is on disk). A log
/// of which no line parses announced nothing that was made: `Some` with
/// no change and id 0. (A record of one line without its newline, as
/// earlier versions wrote it, reads the same.)
fn read_pending(path: &Path) -> Result<Option<CallRecord>> {
    let data = match fs::read(path) {
        Ok(data) => data,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io_err("reading", path)(err)),
    };
    let mut merged: Option<CallRecord> = None;
    for line in data.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
        // Filed, but not yet renamed into `calls/`: the whole record.
        if let Ok(Filed { filed }) = serde_json::from_slice::<Filed>(line) {
            merged = Some(filed);
            continue;
        }
        let Ok(batch) = serde_json::from_slice::<CallRecord>(line) else {
            break;
        };
        merged = Some(match merged {
            None => batch,
            Some(mut so_far) => {
                so_far.changes.extend(batch.changes);
                CallRecord {
                    changes: so_far.changes,
                    ..batch
                }
            }
        });
    }
    Ok(Some(merged.unwrap_or_default()))
}

/// The process that writes the temporary file `name` (`NAME.tmp.PID.N`),
/// or `None` when `name` is not one.
fn temporary_owner(name: &str) -> Option<u32> {
    let (_, tail) = name.rsplit_once(".tmp.")?;
    let (pid, counter) = tail.split_once('.')?;
    counter.parse::<u64>().ok()?;
    pid.parse().ok()
}

fn process_alive(pid: u32) -> bool {
    use nix::errno::Errno;
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    !matches!(kill(Pid::from_raw(pid), None), Err(Errno::ESRCH))
}

enum Settled {
    Made,
    NotMade,
    Unknown,
}

/// What is at a path now, for resolving an interrupted change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskState {
    /// Nothing.
    Absent,
    /// A directory.
    Dir,
    /// A regular file (or anything else readable), by content hash.
    File(String),
}

/// What is at `path` now (a file by its content hash).
pub fn disk_hash(path: &Path) -> DiskState {
    match fs::symlink_metadata(path) {
        Err(_) => DiskState::Absent,
        Ok(meta) if meta.is_dir() => DiskState::Dir,
        Ok(_) => match fs::read(path) {
            Ok(data) => DiskState::File(hash(&data)),
            Err(_) => DiskState::Absent,
        },
    }
}

/// The hash the journal gives `data`.
pub fn hash(data: &[u8]) -> String {
    blake3::hash(data).to_hex().to_string()
}

struct CallState {
    journal: Arc<Journal>,
    record: Mutex<CallRecord>,
    /// Contents kept for this call and not yet flushed: the next
    /// announcement flushes them all at once, with its record.
    to_flush: Mutex<Vec<PathBuf>>,
    /// The call's pending log, once its first change was announced.
    log: Mutex<PendingLog>,
}

/// A call's pending log ([`Journal::append_pending`]): the open file, and
/// how many of the record's changes it holds.
#[derive(Debug, Default)]
struct PendingLog {
    file: Option<File>,
    logged: usize,
}

impl std::fmt::Debug for CallState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallState").finish_non_exhaustive()
    }
}

/// The call being recorded on this thread; what the write path reports
/// its changes to. Cheap to clone; [`Recorder::enter`] carries it to
/// another thread.
#[derive(Debug, Clone)]
pub struct Recorder(Arc<CallState>);

/// Identifies an announced change, to confirm ([`Recorder::done`]) or
/// withdraw ([`Recorder::abort`]) it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token(usize);

thread_local! {
    static CURRENT: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

/// The call being recorded on this thread, if any.
pub fn current() -> Option<Recorder> {
    CURRENT.with(|current| current.borrow().clone())
}

impl Recorder {
    /// The journal.
    pub fn journal(&self) -> &Arc<Journal> {
        &self.0.journal
    }

    /// The largest content stored; larger ones are recorded unstored.
    pub fn max_file_bytes(&self) -> u64 {
        self.0.journal.settings.max_file_bytes
    }

    /// Stores a content that exists nowhere else once the change is made
    /// (what a file held before); flushed, under [`Durability::Full`],
    /// with the next announcement ([`Recorder::intents`]), so many stored
    /// for one call cost one round of flushes.
    pub fn store(&self, data: &[u8]) -> Result<String> {
        let journal = &self.0.journal;
        let (hash, made) = journal.store_with(data, false)?;
        if journal.settings.durability == Durability::Full {
            self.flush_later(journal.object_path(&hash));
            if let Some(made) = made {
                // A new folder of contents: flushed itself, so its entry
                // in `objects/` is flushed too.
                self.flush_later(made);
            }
        }
        Ok(hash)
    }

    /// Keeps the file `name` of `dir` by a hard link (see
    /// [`Journal::link`]), flushed with the next announcement when `flush`
    /// (what the file held before a change; a new content is flushed by
    /// the write path itself). `None`: it could not be linked.
    pub fn link(
        &self,
        dir: impl std::os::fd::AsFd,
        name: &std::ffi::OsStr,
        stamp: LinkStamp,
        flush: bool,
    ) -> Result<Option<String>> {
        let journal = &self.0.journal;
        let key = journal.link(dir, name, stamp)?;
        if flush
            && journal.settings.durability == Durability::Full
            && let Some(key) = &key
        {
            self.flush_later(journal.object_path(key));
        }
        Ok(key)
    }

    /// Keeps a kernel copy of `file` (see [`Journal::copy_in`]), flushed
    /// with the next announcement.
    pub fn copy_in(&self, file: &mut File) -> Result<Option<String>> {
        let journal = &self.0.journal;
        let key = journal.copy_in(file)?;
        if journal.settings.durability == Durability::Full
            && let Some(key) = &key
        {
            self.flush_later(journal.object_path(key));
        }
        Ok(key)
    }

    fn flush_later(&self, path: PathBuf) {
        self.0
            .to_flush
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(path);
    }

    /// Stores a content about to be written; see
    /// [`Journal::store_unflushed`].
    pub fn store_after(&self, data: &[u8]) -> Result<String> {
        self.0.journal.store_unflushed(data)
    }

    /// Notes that this call undoes `ids`.
    pub fn note_undoes(&self, ids: &[u64]) {
        let mut record = self.0.record.lock().unwrap_or_else(PoisonError::into_inner);
        record.undoes.extend_from_slice(ids);
    }

    /// Announces a change about to be made: the call's pending record,
    /// with this change in it, is on disk (flushed, under
    /// [`Durability::Full`]) when this returns.
    pub fn intent(&self, change: Change) -> Result<Token> {
        self.intents(vec![change]).map(|tokens| tokens[0])
    }

    /// Announces several changes at once (one round of flushes for all).
    pub fn intents(&self, changes: Vec<Change>) -> Result<Vec<Token>> {
        let announcement = self.announce(changes)?;
        flush_files(announcement.files(), &self.0.journal.settings.dir)?;
        Ok(announcement.confirm())
    }

    /// Announces changes about to be made, without flushing: the pending
    /// record holds them, and the [`Announcement`] names the journal's
    /// files to flush (the contents stored for the call since the last
    /// announcement, its record, their folders; none under
    /// [`Durability::Relaxed`]). The caller flushes them in the same round
    /// as its own files, then [`confirm`](Announcement::confirm)s, and only
    /// then makes the changes: so a call costs the journal no round of
    /// flushes of its own. Dropped unconfirmed, the changes are withdrawn.
    pub fn announce(&self, changes: Vec<Change>) -> Result<Announcement> {
        let journal = &self.0.journal;
        let to_flush = std::mem::take(
            &mut *self
                .0
                .to_flush
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let _lock = match journal.lock() {
            Ok(lock) => lock,
            Err(err) => {
                self.keep_for_later(to_flush);
                return Err(err);
            }
        };
        // A content found already stored (so not written again) may have
        // been swept by a prune since, before this record referred to it;
        // checked under the lock, which prunes hold, so the record never
        // points at nothing. The write is then refused, not made unrecorded.
        for change in &changes {
            for image in [&change.before, &change.after].into_iter().flatten() {
                if let Some(hash) = &image.hash
                    && !journal.has_content(hash)
                {
                    self.keep_for_later(to_flush);
                    return Err(JournalError::MissingContent { hash: hash.clone() });
                }
            }
        }
        let mut files = Vec::new();
        if journal.settings.durability == Durability::Full
            && let Err(err) = open_for_flush(&to_flush, &mut files)
        {
            self.keep_for_later(to_flush);
            return Err(err);
        }
        let mut record = self.0.record.lock().unwrap_or_else(PoisonError::into_inner);
        if record.id == 0 {
            match journal.next_id() {
                Ok(id) => record.id = id,
                Err(err) => {
                    drop(record);
                    self.keep_for_later(to_flush);
                    return Err(err);
                }
            }
        }
        let first = record.changes.len();
        let count = changes.len();
        record
            .changes
            .extend(changes.into_iter().map(|change| ChangeRecord {
                change,
                state: ChangeState::Pending,
            }));
        let mut log = self.0.log.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(err) = journal.append_pending(&mut log, &record, &mut files) {
            record.changes.truncate(first);
            drop(log);
            drop(record);
            self.keep_for_later(to_flush);
            return Err(err);
        }
        Ok(Announcement {
            recorder: self.clone(),
            tokens: (first..first + count).map(Token).collect(),
            files,
            contents: to_flush,
            confirmed: false,
        })
    }

    fn keep_for_later(&self, to_flush: Vec<PathBuf>) {
        // Flushed with the next announcement.
        self.0
            .to_flush
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(to_flush);
    }

    /// Confirms an announced change: it was made.
    pub fn done(&self, token: Token) {
        let mut record = self.0.record.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(change) = record.changes.get_mut(token.0) {
            change.state = ChangeState::Done;
        }
    }

    /// Withdraws an announced change: it was not made.
    pub fn abort(&self, token: Token) {
        let mut record = self.0.record.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(change) = record.changes.get_mut(token.0) {
            // Marked, not removed, so later tokens keep their places; the
            // call's end drops it.
            change.state = ChangeState::Unknown;
            change.change.not_undoable = Some(ABORTED.to_owned());
        }
    }

    /// Records a change already made that needs no write-ahead record
    /// (a directory created: nothing is lost if the record is).
    pub fn record_made(&self, change: Change) -> Result<()> {
        let journal = &self.0.journal;
        let mut record = self.0.record.lock().unwrap_or_else(PoisonError::into_inner);
        if record.id == 0 {
            let _lock = journal.lock()?;
            record.id = journal.next_id()?;
        }
        record.changes.push(ChangeRecord {
            change,
            state: ChangeState::Done,
        });
        Ok(())
    }

    /// Adds a note to the call's record; a call with a note is filed even
    /// when it changed nothing.
    pub fn note(&self, text: impl Into<String>) -> Result<()> {
        let journal = &self.0.journal;
        let mut record = self.0.record.lock().unwrap_or_else(PoisonError::into_inner);
        if record.id == 0 {
            let _lock = journal.lock()?;
            record.id = journal.next_id()?;
        }
        record.notes.push(text.into());
        Ok(())
    }

    /// Makes this recorder the current one on this thread until the guard
    /// is dropped (for work a call hands to another thread).
    pub fn enter(&self) -> EnterGuard {
        let previous = CURRENT.with(|current| current.replace(Some(self.clone())));
        EnterGuard { previous }
    }
}

/// Changes announced and written to the call's pending record, not yet
/// flushed ([`Recorder::announce`]).
#[derive(Debug)]
pub struct Announcement {
    recorder: Recorder,
    tokens: Vec<Token>,
    files: Vec<File>,
    /// The contents flushed with it, kept for the next announcement if
    /// this one is withdrawn.
    contents: Vec<PathBuf>,
    confirmed: bool,
}

impl Announcement {
    /// The journal's files to flush before the changes are made.
    pub fn files(&self) -> &[File] {
        &self.files
    }

    /// The error for a failed flush of one of [`files`](Self::files).
    pub fn flush_failed(&self, err: io::Error) -> JournalError {
        io_err("flushing", &self.recorder.0.journal.settings.dir)(err)
    }

    /// The files are flushed: the changes may be made; their tokens, to
    /// confirm or withdraw each once tried.
    pub fn confirm(mut self) -> Vec<Token> {
        self.confirmed = true;
        std::mem::take(&mut self.tokens)
    }
}

impl Drop for Announcement {
    fn drop(&mut self) {
        if self.confirmed {
            return;
        }
        // Not flushed: none of the changes is made. The record on disk
        // still names them; the call's end (or a recovery) finds the disk
        // as it was and drops them.
        for token in &self.tokens {
            self.recorder.abort(*token);
        }
        self.recorder
            .keep_for_later(std::mem::take(&mut self.contents));
    }
}

const ABORTED: &str = "\u{0}aborted";

/// Restores the previous recorder of the thread when dropped.
#[derive(Debug)]
pub struct EnterGuard {
    previous: Option<Recorder>,
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}

/// A call being recorded ([`Journal::begin`]); dropping it files the
/// call's record.
#[derive(Debug)]
pub struct CallScope {
    call: Arc<CallState>,
    previous: Option<Recorder>,
}

impl CallScope {
    /// The call's id, once it changed something.
    pub fn id(&self) -> Option<u64> {
        let record = self
            .call
            .record
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        (record.id != 0).then_some(record.id)
    }

    /// Files the record now, reporting a failure (dropping does the same,
    /// logging it).
    pub fn finish(mut self) -> Result<Option<u64>> {
        self.file()
    }

    fn file(&mut self) -> Result<Option<u64>> {
        let previous = self.previous.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
        let record = {
            let mut record = self
                .call
                .record
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if record.id == 0 {
                return Ok(None);
            }
            let mut record = std::mem::take(&mut *record);
            record
                .changes
                .retain(|change| change.change.not_undoable.as_deref() != Some(ABORTED));
            for change in &mut record.changes {
                // A change still pending when the call ends was neither
                // confirmed nor withdrawn (a writer that returned early):
                // the disk says which.
                if change.state == ChangeState::Pending {
                    change.state = match self.call.journal.settle(&change.change) {
                        Settled::Made => ChangeState::Done,
                        Settled::NotMade => ChangeState::Pending,
                        Settled::Unknown => ChangeState::Unknown,
                    };
                }
            }
            // Still pending: the disk holds the old side, the change was
            // never made.
            record
                .changes
                .retain(|change| change.state != ChangeState::Pending);
            record
        };
        let journal = &self.call.journal;
        {
            let _lock = journal.lock()?;
            journal.finish(&record)?;
        }
        if !linked_keys(&record).is_empty() {
            journal
                .to_seal
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(record.id);
        }
        journal.since_prune.fetch_add(1, Ordering::Relaxed);
        if journal.over_bounds() {
            journal.prune()?;
        }
        journal.compact_in_background();
        Ok(Some(record.id))
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        if let Err(err) = self.file() {
            tracing::warn!(%err, "could not file a call's journal record");
        }
    }
}

#[cfg(test)]
mod tests;
