//! Reading files whole: text as text, anything else as content a client
//! accepts (an image, a sound, or an embedded resource holding the bytes),
//! and the reference server's `read_text_file` (with `head`/`tail`) and
//! `read_media_file`, accepted without being advertised.

use std::sync::Arc;

use agent_tools::{CallContext, Content, ErrorCode, Reply, ToolError, ToolResult};
use agent_tools_confine::ConfinedPath;
use agent_tools_fs::LineSpan;
use agent_tools_text::decode_lossy;
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

use crate::args::{FileArgs, ReadTextArgs};
use crate::roots::{Need, Root, Roots};

pub(crate) const READ_FILE: &str = "Read the complete contents of a file. `path` is an absolute \
path inside an allowed directory (see list_allowed_directories); a relative path is taken from \
the first allowed directory. A text file (UTF-8, or UTF-16 with a byte order mark) comes back as \
text. Any other file comes back as its bytes with their MIME type: an image item for images, an \
audio item for sounds, an embedded resource (base64 blob) for the rest. Fails with -32002 when \
the file does not exist, -32001 when the path is outside the allowed directories.";

pub(crate) const READ_TEXT_FILE: &str = "Read a file as text, or only its first (`head`) or last \
(`tail`) N lines, exactly as they are in the file. `tail` reads from the end, so it works on \
files of any size. Give at most one of `head` and `tail`.";

pub(crate) const READ_MEDIA_FILE: &str = "Read a file as base64 bytes with its MIME type: an \
image item for images, an audio item for sounds, an embedded resource for anything else.";

/// A file's bytes, read whole within the size limit.
struct Bytes {
    root: Arc<Root>,
    path: ConfinedPath,
    data: Vec<u8>,
}

fn read_bytes(roots: &Roots, raw: &str) -> ToolResult<Bytes> {
    let (bytes, _) = read_bytes_up_to(roots, raw, u64::MAX)?;
    Ok(bytes)
}

/// A file's first `keep` bytes (all of them when it is shorter), and its
/// size; a file over the size limit is refused as [`read_bytes`] refuses
/// it, whatever `keep` is. Never holds more than `keep` bytes.
fn read_bytes_up_to(roots: &Roots, raw: &str, keep: u64) -> ToolResult<(Bytes, u64)> {
    let (root, path) = roots.resolve(raw, Need::Read)?;
    let ws = root.workspace();
    let (file, meta) = ws.open_regular(&path, "use list_directory to see its entries")?;
    let max = roots.config().max_file_bytes();
    if meta.len() > max {
        return Err(too_large(&path, meta.len().to_string(), max));
    }
    let data = if meta.len() > keep {
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(file, keep), &mut data)
            .map_err(|err| ws.io_error(&err, &path))?;
        data
    } else {
        // Bounded even so: the file may have grown since its size was read.
        agent_tools_fs::read_bounded(file, max, meta.len())
            .map_err(|err| ws.io_error(&err, &path))?
            .ok_or_else(|| too_large(&path, format!("at least {}", max + 1), max))?
    };
    Ok((Bytes { root, path, data }, meta.len()))
}

/// Whether `read_file` of `args` is brief (see `ToolDef::brief_when`): it
/// fails at once, or reads a regular file of at most
/// [`BRIEF_READ_BYTES`](agent_tools::BRIEF_READ_BYTES). A resolution and a
/// stat beneath the root decide.
pub(crate) fn read_is_brief(
    roots: &Roots,
    args: &serde_json::Map<String, serde_json::Value>,
) -> bool {
    let Some(raw) = args.get("path").and_then(serde_json::Value::as_str) else {
        return true;
    };
    let Ok((root, path)) = roots.resolve(raw, Need::Read) else {
        return true;
    };
    match root.workspace().metadata(&path) {
        Ok(meta) => !meta.is_file() || meta.len() <= agent_tools::BRIEF_READ_BYTES,
        Err(_) => true,
    }
}

fn too_large(path: &ConfinedPath, size: String, max: u64) -> ToolError {
    ToolError::new(
        ErrorCode::TooLarge,
        format!(
            "{path}: {size} bytes is over the {max} byte limit of one read; read_text_file \
             with head or tail reads part of a text file"
        ),
    )
}

