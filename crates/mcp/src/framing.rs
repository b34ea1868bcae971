//! Framing: how the bytes of stdin become lines, and what can be learnt
//! from a line before it is parsed. Nothing here knows the protocol beyond
//! the two members every answer needs (`id` and `method`).
//!
//! * [`Splitter`] cuts input into lines and never holds more than the
//!   frame limit of one: a longer line is skipped as it goes by, keeping
//!   only its first [`SCAN_PREFIX`] bytes (to find its `id` and `method`).
//! * [`values_at_most`] bounds the JSON values of a line by a scan of its
//!   bytes, so a line of millions of small values is refused before it is
//!   parsed into a tree (about sixteen times its size).
//! * [`scan_top_level`] finds `id` and `method` in a broken or cut-off
//!   object, for the answer to a line nothing else can read.
//!
//! [`check_input`] drives all of it on arbitrary bytes for the fuzz target.

use std::borrow::Cow;
use std::fmt;
use std::io;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::value::RawValue;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// How much of an oversized line is kept to look for its `id` and `method`.
pub const SCAN_PREFIX: usize = 64 * 1024;

/// What reading one line gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A whole line is in the buffer (without its newline).
    Line,
    /// A line longer than the frame limit went by; its start is in the buffer.
    Oversized,
    /// The input ended.
    Eof,
}

/// Cuts input into lines of at most `limit` bytes, whatever chunks it
/// comes in. Knows nothing of where the bytes come from, so the same code
/// runs under the server and under the fuzz target.
#[derive(Debug)]
pub(crate) struct Splitter {
    /// The line read so far (or the kept start of an oversized one).
    pub(crate) line: Vec<u8>,
    discarding: bool,
    limit: usize,
}

impl Splitter {
    pub(crate) fn new(limit: usize) -> Self {
        Splitter {
            line: Vec::new(),
            discarding: false,
            limit,
        }
    }

    /// Takes what it can of `available` (never empty): how many bytes it
    /// took, and the frame they ended, if any.
    pub(crate) fn feed(&mut self, available: &[u8]) -> (usize, Option<Frame>) {
        let newline = memchr_newline(available);
        let take = newline.map_or(available.len(), |i| i + 1);
        let body = newline.map_or(available.len(), |i| i);
        if !self.discarding {
            if self.line.len().saturating_add(body) > self.limit {
                let keep = SCAN_PREFIX.saturating_sub(self.line.len()).min(body);
                self.line.truncate(SCAN_PREFIX);
                self.line.extend_from_slice(&available[..keep]);
                self.discarding = true;
            } else {
                self.line.extend_from_slice(&available[..body]);
            }
        }
        let frame = newline.map(|_| {
            if std::mem::take(&mut self.discarding) {
                Frame::Oversized
            } else {
                Frame::Line
            }
        });
        (take, frame)
    }

    /// The frame the end of input closes: a last line without its newline
    /// still counts.
    pub(crate) fn finish(&mut self) -> Frame {
        if std::mem::take(&mut self.discarding) {
            Frame::Oversized
        } else if self.line.is_empty() {
            Frame::Eof
        } else {
            Frame::Line
        }
    }

    /// Empties the line buffer, keeping it for the next line unless it
    /// grew large.
    pub(crate) fn recycle(&mut self) {
        self.line.clear();
        if self.line.capacity() > 1024 * 1024 {
            self.line.shrink_to(64 * 1024);
        }
    }
}

/// A [`Splitter`] on an async reader.
pub(crate) struct LineReader<R> {
    reader: R,
    /// The lines, one at a time.
    pub(crate) split: Splitter,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub(crate) fn new(reader: R, limit: usize) -> Self {
        LineReader {
            reader,
            split: Splitter::new(limit),
        }
    }

