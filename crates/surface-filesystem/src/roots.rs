//! The allowed directories of the surface: one engine (workspace, file
//! tools, locks) per directory, and the one rule that maps a path given by
//! the model to the directory it falls in.

use std::path::Path;
use std::sync::{Arc, RwLock};

use agent_tools::{AllowedRoot, Config, ErrorCode, StartupError, Surface, ToolError, ToolResult};
use agent_tools_confine::{ConfinedPath, DirId, Fence, Workspace, first_met};
use agent_tools_surface_default::{DefaultSurface, Services};

/// What a call is about to do beneath the path it resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Read only (dry runs included).
    Read,
    /// Create, change or remove something.
    Write,
}

/// One allowed directory with its engine.
#[derive(Debug)]
pub struct Root {
    services: Services,
    writable: bool,
}

impl Root {
    fn open(config: &Config, root: &AllowedRoot) -> Result<Root, StartupError> {
        Ok(Root {
            services: DefaultSurface.open(&config.for_root(root))?,
            writable: root.writable(),
        })
    }

    /// The engine of this directory.
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// Its confined workspace.
    pub fn workspace(&self) -> &Workspace {
        self.services.files().workspace()
    }

    /// Whether writes beneath it are allowed.
    pub fn writable(&self) -> bool {
        self.writable
    }

    /// How a path beneath this directory is shown: absolute, under the
    /// directory as it was given (not its canonical spelling).
    pub fn shown(&self, path: &ConfinedPath) -> String {
        let workspace = self.workspace();
        let full = match (workspace.given_root(), workspace.strip_root(path.abs())) {
            (Some(given), Some(rel)) => given.join(rel),
            _ => path.abs().to_path_buf(),
        };
        // Rebuilt from its components: no trailing `/` on a directory.
        full.components()
            .collect::<std::path::PathBuf>()
            .display()
            .to_string()
    }

    /// The directory itself, as shown.
    pub fn shown_root(&self) -> String {
        self.shown(&self.workspace().root_path())
    }
}

/// Every allowed directory, the first being where relative paths are taken
/// from. The set can be replaced while the server runs (when a client
/// announces its roots); a call keeps the set it started with.
#[derive(Debug)]
pub struct Roots {
    current: RwLock<Arc<[Arc<Root>]>>,
    /// The configuration every directory's engine is opened with.
    config: Config,
}

