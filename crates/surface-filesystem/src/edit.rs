//! `edit_file` and `edit_files`: the edits of seed 001, applied in order to
//! an in-memory copy, all or nothing, written back through the engine's
//! atomic writer (or shown as a unified diff in a dry run).
//!
//! Per edit: a literal `oldText` is found exactly (and must be unique
//! unless `limit` says otherwise), else, with `limit: 1`, by the
//! whitespace-normalized line match, whose `newText` takes the matched
//! block's indentation. `caseInsensitive` and `isRegex` match with an
//! ECMAScript regex (`agent_tools_fs::ecma`); regex `newText` is a
//! replacement template.

use std::sync::PoisonError;
use std::sync::atomic::AtomicBool;

use agent_tools::{CallContext, Content, ErrorCode, Reply, ToolError, ToolResult};
use agent_tools_confine::ConfinedPath;
use agent_tools_fs::ecma::{EcmaBudget, EcmaError, EcmaRegex, EcmaStop, Template};
use agent_tools_fs::tolerant::{self, Verdict};
use agent_tools_fs::{Expected, FileStamp, open_regular, read_only, write_atomic};
use agent_tools_text::{DecodeError, LineBreaks, LineEnding, TextFile, count_newlines};

use crate::args::{EditFileArgs, EditFilesArgs, EditItem};
use crate::roots::{Need, Root, Roots};
use crate::rpc_code;

/// What a dry run answers when the edits change nothing.
const NO_CHANGES: &str = "(no changes)";

/// The most files one `edit_files` call changes.
pub const MAX_EDIT_FILES: usize = 1000;

pub(crate) const EDIT_FILE: &str = "Edit a text file: each of `edits` replaces `oldText` with \
`newText`, in order, all or nothing, written atomically. A literal oldText must occur exactly \
once (else it fails with `oldText is not unique`; add context, or set limit: 0 for all or N for \
the first N); when it does not occur exactly, a block whose lines match with whitespace \
normalized is used (only if unique) and newText takes its indentation. isRegex: oldText is an \
ECMAScript regex (^/$ at every line, . within a line) and newText may use \\1-\\9 or $1-$9, \
\\0/$0/$& (whole match), $$ (a $). caseInsensitive matches either case. Prefer literal edits; \
run regex and limit: 0 edits with dryRun: true first (a unified diff, or `(no changes)`). \
Answers `Successfully edited PATH`.";

pub(crate) const EDIT_FILES: &str = "Apply the same edits (as edit_file) to many files: \
`paths` holds absolute paths and/or glob patterns (with *, ?, {}, or []), expanded to the \
files they match. One result item per file; a file that fails is reported in its item as \
`PATH: [error CODE] message` and the others are still edited. A glob matching nothing fails \
the call (-32002), as does a match outside the allowed directories (-32001). This rewrites \
many files at once: preview with dryRun: true first.";

pub(crate) fn edit_file(
    roots: &Roots,
    args: EditFileArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let answer = edit_one(
        roots,
        &args.path,
        &args.edits,
        args.dry_run,
        call.cancel.flag(),
    )?;
    if args.dry_run || answer == NO_CHANGES {
        return Ok(answer);
    }
    let (root, path) = roots.resolve(&args.path, Need::Read)?;
    Ok(crate::with_diagnostics(&root, &path, answer, call))
}

