//! The running index: a background thread that builds the state, then
//! applies filesystem events to it, and the freshness barrier every query
//! passes first.
//!
//! The barrier: events are read by the watcher's own thread, so a query
//! cannot simply "read what is pending". Instead it creates a uniquely
//! named marker file in a private directory the same watcher watches and
//! waits until the applier thread has seen that marker's event. The kernel
//! queues a change's event inside the call that made it, and one watcher's
//! events arrive in order, so once the marker is seen, every change that
//! completed before the query started has been applied.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, Flag, ModifyKind};
use notify::{
    Event, EventKind, EventKindMask, RecommendedWatcher, RecursiveMode, WatchPathConfig, Watcher,
};

use crate::names::NameFilter;
use crate::query::Query;
use crate::state::{
    Candidates, Change, IndexStats, Limits, ListedFile, Snapshot, State, Tree, Watch, WatchFailure,
};
use crate::{DEFAULT_MAX_FILE_BYTES, DEFAULT_MEMORY_BUDGET};

/// The start of a marker directory's name; the owner's process id and a
/// random part follow.
const MARKER_PREFIX: &str = ".agent-tools-index-";

/// Removes the marker directories of processes that are gone. A server
/// that exits without dropping its index (killed, or leaving its tools to
/// the runtime) leaves its empty directory behind; the next index started
/// on the machine clears it. Only empty directories are removed.
fn remove_abandoned_marker_dirs(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix(MARKER_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(owner), None),
            Err(nix::errno::Errno::ESRCH)
        );
        if gone {
            // Fails, harmlessly, on a directory that is not empty.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// How many events the applier takes in one go (under one lock).
const MAX_BATCH: usize = 4096;

/// The settings of an index.
#[derive(Debug, Clone)]
pub struct IndexConfig {
    root: PathBuf,
    memory_budget: u64,
    max_file_bytes: u64,
    max_watches: Option<usize>,
    /// `None`: as long as the first build took, within
    /// [`MIN_BARRIER_WAIT`] and [`MAX_BARRIER_WAIT`].
    barrier_timeout: Option<Duration>,
    start_delay: Duration,
}

/// How long a fresh index waits before it starts: see
/// [`IndexConfig::start_delay`].
pub const DEFAULT_START_DELAY: Duration = Duration::from_millis(250);

/// The shortest a query waits for the index to catch up.
const MIN_BARRIER_WAIT: Duration = Duration::from_millis(500);
/// The longest a query waits for the index to catch up. A scan of the
/// tree reads about what the first build read, so once a query has waited
/// as long as the build took, scanning would have answered already; the
/// bounds keep a tiny tree from giving up on an ordinary burst of events
/// or on a busy machine's scheduling delays (hundreds of milliseconds at
/// a load of 15 on 2 cores), and a huge one from stalling a call for
/// long. Only the first call of a lag waits: later ones scan at once.
const MAX_BARRIER_WAIT: Duration = Duration::from_secs(2);

impl IndexConfig {
    /// An index of `root` with the default budget and caps.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        IndexConfig {
            root: root.into(),
            memory_budget: DEFAULT_MEMORY_BUDGET,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_watches: None,
            barrier_timeout: None,
            start_delay: DEFAULT_START_DELAY,
        }
    }

    /// The most memory the posting lists may take; files past it are
    /// candidates for every query instead of being indexed.
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.memory_budget = bytes;
        self
    }

    /// Files larger than this are not read, only listed (candidates for
    /// every query). A caller whose searcher refuses files above some size
    /// should pass at most that size, so every file it would report on is
    /// a candidate.
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// The most directories the index watches; needing more makes it
    /// unavailable, as when the system's own limit is reached.
    pub fn max_watches(mut self, watches: usize) -> Self {
        self.max_watches = Some(watches);
        self
    }

    /// How long a query waits for the index to catch up with the events
    /// queued before it, before it gives up and lets the caller scan. By
    /// default, as long as the first build took, but at least 0.5 s and
    /// at most 2 s. Once a query gave up, the next ones do not wait at all
    /// until the index has caught up with it.
    pub fn barrier_timeout(mut self, timeout: Duration) -> Self {
        self.barrier_timeout = Some(timeout);
        self
    }

    /// How long the index waits after it is started before it does
    /// anything (its set-up and its first build); until then it is
    /// building, so queries are not served and their callers walk. A
    /// server is started and called at once when a client runs one call
    /// per session, and that first call then ran beside the build: on two
    /// processors it waited on the build's threads (for the processors and
    /// for the process's memory map, which their allocations take). A build
    /// started afterwards still reads every file, so a change made
    /// meanwhile is in it. 0.25 s by default: an agent's first call comes
    /// after its model's first answer, later than that.
    pub fn start_delay(mut self, delay: Duration) -> Self {
        self.start_delay = delay;
        self
    }
}

