//! Applying a `multi_edit` batch without copying and rescanning the whole
//! file for every edit.
//!
//! The text lives in a gap buffer, so a replacement moves only the bytes
//! between it and the previous one. Each edit's `old_string` (in the file's
//! line ending) has its occurrences found once, in one Aho-Corasick pass over
//! the file, and those lists are kept up to date as replacements land: an
//! occurrence overlapping a replaced region disappears, later ones shift, and
//! a small window around the new text is searched for occurrences it creates.
//!
//! The fast path is taken only where [`matching::apply`] would do exactly the
//! same thing: a single (not replace_all) edit whose old_string occurs exactly
//! once. Anything else (replace_all, no exact match, ambiguity) gathers the
//! text and hands it to [`matching::apply`], then starts the lists afresh.

use std::borrow::Cow;

use agent_tools_error::{ToolError, ToolResult};
use agent_tools_text::LineEnding;
use aho_corasick::{AhoCorasick, MatchKind};
use memchr::memmem;

use super::matching::{self, Change, Context, Edit, Origin, Outcome, check_size, size_after};
use crate::tolerant::{self, Lines, Verdict};

/// Above this many tracked occurrences in all, the lists cost more than they
/// save; every edit then takes the plain path.
const MAX_TRACKED: usize = 100_000;

/// A text with a movable gap, where insertions and deletions happen.
pub(crate) struct GapText {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl GapText {
    fn new(mut bytes: Vec<u8>) -> GapText {
        let len = bytes.len();
        let spare = (len / 64).max(4096);
        bytes.resize(len + spare, 0);
        GapText {
            buf: bytes,
            start: len,
            end: len + spare,
        }
    }

    fn len(&self) -> usize {
        self.buf.len() - (self.end - self.start)
    }

    /// The text before and after the gap.
    pub(crate) fn parts(&self) -> (&[u8], &[u8]) {
        (&self.buf[..self.start], &self.buf[self.end..])
    }

    fn move_gap(&mut self, at: usize) {
        if at < self.start {
            let n = self.start - at;
            self.buf.copy_within(at..self.start, self.end - n);
            self.start = at;
            self.end -= n;
        } else if at > self.start {
            let n = at - self.start;
            self.buf.copy_within(self.end..self.end + n, self.start);
            self.start += n;
            self.end += n;
        }
    }

    fn replace(&mut self, from: usize, to: usize, new: &[u8]) {
        self.move_gap(to);
        self.start = from;
        if self.end - self.start < new.len() {
            let grow = new.len() + self.buf.len() / 64 + 4096;
            self.buf
                .splice(self.end..self.end, std::iter::repeat_n(0, grow));
            self.end += grow;
        }
        self.buf[self.start..self.start + new.len()].copy_from_slice(new);
        self.start += new.len();
    }

    /// Bytes `from..to` of the text.
    fn slice(&self, from: usize, to: usize) -> Cow<'_, [u8]> {
        let gap = self.end - self.start;
        if to <= self.start {
            Cow::Borrowed(&self.buf[from..to])
        } else if from >= self.start {
            Cow::Borrowed(&self.buf[from + gap..to + gap])
        } else {
            let mut out = self.buf[from..self.start].to_vec();
            out.extend_from_slice(&self.buf[self.end..to + gap]);
            Cow::Owned(out)
        }
    }

    fn count_newlines(&self, from: usize, to: usize) -> usize {
        let gap = self.end - self.start;
        let mut count = 0;
        if from < self.start {
            count += newlines(&self.buf[from..to.min(self.start)]);
        }
        if to > self.start {
            count += newlines(&self.buf[from.max(self.start) + gap..to + gap]);
        }
        count
    }

    /// The whole text, contiguous, as a string.
    fn into_string(mut self) -> ToolResult<String> {
        let len = self.len();
        self.move_gap(len);
        self.buf.truncate(len);
        // Every edit replaces whole characters with valid UTF-8.
        String::from_utf8(self.buf)
            .map_err(|_| ToolError::internal("edited text is not valid UTF-8"))
    }
}

