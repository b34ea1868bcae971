//! A job's output log: the newest bytes up to a cap, addressed by their
//! offset in everything the job ever printed, with which stream each
//! stretch came from.
//!
//! Only the newest bytes (the tail) are kept in memory; the whole log is
//! in the job's log file on disk, a ring of `cap` bytes where the byte at
//! offset `o` lies at `o % cap`. The job's output thread writes the file
//! outside the state's lock ([`RingWriter::write`]), once
//! [`OutputLog::begin_push`] has dropped the bytes the write will cover,
//! so a read (under the lock) never meets a byte being overwritten.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Which output stream bytes came from. A job in a terminal has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    /// Standard output (or the terminal).
    Stdout,
    /// Standard error.
    Stderr,
}

/// The most stream switches remembered; past it the oldest are forgotten
/// (their bytes count as the next run's stream), so a job alternating
/// streams byte by byte cannot grow the list without bound.
const MAX_RUNS: usize = 4096;

/// Creates a job's log file for a log of `cap` bytes: one handle for the
/// log's reads, one for the output thread's writes. The file has no name
/// (nothing is left behind however the server ends) and is made in `dir`
/// (the project's spill folder, on its disk) when it can be, else in the
/// system's temporary folder; `None` when neither can hold one.
pub(crate) fn create_file(dir: Option<&Path>, cap: usize) -> Option<(File, RingWriter)> {
    let in_dir = dir.and_then(|dir| {
        std::fs::create_dir_all(dir).ok()?;
        tempfile::tempfile_in(dir).ok()
    });
    let file = in_dir.or_else(|| tempfile::tempfile().ok())?;
    let writer = file.try_clone().ok()?;
    Some((
        file,
        RingWriter {
            file: writer,
            cap: cap.max(1) as u64,
        },
    ))
}

/// The output thread's handle on a job's log file.
#[derive(Debug)]
pub(crate) struct RingWriter {
    file: File,
    cap: u64,
}

impl RingWriter {
    /// Writes `data`, the bytes from offset `at`, to their places in the
    /// ring ([`OutputLog::begin_push`] said where: `at` is the log's end).
    pub(crate) fn write(&self, at: u64, data: &[u8]) -> io::Result<()> {
        // Only the last `cap` bytes would be left: the rest is skipped.
        let skip = data
            .len()
            .saturating_sub(usize::try_from(self.cap).unwrap_or(usize::MAX));
        let mut at = at + skip as u64;
        let mut data = &data[skip..];
        while !data.is_empty() {
            let place = at % self.cap;
            let room = usize::try_from(self.cap - place).unwrap_or(usize::MAX);
            let (now, rest) = data.split_at(room.min(data.len()));
            self.file.write_all_at(now, place)?;
            at += now.len() as u64;
            data = rest;
        }
        Ok(())
    }
}

#[derive(Debug)]
pub(crate) struct OutputLog {
    /// The newest bytes, at most `tail_cap`: what reads of a running job
    /// mostly want, answered without the disk.
    tail: VecDeque<u8>,
    tail_cap: usize,
    /// The offset just past the last byte appended.
    end: u64,
    /// The first offset still kept: everything before it was dropped.
    start: u64,
    cap: usize,
    /// The job's log file (see the module's doc), holding `[start, end)`;
    /// without one (none could be made, or it failed) only the tail is
    /// kept.
    file: Option<File>,
    /// `(offset where a run starts, its stream)`, in order.
    runs: VecDeque<(u64, OutputStream)>,
}

impl OutputLog {
    /// A log keeping the newest `cap` bytes, `tail` of them in memory and
    /// all of them in `file` (written by the matching [`RingWriter`]).
    pub(crate) fn new(cap: usize, tail: usize, file: Option<File>) -> Self {
        let cap = cap.max(1);
        OutputLog {
            tail: VecDeque::new(),
            tail_cap: tail.clamp(1, cap),
            end: 0,
            start: 0,
            cap,
            file,
            runs: VecDeque::new(),
        }
    }

    /// The offset just past the last byte ever appended.
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// The first offset still kept; everything before it was dropped.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }

