//! Where an edit applies: the exact match first, then a cascade of tolerant
//! levels from strictest to loosest. A tolerant level is used only when it
//! finds exactly one region; two or more is `ambiguous_match`, never a guess.

use std::borrow::Cow;

use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_text::LineEnding;
use memchr::memmem;

use super::hint;

/// A tolerant matching level, in cascade order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// Lines equal once a common leading indent is removed from both sides;
    /// the file's indentation is carried into new_string.
    Indentation,
    /// Lines equal once each is trimmed at both ends.
    TrimmedLines,
    /// Equal once every run of whitespace (newlines included) is one space.
    Whitespace,
    /// old_string without its surrounding whitespace found exactly.
    TrimmedSubstring,
    /// Typographic punctuation read as ASCII (curly quotes, dashes,
    /// non-breaking spaces, ellipses), whitespace runs collapsed.
    Typographic,
}

impl Level {
    /// The cascade, strictest first.
    pub(crate) const CASCADE: [Level; 5] = [
        Level::Indentation,
        Level::TrimmedLines,
        Level::Whitespace,
        Level::TrimmedSubstring,
        Level::Typographic,
    ];

    /// How messages name the level.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Level::Indentation => "indentation-flexible",
            Level::TrimmedLines => "per-line trimmed",
            Level::Whitespace => "whitespace-collapsed",
            Level::TrimmedSubstring => "trimmed-substring",
            Level::Typographic => "typographic-punctuation",
        }
    }
}

/// How many replacement lines a message lists before summarising.
const LISTED: usize = 10;

/// What one edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Number of replacements.
    pub count: usize,
    /// 1-based lines (in the text the edit applied to) of the first
    /// replacements, at most [`LISTED`].
    pub lines: Vec<usize>,
    /// The tolerant level that matched, `None` for an exact match.
    pub level: Option<Level>,
}

impl Outcome {
    /// `1 replacement at line 12`, `3 replacements at lines 4, 9, 20`, with a
    /// note when a tolerant level matched.
    pub(crate) fn describe(&self) -> String {
        let mut out = if self.count == 1 {
            format!(
                "1 replacement at line {}",
                self.lines.first().copied().unwrap_or(1)
            )
        } else {
            format!(
                "{} replacements at lines {}",
                self.count,
                list_lines(&self.lines, self.count)
            )
        };
        if let Some(level) = self.level {
            out.push_str(&format!(
                " (matched with {} matching; old_string did not match exactly)",
                level.name()
            ));
        }
        out
    }
}

/// `4, 9, 20` or `4, 9, ... (and 37 more)`.
pub(crate) fn list_lines(lines: &[usize], total: usize) -> String {
    let mut out = lines
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if total > lines.len() {
        out.push_str(&format!(" and {} more", total - lines.len()));
    }
    out
}

/// One replacement request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Edit<'a> {
    pub old: &'a str,
    pub new: &'a str,
    pub replace_all: bool,
}

/// Checks what can be checked without the file.
pub(crate) fn validate(edit: &Edit<'_>) -> ToolResult<()> {
    if edit.old.is_empty() {
        return Err(ToolError::invalid_input(
            "old_string is empty; to create a file or replace all of its content use write_file",
        ));
    }
    if edit.old == edit.new {
        return Err(ToolError::invalid_input(
            "old_string and new_string are identical; there is nothing to change",
        ));
    }
    Ok(())
}

