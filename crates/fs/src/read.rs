//! `read_file`: numbered lines, paging, and tail reads of files of any size.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use agent_tools_confine::ConfinedPath;
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_text::{
    DecodeError, Encoding, LINE_TRUNCATED_MARKER, MAX_LINE_CHARS, count_newlines, decode_lossy,
    looks_binary, number_width, push_numbered_line, truncate_line, utf8_boundary,
};

use std::sync::atomic::AtomicBool;

use crate::{FileTools, ReadFileArgs, cancelled};

/// What `read_file` prints for a file with no lines.
pub const EMPTY_FILE: &str = "(empty file)";

/// Block size for reading a large file backwards.
const TAIL_BLOCK: u64 = 64 * 1024;

impl FileTools {
    /// Reads a text file as numbered lines. See the crate docs and SPEC.md.
    pub fn read_file(&self, args: &ReadFileArgs) -> ToolResult<String> {
        self.read_file_with(args, &AtomicBool::new(false))
    }

    /// [`read_file`](Self::read_file), stopping with an error once `cancel`
    /// is set (only the streaming scans of a large file take long enough to
    /// check it).
    pub fn read_file_with(&self, args: &ReadFileArgs, cancel: &AtomicBool) -> ToolResult<String> {
        if args.offset == 0 {
            return Err(ToolError::invalid_input(
                "offset must be a 1-based line number, or negative to read the last lines; 0 is not a line",
            ));
        }
        if args.limit == 0 {
            return Err(ToolError::invalid_input("limit must be at least 1"));
        }
        let path = self.workspace().resolve(&args.path)?;
        // Regular files only, checked on the opened descriptor: a FIFO
        // would block, a device would never end.
        let (mut file, meta) = self
            .workspace()
            .open_regular(&path, "use list_dir to see its entries")?;
        let size = meta.len();
        let max = self.limits().max_file_bytes;
        let too_large = |size: String| {
            ToolError::new(
                ErrorCode::TooLarge,
                format!(
                    "{path}: {size} bytes is over the {max} byte limit; read its end with a negative offset (e.g. offset=-100), or search it with grep"
                ),
            )
        };
        if size > max && args.offset > 0 {
            return Err(too_large(size.to_string()));
        }
        // A tail always, and a large file within the limit, are read in
        // blocks: never whole, numbered from the cached newline counts.
        if args.offset < 0 || size >= crate::newlines::MIN_STEP {
            let io = |err: std::io::Error| self.workspace().io_error(&err, &path);
            let mut head = vec![0u8; agent_tools_text::BINARY_SNIFF_BYTES];
            let head_len = read_up_to(&mut file, &mut head).map_err(io)?;
            head.truncate(head_len);
            if looks_binary(&head) {
                return Err(binary_error(&path));
            }
            let encoding = Encoding::sniff(&head);
            if !encoding.is_utf16() {
                let streamed = Streamed {
                    path: &path,
                    meta: &meta,
                    encoding,
                    over_limit: size > max,
                };
                return if args.offset < 0 {
                    self.read_tail(&streamed, &mut file, args, cancel)
                } else {
                    self.read_from_line(&streamed, &mut file, args, cancel)
                };
            }
            if size > max {
                return Err(ToolError::new(
                    ErrorCode::TooLarge,
                    format!(
                        "{path}: a UTF-16 file of {size} bytes is over the {max} byte limit and cannot be read in parts"
                    ),
                ));
            }
            // UTF-16 within the limit: decoded whole, below.
            file.seek(SeekFrom::Start(0)).map_err(io)?;
        }
        // Bounded even so: the file may have grown since its size was read.
        let bytes = read_bounded(&mut file, max, size)
            .map_err(|err| self.workspace().io_error(&err, &path))?
            .ok_or_else(|| too_large(format!("at least {}", max.saturating_add(1))))?;
        let text = decode_for_reading(&path, &bytes)?;
        let lines = Lines::of(&text);
        if lines.total == 0 {
            return Ok(EMPTY_FILE.to_string());
        }
        let first = first_line(args.offset, lines.total, &path)?;
        let wanted = wanted_lines(lines.total - (first - 1), args.limit);
        let shown = lines
            .from(first)
            .take(wanted)
            .map(|line| shown_line(line.strip_suffix('\r').unwrap_or(line), 0));
        self.render(&path, shown, wanted, first, lines.total, Continue::Forward)
    }

