//! The index's data: the file table, the directories it covers with their
//! ignore rules, and the trigram segments; how it is built and how one
//! changed path is brought up to date.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::hash::BuildHasher;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use ignore::gitignore::Gitignore;

use cap_std::fs::Dir;

use crate::names::{NameFilter, NameIndex};
use crate::paths::{PathList, PathRef, PathStore};
use crate::postings::{Batch, Segment, Trigram, TrigramCollector};
use crate::query::{Postings, Query, evaluate};
use agent_tools_walk::beneath;
use agent_tools_walk::rules::{
    self, RULE_FILES, RuleLevel, RuleTrouble, global_rules, is_ignored, is_within, join, level_for,
    name_of, parent_of,
};

/// A file whose first NUL byte lies at or past this offset is always a
/// candidate. Before it, the searcher's binary check (which looks at the
/// first block of a file, at least this large) makes a multiline search
/// give up on the file, and a line search only reads up to the NUL, so
/// indexing the bytes before the NUL is exact; past it, a multiline search
/// would read on.
pub(crate) const NUL_CHECK_BYTES: usize = 8 * 1024;

/// Files re-indexed since the last compaction that are kept as loose lists
/// before being packed into a segment.
const LOOSE_FILES: usize = 64;
/// Segments kept before they are merged into one.
const MAX_SEGMENTS: usize = 8;
/// Files read per unit of build work.
const BUILD_CHUNK: usize = 256;
/// (trigram, file) pairs a build reader gathers before sorting them into a
/// segment: 16 MiB of pairs (4 bytes each), some seven thousand files of
/// source, so a tree of 100,000 files needs no merge but the last.
const BATCH_PAIRS: usize = 1 << 22;
/// What one posting of a re-read file costs, as the budget counts it,
/// before any lists are packed to measure (afterwards their own average
/// is used: about 0.45 bytes on generated source trees, where dense lists
/// are bitmaps; about 1.2 where most are varints).
const BUDGET_BYTES_PER_POSTING: u64 = 2;

/// The limits of one index.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub max_file_bytes: u64,
    pub memory_budget: u64,
}

/// Why a file is a candidate for every query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlwaysReason {
    /// Larger than the size cap.
    TooLarge,
    /// Starts with a byte-order mark: the searcher transcodes it first.
    ByteOrderMark,
    /// A NUL byte past the first block (a multiline search reads on).
    LateNul,
    /// It could not be read.
    Unreadable,
    /// Past the memory budget.
    OverBudget,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    /// Its trigrams are in the index.
    Indexed,
    /// A candidate for every query.
    Always(AlwaysReason),
    /// Starts with a NUL byte: the searcher stops before reading anything,
    /// so it never holds a match; listed, never a candidate.
    BinaryFromStart,
    /// Ignored by the ignore files (or named `.git`): listed only for
    /// queries that include ignored files, for which it is always a
    /// candidate; never read.
    Ignored,
    /// Replaced or removed; its postings linger until the next merge.
    Dead,
}

/// What is compared to tell whether a file changed without an event.
///
/// Kept in 40 bytes (it is most of a file's record, a million of them in
/// a large tree): both times as nanoseconds since the epoch, which holds
/// every time from 1678 to 2262 exactly, and the link count in 32 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: u64,
    /// The modification time, in nanoseconds since the epoch.
    modified_ns: i64,
    inode: u64,
    /// The status change time, in nanoseconds since the epoch.
    ctime_ns: i64,
    /// Names the file has (`st_nlink`, at most `u32::MAX`). A file with
    /// more than one may be written through a name outside the watched
    /// directories, which gives no event here.
    links: u32,
}

impl Stamp {
    /// A stamp of nothing (a file that could not be looked at).
    const NONE: Stamp = Stamp {
        size: 0,
        modified_ns: 0,
        inode: 0,
        ctime_ns: 0,
        links: 0,
    };

    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            size: meta.len(),
            modified_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            inode: meta.ino(),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
            links: u32::try_from(meta.nlink()).unwrap_or(u32::MAX),
        }
    }

    /// The modification time.
    fn modified(&self) -> SystemTime {
        let since = Duration::from_nanos(self.modified_ns.unsigned_abs());
        if self.modified_ns >= 0 {
            SystemTime::UNIX_EPOCH + since
        } else {
            SystemTime::UNIX_EPOCH - since
        }
    }

    /// Whether the file has other names (hard links).
    fn is_linked(&self) -> bool {
        self.links > 1
    }
}

/// Seconds and nanoseconds since the epoch as nanoseconds (saturating
/// past the years 1678 and 2262).
fn nanos(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}

/// The most hard-linked files whose stamp a query checks before it is
/// answered. Past this (a tree made with `cp -al`, say), checking would
/// cost more than the index saves; they stay candidates for every search,
/// but their listed size and time may lag a write through another name.
const MAX_LINKED_CHECKED: usize = 1024;

#[derive(Debug)]
struct FileRecord {
    /// Its path, in the table's [`PathStore`].
    path: PathRef,
    stamp: Stamp,
    content: Content,
    /// Bytes of text indexed (0 unless indexed).
    text_bytes: u64,
    postings: u64,
    /// Where the indexed text stopped at a NUL byte (`u32::MAX`: it did
    /// not). A searcher that reads on past a NUL must take the file.
    nul_at: u32,
}

#[derive(Debug)]
struct DirRecord {
    /// The rules that apply to the directory's entries (its own included).
    rules: Option<Arc<RuleLevel>>,
    inode: u64,
}

/// A file as listed by the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedFile {
    /// Relative to the root, `/`-separated.
    pub path: String,
    /// Its modification time when last seen.
    pub modified: SystemTime,
    /// Its size when last seen.
    pub size: u64,
}

/// The files and directories the index lists below a directory, unsorted,
/// taken in one look: for a caller that compares two of them, such as the
/// listing before and after a command. Each path is its own shared string,
/// so a caller keeps them as keys without copying them again.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The listed files (not ignored), in no particular order.
    pub files: Vec<SnapshotFile>,
    /// The directories the index walks strictly below the directory asked
    /// about, in no particular order.
    pub dirs: Vec<String>,
}

/// A file of a [`Snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotFile {
    /// Relative to the root, `/`-separated.
    pub path: Arc<str>,
    /// Its size when last seen.
    pub size: u64,
    /// Its modification time when last seen.
    pub modified: SystemTime,
}

/// Everything the index holds below a directory, ignored files included,
/// for queries that look at ignored files too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    /// The regular files, ignored ones included (those a `keep` test
    /// accepted, when one was given), in no particular order.
    pub files: Vec<ListedFile>,
    /// The directories the index walks (and watches) strictly below the
    /// directory asked about, in no particular order.
    pub dirs: Vec<String>,
    /// The directories strictly below it the index records but does not
    /// enter (ignored ones, `.git`): the caller walks each of them to see
    /// what they hold. Sorted; none lies inside another.
    pub pruned: Vec<String>,
}

/// The candidates of a query (see
/// [`WorkspaceIndex::candidate_files`](crate::WorkspaceIndex::candidate_files)
/// and [`candidates_with_ignored`](crate::WorkspaceIndex::candidates_with_ignored)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Candidates {
    /// The files that may hold a match, ignored ones included (every one
    /// of those is a candidate), in path order.
    pub paths: Vec<String>,
    /// The directories the index does not enter, as in [`Tree::pruned`]:
    /// every file in them is a candidate; the caller walks them.
    pub pruned: Vec<String>,
    /// How many of `paths` are there only because they are past the
    /// memory budget: their text is not in the index, so every search
    /// reads them whole. An answer should say so: past the budget, a
    /// search costs more the more files are left out.
    pub over_budget: u64,
}

/// Figures about an index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexStats {
    /// Files in the table.
    pub files: u64,
    /// Files whose text is in the trigram index.
    pub indexed_files: u64,
    /// Files that are candidates for every query.
    pub always_candidates: u64,
    /// Ignored files held (listed, never read).
    pub ignored_files: u64,
    /// Directories recorded but not entered (ignored ones, `.git`).
    pub pruned_directories: u64,
    /// Bytes of text indexed.
    pub text_bytes: u64,
    /// (trigram, file) pairs held.
    pub postings: u64,
    /// Heap bytes of the posting lists and trigram tables.
    pub postings_bytes: u64,
    /// Heap bytes of the file and directory tables (estimated).
    pub table_bytes: u64,
    /// Directories covered.
    pub directories: u64,
}

impl IndexStats {
    /// All the memory the index holds (estimated).
    pub fn memory_bytes(&self) -> u64 {
        self.postings_bytes + self.table_bytes
    }
}

/// Installs and removes directory watches.
pub(crate) trait Watch {
    fn watch(&mut self, dir: &Path) -> Result<(), WatchFailure>;
    fn unwatch(&mut self, dir: &Path);
}

/// What an event said happened at the path it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Its data or metadata changed.
    Touched,
    /// It was created, removed or renamed. The watcher drops the watches
    /// at and below a name when it reads such an event from the name's
    /// parent, even if the same directory is back under that name by the
    /// time the event is applied (renamed away and back): such a directory
    /// is walked again, which watches it anew.
    Relinked,
}

/// Why a watch could not be set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchFailure {
    /// The system's (or the configured) limit on watches was reached.
    Limit,
    /// Another failure, in words.
    Other(String),
}

/// File ids by path: a hash table of bare ids (4 bytes a slot) whose keys
/// are the paths in the file records, instead of a map holding a second
/// pointer to each path (24 bytes a slot): at a million files that is
/// about 40 MB less. Every id in it must name a record whose path is its
/// key; the table is cleared before the records are renumbered.
#[derive(Default)]
struct PathIds {
    table: hashbrown::HashTable<u32>,
    /// foldhash rather than the standard SipHash: building a million-file
    /// table hashed every path once, and again at each growth, and SipHash
    /// made that a second of the build's last, single-threaded step. Its
    /// seed still differs from process to process.
    hasher: foldhash::fast::RandomState,
}

impl PathIds {
    fn hash(&self, path: &str) -> u64 {
        self.hasher.hash_one(path)
    }

    fn get(&self, records: Records<'_>, rel: &str) -> Option<u32> {
        self.table
            .find(self.hash(rel), |&id| records.path(id) == Some(rel))
            .copied()
    }

    /// Maps the path of record `id` to `id`; returns the id it mapped to
    /// before.
    fn insert(&mut self, records: Records<'_>, id: u32) -> Option<u32> {
        let path = records.path(id)?;
        let hash = self.hash(path);
        let hasher = &self.hasher;
        match self.table.entry(
            hash,
            |&known| records.path(known) == Some(path),
            |&known| records.path(known).map_or(0, |p| hasher.hash_one(p)),
        ) {
            hashbrown::hash_table::Entry::Occupied(mut entry) => {
                Some(std::mem::replace(entry.get_mut(), id))
            }
            hashbrown::hash_table::Entry::Vacant(entry) => {
                entry.insert(id);
                None
            }
        }
    }

    /// Makes room for `additional` more paths at once, so a build's table
    /// is not rehashed as it grows.
    fn reserve(&mut self, records: Records<'_>, additional: usize) {
        let hasher = &self.hasher;
        self.table.reserve(additional, |&id| {
            records.path(id).map_or(0, |path| hasher.hash_one(path))
        });
    }

    fn remove(&mut self, records: Records<'_>, rel: &str) -> Option<u32> {
        self.table
            .find_entry(self.hash(rel), |&id| records.path(id) == Some(rel))
            .ok()
            .map(|entry| entry.remove().0)
    }

    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.table.iter().copied()
    }

    fn clear(&mut self) {
        self.table.clear();
    }

    fn heap_bytes(&self) -> usize {
        // A slot and a control byte each.
        self.table.capacity() * 5
    }
}

