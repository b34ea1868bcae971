//! `find`: the entries under a directory (files, and directories when
//! asked) that a caller's test selects, through the one walk of the crate,
//! sorted by path, with memory and output bounded however many match.

use std::cmp::Ordering as Order;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use agent_tools_error::{ToolError, ToolResult};
use agent_tools_index::Tree;
use globset::{GlobSet, GlobSetBuilder};

use crate::indexed::{below, scan_note};
use crate::walk::{FileEntry, Flow, Sink, Walk, skipped_note};
use crate::{FileTools, cancelled, glob};

/// Glob patterns in the dialect of the `glob` tool (`*` within a name,
/// `**` across directories, `{a,b}`, `?`), matched against paths relative
/// to the directory searched, `/`-separated.
#[derive(Debug, Clone)]
pub struct Globs {
    set: GlobSet,
}

impl Globs {
    /// Patterns matched against the whole relative path (`*.rs` matches at
    /// the top only, `**/*.rs` at any depth). A leading `./` is ignored.
    pub fn relative(patterns: &[String]) -> ToolResult<Globs> {
        let mut set = GlobSetBuilder::new();
        for pattern in patterns {
            let relative = pattern.strip_prefix("./").unwrap_or(pattern);
            set.add(glob::compile(relative, pattern)?);
        }
        Self::build(set)
    }

    /// Exclusion patterns, as `.gitignore` reads them: a pattern without
    /// `/` matches a name at any depth (`node_modules`, `*.log`); one with
    /// a `/` matches the path relative to the directory searched. An
    /// excluded directory is not searched at all.
    pub fn exclusions(patterns: &[String]) -> ToolResult<Globs> {
        let mut set = GlobSetBuilder::new();
        for pattern in patterns {
            let trimmed = pattern.trim_end_matches('/');
            let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
            let trimmed = trimmed.strip_prefix('/').unwrap_or(trimmed);
            if trimmed.is_empty() {
                return Err(ToolError::invalid_input(format!(
                    "exclusion pattern {pattern:?} matches nothing; give a name or a glob"
                )));
            }
            if trimmed.contains('/') {
                set.add(glob::compile(trimmed, pattern)?);
            } else {
                set.add(glob::compile(&format!("**/{trimmed}"), pattern)?);
            }
        }
        Self::build(set)
    }

    fn build(set: GlobSetBuilder) -> ToolResult<Globs> {
        let set = set
            .build()
            .map_err(|err| ToolError::invalid_input(format!("bad glob pattern: {}", err.kind())))?;
        Ok(Globs { set })
    }

    /// Whether `rel` (relative, `/`-separated) matches one of the patterns.
    pub fn is_match(&self, rel: &str) -> bool {
        self.set.is_match(rel)
    }
}

/// How much of what matched is kept: the first entries in path order, at
/// most `max_entries` of them and at most `max_bytes` counted as each
/// entry's relative path plus `bytes_per_entry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    /// At most this many entries; `None` for no count limit.
    pub max_entries: Option<usize>,
    /// At most this many bytes in all.
    pub max_bytes: usize,
    /// What each entry costs besides its path (a line's newline, a prefix,
    /// the JSON around a name).
    pub bytes_per_entry: usize,
}

impl Keep {
    fn cost(&self, entry: &FoundEntry) -> usize {
        entry.rel.len().saturating_add(self.bytes_per_entry)
    }

    /// Sorts `entries` and cuts them to the limits.
    fn cut(&self, entries: &mut Vec<FoundEntry>) {
        entries.sort_unstable_by(|a, b| path_order(&a.rel, &b.rel));
        let mut bytes = 0usize;
        let mut kept = 0;
        for entry in entries.iter() {
            if self.max_entries.is_some_and(|max| kept >= max) {
                break;
            }
            bytes = bytes.saturating_add(self.cost(entry));
            if bytes > self.max_bytes {
                break;
            }
            kept += 1;
        }
        entries.truncate(kept);
    }

    /// What one walker thread keeps of its own entries: those [`cut`](Self::cut)
    /// could keep from the whole list, and the first that does not fit
    /// (its place in the whole list decides where the final cut stops:
    /// without it, entries the final cut must not reach would be kept).
    fn cut_thread(&self, entries: &mut Vec<FoundEntry>) {
        entries.sort_unstable_by(|a, b| path_order(&a.rel, &b.rel));
        let mut bytes = 0usize;
        let mut kept = 0;
        for entry in entries.iter() {
            if self.max_entries.is_some_and(|max| kept >= max) || bytes > self.max_bytes {
                break;
            }
            bytes = bytes.saturating_add(self.cost(entry));
            kept += 1;
        }
        entries.truncate(kept);
    }
}