use matching::count_newlines as newlines;

/// The line of a position, counted from the last position asked about.
struct LineCursor {
    at: usize,
    line: usize,
}

impl LineCursor {
    fn line_of(&mut self, text: &GapText, at: usize) -> usize {
        if at >= self.at {
            self.line += text.count_newlines(self.at, at);
        } else {
            self.line -= text.count_newlines(at, self.at);
        }
        self.at = at;
        self.line
    }
}

/// Occurrence lists of the needles still to be used.
struct Tracker {
    needles: Vec<String>,
    /// For each needle, its (overlapping) occurrences, sorted; `None` when
    /// there were too many to track.
    lists: Option<Vec<Vec<usize>>>,
}

impl Tracker {
    /// The tracker of `needles` in `text`.
    fn new(text: &[u8], needles: Vec<String>) -> Tracker {
        let lists = find_all(text, &needles);
        Tracker { needles, lists }
    }

    /// Occurrences of needle `index`, if tracked.
    fn list(&self, index: usize) -> Option<&[usize]> {
        self.lists.as_ref().map(|lists| lists[index].as_slice())
    }

    /// Brings every list up to date after `from..to` became `new` in `text`
    /// (which already holds the new bytes).
    fn replaced(&mut self, text: &GapText, from: usize, to: usize, new: usize) {
        let Some(lists) = self.lists.as_mut() else {
            return;
        };
        let mut total = 0;
        for (needle, list) in self.needles.iter().zip(lists.iter_mut()) {
            let len = needle.len();
            list.retain(|&p| !(p < to && p + len > from));
            for p in list.iter_mut() {
                if *p >= to {
                    *p = *p - (to - from) + new;
                }
            }
            // Occurrences the new bytes created: those touching them, or
            // spanning the junction when nothing was inserted.
            let window_from = from.saturating_sub(len - 1);
            let window_to = (from + new + len - 1).min(text.len());
            let window = text.slice(window_from, window_to);
            let finder = memmem::Finder::new(needle.as_bytes());
            let mut search = 0;
            while let Some(found) = finder.find(&window[search..]) {
                let p = window_from + search + found;
                let creates = if new > 0 {
                    p < from + new && p + len > from
                } else {
                    p < from && p + len > from
                };
                if creates {
                    let slot = list.partition_point(|&q| q < p);
                    if list.get(slot) != Some(&p) {
                        list.insert(slot, p);
                    }
                }
                search += found + 1;
                if search > window.len() {
                    break;
                }
            }
            total += list.len();
        }
        if total > MAX_TRACKED {
            self.lists = None;
        }
    }
}

/// Every (overlapping) occurrence of each needle, or `None` past
/// [`MAX_TRACKED`] (or when the searcher cannot be built).
fn find_all(text: &[u8], needles: &[String]) -> Option<Vec<Vec<usize>>> {
    let Ok(searcher) = AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .build(needles)
    else {
        return None;
    };
    let mut lists = Some(vec![Vec::new(); needles.len()]);
    let mut total = 0;
    for found in searcher.find_overlapping_iter(text) {
        let index = found.pattern().as_usize();
        if let Some(all) = lists.as_mut() {
            all[index].push(found.start());
            total += 1;
            if total > MAX_TRACKED {
                lists = None;
            }
        }
    }
    if let Some(all) = lists.as_mut() {
        for list in all {
            list.sort_unstable();
        }
    }
    lists
}

/// A failed edit.
#[derive(Debug, PartialEq)]
pub(crate) struct Failure {
    /// Its index in the batch.
    pub index: usize,
    pub error: ToolError,
}

/// The replacements made so far, to map lines back to the file as read.
#[derive(Default)]
struct History {
    /// For each edit applied, its replacements (in the lines of the text
    /// after it) and the lines of the file as read each one replaced.
    steps: Vec<Vec<(Change, (usize, usize))>>,
}

