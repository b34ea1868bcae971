//! The crate's error type and its classification.

use std::fmt;

use crate::store::StoreError;

/// Everything that can go wrong parsing or applying a patch.
///
/// Every variant carries its context (patch line, path, hunk). Use
/// [`PatchError::kind`] to map an error onto a small stable set of classes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// The text is not a well-formed patch.
    #[error("invalid patch at line {line}: {message}")]
    Parse {
        /// 1-based line in the patch.
        line: usize,
        /// What was expected.
        message: String,
    },
    /// The patch contains a binary diff, which this crate does not apply.
    #[error("binary patch at line {line}{} is not supported; only text diffs can be applied", path.as_ref().map(|p| format!(" for {p}")).unwrap_or_default())]
    BinaryPatch {
        /// 1-based line in the patch.
        line: usize,
        /// The file the binary diff is for, when known.
        path: Option<String>,
    },
    /// The block uses a feature this crate does not apply (symlinks, submodules).
    #[error("{path}: {what} is not supported")]
    Unsupported {
        /// The file.
        path: String,
        /// What is not supported.
        what: String,
    },
    /// A path is the target of more than one change in the same patch.
    #[error("{path}: named more than once in the patch (block at line {line})")]
    DuplicatePath {
        /// The path.
        path: String,
        /// 1-based patch line of the second block naming it.
        line: usize,
    },
    /// The patch creates, renames or copies onto a path that exists.
    #[error("{path}: already exists")]
    AlreadyExists {
        /// The path.
        path: String,
    },
    /// A file the patch must change contains NUL bytes.
    #[error("{path}: file contains NUL bytes; binary files cannot be patched")]
    BinaryFile {
        /// The path.
        path: String,
    },
    /// A hunk's old lines were not found in the file.
    #[error(
        "{path}: hunk #{hunk} ({header}) does not apply: {reason}; expected these lines:\n{expected}"
    )]
    HunkFailed {
        /// The file.
        path: String,
        /// 1-based hunk index within the file block.
        hunk: usize,
        /// The hunk header, e.g. `@@ -3,7 +3,8 @@`.
        header: String,
        /// Why, e.g. "context not found".
        reason: String,
        /// The old-side lines the hunk expected, indented, truncated.
        expected: ExpectedLines,
    },
    /// A codex chunk's `@@ context` line was not found after the previous
    /// chunk.
    #[error("Failed to find context '{context}' in {path} (chunk {chunk}, patch line {line})")]
    ContextNotFound {
        /// The file.
        path: String,
        /// 1-based chunk index within the file's section.
        chunk: usize,
        /// 1-based patch line of the `@@` line.
        line: usize,
        /// The context text looked for.
        context: String,
    },
    /// A codex chunk's old lines were not found after the previous chunk.
    #[error(
        "Failed to find expected lines in {path}:\n{expected}\n(chunk {chunk}, patch line {line}: {reason}){}",
        closest.as_ref().map(|c| format!("\n{c}")).unwrap_or_default()
    )]
    ChunkNotFound {
        /// The file.
        path: String,
        /// 1-based chunk index within the file's section.
        chunk: usize,
        /// 1-based patch line where the chunk starts.
        line: usize,
        /// Where it was searched for and how.
        reason: String,
        /// The old lines looked for, indented, truncated.
        expected: ExpectedLines,
        /// The region of the file most like the old lines, when any of
        /// them occurs there (boxed: errors stay small to pass around).
        closest: Option<Box<Closest>>,
    },
    /// A deletion's hunks do not remove the whole file.
    #[error(
        "{path}: deletion patch does not match the whole file ({remaining} line(s) would remain)"
    )]
    DeleteIncomplete {
        /// The file.
        path: String,
        /// How many lines the hunks leave.
        remaining: usize,
    },
    /// The store failed for a path.
    #[error("{path}: {source}")]
    Store {
        /// The path.
        path: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// Committing failed and undoing the changes also failed for some paths.
    #[error("{source}; rolling back also failed for: {}", failed.join(", "))]
    RollbackFailed {
        /// The error that made the commit fail.
        source: Box<PatchError>,
        /// The paths that could not be restored, with the reason.
        failed: Vec<String>,
    },
}

/// The old-side lines of a failed hunk, rendered indented and truncated:
/// at most [`ExpectedLines::MAX_LINES`] lines of at most
/// [`ExpectedLines::MAX_CHARS`] characters each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedLines(pub String);