/// The order entries are listed in: component by component, so a
/// directory's contents follow it directly (`a`, `a/b`, `a-c`).
pub fn path_order(a: &str, b: &str) -> Order {
    a.split('/').cmp(b.split('/'))
}

/// What to look at.
#[derive(Debug, Clone, Copy)]
pub struct FindOptions<'a> {
    /// Entries matching these (and everything in an excluded directory)
    /// are left out.
    pub exclude: Option<&'a Globs>,
    /// Offer directories to the test too, not only regular files.
    pub directories: bool,
    /// How deep to go: the directory's own entries are at depth 1; 0 looks
    /// at nothing. `None` for no limit.
    pub max_depth: Option<usize>,
    /// How much to keep.
    pub keep: Keep,
}

/// One entry found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundEntry {
    /// Its path relative to the directory searched, `/`-separated.
    pub rel: String,
    /// Whether it is a directory.
    pub is_dir: bool,
}

/// What `find` gathered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The entries kept, in [`path_order`].
    pub entries: Vec<FoundEntry>,
    /// How many entries matched in all (more than `entries.len()` when the
    /// limits cut the list).
    pub matched: usize,
    /// A note naming what could not be looked at, or empty.
    pub note: String,
}

impl FileTools {
    /// Walks the directory `dir` (confined like every path; symlinks,
    /// FIFOs, sockets and devices neither followed nor listed; git ignore
    /// files not consulted) and keeps the entries for which
    /// `select(rel, name, is_dir)` holds, within `options.keep`. Which
    /// entries are kept does not depend on the order the walk met them: the
    /// first in [`path_order`] are. Fails with an error once `cancel` is set.
    pub fn find(
        &self,
        dir: &str,
        options: &FindOptions<'_>,
        select: impl Fn(&str, &str, bool) -> bool + Sync,
        cancel: &AtomicBool,
    ) -> ToolResult<Found> {
        let ws = self.workspace();
        let base = ws.resolve_dir(Some(dir), "give a directory to search")?;
        let matched = AtomicUsize::new(0);
        let keep = options.keep;
        let walk = Walk {
            workspace: ws,
            base: &base,
            respect_gitignore: false,
            cancel,
            visit_dirs: options.directories,
            max_depth: options.max_depth,
            exclude: options.exclude.map(|globs| &globs.set),
        };
        let visit = |bytes: &mut usize, entry: &FileEntry<'_>, sink: &mut Sink<FoundEntry>| {
            if select(entry.rel, entry.name, entry.is_dir) {
                matched.fetch_add(1, Ordering::Relaxed);
                let found = FoundEntry {
                    rel: entry.rel.to_owned(),
                    is_dir: entry.is_dir,
                };
                *bytes = bytes.saturating_add(keep.cost(&found));
                sink.found.push(found);
                // Each thread keeps at most twice what is shown: the
                // first entries of the whole list are among the first
                // of some thread's.
                let over_count = keep
                    .max_entries
                    .is_some_and(|max| sink.found.len() > max.saturating_mul(2).max(64));
                if over_count || *bytes > keep.max_bytes.saturating_mul(2) {
                    keep.cut_thread(&mut sink.found);
                    *bytes = sink.found.iter().map(|e| keep.cost(e)).sum();
                }
            }
            Flow::Continue
        };
        // From the index: its table, and a walk of only the directories it
        // does not enter (ignored ones, `.git`), met as the full walk
        // would meet them.
        let mut scan_why = String::new();
        let mut from_index = None;
        match self.indexed_tree(&base, None, |_| true) {
            Ok(Some((under, tree))) => {
                let (listed, to_walk) = entries_from_tree(&under, &tree, options, &select);
                if let Some(walked) = walk.run_within(&to_walk, || 0usize, visit)? {
                    matched.fetch_add(listed.len(), Ordering::Relaxed);
                    from_index = Some((listed, walked));
                }
            }
            Ok(None) => {}
            Err(why) => scan_why = scan_note(&why),
        }
        let (mut entries, mut walked) = match from_index {
            Some((listed, walked)) => (listed, walked),
            None => (Vec::new(), walk.run(|| 0usize, visit)?),
        };
        if walked.cancelled || cancel.load(Ordering::Relaxed) {
            return Err(cancelled());
        }
        entries.append(&mut walked.found);
        keep.cut(&mut entries);
        Ok(Found {
            entries,
            matched: matched.into_inner(),
            note: skipped_note(&mut walked.skipped) + &scan_why,
        })
    }
}

