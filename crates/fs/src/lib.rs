//! The file tools of agent-tools: `read_file`, `list_dir`, `glob`, `grep`,
//! `write_file`, `edit_file` and `multi_edit`.
//!
//! Each tool is a method of [`FileTools`] taking its typed arguments (which
//! also describe themselves as JSON Schema through `schemars`) and returning
//! the text an agent sees, or a [`ToolError`](agent_tools_error::ToolError).
//! Every path goes through the [`Workspace`]'s confinement.
//!
//! ```
//! use agent_tools_confine::{Confinement, Workspace};
//! use agent_tools_fs::{FileTools, Limits, ReadFileArgs};
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("hello.txt"), "hello\nworld\n").unwrap();
//! let ws = Workspace::open(dir.path(), Confinement::Confined).unwrap();
//! let tools = FileTools::new(ws, Limits::default());
//!
//! let text = tools.read_file(&ReadFileArgs::new("hello.txt")).unwrap();
//! assert_eq!(text, "     1\thello\n     2\tworld\n");
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::sync::{Arc, Mutex};

use agent_tools_confine::{ConfinedPath, Workspace};
use agent_tools_error::ToolResult;

mod args;
mod atomic;
pub mod commands;
pub mod ecma;
mod edit;
mod find;
mod glob;
mod grep;
mod indexed;
mod journaled;
mod list;
mod lock;
mod newlines;
mod page;
mod read;
mod stale;
pub mod undo;
mod write;

/// The tolerant matcher of `edit_file` and `multi_edit`, its own crate
/// (pure text); re-exported under its old path for the surfaces.
pub use agent_tools_tolerant as tolerant;
/// The one walk of `glob`, `grep` and `find` (and of the index), its own
/// crate; named here as the module it was.
use agent_tools_walk as walk;

pub use agent_tools_index::{IndexStats, NotServed, Status as IndexStatus, WorkspaceIndex};
/// The undo journal the write path reports to.
pub use agent_tools_journal as journal;
pub use args::*;
pub use atomic::{
    Expected, FileStamp, StagedWrite, commit_staged, cross_device, open_regular, read_only,
    remove_seen, rename_new, rename_new_between, stage_replace, sync_all_parallel,
};
pub use edit::{closest_regions_note, splice_all};
pub use find::{FindOptions, Found, FoundEntry, Globs, Keep, path_order};
pub use glob::{GlobFile, GlobFound};
pub use grep::{GrepFile, GrepFound, GrepLine, GrepQuery};
pub use indexed::{DEFAULT_INDEX_MEMORY_BYTES, IndexSettings};
pub use journaled::{make_dirs, make_parents, remove_tree};
pub use lock::FileLocks;
pub use read::LineSpan;
pub use read::LineWindow;
pub use read::{read_bounded, read_bounded_into};
pub use stale::{ContentDigest, Identity, Seen, Snapshot, digest};

/// Replaces (or creates) the file at `path` with `data` atomically: a
/// temporary file beside it, flushed, renamed over it, all beneath the
/// workspace's directory handle. An existing file keeps its permissions
/// (set-id bits cleared), extended attributes and, where allowed, owner.
/// The parent directory must exist.
///
/// Just before the rename, the target must still be what `expected` says:
/// absent, or the very file the caller read (same inode, size and
/// modification time); otherwise nothing is written and the error says the
/// file changed on disk. Returns the stamp of the new file, which a later
/// write of the same path can expect.
pub fn write_atomic(
    workspace: &Workspace,
    path: &ConfinedPath,
    data: &[u8],
    expected: Expected,
) -> ToolResult<FileStamp> {
    let existing = match workspace.symlink_metadata(path) {
        Ok(meta) => Some(meta),
        Err(err) if err.code() == agent_tools_error::ErrorCode::NotFound => None,
        Err(err) => return Err(err),
    };
    atomic::replace_expecting(workspace, path, &[data], existing.as_ref(), expected)
}

/// The error a read tool returns when its cancel flag was set mid-way
/// (see [`ToolError::is_cancelled`](agent_tools_error::ToolError::is_cancelled)).
pub(crate) fn cancelled() -> agent_tools_error::ToolError {
    agent_tools_error::ToolError::cancelled("call cancelled")
}

/// Size limits shared by the file tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Files larger than this are `too_large` for whole-file reads and edits.
    pub max_file_bytes: u64,
    /// The output budget of one call; tools that page (grep) stop collecting
    /// once they have this much to show.
    pub max_output_bytes: usize,
}

impl Limits {
    /// 16 MiB.
    pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
    /// 256 KiB.
    pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 256 * 1024;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: Self::DEFAULT_MAX_FILE_BYTES,
            max_output_bytes: Self::DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

/// The file tools bound to one workspace. Cheap to share across threads
/// (`&FileTools` is all a call needs); calls on different paths run in
/// parallel, writes to one path are serialized.
#[derive(Debug)]
pub struct FileTools {
    workspace: Workspace,
    limits: Limits,
    write_locks: lock::PathLocks,
    /// Newline checkpoints of large files read, for real line numbers
    /// without recounting (read_file).
    newlines: newlines::NewlineCache,
    /// The warm workspace index, when turned on.
    index: Option<WorkspaceIndex>,
}

impl FileTools {
    /// Binds the tools to `workspace`.
    pub fn new(workspace: Workspace, limits: Limits) -> Self {
        FileTools {
            workspace,
            limits,
            write_locks: lock::PathLocks::default(),
            newlines: newlines::NewlineCache::default(),
            index: None,
        }
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The in-process lock serializing writes to `path`. Every writer here
    /// takes it for its whole read-modify-write; a tool composed on top (such
    /// as a patch applier) takes it too, in sorted path order when it needs
    /// several, so no update is lost between them.
    pub fn path_lock(&self, path: &ConfinedPath) -> Arc<Mutex<()>> {
        self.write_locks.lock_for(path.abs())
    }

    /// The cross-process lock on the files at `paths`, taken after their
    /// [`path_lock`](Self::path_lock)s and held for the whole
    /// read-modify-write, so writers in other processes (another server on
    /// the same folder) wait instead of losing an update. Pass the paths in
    /// sorted order when there are several. Waits up to 10 s for another
    /// process, then fails with `io_error`; paths that name no file yet are
    /// skipped (creating is guarded by the rename, which refuses to replace
    /// a file that appeared meanwhile).
    pub fn lock_files<'a>(
        &self,
        paths: impl IntoIterator<Item = &'a ConfinedPath>,
    ) -> ToolResult<FileLocks> {
        let mut locks = FileLocks::default();
        for path in paths {
            locks.add(&self.workspace, path, lock::FILE_LOCK_WAIT)?;
        }
        Ok(locks)
    }
}
