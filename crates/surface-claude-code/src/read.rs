//! `Read`: numbered text, images, PDFs, notebooks; and the session record
//! that allows a later write.

use std::path::Path;

use agent_tools::{CallContext, Content, ErrorCode, Reply, ToolError, ToolResult};
use agent_tools_confine::ConfinedPath;
use agent_tools_fs::Seen;
use agent_tools_surface_default::Services;
use agent_tools_text::{
    BINARY_SNIFF_BYTES, DecodeError, decode_lossy, looks_binary, truncate_line,
};
use serde_json::{Map, Value};

use crate::args::ReadArgs;
use crate::messages::{self, thrown};
use crate::{
    DEFAULT_READ_LINES, MAX_WHOLE_READ_BYTES, notebook, pdf, resolve_absolute, session_of,
};

/// Extensions Claude Code refuses as binary without looking inside (the
/// images it shows, and PDFs, are not among them).
const BINARY_EXTENSIONS: &[&str] = &[
    // Images it does not show.
    "bmp", "ico", "tiff", "tif", "psd", "ai", "eps", "sketch", "fig", "xd", "blend", "3ds", "max",
    // Video and audio.
    "mp4", "mov", "avi", "mkv", "webm", "wmv", "flv", "m4v", "mpeg", "mpg", "mp3", "wav", "ogg",
    "flac", "aac", "m4a", "wma", "aiff", "opus", // Archives.
    "zip", "tar", "gz", "bz2", "7z", "rar", "xz", "z", "tgz", "iso",
    // Executables and objects.
    "exe", "dll", "so", "dylib", "bin", "o", "a", "obj", "lib", "app", "msi", "deb", "rpm",
    // Office documents.
    "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", // Fonts.
    "ttf", "otf", "woff", "woff2", "eot", // Compiled code and packages.
    "pyc", "pyo", "class", "jar", "war", "ear", "node", "wasm", "rlib", // Databases.
    "sqlite", "sqlite3", "db", "mdb", "idx",
    // Flash, lockfiles in binary form, raw data.
    "swf", "fla", "lockb", "dat", "data",
];

/// How many directory entries a "Did you mean" looks at, at most.
const MAX_SUGGESTION_SCAN: usize = 10_000;

/// What kind of file the extension says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Image(&'static str),
    Pdf,
    Notebook,
    Binary,
    Text,
}

fn kind_of(extension: &str) -> Kind {
    match extension {
        "png" => Kind::Image("image/png"),
        "jpg" | "jpeg" => Kind::Image("image/jpeg"),
        "gif" => Kind::Image("image/gif"),
        "webp" => Kind::Image("image/webp"),
        "pdf" => Kind::Pdf,
        "ipynb" => Kind::Notebook,
        other if BINARY_EXTENSIONS.contains(&other) => Kind::Binary,
        _ => Kind::Text,
    }
}

/// Whether a Read with `args` is brief: its work is bounded small. So it is
/// when it fails at once (no path, a path outside the root, a missing file,
/// a directory, a device) and when it reads a text file or an image of at
/// most [`MAX_WHOLE_READ_BYTES`], which is read whole: no line of a larger
/// file is counted. A PDF or a notebook is parsed, which takes longer
/// whatever its size, so it is never brief. The test costs a resolution
/// and a stat beneath the root.
pub(crate) fn is_brief(services: &Services, args: &Map<String, Value>) -> bool {
    let Some(raw) = args.get("file_path").and_then(Value::as_str) else {
        return true;
    };
    match kind_of(&extension(raw)) {
        Kind::Pdf | Kind::Notebook => return false,
        Kind::Binary => return true,
        Kind::Image(_) | Kind::Text => {}
    }
    let ws = services.files().workspace();
    let Ok(path) = ws.resolve(raw) else {
        return true;
    };
    match ws.metadata(&path) {
        Ok(meta) => !meta.is_file() || meta.len() <= MAX_WHOLE_READ_BYTES,
        Err(_) => true,
    }
}

