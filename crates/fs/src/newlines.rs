//! Newline counts of large files, and a small cache of checkpoints so that a
//! repeated read of a file that did not change, or of a log that only grew,
//! counts at most the bytes appended since.
//!
//! An index holds the number of newlines before every multiple of its step
//! (a power of two, at least [`MIN_STEP`] bytes) and before the end. The
//! cache keeps the indexes of the [`MAX_FILES`] most recently read large
//! files, each with at most [`MAX_CHECKPOINTS`] checkpoints: at most about
//! `MAX_FILES × MAX_CHECKPOINTS × 8` bytes (1 MiB), whatever the files.
//!
//! The cache and its eviction are written here rather than taken from an LRU
//! crate: it holds a few dozen entries, found by a linear scan, and what
//! matters is the validation (file identity, size, times, fingerprints).

use std::fs::File;
use std::hash::{DefaultHasher, Hasher};
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Bytes read at once when counting.
const COUNT_BLOCK: usize = 256 * 1024;

/// The smallest distance between two checkpoints, and the smallest file the
/// cache keeps: a smaller file is counted in one go, as fast as a lookup.
pub(crate) const MIN_STEP: u64 = 1024 * 1024;

/// The most checkpoints of one file; past it the step doubles and every
/// other checkpoint goes (a 4 GiB file keeps one per MiB, 8 GiB one per 2 MiB).
pub(crate) const MAX_CHECKPOINTS: usize = 4096;

/// The most files the cache remembers; the least recently used goes first.
pub(crate) const MAX_FILES: usize = 32;

/// How long after its last change a file's times are trusted to tell any
/// further change. Timestamps are taken from a coarse clock (a kernel tick,
/// up to two seconds on some filesystems): a rewrite of equal size within the
/// same tick leaves size and times as they were. An entry stored sooner after
/// the file's change than this is only a base for appends (whose
/// fingerprints are checked), never reused as it is.
const RACY_WINDOW: Duration = Duration::from_secs(3);

/// Bytes hashed at the start of a file, and before the end it had when it was
/// indexed, to trust that a grown file was only appended to.
const FINGERPRINT_BYTES: u64 = 4096;

/// The newline counts of one file as it was at `size` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewlineIndex {
    /// Bytes between checkpoints: a power of two, at least [`MIN_STEP`].
    step: u64,
    /// `before[i]` is the number of newlines in the bytes `[0, i × step)`,
    /// for every `i × step <= size`.
    before: Vec<u64>,
    /// The size counted.
    size: u64,
    /// The newlines in `[0, size)`.
    total: u64,
}

impl NewlineIndex {
    /// An index of an empty file, to be [extended](Self::extend).
    fn empty() -> Self {
        NewlineIndex {
            step: MIN_STEP,
            before: vec![0],
            size: 0,
            total: 0,
        }
    }

    /// The newlines in the whole file as counted.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Counts the bytes `[self.size, new_size)` of `file`, adding checkpoints.
    /// This is read_file's one newline counter: `bytecount` counts at memory
    /// speed, where a search such as memchr pays per match, which adds up on
    /// files of short lines.
    /// `Ok(false)` when `cancel` was set first. A file shorter than
    /// `new_size` is an `UnexpectedEof` error: it changed while read.
    fn extend(&mut self, file: &mut File, new_size: u64, cancel: &AtomicBool) -> io::Result<bool> {
        let mut buf = vec![0u8; COUNT_BLOCK.min(usize::try_from(new_size).unwrap_or(COUNT_BLOCK))];
        file.seek(SeekFrom::Start(self.size))?;
        while self.size < new_size {
            if cancel.load(Ordering::Relaxed) {
                return Ok(false);
            }
            let next_checkpoint = (self.size / self.step + 1) * self.step;
            let want = (next_checkpoint.min(new_size) - self.size).min(buf.len() as u64);
            let chunk = &mut buf[..usize::try_from(want).unwrap_or(0)];
            file.read_exact(chunk)?;
            self.total += agent_tools_text::count_newlines(chunk) as u64;
            self.size += want;
            if self.size == next_checkpoint {
                self.before.push(self.total);
                if self.before.len() > MAX_CHECKPOINTS {
                    self.coarsen();
                }
            }
        }
        Ok(true)
    }

