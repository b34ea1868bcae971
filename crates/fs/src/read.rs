//! `read_file`: numbered lines, paging, and tail reads of files of any size.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use agent_tools_confine::ConfinedPath;
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_text::{DecodeError, Encoding, NumberedLines, decode_lossy, looks_binary};

use crate::{FileTools, ReadFileArgs};

/// What `read_file` prints for a file with no lines.
pub const EMPTY_FILE: &str = "(empty file)";

/// Block size for reading a large file backwards.
const TAIL_BLOCK: u64 = 64 * 1024;

impl FileTools {
    /// Reads a text file as numbered lines. See the crate docs and SPEC.md.
    pub fn read_file(&self, args: &ReadFileArgs) -> ToolResult<String> {
        if args.offset == 0 {
            return Err(ToolError::invalid_input(
                "offset must be a 1-based line number, or negative to read the last lines; 0 is not a line",
            ));
        }
        if args.limit == 0 {
            return Err(ToolError::invalid_input("limit must be at least 1"));
        }
        let path = self.workspace().resolve(&args.path)?;
        let meta = self.workspace().metadata(&path)?;
        if meta.is_dir() {
            return Err(ToolError::new(
                ErrorCode::NotAFile,
                format!("{path}: is a directory; use list_dir to see its entries"),
            ));
        }
        let mut file = self.workspace().open_file(&path)?;
        let size = meta.len();
        if size > self.limits().max_file_bytes {
            if args.offset < 0 {
                return self.read_tail_of_large_file(&path, &mut file, size, args);
            }
            return Err(ToolError::new(
                ErrorCode::TooLarge,
                format!(
                    "{path}: {size} bytes is over the {} byte limit; read its end with a negative offset (e.g. offset=-100), or search it with grep",
                    self.limits().max_file_bytes
                ),
            ));
        }
        let mut bytes = Vec::with_capacity(size as usize);
        file.read_to_end(&mut bytes)
            .map_err(|err| self.workspace().io_error(&err, &path))?;
        let text = decode_for_reading(&path, &bytes)?;
        let lines = split_lines(&text);
        if lines.is_empty() {
            return Ok(EMPTY_FILE.to_string());
        }
        let total = lines.len();
        let first = first_line(args.offset, total, &path)?;
        Ok(self.render(&lines[first - 1..], first, total, args.limit))
    }

    /// Renders `lines` (the first being line `first`) up to `limit` lines and
    /// the output budget, with a continuation hint when lines remain.
    fn render(&self, lines: &[&str], first: usize, total: usize, limit: u64) -> String {
        let wanted = lines
            .len()
            .min(usize::try_from(limit).unwrap_or(usize::MAX));
        let last_wanted = first + wanted - 1;
        let mut view = NumberedLines::new(last_wanted);
        // Leave room for the hint so the facade's cut never eats it.
        let budget = self.limits().max_output_bytes.saturating_sub(160);
        let mut shown = 0;
        for line in &lines[..wanted] {
            let before = view.as_str().len();
            view.push(first + shown, line);
            if view.as_str().len() > budget && shown > 0 {
                // This line pushed us over: drop it and stop here.
                let mut kept = view.finish();
                kept.truncate(before);
                return with_hint(kept, first, first + shown - 1, total, true);
            }
            shown += 1;
        }
        let out = view.finish();
        let last = first + shown - 1;
        if last < total {
            with_hint(out, first, last, total, false)
        } else {
            out
        }
    }

    fn read_tail_of_large_file(
        &self,
        path: &ConfinedPath,
        file: &mut File,
        size: u64,
        args: &ReadFileArgs,
    ) -> ToolResult<String> {
        let io = |err: std::io::Error| self.workspace().io_error(&err, path);
        let mut head = vec![0u8; agent_tools_text::BINARY_SNIFF_BYTES];
        let head_len = read_up_to(file, &mut head).map_err(io)?;
        head.truncate(head_len);
        if looks_binary(&head) {
            return Err(binary_error(path));
        }
        if Encoding::sniff(&head).is_utf16() {
            return Err(ToolError::new(
                ErrorCode::TooLarge,
                format!(
                    "{path}: a UTF-16 file of {size} bytes is over the {} byte limit and cannot be read in parts",
                    self.limits().max_file_bytes
                ),
            ));
        }
        let wanted = args.offset.unsigned_abs();
        let (start, tail) =
            read_last_lines(file, size, wanted, self.limits().max_output_bytes).map_err(io)?;
        if looks_binary(&tail) {
            return Err(binary_error(path));
        }
        // Real line numbers need the count of lines before the tail; counting
        // newlines streams the file in blocks and never holds it whole.
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let before = count_newlines(&mut file.take(start)).map_err(io)?;
        let (text, _, _) = decode_lossy(&tail).map_err(|_| binary_error(path))?;
        let lines = split_lines(&text);
        let total = before + lines.len();
        Ok(self.render(&lines, before + 1, total, args.limit))
    }
}