/// What an index can do at the moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The first build is running.
    Building,
    /// Queries are answered from the index.
    Ready,
    /// Events were lost, or a rule outside the tree changed: the tree is
    /// being walked again; queries are not answered until it is done.
    CatchingUp(String),
    /// The index gave up (for example at the watch limit); queries are
    /// never answered.
    Unavailable(String),
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Building => f.write_str("building"),
            Status::Ready => f.write_str("ready"),
            Status::CatchingUp(why) => write!(f, "catching up: {why}"),
            Status::Unavailable(why) => write!(f, "unavailable: {why}"),
        }
    }
}

/// Why a query was not answered from the index; the caller scans instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotServed {
    /// The first build has not finished.
    Building,
    /// The tree is being walked again (see [`Status::CatchingUp`]).
    CatchingUp(String),
    /// The index is off for good (see [`Status::Unavailable`]).
    Unavailable(String),
    /// The index did not take in the events queued before the query in
    /// time.
    Lagging,
    /// The tree holds a path the scan reports in a note (an unreadable
    /// directory, a name that is not UTF-8, an ignore file that cannot be
    /// read), which the index cannot repeat.
    Unlisted(String),
    /// The directory asked about is not one the index covers (ignored,
    /// reached through a symlink, or absent): only a walk of it can answer.
    NotCovered(String),
}

impl NotServed {
    /// Whether the fallback is worth telling the user about: the index is
    /// on but failed, rather than merely starting or deferring to the scan
    /// for a path it does not represent.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            NotServed::CatchingUp(_) | NotServed::Unavailable(_) | NotServed::Lagging
        )
    }
}

impl std::fmt::Display for NotServed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotServed::Building => f.write_str("the workspace index is still being built"),
            NotServed::CatchingUp(why) => write!(f, "the workspace index is catching up ({why})"),
            NotServed::Unavailable(why) => write!(f, "the workspace index is unavailable ({why})"),
            NotServed::Lagging => {
                f.write_str("the workspace index did not catch up with recent changes in time")
            }
            NotServed::NotCovered(dir) => {
                write!(f, "the workspace index does not cover the directory {dir}")
            }
            NotServed::Unlisted(path) => write!(
                f,
                "the tree has a path the workspace index cannot represent: {path}"
            ),
        }
    }
}

enum Message {
    Event(notify::Result<Event>),
    /// Walk the whole tree again.
    Resync,
    Stop,
}

struct Shared {
    config: IndexConfig,
    state: RwLock<Option<State>>,
    status: Mutex<Status>,
    /// The highest marker number the applier has seen.
    applied: Mutex<u64>,
    /// The number of the last marker a query stopped waiting for (0:
    /// none). Until the applier has seen it, the index is known to lag
    /// and queries scan at once instead of waiting in turn.
    lagging_since: AtomicU64,
    applied_changed: Condvar,
    next_marker: AtomicU64,
    /// Set by the index's thread before the index is ready (no query
    /// passes a barrier before then).
    marker_dir: OnceLock<PathBuf>,
    stop: Arc<AtomicBool>,
    build_time: Mutex<Option<Duration>>,
}

impl Shared {
    fn set_status(&self, status: Status) {
        match &status {
            Status::Unavailable(why) | Status::CatchingUp(why) => {
                tracing::warn!(root = %self.config.root.display(), "workspace index {status}: {why}");
            }
            _ => tracing::info!(root = %self.config.root.display(), "workspace index {status}"),
        }
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) = status;
    }

    fn status(&self) -> Status {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A warm index of one workspace root. Dropping it stops its thread and
/// its watches.
pub struct WorkspaceIndex {
    shared: Arc<Shared>,
    sender: Sender<Message>,
    worker: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for WorkspaceIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceIndex")
            .field("root", &self.shared.config.root)
            .field("status", &self.shared.status())
            .finish()
    }
}

