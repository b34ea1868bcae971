//! Tolerant matching: where a caller's `old_string` is meant to be in a file
//! when it does not occur there byte for byte, and what its `new_string`
//! becomes there.
//!
//! Both texts are cut into lines and each line is read loosely: Unicode NFC,
//! typographic quotes, dashes and ellipses read as ASCII, invisible
//! characters (zero-width spaces, soft hyphens) dropped, every run of
//! whitespace (odd spaces included) one space, nothing at either end. A region
//! of the file matches when it is a run of whole lines whose loose readings
//! are old_string's, line for line, and whose indentation has the same
//! shape as old_string's up to the unit and the depth. An old_string of one
//! line may also match a span inside a line, starting and ending on token
//! boundaries (never inside an identifier or a number).
//!
//! A match is used only when it is certain: exactly one region of the file
//! matches, and no other region comes close to old_string (at least
//! [`NEAR_MISS`] similar), since a near miss may be the region the caller
//! meant, with the text changed since it was read. Anything else is
//! refused with the regions that matched or came close, so the caller can
//! fix the call.
//!
//! new_string is written in the file's own conventions: re-indented to the
//! file's unit and depth, with its line endings, and (see [`restyle`]) with
//! the quotes, dashes, odd spaces and Unicode form the matched region
//! writes where old_string wrote them otherwise.
//!
//! ```
//! use agent_tools_tolerant::{Verdict, locate};
//!
//! let file = "a = 1\n    b  = 2\n";
//! let Verdict::Unique(found) = locate(file, "    b = 2", "    b = 3", "\n") else {
//!     panic!("one region matches")
//! };
//! assert_eq!(found.lines.to_string(), "line 2");
//! assert_eq!(found.apply(file), "a = 1\n    b = 3\n");
//! ```
//!
//! Pure text: nothing here reads a file or knows the tools; the file tools
//! (`agent-tools-fs`) and the surfaces' edit tools call [`locate`] on text
//! they have read.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::fmt;
use std::ops::Range;

mod explain;
mod indent;
mod lines;
mod near;
mod normal;
mod style;

pub use lines::count_newlines;
pub use lines::line_numbers;

use indent::{IndentMap, unit_of};

pub use explain::ordinal;
use lines::{LineTable, SplitLines};
use near::{Inputs, Near, Sieve};
pub(crate) use normal::is_word;
use normal::{Loose, key_hash, loose};
use style::Style;
pub use style::{Form, Rewritten, restyle};

/// Similarity (0 to 1) from which another region counts as a near miss: the
/// caller may have meant it, so a tolerant match elsewhere is not used.
/// Chosen on the edit corpus (see the crate's tests).
pub const NEAR_MISS: f32 = 0.75;

/// Similarity from which a region is worth showing in a hint.
pub const SHOWN: f32 = 0.5;

/// How many regions a verdict lists at most.
pub const LISTED: usize = 5;

/// Regions verified line by line; further ones with the same line hashes are
/// only counted.
const VERIFIED: usize = 16;

/// Lines of the file, 1-based and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lines {
    /// The first line.
    pub first: usize,
    /// The last line.
    pub last: usize,
}

impl fmt::Display for Lines {
    /// `line 4` or `lines 4-9`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "line {}", self.first)
        } else {
            write!(f, "lines {}-{}", self.first, self.last)
        }
    }
}

/// The one region old_string matched, and what replaces it.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// The lines matched.
    pub lines: Lines,
    /// The bytes of the file replaced: whole lines without their final line
    /// break (or with it, when old_string ends with one and new_string does
    /// not), or a span inside one line.
    pub range: Range<usize>,
    /// new_string as written into the file: re-indented to the file's unit
    /// and depth, with the file's line ending, its quotes, dashes, odd
    /// spaces and Unicode form written as the file writes them.
    pub replacement: String,
    /// What differed between old_string and the file, in words.
    pub tolerated: Vec<String>,
    /// What of new_string was written the file's way rather than as given
    /// (empty when nothing was).
    pub rewritten: Vec<Rewritten>,
    /// The matched lines as they were.
    pub before: String,
    /// The same lines once replaced.
    pub after: String,
}