    /// Renders `wanted` display-ready lines (the first being line `first`)
    /// within the output budget, with a continuation hint when lines remain.
    /// A NUL among the characters shown makes the file `is_binary`, whichever
    /// way it was read.
    fn render<'a>(
        &self,
        path: &ConfinedPath,
        lines: impl Iterator<Item = Cow<'a, str>>,
        wanted: usize,
        first: usize,
        total: usize,
        next: Continue,
    ) -> ToolResult<String> {
        let last_wanted = first + wanted.max(1) - 1;
        let width = number_width(last_wanted);
        let mut out = String::new();
        // Leave room for the hint so the facade's cut never eats it.
        let budget = self.limits().max_output_bytes.saturating_sub(160);
        let mut shown = 0;
        for line in lines.take(wanted) {
            if memchr::memchr(0, line.as_bytes()).is_some() {
                return Err(binary_error(path));
            }
            let before = out.len();
            push_numbered_line(&mut out, first + shown, width, &line);
            if out.len() > budget && shown > 0 {
                // This line pushed us over: drop it and stop here.
                out.truncate(before);
                return Ok(with_hint(out, first, first + shown - 1, total, true, next));
            }
            shown += 1;
        }
        let last = first + shown - 1;
        if last < total {
            Ok(with_hint(out, first, last, total, false, next))
        } else {
            Ok(out)
        }
    }

    /// The file's newline index, from the cache or counted now; a cancelled
    /// count is the call's cancellation.
    fn newline_index(
        &self,
        streamed: &Streamed<'_>,
        file: &mut File,
        cancel: &AtomicBool,
    ) -> ToolResult<std::sync::Arc<crate::newlines::NewlineIndex>> {
        let (index, _) = self
            .newlines
            .index(file, streamed.meta, cancel)
            .map_err(|err| self.workspace().io_error(&err, streamed.path))?
            .ok_or_else(cancelled)?;
        Ok(index)
    }

    /// The last lines of a UTF-8 file. Reads backwards from the end to find
    /// where they start, takes the count of the lines before them from the
    /// file's newline index (counted once at memory speed, then kept and
    /// extended as the file grows), then reads forwards only as much as the
    /// view can show: memory stays bounded by the output budget whatever the
    /// file's size, and however long its lines are.
    fn read_tail(
        &self,
        streamed: &Streamed<'_>,
        file: &mut File,
        args: &ReadFileArgs,
        cancel: &AtomicBool,
    ) -> ToolResult<String> {
        let path = streamed.path;
        let io = |err: std::io::Error| self.workspace().io_error(&err, path);
        let size = streamed.meta.len();
        let bom = streamed.encoding.bom().len() as u64;
        if size <= bom {
            return Ok(EMPTY_FILE.to_string());
        }
        let tail = find_tail_start(file, size, args.offset.unsigned_abs()).map_err(io)?;
        let index = self.newline_index(streamed, file, cancel)?;
        // The file may have changed between the two reads: never underflow.
        let before = to_usize(index.total().saturating_sub(tail.newlines));
        let skip_bom = if tail.start == 0 { bom } else { 0 };
        file.seek(SeekFrom::Start(tail.start + skip_bom))
            .map_err(io)?;
        let total = before + tail.lines;
        let wanted = wanted_lines(tail.lines, args.limit);
        let lines = read_lines_forward(file, wanted, self.limits().max_output_bytes).map_err(io)?;
        let next = if streamed.over_limit {
            Continue::Backward
        } else {
            Continue::Forward
        };
        let shown = lines.into_iter().map(Cow::Owned);
        self.render(path, shown, wanted, before + 1, total, next)
    }

    /// Lines from a positive offset of a large UTF-8 file within the limit:
    /// seeks to the index's last checkpoint before the line and scans from
    /// there, instead of decoding the whole file.
    fn read_from_line(
        &self,
        streamed: &Streamed<'_>,
        file: &mut File,
        args: &ReadFileArgs,
        cancel: &AtomicBool,
    ) -> ToolResult<String> {
        let path = streamed.path;
        let io = |err: std::io::Error| self.workspace().io_error(&err, path);
        let size = streamed.meta.len();
        let index = self.newline_index(streamed, file, cancel)?;
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(size - 1)).map_err(io)?;
        file.read_exact(&mut last).map_err(io)?;
        let total = to_usize(index.total()) + usize::from(last[0] != b'\n');
        let first = first_line(args.offset, total, path)?;
        let start = index
            .line_start(file, first as u64, cancel)
            .map_err(io)?
            .ok_or_else(cancelled)?;
        let skip_bom = if start == 0 {
            streamed.encoding.bom().len() as u64
        } else {
            0
        };
        file.seek(SeekFrom::Start(start + skip_bom)).map_err(io)?;
        let wanted = wanted_lines(total - (first - 1), args.limit);
        let lines = read_lines_forward(file, wanted, self.limits().max_output_bytes).map_err(io)?;
        let shown = lines.into_iter().map(Cow::Owned);
        self.render(path, shown, wanted, first, total, Continue::Forward)
    }
}