impl Roots {
    /// Opens an engine for every allowed directory of `config`. Each
    /// writable directory's workspace is fenced off from the read-only
    /// ones (`Workspace::fence_off`): every directory a write through it
    /// opens is walked up from its handle, and one that lies in a
    /// read-only directory is refused, whatever name reached it.
    pub fn open(config: &Config) -> Result<Roots, StartupError> {
        let roots = config
            .roots()
            .iter()
            .map(|root| Root::open(config, root).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        fence(&roots);
        Ok(Roots {
            current: RwLock::new(roots.into()),
            config: config.clone(),
        })
    }

    /// The configuration the server was started with (limits, read-only
    /// mode, launcher).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The allowed directories now, in order.
    pub fn list(&self) -> Arc<[Arc<Root>]> {
        match self.current.read() {
            Ok(current) => Arc::clone(&current),
            // A panic while replacing the set left it whole (the swap is
            // one assignment); keep serving it.
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Replaces the allowed directories (with those a client announced).
    /// All of them are opened first: on any failure nothing changes.
    pub fn replace(&self, roots: &[AllowedRoot]) -> Result<(), StartupError> {
        let opened = roots
            .iter()
            .map(|root| Root::open(&self.config, root).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        fence(&opened);
        let mut current = match self.current.write() {
            Ok(current) => current,
            Err(poisoned) => poisoned.into_inner(),
        };
        *current = opened.into();
        Ok(())
    }

    /// The first allowed directory (where relative paths are taken from;
    /// where commands run by default).
    pub fn first(&self) -> ToolResult<Arc<Root>> {
        self.list().first().cloned().ok_or_else(no_roots)
    }

    /// The directory `raw` falls in and the path confined beneath it.
    ///
    /// The path is first resolved beneath a directory that accepts its
    /// spelling (the first one for a relative path; for an absolute one,
    /// one whose path it starts with and out of which it does not lead):
    /// symlinks followed and `..` applied step by step on the disk, which
    /// gives where the file really is. That location then belongs to the
    /// innermost allowed directory holding it, and that directory's access
    /// decides: a read-only directory nested in a writable one stays
    /// read-only whether it is reached by its own path, a relative path, a
    /// `..` or a symlink in the outer one. A path in no allowed directory
    /// is `path_escape`, as is a write beneath a read-only one. What is
    /// swapped in after this check is caught when the write opens its
    /// directory (see [`Roots::open`]: the fences).
    pub fn resolve(&self, raw: &str, need: Need) -> ToolResult<(Arc<Root>, ConfinedPath)> {
        let roots = self.list();
        if roots.is_empty() {
            return Err(no_roots());
        }
        let (holder, path) = locate(&roots, raw)?;
        let (root, path) = owner(&roots, holder, path);
        allows(&root, raw, need)?;
        Ok((root, path))
    }

    /// The entry `raw` names, for a tool that removes or renames it: the
    /// directory holding it is resolved as [`resolve`](Self::resolve)
    /// resolves any path (so its owner and that owner's access decide), and
    /// the last name is taken as it is, never followed (a symlink is the
    /// entry itself). A path without a last name (ending in `..`, or `/`)
    /// names a directory by climbing: an allowed directory itself is
    /// refused as such, anything else must be named by its own name.
    /// Whether the entry is (or holds) an allowed directory is for
    /// [`refuse_roots`](Self::refuse_roots) to say, once it is looked at.
    pub fn resolve_entry(&self, raw: &str, need: Need) -> ToolResult<(Arc<Root>, ConfinedPath)> {
        let given = Path::new(raw);
        let Some(name) = given.file_name() else {
            let (_, path) = self.resolve(raw, Need::Read)?;
            return Err(if path.is_root() {
                root_refused(raw)
            } else {
                ToolError::invalid_input(format!(
                    "{raw}: name the entry itself (the path ends in `..`)"
                ))
            });
        };
        let parent = match given.parent().and_then(Path::to_str) {
            Some(parent) if !parent.is_empty() => parent,
            // A bare relative name lies in the first directory.
            _ => ".",
        };
        let (root, parent) = match self.resolve(parent, Need::Read) {
            Ok(found) => found,
            // The parent of an allowed directory may lie outside them all
            // (or in a read-only one): then the entry is the directory.
            Err(err) => {
                return Err(match self.resolve(raw, Need::Read) {
                    Ok((_, path)) if path.is_root() => root_refused(raw),
                    _ => err,
                });
            }
        };
        allows(&root, raw, need)?;
        let entry = root.workspace().entry(&parent, name)?;
        Ok((root, entry))
    }

    /// Refuses to remove or rename the directory `id` (named `raw`) when it
    /// is an allowed directory itself, or holds one: deleting or moving it
    /// would take that directory (and a read-only one's files) with it. Asked
    /// of the directories themselves, by device and inode, walking up from
    /// each allowed directory's own handle, so no spelling gets past it.
    pub fn refuse_roots(&self, raw: &str, id: DirId) -> ToolResult<()> {
        for root in self.list().iter() {
            let workspace = root.workspace();
            if workspace.root_id() == id {
                return Err(root_refused(raw));
            }
            let dir = workspace.open_dir(&workspace.root_path())?;
            let held =
                first_met(&dir, &[id]).map_err(|err| ToolError::from_io(&err, workspace.root()))?;
            if held.is_some() {
                return Err(ToolError::new(
                    ErrorCode::PathEscape,
                    format!(
                        "{raw}: holds the allowed directory {}; it cannot be moved or deleted \
                         (move or delete what is inside it instead)",
                        root.shown_root()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Refuses a write beneath a read-only directory.
fn allows(root: &Root, raw: &str, need: Need) -> ToolResult<()> {
    if need == Need::Write && !root.writable() {
        return Err(ToolError::new(
            ErrorCode::PathEscape,
            format!(
                "{raw}: lies in {}, which is read-only; write beneath a read-write directory \
                 (see list_allowed_directories)",
                root.shown_root()
            ),
        ));
    }
    Ok(())
}

/// A directory that accepts the spelling of `raw`, and the path resolved
/// beneath it. All directories that accept it resolve it to the same place
/// (resolution walks the disk), so the first one will do.
fn locate<'a>(roots: &'a [Arc<Root>], raw: &str) -> ToolResult<(&'a Arc<Root>, ConfinedPath)> {
    let first = roots.first().ok_or_else(no_roots)?;
    if !Path::new(raw).is_absolute() {
        return Ok((first, first.workspace().resolve(raw)?));
    }
    let mut refusal = None;
    for root in roots {
        match root.workspace().resolve(raw) {
            Ok(path) => return Ok((root, path)),
            // Outside this directory: another may hold it. The refusal of
            // a directory that names the path (a symlink in it leads out,
            // say) is the one to show.
            Err(err)
                if err.code() == ErrorCode::PathEscape
                    && root.workspace().strip_root(Path::new(raw)).is_none() => {}
            Err(err) => refusal = refusal.or(Some(err)),
        }
    }
    Err(refusal.unwrap_or_else(|| outside(raw, roots)))
}

/// The innermost allowed directory holding the resolved `path` (found
/// beneath `holder`), and the path beneath it. Compared by canonical paths:
/// the resolved location is canonical up to its first missing name.
fn owner(roots: &[Arc<Root>], holder: &Arc<Root>, path: ConfinedPath) -> (Arc<Root>, ConfinedPath) {
    let depth = |root: &Arc<Root>| root.workspace().root().components().count();
    let inner = roots
        .iter()
        .filter(|root| path.abs().starts_with(root.workspace().root()))
        .max_by_key(|root| depth(root));
    match inner {
        Some(root) if !Arc::ptr_eq(root, holder) && depth(root) > depth(holder) => {
            match root.workspace().adopt(&path) {
                Some(adopted) => (Arc::clone(root), adopted),
                None => (Arc::clone(holder), path),
            }
        }
        _ => (Arc::clone(holder), path),
    }
}

/// Marks, in every writable directory's workspace, the read-only ones:
/// a write through the writable one that would land in a read-only one
/// nested in it (reached by whatever name, or through a directory swapped
/// for a symlink after resolution) is refused when the write opens its
/// directory, by the directory's identity. The fences are set on
/// workspaces just opened, so none has any yet.
fn fence(roots: &[Arc<Root>]) {
    if roots.len() < 2 {
        return;
    }
    let read_only: Vec<Fence> = roots
        .iter()
        .filter(|root| !root.writable())
        .map(|root| Fence::new(root.workspace().root_id(), root.shown_root()))
        .collect();
    if read_only.is_empty() {
        return;
    }
    for root in roots.iter().filter(|root| root.writable()) {
        let own = root.workspace().root_id();
        let fences = read_only
            .iter()
            .filter(|fence| fence.id() != own)
            .cloned()
            .collect();
        // Freshly opened: setting cannot find fences already there.
        let _ = root.workspace().fence_off(fences);
    }
}

/// The refusal of an allowed directory as the entry a tool would remove or
/// rename.
fn root_refused(raw: &str) -> ToolError {
    ToolError::new(
        ErrorCode::PathEscape,
        format!("{raw}: is an allowed directory itself; it cannot be moved or deleted"),
    )
}

fn outside(raw: &str, roots: &[Arc<Root>]) -> ToolError {
    let allowed: Vec<String> = roots.iter().map(|root| root.shown_root()).collect();
    ToolError::new(
        ErrorCode::PathEscape,
        format!(
            "{raw}: is outside the allowed directories ({}); use an absolute path inside one \
             of them",
            allowed.join(", ")
        ),
    )
}

fn no_roots() -> ToolError {
    ToolError::new(
        ErrorCode::PathEscape,
        "no directory is allowed yet: start the server with --root DIR, or let the client \
         announce its roots",
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use agent_tools::RootAccess;
    use agent_tools_fs::WriteFileArgs;

    /// `A` writable with `A/ro` read-only in it; answers the roots and `A`.
    fn nested() -> (tempfile::TempDir, Roots, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let a = std::fs::canonicalize(dir.path()).unwrap().join("A");
        std::fs::create_dir_all(a.join("ro")).unwrap();
        std::fs::write(a.join("ro/keep.txt"), "kept").unwrap();
        let config = Config::builder(&a)
            .also_root(a.join("ro"), RootAccess::ReadOnly)
            .build()
            .unwrap();
        (dir, Roots::open(&config).unwrap(), a)
    }

    #[test]
    fn a_directory_swapped_for_a_link_after_the_check_is_refused_as_the_write_opens_it() {
        let (_dir, roots, a) = nested();
        // Checked while `swap` is missing: it lies in the writable root.
        let (root, path) = roots.resolve("swap/x.txt", Need::Write).unwrap();
        assert!(root.writable());
        // Then `swap` becomes a link into the read-only root, as a command
        // or another client could make it between the check and the write.
        std::os::unix::fs::symlink("ro", a.join("swap")).unwrap();
        let abs = path.abs().to_string_lossy().into_owned();
        let err = root
            .services()
            .files()
            .write_file(&WriteFileArgs::new(abs, "x"))
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::PathEscape, "{}", err.message());
        assert!(err.message().contains("read-only"), "{}", err.message());
        let err = root
            .workspace()
            .create_dir_all(&root.workspace().resolve("swap/d").unwrap())
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::PathEscape, "{}", err.message());
        let names: Vec<_> = std::fs::read_dir(a.join("ro"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["keep.txt"]);
    }

    #[test]
    fn every_spelling_maps_to_the_innermost_root_that_holds_the_file() {
        let (_dir, roots, a) = nested();
        std::os::unix::fs::symlink("ro", a.join("link")).unwrap();
        let abs = |rest: &str| format!("{}/{rest}", a.display());
        for spelling in [
            abs("ro/keep.txt"),
            "ro/keep.txt".to_owned(),
            abs("ro/../ro/keep.txt"),
            abs("link/keep.txt"),
            "link/keep.txt".to_owned(),
            abs("missing/../link/keep.txt"),
        ] {
            let (root, path) = roots.resolve(&spelling, Need::Read).unwrap();
            assert!(!root.writable(), "{spelling}");
            assert_eq!(path.display(), "keep.txt", "{spelling}");
            let err = roots.resolve(&spelling, Need::Write).unwrap_err();
            assert_eq!(err.code(), ErrorCode::PathEscape, "{spelling}");
        }
        let (root, path) = roots.resolve(&abs("ro/../x.txt"), Need::Write).unwrap();
        assert!(root.writable());
        assert_eq!(path.display(), "x.txt");
    }
}