/// The lower-cased extension of `raw`, without the dot (empty when none).
pub(crate) fn extension(raw: &str) -> String {
    Path::new(raw)
        .extension()
        .map(|ext| ext.to_string_lossy().to_lowercase())
        .unwrap_or_default()
}

pub(crate) fn read(services: &Services, args: ReadArgs, call: &CallContext) -> ToolResult<Reply> {
    let session = session_of(call)?;
    let raw = args.file_path.as_str();
    let path = resolve_absolute(services, raw, "file_path")?;
    let meta = regular_file(services, &path, raw)?;
    let size = meta.len();
    let extension = extension(raw);
    let max_file = services.config().max_file_bytes();
    match kind_of(&extension) {
        Kind::Binary => Err(thrown(
            ErrorCode::IsBinary,
            messages::binary_file(&format!(".{extension}")),
        )),
        Kind::Image(mime_type) => {
            if size == 0 {
                return Err(thrown(ErrorCode::InvalidInput, messages::empty_image(raw)));
            }
            let bytes = read_bounded(services, &path, raw, max_file, |size| {
                thrown(
                    ErrorCode::TooLarge,
                    messages::image_too_large(raw, size, max_file),
                )
            })?;
            session.record(path.abs(), Seen::of(&meta, Some(&bytes)));
            Ok(Reply::items(vec![Content::Image {
                data: bytes,
                mime_type: mime_type.to_owned(),
            }]))
        }
        Kind::Pdf => {
            let bytes = read_bounded(services, &path, raw, max_file, |size| {
                thrown(
                    ErrorCode::TooLarge,
                    messages::too_big_to_read(size, max_file),
                )
            })?;
            let reply = pdf::read_pdf(
                &bytes,
                raw,
                args.pages.as_deref(),
                call.cancel.flag(),
                services.config().max_output_bytes(),
            )?;
            session.record(path.abs(), Seen::of(&meta, Some(&bytes)));
            Ok(reply)
        }
        Kind::Notebook => {
            let bytes = read_bounded(services, &path, raw, max_file, |size| {
                thrown(
                    ErrorCode::TooLarge,
                    messages::notebook_too_big(raw, size, max_file),
                )
            })?;
            let content = notebook::render(&bytes, raw)?;
            session.record(path.abs(), Seen::of(&meta, Some(&bytes)));
            Ok(Reply::items(content))
        }
        Kind::Text => {
            let text = read_text(services, &path, raw, &args, size, call)?;
            // The digest lets a later write tell a touch from a change; a
            // file too large to edit is not hashed.
            let seen = match text.whole {
                Some(bytes) => Seen::of(&meta, Some(&bytes)),
                None if size <= max_file => {
                    let bytes = read_bounded(services, &path, raw, max_file, |_| {
                        thrown(ErrorCode::TooLarge, "the file grew while it was read")
                    });
                    Seen::of(&meta, bytes.ok().as_deref())
                }
                None => Seen::of(&meta, None),
            };
            session.record(path.abs(), seen);
            Ok(Reply::items(vec![Content::Text(text.shown)]))
        }
    }
}

/// The metadata of the regular file at `path` (following a symlink); a
/// missing file, a directory or anything else is refused in Claude Code's
/// words, before anything could block on it.
pub(crate) fn regular_file(
    services: &Services,
    path: &ConfinedPath,
    raw: &str,
) -> ToolResult<std::fs::Metadata> {
    let ws = services.files().workspace();
    match ws.metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(thrown(ErrorCode::NotAFile, messages::is_directory(raw)));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(thrown(ErrorCode::NotAFile, messages::device_file(raw)));
        }
        Ok(_) => {}
        Err(err) if err.code() == ErrorCode::NotFound => {
            let similar = suggestion(services, raw);
            return Err(thrown(
                ErrorCode::NotFound,
                messages::file_missing(similar.as_deref()),
            ));
        }
        Err(err) => return Err(err),
    }
    // Checked again on the opened descriptor: a FIFO swapped in meanwhile
    // is refused, never read.
    match ws.open_regular(path, "") {
        Ok((_, meta)) => Ok(meta),
        Err(err) if err.code() == ErrorCode::NotAFile => {
            Err(thrown(ErrorCode::NotAFile, messages::device_file(raw)))
        }
        Err(err) => Err(err),
    }
}