/// Applies `edit` to `text`, whose dominant line ending is `ending`. Errors
/// name `path`.
pub(crate) fn apply(
    text: &str,
    edit: &Edit<'_>,
    ending: LineEnding,
    path: &str,
) -> ToolResult<(String, Outcome)> {
    // Written with LF (or CRLF) by the caller, matched and written with the
    // file's own ending. If that finds nothing, the strings as given get a try
    // too, for files that mix endings.
    let old = ending.apply(edit.old);
    let new = ending.apply(edit.new);
    let mut tries: Vec<(&str, &str)> = vec![(&old, &new)];
    if *old != *edit.old {
        tries.push((edit.old, edit.new));
    }

    if edit.replace_all {
        for &(old, new) in &tries {
            let starts: Vec<usize> = memmem::find_iter(text.as_bytes(), old.as_bytes()).collect();
            if !starts.is_empty() {
                let regions = starts.iter().map(|&s| (s, s + old.len()));
                let out = splice_all(text, regions, new);
                let lines = line_numbers(text, starts.iter().copied().take(LISTED));
                return Ok((
                    out,
                    Outcome {
                        count: starts.len(),
                        lines,
                        level: None,
                    },
                ));
            }
        }
        return Err(no_match(path, text, &old, true));
    }

    for &(old, new) in &tries {
        let found = find_overlapping(text, old);
        match found.count {
            0 => continue,
            1 => {
                let start = found.first[0];
                let out = splice_all(text, [(start, start + old.len())], new);
                let lines = line_numbers(text, [start]);
                return Ok((
                    out,
                    Outcome {
                        count: 1,
                        lines,
                        level: None,
                    },
                ));
            }
            count => {
                let lines = line_numbers(text, found.first.iter().copied());
                return Err(ToolError::new(
                    ErrorCode::AmbiguousMatch,
                    format!(
                        "{path}: old_string matches {count} places (at lines {}); include more surrounding lines to make it unique, or set replace_all to change every occurrence",
                        list_lines(&lines, count)
                    ),
                ));
            }
        }
    }

    let table = LineTable::new(text);
    for level in Level::CASCADE {
        let regions = find_level(level, text, &table, &old, &new);
        match regions.len() {
            0 => continue,
            1 => {
                let region = &regions[0];
                let out = splice_all(text, [(region.start, region.end)], &region.replacement);
                let lines = line_numbers(text, [region.start]);
                return Ok((
                    out,
                    Outcome {
                        count: 1,
                        lines,
                        level: Some(level),
                    },
                ));
            }
            count => {
                let lines = line_numbers(text, regions.iter().take(LISTED).map(|r| r.start));
                return Err(ToolError::new(
                    ErrorCode::AmbiguousMatch,
                    format!(
                        "{path}: old_string does not match exactly, and {} matching finds {count} places (at lines {}); nothing was changed. Include more surrounding lines so that it matches one place",
                        level.name(),
                        list_lines(&lines, count)
                    ),
                ));
            }
        }
    }
    Err(no_match(path, text, &old, false))
}

fn no_match(path: &str, text: &str, old: &str, replace_all: bool) -> ToolError {
    let headline = if replace_all {
        format!("{path}: old_string was not found (replace_all matches exactly only)")
    } else {
        format!("{path}: old_string was not found, exactly or with whitespace-tolerant matching")
    };
    let mut message = headline;
    for note in hint::no_match_notes(text, old) {
        message.push('\n');
        message.push_str(&note);
    }
    ToolError::new(ErrorCode::NoMatch, message)
}

/// Occurrences of a needle, overlapping ones included.
struct Found {
    count: usize,
    /// The first [`LISTED`] starts.
    first: Vec<usize>,
}

fn find_overlapping(text: &str, needle: &str) -> Found {
    let finder = memmem::Finder::new(needle.as_bytes());
    let bytes = text.as_bytes();
    let mut found = Found {
        count: 0,
        first: Vec::new(),
    };
    let mut from = 0;
    while let Some(at) = finder.find(&bytes[from..]) {
        let start = from + at;
        found.count += 1;
        if found.first.len() < LISTED {
            found.first.push(start);
        }
        from = start + 1;
        if from > bytes.len() {
            break;
        }
    }
    found
}

