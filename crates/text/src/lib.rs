//! Text handling for agent-tools: how the file tools turn bytes into text and back.
//!
//! - [`Encoding`] and [`decode`]: UTF-8, UTF-8 with a byte-order mark, and
//!   UTF-16 LE/BE with a byte-order mark; [`looks_binary`] for everything else.
//! - [`count_newlines`] and [`LineBreaks`]: the one way line breaks are
//!   counted; [`LineEnding`]: which ending a text uses (the rule is
//!   [`LineBreaks::dominant`]), and converting an LF-written snippet to it,
//!   so an edit keeps a CRLF file CRLF.
//! - [`TextFile`]: a faithful round trip, `bytes -> text -> bytes`, keeping the
//!   BOM and the encoding.
//! - [`truncate_utf8`]: cutting a string to a byte budget without splitting a
//!   character; [`utf8_boundary`] and [`utf8_char_start`]: the same at the
//!   end and at the start of raw bytes.
//! - [`NumberedLines`]: the `cat -n`-like view that `read_file` prints.
//!
//! ```
//! use agent_tools_text::{LineEnding, TextFile, number_lines};
//!
//! let bytes = b"\xEF\xBB\xBFfirst\r\nsecond\r\n";
//! let file = TextFile::decode(bytes).unwrap();
//! assert_eq!(file.text, "first\r\nsecond\r\n");
//! assert_eq!(file.line_ending(), LineEnding::CrLf);
//! assert_eq!(file.encode().unwrap(), bytes); // BOM and CRLF survive
//!
//! let view = number_lines(["first", "second"].into_iter(), 1, 2);
//! assert_eq!(view, "     1\tfirst\n     2\tsecond\n");
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::fmt;

mod numbered;

pub use numbered::{
    LINE_TRUNCATED_MARKER, MAX_LINE_CHARS, NumberedLines, number_lines, number_width,
    push_numbered_line, truncate_line,
};

/// How many leading bytes [`looks_binary`] inspects.
pub const BINARY_SNIFF_BYTES: usize = 8192;

/// The encoding a file was decoded from, and will be encoded back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// UTF-8 without a byte-order mark.
    Utf8,
    /// UTF-8 starting with `EF BB BF`.
    Utf8Bom,
    /// UTF-16 little-endian starting with `FF FE`.
    Utf16Le,
    /// UTF-16 big-endian starting with `FE FF`.
    Utf16Be,
}

impl Encoding {
    /// Detects the encoding from a byte-order mark; no mark means UTF-8.
    pub fn sniff(bytes: &[u8]) -> Encoding {
        if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
            Encoding::Utf8Bom
        } else if bytes.starts_with(&[0xFF, 0xFE]) {
            Encoding::Utf16Le
        } else if bytes.starts_with(&[0xFE, 0xFF]) {
            Encoding::Utf16Be
        } else {
            Encoding::Utf8
        }
    }

    /// The byte-order mark written before the text.
    pub fn bom(self) -> &'static [u8] {
        match self {
            Encoding::Utf8 => &[],
            Encoding::Utf8Bom => &[0xEF, 0xBB, 0xBF],
            Encoding::Utf16Le => &[0xFF, 0xFE],
            Encoding::Utf16Be => &[0xFE, 0xFF],
        }
    }

    /// True for the two UTF-16 variants.
    pub fn is_utf16(self) -> bool {
        matches!(self, Encoding::Utf16Le | Encoding::Utf16Be)
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf8Bom => "UTF-8 with BOM",
            Encoding::Utf16Le => "UTF-16LE",
            Encoding::Utf16Be => "UTF-16BE",
        })
    }
}

