//! `glob`: files by pattern, most recently modified first.

use std::time::SystemTime;

use agent_tools_error::{ToolError, ToolResult};
use globset::GlobBuilder;
use ignore::WalkState;

use crate::{FileTools, GlobArgs, walk};

/// What `glob` prints when nothing matches (a success).
pub const NO_MATCHES: &str = "(no matches)";

impl FileTools {
    /// Finds files whose path relative to the base matches the pattern.
    pub fn glob(&self, args: &GlobArgs) -> ToolResult<String> {
        let ws = self.workspace();
        let base = ws.resolve_dir(args.path.as_deref(), "glob searches a directory")?;
        let pattern = args.pattern.strip_prefix("./").unwrap_or(&args.pattern);
        let pattern = absolute_to_relative(pattern, base.abs());
        let matcher = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|err| {
                ToolError::invalid_input(format!(
                    "bad glob pattern {:?}: {}",
                    args.pattern,
                    err.kind()
                ))
            })?
            .compile_matcher();

        let base_abs = base.abs().to_path_buf();
        let walker = walk::walker(&base_abs, args.respect_gitignore);
        let mut found: Vec<(SystemTime, String)> = walk::collect_parallel(
            &walker,
            || (),
            |_, entry, found| {
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let Ok(rel) = entry.path().strip_prefix(&base_abs) else {
                    return WalkState::Continue;
                };
                if matcher.is_match(rel) {
                    let modified = entry
                        .metadata()
                        .ok()
                        .and_then(|m| m.modified().ok())
                        .unwrap_or(SystemTime::UNIX_EPOCH);
                    found.push((modified, ws.display_abs(entry.path())));
                }
                WalkState::Continue
            },
        );
        if found.is_empty() {
            return Ok(NO_MATCHES.to_string());
        }
        found.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut out = String::with_capacity(found.iter().map(|f| f.1.len() + 1).sum());
        for (_, path) in found {
            out.push_str(&path);
            out.push('\n');
        }
        Ok(out)
    }
}

/// Accepts an absolute pattern that starts with the base directory.
fn absolute_to_relative(pattern: &str, base: &std::path::Path) -> String {
    let base = base.to_string_lossy();
    // The root's path may end in a separator; the pattern's rest starts with one.
    let base = base.trim_end_matches('/');
    match pattern.strip_prefix(base) {
        Some(rest) if rest.starts_with('/') => rest.trim_start_matches('/').to_string(),
        _ => pattern.to_string(),
    }
}
