//! A unified-diff and codex-patch parser and all-or-nothing patch applier.
//!
//! ```
//! use agent_tools_patch::{MemoryStore, apply, parse};
//!
//! let mut store = MemoryStore::new();
//! store.insert("src/greeting.txt", "hello\nworld\n");
//!
//! let patch = parse(
//!     "--- a/src/greeting.txt\n\
//!      +++ b/src/greeting.txt\n\
//!      @@ -1,2 +1,2 @@\n \
//!      hello\n\
//!      -world\n\
//!      +there\n",
//! )?;
//! let report = apply(&patch, &mut store)?;
//!
//! assert_eq!(store.get("src/greeting.txt"), Some(&b"hello\nthere\n"[..]));
//! assert_eq!(report.to_string(), "M src/greeting.txt (1 hunk)");
//! # Ok::<(), agent_tools_patch::PatchError>(())
//! ```
//!
//! # What it reads
//!
//! Plain unified diffs (`---`/`+++`/`@@`) and git diffs (`diff --git` with
//! `index`, `new file mode`, `deleted file mode`, `old mode`/`new mode`,
//! `similarity index`, `dissimilarity index`, `rename from`/`rename to`,
//! `copy from`/`copy to`), `/dev/null` for created and deleted files, `a/`
//! and `b/` prefixes, `\ No newline at end of file`, any number of files,
//! and patches with CRLF line endings. Text before the first file (a commit
//! message, mail headers) is ignored. Binary patches are refused
//! ([`ErrorKind::IsBinary`]).
//!
//! Also the codex format (`*** Begin Patch` ... `*** End Patch`, optionally
//! in an `apply_patch <<'EOF'` heredoc), told apart by its first line and
//! parsed into the same model ([`Format::Codex`]): its chunks are found by
//! content after the previous chunk (`@@ text` lines move past a matching
//! line, `*** End of File` anchors at the end), trying the levels of
//! [`MatchLevel`] in order; Add File and Move to overwrite existing files.
//!
//! # How it applies
//!
//! [`apply`] works through any [`FileStore`] ([`DirStore`] for a directory,
//! [`MemoryStore`] in memory). Every block is checked and computed in memory
//! first; then all changes are written, or, if a write fails, all are undone.
//!
//! Each hunk applies at its stated line or, if the file has moved, at the
//! nearest position (searching down, then up, around the stated line plus
//! the previous hunk's offset) where its old lines match exactly; no fuzz.
//! A hunk whose stated start goes back before an earlier hunk's stated end
//! is searched for forward from the previous hunk instead, and the search
//! of one file is bounded (a few passes over it), so no patch makes it
//! quadratic.
//! A hunk with context on one side only (cut off by the start or end of the
//! file) is tried at that end of the file first. Hunks apply in order and
//! may not overlap. Lines compare without
//! their terminators and one trailing carriage return, so an LF patch fits a
//! CRLF file (and is written back with CRLF) and a CRLF patch fits an LF
//! file. A UTF-8 BOM is kept. Files with NUL bytes are not patched.
//!
//! Modes: a git `new mode` / `new file mode` sets exactly the permission
//! bits it names through [`FileStore::set_mode`] (the directory store does
//! it on Unix; the memory store records the executable bit). Modes with
//! set-user-ID, set-group-ID or sticky bits, symbolic links and submodules
//! are refused. A store may protect files from changes
//! ([`FileStore::check_writable`]); that is checked before anything is
//! written.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod apply;
mod codex;
mod engine;
mod error;
mod model;
mod parse;
mod report;
mod store;

pub use apply::{Replacement, apply, apply_patch, check, replace_all};
pub use error::{Closest, ErrorKind, ExpectedLines, PatchError};
pub use model::{FilePatch, Format, Hunk, HunkLine, LineKind, Operation, Patch};
pub use parse::parse;
pub use report::{Action, FileReport, HunkOffset, MatchLevel, Report};
pub use store::{
    DirStore, FileStore, FlushError, MAX_HELD_WRITES, MemoryStore, StoreError, check_relative,
};