/// The file records and the store their paths lie in: what looks a path
/// up by id.
#[derive(Clone, Copy)]
struct Records<'a> {
    files: &'a [FileRecord],
    paths: &'a PathStore,
}

impl<'a> Records<'a> {
    fn of(files: &'a [FileRecord], paths: &'a PathStore) -> Records<'a> {
        Records { files, paths }
    }

    /// The path of record `id`.
    fn path(&self, id: u32) -> Option<&'a str> {
        self.files
            .get(id as usize)
            .map(|record| self.paths.get(record.path))
    }
}

/// Paths the file tools' walk would report in a note, which the index
/// cannot repeat: a query touching the tree while there are any is served
/// by a scan, which says them.
#[derive(Debug, Default)]
struct Troubles {
    paths: BTreeSet<String>,
}

pub(crate) struct State {
    root: PathBuf,
    /// The root, open: every lookup goes beneath this descriptor.
    root_dir: Dir,
    limits: Limits,
    /// A directory inside the root the index must not list (its own
    /// scratch directory, when the system's temp folder lies in the root).
    hidden_dir: Option<String>,
    global_bytes: Option<Vec<u8>>,
    global: Option<Gitignore>,
    files: Vec<FileRecord>,
    /// The records' paths.
    paths: PathStore,
    by_path: PathIds,
    /// File ids by base name and extension, for globs.
    names: NameIndex,
    dirs: BTreeMap<String, DirRecord>,
    /// Directories met in covered ones that are not entered nor watched:
    /// ignored directories, `.git`, and the index's own scratch directory.
    pruned: BTreeSet<String>,
    /// `.git/info` directories watched, by the directory whose rules they
    /// hold.
    exclude_dirs: BTreeMap<String, PathBuf>,
    segments: Vec<Segment>,
    /// Files indexed since the last packing, with their sorted trigrams.
    loose: Vec<(u32, Vec<Trigram>)>,
    /// The trigram set of [`index_one`](Self::index_one), kept between
    /// files: each is 2 MiB, and making one for every file an event named
    /// (several for each write through the tools) cleared those 2 MiB
    /// each time, most of the instructions a small write cost the server.
    one_file: Option<Box<TrigramCollector>>,
    troubles: Troubles,
    live_postings: u64,
    dead: usize,
    /// The indexed files with more than one name: a write through another
    /// name makes no event here, so each is a candidate for every search
    /// and is read again when its stamp changed (see
    /// [`linked_changed`](Self::linked_changed)).
    linked: BTreeSet<String>,
    /// Set when the index is being dropped: walks stop early (their
    /// partial result is never used).
    stop: Arc<AtomicBool>,
}

/// One file read for the index.
struct Read1 {
    stamp: Option<Stamp>,
    binary_from_start: bool,
    outcome: Result<Vec<Trigram>, AlwaysReason>,
    text_bytes: u64,
    /// Where the text read stopped at a NUL byte.
    nul_at: Option<usize>,
    /// Trigrams already moved into a segment (the build's readers do that
    /// chunk by chunk, so the lists of the whole tree are never held
    /// uncompressed).
    taken: u64,
}

/// What a build reader reuses from file to file and batch to batch; kept
/// until the build ends (see [`State::build`]).
struct ReaderScratch {
    collector: TrigramCollector,
    /// The pairs of the chunks read since the last segment was made: a
    /// reader's chunks come in increasing id order, so its files are added
    /// in id order.
    batch: Batch,
    /// The bytes of the file read.
    bytes: Vec<u8>,
    /// The trigrams found in it.
    found: Vec<Trigram>,
}

impl ReaderScratch {
    fn new() -> ReaderScratch {
        ReaderScratch {
            collector: TrigramCollector::new(),
            batch: Batch::new(),
            bytes: Vec::new(),
            found: Vec::new(),
        }
    }
}

impl Read1 {
    /// A file not read (yet, or at all: the build was stopped first).
    fn unread() -> Read1 {
        Read1 {
            stamp: None,
            binary_from_start: false,
            outcome: Err(AlwaysReason::Unreadable),
            text_bytes: 0,
            nul_at: None,
            taken: 0,
        }
    }
}

/// What a build reader made: its segments (ids from 0, in the order it
/// read), the files it read in that order (the chunks it took, and a read
/// for each of their paths), and its scratch (freed once the index's own
/// tables are made, see [`State::build`]).
struct Reader {
    segments: Vec<Segment>,
    chunks: Vec<PathList>,
    reads: Vec<Read1>,
    scratch: ReaderScratch,
}

/// The files the build's walk has listed and no reader has taken yet, in
/// chunks of one directory's files (at most [`BUILD_CHUNK`]).
#[derive(Default)]
struct Feed {
    queue: Mutex<Queue>,
    more: Condvar,
}

#[derive(Default)]
struct Queue {
    chunks: VecDeque<PathList>,
    /// The walk is over: once the chunks are taken, readers stop.
    closed: bool,
    /// The walk failed: readers stop at once.
    abandoned: bool,
}

impl Feed {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands a directory's files to the readers.
    fn push(&self, mut files: PathList) {
        if files.is_empty() {
            return;
        }
        let mut queue = self.lock();
        while files.len() > BUILD_CHUNK {
            let rest = files.split_off(BUILD_CHUNK);
            queue.chunks.push_back(std::mem::replace(&mut files, rest));
        }
        queue.chunks.push_back(files);
        drop(queue);
        self.more.notify_all();
    }

    /// The next chunk, waiting for the walk to list one; `None` once the
    /// walk is over and every chunk is taken, or it failed.
    fn next(&self) -> Option<PathList> {
        let mut queue = self.lock();
        loop {
            if queue.abandoned {
                return None;
            }
            if let Some(chunk) = queue.chunks.pop_front() {
                return Some(chunk);
            }
            if queue.closed {
                return None;
            }
            queue = self
                .more
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The walk is over.
    fn close(&self) {
        self.lock().closed = true;
        self.more.notify_all();
    }

    /// The walk failed: what is left is not read.
    fn abandon(&self) {
        let mut queue = self.lock();
        queue.abandoned = true;
        queue.chunks.clear();
        drop(queue);
        self.more.notify_all();
    }
}

/// The directory a build reader last opened a file in, kept open: paths
/// come sorted, so a chunk's files share a few directories, and each file
/// is opened from its directory's handle (one component, never a symlink)
/// instead of from the root, where every component is resolved again.
/// The handle was opened beneath the root; should the directory be moved
/// out while it is held, what is read from it is dropped with the
/// directory when the move's event is applied, before any query answers
/// (as with the walk, which lists each directory from its handle too).
#[derive(Default)]
struct Folder {
    open: Option<(String, Dir)>,
}

impl Folder {
    /// Opens `rel` beneath `root` for reading, from its directory's handle.
    fn open(&mut self, root: &Dir, rel: &str) -> std::io::Result<std::fs::File> {
        let Some((parent, name)) = rel.rsplit_once('/') else {
            return beneath::open_file(root, rel);
        };
        if self.open.as_ref().is_none_or(|(at, _)| at != parent) {
            self.open = None;
            let dir = beneath::open_dir(root, parent)?;
            self.open = Some((parent.to_string(), dir));
        }
        match &self.open {
            Some((_, dir)) => beneath::open_file_in(dir, std::ffi::OsStr::new(name)),
            None => beneath::open_file(root, rel),
        }
    }
}

/// A directory the walk has yet to read.
enum Pending {
    /// Already open (where the walk starts).
    Open(Dir),
    /// To be opened beneath its parent's descriptor.
    Child { parent: Arc<Dir>, name: String },
}

/// Whether a failed lookup means the path was removed or replaced (by a
/// symlink, or a file), which its own event reports, rather than a
/// directory the walk cannot read, which it notes.
fn is_replaced_or_gone(err: &std::io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP | libc::EXDEV)
    )
}

/// What a walk of a subtree found.
#[derive(Default)]
struct Listing {
    dirs: Vec<(String, Option<Arc<RuleLevel>>, u64)>,
    /// A walk that feeds readers hands them each
    /// directory's files instead (this is left empty).
    files: PathList,
    /// Regular files the rules ignore (or named `.git`).
    ignored_files: Vec<String>,
    /// Directories the rules ignore, `.git` directories, the scratch
    /// directory: recorded, not entered.
    pruned: Vec<String>,
    troubles: Vec<String>,
}

impl State {
    fn empty(
        root: PathBuf,
        root_dir: Dir,
        limits: Limits,
        hidden_dir: Option<String>,
        stop: Arc<AtomicBool>,
    ) -> State {
        let global_bytes = rules::global_excludes_bytes();
        State {
            global: global_rules(global_bytes.as_deref()),
            global_bytes,
            root,
            root_dir,
            limits,
            hidden_dir,
            files: Vec::new(),
            paths: PathStore::default(),
            by_path: PathIds::default(),
            names: NameIndex::default(),
            dirs: BTreeMap::new(),
            pruned: BTreeSet::new(),
            exclude_dirs: BTreeMap::new(),
            segments: Vec::new(),
            loose: Vec::new(),
            one_file: None,
            troubles: Troubles::default(),
            live_postings: 0,
            dead: 0,
            linked: BTreeSet::new(),
            stop,
        }
    }