/// A file beside the missing `raw` with a close name: the same name in
/// another letter case, or the same stem with another extension. Its
/// absolute path, so it can be passed to Read as it is.
pub(crate) fn suggestion(services: &Services, raw: &str) -> Option<String> {
    let raw_path = Path::new(raw);
    let parent = raw_path.parent()?;
    let name = raw_path.file_name()?.to_string_lossy().into_owned();
    let stem = raw_path.file_stem()?.to_string_lossy().into_owned();
    let ws = services.files().workspace();
    let dir_path = ws.resolve(&parent.to_string_lossy()).ok()?;
    let dir = ws.open_dir(&dir_path).ok()?;
    let mut best: Option<(u8, String)> = None;
    for entry in dir.entries().ok()?.take(MAX_SUGGESTION_SCAN).flatten() {
        let candidate = entry.file_name().to_string_lossy().into_owned();
        if candidate == name {
            continue;
        }
        let rank = if candidate.eq_ignore_ascii_case(&name) {
            0
        } else if Path::new(&candidate)
            .file_stem()
            .is_some_and(|s| s.to_string_lossy() == stem)
        {
            1
        } else {
            continue;
        };
        if best
            .as_ref()
            .is_none_or(|(r, n)| (rank, &candidate) < (*r, n))
        {
            best = Some((rank, candidate));
        }
    }
    best.map(|(_, candidate)| parent.join(candidate).to_string_lossy().into_owned())
}

/// The bytes of the file, at most `max`; `too_large` (with the size seen)
/// words a larger one.
pub(crate) fn read_bounded(
    services: &Services,
    path: &ConfinedPath,
    raw: &str,
    max: u64,
    too_large: impl Fn(u64) -> ToolError,
) -> ToolResult<Vec<u8>> {
    let ws = services.files().workspace();
    let (file, meta) = ws.open_regular(path, "").map_err(|err| match err.code() {
        ErrorCode::NotAFile => thrown(ErrorCode::NotAFile, messages::device_file(raw)),
        _ => err,
    })?;
    if meta.len() > max {
        return Err(too_large(meta.len()));
    }
    agent_tools_fs::read_bounded(file, max, meta.len())
        .map_err(|err| ws.io_error(&err, path))?
        .ok_or_else(|| too_large(max.saturating_add(1)))
}

/// A text read: what is shown, and the file's bytes when it was read whole.
struct TextRead {
    shown: String,
    whole: Option<Vec<u8>>,
}

/// Claude Code's line prefix: the number right-aligned in six columns (a
/// longer number printed whole), then an arrow.
pub(crate) fn numbered(number: u64, line: &str) -> String {
    format!("{number:>6}\u{2192}{line}")
}

