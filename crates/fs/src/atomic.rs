//! Atomic replacement of a file's content.
//!
//! The new bytes go to a temporary file created beside the target, beneath the
//! parent directory's handle (so the kernel keeps every step inside the
//! workspace), then the temporary file is flushed to disk and renamed over the
//! target, and the directory is flushed so the rename itself survives a crash.
//! A reader, or a crash at any moment, sees either the old content or the new
//! content under the target's name, never a mix.
//!
//! The temporary file is named `.<name>.tmp.<pid>.<counter>` and is removed on
//! every error path. Only a process killed between creating it and renaming it
//! can leave one behind; such leftovers never hold the target's name.
//!
//! An existing target keeps its permission bits and, where the process may
//! set it, its owner. Being a rename, the write gives the target a new inode:
//! hard links to the old file keep the old content.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use agent_tools_confine::{ConfinedPath, Workspace};
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use cap_std::fs::{Dir, Metadata, OpenOptions};

/// The part of a temporary file's name that follows the target's name.
pub(crate) const TEMP_INFIX: &str = ".tmp.";

/// Longest slice of the target's name kept in a temporary name, so the
/// temporary name stays under the usual 255-byte limit.
const MAX_NAME_IN_TEMP: usize = 160;

/// How many names to try when a temporary name is taken.
const CREATE_ATTEMPTS: u32 = 16;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The name of a fresh temporary sibling of `name`.
pub(crate) fn temp_name(name: &OsStr) -> OsString {
    let lossy = name.to_string_lossy();
    let kept = agent_tools_text::truncate_utf8(&lossy, MAX_NAME_IN_TEMP);
    let counter = COUNTER.fetch_add(1, Ordering::Relaxed);
    OsString::from(format!(
        ".{kept}{TEMP_INFIX}{}.{counter}",
        std::process::id()
    ))
}

/// Removes the temporary file when dropped, unless it was renamed into place.
struct TempGuard<'a> {
    dir: &'a Dir,
    name: Option<OsString>,
}

impl TempGuard<'_> {
    fn name(&self) -> &OsStr {
        self.name.as_deref().unwrap_or_default()
    }

    fn disarm(&mut self) {
        self.name = None;
    }
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            // Best effort: the error that got us here is the one to report.
            let _ = self.dir.remove_file(name);
        }
    }
}

/// Replaces the content of `path` with the concatenation of `parts`.
///
/// `existing` is the target's metadata when it exists (its permissions and
/// owner are carried over), `None` when the file is being created (it gets the
/// default mode, subject to the umask).
pub(crate) fn replace(
    workspace: &Workspace,
    path: &ConfinedPath,
    parts: &[&[u8]],
    existing: Option<&Metadata>,
) -> ToolResult<()> {
    let (dir, name) = workspace.open_parent(path)?;
    let fail = |err: io::Error| workspace.io_error(&err, path);

    let (temp, file) = create_temp(&dir, &name).map_err(fail)?;
    let mut guard = TempGuard {
        dir: &dir,
        name: Some(temp),
    };
    let mut file = file.into_std();
    if let Some(meta) = existing {
        carry_over(&file, meta).map_err(fail)?;
    }
    for part in parts {
        file.write_all(part).map_err(fail)?;
    }
    file.sync_all().map_err(fail)?;
    drop(file);

    dir.rename(guard.name(), &dir, &name).map_err(fail)?;
    guard.disarm();
    drop(guard);

    // The content is in place; flushing the directory makes the rename
    // durable. The handle itself may be path-only, so open the directory
    // again, for reading, to flush it.
    sync_dir(&dir).map_err(|err| {
        ToolError::new(
            ErrorCode::IoError,
            format!(
                "{path}: the new content was written, but flushing its directory to disk failed: {err}"
            ),
        )
    })
}

/// Refuses to replace a file nobody may write to (mode without any write
/// bit): the rename would otherwise bypass the permission the file carries.
pub(crate) fn refuse_read_only(path: &ConfinedPath, meta: &Metadata) -> ToolResult<()> {
    if meta.permissions().readonly() {
        return Err(ToolError::new(
            ErrorCode::IoError,
            format!("{path}: the file is read-only; not changed"),
        ));
    }
    Ok(())
}

fn sync_dir(dir: &Dir) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.read(true);
    dir.open_with(".", &options)?.into_std().sync_all()
}

fn create_temp(dir: &Dir, name: &OsStr) -> io::Result<(OsString, cap_std::fs::File)> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let mut last = None;
    for _ in 0..CREATE_ATTEMPTS {
        let temp = temp_name(name);
        match dir.open_with(&temp, &options) {
            Ok(file) => return Ok((temp, file)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
}

/// Gives the temporary file the target's permissions (and owner, when allowed).
fn carry_over(file: &std::fs::File, meta: &Metadata) -> io::Result<()> {
    #[cfg(unix)]
    {
        use cap_std::fs::{MetadataExt, PermissionsExt};
        use std::os::unix::fs::PermissionsExt as _;

        let mode = meta.permissions().mode() & 0o7777;
        // Owner first: changing the owner may clear set-id bits, which the
        // mode below then restores.
        let current = file.metadata()?;
        {
            use std::os::unix::fs::MetadataExt as _;
            if current.uid() != meta.uid() || current.gid() != meta.gid() {
                // Only a privileged process may give a file away; otherwise
                // keeping our own ownership is the best we can do.
                let _ = std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()));
            }
        }
        file.set_permissions(std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let mut perms = file.metadata()?.permissions();
        perms.set_readonly(meta.permissions().readonly());
        file.set_permissions(perms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_hidden_unique_and_bounded() {
        let a = temp_name(OsStr::new("main.rs"));
        let b = temp_name(OsStr::new("main.rs"));
        assert_ne!(a, b);
        let a = a.to_string_lossy().into_owned();
        assert!(a.starts_with(".main.rs.tmp."), "{a}");
        let long = "x".repeat(300);
        assert!(temp_name(OsStr::new(&long)).len() < 255);
    }
}
