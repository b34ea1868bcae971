//! A job's output log: the newest bytes up to a cap, addressed by their
//! offset in everything the job ever printed, with which stream each
//! stretch came from.

use std::collections::VecDeque;

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

#[derive(Debug)]
pub(crate) struct OutputLog {
    bytes: VecDeque<u8>,
    /// Offset of `bytes[0]` in the whole output: what was dropped before.
    base: u64,
    cap: usize,
    /// `(offset where a run starts, its stream)`, in order.
    runs: VecDeque<(u64, OutputStream)>,
}

impl OutputLog {
    pub(crate) fn new(cap: usize) -> Self {
        OutputLog {
            bytes: VecDeque::new(),
            base: 0,
            cap: cap.max(1),
            runs: VecDeque::new(),
        }
    }

    /// The offset just past the last byte ever appended.
    pub(crate) fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// The first offset still kept; everything before it was dropped.
    pub(crate) fn start(&self) -> u64 {
        self.base
    }

    pub(crate) fn push(&mut self, stream: OutputStream, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if self.runs.back().is_none_or(|(_, s)| *s != stream) {
            self.runs.push_back((self.end(), stream));
            if self.runs.len() > MAX_RUNS {
                self.runs.pop_front();
            }
        }
        // The whole cap is taken at the first output, in one allocation:
        // its pages cost memory only once written, and a buffer that grew
        // by copies would leave the smaller ones behind in the allocator
        // (a server of 32 floods held tens of MiB more than its logs).
        if self.bytes.capacity() < self.cap {
            self.bytes.reserve_exact(self.cap - self.bytes.len());
        }
        // Drop before adding, so the buffer never passes the cap.
        let full = data.len();
        let data = &data[full.saturating_sub(self.cap)..];
        let skipped = full - data.len();
        let excess = (self.bytes.len() + data.len()).saturating_sub(self.cap);
        self.bytes.drain(..excess);
        self.base += (excess + skipped) as u64;
        self.bytes.extend(data);
    }

    /// Gives back the room the log will not use: once the job's output
    /// has ended, an exited job's record holds only what it printed.
    pub(crate) fn shrink(&mut self) {
        self.bytes.shrink_to_fit();
    }

    /// The bytes of `[from, to)`, clamped to what is kept.
    pub(crate) fn slice(&self, from: u64, to: u64) -> Vec<u8> {
        let from = from.clamp(self.base, self.end());
        let to = to.clamp(from, self.end());
        let a = usize::try_from(from - self.base).unwrap_or(usize::MAX);
        let b = usize::try_from(to - self.base).unwrap_or(usize::MAX);
        self.bytes.range(a..b).copied().collect()
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_bytes_with_their_offsets_and_streams() {
        let mut log = OutputLog::new(10);
        log.push(OutputStream::Stdout, b"012345");
        log.push(OutputStream::Stderr, b"6789ab");
        assert_eq!((log.start(), log.end()), (2, 12));
        assert_eq!(log.slice(0, 100), b"23456789ab");
        assert_eq!(log.slice(5, 8), b"567");
        assert_eq!(
            log.runs_in(4, 12),
            [(OutputStream::Stdout, 4, 6), (OutputStream::Stderr, 6, 12)]
        );
        for _ in 0..(MAX_RUNS * 2) {
            log.push(OutputStream::Stdout, b"x");
            log.push(OutputStream::Stderr, b"y");
        }
        assert_eq!(log.runs.len(), MAX_RUNS);
        assert_eq!(log.bytes.len(), 10);
        assert!(log.bytes.capacity() < 20, "{}", log.bytes.capacity());
        let mut small = OutputLog::new(1 << 20);
        assert_eq!(
            small.bytes.capacity(),
            0,
            "a log takes room only at its first output"
        );
        small.push(OutputStream::Stdout, b"short");
        assert!(small.bytes.capacity() >= 1 << 20);
        small.shrink();
        assert!(
            small.bytes.capacity() < 1 << 10,
            "{}",
            small.bytes.capacity()
        );
        assert_eq!(small.slice(0, u64::MAX), b"short");
        let end = log.end();
        log.push(OutputStream::Stdout, b"0123456789abcdef");
        assert_eq!(log.end(), end + 16);
        assert_eq!(log.slice(0, u64::MAX), b"6789abcdef");
    }
}
