//! `grep`: ripgrep's own crates, in process, with deterministic paged output.
//!
//! The walk is parallel (see `walk`); each thread searches the files it
//! visits, opened through their directory's handle, and keeps what it found.
//! Results are then sorted by path (and line), so the same search always
//! prints the same thing, and paged with `offset`/`head_limit`. Files are
//! searched as streams, so their size does not matter; only a line (or, in
//! multiline mode, a file) larger than `max_file_bytes` cannot be searched.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::SystemTime;

use agent_tools_confine::{OpenRegularError, open_regular_at, quote_text};
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_text::truncate_line;
use cap_std::fs::Dir;
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink as SearchSink, SinkContext, SinkMatch,
};

use crate::indexed::{below, budget_note, scan_note};
use crate::walk::{Flow, Sink, Skipped, Walk, skipped_note, visit_listed};
use crate::{FileTools, GrepArgs, OutputMode, cancelled, page};

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
    /// The path as printed (quoted when it needs to be).
    path: String,
    /// The path relative to the search base, raw.
    rel: String,
    /// The file's modification time.
    modified: SystemTime,
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
    /// Set for only-matching output: each match's text is a line of its own.
    only_matching: Option<&'a RegexMatcher>,
    budget: &'a Budget,
    mode: OutputMode,
    multiline: bool,
    cancel: &'a AtomicBool,
    /// Binary data was met (the search stopped there).
    binary: bool,
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

impl Collector<'_> {
    /// The non-empty matches within `bytes` (a match's lines, starting at
    /// line `first`), each a result of its own at the line it starts on.
    fn push_matches(&mut self, matcher: &RegexMatcher, first: u64, bytes: &[u8]) -> bool {
        use grep_matcher::Matcher as _;
        let mut spans = Vec::new();
        let _ = matcher.find_iter(bytes, |found| {
            if !found.is_empty() {
                spans.push((found.start(), found.end()));
            }
            true
        });
        let mut more = true;
        for (start, end) in spans {
            let number = first + agent_tools_text::count_newlines(&bytes[..start]) as u64;
            let text = String::from_utf8_lossy(&bytes[start..end]);
            let text = truncate_line(text.trim_end_matches(['\n', '\r'])).into_owned();
            self.hits.matches += 1;
            more &= self.budget.charge(text.len() + self.hits.path.len() + 16);
            self.hits.lines.push(Line {
                number,
                is_match: true,
                text,
            });
            if !more {
                break;
            }
        }
        more
    }
}

impl SearchSink for Collector<'_> {
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
        if let Some(matcher) = self.only_matching {
            return Ok(self.push_matches(matcher, first, mat.bytes())
                && !self.budget.is_cut()
                && !self.cancel.load(Ordering::Relaxed));
        }
        // A multiline match may span the whole file: stop taking its lines
        // once the budget is spent, rather than after all of them.
        for (index, line) in mat.lines().enumerate() {
            if !self.push(first + index as u64, true, line) {
                return Ok(false);
            }
        }
        Ok(!self.budget.is_cut() && !self.cancel.load(Ordering::Relaxed))
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        ctx: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        let more = self.push(ctx.line_number().unwrap_or(0), false, ctx.bytes());
        Ok(more && !self.budget.is_cut() && !self.cancel.load(Ordering::Relaxed))
    }

    fn binary_data(
        &mut self,
        _searcher: &Searcher,
        _binary_byte_offset: u64,
    ) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A file being searched, read in blocks that each check the cancel flag:
/// a long scan with no match never reaches the sink, so the reader is where
/// a cancel is noticed.
struct CancellableRead<'a, R> {
    inner: R,
    cancel: &'a AtomicBool,
    /// The file itself failed to read (as opposed to the searcher refusing).
    failed: bool,
}

impl<R: Read> Read for CancellableRead<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(std::io::Error::other("cancelled"));
        }
        let read = self.inner.read(buf);
        self.failed |= read.is_err();
        read
    }
}

/// Why one file gave no results.
enum Unsearched {
    /// Binary data before any match: skipped by policy.
    Binary,
    /// The search failed (a read error, or a line or multiline file over
    /// the memory bound).
    Failed(String),
}

