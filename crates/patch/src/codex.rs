//! The codex patch format (`*** Begin Patch` ... `*** End Patch`): its
//! parser, into the same [`Patch`] model as unified diffs, and its matcher,
//! which places chunks by content instead of by line numbers.
//!
//! Parsing follows codex's own parser where that is lenient (padded
//! envelope and header lines, a heredoc wrapper, CRLF patch text, the first
//! chunk without `@@`) and departs from it where it refuses something
//! models write (stacked `@@` lines narrow step by step; blank lines between
//! file sections are skipped; a unified `@@ -a,b +c,d @@ text` line is read
//! as `@@ text`). A patch without its `*** End Patch` line (or a heredoc
//! without its closing word) is refused: it was probably cut off.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::engine::{
    Applied, BASE, BOM, Out, addmod, key, line_hash, mulmod, powmod, search_budget, split_lines,
    strip_bom, submod,
};
use crate::error::{Closest, ExpectedLines, PatchError};
use crate::model::{FilePatch, Format, Hunk, HunkLine, LineKind, Operation, Patch};
use crate::report::MatchLevel;

const BEGIN: &[u8] = b"*** Begin Patch";
const END: &[u8] = b"*** End Patch";
const ADD: &[u8] = b"*** Add File: ";
const DELETE: &[u8] = b"*** Delete File: ";
const UPDATE: &[u8] = b"*** Update File: ";
const MOVE: &[u8] = b"*** Move to: ";
const END_OF_FILE: &[u8] = b"*** End of File";

/// Whether `input` is a codex patch: its first non-blank line is
/// `*** Begin Patch`, or a heredoc opening (`<<EOF`, `apply_patch <<'EOF'`)
/// followed by it.
pub(crate) fn is_codex(input: &[u8]) -> bool {
    let mut lines = input
        .split(|b| *b == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|l| !l.is_empty());
    match lines.next() {
        Some(BEGIN) => true,
        Some(line) if heredoc_open(line).is_some() => lines.next() == Some(BEGIN),
        _ => false,
    }
}

/// The delimiter word of a heredoc opening line: `<<WORD`, `<<'WORD'`,
/// `<<"WORD"`, optionally after `apply_patch` or `applypatch`.
fn heredoc_open(line: &[u8]) -> Option<&[u8]> {
    let mut rest = line;
    for command in [&b"apply_patch"[..], b"applypatch"] {
        if let Some(after) = rest.strip_prefix(command)
            && after.first().is_some_and(u8::is_ascii_whitespace)
        {
            rest = after.trim_ascii_start();
            break;
        }
    }
    let rest = rest.strip_prefix(b"<<")?.trim_ascii_start();
    let word = match rest.first() {
        Some(q @ (b'\'' | b'"')) => rest.strip_prefix(&[*q])?.strip_suffix(&[*q])?,
        _ => rest,
    };
    let is_word = !word.is_empty() && word.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_');
    is_word.then_some(word)
}

fn err(line: usize, message: impl Into<String>) -> PatchError {
    PatchError::Parse {
        line,
        message: message.into(),
    }
}

fn shown(line: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(line)
}

/// Parses a codex patch (the caller has checked [`is_codex`]). Line numbers
/// in errors count the lines of `input` as given, from 1.
pub(crate) fn parse(input: &[u8]) -> Result<Patch, PatchError> {
    let lines: Vec<&[u8]> = input
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect();
    let blank = |i: usize| lines[i].trim_ascii().is_empty();
    let Some(mut first) = (0..lines.len()).find(|&i| !blank(i)) else {
        return Err(err(
            1,
            "The first line of the patch must be '*** Begin Patch'",
        ));
    };
    let mut last = (0..lines.len()).rev().find(|&i| !blank(i)).unwrap_or(first);
    if let Some(word) = heredoc_open(lines[first].trim_ascii()) {
        let opened = first + 1;
        if last == first || lines[last].trim_ascii() != word {
            return Err(err(
                last + 1,
                format!(
                    "the heredoc opened at line {opened} is not closed: the last line must be `{}`; the patch may have been cut off, so nothing was applied",
                    shown(word)
                ),
            ));
        }
        first = (first + 1..last).find(|&i| !blank(i)).unwrap_or(last);
        last = (first..last).rev().find(|&i| !blank(i)).unwrap_or(first);
    }
    if lines[first].trim_ascii() != BEGIN {
        return Err(err(
            first + 1,
            "The first line of the patch must be '*** Begin Patch'",
        ));
    }
    if last == first || lines[last].trim_ascii() != END {
        return Err(err(
            last + 1,
            "The last line of the patch must be '*** End Patch'; it is missing, so the patch may have been cut off, and nothing was applied",
        ));
    }
    let mut parser = Parser {
        lines: &lines[..last],
        pos: first + 1,
    };
    let files = parser.run()?;
    if files.is_empty() {
        return Err(err(
            last + 1,
            "the patch has no file sections (`*** Add File: `, `*** Delete File: ` or `*** Update File: `); No files were modified.",
        ));
    }
    Ok(Patch { files })
}

