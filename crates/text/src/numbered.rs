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
/// is written here. By hand rather than with `{:>width$}`: a read shows up
/// to thousands of lines, and the formatting machinery cost several times
/// the copy of the line itself.
pub fn push_numbered_line(out: &mut String, number: usize, width: usize, line: &str) {
    // The digits, right-aligned before the tab, then as many spaces as
    // the column still wants in front of them, written from the end.
    let mut prefix = [b' '; 32];
    let mut start = prefix.len() - 1;
    prefix[start] = b'\t';
    let mut rest = number;
    loop {
        start -= 1;
        prefix[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let digits = prefix.len() - 1 - start;
    // Spaces from the buffer when they fit (a column is at most 20 wide
    // for any line number), one by one beyond it.
    let pad = width.saturating_sub(digits);
    let from_buffer = pad.min(start);
    out.reserve(pad + digits + line.len() + 2);
    for _ in from_buffer..pad {
        out.push(' ');
    }
    // Spaces, digits and a tab: ASCII, one char a byte.
    out.extend(
        prefix[start - from_buffer..]
            .iter()
            .map(|&byte| char::from(byte)),
    );
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