impl FileTools {
    /// Searches file contents. See SPEC.md for the output formats.
    pub fn grep(&self, args: &GrepArgs) -> ToolResult<String> {
        self.grep_with(args, &AtomicBool::new(false))
    }

    /// [`grep`](Self::grep), stopping with an error once `cancel` is set.
    pub fn grep_with(&self, args: &GrepArgs, cancel: &AtomicBool) -> ToolResult<String> {
        if args.head_limit == Some(0) {
            return Err(ToolError::invalid_input(
                "head_limit must be at least 1; omit it for all results",
            ));
        }
        let filters = args
            .glob
            .as_deref()
            .map(NameFilter::new)
            .transpose()?
            .into_iter()
            .collect();
        let extras = Extras {
            filters,
            types: None,
            only_matching: false,
        };
        let mut searched = self.search(args, &extras, cancel)?;
        let mode = args.output_mode;
        let before = args.before_context.unwrap_or(args.context) as usize;
        let after = args.after_context.unwrap_or(args.context) as usize;
        let with_context = mode == OutputMode::Content && (before > 0 || after > 0);
        let note = skipped_note(&mut searched.skipped) + &searched.scan_note;
        let mut out = self.render_grep(
            args,
            &searched.found,
            with_context,
            searched.cut,
            note.len(),
        );
        out.push_str(&note);
        Ok(out)
    }

    /// The files `query` matches, each with its matching lines (and context
    /// lines, in content mode) in line order, unpaged and unsorted, for
    /// callers that order and print them their own way. `head_limit` and
    /// `offset` of the query's arguments are not used, nor its `glob` (the
    /// query's `globs` are). Gathering stops at eight times the output
    /// budget (`cut` says so).
    pub fn grep_files(&self, query: &GrepQuery, cancel: &AtomicBool) -> ToolResult<GrepFound> {
        let filters = query
            .globs
            .iter()
            .map(|glob| NameFilter::new(glob))
            .collect::<ToolResult<Vec<_>>>()?;
        let types = match &query.file_type {
            None => None,
            Some(name) => {
                let mut builder = ignore::types::TypesBuilder::new();
                builder.add_defaults();
                builder.select(name);
                Some(builder.build().map_err(|err| {
                    ToolError::invalid_input(format!("file type {name:?}: {err}"))
                })?)
            }
        };
        let extras = Extras {
            filters,
            types,
            only_matching: query.only_matching,
        };
        let mut searched = self.search(&query.args, &extras, cancel)?;
        let files = searched
            .found
            .into_iter()
            .map(|hits| GrepFile {
                shown: hits.path,
                rel: hits.rel,
                modified: hits.modified,
                matches: hits.matches,
                lines: hits
                    .lines
                    .into_iter()
                    .map(|line| GrepLine {
                        number: line.number,
                        is_match: line.is_match,
                        text: line.text,
                    })
                    .collect(),
            })
            .collect();
        Ok(GrepFound {
            files,
            note: skipped_note(&mut searched.skipped) + &searched.scan_note,
            cut: searched.cut,
        })
    }

