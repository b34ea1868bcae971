//! The arguments of the default surface's tools and, through their
//! derived schemas, what the model is shown of them. The file tools take
//! the engine's own argument types (`agent-tools-fs`); `apply_patch` and
//! `bash` are composed here.

use schemars::JsonSchema;
use serde::Deserialize;

pub(crate) use agent_tools_fs::{
    EditFileArgs, GlobArgs, GrepArgs, ListDirArgs, MultiEditArgs, ReadFileArgs, WriteFileArgs,
};

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BashArgs {
    /// The shell command.
    pub(crate) command: String,
    /// Working directory; the workspace root when omitted.
    #[serde(default)]
    pub(crate) cwd: Option<String>,
    /// Maximum run time in milliseconds (default 120000, at least 1); larger
    /// values are capped at the server's maximum.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(crate) timeout_ms: Option<u64>,
}

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApplyPatchArgs {
    /// The patch (unified diff or `*** Begin Patch` format), covering one or
    /// more files. `input` is accepted as another name for it.
    #[serde(alias = "input")]
    pub(crate) patch: String,
}

/// What `lsp` asks the language server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LspOperation {
    /// Where the symbol is defined.
    Definition,
    /// Every use of the symbol, its declaration included.
    References,
    /// The symbol's type and documentation.
    Hover,
    /// The outline of the file.
    DocumentSymbols,
    /// Symbols matching `query` across the workspace.
    WorkspaceSymbols,
    /// Implementations of an interface or abstract method.
    Implementations,
    /// Who calls the function.
    IncomingCalls,
    /// What the function calls.
    OutgoingCalls,
    /// The file's errors and warnings now.
    Diagnostics,
}

/// Arguments of `lsp`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LspArgs {
    /// What to ask.
    pub(crate) operation: LspOperation,
    /// The file (relative to the workspace root, or absolute inside it).
    /// For workspace_symbols, any file of the language to search.
    pub(crate) path: String,
    /// The line the symbol is on, from 1 (definition, references, hover,
    /// implementations, incoming_calls, outgoing_calls).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(crate) line: Option<u32>,
    /// The identifier as written on that line.
    #[serde(default)]
    pub(crate) symbol: Option<String>,
    /// The column (from 1, in characters) of the occurrence meant, when the
    /// symbol occurs more than once on the line.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(crate) column: Option<u32>,
    /// workspace_symbols: the name or part of it.
    #[serde(default)]
    pub(crate) query: Option<String>,
    /// The most results listed: 1 to 1000 (default 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub(crate) limit: Option<u32>,
    /// Also list locations in files the project ignores (.gitignore,
    /// .ignore, the git excludes: dependencies, build output); without it
    /// they are left out and counted (default false).
    #[serde(default)]
    pub(crate) include_ignored: bool,
}

/// Arguments of `rename_symbol`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RenameSymbolArgs {
    /// The file the symbol is written in (relative to the workspace root,
    /// or absolute inside it).
    pub(crate) path: String,
    /// The line the symbol is on, from 1.
    #[schemars(range(min = 1))]
    pub(crate) line: u32,
    /// The identifier as written on that line.
    pub(crate) symbol: String,
    /// The column (from 1, in characters) of the occurrence meant, when the
    /// symbol occurs more than once on the line.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(crate) column: Option<u32>,
    /// The new name.
    pub(crate) new_name: String,
    /// Show the change as a diff and write nothing (default false).
    #[serde(default)]
    pub(crate) dry_run: bool,
    /// Also change files the project ignores (.gitignore, .ignore, the git
    /// excludes) when the server's edit names them; without it such a
    /// rename is refused whole, naming them (default false).
    #[serde(default)]
    pub(crate) include_ignored: bool,
}
