//! The arguments of the filesystem surface's tools; their derived schemas
//! are what the model is shown, so each default and bound is also said in
//! the field's description.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::grep::DEFAULT_MAX_RESULTS;
use crate::shell::DEFAULT_TIMEOUT_SECS;

/// Arguments of `read_text_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadTextArgs {
    /// Absolute path of the file.
    pub(crate) path: String,
    /// Only the first N lines.
    #[serde(default)]
    pub(crate) head: Option<u64>,
    /// Only the last N lines.
    #[serde(default)]
    pub(crate) tail: Option<u64>,
}

/// Arguments of the tools that read one file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileArgs {
    /// Absolute path of the file.
    pub(crate) path: String,
}

fn one() -> u64 {
    1
}

/// One edit.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct EditItem {
    /// Text to find (required): literal, or an ECMAScript regex with isRegex.
    pub(crate) old_text: String,
    /// Replacement text (default ""). With isRegex: \1-\9 or $1-$9 insert a
    /// capture group (the pattern must have it), \0, $0 or $& the whole
    /// match, $$ a literal $.
    #[serde(default)]
    pub(crate) new_text: String,
    /// Most replacements (default 1; 0 = all). Above 1 (or 0) a literal
    /// oldText may occur several times.
    #[serde(default = "one")]
    #[schemars(range(max = 1_000_000_000))]
    pub(crate) limit: u64,
    /// Treat oldText as an ECMAScript (JavaScript) regex: ^ and $ match at
    /// every line, . does not cross lines (default false). Preview with
    /// dryRun first.
    #[serde(default)]
    pub(crate) is_regex: bool,
    /// Match case-insensitively (default false).
    #[serde(default)]
    pub(crate) case_insensitive: bool,
}

/// Arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct EditFileArgs {
    /// Absolute path of the file.
    pub(crate) path: String,
    /// Edits applied in order, each to the result of the one before; all
    /// or none.
    #[schemars(length(min = 1))]
    pub(crate) edits: Vec<EditItem>,
    /// Preview as a unified diff without writing (default false).
    #[serde(default)]
    pub(crate) dry_run: bool,
}

/// Arguments of `edit_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct EditFilesArgs {
    /// Absolute paths and/or glob patterns (with *, ?, {, } or [).
    #[schemars(length(min = 1))]
    pub(crate) paths: Vec<String>,
    /// The edits, as in edit_file, applied to every file.
    #[schemars(length(min = 1))]
    pub(crate) edits: Vec<EditItem>,
    /// Preview every file's diff without writing (default false).
    #[serde(default)]
    pub(crate) dry_run: bool,
}

fn default_max_results() -> u32 {
    DEFAULT_MAX_RESULTS
}

/// Arguments of `grep_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GrepArgs {
    /// ECMAScript (JavaScript) regex searched in file contents, line by
    /// line (required).
    pub(crate) regex: String,
    /// Directory to search recursively; set it to restrict the search.
    #[serde(default)]
    pub(crate) directory: Option<String>,
    /// File filters: relative globs are anchored to directory (or to the
    /// first allowed directory), absolute ones used as they are.
    #[serde(default)]
    pub(crate) globs: Option<Vec<String>>,
    /// Files to leave out (a pattern without / matches a name at any
    /// depth).
    #[serde(default)]
    pub(crate) exclude_globs: Option<Vec<String>>,
    /// Case-insensitive, like grep -i (default false).
    #[serde(default)]
    pub(crate) case_insensitive: bool,
    /// Lines before and after each match, like grep -C (default 0, at most 50).
    #[serde(default)]
    #[schemars(range(max = 50))]
    pub(crate) context_lines: u32,
    /// Most matching lines shown (default 500, at least 1, at most 10000).
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = 10000))]
    pub(crate) max_results: u32,
}

// The older names `path`, `pattern` and `excludePatterns` are accepted,
// not advertised (see SEARCH_LEGACY); the newer win.
/// Arguments of `search_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SearchArgs {
    /// Absolute path of the directory to search recursively.
    #[serde(default)]
    pub(crate) directory: Option<String>,
    /// Plain text the name must contain (case is ignored).
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub(crate) name_contains: Option<String>,
    /// Glob patterns of entries to leave out.
    #[serde(default)]
    pub(crate) exclude_globs: Option<Vec<String>>,
    /// Older name of `directory`.
    #[serde(default)]
    pub(crate) path: Option<String>,
    /// Older name of `nameContains`; a glob when it holds `*`, `?`, `[`
    /// or `{`.
    #[serde(default)]
    pub(crate) pattern: Option<String>,
    /// Older name of `excludeGlobs`.
    #[serde(default)]
    pub(crate) exclude_patterns: Option<Vec<String>>,
}

/// Arguments of `glob_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GlobSearchArgs {
    /// Absolute path of the directory the globs are relative to.
    pub(crate) directory: String,
    /// Glob patterns, relative to `directory`.
    #[schemars(length(min = 1))]
    pub(crate) globs: Vec<String>,
    /// Glob patterns of entries to leave out.
    #[serde(default)]
    pub(crate) exclude_globs: Vec<String>,
    /// The most paths returned (default 1000; 0 for no limit).
    #[serde(default = "default_max")]
    pub(crate) max: u64,
}

fn default_max() -> u64 {
    1000
}

// The reference server's `excludePatterns` is accepted, not advertised
// (see TREE_LEGACY).
/// Arguments of `directory_tree`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct TreeArgs {
    /// Absolute path of the directory.
    pub(crate) path: String,
    /// Levels to show: omitted for all, 0 for the directory alone.
    #[serde(default)]
    pub(crate) depth: Option<u64>,
    /// Glob patterns of entries to leave out.
    #[serde(default)]
    pub(crate) exclude_patterns: Vec<String>,
}

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct BashArgs {
    /// The shell command.
    #[schemars(length(min = 1))]
    pub(crate) command: String,
    /// Absolute directory to run in (inside an allowed directory).
    #[serde(default)]
    pub(crate) working_directory: Option<String>,
    /// Seconds before the command is stopped (default 30, at least 1, at
    /// most 60).
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1, max = 60))]
    pub(crate) timeout: u64,
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECS
}

/// Arguments of the tools that take one path.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PathArgs {
    /// Absolute path inside an allowed directory.
    pub(crate) path: String,
}

/// Arguments of `read_multiple_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadMultipleArgs {
    /// Literal absolute file paths (at most 50; globs are not expanded).
    #[schemars(length(min = 1, max = 50))]
    pub(crate) paths: Vec<String>,
}

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteArgs {
    /// Absolute path of the file to write (parents are created).
    pub(crate) path: String,
    /// The whole new contents, UTF-8.
    pub(crate) content: String,
}

/// Arguments of `move_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MoveArgs {
    /// Absolute path of the file or directory to move.
    pub(crate) source: String,
    /// Absolute path it moves to (must not exist; parents are created).
    pub(crate) destination: String,
}

/// `list_allowed_directories` takes nothing.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoArgs {}
