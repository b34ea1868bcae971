//! `Glob` and `Grep`: the engine's walk and ripgrep's crates, answered in
//! Claude Code's forms.

use std::path::PathBuf;

use agent_tools::{CallContext, ErrorCode, ToolResult};
use agent_tools_fs::{
    GlobArgs as EngineGlob, GrepArgs as EngineGrep, GrepFile, GrepQuery, OutputMode as EngineMode,
};
use agent_tools_surface_default::Services;

use crate::args::{GlobArgs, GrepArgs, OutputMode};
use crate::messages::{self, plural, thrown};
use crate::{resolve_absolute, shown_abs};

/// The most files Glob lists.
pub const MAX_GLOB_RESULTS: usize = 100;

/// Grep's head_limit when none is given.
pub const DEFAULT_HEAD_LIMIT: u64 = 250;

/// The directory or file searched: absolute, confined; and its path as
/// shown.
fn search_base(
    services: &Services,
    path: Option<&str>,
    missing: impl Fn(&str) -> String,
) -> ToolResult<(Option<String>, PathBuf)> {
    let ws = services.files().workspace();
    let Some(raw) = path else {
        let root = ws.root_path();
        return Ok((None, PathBuf::from(shown_abs(services, root.abs()))));
    };
    let resolved = resolve_absolute(services, raw, "path")?;
    match ws.metadata(&resolved) {
        Ok(_) => {}
        Err(err) if err.code() == ErrorCode::NotFound => {
            return Err(thrown(ErrorCode::NotFound, missing(raw)));
        }
        Err(err) => return Err(err),
    }
    Ok((Some(raw.to_owned()), PathBuf::from(raw)))
}

pub(crate) fn glob(services: &Services, args: GlobArgs, call: &CallContext) -> ToolResult<String> {
    let (path, base) = search_base(services, args.path.as_deref(), messages::directory_missing)?;
    if let Some(raw) = &path {
        let resolved = resolve_absolute(services, raw, "path")?;
        if !services.files().workspace().metadata(&resolved)?.is_dir() {
            return Err(thrown(ErrorCode::NotAFile, messages::not_a_directory(raw)));
        }
    }
    let engine = EngineGlob {
        pattern: args.pattern,
        path,
        // Claude Code lists hidden and ignored files too.
        respect_gitignore: false,
        offset: 0,
        limit: None,
    };
    let found = services.files().glob_files(&engine, call.cancel.flag())?;
    let mut files = found.files;
    if files.is_empty() {
        return Ok(messages::NO_FILES.to_owned());
    }
    // Oldest first, as Claude Code lists them.
    files.sort_by(|a, b| a.modified.cmp(&b.modified).then_with(|| a.rel.cmp(&b.rel)));
    let truncated = files.len() > MAX_GLOB_RESULTS;
    let mut lines: Vec<String> = files
        .iter()
        .take(MAX_GLOB_RESULTS)
        .map(|file| base.join(&file.rel).to_string_lossy().into_owned())
        .collect();
    if truncated {
        lines.push(messages::GLOB_TRUNCATED.to_owned());
    }
    Ok(lines.join("\n"))
}