impl WorkspaceIndex {
    /// Starts indexing `config`'s root in the background. The index is
    /// usable at once: until it is ready, queries return
    /// [`NotServed::Building`]. Beyond resolving the root, everything
    /// happens on the index's own thread (clearing abandoned marker
    /// directories, which scans the temp folder, making its own, setting
    /// up the watcher, the build), so a server's first calls never wait
    /// for any of it.
    pub fn start(config: IndexConfig) -> WorkspaceIndex {
        let (sender, receiver) = channel();
        let root = std::fs::canonicalize(&config.root).unwrap_or_else(|_| config.root.clone());
        let config = IndexConfig { root, ..config };
        let shared = Arc::new(Shared {
            config,
            state: RwLock::new(None),
            status: Mutex::new(Status::Building),
            applied: Mutex::new(0),
            lagging_since: AtomicU64::new(0),
            applied_changed: Condvar::new(),
            next_marker: AtomicU64::new(0),
            marker_dir: OnceLock::new(),
            stop: Arc::new(AtomicBool::new(false)),
            build_time: Mutex::new(None),
        });
        let for_worker = Arc::clone(&shared);
        let events = sender.clone();
        let worker = std::thread::Builder::new()
            .name("workspace-index".into())
            .spawn(move || run(&for_worker, events, &receiver))
            .map_err(|err| {
                shared.set_status(Status::Unavailable(format!(
                    "cannot start its thread: {err}"
                )));
            })
            .ok();
        WorkspaceIndex {
            shared,
            sender,
            worker,
        }
    }

    /// The root, as the index resolved it.
    pub fn root(&self) -> &Path {
        &self.shared.config.root
    }

    /// What the index can do now.
    pub fn status(&self) -> Status {
        self.shared.status()
    }

