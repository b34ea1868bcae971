//! `glob`: files by pattern, most recently modified first.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use agent_tools_confine::quote_text;
use agent_tools_error::{ToolError, ToolResult};
use globset::GlobBuilder;

use agent_tools_confine::ConfinedPath;
use globset::GlobMatcher;

use crate::indexed::{self, below, pruned_below};
use crate::walk::{FileEntry, Flow, Sink, Skipped, Walk, skipped_note};
use crate::{FileTools, GlobArgs, cancelled, page};

/// What `glob` prints when nothing matches (a success).
pub const NO_MATCHES: &str = "(no matches)";

impl FileTools {
    /// Finds files whose path relative to the base matches the pattern.
    pub fn glob(&self, args: &GlobArgs) -> ToolResult<String> {
        self.glob_with(args, &AtomicBool::new(false))
    }

    /// [`glob`](Self::glob), stopping with an error once `cancel` is set.
    pub fn glob_with(&self, args: &GlobArgs, cancel: &AtomicBool) -> ToolResult<String> {
        page::check_limit(args.limit)?;
        let found = self.glob_files(args, cancel)?;
        let note = found.note;
        let mut files = found.files;
        if files.is_empty() {
            return Ok(format!("{NO_MATCHES}{}", with_newline_before(&note)));
        }
        files.sort_unstable_by(|a, b| {
            b.modified
                .cmp(&a.modified)
                .then_with(|| a.shown.cmp(&b.shown))
        });
        let lines: Vec<String> = files.into_iter().map(|file| file.shown + "\n").collect();
        Ok(page::render(
            lines.iter().map(String::as_str),
            args.offset,
            args.limit,
            self.limits().max_output_bytes,
            &note,
        ))
    }

    /// The files `glob` finds, unsorted and unpaged, each with its
    /// modification time, for callers that order and print them their own
    /// way (`offset` and `limit` of `args` are not used).
    pub fn glob_files(&self, args: &GlobArgs, cancel: &AtomicBool) -> ToolResult<GlobFound> {
        let ws = self.workspace();
        let base = ws.resolve_dir(args.path.as_deref(), "glob searches a directory")?;
        let pattern = args.pattern.strip_prefix("./").unwrap_or(&args.pattern);
        let pattern = absolute_to_relative(pattern, base.abs(), ws);
        let matcher = compile(&pattern, &args.pattern)?.compile_matcher();
        let mut matched =
            self.matching_files(&base, &pattern, &matcher, args.respect_gitignore, cancel)?;
        let note = skipped_note(&mut matched.skipped) + &matched.scan_note;
        Ok(GlobFound {
            files: matched.files,
            note,
        })
    }

    /// The files under `base` whose path relative to it `matcher` (the
    /// glob `pattern`) accepts: from the index when it can answer (its file
    /// list, or for a search that includes ignored files its table plus a
    /// walk of only the directories it does not enter; either narrowed by
    /// the base names the glob allows when its last component has a
    /// literal), by walking otherwise.
    fn matching_files(
        &self,
        base: &ConfinedPath,
        pattern: &str,
        matcher: &GlobMatcher,
        respect_gitignore: bool,
        cancel: &AtomicBool,
    ) -> ToolResult<Matched> {
        let walk = Walk {
            workspace: self.workspace(),
            base,
            respect_gitignore,
            cancel,
            visit_dirs: false,
            max_depth: None,
            exclude: None,
        };
        let visit = |_: &mut (), entry: &FileEntry<'_>, sink: &mut Sink<GlobFile>| {
            if matcher.is_match(entry.rel) {
                let modified = entry
                    .dir
                    .symlink_metadata(entry.name)
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .map_or(SystemTime::UNIX_EPOCH, |t| t.into_std());
                sink.found.push(GlobFile {
                    shown: quote_text(entry.shown).into_owned(),
                    rel: entry.rel.to_owned(),
                    modified,
                });
            }
            Flow::Continue
        };
        let from_table = |under: &str, files: Vec<agent_tools_index::ListedFile>| {
            files
                .into_iter()
                .map(|file| GlobFile {
                    shown: quote_text(&file.path).into_owned(),
                    rel: below(&file.path, under).to_owned(),
                    modified: file.modified,
                })
                .collect::<Vec<GlobFile>>()
        };
        let names = agent_tools_index::NameFilter::from_glob(pattern);
        let mut scan_note = String::new();
        if !respect_gitignore {
            // Ignored files too: the index's table, and a walk of only the
            // directories it does not enter.
            match self.indexed_tree(base, names.as_ref(), |rel| matcher.is_match(rel)) {
                Ok(Some((under, tree))) => {
                    let to_walk = pruned_below(&tree.pruned, &under);
                    if let Some(mut walked) = walk.run_within(&to_walk, || (), visit)? {
                        if walked.cancelled || cancel.load(Ordering::Relaxed) {
                            return Err(cancelled());
                        }
                        let mut files = from_table(&under, tree.files);
                        files.append(&mut walked.found);
                        return Ok(Matched {
                            files,
                            skipped: walked.skipped,
                            scan_note,
                        });
                    }
                }
                Ok(None) => {}
                Err(why) => scan_note = indexed::scan_note(&why),
            }
        } else {
            match self.indexed_files(base, names.as_ref(), |rel| matcher.is_match(rel)) {
                Ok(Some((under, files))) => {
                    return Ok(Matched {
                        files: from_table(&under, files),
                        skipped: Vec::new(),
                        scan_note,
                    });
                }
                Ok(None) => {}
                Err(why) => scan_note = indexed::scan_note(&why),
            }
        }
        let walked = walk.run(|| (), visit)?;
        if walked.cancelled {
            return Err(cancelled());
        }
        Ok(Matched {
            files: walked.found,
            skipped: walked.skipped,
            scan_note,
        })
    }
}

