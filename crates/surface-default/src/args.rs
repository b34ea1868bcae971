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