pub(crate) fn edit_files(
    roots: &Roots,
    args: EditFilesArgs,
    call: &CallContext,
) -> ToolResult<Reply> {
    let mut targets: Vec<String> = Vec::new();
    for entry in &args.paths {
        if is_glob(entry) {
            let matched = expand_glob(roots, entry, call.cancel.flag())?;
            if matched.is_empty() {
                return Err(ToolError::new(
                    ErrorCode::NotFound,
                    format!(
                        "{entry}: the glob matched no files; check the pattern with glob_search"
                    ),
                ));
            }
            targets.extend(matched);
        } else {
            targets.push(entry.clone());
        }
    }
    let mut seen = std::collections::HashSet::new();
    targets.retain(|target| seen.insert(target.clone()));
    if targets.len() > MAX_EDIT_FILES {
        return Err(ToolError::invalid_input(format!(
            "paths name {} files; at most {MAX_EDIT_FILES} per call: narrow the globs",
            targets.len()
        )));
    }
    let mut written = Vec::new();
    let mut texts: Vec<String> = targets
        .iter()
        .enumerate()
        .map(|(at, target)| {
            match edit_one(roots, target, &args.edits, args.dry_run, call.cancel.flag()) {
                Ok(text) if text == NO_CHANGES => format!("{target}: {text}"),
                Ok(text) => {
                    if !args.dry_run {
                        written.push((at, target.as_str()));
                    }
                    text
                }
                Err(err) => format!(
                    "{target}: [error {}] {}",
                    rpc_code(err.code()),
                    err.message()
                ),
            }
        })
        .collect();
    // With --lsp each file written gets its diagnostics in its own item,
    // all files checked at once (the call waits one deadline).
    for (at, block) in crate::diagnostics_of_many(roots, &written, call) {
        texts[at].push_str("\n\n");
        texts[at].push_str(&block);
    }
    Ok(Reply::items(texts.into_iter().map(Content::Text).collect()))
}

/// Whether a `paths` entry is a glob pattern (the seed's characters).
fn is_glob(entry: &str) -> bool {
    entry.contains(['*', '?', '{', '}', '['])
}

