//! The unified-diff parser.

use crate::error::PatchError;
use crate::model::{FilePatch, Format, Hunk, HunkLine, LineKind, Operation, Patch};

/// Parses a patch into a [`Patch`]: a codex patch (`*** Begin Patch` ...
/// `*** End Patch`, optionally inside an `apply_patch <<'EOF'` heredoc) or
/// a unified diff (plain or git-style), told apart by the first non-blank
/// line.
///
/// Text before the first file header (a commit message, mail headers, a
/// diffstat) and after the last hunk (a mail signature) is ignored. Each
/// file block starts at a `diff --git` line or at a `---` line directly
/// followed by a `+++` line.
///
/// # Errors
///
/// [`PatchError::Parse`] when the text is not a patch or a hunk is malformed
/// (the message says what was expected and the 1-based line where), and
/// [`PatchError::BinaryPatch`] for `GIT binary patch` / `Binary files ...
/// differ` blocks.
pub fn parse(input: impl AsRef<[u8]>) -> Result<Patch, PatchError> {
    let input = input.as_ref();
    if crate::codex::is_codex(input) {
        return crate::codex::parse(input);
    }
    Parser::new(input).run()
}

/// Names from a `---`/`+++` pair; `None` stands for `/dev/null`.
type NamePair = (Option<Vec<u8>>, Option<Vec<u8>>);

struct Parser<'a> {
    lines: Vec<&'a [u8]>,
    pos: usize,
}

fn err(line: usize, message: impl Into<String>) -> PatchError {
    PatchError::Parse {
        line,
        message: message.into(),
    }
}

/// A header line without a trailing carriage return.
fn hdr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn is_hunk_header(line: &[u8]) -> bool {
    line.starts_with(b"@@ ") || line == b"@@"
}

fn is_binary_line(line: &[u8]) -> bool {
    line.starts_with(b"GIT binary patch")
        || (line.starts_with(b"Binary files ") && line.ends_with(b" differ"))
}

impl<'a> Parser<'a> {
    fn new(input: &'a [u8]) -> Self {
        let mut lines: Vec<&[u8]> = input
            .split_inclusive(|b| *b == b'\n')
            .map(|l| l.strip_suffix(b"\n").unwrap_or(l))
            .collect();
        // A patch converted to CRLF as a whole has a CR on its hunk headers,
        // which a diff tool never writes there (a CRLF file's lines carry
        // their CR in the content lines only). Drop one CR from every line
        // of such a patch, so its content lines are what the tool wrote.
        let mut headers = lines.iter().filter(|l| l.starts_with(b"@@ -")).peekable();
        let crlf = headers.peek().is_some() && headers.all(|l| l.ends_with(b"\r"));
        if crlf {
            for l in &mut lines {
                *l = l.strip_suffix(b"\r").unwrap_or(l);
            }
        }
        Parser { lines, pos: 0 }
    }

    /// 1-based line number of the current line.
    fn lineno(&self) -> usize {
        self.pos + 1
    }

