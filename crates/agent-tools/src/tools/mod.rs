//! The tool definitions, in the order they are listed.

use crate::registry::ToolDef;

mod files;

/// Every tool, read-only ones first.
pub(crate) fn all() -> Vec<ToolDef> {
    let mut tools = files::read_tools();
    tools.extend(files::write_tools());
    tools
}
