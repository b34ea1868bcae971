//! How `glob` and `grep` use the workspace index when one is on.
//!
//! The index only narrows: `glob` takes its file list instead of walking,
//! `grep` searches only the candidate files it names, with the same
//! searcher and matcher as the walk, so every answer is the one a walk
//! would give. Whenever the index cannot vouch for an answer, the tool
//! walks as it would without an index; if that is because the index
//! failed (rather than still starting), the output says so in a note.

use agent_tools_confine::{ConfinedPath, Workspace};
use agent_tools_index::{
    Candidates, IndexConfig, ListedFile, NameFilter, NotServed, Query, Tree, WorkspaceIndex,
    regex_query,
};

use crate::{FileTools, GrepArgs};

/// The default memory budget of the workspace index, in bytes.
pub const DEFAULT_INDEX_MEMORY_BYTES: u64 = agent_tools_index::DEFAULT_MEMORY_BUDGET;

/// How the workspace index of a [`FileTools`] is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexSettings {
    /// The most memory its posting lists may take; files past it are
    /// searched on every grep instead of being indexed.
    pub memory_budget_bytes: u64,
    /// The most directories it may watch (`None`: as many as the system
    /// allows); a tree needing more is searched by walking, with a note.
    pub max_watches: Option<usize>,
}

impl Default for IndexSettings {
    fn default() -> Self {
        IndexSettings {
            memory_budget_bytes: DEFAULT_INDEX_MEMORY_BYTES,
            max_watches: None,
        }
    }
}

impl FileTools {
    /// Turns the workspace index on: it is built in the background, and
    /// `glob` and `grep` use it once it is ready.
    pub fn with_index(mut self, settings: IndexSettings) -> Self {
        // Files the searcher may refuse (a line or a multiline file over
        // `max_file_bytes`) must be searched, so that refusal is reported:
        // the index reads none of them. Half the limit leaves room for the
        // searcher's buffer growing past a line's own size.
        let mut config = IndexConfig::new(self.workspace().root())
            .memory_budget(settings.memory_budget_bytes)
            .max_file_bytes(
                (self.limits().max_file_bytes / 2).min(agent_tools_index::DEFAULT_MAX_FILE_BYTES),
            );
        if let Some(watches) = settings.max_watches {
            config = config.max_watches(watches);
        }
        self.index = Some(WorkspaceIndex::start(config));
        self
    }

    /// The workspace index, when on.
    pub fn index(&self) -> Option<&WorkspaceIndex> {
        self.index.as_ref()
    }

    /// The files under `base` whose path relative to it `keep` accepts,
    /// from the index, with `base` relative to the root (`Ok(None)` when
    /// there is no index). With a name filter only the files whose base
    /// name it allows are looked at (a glob's candidates by name).
    pub(crate) fn indexed_files(
        &self,
        base: &ConfinedPath,
        names: Option<&NameFilter>,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Option<(String, Vec<ListedFile>)>, NotServed> {
        let Some((index, under)) = self.index_for(base) else {
            return Ok(None);
        };
        index
            .files_named(&under, names, |path| keep(below(path, &under)))
            .map(|files| Some((under, files)))
    }

    /// The files under `base` that may hold a match of the grep, from the
    /// index (`Ok(None)` when there is no index), with how many of them
    /// are past its memory budget.
    pub(crate) fn indexed_candidates(
        &self,
        base: &ConfinedPath,
        args: &GrepArgs,
    ) -> Result<Option<(String, Candidates)>, NotServed> {
        let Some((index, under)) = self.index_for(base) else {
            return Ok(None);
        };
        index
            .candidate_files(&grep_query(args), &under)
            .map(|found| Some((under, found)))
    }

    /// Everything under `base` the index holds, ignored files included
    /// (those whose path relative to `base` `keep` accepts), for queries
    /// that look at ignored files; the pruned directories are left for the
    /// caller to walk (`Ok(None)` when there is no index).
    pub(crate) fn indexed_tree(
        &self,
        base: &ConfinedPath,
        names: Option<&NameFilter>,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Option<(String, Tree)>, NotServed> {
        let Some((index, under)) = self.index_for(base) else {
            return Ok(None);
        };
        index
            .tree_named(&under, names, |path| keep(below(path, &under)))
            .map(|tree| Some((under, tree)))
    }

    /// The candidates of `query` under `base` for a search that looks at
    /// ignored files and reads on past a NUL byte at or after
    /// `reads_past_nul_from` (`Ok(None)` when there is no index).
    pub(crate) fn indexed_candidates_with_ignored(
        &self,
        base: &ConfinedPath,
        query: &Query,
        reads_past_nul_from: usize,
    ) -> Result<Option<(String, Candidates)>, NotServed> {
        let Some((index, under)) = self.index_for(base) else {
            return Ok(None);
        };
        index
            .candidates_with_ignored(query, &under, reads_past_nul_from)
            .map(|found| Some((under, found)))
    }

    fn index_for(&self, base: &ConfinedPath) -> Option<(&WorkspaceIndex, String)> {
        let index = self.index.as_ref()?;
        let under = under_root(self.workspace(), base)?;
        Some((index, under))
    }
}

/// `base` relative to the root, `/`-separated, when it lies inside.
fn under_root(ws: &Workspace, base: &ConfinedPath) -> Option<String> {
    let rel = ws.strip_root(base.abs())?;
    let parts: Option<Vec<&str>> = rel.iter().map(|part| part.to_str()).collect();
    Some(parts?.join("/"))
}

/// The trigram query of a grep pattern, parsed with the flags the matcher
/// is built with (see `grep::build_matcher`). A pattern this parser does
/// not take gives a query every file passes.
fn grep_query(args: &GrepArgs) -> Query {
    let parsed = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .case_insensitive(args.ignore_case)
        .multi_line(true)
        .dot_matches_new_line(args.multiline)
        .build()
        .parse(&args.pattern);
    match parsed {
        Ok(hir) => regex_query(&hir),
        Err(_) => Query::All,
    }
}

/// The note saying results came from a scan because the index failed; empty
/// when the scan was the index's ordinary choice.
pub(crate) fn scan_note(why: &NotServed) -> String {
    if why.is_failure() {
        format!("[note: searched by walking the tree: {why}]\n")
    } else {
        String::new()
    }
}

/// The note saying how many of the files searched are past the index's
/// memory budget (read whole on every search, as a walk reads every file);
/// empty when none are.
pub(crate) fn budget_note(over_budget: u64) -> String {
    match over_budget {
        0 => String::new(),
        1 => "[note: 1 file is past the workspace index's memory budget: it is not indexed, so every search reads it whole, as a walk would]\n".to_string(),
        n => format!(
            "[note: {n} files are past the workspace index's memory budget: they are not indexed, so every search reads them whole, as a walk would]\n"
        ),
    }
}

/// The pruned directories (root-relative) of an index answer, relative to
/// the base `under`, for [`Walk::run_within`](crate::walk::Walk).
pub(crate) fn pruned_below(pruned: &[String], under: &str) -> Vec<String> {
    pruned.iter().map(|p| below(p, under).to_owned()).collect()
}

/// `path` (root-relative) relative to `under`.
pub(crate) fn below<'a>(path: &'a str, under: &str) -> &'a str {
    if under.is_empty() {
        path
    } else {
        path.get(under.len() + 1..).unwrap_or(path)
    }
}