/// `text` with each (sorted, disjoint) byte range replaced by `new`.
fn splice_all(text: &str, regions: impl IntoIterator<Item = (usize, usize)>, new: &str) -> String {
    let mut out = String::with_capacity(text.len() + new.len());
    let mut at = 0;
    for (start, end) in regions {
        out.push_str(&text[at..start]);
        out.push_str(new);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The number of `\n` bytes in `bytes`, counted in wide lanes that the
/// compiler turns into vector instructions.
pub(crate) fn count_newlines(bytes: &[u8]) -> usize {
    const LANES: usize = 64;
    // A lane counts at most 255 before it is emptied into the total.
    const ROWS: usize = 255;
    let mut total = 0;
    for block in bytes.chunks(LANES * ROWS) {
        let mut lanes = [0u8; LANES];
        let mut rows = block.chunks_exact(LANES);
        for row in &mut rows {
            for (lane, &byte) in lanes.iter_mut().zip(row) {
                *lane += u8::from(byte == b'\n');
            }
        }
        total += lanes.iter().map(|&n| usize::from(n)).sum::<usize>();
        total += rows.remainder().iter().filter(|&&b| b == b'\n').count();
    }
    total
}

/// The 1-based line numbers of sorted byte offsets.
pub(crate) fn line_numbers(text: &str, offsets: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut line = 1;
    let mut at = 0;
    offsets
        .into_iter()
        .map(|offset| {
            let offset = offset.min(bytes.len());
            if offset >= at {
                line += count_newlines(&bytes[at..offset]);
            } else {
                line -= count_newlines(&bytes[offset..at]);
            }
            at = offset;
            line
        })
        .collect()
}

/// A matched region and what replaces it.
#[derive(Debug)]
struct Region<'a> {
    start: usize,
    end: usize,
    replacement: Cow<'a, str>,
}

fn find_level<'a>(
    level: Level,
    text: &str,
    table: &LineTable,
    old: &str,
    new: &'a str,
) -> Vec<Region<'a>> {
    match level {
        Level::Indentation | Level::TrimmedLines => find_lines(level, text, table, old, new),
        Level::Whitespace => find_normalized(text, old, new, false),
        Level::Typographic => {
            if has_typographic(old) || has_typographic(text) {
                find_normalized(text, old, new, true)
            } else {
                Vec::new()
            }
        }
        Level::TrimmedSubstring => find_trimmed(text, old, new),
    }
}

// ---------------------------------------------------------------------------
// Line-based levels.

/// Byte spans of a text's lines.
pub(crate) struct LineTable {
    lines: Vec<LineSpan>,
}

#[derive(Debug, Clone, Copy)]
struct LineSpan {
    start: usize,
    /// End of the content: before `\n` or `\r\n`.
    content_end: usize,
    /// After the line break (or the end of the text).
    end: usize,
}

impl LineTable {
    pub(crate) fn new(text: &str) -> LineTable {
        let bytes = text.as_bytes();
        let mut lines = Vec::new();
        let mut start = 0;
        for newline in memchr::memchr_iter(b'\n', bytes) {
            let content_end = if newline > start && bytes[newline - 1] == b'\r' {
                newline - 1
            } else {
                newline
            };
            lines.push(LineSpan {
                start,
                content_end,
                end: newline + 1,
            });
            start = newline + 1;
        }
        if start < bytes.len() {
            lines.push(LineSpan {
                start,
                content_end: bytes.len(),
                end: bytes.len(),
            });
        }
        LineTable { lines }
    }

    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    /// The content of line `index` (0-based), without its line break.
    pub(crate) fn line<'t>(&self, text: &'t str, index: usize) -> &'t str {
        let span = self.lines[index];
        &text[span.start..span.content_end]
    }

    /// Byte range of lines `first..first + count`, including the last line's
    /// break when `with_break`.
    pub(crate) fn range(&self, first: usize, count: usize, with_break: bool) -> (usize, usize) {
        let last = self.lines[first + count - 1];
        let end = if with_break {
            last.end
        } else {
            last.content_end
        };
        (self.lines[first].start, end)
    }
}

/// old_string cut into lines.
pub(crate) struct OldLines<'a> {
    pub lines: Vec<&'a str>,
    /// old_string ended with a line break.
    pub trailing_break: bool,
}

impl<'a> OldLines<'a> {
    pub(crate) fn new(old: &'a str) -> OldLines<'a> {
        let (body, trailing_break) = match old.strip_suffix('\n') {
            Some(body) => (body, true),
            None => (old, false),
        };
        let lines = body
            .split('\n')
            .map(|line| line.strip_suffix('\r').unwrap_or(line))
            .collect();
        OldLines {
            lines,
            trailing_break,
        }
    }
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

const INDENT: [char; 2] = [' ', '\t'];

fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches(INDENT).len()]
}

fn common_prefix<'s>(a: &'s str, b: &str) -> &'s str {
    let len = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    // Indentation is ASCII, but stay on a character boundary regardless.
    let mut len = len;
    while !a.is_char_boundary(len) {
        len -= 1;
    }
    &a[..len]
}