/// The start of a text file (UTF-8, or UTF-16 with its byte order mark),
/// at most `keep` bytes of it cut on a character boundary, and whether that
/// is all of it. Only what is kept is read. A file that is not text is
/// `is_binary` (for `read_multiple_files`, whose items are text).
pub(crate) fn read_text_up_to(roots: &Roots, raw: &str, keep: u64) -> ToolResult<(String, bool)> {
    // Three bytes more: a character cut at `keep` decodes whole or not at
    // all, never as a replacement character.
    let (bytes, size) = read_bytes_up_to(roots, raw, keep.saturating_add(3))?;
    let whole = bytes.data.len() as u64 >= size;
    let mut text = match decode_lossy(&bytes.data) {
        Ok((text, _, _)) => text,
        Err(err) => {
            return Err(ToolError::new(
                ErrorCode::IsBinary,
                format!(
                    "{}: is not a text file ({err}); read it alone with read_file",
                    bytes.path
                ),
            ));
        }
    };
    let fits = text.len() as u64 <= keep;
    if !fits {
        let cut =
            agent_tools_text::truncate_utf8(&text, usize::try_from(keep).unwrap_or(usize::MAX))
                .len();
        text.truncate(cut);
    }
    Ok((text, whole && fits))
}

/// A file's bytes as the content item its MIME type calls for.
fn media(bytes: Bytes) -> Content {
    let mime = mime_type(&bytes.data, &bytes.root.shown(&bytes.path));
    if mime.starts_with("image/") {
        Content::Image {
            data: bytes.data,
            mime_type: mime,
        }
    } else if mime.starts_with("audio/") {
        Content::Audio {
            data: bytes.data,
            mime_type: mime,
        }
    } else {
        Content::blob(file_uri(&bytes.root.shown(&bytes.path)), mime, bytes.data)
    }
}

/// The MIME type of a file: from its first bytes when they are a known
/// signature, else from its extension, else `application/octet-stream`.
pub(crate) fn mime_type(data: &[u8], shown: &str) -> String {
    if let Some(kind) = infer::get(data) {
        return kind.mime_type().to_owned();
    }
    mime_guess::from_path(shown)
        .first_raw()
        .unwrap_or("application/octet-stream")
        .to_owned()
}

/// What a `file://` URI escapes in a path: controls, space and the
/// characters with a meaning in a URI.
const URI_PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b']')
    .add(b'\\')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

pub(crate) fn file_uri(absolute: &str) -> String {
    format!("file://{}", utf8_percent_encode(absolute, URI_PATH))
}

pub(crate) fn read_file(roots: &Roots, args: FileArgs, _: &CallContext) -> ToolResult<Reply> {
    let bytes = read_bytes(roots, &args.path)?;
    let item = match decode_lossy(&bytes.data) {
        Ok((text, _, _)) => Content::Text(text),
        Err(_) => media(bytes),
    };
    Ok(Reply::items(vec![item]))
}

pub(crate) fn read_text_file(
    roots: &Roots,
    args: ReadTextArgs,
    call: &CallContext,
) -> ToolResult<Reply> {
    let span = match (args.head, args.tail) {
        (Some(_), Some(_)) => {
            return Err(ToolError::invalid_input(
                "give head or tail, not both: read the two ends in two calls",
            ));
        }
        (Some(head), None) => LineSpan::Head(head),
        (None, Some(tail)) => LineSpan::Tail(tail),
        (None, None) => return read_file(roots, FileArgs { path: args.path }, call),
    };
    let (root, path) = roots.resolve(&args.path, Need::Read)?;
    let abs = path.abs().to_string_lossy();
    let text = root.services().files().read_lines(&abs, span)?;
    Ok(Reply::items(vec![Content::Text(text)]))
}

pub(crate) fn read_media_file(roots: &Roots, args: FileArgs, _: &CallContext) -> ToolResult<Reply> {
    Ok(Reply::items(vec![media(read_bytes(roots, &args.path)?)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_types_come_from_signatures_then_extensions() {
        assert_eq!(
            mime_type(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "/x/a.bin"),
            "image/png"
        );
        assert_eq!(
            mime_type(b"RIFF\0\0\0\0WAVEfmt ", "/x/noext"),
            "audio/x-wav"
        );
        assert_eq!(mime_type(b"\0\x01\x02", "/x/a.json"), "application/json");
        assert_eq!(mime_type(b"\0\x01\x02", "/x/a"), "application/octet-stream");
    }

    #[test]
    fn uris_escape_what_a_uri_path_cannot_hold() {
        assert_eq!(file_uri("/a b/c#d%.bin"), "file:///a%20b/c%23d%25.bin");
        assert_eq!(file_uri("/é"), "file:///%C3%A9");
    }
}