/// The files a glob matches, as absolute paths under the directory that
/// holds them. The directory part before the first glob character must
/// lie inside an allowed directory (-32001 otherwise).
fn expand_glob(roots: &Roots, pattern: &str, cancel: &AtomicBool) -> ToolResult<Vec<String>> {
    let absolute = if pattern.starts_with('/') {
        pattern.to_string()
    } else {
        format!("{}/{pattern}", roots.first()?.shown_root())
    };
    let (base, rest) = split_glob(&absolute);
    let (root, base_path) = match roots.resolve(&base, Need::Read) {
        Ok(found) => found,
        Err(err) if err.code() == ErrorCode::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let shown = root.shown(&base_path);
    let (found, _) = root
        .services()
        .files()
        .glob_paths(&base_path, &rest, cancel)?;
    Ok(found
        .into_iter()
        .map(|rel| format!("{}/{rel}", shown.trim_end_matches('/')))
        .collect())
}

/// Splits an absolute glob into the directory before its first glob
/// character and the pattern relative to it.
pub(crate) fn split_glob(absolute: &str) -> (String, String) {
    let parts: Vec<&str> = absolute.split('/').collect();
    let literal = parts
        .iter()
        .position(|part| part.contains(['*', '?', '{', '}', '[']))
        .unwrap_or(parts.len().saturating_sub(1));
    let base = parts[..literal].join("/");
    let base = if base.is_empty() {
        "/".to_string()
    } else {
        base
    };
    (base, parts[literal..].join("/"))
}

/// One file: resolve, read, edit in memory, then diff or write.
fn edit_one(
    roots: &Roots,
    raw: &str,
    edits: &[EditItem],
    dry_run: bool,
    cancel: &AtomicBool,
) -> ToolResult<String> {
    let need = if dry_run { Need::Read } else { Need::Write };
    let (root, path) = roots.resolve(raw, need)?;
    let shown = root.shown(&path);
    let max = roots.config().max_file_bytes();
    let files = root.services().files();
    // A real edit holds the path's locks for its whole read-modify-write.
    let lock = files.path_lock(&path);
    let _held = (!dry_run).then(|| lock.lock().unwrap_or_else(PoisonError::into_inner));
    let _file_lock = if dry_run {
        None
    } else {
        Some(files.lock_files([&path])?)
    };

    let (file, meta) = match open_regular(root.workspace(), &path) {
        Ok(opened) => opened,
        Err(err) if err.code() == ErrorCode::NotFound && dry_run => {
            return Ok(intended(&shown, edits));
        }
        Err(err) if err.code() == ErrorCode::NotFound => {
            return Err(ToolError::new(
                ErrorCode::NotFound,
                format!("{shown}: no such file; to create a file use write_file"),
            ));
        }
        Err(err) => return Err(err),
    };
    let loaded = load(&root, &path, &shown, file, &meta, max)?;
    let original = &loaded.text;
    // A file whose every line break is CRLF is edited with LF breaks and
    // written back with CRLF; a mixed file is edited as it is.
    let crlf = LineBreaks::count(original.as_bytes()).all_crlf();
    let working = if crlf {
        LineEnding::Lf.apply(original).into_owned()
    } else {
        original.clone()
    };
    let edited = apply_all(&working, edits, crlf, &shown, max, cancel)?;
    let edited = if crlf {
        LineEnding::CrLf.apply(&edited).into_owned()
    } else {
        edited
    };
    if dry_run {
        return Ok(diff(&shown, original, &edited));
    }
    if meta.permissions().readonly() {
        return Err(read_only(&path));
    }
    if edited != *original {
        let bytes = TextFile {
            text: edited,
            encoding: loaded.encoding,
        }
        .encode()
        .map_err(|encoding| {
            ToolError::new(
                ErrorCode::IsBinary,
                format!("{shown}: is {encoding} text, which is not rewritten"),
            )
        })?;
        write_atomic(
            root.workspace(),
            &path,
            &bytes,
            Expected::Same(FileStamp::of_std(&meta)),
        )?;
    }
    Ok(format!("Successfully edited {shown}"))
}

struct Loaded {
    text: String,
    encoding: agent_tools_text::Encoding,
}

fn load(
    root: &Root,
    path: &ConfinedPath,
    shown: &str,
    file: std::fs::File,
    meta: &std::fs::Metadata,
    max: u64,
) -> ToolResult<Loaded> {
    let too_large = |size: String| {
        ToolError::new(
            ErrorCode::TooLarge,
            format!(
                "{shown}: {size} bytes is over the {max} byte limit for editing; replace it whole with write_file"
            ),
        )
    };
    if meta.len() > max {
        return Err(too_large(meta.len().to_string()));
    }
    let bytes = agent_tools_fs::read_bounded(file, max, meta.len())
        .map_err(|err| root.workspace().io_error(&err, path))?
        .ok_or_else(|| too_large(format!("at least {}", max + 1)))?;
    let decoded = TextFile::decode(&bytes).map_err(|err| match err {
        DecodeError::Binary => ToolError::new(
            ErrorCode::IsBinary,
            format!("{shown}: is a binary file; edit_file changes text files only"),
        ),
        other => ToolError::new(ErrorCode::IsBinary, format!("{shown}: {other}")),
    })?;
    if decoded.encoding.is_utf16() {
        return Err(ToolError::new(
            ErrorCode::IsBinary,
            format!(
                "{shown}: is {} text; edits are not written back as UTF-16: replace it whole \
                 with write_file (UTF-8)",
                decoded.encoding
            ),
        ));
    }
    Ok(Loaded {
        text: decoded.text,
        encoding: decoded.encoding,
    })
}

/// A unified diff of the change, or `(no changes)`.
fn diff(shown: &str, before: &str, after: &str) -> String {
    if before == after {
        return NO_CHANGES.to_string();
    }
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(shown, shown)
        .to_string()
}

/// What a dry run of a missing file answers: the edits it would make.
fn intended(shown: &str, edits: &[EditItem]) -> String {
    let mut out = format!("{shown}: the file does not exist; intended edits:\n");
    for (index, edit) in edits.iter().enumerate() {
        let mode = match (edit.is_regex, edit.case_insensitive) {
            (true, true) => "regex, case-insensitive",
            (true, false) => "regex",
            (false, true) => "literal, case-insensitive",
            (false, false) => "literal",
        };
        let limit = match edit.limit {
            0 => "all matches".to_string(),
            1 => "1 match".to_string(),
            n => format!("up to {n} matches"),
        };
        out.push_str(&format!(
            "{}. {mode}, {limit}: {:?} -> {:?}\n",
            index + 1,
            edit.old_text,
            edit.new_text
        ));
    }
    out
}

/// Applies every edit in order; the first failure fails them all.
fn apply_all(
    text: &str,
    edits: &[EditItem],
    crlf: bool,
    shown: &str,
    max: u64,
    cancel: &AtomicBool,
) -> ToolResult<String> {
    let mut current = text.to_string();
    for (index, edit) in edits.iter().enumerate() {
        let prefix = if edits.len() > 1 {
            format!("edit {} of {}: ", index + 1, edits.len())
        } else {
            String::new()
        };
        let (old, new) = if crlf {
            (
                LineEnding::Lf.apply(&edit.old_text).into_owned(),
                LineEnding::Lf.apply(&edit.new_text).into_owned(),
            )
        } else {
            (edit.old_text.clone(), edit.new_text.clone())
        };
        let limit = usize::try_from(edit.limit).unwrap_or(usize::MAX);
        let request = Request {
            old: &old,
            new: &new,
            limit,
            shown,
            max,
            cancel,
        };
        current = apply_one(&current, edit, &request).map_err(|err| err.with_prefix(prefix))?;
    }
    Ok(current)
}

struct Request<'a> {
    old: &'a str,
    new: &'a str,
    /// 0 = all.
    limit: usize,
    shown: &'a str,
    max: u64,
    /// Read before every regex match.
    cancel: &'a AtomicBool,
}

