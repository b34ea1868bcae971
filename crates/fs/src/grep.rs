//! `grep`: ripgrep's own crates, in process, with deterministic paged output.
//!
//! The walk is parallel; each thread searches the files it visits and keeps
//! what it found. Results are then sorted by path (and line), so the same
//! search always prints the same thing, and paged with `offset`/`head_limit`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_text::truncate_line;
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;

use crate::{FileTools, GrepArgs, OutputMode, walk};

/// What `grep` prints when nothing matches (a success).
pub const NO_MATCHES: &str = "(no matches)";

/// How much more than one page of output the scan may gather before it stops
/// and says the results are incomplete.
const COLLECT_FACTOR: usize = 8;

#[derive(Debug)]
struct Line {
    number: u64,
    is_match: bool,
    text: String,
}

#[derive(Debug)]
struct FileHits {
    path: String,
    lines: Vec<Line>,
    matches: u64,
}

/// Shared between the walker threads: how much has been gathered, and
/// whether to stop.
struct Budget {
    collected: AtomicUsize,
    cap: usize,
    cut: AtomicBool,
}

impl Budget {
    fn charge(&self, bytes: usize) -> bool {
        let total = self.collected.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if total > self.cap {
            self.cut.store(true, Ordering::Relaxed);
            false
        } else {
            true
        }
    }

    fn is_cut(&self) -> bool {
        self.cut.load(Ordering::Relaxed)
    }
}

struct Collector<'a> {
    hits: FileHits,
    budget: &'a Budget,
    mode: OutputMode,
    multiline: bool,
}

impl Collector<'_> {
    fn push(&mut self, number: u64, is_match: bool, bytes: &[u8]) -> bool {
        if self.hits.lines.last().is_some_and(|l| l.number >= number) {
            // Two multi-line matches can share a line; it is shown once.
            return true;
        }
        if is_match {
            self.hits.matches += 1;
        }
        let text = String::from_utf8_lossy(bytes);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let text = truncate_line(text).into_owned();
        let more = self.budget.charge(text.len() + self.hits.path.len() + 16);
        self.hits.lines.push(Line {
            number,
            is_match,
            text,
        });
        more
    }
}

impl Sink for Collector<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = mat.line_number().unwrap_or(0);
        if self.mode != OutputMode::Content {
            let first_in_file = self.hits.matches == 0;
            self.hits.matches += if self.multiline {
                mat.lines().count() as u64
            } else {
                1
            };
            if first_in_file && !self.budget.charge(self.hits.path.len() + 8) {
                return Ok(false);
            }
            // Files mode needs one match a file; count mode goes on.
            return Ok(self.mode == OutputMode::Count && !self.budget.is_cut());
        }
        let mut more = true;
        for (index, line) in mat.lines().enumerate() {
            more &= self.push(first + index as u64, true, line);
        }
        Ok(more && !self.budget.is_cut())
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        ctx: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        let more = self.push(ctx.line_number().unwrap_or(0), false, ctx.bytes());
        Ok(more && !self.budget.is_cut())
    }
}