    fn peek(&self) -> Option<&'a [u8]> {
        self.lines.get(self.pos).copied()
    }

    fn run(mut self) -> Result<Patch, PatchError> {
        let mut files = Vec::new();
        while let Some(raw) = self.peek() {
            let line = hdr(raw);
            if line.starts_with(b"diff --git ") {
                files.push(self.git_block()?);
            } else if self.at_plain_header() {
                files.push(self.plain_block()?);
            } else if is_binary_line(line) {
                return Err(PatchError::BinaryPatch {
                    line: self.lineno(),
                    path: None,
                });
            } else if is_hunk_header(line) {
                return Err(err(
                    self.lineno(),
                    "hunk header without a file header; expected `--- old` and `+++ new` lines (or a `diff --git` line) before it",
                ));
            } else if line == b"-- " || line == b"--" {
                // Mail signature: the rest is not part of the patch.
                break;
            } else {
                self.pos += 1;
            }
        }
        if files.is_empty() {
            return Err(err(
                1,
                "no file changes found; expected a `diff --git` line or a `--- old` line followed by a `+++ new` line",
            ));
        }
        Ok(Patch { files })
    }

    fn at_plain_header(&self) -> bool {
        let Some(line) = self.peek() else {
            return false;
        };
        hdr(line).starts_with(b"--- ")
            && self
                .lines
                .get(self.pos + 1)
                .is_some_and(|next| hdr(next).starts_with(b"+++ "))
    }

    /// Reads a `--- name` / `+++ name` pair at the current position.
    fn name_pair(&mut self) -> Result<NamePair, PatchError> {
        let old_line = self.lineno();
        let old = header_name(&hdr(self.lines[self.pos])[4..], old_line)?;
        let new_line = old_line + 1;
        let new = header_name(&hdr(self.lines[self.pos + 1])[4..], new_line)?;
        self.pos += 2;
        if old.is_none() && new.is_none() {
            return Err(err(
                old_line,
                "both `---` and `+++` name /dev/null; expected at least one real path",
            ));
        }
        Ok((old, new))
    }

    fn plain_block(&mut self) -> Result<FilePatch, PatchError> {
        let start = self.lineno();
        let (old, new) = self.name_pair()?;
        let strip = prefixes_present(old.as_deref(), new.as_deref());
        let old_path = old
            .map(|n| finish_path(n, strip.then_some(b"a/"), start))
            .transpose()?;
        let new_path = new
            .map(|n| finish_path(n, strip.then_some(b"b/"), start + 1))
            .transpose()?;
        match self.peek() {
            Some(l) if is_hunk_header(hdr(l)) => {}
            Some(l) if is_binary_line(hdr(l)) => {
                return Err(PatchError::BinaryPatch {
                    line: self.lineno(),
                    path: new_path.or(old_path),
                });
            }
            _ => {
                return Err(err(
                    self.lineno(),
                    "expected a hunk header `@@ -start,count +start,count @@` after the `---`/`+++` lines",
                ));
            }
        }
        let hunks = self.hunks()?;
        let operation = match (&old_path, &new_path) {
            (None, _) => Operation::Create,
            (_, None) => Operation::Delete,
            (Some(a), Some(b)) if a != b => Operation::Rename,
            _ => Operation::Modify,
        };
        Ok(FilePatch {
            operation,
            old_path,
            new_path,
            old_mode: None,
            new_mode: None,
            similarity: None,
            dissimilarity: None,
            index: None,
            git: false,
            hunks,
            line: start,
            format: Format::Unified,
        })
    }

    fn git_block(&mut self) -> Result<FilePatch, PatchError> {
        let start = self.lineno();
        let names = hdr(self.lines[self.pos])["diff --git ".len()..].to_vec();
        let (git_old, git_new) = split_git_names(&names, start)?;
        let strip = git_old.starts_with(b"a/") && git_new.starts_with(b"b/");
        self.pos += 1;

        let mut old_mode = None;
        let mut new_mode = None;
        let mut created = false;
        let mut deleted = false;
        let mut similarity = None;
        let mut dissimilarity = None;
        let mut index = None;
        let mut rename_from = None;
        let mut rename_to = None;
        let mut copy_from = None;
        let mut copy_to = None;
        let mut header_names: Option<NamePair> = None;

        while let Some(raw) = self.peek() {
            let line = hdr(raw);
            let n = self.lineno();
            if let Some(v) = line.strip_prefix(b"old mode ") {
                old_mode = Some(parse_mode(v, n)?);
            } else if let Some(v) = line.strip_prefix(b"new mode ") {
                new_mode = Some(parse_mode(v, n)?);
            } else if let Some(v) = line.strip_prefix(b"deleted file mode ") {
                old_mode = Some(parse_mode(v, n)?);
                deleted = true;
            } else if let Some(v) = line.strip_prefix(b"new file mode ") {
                new_mode = Some(parse_mode(v, n)?);
                created = true;
            } else if let Some(v) = line.strip_prefix(b"index ") {
                index = Some(String::from_utf8_lossy(v).into_owned());
            } else if let Some(v) = line.strip_prefix(b"similarity index ") {
                similarity = Some(parse_percent(v, n)?);
            } else if let Some(v) = line.strip_prefix(b"dissimilarity index ") {
                dissimilarity = Some(parse_percent(v, n)?);
            } else if let Some(v) = line
                .strip_prefix(b"rename from ")
                .or_else(|| line.strip_prefix(b"rename old "))
            {
                rename_from = Some(finish_path(unquote_name(v, n)?, None, n)?);
            } else if let Some(v) = line
                .strip_prefix(b"rename to ")
                .or_else(|| line.strip_prefix(b"rename new "))
            {
                rename_to = Some(finish_path(unquote_name(v, n)?, None, n)?);
            } else if let Some(v) = line.strip_prefix(b"copy from ") {
                copy_from = Some(finish_path(unquote_name(v, n)?, None, n)?);
            } else if let Some(v) = line.strip_prefix(b"copy to ") {
                copy_to = Some(finish_path(unquote_name(v, n)?, None, n)?);
            } else if is_binary_line(line) {
                let path = rename_to.clone().or(copy_to.clone()).or_else(|| {
                    let name = if strip {
                        git_new.strip_prefix(b"b/").unwrap_or(&git_new)
                    } else {
                        &git_new
                    };
                    String::from_utf8(name.to_vec()).ok()
                });
                return Err(PatchError::BinaryPatch { line: n, path });
            } else if self.at_plain_header() {
                header_names = Some(self.name_pair()?);
                break;
            } else {
                break;
            }
            self.pos += 1;
        }

        let hunks = if self.peek().is_some_and(|l| is_hunk_header(hdr(l))) {
            self.hunks()?
        } else {
            Vec::new()
        };
        if header_names.is_some() && hunks.is_empty() {
            return Err(err(
                self.lineno(),
                "expected a hunk header `@@ -start,count +start,count @@` after the `---`/`+++` lines",
            ));
        }

        let fallback_old = finish_path(git_old, strip.then_some(b"a/"), start)?;
        let fallback_new = finish_path(git_new, strip.then_some(b"b/"), start)?;
        let had_header_names = header_names.is_some();
        let (mut old_path, mut new_path) = match header_names {
            Some((o, n)) => (
                o.map(|o| finish_path(o, strip.then_some(b"a/"), start))
                    .transpose()?,
                n.map(|n| finish_path(n, strip.then_some(b"b/"), start))
                    .transpose()?,
            ),
            None => (Some(fallback_old), Some(fallback_new)),
        };
        let operation;
        if created || (had_header_names && old_path.is_none()) {
            if deleted || rename_from.is_some() || copy_from.is_some() {
                return Err(err(
                    start,
                    "a file block cannot both create a file and delete, rename or copy one",
                ));
            }
            operation = Operation::Create;
            old_path = None;
        } else if deleted || (had_header_names && new_path.is_none()) {
            if rename_from.is_some() || copy_from.is_some() {
                return Err(err(
                    start,
                    "a file block cannot both delete a file and rename or copy one",
                ));
            }
            operation = Operation::Delete;
            new_path = None;
        } else if rename_from.is_some() || rename_to.is_some() {
            let (Some(from), Some(to)) = (rename_from, rename_to) else {
                return Err(err(
                    start,
                    "a rename needs both a `rename from` and a `rename to` line",
                ));
            };
            if copy_from.is_some() || copy_to.is_some() {
                return Err(err(start, "a file block cannot both rename and copy"));
            }
            operation = Operation::Rename;
            old_path = Some(from);
            new_path = Some(to);
        } else if copy_from.is_some() || copy_to.is_some() {
            let (Some(from), Some(to)) = (copy_from, copy_to) else {
                return Err(err(
                    start,
                    "a copy needs both a `copy from` and a `copy to` line",
                ));
            };
            operation = Operation::Copy;
            old_path = Some(from);
            new_path = Some(to);
        } else {
            operation = if old_path != new_path {
                Operation::Rename
            } else {
                Operation::Modify
            };
            if operation == Operation::Modify
                && hunks.is_empty()
                && (old_mode.is_none() || new_mode.is_none())
            {
                return Err(err(
                    start,
                    "git file block changes nothing; expected hunks, a mode change, or a create/delete/rename/copy header",
                ));
            }
        }
        Ok(FilePatch {
            operation,
            old_path,
            new_path,
            old_mode,
            new_mode,
            similarity,
            dissimilarity,
            index,
            git: true,
            hunks,
            line: start,
            format: Format::Unified,
        })
    }

    /// Parses consecutive hunks starting at a hunk header.
    fn hunks(&mut self) -> Result<Vec<Hunk>, PatchError> {
        let mut hunks = Vec::new();
        while let Some(raw) = self.peek() {
            let line = hdr(raw);
            if is_hunk_header(line) {
                hunks.push(self.hunk(hunks.len() + 1)?);
                continue;
            }
            if let Some(last) = hunks.last() {
                let extra_body = matches!(line.first(), Some(b'+' | b'-' | b' '))
                    && line != b"-- "
                    && line != b"--"
                    && !self.at_plain_header();
                if extra_body {
                    return Err(err(
                        self.lineno(),
                        format!(
                            "hunk #{} ({}) has more lines than its header says ({} old / {} new); expected a new hunk or file header here",
                            hunks.len(),
                            last.header(),
                            last.old_count,
                            last.new_count
                        ),
                    ));
                }
            }
            break;
        }
        Ok(hunks)
    }

    fn hunk(&mut self, number: usize) -> Result<Hunk, PatchError> {
        let header_line = self.lineno();
        let (old_start, old_count, new_start, new_count, section) =
            parse_hunk_header(hdr(self.lines[self.pos]), header_line)?;
        self.pos += 1;
        let mut hunk = Hunk {
            old_start,
            old_count,
            new_start,
            new_count,
            section,
            lines: Vec::new(),
            old_missing_newline: false,
            new_missing_newline: false,
            line: header_line,
            context: Vec::new(),
            end_of_file: false,
        };
        let (mut old_left, mut new_left) = (old_count, new_count);
        let short = |hunk: &Hunk, at: usize, old_left: usize, new_left: usize, what: &str| {
            err(
                at,
                format!(
                    "hunk #{number} ({}) at line {header_line} is short by {old_left} old / {new_left} new lines; {what}",
                    hunk.header()
                ),
            )
        };
        loop {
            // A `\ No newline at end of file` marker refers to the line before.
            if let Some(raw) = self.peek()
                && raw.first() == Some(&b'\\')
            {
                let n = self.lineno();
                match hunk.lines.last().map(|l| l.kind) {
                    None => {
                        return Err(err(
                            n,
                            "`\\ No newline at end of file` before any hunk line",
                        ));
                    }
                    Some(LineKind::Context) => {
                        hunk.old_missing_newline = true;
                        hunk.new_missing_newline = true;
                    }
                    Some(LineKind::Delete) => hunk.old_missing_newline = true,
                    Some(LineKind::Insert) => hunk.new_missing_newline = true,
                }
                self.pos += 1;
                continue;
            }
            if old_left == 0 && new_left == 0 {
                break;
            }
            let n = self.lineno();
            let Some(raw) = self.peek() else {
                return Err(short(&hunk, n, old_left, new_left, "the patch ends here"));
            };
            let (kind, content) = match raw.first() {
                Some(b' ') => (LineKind::Context, &raw[1..]),
                Some(b'-') => (LineKind::Delete, &raw[1..]),
                Some(b'+') => (LineKind::Insert, &raw[1..]),
                // An empty line (trailing space stripped by an editor) is an
                // empty context line.
                None => (LineKind::Context, raw),
                Some(b'\r') if raw.len() == 1 => (LineKind::Context, &raw[..0]),
                Some(_) => {
                    let line = hdr(raw);
                    let what = if is_hunk_header(line) || line.starts_with(b"diff ") {
                        "found the next header instead".to_owned()
                    } else {
                        "expected a line starting with ' ', '-', '+' or '\\'".to_owned()
                    };
                    return Err(short(&hunk, n, old_left, new_left, &what));
                }
            };
            let (old_side, new_side) = match kind {
                LineKind::Context => (true, true),
                LineKind::Delete => (true, false),
                LineKind::Insert => (false, true),
            };
            if (old_side && old_left == 0) || (new_side && new_left == 0) {
                return Err(err(
                    n,
                    format!(
                        "hunk #{number} ({}) at line {header_line} has more {} lines than its header says",
                        hunk.header(),
                        if old_side && old_left == 0 {
                            "old"
                        } else {
                            "new"
                        }
                    ),
                ));
            }
            if (old_side && hunk.old_missing_newline) || (new_side && hunk.new_missing_newline) {
                return Err(err(
                    n,
                    "a hunk line follows `\\ No newline at end of file` on the same side; that marker must end its side",
                ));
            }
            if old_side {
                old_left -= 1;
            }
            if new_side {
                new_left -= 1;
            }
            hunk.lines.push(HunkLine {
                kind,
                content: content.to_vec(),
            });
            self.pos += 1;
        }
        Ok(hunk)
    }
}