    /// Reads one line into `self.split.line`.
    pub(crate) async fn next_frame(&mut self) -> io::Result<Frame> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                return Ok(self.split.finish());
            }
            let (take, frame) = self.split.feed(available);
            self.reader.consume(take);
            if let Some(frame) = frame {
                return Ok(frame);
            }
        }
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// The text of a line without a trailing `\r` and a leading byte order
/// mark.
pub(crate) fn trim_line(line: &[u8]) -> &[u8] {
    let text = line.strip_suffix(b"\r").unwrap_or(line);
    text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text)
}

/// An upper bound of the JSON values in `text`, however broken it is: one,
/// plus every `[`, `{` and `,` outside strings (each value but the first
/// follows one of them).
pub(crate) fn values_at_most(text: &[u8]) -> usize {
    let mut count = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in text {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b'[' | b'{' | b',' => count += 1,
                _ => {}
            }
        }
    }
    count
}

/// Whether `text` holds at most `limit` JSON values (a shorter line
/// cannot hold more, so it is not scanned).
pub(crate) fn within_values(text: &[u8], limit: usize) -> bool {
    text.len() < limit || values_at_most(text) <= limit
}

/// A string member read without a copy when it has no escapes.
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// The `id` member of a message as written: absent, or its raw JSON.
/// Unlike an `Option`, this tells `"id": null` from no `id` at all.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) enum IdMember<'a> {
    #[default]
    Absent,
    Present(&'a RawValue),
}

impl<'de: 'a, 'a> Deserialize<'de> for IdMember<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(deserializer).map(IdMember::Present)
    }
}

impl<'a> IdMember<'a> {
    /// The id as an answer may carry it: a string or a number, kept as
    /// written (a number past 64 bits stays exact); None for an id of any
    /// other type, which JSON-RPC does not allow.
    pub(crate) fn usable(self) -> Option<&'a RawValue> {
        match self {
            IdMember::Present(raw) if usable_id(raw.get().as_bytes()) => Some(raw),
            _ => None,
        }
    }

    pub(crate) fn present(self) -> bool {
        matches!(self, IdMember::Present(_))
    }
}

/// Whether raw JSON is an id JSON-RPC allows: a string or a number.
fn usable_id(raw: &[u8]) -> bool {
    matches!(raw.first(), Some(b'"' | b'-' | b'0'..=b'9'))
}

/// The top-level members a line is sorted by before it is parsed whole.
/// The derived reader would also take an array, harmlessly: this only
/// picks a lane, and the line is parsed whole by rmcp's types after.
#[derive(Deserialize)]
pub(crate) struct Head<'a> {
    #[serde(default, borrow)]
    pub(crate) method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) id: IdMember<'a>,
}

/// Finds `id` and `method` among the top-level members of what may be a
/// broken or cut-off JSON object. Hand-written because no parser reads on
/// past an error or a truncation; this one only tracks strings and nesting
/// and gives up at the first thing it does not expect.
pub(crate) fn scan_top_level(bytes: &[u8]) -> (IdMember<'_>, Option<Cow<'_, str>>) {
    let mut id = IdMember::Absent;
    let mut method = None;
    let mut at = skip_ws(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return (id, method);
    }
    at += 1;
    loop {
        at = skip_ws(bytes, at);
        let Some(key_end) = string_end(bytes, at) else {
            break;
        };
        let key = &bytes[at..key_end];
        at = skip_ws(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            break;
        }
        at = skip_ws(bytes, at + 1);
        let Some(value_end) = value_end(bytes, at) else {
            break;
        };
        let value = &bytes[at..value_end];
        match key {
            b"\"id\"" => {
                id = serde_json::from_slice::<&RawValue>(value)
                    .map_or(IdMember::Absent, IdMember::Present);
            }
            b"\"method\"" => {
                method = serde_json::from_slice::<Text<'_>>(value)
                    .ok()
                    .map(|text| text.0);
            }
            _ => {}
        }
        if matches!(id, IdMember::Present(_)) && method.is_some() {
            break;
        }
        at = skip_ws(bytes, value_end);
        if bytes.get(at) != Some(&b',') {
            break;
        }
        at += 1;
    }
    (id, method)
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The end (one past the closing quote) of the string starting at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The end of the value starting at `at`: a string, a nested object or
/// array (skipped by counting brackets outside strings), or a bare token.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        // A closer with nothing open: not a value.
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let len = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                .unwrap_or(bytes.len() - at);
            Some(at + len)
        }
    }
}