impl History {
    /// Where `line` of the current text was in the file as read.
    fn origin(&self, line: usize) -> Origin {
        let mut line = line;
        let mut written_by = None;
        for (index, step) in self.steps.iter().enumerate().rev() {
            for (change, _) in step.iter().rev() {
                if line > change.at + change.added {
                    line = line + change.removed - change.added;
                } else if line >= change.at {
                    // On a line the replacement wrote (in whole or part).
                    line = change.at + (line - change.at).min(change.removed);
                    written_by = written_by.or(Some(index));
                }
            }
        }
        Origin { line, written_by }
    }

    /// Records an edit's replacements (`at` counted as [`Change`] says).
    fn record(&mut self, changes: &[Change]) {
        let mut shift = 0isize;
        let step = changes
            .iter()
            .map(|change| {
                let before = (change.at as isize - shift) as usize;
                shift += change.added as isize - change.removed as isize;
                let first = self.origin(before).line;
                (*change, (first, first + change.removed))
            })
            .collect();
        self.steps.push(step);
    }

    /// The earlier edits that replaced any of `lines` (of the file as read).
    fn touching(&self, lines: Lines) -> Vec<usize> {
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, step)| {
                step.iter()
                    .any(|(_, (first, last))| *first <= lines.last && lines.first <= *last)
            })
            .map(|(index, _)| index)
            .collect()
    }
}