/// The common indentation of the non-blank lines.
fn common_indent<'s>(lines: impl IntoIterator<Item = &'s str>) -> &'s str {
    let mut common: Option<&str> = None;
    for line in lines {
        if is_blank(line) {
            continue;
        }
        let indent = indent_of(line);
        common = Some(match common {
            None => indent,
            Some(c) => common_prefix(c, indent),
        });
    }
    common.unwrap_or("")
}

/// How new_string's indentation is rewritten to fit the matched region:
/// each line's leading `from` becomes `to`, and the indentation after it is
/// converted between spaces and tabs when the file uses the other kind.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reindent {
    from: String,
    to: String,
    convert: Option<Convert>,
}

/// Rewrite leading spaces as tabs (`to_tabs`) or tabs as spaces, `width`
/// spaces to a tab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Convert {
    width: usize,
    to_tabs: bool,
}

impl Reindent {
    /// Leave new_string as it is.
    fn keep() -> Reindent {
        Reindent {
            from: String::new(),
            to: String::new(),
            convert: None,
        }
    }

    fn swap(from: &str, to: &str) -> Reindent {
        Reindent {
            from: from.to_string(),
            to: to.to_string(),
            convert: None,
        }
    }

    fn is_keep(&self) -> bool {
        self.from == self.to && self.convert.is_none()
    }

    /// How `old` lines relate to the file lines they matched, judged on the
    /// lines that are not blank: a common indent swapped for another, then
    /// what is left either equal or the same depth in the other kind.
    fn between(old: &[&str], file: &[&str]) -> Reindent {
        let pairs: Vec<(&str, &str)> = old
            .iter()
            .zip(file)
            .filter(|(o, f)| !is_blank(o) && !is_blank(f))
            .map(|(o, f)| (indent_of(o), indent_of(f)))
            .collect();
        if pairs.is_empty() {
            return Reindent::keep();
        }
        let from = common_indent_of(pairs.iter().map(|p| p.0));
        let to = common_indent_of(pairs.iter().map(|p| p.1));
        let rest: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(o, f)| (&o[from.len()..], &f[to.len()..]))
            .collect();
        if rest.iter().all(|(o, f)| o == f) {
            return Reindent::swap(from, to);
        }
        let only = |text: &str, byte: u8| text.bytes().all(|b| b == byte);
        for to_tabs in [true, false] {
            // (spaces, tabs) of each pair, whichever side has which.
            let counts: Option<Vec<(usize, usize)>> = rest
                .iter()
                .map(|&(o, f)| {
                    let (spaces, tabs) = if to_tabs { (o, f) } else { (f, o) };
                    (only(spaces, b' ') && only(tabs, b'\t')).then_some((spaces.len(), tabs.len()))
                })
                .collect();
            let Some(counts) = counts else {
                continue;
            };
            let width = counts
                .iter()
                .find(|(_, tabs)| *tabs > 0)
                .map(|(spaces, tabs)| spaces / tabs)
                .filter(|&w| w > 0);
            let Some(width) = width else {
                continue;
            };
            if counts.iter().all(|&(spaces, tabs)| spaces == width * tabs) {
                return Reindent {
                    from: from.to_string(),
                    to: to.to_string(),
                    convert: Some(Convert { width, to_tabs }),
                };
            }
        }
        Reindent::keep()
    }

    fn apply<'a>(&self, new: &'a str) -> Cow<'a, str> {
        if self.is_keep() {
            return Cow::Borrowed(new);
        }
        let mut out = String::with_capacity(new.len() + 16);
        for (index, line) in new.split('\n').enumerate() {
            if index > 0 {
                out.push('\n');
            }
            if is_blank(line) {
                out.push_str(line);
                continue;
            }
            let line = &line[common_prefix(line, &self.from).len()..];
            out.push_str(&self.to);
            let indent = indent_of(line);
            match self.convert {
                Some(Convert {
                    width,
                    to_tabs: true,
                }) if indent.bytes().all(|b| b == b' ') => {
                    out.push_str(&"\t".repeat(indent.len() / width));
                    out.push_str(&" ".repeat(indent.len() % width));
                }
                Some(Convert {
                    width,
                    to_tabs: false,
                }) => {
                    let tabs = indent.bytes().take_while(|&b| b == b'\t').count();
                    out.push_str(&" ".repeat(tabs * width));
                    out.push_str(&indent[tabs..]);
                }
                _ => out.push_str(indent),
            }
            out.push_str(&line[indent.len()..]);
        }
        Cow::Owned(out)
    }
}