/// The entries of an index answer `find` keeps, and the pruned directories
/// (relative to the base) it must still walk: exactly those the full walk
/// would meet, given the depth limit and the exclusions.
fn entries_from_tree(
    under: &str,
    tree: &Tree,
    options: &FindOptions<'_>,
    select: &(impl Fn(&str, &str, bool) -> bool + Sync),
) -> (Vec<FoundEntry>, Vec<String>) {
    let mut met = Met {
        exclude: options.exclude.map(|globs| &globs.set),
        max_depth: options.max_depth,
        read: HashMap::new(),
    };
    let mut entries = Vec::new();
    let mut offer = |rel: &str, is_dir: bool, met: &mut Met<'_>| {
        let name = rel.rfind('/').map_or(rel, |at| &rel[at + 1..]);
        if met.is_met(rel) && select(rel, name, is_dir) {
            entries.push(FoundEntry {
                rel: rel.to_owned(),
                is_dir,
            });
        }
    };
    for file in &tree.files {
        offer(below(&file.path, under), false, &mut met);
    }
    if options.directories {
        for dir in tree.dirs.iter().chain(&tree.pruned) {
            offer(below(dir, under), true, &mut met);
        }
    }
    let to_walk = tree
        .pruned
        .iter()
        .map(|dir| below(dir, under))
        .filter(|rel| met.is_read(rel))
        .map(str::to_owned)
        .collect();
    (entries, to_walk)
}

/// Which paths (relative to the base) the walk meets: within the depth
/// limit, not excluded, in a directory it reads.
struct Met<'a> {
    exclude: Option<&'a GlobSet>,
    max_depth: Option<usize>,
    /// Directories already decided.
    read: HashMap<String, bool>,
}

impl Met<'_> {
    fn is_met(&mut self, rel: &str) -> bool {
        let depth = rel.matches('/').count() + 1;
        if self.max_depth.is_some_and(|max| depth > max)
            || self.exclude.is_some_and(|exclude| exclude.is_match(rel))
        {
            return false;
        }
        match rel.rfind('/') {
            Some(at) => self.is_read(&rel[..at]),
            None => true,
        }
    }

    /// Whether the walk reads the directory `rel` (met, and above the
    /// depth limit).
    fn is_read(&mut self, rel: &str) -> bool {
        if let Some(&read) = self.read.get(rel) {
            return read;
        }
        let depth = rel.matches('/').count() + 1;
        let read = self.max_depth.is_none_or(|max| depth < max) && self.is_met(rel);
        self.read.insert(rel.to_owned(), read);
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_sort_component_by_component() {
        let mut paths = vec!["a-c", "a/b", "a", "b", "a/b/c", "A"];
        paths.sort_by(|a, b| path_order(a, b));
        assert_eq!(paths, ["A", "a", "a/b", "a/b/c", "a-c", "b"]);
    }

    #[test]
    fn exclusions_match_names_anywhere_and_paths_from_the_top() {
        let globs = Globs::exclusions(&["node_modules".into(), "src/*.log".into()]).unwrap();
        assert!(globs.is_match("node_modules"));
        assert!(globs.is_match("a/b/node_modules"));
        assert!(globs.is_match("src/x.log"));
        assert!(!globs.is_match("x.log"));
        assert!(!globs.is_match("src/deep/x.log"));
        assert!(Globs::exclusions(&["/".into()]).is_err());
        assert!(Globs::exclusions(&["a[".into()]).is_err());
    }

    #[test]
    fn keep_cuts_by_count_and_bytes_in_path_order() {
        let entry = |rel: &str| FoundEntry {
            rel: rel.into(),
            is_dir: false,
        };
        let mut entries = vec![entry("c"), entry("a"), entry("b")];
        let keep = Keep {
            max_entries: Some(2),
            max_bytes: 100,
            bytes_per_entry: 1,
        };
        keep.cut(&mut entries);
        assert_eq!(entries, [entry("a"), entry("b")]);
        let keep = Keep {
            max_entries: None,
            max_bytes: 3,
            bytes_per_entry: 1,
        };
        keep.cut(&mut entries);
        assert_eq!(entries, [entry("a")]);
    }

    #[test]
    fn a_thread_keeps_the_entry_where_the_cut_stops() {
        let entry = |rel: &str| FoundEntry {
            rel: rel.into(),
            is_dir: false,
        };
        let keep = Keep {
            max_entries: None,
            max_bytes: 4,
            bytes_per_entry: 0,
        };
        // One thread met "a" and "b-long", another "c": the whole list
        // stops at "b-long", so "c" must not be kept.
        let mut first = vec![entry("b-long"), entry("a")];
        keep.cut_thread(&mut first);
        assert_eq!(first, [entry("a"), entry("b-long")]);
        let mut second = vec![entry("c")];
        keep.cut_thread(&mut second);
        let mut all = [first, second].concat();
        keep.cut(&mut all);
        assert_eq!(all, [entry("a")]);
    }
}