impl FileTools {
    /// Searches file contents. See SPEC.md for the output formats.
    pub fn grep(&self, args: &GrepArgs) -> ToolResult<String> {
        let ws = self.workspace();
        let base = ws.resolve_or_root(args.path.as_deref())?;
        let matcher = build_matcher(args)?;
        if args.head_limit == Some(0) {
            return Err(ToolError::invalid_input(
                "head_limit must be at least 1; omit it for all results",
            ));
        }
        let filter = args.glob.as_deref().map(NameFilter::new).transpose()?;
        let meta = ws.metadata(&base)?;

        let mode = args.output_mode;
        let before = args.before_context.unwrap_or(args.context) as usize;
        let after = args.after_context.unwrap_or(args.context) as usize;
        let (before, after) = if mode == OutputMode::Content {
            (before, after)
        } else {
            (0, 0)
        };
        let budget = Budget {
            collected: AtomicUsize::new(0),
            cap: self
                .limits()
                .max_output_bytes
                .saturating_mul(COLLECT_FACTOR),
            cut: AtomicBool::new(false),
        };
        let make_searcher = || {
            SearcherBuilder::new()
                .line_number(true)
                .multi_line(args.multiline)
                .before_context(before)
                .after_context(after)
                .binary_detection(BinaryDetection::quit(0))
                .build()
        };
        let max_file_bytes = self.limits().max_file_bytes;
        let search_one = |searcher: &mut Searcher,
                          path: &std::path::Path,
                          display: String|
         -> Option<FileHits> {
            let mut collector = Collector {
                hits: FileHits {
                    path: display,
                    lines: Vec::new(),
                    matches: 0,
                },
                budget: &budget,
                mode,
                multiline: args.multiline,
            };
            // Unreadable files are skipped, like ripgrep without --debug.
            searcher.search_path(&matcher, path, &mut collector).ok()?;
            (collector.hits.matches > 0).then_some(collector.hits)
        };

        let mut found: Vec<FileHits> = if meta.is_file() {
            if meta.len() > max_file_bytes {
                Vec::new()
            } else {
                let mut searcher = make_searcher();
                search_one(&mut searcher, base.abs(), base.display().to_string())
                    .into_iter()
                    .collect()
            }
        } else {
            // The glob only narrows the walk: it is applied to the files the
            // ignore policy lets through, never used to bring ignored ones back.
            let base_abs = base.abs();
            let walker = walk::walker(base_abs, true);
            walk::collect_parallel(&walker, make_searcher, |searcher, entry, found| {
                if budget.is_cut() {
                    return WalkState::Quit;
                }
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                if let Some(filter) = &filter
                    && !filter.allows(entry.path(), base_abs)
                {
                    return WalkState::Continue;
                }
                if entry.metadata().is_ok_and(|m| m.len() > max_file_bytes) {
                    return WalkState::Continue;
                }
                if let Some(hits) = search_one(searcher, entry.path(), ws.display_abs(entry.path()))
                {
                    found.push(hits);
                }
                WalkState::Continue
            })
        };
        found.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        Ok(self.render_grep(args, &found, before > 0 || after > 0, budget.is_cut()))
    }

    fn render_grep(
        &self,
        args: &GrepArgs,
        found: &[FileHits],
        with_context: bool,
        cut: bool,
    ) -> String {
        let total: u64 = match args.output_mode {
            OutputMode::Content => found.iter().map(|f| f.matches).sum(),
            _ => found.len() as u64,
        };
        let offset = args.offset;
        let end = args
            .head_limit
            .map_or(total, |limit| offset.saturating_add(limit).min(total));
        // Keep room for the footer so the facade's cut never removes it.
        let budget = self.limits().max_output_bytes.saturating_sub(400);
        let mut out = String::new();
        let mut shown_end = offset.min(total);
        let mut budget_hit = false;

        match args.output_mode {
            OutputMode::FilesWithMatches | OutputMode::Count => {
                for (index, hits) in found
                    .iter()
                    .enumerate()
                    .skip(offset as usize)
                    .take((end.saturating_sub(offset)) as usize)
                {
                    let line = match args.output_mode {
                        OutputMode::Count => format!("{}:{}\n", hits.path, hits.matches),
                        _ => format!("{}\n", hits.path),
                    };
                    if out.len() + line.len() > budget && index as u64 > offset {
                        budget_hit = true;
                        break;
                    }
                    out.push_str(&line);
                    shown_end = index as u64 + 1;
                }
            }
            OutputMode::Content => {
                let before = u64::from(args.before_context.unwrap_or(args.context));
                let after = u64::from(args.after_context.unwrap_or(args.context));
                // `ordinal` numbers the matching lines across all files.
                let mut ordinal = 0u64;
                let mut last_printed: Option<(usize, u64)> = None;
                'files: for (file_index, hits) in found.iter().enumerate() {
                    if ordinal >= end {
                        break;
                    }
                    if ordinal + hits.matches <= offset {
                        ordinal += hits.matches;
                        continue;
                    }
                    let match_lines = hits.lines.iter().filter(|l| l.is_match);
                    for matched in match_lines {
                        let this = ordinal;
                        ordinal += 1;
                        if this < offset {
                            continue;
                        }
                        if this >= end {
                            break 'files;
                        }
                        // The lines of this match's group not printed yet.
                        let low = matched.number.saturating_sub(before);
                        let high = matched.number.saturating_add(after);
                        let mut group = String::new();
                        let mut previous = last_printed;
                        for line in &hits.lines {
                            if line.number < low || line.number > high {
                                continue;
                            }
                            if previous.is_some_and(|(f, n)| f == file_index && n >= line.number) {
                                continue;
                            }
                            if with_context
                                && let Some((last_file, last_number)) = previous
                                && (last_file != file_index || last_number + 1 != line.number)
                            {
                                group.push_str("--\n");
                            }
                            let separator = if line.is_match { ':' } else { '-' };
                            group.push_str(&format!(
                                "{}{separator}{}{separator}{}\n",
                                hits.path, line.number, line.text
                            ));
                            previous = Some((file_index, line.number));
                        }
                        // Stop before a group that does not fit, but always
                        // show at least one.
                        if out.len() + group.len() > budget && shown_end > offset {
                            budget_hit = true;
                            break 'files;
                        }
                        out.push_str(&group);
                        last_printed = previous;
                        shown_end = this + 1;
                    }
                }
            }
        }