/// Parses `@@ -a[,b] +c[,d] @@[ section]`.
fn parse_hunk_header(
    line: &[u8],
    n: usize,
) -> Result<(usize, usize, usize, usize, String), PatchError> {
    let bad = || {
        err(
            n,
            format!(
                "invalid hunk header `{}`; expected `@@ -start[,count] +start[,count] @@`",
                String::from_utf8_lossy(line)
            ),
        )
    };
    let rest = line.strip_prefix(b"@@ -").ok_or_else(bad)?;
    let (old_start, old_count, rest) = parse_range(rest).ok_or_else(bad)?;
    let rest = rest.strip_prefix(b" +").ok_or_else(bad)?;
    let (new_start, new_count, rest) = parse_range(rest).ok_or_else(bad)?;
    let rest = rest.strip_prefix(b" @@").ok_or_else(bad)?;
    let section = rest.strip_prefix(b" ").unwrap_or(rest);
    if (old_start == 0 && old_count != 0) || (new_start == 0 && new_count != 0) {
        return Err(err(
            n,
            format!(
                "invalid hunk header `{}`; a range starting at line 0 must be empty",
                String::from_utf8_lossy(line)
            ),
        ));
    }
    Ok((
        old_start,
        old_count,
        new_start,
        new_count,
        String::from_utf8_lossy(section).into_owned(),
    ))
}

