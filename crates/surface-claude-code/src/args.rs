//! The tools' arguments, with Claude Code's parameter names and types, and
//! their descriptions (in this project's words).

use schemars::JsonSchema;
use serde::Deserialize;

pub(crate) const READ: &str = "Read a file from the workspace. file_path must be absolute. \
Text comes back with one line per output line, numbered from 1 like `cat -n`: the number \
right-aligned in six columns, then `→`, then the line. Without limit up to 2000 lines are shown, \
starting at offset when given; pass offset and limit to page through long files (a file over \
256KB needs them). Lines longer than 2000 characters are cut, with a marker. PNG, JPG, GIF and \
WEBP images come back as images; PDFs as the text of their pages (pages selects up to 20, e.g. \
\"1-5\"; a PDF over 10 pages needs it); Jupyter notebooks (.ipynb) as their cells with outputs. \
Reading a file is what allows a later Write or Edit of it.";

pub(crate) const WRITE: &str = "Write a file in the workspace, replacing what is there. \
file_path must be absolute; missing parent directories are created. The content is written \
exactly as given, atomically. An existing file must have been read with Read in this session \
first, and must not have changed on disk since. Prefer Edit for changes to existing files.";

pub(crate) const EDIT: &str = "Replace text in a file: old_string becomes new_string. \
file_path must be absolute, and the file must have been read with Read in this session (and \
not changed on disk since). old_string must occur exactly once in the file, or give \
replace_all to replace every occurrence; copy it from Read's output without the line-number \
prefix (everything up to and including the `→`), keeping indentation exactly. Straight and \
curly quotes match each other, and a CRLF file matches LF line breaks. An empty old_string \
creates a file that does not exist yet.";

pub(crate) const MULTI_EDIT: &str = "Make several edits to one file in one call, all or nothing. \
Each edit is an Edit (old_string, new_string, replace_all) applied to the result of the ones \
before it, in order; if one fails, none is applied and the failing edit is named. The same \
rules as Edit apply: an absolute file_path, a prior Read in this session, old_string unique \
unless replace_all. An empty old_string in the first edit creates a new file.";

pub(crate) const GLOB: &str = "Find files by glob pattern (e.g. `**/*.rs`, `src/**/*.{ts,tsx}`), \
searching path (absolute; the workspace root when omitted). Hidden and git-ignored files are \
included. Answers the absolute paths of the matching files, oldest modification first, at most \
100, or `No files found`.";

pub(crate) const GREP: &str = "Search file contents with a regular expression (ripgrep syntax), \
in process. output_mode: `files_with_matches` (default) lists the files, most recently modified \
first; `content` shows matching lines as `path:line:text` (with -A/-B/-C context, -n line \
numbers on by default, -o for only the matched parts); `count` shows matches per file. Narrow \
with path (absolute), glob (e.g. `*.js`, `*.{ts,tsx}`) or type (ripgrep's file types: rust, py, \
js, ...). Hidden files are searched; git-ignored files are not. head_limit (default 250, 0 for \
all) and offset page through the results.";

pub(crate) const BASH: &str = "Run a shell command (`/bin/sh -c`) in the workspace root and \
answer its output, stdout then stderr. stdin is closed. timeout is in milliseconds (default \
120000, at most 600000). A non-zero exit is an error result starting `Exit code N`. Output \
over 30000 characters is saved to a file under .agent-tools/ and answered with a preview and \
the file's path. run_in_background starts the command detached and answers at once with its \
id and the file its output goes to; read its new output with BashOutput (or all of it with \
TaskOutput, or the file with Read) and stop it with KillShell or TaskStop. Background commands \
stop when the connection ends.";

pub(crate) const KILL_SHELL: &str = "Stop a command started with Bash run_in_background, with \
everything it started, by its id.";

pub(crate) const NOTEBOOK_EDIT: &str = "Change one cell of a Jupyter notebook (.ipynb): replace \
its source (edit_mode `replace`, the default), insert a new cell after it (`insert`, or at the \
start when cell_id is omitted; cell_type required), or delete it (`delete`). notebook_path \
must be absolute and the notebook read with Read in this session first. cell_id is a cell's \
id, or `cell-N` for the cell at 0-based index N.";

/// Arguments of `Read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadArgs {
    // Claude Code's own description of the parameter, word for word:
    // models trained on it expect this text.
    /// The absolute path to the file to read
    pub file_path: String,
    /// The 1-based line to start at. Give it (with limit) for files too
    /// long to read at once.
    #[serde(default)]
    pub offset: Option<u64>,
    /// How many lines to read (2000 when omitted; at least 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
    /// PDF only: the pages to read, e.g. "1-5", "3" or "10-20" (at most 20
    /// pages a call).
    #[serde(default)]
    pub pages: Option<String>,
}

/// Arguments of `Write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteArgs {
    /// Absolute path of the file to write.
    pub file_path: String,
    /// The whole new content of the file.
    pub content: String,
}

/// Arguments of `Edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditArgs {
    /// Absolute path of the file to change.
    pub file_path: String,
    /// The text to find (exactly as in the file).
    pub old_string: String,
    /// What replaces it (must differ from old_string).
    pub new_string: String,
    /// Replace every occurrence of old_string, not just one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// One edit of `MultiEdit`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditItem {
    /// The text to find.
    pub old_string: String,
    /// What replaces it.
    pub new_string: String,
    /// Replace every occurrence of old_string (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// Arguments of `MultiEdit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MultiEditArgs {
    /// Absolute path of the file to change.
    pub file_path: String,
    /// The edits, applied in order, each to the result of the ones before.
    #[schemars(length(min = 1))]
    pub edits: Vec<EditItem>,
}