impl Match {
    /// `text` with the match replaced.
    pub fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + self.replacement.len());
        out.push_str(&text[..self.range.start]);
        out.push_str(&self.replacement);
        out.push_str(&text[self.range.end..]);
        out
    }
}

/// A region of the file that matched or came close.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Its lines.
    pub lines: Lines,
    /// Its bytes (whole lines, without the last line break).
    pub range: Range<usize>,
    /// How much it resembles old_string, 0 to 1 (1 for a match).
    pub similarity: f32,
    /// Whether it matched tolerantly (rather than only coming close).
    pub matched: bool,
    /// What differs that cannot be seen, in words (empty when nothing
    /// invisible differs).
    pub differences: Vec<String>,
    /// Which of old_string's lines (1-based) differ visibly from the
    /// region's, when both have as many lines.
    pub differing_lines: Vec<usize>,
}

/// Where old_string is in the file, if it can be said for certain.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Exactly one region matches, and no other comes close.
    Unique(Match),
    /// Several regions match, or one matches and another comes close.
    Ambiguous {
        /// The regions that match (the first [`LISTED`]).
        matches: Vec<Candidate>,
        /// How many regions match in all.
        total: usize,
        /// Regions that do not match but come close (when one matched).
        near: Vec<Candidate>,
    },
    /// No region matches; the closest ones, best first.
    NotFound {
        /// Regions at least [`SHOWN`] similar, at most [`LISTED`].
        close: Vec<Candidate>,
    },
}