fn common_indent_of<'s>(indents: impl Iterator<Item = &'s str>) -> &'s str {
    let mut common: Option<&str> = None;
    for indent in indents {
        common = Some(match common {
            None => indent,
            Some(c) => common_prefix(c, indent),
        });
    }
    common.unwrap_or("")
}

fn find_lines<'a>(
    level: Level,
    text: &str,
    table: &LineTable,
    old: &str,
    new: &'a str,
) -> Vec<Region<'a>> {
    let old_lines = OldLines::new(old);
    let wanted = &old_lines.lines;
    let count = wanted.len();
    let Some(anchor) = wanted.iter().position(|l| !is_blank(l)) else {
        return Vec::new();
    };
    if count > table.len() {
        return Vec::new();
    }
    let old_indent = common_indent(wanted.iter().copied());
    let anchor_key = wanted[anchor].trim_start_matches(INDENT);
    let anchor_trimmed = wanted[anchor].trim();

    let mut regions = Vec::new();
    let mut window: Vec<&str> = Vec::with_capacity(count);
    for first in 0..=table.len() - count {
        // Cheap test on one line before looking at the whole window.
        let anchor_line = table.line(text, first + anchor);
        let candidate = match level {
            Level::Indentation => anchor_line.trim_start_matches(INDENT) == anchor_key,
            _ => anchor_line.trim() == anchor_trimmed,
        };
        if !candidate {
            continue;
        }
        window.clear();
        window.extend((0..count).map(|i| table.line(text, first + i)));
        let reindent = match level {
            Level::Indentation => match indentation_match(wanted, &window, old_indent) {
                Some(reindent) => reindent,
                None => continue,
            },
            _ => {
                if !wanted
                    .iter()
                    .zip(&window)
                    .all(|(o, f)| o.trim() == f.trim())
                {
                    continue;
                }
                Reindent::between(wanted, &window)
            }
        };
        let (start, end) = table.range(first, count, old_lines.trailing_break);
        regions.push(Region {
            start,
            end,
            replacement: reindent.apply(new),
        });
    }
    regions
}

/// When `file` equals `old` once each side's common indent is removed (blank
/// lines matching blank lines), the re-indentation carrying the file's indent.
fn indentation_match(old: &[&str], file: &[&str], old_indent: &str) -> Option<Reindent> {
    if old
        .iter()
        .zip(file)
        .any(|(o, f)| is_blank(o) != is_blank(f))
    {
        return None;
    }
    let file_indent = common_indent(file.iter().copied());
    let same = old
        .iter()
        .zip(file)
        .filter(|(o, _)| !is_blank(o))
        .all(|(o, f)| o[old_indent.len()..] == f[file_indent.len()..]);
    if !same {
        return None;
    }
    Some(Reindent::swap(old_indent, file_indent))
}

// ---------------------------------------------------------------------------
// Normalized levels: whitespace collapsed, typographic punctuation as ASCII.

/// The ASCII reading of a typographic character.
fn typographic(ch: char) -> Option<&'static str> {
    Some(match ch {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => "\"",
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => "-",
        '\u{2026}' => "...",
        _ => return None,
    })
}

/// True when `text` holds a character [`typographic`] reads as ASCII.
/// (Non-breaking spaces are whitespace, which every level already tolerates.)
fn has_typographic(text: &str) -> bool {
    // Every such character is encoded starting with the byte 0xE2.
    memchr::memchr(0xE2, text.as_bytes()).is_some()
        && text.chars().any(|ch| typographic(ch).is_some())
}