struct Parser<'a, 'b> {
    /// The lines up to (not including) `*** End Patch`.
    lines: &'b [&'a [u8]],
    pos: usize,
}

/// What a `@@` line says.
enum Marker {
    /// `@@` alone: no context.
    Bare,
    /// `@@ text`: move past the line matching `text`.
    Context(Vec<u8>),
}

fn marker(line: &[u8]) -> Option<Marker> {
    if line.trim_ascii_end() == b"@@" {
        return Some(Marker::Bare);
    }
    let rest = line.strip_prefix(b"@@ ")?;
    if rest.trim_ascii().is_empty() {
        return Some(Marker::Bare);
    }
    // A unified hunk header written into a codex patch: its line numbers
    // say nothing here, its section text (the line above the hunk) is
    // context in the codex sense.
    if let Some(section) = unified_section(rest) {
        return Some(if section.trim_ascii().is_empty() {
            Marker::Bare
        } else {
            Marker::Context(section.to_vec())
        });
    }
    Some(Marker::Context(rest.to_vec()))
}

/// For `-a[,b] +c[,d] @@ text`, the `text` (possibly empty).
fn unified_section(rest: &[u8]) -> Option<&[u8]> {
    let range = |s: &[u8], sign: u8| -> Option<usize> {
        let s = s.strip_prefix(&[sign])?;
        let ok = !s.is_empty() && s.iter().all(|b| b.is_ascii_digit() || *b == b',');
        ok.then_some(s.len() + 1)
    };
    let mut parts = rest.splitn(3, |b| *b == b' ');
    let old = parts.next()?;
    let new = parts.next()?;
    range(old, b'-')?;
    range(new, b'+')?;
    let tail = parts.next()?;
    let tail = tail.strip_prefix(b"@@")?;
    Some(tail.strip_prefix(b" ").unwrap_or(tail))
}

fn is_header(line: &[u8]) -> bool {
    line.trim_ascii().starts_with(b"***")
}

