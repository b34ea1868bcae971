//! Capturing one output stream: the inline part under a shared budget, the
//! complete stream in a spill file once it overflows, and the hard ceiling.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::request::SpillOpener;

/// Names and creates the spill files of one run: `<id>.stdout`, `<id>.stderr`.
#[derive(Debug)]
pub(crate) struct SpillNamer {
    dir: PathBuf,
    display_dir: Option<PathBuf>,
    opener: Option<SpillOpener>,
    id: String,
}

impl SpillNamer {
    /// A namer for one run, with an id unique within this process and very
    /// likely across processes (time, process id, counter). Files are created
    /// with `create_new`, so a clash is detected rather than overwritten.
    pub(crate) fn new(
        dir: &Path,
        display_dir: Option<&Path>,
        opener: Option<&SpillOpener>,
    ) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        SpillNamer {
            dir: dir.to_path_buf(),
            display_dir: display_dir.map(Path::to_path_buf),
            opener: opener.cloned(),
            id: format!("bash-{millis}-{}-{n}", std::process::id()),
        }
    }

    fn open(&self, stream: &str) -> io::Result<Spill> {
        if self.opener.is_none() {
            fs::create_dir_all(&self.dir)?;
        }
        let mut attempt = 0u32;
        loop {
            let name = if attempt == 0 {
                format!("{}.{stream}", self.id)
            } else {
                format!("{}-{attempt}.{stream}", self.id)
            };
            let path = self.dir.join(&name);
            let opened = match &self.opener {
                Some(opener) => opener.open(&name),
                None => OpenOptions::new().write(true).create_new(true).open(&path),
            };
            match opened {
                Ok(file) => {
                    let shown = match &self.display_dir {
                        Some(dir) => dir.join(&name),
                        None => path,
                    };
                    return Ok(Spill {
                        shown,
                        writer: BufWriter::with_capacity(64 * 1024, file),
                    });
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1
                }
                Err(err) => return Err(err),
            }
        }
    }
}

#[derive(Debug)]
struct Spill {
    shown: PathBuf,
    writer: BufWriter<File>,
}

/// What [`Stream::push`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Within the ceiling.
    Within,
    /// The stream passed its ceiling; the bytes beyond it were dropped.
    OverCeiling,
}

/// One captured stream.
#[derive(Debug)]
pub(crate) struct Stream {
    name: &'static str,
    inline: Vec<u8>,
    total: u64,
    ceiling: u64,
    spill: Option<Spill>,
    /// Keep this much inline and drop the rest (no spill).
    cut: Option<usize>,
    dropped: u64,
}

/// A stream once the run is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Captured {
    /// The inline text, lossily decoded.
    pub(crate) text: String,
    /// Invalid UTF-8 was replaced in `text`.
    pub(crate) lossy: bool,
    /// Where the complete stream was spilled, as it is shown to the caller.
    pub(crate) spill: Option<PathBuf>,
    /// Bytes dropped past the cut.
    pub(crate) dropped: u64,
}

impl Stream {
    /// An empty stream called `name` (`stdout` or `stderr`, which is also the
    /// spill file's extension).
    pub(crate) fn new(name: &'static str, ceiling: u64) -> Self {
        Stream {
            name,
            inline: Vec::new(),
            total: 0,
            ceiling,
            spill: None,
            cut: None,
            dropped: 0,
        }
    }

    /// This stream keeps its first `bytes` inline and drops the rest.
    pub(crate) fn cutting_at(mut self, bytes: Option<usize>) -> Self {
        self.cut = bytes;
        self
    }

    /// Takes `chunk`: inline while `budget` lasts, else into the spill file,
    /// which then receives the inline part too, so it holds the whole stream.
    /// Bytes past the ceiling are dropped and reported.
    pub(crate) fn push(
        &mut self,
        chunk: &[u8],
        budget: &mut usize,
        namer: &SpillNamer,
    ) -> io::Result<Pushed> {
        let room = self.ceiling.saturating_sub(self.total);
        let (chunk, pushed) = match usize::try_from(room) {
            Ok(room) if room < chunk.len() => (&chunk[..room], Pushed::OverCeiling),
            _ => (chunk, Pushed::Within),
        };
        self.total += chunk.len() as u64;
        if let Some(cut) = self.cut {
            let take = cut.saturating_sub(self.inline.len()).min(chunk.len());
            self.inline.extend_from_slice(&chunk[..take]);
            self.dropped += (chunk.len() - take) as u64;
            return Ok(pushed);
        }
        match &mut self.spill {
            Some(spill) => spill.writer.write_all(chunk)?,
            None => {
                // The budget is spent in escaped bytes: what the inline text
                // costs once it is a JSON string.
                let (take, cost) = fit_escaped(chunk, *budget);
                self.inline.extend_from_slice(&chunk[..take]);
                *budget -= cost;
                if take < chunk.len() {
                    let mut spill = namer.open(self.name)?;
                    spill.writer.write_all(&self.inline)?;
                    spill.writer.write_all(&chunk[take..])?;
                    self.spill = Some(spill);
                }
            }
        }
        Ok(pushed)
    }