/// Which lines [`FileTools::read_lines`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineSpan {
    /// The first N lines.
    Head(u64),
    /// The last N lines.
    Tail(u64),
}

impl FileTools {
    /// The first or last lines of a text file as they are in it: not
    /// numbered, line endings kept, a byte order mark dropped, UTF-16
    /// decoded. A tail is found by reading backwards from the end, so a
    /// file of any size can be tailed; the lines returned may hold at most
    /// `max_file_bytes` (else `too_large`). A binary file is `is_binary`.
    pub fn read_lines(&self, path: &str, span: LineSpan) -> ToolResult<String> {
        let path = self.workspace().resolve(path)?;
        let (mut file, meta) = self
            .workspace()
            .open_regular(&path, "give a file, not a directory")?;
        let io = |err: std::io::Error| self.workspace().io_error(&err, &path);
        let size = meta.len();
        let max = self.limits().max_file_bytes;
        let too_large = |what: &str| {
            ToolError::new(
                ErrorCode::TooLarge,
                format!(
                    "{path}: {what} are over the {max} byte limit of one read; ask for fewer lines"
                ),
            )
        };
        let mut head = vec![0u8; agent_tools_text::BINARY_SNIFF_BYTES];
        let head_len = read_up_to(&mut file, &mut head).map_err(io)?;
        head.truncate(head_len);
        if looks_binary(&head) {
            return Err(binary_error(&path));
        }
        let encoding = Encoding::sniff(&head);
        let bom = encoding.bom().len() as u64;
        if encoding.is_utf16() {
            // UTF-16 cannot be cut at byte newlines: decoded whole.
            if size > max {
                return Err(too_large("the lines of a UTF-16 file (read whole)"));
            }
            file.seek(SeekFrom::Start(0)).map_err(io)?;
            let bytes = read_bounded(&mut file, max, size)
                .map_err(io)?
                .ok_or_else(|| too_large("the lines of a UTF-16 file (read whole)"))?;
            let text = decode_for_reading(&path, &bytes)?;
            return Ok(pick_lines(&text, span).to_owned());
        }
        let bytes = match span {
            LineSpan::Head(0) | LineSpan::Tail(0) => Vec::new(),
            LineSpan::Head(count) => {
                file.seek(SeekFrom::Start(bom)).map_err(io)?;
                let mut reader = BufReader::with_capacity(
                    TAIL_BLOCK as usize,
                    (&mut file).take(max.saturating_add(1)),
                );
                let mut bytes = Vec::new();
                for _ in 0..count {
                    if reader.read_until(b'\n', &mut bytes).map_err(io)? == 0 {
                        break;
                    }
                }
                if bytes.len() as u64 > max {
                    return Err(too_large("the lines asked for"));
                }
                bytes
            }
            LineSpan::Tail(count) => {
                if size <= bom {
                    return Ok(String::new());
                }
                let tail = find_tail_start(&mut file, size, count).map_err(io)?;
                let start = tail.start.max(bom);
                file.seek(SeekFrom::Start(start)).map_err(io)?;
                read_bounded(&mut file, max, size - start)
                    .map_err(io)?
                    .ok_or_else(|| too_large("the lines asked for"))?
            }
        };
        decode_for_reading(&path, &bytes)
    }
}