impl<'a> Parser<'a, '_> {
    fn path(&self, rest: &[u8], what: &str) -> Result<String, PatchError> {
        let rest = rest.trim_ascii();
        if rest.is_empty() {
            return Err(err(self.pos + 1, format!("`{what}` is missing its path")));
        }
        String::from_utf8(rest.to_vec())
            .map_err(|_| err(self.pos + 1, "the path is not valid UTF-8"))
    }

    fn run(&mut self) -> Result<Vec<FilePatch>, PatchError> {
        let mut files = Vec::new();
        while self.pos < self.lines.len() {
            let line = self.lines[self.pos].trim_ascii();
            let number = self.pos + 1;
            if line.is_empty() {
                self.pos += 1;
            } else if let Some(rest) = line.strip_prefix(ADD) {
                let path = self.path(rest, "*** Add File: ")?;
                self.pos += 1;
                let mut body = Vec::new();
                while let Some(text) = self.lines.get(self.pos).and_then(|l| l.strip_prefix(b"+")) {
                    body.push(HunkLine {
                        kind: LineKind::Insert,
                        content: text.to_vec(),
                    });
                    self.pos += 1;
                }
                let hunks = if body.is_empty() {
                    Vec::new()
                } else {
                    vec![chunk(body, Vec::new(), false, number + 1)]
                };
                files.push(file(Operation::Create, None, Some(path), hunks, number));
            } else if let Some(rest) = line.strip_prefix(DELETE) {
                let path = self.path(rest, "*** Delete File: ")?;
                self.pos += 1;
                files.push(file(
                    Operation::Delete,
                    Some(path),
                    None,
                    Vec::new(),
                    number,
                ));
            } else if let Some(rest) = line.strip_prefix(UPDATE) {
                let path = self.path(rest, "*** Update File: ")?;
                self.pos += 1;
                let mut to = None;
                if let Some(rest) = self
                    .lines
                    .get(self.pos)
                    .and_then(|l| l.trim_ascii().strip_prefix(MOVE))
                {
                    to = Some(self.path(rest, "*** Move to: ")?);
                    self.pos += 1;
                }
                let hunks = self.chunks()?;
                if hunks.is_empty() && to.is_none() {
                    return Err(err(
                        number,
                        format!("Update file hunk for path '{path}' is empty"),
                    ));
                }
                let (operation, to) = match to {
                    Some(to) if to != path => (Operation::Rename, Some(to)),
                    _ => (Operation::Modify, Some(path.clone())),
                };
                files.push(file(operation, Some(path), to, hunks, number));
            } else if line == END {
                return Err(err(
                    number,
                    "'*** End Patch' before the end of the input; only one patch may be given",
                ));
            } else {
                return Err(err(
                    number,
                    format!(
                        "'{}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', '*** Delete File: {{path}}', '*** Update File: {{path}}'",
                        shown(self.lines[self.pos])
                    ),
                ));
            }
        }
        Ok(files)
    }

    /// The chunks of one Update File section, up to the next header.
    fn chunks(&mut self) -> Result<Vec<Hunk>, PatchError> {
        let mut chunks = Vec::new();
        loop {
            while self
                .lines
                .get(self.pos)
                .is_some_and(|l| l.trim_ascii().is_empty())
            {
                self.pos += 1;
            }
            let Some(&line) = self.lines.get(self.pos) else {
                break;
            };
            if line.trim_ascii() == END_OF_FILE {
                return Err(err(
                    self.pos + 1,
                    "'*** End of File' must follow the lines of a chunk",
                ));
            }
            if is_header(line) {
                break;
            }
            let start = self.pos + 1;
            let mut context = Vec::new();
            let mut markers = 0;
            while let Some(m) = self.lines.get(self.pos).and_then(|l| marker(l)) {
                markers += 1;
                if let Marker::Context(text) = m {
                    context.push(text);
                }
                self.pos += 1;
            }
            if markers == 0 && !chunks.is_empty() {
                return Err(err(
                    start,
                    format!(
                        "Expected update hunk to start with a @@ context marker, got: '{}'",
                        shown(line)
                    ),
                ));
            }
            let mut body = Vec::new();
            let mut end_of_file = false;
            while let Some(&l) = self.lines.get(self.pos) {
                let (kind, text) = match l.first() {
                    None => (LineKind::Context, &l[..0]),
                    Some(b' ') => (LineKind::Context, &l[1..]),
                    Some(b'+') => (LineKind::Insert, &l[1..]),
                    Some(b'-') => (LineKind::Delete, &l[1..]),
                    _ if l.trim_ascii() == END_OF_FILE => {
                        end_of_file = true;
                        self.pos += 1;
                        break;
                    }
                    _ if l.starts_with(b"@@") || is_header(l) => break,
                    _ => {
                        return Err(err(
                            self.pos + 1,
                            format!(
                                "Unexpected line found in update hunk: '{}'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)",
                                shown(l)
                            ),
                        ));
                    }
                };
                body.push(HunkLine {
                    kind,
                    content: text.to_vec(),
                });
                self.pos += 1;
            }
            if body.is_empty() {
                let at = self.pos.min(self.lines.len().saturating_sub(1));
                return Err(match self.lines.get(self.pos) {
                    Some(l) if l.starts_with(b"@@") => err(
                        at + 1,
                        format!(
                            "Expected update hunk to start with a @@ context marker, got: '{}'",
                            shown(l)
                        ),
                    ),
                    _ => err(start, "Update hunk does not contain any lines"),
                });
            }
            chunks.push(chunk(body, context, end_of_file, start));
        }
        Ok(chunks)
    }
}