    /// The search both outputs share: every file with a match, sorted by
    /// path.
    fn search(
        &self,
        args: &GrepArgs,
        extras: &Extras,
        cancel: &AtomicBool,
    ) -> ToolResult<Searched> {
        let ws = self.workspace();
        let base = ws.resolve_or_root(args.path.as_deref())?;
        let matcher = build_matcher(args)?;
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
        let max_file_bytes = usize::try_from(self.limits().max_file_bytes).unwrap_or(usize::MAX);
        let make_searcher = || {
            SearcherBuilder::new()
                .line_number(true)
                .multi_line(args.multiline)
                .before_context(before)
                .after_context(after)
                .binary_detection(BinaryDetection::quit(0))
                // Files are streamed; what must fit in memory is one line
                // (with its context), or the whole file in multiline mode.
                .heap_limit(Some(max_file_bytes))
                .build()
        };
        let only_matching =
            (extras.only_matching && mode == OutputMode::Content).then_some(&matcher);
        let search_one = |searcher: &mut Searcher,
                          file: std::fs::File,
                          shown: String,
                          rel: String|
         -> Result<Option<FileHits>, Unsearched> {
            let modified = file
                .metadata()
                .and_then(|meta| meta.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            let mut collector = Collector {
                only_matching,
                hits: FileHits {
                    path: shown,
                    rel,
                    modified,
                    lines: Vec::new(),
                    matches: 0,
                },
                budget: &budget,
                mode,
                multiline: args.multiline,
                cancel,
                binary: false,
            };
            let mut reader = CancellableRead {
                inner: file,
                cancel,
                failed: false,
            };
            if let Err(err) = searcher.search_reader(&matcher, &mut reader, &mut collector) {
                if cancel.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                let why = if reader.failed {
                    format!("read error: {err}")
                } else {
                    // The reader did not fail and the sink never does: the
                    // searcher stopped at its memory bound.
                    memory_bound(args.multiline, max_file_bytes)
                };
                return Err(Unsearched::Failed(why));
            }
            if collector.hits.matches > 0 {
                Ok(Some(collector.hits))
            } else if collector.binary {
                Err(Unsearched::Binary)
            } else {
                Ok(None)
            }
        };

        let mut skipped: Vec<Skipped> = Vec::new();
        let mut scan_why = String::new();
        let mut found: Vec<FileHits> = if !meta.is_dir() {
            // One file, named by the caller: anything that keeps it from
            // being searched is an error, never a silent "(no matches)".
            let (file, _) = ws.open_regular(&base, "grep searches a file or a directory")?;
            let mut searcher = make_searcher();
            let name = base
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            match search_one(&mut searcher, file, base.display().to_string(), name) {
                Ok(hits) => hits.into_iter().collect(),
                Err(Unsearched::Binary) => {
                    return Err(ToolError::new(
                        ErrorCode::IsBinary,
                        format!("{base}: appears to be a binary file; grep searches text only"),
                    ));
                }
                Err(Unsearched::Failed(why)) => {
                    return Err(ToolError::new(
                        ErrorCode::IoError,
                        format!("{base}: cannot be searched: {why}"),
                    ));
                }
            }
        } else {
            // One file found by the walk or named by the index: filtered by
            // the globs and types, opened beneath `dir`, searched, its hits
            // or the reason it was skipped kept.
            let visit = |searcher: &mut Searcher,
                         dir: &Dir,
                         name: &str,
                         rel: &str,
                         shown: &str,
                         sink: &mut Sink<FileHits>| {
                if !extras.allows(rel, name) {
                    return;
                }
                let file = match open_regular_at(dir, std::path::Path::new(name)) {
                    Ok((file, _)) => file,
                    Err(OpenRegularError::NotRegular(kind)) => {
                        sink.skipped
                            .push(Skipped::new(shown, format!("it became {kind}")));
                        return;
                    }
                    Err(OpenRegularError::Io(err)) => {
                        sink.skipped
                            .push(Skipped::new(shown, format!("cannot open: {err}")));
                        return;
                    }
                };
                match search_one(
                    searcher,
                    file,
                    quote_text(shown).into_owned(),
                    rel.to_owned(),
                ) {
                    Ok(Some(hits)) => sink.found.push(hits),
                    Ok(None) | Err(Unsearched::Binary) => {}
                    Err(Unsearched::Failed(why)) => {
                        sink.skipped.push(Skipped::new(shown, why));
                    }
                }
            };
            let from_index = match self.indexed_candidates(&base, args) {
                Ok(listed) => listed,
                Err(why) => {
                    scan_why = scan_note(&why);
                    None
                }
            };
            if let Some((under, candidates)) = from_index {
                scan_why = budget_note(candidates.over_budget);
                let root = ws.open_dir(&ws.root_path())?;
                let sink = visit_listed(
                    &root,
                    &candidates.paths,
                    make_searcher,
                    |searcher, dir, name, path, sink| {
                        if budget.is_cut() || cancel.load(Ordering::Relaxed) {
                            return Flow::Quit;
                        }
                        visit(searcher, dir, name, below(path, &under), path, sink);
                        Flow::Continue
                    },
                );
                skipped = sink.skipped;
                sink.found
            } else {
                // The glob only narrows the walk: it is applied to the files
                // the ignore policy lets through, never used to bring ignored
                // ones back.
                let walk = Walk {
                    workspace: ws,
                    base: &base,
                    respect_gitignore: true,
                    cancel,
                    visit_dirs: false,
                    max_depth: None,
                    exclude: None,
                };
                let walked = walk.run(make_searcher, |searcher, entry, sink| {
                    if budget.is_cut() {
                        return Flow::Quit;
                    }
                    visit(
                        searcher,
                        entry.dir,
                        entry.name,
                        entry.rel,
                        entry.shown,
                        sink,
                    );
                    Flow::Continue
                })?;
                skipped = walked.skipped;
                walked.found
            }
        };
        if cancel.load(Ordering::Relaxed) {
            return Err(cancelled());
        }
        found.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        Ok(Searched {
            found,
            skipped,
            scan_note: scan_why,
            cut: budget.is_cut(),
        })
    }

    fn render_grep(
        &self,
        args: &GrepArgs,
        found: &[FileHits],
        with_context: bool,
        cut: bool,
        room_for_notes: usize,
    ) -> String {
        let total: u64 = match args.output_mode {
            OutputMode::Content => found.iter().map(|f| f.matches).sum(),
            _ => found.len() as u64,
        };
        let offset = args.offset;
        let max_output = self
            .limits()
            .max_output_bytes
            .saturating_sub(room_for_notes);
        let mut out = String::new();

        let page = match args.output_mode {
            OutputMode::FilesWithMatches | OutputMode::Count => {
                let lines = found.iter().map(|hits| match args.output_mode {
                    OutputMode::Count => format!("{}:{}\n", hits.path, hits.matches),
                    _ => format!("{}\n", hits.path),
                });
                let lines: Vec<String> = lines.collect();
                page::page_lines(
                    &mut out,
                    lines.iter().map(String::as_str),
                    total,
                    offset,
                    args.head_limit,
                    max_output,
                )
            }
            OutputMode::Content => render_content(
                &mut out,
                args,
                found,
                with_context,
                total,
                max_output.saturating_sub(page::FOOTER_ROOM),
            ),
        };

        if total == 0 {
            out.push_str(NO_MATCHES);
            out.push('\n');
        } else {
            out.push_str(&page::footer(total, offset, page));
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

/// Content mode: each matching line with its context, `--` between groups
/// that are not adjacent. The lines of a file are sorted, so one cursor per
/// file walks them once: the cost is linear in the lines gathered, however
/// many matches share them.
fn render_content(
    out: &mut String,
    args: &GrepArgs,
    found: &[FileHits],
    with_context: bool,
    total: u64,
    budget: usize,
) -> page::PageEnd {
    let offset = args.offset;
    let end = page::requested_end(offset, args.head_limit, total);
    let before = u64::from(args.before_context.unwrap_or(args.context));
    let after = u64::from(args.after_context.unwrap_or(args.context));
    let mut page = page::PageEnd {
        shown_end: offset.min(total),
        budget_hit: false,
    };
    // `ordinal` numbers the matching lines across all files.
    let mut ordinal = 0u64;
    let mut last_printed: Option<(usize, u64)> = None;
    let mut group = String::new();
    'files: for (file_index, hits) in found.iter().enumerate() {
        if ordinal >= end {
            break;
        }
        if ordinal + hits.matches <= offset {
            ordinal += hits.matches;
            continue;
        }
        // The first line of this file not printed yet.
        let mut cursor = 0usize;
        for matched in hits.lines.iter().filter(|l| l.is_match) {
            let this = ordinal;
            ordinal += 1;
            if this < offset {
                continue;
            }
            if this >= end {
                break 'files;
            }
            let low = matched.number.saturating_sub(before);
            let high = matched.number.saturating_add(after);
            while cursor < hits.lines.len() && hits.lines[cursor].number < low {
                cursor += 1;
            }
            group.clear();
            let mut previous = last_printed;
            let mut next = cursor;
            while next < hits.lines.len() && hits.lines[next].number <= high {
                let line = &hits.lines[next];
                next += 1;
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
            // Stop before a group that does not fit, but always show at
            // least one.
            if out.len() + group.len() > budget && page.shown_end > offset {
                page.budget_hit = true;
                break 'files;
            }
            out.push_str(&group);
            cursor = next;
            last_printed = previous;
            page.shown_end = this + 1;
        }
    }
    page
}

/// What a search gathered.
struct Searched {
    found: Vec<FileHits>,
    skipped: Vec<Skipped>,
    /// Why the index was passed over for a walk, when that is worth saying
    /// (see `indexed::scan_note`), or how many files it left out for its
    /// budget (`indexed::budget_note`), or empty.
    scan_note: String,
    cut: bool,
}

/// Filters and output choices beyond [`GrepArgs`].
struct Extras {
    /// Globs a file must pass (all of them).
    filters: Vec<NameFilter>,
    /// ripgrep's file types, one selected.
    types: Option<ignore::types::Types>,
    only_matching: bool,
}

impl Extras {
    fn allows(&self, rel: &str, name: &str) -> bool {
        if let Some(types) = &self.types
            && !types.matched(rel, false).is_whitelist()
        {
            return false;
        }
        let (negated, positive): (Vec<&NameFilter>, Vec<&NameFilter>) =
            self.filters.iter().partition(|filter| filter.negated);
        negated.iter().all(|filter| filter.allows(rel, name))
            && (positive.is_empty() || positive.iter().any(|filter| filter.allows(rel, name)))
    }
}

/// A search for [`FileTools::grep_files`]: grep's arguments, plus ripgrep
/// file types and only-matching output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepQuery {
    /// Pattern, path, mode, case, multiline and context (`glob`,
    /// `head_limit` and `offset` are not used).
    pub args: GrepArgs,
    /// Globs as grep's `glob` takes them; a file must match one of those
    /// without `!` (when there are any) and none of those with `!`.
    pub globs: Vec<String>,
    /// One of ripgrep's file types (`rust`, `py`, `js`, ...).
    pub file_type: Option<String>,
    /// In content mode, each match's text instead of its line.
    pub only_matching: bool,
}

/// A line `grep_files` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepLine {
    /// Its 1-based number.
    pub number: u64,
    /// A matching line (or match), rather than context.
    pub is_match: bool,
    /// Its text, without the line break, cut at 2,000 characters.
    pub text: String,
}

/// A file `grep_files` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepFile {
    /// Its path as grep prints it (relative to the root, quoted if odd).
    pub shown: String,
    /// Its path relative to the searched directory (its name when a file
    /// was searched), raw.
    pub rel: String,
    /// Its modification time.
    pub modified: SystemTime,
    /// Matching lines (in multiline mode, lines of matches; with
    /// only-matching, matches).
    pub matches: u64,
    /// In content mode, the lines, in order.
    pub lines: Vec<GrepLine>,
}

/// What [`FileTools::grep_files`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepFound {
    /// The files, sorted by path.
    pub files: Vec<GrepFile>,
    /// What the walk could not look at, or empty.
    pub note: String,
    /// Gathering stopped at its budget: the results are incomplete.
    pub cut: bool,
}

/// Why the searcher gave up on a file at its memory bound, in words an agent
/// can act on.
fn memory_bound(multiline: bool, max_file_bytes: usize) -> String {
    if multiline {
        format!(
            "a multiline search holds the whole file in memory, and it is over the {max_file_bytes} byte limit; search it without multiline"
        )
    } else {
        format!("it has a line over the {max_file_bytes} byte limit")
    }
}

/// The matcher of a grep. The workspace index parses the pattern with the
/// same flags to choose candidate files (`indexed::grep_query`): a flag
/// added here must be added there.
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

    /// `rel` is the path relative to the search base, `name` its last part.
    fn allows(&self, rel: &str, name: &str) -> bool {
        let subject = if self.whole_path { rel } else { name };
        self.matcher.is_match(subject) != self.negated
    }
}
