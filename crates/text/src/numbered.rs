//! The numbered-line view printed by `read_file`.
//!
//! Each line is its number right-aligned in a column at least six wide, a tab,
//! then the line. The tab is a separator the model can tell apart from content
//! because the number column never contains one; a line's own leading tabs
//! follow it unchanged.

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

/// The width of the number column of a view whose last line is
/// `last_line_number`: its digits, and never under six.
pub fn number_width(last_line_number: usize) -> usize {
    let digits = last_line_number.max(1).ilog10() as usize + 1;
    digits.max(MIN_NUMBER_WIDTH)
}

/// Appends one line of the view to `out`: `number` right-aligned in
/// `width` columns, a tab, `line` as given, a newline. Every numbered line
/// is written here, as a few copies of whole strings (the padding from a
/// constant, the digits from `itoa`): a read shows up to thousands of
/// lines, and `{:>width$}`, or pushing the prefix a character at a time,
/// cost several times the copy of the line itself.
pub fn push_numbered_line(out: &mut String, number: usize, width: usize, line: &str) {
    const SPACES: &str = "                                ";
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(number);
    let mut pad = width.saturating_sub(digits.len());
    out.reserve(pad + digits.len() + line.len() + 2);
    while pad > 0 {
        let now = pad.min(SPACES.len());
        out.push_str(&SPACES[..now]);
        pad -= now;
    }
    out.push_str(digits);
    out.push('\t');
    out.push_str(line);
    out.push('\n');
}

impl NumberedLines {
    /// A view whose number column fits `last_line_number`.
    pub fn new(last_line_number: usize) -> Self {
        NumberedLines {
            out: String::new(),
            width: number_width(last_line_number),
        }
    }

    /// Appends line `number`. A trailing `\r` (from a CRLF file) is not shown.
    pub fn push(&mut self, number: usize, line: &str) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        push_numbered_line(&mut self.out, number, self.width, &truncate_line(line));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written line is the one `{:>width$}` would write, for
    /// numbers narrower, as wide as and wider than the column.
    #[test]
    fn a_numbered_line_is_the_formatted_one() {
        for (number, width) in [
            (0, 6),
            (1, 6),
            (9, 1),
            (10, 6),
            (999_999, 6),
            (1_000_000, 6),
            (12_345, 2),
            (usize::MAX, 6),
            (7, 40),
            (usize::MAX, 45),
        ] {
            let mut out = String::from("before\n");
            push_numbered_line(&mut out, number, width, "a\tline");
            assert_eq!(out, format!("before\n{number:>width$}\ta\tline\n"));
        }
        assert_eq!(number_width(0), 6);
        assert_eq!(number_width(999_999), 6);
        assert_eq!(number_width(1_000_000), 7);
    }
}