/// The first or last lines of decoded text, line endings kept.
fn pick_lines(text: &str, span: LineSpan) -> &str {
    match span {
        LineSpan::Head(count) => {
            let count = to_usize(count);
            if count == 0 {
                return "";
            }
            match text.match_indices('\n').nth(count - 1) {
                Some((at, _)) => &text[..=at],
                None => text,
            }
        }
        LineSpan::Tail(count) => {
            let count = to_usize(count);
            if count == 0 {
                return "";
            }
            // The newline ending the last line does not start a line.
            let body = text.strip_suffix('\n').unwrap_or(text);
            match body.rmatch_indices('\n').nth(count - 1) {
                Some((at, _)) => &text[at + 1..],
                None => text,
            }
        }
    }
}

/// A window of a file's lines, as [`FileTools::read_window`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineWindow {
    /// The lines shown, the first being line `first`: without their line
    /// break (nor a CRLF's `\r`), each cut at [`MAX_LINE_CHARS`] characters
    /// with the engine's marker. Empty when `first` is past the end.
    pub lines: Vec<String>,
    /// The 1-based number of the first line asked for.
    pub first: u64,
    /// How many lines the file has (a final line break does not start one).
    pub total: u64,
    /// The output budget stopped the window before `limit` lines.
    pub budget_hit: bool,
}

impl LineWindow {
    /// The number of the line after the last one shown, when lines remain.
    pub fn next_line(&self) -> Option<u64> {
        let next = self.first + self.lines.len() as u64;
        (next <= self.total && !self.lines.is_empty()).then_some(next)
    }
}

