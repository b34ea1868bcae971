//! `grep_files`: an ECMAScript regex over file contents, grep-style output.
//!
//! Which files: everything under `directory`, or the files `globs` match
//! (a relative glob anchored to `directory`, or to the first allowed
//! directory when there is none, never to the process's working
//! directory), less those `excludeGlobs` match. Each glob is walked from
//! the directory before its first glob character; one outside the allowed
//! directories is skipped with a note. The search itself is the engine's
//! (`FileTools::ecma_search`: its walk, ripgrep's searcher, regress).

use std::fmt::Write as _;
use std::sync::Arc;

use agent_tools::{CallContext, ErrorCode, ToolError, ToolResult};
use agent_tools_confine::ConfinedPath;
use agent_tools_fs::ecma::{EcmaBudget, EcmaMatcher, EcmaRegex, EcmaSearch, FileLines};
use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::args::GrepArgs;
use crate::edit::split_glob;
use crate::roots::{Need, Root, Roots};

/// The most lines of context around a match.
pub const MAX_CONTEXT_LINES: u32 = 50;
/// Matches shown when `maxResults` is not given.
pub const DEFAULT_MAX_RESULTS: u32 = 500;
/// The most `maxResults` may ask for.
pub const MAX_RESULTS: u32 = 10_000;

pub(crate) const GREP_FILES: &str = "Search file contents with an ECMAScript (JavaScript) regex, \
line by line (escape metacharacters such as \\. or \\* for a literal). Give `directory` to \
search everything under it, `globs` to pick files (relative globs such as **/*.rs are anchored \
to directory, or to the first allowed directory when directory is omitted; absolute globs are \
used as they are), or both; `excludeGlobs` leaves files out. Output: `PATH:LINE:text` for \
matches, `PATH-LINE-text` for context (contextLines), `--` between groups, then `[N matches]`. \
Binary files are skipped. To find files by name use glob_search or search_files.";

pub(crate) fn grep_files(roots: &Roots, args: GrepArgs, call: &CallContext) -> ToolResult<String> {
    let globs = args.globs.clone().unwrap_or_default();
    if args.directory.is_none() && globs.is_empty() {
        return Err(ToolError::invalid_input(
            "give directory (to search everything under it), globs (to pick files), or both",
        ));
    }
    if args.context_lines > MAX_CONTEXT_LINES {
        return Err(ToolError::invalid_input(format!(
            "contextLines is at most {MAX_CONTEXT_LINES}"
        )));
    }
    if args.max_results == 0 || args.max_results > MAX_RESULTS {
        return Err(ToolError::invalid_input(format!(
            "maxResults is 1 to {MAX_RESULTS}"
        )));
    }
    let regex = EcmaRegex::new(&args.regex, args.case_insensitive)
        .map_err(|err| ToolError::new(ErrorCode::NoMatch, err.to_string()))?;
    let matcher = EcmaMatcher::new(regex);

    // Where relative globs are anchored, and the directory named (which
    // must be allowed: -32001 otherwise).
    let directory = match &args.directory {
        Some(raw) => {
            let (root, path) = roots.resolve(raw, Need::Read)?;
            // Missing: not found, before any walk.
            root.workspace().metadata(&path)?;
            Some((root, path))
        }
        None => None,
    };
    let anchor = match &directory {
        Some((root, path)) => root.shown(path),
        None => roots.first()?.shown_root(),
    };
    let absolute = |glob: &str| {
        if glob.starts_with('/') {
            glob.to_string()
        } else {
            let glob = glob.strip_prefix("./").unwrap_or(glob);
            format!("{}/{glob}", anchor.trim_end_matches('/'))
        }
    };
    let exclude = exclude_set(args.exclude_globs.as_deref().unwrap_or_default(), &anchor)?;

    // The walks: one per distinct base directory, nested ones merged.
    let mut walks: Vec<Walk> = Vec::new();
    let mut outside: Vec<String> = Vec::new();
    if globs.is_empty() {
        if let Some((root, path)) = &directory {
            walks.push(Walk {
                root: Arc::clone(root),
                shown: root.shown(path),
                base: path.clone(),
                patterns: Vec::new(),
            });
        }
    } else {
        let mut wanted: Vec<(String, String)> = globs
            .iter()
            .map(|glob| {
                let full = absolute(glob);
                let (base, _) = split_glob(&full);
                (base, full)
            })
            .collect();
        // Shallow bases first, so a deeper one joins the walk above it.
        wanted.sort_by_key(|(base, _)| base.len());
        for (base, full) in wanted {
            if let Some(walk) = walks.iter_mut().find(|walk| is_within(&base, &walk.shown)) {
                walk.patterns.push(full);
                continue;
            }
            match roots.resolve(&base, Need::Read) {
                Ok((root, path)) => {
                    if root.workspace().metadata(&path).is_err() {
                        // Nothing there: the glob matches nothing.
                        continue;
                    }
                    walks.push(Walk {
                        shown: root.shown(&path),
                        root,
                        base: path,
                        patterns: vec![full],
                    });
                }
                Err(err) if err.code() == ErrorCode::PathEscape => {
                    outside.push(format!("{full} (outside the allowed directories)"));
                }
                Err(err) if err.code() == ErrorCode::NotFound => {}
                Err(err) => return Err(err),
            }
        }
    }

    let max_results = args.max_results as usize;
    let mut found: Vec<(String, FileLines)> = Vec::new();
    let mut skipped = outside;
    let mut stopped = false;
    // Said once, after the output, when the workspace index failed and the
    // tree was walked instead.
    let mut scan_notes = String::new();
    for walk in &walks {
        let include = include_set(&walk.patterns)?;
        let prefix = walk.shown.trim_end_matches('/').to_string();
        let full_path = |rel: &str| {
            if rel.is_empty() {
                prefix.clone()
            } else {
                format!("{prefix}/{rel}")
            }
        };
        let select = |rel: &str| {
            let path = full_path(rel);
            include.as_ref().is_none_or(|set| set.is_match(&path)) && !exclude.is_match(&path)
        };
        let search = EcmaSearch {
            matcher: &matcher,
            context: args.context_lines as usize,
            max_matches: max_results.saturating_sub(count(&found)),
            budget: EcmaBudget::default(),
        };
        let result = walk.root.services().files().ecma_search(
            &walk.base,
            &search,
            &select,
            call.cancel.flag(),
        )?;
        stopped |= result.stopped;
        skipped.extend(result.skipped);
        if !scan_notes.contains(&result.scan_note) {
            scan_notes.push_str(&result.scan_note);
        }
        for file in result.files {
            if walk.is_file() && !select(&file.rel) {
                continue;
            }
            found.push((full_path(&file.rel), file));
        }
        if stopped || count(&found) > max_results {
            stopped = true;
            break;
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found.dedup_by(|a, b| a.0 == b.0);
    Ok(render(
        &found,
        &skipped,
        args.context_lines > 0,
        max_results,
        stopped,
    ) + &scan_notes)
}

/// One walk: a base directory (or file) and the globs it serves (none:
/// every file).
struct Walk {
    root: Arc<Root>,
    base: ConfinedPath,
    /// The base as shown.
    shown: String,
    patterns: Vec<String>,
}

impl Walk {
    fn is_file(&self) -> bool {
        self.root
            .workspace()
            .metadata(&self.base)
            .is_ok_and(|meta| !meta.is_dir())
    }
}

fn count(found: &[(String, FileLines)]) -> usize {
    found.iter().map(|(_, file)| file.matches()).sum()
}

/// Whether `path` is `dir` or lies beneath it.
fn is_within(path: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
        || dir.is_empty()
}

fn glob(pattern: &str) -> ToolResult<Glob> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|err| ToolError::invalid_input(format!("bad glob {pattern:?}: {}", err.kind())))
}