/// For the fuzz target: reads one line as the transport does before it is
/// parsed, and checks what must hold for any line. Panics when it does
/// not: the value count is at most one per byte plus one, and the scans
/// (top-level members, the head the line is sorted by, the id an answer
/// would carry) take anything.
#[doc(hidden)]
pub fn check_line(line: &[u8]) {
    let text = trim_line(line);
    let values = values_at_most(text);
    assert!(values <= text.len() + 1, "more values than bytes");
    let (id, method) = scan_top_level(text);
    if let Some(raw) = id.usable() {
        assert!(
            serde_json::from_str::<serde_json::Value>(raw.get()).is_ok(),
            "a scanned id that is not JSON"
        );
    }
    drop(method);
    if let Ok(head) = serde_json::from_slice::<Head<'_>>(text) {
        let _ = head.id.usable();
    }
}

/// For the fuzz target: splits `data` into lines with a frame limit of
/// `limit` bytes, fed in chunks of the sizes `chunks` gives in turn (the
/// way reads return), and checks each frame against the lines `data`
/// holds: a line within the limit comes whole, a longer one as its first
/// [`SCAN_PREFIX`] bytes (or fewer, when the limit is smaller) and marked
/// oversized, and nothing is held past the limit or the prefix. Every line
/// then goes through [`check_line`].
#[doc(hidden)]
pub fn check_input(data: &[u8], limit: usize, chunks: &[usize]) {
    let expected: Vec<&[u8]> = {
        let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
        // What follows the last newline is a line only when it is not empty.
        if lines.last().is_some_and(|last| last.is_empty()) {
            lines.pop();
        }
        lines
    };
    let mut split = Splitter::new(limit);
    let mut frames = Vec::new();
    let mut at = 0;
    let mut turn = 0;
    while at < data.len() {
        let size = chunks
            .get(turn % chunks.len().max(1))
            .copied()
            .unwrap_or(usize::MAX)
            .max(1);
        turn += 1;
        let end = at.saturating_add(size).min(data.len());
        let mut offered = &data[at..end];
        while !offered.is_empty() {
            let (took, frame) = split.feed(offered);
            assert!(took > 0 && took <= offered.len(), "took {took} bytes");
            assert!(
                split.line.len() <= limit.max(SCAN_PREFIX),
                "held more than the limit"
            );
            at += took;
            offered = &offered[took..];
            if let Some(frame) = frame {
                frames.push((frame, split.line.clone()));
                split.recycle();
            }
        }
    }
    match split.finish() {
        Frame::Eof => {}
        frame => frames.push((frame, split.line.clone())),
    }
    assert_eq!(frames.len(), expected.len(), "a line was lost or made up");
    for ((frame, got), line) in frames.iter().zip(&expected) {
        if line.len() <= limit {
            assert_eq!(*frame, Frame::Line);
            assert_eq!(got.as_slice(), *line, "a line changed");
        } else {
            assert_eq!(*frame, Frame::Oversized);
            let kept = SCAN_PREFIX.min(line.len());
            assert!(got.len() <= kept, "kept more than the prefix");
            assert!(line.starts_with(got), "the kept start is not the line's");
        }
        check_line(got);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(member: IdMember<'_>) -> Option<&str> {
        match member {
            IdMember::Present(raw) => Some(raw.get()),
            IdMember::Absent => None,
        }
    }

    #[test]
    fn scans_id_and_method_from_broken_or_cut_objects() {
        let (id, method) = scan_top_level(
            br#"{"jsonrpc":"2.0","params":{"id":9,"x":[{"]":1}]},"id":7,"method":"tools/call","params":{"arguments":{"content":"\"aaa"#,
        );
        assert_eq!(raw(id), Some("7"));
        assert_eq!(method.as_deref(), Some("tools/call"));
        let (id, method) = scan_top_level(br#" { "id" : "a\"b" , "method": 5 "#);
        assert_eq!(raw(id), Some(r#""a\"b""#));
        assert_eq!(method, None);
        let (id, method) = scan_top_level(b"not json");
        assert!(raw(id).is_none() && method.is_none());
        assert!(raw(scan_top_level(br#"[{"id":1}]"#).0).is_none());
        // An object id is found, and is no id an answer may carry.
        let (id, _) = scan_top_level(br#"{"id":{"x":1}}"#);
        assert_eq!(raw(id), Some(r#"{"x":1}"#));
        assert!(id.usable().is_none());
        // A number past 64 bits is kept as written.
        let (id, _) = scan_top_level(br#"{"id":99999999999999999999,"method":"x"#);
        assert_eq!(id.usable().map(RawValue::get), Some("99999999999999999999"));
        // A stray closer ends the scan instead of underflowing.
        assert!(raw(scan_top_level(br#"{"a":]],"id":1}"#).0).is_none());
    }

    #[test]
    fn values_are_counted_without_parsing() {
        assert_eq!(values_at_most(b"0"), 1);
        assert_eq!(values_at_most(b"[0,0,0]"), 4);
        assert_eq!(values_at_most(br#"{"a":"[,{,\"","b":[]}"#), 4);
        assert!(
            within_values(&[b' '; 100], 10),
            "short lines are not scanned"
        );
        let zeros = format!("[{}0]", "0,".repeat(100));
        assert!(!within_values(zeros.as_bytes(), 100));
        assert!(within_values(zeros.as_bytes(), 102));
    }

    #[test]
    fn lines_come_whole_in_any_chunks_and_long_ones_as_their_start() {
        let long = vec![b'x'; SCAN_PREFIX + 10];
        let mut data = b"{\"id\":1}\r\n\n".to_vec();
        data.extend_from_slice(&long);
        data.extend_from_slice(b"\nlast without newline");
        for chunks in [&[1][..], &[3, 7], &[4096], &[usize::MAX]] {
            check_input(&data, 100, chunks);
            check_input(&data, SCAN_PREFIX * 2, chunks);
        }
        let mut split = Splitter::new(4);
        assert_eq!(split.feed(b"abcdef\nz"), (7, Some(Frame::Oversized)));
        assert_eq!(split.line, b"abcdef", "the start is kept up to the prefix");
        split.recycle();
        assert_eq!(split.feed(b"z"), (1, None));
        assert_eq!(split.finish(), Frame::Line);
        split.recycle();
        assert_eq!(split.finish(), Frame::Eof);
    }

    /// What the fuzz target checks, on lines mutated from real requests:
    /// bytes flipped, dropped, doubled and cut (a fixed xorshift seed, so
    /// a failure repeats).
    #[test]
    fn mutated_requests_hold_what_the_fuzz_target_checks() {
        let seeds: [&[u8]; 4] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a","offset":2}}}"#,
            br#"{"jsonrpc":"2.0","id":"x"y","method":"tools/call","params":{"name":"read_file","arguments":null}}"#,
            br#"{"method":"tools/call","id":7,"params":{"arguments":{"k":[1,{"a":"]"}]},"name":"grep"},"jsonrpc":"2.0"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
        ];
        let alphabet = b"{}[]\",:\\ 0123456789.eE+-nulltruefalse\n\r";
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..20_000 {
            let mut line = seeds[round % seeds.len()].to_vec();
            for _ in 0..=(next() % 3) {
                let last = line.len() - 1;
                let at = (next() as usize) % line.len();
                let byte = alphabet[(next() as usize) % alphabet.len()];
                match next() % 4 {
                    0 => line[at.min(last)] = byte,
                    1 => {
                        line.remove(at.min(last));
                    }
                    2 => line.insert(at, byte),
                    _ => line.truncate(at),
                }
                if line.is_empty() {
                    line.push(b'{');
                }
            }
            let limit = 16 + (next() as usize) % 128;
            check_input(&line, limit, &[1 + (next() as usize) % 40]);
        }
    }
}