    /// Doubles the step, keeping every other checkpoint.
    fn coarsen(&mut self) {
        self.step *= 2;
        self.before = self.before.iter().copied().step_by(2).collect();
    }

    /// The byte where 1-based line `line` starts (`line` at most the file's
    /// line count): after its `line - 1`-th newline, found by scanning from
    /// the last checkpoint before it. `None` when `cancel` was set first.
    pub(crate) fn line_start(
        &self,
        file: &mut File,
        line: u64,
        cancel: &AtomicBool,
    ) -> io::Result<Option<u64>> {
        let newlines = line.saturating_sub(1);
        if newlines == 0 {
            return Ok(Some(0));
        }
        // The last checkpoint with fewer newlines before it than wanted:
        // the wanted newline is at or after it (before[0] is 0).
        let at = self.before.partition_point(|&count| count < newlines) - 1;
        let mut pos = at as u64 * self.step;
        let mut left = newlines - self.before[at];
        file.seek(SeekFrom::Start(pos))?;
        let mut buf = vec![0u8; COUNT_BLOCK];
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let n = file.read(&mut buf)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file shrank while it was read",
                ));
            }
            let here = agent_tools_text::count_newlines(&buf[..n]) as u64;
            if here >= left {
                let index = memchr::memchr_iter(b'\n', &buf[..n])
                    .nth(usize::try_from(left - 1).unwrap_or(usize::MAX))
                    .unwrap_or(n - 1);
                return Ok(Some(pos + index as u64 + 1));
            }
            left -= here;
            pos += n as u64;
        }
    }
}

/// Which file: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

/// The state of a file's contents as its metadata tells: any write changes
/// the size or the modification time, and always the change time, which
/// unlike the modification time cannot be set back by a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

#[cfg(unix)]
fn identify(meta: &std::fs::Metadata) -> Option<(FileId, Stamp)> {
    use std::os::unix::fs::MetadataExt;
    Some((
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        },
        Stamp {
            size: meta.size(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        },
    ))
}

/// Without inode numbers a file cannot be told from its replacement: no cache.
#[cfg(not(unix))]
fn identify(_meta: &std::fs::Metadata) -> Option<(FileId, Stamp)> {
    None
}

struct Entry {
    id: FileId,
    stamp: Stamp,
    /// Hash of the first bytes, and of the last bytes before `stamp.size`.
    head: u64,
    edge: u64,
    index: Arc<NewlineIndex>,
    /// The file had not changed for [`RACY_WINDOW`] when it was indexed.
    settled: bool,
    last_used: u64,
}

/// How a lookup went, for tests and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reuse {
    /// Counted from the start.
    None,
    /// The file had not changed: nothing counted.
    Whole,
    /// The file had grown by appending: only the new bytes counted.
    Appended,
}

/// The newline indexes of the most recently read large files.
#[derive(Debug)]
pub(crate) struct NewlineCache {
    entries: Mutex<Entries>,
    racy_window: Duration,
}

impl Default for NewlineCache {
    fn default() -> Self {
        NewlineCache {
            entries: Mutex::default(),
            racy_window: RACY_WINDOW,
        }
    }
}

#[derive(Default)]
struct Entries {
    list: Vec<Entry>,
    clock: u64,
}

impl std::fmt::Debug for Entries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} cached newline indexes", self.list.len())
    }
}

