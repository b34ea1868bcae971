//! `write_file`: create or overwrite a file with exact content, atomically.

use std::sync::PoisonError;

use agent_tools_confine::ConfinedPath;
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use cap_std::fs::Metadata;

use crate::{FileTools, WriteFileArgs, atomic};

impl FileTools {
    /// Creates or overwrites a file with `args.content`, byte for byte (no
    /// newline added, line endings untouched), through a temporary file and a
    /// rename so the target never holds partial content.
    ///
    /// The parent directory must exist. An existing file keeps its
    /// permissions. Returns e.g. `created src/new.rs (42 bytes)` or
    /// `overwrote src/a.rs (42 bytes)`.
    pub fn write_file(&self, args: &WriteFileArgs) -> ToolResult<String> {
        refuse_directory_spelling(&args.path)?;
        let path = self.workspace().resolve(&args.path)?;
        let lock = self.write_locks.lock_for(path.abs());
        let _held = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let _file_lock = self.lock_files([&path])?;

        let existing = self.existing_target(&path)?;
        if let Some(meta) = &existing {
            atomic::refuse_read_only(&path, meta)?;
        }
        let bytes = args.content.as_bytes();
        atomic::replace(self.workspace(), &path, &[bytes], existing.as_ref())?;
        let verb = if existing.is_some() {
            "overwrote"
        } else {
            "created"
        };
        Ok(format!("{verb} {path} ({})", byte_count(bytes.len())))
    }

    /// The metadata of a write target, `None` when it does not exist yet;
    /// `not_a_file` for a directory or anything else that is not a file.
    fn existing_target(&self, path: &ConfinedPath) -> ToolResult<Option<Metadata>> {
        if path.is_root() {
            return Err(directory_target(path));
        }
        match self.workspace().metadata(path) {
            Ok(meta) if meta.is_dir() => Err(directory_target(path)),
            Ok(meta) if !meta.is_file() => Err(ToolError::new(
                ErrorCode::NotAFile,
                format!("{path}: is not a regular file"),
            )),
            Ok(meta) => Ok(Some(meta)),
            // The parent may be missing too: replacing reports that by name.
            Err(err) if err.code() == ErrorCode::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }
}

/// A path ending in `/` (or `/.`) names a directory, whatever exists there:
/// writing a file to it would overwrite `a.txt` for `a.txt/`, or create a
/// file called `newdir` for `newdir/`. The resolver drops that spelling, so
/// it is checked on the caller's string.
fn refuse_directory_spelling(raw: &str) -> ToolResult<()> {
    if raw.ends_with('/') || raw.ends_with("/.") {
        return Err(ToolError::new(
            ErrorCode::NotAFile,
            format!(
                "{raw}: ends with `/`, so it names a directory; write_file writes a file (drop the trailing `/`)"
            ),
        ));
    }
    Ok(())
}

fn directory_target(path: &ConfinedPath) -> ToolError {
    ToolError::new(
        ErrorCode::NotAFile,
        format!("{path}: is a directory; write_file writes a file"),
    )
}

/// `1 byte`, `42 bytes`.
pub(crate) fn byte_count(n: usize) -> String {
    if n == 1 {
        "1 byte".to_string()
    } else {
        format!("{n} bytes")
    }
}