    /// Flushes the spill file and decodes the inline part. A truncated inline
    /// part ends on a character boundary: a character cut by the budget is
    /// left out (it is in the spill file).
    pub(crate) fn finish(self) -> io::Result<Captured> {
        let spill = match self.spill {
            Some(mut spill) => {
                spill.writer.flush()?;
                Some(spill.shown)
            }
            None => None,
        };
        let bytes = if spill.is_some() || self.dropped > 0 {
            trim_cut_char(&self.inline)
        } else {
            &self.inline[..]
        };
        let (text, lossy) = match String::from_utf8_lossy(bytes) {
            std::borrow::Cow::Borrowed(text) => (text.to_owned(), false),
            std::borrow::Cow::Owned(text) => (text, true),
        };
        Ok(Captured {
            text,
            lossy,
            spill,
            dropped: self.dropped,
        })
    }
}

/// How many bytes `byte` takes inside a JSON string as `serde_json` writes
/// it: two for the short escapes, six for other control characters, one for
/// everything else (UTF-8 is written as is). A byte of invalid UTF-8 may
/// still grow to U+FFFD (three bytes) when decoded lossily; the caller
/// re-measures for that case.
pub fn json_escaped_len(byte: u8) -> usize {
    match byte {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
        0..0x20 => 6,
        _ => 1,
    }
}

/// The longest prefix of `chunk` whose escaped size fits `budget`, and that
/// size.
fn fit_escaped(chunk: &[u8], budget: usize) -> (usize, usize) {
    let mut cost = 0;
    for (i, &byte) in chunk.iter().enumerate() {
        let next = cost + json_escaped_len(byte);
        if next > budget {
            return (i, cost);
        }
        cost = next;
    }
    (chunk.len(), cost)
}