impl NewlineCache {
    /// The newline index of `file` (whose metadata, taken on the open
    /// descriptor, is `meta`), from the cache when it is still valid.
    /// `None` when `cancel` was set first.
    ///
    /// The cached index is reused whole when the device, inode, size,
    /// modification and change times are all the same, and the file had not
    /// changed for [`RACY_WINDOW`] when it was indexed. It is extended when
    /// the same inode grew and the first bytes and the last bytes of the old
    /// size hash as before: a log that was appended to. The risk taken: a
    /// file rewritten in its middle, keeping its first and its old last 4 KiB
    /// and growing, would get line numbers counted from stale checkpoints.
    /// Any other change (shrinking, an equal-size rewrite, a replacement by
    /// rename) counts from the start.
    pub(crate) fn index(
        &self,
        file: &mut File,
        meta: &std::fs::Metadata,
        cancel: &AtomicBool,
    ) -> io::Result<Option<(Arc<NewlineIndex>, Reuse)>> {
        let size = meta.len();
        let identity = identify(meta).filter(|_| size >= MIN_STEP);
        let Some((id, stamp)) = identity else {
            let mut index = NewlineIndex::empty();
            return Ok(index
                .extend(file, size, cancel)?
                .then(|| (Arc::new(index), Reuse::None)));
        };
        let cached = self.lock().find(id).map(|entry| {
            (
                entry.stamp,
                entry.settled,
                entry.head,
                entry.edge,
                Arc::clone(&entry.index),
            )
        });
        let (mut index, reuse) = match cached {
            Some((old, true, _, _, index)) if old == stamp => {
                return Ok(Some((index, Reuse::Whole)));
            }
            Some((old, _, head, edge, index))
                if old.size < size
                    && head_hash(file, old.size)? == head
                    && edge_hash(file, old.size)? == edge =>
            {
                (Arc::unwrap_or_clone(index), Reuse::Appended)
            }
            _ => (NewlineIndex::empty(), Reuse::None),
        };
        if !index.extend(file, size, cancel)? {
            return Ok(None);
        }
        let index = Arc::new(index);
        // Kept only when the file did not change while it was counted.
        let now = file.metadata()?;
        if identify(&now) == Some((id, stamp)) {
            let entry = Entry {
                id,
                stamp,
                head: head_hash(file, size)?,
                edge: edge_hash(file, size)?,
                index: Arc::clone(&index),
                settled: settled(stamp, self.racy_window),
                last_used: 0,
            };
            self.lock().insert(entry);
        }
        Ok(Some((index, reuse)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // The entries are replaced whole under the lock: a panic elsewhere
        // cannot leave one half-written.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Entries {
    fn find(&mut self, id: FileId) -> Option<&Entry> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self.list.iter_mut().find(|entry| entry.id == id)?;
        entry.last_used = clock;
        Some(entry)
    }

    fn insert(&mut self, mut entry: Entry) {
        self.clock += 1;
        entry.last_used = self.clock;
        if let Some(slot) = self.list.iter_mut().find(|old| old.id == entry.id) {
            *slot = entry;
        } else if self.list.len() < MAX_FILES {
            self.list.push(entry);
        } else if let Some(oldest) = self.list.iter_mut().min_by_key(|old| old.last_used) {
            *oldest = entry;
        }
    }
}

/// Whether the file's last change (its change time) is at least `window` ago.
fn settled(stamp: Stamp, window: Duration) -> bool {
    let (secs, nanos) = stamp.changed;
    let changed = u64::try_from(secs)
        .ok()
        .map(|secs| Duration::new(secs, u32::try_from(nanos).unwrap_or(0)));
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok();
    match (changed, now) {
        (Some(changed), Some(now)) => now.saturating_sub(changed) >= window,
        _ => false,
    }
}

/// Hash of the bytes `[start, start + len)` of `file`.
fn hash_range(file: &mut File, start: u64, len: u64) -> io::Result<u64> {
    let mut buf = vec![0u8; usize::try_from(len).unwrap_or(0)];
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(&mut buf)?;
    let mut hasher = DefaultHasher::new();
    hasher.write(&buf);
    Ok(hasher.finish())
}

fn head_hash(file: &mut File, size: u64) -> io::Result<u64> {
    hash_range(file, 0, FINGERPRINT_BYTES.min(size))
}

fn edge_hash(file: &mut File, size: u64) -> io::Result<u64> {
    let len = FINGERPRINT_BYTES.min(size);
    hash_range(file, size - len, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_of(content: &[u8], step: u64) -> NewlineIndex {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, content).unwrap();
        let mut file = File::open(&path).unwrap();
        let mut index = NewlineIndex::empty();
        index.step = step;
        assert!(
            index
                .extend(&mut file, content.len() as u64, &AtomicBool::new(false))
                .unwrap()
        );
        index
    }

    #[test]
    fn checkpoints_count_the_newlines_before_them() {
        let content: Vec<u8> = (0..10_000u32)
            .map(|i| if i % 7 == 0 { b'\n' } else { b'x' })
            .collect();
        let index = index_of(&content, 1024);
        assert_eq!(index.before.len(), 10_000 / 1024 + 1);
        for (i, &count) in index.before.iter().enumerate() {
            let expected = content[..i * 1024].iter().filter(|&&b| b == b'\n').count();
            assert_eq!(count, expected as u64, "checkpoint {i}");
        }
        assert_eq!(
            index.total,
            content.iter().filter(|&&b| b == b'\n').count() as u64
        );
    }

    #[test]
    fn too_many_checkpoints_double_the_step() {
        let content = vec![b'\n'; 16 * (MAX_CHECKPOINTS + 10)];
        let index = index_of(&content, 16);
        assert!(index.before.len() <= MAX_CHECKPOINTS);
        assert_eq!(index.step, 32);
        for (i, &count) in index.before.iter().enumerate() {
            assert_eq!(count, i as u64 * 32);
        }
        assert_eq!(index.total, content.len() as u64);
    }

    #[test]
    fn line_starts_are_found_from_any_checkpoint() {
        let mut content = Vec::new();
        let mut starts = vec![0u64];
        for i in 0..3000u64 {
            content.extend(std::iter::repeat_n(b'a', (i % 13) as usize));
            content.push(b'\n');
            starts.push(content.len() as u64);
        }
        starts.pop();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &content).unwrap();
        let mut file = File::open(&path).unwrap();
        let index = index_of(&content, 64);
        let cancel = AtomicBool::new(false);
        for (line, &start) in starts.iter().enumerate() {
            let found = index
                .line_start(&mut file, line as u64 + 1, &cancel)
                .unwrap();
            assert_eq!(found, Some(start), "line {}", line + 1);
        }
    }

    #[test]
    fn eviction_drops_the_least_recently_used() {
        let mut entries = Entries::default();
        let entry = |ino| Entry {
            id: FileId { dev: 1, ino },
            stamp: Stamp {
                size: 0,
                modified: (0, 0),
                changed: (0, 0),
            },
            head: 0,
            edge: 0,
            index: Arc::new(NewlineIndex::empty()),
            settled: true,
            last_used: 0,
        };
        for ino in 0..MAX_FILES as u64 {
            entries.insert(entry(ino));
        }
        assert!(entries.find(FileId { dev: 1, ino: 0 }).is_some());
        entries.insert(entry(1000));
        assert_eq!(entries.list.len(), MAX_FILES);
        assert!(entries.find(FileId { dev: 1, ino: 0 }).is_some());
        assert!(entries.find(FileId { dev: 1, ino: 1 }).is_none());
        assert!(entries.find(FileId { dev: 1, ino: 1000 }).is_some());
    }

    /// Indexes `path` through `cache` and says how the cache served it.
    fn reuse(cache: &NewlineCache, path: &std::path::Path) -> (u64, Reuse) {
        let mut file = File::open(path).unwrap();
        let meta = file.metadata().unwrap();
        let (index, reuse) = cache
            .index(&mut file, &meta, &AtomicBool::new(false))
            .unwrap()
            .unwrap();
        let on_disk = std::fs::read(path).unwrap();
        assert_eq!(index.total, bytecount::count(&on_disk, b'\n') as u64);
        (index.total, reuse)
    }

    fn settled_cache() -> NewlineCache {
        NewlineCache {
            racy_window: Duration::ZERO,
            ..NewlineCache::default()
        }
    }

    fn lines(count: usize, width: usize) -> Vec<u8> {
        let mut line = vec![b'x'; width - 1];
        line.push(b'\n');
        line.repeat(count)
    }

    #[test]
    fn the_cache_serves_an_unchanged_file_and_counts_only_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, lines(300_000, 8)).unwrap();
        let cache = settled_cache();
        assert_eq!(reuse(&cache, &path), (300_000, Reuse::None));
        assert_eq!(reuse(&cache, &path), (300_000, Reuse::Whole));
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut log, &lines(200_000, 5)).unwrap();
        assert_eq!(reuse(&cache, &path), (500_000, Reuse::Appended));
        std::io::Write::write_all(&mut log, b"no newline").unwrap();
        assert_eq!(reuse(&cache, &path), (500_000, Reuse::Appended));
        assert_eq!(reuse(&cache, &path), (500_000, Reuse::Whole));
    }

    #[test]
    fn any_change_of_size_times_or_inode_counts_again() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let original = lines(300_000, 8);
        std::fs::write(&path, &original).unwrap();
        let cache = settled_cache();
        reuse(&cache, &path);

        // Rewritten in place at equal size, with its old modification time
        // put back: the change time still tells.
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, lines(600_000, 4)).unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert_eq!(reuse(&cache, &path), (600_000, Reuse::None));

        // Truncated.
        std::fs::write(&path, lines(150_000, 8)).unwrap();
        assert_eq!(reuse(&cache, &path), (150_000, Reuse::None));

        // Replaced by rename with a file of equal size and time.
        let other = dir.path().join("other");
        std::fs::write(&other, lines(400_000, 3)).unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        File::options()
            .write(true)
            .open(&other)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        std::fs::write(&path, lines(300_000, 4)).unwrap();
        reuse(&cache, &path);
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(reuse(&cache, &path), (400_000, Reuse::None));

        // Grown, but the bytes before the old end were changed: not an append.
        let file = File::options().write(true).open(&path).unwrap();
        let size = file.metadata().unwrap().len();
        file.write_all_at(b"\n\n", size - 10).unwrap();
        file.write_all_at(b"tail\n", size).unwrap();
        assert_eq!(reuse(&cache, &path).1, Reuse::None);
        // So was the start.
        file.write_all_at(b"\n", 0).unwrap();
        file.write_all_at(b"more\n", size + 5).unwrap();
        assert_eq!(reuse(&cache, &path).1, Reuse::None);
    }

    #[test]
    fn a_file_indexed_right_after_a_change_is_not_reused_as_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, lines(300_000, 8)).unwrap();
        let cache = NewlineCache::default();
        assert_eq!(reuse(&cache, &path), (300_000, Reuse::None));
        assert_eq!(reuse(&cache, &path), (300_000, Reuse::None));
        // An append is still counted from the checkpoints.
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut log, b"one\n").unwrap();
        assert_eq!(reuse(&cache, &path), (300_001, Reuse::Appended));
    }

    #[test]
    fn a_cancelled_count_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, lines(300_000, 8)).unwrap();
        let cache = settled_cache();
        let mut file = File::open(&path).unwrap();
        let meta = file.metadata().unwrap();
        let stopped = cache
            .index(&mut file, &meta, &AtomicBool::new(true))
            .unwrap();
        assert!(stopped.is_none());
        assert_eq!(reuse(&cache, &path), (300_000, Reuse::None));
    }
}
