//! What a successful apply did.

use std::fmt;

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Changed in place (content and/or mode). Shown as `M`.
    Modified,
    /// Created. Shown as `A`.
    Created,
    /// Deleted. Shown as `D`.
    Deleted,
    /// Moved (and possibly edited). Shown as `R`.
    Renamed,
    /// Copied from another file (and possibly edited). Shown as `C`.
    Copied,
}

impl Action {
    /// The one-letter code used by [`Report`]'s `Display`.
    pub fn letter(self) -> char {
        match self {
            Action::Modified => 'M',
            Action::Created => 'A',
            Action::Deleted => 'D',
            Action::Renamed => 'R',
            Action::Copied => 'C',
        }
    }
}

/// How loosely a codex chunk's lines had to be compared to be found; the
/// levels are tried in this order, each over the whole searched range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MatchLevel {
    /// Byte for byte (without the line terminator).
    Exact,
    /// Trailing whitespace ignored.
    TrailingWhitespace,
    /// Leading and trailing whitespace ignored.
    SurroundingWhitespace,
    /// Surrounding whitespace ignored and typographic dashes, quotes and
    /// spaces read as their ASCII forms.
    Punctuation,
}

impl MatchLevel {
    /// Every level, in the order they are tried.
    pub const ALL: [MatchLevel; 4] = [
        MatchLevel::Exact,
        MatchLevel::TrailingWhitespace,
        MatchLevel::SurroundingWhitespace,
        MatchLevel::Punctuation,
    ];

    /// How the level reads in a report.
    pub fn describe(self) -> &'static str {
        match self {
            MatchLevel::Exact => "matched exactly",
            MatchLevel::TrailingWhitespace => "matched ignoring trailing whitespace",
            MatchLevel::SurroundingWhitespace => "matched ignoring leading and trailing whitespace",
            MatchLevel::Punctuation => {
                "matched ignoring surrounding whitespace and reading typographic dashes, quotes and spaces as ASCII"
            }
        }
    }
}

/// A hunk that applied away from its stated line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HunkOffset {
    /// 1-based hunk index within its file block.
    pub hunk: usize,
    /// Lines between the stated position and where it applied
    /// (positive: further down).
    pub offset: isize,
}

/// What happened to one file block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// What was done.
    pub action: Action,
    /// The resulting path (for a deletion, the deleted path).
    pub path: String,
    /// The source path of a rename or copy.
    pub from: Option<String>,
    /// How many hunks were applied.
    pub hunks: usize,
    /// The hunks that applied at an offset (hunks at their stated line are
    /// not listed).
    pub offsets: Vec<HunkOffset>,
    /// A changed mode `(old, new)`, e.g. `(0o100644, 0o100755)`.
    pub mode_change: Option<(u32, u32)>,
    /// Codex format: the loosest level any chunk of the file needed, when
    /// that is not [`MatchLevel::Exact`].
    pub fuzz: Option<MatchLevel>,
    /// Codex format: an Add File or Move to replaced a file that existed.
    pub overwrote: bool,
}

/// The result of a successful apply (or check): one entry per file block,
/// in patch order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The file entries.
    pub files: Vec<FileReport>,
}

impl fmt::Display for FileReport {
    /// One line: `M src/a.rs (2 hunks, hunk 2 applied at offset +3)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", self.action.letter())?;
        if let Some(from) = &self.from {
            write!(f, "{from} -> ")?;
        }
        f.write_str(&self.path)?;
        let mut details = Vec::new();
        if self.hunks > 0 {
            let plural = if self.hunks == 1 { "" } else { "s" };
            details.push(format!("{} hunk{plural}", self.hunks));
        }
        for o in &self.offsets {
            details.push(format!("hunk {} applied at offset {:+}", o.hunk, o.offset));
        }
        if let Some((old, new)) = self.mode_change {
            details.push(format!("mode {old:o} -> {new:o}"));
        }
        if let Some(level) = self.fuzz {
            details.push(level.describe().to_owned());
        }
        if self.overwrote {
            details.push("overwrote the existing file".to_owned());
        }
        if !details.is_empty() {
            write!(f, " ({})", details.join(", "))?;
        }
        Ok(())
    }
}

impl fmt::Display for Report {
    /// One line per file, separated by newlines (no trailing newline).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, file) in self.files.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{file}")?;
        }
        Ok(())
    }
}
