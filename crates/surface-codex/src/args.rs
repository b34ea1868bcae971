//! The arguments of the codex surface's tools; their derived schemas are
//! what the model is shown.

use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApplyPatchArgs {
    /// The whole patch, from `*** Begin Patch` to `*** End Patch` (or a
    /// unified diff).
    pub(crate) input: String,
}

/// Arguments of `shell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShellArgs {
    /// The program and its arguments, e.g. ["bash", "-lc", "ls -la"].
    #[schemars(length(min = 1))]
    pub(crate) command: Vec<String>,
    /// The directory to run in, inside the workspace; the root when omitted.
    #[serde(default)]
    pub(crate) workdir: Option<String>,
    /// Maximum run time in milliseconds (default 120000, at least 1);
    /// larger values are capped at the server's maximum.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(crate) timeout_ms: Option<u64>,
}