/// What [`FileTools::matching_files`] found.
struct Matched {
    files: Vec<GlobFile>,
    /// What the walk could not look at.
    skipped: Vec<Skipped>,
    /// Why the index did not answer, when it failed; empty otherwise.
    scan_note: String,
}

/// The one glob dialect of the file tools: `*` and `?` stay within a path
/// component, `**` spans any number, `{a,b}` alternates, `\\` escapes.
/// `shown` is the pattern as the caller gave it, for the error.
pub(crate) fn compile(pattern: &str, shown: &str) -> ToolResult<globset::Glob> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|err| {
            ToolError::invalid_input(format!("bad glob pattern {shown:?}: {}", err.kind()))
        })
}

/// A file `glob` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobFile {
    /// Its path as `glob` prints it: relative to the root, quoted when it
    /// holds odd characters.
    pub shown: String,
    /// Its path relative to the directory searched, `/`-separated, raw.
    pub rel: String,
    /// Its modification time (the epoch when it could not be read).
    pub modified: SystemTime,
}

/// What [`FileTools::glob_files`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobFound {
    /// The files, in no particular order.
    pub files: Vec<GlobFile>,
    /// The note naming what the walk could not look at, or empty.
    pub note: String,
}

fn with_newline_before(note: &str) -> String {
    if note.is_empty() {
        String::new()
    } else {
        format!("\n{note}")
    }
}

/// Accepts an absolute pattern that starts with the base directory, in
/// either spelling of the root.
fn absolute_to_relative(
    pattern: &str,
    base: &std::path::Path,
    ws: &agent_tools_confine::Workspace,
) -> String {
    let mut spellings = vec![base.to_path_buf()];
    if let (Some(given), Some(rel)) = (ws.given_root(), ws.strip_root(base)) {
        spellings.push(given.join(rel));
    }
    for base in spellings {
        let base = base.to_string_lossy();
        // The root's path may end in a separator; the pattern's rest starts with one.
        let base = base.trim_end_matches('/');
        if let Some(rest) = pattern.strip_prefix(base)
            && rest.starts_with('/')
        {
            return rest.trim_start_matches('/').to_string();
        }
    }
    pattern.to_string()
}

impl FileTools {
    /// The files under `base` whose path relative to it matches `pattern`
    /// (the glob syntax of [`glob`](Self::glob): `*` stays within a
    /// directory, `**` crosses them), as `/`-separated relative paths,
    /// sorted. Every file is looked at (no ignore files); symlinks are not
    /// followed. The second list names what could not be looked at.
    pub fn glob_paths(
        &self,
        base: &ConfinedPath,
        pattern: &str,
        cancel: &AtomicBool,
    ) -> ToolResult<(Vec<String>, Vec<String>)> {
        let matcher = compile(pattern, pattern)?.compile_matcher();
        let matched = self.matching_files(base, pattern, &matcher, false, cancel)?;
        let mut found: Vec<String> = matched.files.into_iter().map(|file| file.rel).collect();
        found.sort_unstable();
        let mut skipped = matched.skipped;
        skipped.sort_unstable();
        let skipped = skipped
            .into_iter()
            .map(|s| format!("{} ({})", s.path, s.why))
            .collect();
        Ok((found, skipped))
    }
}
