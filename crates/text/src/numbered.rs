//! The numbered-line view printed by `read_file`.
//!
//! Each line is its number right-aligned in a column at least six wide, a tab,
//! then the line. The tab is a separator the model can tell apart from content
//! because the number column never contains one; a line's own leading tabs
//! follow it unchanged.

use std::fmt::Write as _;

/// Lines longer than this many characters are cut in the view.
pub const MAX_LINE_CHARS: usize = 2000;

/// Appended to a cut line; the number says how many characters were dropped.
pub const LINE_TRUNCATED_MARKER: &str = "… [line truncated:";

const MIN_NUMBER_WIDTH: usize = 6;

/// Cuts `line` to [`MAX_LINE_CHARS`] characters, appending a marker that says
/// how many were dropped.
pub fn truncate_line(line: &str) -> std::borrow::Cow<'_, str> {
    // Fast path: a line of at most MAX_LINE_CHARS bytes has at most that many chars.
    if line.len() <= MAX_LINE_CHARS {
        return std::borrow::Cow::Borrowed(line);
    }
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None => std::borrow::Cow::Borrowed(line),
        Some((cut, _)) => {
            let dropped = line[cut..].chars().count();
            std::borrow::Cow::Owned(format!(
                "{}{LINE_TRUNCATED_MARKER} {dropped} more characters]",
                &line[..cut]
            ))
        }
    }
}

/// Builds the numbered view incrementally.
#[derive(Debug)]
pub struct NumberedLines {
    out: String,
    width: usize,
}

impl NumberedLines {
    /// A view whose number column fits `last_line_number`.
    pub fn new(last_line_number: usize) -> Self {
        let digits = last_line_number.max(1).ilog10() as usize + 1;
        NumberedLines {
            out: String::new(),
            width: digits.max(MIN_NUMBER_WIDTH),
        }
    }

    /// Appends line `number`. A trailing `\r` (from a CRLF file) is not shown.
    pub fn push(&mut self, number: usize, line: &str) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = truncate_line(line);
        // Writing to a String cannot fail.
        let _ = writeln!(self.out, "{number:>width$}\t{line}", width = self.width);
    }

    /// The view so far.
    pub fn as_str(&self) -> &str {
        &self.out
    }

    /// The finished view.
    pub fn finish(self) -> String {
        self.out
    }
}

/// Numbers `lines`, the first being `first_line_number`, with a column wide
/// enough for `last_line_number`.
pub fn number_lines<'a>(
    lines: impl Iterator<Item = &'a str>,
    first_line_number: usize,
    last_line_number: usize,
) -> String {
    let mut view = NumberedLines::new(last_line_number);
    for (index, line) in lines.enumerate() {
        view.push(first_line_number + index, line);
    }
    view.finish()
}