/// `text` with whitespace runs collapsed to one space (and, if `typographic`,
/// punctuation read as ASCII). With `map`, records for each output byte the
/// offset in `text` of the character it came from.
pub(crate) fn normalize(
    text: &str,
    typographic_too: bool,
    mut map: Option<&mut Vec<u32>>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_space = false;
    for (at, ch) in text.char_indices() {
        // Offsets fit: callers only pass a map for texts under 4 GiB.
        let origin = at as u32;
        if ch.is_whitespace() {
            if !in_space {
                out.push(' ');
                if let Some(map) = map.as_deref_mut() {
                    map.push(origin);
                }
            }
            in_space = true;
            continue;
        }
        in_space = false;
        let before = out.len();
        match typographic_too.then(|| typographic(ch)).flatten() {
            Some(ascii) => out.push_str(ascii),
            None => out.push(ch),
        }
        if let Some(map) = map.as_deref_mut() {
            map.extend(std::iter::repeat_n(origin, out.len() - before));
        }
    }
    out
}

fn find_normalized<'a>(text: &str, old: &str, new: &'a str, typographic: bool) -> Vec<Region<'a>> {
    if u32::try_from(text.len()).is_err() {
        return Vec::new();
    }
    let needle = normalize(old, typographic, None);
    if needle.trim().is_empty() {
        return Vec::new();
    }
    let mut map = Vec::with_capacity(text.len());
    let haystack = normalize(text, typographic, Some(&mut map));
    let origin = |index: usize| -> usize {
        if index >= map.len() {
            text.len()
        } else {
            map[index] as usize
        }
    };
    // A match must start and end on whole source characters (not inside the
    // three dots an ellipsis became).
    let whole = |index: usize| index == 0 || index >= map.len() || map[index] != map[index - 1];

    let finder = memmem::Finder::new(needle.as_bytes());
    let bytes = haystack.as_bytes();
    let mut regions = Vec::new();
    let mut from = 0;
    while let Some(at) = finder.find(&bytes[from..]) {
        let start = from + at;
        let end = start + needle.len();
        if whole(start) && whole(end) {
            regions.push(Region {
                start: origin(start),
                end: origin(end),
                replacement: Cow::Borrowed(new),
            });
        }
        from = start + 1;
        if from > bytes.len() {
            break;
        }
    }
    regions
}