fn apply_one(text: &str, edit: &EditItem, request: &Request<'_>) -> ToolResult<String> {
    if request.old.is_empty() {
        return Err(ToolError::invalid_input(
            "oldText is empty; give the text (or pattern) to replace",
        ));
    }
    if edit.is_regex {
        let regex = EcmaRegex::new(request.old, edit.case_insensitive).map_err(regex_error)?;
        let template = Template::parse(request.new);
        regex.check_template(&template).map_err(regex_error)?;
        return replace_matches(text, &regex, request, Some(&template), "pattern");
    }
    if edit.case_insensitive {
        let regex = EcmaRegex::literal(request.old, true).map_err(regex_error)?;
        return replace_matches(text, &regex, request, None, "oldText");
    }
    let starts: Vec<usize> = text.match_indices(request.old).map(|(at, _)| at).collect();
    match (starts.len(), request.limit) {
        (0, 1) => normalized(text, request),
        (0, _) => Err(not_found(request, "oldText")),
        (n, 1) if n > 1 => Err(ToolError::new(
            ErrorCode::AmbiguousMatch,
            format!(
                "oldText is not unique: found {n} occurrences in {} (at {}); add surrounding \
                 lines so it matches one place, or set limit: 0 (all) or limit: N",
                request.shown,
                lines_of(text, &starts)
            ),
        )),
        (n, limit) => {
            let take = if limit == 0 { n } else { limit.min(n) };
            let mut out = String::with_capacity(text.len());
            let mut last = 0;
            for &at in &starts[..take] {
                out.push_str(&text[last..at]);
                out.push_str(request.new);
                last = at + request.old.len();
                check_size(&out, request)?;
            }
            out.push_str(&text[last..]);
            check_size(&out, request)?;
            Ok(out)
        }
    }
}

fn check_size(out: &str, request: &Request<'_>) -> ToolResult<()> {
    if out.len() as u64 > request.max {
        return Err(ToolError::new(
            ErrorCode::TooLarge,
            format!(
                "the edited {} would be over the {} byte limit; nothing was written",
                request.shown, request.max
            ),
        ));
    }
    Ok(())
}

/// A regex that cannot be used: -32603, as the seed numbers an invalid
/// regex, with what to change.
fn regex_error(err: EcmaError) -> ToolError {
    ToolError::new(ErrorCode::NoMatch, err.to_string())
}

fn not_found(request: &Request<'_>, what: &str) -> ToolError {
    let message = if what == "pattern" {
        format!(
            "pattern not found: /{}/ matches nothing in {}; check it with grep_files, and \
             preview with dryRun: true",
            request.old, request.shown
        )
    } else {
        format!(
            "oldText not found in {}; read the file again and copy the text to replace exactly",
            request.shown
        )
    };
    ToolError::new(ErrorCode::NoMatch, message)
}

/// `line 3, line 9, ...` for byte offsets (at most five named).
fn lines_of(text: &str, starts: &[usize]) -> String {
    let mut named: Vec<String> = starts
        .iter()
        .take(5)
        .map(|&at| format!("line {}", count_newlines(&text.as_bytes()[..at]) + 1))
        .collect();
    if starts.len() > 5 {
        named.push(format!("and {} more", starts.len() - 5));
    }
    named.join(", ")
}

