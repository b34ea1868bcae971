//! Content search with an ECMAScript regex: the engine's walk (files opened
//! beneath their directory's handle, symlinks not followed), ripgrep's
//! searcher driving [`EcmaMatcher`], and the lines found with their context.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use agent_tools_confine::{ConfinedPath, OpenRegularError, open_regular_at};
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_text::truncate_line;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};

use super::{EcmaBudget, EcmaMatcher, EcmaStop, LinesOverBudget, SearchRun, trigram_query};
use crate::indexed::{below, budget_note, pruned_below, scan_note};
use crate::walk::{FileEntry, Flow, Sink as WalkSink, Skipped, Walk, visit_listed};
use crate::{FileTools, cancelled};

/// A file holding a NUL byte in its first this many bytes is binary and
/// is not searched.
pub const BINARY_PROBE_BYTES: usize = 4096;

/// How much more than one call's output budget a search gathers before it
/// stops and says its results are incomplete.
const COLLECT_FACTOR: usize = 8;

/// What to search for and how much to keep.
#[derive(Debug)]
pub struct EcmaSearch<'a> {
    /// The regex.
    pub matcher: &'a EcmaMatcher,
    /// Lines of context before and after each matching line.
    pub context: usize,
    /// Once more matching lines than this are found, the search stops.
    pub max_matches: usize,
    /// What regress may be given (see the `ecma` module).
    pub budget: EcmaBudget,
}

/// One line found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundLine {
    /// 1-based.
    pub number: u64,
    /// A matching line (else context).
    pub is_match: bool,
    /// The line without its line break (a very long one cut, with a note).
    pub text: String,
}

/// The lines found in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLines {
    /// The file's path relative to the search base, `/`-separated (empty
    /// when the base is the file).
    pub rel: String,
    /// Its lines, in order.
    pub lines: Vec<FoundLine>,
}

impl FileLines {
    /// How many of its lines match.
    pub fn matches(&self) -> usize {
        self.lines.iter().filter(|line| line.is_match).count()
    }
}

/// What a search found.
#[derive(Debug, Clone, Default)]
pub struct SearchFound {
    /// Files with matches, sorted by path.
    pub files: Vec<FileLines>,
    /// Paths that could not be searched, with why (`PATH (WHY)`).
    pub skipped: Vec<String>,
    /// The search stopped early (more than `max_matches`, or the output
    /// budget): the files listed are a part of those that match.
    pub stopped: bool,
    /// A note saying the tree was walked because the workspace index
    /// failed (see the index's fallbacks), or how many files it left out
    /// for its memory budget, or empty.
    pub scan_note: String,
}

struct Budget {
    matches: AtomicUsize,
    bytes: AtomicUsize,
    max_matches: usize,
    max_bytes: usize,
    stop: AtomicBool,
}