fn find_trimmed<'a>(text: &str, old: &str, new: &'a str) -> Vec<Region<'a>> {
    let trimmed = old.trim();
    if trimmed.is_empty() || trimmed.len() == old.len() {
        return Vec::new();
    }
    // Whatever surrounded old_string is dropped from new_string too, when
    // new_string has the same surroundings.
    let lead = &old[..old.len() - old.trim_start().len()];
    let trail = &old[old.trim_end().len()..];
    let new = new.strip_prefix(lead).unwrap_or(new);
    let new = new.strip_suffix(trail).unwrap_or(new);
    let finder = memmem::Finder::new(trimmed.as_bytes());
    let bytes = text.as_bytes();
    let mut regions = Vec::new();
    let mut from = 0;
    while let Some(at) = finder.find(&bytes[from..]) {
        let start = from + at;
        regions.push(Region {
            start,
            end: start + trimmed.len(),
            replacement: Cow::Borrowed(new),
        });
        from = start + 1;
        if from > bytes.len() {
            break;
        }
    }
    regions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, old: &str, new: &str) -> ToolResult<(String, Outcome)> {
        let edit = Edit {
            old,
            new,
            replace_all: false,
        };
        apply(text, &edit, LineEnding::detect(text), "f")
    }

    #[test]
    fn exact_single_and_ambiguous() {
        let (out, outcome) = run("a\nb\nc\n", "b", "B").unwrap();
        assert_eq!(out, "a\nB\nc\n");
        assert_eq!(outcome.lines, vec![2]);
        assert_eq!(outcome.level, None);
        let err = run("aaa", "aa", "b").unwrap_err();
        assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
        assert!(err.message().contains("2 places"), "{}", err.message());
    }

    #[test]
    fn new_string_is_literal() {
        let (out, _) = run("x = 1", "1", "$1 $& \\0").unwrap();
        assert_eq!(out, "x = $1 $& \\0");
    }

    #[test]
    fn indentation_flexible_reindents_new_string() {
        let text = "fn f() {\n    if a {\n        b();\n    }\n}\n";
        let (out, outcome) =
            run(text, "if a {\n    b();\n}", "if a {\n    c();\n    d();\n}").unwrap();
        assert_eq!(
            out,
            "fn f() {\n    if a {\n        c();\n        d();\n    }\n}\n"
        );
        assert_eq!(outcome.level, Some(Level::Indentation));
        assert_eq!(outcome.lines, vec![2]);
    }

    #[test]
    fn trimmed_lines_convert_spaces_to_tabs() {
        let text = "fn f() {\n\tif a {\n\t\tb();  \n\t}\n}\n";
        let (out, outcome) = run(
            text,
            "    if a {\n        b();\n    }",
            "    if a {\n        c();\n    }",
        )
        .unwrap();
        assert_eq!(out, "fn f() {\n\tif a {\n\t\tc();\n\t}\n}\n");
        assert_eq!(outcome.level, Some(Level::TrimmedLines));
    }

    #[test]
    fn collapsed_whitespace_maps_back_to_exact_bytes() {
        let text = "call(a,\n     b,   c);\nnext";
        let (out, outcome) = run(text, "call(a, b, c);", "call(x);").unwrap();
        assert_eq!(out, "call(x);\nnext");
        assert_eq!(outcome.level, Some(Level::Whitespace));
    }

    #[test]
    fn trimmed_substring_drops_the_same_surroundings_from_new() {
        let (out, outcome) = run("let x = f(1);", "\n  f(1)\n", "\n  g(2)\n").unwrap();
        assert_eq!(out, "let x = g(2);");
        assert_eq!(outcome.level, Some(Level::TrimmedSubstring));
    }

    #[test]
    fn typographic_punctuation() {
        let text = "say(\u{201C}it\u{2019}s \u{2014} fine\u{2026}\u{201D});\n";
        let (out, outcome) = run(text, "say(\"it's - fine...\");", "say(\"ok\");").unwrap();
        assert_eq!(out, "say(\"ok\");\n");
        assert_eq!(outcome.level, Some(Level::Typographic));
        // The other way round too.
        let (out, _) = run("a 'b' c", "\u{2018}b\u{2019}", "B").unwrap();
        assert_eq!(out, "a B c");
    }

    #[test]
    fn tolerant_ambiguity_is_an_error() {
        let text = "  x();\n\n    x();\n";
        let err = run(text, "x();\n", "y();\n").unwrap_err();
        // Exact finds two: plain ambiguity.
        assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
        let err = run("\tf(a)\n  f(a)\n", "f( a )", "g").unwrap_err();
        assert_eq!(err.code(), ErrorCode::NoMatch);
        let err = run("a  b\na \tb\n", "a b", "c").unwrap_err();
        assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
        assert!(
            err.message().contains("whitespace-collapsed"),
            "{}",
            err.message()
        );
        assert!(err.message().contains("lines 1, 2"), "{}", err.message());
    }

    #[test]
    fn newlines_are_counted_in_any_length() {
        for len in [0, 1, 63, 64, 65, 64 * 255, 64 * 255 + 1, 100_000] {
            let bytes: Vec<u8> = (0..len)
                .map(|i| if i % 3 == 0 { b'\n' } else { b'x' })
                .collect();
            let expected = bytes.iter().filter(|&&b| b == b'\n').count();
            assert_eq!(count_newlines(&bytes), expected, "{len}");
        }
        assert_eq!(count_newlines(&[b'\n'; 40_000]), 40_000);
    }

    #[test]
    fn line_numbers_of_offsets() {
        let text = "a\nb\nc\n";
        assert_eq!(line_numbers(text, [0, 2, 4, 6]), vec![1, 2, 3, 4]);
    }

    #[test]
    fn reindent_between_detects_unit_conversion() {
        let r = Reindent::between(&["    a", "        b"], &["\ta", "\t\tb"]);
        assert_eq!(
            r.convert,
            Some(Convert {
                width: 4,
                to_tabs: true
            })
        );
        assert_eq!(r.apply("    x\n        y\n      z"), "\tx\n\t\ty\n\t  z");
        let r = Reindent::between(&["\ta", "\t\tb"], &["  a", "    b"]);
        assert_eq!(r.apply("\tx\n\t\ty"), "  x\n    y");
        // A missing base indent and a change of kind at once.
        let r = Reindent::between(&["a {", "    b", "}"], &["\ta {", "\t\tb", "\t}"]);
        assert_eq!(r.apply("a {\n    c\n\n}"), "\ta {\n\t\tc\n\n\t}");
    }
}