    /// Waits until the index is ready (true) or has given up or the time is
    /// over (false).
    pub fn wait_ready(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            match self.status() {
                Status::Ready => return true,
                Status::Unavailable(_) => return false,
                Status::Building | Status::CatchingUp(_) => {}
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The files under `under` (a root-relative directory, `""` for the
    /// root), in path order, as the tree is when the call starts.
    pub fn files(&self, under: &str) -> Result<Vec<ListedFile>, NotServed> {
        self.serve(under, |state| state.list(under))
    }

    /// The listed files and the walked directories under `under`, as the
    /// tree is when the call starts, unsorted and sharing the index's
    /// paths: what [`files`](Self::files) and [`tree`](Self::tree) give
    /// together, for one wait on the watcher instead of two and no path
    /// copied.
    pub fn snapshot(&self, under: &str) -> Result<Snapshot, NotServed> {
        self.serve(under, |state| state.snapshot(under))
    }

    /// The files under `under` whose root-relative path `keep` accepts, in
    /// no particular order, as the tree is when the call starts (cheaper
    /// than [`files`](Self::files) when few are wanted).
    pub fn files_where(
        &self,
        under: &str,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<ListedFile>, NotServed> {
        self.serve(under, |state| state.list_where(under, keep))
    }

    /// [`files_where`](Self::files_where) for a glob: only the files whose
    /// base name `filter` allows (see [`NameFilter::from_glob`]) are looked
    /// up in the name index and given to `keep`, instead of every file;
    /// without a filter every file is.
    pub fn files_named(
        &self,
        under: &str,
        filter: Option<&NameFilter>,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<ListedFile>, NotServed> {
        self.serve(under, |state| state.list_named(under, filter, keep))
    }

    /// The files under `under` that may hold a match of `query` (see
    /// [`regex_query`](crate::regex_query)), in path order, as the tree is
    /// when the call starts: every file whose trigrams allow a match, and
    /// every file the index does not vouch for (too large, past the
    /// budget, unreadable, starting with a byte-order mark).
    pub fn candidates(&self, query: &Query, under: &str) -> Result<Vec<String>, NotServed> {
        self.candidate_files(query, under).map(|found| found.paths)
    }

    /// [`candidates`](Self::candidates) with how many of them are there
    /// only because they are past the memory budget
    /// ([`Candidates::over_budget`]), for the answer's note. Its
    /// [`pruned`](Candidates::pruned) is empty.
    pub fn candidate_files(&self, query: &Query, under: &str) -> Result<Candidates, NotServed> {
        self.serve(under, |state| state.candidate_files(query, under))
    }

    /// Everything under `under` as the tree is when the call starts,
    /// ignored files included (those whose root-relative path `keep`
    /// accepts): for queries that look at ignored files, which answer from
    /// this and walk each [pruned](Tree::pruned) directory themselves.
    pub fn tree(&self, under: &str, keep: impl Fn(&str) -> bool) -> Result<Tree, NotServed> {
        self.serve(under, |state| state.tree(under, None, keep))
    }

    /// [`tree`](Self::tree) for a glob: only the files whose base name
    /// `filter` allows are given to `keep` (every file without a filter).
    pub fn tree_named(
        &self,
        under: &str,
        filter: Option<&NameFilter>,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Tree, NotServed> {
        self.serve(under, |state| state.tree(under, filter, keep))
    }

    /// The candidates of `query` under `under` for a search that looks at
    /// ignored files too, as the tree is when the call starts: those of
    /// [`candidates`](Self::candidates), every ignored file, and every file
    /// whose indexed text stopped at a NUL byte at or past
    /// `reads_past_nul_from` (a searcher that only treats a NUL in the
    /// first bytes as binary reads on past a later one). The files in the
    /// [pruned](Candidates::pruned) directories are candidates too; the
    /// caller walks them.
    pub fn candidates_with_ignored(
        &self,
        query: &Query,
        under: &str,
        reads_past_nul_from: usize,
    ) -> Result<Candidates, NotServed> {
        self.serve(under, |state| {
            state.candidates_with_ignored(query, under, reads_past_nul_from)
        })
    }

    /// Figures about the index, once built.
    pub fn stats(&self) -> Option<IndexStats> {
        let state = self
            .shared
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        state.as_ref().map(State::stats)
    }

    /// How long the first build took, once done.
    pub fn build_time(&self) -> Option<Duration> {
        *self
            .shared
            .build_time
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Acts as if the event queue had overflowed: the index stops answering
    /// and walks the whole tree again. The kernel's own overflow takes the
    /// same path; this lets it be forced.
    pub fn inject_overflow(&self) {
        let event = Event::new(EventKind::Other).set_flag(Flag::Rescan);
        let _ = self.sender.send(Message::Event(Ok(event)));
    }

    fn serve<T>(&self, under: &str, answer: impl FnOnce(&State) -> T) -> Result<T, NotServed> {
        self.check_status()?;
        self.barrier()?;
        self.check_status()?;
        let read = || {
            self.shared
                .state
                .read()
                .unwrap_or_else(PoisonError::into_inner)
        };
        let mut guard = read();
        // Files with other names may have been written through one that
        // made no event here: those whose stamp moved are read again.
        let changed = guard.as_ref().map(State::linked_changed);
        if let Some(changed) = changed.filter(|c| !c.is_empty()) {
            drop(guard);
            if let Some(state) = self
                .shared
                .state
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .as_mut()
            {
                state.reread(&changed);
            }
            guard = read();
        }
        let Some(state) = guard.as_ref() else {
            return Err(NotServed::Building);
        };
        if state.global_excludes_changed() {
            let _ = self.sender.send(Message::Resync);
            return Err(NotServed::CatchingUp(
                "the global git excludes file changed".into(),
            ));
        }
        if let Some(path) = state.first_trouble() {
            return Err(NotServed::Unlisted(path.to_string()));
        }
        if !state.covers_dir(under) {
            return Err(NotServed::NotCovered(under.to_string()));
        }
        Ok(answer(state))
    }

    fn check_status(&self) -> Result<(), NotServed> {
        match self.status() {
            Status::Ready => Ok(()),
            Status::Building => Err(NotServed::Building),
            Status::CatchingUp(why) => Err(NotServed::CatchingUp(why)),
            Status::Unavailable(why) => Err(NotServed::Unavailable(why)),
        }
    }

    /// How long a query waits for the index to catch up.
    fn barrier_wait(&self) -> Duration {
        self.shared.config.barrier_timeout.unwrap_or_else(|| {
            self.build_time()
                .unwrap_or(MAX_BARRIER_WAIT)
                .clamp(MIN_BARRIER_WAIT, MAX_BARRIER_WAIT)
        })
    }

    /// Waits until every event queued before now has been applied.
    fn barrier(&self) -> Result<(), NotServed> {
        let shared = &self.shared;
        let behind = shared.lagging_since.load(Ordering::SeqCst);
        if behind != 0 {
            let applied = *shared
                .applied
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if applied < behind {
                // Still behind the marker an earlier query gave up on:
                // waiting again would only add that wait to the scan.
                return Err(NotServed::Lagging);
            }
            let _ = shared.lagging_since.compare_exchange(
                behind,
                0,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
        let Some(marker_dir) = shared.marker_dir.get() else {
            return Err(NotServed::Building);
        };
        let number = shared.next_marker.fetch_add(1, Ordering::SeqCst) + 1;
        let marker = marker_dir.join(number.to_string());
        if let Err(err) = std::fs::File::create(&marker) {
            return Err(NotServed::Unavailable(format!(
                "cannot write a sync marker: {err}"
            )));
        }
        let _ = std::fs::remove_file(&marker);
        let deadline = Instant::now() + self.barrier_wait();
        let mut applied = shared
            .applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while *applied < number {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                shared.lagging_since.fetch_max(number, Ordering::SeqCst);
                return Err(NotServed::Lagging);
            }
            applied = shared
                .applied_changed
                .wait_timeout(applied, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Ok(())
    }
}

impl Drop for WorkspaceIndex {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let _ = self.sender.send(Message::Stop);
        if let Some(worker) = self.worker.take() {
            // Ends the start delay at once.
            worker.thread().unpark();
            let _ = worker.join();
        }
    }
}

/// The watches of one index, through one watcher.
struct Watches {
    watcher: RecommendedWatcher,
    watched: HashSet<PathBuf>,
    limit: Option<usize>,
}

impl Watch for Watches {
    fn watch(&mut self, dir: &Path) -> Result<(), WatchFailure> {
        let known = self.watched.contains(dir);
        if !known && self.limit.is_some_and(|limit| self.watched.len() >= limit) {
            return Err(WatchFailure::Limit);
        }
        // Asked of the watcher even when this set already holds the name:
        // the watcher drops the watches at and below a name on its own when
        // it reads that the name was renamed away or removed, so a name held
        // here may have lost its watch (the watcher keeps one it still has).
        // Never through a symlink: the name is checked against the
        // directory listed afterwards (see `State::walk`).
        let config =
            WatchPathConfig::new(RecursiveMode::NonRecursive).with_dereference_symlinks(false);
        match self.watcher.watch_with(dir, config) {
            Ok(()) => {
                self.watched.insert(dir.to_path_buf());
                Ok(())
            }
            Err(err) => match err.kind {
                notify::ErrorKind::MaxFilesWatch => Err(WatchFailure::Limit),
                // Gone already: the event of its removal follows.
                notify::ErrorKind::PathNotFound => {
                    self.watched.remove(dir);
                    Ok(())
                }
                notify::ErrorKind::Io(ref io) if io.kind() == std::io::ErrorKind::NotFound => {
                    self.watched.remove(dir);
                    Ok(())
                }
                _ => Err(WatchFailure::Other(err.to_string())),
            },
        }
    }

    fn unwatch(&mut self, dir: &Path) {
        if self.watched.remove(dir) {
            let _ = self.watcher.unwatch(dir);
        }
    }
}

fn failure_status(failure: &WatchFailure) -> Status {
    match failure {
        WatchFailure::Limit => Status::Unavailable(
            "the limit on watched directories was reached (on Linux, raise fs.inotify.max_user_watches); searches scan the tree".into(),
        ),
        WatchFailure::Other(why) => {
            Status::Unavailable(format!("the tree cannot be watched: {why}"))
        }
    }
}

/// The background thread: build, then apply events until told to stop.
fn run(shared: &Shared, events: Sender<Message>, receiver: &Receiver<Message>) {
    if !wait_to_start(shared) {
        return;
    }
    // Off the caller's path: this scans the system's temp folder.
    remove_abandoned_marker_dirs(&std::env::temp_dir());
    let markers = match tempfile::Builder::new()
        .prefix(&format!("{MARKER_PREFIX}{}-", std::process::id()))
        .tempdir()
    {
        Ok(dir) => dir,
        Err(err) => {
            shared.set_status(Status::Unavailable(format!(
                "no directory for sync markers: {err}"
            )));
            return;
        }
    };
    let marker_dir =
        std::fs::canonicalize(markers.path()).unwrap_or_else(|_| markers.path().into());
    let marker_dir = shared.marker_dir.get_or_init(|| marker_dir).as_path();
    // Opens and reads are not asked for: every read by a tool (and by the
    // index itself) would wake this thread for nothing, a cost each small
    // call paid. A write still shows as a change of data, and its close.
    let asked = EventKindMask::CORE | EventKindMask::ACCESS_CLOSE;
    let watcher = RecommendedWatcher::new(
        move |event| {
            let _ = events.send(Message::Event(event));
        },
        notify::Config::default().with_event_kinds(asked),
    );
    let watcher = match watcher {
        Ok(watcher) => watcher,
        Err(err) => {
            shared.set_status(Status::Unavailable(format!(
                "file watching is not available here: {err}"
            )));
            return;
        }
    };
    let mut watches = Watches {
        watcher,
        watched: HashSet::new(),
        limit: shared.config.max_watches,
    };
    if let Err(err) = watches
        .watcher
        .watch(marker_dir, RecursiveMode::NonRecursive)
    {
        shared.set_status(Status::Unavailable(format!(
            "file watching is not available here: {err}"
        )));
        return;
    }
    let root = shared.config.root.clone();
    let limits = Limits {
        max_file_bytes: shared.config.max_file_bytes,
        memory_budget: shared.config.memory_budget,
    };
    // When the system's temp folder lies inside the root, the marker
    // directory is left out of the file table (a walk finds it empty).
    let hidden = marker_dir
        .strip_prefix(&root)
        .ok()
        .and_then(|rel| rel.to_str())
        .map(str::to_string);
    let started = Instant::now();
    // The build runs on a thread of its own at the lowest priority, as its
    // readers do, so a fresh server's first calls are not slowed by it; this
    // thread keeps the ordinary priority to apply events, which queries
    // wait for.
    let built = crate::hooks::around_build(|| {
        std::thread::scope(|scope| {
            let build = std::thread::Builder::new()
                .name("workspace-index-build".into())
                .spawn_scoped(scope, || {
                    crate::state::yield_to_the_tools();
                    State::build(root, limits, hidden, &mut watches, Arc::clone(&shared.stop))
                });
            match build {
                Ok(build) => build
                    .join()
                    .unwrap_or_else(|_| Err(WatchFailure::Other("the build panicked".into()))),
                Err(err) => Err(WatchFailure::Other(format!(
                    "cannot start the build's thread: {err}"
                ))),
            }
        })
    });
    let state = match built {
        Ok(state) => state,
        Err(failure) => {
            shared.set_status(failure_status(&failure));
            return;
        }
    };
    if shared.stop.load(Ordering::Relaxed) {
        return;
    }
    *shared.state.write().unwrap_or_else(PoisonError::into_inner) = Some(state);
    *shared
        .build_time
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(started.elapsed());
    shared.set_status(Status::Ready);

    while let Ok(first) = receiver.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(message) => batch.push(message),
                Err(_) => break,
            }
        }
        match apply_batch(shared, marker_dir, batch, &mut watches) {
            Ok(true) => {}
            Ok(false) => return,
            Err(failure) => {
                *shared.state.write().unwrap_or_else(PoisonError::into_inner) = None;
                shared.set_status(failure_status(&failure));
                // Release queries waiting on the barrier; they see the status.
                release_all(shared);
                return;
            }
        }
    }
}

fn release_all(shared: &Shared) {
    let mut applied = shared
        .applied
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    *applied = u64::MAX;
    shared.applied_changed.notify_all();
}

/// Applies a batch of messages in order. `Ok(false)` means stop.
fn apply_batch(
    shared: &Shared,
    marker_dir: &Path,
    batch: Vec<Message>,
    watches: &mut Watches,
) -> Result<bool, WatchFailure> {
    // Opening and reading files (every search does) makes events too; a
    // batch of only those and sync markers needs no write lock.
    let touches_state = batch.iter().any(|message| match message {
        Message::Event(Ok(event)) => {
            event.need_rescan()
                || (!is_read_only_access(&event.kind)
                    && event.paths.iter().any(|path| !path.starts_with(marker_dir)))
        }
        _ => true,
    });
    if !touches_state {
        let markers = batch.iter().filter_map(|message| match message {
            Message::Event(Ok(event)) => Some(
                event
                    .paths
                    .iter()
                    .filter_map(|path| marker_number(path, marker_dir)),
            ),
            _ => None,
        });
        publish(shared, markers.flatten().max());
        return Ok(true);
    }
    let mut guard = shared.state.write().unwrap_or_else(PoisonError::into_inner);
    let Some(state) = guard.as_mut() else {
        return Ok(false);
    };
    let mut seen_marker = None;
    // Each path is brought up to date from what is on disk now, so one
    // refresh per path and batch does what several would: a write's
    // create, modify, close and rename events read the file once.
    let mut refreshed: HashSet<PathBuf> = HashSet::new();
    // The paths some event of the batch says were created, removed or
    // renamed (see `Change::Relinked`).
    let relinked: HashSet<PathBuf> = batch
        .iter()
        .filter_map(|message| match message {
            Message::Event(Ok(event)) if is_relink(&event.kind) => Some(event.paths.iter()),
            _ => None,
        })
        .flatten()
        .cloned()
        .collect();
    for message in batch {
        let event = match message {
            Message::Stop => return Ok(false),
            Message::Resync => {
                resync(
                    shared,
                    state,
                    watches,
                    "the global git excludes file changed",
                )?;
                continue;
            }
            Message::Event(Err(err)) => {
                resync(
                    shared,
                    state,
                    watches,
                    &format!("the watcher failed: {err}"),
                )?;
                continue;
            }
            Message::Event(Ok(event)) => event,
        };
        if event.need_rescan() {
            resync(
                shared,
                state,
                watches,
                "events were lost (the event queue overflowed)",
            )?;
            continue;
        }
        if is_read_only_access(&event.kind) {
            continue;
        }
        for path in event.paths {
            if path.starts_with(marker_dir) {
                if let Some(number) = marker_number(&path, marker_dir) {
                    seen_marker = Some(seen_marker.map_or(number, |m: u64| m.max(number)));
                }
                continue;
            }
            if refreshed.contains(&path) {
                continue;
            }
            refreshed.insert(path.clone());
            let path = &path;
            let Ok(rel) = path.strip_prefix(state.root()) else {
                continue;
            };
            match rel.to_str() {
                Some(rel) => {
                    let rel = rel.to_string();
                    let change = if relinked.contains(path) {
                        Change::Relinked
                    } else {
                        Change::Touched
                    };
                    state.refresh(&rel, change, watches)?;
                }
                None => {
                    let exists = std::fs::symlink_metadata(path).is_ok();
                    let parent = rel.parent().and_then(Path::to_str).unwrap_or("");
                    // Only a name the walk would meet (in a covered
                    // directory) is worth a note.
                    if state.covers_dir(parent) {
                        state.note_unaddressable(rel.to_string_lossy().into_owned(), exists);
                    }
                }
            }
        }
    }
    state.pack();
    drop(guard);
    publish(shared, seen_marker);
    Ok(true)
}

/// The number of a sync marker's path.
fn marker_number(path: &Path, marker_dir: &Path) -> Option<u64> {
    path.strip_prefix(marker_dir).ok()?.to_str()?.parse().ok()
}

/// Tells waiting queries that every event up to marker `number` is applied.
fn publish(shared: &Shared, number: Option<u64>) {
    if let Some(number) = number {
        let mut applied = shared
            .applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *applied = (*applied).max(number);
        shared.applied_changed.notify_all();
    }
}

/// Events that say a name was created, removed or renamed.
fn is_relink(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
    )
}

/// Waits out the start delay (see [`IndexConfig::start_delay`]); false
/// when the index was dropped meanwhile. `Drop` unparks this thread, so
/// that is seen at once.
fn wait_to_start(shared: &Shared) -> bool {
    let until = Instant::now() + shared.config.start_delay;
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::park_timeout(until - now);
    }
}

/// Events that say a file was opened or read, not changed: the index's own
/// reads and every search cause them.
fn is_read_only_access(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
        EventKind::Access(_) => true,
        _ => false,
    }
}

fn resync(
    shared: &Shared,
    state: &mut State,
    watches: &mut Watches,
    why: &str,
) -> Result<(), WatchFailure> {
    shared.set_status(Status::CatchingUp(why.to_string()));
    state.resync("", watches)?;
    state.pack();
    shared.set_status(Status::Ready);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lagging_index_is_bypassed_at_once_until_it_catches_up() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("a.txt"), "alpha\n")?;
        let wait = Duration::from_millis(300);
        let index = WorkspaceIndex::start(IndexConfig::new(dir.path()).barrier_timeout(wait));
        assert!(index.wait_ready(Duration::from_secs(60)));
        assert!(index.files("").is_ok());
        // Hold the state so the applier cannot take in the next change.
        let held = index
            .shared
            .state
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        std::fs::write(dir.path().join("b.txt"), "beta\n")?;
        let started = Instant::now();
        assert_eq!(index.barrier(), Err(NotServed::Lagging));
        assert!(started.elapsed() >= wait);
        // The next query does not wait again while the index is behind.
        let started = Instant::now();
        assert_eq!(index.barrier(), Err(NotServed::Lagging));
        assert!(
            started.elapsed() < wait / 3,
            "waited {:?}",
            started.elapsed()
        );
        drop(held);
        // Caught up: answered from the index again, with the change.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match index.files("") {
                Ok(files) => {
                    assert_eq!(files.len(), 2, "{files:?}");
                    break;
                }
                Err(NotServed::Lagging) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(other) => panic!("{other}"),
            }
        }
        Ok(())
    }

    #[test]
    fn a_directory_renamed_away_and_back_is_still_watched() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        std::fs::create_dir_all(root.join("d/sub"))?;
        std::fs::write(root.join("d/sub/inside.txt"), "inside\n")?;
        let index =
            WorkspaceIndex::start(IndexConfig::new(root).barrier_timeout(Duration::from_secs(60)));
        assert!(index.wait_ready(Duration::from_secs(60)));
        assert_eq!(index.files("").map(|f| f.len()), Ok(1));
        {
            // Both renames are made before the applier takes in either, so
            // it finds the same directory under the name: the watcher has
            // dropped the watches of `d` and `d/sub` on reading the first.
            let _held = index
                .shared
                .state
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            std::fs::rename(root.join("d"), root.join("aside"))?;
            std::fs::rename(root.join("aside"), root.join("d"))?;
        }
        assert_eq!(index.files("").map(|f| f.len()), Ok(1));
        std::fs::write(root.join("d/later.txt"), "later\n")?;
        std::fs::write(root.join("d/sub/deeper.txt"), "deeper\n")?;
        let files: Vec<String> = index
            .files("")
            .unwrap_or_else(|why| panic!("{why}"))
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(
            files,
            ["d/later.txt", "d/sub/deeper.txt", "d/sub/inside.txt"],
            "changes inside the directory after it came back were missed"
        );
        Ok(())
    }

    #[test]
    fn a_fresh_index_starts_after_its_delay_and_holds_what_was_written_meanwhile()
    -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("a.txt"), "alpha\n")?;
        let delay = Duration::from_millis(400);
        let started = Instant::now();
        let index = WorkspaceIndex::start(IndexConfig::new(dir.path()).start_delay(delay));
        // Not served while waiting: the caller walks.
        assert_eq!(index.files("").map(|f| f.len()), Err(NotServed::Building));
        std::fs::write(dir.path().join("b.txt"), "beta\n")?;
        assert!(index.wait_ready(Duration::from_secs(60)));
        assert!(started.elapsed() >= delay, "{:?}", started.elapsed());
        let files: Vec<String> = index
            .files("")
            .unwrap_or_else(|why| panic!("{why}"))
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(files, ["a.txt", "b.txt"]);
        Ok(())
    }

    #[test]
    fn an_index_dropped_during_its_start_delay_ends_at_once() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let index = WorkspaceIndex::start(
            IndexConfig::new(dir.path()).start_delay(Duration::from_secs(600)),
        );
        assert_eq!(index.status(), Status::Building);
        let started = Instant::now();
        drop(index);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn the_default_wait_follows_the_build_time_within_bounds() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let index = WorkspaceIndex::start(IndexConfig::new(dir.path()));
        assert!(index.wait_ready(Duration::from_secs(60)));
        let wait = index.barrier_wait();
        assert!(
            wait >= MIN_BARRIER_WAIT && wait <= MAX_BARRIER_WAIT,
            "{wait:?}"
        );
    }
}