/// Why bytes could not be decoded as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes look binary (a NUL byte near the start, without a UTF-16 BOM).
    Binary,
    /// The bytes claim an encoding but are not valid in it.
    Invalid {
        /// The encoding the bytes claimed.
        encoding: Encoding,
        /// Byte offset of the first invalid sequence, after the BOM.
        offset: usize,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Binary => f.write_str("the file appears to be binary"),
            DecodeError::Invalid { encoding, offset } => {
                write!(
                    f,
                    "the file is not valid {encoding} (first bad byte at offset {offset})"
                )
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// True when `bytes` look binary: a NUL byte within the first
/// [`BINARY_SNIFF_BYTES`], unless a UTF-16 byte-order mark explains the zeros.
/// Bytes that start with a UTF-16 mark must then decode plausibly within
/// that window (see [`implausible_utf16`]): two bytes of `FF FE` in front of
/// a binary file do not make it text.
///
/// This is the test git and ripgrep use; it never reads past the sniff window,
/// so it is cheap on large files.
pub fn looks_binary(bytes: &[u8]) -> bool {
    let window = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    let encoding = Encoding::sniff(bytes);
    if encoding.is_utf16() {
        return implausible_utf16(&window[2..], encoding);
    }
    window.contains(&0)
}

/// True when a UTF-16 body (the BOM removed) cannot be text: it holds a NUL
/// code unit (U+0000, as a NUL byte is in UTF-8), an unpaired surrogate
/// (one cut by the end of the window excepted), or more than one character
/// in eight that is a control character other than tab, line feed,
/// carriage return and form feed. Random bytes fail the surrogate test
/// almost at once (one unit in 32 is a surrogate); a UTF-32 file (`FF FE 00
/// 00`) fails the NUL test.
pub fn implausible_utf16(body: &[u8], encoding: Encoding) -> bool {
    let big_endian = encoding == Encoding::Utf16Be;
    let units = body.chunks_exact(2).map(|pair| {
        if big_endian {
            u16::from_be_bytes([pair[0], pair[1]])
        } else {
            u16::from_le_bytes([pair[0], pair[1]])
        }
    });
    let mut chars = 0usize;
    let mut controls = 0usize;
    let mut pending_high = false;
    for unit in units {
        if pending_high {
            pending_high = false;
            if (0xDC00..=0xDFFF).contains(&unit) {
                chars += 1;
                continue;
            }
            return true;
        }
        match unit {
            0 => return true,
            0xD800..=0xDBFF => pending_high = true,
            0xDC00..=0xDFFF => return true,
            _ => {
                chars += 1;
                let control = unit < 0x20 && !matches!(unit, 0x09 | 0x0A | 0x0C | 0x0D)
                    || (0x7F..=0x9F).contains(&unit);
                controls += usize::from(control);
            }
        }
    }
    controls * 8 > chars
}

/// Decodes `bytes` strictly: binary or invalid input is an error.
pub fn decode(bytes: &[u8]) -> Result<(String, Encoding), DecodeError> {
    if looks_binary(bytes) {
        return Err(DecodeError::Binary);
    }
    let encoding = Encoding::sniff(bytes);
    let body = &bytes[encoding.bom().len()..];
    let text = match encoding {
        Encoding::Utf8 | Encoding::Utf8Bom => match std::str::from_utf8(body) {
            Ok(text) => text.to_owned(),
            Err(err) => {
                return Err(DecodeError::Invalid {
                    encoding,
                    offset: err.valid_up_to(),
                });
            }
        },
        Encoding::Utf16Le | Encoding::Utf16Be => decode_utf16(body, encoding)?,
    };
    Ok((text, encoding))
}

/// Decodes `bytes` for display: like [`decode`], but invalid sequences become
/// U+FFFD instead of failing. Binary input is still an error. The flag says
/// whether anything was replaced.
pub fn decode_lossy(bytes: &[u8]) -> Result<(String, Encoding, bool), DecodeError> {
    match decode(bytes) {
        Ok((text, encoding)) => Ok((text, encoding, false)),
        Err(DecodeError::Binary) => Err(DecodeError::Binary),
        Err(DecodeError::Invalid { encoding, .. }) => {
            let body = &bytes[encoding.bom().len()..];
            let text = match encoding {
                Encoding::Utf8 | Encoding::Utf8Bom => String::from_utf8_lossy(body).into_owned(),
                Encoding::Utf16Le | Encoding::Utf16Be => {
                    char::decode_utf16(utf16_units(body, encoding))
                        .map(|unit| unit.unwrap_or(char::REPLACEMENT_CHARACTER))
                        .collect()
                }
            };
            Ok((text, encoding, true))
        }
    }
}

fn utf16_units(body: &[u8], encoding: Encoding) -> impl Iterator<Item = u16> + '_ {
    let big_endian = encoding == Encoding::Utf16Be;
    // An odd trailing byte cannot form a unit; it becomes one invalid unit
    // (0xD800 alone is an unpaired surrogate) so strict decoding fails on it.
    let tail = (body.len() % 2 == 1).then_some(0xD800u16);
    body.chunks_exact(2)
        .map(move |pair| {
            if big_endian {
                u16::from_be_bytes([pair[0], pair[1]])
            } else {
                u16::from_le_bytes([pair[0], pair[1]])
            }
        })
        .chain(tail)
}

fn decode_utf16(body: &[u8], encoding: Encoding) -> Result<String, DecodeError> {
    let mut text = String::with_capacity(body.len() / 2);
    for (index, unit) in char::decode_utf16(utf16_units(body, encoding)).enumerate() {
        match unit {
            Ok(ch) => text.push(ch),
            Err(_) => {
                return Err(DecodeError::Invalid {
                    encoding,
                    offset: index * 2,
                });
            }
        }
    }
    Ok(text)
}

/// The number of `\n` bytes in `bytes` (a CRLF counts once), at memory
/// speed. Every line count and line number in agent-tools comes from here.
pub fn count_newlines(bytes: &[u8]) -> usize {
    bytecount::count(bytes, b'\n')
}

/// A text's line breaks: how many, and how many of them are CRLF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineBreaks {
    /// Every `\n`, a CRLF's included.
    pub all: usize,
    /// The `\n`s that follow a `\r`.
    pub crlf: usize,
}

