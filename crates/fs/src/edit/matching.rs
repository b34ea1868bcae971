//! Where an edit applies: the exact match first, then the tolerant matcher
//! of [`crate::tolerant`], which applies only when it is certain.

use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_text::LineEnding;
use memchr::memmem;

use super::hint;
use crate::tolerant::{self, Candidate, Lines, Rewritten, Verdict};

pub(crate) use crate::tolerant::line_numbers;
pub(crate) use agent_tools_text::count_newlines;

/// How many replacement lines a message lists before summarising.
const LISTED: usize = 10;
/// Lines of the file shown before and after a tolerant replacement.
const SHOWN_LINES: usize = 6;
/// Characters of a shown line kept.
const SHOWN_WIDTH: usize = 160;

/// Where a line of the text an edit works on was in the file as read:
/// the same for edit_file; for a later edit of multi_edit, before the
/// earlier edits of the call moved or rewrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Origin {
    /// 1-based line in the file as read.
    pub line: usize,
    /// The 0-based index of the earlier edit of the call that wrote this
    /// line, if one did.
    pub written_by: Option<usize>,
}

/// Maps lines of the text being edited to the file as read.
pub(crate) type LineOrigin<'a> = &'a dyn Fn(usize) -> Origin;

/// The identity: edit_file, or the first edit of a multi_edit.
pub(crate) fn same_line(line: usize) -> Origin {
    Origin {
        line,
        written_by: None,
    }
}

/// `line 4` / `lines 4-9` in the file as read, with a note when an earlier
/// edit of the call wrote them.
pub(crate) fn name_lines(lines: Lines, origin: LineOrigin<'_>) -> String {
    let (first, last) = (origin(lines.first), origin(lines.last));
    let named = Lines {
        first: first.line,
        last: last.line.max(first.line),
    };
    match first.written_by.or(last.written_by) {
        Some(edit) => format!("{named} (text written by edit {} of this call)", edit + 1),
        None => named.to_string(),
    }
}

/// A tolerant replacement, described for the caller to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tolerant {
    pub lines: Lines,
    pub tolerated: Vec<String>,
    /// What of new_string was written the file's way.
    pub rewritten: Vec<Rewritten>,
    pub before: String,
    pub after: String,
}

/// A replacement, in the lines of the text it applied to: it starts at
/// line `at`, and took out `removed` line breaks and put in `added`.
/// `at` is counted after the replacements of the same edit before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Change {
    pub at: usize,
    pub removed: usize,
    pub added: usize,
}

/// What one edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Number of replacements.
    pub count: usize,
    /// 1-based lines (in the file as read) of the first replacements, at
    /// most [`LISTED`].
    pub lines: Vec<usize>,
    /// Set when the tolerant matcher found the place.
    pub tolerant: Option<Tolerant>,
    /// The replacements, for mapping lines of later edits back.
    pub changes: Vec<Change>,
}