impl FileTools {
    /// Lines `first..first + limit` of a UTF-8 text file, read by streaming:
    /// the file is never loaded whole. The line's start is found through the
    /// file's newline index (counted once at memory speed, cached, and
    /// extended as a log grows), then only the window is read, at most
    /// `max_output_bytes` of it. A NUL in the first 8 KiB or in a line shown
    /// is `is_binary`; a UTF-16 file is `is_binary` too (it cannot be cut
    /// into lines by bytes).
    pub fn read_window(
        &self,
        path: &ConfinedPath,
        first: u64,
        limit: u64,
        cancel: &AtomicBool,
    ) -> ToolResult<LineWindow> {
        if first == 0 || limit == 0 {
            return Err(ToolError::invalid_input(
                "a window starts at line 1 or later and holds at least one line",
            ));
        }
        let (mut file, meta) = self
            .workspace()
            .open_regular(path, "a window is read from a file")?;
        let io = |err: std::io::Error| self.workspace().io_error(&err, path);
        let mut head = vec![0u8; agent_tools_text::BINARY_SNIFF_BYTES];
        let head_len = read_up_to(&mut file, &mut head).map_err(io)?;
        head.truncate(head_len);
        let encoding = Encoding::sniff(&head);
        if looks_binary(&head) || encoding.is_utf16() {
            return Err(binary_error(path));
        }
        let size = meta.len();
        let bom = encoding.bom().len() as u64;
        if size <= bom {
            return Ok(LineWindow {
                lines: Vec::new(),
                first,
                total: 0,
                budget_hit: false,
            });
        }
        let streamed = Streamed {
            path,
            meta: &meta,
            encoding,
            over_limit: false,
        };
        let index = self.newline_index(&streamed, &mut file, cancel)?;
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(size - 1)).map_err(io)?;
        file.read_exact(&mut last).map_err(io)?;
        let total = index.total() + u64::from(last[0] != b'\n');
        if first > total {
            return Ok(LineWindow {
                lines: Vec::new(),
                first,
                total,
                budget_hit: false,
            });
        }
        let start = index
            .line_start(&mut file, first, cancel)
            .map_err(io)?
            .ok_or_else(cancelled)?;
        let skip_bom = if start == 0 { bom } else { 0 };
        file.seek(SeekFrom::Start(start + skip_bom)).map_err(io)?;
        let wanted = to_usize((total - first + 1).min(limit));
        let budget = self.limits().max_output_bytes;
        let lines = read_lines_forward(&mut file, wanted, budget).map_err(io)?;
        if lines.iter().any(|line| line.contains('\0')) {
            return Err(binary_error(path));
        }
        // read_lines_forward stops after the line that passed the budget;
        // that line is dropped so the window stays within it.
        let mut lines = lines;
        let mut used = 0usize;
        let mut kept = 0usize;
        for line in &lines {
            if used + line.len() + 1 > budget && kept > 0 {
                break;
            }
            used += line.len() + 1;
            kept += 1;
        }
        let budget_hit = kept < wanted;
        lines.truncate(kept);
        Ok(LineWindow {
            lines,
            first,
            total,
            budget_hit,
        })
    }
}

/// A file read in blocks rather than whole.
struct Streamed<'a> {
    path: &'a ConfinedPath,
    /// Taken on the open descriptor.
    meta: &'a std::fs::Metadata,
    /// UTF-8, with or without a BOM.
    encoding: Encoding,
    /// Over `max_file_bytes`: only readable from its end.
    over_limit: bool,
}

fn to_usize(count: u64) -> usize {
    usize::try_from(count).unwrap_or(usize::MAX)
}

/// How the continuation hint tells the caller to go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Continue {
    /// `offset=<next line>`.
    Forward,
    /// `offset=-<lines left>`: a file over the size limit can only be read
    /// from its end.
    Backward,
}

fn with_hint(
    mut out: String,
    first: usize,
    last: usize,
    total: usize,
    budget_hit: bool,
    next: Continue,
) -> String {
    let why = if budget_hit {
        " (output limit reached)"
    } else {
        ""
    };
    let offset = match next {
        Continue::Forward => format!("{}", last + 1),
        Continue::Backward => format!("-{}", total - last),
    };
    let _ = write!(
        out,
        "\n[showing lines {first}-{last} of {total}{why}; call again with offset={offset} to continue]\n"
    );
    out
}

/// How many of `available` lines a call with `limit` shows at most.
fn wanted_lines(available: usize, limit: u64) -> usize {
    available.min(usize::try_from(limit).unwrap_or(usize::MAX))
}

/// The width of the number column: the digits of the last number, at least six.
/// A line as shown: cut at [`MAX_LINE_CHARS`] characters with a marker saying
/// how many were dropped, counting `more` characters known to follow `text`.
fn shown_line(text: &str, more: usize) -> Cow<'_, str> {
    if more == 0 {
        return truncate_line(text);
    }
    let (cut, dropped) = match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => (cut, text[cut..].chars().count() + more),
        None => (text.len(), more),
    };
    Cow::Owned(format!(
        "{}{LINE_TRUNCATED_MARKER} {dropped} more characters]",
        &text[..cut]
    ))
}

fn binary_error(path: &ConfinedPath) -> ToolError {
    ToolError::new(
        ErrorCode::IsBinary,
        format!("{path}: appears to be a binary file; read_file shows text only"),
    )
}