fn chunk(lines: Vec<HunkLine>, context: Vec<Vec<u8>>, end_of_file: bool, line: usize) -> Hunk {
    let old_count = lines.iter().filter(|l| l.kind != LineKind::Insert).count();
    let new_count = lines.iter().filter(|l| l.kind != LineKind::Delete).count();
    Hunk {
        old_start: 0,
        old_count,
        new_start: 0,
        new_count,
        section: String::new(),
        lines,
        old_missing_newline: false,
        new_missing_newline: false,
        line,
        context,
        end_of_file,
    }
}

fn file(
    operation: Operation,
    old_path: Option<String>,
    new_path: Option<String>,
    hunks: Vec<Hunk>,
    line: usize,
) -> FilePatch {
    FilePatch {
        operation,
        old_path,
        new_path,
        old_mode: None,
        new_mode: None,
        similarity: None,
        dissimilarity: None,
        index: None,
        git: false,
        hunks,
        line,
        format: Format::Codex,
    }
}

/// A line as the given level compares it.
fn normalize(level: MatchLevel, line: &[u8]) -> Cow<'_, [u8]> {
    let text = || String::from_utf8_lossy(line);
    match level {
        MatchLevel::Exact => Cow::Borrowed(line),
        MatchLevel::TrailingWhitespace => to_bytes(text(), str::trim_end),
        MatchLevel::SurroundingWhitespace => to_bytes(text(), str::trim),
        MatchLevel::Punctuation => {
            let folded: String = text().trim().chars().map(fold_punctuation).collect();
            let folded = folded.trim();
            Cow::Owned(folded.as_bytes().to_vec())
        }
    }
}

fn to_bytes(text: Cow<'_, str>, trim: fn(&str) -> &str) -> Cow<'_, [u8]> {
    match text {
        Cow::Borrowed(s) => Cow::Borrowed(trim(s).as_bytes()),
        Cow::Owned(s) => Cow::Owned(trim(&s).as_bytes().to_vec()),
    }
}

/// Typographic dashes, quotes and spaces as their ASCII forms (the set
/// codex folds).
fn fold_punctuation(c: char) -> char {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// The file's lines as one level compares them, hashed: the hash of each
/// line, prefix hashes for O(1) window hashes, and where each line hash
/// occurs.
struct LevelIndex {
    prefix: Vec<u64>,
    occurrences: HashMap<u64, Vec<usize>>,
}

impl LevelIndex {
    fn new(level: MatchLevel, lines: &[&[u8]]) -> Self {
        let mut prefix = Vec::with_capacity(lines.len() + 1);
        prefix.push(0);
        let mut occurrences: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, line) in lines.iter().enumerate() {
            let h = line_hash(&normalize(level, line));
            prefix.push(addmod(mulmod(prefix[i], BASE), h));
            occurrences.entry(h).or_default().push(i);
        }
        LevelIndex {
            prefix,
            occurrences,
        }
    }

    fn window(&self, start: usize, len: usize, shift: u64) -> u64 {
        submod(self.prefix[start + len], mulmod(self.prefix[start], shift))
    }
}

/// Why a search found nothing.
enum Miss {
    NotFound,
    /// The file's search budget ran out.
    GaveUp,
}

/// Finds chunk patterns in one file's lines, level by level, with a
/// budget on the candidate positions tried for the whole file, so that a
/// patch cannot make the search quadratic.
struct Finder<'a> {
    /// The file's lines without terminators (and without the BOM).
    lines: Vec<&'a [u8]>,
    levels: [Option<LevelIndex>; 4],
    budget: usize,
    /// Whether exact matches are still found by scanning forward. Chunks
    /// come in file order, so while each one matches exactly the scans
    /// cover the file about once, without hashing every line into an index;
    /// after the first scan that finds nothing (at most one more pass), the
    /// exact level uses the index like the others, so the work stays linear.
    scan_exact: bool,
}