/// Finds where `old` is meant to be in `text` and what `new` becomes there.
/// `ending` is the line ending new lines get when the matched lines have
/// none of their own. Exact occurrences are the caller's business: this is
/// for when there are none.
///
/// Work and memory grow with the size of `text` and `old` (not their
/// product): lines are compared through hashes, a rolling hash over the
/// lines finds every run equal to old_string's, and the closeness search
/// scores a bounded number of regions.
pub fn locate(text: &str, old: &str, new: &str, ending: &str) -> Verdict {
    let table = LineTable::new(text);
    let old_split = SplitLines::new(old);
    let new_split = SplitLines::new(new);
    let (old_lines, new_lines) = drop_common_blank_lines(&old_split.lines, &new_split.lines);
    let old_keys: Vec<String> = old_lines.iter().map(|l| loose(l)).collect();
    let old_hashes: Vec<u64> = old_keys.iter().map(|k| key_hash(k)).collect();
    if old_keys.iter().all(String::is_empty) || table.len() == 0 {
        return Verdict::NotFound { close: Vec::new() };
    }

    let sieve = Sieve::new(old_keys.iter().map(String::as_str));
    let mut reading = Loose::default();
    let mut hashes = Vec::with_capacity(table.len());
    let mut scores = Vec::with_capacity(table.len());
    let mut balances = Vec::with_capacity(table.len());
    for index in 0..table.len() {
        let line = table.line(text, index);
        reading.read(line, false);
        hashes.push(key_hash(&reading.text));
        scores.push(sieve.score(&reading.text));
        balances.push(near::balance(line));
    }

    let file = File {
        text,
        table: &table,
        hashes: &hashes,
        ending,
    };
    let query = Query {
        old_lines: &old_lines,
        old_keys: &old_keys,
        old_hashes: &old_hashes,
        new_lines: &new_lines,
        old_break: old_split.trailing_break,
        new_break: new_split.trailing_break,
        old,
        new,
    };
    let (mut found, mut total) = line_matches(&file, &query);
    if old_lines.len() == 1 {
        let (inside, count) = span_matches(&file, &query);
        found.extend(inside);
        total += count;
    }

    let key = |index: usize| loose(table.line(text, index));
    let inputs = Inputs {
        hashes: &hashes,
        scores: &scores,
        old_keys: &old_keys,
        old_hashes: &old_hashes,
        balance: &balances,
        old_balance: old_lines.iter().map(|l| near::balance(l)).sum(),
        key: &key,
    };
    let candidate = |near: &Near, matched: bool| file.candidate(&query, near, matched);
    match total {
        0 => {
            let close = near::search(&inputs, None, SHOWN, LISTED);
            Verdict::NotFound {
                close: close.iter().map(|n| candidate(n, false)).collect(),
            }
        }
        1 if found.len() == 1 => {
            let only = found.remove(0);
            // A near miss counts when it is at least as close to old_string
            // as written (whitespace and all) as the match is: then the
            // match needed a tolerance the near miss does not, and the near
            // miss may be what the caller copied, changed since. It counts
            // in any case when the match lies at another depth than
            // old_string was written at and the near miss at that very
            // depth: the same lines in another section, the ones meant
            // having changed.
            let written = old_lines.join("\n");
            let raw = |first: usize, last: usize| {
                near::raw_similarity(&written, &file.lines(first, last).join("\n"))
            };
            let matched_raw = raw(only.lines.first - 1, only.lines.last - 1);
            let base = |lines: &[&str]| {
                lines
                    .iter()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| indent::columns(indent::indent_of(l)))
                    .min()
            };
            let other_depth = only.range.start == table.span(only.lines.first - 1).start
                && base(&old_lines) != base(&file.lines(only.lines.first - 1, only.lines.last - 1));
            let near: Vec<Near> = near::search(
                &inputs,
                Some((only.lines.first - 1, only.lines.last - 1)),
                NEAR_MISS,
                LISTED,
            )
            .into_iter()
            .filter(|n| {
                let at_old_depth = base(&file.lines(n.first, n.last)) == base(&old_lines);
                (other_depth && at_old_depth) || raw(n.first, n.last) >= matched_raw
            })
            .collect();
            if near.is_empty() {
                return Verdict::Unique(only);
            }
            let matched = Near {
                first: only.lines.first - 1,
                last: only.lines.last - 1,
                similarity: 1.0,
            };
            Verdict::Ambiguous {
                matches: vec![candidate(&matched, true)],
                total: 1,
                near: near.iter().map(|n| candidate(n, false)).collect(),
            }
        }
        total => {
            found.sort_by_key(|m| (m.range.start, m.range.end));
            let matches = found
                .iter()
                .take(LISTED)
                .map(|m| {
                    candidate(
                        &Near {
                            first: m.lines.first - 1,
                            last: m.lines.last - 1,
                            similarity: 1.0,
                        },
                        true,
                    )
                })
                .collect();
            Verdict::Ambiguous {
                matches,
                total,
                near: Vec::new(),
            }
        }
    }
}

/// Blank lines at the start or end of both old_string and new_string are
/// context the caller did not mean to change: they are left out.
fn drop_common_blank_lines<'a>(old: &[&'a str], new: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
    let blank = |line: &str| line.trim().is_empty();
    let (mut old, mut new) = (old, new);
    while old.len() > 1 && new.len() > 1 && blank(old[0]) && blank(new[0]) {
        old = &old[1..];
        new = &new[1..];
    }
    while old.len() > 1 && new.len() > 1 && blank(old[old.len() - 1]) && blank(new[new.len() - 1]) {
        old = &old[..old.len() - 1];
        new = &new[..new.len() - 1];
    }
    (old.to_vec(), new.to_vec())
}

struct File<'t> {
    text: &'t str,
    table: &'t LineTable,
    hashes: &'t [u64],
    ending: &'t str,
}

struct Query<'q> {
    old_lines: &'q [&'q str],
    old_keys: &'q [String],
    old_hashes: &'q [u64],
    new_lines: &'q [&'q str],
    old_break: bool,
    new_break: bool,
    old: &'q str,
    new: &'q str,
}

