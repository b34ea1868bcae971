//! The parsed form of a patch: files, hunks and hunk lines.

use std::fmt;

/// A parsed patch: one [`FilePatch`] per file block, in patch order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Patch {
    /// The file blocks, in the order they appear in the patch.
    pub files: Vec<FilePatch>,
}

/// The patch format a file block was written in; it decides how its hunks
/// are matched against the file (see the crate documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// A unified or git diff: hunks placed by their line numbers, exact
    /// matches only; creating or renaming onto an existing path is refused.
    #[default]
    Unified,
    /// The `*** Begin Patch` format: chunks placed by their content and `@@`
    /// context lines, with fuzz levels; Add File and Move to overwrite.
    Codex,
}

/// What a file block does to the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// Changes an existing file in place (content and/or mode).
    Modify,
    /// Creates a new file (old side `/dev/null` or `new file mode`).
    Create,
    /// Deletes a file (new side `/dev/null` or `deleted file mode`).
    Delete,
    /// Moves a file, optionally editing it in the same step.
    Rename,
    /// Creates the new path from the content of the old path, optionally edited.
    Copy,
}

/// One file block of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// What the block does.
    pub operation: Operation,
    /// The path the block reads from, with the `a/` prefix stripped;
    /// `None` when the block creates a file.
    pub old_path: Option<String>,
    /// The path the block writes to, with the `b/` prefix stripped;
    /// `None` when the block deletes a file.
    pub new_path: Option<String>,
    /// Mode from `old mode` or `deleted file mode` (git), e.g. `0o100644`.
    pub old_mode: Option<u32>,
    /// Mode from `new mode` or `new file mode` (git), e.g. `0o100755`.
    pub new_mode: Option<u32>,
    /// `similarity index N%` (git renames and copies).
    pub similarity: Option<u8>,
    /// `dissimilarity index N%` (git rewrites).
    pub dissimilarity: Option<u8>,
    /// The `index` line's value, e.g. `e7a87fc996..efa745dc48 100755`.
    pub index: Option<String>,
    /// Whether the block started with a `diff --git` line.
    pub git: bool,
    /// The hunks, in patch order.
    pub hunks: Vec<Hunk>,
    /// 1-based line number in the patch where the block starts.
    pub line: usize,
    /// The format the block was written in.
    pub format: Format,
}

impl FilePatch {
    /// The path this block is best known by: the new path, or the old one
    /// for a deletion.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }
}

/// One `@@ -a,b +c,d @@` hunk.
#[derive(Clone, PartialEq, Eq)]
pub struct Hunk {
    /// First old-side line (1-based; for an empty old side, the line after
    /// which the new lines go, so 0 means "at the top").
    pub old_start: usize,
    /// Number of old-side (context and deleted) lines.
    pub old_count: usize,
    /// First new-side line.
    pub new_start: usize,
    /// Number of new-side (context and inserted) lines.
    pub new_count: usize,
    /// Text after the closing `@@` (often a function name), without the
    /// separating space.
    pub section: String,
    /// The body lines.
    pub lines: Vec<HunkLine>,
    /// The old side's last line has no newline (`\ No newline at end of file`).
    pub old_missing_newline: bool,
    /// The new side's last line has no newline.
    pub new_missing_newline: bool,
    /// 1-based line number of the hunk header in the patch.
    pub line: usize,
    /// Codex format only: the `@@ text` lines before the chunk, in order;
    /// each moves the search past the first line after the previous one
    /// that matches it. Empty for unified hunks.
    pub context: Vec<Vec<u8>>,
    /// Codex format only: the chunk ended with `*** End of File`, so its old
    /// lines must be the file's last lines.
    pub end_of_file: bool,
}

impl Hunk {
    /// The canonical header, e.g. `@@ -3,7 +3,8 @@` (counts always written).
    pub fn header(&self) -> String {
        format!(
            "@@ -{},{} +{},{} @@",
            self.old_start, self.old_count, self.new_start, self.new_count
        )
    }

    /// The old-side lines (context and deletions), in order.
    pub fn old_lines(&self) -> impl Iterator<Item = &[u8]> {
        self.lines
            .iter()
            .filter(|l| l.kind != LineKind::Insert)
            .map(|l| l.content.as_slice())
    }

    /// The new-side lines (context and insertions), in order.
    pub fn new_lines(&self) -> impl Iterator<Item = &[u8]> {
        self.lines
            .iter()
            .filter(|l| l.kind != LineKind::Delete)
            .map(|l| l.content.as_slice())
    }
}

impl fmt::Debug for Hunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hunk")
            .field("header", &self.header())
            .field("section", &self.section)
            .field("line", &self.line)
            .field("context", &self.context)
            .field("end_of_file", &self.end_of_file)
            .field("old_missing_newline", &self.old_missing_newline)
            .field("new_missing_newline", &self.new_missing_newline)
            .field("lines", &self.lines)
            .finish()
    }
}

/// The kind of a hunk body line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LineKind {
    /// ` ` — present on both sides.
    Context,
    /// `-` — old side only.
    Delete,
    /// `+` — new side only.
    Insert,
}

/// A hunk body line: its kind and its content without the prefix character
/// and without the line terminator. A carriage return that was part of the
/// file's line (in a patch that is not itself CRLF) stays in `content`.
#[derive(Clone, PartialEq, Eq)]
pub struct HunkLine {
    /// Context, deletion or insertion.
    pub kind: LineKind,
    /// The line's bytes.
    pub content: Vec<u8>,
}

impl fmt::Debug for HunkLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self.kind {
            LineKind::Context => ' ',
            LineKind::Delete => '-',
            LineKind::Insert => '+',
        };
        write!(f, "{prefix}{:?}", String::from_utf8_lossy(&self.content))
    }
}