fn parse_range(s: &[u8]) -> Option<(usize, usize, &[u8])> {
    let (start, rest) = parse_number(s)?;
    if let Some(rest) = rest.strip_prefix(b",") {
        let (count, rest) = parse_number(rest)?;
        Some((start, count, rest))
    } else {
        Some((start, 1, rest))
    }
}

fn parse_number(s: &[u8]) -> Option<(usize, &[u8])> {
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut value: usize = 0;
    for &d in &s[..digits] {
        value = value.checked_mul(10)?.checked_add(usize::from(d - b'0'))?;
    }
    Some((value, &s[digits..]))
}

fn parse_mode(v: &[u8], n: usize) -> Result<u32, PatchError> {
    let s = std::str::from_utf8(v).ok().map(str::trim);
    s.and_then(|s| {
        (!s.is_empty() && s.len() <= 7)
            .then(|| u32::from_str_radix(s, 8).ok())
            .flatten()
    })
    .ok_or_else(|| {
        err(
            n,
            format!(
                "invalid file mode `{}`; expected an octal mode like 100644",
                String::from_utf8_lossy(v)
            ),
        )
    })
}

fn parse_percent(v: &[u8], n: usize) -> Result<u8, PatchError> {
    let s = v.strip_suffix(b"%").unwrap_or(v);
    match parse_number(s) {
        Some((p, rest)) if rest.is_empty() && p <= 100 => {
            u8::try_from(p).map_err(|_| bad_pct(v, n))
        }
        _ => Err(bad_pct(v, n)),
    }
}