    /// The first offset held in memory.
    fn tail_start(&self) -> u64 {
        self.end - self.tail.len() as u64
    }

    /// Makes way for `len` more bytes in the log file: the oldest bytes
    /// the write will cover are dropped now, before it. Returns the offset
    /// the write starts at, for [`RingWriter::write`].
    pub(crate) fn begin_push(&mut self, len: usize) -> u64 {
        if self.file.is_some() {
            self.start = self
                .start
                .max((self.end + len as u64).saturating_sub(self.cap as u64));
        }
        self.end
    }

    /// Appends `data`; `stored` says whether the log file took it (else
    /// the file is given up and only the tail is kept from then on).
    /// Returns whether the log still has its file: the writer stops
    /// writing once it has not.
    pub(crate) fn push(&mut self, stream: OutputStream, data: &[u8], stored: bool) -> bool {
        if !stored {
            self.file = None;
        }
        if data.is_empty() {
            return self.file.is_some();
        }
        if self.runs.back().is_none_or(|(_, s)| *s != stream) {
            self.runs.push_back((self.end, stream));
            if self.runs.len() > MAX_RUNS {
                self.runs.pop_front();
            }
        }
        // The whole tail is taken at the first output, in one allocation:
        // a buffer that grew by copies would leave the smaller ones behind
        // in the allocator.
        if self.tail.capacity() < self.tail_cap {
            self.tail.reserve_exact(self.tail_cap - self.tail.len());
        }
        // Drop before adding, so the buffer never passes its size.
        let keep = &data[data.len().saturating_sub(self.tail_cap)..];
        let excess = (self.tail.len() + keep.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..excess);
        self.tail.extend(keep);
        self.end += data.len() as u64;
        self.start = self.start.max(self.end.saturating_sub(self.cap as u64));
        if self.file.is_none() {
            self.start = self.start.max(self.tail_start());
        }
        self.file.is_some()
    }

    /// Gives up the log file after a read of it failed: what was only
    /// there counts as dropped, and reads go on from the tail.
    pub(crate) fn lose_file(&mut self) {
        self.file = None;
        self.start = self.start.max(self.tail_start());
    }

    /// Gives back the room the tail will not use once the job's output
    /// has ended: an exited job's record holds only what it printed, and
    /// no file when all it kept is in memory (records of short jobs hold
    /// no descriptor).
    pub(crate) fn shrink(&mut self) {
        self.tail.shrink_to_fit();
        if self.start >= self.tail_start() {
            self.file = None;
        }
    }