impl File<'_> {
    fn lines(&self, first: usize, last: usize) -> Vec<&str> {
        (first..=last)
            .map(|i| self.table.line(self.text, i))
            .collect()
    }

    /// How many of lines `first..=last` end with another line ending than
    /// the file's.
    fn odd_endings(&self, first: usize, last: usize) -> usize {
        (first..=last)
            .filter(|&i| {
                let span = self.table.span(i);
                span.end > span.content_end && &self.text[span.content_end..span.end] != self.ending
            })
            .count()
    }

    /// The line ending of lines `first..=last`, or the file's.
    fn ending_of(&self, first: usize, last: usize) -> &str {
        (first..=last)
            .map(|i| self.table.span(i))
            .find(|span| span.end > span.content_end)
            .map_or(self.ending, |span| &self.text[span.content_end..span.end])
    }

    fn candidate(&self, query: &Query<'_>, near: &Near, matched: bool) -> Candidate {
        let file_lines = self.lines(near.first, near.last);
        let mut differences: Vec<String> = Vec::new();
        if matched
            && file_lines.len() == query.old_lines.len()
            && let Some(note) =
                IndentMap::fit(query.old_lines, &file_lines, query.new_lines, || {
                    self.unit()
                })
                .and_then(|map| map.describe())
        {
            differences.push(note);
        }
        for note in explain::differences(
            query.old_lines,
            &file_lines,
            self.odd_endings(near.first, near.last),
        ) {
            if !(differences.len() == 1 && note.contains("indented with")) {
                differences.push(note);
            }
        }
        Candidate {
            lines: Lines {
                first: near.first + 1,
                last: near.last + 1,
            },
            range: self.table.span(near.first).start..self.table.span(near.last).content_end,
            similarity: near.similarity,
            matched,
            differences,
            differing_lines: if file_lines.len() == query.old_keys.len() {
                file_lines
                    .iter()
                    .zip(query.old_keys)
                    .enumerate()
                    .filter(|(_, (line, key))| {
                        line.len() + key.len() <= 64 * 1024 && loose(line) != **key
                    })
                    .map(|(i, _)| i + 1)
                    .collect()
            } else {
                Vec::new()
            },
        }
    }

    /// The file's indentation unit, from its first lines.
    fn unit(&self) -> Option<(usize, bool)> {
        unit_of((0..self.table.len().min(2000)).map(|i| self.table.line(self.text, i)))
    }
}

/// Every run of lines matching old_string's lines: the first [`VERIFIED`]
/// as matches, and the count of all. The first and last lines of a
/// multi-line old_string may also match the end (first) or the start (last)
/// of a file line, on a token boundary, as a copy that began or ended
/// within a line does.
fn line_matches(file: &File<'_>, query: &Query<'_>) -> (Vec<Match>, usize) {
    let height = query.old_lines.len();
    let total_lines = file.hashes.len();
    if height > total_lines {
        return (Vec::new(), 0);
    }
    let mut found = Vec::new();
    let mut count = 0;
    let mut consider = |first: usize| {
        if found.len() < VERIFIED {
            if let Some(m) = line_match(file, query, first) {
                found.push(m);
                count += 1;
            }
        } else if ends_match(file, query, first) {
            // Past the verified ones, equal hashes and ends are counted as
            // matches (the caller is refused anyway).
            count += 1;
        }
    };
    match height {
        1 => {
            for (first, &hash) in file.hashes.iter().enumerate() {
                if hash == query.old_hashes[0] {
                    consider(first);
                }
            }
        }
        2 => {
            for first in 0..total_lines - 1 {
                let full_first = file.hashes[first] == query.old_hashes[0];
                let full_last = file.hashes[first + 1] == query.old_hashes[1];
                if full_first || full_last {
                    consider(first);
                }
            }
        }
        _ => {
            // A rolling hash over the lines between the first and the last.
            const BASE: u64 = 0x0100_0000_01B3;
            let inner = &query.old_hashes[1..height - 1];
            let width = inner.len();
            let mut power = 1u64;
            for _ in 1..width {
                power = power.wrapping_mul(BASE);
            }
            let roll = |acc: u64, h: &u64| acc.wrapping_mul(BASE).wrapping_add(*h);
            let target = inner.iter().fold(0u64, roll);
            let mut window = file.hashes[1..=width].iter().fold(0u64, roll);
            for first in 0..=total_lines - height {
                if first > 0 {
                    window = window
                        .wrapping_sub(file.hashes[first].wrapping_mul(power))
                        .wrapping_mul(BASE)
                        .wrapping_add(file.hashes[first + width]);
                }
                if window == target {
                    consider(first);
                }
            }
        }
    }
    (found, count)
}