/// Arguments of `Glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GlobArgs {
    /// The glob to match file paths against.
    pub pattern: String,
    /// Absolute path of the directory to search. Leave it out for the
    /// workspace root (do not pass "undefined" or "null").
    #[serde(default)]
    pub path: Option<String>,
}

/// What `Grep` answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OutputMode {
    /// Matching lines.
    Content,
    /// Paths of matching files.
    #[default]
    FilesWithMatches,
    /// Matches per file.
    Count,
}

/// Arguments of `Grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrepArgs {
    /// The regular expression to search for.
    pub pattern: String,
    /// Absolute path of the file or directory to search (the workspace root
    /// when omitted).
    #[serde(default)]
    pub path: Option<String>,
    /// Only files matching this glob (e.g. "*.js", "*.{ts,tsx}").
    #[serde(default)]
    pub glob: Option<String>,
    /// content, files_with_matches (default) or count.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Lines of context before each match (content mode only).
    #[serde(default, rename = "-B")]
    pub before: Option<u32>,
    /// Lines of context after each match (content mode only).
    #[serde(default, rename = "-A")]
    pub after: Option<u32>,
    /// Same as context.
    #[serde(default, rename = "-C")]
    pub context_short: Option<u32>,
    /// Lines of context before and after each match (content mode only).
    #[serde(default)]
    pub context: Option<u32>,
    /// Show line numbers (content mode only; default true).
    #[serde(default, rename = "-n")]
    pub line_numbers: Option<bool>,
    /// Ignore case.
    #[serde(default, rename = "-i")]
    pub ignore_case: Option<bool>,
    /// Show only the matched parts of lines, one per line (content mode
    /// only).
    #[serde(default, rename = "-o")]
    pub only_matching: Option<bool>,
    /// A ripgrep file type to search (rust, py, js, go, java, ...).
    #[serde(default, rename = "type")]
    pub file_type: Option<String>,
    /// Show at most this many lines or entries (default 250; 0 for all).
    #[serde(default)]
    pub head_limit: Option<u64>,
    /// Skip this many lines or entries first (default 0).
    #[serde(default)]
    pub offset: Option<u64>,
    /// Let patterns span lines, `.` matching newlines too (default false).
    #[serde(default)]
    pub multiline: Option<bool>,
}

/// Arguments of `Bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BashArgs {
    /// The command line.
    pub command: String,
    /// Timeout in milliseconds (default 120000, at most 600000).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// What the command does, in a few words (for the record; not run).
    #[serde(default)]
    // Taken because Claude Code's schema has it; Claude Code only shows it
    // to its user, and there is no user to show it to here.
    #[allow(dead_code)]
    pub description: Option<String>,
    /// Start the command in the background and answer at once.
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

/// Arguments of `KillShell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct KillShellArgs {
    /// The id Bash gave the background command.
    pub shell_id: String,
}

/// What kind of cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CellType {
    /// Code.
    Code,
    /// Markdown.
    Markdown,
}

/// How a cell is changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EditMode {
    /// Replace the cell's source.
    #[default]
    Replace,
    /// Insert a new cell after it.
    Insert,
    /// Delete it.
    Delete,
}

/// Arguments of `NotebookEdit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NotebookEditArgs {
    /// Absolute path of the notebook.
    pub notebook_path: String,
    /// The cell's id (or `cell-N`); for insert, the cell the new one
    /// follows (the start when omitted).
    #[serde(default)]
    pub cell_id: Option<String>,
    /// The cell's new source.
    pub new_source: String,
    /// code or markdown; required for insert.
    #[serde(default)]
    pub cell_type: Option<CellType>,
    /// replace (default), insert or delete.
    #[serde(default)]
    pub edit_mode: Option<EditMode>,
}

pub(crate) const LSP: &str = "Ask the workspace's language server about code (offered when the \
server runs with --lsp). operation: goToDefinition, findReferences, hover, documentSymbol, \
workspaceSymbol (give query, the name or part of it), goToImplementation, prepareCallHierarchy, \
incomingCalls, outgoingCalls. Every operation takes filePath (absolute or relative to the \
workspace root) and a position: line and character, both 1-based as an editor shows them. \
When no language server handles the file type, the answer says so.";

/// What `LSP` asks the language server (Claude Code's operation names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) enum LspOperation {
    GoToDefinition,
    FindReferences,
    Hover,
    DocumentSymbol,
    WorkspaceSymbol,
    GoToImplementation,
    PrepareCallHierarchy,
    IncomingCalls,
    OutgoingCalls,
}

/// Arguments of `LSP`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LspArgs {
    /// Which language-server request to make.
    pub(crate) operation: LspOperation,
    /// The file, absolute or relative to the workspace root.
    #[serde(rename = "filePath")]
    pub(crate) file_path: String,
    /// The line, counted from 1 as editors show it.
    // Claude Code says `exclusiveMinimum: 0`; the portable subset says the
    // same for integers as `minimum: 1`.
    #[schemars(range(min = 1, max = 9_007_199_254_740_991_u64))]
    pub(crate) line: u64,
    /// The character on the line, counted from 1 as editors show it.
    #[schemars(range(min = 1, max = 9_007_199_254_740_991_u64))]
    pub(crate) character: u64,
    /// For workspaceSymbol: the name, or part of it, to look for (servers mostly find nothing for an empty one).
    #[serde(default)]
    pub(crate) query: Option<String>,
}