impl Outcome {
    /// `1 replacement at line 12`, `3 replacements at lines 4, 9, 20`; for
    /// a tolerant match, what differed and the lines before and after.
    pub(crate) fn describe(&self) -> String {
        if let Some(tolerant) = &self.tolerant {
            let mut out = format!(
                "1 replacement at {}, matched tolerantly (old_string did not match exactly: {})",
                tolerant.lines,
                tolerant.tolerated.join("; ")
            );
            if !tolerant.rewritten.is_empty() {
                out.push_str(&format!(
                    "; new_string was written as the file writes it: {}",
                    tolerant
                        .rewritten
                        .iter()
                        .map(Rewritten::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            out.push_str("; the file's lines were, and now are:");
            push_shown(&mut out, '-', &tolerant.before);
            push_shown(&mut out, '+', &tolerant.after);
            return out;
        }
        if self.count == 1 {
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
        }
    }
}

fn push_shown(out: &mut String, mark: char, text: &str) {
    let lines: Vec<&str> = text.split('\n').collect();
    for line in lines.iter().take(SHOWN_LINES) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push('\n');
        out.push(mark);
        out.push(' ');
        match line.char_indices().nth(SHOWN_WIDTH) {
            Some((cut, _)) => {
                out.push_str(&line[..cut]);
                out.push_str(" [...]");
            }
            None => out.push_str(line),
        }
    }
    if lines.len() > SHOWN_LINES {
        out.push_str(&format!("\n{mark} [{} more]", lines.len() - SHOWN_LINES));
    }
}

/// `4, 9, 20` or `4, 9, ... and 37 more`.
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

/// Where the edit works and what it may produce.
pub(crate) struct Context<'a> {
    /// The file's name in messages.
    pub path: &'a str,
    /// The file's dominant line ending.
    pub ending: LineEnding,
    /// The largest result allowed, in bytes (without a byte-order mark).
    pub max_bytes: u64,
    /// Lines of the text in the file as read.
    pub origin: LineOrigin<'a>,
}

/// `too_large` when a result of `size` bytes would pass the limit.
pub(crate) fn check_size(size: u128, context: &Context<'_>, what: &str) -> ToolResult<()> {
    if size > u128::from(context.max_bytes) {
        return Err(ToolError::new(
            ErrorCode::TooLarge,
            format!(
                "{}: {what} would make the file {size} bytes, over the {} byte limit for editing; nothing was changed",
                context.path, context.max_bytes
            ),
        ));
    }
    Ok(())
}

/// The size of `len` bytes after `count` replacements of `old` bytes by
/// `new` bytes.
pub(crate) fn size_after(len: usize, count: usize, old: usize, new: usize) -> u128 {
    (len as u128 + count as u128 * new as u128).saturating_sub(count as u128 * old as u128)
}

/// Applies `edit` to `text`.
pub(crate) fn apply(
    text: &str,
    edit: &Edit<'_>,
    context: &Context<'_>,
) -> ToolResult<(String, Outcome)> {
    let path = context.path;
    // Written with LF (or CRLF) by the caller, matched and written with the
    // file's own ending. If that finds nothing, the strings as given get a try
    // too, for files that mix endings.
    let old = context.ending.apply(edit.old);
    let new = context.ending.apply(edit.new);
    let mut tries: Vec<(&str, &str)> = vec![(&old, &new)];
    if *old != *edit.old {
        tries.push((edit.old, edit.new));
    }

    if edit.replace_all {
        for &(old, new) in &tries {
            let finder = memmem::Finder::new(old.as_bytes());
            let count = finder.find_iter(text.as_bytes()).count();
            if count == 0 {
                continue;
            }
            // Checked before the result is built, which could be huge.
            check_size(
                size_after(text.len(), count, old.len(), new.len()),
                context,
                &format!("replacing all {count} occurrences"),
            )?;
            let starts: Vec<usize> = finder.find_iter(text.as_bytes()).collect();
            let out = splice_all(text, starts.iter().map(|&s| (s, s + old.len())), new);
            let all_lines = line_numbers(text, starts.iter().copied());
            let (removed, added) = (
                count_newlines(old.as_bytes()),
                count_newlines(new.as_bytes()),
            );
            let mut shift = 0isize;
            let changes = all_lines
                .iter()
                .map(|&at| {
                    let change = Change {
                        at: (at as isize + shift) as usize,
                        removed,
                        added,
                    };
                    shift += added as isize - removed as isize;
                    change
                })
                .collect();
            let lines = all_lines
                .iter()
                .take(LISTED)
                .map(|&l| (context.origin)(l).line)
                .collect();
            return Ok((
                out,
                Outcome {
                    count,
                    lines,
                    tolerant: None,
                    changes,
                },
            ));
        }
        return Err(no_match(text, &old, context, true, None));
    }

    for &(old, new) in &tries {
        let found = find_overlapping(text, old);
        match found.count {
            0 => continue,
            1 => {
                let start = found.first[0];
                check_size(
                    size_after(text.len(), 1, old.len(), new.len()),
                    context,
                    "the replacement",
                )?;
                let out = splice_all(text, [(start, start + old.len())], new);
                let line = line_numbers(text, [start])[0];
                return Ok((
                    out,
                    Outcome {
                        count: 1,
                        lines: vec![(context.origin)(line).line],
                        tolerant: None,
                        changes: vec![Change {
                            at: line,
                            removed: count_newlines(old.as_bytes()),
                            added: count_newlines(new.as_bytes()),
                        }],
                    },
                ));
            }
            count => {
                let height = count_newlines(old.trim_end_matches('\n').as_bytes());
                let regions: Vec<String> = line_numbers(text, found.first.iter().copied())
                    .into_iter()
                    .map(|first| {
                        name_lines(
                            Lines {
                                first,
                                last: first + height,
                            },
                            context.origin,
                        )
                    })
                    .collect();
                let more = if count > regions.len() {
                    format!(" and {} more", count - regions.len())
                } else {
                    String::new()
                };
                return Err(ToolError::new(
                    ErrorCode::AmbiguousMatch,
                    format!(
                        "{path}: old_string matches {count} places ({}{more}); include more surrounding lines to make it unique, or set replace_all to change every occurrence",
                        regions.join(", ")
                    ),
                ));
            }
        }
    }

    match tolerant::locate(text, &old, &new, context.ending.as_str()) {
        Verdict::Unique(found) => {
            check_size(
                size_after(text.len(), 1, found.range.len(), found.replacement.len()),
                context,
                "the replacement",
            )?;
            let out = found.apply(text);
            let change = Change {
                at: found.lines.first,
                removed: count_newlines(text[found.range.clone()].as_bytes()),
                added: count_newlines(found.replacement.as_bytes()),
            };
            let origin_first = (context.origin)(found.lines.first).line;
            let lines = Lines {
                first: origin_first,
                last: (context.origin)(found.lines.last).line.max(origin_first),
            };
            Ok((
                out,
                Outcome {
                    count: 1,
                    lines: vec![origin_first],
                    tolerant: Some(Tolerant {
                        lines,
                        tolerated: found.tolerated,
                        rewritten: found.rewritten,
                        before: found.before,
                        after: found.after,
                    }),
                    changes: vec![change],
                },
            ))
        }
        Verdict::Ambiguous {
            matches,
            total,
            near,
        } => Err(ambiguous(&matches, total, &near, (text, &old), context)),
        Verdict::NotFound { close } => Err(no_match(text, &old, context, false, Some(close))),
    }
}

fn describe_candidate(
    candidate: &Candidate,
    text: &str,
    old: &str,
    context: &Context<'_>,
) -> String {
    let mut out = name_lines(candidate.lines, context.origin);
    if !candidate.matched {
        out.push_str(&format!(", {:.0}% similar", candidate.similarity * 100.0));
    }
    out.push_str(": ");
    out.push_str(&hint::how_it_differs(
        old,
        &text[candidate.range.clone()],
        candidate,
    ));
    out
}

fn ambiguous(
    matches: &[Candidate],
    total: usize,
    near: &[Candidate],
    (text, old): (&str, &str),
    context: &Context<'_>,
) -> ToolError {
    let describe = |m: &Candidate| describe_candidate(m, text, old, context);
    let path = context.path;
    let mut message = if near.is_empty() {
        let more = if total > matches.len() {
            format!("\n- and {} more", total - matches.len())
        } else {
            String::new()
        };
        format!(
            "{path}: old_string does not match exactly, and tolerant matching finds it in {total} places; nothing was changed. Copy old_string from the region you mean exactly, with enough surrounding lines to make it unique:\n- {}{more}",
            matches
                .iter()
                .map(describe)
                .collect::<Vec<_>>()
                .join("\n- ")
        )
    } else {
        format!(
            "{path}: old_string does not match exactly. Tolerant matching finds it at {} only, but {} other region{} close, and may be the one you meant (changed since you read it?); nothing was changed. Copy old_string exactly from the region you mean:\n- {}\n- {}",
            name_lines(matches[0].lines, context.origin),
            near.len(),
            if near.len() == 1 { " comes" } else { "s come" },
            describe(&matches[0]),
            near.iter().map(describe).collect::<Vec<_>>().join("\n- ")
        )
    };
    message.truncate(message.trim_end().len());
    ToolError::new(ErrorCode::AmbiguousMatch, message)
}

fn no_match(
    text: &str,
    old: &str,
    context: &Context<'_>,
    replace_all: bool,
    close: Option<Vec<Candidate>>,
) -> ToolError {
    let path = context.path;
    let headline = if replace_all {
        format!("{path}: old_string was not found (replace_all matches exactly only)")
    } else {
        format!("{path}: old_string was not found, exactly or with tolerant matching")
    };
    let close = close.unwrap_or_else(|| closest(text, old));
    let mut message = headline;
    for note in hint::no_match_notes(text, old, &close, context) {
        message.push('\n');
        message.push_str(&note);
    }
    ToolError::new(ErrorCode::NoMatch, message)
}

/// The regions of `text` that match `old` tolerantly or come close to it,
/// best first.
pub(crate) fn closest(text: &str, old: &str) -> Vec<Candidate> {
    match tolerant::locate(text, old, "", "\n") {
        Verdict::NotFound { close } => close,
        Verdict::Ambiguous { matches, near, .. } => matches.into_iter().chain(near).collect(),
        Verdict::Unique(found) => vec![Candidate {
            lines: found.lines,
            range: found.range,
            similarity: 1.0,
            matched: true,
            differences: found.tolerated,
            differing_lines: Vec::new(),
        }],
    }
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

/// `text` with each (sorted, disjoint) byte range replaced by `new`, in
/// one pass and one allocation (`str::replace` searches again and grows
/// its buffer as it goes: several times slower on a large file).
pub fn splice_all(
    text: &str,
    regions: impl IntoIterator<Item = (usize, usize)>,
    new: &str,
) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, old: &str, new: &str) -> ToolResult<(String, Outcome)> {
        run_limited(text, old, new, false, u64::MAX)
    }

    fn run_limited(
        text: &str,
        old: &str,
        new: &str,
        replace_all: bool,
        max_bytes: u64,
    ) -> ToolResult<(String, Outcome)> {
        let edit = Edit {
            old,
            new,
            replace_all,
        };
        let context = Context {
            path: "f",
            ending: LineEnding::detect(text),
            max_bytes,
            origin: &same_line,
        };
        apply(text, &edit, &context)
    }

    #[test]
    fn exact_single_and_ambiguous() {
        let (out, outcome) = run("a\nb\nc\n", "b", "B").unwrap();
        assert_eq!(out, "a\nB\nc\n");
        assert_eq!(outcome.lines, vec![2]);
        assert_eq!(outcome.tolerant, None);
        let err = run("aaa", "aa", "b").unwrap_err();
        assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
        assert!(
            err.message().contains("2 places (line 1, line 1)"),
            "{}",
            err.message()
        );
        let err = run("a\nb\na\nb\n", "a\nb", "c").unwrap_err();
        assert!(
            err.message().contains("(lines 1-2, lines 3-4)"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn new_string_is_literal() {
        let (out, _) = run("x = 1", "1", "$1 $& \\0").unwrap();
        assert_eq!(out, "x = $1 $& \\0");
    }

    #[test]
    fn tolerant_match_reindents_and_says_what_it_replaced() {
        let text = "fn f() {\n    if a {\n        b();\n    }\n}\n";
        let (out, outcome) =
            run(text, "if a {\n    b();\n}", "if a {\n    c();\n    d();\n}").unwrap();
        assert_eq!(
            out,
            "fn f() {\n    if a {\n        c();\n        d();\n    }\n}\n"
        );
        let tolerant = outcome.tolerant.clone().unwrap();
        assert_eq!(tolerant.lines.to_string(), "lines 2-4");
        let described = outcome.describe();
        assert!(described.contains("\n-         b();\n"), "{described}");
        assert!(described.contains("\n+         d();\n"), "{described}");
    }

    #[test]
    fn replace_all_is_refused_before_the_result_grows_past_the_limit() {
        let text = "a".repeat(1000);
        let big = "B".repeat(1000);
        let err = run_limited(&text, "a", &big, true, 100_000).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TooLarge);
        assert!(err.message().contains("1000000 bytes"), "{}", err.message());
        // Within the limit it applies.
        let (out, outcome) = run_limited(&text, "a", "bb", true, 2000).unwrap();
        assert_eq!((out.len(), outcome.count), (2000, 1000));
        let err = run_limited("x", "x", &big, false, 100).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TooLarge);
    }
}