impl<'a> Finder<'a> {
    /// The first position at or after `from` where `pattern` matches, at
    /// the lowest level at which it matches anywhere there. With `at_end`,
    /// the only candidate is the one that ends at the file's end.
    fn find(
        &mut self,
        pattern: &[&[u8]],
        from: usize,
        at_end: bool,
    ) -> Result<(usize, MatchLevel), Miss> {
        let n = self.lines.len();
        let k = pattern.len();
        if k == 0 {
            return Ok((if at_end { n } else { from }, MatchLevel::Exact));
        }
        if k > n || from > n - k {
            return Err(Miss::NotFound);
        }
        // Whether the exact level is already known to have no match here.
        let mut exact_missed = false;
        if self.scan_exact && !at_end {
            match self.scan_forward(pattern, from) {
                Ok(Some(p)) => return Ok((p, MatchLevel::Exact)),
                Ok(None) => {
                    self.scan_exact = false;
                    exact_missed = true;
                }
                Err(miss) => return Err(miss),
            }
        }
        for (slot, level) in MatchLevel::ALL.into_iter().enumerate() {
            if slot == 0 && exact_missed {
                continue;
            }
            let wanted: Vec<Cow<'_, [u8]>> = pattern.iter().map(|l| normalize(level, l)).collect();
            let lines = &self.lines;
            let equal_at = |p: usize| {
                wanted
                    .iter()
                    .enumerate()
                    .all(|(j, w)| normalize(level, lines[p + j]) == *w)
            };
            if at_end {
                if equal_at(n - k) {
                    return Ok((n - k, level));
                }
                continue;
            }
            let index = self.levels[slot].get_or_insert_with(|| LevelIndex::new(level, lines));
            let hashes: Vec<u64> = wanted.iter().map(|w| line_hash(w)).collect();
            let pattern_hash = hashes
                .iter()
                .fold(0, |acc, h| addmod(mulmod(acc, BASE), *h));
            // Candidates come from the pattern line that occurs least often.
            let mut rarest: Option<(usize, &Vec<usize>)> = None;
            for (j, h) in hashes.iter().enumerate() {
                let Some(list) = index.occurrences.get(h) else {
                    rarest = None;
                    break;
                };
                if rarest.is_none_or(|(_, best)| list.len() < best.len()) {
                    rarest = Some((j, list));
                }
                if j == 0 && list.len() <= 1 {
                    break;
                }
            }
            let Some((j, list)) = rarest else {
                continue;
            };
            let shift = powmod(BASE, k);
            let begin = list.partition_point(|&q| q < from + j);
            for &q in &list[begin..] {
                let p = q - j;
                if p + k > n {
                    break;
                }
                if self.budget == 0 {
                    return Err(Miss::GaveUp);
                }
                self.budget -= 1;
                if index.window(p, k, shift) == pattern_hash && equal_at(p) {
                    return Ok((p, level));
                }
            }
        }
        Err(Miss::NotFound)
    }
}

impl Finder<'_> {
    /// The first position at or after `from` where `pattern` matches
    /// exactly, found by comparing lines forward; each position tried
    /// counts against the budget.
    fn scan_forward(&mut self, pattern: &[&[u8]], from: usize) -> Result<Option<usize>, Miss> {
        let k = pattern.len();
        let last = self.lines.len() - k;
        for p in from..=last {
            if self.budget == 0 {
                return Err(Miss::GaveUp);
            }
            self.budget -= 1;
            if self.lines[p] == pattern[0] && self.lines[p + 1..p + k] == pattern[1..] {
                return Ok(Some(p));
            }
        }
        Ok(None)
    }
}

/// One chunk placed in the file.
struct Placed<'h> {
    start: usize,
    /// Old lines it replaces (a dropped trailing empty line not counted).
    old_len: usize,
    hunk: &'h Hunk,
}