impl ExpectedLines {
    /// Lines shown before the rest is summarised.
    pub const MAX_LINES: usize = 12;
    /// Characters shown per line before it is cut.
    pub const MAX_CHARS: usize = 160;

    pub(crate) fn new<'a>(lines: impl Iterator<Item = &'a [u8]>) -> Self {
        let mut out = String::new();
        let mut shown = 0;
        let mut more = 0;
        for line in lines {
            if shown == Self::MAX_LINES {
                more += 1;
                continue;
            }
            shown += 1;
            let text = String::from_utf8_lossy(line);
            let text = text.strip_suffix('\r').unwrap_or(&text);
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str("  ");
            if text.chars().count() > Self::MAX_CHARS {
                out.extend(text.chars().take(Self::MAX_CHARS));
                out.push_str("...");
            } else {
                out.push_str(text);
            }
        }
        if shown == 0 {
            out.push_str("  (no old lines)");
        }
        if more > 0 {
            out.push_str(&format!("\n  ... ({more} more line(s))"));
        }
        ExpectedLines(out)
    }
}

impl fmt::Display for ExpectedLines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The class of a [`PatchError`], for mapping onto stable error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The patch text is malformed or self-contradictory.
    InvalidInput,
    /// The patch is well-formed but does not fit the files.
    PatchFailed,
    /// A file the patch reads does not exist.
    NotFound,
    /// A path the patch reads or writes is not a regular file.
    NotAFile,
    /// Binary content: a binary patch or a file with NUL bytes.
    IsBinary,
    /// A file is larger than the store allows.
    TooLarge,
    /// A path leaves the store's root.
    PathEscape,
    /// Any other I/O failure.
    Io,
}

impl ErrorKind {
    /// The snake_case code: `invalid_input`, `patch_failed`, `not_found`,
    /// `not_a_file`, `is_binary`, `too_large`, `path_escape`, `io_error`.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::PatchFailed => "patch_failed",
            ErrorKind::NotFound => "not_found",
            ErrorKind::NotAFile => "not_a_file",
            ErrorKind::IsBinary => "is_binary",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::PathEscape => "path_escape",
            ErrorKind::Io => "io_error",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl PatchError {
    /// Classifies the error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            PatchError::Parse { .. }
            | PatchError::Unsupported { .. }
            | PatchError::DuplicatePath { .. } => ErrorKind::InvalidInput,
            PatchError::BinaryPatch { .. } | PatchError::BinaryFile { .. } => ErrorKind::IsBinary,
            PatchError::AlreadyExists { .. }
            | PatchError::HunkFailed { .. }
            | PatchError::ContextNotFound { .. }
            | PatchError::ChunkNotFound { .. }
            | PatchError::DeleteIncomplete { .. } => ErrorKind::PatchFailed,
            PatchError::Store { source, .. } => source.kind(),
            PatchError::RollbackFailed { .. } => ErrorKind::Io,
        }
    }

    /// The path the error is about, when there is one.
    pub fn path(&self) -> Option<&str> {
        match self {
            PatchError::Parse { .. } => None,
            PatchError::BinaryPatch { path, .. } => path.as_deref(),
            PatchError::Unsupported { path, .. }
            | PatchError::DuplicatePath { path, .. }
            | PatchError::AlreadyExists { path }
            | PatchError::BinaryFile { path }
            | PatchError::HunkFailed { path, .. }
            | PatchError::ContextNotFound { path, .. }
            | PatchError::ChunkNotFound { path, .. }
            | PatchError::DeleteIncomplete { path, .. }
            | PatchError::Store { path, .. } => Some(path),
            PatchError::RollbackFailed { source, .. } => source.path(),
        }
    }
}

/// Where a chunk that was not found most likely belongs: the run of file
/// lines holding the most of its old lines in their order, compared with
/// whitespace and typographic punctuation ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closest {
    /// 1-based first line of the region in the file.
    pub first: usize,
    /// 1-based last line.
    pub last: usize,
    /// How many of the chunk's old lines are at their place there.
    pub found: usize,
    /// How many old lines the chunk has.
    pub of: usize,
}

impl std::fmt::Display for Closest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let span = if self.first == self.last {
            format!("line {}", self.first)
        } else {
            format!("lines {}-{}", self.first, self.last)
        };
        write!(
            f,
            "The closest region is {span} of the file: {} of the chunk's {} old lines are there (ignoring whitespace and typographic punctuation); read those lines again and correct the chunk.",
            self.found, self.of
        )
    }
}
