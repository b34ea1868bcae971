//! The typed arguments of each file tool. Their doc comments become the
//! descriptions in the JSON Schema an MCP client sees, so they are written for
//! the model that calls the tool.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn default_offset() -> i64 {
    1
}

fn default_limit() -> u64 {
    2000
}

fn yes() -> bool {
    true
}

/// Arguments of `read_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// File to read: relative to the workspace root, or absolute inside it.
    pub path: String,
    /// 1-based line to start at. A negative value -N reads the last N lines
    /// (keeping their real line numbers). 0 is invalid.
    #[serde(default = "default_offset")]
    pub offset: i64,
    /// Maximum number of lines to return (default 2000, at least 1).
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1))]
    pub limit: u64,
}

impl ReadFileArgs {
    /// Reads `path` from the start with the default limit.
    pub fn new(path: impl Into<String>) -> Self {
        ReadFileArgs {
            path: path.into(),
            offset: default_offset(),
            limit: default_limit(),
        }
    }
}

/// Arguments of `list_dir`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    /// Directory to list; the workspace root when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Skip this many entries first (0-based), to page through a long
    /// listing; the footer gives the offset to continue from.
    #[serde(default)]
    pub offset: u64,
    /// Show at most this many entries (at least 1). Omit for all that fit
    /// the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// Arguments of `glob`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobArgs {
    /// Glob matched against paths relative to `path`, e.g. `**/*.rs` or
    /// `src/*.{ts,tsx}`. `*` stays within one directory; `**` spans any number.
    pub pattern: String,
    /// Directory to search from; the workspace root when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Skip files ignored by .gitignore, .ignore, .git/info/exclude and the
    /// global git excludes, and skip the .git directory.
    #[serde(default = "yes")]
    pub respect_gitignore: bool,
    /// Skip this many files first (0-based), to page through a long
    /// result list; the footer gives the offset to continue from.
    #[serde(default)]
    pub offset: u64,
    /// Show at most this many files (at least 1). Omit for all that fit the
    /// output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

impl GlobArgs {
    /// Searches the root for `pattern`, respecting git ignores.
    pub fn new(pattern: impl Into<String>) -> Self {
        GlobArgs {
            pattern: pattern.into(),
            path: None,
            respect_gitignore: true,
            offset: 0,
            limit: None,
        }
    }
}

/// What `grep` prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// One path per matching file.
    #[default]
    FilesWithMatches,
    /// `path:line:text` for each matching line, with context if asked.
    Content,
    /// `path:N`, the number of matching lines per file.
    Count,
}

/// Arguments of `grep`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// Regular expression (Rust regex syntax, as ripgrep).
    pub pattern: String,
    /// File or directory to search; the workspace root when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Only search files whose path (relative to `path`) matches this glob;
    /// a glob without `/` matches the file name at any depth, and a leading
    /// `!` excludes the matching files instead. It only narrows the search:
    /// ignored files stay skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// files_with_matches (default), content, or count.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Case-insensitive matching.
    #[serde(default)]
    pub ignore_case: bool,
    /// Let matches span lines: `.` matches `\n`.
    #[serde(default)]
    pub multiline: bool,
    /// Lines of context before and after each match (content mode; default
    /// 0).
    #[serde(default)]
    pub context: u32,
    /// Lines before each match (content mode); overrides `context` on that side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_context: Option<u32>,
    /// Lines after each match (content mode); overrides `context` on that side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_context: Option<u32>,
    /// Return at most this many results (files, or matching lines in content
    /// mode; at least 1). Omit for all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub head_limit: Option<u64>,
    /// Skip this many results first (0-based), to page with head_limit.
    #[serde(default)]
    pub offset: u64,
}

impl GrepArgs {
    /// Searches the root for `pattern` with every other option at its default.
    pub fn new(pattern: impl Into<String>) -> Self {
        GrepArgs {
            pattern: pattern.into(),
            path: None,
            glob: None,
            output_mode: OutputMode::default(),
            ignore_case: false,
            multiline: false,
            context: 0,
            before_context: None,
            after_context: None,
            head_limit: None,
            offset: 0,
        }
    }
}

/// Arguments of `write_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// Destination file. Its parent directory must already exist.
    pub path: String,
    /// The whole new content, written byte for byte.
    pub content: String,
}

impl WriteFileArgs {
    /// Writes `content` to `path`.
    pub fn new(path: impl Into<String>, content: impl Into<String>) -> Self {
        WriteFileArgs {
            path: path.into(),
            content: content.into(),
        }
    }
}

/// One replacement, as used by `edit_file` and each step of `multi_edit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditSpec {
    /// Text to find, literally (no regex, no line-number prefixes).
    pub old_string: String,
    /// Replacement text, literal; must differ from old_string.
    pub new_string: String,
    /// Replace every exact occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

impl EditSpec {
    /// Replaces the one occurrence of `old_string` with `new_string`.
    pub fn new(old_string: impl Into<String>, new_string: impl Into<String>) -> Self {
        EditSpec {
            old_string: old_string.into(),
            new_string: new_string.into(),
            replace_all: false,
        }
    }

    /// The same edit, replacing every occurrence.
    pub fn all(mut self) -> Self {
        self.replace_all = true;
        self
    }
}

/// Arguments of `edit_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// File to edit.
    pub path: String,
    /// Text to find, literally (no regex, no line-number prefixes).
    pub old_string: String,
    /// Replacement text, literal; must differ from old_string.
    pub new_string: String,
    /// Replace every exact occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

impl EditFileArgs {
    /// Replaces the one occurrence of `old_string` in `path` with `new_string`.
    pub fn new(
        path: impl Into<String>,
        old_string: impl Into<String>,
        new_string: impl Into<String>,
    ) -> Self {
        EditFileArgs {
            path: path.into(),
            old_string: old_string.into(),
            new_string: new_string.into(),
            replace_all: false,
        }
    }

    /// The same edit, replacing every occurrence.
    pub fn all(mut self) -> Self {
        self.replace_all = true;
        self
    }
}

/// Arguments of `multi_edit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultiEditArgs {
    /// File to edit.
    pub path: String,
    /// Edits applied in order, each to the result of the one before; all or
    /// nothing.
    #[schemars(length(min = 1))]
    pub edits: Vec<EditSpec>,
}

impl MultiEditArgs {
    /// Applies `edits` to `path`, in order.
    pub fn new(path: impl Into<String>, edits: Vec<EditSpec>) -> Self {
        MultiEditArgs {
            path: path.into(),
            edits,
        }
    }
}
