//! The loose reading of a line, which tolerant matching compares: Unicode
//! NFC, typographic punctuation read as ASCII, invisible characters dropped,
//! every whitespace run one space, no whitespace at either end.

use std::hash::{DefaultHasher, Hasher};

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::canonical_combining_class;

/// The ASCII reading of a typographic character.
pub(crate) fn typographic(ch: char) -> Option<&'static str> {
    Some(match ch {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => "\"",
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => "-",
        '\u{2026}' => "...",
        _ => return None,
    })
}

/// Characters that take no room on screen and are dropped: zero-width
/// spaces and joiners, the word joiner, a byte-order mark inside the text,
/// the soft hyphen.
pub(crate) fn invisible(ch: char) -> bool {
    matches!(
        ch,
        '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}'
    )
}

/// A loose line with, for each of its bytes, the source bytes it came from.
#[derive(Debug, Default)]
pub(crate) struct Loose {
    pub text: String,
    /// Where in the source line the character (or character with its
    /// combining marks, or whitespace run) each byte of `text` came from
    /// starts.
    pub spans: Vec<u32>,
    /// Where the source each byte of `text` came from ends (recorded with
    /// `spans`).
    pub ends: Vec<u32>,
    /// Where the source of the last byte of `text` ends.
    pub end: u32,
}

impl Loose {
    /// Reads `line` loosely into `self` (its old content is dropped). With
    /// `spans`, records where each byte came from (lines over 4 GiB are
    /// never given spans: the caller's files are far smaller).
    pub(crate) fn read(&mut self, line: &str, spans: bool) {
        self.text.clear();
        self.spans.clear();
        self.ends.clear();
        self.end = 0;
        let mut pending_space: Option<(u32, u32)> = None;
        let bytes = line.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let byte = bytes[at];
            // The cluster: one ASCII byte, or a character and its combining marks.
            let next_ascii = bytes.get(at + 1).is_none_or(u8::is_ascii);
            let (end, ascii) = if byte.is_ascii() && next_ascii {
                (at + 1, true)
            } else {
                let mut chars = line[at..].char_indices();
                chars.next();
                let mut end = line.len();
                for (offset, ch) in chars {
                    if canonical_combining_class(ch) == 0 {
                        end = at + offset;
                        break;
                    }
                }
                (end, false)
            };
            let span = (at as u32, end as u32);
            if ascii {
                if byte.is_ascii_whitespace() || byte == 0x0B {
                    pending_space = Some(pending_space.map_or(span, |(s, _)| (s, span.1)));
                } else {
                    self.flush_space(&mut pending_space, spans);
                    self.text.push(byte as char);
                    if spans {
                        self.spans.push(span.0);
                        self.ends.push(span.1);
                    }
                    self.end = span.1;
                }
            } else {
                for ch in line[at..end].nfc() {
                    if ch.is_whitespace() {
                        pending_space = Some(pending_space.map_or(span, |(s, _)| (s, span.1)));
                        continue;
                    }
                    if invisible(ch) {
                        continue;
                    }
                    self.flush_space(&mut pending_space, spans);
                    let before = self.text.len();
                    match typographic(ch) {
                        Some(ascii) => self.text.push_str(ascii),
                        None => self.text.push(ch),
                    }
                    if spans {
                        let added = self.text.len() - before;
                        self.spans.extend(std::iter::repeat_n(span.0, added));
                        self.ends.extend(std::iter::repeat_n(span.1, added));
                    }
                    self.end = span.1;
                }
            }
            at = end;
        }
    }

    fn flush_space(&mut self, pending: &mut Option<(u32, u32)>, spans: bool) {
        if let Some(span) = pending.take()
            && !self.text.is_empty()
        {
            self.text.push(' ');
            if spans {
                self.spans.push(span.0);
                self.ends.push(span.1);
            }
        }
    }
}

/// The loose reading of `line`.
pub(crate) fn loose(line: &str) -> String {
    let mut out = Loose::default();
    out.read(line, false);
    out.text
}

/// A hash of a loose line (0 is kept for blank lines).
pub(crate) fn key_hash(loose: &str) -> u64 {
    if loose.is_empty() {
        return 0;
    }
    let mut hasher = DefaultHasher::new();
    hasher.write(loose.as_bytes());
    hasher.finish() | 1
}

/// True for characters of identifiers and numbers, which a tolerant match
/// inside a line must not cut through.
pub(crate) fn is_word(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_reading() {
        assert_eq!(loose("  a  =\t1  "), "a = 1");
        assert_eq!(
            loose("\u{201C}it\u{2019}s\u{201D} \u{2014} ok\u{2026}"),
            "\"it's\" - ok..."
        );
        assert_eq!(loose("caf\u{65}\u{301}"), "caf\u{e9}");
        assert_eq!(loose("a\u{a0}b\u{200b}c"), "a bc");
        assert_eq!(loose("   "), "");
    }

    #[test]
    fn spans_point_at_source_bytes() {
        let mut out = Loose::default();
        let line = " x\u{a0}\u{a0}e\u{301}\u{2026}";
        out.read(line, true);
        assert_eq!(out.text, "x \u{e9}...");
        assert_eq!(out.spans, vec![1, 2, 6, 6, 9, 9, 9]);
        assert_eq!(out.ends, vec![2, 6, 9, 9, 12, 12, 12]);
        assert_eq!(out.end, line.len() as u32);
    }
}