/// How the first or last line of old_string sits on a line of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edge {
    /// The whole line.
    Whole,
    /// A part of it: from this byte of the file to the line's end (first
    /// line), or from the line's start to this byte (last line).
    Part(usize),
}

/// Whether old_string's first (`first_line`) or last line matches file line
/// `index`, wholly or in part.
fn edge(
    file: &File<'_>,
    query: &Query<'_>,
    index: usize,
    old_index: usize,
    first_line: bool,
) -> Option<Edge> {
    let key = &query.old_keys[old_index];
    if file.hashes[index] == query.old_hashes[old_index] {
        let line = file.table.line(file.text, index);
        return (loose(line) == *key).then_some(Edge::Whole);
    }
    if key.is_empty() || (!first_line && query.old_break) {
        return None;
    }
    let line = file.table.line(file.text, index);
    let mut reading = Loose::default();
    reading.read(line, true);
    let text = reading.text.as_str();
    let span = file.table.span(index);
    if first_line {
        let start = text.len().checked_sub(key.len())?;
        if start == 0 || !text.ends_with(key.as_str()) || !text.is_char_boundary(start) {
            return None;
        }
        let whole_char = reading.spans[start] != reading.spans[start - 1];
        let bounded = !key.chars().next().is_some_and(is_word)
            || !text[..start].chars().next_back().is_some_and(is_word);
        (whole_char && bounded).then(|| Edge::Part(span.start + reading.spans[start] as usize))
    } else {
        let end = key.len();
        if end >= text.len() || !text.starts_with(key.as_str()) || !text.is_char_boundary(end) {
            return None;
        }
        let whole_char = reading.spans[end] != reading.spans[end - 1];
        let bounded = !key.chars().next_back().is_some_and(is_word)
            || !text[end..].chars().next().is_some_and(is_word);
        (whole_char && bounded).then(|| Edge::Part(span.start + reading.spans[end] as usize))
    }
}

/// new_string's lines as written into the file, each with the index of the
/// old_string line it repeats unchanged (`None` for a line that changed).
/// Lines the caller left as they were in old_string are the file's own
/// lines, byte for byte (so its typographic characters, its Unicode form
/// and its trailing whitespace survive); the others are written in the
/// file's `style` (what changed so goes to `notes`) and re-indented to the
/// file's depth and unit.
fn new_text(
    query: &Query<'_>,
    map: &IndentMap,
    file: &[&str],
    skip: usize,
    (style, notes): (&Style, &mut Vec<Rewritten>),
) -> Vec<(String, Option<usize>)> {
    use similar::{Algorithm, DiffOp, capture_diff_slices};
    let old = query.old_lines;
    let new = query.new_lines;
    // Which old line each new line sits by: itself when unchanged, else the
    // one it replaces or follows.
    let mut beside: Vec<(usize, bool)> = vec![(0, false); new.len()];
    for op in capture_diff_slices(Algorithm::Myers, old, new) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for k in 0..len {
                    beside[new_index + k] = (old_index + k, true);
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                for k in 0..new_len {
                    beside[new_index + k] = (old_index + k.min(old_len - 1), false);
                }
            }
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => {
                for k in 0..new_len {
                    beside[new_index + k] = (old_index.saturating_sub(1).min(old.len() - 1), false);
                }
            }
            DiffOp::Delete { .. } => {}
        }
    }
    new.iter()
        .zip(beside)
        .enumerate()
        .map(|(j, (line, (i, same)))| {
            if same {
                return (file[i].to_string(), Some(i));
            }
            let line = style.write(line, notes);
            let text = if j < skip {
                line
            } else if map.flat && !line.trim().is_empty() {
                let mut out = indent::indent_of(file[i]).to_string();
                out.push_str(&line);
                out
            } else {
                map.apply(&line)
            };
            (text, None)
        })
        .collect()
}