/// `bytes` without a UTF-8 sequence cut short at its end.
pub(crate) fn trim_cut_char(bytes: &[u8]) -> &[u8] {
    let len = bytes.len();
    for back in 1..=len.min(4) {
        let byte = bytes[len - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needed = match byte {
            0xF0..=0xF7 => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if needed > back {
            &bytes[..len - back]
        } else {
            bytes
        };
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn trims_only_a_cut_character() {
        assert_eq!(trim_cut_char(b""), b"");
        assert_eq!(trim_cut_char(b"abc"), b"abc");
        assert_eq!(trim_cut_char("é".as_bytes()), "é".as_bytes());
        assert_eq!(trim_cut_char(&"aé".as_bytes()[..2]), b"a");
        assert_eq!(trim_cut_char(&"a€".as_bytes()[..3]), b"a");
        assert_eq!(trim_cut_char(&"a😀".as_bytes()[..4]), b"a");
        assert_eq!(trim_cut_char(&"a😀".as_bytes()[..2]), b"a");
        assert_eq!(trim_cut_char("a😀".as_bytes()), "a😀".as_bytes());
        // Invalid bytes are left for lossy decoding.
        assert_eq!(trim_cut_char(b"a\xff"), b"a\xff");
    }

    fn read_spill(dir: &Path, captured: &Captured) -> Vec<u8> {
        let shown = captured.spill.as_ref().unwrap();
        assert!(shown.starts_with(dir));
        fs::read(shown).unwrap()
    }

    #[test]
    fn spill_dir_is_created_and_display_dir_names_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        let namer = SpillNamer::new(&dir, Some(Path::new(".agent-tools/spill")), None);
        let mut stream = Stream::new("stdout", 100);
        let mut budget = 2;
        stream.push(b"hello", &mut budget, &namer).unwrap();
        let captured = stream.finish().unwrap();
        let shown = captured.spill.unwrap();
        assert!(shown.starts_with(".agent-tools/spill"), "{shown:?}");
        assert!(shown.to_string_lossy().ends_with(".stdout"));
        let real = dir.join(shown.file_name().unwrap());
        assert_eq!(fs::read(real).unwrap(), b"hello");
        assert_eq!(captured.text, "he");
    }

    #[test]
    fn budget_counts_escaped_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let namer = SpillNamer::new(tmp.path(), None, None);
        let mut stream = Stream::new("stdout", u64::MAX);
        // A NUL costs six bytes (`\u0000`), a newline two, a letter one.
        let mut budget = 9;
        stream.push(b"\0\na\0", &mut budget, &namer).unwrap();
        assert_eq!(stream.inline, b"\0\na");
        assert_eq!(budget, 0);
        let encoded = serde_json::to_string(&stream.finish().unwrap().text).unwrap();
        assert_eq!(encoded.len() - 2, 9, "{encoded}");
    }

    #[test]
    fn ceiling_drops_the_excess() {
        let tmp = tempfile::tempdir().unwrap();
        let namer = SpillNamer::new(tmp.path(), None, None);
        let mut stream = Stream::new("stderr", 5);
        let mut budget = 2;
        assert_eq!(
            stream.push(b"abc", &mut budget, &namer).unwrap(),
            Pushed::Within
        );
        assert_eq!(
            stream.push(b"de", &mut budget, &namer).unwrap(),
            Pushed::Within
        );
        assert_eq!(
            stream.push(b"f", &mut budget, &namer).unwrap(),
            Pushed::OverCeiling
        );
        let captured = stream.finish().unwrap();
        assert_eq!(read_spill(tmp.path(), &captured), b"abcde");
    }

    #[test]
    fn a_cut_stream_keeps_its_start_and_counts_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let namer = SpillNamer::new(&tmp.path().join("never"), None, None);
        let mut stream = Stream::new("stdout", u64::MAX).cutting_at(Some(4));
        let mut budget = 0;
        stream.push(b"ab", &mut budget, &namer).unwrap();
        stream.push("cé€".as_bytes(), &mut budget, &namer).unwrap();
        let captured = stream.finish().unwrap();
        // The cut fell inside `é`: it is left out whole.
        assert_eq!(captured.text, "abc");
        assert_eq!(captured.dropped, 4);
        assert_eq!(captured.spill, None);
        assert!(!tmp.path().join("never").exists());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the chunking and interleaving: inline output never passes
        /// the shared budget, each inline part is a prefix of its stream, and
        /// a spilled stream's file holds the stream byte for byte.
        #[test]
        fn budget_and_spill_invariants(
            chunks in proptest::collection::vec((any::<bool>(), proptest::collection::vec(any::<u8>(), 0..40)), 0..30),
            budget in 0usize..200,
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let namer = SpillNamer::new(tmp.path(), None, None);
            let mut streams = [Stream::new("stdout", u64::MAX), Stream::new("stderr", u64::MAX)];
            let mut whole = [Vec::new(), Vec::new()];
            let mut left = budget;
            for (to_err, chunk) in &chunks {
                let i = usize::from(*to_err);
                prop_assert_eq!(streams[i].push(chunk, &mut left, &namer).unwrap(), Pushed::Within);
                whole[i].extend_from_slice(chunk);
            }
            let [out, err] = streams;
            let mut inline_total = 0;
            for (stream, whole) in [(out, &whole[0]), (err, &whole[1])] {
                let inline = stream.inline.clone();
                inline_total += inline.iter().map(|&b| json_escaped_len(b)).sum::<usize>();
                prop_assert!(whole.starts_with(&inline));
                let captured = stream.finish().unwrap();
                match &captured.spill {
                    Some(_) => prop_assert_eq!(&read_spill(tmp.path(), &captured), whole),
                    None => prop_assert_eq!(&inline, whole),
                }
            }
            prop_assert!(inline_total <= budget);
            prop_assert_eq!(inline_total + left, budget);
        }

        /// A truncated inline text is valid UTF-8 taken from the stream's
        /// start, at most one character short of the budget.
        #[test]
        fn truncation_lands_on_a_char_boundary(text in "\\PC{0,40}", budget in 0usize..100) {
            let tmp = tempfile::tempdir().unwrap();
            let namer = SpillNamer::new(tmp.path(), None, None);
            let mut stream = Stream::new("stdout", u64::MAX);
            let mut left = budget;
            stream.push(text.as_bytes(), &mut left, &namer).unwrap();
            let captured = stream.finish().unwrap();
            prop_assert!(!captured.lossy);
            prop_assert!(text.starts_with(&captured.text));
            let escaped = |t: &str| t.bytes().map(json_escaped_len).sum::<usize>();
            prop_assert!(escaped(&captured.text) <= budget);
            // What was left out costs more than the budget left, give or
            // take the one character cut at the boundary.
            let next = text[captured.text.len()..].chars().next();
            if let Some(next) = next {
                prop_assert!(escaped(&captured.text) + escaped(&next.to_string()) + 6 > budget);
            }
        }
    }
}