    /// Walks and indexes the whole tree, installing watches as it goes
    /// (each before its directory is listed, so no change is missed).
    ///
    /// The walk hands each directory's files to the readers as it lists
    /// them (see [`read_fed`](Self::read_fed)), so reading starts with the
    /// first directory rather than after the last. A reader numbers the
    /// files it reads from 0 in the order it reads them; the table takes
    /// the first reader's files, then the second's, so each reader's ids
    /// are one run and its segments, shifted to it, follow the first's:
    /// the lists of both are laid end to end, never interleaved and united.
    pub(crate) fn build(
        root: PathBuf,
        limits: Limits,
        hidden_dir: Option<String>,
        watch: &mut dyn Watch,
        stop: Arc<AtomicBool>,
    ) -> Result<State, WatchFailure> {
        let root_dir = std::fs::File::open(&root)
            .and_then(|file| beneath::open_dir(&file, ""))
            .map_err(|err| WatchFailure::Other(format!("cannot open the root: {err}")))?;
        let mut state = State::empty(root, root_dir, limits, hidden_dir, Arc::clone(&stop));
        let feed = Feed::default();
        let held = AtomicU64::new(0);
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, 2);
        let shared = &state;
        let (walked, readers) = std::thread::scope(|scope| {
            let readers: Vec<_> = (0..workers)
                .map(|_| scope.spawn(|| shared.read_fed(&feed, &held, &stop)))
                .collect();
            let walked = shared.walk("", None, watch, &stop, Some(&feed));
            if walked.is_err() {
                feed.abandon();
            }
            feed.close();
            let readers: Vec<Reader> = readers
                .into_iter()
                // A panic in a reader is passed on as it is.
                .map(|reader| {
                    reader
                        .join()
                        .unwrap_or_else(|e| std::panic::resume_unwind(e))
                })
                .collect();
            (walked, readers)
        });
        let listing = walked?;
        state.adopt_listing_dirs(&listing);
        // The readers' segments, each reader's shifted past the files of
        // those before it, are merged (on two threads) while this one
        // fills the file table: neither needs the other.
        let (mut segments, mut chunks, mut reads, mut scratch) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for reader in readers {
            segments.push(reader.segments);
            chunks.push(reader.chunks);
            reads.push(reader.reads);
            scratch.push(reader.scratch);
        }
        let (base, group) = std::thread::scope(|scope| {
            let merging = scope.spawn(|| {
                let mut group = Vec::new();
                let mut offset = 0u32;
                for (mut mine, read) in segments.into_iter().zip(&reads) {
                    for segment in &mut mine {
                        segment.shift(offset);
                    }
                    group.append(&mut mine);
                    offset = offset.saturating_add(u32::try_from(read.len()).unwrap_or(u32::MAX));
                }
                let group = vec![group];
                (merge_in_halves(&group), group)
            });
            let total = reads.iter().map(Vec::len).sum();
            let paths = || chunks.iter().flatten().flat_map(PathList::iter);
            let path_bytes = paths().map(str::len).sum();
            state.files.reserve(total);
            state.paths = PathStore::with_capacity(path_bytes);
            state
                .by_path
                .reserve(Records::of(&state.files, &state.paths), total);
            for (path, read) in paths().zip(reads.iter().flatten()) {
                state.push_file(path, read);
            }
            merging
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e))
        });
        state.segments = vec![base];
        state.fit_budget();
        for rel in &listing.ignored_files {
            state.push_ignored(rel);
        }
        state.names.compact();
        // The build's large scratch is freed only now, once what the index
        // keeps is allocated: glibc's malloc raises the size from which it
        // maps a block of its own (and unmaps it when freed) to that of
        // any such block freed, so freeing these earlier made the index's
        // own tables come from its heaps, beside the build's freed memory,
        // which it then kept (the process held tens of megabytes more).
        drop((chunks, reads, group, scratch, listing));
        Ok(state)
    }

    /// One build reader: reads and extracts the trigrams of the files the
    /// walk feeds, chunk by chunk, numbering them from 0 in the order it
    /// reads them. It gathers the (trigram, file) pairs of its chunks into
    /// a [`Batch`] of about four million, which buckets them by the
    /// trigram's first byte as they come and sorts each bucket in cache
    /// (ids come in increasing order, so they stay sorted) into a segment,
    /// and merges its segments in tiers (sixteen of a size into one), so
    /// what is held is compressed and each posting is re-encoded a few
    /// times at most. The list bytes of the segments the readers hold
    /// (`held`) count against the memory budget: once they exceed it, a
    /// reader merges all it holds (which brings them to about their final
    /// size), and past one and a half times it, further files are left out
    /// as over the budget ([`fit_budget`](Self::fit_budget) then makes the
    /// merged lists fit exactly, the largest files going out first).
    fn read_fed(&self, feed: &Feed, held: &AtomicU64, stop: &AtomicBool) -> Reader {
        yield_to_the_tools();
        let budget = self.limits.memory_budget;
        // Small segments' lists take up to about 1.4 times what merged
        // ones do, and the other reader's are not merged yet when one
        // looks: files are left out only past half as much again, and
        // `fit_budget` then trims the merged lists to the budget.
        let leave_out_past = budget.saturating_add(budget / 2);
        let mut scratch = ReaderScratch::new();
        let ReaderScratch {
            collector,
            batch,
            bytes,
            found,
        } = &mut scratch;
        let mut tiers = Tiers::default();
        let mut folders = Folder::default();
        let mut chunks = Vec::new();
        let mut reads = Vec::new();
        // What was held after this reader last merged all it holds: it
        // does so again only once that grew by an eighth of the budget, so
        // a full index is not merged over and over.
        let mut collapsed_at = 0u64;
        while let Some(mut chunk) = feed.next() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let now = held.load(Ordering::Relaxed);
            if now > budget && now > collapsed_at.saturating_add(budget / 8) {
                // Small segments' lists take more than merged ones (a first
                // id and a tag per list): merge before leaving files out.
                tiers.settle(held);
                collapsed_at = held.load(Ordering::Relaxed);
            }
            let last_id = reads.len().saturating_add(chunk.len()).saturating_sub(1);
            if !batch.reaches(u32::try_from(last_id).unwrap_or(u32::MAX)) {
                tiers.pack(batch, held);
            }
            let before = reads.len();
            for path in chunk.iter() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let id = u32::try_from(reads.len()).unwrap_or(u32::MAX);
                let opened = folders.open(&self.root_dir, path);
                let read = self.read_opened(opened, bytes, |text| {
                    let count = collector.collect_into(text, found);
                    if count > 0 && held.load(Ordering::Relaxed) > leave_out_past {
                        return Err(AlwaysReason::OverBudget);
                    }
                    if count > 0 {
                        batch.add(id, &found[..count]);
                    }
                    Ok((Vec::new(), count as u64))
                });
                reads.push(read);
            }
            // Stopped midway, the paths not read are dropped, so each path
            // kept has its read.
            let read = reads.len() - before;
            if read < chunk.len() {
                chunk.split_off(read);
            }
            chunks.push(chunk);
            if batch.pairs() >= BATCH_PAIRS {
                tiers.pack(batch, held);
            }
        }
        if batch.pairs() > 0 {
            tiers.pack(batch, held);
        }
        Reader {
            segments: tiers.segments.into_iter().map(|(_, s)| s).collect(),
            chunks,
            reads,
            scratch,
        }
    }

    /// Leaves the largest indexed files out (always candidates) until the
    /// posting lists fit the memory budget. The build's readers stop
    /// adding files once the list bytes they hold exceed the budget, which
    /// is close to what the merged lists take, without their key tables;
    /// this makes it exact.
    fn fit_budget(&mut self) {
        // Each round leaves out at least one file; a few rounds suffice
        // unless the lists are tiny (most of their bytes in keys).
        for _ in 0..32 {
            let held: u64 = self.segments.iter().map(|s| s.heap_bytes() as u64).sum();
            let budget = self.limits.memory_budget;
            if held <= budget {
                return;
            }
            let postings: u64 = self.segments.iter().map(Segment::postings).sum();
            let per_posting = held as f64 / postings.max(1) as f64;
            let mut largest: Vec<usize> = (0..self.files.len())
                .filter(|&id| self.files[id].content == Content::Indexed)
                .collect();
            largest.sort_unstable_by_key(|&id| std::cmp::Reverse(self.files[id].postings));
            // A twentieth more than the excess: the per-posting cost of the
            // lists left differs a little from the average.
            let mut to_free = (held - budget) as f64 * 1.05;
            let mut out = vec![false; self.files.len()];
            if largest.is_empty() {
                return;
            }
            for id in largest {
                if to_free <= 0.0 {
                    break;
                }
                let record = &mut self.files[id];
                to_free -= record.postings as f64 * per_posting;
                self.live_postings -= record.postings;
                record.postings = 0;
                record.text_bytes = 0;
                record.content = Content::Always(AlwaysReason::OverBudget);
                out[id] = true;
            }
            let parts: Vec<&Segment> = self.segments.iter().collect();
            let merged = Segment::merge(&parts, |id| {
                (!out.get(id as usize).copied().unwrap_or(false)).then_some(id)
            });
            self.segments = vec![merged];
        }
    }

    /// Reads one file for the index: stat first (so a racing write is seen
    /// again by its own event), then its text up to the first NUL into
    /// `bytes` (cleared first; a build reader passes the same buffer for
    /// every file), which `extract` turns into the file's trigrams: a list
    /// kept in the read (for a loose list) and a count of those it took
    /// elsewhere (into a build batch), or why the file is left out.
    fn read_file(
        &self,
        rel: &str,
        bytes: &mut Vec<u8>,
        extract: impl FnOnce(&[u8]) -> Result<(Vec<Trigram>, u64), AlwaysReason>,
    ) -> Read1 {
        self.read_opened(beneath::open_file(&self.root_dir, rel), bytes, extract)
    }

    /// [`read_file`](Self::read_file) of a file already opened (beneath
    /// the root, as [`beneath::open_file`] does).
    fn read_opened(
        &self,
        opened: std::io::Result<std::fs::File>,
        bytes: &mut Vec<u8>,
        extract: impl FnOnce(&[u8]) -> Result<(Vec<Trigram>, u64), AlwaysReason>,
    ) -> Read1 {
        let unreadable = |stamp| Read1 {
            stamp,
            ..Read1::unread()
        };
        let Ok(file) = opened else {
            return unreadable(None);
        };
        let Ok(meta) = file.metadata() else {
            return unreadable(None);
        };
        let stamp = Some(Stamp::of(&meta));
        if !meta.is_file() {
            return unreadable(stamp);
        }
        if meta.len() > self.limits.max_file_bytes {
            return Read1 {
                stamp,
                binary_from_start: false,
                outcome: Err(AlwaysReason::TooLarge),
                text_bytes: 0,
                nul_at: None,
                taken: 0,
            };
        }
        // The first block decides for binary files: a NUL in it ends what
        // the searcher reads, so the rest (most of a binary's bytes) is
        // never read here either.
        let mut file = file.take(self.limits.max_file_bytes + 1);
        bytes.clear();
        let expected = usize::try_from(meta.len()).unwrap_or(usize::MAX);
        if read_first_block(&mut file, bytes, expected).is_err() {
            return unreadable(stamp);
        }
        if has_byte_order_mark(bytes) {
            return Read1 {
                stamp,
                binary_from_start: false,
                outcome: Err(AlwaysReason::ByteOrderMark),
                text_bytes: 0,
                nul_at: None,
                taken: 0,
            };
        }
        let first_nul = match memchr_nul(bytes) {
            Some(at) => Some(at),
            None => {
                let checked = bytes.len();
                // Less than the first block means the read above met the
                // end of the file: reading on would only meet it again (a
                // write since the stamp was taken has its own event).
                if checked == NUL_CHECK_BYTES {
                    let size = expected
                        .min(usize::try_from(self.limits.max_file_bytes).unwrap_or(usize::MAX));
                    bytes.reserve(size.saturating_add(1).saturating_sub(checked));
                    if file.read_to_end(bytes).is_err() {
                        return unreadable(stamp);
                    }
                }
                if bytes.len() as u64 > self.limits.max_file_bytes {
                    return Read1 {
                        stamp,
                        binary_from_start: false,
                        outcome: Err(AlwaysReason::TooLarge),
                        text_bytes: 0,
                        nul_at: None,
                        taken: 0,
                    };
                }
                if memchr_nul(&bytes[checked..]).is_some() {
                    return Read1 {
                        stamp,
                        binary_from_start: false,
                        outcome: Err(AlwaysReason::LateNul),
                        text_bytes: 0,
                        nul_at: None,
                        taken: 0,
                    };
                }
                None
            }
        };
        let text = match first_nul {
            Some(at) => &bytes[..at],
            None => &bytes[..],
        };
        let (outcome, taken, text_bytes) = match extract(text) {
            Ok((kept, taken)) => (Ok(kept), taken, text.len() as u64),
            Err(why) => (Err(why), 0, 0),
        };
        Read1 {
            stamp,
            binary_from_start: first_nul == Some(0),
            text_bytes,
            outcome,
            nul_at: first_nul,
            taken,
        }
    }

    /// Adds a file record for a read; returns its id.
    fn push_file(&mut self, rel: &str, read: &Read1) -> u32 {
        let id = u32::try_from(self.files.len()).unwrap_or(u32::MAX);
        let (content, postings) = match &read.outcome {
            Ok(_) if read.binary_from_start => (Content::BinaryFromStart, 0),
            Ok(trigrams) => (Content::Indexed, trigrams.len() as u64 + read.taken),
            Err(why) => (Content::Always(*why), 0),
        };
        self.live_postings += postings;
        self.files.push(FileRecord {
            path: self.paths.push(rel),
            stamp: read.stamp.unwrap_or(Stamp::NONE),
            content,
            text_bytes: if content == Content::Indexed {
                read.text_bytes
            } else {
                0
            },
            postings,
            nul_at: read
                .nul_at
                .map_or(u32::MAX, |at| u32::try_from(at).unwrap_or(u32::MAX)),
        });
        self.names.add(id, name_of(rel));
        if read.stamp.is_some_and(|stamp| stamp.is_linked()) {
            self.linked.insert(rel.to_string());
        } else {
            self.linked.remove(rel);
        }
        if let Some(old) = self
            .by_path
            .insert(Records::of(&self.files, &self.paths), id)
        {
            self.kill(old);
        }
        id
    }

    /// Records an ignored file (its stamp only; it is never read), or
    /// drops the path when it is no longer a regular file.
    fn push_ignored(&mut self, rel: &str) {
        let meta = match beneath::metadata(&self.root_dir, rel) {
            Ok(meta) if meta.is_file() => meta,
            // Gone or replaced since it was listed: its own event follows.
            _ => {
                self.remove_file(rel);
                return;
            }
        };
        let stamp = Stamp::of(&meta);
        if let Some(id) = self.by_path.get(Records::of(&self.files, &self.paths), rel) {
            let record = &self.files[id as usize];
            if record.content == Content::Ignored && record.stamp == stamp {
                return;
            }
        }
        let id = u32::try_from(self.files.len()).unwrap_or(u32::MAX);
        self.names.add(id, name_of(rel));
        self.linked.remove(rel);
        self.files.push(FileRecord {
            path: self.paths.push(rel),
            stamp,
            content: Content::Ignored,
            text_bytes: 0,
            postings: 0,
            nul_at: u32::MAX,
        });
        if let Some(old) = self
            .by_path
            .insert(Records::of(&self.files, &self.paths), id)
        {
            self.kill(old);
        }
    }

    fn kill(&mut self, id: u32) {
        if let Some(record) = self.files.get_mut(id as usize)
            && record.content != Content::Dead
        {
            self.live_postings -= record.postings;
            record.content = Content::Dead;
            self.dead += 1;
        }
    }

    /// Walks the subtree at `start` (root-relative; its parent's rules are
    /// `parent_rules`), watching each directory before listing it; with a
    /// `feed`, each directory's files go to it as soon as it is listed.
    ///
    /// Every directory is opened beneath its parent's descriptor without
    /// following a symlink, and listed (and its rule files read) from that
    /// descriptor, as the file tools' walk does: a directory swapped for a
    /// symlink mid-walk is never listed through the link. The watch is
    /// still set by name (the watcher knows no other way), without
    /// following a final symlink; afterwards the name must still lead,
    /// beneath the root, to the directory listed, or the watch is dropped
    /// and the directory left out (it was replaced; the event of that
    /// brings it up to date).
    fn walk(
        &self,
        start: &str,
        parent_rules: Option<Arc<RuleLevel>>,
        watch: &mut dyn Watch,
        stop: &AtomicBool,
        feed: Option<&Feed>,
    ) -> Result<Listing, WatchFailure> {
        let mut listing = Listing::default();
        let first = match beneath::open_dir(&self.root_dir, start) {
            Ok(dir) => dir,
            Err(err) => {
                if !is_replaced_or_gone(&err) {
                    listing.troubles.push(or_dot(start));
                }
                return Ok(listing);
            }
        };
        let mut stack = vec![(start.to_string(), parent_rules, Pending::Open(first))];
        while let Some((dir_rel, parent_rules, pending)) = stack.pop() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let dir = match pending {
                Pending::Open(dir) => dir,
                Pending::Child { parent, name } => match beneath::open_dir(&*parent, &name) {
                    Ok(dir) => dir,
                    Err(err) => {
                        if !is_replaced_or_gone(&err) {
                            listing.troubles.push(or_dot(&dir_rel));
                        }
                        continue;
                    }
                },
            };
            let Ok(own) = rustix::fs::fstat(&dir) else {
                listing.troubles.push(or_dot(&dir_rel));
                continue;
            };
            let dir_abs = self.abs(&dir_rel);
            watch.watch(&dir_abs)?;
            let still_there = beneath::metadata(&self.root_dir, &dir_rel)
                .is_ok_and(|m| m.is_dir() && m.ino() == own.st_ino && m.dev() == own.st_dev);
            if !still_there {
                watch.unwatch(&dir_abs);
                continue;
            }
            let mut troubles = Vec::new();
            let rules = level_for(&dir, &dir_rel, parent_rules, &mut troubles);
            listing
                .troubles
                .extend(troubles.into_iter().map(|RuleTrouble { path }| path));
            if beneath::metadata(&dir, ".git/info").is_ok_and(|m| m.is_dir()) {
                watch.watch(&dir_abs.join(".git/info"))?;
            }
            let entries = match dir.entries() {
                Ok(entries) => entries,
                Err(_) => {
                    listing.troubles.push(or_dot(&dir_rel));
                    continue;
                }
            };
            listing
                .dirs
                .push((dir_rel.clone(), rules.clone(), own.st_ino));
            let dir = Arc::new(dir);
            for entry in entries {
                let Ok(entry) = entry else {
                    listing.troubles.push(or_dot(&dir_rel));
                    break;
                };
                let raw = entry.file_name();
                let Some(name) = raw.to_str() else {
                    listing
                        .troubles
                        .push(join(&dir_rel, &raw.to_string_lossy()));
                    continue;
                };
                let Ok(kind) = entry.file_type() else {
                    listing.troubles.push(join(&dir_rel, name));
                    continue;
                };
                let rel = join(&dir_rel, name);
                // `.git` and the scratch directory are recorded, never
                // entered: a query that wants them walks them.
                let never_entered =
                    name == ".git" || self.hidden_dir.as_deref() == Some(rel.as_str());
                if kind.is_dir() {
                    if never_entered
                        || is_ignored(rules.as_deref(), self.global.as_ref(), &rel, true)
                    {
                        listing.pruned.push(rel);
                    } else {
                        let child = Pending::Child {
                            parent: Arc::clone(&dir),
                            name: name.to_string(),
                        };
                        stack.push((rel, rules.clone(), child));
                    }
                } else if kind.is_file() {
                    if never_entered
                        || is_ignored(rules.as_deref(), self.global.as_ref(), &rel, false)
                    {
                        listing.ignored_files.push(rel);
                    } else {
                        listing.files.push(&rel);
                    }
                }
            }
            if let Some(feed) = feed {
                feed.push(std::mem::take(&mut listing.files));
            }
        }
        Ok(listing)
    }

    fn adopt_listing_dirs(&mut self, listing: &Listing) {
        for (rel, rules, inode) in &listing.dirs {
            self.dirs.insert(
                rel.clone(),
                DirRecord {
                    rules: rules.clone(),
                    inode: *inode,
                },
            );
            if beneath::metadata(&self.root_dir, &join(rel, ".git/info")).is_ok_and(|m| m.is_dir())
            {
                self.exclude_dirs
                    .insert(rel.clone(), self.abs(rel).join(".git/info"));
            }
        }
        self.pruned.extend(listing.pruned.iter().cloned());
        self.troubles.paths.extend(listing.troubles.iter().cloned());
    }

    pub(crate) fn abs(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }

    /// Whether the directory is in the index (walked and watched).
    pub(crate) fn covers_dir(&self, rel: &str) -> bool {
        self.dirs.contains_key(rel)
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Brings one changed path up to date (an event named it).
    pub(crate) fn refresh(
        &mut self,
        rel: &str,
        change: Change,
        watch: &mut dyn Watch,
    ) -> Result<(), WatchFailure> {
        // A change under a `.git/info` the index reads rules from.
        if let Some(owner) = self
            .exclude_dirs
            .iter()
            .find(|(owner, _)| {
                rel == join(owner, ".git/info") || is_within(rel, &join(owner, ".git/info"))
            })
            .map(|(owner, _)| owner.clone())
        {
            return self.resync(&owner, watch);
        }
        let parent = parent_of(rel);
        let name = name_of(rel);
        if !self.dirs.contains_key(parent) || rel.is_empty() {
            // Inside an ignored directory, `.git`, or a directory already
            // gone: nothing the index covers.
            if rel.is_empty() && std::fs::symlink_metadata(&self.root).is_err() {
                self.remove_subtree("", watch);
            }
            return Ok(());
        }
        if self.hidden_dir.as_deref() == Some(rel) {
            return Ok(());
        }
        if name == ".git" || RULE_FILES.contains(&name) {
            // The rules of the parent's subtree changed.
            return self.resync(parent, watch);
        }
        let meta = beneath::metadata(&self.root_dir, rel).ok();
        let rules = self.dirs.get(parent).and_then(|d| d.rules.clone());
        match meta {
            Some(meta) if meta.is_dir() => {
                let known = self.dirs.get(rel).map(|d| d.inode);
                if known == Some(meta.ino()) {
                    if change == Change::Relinked {
                        // Its watches may be gone, and with them the
                        // events of changes made inside meanwhile: the
                        // walk watches each directory again, then lists it.
                        return self.resync(rel, watch);
                    }
                    return Ok(());
                }
                if known.is_some() {
                    self.remove_subtree(rel, watch);
                }
                self.remove_file(rel);
                if is_ignored(rules.as_deref(), self.global.as_ref(), rel, true) {
                    self.pruned.insert(rel.to_string());
                } else {
                    self.pruned.remove(rel);
                    self.add_subtree(rel, rules, watch)?;
                }
                Ok(())
            }
            Some(meta) if meta.is_file() => {
                if self.dirs.contains_key(rel) {
                    self.remove_subtree(rel, watch);
                }
                self.pruned.remove(rel);
                if is_ignored(rules.as_deref(), self.global.as_ref(), rel, false) {
                    self.push_ignored(rel);
                } else {
                    self.index_one(rel);
                }
                Ok(())
            }
            _ => {
                // Gone, a symlink, or a special file: not listed.
                if self.dirs.contains_key(rel) {
                    self.remove_subtree(rel, watch);
                }
                self.pruned.remove(rel);
                self.remove_file(rel);
                self.troubles.paths.remove(rel);
                Ok(())
            }
        }
    }

    /// The hard-linked files whose stamp is no longer the one indexed (a
    /// write through another name, which made no event here): a query
    /// has them read again first. Empty past [`MAX_LINKED_CHECKED`].
    pub(crate) fn linked_changed(&self) -> Vec<String> {
        if self.linked.len() > MAX_LINKED_CHECKED {
            return Vec::new();
        }
        self.linked
            .iter()
            .filter(|rel| {
                let Some(id) = self.by_path.get(Records::of(&self.files, &self.paths), rel) else {
                    return false;
                };
                let known = self.files[id as usize].stamp;
                beneath::metadata(&self.root_dir, rel)
                    .is_ok_and(|meta| meta.is_file() && Stamp::of(&meta) != known)
            })
            .map(|rel| rel.to_string())
            .collect()
    }

    /// Reads again the files [`linked_changed`](Self::linked_changed)
    /// named.
    pub(crate) fn reread(&mut self, paths: &[String]) {
        for rel in paths {
            if self.linked.contains(rel.as_str()) {
                self.index_one(rel);
            }
        }
        self.pack();
    }

    /// Records a path whose name is not UTF-8 (the walk notes those), or
    /// forgets it once it is gone.
    pub(crate) fn note_unaddressable(&mut self, shown: String, exists: bool) {
        if exists {
            self.troubles.paths.insert(shown);
        } else {
            self.troubles.paths.remove(&shown);
        }
    }

    /// Re-decides a whole subtree (its rules changed, or events were lost):
    /// walks it again, drops what is gone or now ignored, adds what is new
    /// or now included, and re-reads files whose stamp changed.
    pub(crate) fn resync(&mut self, dir: &str, watch: &mut dyn Watch) -> Result<(), WatchFailure> {
        if !dir.is_empty() && !self.dirs.contains_key(dir) {
            return Ok(());
        }
        let parent_rules = if dir.is_empty() {
            None
        } else {
            self.dirs.get(parent_of(dir)).and_then(|d| d.rules.clone())
        };
        if dir.is_empty() {
            // The global excludes may have changed too.
            self.global_bytes = rules::global_excludes_bytes();
            self.global = global_rules(self.global_bytes.as_deref());
        }
        let stop = Arc::clone(&self.stop);
        let listing = self.walk(dir, parent_rules, watch, &stop, None)?;
        let found_dirs: BTreeSet<&str> = listing.dirs.iter().map(|(d, _, _)| d.as_str()).collect();
        let gone_dirs: Vec<String> = self
            .dirs_within(dir)
            .into_iter()
            .filter(|d| !found_dirs.contains(d.as_str()))
            .collect();
        for gone in gone_dirs {
            watch.unwatch(&self.abs(&gone));
            self.dirs.remove(&gone);
            if let Some(info) = self.exclude_dirs.remove(&gone) {
                watch.unwatch(&info);
            }
        }
        self.troubles.paths.retain(|p| !is_within(p, dir));
        self.pruned.retain(|p| !is_within(p, dir));
        self.adopt_listing_dirs(&listing);
        let found: BTreeSet<&str> = listing
            .files
            .iter()
            .chain(listing.ignored_files.iter().map(String::as_str))
            .collect();
        let gone_files: Vec<String> = self
            .files_within(dir)
            .into_iter()
            .filter(|f| !found.contains(f.as_str()))
            .collect();
        for gone in gone_files {
            self.remove_file(&gone);
        }
        for rel in listing.files.iter() {
            // A file that was ignored until now is read even if unchanged.
            let unchanged = self
                .by_path
                .get(Records::of(&self.files, &self.paths), rel)
                .is_some_and(|id| {
                    let record = &self.files[id as usize];
                    record.content != Content::Ignored
                        && beneath::metadata(&self.root_dir, rel)
                            .is_ok_and(|meta| Stamp::of(&meta) == record.stamp)
                });
            if !unchanged {
                self.index_one(rel);
            }
        }
        for rel in &listing.ignored_files {
            self.push_ignored(rel);
        }
        Ok(())
    }

    fn add_subtree(
        &mut self,
        dir: &str,
        parent_rules: Option<Arc<RuleLevel>>,
        watch: &mut dyn Watch,
    ) -> Result<(), WatchFailure> {
        let stop = Arc::clone(&self.stop);
        let listing = self.walk(dir, parent_rules, watch, &stop, None)?;
        self.adopt_listing_dirs(&listing);
        for rel in listing.files.iter() {
            self.index_one(rel);
        }
        for rel in &listing.ignored_files {
            self.push_ignored(rel);
        }
        Ok(())
    }

    fn remove_subtree(&mut self, dir: &str, watch: &mut dyn Watch) {
        for gone in self.dirs_within(dir) {
            watch.unwatch(&self.abs(&gone));
            self.dirs.remove(&gone);
            if let Some(info) = self.exclude_dirs.remove(&gone) {
                watch.unwatch(&info);
            }
        }
        for gone in self.files_within(dir) {
            self.remove_file(&gone);
        }
        self.troubles.paths.retain(|p| !is_within(p, dir));
        self.pruned.retain(|p| !is_within(p, dir));
    }

    fn dirs_within(&self, dir: &str) -> Vec<String> {
        self.dirs
            .range::<str, _>((std::ops::Bound::Included(dir), std::ops::Bound::Unbounded))
            .take_while(|(d, _)| dir.is_empty() || d.starts_with(dir))
            .filter(|(d, _)| is_within(d, dir))
            .map(|(d, _)| d.clone())
            .collect()
    }

    /// The walked directories strictly below `dir`.
    fn dirs_below(&self, dir: &str) -> Vec<String> {
        self.dirs_within(dir)
            .into_iter()
            .filter(|d| d != dir)
            .collect()
    }

    fn files_within(&self, dir: &str) -> Vec<String> {
        let records = Records::of(&self.files, &self.paths);
        self.by_path
            .ids()
            .filter_map(|id| records.path(id))
            .filter(|p| is_within(p, dir))
            .map(|p| p.to_string())
            .collect()
    }

    fn remove_file(&mut self, rel: &str) {
        self.linked.remove(rel);
        if let Some(id) = self
            .by_path
            .remove(Records::of(&self.files, &self.paths), rel)
        {
            self.kill(id);
        }
    }

    /// (Re-)reads one file into the loose lists.
    fn index_one(&mut self, rel: &str) {
        let mut collector = self
            .one_file
            .take()
            .unwrap_or_else(|| Box::new(TrigramCollector::new()));
        let mut read = self.read_file(rel, &mut Vec::new(), |text| {
            Ok((collector.collect(text), 0))
        });
        self.one_file = Some(collector);
        if read.stamp.is_none() {
            // Gone between the event and the read: its removal event follows.
            self.remove_file(rel);
            return;
        }
        let spent = AtomicU64::new(self.projected_bytes());
        charge_budget(
            &mut read,
            &spent,
            self.limits.memory_budget,
            self.cost_per_posting(),
        );
        let id = self.push_file(rel, &read);
        if let Ok(trigrams) = read.outcome {
            self.loose.push((id, trigrams));
        }
        if self.loose.len() >= LOOSE_FILES {
            self.pack();
        }
    }

    /// Packs the loose lists into a segment, and merges segments when
    /// there are many or many dead ids.
    pub(crate) fn pack(&mut self) {
        if !self.loose.is_empty() {
            let pairs: Vec<u64> = self
                .loose
                .drain(..)
                .flat_map(|(id, trigrams)| {
                    trigrams
                        .into_iter()
                        .map(move |t| (u64::from(t) << 32) | u64::from(id))
                })
                .collect();
            self.segments.push(Segment::from_pairs(pairs));
        }
        if self.segments.len() > MAX_SEGMENTS || self.dead > self.files.len() / 4 + 64 {
            self.merge_all();
        }
    }

    /// Merges all segments into one and renumbers the live files densely.
    fn merge_all(&mut self) {
        let mut remap: Vec<Option<u32>> = Vec::with_capacity(self.files.len());
        let mut next = 0u32;
        for record in &self.files {
            if record.content == Content::Dead {
                remap.push(None);
            } else {
                remap.push(Some(next));
                next += 1;
            }
        }
        let parts: Vec<&Segment> = self.segments.iter().collect();
        let merged = Segment::merge(&parts, |id| remap.get(id as usize).copied().flatten());
        self.segments = vec![merged];
        let files = std::mem::take(&mut self.files);
        let old_paths = std::mem::take(&mut self.paths);
        let live_bytes = files
            .iter()
            .filter(|r| r.content != Content::Dead)
            .map(|r| old_paths.get(r.path).len())
            .sum();
        // The dead records' paths go with them.
        self.paths = PathStore::with_capacity(live_bytes);
        self.files = files
            .into_iter()
            .filter(|r| r.content != Content::Dead)
            .map(|record| FileRecord {
                path: self.paths.push(old_paths.get(record.path)),
                ..record
            })
            .collect();
        drop(old_paths);
        self.names.clear();
        self.by_path.clear();
        for (id, record) in self.files.iter().enumerate() {
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            self.by_path
                .insert(Records::of(&self.files, &self.paths), id);
            self.names.add(id, name_of(self.paths.get(record.path)));
        }
        self.names.compact();
        self.dead = 0;
    }

    /// What the lists would take with every live file's postings packed,
    /// at the cost per posting the packed lists show (or
    /// [`BUDGET_BYTES_PER_POSTING`] before there are any).
    fn projected_bytes(&self) -> u64 {
        (self.live_postings as f64 * self.cost_per_posting()) as u64
    }

    /// Heap bytes per posting of the packed lists.
    fn cost_per_posting(&self) -> f64 {
        let postings: u64 = self.segments.iter().map(Segment::postings).sum();
        if postings == 0 {
            return BUDGET_BYTES_PER_POSTING as f64;
        }
        let held: u64 = self.segments.iter().map(|s| s.heap_bytes() as u64).sum();
        held as f64 / postings as f64
    }

    /// Whether the global excludes file still reads as it did.
    pub(crate) fn global_excludes_changed(&self) -> bool {
        rules::global_excludes_bytes() != self.global_bytes
    }

    /// A path the walk would note, if the tree has one.
    pub(crate) fn first_trouble(&self) -> Option<&str> {
        self.troubles.paths.iter().next().map(String::as_str)
    }

    /// The files within `under` whose path `keep` accepts, in no
    /// particular order.
    pub(crate) fn list_where(&self, under: &str, keep: impl Fn(&str) -> bool) -> Vec<ListedFile> {
        self.files
            .iter()
            .filter(|r| {
                r.is_listed()
                    && is_within(self.paths.get(r.path), under)
                    && keep(self.paths.get(r.path))
            })
            .map(|r| ListedFile {
                path: self.paths.get(r.path).to_string(),
                modified: r.stamp.modified(),
                size: r.stamp.size,
            })
            .collect()
    }

    /// [`list_where`](Self::list_where), looking only at the files whose
    /// base name `filter` allows (every file without a filter).
    pub(crate) fn list_named(
        &self,
        under: &str,
        filter: Option<&NameFilter>,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<ListedFile> {
        let Some(filter) = filter else {
            return self.list_where(under, keep);
        };
        self.names
            .ids(filter)
            .into_iter()
            .filter_map(|id| self.files.get(id as usize))
            .filter(|r| {
                r.is_listed()
                    && is_within(self.paths.get(r.path), under)
                    && keep(self.paths.get(r.path))
            })
            .map(|r| r.listed(&self.paths))
            .collect()
    }

    /// The files within `under`, in path order.
    pub(crate) fn list(&self, under: &str) -> Vec<ListedFile> {
        let mut out: Vec<ListedFile> = self
            .files
            .iter()
            .filter(|r| r.is_listed() && is_within(self.paths.get(r.path), under))
            .map(|r| ListedFile {
                path: self.paths.get(r.path).to_string(),
                modified: r.stamp.modified(),
                size: r.stamp.size,
            })
            .collect();
        out.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// The listed files and the walked directories within `under`, unsorted.
    pub(crate) fn snapshot(&self, under: &str) -> Snapshot {
        Snapshot {
            files: self
                .files
                .iter()
                .filter(|r| r.is_listed() && is_within(self.paths.get(r.path), under))
                .map(|r| SnapshotFile {
                    path: Arc::from(self.paths.get(r.path)),
                    size: r.stamp.size,
                    modified: r.stamp.modified(),
                })
                .collect(),
            dirs: self.dirs_below(under),
        }
    }

    /// The files within `under` that may hold a match of `query`, in path
    /// order: those the trigram lists allow, plus every file the index
    /// cannot vouch for.
    #[cfg(test)]
    pub(crate) fn candidates(&self, query: &Query, under: &str) -> Vec<String> {
        self.candidate_files(query, under).paths
    }

    /// [`candidates`](Self::candidates) with the count of those past the
    /// budget.
    pub(crate) fn candidate_files(&self, query: &Query, under: &str) -> Candidates {
        let answer = evaluate(query, self);
        let over_budget = Cell::new(0);
        let pick = |id: usize, record: &FileRecord| match record.content {
            Content::Dead | Content::BinaryFromStart | Content::Ignored => false,
            Content::Always(why) => {
                if why == AlwaysReason::OverBudget {
                    over_budget.set(over_budget.get() + 1);
                }
                true
            }
            Content::Indexed => record.stamp.is_linked() || answer.allows(id),
        };
        let paths = self.paths_where(under, pick);
        Candidates {
            paths,
            pruned: Vec::new(),
            over_budget: over_budget.get(),
        }
    }

    /// The paths under `under` of the files `pick` (given a file's id and
    /// record) keeps, sorted.
    fn paths_where(&self, under: &str, pick: impl Fn(usize, &FileRecord) -> bool) -> Vec<String> {
        let mut paths: Vec<String> = self
            .files
            .iter()
            .enumerate()
            .filter(|(id, r)| is_within(self.paths.get(r.path), under) && pick(*id, r))
            .map(|(_, r)| self.paths.get(r.path).to_string())
            .collect();
        paths.sort_unstable();
        paths
    }

    /// Everything below `under`, ignored files included (those whose path
    /// `keep` accepts, looking only at the base names `filter` allows when
    /// there is one), with the directories walked and those pruned.
    pub(crate) fn tree(
        &self,
        under: &str,
        filter: Option<&NameFilter>,
        keep: impl Fn(&str) -> bool,
    ) -> Tree {
        let wanted = |r: &FileRecord| {
            r.is_present()
                && is_within(self.paths.get(r.path), under)
                && keep(self.paths.get(r.path))
        };
        let files = match filter {
            Some(filter) => self
                .names
                .ids(filter)
                .into_iter()
                .filter_map(|id| self.files.get(id as usize))
                .filter(|r| wanted(r))
                .map(|r| r.listed(&self.paths))
                .collect(),
            None => self
                .files
                .iter()
                .filter(|r| wanted(r))
                .map(|r| r.listed(&self.paths))
                .collect(),
        };
        let dirs = self.dirs_below(under);
        Tree {
            files,
            dirs,
            pruned: self.pruned_within(under),
        }
    }

    /// The pruned directories strictly below `under`, sorted.
    fn pruned_within(&self, under: &str) -> Vec<String> {
        self.pruned
            .range::<str, _>((std::ops::Bound::Included(under), std::ops::Bound::Unbounded))
            .take_while(|d| under.is_empty() || d.starts_with(under))
            .filter(|d| d.as_str() != under && is_within(d, under))
            .cloned()
            .collect()
    }

    /// The candidates of `query` below `under` for a search that looks at
    /// ignored files too and reads a file on past a NUL byte found at or
    /// after `reads_past_nul_from`: the candidates of
    /// [`candidates`](Self::candidates), every ignored file, and every
    /// indexed file whose indexed text stopped at such a NUL.
    pub(crate) fn candidates_with_ignored(
        &self,
        query: &Query,
        under: &str,
        reads_past_nul_from: usize,
    ) -> Candidates {
        let answer = evaluate(query, self);
        let past_nul = u32::try_from(reads_past_nul_from).unwrap_or(u32::MAX);
        let over_budget = Cell::new(0);
        let pick = |id: usize, record: &FileRecord| match record.content {
            Content::Dead => false,
            Content::Always(why) => {
                if why == AlwaysReason::OverBudget {
                    over_budget.set(over_budget.get() + 1);
                }
                true
            }
            Content::Ignored => true,
            Content::Indexed | Content::BinaryFromStart => {
                (record.nul_at != u32::MAX && record.nul_at >= past_nul)
                    || record.stamp.is_linked()
                    || (record.content == Content::Indexed && answer.allows(id))
            }
        };
        let paths = self.paths_where(under, pick);
        Candidates {
            paths,
            pruned: self.pruned_within(under),
            over_budget: over_budget.get(),
        }
    }

    pub(crate) fn stats(&self) -> IndexStats {
        let mut stats = IndexStats::default();
        for record in &self.files {
            match record.content {
                Content::Dead => continue,
                Content::Indexed => {
                    stats.indexed_files += 1;
                    stats.text_bytes += record.text_bytes;
                }
                Content::Always(_) => stats.always_candidates += 1,
                Content::Ignored => stats.ignored_files += 1,
                Content::BinaryFromStart => {}
            }
            stats.files += 1;
        }
        stats.postings = self.segments.iter().map(Segment::postings).sum::<u64>()
            + self.loose.iter().map(|(_, t)| t.len() as u64).sum::<u64>();
        stats.postings_bytes = self
            .segments
            .iter()
            .map(|s| s.heap_bytes() as u64)
            .sum::<u64>()
            + self
                .loose
                .iter()
                .map(|(_, t)| t.capacity() as u64 * 4 + 32)
                .sum::<u64>();
        // A record, its path's bytes in the store and a map slot.
        stats.table_bytes = self.files.len() as u64 * std::mem::size_of::<FileRecord>() as u64
            + self.paths.heap_bytes() as u64
            + self.by_path.heap_bytes() as u64
            + self.dirs.keys().map(|d| d.len() as u64 + 64).sum::<u64>()
            + self.pruned.iter().map(|d| d.len() as u64 + 48).sum::<u64>()
            + self.names.heap_bytes() as u64;
        stats.directories = self.dirs.len() as u64;
        stats.pruned_directories = self.pruned.len() as u64;
        stats
    }

    /// Why a file is always a candidate (for tests and status).
    #[cfg(test)]
    pub(crate) fn always_reason(&self, rel: &str) -> Option<AlwaysReason> {
        let id = self
            .by_path
            .get(Records::of(&self.files, &self.paths), rel)?;
        match self.files[id as usize].content {
            Content::Always(why) => Some(why),
            _ => None,
        }
    }
}

impl FileRecord {
    fn listed(&self, paths: &PathStore) -> ListedFile {
        ListedFile {
            path: paths.get(self.path).to_string(),
            modified: self.stamp.modified(),
            size: self.stamp.size,
        }
    }

    /// Whether the record stands for a file (ignored ones included).
    fn is_present(&self) -> bool {
        self.content != Content::Dead
    }

    /// Whether queries that respect ignore files list it.
    fn is_listed(&self) -> bool {
        match self.content {
            Content::Indexed | Content::Always(_) | Content::BinaryFromStart => true,
            Content::Ignored | Content::Dead => false,
        }
    }
}

impl Postings for State {
    fn count(&self, trigram: Trigram) -> u64 {
        let packed: u64 = self
            .segments
            .iter()
            .map(|s| u64::from(s.count(trigram)))
            .sum();
        let loose = self
            .loose
            .iter()
            .filter(|(_, t)| t.binary_search(&trigram).is_ok())
            .count() as u64;
        packed + loose
    }

    fn ids(&self, trigram: Trigram) -> Vec<u32> {
        let mut out = Vec::new();
        for segment in &self.segments {
            segment.decode_into(trigram, &mut out);
        }
        // Loose files were indexed after every packed one: higher ids.
        for (id, trigrams) in &self.loose {
            if trigrams.binary_search(&trigram).is_ok() {
                out.push(*id);
            }
        }
        out
    }
}

/// The niceness of the build's reading threads: the lowest priority, which
/// still runs them at once on an idle processor.
const BACKGROUND_NICE: i32 = 19;

/// Lowers the calling thread's priority to [`BACKGROUND_NICE`] (on Linux
/// the niceness belongs to the thread, not the process), so a first build
/// reading the whole tree yields the processors to the tools' own calls (a
/// fresh server's first write must not wait behind it). The applier keeps
/// the ordinary priority: queries wait for it. A failure leaves the
/// priority as it was: only speed depends on it.
pub(crate) fn yield_to_the_tools() {
    if let Err(err) = rustix::process::setpriority_process(None, BACKGROUND_NICE) {
        tracing::debug!("workspace index: cannot lower a reader's priority: {err}");
    }
}

/// Counts a re-read file against the budget at `per_posting` bytes a
/// posting; past it, the file becomes an always-candidate instead of being
/// indexed.
fn charge_budget(read: &mut Read1, spent: &AtomicU64, budget: u64, per_posting: f64) {
    if let Ok(trigrams) = &read.outcome {
        let cost = (trigrams.len() as f64 * per_posting).ceil() as u64;
        let before = spent.fetch_add(cost, Ordering::Relaxed);
        if before + cost > budget {
            spent.fetch_sub(cost, Ordering::Relaxed);
            read.outcome = Err(AlwaysReason::OverBudget);
            read.text_bytes = 0;
        }
    }
}

/// Merges the build readers' segments (a group each, see
/// [`Segment::merge_groups`]) into one: the lower and the upper half of
/// the key space on a thread each, then the two laid end to end.
fn merge_in_halves(groups: &[Vec<Segment>]) -> Segment {
    let refs: Vec<Vec<&Segment>> = groups.iter().map(|g| g.iter().collect()).collect();
    let largest = groups.iter().flatten().max_by_key(|s| s.list_bytes());
    let Some(middle) = largest.and_then(Segment::middle_key) else {
        return Segment::merge_groups(&refs, 0..Trigram::MAX);
    };
    let (low, high) = std::thread::scope(|scope| {
        let high = scope.spawn(|| {
            yield_to_the_tools();
            Segment::merge_groups(&refs, middle..Trigram::MAX)
        });
        let low = Segment::merge_groups(&refs, 0..middle);
        // A panic in the other half is passed on as it is.
        (
            low,
            high.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
        )
    });
    let mut merged = low;
    merged.append(high);
    merged
}

/// Segments merged in tiers: a new segment is tier 0, and whenever the last
/// [`TIER_FAN`] segments are of one tier they become one of the next.
#[derive(Default)]
struct Tiers {
    segments: Vec<(u32, Segment)>,
    /// The segments at the front that [`settle`](Self::settle) made or
    /// left: it does not merge them again.
    settled: usize,
    /// Merged first-tier segments, emptied, for the next batches to be
    /// packed into (see [`Segment::emptied`]).
    spare: Vec<Segment>,
}

/// Segments of a tier merged into one of the next.
const TIER_FAN: usize = 16;

impl Tiers {
    /// Adds a segment (ids above those held), keeping `held` (the list
    /// bytes of all segments held) current.
    fn push(&mut self, segment: Segment, held: &AtomicU64) {
        held.fetch_add(segment.list_bytes() as u64, Ordering::Relaxed);
        self.segments.push((0, segment));
        loop {
            let n = self.segments.len();
            if n < TIER_FAN {
                return;
            }
            let tier = self.segments[n - 1].0;
            if self.segments[n - TIER_FAN..]
                .iter()
                .any(|(t, _)| *t != tier)
            {
                return;
            }
            self.merge_last(TIER_FAN, tier + 1, held);
        }
    }

    /// Merges everything held into one segment.
    /// Merges the segments added since the last call into one, leaving
    /// the one it made then as it is: what is held comes near its merged
    /// size without the same lists being re-encoded at every call (a
    /// reader past the budget calls it every eighth of the budget; merging
    /// everything each time made a build past the budget grow faster than
    /// the tree).
    fn settle(&mut self, held: &AtomicU64) {
        let from = self.settled.min(self.segments.len());
        let n = self.segments.len() - from;
        if n > 1 {
            let tier = self.segments[from..]
                .iter()
                .map(|(t, _)| *t)
                .max()
                .unwrap_or(0);
            self.merge_last(n, tier + 1, held);
        }
        self.settled = self.segments.len();
    }

    /// Packs `batch` into a segment (in the room of a spare one when there
    /// is one) and adds it.
    fn pack(&mut self, batch: &mut Batch, held: &AtomicU64) {
        let room = self.spare.pop().unwrap_or_default();
        let segment = batch.take_segment_into(room);
        self.push(segment, held);
    }

    fn merge_last(&mut self, count: usize, tier: u32, held: &AtomicU64) {
        let at = self.segments.len() - count;
        self.settled = self.settled.min(at);
        let first_tier = self.segments[at..].iter().all(|(t, _)| *t == 0);
        let parts: Vec<Segment> = self.segments.drain(at..).map(|(_, s)| s).collect();
        let before: u64 = parts.iter().map(|s| s.list_bytes() as u64).sum();
        let refs: Vec<&Segment> = parts.iter().collect();
        // One reader's segments: increasing ranges of ids, one group.
        let merged = Segment::merge_groups(&[refs], 0..Trigram::MAX);
        if first_tier {
            // As many as the batches up to the next merge of this tier.
            self.spare
                .extend(parts.into_iter().take(TIER_FAN).map(Segment::emptied));
        } else {
            drop(parts);
        }
        held.fetch_add(merged.list_bytes() as u64, Ordering::Relaxed);
        held.fetch_sub(before, Ordering::Relaxed);
        self.segments.push((tier, merged));
    }
}

/// Reads the first [`NUL_CHECK_BYTES`] of a file, or all of it when it is
/// shorter, into `bytes` (empty). A read that comes back short once the
/// `expected` bytes (its size when its stamp was taken) are held is taken
/// as the end: a file of source is then read by one call, not a second
/// one that returns nothing. A file that grew since has its own event
/// (its directory was watched before it was listed), which reads it again.
fn read_first_block(
    file: &mut impl Read,
    bytes: &mut Vec<u8>,
    expected: usize,
) -> std::io::Result<()> {
    loop {
        let held = bytes.len();
        if held >= NUL_CHECK_BYTES {
            return Ok(());
        }
        // Room for one byte past the expected size: a full read says the
        // file grew.
        let goal = if held <= expected {
            expected.saturating_add(1).min(NUL_CHECK_BYTES)
        } else {
            NUL_CHECK_BYTES
        };
        bytes.resize(goal, 0);
        let got = loop {
            match file.read(&mut bytes[held..]) {
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        match got {
            Ok(n) => {
                bytes.truncate(held + n);
                if n == 0 || (held + n < goal && held + n >= expected) {
                    return Ok(());
                }
            }
            Err(err) => {
                bytes.truncate(held);
                return Err(err);
            }
        }
    }
}

/// UTF-8, UTF-16LE or UTF-16BE byte-order mark: the searcher decodes such a
/// file before matching, so its raw bytes say nothing reliable.
fn has_byte_order_mark(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\xEF\xBB\xBF")
        || bytes.starts_with(b"\xFF\xFE")
        || bytes.starts_with(b"\xFE\xFF")
}

fn memchr_nul(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(0, bytes)
}

fn or_dot(rel: &str) -> String {
    if rel.is_empty() {
        ".".to_string()
    } else {
        rel.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoWatch;

    impl Watch for NoWatch {
        fn watch(&mut self, _dir: &Path) -> Result<(), WatchFailure> {
            Ok(())
        }
        fn unwatch(&mut self, _dir: &Path) {}
    }

    #[test]
    fn a_stamp_keeps_the_times_exactly_in_a_small_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "x").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let stamp = Stamp::of(&meta);
        assert_eq!(stamp.modified(), meta.modified().unwrap());
        assert_eq!(stamp.size, 1);
        assert!(!stamp.is_linked());
        // Before the epoch, and a change of one nanosecond, still exact.
        let early = Stamp {
            modified_ns: nanos(-2, 250_000_000),
            ..stamp
        };
        assert_eq!(
            early.modified(),
            SystemTime::UNIX_EPOCH - Duration::from_millis(1750)
        );
        assert_ne!(nanos(5, 1), nanos(5, 2));
        // A million-file table holds a million of these.
        assert!(std::mem::size_of::<FileRecord>() <= 80);
    }

    fn built(root: &Path, limits: Limits) -> State {
        State::build(
            root.to_path_buf(),
            limits,
            None,
            &mut NoWatch,
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap_or_else(|err| panic!("{err:?}"))
    }

    fn any_limits() -> Limits {
        Limits {
            max_file_bytes: 1 << 20,
            memory_budget: u64::MAX,
        }
    }

    fn query(pattern: &str) -> Query {
        crate::query::regex_query(&regex_syntax::parse(pattern).unwrap_or_else(|e| panic!("{e}")))
    }

    /// A root `ws` with `ws/d/inside.txt`, and `outside/secret-name.txt`
    /// next to it.
    fn root_and_outside() -> std::io::Result<(tempfile::TempDir, PathBuf, PathBuf)> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("d"))?;
        std::fs::create_dir_all(&outside)?;
        std::fs::write(root.join("d/inside.txt"), "inside\n")?;
        std::fs::write(outside.join("secret-name.txt"), "SECRET-CONTENT\n")?;
        Ok((dir, root, outside))
    }

    fn assert_nothing_outside(state: &State) {
        let listed: Vec<String> = state.list("").into_iter().map(|f| f.path).collect();
        assert!(
            !listed.iter().any(|p| p.contains("secret")),
            "an outside name was listed: {listed:?}"
        );
        let found = state.candidates(&query("SECRET-CONTENT"), "");
        assert!(
            !found.iter().any(|p| p.contains("secret")),
            "an outside file was indexed: {found:?}"
        );
    }

    /// Swaps a directory for a symlink to outside the moment the walk
    /// watches it: between the walk's look at the directory and its
    /// listing, where a swap race lands.
    struct SwapWhenWatched {
        dir: PathBuf,
        outside: PathBuf,
        swapped: bool,
    }

    impl Watch for SwapWhenWatched {
        fn watch(&mut self, dir: &Path) -> Result<(), WatchFailure> {
            if dir == self.dir && !self.swapped {
                self.swapped = true;
                let moved = self.dir.with_extension("moved");
                std::fs::rename(&self.dir, &moved)
                    .map_err(|e| WatchFailure::Other(e.to_string()))?;
                std::os::unix::fs::symlink(&self.outside, &self.dir)
                    .map_err(|e| WatchFailure::Other(e.to_string()))?;
            }
            Ok(())
        }
        fn unwatch(&mut self, _dir: &Path) {}
    }

    #[test]
    fn a_directory_swapped_for_a_symlink_mid_walk_is_not_listed_through_it() -> std::io::Result<()>
    {
        let (_dir, root, outside) = root_and_outside()?;
        let root = std::fs::canonicalize(root)?;
        let mut swap = SwapWhenWatched {
            dir: root.join("d"),
            outside,
            swapped: false,
        };
        let state = State::build(
            root.clone(),
            any_limits(),
            None,
            &mut swap,
            Arc::new(AtomicBool::new(false)),
        )
        .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        assert!(swap.swapped, "the walk watched d");
        assert_nothing_outside(&state);
        // The swapped directory is left to the event of the swap.
        assert!(!state.covers_dir("d"));
        Ok(())
    }

    #[test]
    fn an_event_for_a_path_through_a_swapped_directory_reads_nothing_outside() -> std::io::Result<()>
    {
        let (_dir, root, outside) = root_and_outside()?;
        let mut state = built(&root, any_limits());
        assert!(state.covers_dir("d"));
        // `d` becomes a symlink to outside before the events naming paths
        // in it (queued before the swap) are applied.
        std::fs::rename(root.join("d"), root.join("d.moved"))?;
        std::os::unix::fs::symlink(&outside, root.join("d"))?;
        state
            .refresh("d/secret-name.txt", Change::Relinked, &mut NoWatch)
            .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        assert_nothing_outside(&state);
        state
            .refresh("d", Change::Relinked, &mut NoWatch)
            .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        assert_nothing_outside(&state);
        assert!(!state.covers_dir("d"));
        // A resync of the whole tree neither.
        state
            .resync("", &mut NoWatch)
            .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        assert_nothing_outside(&state);
        Ok(())
    }

    #[test]
    fn a_hard_linked_file_is_a_candidate_and_is_read_again_once_changed() -> std::io::Result<()> {
        let (_dir, root, outside) = root_and_outside()?;
        std::fs::write(root.join("f.txt"), "hello world\n")?;
        std::fs::hard_link(root.join("f.txt"), outside.join("f-alias.txt"))?;
        let mut state = built(&root, any_limits());
        // A candidate for every search, its trigrams notwithstanding.
        assert_eq!(state.candidates(&query("NEEDLE-XYZ"), ""), vec!["f.txt"]);
        assert!(state.linked_changed().is_empty());
        // A write through the other name: no event reaches the index.
        std::fs::write(outside.join("f-alias.txt"), "hello NEEDLE-XYZ world\n")?;
        let changed = state.linked_changed();
        assert_eq!(changed, vec!["f.txt".to_string()]);
        state.reread(&changed);
        let listed = state.list("");
        let f = listed.iter().find(|f| f.path == "f.txt");
        assert_eq!(f.map(|f| f.size), Some(23));
        assert!(state.linked_changed().is_empty());
        // Once it has one name again, the trigrams decide.
        std::fs::remove_file(outside.join("f-alias.txt"))?;
        state
            .refresh("f.txt", Change::Relinked, &mut NoWatch)
            .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        assert!(state.candidates(&query("ABSENT-WORD"), "").is_empty());
        assert_eq!(state.candidates(&query("NEEDLE-XYZ"), ""), vec!["f.txt"]);
        Ok(())
    }

    #[test]
    fn a_snapshot_lists_what_files_and_tree_list() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b"))?;
        std::fs::create_dir_all(root.join("skip"))?;
        std::fs::write(root.join(".gitignore"), "skip/\n*.log\n")?;
        std::fs::write(root.join("a/one.txt"), "one")?;
        std::fs::write(root.join("a/b/two.txt"), "two")?;
        std::fs::write(root.join("noise.log"), "ignored")?;
        std::fs::write(root.join("skip/hidden.txt"), "ignored")?;
        let state = built(root, any_limits());
        for under in ["", "a"] {
            let snapshot = state.snapshot(under);
            let mut files: Vec<ListedFile> = snapshot
                .files
                .iter()
                .map(|f| ListedFile {
                    path: f.path.to_string(),
                    modified: f.modified,
                    size: f.size,
                })
                .collect();
            files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
            assert_eq!(files, state.list(under), "under {under:?}");
            let mut dirs = snapshot.dirs.clone();
            dirs.sort();
            let mut expected = state.tree(under, None, |_| false).dirs;
            expected.sort();
            assert_eq!(dirs, expected, "under {under:?}");
        }
        let whole = state.snapshot("");
        let names: Vec<&str> = whole.files.iter().map(|f| &*f.path).collect();
        assert!(names.contains(&"a/b/two.txt") && !names.contains(&"noise.log"));
        Ok(())
    }

    #[test]
    fn files_the_index_cannot_vouch_for_are_always_candidates() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        std::fs::write(root.join("big.txt"), vec![b'a'; 200])?;
        std::fs::write(root.join("bom.txt"), b"\xFF\xFEa\0b\0")?;
        std::fs::write(root.join("utf8bom.txt"), b"\xEF\xBB\xBFplain")?;
        let mut late = vec![b'x'; NUL_CHECK_BYTES];
        late.push(0);
        std::fs::write(root.join("late.bin"), &late)?;
        std::fs::write(root.join("early.bin"), b"text\0more")?;
        std::fs::write(root.join("plain.txt"), b"plain text")?;
        let state = built(
            root,
            Limits {
                max_file_bytes: 100_000,
                memory_budget: u64::MAX,
            },
        );
        assert_eq!(
            state.always_reason("bom.txt"),
            Some(AlwaysReason::ByteOrderMark)
        );
        assert_eq!(
            state.always_reason("utf8bom.txt"),
            Some(AlwaysReason::ByteOrderMark)
        );
        assert_eq!(state.always_reason("late.bin"), Some(AlwaysReason::LateNul));
        assert_eq!(state.always_reason("early.bin"), None);
        assert_eq!(state.always_reason("plain.txt"), None);
        let small = built(
            root,
            Limits {
                max_file_bytes: 100,
                memory_budget: u64::MAX,
            },
        );
        assert_eq!(small.always_reason("big.txt"), Some(AlwaysReason::TooLarge));
        // Only the text before the NUL is indexed.
        let before =
            crate::query::regex_query(&regex_syntax::parse("text").map_err(std::io::Error::other)?);
        let after =
            crate::query::regex_query(&regex_syntax::parse("more").map_err(std::io::Error::other)?);
        assert!(
            state
                .candidates(&before, "")
                .contains(&"early.bin".to_string())
        );
        assert!(
            !state
                .candidates(&after, "")
                .contains(&"early.bin".to_string())
        );
        Ok(())
    }

    #[test]
    fn re_indexing_and_merging_keep_answers() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        for i in 0..10 {
            std::fs::write(root.join(format!("f{i}")), format!("common word{i}\n"))?;
        }
        let mut state = built(
            root,
            Limits {
                max_file_bytes: 1 << 20,
                memory_budget: u64::MAX,
            },
        );
        let query = |p: &str| {
            crate::query::regex_query(&regex_syntax::parse(p).unwrap_or_else(|e| panic!("{e}")))
        };
        // Many rewrites: loose lists, packing and merging all happen.
        for round in 0..300 {
            let name = format!("f{}", round % 10);
            std::fs::write(root.join(&name), format!("common round{round}\n"))?;
            state
                .refresh(&name, Change::Relinked, &mut NoWatch)
                .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        }
        state.pack();
        assert_eq!(
            state.candidates(&query("round299"), ""),
            vec!["f9".to_string()]
        );
        assert_eq!(state.candidates(&query("common"), "").len(), 10);
        assert!(state.candidates(&query("word3"), "").is_empty());
        assert!(state.files.len() < 300, "dead files were dropped on merge");
        // The dead records' paths went with them, and every live record
        // still finds its own.
        let live: Vec<&str> = state
            .files
            .iter()
            .filter(|r| r.is_present())
            .map(|r| state.paths.get(r.path))
            .collect();
        let stored: usize = state
            .files
            .iter()
            .map(|r| state.paths.get(r.path).len())
            .sum();
        assert!(
            state.paths.heap_bytes() < 300 * 2,
            "{} bytes for the paths of {} records",
            state.paths.heap_bytes(),
            state.files.len()
        );
        assert!(stored < 300 * 2);
        for i in 0..10 {
            let name = format!("f{i}");
            assert!(live.contains(&name.as_str()), "{name} in {live:?}");
            let id = state
                .by_path
                .get(Records::of(&state.files, &state.paths), &name)
                .unwrap_or_else(|| panic!("{name} has an id"));
            assert_eq!(
                Records::of(&state.files, &state.paths).path(id),
                Some(name.as_str())
            );
        }
        Ok(())
    }

    #[test]
    fn tiers_merge_segments_and_keep_count_of_what_they_hold() {
        let mut tiers = Tiers::default();
        let held = AtomicU64::new(0);
        // 70 chunks of 10 ids: trigram 1 in every id, 2 in every seventh.
        for chunk in 0..70u64 {
            let pairs: Vec<u64> = (chunk * 10..chunk * 10 + 10)
                .flat_map(|id| {
                    let mut p = vec![(1u64 << 32) | id];
                    if id % 7 == 0 {
                        p.push((2u64 << 32) | id);
                    }
                    p
                })
                .collect();
            tiers.push(Segment::from_pairs(pairs), &held);
            // Never more than seven segments of a tier wait.
            assert!(
                tiers.segments.len() < 2 * TIER_FAN,
                "{}",
                tiers.segments.len()
            );
        }
        assert!(tiers.segments.iter().any(|(tier, _)| *tier >= 1));
        let listed: u64 = tiers
            .segments
            .iter()
            .map(|(_, s)| s.list_bytes() as u64)
            .sum();
        assert_eq!(held.load(Ordering::Relaxed), listed);
        tiers.settle(&held);
        assert_eq!(tiers.segments.len(), 1);
        let (_, one) = &tiers.segments[0];
        assert_eq!(held.load(Ordering::Relaxed), one.list_bytes() as u64);
        let mut out = Vec::new();
        one.decode_into(1, &mut out);
        assert_eq!(out, (0..700).collect::<Vec<u32>>());
        out.clear();
        one.decode_into(2, &mut out);
        assert_eq!(out, (0..700).filter(|id| id % 7 == 0).collect::<Vec<u32>>());
        // A second settling merges only what came since: the first
        // segment is kept as it is.
        let first_bytes = one.list_bytes();
        for chunk in 70..75u64 {
            let pairs: Vec<u64> = (chunk * 10..chunk * 10 + 10)
                .map(|id| (1u64 << 32) | id)
                .collect();
            tiers.push(Segment::from_pairs(pairs), &held);
        }
        tiers.settle(&held);
        assert_eq!(tiers.segments.len(), 2);
        assert_eq!(tiers.segments[0].1.list_bytes(), first_bytes);
        let listed: u64 = tiers
            .segments
            .iter()
            .map(|(_, s)| s.list_bytes() as u64)
            .sum();
        assert_eq!(held.load(Ordering::Relaxed), listed);
        let mut out = Vec::new();
        for (_, segment) in &tiers.segments {
            segment.decode_into(1, &mut out);
        }
        assert_eq!(out, (0..750).collect::<Vec<u32>>());
    }

    #[test]
    fn a_build_of_many_chunks_on_two_readers_indexes_every_file() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        // Enough files for tiers of merges on each reader.
        let files = BUILD_CHUNK * 20 + 7;
        for n in 0..files {
            std::fs::write(
                dir.path().join(format!("f{n:05}")),
                format!("word{n:05} common\n"),
            )?;
        }
        let state = built(dir.path(), any_limits());
        assert_eq!(state.candidates(&query("common"), "").len(), files);
        for n in [0, 1, BUILD_CHUNK, files / 2, files - 1] {
            let found = state.candidates(&query(&format!("word{n:05}")), "");
            assert!(found.contains(&format!("f{n:05}")), "{n}");
            // Only the files sharing every trigram (one in a hundred at most).
            assert!(found.len() <= 100, "{n}: {}", found.len());
        }
        Ok(())
    }

    #[test]
    fn a_build_fed_by_the_walk_indexes_every_file_of_every_directory() -> std::io::Result<()> {
        // Nested directories of a few files each, files and directories
        // side by side: the walk hands each directory's files over as it
        // lists it, and both readers take them.
        let dir = tempfile::tempdir()?;
        let mut all = Vec::new();
        for top in 0..12 {
            for sub in 0..6 {
                let folder = if sub == 0 {
                    format!("t{top:02}")
                } else {
                    format!("t{top:02}/s{sub}")
                };
                std::fs::create_dir_all(dir.path().join(&folder))?;
                for n in 0..(top * 7 + sub * 3) % 40 {
                    let rel = format!("{folder}/f{n:02}.txt");
                    let word = format!("w{top:02}x{sub}x{n:02}");
                    std::fs::write(dir.path().join(&rel), format!("{word} common\n"))?;
                    all.push((rel, word));
                }
            }
        }
        let state = built(dir.path(), any_limits());
        let stats = state.stats();
        assert_eq!(stats.indexed_files, all.len() as u64);
        let mut every: Vec<String> = all.iter().map(|(rel, _)| rel.clone()).collect();
        every.sort_unstable();
        assert_eq!(state.candidates(&query("common"), ""), every);
        for (rel, word) in &all {
            // Every file is found by its own word (a file numbered wrongly
            // would be found by another's); a few others may share the
            // trigrams the query stops at.
            let found = state.candidates(&query(word), "");
            assert!(found.contains(rel), "{word}: {found:?}");
            assert!(found.len() <= 16, "{word}: {found:?}");
        }
        Ok(())
    }

    /// Fails to watch once it has watched `left` directories.
    struct WatchLimit {
        left: usize,
    }

    impl Watch for WatchLimit {
        fn watch(&mut self, _dir: &Path) -> Result<(), WatchFailure> {
            if self.left == 0 {
                return Err(WatchFailure::Limit);
            }
            self.left -= 1;
            Ok(())
        }
        fn unwatch(&mut self, _dir: &Path) {}
    }

    #[test]
    fn a_walk_that_fails_midway_ends_the_build_and_its_readers() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        for d in 0..20 {
            std::fs::create_dir_all(dir.path().join(format!("d{d:02}")))?;
            for n in 0..30 {
                std::fs::write(dir.path().join(format!("d{d:02}/f{n:02}")), "text\n")?;
            }
        }
        let built = State::build(
            dir.path().to_path_buf(),
            any_limits(),
            None,
            &mut WatchLimit { left: 5 },
            Arc::new(AtomicBool::new(false)),
        );
        assert!(matches!(built, Err(WatchFailure::Limit)));
        Ok(())
    }

    #[test]
    fn the_feed_hands_out_chunks_in_order_until_closed_or_abandoned() {
        let feed = Feed::default();
        let paths: Vec<String> = (0..BUILD_CHUNK * 2 + 3)
            .map(|n| format!("d/f{n}"))
            .collect();
        let mut list = PathList::default();
        for path in &paths {
            list.push(path);
        }
        feed.push(list);
        feed.push(PathList::default());
        feed.close();
        let mut taken = Vec::new();
        while let Some(chunk) = feed.next() {
            assert!(!chunk.is_empty() && chunk.len() <= BUILD_CHUNK);
            taken.extend(chunk.iter().map(str::to_string));
        }
        assert_eq!(taken, paths);
        // Abandoned, nothing more is handed out, even what was queued; a
        // reader waiting for more is woken.
        let feed = Feed::default();
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| feed.next());
            let mut one = PathList::default();
            one.push("x");
            feed.push(one);
            feed.abandon();
            let got = waiting
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            // The waiting reader may have taken the chunk before the feed
            // was abandoned; after, nothing comes out.
            assert!(got.is_none_or(|chunk| chunk.len() == 1));
        });
        assert!(feed.next().is_none());
    }

    /// Hands out what it holds a few bytes at a time.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
        calls: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.calls += 1;
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn the_first_block_is_read_whole_by_one_call_when_its_size_is_known() -> std::io::Result<()> {
        let text: Vec<u8> = (0..NUL_CHECK_BYTES * 2)
            .map(|n| b'a' + (n % 26) as u8)
            .collect();
        let mut bytes = Vec::new();
        // The size the stamp saw: one call, no read that returns nothing.
        let mut file = Trickle {
            data: &text[..100],
            step: usize::MAX,
            calls: 0,
        };
        read_first_block(&mut file, &mut bytes, 100)?;
        assert_eq!((bytes.as_slice(), file.calls), (&text[..100], 1));
        // Short reads before the expected size are read on.
        bytes.clear();
        let mut file = Trickle {
            data: &text[..100],
            step: 7,
            calls: 0,
        };
        read_first_block(&mut file, &mut bytes, 100)?;
        assert_eq!(bytes, &text[..100]);
        // A file that grew past what its stamp saw is read on to the block.
        bytes.clear();
        let mut file = Trickle {
            data: &text,
            step: usize::MAX,
            calls: 0,
        };
        read_first_block(&mut file, &mut bytes, 100)?;
        assert_eq!(bytes, &text[..NUL_CHECK_BYTES]);
        // One that shrank ends where it ends.
        bytes.clear();
        let mut file = Trickle {
            data: &text[..10],
            step: usize::MAX,
            calls: 0,
        };
        read_first_block(&mut file, &mut bytes, 100)?;
        assert_eq!(bytes, &text[..10]);
        // An error leaves nothing half read.
        struct Fails;
        impl Read for Fails {
            fn read(&mut self, _buf: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("broken"))
            }
        }
        bytes.clear();
        assert!(read_first_block(&mut Fails, &mut bytes, 100).is_err());
        assert!(bytes.is_empty());
        Ok(())
    }
}
