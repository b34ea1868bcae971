//! Output as plain text for a model: terminal escapes dropped, a line
//! rewritten with carriage returns (a progress bar) kept in its last state,
//! and UTF-8 decoded without ever splitting a character.

use vte::{Params, Parser, Perform};

/// Renders `bytes` (a stretch of a job's output) as plain text.
///
/// Printable characters, `\n` and `\t` are kept. `\r` moves back to the
/// start of the line and what follows overwrites it, `\b` steps back one
/// column, and "erase line" (`CSI K`) cuts the line at the cursor, so a
/// progress line shows only its last state. Every other control and escape
/// sequence (colours, cursor moves, titles) is dropped; invalid UTF-8
/// becomes U+FFFD.
pub(crate) fn render(bytes: &[u8]) -> String {
    let mut plain = Plain::default();
    let mut parser = Parser::new();
    parser.advance(&mut plain, bytes);
    plain.finish()
}

#[derive(Default)]
struct Plain {
    out: String,
    line: Vec<char>,
    col: usize,
}

impl Plain {
    fn put(&mut self, c: char) {
        if self.col < self.line.len() {
            self.line[self.col] = c;
        } else {
            self.line.push(c);
        }
        self.col += 1;
    }

    fn end_line(&mut self) {
        self.out.extend(self.line.drain(..));
        self.col = 0;
    }

    fn finish(mut self) -> String {
        self.end_line();
        self.out
    }
}

impl Perform for Plain {
    fn print(&mut self, c: char) {
        self.put(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.end_line();
                self.out.push('\n');
            }
            b'\r' => self.col = 0,
            b'\t' => self.put('\t'),
            0x08 => self.col = self.col.saturating_sub(1),
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, params: &Params, _: &[u8], _: bool, action: char) {
        if action == 'K' {
            let mode = params
                .iter()
                .next()
                .and_then(|p| p.first().copied())
                .unwrap_or(0);
            match mode {
                0 => self.line.truncate(self.col),
                2 => self.line.clear(),
                _ => {}
            }
        }
    }
}

/// How many bytes at the end of `bytes` may belong to an unfinished
/// character or escape sequence, which a read of a running job leaves for
/// the next read rather than show half of.
pub(crate) fn unfinished_tail(bytes: &[u8]) -> usize {
    let utf8 = unfinished_utf8(bytes);
    let escape = unfinished_escape(&bytes[..bytes.len() - utf8]);
    utf8 + escape
}

fn unfinished_utf8(bytes: &[u8]) -> usize {
    // Look back at most three bytes for the lead byte of the last character.
    for back in 1..=bytes.len().min(4) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte
        }
        let needed = match byte {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return 0, // invalid: rendered as U+FFFD, nothing to wait for
        };
        return if back < needed { back } else { 0 };
    }
    0
}

fn unfinished_escape(bytes: &[u8]) -> usize {
    // An escape sequence is short; one still open near the end is held back.
    let window = &bytes[bytes.len().saturating_sub(256)..];
    let Some(esc) = window.iter().rposition(|&b| b == 0x1b) else {
        return 0;
    };
    let seq = &window[esc..];
    let done = match seq.get(1) {
        None => false,
        Some(b'[') => seq[2..].iter().any(|b| (0x40..=0x7E).contains(b)),
        Some(b']' | b'P') => seq.contains(&0x07) || seq.windows(2).any(|w| w == b"\x1b\\"),
        Some(_) => true,
    };
    if done { 0 } else { seq.len() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_go_and_progress_lines_keep_their_last_state() {
        assert_eq!(render(b"\x1b[31mred\x1b[0m plain\n"), "red plain\n");
        assert_eq!(
            render(b"get 10%\rget 55%\rget 100%\r\ndone\n"),
            "get 100%\ndone\n"
        );
        assert_eq!(render(b"abcdef\r\x1b[Kxy\n"), "xy\n");
        assert_eq!(render(b"ab\x08c\tz"), "ac\tz");
        assert_eq!(render(b"\x1b]0;title\x07text"), "text");
        assert_eq!(
            render("caf\u{e9} \u{1f600}\n".as_bytes()),
            "caf\u{e9} \u{1f600}\n"
        );
        assert_eq!(render(b"bad \xff byte"), "bad \u{fffd} byte");
    }

    #[test]
    fn an_unfinished_character_or_escape_is_held_back() {
        let smile = "\u{1f600}".as_bytes();
        for cut in 1..smile.len() {
            let mut bytes = b"ok ".to_vec();
            bytes.extend_from_slice(&smile[..cut]);
            assert_eq!(unfinished_tail(&bytes), cut);
        }
        assert_eq!(unfinished_tail("ok \u{1f600}".as_bytes()), 0);
        assert_eq!(unfinished_tail(b"text\x1b[3"), 3);
        assert_eq!(unfinished_tail(b"text\x1b[31m"), 0);
        assert_eq!(unfinished_tail(b"text\x1b]0;ti"), 6);
        assert_eq!(unfinished_tail(b"text\x1b"), 1);
        assert_eq!(unfinished_tail(b""), 0);
    }
}