fn read_text(
    services: &Services,
    path: &ConfinedPath,
    raw: &str,
    args: &ReadArgs,
    size: u64,
    call: &CallContext,
) -> ToolResult<TextRead> {
    if args.limit.is_none() && size > MAX_WHOLE_READ_BYTES {
        return Err(thrown(
            ErrorCode::TooLarge,
            messages::too_big_to_read(size, MAX_WHOLE_READ_BYTES),
        ));
    }
    // Line 0 does not exist; Claude Code reads from the first line for it.
    let first = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_READ_LINES).max(1);
    let budget = services.config().max_output_bytes();
    let binary = || {
        thrown(
            ErrorCode::IsBinary,
            messages::binary_file(&dotted(&extension(raw))),
        )
    };
    if size <= MAX_WHOLE_READ_BYTES {
        let bytes = read_bounded(services, path, raw, MAX_WHOLE_READ_BYTES, |size| {
            thrown(
                ErrorCode::TooLarge,
                messages::too_big_to_read(size, MAX_WHOLE_READ_BYTES),
            )
        })?;
        if looks_binary(&bytes[..bytes.len().min(BINARY_SNIFF_BYTES)]) {
            return Err(binary());
        }
        let text = match decode_lossy(&bytes) {
            Ok((text, _, _)) => text,
            Err(DecodeError::Binary) => return Err(binary()),
            Err(_) => return Err(binary()),
        };
        let body = text.strip_suffix('\n').unwrap_or(&text);
        if text.is_empty() {
            return Ok(TextRead {
                shown: messages::EMPTY_FILE.to_owned(),
                whole: Some(bytes),
            });
        }
        let lines: Vec<&str> = body.split('\n').collect();
        let total = lines.len() as u64;
        if first > total {
            return Ok(TextRead {
                shown: messages::shorter_than_offset(first, total),
                whole: Some(bytes),
            });
        }
        let start = usize::try_from(first - 1).unwrap_or(usize::MAX);
        let wanted = usize::try_from(limit).unwrap_or(usize::MAX);
        let window = lines.iter().skip(start).take(wanted).map(|line| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            truncate_line(line).into_owned()
        });
        let shown = render(window, first, total, budget);
        return Ok(TextRead {
            shown,
            whole: Some(bytes),
        });
    }
    let window = services
        .files()
        .read_window(path, first, limit, call.cancel.flag())
        .map_err(|err| match err.code() {
            ErrorCode::IsBinary => binary(),
            _ => err,
        })?;
    if window.total == 0 {
        return Ok(TextRead {
            shown: messages::EMPTY_FILE.to_owned(),
            whole: None,
        });
    }
    if first > window.total {
        return Ok(TextRead {
            shown: messages::shorter_than_offset(first, window.total),
            whole: None,
        });
    }
    let shown = render(window.lines.into_iter(), first, window.total, budget);
    Ok(TextRead { shown, whole: None })
}

fn dotted(extension: &str) -> String {
    if extension.is_empty() {
        String::new()
    } else {
        format!(".{extension}")
    }
}

/// The numbered lines, the first being line `first` of `total`, within
/// `budget` bytes (at least one line), then a line saying where to go on
/// when lines remain.
fn render(lines: impl Iterator<Item = String>, first: u64, total: u64, budget: usize) -> String {
    let budget = budget.saturating_sub(200);
    let mut out = String::new();
    let mut next = first;
    for line in lines {
        let numbered = numbered(next, &line);
        if next > first && out.len() + numbered.len() + 1 > budget {
            break;
        }
        if next > first {
            out.push('\n');
        }
        out.push_str(&numbered);
        next += 1;
    }
    if next <= total {
        out.push('\n');
        out.push_str(&messages::more_lines(next, total));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_is_six_wide_and_grows_past_six_digits() {
        assert_eq!(numbered(1, "a"), "     1\u{2192}a");
        assert_eq!(numbered(123_456, "b"), "123456\u{2192}b");
        assert_eq!(numbered(1_234_567, "c"), "1234567\u{2192}c");
    }

    #[test]
    fn kinds_follow_the_extension() {
        assert_eq!(kind_of("png"), Kind::Image("image/png"));
        assert_eq!(kind_of("jpeg"), Kind::Image("image/jpeg"));
        assert_eq!(kind_of("pdf"), Kind::Pdf);
        assert_eq!(kind_of("ipynb"), Kind::Notebook);
        assert_eq!(kind_of("exe"), Kind::Binary);
        assert_eq!(kind_of("bmp"), Kind::Binary);
        assert_eq!(kind_of("rs"), Kind::Text);
        assert_eq!(kind_of(""), Kind::Text);
        assert_eq!(extension("/a/B.PNG"), "png");
        assert_eq!(extension("/a/Makefile"), "");
    }

    #[test]
    fn a_window_ends_with_where_to_go_on() {
        let lines = ["a", "b"].into_iter().map(String::from);
        assert_eq!(
            render(lines, 3, 9, 10_000),
            "     3\u{2192}a\n     4\u{2192}b\n[The file has 9 lines; lines from 5 on are not shown. Call Read with offset=5 to continue.]"
        );
        let lines = ["a"].into_iter().map(String::from);
        assert_eq!(render(lines, 9, 9, 10_000), "     9\u{2192}a");
    }
}