impl LineBreaks {
    /// Counts the line breaks of `bytes`.
    pub fn count(bytes: &[u8]) -> LineBreaks {
        LineBreaks {
            all: count_newlines(bytes),
            crlf: memchr::memmem::find_iter(bytes, b"\r\n").count(),
        }
    }

    /// The line-ending rule: CRLF when at least half of the breaks are CRLF,
    /// LF otherwise (including a text without any break).
    pub fn dominant(self) -> LineEnding {
        if self.crlf > 0 && self.crlf >= self.all - self.crlf {
            LineEnding::CrLf
        } else {
            LineEnding::Lf
        }
    }

    /// Whether there are breaks and every one is CRLF.
    pub fn all_crlf(self) -> bool {
        self.crlf > 0 && self.crlf == self.all
    }
}

/// The line ending a text uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LineEnding {
    /// `\n`.
    Lf,
    /// `\r\n`.
    CrLf,
}

impl LineEnding {
    /// The dominant ending of `text`: CRLF when at least half of its line breaks
    /// are CRLF, LF otherwise (including a text without any break).
    pub fn detect(text: &str) -> LineEnding {
        LineBreaks::count(text.as_bytes()).dominant()
    }

    /// The ending itself.
    pub fn as_str(self) -> &'static str {
        match self {
            LineEnding::Lf => "\n",
            LineEnding::CrLf => "\r\n",
        }
    }

    /// Rewrites every line break of `text` with this ending. A lone `\r` is
    /// left alone.
    pub fn apply<'a>(self, text: &'a str) -> Cow<'a, str> {
        match self {
            LineEnding::Lf => {
                if text.contains("\r\n") {
                    Cow::Owned(text.replace("\r\n", "\n"))
                } else {
                    Cow::Borrowed(text)
                }
            }
            LineEnding::CrLf => {
                let breaks = LineBreaks::count(text.as_bytes());
                let bare = breaks.all - breaks.crlf;
                if bare == 0 {
                    return Cow::Borrowed(text);
                }
                let mut out = String::with_capacity(text.len() + bare);
                let mut previous = '\0';
                for ch in text.chars() {
                    if ch == '\n' && previous != '\r' {
                        out.push('\r');
                    }
                    out.push(ch);
                    previous = ch;
                }
                Cow::Owned(out)
            }
        }
    }
}

/// A decoded text file that remembers how to turn back into the same bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    /// The text, without the BOM, with its line endings untouched.
    pub text: String,
    /// The encoding (and BOM) to write back.
    pub encoding: Encoding,
}

impl TextFile {
    /// Decodes `bytes` strictly (see [`decode`]).
    pub fn decode(bytes: &[u8]) -> Result<TextFile, DecodeError> {
        let (text, encoding) = decode(bytes)?;
        Ok(TextFile { text, encoding })
    }

    /// The dominant line ending of the text.
    pub fn line_ending(&self) -> LineEnding {
        LineEnding::detect(&self.text)
    }

    /// Encodes the text back with the BOM and encoding it came with.
    ///
    /// Fails only for UTF-16, which the editing tools refuse to write.
    pub fn encode(&self) -> Result<Vec<u8>, Encoding> {
        if self.encoding.is_utf16() {
            return Err(self.encoding);
        }
        let bom = self.encoding.bom();
        let mut out = Vec::with_capacity(bom.len() + self.text.len());
        out.extend_from_slice(bom);
        out.extend_from_slice(self.text.as_bytes());
        Ok(out)
    }
}

/// The longest prefix of `text` that fits in `max_bytes` without splitting a
/// character.
pub fn truncate_utf8(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Like [`truncate_utf8`] for raw bytes that are mostly UTF-8: backs off at most
/// three bytes so a multi-byte sequence is not split.
pub fn utf8_boundary(bytes: &[u8], max_bytes: usize) -> usize {
    if bytes.len() <= max_bytes {
        return bytes.len();
    }
    let mut end = max_bytes;
    // Never back off more than a sequence.
    while end > 0 && max_bytes - end < 3 && is_continuation(bytes[end]) {
        end -= 1;
    }
    end
}

/// Where the first character of `bytes` starts when `bytes` may begin in
/// the middle of one (a read of a byte stream at an arbitrary offset): the
/// number of leading continuation bytes, at most three (no UTF-8 sequence
/// has more). Past three, or in bytes that are not UTF-8, nothing more is
/// skipped: those bytes are invalid anyway, not part of a character that
/// began earlier.
///
/// ```
/// // "€" is E2 82 AC: from its second byte, the next character is 2 on.
/// assert_eq!(agent_tools_text::utf8_char_start(&"€b".as_bytes()[1..]), 2);
/// assert_eq!(agent_tools_text::utf8_char_start(b"abc"), 0);
/// ```
pub fn utf8_char_start(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|byte| is_continuation(**byte))
        .count()
}

/// Whether `byte` continues a multi-byte UTF-8 sequence (`0b10xx_xxxx`).
fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

#[cfg(test)]
mod tests;