fn decode_for_reading(path: &ConfinedPath, bytes: &[u8]) -> ToolResult<String> {
    match decode_lossy(bytes) {
        Ok((text, _, _)) => Ok(text),
        Err(DecodeError::Binary) => Err(binary_error(path)),
        Err(err) => Err(ToolError::new(
            ErrorCode::IsBinary,
            format!("{path}: {err}"),
        )),
    }
}

/// The lines of `text`: split on `\n`, a final newline does not start another line.
/// A text's lines as `read_file` numbers them: a final newline ends the
/// last line rather than starting another, and an empty text has none.
/// Counted at memory speed and split only from the first line shown on, so
/// a short read of a long file does not slice every line of it.
struct Lines<'a> {
    /// The text without its final newline.
    body: &'a str,
    /// How many lines there are.
    total: usize,
}

impl<'a> Lines<'a> {
    fn of(text: &'a str) -> Lines<'a> {
        if text.is_empty() {
            return Lines { body: "", total: 0 };
        }
        let body = text.strip_suffix('\n').unwrap_or(text);
        Lines {
            body,
            total: count_newlines(body.as_bytes()) + 1,
        }
    }

    /// The lines from line `first` (1-based, at most `total`) to the end.
    fn from(&self, first: usize) -> impl Iterator<Item = &'a str> + use<'a> {
        let body: &'a str = self.body;
        let start = match first.checked_sub(2) {
            None => 0,
            Some(newlines_before) => memchr::memchr_iter(b'\n', body.as_bytes())
                .nth(newlines_before)
                .map_or(body.len(), |at| at + 1),
        };
        let rest = if first > self.total {
            ""
        } else {
            &body[start..]
        };
        let count = self.total.saturating_sub(first.max(1) - 1);
        // Each line ends at the next newline (the last at the end of the
        // text); found by memchr's searcher, which costs a fraction of
        // `str::split` per short line.
        let mut ends = memchr::memchr_iter(b'\n', rest.as_bytes());
        let mut at = 0;
        (0..count).map(move |_| {
            let end = ends.next().unwrap_or(rest.len());
            let line = &rest[at.min(end)..end];
            at = end + 1;
            line
        })
    }
}

/// The 1-based first line for `offset` in a file of `total` lines.
fn first_line(offset: i64, total: usize, path: &ConfinedPath) -> ToolResult<usize> {
    if offset > 0 {
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        if offset > total {
            return Err(ToolError::invalid_input(format!(
                "offset {offset} is past the end of {path}, which has {total} line{}",
                if total == 1 { "" } else { "s" }
            )));
        }
        Ok(offset)
    } else {
        let back = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
        Ok(total.saturating_sub(back) + 1)
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// Where the last lines of a file start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TailStart {
    /// The byte where the first of them starts.
    start: u64,
    /// How many lines there are from there to the end (fewer than wanted
    /// when the file is shorter).
    lines: usize,
    /// The newlines in the bytes from `start` to the end, the one ending the
    /// last line included.
    newlines: u64,
}

/// Scans backwards from the end of a non-empty file for the start of its
/// last `wanted` lines, holding one block at a time.
fn find_tail_start(file: &mut File, size: u64, wanted: u64) -> std::io::Result<TailStart> {
    let mut pos = size;
    let mut newlines = 0u64;
    let mut final_newline = false;
    let mut chunk = vec![0u8; usize::try_from(TAIL_BLOCK.min(size)).unwrap_or(0)];
    while pos > 0 {
        let block = TAIL_BLOCK.min(pos);
        pos -= block;
        let chunk = &mut chunk[..usize::try_from(block).unwrap_or(0)];
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(chunk)?;
        for index in memchr::memrchr_iter(b'\n', chunk) {
            let at = pos + index as u64;
            if at + 1 == size {
                // The newline that ends the last line does not start a line.
                final_newline = true;
                continue;
            }
            newlines += 1;
            if newlines == wanted {
                return Ok(TailStart {
                    start: at + 1,
                    lines: to_usize(wanted),
                    newlines: wanted - 1 + u64::from(final_newline),
                });
            }
        }
    }
    Ok(TailStart {
        start: 0,
        lines: to_usize(newlines + 1),
        newlines: newlines + u64::from(final_newline),
    })
}

/// Bytes kept of one line read forwards: enough for [`MAX_LINE_CHARS`]
/// characters of up to four bytes each, and a few more so the cut never
/// splits the last of them.
const KEEP_PER_LINE: usize = MAX_LINE_CHARS * 4 + 4;

/// One line read forwards: its first bytes, and how many characters follow
/// them that were counted but not kept.
struct PartLine {
    kept: Vec<u8>,
    more_chars: usize,
}

impl PartLine {
    fn shown(&self) -> String {
        let text = String::from_utf8_lossy(&self.kept);
        shown_line(&text, self.more_chars).into_owned()
    }
}

/// Reads up to `wanted` lines forwards as they are shown, keeping at most
/// [`KEEP_PER_LINE`] bytes of each, and stopping once what they show is more
/// than `output_budget` (so the render, which adds the numbers, stops at the
/// same line as it would on the whole file).
fn read_lines_forward(
    file: &mut File,
    wanted: usize,
    output_budget: usize,
) -> std::io::Result<Vec<String>> {
    let mut reader = BufReader::with_capacity(TAIL_BLOCK as usize, file);
    let mut lines = Vec::new();
    let mut gathered = 0usize;
    while lines.len() < wanted && gathered <= output_budget {
        let mut line = PartLine {
            kept: Vec::new(),
            more_chars: 0,
        };
        let mut last_byte = None;
        let mut ended = false;
        // Once bytes of the line were dropped, none after them may be kept.
        let mut cut = false;
        loop {
            let buf = reader.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            let (part, used) = match memchr::memchr(b'\n', buf) {
                Some(at) => (&buf[..at], at + 1),
                None => (buf, buf.len()),
            };
            if let Some(&byte) = part.last() {
                last_byte = Some(byte);
            }
            let room = if cut {
                0
            } else {
                KEEP_PER_LINE.saturating_sub(line.kept.len())
            };
            let keep = utf8_boundary(part, room);
            cut |= keep < part.len();
            line.kept.extend_from_slice(&part[..keep]);
            // Characters past what is kept: every byte that does not continue
            // a UTF-8 sequence starts one.
            line.more_chars += part[keep..].iter().filter(|&&b| b & 0xC0 != 0x80).count();
            let found_newline = used > part.len();
            reader.consume(used);
            if found_newline {
                ended = true;
                break;
            }
        }
        if !ended && last_byte.is_none() {
            break; // end of file
        }
        // A CRLF line shows without its `\r`, kept or only counted.
        if last_byte == Some(b'\r') {
            if line.more_chars > 0 {
                line.more_chars -= 1;
            } else {
                line.kept.pop();
            }
        }
        let shown = line.shown();
        gathered += shown.len() + 1;
        lines.push(shown);
        if !ended {
            break;
        }
    }
    Ok(lines)
}

/// Reads all of `reader` if it holds at most `max` bytes (`None` if more:
/// a file that grew past the limit after its size was checked is caught,
/// and never more than one byte past the limit is read). `expected` is the
/// size the caller saw (0 if unknown): the buffer is sized for it up front,
/// so a file read whole takes its own size in memory rather than up to
/// twice that from doubling as it grows. The one bounded read of the tools.
pub fn read_bounded(
    reader: impl Read,
    max: u64,
    expected: u64,
) -> std::io::Result<Option<Vec<u8>>> {
    let room = usize::try_from(expected.min(max).saturating_add(1)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(room);
    Ok(read_bounded_into(reader, max, &mut bytes)?.then_some(bytes))
}

/// [`read_bounded`] into a buffer the caller sized (for room it needs
/// after the bytes, say): false when `reader` held more than `max` bytes.
pub fn read_bounded_into(
    reader: impl Read,
    max: u64,
    bytes: &mut Vec<u8>,
) -> std::io::Result<bool> {
    let start = bytes.len();
    reader.take(max.saturating_add(1)).read_to_end(bytes)?;
    Ok((bytes.len() - start) as u64 <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_first_and_last_lines_keeping_their_endings() {
        let text = "a\r\nb\nc\n";
        assert_eq!(pick_lines(text, LineSpan::Head(0)), "");
        assert_eq!(pick_lines(text, LineSpan::Head(1)), "a\r\n");
        assert_eq!(pick_lines(text, LineSpan::Head(9)), text);
        assert_eq!(pick_lines(text, LineSpan::Tail(0)), "");
        assert_eq!(pick_lines(text, LineSpan::Tail(1)), "c\n");
        assert_eq!(pick_lines(text, LineSpan::Tail(2)), "b\nc\n");
        assert_eq!(pick_lines(text, LineSpan::Tail(9)), text);
        assert_eq!(pick_lines("x\ny", LineSpan::Tail(1)), "y");
    }

    #[test]
    fn lines_treat_the_final_newline_as_a_terminator() {
        fn all(text: &str) -> Vec<&str> {
            Lines::of(text).from(1).collect()
        }
        assert_eq!(all(""), Vec::<&str>::new());
        assert_eq!(all("\n"), vec![""]);
        assert_eq!(all("a\nb"), vec!["a", "b"]);
        assert_eq!(all("a\nb\n"), vec!["a", "b"]);
        assert_eq!(all("a\n\n"), vec!["a", ""]);
        assert_eq!(all("a\r\nb\r\n"), vec!["a\r", "b\r"]);
    }

    /// From every first line, the lines are those of splitting the whole
    /// text, and there are `total` of them in all.
    #[test]
    fn lines_from_any_first_line_are_those_of_a_whole_split() {
        for text in [
            "",
            "\n",
            "\n\n",
            "a",
            "a\n",
            "a\nb",
            "a\n\nb\n",
            "x\ny\nz\n\n",
            "é\nü\n",
        ] {
            let lines = Lines::of(text);
            let whole: Vec<&str> = if text.is_empty() {
                Vec::new()
            } else {
                text.strip_suffix('\n')
                    .unwrap_or(text)
                    .split('\n')
                    .collect()
            };
            assert_eq!(lines.total, whole.len(), "{text:?}");
            for first in 1..=whole.len() {
                assert_eq!(
                    lines.from(first).collect::<Vec<_>>(),
                    whole[first - 1..].to_vec(),
                    "{text:?} from {first}"
                );
            }
        }
    }

    #[test]
    fn tail_start_is_found_across_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        let mut content = String::new();
        for i in 1..=50_000 {
            content.push_str(&format!("line {i}\n"));
        }
        std::fs::write(&path, &content).unwrap();
        let mut file = File::open(&path).unwrap();
        let size = content.len() as u64;
        let tail = find_tail_start(&mut file, size, 3).unwrap();
        assert_eq!(
            &content[tail.start as usize..],
            "line 49998\nline 49999\nline 50000\n"
        );
        assert_eq!((tail.lines, tail.newlines), (3, 3));
        assert_eq!(
            find_tail_start(&mut file, size, 60_000).unwrap(),
            TailStart {
                start: 0,
                lines: 50_000,
                newlines: 50_000
            }
        );
        // Without a final newline the last line has none to count.
        std::fs::write(&path, "a\nb\nc").unwrap();
        let mut file = File::open(&path).unwrap();
        let tail = find_tail_start(&mut file, 5, 2).unwrap();
        assert_eq!((tail.start, tail.lines, tail.newlines), (2, 2, 1));
        let tail = find_tail_start(&mut file, 5, 9).unwrap();
        assert_eq!((tail.start, tail.lines, tail.newlines), (0, 3, 2));
    }
}