    /// The bytes of `[from, to)`, clamped to what is kept: the older ones
    /// from the log file, the newest from memory.
    pub(crate) fn read(&self, from: u64, to: u64) -> io::Result<Vec<u8>> {
        let from = from.clamp(self.start, self.end);
        let to = to.clamp(from, self.end);
        let mut out = vec![0; usize::try_from(to - from).unwrap_or(usize::MAX)];
        let tail_start = self.tail_start();
        let on_disk = usize::try_from(to.min(tail_start).saturating_sub(from)).unwrap_or(0);
        if on_disk > 0 {
            // Without a file, `start` is never before the tail.
            let file = self.file.as_ref().ok_or(io::ErrorKind::NotFound)?;
            let cap = self.cap as u64;
            let mut at = from;
            let mut done = 0;
            while done < on_disk {
                let place = at % cap;
                let room = usize::try_from(cap - place).unwrap_or(usize::MAX);
                let len = room.min(on_disk - done);
                file.read_exact_at(&mut out[done..done + len], place)
                    .map_err(|err| match err.kind() {
                        io::ErrorKind::UnexpectedEof => io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the file is shorter than the log: it was cut",
                        ),
                        _ => err,
                    })?;
                done += len;
                at += len as u64;
            }
        }
        let a = usize::try_from(from.max(tail_start) - tail_start).unwrap_or(usize::MAX);
        let b = usize::try_from(to.max(tail_start) - tail_start).unwrap_or(usize::MAX);
        for (slot, byte) in out[on_disk..].iter_mut().zip(self.tail.range(a..b)) {
            *slot = *byte;
        }
        Ok(out)
    }

    /// `[from, to)` cut where the stream changes: `(stream, start, end)`.
    pub(crate) fn runs_in(&self, from: u64, to: u64) -> Vec<(OutputStream, u64, u64)> {
        let mut out = Vec::new();
        for (i, &(start, stream)) in self.runs.iter().enumerate() {
            let end = self.runs.get(i + 1).map_or(u64::MAX, |(next, _)| *next);
            let (a, b) = (start.max(from), end.min(to));
            if a < b {
                out.push((stream, a, b));
            }
        }
        if out.is_empty() && from < to {
            out.push((OutputStream::Stdout, from, to));
        }
        out
    }

    /// The log's file, for tests that break it.
    #[cfg(test)]
    pub(crate) fn file(&self) -> Option<&File> {
        self.file.as_ref()
    }

    /// The room the tail takes in memory, for tests of the memory bound.
    #[cfg(test)]
    pub(crate) fn memory(&self) -> usize {
        self.tail.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Appends as the output thread does: room made, the file written,
    /// then the bytes pushed.
    fn append(log: &mut OutputLog, writer: &RingWriter, stream: OutputStream, data: &[u8]) {
        let at = log.begin_push(data.len());
        writer.write(at, data).unwrap();
        assert!(log.push(stream, data, true));
    }

    /// A log of `cap` bytes, `tail` in memory, with a log file in `dir`.
    fn on_disk(dir: &tempfile::TempDir, cap: usize, tail: usize) -> (OutputLog, RingWriter) {
        let (file, writer) = create_file(Some(dir.path()), cap).unwrap();
        (OutputLog::new(cap, tail, Some(file)), writer)
    }

    #[test]
    fn keeps_the_newest_bytes_with_their_offsets_and_streams() {
        let mut log = OutputLog::new(10, 10, None);
        log.push(OutputStream::Stdout, b"012345", true);
        log.push(OutputStream::Stderr, b"6789ab", true);
        assert_eq!((log.start(), log.end()), (2, 12));
        assert_eq!(log.read(0, 100).unwrap(), b"23456789ab");
        assert_eq!(log.read(5, 8).unwrap(), b"567");
        assert_eq!(
            log.runs_in(4, 12),
            [(OutputStream::Stdout, 4, 6), (OutputStream::Stderr, 6, 12)]
        );
        for _ in 0..(MAX_RUNS * 2) {
            log.push(OutputStream::Stdout, b"x", true);
            log.push(OutputStream::Stderr, b"y", true);
        }
        assert_eq!(log.runs.len(), MAX_RUNS);
        assert_eq!(log.tail.len(), 10);
        assert!(log.tail.capacity() < 20, "{}", log.tail.capacity());
        let mut small = OutputLog::new(1 << 20, 1 << 20, None);
        assert_eq!(
            small.tail.capacity(),
            0,
            "a log takes room only at its first output"
        );
        small.push(OutputStream::Stdout, b"short", true);
        assert!(small.tail.capacity() >= 1 << 20);
        small.shrink();
        assert!(small.tail.capacity() < 1 << 10, "{}", small.tail.capacity());
        assert_eq!(small.read(0, u64::MAX).unwrap(), b"short");
        let end = log.end();
        log.push(OutputStream::Stdout, b"0123456789abcdef", true);
        assert_eq!(log.end(), end + 16);
        assert_eq!(log.read(0, u64::MAX).unwrap(), b"6789abcdef");
    }

    #[test]
    fn older_bytes_come_from_the_file_and_the_newest_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, writer) = on_disk(&dir, 10, 4);
        append(&mut log, &writer, OutputStream::Stdout, b"012345");
        // Six bytes, four of them in memory: the first two from the file.
        assert_eq!(log.tail.len(), 4);
        assert_eq!(log.read(0, 100).unwrap(), b"012345");
        assert_eq!(log.read(1, 3).unwrap(), b"12");
        append(&mut log, &writer, OutputStream::Stderr, b"6789ab");
        // Past the cap: the file wrapped, the first two are dropped.
        assert_eq!((log.start(), log.end()), (2, 12));
        assert_eq!(log.read(0, 100).unwrap(), b"23456789ab");
        assert_eq!(log.read(5, 10).unwrap(), b"56789", "file, then memory");
        assert_eq!(log.tail.len(), 4);
        // A write larger than the whole log keeps its last `cap` bytes.
        append(&mut log, &writer, OutputStream::Stdout, b"ABCDEFGHIJKLMNOP");
        assert_eq!((log.start(), log.end()), (18, 28));
        assert_eq!(log.read(0, u64::MAX).unwrap(), b"GHIJKLMNOP");
        // At the end the file stays: it holds what memory does not.
        log.shrink();
        assert!(log.file().is_some());
        assert_eq!(log.read(0, u64::MAX).unwrap(), b"GHIJKLMNOP");
        // A log all in memory lets its file go.
        let (mut short, writer) = on_disk(&dir, 10, 4);
        append(&mut short, &writer, OutputStream::Stdout, b"abc");
        short.shrink();
        assert!(short.file().is_none());
        assert_eq!(short.read(0, u64::MAX).unwrap(), b"abc");
    }

    #[test]
    fn a_file_that_takes_no_write_is_given_up_for_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, b"").unwrap();
        let mut log = OutputLog::new(100, 4, Some(File::open(&path).unwrap()));
        // A read-only handle: every write fails.
        let writer = RingWriter {
            file: File::open(&path).unwrap(),
            cap: 100,
        };
        let at = log.begin_push(6);
        assert!(writer.write(at, b"012345").is_err());
        assert!(!log.push(OutputStream::Stdout, b"012345", false));
        // Only the tail is left, and the rest counts as dropped.
        assert_eq!((log.start(), log.end()), (2, 6));
        assert_eq!(log.read(0, 100).unwrap(), b"2345");
        log.push(OutputStream::Stdout, b"67", true);
        assert_eq!((log.start(), log.end()), (4, 8));
        assert_eq!(log.read(0, 100).unwrap(), b"4567");
    }

    #[test]
    fn a_cut_file_is_an_error_then_the_tail_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, writer) = on_disk(&dir, 100, 4);
        append(&mut log, &writer, OutputStream::Stdout, b"0123456789");
        log.file().unwrap().set_len(3).unwrap();
        let err = log.read(0, 100).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert!(err.to_string().contains("it was cut"), "{err}");
        // What is in memory is still read, and only it.
        assert_eq!(log.read(6, 100).unwrap(), b"6789");
        log.lose_file();
        assert_eq!((log.start(), log.end()), (6, 10));
        assert_eq!(log.read(0, 100).unwrap(), b"6789");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any stretch read back is the same bytes that were written,
        /// whichever side of the border between the file and memory, and
        /// across the file's wrap, it falls on.
        #[test]
        fn every_read_matches_what_was_written(
            cap in 1usize..64,
            tail in 1usize..64,
            chunks in proptest::collection::vec(0usize..80, 1..24),
            cuts in proptest::collection::vec((0u64..2000, 0u64..2000), 4),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let (mut log, writer) = on_disk(&dir, cap, tail);
            let mut all = Vec::new();
            for (n, len) in chunks.into_iter().enumerate() {
                let data: Vec<u8> = (0..len).map(|i| ((all.len() + i) % 251) as u8).collect();
                let stream = if n % 2 == 0 { OutputStream::Stdout } else { OutputStream::Stderr };
                append(&mut log, &writer, stream, &data);
                all.extend_from_slice(&data);
                let end = all.len() as u64;
                prop_assert_eq!(log.end(), end);
                prop_assert_eq!(log.start(), end.saturating_sub(cap as u64));
                for &(a, b) in &cuts {
                    let (a, b) = (a.min(b).min(end), a.max(b).min(end));
                    let from = a.max(log.start());
                    let to = b.max(from);
                    let got = log.read(a, b).unwrap();
                    prop_assert_eq!(&got[..], &all[from as usize..to as usize]);
                }
            }
        }
    }
}
