//! The workspace root, and keeping every path the tools touch inside it.
//!
//! A [`Workspace`] is opened once on a root directory. Each path a caller
//! hands in goes through [`Workspace::resolve`], which accepts a path relative
//! to the root or an absolute path inside it and returns a [`ConfinedPath`],
//! or refuses with `path_escape` when:
//!
//! - `..` climbs above the root;
//! - an absolute path lies outside the root (`/ws_evil` is not inside `/ws`);
//! - a symlink, the file itself or any ancestor, points outside the root;
//! - a symlink dangles (its target does not exist).
//!
//! A path that does not exist yet resolves through its deepest existing
//! ancestor, so a file can be created under a real directory.
//!
//! Resolution gives good error messages, but it is a check by name and could
//! race with someone swapping a symlink in afterwards. So every open goes
//! through a directory handle on the root ([`cap_std::fs::Dir`]), which resolves
//! the path beneath that handle in the kernel (`openat2` with
//! `RESOLVE_BENEATH` where available) and refuses to leave it, whatever the
//! filesystem looks like at that moment.
//!
//! ```
//! use agent_tools_confine::{Confinement, Workspace};
//! use agent_tools_error::ErrorCode;
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("notes.txt"), "hi").unwrap();
//! let ws = Workspace::open(dir.path(), Confinement::Confined).unwrap();
//!
//! let path = ws.resolve("notes.txt").unwrap();
//! assert_eq!(path.display(), "notes.txt");
//! assert_eq!(std::io::read_to_string(ws.open_file(&path).unwrap()).unwrap(), "hi");
//!
//! let err = ws.resolve("../outside.txt").unwrap_err();
//! assert_eq!(err.code(), ErrorCode::PathEscape);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use cap_std::ambient_authority;
use cap_std::fs::Dir;

/// Whether paths are kept inside the root. Turning confinement off is an
/// explicit choice; there is no default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    /// Every path must stay inside the root (the safe mode).
    Confined,
    /// Any path on the machine is allowed; relative paths still start at the root.
    Unconfined,
}

/// Why a workspace could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The root does not exist or cannot be read.
    #[error("workspace root {} cannot be opened", root.display())]
    Missing {
        /// The root as given.
        root: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The root exists but is not a directory.
    #[error("workspace root {} is not a directory", root.display())]
    NotADirectory {
        /// The root as given.
        root: PathBuf,
    },
}

/// A path that passed confinement: relative to the workspace's base directory
/// handle, with no `..`, no symlink hops left to check, and a display form for
/// messages and tool output.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConfinedPath {
    rel: PathBuf,
    abs: PathBuf,
    display: String,
}

impl ConfinedPath {
    /// The path relative to [`Workspace::base_dir`] (empty for the base itself).
    pub fn rel(&self) -> &Path {
        &self.rel
    }

    /// The absolute path, for tools that walk by name.
    pub fn abs(&self) -> &Path {
        &self.abs
    }

    /// The path as tools print it: relative to the root with `/` separators,
    /// `.` for the root itself, absolute when outside an unconfined root.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// True when this is the root directory itself.
    pub fn is_root(&self) -> bool {
        self.display == "."
    }

    /// The final component, if any.
    pub fn file_name(&self) -> Option<&std::ffi::OsStr> {
        self.rel.file_name()
    }
}

impl fmt::Display for ConfinedPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display)
    }
}

/// The workspace: a root directory and a handle through which every open goes.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    base: Dir,
    base_path: PathBuf,
    confinement: Confinement,
}

/// How many symlinks one resolution may follow before giving up (as Linux does).
const MAX_SYMLINK_HOPS: usize = 40;