/// Applies codex chunks (in order) to `original`.
pub(crate) fn apply_chunks(
    path: &str,
    original: &[u8],
    hunks: &[Hunk],
) -> Result<Applied, PatchError> {
    let has_bom = original.starts_with(BOM);
    let (bom, body) = original.split_at(if has_bom { BOM.len() } else { 0 });
    let spans = split_lines(body);
    let n = spans.len();
    let raw = |i: usize| &body[spans[i].start..spans[i].end];
    let mut finder = Finder {
        lines: spans
            .iter()
            .map(|s| key(&body[s.start..s.content_end]))
            .collect(),
        levels: [None, None, None, None],
        budget: search_budget(n, hunks.len()),
        scan_exact: true,
    };
    let gave_up = "gave up searching: the chunks of this file take too long to find; split the patch or give more distinctive context";

    let mut cursor = 0usize;
    let mut worst = MatchLevel::Exact;
    let mut placed: Vec<Placed<'_>> = Vec::with_capacity(hunks.len());
    for (idx, hunk) in hunks.iter().enumerate() {
        for (c, context) in hunk.context.iter().enumerate() {
            let context = strip_bom(has_bom, context);
            match finder.find(&[context], cursor, false) {
                Ok((p, level)) => {
                    cursor = p + 1;
                    worst = worst.max(level);
                }
                Err(Miss::NotFound) => {
                    return Err(PatchError::ContextNotFound {
                        path: path.to_owned(),
                        chunk: idx + 1,
                        line: hunk.line + c,
                        context: String::from_utf8_lossy(context).into_owned(),
                    });
                }
                Err(Miss::GaveUp) => {
                    return Err(not_found(path, idx, hunk, gave_up.to_owned()));
                }
            }
        }
        let old: Vec<&[u8]> = hunk.old_lines().map(|l| strip_bom(has_bom, l)).collect();
        if old.is_empty() {
            // Only additions: codex appends them at the end of the file,
            // whatever the context said.
            placed.push(Placed {
                start: n,
                old_len: 0,
                hunk,
            });
            continue;
        }
        let mut found = finder.find(&old, cursor, hunk.end_of_file);
        let mut old_len = old.len();
        // A trailing empty old line stands for the final newline.
        if matches!(found, Err(Miss::NotFound)) && old.last().is_some_and(|l| l.is_empty()) {
            old_len -= 1;
            found = finder.find(&old[..old_len], cursor, hunk.end_of_file);
        }
        let closest = match found {
            Err(Miss::NotFound) => finder.closest(&old),
            _ => None,
        };
        let (start, level) = found.map_err(|miss| {
            let reason = match miss {
                Miss::GaveUp => gave_up.to_owned(),
                Miss::NotFound if hunk.end_of_file => {
                    "they are not the last lines of the file (*** End of File)".to_owned()
                }
                Miss::NotFound if cursor > 0 => format!(
                    "not found at any match level after line {cursor} (after the previous chunk or @@ context)"
                ),
                Miss::NotFound => "not found at any match level".to_owned(),
            };
            chunk_not_found(path, idx, hunk, reason, closest)
        })?;
        worst = worst.max(level);
        placed.push(Placed {
            start,
            old_len,
            hunk,
        });
        cursor = start + old_len;
    }

    // New lines take the file's first line ending.
    let eol: &[u8] = match spans.first() {
        Some(s) if body[s.start..s.end].ends_with(b"\r\n") => b"\r\n",
        _ => b"\n",
    };
    // Appends sit at `n`; the stable sort keeps chunk order among equals.
    placed.sort_by_key(|p| p.start);
    let mut out = Out {
        data: Vec::with_capacity(original.len() + original.len() / 8 + 64),
        unterminated: false,
        lines: 0,
    };
    out.data.extend_from_slice(bom);
    let mut at = 0usize;
    for chunk in &placed {
        if chunk.start > at {
            out.raw(
                &body[spans[at].start..spans[chunk.start - 1].end],
                chunk.start - at,
                eol,
            );
        }
        let mut old_i = 0;
        for line in &chunk.hunk.lines {
            match line.kind {
                LineKind::Context if old_i < chunk.old_len => {
                    // Context keeps the file's bytes, even when it matched
                    // loosely.
                    let r = raw(chunk.start + old_i);
                    out.line(r, b"", eol);
                    out.unterminated = !r.ends_with(b"\n");
                    old_i += 1;
                }
                LineKind::Delete if old_i < chunk.old_len => old_i += 1,
                // The dropped trailing empty line.
                LineKind::Context | LineKind::Delete => {}
                LineKind::Insert => out.line(strip_bom(has_bom, &line.content), eol, eol),
            }
        }
        at = chunk.start + chunk.old_len;
    }
    if at < n {
        out.raw(&body[spans[at].start..], n - at, eol);
    }
    Ok(Applied {
        data: out.data,
        offsets: Vec::new(),
        lines: out.lines,
        fuzz: (worst > MatchLevel::Exact).then_some(worst),
    })
}

