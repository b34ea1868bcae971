//! The warm workspace index of agent-tools.
//!
//! A [`WorkspaceIndex`] holds, for one root, the table of files the file
//! tools' walk would visit with ignore files respected (path, size,
//! modification time, inode) and an ASCII-case-folded trigram index of
//! their text. The table also records the ignore decision: ignored files
//! met in the directories it walks are kept with a mark (never read), and
//! ignored directories and `.git` are recorded as pruned (neither entered
//! nor watched). It is built on a background thread and kept current by
//! filesystem events. It answers these questions:
//!
//! - [`files`](WorkspaceIndex::files): the file list under a directory,
//!   for `glob`-style queries;
//! - [`candidates`](WorkspaceIndex::candidates): a superset of the files
//!   that can hold a match of a regular expression, for `grep`, which then
//!   runs its own matcher on them;
//! - [`tree`](WorkspaceIndex::tree) and
//!   [`candidates_with_ignored`](WorkspaceIndex::candidates_with_ignored):
//!   the same with ignored files included, leaving the pruned directories
//!   for the caller to walk.
//!
//! Either answer is exact with respect to the tree *as it is when the query
//! starts*: every event queued before then is applied first (see
//! [`WorkspaceIndex::files`]). When the index cannot vouch for an answer
//! (still building, events lost, the watch limit reached, a path the walk
//! would report) it says so with [`NotServed`] and the caller scans.
//!
//! ```
//! use std::time::Duration;
//! use agent_tools_index::{IndexConfig, WorkspaceIndex, regex_query};
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("a.txt"), "hello world\n").unwrap();
//! std::fs::write(dir.path().join("b.txt"), "goodbye\n").unwrap();
//! let index = WorkspaceIndex::start(IndexConfig::new(dir.path()));
//! assert!(index.wait_ready(Duration::from_secs(30)));
//!
//! let hir = regex_syntax::parse("hel+o").unwrap();
//! let found = index.candidates(&regex_query(&hir), "").unwrap();
//! assert_eq!(found, vec!["a.txt".to_string()]);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod hooks;
mod names;
mod paths;
mod postings;
mod query;
mod state;
mod watch;

pub use hooks::{BuildHooks, set_build_hooks};
pub use names::NameFilter;
pub use query::{Query, regex_query};
pub use state::{
    AlwaysReason, Candidates, IndexStats, ListedFile, Snapshot, SnapshotFile, Tree, WatchFailure,
};
pub use watch::{DEFAULT_START_DELAY, IndexConfig, NotServed, Status, WorkspaceIndex};

/// The default memory budget of an index: 256 MiB.
pub const DEFAULT_MEMORY_BUDGET: u64 = 256 * 1024 * 1024;

/// The default size above which a file is not indexed (always a
/// candidate): 16 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
