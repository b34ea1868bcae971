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

use std::borrow::Cow;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use nix::errno::Errno;

mod fence;
pub use fence::{DirId, Fence, MAX_CLIMB, first_met};

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
    names_directory: bool,
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

    /// True when the caller spelled the path with a trailing `/` (or `/.`):
    /// it then names a directory, as in POSIX. Resolution already refuses
    /// such a path when it exists and is not a directory; a path that does
    /// not exist yet keeps the mark, so a writer can refuse to create a file
    /// under a name meant as a directory.
    pub fn names_directory(&self) -> bool {
        self.names_directory
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
    /// The root as the caller spelled it (absolute, lexically normalised),
    /// when that differs from the canonical root: a root given through a
    /// symlink accepts absolute paths in either spelling.
    given_root: Option<PathBuf>,
    base: Dir,
    base_path: PathBuf,
    confinement: Confinement,
    /// The root directory's identity, taken from the handle when it opened.
    root_id: DirId,
    /// Directories beneath the root that nothing is written through this
    /// workspace in (see [`Workspace::fence_off`]); set once.
    fences: OnceLock<Vec<Fence>>,
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
        let given_root = std::path::absolute(given)
            .ok()
            .map(|abs| lexical_normal(&abs))
            .filter(|abs| *abs != root);
        // Confined, the handle is the root: its identity is exactly the
        // directory every path is opened beneath.
        let root_id = match confinement {
            Confinement::Confined => DirId::of(&base).unwrap_or_else(|_| DirId::of_std(&meta)),
            Confinement::Unconfined => DirId::of_std(&meta),
        };
        Ok(Workspace {
            root,
            given_root,
            base,
            base_path,
            confinement,
            root_id,
            fences: OnceLock::new(),
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root as given when it differs from [`root`](Self::root) (a root
    /// reached through a symlink); absolute paths may use either spelling.
    pub fn given_root(&self) -> Option<&Path> {
        self.given_root.as_deref()
    }

    /// `abs` relative to the root, in either spelling of the root.
    pub fn strip_root<'a>(&self, abs: &'a Path) -> Option<&'a Path> {
        abs.strip_prefix(&self.root).ok().or_else(|| {
            self.given_root
                .as_deref()
                .and_then(|given| abs.strip_prefix(given).ok())
        })
    }

    /// Whether paths are confined.
    pub fn confinement(&self) -> Confinement {
        self.confinement
    }

    /// The root directory's identity (device and inode).
    pub fn root_id(&self) -> DirId {
        self.root_id
    }

    /// Marks directories beneath the root that nothing may be written in
    /// through this workspace: every directory a write opens to create,
    /// replace, rename or remove an entry in ([`open_parent`],
    /// [`open_dir_to_write`], [`create_dir_all`]) is walked up from its
    /// handle, and one that lies in a fenced directory before the root is
    /// met is refused (`path_escape`), however the path was spelled and
    /// whatever was swapped in after it was resolved. Set once, right
    /// after opening; a second call changes nothing and gives the fences
    /// back. Without fences no walk is made.
    ///
    /// [`open_parent`]: Self::open_parent
    /// [`open_dir_to_write`]: Self::open_dir_to_write
    /// [`create_dir_all`]: Self::create_dir_all
    pub fn fence_off(&self, fences: Vec<Fence>) -> Result<(), Vec<Fence>> {
        self.fences.set(fences)
    }

    /// The fences set by [`fence_off`](Self::fence_off) (none by default).
    pub fn fences(&self) -> &[Fence] {
        self.fences.get().map_or(&[], Vec::as_slice)
    }

    /// The entry `name` of the directory `parent` (already resolved), the
    /// name taken as it is: a symlink there is the entry itself, not what
    /// it points to. For tools that act on an entry (delete, move, rename).
    /// `name` must be one plain name (no `/`, not `.` or `..`).
    pub fn entry(&self, parent: &ConfinedPath, name: &std::ffi::OsStr) -> ToolResult<ConfinedPath> {
        let mut components = Path::new(name).components();
        match (components.next(), components.next()) {
            (Some(Component::Normal(only)), None) if only == name => {}
            _ => {
                return Err(ToolError::invalid_input(format!(
                    "{}: not a plain name of an entry",
                    quote_os(name)
                )));
            }
        }
        Ok(self.confined_from_rel(parent.rel.join(name)))
    }

    /// `path`, resolved by another workspace, as a path of this one, when
    /// its resolved location lies under this root. Nothing is looked up
    /// again: the location is already free of `..` and of the symlinks
    /// seen when it was resolved, and every open beneath this root's handle
    /// checks the rest.
    pub fn adopt(&self, path: &ConfinedPath) -> Option<ConfinedPath> {
        path.abs.strip_prefix(&self.root).ok()?;
        let rel = path.abs.strip_prefix(&self.base_path).ok()?.to_path_buf();
        let mut adopted = self.confined_from_rel(rel);
        adopted.names_directory = path.names_directory;
        Some(adopted)
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
        let names_directory = input.ends_with('/') || input.ends_with("/.");
        let mut path = match self.confinement {
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
                self.confined_from_rel(parts.iter().collect())
            }
            Confinement::Confined => self.resolve_confined(input, input_path)?,
        };
        if names_directory && !path.is_root() {
            // POSIX: `a.txt/` is not `a.txt`. An existing non-directory is
            // refused here; a missing one keeps the mark for the writers.
            if let Ok(meta) = self.base.metadata(&path.rel)
                && !meta.is_dir()
            {
                return Err(ToolError::new(
                    ErrorCode::NotAFile,
                    format!(
                        "{}: not a directory (a trailing / names a directory)",
                        quote_text(input)
                    ),
                ));
            }
            path.names_directory = true;
        }
        Ok(path)
    }

    fn resolve_confined(&self, input: &str, input_path: &Path) -> ToolResult<ConfinedPath> {
        let relative: PathBuf = if input_path.is_absolute() {
            match self.strip_root(input_path) {
                Some(rest) => rest.to_path_buf(),
                None => {
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
        // How many components `resolved` held when one was found missing:
        // what follows is judged by name only, until `..` climbs back above
        // the missing one (then the walk looks at the disk again, so
        // `missing/../link` follows `link` as any other spelling would).
        let mut missing_at: Option<usize> = None;
        // Whether the last resolved component exists and is not a directory:
        // `..` after it is ENOTDIR in POSIX, not a lexical step back.
        let mut last_is_non_dir = false;
        let mut hops = 0usize;
        while let Some(part) = pending.pop_front() {
            if part == ".." {
                if last_is_non_dir {
                    return Err(ToolError::new(
                        ErrorCode::NotAFile,
                        format!(
                            "{}: not a directory ({} is a file, so `..` cannot follow it)",
                            quote_text(input),
                            quote_os(&resolved.iter().collect::<PathBuf>().into_os_string())
                        ),
                    ));
                }
                if resolved.pop().is_none() {
                    return Err(escape(input, "climbs above the workspace root with `..`"));
                }
                if missing_at.is_some_and(|at| resolved.len() < at) {
                    missing_at = None;
                }
                continue;
            }
            if part == "." {
                continue;
            }
            resolved.push(part);
            if missing_at.is_some() {
                continue;
            }
            let here = self.base_path.join(resolved.iter().collect::<PathBuf>());
            let meta = match std::fs::symlink_metadata(&here) {
                Ok(meta) => meta,
                Err(_) => {
                    // Missing (or under a file): the rest is judged by name only;
                    // the open itself will report not_found / not_a_file.
                    missing_at = Some(resolved.len());
                    continue;
                }
            };
            if !meta.file_type().is_symlink() {
                last_is_non_dir = !meta.is_dir();
                continue;
            }
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Err(loop_error(input));
            }
            let target = std::fs::read_link(&here)
                .map_err(|err| ToolError::from_io(&err, Path::new(input)))?;
            if let Err(err) = std::fs::metadata(&here) {
                if is_loop_error(&err) {
                    return Err(loop_error(input));
                }
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
                let inside = self.strip_root(&target).map(Path::to_path_buf).or_else(|| {
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
        ConfinedPath {
            rel,
            abs,
            display,
            names_directory: false,
        }
    }

    /// How a path under the root is printed: relative with `/`, `.` for the root.
    pub fn display_abs(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.root) {
            Ok(rest) if rest.as_os_str().is_empty() => ".".to_string(),
            Ok(rest) => slash_path(rest),
            Err(_) => quote_os(abs.as_os_str()),
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

    /// Opens a directory to create, replace or remove entries in: as
    /// [`open_dir`](Self::open_dir), then refused when the directory
    /// opened lies in a fenced one (see [`fence_off`](Self::fence_off)).
    pub fn open_dir_to_write(&self, path: &ConfinedPath) -> ToolResult<Dir> {
        let dir = self.open_dir(path)?;
        self.check_fences(&dir, path)?;
        Ok(dir)
    }

    /// Refuses `dir` (opened for `path`) when walking up from it meets a
    /// fenced directory before the root.
    fn check_fences(&self, dir: &Dir, path: &ConfinedPath) -> ToolResult<()> {
        let fences = self.fences();
        if fences.is_empty() {
            return Ok(());
        }
        let marks: Vec<DirId> = std::iter::once(self.root_id)
            .chain(fences.iter().map(Fence::id))
            .collect();
        match first_met(dir, &marks) {
            Ok(Some(0)) => Ok(()),
            Ok(Some(index)) => Err(ToolError::new(
                ErrorCode::PathEscape,
                format!(
                    "{}: lies in {}, which is read-only; nothing was changed (write beneath a \
                     read-write directory)",
                    quote_os(path.abs.as_os_str()),
                    fences[index - 1].label()
                ),
            )),
            // Outside the root: only an unconfined workspace writes there.
            Ok(None) if self.confinement == Confinement::Unconfined => Ok(()),
            Ok(None) => Err(escape(
                &path.display,
                "is no longer inside the workspace root (a directory on the way was moved)",
            )),
            Err(err) => Err(self.io_error(&err, path)),
        }
    }

    /// mkdir -p of `path`. Each missing directory is made by name in the
    /// directory above it, which is opened beneath the handle and checked
    /// against the fences first, so nothing is made in a fenced directory
    /// whatever was swapped in after resolution. Answers the directories
    /// it made, outermost first (none when all existed), so a caller whose
    /// next step fails can take them away again
    /// ([`remove_made_dirs`](Self::remove_made_dirs)); on its own failure
    /// it takes them away itself. A file on the way is `not_a_file`.
    pub fn create_dir_all(&self, path: &ConfinedPath) -> ToolResult<Vec<ConfinedPath>> {
        let mut made = Vec::new();
        let result = self.create_dirs_into(path, &mut made);
        if result.is_err() {
            self.remove_made_dirs(&made);
            made.clear();
        }
        result.map(|()| made)
    }

    fn create_dirs_into(
        &self,
        path: &ConfinedPath,
        made: &mut Vec<ConfinedPath>,
    ) -> ToolResult<()> {
        let not_a_dir = |at: &ConfinedPath| {
            ToolError::new(
                ErrorCode::NotAFile,
                format!(
                    "{}: cannot be made a directory; {} is not a directory",
                    path.display, at.display
                ),
            )
        };
        let mut here = PathBuf::new();
        for name in path.rel.iter() {
            let parent = self.confined_from_rel(here.clone());
            here.push(name);
            let child = self.confined_from_rel(here.clone());
            match self.base.metadata(&child.rel) {
                Ok(meta) if meta.is_dir() => continue,
                Ok(_) => return Err(not_a_dir(&child)),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => return Err(self.io_error(&err, &child)),
            }
            let dir = self.open_dir_to_write(&parent)?;
            match dir.create_dir(name) {
                Ok(()) => made.push(child),
                // Made meanwhile by someone else: fine if it is a directory.
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                    if !dir.metadata(name).is_ok_and(|meta| meta.is_dir()) {
                        return Err(not_a_dir(&child));
                    }
                }
                Err(err) => return Err(self.io_error(&err, &child)),
            }
        }
        Ok(())
    }

    /// Takes away directories [`create_dir_all`](Self::create_dir_all)
    /// made, innermost first, each only while it is still empty. Best
    /// effort: what cannot be removed stays.
    pub fn remove_made_dirs(&self, made: &[ConfinedPath]) {
        for dir in made.iter().rev() {
            let _ = self.base.remove_dir(&dir.rel);
        }
    }

    /// The parent directory of `path`, opened, and the final name within it.
    /// This is what a writer needs to create a temporary file beside the
    /// target and rename it over, all beneath the handle; the directory is
    /// checked against the fences ([`fence_off`](Self::fence_off)).
    pub fn open_parent(&self, path: &ConfinedPath) -> ToolResult<(Dir, OsString)> {
        let Some(name) = path.rel.file_name() else {
            return Err(ToolError::new(
                ErrorCode::NotAFile,
                format!("{}: is a directory", path.display),
            ));
        };
        let parent = path.rel.parent().unwrap_or(Path::new(""));
        let parent_path = self.confined_from_rel(parent.to_path_buf());
        let dir = self.open_dir_to_write(&parent_path).map_err(|err| {
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
        if is_loop_error(err) {
            // ELOOP: a loop, or a symlink swapped in where resolution saw
            // none (the opens do not follow a final symlink).
            return ToolError::new(
                ErrorCode::IoError,
                format!(
                    "{}: a symlink loop, or a symlink that appeared after the path was checked",
                    path.display
                ),
            );
        }
        if errno_of(err) == Some(Errno::ENAMETOOLONG) {
            return ToolError::new(
                ErrorCode::IoError,
                format!(
                    "{}: the path is longer than the system allows for one call ({} bytes); reach it in steps, e.g. with bash and cd",
                    path.display,
                    path.rel.as_os_str().len()
                ),
            );
        }
        ToolError::from_io(err, Path::new(&path.display))
    }

    /// Opens a regular file for reading, refusing anything else before it
    /// could block: the type is checked without following a symlink, then
    /// the file is opened non-blocking and without following a final
    /// symlink, and the opened descriptor is checked again (a FIFO or device
    /// swapped in between is refused, never read). A directory is
    /// `not_a_file` with `dir_advice` appended.
    pub fn open_regular(
        &self,
        path: &ConfinedPath,
        dir_advice: &str,
    ) -> ToolResult<(std::fs::File, std::fs::Metadata)> {
        let refuse = |kind: FileKind| {
            let advice = if kind == FileKind::Directory {
                format!("; {dir_advice}")
            } else {
                String::new()
            };
            ToolError::new(
                ErrorCode::NotAFile,
                format!("{}: is {}, not a regular file{advice}", path.display, kind),
            )
        };
        if !path.is_root() {
            let kind = FileKind::of(self.symlink_metadata(path)?.file_type());
            if kind != FileKind::Regular && kind != FileKind::Symlink {
                return Err(refuse(kind));
            }
        }
        match open_regular_at(&self.base, self.rel_or_dot(path)) {
            Ok(opened) => Ok(opened),
            Err(OpenRegularError::NotRegular(kind)) => Err(refuse(kind)),
            Err(OpenRegularError::Io(err)) => Err(self.io_error(&err, path)),
        }
    }
}

/// What kind of filesystem object a path is, for messages and refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link (seen only when not following).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
}

impl FileKind {
    /// The kind of `file_type`.
    pub fn of(file_type: impl Into<FileTypeView>) -> FileKind {
        let view = file_type.into();
        view.0
    }
}

/// A file type from std or cap-std, reduced to a [`FileKind`].
#[derive(Debug, Clone, Copy)]
pub struct FileTypeView(FileKind);

impl From<std::fs::FileType> for FileTypeView {
    fn from(t: std::fs::FileType) -> Self {
        use std::os::unix::fs::FileTypeExt;
        FileTypeView(kind_from_flags(
            t.is_file(),
            t.is_dir(),
            t.is_symlink(),
            t.is_fifo(),
            t.is_socket(),
            t.is_char_device(),
        ))
    }
}

impl From<cap_std::fs::FileType> for FileTypeView {
    fn from(t: cap_std::fs::FileType) -> Self {
        use cap_std::fs::FileTypeExt;
        FileTypeView(kind_from_flags(
            t.is_file(),
            t.is_dir(),
            t.is_symlink(),
            t.is_fifo(),
            t.is_socket(),
            t.is_char_device(),
        ))
    }
}

fn kind_from_flags(
    file: bool,
    dir: bool,
    symlink: bool,
    fifo: bool,
    socket: bool,
    char_device: bool,
) -> FileKind {
    if file {
        FileKind::Regular
    } else if dir {
        FileKind::Directory
    } else if symlink {
        FileKind::Symlink
    } else if fifo {
        FileKind::Fifo
    } else if socket {
        FileKind::Socket
    } else if char_device {
        FileKind::CharDevice
    } else {
        FileKind::BlockDevice
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Regular => "a regular file",
            FileKind::Directory => "a directory",
            FileKind::Symlink => "a symlink",
            FileKind::Fifo => "a named pipe (FIFO)",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
        })
    }
}

/// Why [`open_regular_at`] did not give a file.
#[derive(Debug)]
pub enum OpenRegularError {
    /// The path is there but is not a regular file.
    NotRegular(FileKind),
    /// The open (or the check of what it opened) failed.
    Io(io::Error),
}

/// Opens `path` beneath `dir` for reading if it is a regular file. The open
/// is non-blocking (a FIFO or device cannot hang it), does not follow a
/// final symlink (one is reported as [`FileKind::Symlink`]), and the opened
/// descriptor's own type decides: what was checked is what is read.
pub fn open_regular_at(
    dir: &Dir,
    path: &Path,
) -> Result<(std::fs::File, std::fs::Metadata), OpenRegularError> {
    use cap_std::fs::{OpenOptions, OpenOptionsExt};
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY);
    let file = match dir.open_with(path, &options) {
        Ok(file) => file.into_std(),
        Err(err) if is_loop_error(&err) => {
            // O_NOFOLLOW on a final symlink.
            return Err(OpenRegularError::NotRegular(FileKind::Symlink));
        }
        Err(err) => return Err(OpenRegularError::Io(err)),
    };
    let meta = file.metadata().map_err(OpenRegularError::Io)?;
    let kind = FileKind::of(meta.file_type());
    if kind != FileKind::Regular {
        return Err(OpenRegularError::NotRegular(kind));
    }
    Ok((file, meta))
}

/// The errno behind an I/O error, typed.
fn errno_of(err: &io::Error) -> Option<Errno> {
    err.raw_os_error().map(Errno::from_raw)
}

/// True for ELOOP: a symlink loop, or a final symlink met with O_NOFOLLOW.
pub fn is_loop_error(err: &io::Error) -> bool {
    errno_of(err) == Some(Errno::ELOOP)
}

fn loop_error(input: &str) -> ToolError {
    ToolError::new(
        ErrorCode::IoError,
        format!(
            "{}: a symlink loop (too many levels of symbolic links)",
            quote_text(input)
        ),
    )
}

/// True for the error the directory handle returns when a path would leave it.
pub fn is_escape_error(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::PermissionDenied
        && err.to_string().contains("outside of the filesystem")
}

fn escape(input: &str, why: &str) -> ToolError {
    ToolError::new(
        ErrorCode::PathEscape,
        format!("{}: {why}", quote_text(input)),
    )
}

/// A relative path with `/` separators, quoted by [`quote_text`]'s rule when
/// it needs to be (non-UTF-8 bytes show as `\xNN` inside the quotes).
pub fn slash_path(path: &Path) -> String {
    let mut out = std::ffi::OsString::new();
    for component in path.components() {
        if let Component::Normal(name) = component {
            if !out.is_empty() {
                out.push("/");
            }
            out.push(name);
        }
    }
    if out.is_empty() {
        ".".to_string()
    } else {
        quote_os(&out)
    }
}

/// How a path or name is printed when it comes from the filesystem. Names
/// are printed as they are unless they could be misread: one holding a
/// control character (a newline could forge an output line), a Unicode
/// format or bidirectional control (which reorders what is shown), a `:`
/// (grep's field separator), ` -> ` (list_dir's symlink arrow), or starting
/// with `"`, `[` or `(` (the quote itself, and the notes and footers the
/// tools print) is printed as a JSON string: in double quotes, with `\"`,
/// `\\`, `\n`, `\t`, `\r` and `\uXXXX` escapes. That spelling can be
/// pasted as the JSON value of a `path` argument to reach the same file.
pub fn quote_text(text: &str) -> Cow<'_, str> {
    let risky = text.starts_with(['"', '[', '('])
        || text.contains(':')
        || text.contains(" -> ")
        || text.chars().any(needs_escape);
    if !risky {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        push_escaped(&mut out, ch);
    }
    out.push('"');
    Cow::Owned(out)
}

/// [`quote_text`] for a name that may not be UTF-8: such a name is always
/// quoted, its invalid bytes written `\xNN` (not valid JSON: no file tool
/// can address such a name, so it is shown for the record only).
pub fn quote_os(name: &std::ffi::OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    if let Some(text) = name.to_str() {
        return quote_text(text).into_owned();
    }
    let mut out = String::from("\"");
    for chunk in name.as_bytes().utf8_chunks() {
        for ch in chunk.valid().chars() {
            push_escaped(&mut out, ch);
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out.push('"');
    out
}

fn needs_escape(ch: char) -> bool {
    ch.is_control()
        || matches!(ch,
            '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

fn push_escaped(out: &mut String, ch: char) {
    match ch {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        ch if needs_escape(ch) => {
            let mut units = [0u16; 2];
            for unit in ch.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
        ch => out.push(ch),
    }
}

/// `path` with `.` and `..` applied by name (for the root as given).
fn lexical_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests;