/// The cheap test for regions past the verified ones: both ends match.
fn ends_match(file: &File<'_>, query: &Query<'_>, first: usize) -> bool {
    let last_old = query.old_lines.len() - 1;
    edge(file, query, first, 0, true).is_some()
        && (last_old == 0 || edge(file, query, first + last_old, last_old, false).is_some())
}

fn line_match(file: &File<'_>, query: &Query<'_>, first: usize) -> Option<Match> {
    let height = query.old_lines.len();
    let last = first + height - 1;
    let head = edge(file, query, first, 0, true)?;
    let tail = if height == 1 {
        Edge::Whole
    } else {
        edge(file, query, last, height - 1, false)?
    };
    if height == 1 && head != Edge::Whole {
        return None;
    }
    let file_lines = file.lines(first, last);
    if (1..height.saturating_sub(1)).any(|i| loose(file_lines[i]) != query.old_keys[i]) {
        return None;
    }
    // A first line matched in part is not indented in the file's terms: it
    // stays out of the indentation fit, and new_string's first line is
    // written as it is.
    let skip = usize::from(head != Edge::Whole);
    let map = IndentMap::fit(
        &query.old_lines[skip..],
        &file_lines[skip..],
        &query.new_lines[skip.min(query.new_lines.len())..],
        || file.unit(),
    )
    .or_else(|| (height == 1 + skip).then(IndentMap::identity))?;
    let ending = file.ending_of(first, last);
    let first_span = file.table.span(first);
    let last_span = file.table.span(last);
    // The file's text for each of old_string's lines (the matched part of
    // an edge line).
    let compared: Vec<&str> = file_lines
        .iter()
        .enumerate()
        .map(|(i, line)| match (i, head, tail) {
            (0, Edge::Part(at), _) => &file.text[at..first_span.content_end],
            (i, _, Edge::Part(at)) if i == height - 1 && height > 1 => {
                &file.text[last_span.start..at]
            }
            _ => *line,
        })
        .collect();
    // A line kept unchanged keeps the line break the file gives it (a file
    // may mix endings); other lines get the file's ending.
    // How the file writes the characters old_string was read past.
    let style = Style::observe(
        query
            .old_lines
            .iter()
            .copied()
            .zip(compared.iter().copied()),
    );
    let mut rewritten = Vec::new();
    let lines = new_text(query, &map, &compared, skip, (&style, &mut rewritten));
    let mut replacement = String::new();
    for (j, (text, _)) in lines.iter().enumerate() {
        if j > 0 {
            let own = lines[j - 1].1.map(|above| {
                let span = file.table.span(first + above);
                &file.text[span.content_end..span.end]
            });
            replacement.push_str(own.filter(|own| !own.is_empty()).unwrap_or(ending));
        }
        replacement.push_str(text);
    }
    let start = match head {
        Edge::Whole => first_span.start,
        Edge::Part(at) => at,
    };
    let end = match tail {
        Edge::Part(at) => at,
        Edge::Whole
            if query.old_break && !query.new_break && last_span.end > last_span.content_end =>
        {
            last_span.end
        }
        Edge::Whole => last_span.content_end,
    };
    if query.new_break && !query.old_break {
        replacement.push_str(ending);
    }
    let mut tolerated: Vec<String> = map.describe().into_iter().collect();
    for note in explain::differences(query.old_lines, &compared, file.odd_endings(first, last)) {
        if !note.contains("indented with") {
            tolerated.push(note);
        }
    }
    if tolerated.is_empty() {
        tolerated.push("whitespace differs".to_string());
    }
    let before = file.table.block(file.text, first, last).to_string();
    let tail_text = if end <= last_span.content_end {
        &file.text[end..last_span.content_end]
    } else {
        ""
    };
    let after = format!(
        "{}{}{}",
        &file.text[first_span.start..start],
        replacement.strip_suffix(ending).unwrap_or(&replacement),
        tail_text
    );
    Some(Match {
        lines: Lines {
            first: first + 1,
            last: last + 1,
        },
        range: start..end,
        replacement,
        tolerated,
        rewritten,
        before,
        after,
    })
}