impl Budget {
    fn charge(&self, is_match: bool, bytes: usize) {
        let over_bytes = self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes > self.max_bytes;
        let over_matches =
            is_match && self.matches.fetch_add(1, Ordering::Relaxed) + 1 > self.max_matches;
        if over_bytes || over_matches {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn spent(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

struct Collector<'a> {
    lines: Vec<FoundLine>,
    budget: &'a Budget,
    cancel: &'a AtomicBool,
}

impl Collector<'_> {
    fn push(&mut self, number: u64, is_match: bool, bytes: &[u8]) -> bool {
        let text = String::from_utf8_lossy(bytes);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let text = truncate_line(text).into_owned();
        self.budget.charge(is_match, text.len() + 16);
        self.lines.push(FoundLine {
            number,
            is_match,
            text,
        });
        !self.budget.spent() && !self.cancel.load(Ordering::Relaxed)
    }
}

impl Sink for Collector<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = found.line_number().unwrap_or(0);
        // Line-oriented: one line per match, but the sink takes what comes.
        for (index, line) in found.lines().enumerate() {
            if !self.push(first + index as u64, true, line) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        Ok(self.push(context.line_number().unwrap_or(0), false, context.bytes()))
    }
}

/// Why one file gave nothing.
enum Unsearched {
    Binary,
    Failed(String),
    /// The whole search stopped (see [`SearchRun::stopped`]).
    Stopped,
}

/// What one file gave: its lines, and the lines skipped for regress's
/// step budget.
type Searched = (Vec<FoundLine>, Option<LinesOverBudget>);

/// The error a stopped search answers.
fn stop_error(stop: &EcmaStop) -> ToolError {
    super::stop_error(stop.clone())
}

impl FileTools {
    /// Searches the files under `base` (or `base` itself, a file) whose
    /// path relative to it `select` accepts. Every file is looked at (no
    /// ignore files); a file with a NUL byte in its first
    /// [`BINARY_PROBE_BYTES`] is skipped silently.
    pub fn ecma_search(
        &self,
        base: &ConfinedPath,
        search: &EcmaSearch<'_>,
        select: &(dyn Fn(&str) -> bool + Sync),
        cancel: &AtomicBool,
    ) -> ToolResult<SearchFound> {
        let ws = self.workspace();
        let budget = Budget {
            matches: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            max_matches: search.max_matches,
            max_bytes: self
                .limits()
                .max_output_bytes
                .saturating_mul(COLLECT_FACTOR),
            stop: AtomicBool::new(false),
        };
        let max_line = usize::try_from(self.limits().max_file_bytes).unwrap_or(usize::MAX);
        let run = SearchRun::new(search.matcher, search.budget, cancel);
        let make_searcher = || {
            SearcherBuilder::new()
                .line_number(true)
                .before_context(search.context)
                .after_context(search.context)
                // Binary files are told by their first bytes, below.
                .binary_detection(BinaryDetection::none())
                .heap_limit(Some(max_line))
                .build()
        };
        let search_one =
            |searcher: &mut Searcher, file: std::fs::File| -> Result<Searched, Unsearched> {
                let mut head = Vec::with_capacity(BINARY_PROBE_BYTES);
                let mut file = file;
                (&mut file)
                    .take(BINARY_PROBE_BYTES as u64)
                    .read_to_end(&mut head)
                    .map_err(|err| Unsearched::Failed(format!("read error: {err}")))?;
                if memchr::memchr(0, &head).is_some() {
                    return Err(Unsearched::Binary);
                }
                let mut collector = Collector {
                    lines: Vec::new(),
                    budget: &budget,
                    cancel,
                };
                let reader = std::io::Cursor::new(head).chain(file);
                let matcher = search.matcher.in_run(&run);
                let searched = searcher.search_reader(&matcher, reader, &mut collector);
                if run.stopped().is_some() {
                    return Err(Unsearched::Stopped);
                }
                searched.map_err(|err| Unsearched::Failed(format!("cannot be searched: {err}")))?;
                Ok((collector.lines, matcher.over_budget()))
            };

        let meta = ws.metadata(base)?;
        let mut found = SearchFound::default();
        if !meta.is_dir() {
            let (file, _) = crate::open_regular(ws, base)?;
            match search_one(&mut make_searcher(), file) {
                Ok((lines, over)) => {
                    if let Some(over) = over {
                        found.skipped.push(format!("{base} ({over})"));
                    }
                    if lines.iter().any(|l| l.is_match) {
                        found.files.push(FileLines {
                            rel: String::new(),
                            lines,
                        });
                    }
                }
                Err(Unsearched::Binary) => {}
                Err(Unsearched::Stopped) => {}
                Err(Unsearched::Failed(why)) => {
                    return Err(ToolError::new(ErrorCode::IoError, format!("{base}: {why}")));
                }
            }
        } else {
            let walk = Walk {
                workspace: ws,
                base,
                respect_gitignore: false,
                cancel,
                visit_dirs: false,
                max_depth: None,
                exclude: None,
            };
            // One file met by the walk or named by the index.
            let visit = |searcher: &mut Searcher,
                         dir: &cap_std::fs::Dir,
                         name: &str,
                         rel: &str,
                         shown: &str,
                         sink: &mut WalkSink<FileLines>| {
                if budget.spent() {
                    return Flow::Quit;
                }
                if !select(rel) {
                    return Flow::Continue;
                }
                let file = match open_regular_at(dir, Path::new(name)) {
                    Ok((file, _)) => file,
                    Err(OpenRegularError::NotRegular(kind)) => {
                        sink.skipped
                            .push(Skipped::new(shown, format!("it became {kind}")));
                        return Flow::Continue;
                    }
                    Err(OpenRegularError::Io(err)) => {
                        sink.skipped
                            .push(Skipped::new(shown, format!("cannot open: {err}")));
                        return Flow::Continue;
                    }
                };
                match search_one(searcher, file) {
                    Ok((lines, over)) => {
                        if let Some(over) = over {
                            sink.skipped.push(Skipped::new(shown, over.to_string()));
                        }
                        if lines.iter().any(|l| l.is_match) {
                            sink.found.push(FileLines {
                                rel: rel.to_string(),
                                lines,
                            });
                        }
                    }
                    Err(Unsearched::Binary) => {}
                    Err(Unsearched::Stopped) => return Flow::Quit,
                    Err(Unsearched::Failed(why)) => {
                        sink.skipped.push(Skipped::new(shown, why));
                    }
                }
                if budget.spent() {
                    Flow::Quit
                } else {
                    Flow::Continue
                }
            };
            let visit_entry =
                |searcher: &mut Searcher, entry: &FileEntry<'_>, sink: &mut WalkSink<FileLines>| {
                    visit(
                        searcher,
                        entry.dir,
                        entry.name,
                        entry.rel,
                        entry.shown,
                        sink,
                    )
                };
            // From the index: its candidates (every ignored file among
            // them), and a walk of only the directories it does not enter.
            let mut from_index = None;
            match self.indexed_candidates_with_ignored(
                base,
                &trigram_query(search.matcher),
                BINARY_PROBE_BYTES,
            ) {
                Ok(Some((under, candidates))) => {
                    found.scan_note = budget_note(candidates.over_budget);
                    let to_walk = pruned_below(&candidates.pruned, &under);
                    if let Some(walked) = walk.run_within(&to_walk, make_searcher, visit_entry)? {
                        let root = ws.open_dir(&ws.root_path())?;
                        let listed = visit_listed(
                            &root,
                            &candidates.paths,
                            make_searcher,
                            |searcher, dir, name, path, sink| {
                                if cancel.load(Ordering::Relaxed) {
                                    return Flow::Quit;
                                }
                                visit(searcher, dir, name, below(path, &under), path, sink)
                            },
                        );
                        from_index = Some((walked, listed));
                    }
                }
                Ok(None) => {}
                Err(why) => found.scan_note = scan_note(&why),
            }
            let walked = match from_index {
                Some((mut walked, mut listed)) => {
                    walked.found.append(&mut listed.found);
                    walked.skipped.append(&mut listed.skipped);
                    walked
                }
                None => walk.run(make_searcher, visit_entry)?,
            };
            if let Some(stop) = run.stopped() {
                return Err(stop_error(stop));
            }
            if walked.cancelled {
                return Err(cancelled());
            }
            found.files = walked.found;
            let mut skipped = walked.skipped;
            skipped.sort_unstable();
            found.skipped = skipped
                .into_iter()
                .map(|s| format!("{} ({})", s.path, s.why))
                .collect();
        }
        if let Some(stop) = run.stopped() {
            return Err(stop_error(stop));
        }
        if cancel.load(Ordering::Relaxed) {
            return Err(cancelled());
        }
        found.files.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
        found.stopped = budget.spent();
        Ok(found)
    }
}
