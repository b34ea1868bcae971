//! `glob`: files by pattern, most recently modified first.

use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

use agent_tools_confine::quote_text;
use agent_tools_error::{ToolError, ToolResult};
use globset::GlobBuilder;

use crate::walk::{Flow, Walk, skipped_note};
use crate::{FileTools, GlobArgs, cancelled, page};

/// What `glob` prints when nothing matches (a success).
pub const NO_MATCHES: &str = "(no matches)";

impl FileTools {
    /// Finds files whose path relative to the base matches the pattern.
    pub fn glob(&self, args: &GlobArgs) -> ToolResult<String> {
        self.glob_with(args, &AtomicBool::new(false))
    }

    /// [`glob`](Self::glob), stopping with an error once `cancel` is set.
    pub fn glob_with(&self, args: &GlobArgs, cancel: &AtomicBool) -> ToolResult<String> {
        let ws = self.workspace();
        page::check_limit(args.limit)?;
        let base = ws.resolve_dir(args.path.as_deref(), "glob searches a directory")?;
        let pattern = args.pattern.strip_prefix("./").unwrap_or(&args.pattern);
        let pattern = absolute_to_relative(pattern, base.abs(), ws);
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

        let walk = Walk {
            workspace: ws,
            base: &base,
            respect_gitignore: args.respect_gitignore,
            cancel,
        };
        let mut walked = walk.run(
            || (),
            |_, entry, sink| {
                if matcher.is_match(entry.rel) {
                    let modified = entry
                        .dir
                        .symlink_metadata(entry.name)
                        .ok()
                        .and_then(|m| m.modified().ok())
                        .map_or(SystemTime::UNIX_EPOCH, |t| t.into_std());
                    sink.found
                        .push((modified, quote_text(entry.shown).into_owned()));
                }
                Flow::Continue
            },
        )?;
        if walked.cancelled {
            return Err(cancelled());
        }
        let mut found = walked.found;
        let note = skipped_note(&mut walked.skipped);
        if found.is_empty() {
            return Ok(format!("{NO_MATCHES}{}", with_newline_before(&note)));
        }
        found.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let lines: Vec<String> = found.into_iter().map(|(_, path)| path + "\n").collect();
        Ok(page::render(
            lines.iter().map(String::as_str),
            args.offset,
            args.limit,
            self.limits().max_output_bytes,
            &note,
        ))
    }
}

fn with_newline_before(note: &str) -> String {
    if note.is_empty() {
        String::new()
    } else {
        format!("\n{note}")
    }
}

/// Accepts an absolute pattern that starts with the base directory, in
/// either spelling of the root.
fn absolute_to_relative(
    pattern: &str,
    base: &std::path::Path,
    ws: &agent_tools_confine::Workspace,
) -> String {
    let mut spellings = vec![base.to_path_buf()];
    if let (Some(given), Some(rel)) = (ws.given_root(), ws.strip_root(base)) {
        spellings.push(given.join(rel));
    }
    for base in spellings {
        let base = base.to_string_lossy();
        // The root's path may end in a separator; the pattern's rest starts with one.
        let base = base.trim_end_matches('/');
        if let Some(rest) = pattern.strip_prefix(base)
            && rest.starts_with('/')
        {
            return rest.trim_start_matches('/').to_string();
        }
    }
    pattern.to_string()
}

impl FileTools {
    /// The files under `base` whose path relative to it matches `pattern`
    /// (the glob syntax of [`glob`](Self::glob): `*` stays within a
    /// directory, `**` crosses them), as `/`-separated relative paths,
    /// sorted. Every file is looked at (no ignore files); symlinks are not
    /// followed. The second list names what could not be looked at.
    pub fn glob_paths(
        &self,
        base: &agent_tools_confine::ConfinedPath,
        pattern: &str,
        cancel: &AtomicBool,
    ) -> ToolResult<(Vec<String>, Vec<String>)> {
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|err| {
                ToolError::invalid_input(format!("bad glob pattern {pattern:?}: {}", err.kind()))
            })?
            .compile_matcher();
        let walk = Walk {
            workspace: self.workspace(),
            base,
            respect_gitignore: false,
            cancel,
        };
        let walked = walk.run(
            || (),
            |_, entry, sink| {
                if matcher.is_match(entry.rel) {
                    sink.found.push(entry.rel.to_string());
                }
                Flow::Continue
            },
        )?;
        if walked.cancelled {
            return Err(cancelled());
        }
        let mut found = walked.found;
        found.sort_unstable();
        let mut skipped = walked.skipped;
        skipped.sort_unstable();
        let skipped = skipped
            .into_iter()
            .map(|s| format!("{} ({})", s.path, s.why))
            .collect();
        Ok((found, skipped))
    }
}