/// Regex (or case-insensitive literal) replacement of up to `limit`
/// matches. A case-insensitive literal keeps the uniqueness guard. The
/// matching is bounded (see `agent_tools_fs::ecma`): a text too long for
/// the pattern's step budget is refused, and a cancelled call stops
/// between matches.
fn replace_matches(
    text: &str,
    regex: &EcmaRegex,
    request: &Request<'_>,
    template: Option<&Template>,
    what: &str,
) -> ToolResult<String> {
    let budget = EcmaBudget::default();
    let matches = || {
        regex
            .matches(text, template, &budget, request.cancel)
            .map_err(|stop| budget_error(stop, request))
    };
    if template.is_none() && request.limit == 1 {
        // The first few starts are named; the rest only counted.
        let mut first = Vec::new();
        let mut count = 0usize;
        for found in matches()? {
            let found = found.map_err(|stop| budget_error(stop, request))?;
            if first.len() < 5 {
                first.push(found.start());
            }
            count += 1;
        }
        if count > 1 {
            let mut named = lines_of(text, &first);
            if count > first.len() {
                named.push_str(&format!(", and {} more", count - first.len()));
            }
            return Err(ToolError::new(
                ErrorCode::AmbiguousMatch,
                format!(
                    "oldText is not unique: found {count} case-insensitive occurrences in {} \
                     (at {named}); add surrounding lines so it matches one place, or set \
                     limit: 0 (all) or limit: N",
                    request.shown,
                ),
            ));
        }
    }
    let take = if request.limit == 0 {
        usize::MAX
    } else {
        request.limit
    };
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut count = 0;
    for found in matches()?.take(take) {
        let found = found.map_err(|stop| budget_error(stop, request))?;
        out.push_str(&text[last..found.start()]);
        match template {
            Some(template) => template.expand_into(&found, text, &mut out),
            None => out.push_str(request.new),
        }
        last = found.end();
        count += 1;
        check_size(&out, request)?;
    }
    if count == 0 {
        return Err(not_found(request, what));
    }
    out.push_str(&text[last..]);
    check_size(&out, request)?;
    Ok(out)
}

/// A match that stopped: cancelled, or refused for the step budget (named
/// with the file, nothing written).
fn budget_error(stop: EcmaStop, request: &Request<'_>) -> ToolError {
    match stop {
        EcmaStop::Cancelled => agent_tools_fs::ecma::stop_error(stop),
        _ => {
            let err = agent_tools_fs::ecma::stop_error(stop);
            ToolError::new(
                err.code(),
                format!("{}: {}; nothing was written", request.shown, err.message()),
            )
        }
    }
}

/// A line of the text: where it starts, where its content ends (before
/// `\r\n` or `\n`), where the next begins.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    content_end: usize,
    end: usize,
}

fn spans(text: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    while start < text.len() {
        let newline = memchr::memchr(b'\n', &bytes[start..]).map(|i| start + i);
        let end = newline.map_or(text.len(), |n| n + 1);
        let mut content_end = newline.unwrap_or(text.len());
        if content_end > start && bytes[content_end - 1] == b'\r' {
            content_end -= 1;
        }
        out.push(Span {
            start,
            content_end,
            end,
        });
        start = end;
    }
    out
}

/// The leading whitespace every non-blank line shares.
fn common_indent<'a>(lines: &[&'a str]) -> &'a str {
    let mut common: Option<&str> = None;
    for line in lines.iter().filter(|l| !l.trim().is_empty()) {
        let indent = &line[..line.len() - line.trim_start().len()];
        common = Some(match common {
            None => indent,
            Some(c) => {
                let shared = c
                    .char_indices()
                    .zip(indent.chars())
                    .find(|((_, a), b)| a != b)
                    .map_or(c.len().min(indent.len()), |((i, _), _)| i);
                &c[..shared]
            }
        });
    }
    common.unwrap_or("")
}

/// A line with the common indent removed and trailing whitespace dropped.
fn dedented<'a>(line: &'a str, indent: &str) -> &'a str {
    line.strip_prefix(indent).unwrap_or(line).trim_end()
}

