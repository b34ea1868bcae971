//! `list_dir`: the entries of one directory.

use agent_tools_error::ToolResult;

use crate::{FileTools, ListDirArgs};

/// What `list_dir` prints for a directory with no entries.
pub const EMPTY_DIRECTORY: &str = "(empty directory)";

impl FileTools {
    /// Lists a directory: one entry a line, sorted by name, directories with a
    /// trailing `/`, symlinks as `name -> target`.
    pub fn list_dir(&self, args: &ListDirArgs) -> ToolResult<String> {
        let ws = self.workspace();
        let path = ws.resolve_dir(args.path.as_deref(), "use read_file to read it")?;
        let dir = ws.open_dir(&path)?;
        let io = |err: std::io::Error| ws.io_error(&err, &path);
        let mut entries: Vec<(String, String)> = Vec::new();
        for entry in dir.entries().map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let file_type = entry.file_type().map_err(io)?;
            let shown = if file_type.is_dir() {
                format!("{name}/")
            } else if file_type.is_symlink() {
                match dir.read_link_contents(&name) {
                    Ok(target) => format!("{name} -> {}", target.display()),
                    Err(_) => format!("{name} -> ?"),
                }
            } else {
                name.clone()
            };
            entries.push((name, shown));
        }
        if entries.is_empty() {
            return Ok(EMPTY_DIRECTORY.to_string());
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut out = String::with_capacity(entries.iter().map(|e| e.1.len() + 1).sum());
        for (_, shown) in entries {
            out.push_str(&shown);
            out.push('\n');
        }
        Ok(out)
    }
}
