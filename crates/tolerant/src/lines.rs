//! A text cut into lines, and the counting of line breaks.

/// Byte spans of a text's lines.
pub(crate) struct LineTable {
    lines: Vec<LineSpan>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct LineSpan {
    pub start: usize,
    /// End of the content: before `\n` or `\r\n`.
    pub content_end: usize,
    /// After the line break (or the end of the text).
    pub end: usize,
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

    pub(crate) fn span(&self, index: usize) -> LineSpan {
        self.lines[index]
    }

    /// The content of line `index` (0-based), without its line break.
    pub(crate) fn line<'t>(&self, text: &'t str, index: usize) -> &'t str {
        let span = self.lines[index];
        &text[span.start..span.content_end]
    }

    /// The content of lines `first..=last`, line breaks included between them.
    pub(crate) fn block<'t>(&self, text: &'t str, first: usize, last: usize) -> &'t str {
        &text[self.lines[first].start..self.lines[last].content_end]
    }
}

/// The number of `\n` bytes in `bytes`: the one counter of the project
/// (`agent_tools_text::count_newlines`), re-exported for the matcher's users.
pub use agent_tools_text::count_newlines;

/// The 1-based line numbers of sorted byte offsets.
pub fn line_numbers(text: &str, offsets: impl IntoIterator<Item = usize>) -> Vec<usize> {
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

/// A caller's string cut into lines: without its final line break (noted
/// apart), each line without a carriage return before its `\n`.
pub(crate) struct SplitLines<'a> {
    pub lines: Vec<&'a str>,
    pub trailing_break: bool,
}

impl<'a> SplitLines<'a> {
    pub(crate) fn new(text: &'a str) -> SplitLines<'a> {
        let (body, trailing_break) = match text.strip_suffix('\n') {
            Some(body) => (body.strip_suffix('\r').unwrap_or(body), true),
            None => (text, false),
        };
        let lines = body
            .split('\n')
            .map(|line| line.strip_suffix('\r').unwrap_or(line))
            .collect();
        SplitLines {
            lines,
            trailing_break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let table = LineTable::new("a\r\nbb\nc");
        assert_eq!(table.len(), 3);
        assert_eq!(table.line("a\r\nbb\nc", 0), "a");
    }
}
