//! The allowed directories of the surface: one engine (workspace, file
//! tools, locks) per directory, and the one rule that maps a path given by
//! the model to the directory it falls in.

use std::path::Path;
use std::sync::{Arc, RwLock};

use agent_tools::{
    AllowedRoot, Config, DefaultSurface, ErrorCode, Services, StartupError, Surface, ToolError,
    ToolResult,
};
use agent_tools_confine::{ConfinedPath, Workspace};

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
    /// Opens an engine for every allowed directory of `config`.
    pub fn open(config: &Config) -> Result<Roots, StartupError> {
        let roots = config
            .roots()
            .iter()
            .map(|root| Root::open(config, root).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
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
    /// An absolute path belongs to the innermost allowed directory that
    /// holds it (so a read-only directory nested in a writable one keeps
    /// its access); a relative one to the first. A path in no allowed
    /// directory is `path_escape`, as is a write beneath a read-only one.
    pub fn resolve(&self, raw: &str, need: Need) -> ToolResult<(Arc<Root>, ConfinedPath)> {
        let roots = self.list();
        if roots.is_empty() {
            return Err(no_roots());
        }
        let (root, path) = if Path::new(raw).is_absolute() {
            let mut best: Option<(&Arc<Root>, ConfinedPath)> = None;
            let mut refusal = None;
            for root in roots.iter() {
                match root.workspace().resolve(raw) {
                    Ok(path) => {
                        let depth = root.workspace().root().components().count();
                        let deeper = best.as_ref().is_none_or(|(held, _)| {
                            held.workspace().root().components().count() < depth
                        });
                        if deeper {
                            best = Some((root, path));
                        }
                    }
                    // Outside this directory: another may hold it. The
                    // refusal of a directory that names the path (a
                    // symlink in it leads out, say) is the one to show.
                    Err(err)
                        if err.code() == ErrorCode::PathEscape
                            && root.workspace().strip_root(Path::new(raw)).is_none() => {}
                    Err(err) => refusal = refusal.or(Some(err)),
                }
            }
            match (best, refusal) {
                (Some((root, path)), _) => (Arc::clone(root), path),
                (None, Some(err)) => return Err(err),
                (None, None) => return Err(outside(raw, &roots)),
            }
        } else {
            let root = roots.first().cloned().ok_or_else(no_roots)?;
            let path = root.workspace().resolve(raw)?;
            (root, path)
        };
        if need == Need::Write && !root.writable() {
            return Err(ToolError::new(
                ErrorCode::PathEscape,
                format!(
                    "{raw}: lies in {}, which is read-only; write beneath a read-write \
                     directory (see list_allowed_directories)",
                    root.shown_root()
                ),
            ));
        }
        Ok((root, path))
    }
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