fn not_found(path: &str, idx: usize, hunk: &Hunk, reason: String) -> PatchError {
    chunk_not_found(path, idx, hunk, reason, None)
}

fn chunk_not_found(
    path: &str,
    idx: usize,
    hunk: &Hunk,
    reason: String,
    closest: Option<Box<Closest>>,
) -> PatchError {
    PatchError::ChunkNotFound {
        path: path.to_owned(),
        chunk: idx + 1,
        line: hunk.line,
        reason,
        expected: ExpectedLines::new(hunk.old_lines()),
        closest,
    }
}

/// A line of old_lines that occurs more often than this in the file says
/// nothing about where the chunk belongs (a brace, a blank line).
const TOO_COMMON: usize = 64;

impl Finder<'_> {
    /// The region most like `pattern`: each old line votes for the starts
    /// that would put it where it occurs in the file (read at the loosest
    /// level), lines too common to tell anything skipped. Work is bounded
    /// by the pattern's length times [`TOO_COMMON`].
    fn closest(&mut self, pattern: &[&[u8]]) -> Option<Box<Closest>> {
        let k = pattern.len();
        let lines = &self.lines;
        let index = self.levels[MatchLevel::ALL.len() - 1]
            .get_or_insert_with(|| LevelIndex::new(MatchLevel::Punctuation, lines));
        let mut votes: HashMap<usize, usize> = HashMap::new();
        for (j, line) in pattern.iter().enumerate() {
            let wanted = normalize(MatchLevel::Punctuation, line);
            if wanted.is_empty() {
                continue;
            }
            let Some(places) = index.occurrences.get(&line_hash(&wanted)) else {
                continue;
            };
            if places.len() > TOO_COMMON {
                continue;
            }
            for &q in places {
                if let Some(start) = q.checked_sub(j) {
                    *votes.entry(start).or_default() += 1;
                }
            }
        }
        let (start, found) = votes
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))?;
        let last = (start + k).min(self.lines.len());
        Some(Box::new(Closest {
            first: start + 1,
            last: last.max(start + 1),
            found,
            of: k,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heredoc_openings() {
        assert_eq!(heredoc_open(b"<<EOF"), Some(&b"EOF"[..]));
        assert_eq!(heredoc_open(b"<<'EOF'"), Some(&b"EOF"[..]));
        assert_eq!(
            heredoc_open(b"apply_patch <<\"PATCH\""),
            Some(&b"PATCH"[..])
        );
        assert_eq!(heredoc_open(b"applypatch << EOF"), Some(&b"EOF"[..]));
        assert_eq!(heredoc_open(b"<<\"EOF'"), None);
        assert_eq!(heredoc_open(b"<<"), None);
        assert_eq!(heredoc_open(b"cat <<EOF"), None);
    }

    #[test]
    fn unified_headers_read_as_context() {
        assert!(
            matches!(marker(b"@@ -1,3 +1,4 @@ fn main() {"), Some(Marker::Context(c)) if c == b"fn main() {")
        );
        assert!(matches!(marker(b"@@ -1 +1 @@"), Some(Marker::Bare)));
        assert!(matches!(marker(b"@@ class A"), Some(Marker::Context(c)) if c == b"class A"));
        assert!(matches!(marker(b"@@   "), Some(Marker::Bare)));
        assert!(marker(b"@@-1,2 +1,2 @@").is_none());
    }

    #[test]
    fn punctuation_folds_to_ascii() {
        let folded = normalize(
            MatchLevel::Punctuation,
            "\u{a0}a\u{2013}b \u{201c}c\u{201d} \u{2019}d".as_bytes(),
        );
        assert_eq!(&*folded, b"a-b \"c\" 'd");
        assert_eq!(
            &*normalize(MatchLevel::TrailingWhitespace, b"  x \t"),
            b"  x"
        );
        assert_eq!(
            &*normalize(MatchLevel::SurroundingWhitespace, b"  x \t"),
            b"x"
        );
    }
}