/// The globs a walk serves; `None` selects every file.
fn include_set(patterns: &[String]) -> ToolResult<Option<GlobSet>> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        builder.add(glob(pattern)?);
    }
    builder
        .build()
        .map(Some)
        .map_err(|err| ToolError::invalid_input(format!("bad globs: {err}")))
}

/// Exclusions: a pattern without `/` matches a file or directory name at
/// any depth; a relative one with `/` is anchored like `globs`; an
/// excluded directory takes everything under it along.
fn exclude_set(patterns: &[String], anchor: &str) -> ToolResult<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let pattern = pattern.trim_end_matches('/');
        let full = if pattern.starts_with('/') {
            pattern.to_string()
        } else if pattern.contains('/') {
            format!("{}/{pattern}", anchor.trim_end_matches('/'))
        } else {
            format!("**/{pattern}")
        };
        builder.add(glob(&full)?);
        builder.add(glob(&format!("{full}/**"))?);
    }
    builder
        .build()
        .map_err(|err| ToolError::invalid_input(format!("bad excludeGlobs: {err}")))
}

/// The seed's output: match lines `PATH:N:text`, context `PATH-N-text`,
/// `--` between groups (with context), the truncation notice first, the
/// `[N matches]` footer, then the skipped-paths note.
fn render(
    found: &[(String, FileLines)],
    skipped: &[String],
    with_context: bool,
    max_results: usize,
    stopped: bool,
) -> String {
    let mut body = String::new();
    let mut shown = 0usize;
    let mut previous: Option<(usize, u64)> = None;
    let mut truncated = stopped;
    'files: for (index, (path, file)) in found.iter().enumerate() {
        for line in &file.lines {
            if line.is_match && shown == max_results {
                truncated = true;
                break 'files;
            }
            if with_context
                && let Some((file_index, number)) = previous
                && (file_index != index || number + 1 != line.number)
            {
                body.push_str("--\n");
            }
            let separator = if line.is_match { ':' } else { '-' };
            let _ = writeln!(
                body,
                "{path}{separator}{}{separator}{}",
                line.number, line.text
            );
            previous = Some((index, line.number));
            shown += usize::from(line.is_match);
        }
    }
    let mut out = String::new();
    if truncated {
        let _ = writeln!(
            out,
            "[results truncated: showing the first {shown} matches; narrow the search with \
             directory, globs or a more specific regex, or raise maxResults (at most {MAX_RESULTS})]"
        );
    }
    out.push_str(&body);
    let _ = writeln!(out, "[{shown} matches]");
    if !skipped.is_empty() {
        let _ = writeln!(
            out,
            "[{} path(s) skipped: {}]",
            skipped.len(),
            skipped.join("; ")
        );
    }
    out
}