/// For an edit that found nothing (or too much) after earlier edits of the
/// call: where old_string was in the file as read, and which edits changed it.
fn earlier_edits_note(
    original: &str,
    old: &str,
    new: &str,
    ending: LineEnding,
    history: &History,
) -> Option<String> {
    let old = ending.apply(old);
    let new = ending.apply(new);
    let (lines, how) = match memmem::find(original.as_bytes(), old.as_bytes()) {
        Some(at) => {
            let first = matching::line_numbers(original, [at])[0];
            let height = matching::count_newlines(old.trim_end_matches('\n').as_bytes());
            (
                Lines {
                    first,
                    last: first + height,
                },
                "",
            )
        }
        None => match tolerant::locate(original, &old, &new, ending.as_str()) {
            Verdict::Unique(found) => (found.lines, " (tolerantly)"),
            _ => return None,
        },
    };
    let touching = history.touching(lines);
    let by = match touching.as_slice() {
        [] => "earlier edits of this call changed the text around it".to_string(),
        [one] => format!("edit {} of this call changed it", one + 1),
        many => format!(
            "edits {} of this call changed it",
            many.iter()
                .map(|i| (i + 1).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Some(format!(
        "\nold_string matches{how} {lines} of the file as you read it, but {by} (each edit applies to the result of the ones before; line numbers here are those of the file as you read it)"
    ))
}

/// Applies `edits` in order to `text`, returning the result and what each
/// did. No result may pass `max_bytes`.
pub(crate) fn apply_all(
    text: String,
    edits: &[Edit<'_>],
    ending: LineEnding,
    path: &str,
    max_bytes: u64,
) -> Result<(GapText, Vec<Outcome>), Failure> {
    // The strings each edit searches and inserts, in the file's ending.
    let olds: Vec<Cow<'_, str>> = edits.iter().map(|e| ending.apply(e.old)).collect();
    let news: Vec<Cow<'_, str>> = edits.iter().map(|e| ending.apply(e.new)).collect();
    let mut needles: Vec<String> = Vec::new();
    let needle_of: Vec<usize> = olds
        .iter()
        .map(|old| match needles.iter().position(|n| n == old) {
            Some(index) => index,
            None => {
                needles.push(old.to_string());
                needles.len() - 1
            }
        })
        .collect();

    // Kept to explain a later edit's failure by the file as read.
    let original = (edits.len() > 1).then(|| text.clone());
    let mut tracker = Tracker::new(text.as_bytes(), needles);
    let mut history = History::default();
    let fail = |index: usize, error: ToolError, history: &History| {
        let note = match (&original, error.code()) {
            (
                Some(original),
                agent_tools_error::ErrorCode::NoMatch
                | agent_tools_error::ErrorCode::AmbiguousMatch,
            ) if index > 0 => earlier_edits_note(
                original,
                edits[index].old,
                edits[index].new,
                ending,
                history,
            ),
            _ => None,
        };
        let error = match note {
            Some(note) => ToolError::new(error.code(), format!("{}{note}", error.message())),
            None => error,
        };
        Failure { index, error }
    };
    let mut gap = GapText::new(text.into_bytes());
    let mut cursor = LineCursor { at: 0, line: 1 };
    let mut outcomes = Vec::with_capacity(edits.len());
    for (index, edit) in edits.iter().enumerate() {
        let needle = needle_of[index];
        let unique = tracker
            .list(needle)
            .filter(|list| list.len() == 1 && !edit.replace_all)
            .map(|list| list[0]);
        let origin = |line: usize| history.origin(line);
        let context = Context {
            path,
            ending,
            max_bytes,
            origin: &origin,
        };
        if let Some(from) = unique {
            let to = from + olds[index].len();
            let new = news[index].as_bytes();
            check_size(
                size_after(gap.len(), 1, to - from, new.len()),
                &context,
                "the replacement",
            )
            .map_err(|err| fail(index, err, &history))?;
            let line = cursor.line_of(&gap, from);
            let change = Change {
                at: line,
                removed: newlines(olds[index].as_bytes()),
                added: newlines(new),
            };
            let outcome = Outcome {
                count: 1,
                lines: vec![history.origin(line).line],
                tolerant: None,
                changes: vec![change],
            };
            gap.replace(from, to, new);
            tracker.replaced(&gap, from, to, new.len());
            history.record(&outcome.changes);
            outcomes.push(outcome);
            continue;
        }
        // The plain path, on the gathered text.
        let current = gap
            .into_string()
            .map_err(|err| fail(index, err, &history))?;
        let applied = matching::apply(&current, edit, &context);
        let (edited, outcome) = applied.map_err(|err| fail(index, err, &history))?;
        drop(current);
        history.record(&outcome.changes);
        outcomes.push(outcome);
        let remaining = std::mem::take(&mut tracker.needles);
        tracker = Tracker::new(edited.as_bytes(), remaining);
        gap = GapText::new(edited.into_bytes());
        cursor = LineCursor { at: 0, line: 1 };
    }
    Ok((gap, outcomes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(gap: &GapText) -> String {
        let (a, b) = gap.parts();
        let mut out = a.to_vec();
        out.extend_from_slice(b);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn gap_text_replaces_anywhere() {
        let mut gap = GapText::new(b"hello world".to_vec());
        gap.replace(6, 11, b"there");
        gap.replace(0, 5, b"hi");
        assert_eq!(text_of(&gap), "hi there");
        assert_eq!(&*gap.slice(1, 5), b"i th");
        gap.replace(8, 8, &[b'!'; 10_000]);
        assert_eq!(gap.len(), 8 + 10_000);
        assert_eq!(gap.count_newlines(0, gap.len()), 0);
        assert_eq!(gap.into_string().unwrap().len(), 10_008);
    }

    fn run(
        text: &str,
        edits: &[(&str, &str, bool)],
    ) -> Result<(String, Vec<Outcome>), (usize, ToolError)> {
        let edits: Vec<Edit<'_>> = edits
            .iter()
            .map(|&(old, new, replace_all)| Edit {
                old,
                new,
                replace_all,
            })
            .collect();
        apply_all(
            text.to_string(),
            &edits,
            LineEnding::detect(text),
            "f",
            u64::MAX,
        )
        .map(|(gap, outcomes)| (text_of(&gap), outcomes))
        .map_err(|failure| (failure.index, failure.error))
    }

    /// The same edits one at a time through the plain engine.
    fn one_by_one(
        text: &str,
        edits: &[(&str, &str, bool)],
    ) -> Result<(String, Vec<Outcome>), (usize, ToolError)> {
        let ending = LineEnding::detect(text);
        let mut current = text.to_string();
        let mut history = History::default();
        let mut outcomes = Vec::new();
        for (index, &(old, new, replace_all)) in edits.iter().enumerate() {
            let edit = Edit {
                old,
                new,
                replace_all,
            };
            let origin = |line: usize| history.origin(line);
            let context = Context {
                path: "f",
                ending,
                max_bytes: u64::MAX,
                origin: &origin,
            };
            let (next, outcome) =
                matching::apply(&current, &edit, &context).map_err(|e| (index, e))?;
            history.record(&outcome.changes);
            current = next;
            outcomes.push(outcome);
        }
        Ok((current, outcomes))
    }

    #[test]
    fn batch_agrees_with_one_at_a_time() {
        let text = "a1\nb2\nc3\nd4\nab\n";
        let cases: Vec<Vec<(&str, &str, bool)>> = vec![
            vec![("a1", "x", false), ("b2", "y", false)],
            // An edit creates the text a later one looks for.
            vec![("a1", "zz", false), ("zz\nb", "Q", false)],
            // An edit destroys an occurrence, making another unique.
            vec![("ab", "AB", false), ("a", "_", false)],
            // Ambiguous first, then resolved by an earlier edit.
            vec![("a", "A", false)],
            vec![("d4\n", "", false), ("c3\na", "k", false)],
            vec![("\n", "\r\n", true), ("b2", "B", false)],
            vec![
                ("1", "one", false),
                ("one\nb2", "x", false),
                ("3", "three", false),
            ],
            vec![("c3", " c3 ", false), ("c3", "C", false)],
            // Tolerant level, then fast path on the result.
            vec![("  b2 ", "bb", false), ("bb", "b", false)],
        ];
        for edits in cases {
            let batch = run(text, &edits);
            let plain = one_by_one(text, &edits);
            match (batch, plain) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{edits:?}"),
                // The batch adds notes about earlier edits; the codes agree.
                (Err(a), Err(b)) => assert_eq!((a.0, a.1.code()), (b.0, b.1.code()), "{edits:?}"),
                (a, b) => panic!("{edits:?}: {a:?} vs {b:?}"),
            }
        }
    }

    #[test]
    fn lines_are_those_of_the_file_as_read() {
        let text = "a\nb\nc\nd\ne\n";
        let (_, outcomes) = run(
            text,
            &[
                ("a\n", "1\n2\n3\n", false),
                ("  d", "D", false),
                ("e", "E", true),
            ],
        )
        .unwrap();
        assert_eq!(outcomes[1].lines, vec![4]);
        assert_eq!(outcomes[2].lines, vec![5]);
        // A later edit whose text an earlier one changed is told so, with
        // the lines of the file as read.
        let (index, err) =
            run(text, &[("a\nb\nc", "x", false), ("b\nc\nd", "y", false)]).unwrap_err();
        assert_eq!(index, 1);
        assert!(
            err.message().contains("old_string matches lines 2-4 of the file as you read it, but edit 1 of this call changed it"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn every_step_is_held_to_the_size_limit() {
        let edits = [
            Edit {
                old: "a",
                new: "bbbb",
                replace_all: false,
            },
            Edit {
                old: "c",
                new: "dddd",
                replace_all: false,
            },
        ];
        let failure = apply_all("a c".to_string(), &edits, LineEnding::Lf, "f", 8)
            .err()
            .unwrap();
        assert_eq!(failure.index, 1);
        assert_eq!(failure.error.code(), agent_tools_error::ErrorCode::TooLarge);
        assert!(apply_all("a c".to_string(), &edits, LineEnding::Lf, "f", 9).is_ok());
    }
}