impl Workspace {
    /// Opens the workspace at `root`, which must be an existing directory.
    pub fn open(root: impl AsRef<Path>, confinement: Confinement) -> Result<Self, WorkspaceError> {
        let given = root.as_ref();
        let root = std::fs::canonicalize(given).map_err(|source| WorkspaceError::Missing {
            root: given.to_path_buf(),
            source,
        })?;
        let meta = std::fs::metadata(&root).map_err(|source| WorkspaceError::Missing {
            root: given.to_path_buf(),
            source,
        })?;
        if !meta.is_dir() {
            return Err(WorkspaceError::NotADirectory {
                root: given.to_path_buf(),
            });
        }
        let base_path = match confinement {
            Confinement::Confined => root.clone(),
            Confinement::Unconfined => PathBuf::from("/"),
        };
        let base = Dir::open_ambient_dir(&base_path, ambient_authority()).map_err(|source| {
            WorkspaceError::Missing {
                root: given.to_path_buf(),
                source,
            }
        })?;
        Ok(Workspace {
            root,
            base,
            base_path,
            confinement,
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether paths are confined.
    pub fn confinement(&self) -> Confinement {
        self.confinement
    }

    /// The directory handle every [`ConfinedPath::rel`] is relative to: the
    /// root when confined, `/` when not.
    pub fn base_dir(&self) -> &Dir {
        &self.base
    }

    /// The root itself.
    pub fn root_path(&self) -> ConfinedPath {
        self.confined_from_rel(self.rel_of_root())
    }

    fn rel_of_root(&self) -> PathBuf {
        match self.confinement {
            Confinement::Confined => PathBuf::new(),
            Confinement::Unconfined => self
                .root
                .strip_prefix("/")
                .unwrap_or(&self.root)
                .to_path_buf(),
        }
    }

    /// Resolves an optional path: the root when it is absent.
    pub fn resolve_or_root(&self, input: Option<&str>) -> ToolResult<ConfinedPath> {
        match input {
            Some(input) => self.resolve(input),
            None => Ok(self.root_path()),
        }
    }

    /// Resolves an optional directory (the root when absent) and checks that
    /// it is one: a file is `not_a_file`, with `advice` ending the message.
    pub fn resolve_dir(&self, input: Option<&str>, advice: &str) -> ToolResult<ConfinedPath> {
        let path = self.resolve_or_root(input)?;
        if !self.metadata(&path)?.is_dir() {
            return Err(ToolError::new(
                ErrorCode::NotAFile,
                format!("{}: is a file, not a directory; {advice}", path.display),
            ));
        }
        Ok(path)
    }

    /// Resolves a caller's path (relative to the root, or absolute).
    pub fn resolve(&self, input: &str) -> ToolResult<ConfinedPath> {
        if input.contains('\0') {
            return Err(ToolError::invalid_input("path contains a NUL byte"));
        }
        let input_path = Path::new(input);
        match self.confinement {
            Confinement::Unconfined => {
                let abs = if input_path.is_absolute() {
                    input_path.to_path_buf()
                } else {
                    self.root.join(input_path)
                };
                let mut parts: Vec<OsString> = Vec::new();
                for component in abs.components() {
                    match component {
                        Component::Normal(name) => parts.push(name.to_os_string()),
                        Component::ParentDir => {
                            parts.pop();
                        }
                        _ => {}
                    }
                }
                Ok(self.confined_from_rel(parts.iter().collect()))
            }
            Confinement::Confined => self.resolve_confined(input, input_path),
        }
    }

    fn resolve_confined(&self, input: &str, input_path: &Path) -> ToolResult<ConfinedPath> {
        let relative: PathBuf = if input_path.is_absolute() {
            match input_path.strip_prefix(&self.root) {
                Ok(rest) => rest.to_path_buf(),
                Err(_) => {
                    return Err(escape(input, "is outside the workspace root"));
                }
            }
        } else {
            input_path.to_path_buf()
        };

        let mut pending: VecDeque<OsString> = VecDeque::new();
        for component in relative.components() {
            match component {
                Component::Normal(name) => pending.push_back(name.to_os_string()),
                Component::ParentDir => pending.push_back("..".into()),
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => {}
            }
        }

        let mut resolved: Vec<OsString> = Vec::new();
        let mut missing = false;
        let mut hops = 0usize;
        while let Some(part) = pending.pop_front() {
            if part == ".." {
                if resolved.pop().is_none() {
                    return Err(escape(input, "climbs above the workspace root with `..`"));
                }
                continue;
            }
            if part == "." {
                continue;
            }
            resolved.push(part);
            if missing {
                continue;
            }
            let here = self.base_path.join(resolved.iter().collect::<PathBuf>());
            let meta = match std::fs::symlink_metadata(&here) {
                Ok(meta) => meta,
                Err(_) => {
                    // Missing (or under a file): the rest is judged by name only;
                    // the open itself will report not_found / not_a_file.
                    missing = true;
                    continue;
                }
            };
            if !meta.file_type().is_symlink() {
                continue;
            }
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Err(ToolError::new(
                    ErrorCode::IoError,
                    format!("{input}: too many levels of symbolic links"),
                ));
            }
            let target = std::fs::read_link(&here)
                .map_err(|err| ToolError::from_io(&err, Path::new(input)))?;
            if std::fs::metadata(&here).is_err() {
                return Err(escape(
                    input,
                    &format!("is a dangling symlink (it points to {})", target.display()),
                ));
            }
            resolved.pop();
            let mut replacement: Vec<OsString> = Vec::new();
            if target.is_absolute() {
                let canonical_target =
                    std::fs::canonicalize(&target).unwrap_or_else(|_| target.clone());
                let inside = target
                    .strip_prefix(&self.root)
                    .ok()
                    .map(Path::to_path_buf)
                    .or_else(|| {
                        canonical_target
                            .strip_prefix(&self.root)
                            .ok()
                            .map(Path::to_path_buf)
                    });
                let Some(inside) = inside else {
                    return Err(escape(
                        input,
                        &format!(
                            "goes through a symlink to {}, outside the workspace root",
                            target.display()
                        ),
                    ));
                };
                resolved.clear();
                for component in inside.components() {
                    if let Component::Normal(name) = component {
                        replacement.push(name.to_os_string());
                    } else if component == Component::ParentDir {
                        replacement.push("..".into());
                    }
                }
            } else {
                for component in target.components() {
                    match component {
                        Component::Normal(name) => replacement.push(name.to_os_string()),
                        Component::ParentDir => replacement.push("..".into()),
                        _ => {}
                    }
                }
            }
            for part in replacement.into_iter().rev() {
                pending.push_front(part);
            }
            // A `..` inside a link target that climbs above the root is an escape
            // through the link, not through the caller's own `..`.
            let mut depth = resolved.len() as isize;
            for part in &pending {
                if part == ".." {
                    depth -= 1;
                    if depth < 0 {
                        return Err(escape(
                            input,
                            &format!(
                                "goes through a symlink to {}, outside the workspace root",
                                target.display()
                            ),
                        ));
                    }
                } else {
                    depth += 1;
                }
            }
        }
        Ok(self.confined_from_rel(resolved.iter().collect()))
    }

    fn confined_from_rel(&self, rel: PathBuf) -> ConfinedPath {
        let abs = self.base_path.join(&rel);
        let display = self.display_abs(&abs);
        ConfinedPath { rel, abs, display }
    }

    /// How a path under the root is printed: relative with `/`, `.` for the root.
    pub fn display_abs(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.root) {
            Ok(rest) if rest.as_os_str().is_empty() => ".".to_string(),
            Ok(rest) => slash_path(rest),
            Err(_) => abs.to_string_lossy().into_owned(),
        }
    }

    fn rel_or_dot<'a>(&self, path: &'a ConfinedPath) -> &'a Path {
        if path.rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &path.rel
        }
    }

    /// Opens a file for reading through the directory handle.
    pub fn open_file(&self, path: &ConfinedPath) -> ToolResult<std::fs::File> {
        self.base
            .open(self.rel_or_dot(path))
            .map(cap_std::fs::File::into_std)
            .map_err(|err| self.io_error(&err, path))
    }

    /// Metadata, following symlinks, through the directory handle.
    pub fn metadata(&self, path: &ConfinedPath) -> ToolResult<cap_std::fs::Metadata> {
        self.base
            .metadata(self.rel_or_dot(path))
            .map_err(|err| self.io_error(&err, path))
    }

    /// Metadata of the path itself (a symlink is not followed).
    pub fn symlink_metadata(&self, path: &ConfinedPath) -> ToolResult<cap_std::fs::Metadata> {
        self.base
            .symlink_metadata(self.rel_or_dot(path))
            .map_err(|err| self.io_error(&err, path))
    }

    /// Opens a directory through the handle.
    pub fn open_dir(&self, path: &ConfinedPath) -> ToolResult<Dir> {
        self.base
            .open_dir(self.rel_or_dot(path))
            .map_err(|err| self.io_error(&err, path))
    }

    /// The parent directory of `path`, opened, and the final name within it.
    /// This is what a writer needs to create a temporary file beside the
    /// target and rename it over, all beneath the handle.
    pub fn open_parent(&self, path: &ConfinedPath) -> ToolResult<(Dir, OsString)> {
        let Some(name) = path.rel.file_name() else {
            return Err(ToolError::new(
                ErrorCode::NotAFile,
                format!("{}: is a directory", path.display),
            ));
        };
        let parent = path.rel.parent().unwrap_or(Path::new(""));
        let parent_path = self.confined_from_rel(parent.to_path_buf());
        let dir = self.open_dir(&parent_path).map_err(|err| {
            if err.code() == ErrorCode::NotFound {
                ToolError::new(
                    ErrorCode::NotFound,
                    format!(
                        "{}: parent directory {} does not exist",
                        path.display, parent_path.display
                    ),
                )
            } else {
                err
            }
        })?;
        Ok((dir, name.to_os_string()))
    }

    /// Maps an error from an operation on `path`, recognising the directory
    /// handle's refusal to leave the root as `path_escape`.
    pub fn io_error(&self, err: &io::Error, path: &ConfinedPath) -> ToolError {
        if is_escape_error(err) {
            return escape(&path.display, "resolves outside the workspace root");
        }
        if err.raw_os_error() == Some(40) {
            // ELOOP from a final-component symlink opened without following.
            return ToolError::new(
                ErrorCode::IoError,
                format!("{}: too many levels of symbolic links", path.display),
            );
        }
        ToolError::from_io(err, Path::new(&path.display))
    }
}

/// True for the error the directory handle returns when a path would leave it.
pub fn is_escape_error(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::PermissionDenied
        && err.to_string().contains("outside of the filesystem")
}

fn escape(input: &str, why: &str) -> ToolError {
    ToolError::new(ErrorCode::PathEscape, format!("{input}: {why}"))
}

/// A relative path with `/` separators, lossy for non-UTF-8 names.
pub fn slash_path(path: &Path) -> String {
    let mut out = String::new();
    for component in path.components() {
        if let Component::Normal(name) = component {
            if !out.is_empty() {
                out.push('/');
            }
            out.push_str(&name.to_string_lossy());
        }
    }
    if out.is_empty() { ".".to_string() } else { out }
}

#[cfg(test)]
mod tests;