/// Matches of a one-line old_string inside lines, on token boundaries (whole
/// lines are [`line_matches`]'s).
fn span_matches(file: &File<'_>, query: &Query<'_>) -> (Vec<Match>, usize) {
    let needle = &query.old_keys[0];
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let first_word = needle.chars().next().is_some_and(is_word);
    let last_word = needle.chars().next_back().is_some_and(is_word);
    let lead = &query.old[..query.old.len() - query.old.trim_start().len()];
    let trail = &query.old[query.old.trim_end().len()..];
    let new = query.new.strip_prefix(lead).unwrap_or(query.new);
    let new = new.strip_suffix(trail).unwrap_or(new);

    let mut reading = Loose::default();
    let mut found = Vec::new();
    let mut count = 0;
    for index in 0..file.table.len() {
        if file.hashes[index] == query.old_hashes[0] {
            continue;
        }
        let line = file.table.line(file.text, index);
        reading.read(line, false);
        if finder.find(reading.text.as_bytes()).is_none() {
            continue;
        }
        reading.read(line, true);
        let loose_text = reading.text.as_str();
        let spans = &reading.spans;
        let mut from = 0;
        while let Some(at) = finder.find(&loose_text.as_bytes()[from..]) {
            let start = from + at;
            let end = start + needle.len();
            from = start + 1;
            let whole_start = start == 0 || spans[start] != spans[start - 1];
            let whole_end = end == loose_text.len() || spans[end] != spans[end - 1];
            let before_ok =
                !first_word || !loose_text[..start].chars().next_back().is_some_and(is_word);
            let after_ok = !last_word || !loose_text[end..].chars().next().is_some_and(is_word);
            if !(whole_start && whole_end && before_ok && after_ok) {
                continue;
            }
            count += 1;
            if found.len() == VERIFIED {
                continue;
            }
            let span = file.table.span(index);
            let byte_start = span.start + spans[start] as usize;
            let byte_end = span.start
                + if end < loose_text.len() {
                    spans[end] as usize
                } else {
                    reading.end as usize
                };
            let matched = &file.text[byte_start..byte_end];
            let mut tolerated = explain::differences(&[query.old.trim()], &[matched], 0);
            let mut rewritten = Vec::new();
            let replacement =
                Style::observe([(query.old.trim(), matched)]).write(new, &mut rewritten);
            if tolerated.is_empty() {
                tolerated.push("whitespace differs".to_string());
            }
            // Around the span only: the line may be very long.
            let lead = floor_boundary(
                file.text,
                byte_start.saturating_sub(CONTEXT).max(span.start),
            );
            let tail = ceil_boundary(file.text, (byte_end + CONTEXT).min(span.content_end));
            let before = file.text[lead..tail].to_string();
            let after = format!(
                "{}{}{}",
                &file.text[lead..byte_start],
                replacement,
                &file.text[byte_end..tail]
            );
            found.push(Match {
                lines: Lines {
                    first: index + 1,
                    last: index + 1,
                },
                range: byte_start..byte_end,
                replacement,
                tolerated,
                rewritten,
                before,
                after,
            });
        }
    }
    (found, count)
}

/// Bytes of a long line kept on each side of a span shown to the caller.
const CONTEXT: usize = 120;

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests;