/// The seed's fallback: a run of whole lines that equals oldText's once
/// the common leading indent of each side is removed (trailing whitespace
/// ignored). Used only when exactly one run matches and the engine's
/// tolerant matcher sees no other region that could be meant.
fn normalized(text: &str, request: &Request<'_>) -> ToolResult<String> {
    let old_lines: Vec<&str> = request.old.trim_end_matches('\n').split('\n').collect();
    let old_lines: Vec<&str> = old_lines.iter().map(|l| l.trim_end_matches('\r')).collect();
    if old_lines.iter().all(|l| l.trim().is_empty()) {
        return Err(not_found(request, "oldText"));
    }
    let old_indent = common_indent(&old_lines);
    let old_key: Vec<&str> = old_lines.iter().map(|l| dedented(l, old_indent)).collect();
    let table = spans(text);
    let height = old_lines.len();
    let mut found: Vec<usize> = Vec::new();
    if table.len() >= height {
        for first in 0..=table.len() - height {
            let quick = &text[table[first].start..table[first].content_end];
            if quick.trim() != old_key[0].trim() {
                continue;
            }
            let window: Vec<&str> = table[first..first + height]
                .iter()
                .map(|s| &text[s.start..s.content_end])
                .collect();
            let indent = common_indent(&window);
            if window
                .iter()
                .zip(&old_key)
                .all(|(line, key)| dedented(line, indent) == *key)
            {
                found.push(first);
            }
        }
    }
    let range_of = |first: usize| {
        if height == 1 {
            format!("line {}", first + 1)
        } else {
            format!("lines {}-{}", first + 1, first + height)
        }
    };
    match found.as_slice() {
        [] => Err(not_found(request, "oldText")),
        [first] => {
            let first = *first;
            let last = first + height - 1;
            // The engine's tolerant matcher reads the file more loosely:
            // any other region it finds or finds close is one the caller
            // may have meant.
            let others: Vec<String> = match tolerant::locate(text, request.old, request.new, "\n") {
                Verdict::Ambiguous { matches, near, .. } => matches
                    .iter()
                    .chain(&near)
                    .filter(|c| c.lines.first != first + 1)
                    .map(|c| c.lines.to_string())
                    .collect(),
                Verdict::Unique(found) if found.lines.first != first + 1 => {
                    vec![found.lines.to_string()]
                }
                Verdict::Unique(_) | Verdict::NotFound { .. } => Vec::new(),
            };
            if !others.is_empty() {
                return Err(ToolError::new(
                    ErrorCode::AmbiguousMatch,
                    format!(
                        "oldText is not in {} exactly; with whitespace normalized it matches \
                         {}, but {} come close too, so the edit could land in the wrong \
                         place; copy the exact text (with its indentation) from the file",
                        request.shown,
                        range_of(first),
                        others.join(", ")
                    ),
                ));
            }
            let window: Vec<&str> = table[first..=last]
                .iter()
                .map(|s| &text[s.start..s.content_end])
                .collect();
            let file_indent = common_indent(&window);
            let new_trimmed = request.new.strip_suffix('\n').unwrap_or(request.new);
            let old_break = request.old.ends_with('\n');
            let new_break = request.new.ends_with('\n');
            let mut replacement = if request.new.is_empty() {
                String::new()
            } else {
                new_trimmed
                    .split('\n')
                    .map(|line| {
                        if line.trim().is_empty() {
                            String::new()
                        } else if let Some(rest) = line.strip_prefix(old_indent) {
                            format!("{file_indent}{rest}")
                        } else {
                            format!("{file_indent}{}", line.trim_start())
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            let start = table[first].start;
            let mut end = table[last].content_end;
            if (old_break && !new_break) || request.new.is_empty() {
                // The block's last line break goes with it.
                end = table[last].end;
            } else if new_break && !old_break {
                replacement.push('\n');
            }
            let mut out = String::with_capacity(text.len() + replacement.len());
            out.push_str(&text[..start]);
            out.push_str(&replacement);
            out.push_str(&text[end..]);
            check_size(&out, request)?;
            Ok(out)
        }
        many => Err(ToolError::new(
            ErrorCode::AmbiguousMatch,
            format!(
                "oldText is not unique: found {} whitespace-normalized matches in {} ({}); add \
                 surrounding lines so it matches one place",
                many.len(),
                request.shown,
                many.iter()
                    .take(5)
                    .map(|&f| range_of(f))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(old: &str, new: &str) -> EditItem {
        EditItem {
            old_text: old.into(),
            new_text: new.into(),
            limit: 1,
            is_regex: false,
            case_insensitive: false,
        }
    }

    fn run(text: &str, edit: EditItem) -> ToolResult<String> {
        apply_all(text, &[edit], false, "/f", 1 << 20, &AtomicBool::new(false))
    }

    #[test]
    fn normalized_match_reindents_new_text() {
        let text = "fn a() {\n        if x {\n            y();\n        }\n}\n";
        let out = run(
            text,
            item("if x {\n    y();\n}", "if x {\n    z();\n    w();\n}"),
        )
        .unwrap();
        assert_eq!(
            out,
            "fn a() {\n        if x {\n            z();\n            w();\n        }\n}\n"
        );
    }

    #[test]
    fn split_glob_finds_the_literal_directory() {
        assert_eq!(
            split_glob("/a/b/**/*.rs"),
            ("/a/b".to_string(), "**/*.rs".to_string())
        );
        assert_eq!(split_glob("/*.rs"), ("/".to_string(), "*.rs".to_string()));
    }

    #[test]
    fn regex_and_case_insensitive_modes() {
        let mut wrap = item("^(.*)$", "\"$1\"");
        wrap.is_regex = true;
        assert_eq!(run("a\nb\n", wrap.clone()).unwrap(), "\"a\"\nb\n");
        wrap.limit = 0;
        assert_eq!(run("a\nb", wrap).unwrap(), "\"a\"\n\"b\"");
        let mut ci = item("HELLO", "bye");
        ci.case_insensitive = true;
        assert_eq!(run("say hello\n", ci.clone()).unwrap(), "say bye\n");
        assert_eq!(
            run("hello Hello\n", ci).unwrap_err().code(),
            ErrorCode::AmbiguousMatch
        );
    }
}

#[cfg(test)]
mod bounded_regex {
    use super::*;

    fn regex(old: &str, new: &str) -> EditItem {
        EditItem {
            old_text: old.into(),
            new_text: new.into(),
            limit: 0,
            is_regex: true,
            case_insensitive: false,
        }
    }

    fn run(text: &str, edit: EditItem, cancel: bool) -> ToolResult<String> {
        apply_all(
            text,
            &[edit],
            false,
            "/f",
            1 << 20,
            &AtomicBool::new(cancel),
        )
    }

    #[test]
    fn the_review_patterns_are_answered_or_refused_by_the_budget() {
        // Linear: answered at once.
        let forty = "a".repeat(40);
        assert_eq!(
            run(&forty, regex("(a?){40}a{40}", "X"), false).unwrap(),
            "X"
        );
        let line = format!("/* TODO */{}\n", "if(c){return b;}".repeat(15_000));
        assert_eq!(
            run(&line, regex("if.*return.*TODO", "X"), false)
                .unwrap_err()
                .code(),
            ErrorCode::NoMatch
        );
        // regress, over its step budget: refused, naming it.
        let long = format!("{}b", "a".repeat(3000));
        let err = run(&long, regex("(?=a*)a*a*a*b", "X"), false).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TooLarge);
        assert!(err.message().contains("step budget"), "{}", err.message());
        assert!(
            err.message().contains("nothing was written"),
            "{}",
            err.message()
        );
        // Within it: matched.
        assert_eq!(run("aab", regex("(?=a*)a*a*a*b", "X"), false).unwrap(), "X");
    }

    #[test]
    fn a_cancelled_regex_edit_stops() {
        for pattern in ["a", "(?=a)a"] {
            let err = run("aaa", regex(pattern, "b"), true).unwrap_err();
            assert!(err.is_cancelled(), "{pattern}: {err:?}");
        }
    }
}

#[cfg(test)]
mod near_miss {
    use super::*;

    #[test]
    fn a_normalized_match_with_a_near_miss_elsewhere_is_refused() {
        let text = "def a():\n    total = compute(x, y)\n    return total\n\ndef b():\n        total = compute(x, z)\n        return total\n";
        let edit = EditItem {
            old_text: "        total = compute(x, y)\n        return total".into(),
            new_text: "        return compute(x, y)".into(),
            limit: 1,
            is_regex: false,
            case_insensitive: false,
        };
        let result = apply_all(text, &[edit], false, "/f", 1 << 20, &AtomicBool::new(false));
        let err = result.unwrap_err();
        assert_eq!(err.code(), ErrorCode::AmbiguousMatch);
        assert!(err.message().contains("wrong place"), "{}", err.message());
    }
}