        if total == 0 {
            out.push_str(NO_MATCHES);
            out.push('\n');
        } else if offset >= total {
            out.push_str(&format!(
                "[offset {offset} is past the end of {total} results; page from offset=0]\n"
            ));
        } else if shown_end < total {
            let why = if budget_hit {
                "output limit reached; "
            } else {
                ""
            };
            out.push_str(&format!(
                "[{why}showing {}..{} of {total}; call again with offset={} for more]\n",
                offset + 1,
                shown_end,
                shown_end
            ));
        }
        if cut {
            out.push_str(&format!(
                "[warning: the scan stopped early at the output limit ({} bytes gathered), so these results are incomplete and the total is a lower bound; narrow the search with path, glob or a more specific pattern]\n",
                self.limits().max_output_bytes * COLLECT_FACTOR
            ));
        }
        out
    }
}

fn build_matcher(args: &GrepArgs) -> ToolResult<RegexMatcher> {
    let mut builder = RegexMatcherBuilder::new();
    builder
        .case_insensitive(args.ignore_case)
        .multi_line(true)
        .dot_matches_new_line(args.multiline);
    if !args.multiline {
        builder.line_terminator(Some(b'\n'));
    }
    builder.build(&args.pattern).map_err(|err| {
        ToolError::new(
            ErrorCode::InvalidInput,
            format!("bad regex {:?}: {err}", args.pattern),
        )
    })
}

/// The `glob` argument of grep: a pattern without `/` matches the file name
/// at any depth; one with `/` matches the path relative to the search path.
/// A leading `!` keeps the files that do not match instead.
struct NameFilter {
    matcher: GlobMatcher,
    whole_path: bool,
    negated: bool,
}

impl NameFilter {
    fn new(glob: &str) -> ToolResult<NameFilter> {
        let (negated, pattern) = match glob.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, glob),
        };
        let whole_path = pattern.contains('/');
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let pattern = pattern.trim_start_matches('/');
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|err| ToolError::invalid_input(format!("bad glob {glob:?}: {}", err.kind())))?
            .compile_matcher();
        Ok(NameFilter {
            matcher,
            whole_path,
            negated,
        })
    }

    fn allows(&self, path: &std::path::Path, base: &std::path::Path) -> bool {
        let subject = if self.whole_path {
            path.strip_prefix(base).unwrap_or(path)
        } else {
            match path.file_name() {
                Some(name) => std::path::Path::new(name),
                None => path,
            }
        };
        self.matcher.is_match(subject) != self.negated
    }
}
