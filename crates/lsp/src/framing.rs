//! The base protocol's framing: `Content-Length` headers, then a JSON body.
//!
//! A server's header is not trusted for allocation: a length above
//! [`MAX_MESSAGE_BYTES`] is refused before anything is read, and the body
//! buffer grows only as bytes actually arrive.

use std::io::{self, BufRead, Read, Write};

use serde_json::Value;

/// The largest message body accepted from a server, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;
/// The largest header block accepted, in bytes.
pub const MAX_HEADER_BYTES: u64 = 8 << 10;

/// Why a message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The stream ended between messages.
    #[error("the server closed its output")]
    Closed,
    /// Reading failed.
    #[error("cannot read from the server: {0}")]
    Io(#[from] io::Error),
    /// The header block was longer than [`MAX_HEADER_BYTES`] or a line was
    /// not `Name: value`.
    #[error("malformed header from the server: {0}")]
    BadHeader(String),
    /// No `Content-Length` header.
    #[error("a message from the server had no Content-Length")]
    MissingLength,
    /// The announced length passes the cap.
    #[error("a message from the server announced {len} bytes, more than the {max} accepted")]
    TooLarge {
        /// The length announced.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// The stream ended inside a body.
    #[error("the server closed its output inside a message")]
    Truncated,
    /// The body was not JSON.
    #[error("a message from the server was not JSON: {0}")]
    BadJson(#[from] serde_json::Error),
}

/// Reads one message, refusing bodies over `max` bytes.
pub fn read_message<R: BufRead>(reader: &mut R, max: usize) -> Result<Value, FrameError> {
    let mut length = None;
    let mut header_budget = MAX_HEADER_BYTES;
    let mut first = true;
    loop {
        let mut line = Vec::new();
        let n = reader
            .by_ref()
            .take(header_budget)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Err(if first {
                FrameError::Closed
            } else {
                FrameError::Truncated
            });
        }
        first = false;
        header_budget = header_budget.saturating_sub(n as u64);
        if !line.ends_with(b"\n") {
            return Err(FrameError::BadHeader(
                "header block too long or cut".to_owned(),
            ));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(FrameError::BadHeader(text.chars().take(80).collect()));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let len: usize = value
                .trim()
                .parse()
                .map_err(|_| FrameError::BadHeader(text.chars().take(80).collect()))?;
            length = Some(len);
        }
    }
    let len = length.ok_or(FrameError::MissingLength)?;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    // `read_to_end` grows the buffer as data comes: a lying header costs
    // only what the server really sent.
    let mut body = Vec::new();
    reader.by_ref().take(len as u64).read_to_end(&mut body)?;
    if body.len() < len {
        return Err(FrameError::Truncated);
    }
    Ok(serde_json::from_slice(&body)?)
}

/// Writes one message and flushes.
pub fn write_message<W: Write>(writer: &mut W, message: &Value) -> io::Result<()> {
    let body = serde_json::to_vec(message)?;
    write!(writer, "Content-Length: {}\r\n\r\n", body.len())?;
    writer.write_all(&body)?;
    writer.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    #[test]
    fn reads_what_it_writes() {
        let mut out = Vec::new();
        write_message(&mut out, &json!({"jsonrpc": "2.0", "id": 1})).unwrap();
        write_message(&mut out, &json!({"x": "é"})).unwrap();
        let mut reader = io::BufReader::new(&out[..]);
        assert_eq!(
            read_message(&mut reader, 100).unwrap(),
            json!({"jsonrpc": "2.0", "id": 1})
        );
        assert_eq!(read_message(&mut reader, 100).unwrap(), json!({"x": "é"}));
        assert!(matches!(
            read_message(&mut reader, 100),
            Err(FrameError::Closed)
        ));
    }

    #[test]
    fn a_huge_length_is_refused_before_reading() {
        let data = b"Content-Length: 99999999999\r\n\r\n{}".to_vec();
        let err = read_message(&mut io::BufReader::new(&data[..]), 1000).unwrap_err();
        assert!(
            matches!(err, FrameError::TooLarge { max: 1000, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_lying_length_is_a_truncation() {
        let data = b"Content-Length: 500\r\n\r\n{}".to_vec();
        let err = read_message(&mut io::BufReader::new(&data[..]), 1000).unwrap_err();
        assert!(matches!(err, FrameError::Truncated), "{err}");
    }

    #[test]
    fn headers_are_checked() {
        let missing = b"Content-Type: x\r\n\r\n{}".to_vec();
        assert!(matches!(
            read_message(&mut io::BufReader::new(&missing[..]), 10),
            Err(FrameError::MissingLength)
        ));
        let garbage = b"garbage\r\n\r\n".to_vec();
        assert!(matches!(
            read_message(&mut io::BufReader::new(&garbage[..]), 10),
            Err(FrameError::BadHeader(_))
        ));
        let endless = vec![b'a'; 20_000];
        assert!(matches!(
            read_message(&mut io::BufReader::new(&endless[..]), 10),
            Err(FrameError::BadHeader(_))
        ));
        let bad_json = frame("{nope");
        assert!(matches!(
            read_message(&mut io::BufReader::new(&bad_json[..]), 10),
            Err(FrameError::BadJson(_))
        ));
    }
}