/// Claude Code's split of the glob argument: on whitespace, then on commas
/// outside braces.
fn split_globs(glob: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in glob.split_whitespace() {
        if word.contains('{') {
            out.push(word.to_owned());
        } else {
            out.extend(
                word.split(',')
                    .filter(|part| !part.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    out
}

/// The pagination of a result list: which entries, and the note saying so.
struct Page {
    skip: usize,
    take: usize,
}

impl Page {
    fn new(args: &GrepArgs) -> Page {
        let limit = args.head_limit.unwrap_or(DEFAULT_HEAD_LIMIT);
        Page {
            skip: usize::try_from(args.offset.unwrap_or(0)).unwrap_or(usize::MAX),
            take: if limit == 0 {
                usize::MAX
            } else {
                usize::try_from(limit).unwrap_or(usize::MAX)
            },
        }
    }

    /// The entries shown, and the `limit: N, offset: M` note (empty when
    /// neither applied).
    fn apply<T>(&self, entries: Vec<T>) -> (Vec<T>, String) {
        let total = entries.len();
        let shown: Vec<T> = entries
            .into_iter()
            .skip(self.skip)
            .take(self.take)
            .collect();
        let mut info = Vec::new();
        if total.saturating_sub(self.skip) > self.take {
            info.push(format!("limit: {}", self.take));
        }
        if self.skip > 0 {
            info.push(format!("offset: {}", self.skip));
        }
        (shown, info.join(", "))
    }
}

pub(crate) fn grep(services: &Services, args: GrepArgs, call: &CallContext) -> ToolResult<String> {
    let (path, base) = search_base(services, args.path.as_deref(), messages::path_missing)?;
    let searched_file = match &path {
        Some(raw) => {
            let resolved = resolve_absolute(services, raw, "path")?;
            !services.files().workspace().metadata(&resolved)?.is_dir()
        }
        None => false,
    };
    let context = args.context.or(args.context_short);
    let engine_mode = match args.output_mode {
        OutputMode::Content => EngineMode::Content,
        OutputMode::FilesWithMatches => EngineMode::FilesWithMatches,
        OutputMode::Count => EngineMode::Count,
    };
    let query = GrepQuery {
        args: EngineGrep {
            pattern: args.pattern.clone(),
            path,
            glob: None,
            output_mode: engine_mode,
            ignore_case: args.ignore_case.unwrap_or(false),
            multiline: args.multiline.unwrap_or(false),
            context: context.unwrap_or(0),
            before_context: context.or(args.before),
            after_context: context.or(args.after),
            head_limit: None,
            offset: 0,
        },
        globs: args.glob.as_deref().map(split_globs).unwrap_or_default(),
        file_type: args.file_type.clone(),
        only_matching: args.only_matching.unwrap_or(false),
    };
    let found = services.files().grep_files(&query, call.cancel.flag())?;
    // A file searched by name is shown by its own path.
    let path_of = |file: &GrepFile| -> String {
        if searched_file {
            base.to_string_lossy().into_owned()
        } else {
            base.join(&file.rel).to_string_lossy().into_owned()
        }
    };
    let page = Page::new(&args);
    let mut out = match args.output_mode {
        OutputMode::FilesWithMatches => {
            let mut files = found.files;
            // Most recently modified first, as Claude Code lists them.
            files.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.rel.cmp(&b.rel)));
            let paths: Vec<String> = files.iter().map(path_of).collect();
            let (shown, info) = page.apply(paths);
            if shown.is_empty() {
                messages::NO_FILES.to_owned()
            } else {
                let count = shown.len() as u64;
                let info = if info.is_empty() {
                    String::new()
                } else {
                    format!(" {info}")
                };
                format!(
                    "Found {count} {}{info}\n{}",
                    plural(count, "file", "files"),
                    shown.join("\n")
                )
            }
        }
        OutputMode::Content => {
            let numbers = args.line_numbers.unwrap_or(true);
            let with_context = context.or(args.before).or(args.after).unwrap_or(0) > 0;
            let lines = content_lines(&found.files, &path_of, numbers, with_context);
            let (shown, info) = page.apply(lines);
            if shown.is_empty() {
                messages::NO_MATCHES.to_owned()
            } else if info.is_empty() {
                shown.join("\n")
            } else {
                format!(
                    "{}\n\n[Showing results with pagination = {info}]",
                    shown.join("\n")
                )
            }
        }
        OutputMode::Count => {
            let entries: Vec<(String, u64)> = found
                .files
                .iter()
                .map(|file| (path_of(file), file.matches))
                .collect();
            let (shown, info) = page.apply(entries);
            if shown.is_empty() {
                messages::NO_MATCHES.to_owned()
            } else {
                let total: u64 = shown.iter().map(|(_, n)| n).sum();
                let files = shown.len() as u64;
                let lines: Vec<String> = shown.iter().map(|(p, n)| format!("{p}:{n}")).collect();
                let info = if info.is_empty() {
                    String::new()
                } else {
                    format!(" with pagination = {info}")
                };
                format!(
                    "{}\n\nFound {total} total {} across {files} {}.{info}",
                    lines.join("\n"),
                    plural(total, "occurrence", "occurrences"),
                    plural(files, "file", "files")
                )
            }
        }
    };
    if found.cut {
        out.push_str("\n\n[The search stopped early at its memory budget; narrow it with path, glob, type or a more specific pattern.]");
    }
    if !found.note.is_empty() {
        out.push_str("\n\n");
        out.push_str(found.note.trim_end());
    }
    Ok(out)
}

/// ripgrep's content lines: `path:line:text` for a match, `path-line-text`
/// for context (without numbers, `path:text` and `path-text`), `--` between
/// groups of context that do not touch.
fn content_lines(
    files: &[GrepFile],
    path_of: &dyn Fn(&GrepFile) -> String,
    numbers: bool,
    with_context: bool,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut previous: Option<(usize, u64)> = None;
    for (index, file) in files.iter().enumerate() {
        let path = path_of(file);
        for line in &file.lines {
            if with_context
                && let Some((last_file, last_number)) = previous
                && (last_file != index || last_number + 1 < line.number)
            {
                lines.push("--".to_owned());
            }
            let separator = if line.is_match { ':' } else { '-' };
            lines.push(if numbers {
                format!("{path}{separator}{}{separator}{}", line.number, line.text)
            } else {
                format!("{path}{separator}{}", line.text)
            });
            previous = Some((index, line.number));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_split_like_claude_codes() {
        assert_eq!(split_globs("*.js *.ts"), ["*.js", "*.ts"]);
        assert_eq!(split_globs("*.js,*.ts"), ["*.js", "*.ts"]);
        assert_eq!(split_globs("*.{ts,tsx}"), ["*.{ts,tsx}"]);
        assert!(split_globs("  ").is_empty());
    }

    #[test]
    fn pages_say_what_cut_them() {
        let page = Page { skip: 0, take: 2 };
        assert_eq!(
            page.apply(vec![1, 2, 3]),
            (vec![1, 2], "limit: 2".to_owned())
        );
        assert_eq!(page.apply(vec![1, 2]), (vec![1, 2], String::new()));
        let page = Page { skip: 1, take: 5 };
        assert_eq!(
            page.apply(vec![1, 2, 3]),
            (vec![2, 3], "offset: 1".to_owned())
        );
        let page = Page { skip: 1, take: 1 };
        assert_eq!(
            page.apply(vec![1, 2, 3]),
            (vec![2], "limit: 1, offset: 1".to_owned())
        );
    }
}
