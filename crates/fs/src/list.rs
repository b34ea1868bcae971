//! `list_dir`: the entries of one directory.

use std::sync::atomic::{AtomicBool, Ordering};

use agent_tools_confine::{quote_os, quote_text};
use agent_tools_error::ToolResult;

use crate::walk::{Skipped, skipped_note};
use crate::{FileTools, ListDirArgs, cancelled, page};

/// What `list_dir` prints for a directory with no entries.
pub const EMPTY_DIRECTORY: &str = "(empty directory)";

impl FileTools {
    /// Lists a directory: one entry a line, sorted by name, directories with a
    /// trailing `/`, symlinks as `name -> target`.
    pub fn list_dir(&self, args: &ListDirArgs) -> ToolResult<String> {
        self.list_dir_with(args, &AtomicBool::new(false))
    }

    /// [`list_dir`](Self::list_dir), stopping with an error once `cancel` is set.
    pub fn list_dir_with(&self, args: &ListDirArgs, cancel: &AtomicBool) -> ToolResult<String> {
        let ws = self.workspace();
        page::check_limit(args.limit)?;
        let path = ws.resolve_dir(args.path.as_deref(), "use read_file to read it")?;
        let dir = ws.open_dir(&path)?;
        let io = |err: std::io::Error| ws.io_error(&err, &path);
        let mut entries: Vec<(String, String)> = Vec::new();
        let mut skipped = Vec::new();
        for entry in dir.entries().map_err(io)? {
            if cancel.load(Ordering::Relaxed) {
                return Err(cancelled());
            }
            let entry = entry.map_err(io)?;
            let raw_name = entry.file_name();
            let Some(name) = raw_name.to_str() else {
                let shown = if path.is_root() {
                    quote_os(&raw_name)
                } else {
                    let mut full = std::ffi::OsString::from(format!("{}/", path.display()));
                    full.push(&raw_name);
                    quote_os(&full)
                };
                skipped.push(Skipped {
                    path: shown,
                    why: "the name is not UTF-8, which the file tools cannot address".into(),
                });
                continue;
            };
            let name = name.to_string();
            let file_type = entry.file_type().map_err(io)?;
            let quoted = quote_text(&name);
            let shown = if file_type.is_dir() {
                format!("{quoted}/\n")
            } else if file_type.is_symlink() {
                match dir.read_link_contents(&name) {
                    Ok(target) => format!("{quoted} -> {}\n", quote_os(target.as_os_str())),
                    Err(_) => format!("{quoted} -> ?\n"),
                }
            } else {
                format!("{quoted}\n")
            };
            entries.push((name, shown));
        }
        let note = skipped_note(&mut skipped);
        if entries.is_empty() {
            let empty = if note.is_empty() {
                EMPTY_DIRECTORY.to_string()
            } else {
                format!("{EMPTY_DIRECTORY}\n")
            };
            return Ok(empty + &note);
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let total = entries.len() as u64;
        let mut out = String::new();
        let end = page::page_lines(
            &mut out,
            entries.iter().map(|e| e.1.as_str()),
            total,
            args.offset,
            args.limit,
            self.limits().max_output_bytes.saturating_sub(note.len()),
        );
        out.push_str(&page::footer(total, args.offset, end));
        out.push_str(&note);
        Ok(out)
    }
}