fn with_hint(mut out: String, first: usize, last: usize, total: usize, budget_hit: bool) -> String {
    let why = if budget_hit {
        " (output limit reached)"
    } else {
        ""
    };
    out.push_str(&format!(
        "\n[showing lines {first}-{last} of {total}{why}; call again with offset={} to continue]\n",
        last + 1
    ));
    out
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
fn split_lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').collect()
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

/// Reads backwards from the end until `wanted` lines are found (or the bytes
/// gathered pass a cap well above what could be shown). Returns the offset
/// where the first returned line starts and the bytes from there to the end.
fn read_last_lines(
    file: &mut File,
    size: u64,
    wanted: u64,
    output_budget: usize,
) -> std::io::Result<(u64, Vec<u8>)> {
    // Never gather more than a few times the output budget: the view cannot
    // show more than that anyway.
    let cap = (output_budget as u64).saturating_mul(4).max(TAIL_BLOCK);
    let mut tail: Vec<u8> = Vec::new();
    let mut pos = size;
    let mut newlines = 0u64;
    let mut skip_final_newline = true;
    loop {
        if pos == 0 {
            return Ok((0, tail));
        }
        let block = TAIL_BLOCK.min(pos);
        pos -= block;
        let mut chunk = vec![0u8; block as usize];
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(&mut chunk)?;
        for index in (0..chunk.len()).rev() {
            if chunk[index] != b'\n' {
                skip_final_newline = false;
                continue;
            }
            if skip_final_newline {
                // The newline that ends the last line does not start a line.
                skip_final_newline = false;
                continue;
            }
            newlines += 1;
            if newlines == wanted {
                let start = pos + index as u64 + 1;
                let mut out = chunk[index + 1..].to_vec();
                out.extend_from_slice(&tail);
                return Ok((start, out));
            }
        }
        chunk.extend_from_slice(&tail);
        tail = chunk;
        if tail.len() as u64 > cap {
            // Too many bytes for the lines asked: start at the next line break
            // inside what we have so the view begins on a whole line.
            let cut = tail.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
            return Ok((pos + cut as u64, tail[cut..].to_vec()));
        }
    }
}

fn count_newlines(reader: &mut impl Read) -> std::io::Result<usize> {
    let mut buf = vec![0u8; 256 * 1024];
    let mut count = 0;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            return Ok(count);
        }
        count += buf[..n].iter().filter(|&&b| b == b'\n').count();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_lines_treats_the_final_newline_as_a_terminator() {
        assert_eq!(split_lines(""), Vec::<&str>::new());
        assert_eq!(split_lines("\n"), vec![""]);
        assert_eq!(split_lines("a\nb"), vec!["a", "b"]);
        assert_eq!(split_lines("a\nb\n"), vec!["a", "b"]);
        assert_eq!(split_lines("a\n\n"), vec!["a", ""]);
    }

    #[test]
    fn tail_reader_finds_the_last_lines_across_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        let mut content = String::new();
        for i in 1..=50_000 {
            content.push_str(&format!("line {i}\n"));
        }
        std::fs::write(&path, &content).unwrap();
        let mut file = File::open(&path).unwrap();
        let size = content.len() as u64;
        let (start, tail) = read_last_lines(&mut file, size, 3, 1 << 20).unwrap();
        assert_eq!(tail, b"line 49998\nline 49999\nline 50000\n");
        assert_eq!(&content.as_bytes()[start as usize..], &tail[..]);
        let (start, tail) = read_last_lines(&mut file, size, 60_000, 1 << 30).unwrap();
        assert_eq!(start, 0);
        assert_eq!(tail.len(), content.len());
    }
}