fn bad_pct(v: &[u8], n: usize) -> PatchError {
    err(
        n,
        format!(
            "invalid similarity `{}`; expected a percentage like 95%",
            String::from_utf8_lossy(v)
        ),
    )
}

/// The name on a `---`/`+++` line: `None` for `/dev/null`. An unquoted name
/// ends at a tab (after which tools put a timestamp).
fn header_name(v: &[u8], n: usize) -> Result<Option<Vec<u8>>, PatchError> {
    let name = if v.first() == Some(&b'"') {
        let (name, _) = unquote(v, n)?;
        name
    } else {
        let end = v.iter().position(|b| *b == b'\t').unwrap_or(v.len());
        v[..end].to_vec()
    };
    if name == b"/dev/null" {
        Ok(None)
    } else {
        Ok(Some(name))
    }
}

/// A name on a `rename`/`copy` line: quoted or the rest of the line.
fn unquote_name(v: &[u8], n: usize) -> Result<Vec<u8>, PatchError> {
    if v.first() == Some(&b'"') {
        Ok(unquote(v, n)?.0)
    } else {
        Ok(v.to_vec())
    }
}

/// Decodes a C-style quoted string starting at `v[0] == '"'`; returns the
/// bytes and the remainder after the closing quote.
fn unquote(v: &[u8], n: usize) -> Result<(Vec<u8>, &[u8]), PatchError> {
    let bad = || err(n, "invalid quoted path; expected a C-style quoted string");
    let mut out = Vec::new();
    let mut i = 1;
    while i < v.len() {
        match v[i] {
            b'"' => return Ok((out, &v[i + 1..])),
            b'\\' => {
                let c = *v.get(i + 1).ok_or_else(bad)?;
                i += 2;
                match c {
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b't' => out.push(b'\t'),
                    b'n' => out.push(b'\n'),
                    b'v' => out.push(11),
                    b'f' => out.push(12),
                    b'r' => out.push(b'\r'),
                    b'"' | b'\\' => out.push(c),
                    b'0'..=b'7' => {
                        let mut value = u32::from(c - b'0');
                        for _ in 0..2 {
                            match v.get(i) {
                                Some(d @ b'0'..=b'7') => {
                                    value = value * 8 + u32::from(d - b'0');
                                    i += 1;
                                }
                                _ => return Err(bad()),
                            }
                        }
                        out.push(u8::try_from(value).map_err(|_| bad())?);
                    }
                    _ => return Err(bad()),
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Err(bad())
}

/// Splits the names of a `diff --git A B` line.
fn split_git_names(v: &[u8], n: usize) -> Result<(Vec<u8>, Vec<u8>), PatchError> {
    if v.first() == Some(&b'"') {
        let (a, rest) = unquote(v, n)?;
        let rest = rest.strip_prefix(b" ").ok_or_else(|| missing_names(n))?;
        return Ok((a, unquote_name(rest, n)?));
    }
    if v.last() == Some(&b'"')
        && let Some(q) = find(v, b" \"")
    {
        let (b, _) = unquote(&v[q + 1..], n)?;
        return Ok((v[..q].to_vec(), b));
    }
    // Same name on both sides: the split point is the middle.
    if v.len() % 2 == 1 {
        let mid = v.len() / 2;
        let (a, b) = (&v[..mid], &v[mid + 1..]);
        if v[mid] == b' ' && a.get(2..) == b.get(2..) {
            return Ok((a.to_vec(), b.to_vec()));
        }
    }
    if let Some(i) = find(v, b" b/") {
        return Ok((v[..i].to_vec(), v[i + 1..].to_vec()));
    }
    if let Some(i) = v.iter().position(|b| *b == b' ') {
        return Ok((v[..i].to_vec(), v[i + 1..].to_vec()));
    }
    Err(missing_names(n))
}

fn missing_names(n: usize) -> PatchError {
    err(n, "expected two names after `diff --git`")
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Whether a plain diff's names carry the `a/`/`b/` prefixes git writes.
fn prefixes_present(old: Option<&[u8]>, new: Option<&[u8]>) -> bool {
    old.is_none_or(|o| o.starts_with(b"a/")) && new.is_none_or(|n| n.starts_with(b"b/"))
}

fn finish_path(name: Vec<u8>, prefix: Option<&[u8]>, n: usize) -> Result<String, PatchError> {
    let name = match prefix {
        Some(p) => name.strip_prefix(p).map(<[u8]>::to_vec).unwrap_or(name),
        None => name,
    };
    let name = String::from_utf8(name).map_err(|_| err(n, "path is not valid UTF-8"))?;
    if name.is_empty() {
        return Err(err(n, "empty path; expected a file name"));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquote_handles_escapes() {
        let (name, rest) = unquote(br#""a\tb\"c\\d\303\251" tail"#, 1).unwrap();
        assert_eq!(name, b"a\tb\"c\\d\xc3\xa9");
        assert_eq!(rest, b" tail");
        assert!(unquote(br#""\400""#, 1).is_err());
        assert!(unquote(br#""open"#, 1).is_err());
    }

    #[test]
    fn git_names_split() {
        let split = |s: &str| {
            let (a, b) = split_git_names(s.as_bytes(), 1).unwrap();
            (String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap())
        };
        assert_eq!(split("a/x y b/x y"), ("a/x y".into(), "b/x y".into()));
        assert_eq!(split("a/old b/new"), ("a/old".into(), "b/new".into()));
        assert_eq!(
            split(r#""a/q\"" "b/q\"""#),
            ("a/q\"".into(), "b/q\"".into())
        );
        assert_eq!(split(r#"a/p "b/q\tr""#), ("a/p".into(), "b/q\tr".into()));
        assert!(split_git_names(b"", 1).is_err());
    }

    #[test]
    fn hunk_header_ranges() {
        assert_eq!(
            parse_hunk_header(b"@@ -1 +2,0 @@ fn x", 1).unwrap(),
            (1, 1, 2, 0, "fn x".to_owned())
        );
        assert!(parse_hunk_header(b"@@ -1 +2", 1).is_err());
        assert!(parse_hunk_header(b"@@ -99999999999999999999999 +1 @@", 1).is_err());
    }
}
