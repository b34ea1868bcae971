//! The tool definitions, in the order they are listed.

use crate::registry::ToolDef;

mod bash;
mod files;
mod patch;

/// Every tool, read-only ones first.
pub(crate) fn all() -> Vec<ToolDef> {
    let mut tools = files::read_tools();
    tools.extend(files::write_tools());
    tools.push(patch::apply_patch_tool());
    tools.push(bash::bash_tool());
    tools
}
