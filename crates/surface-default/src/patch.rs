//! `apply_patch`: the patch engine working through the confined workspace.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use crate::args::ApplyPatchArgs;
use agent_tools_confine::{ConfinedPath, Workspace};
use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use agent_tools_fs::{Expected, FileStamp, StagedWrite};
use agent_tools_patch::{
    ErrorKind as PatchErrorKind, FileStore, FlushError, MAX_HELD_WRITES, Operation, Patch,
    PatchError, Replacement, StoreError,
};

use crate::services::Services;
use agent_tools::ToolDef;

const APPLY_PATCH: &str = "Apply a patch to one or more files, all or nothing. Two formats are accepted. \
A unified diff (as `diff -u` or `git diff` print it): `--- /dev/null` creates a file, `+++ /dev/null` deletes \
one, differing old and new paths rename (with hunks: move and edit), a/ and b/ prefixes allowed; a hunk whose \
lines moved applies at the nearest place its context matches exactly, and the result reports the offset. Or \
the `*** Begin Patch` ... `*** End Patch` format with `*** Add File:`, `*** Delete File:`, `*** Update File:` \
(optionally `*** Move to:`) sections and `@@` chunks found by their content after the previous chunk (`@@ line` \
jumps past that line; whitespace and typographic punctuation differences are tolerated and reported; Add File \
and Move to overwrite). If any hunk fails, no file is changed and the error names the file, the hunk and the \
lines it expected. Files keep their line endings and BOM; created files use LF.";

pub(crate) fn apply_patch_tool() -> ToolDef<Services> {
    ToolDef::typed(
        "apply_patch",
        APPLY_PATCH,
        true,
        |s, a: ApplyPatchArgs, call| apply_patch(s, &a.patch, call.cancel.flag()),
    )
    // codex's JSON tool names the argument `input`.
    .accepting_alias("input", "patch")
}

fn apply_patch(services: &Services, text: &str, cancel: &AtomicBool) -> ToolResult<String> {
    let (patch, report) = apply_patch_text(services, text)?;
    let answer = summarize(&patch, &report.to_string());
    Ok(services.after_patch(answer, &patch, cancel))
}

/// Applies `text` (a unified diff or a `*** Begin Patch` patch) to the
/// workspace exactly as the default surface's `apply_patch` does: every
/// path confined, all or nothing, locks held. Returns the parsed patch (its
/// paths resolved) and the engine's report, for a surface to word.
pub fn apply_patch_text(
    services: &Services,
    text: &str,
) -> ToolResult<(Patch, agent_tools_patch::Report)> {
    let mut patch = agent_tools_patch::parse(text).map_err(|err| patch_error(&err))?;
    if patch.files.is_empty() {
        return Err(ToolError::invalid_input(
            "the patch has no file blocks: expected `--- old` / `+++ new` headers followed by @@ hunks, or `*** Begin Patch` with file sections",
        ));
    }
    let workspace = services.files.workspace();
    // Every path the patch names goes through confinement before anything is
    // read, and the write locks of all of them are held (in sorted order, so
    // two patches never wait on each other in a cycle) until it is done.
    //
    // The engine then sees each path in its resolved form, so that two
    // spellings of one file (`a.txt`, `./a.txt`, `sub/../a.txt`, a symlink
    // to it) are recognised as the same path and refused as a duplicate,
    // instead of both being staged from the old content and the later one
    // silently overwriting the earlier.
    let mut touched: Vec<ConfinedPath> = Vec::new();
    for file in &mut patch.files {
        // Resolving follows a final symlink, so deleting or moving `link`
        // would delete or move the file it points to. Links are not patched
        // (the engine refuses git's symlink blocks too): say so instead.
        if matches!(file.operation, Operation::Delete | Operation::Rename)
            && let Some(old) = &file.old_path
        {
            refuse_symlink(workspace, old)?;
        }
        for path in [&mut file.old_path, &mut file.new_path]
            .into_iter()
            .flatten()
        {
            if path.ends_with('/') {
                return Err(ToolError::new(
                    ErrorCode::NotAFile,
                    format!(
                        "{path}: ends with `/`, so it names a directory; a patch changes files"
                    ),
                ));
            }
            let resolved = workspace.resolve(path)?;
            *path = resolved.display().to_string();
            touched.push(resolved);
        }
        // `--- a/x` / `+++ b/./x` is an edit in place, not a move.
        if file.operation == Operation::Rename && file.old_path == file.new_path {
            file.operation = Operation::Modify;
        }
    }
    let report = with_store(services, touched, |store| {
        agent_tools_patch::apply(&patch, store).map_err(|err| patch_error(&err))
    })?;
    Ok((patch, report))
}

/// Runs `work` on the confined store with the write locks of `touched`
/// held (in this process and, by file locks, in others), as `apply_patch`
/// does.
fn with_store<R>(
    services: &Services,
    mut touched: Vec<ConfinedPath>,
    work: impl FnOnce(&mut ConfinedStore<'_>) -> ToolResult<R>,
) -> ToolResult<R> {
    touched.sort_by(|a, b| a.abs().cmp(b.abs()));
    touched.dedup();
    let locks: Vec<_> = touched
        .iter()
        .map(|path| services.files.path_lock(path))
        .collect();
    let _guards: Vec<_> = locks
        .iter()
        .map(|lock| {
            lock.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        })
        .collect();
    // Writers in other processes wait too (or, if they do not take the
    // lock, the store notices their change before replacing anything).
    let _file_locks = services.files.lock_files(&touched)?;

    let mut store = ConfinedStore {
        workspace: services.files.workspace(),
        max_file_bytes: services.config.max_file_bytes(),
        stamps: RefCell::default(),
        batching: false,
        held: BTreeMap::new(),
    };
    work(&mut store)
}

/// Rewrites whole files all or nothing, through the store, locks, staging
/// and rollback `apply_patch` uses (so a journal records it as one call):
/// each of `paths` is read, `compute` gives every file's new content from
/// the contents read, and, unless `dry_run`, all are written together.
/// Returns each file's content before and after.
pub(crate) fn rewrite_files(
    services: &Services,
    paths: &[ConfinedPath],
    dry_run: bool,
    compute: impl FnOnce(&[Vec<u8>]) -> ToolResult<Vec<Vec<u8>>>,
) -> ToolResult<Vec<(Vec<u8>, Vec<u8>)>> {
    with_store(services, paths.to_vec(), |store| {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let before = names
            .iter()
            .map(|name| {
                store.read(name).map_err(|source| {
                    patch_error(&PatchError::Store {
                        path: name.clone(),
                        source,
                    })
                })
            })
            .collect::<ToolResult<Vec<_>>>()?;
        let after = compute(&before)?;
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = before.into_iter().zip(after).collect();
        if !dry_run {
            let replacements: Vec<Replacement> = names
                .into_iter()
                .zip(&pairs)
                .filter(|(_, (old, new))| old != new)
                .map(|(path, (old, new))| Replacement {
                    path,
                    previous: old.clone(),
                    data: new.clone(),
                })
                .collect();
            agent_tools_patch::replace_all(&replacements, store)
                .map_err(|err| patch_error(&err))?;
        }
        Ok(pairs)
    })
}

/// `not_a_file` when `path` (already known to resolve inside the root)
/// names a symbolic link itself.
fn refuse_symlink(workspace: &Workspace, path: &str) -> ToolResult<()> {
    workspace.resolve(path)?;
    let named = workspace.root().join(path);
    match std::fs::symlink_metadata(&named) {
        Ok(meta) if meta.file_type().is_symlink() => Err(ToolError::new(
            ErrorCode::NotAFile,
            format!(
                "{path}: is a symbolic link; apply_patch does not delete or move links (use bash to change links)"
            ),
        )),
        _ => Ok(()),
    }
}

fn summarize(patch: &Patch, report: &str) -> String {
    let count = patch.files.len();
    let mut out = format!(
        "applied patch to {count} file{}:\n",
        if count == 1 { "" } else { "s" }
    );
    out.push_str(report);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

fn patch_error(err: &PatchError) -> ToolError {
    let code = match err.kind() {
        PatchErrorKind::InvalidInput => ErrorCode::InvalidInput,
        PatchErrorKind::PatchFailed => ErrorCode::PatchFailed,
        PatchErrorKind::NotFound => ErrorCode::NotFound,
        PatchErrorKind::NotAFile => ErrorCode::NotAFile,
        PatchErrorKind::IsBinary => ErrorCode::IsBinary,
        PatchErrorKind::TooLarge => ErrorCode::TooLarge,
        PatchErrorKind::PathEscape => ErrorCode::PathEscape,
        PatchErrorKind::Io => ErrorCode::IoError,
    };
    ToolError::new(code, err.to_string())
}

/// The patch engine's view of the workspace: every path confined, reads
/// capped at max_file_bytes, writes atomic and beneath the root's handle.
///
/// The store remembers what each file looked like when it was read (and
/// after each write of its own), and every write, delete and rename first
/// checks the file is still that one: a change by another program between
/// staging and committing fails the patch (and rolls it back) instead of
/// being overwritten.
///
/// In a batch (the applier's commit), writes are staged to temporary files
/// and held; the flush syncs them together, checks and renames each, then
/// syncs each folder once.
struct ConfinedStore<'a> {
    workspace: &'a Workspace,
    max_file_bytes: u64,
    stamps: RefCell<HashMap<String, FileStamp>>,
    batching: bool,
    /// Staged writes not yet committed, by the path the applier names.
    held: BTreeMap<String, StagedWrite>,
}

impl ConfinedStore<'_> {
    fn resolve(&self, path: &str) -> Result<ConfinedPath, StoreError> {
        self.workspace.resolve(path).map_err(store_error)
    }

    /// Removes the directories a delete or rename left empty, up to the root,
    /// as git does.
    fn prune_empty_parents(&self, path: &ConfinedPath) {
        let mut parent = path.rel().parent();
        while let Some(dir) = parent {
            if dir.as_os_str().is_empty() || self.workspace.base_dir().remove_dir(dir).is_err() {
                break;
            }
            parent = dir.parent();
        }
    }

    /// Drops the held write of `path`, if any, and expects again what is on
    /// disk. Returns the dropped write.
    fn release(&mut self, path: &str) -> Option<StagedWrite> {
        let held = self.held.remove(path)?;
        let mut stamps = self.stamps.borrow_mut();
        match held.expected() {
            Expected::Same(seen) => stamps.insert(path.to_owned(), seen),
            Expected::Absent => stamps.remove(path),
        };
        Some(held)
    }

    /// Whether the file at `path` is still the one `held` expected and holds
    /// exactly `data`.
    fn on_disk_is(&self, held: &StagedWrite, data: &[u8]) -> bool {
        let Expected::Same(seen) = held.expected() else {
            return false;
        };
        let Ok((mut file, meta)) = agent_tools_fs::open_regular(self.workspace, held.path()) else {
            return false;
        };
        if FileStamp::of_std(&meta) != seen || meta.len() != data.len() as u64 {
            return false;
        }
        let mut on_disk = Vec::with_capacity(data.len());
        file.read_to_end(&mut on_disk).is_ok() && on_disk == data
    }

    /// Commits the held writes (see [`agent_tools_fs::commit_staged`]);
    /// those not committed stay held.
    fn commit_held(&mut self) -> Result<(), FlushError> {
        let (paths, mut batch): (Vec<String>, Vec<StagedWrite>) =
            std::mem::take(&mut self.held).into_iter().unzip();
        let result = agent_tools_fs::commit_staged(&mut batch);
        let failed_at = batch.last().map(|w| w.path().clone());
        for staged in batch {
            if let Some(path) = paths.iter().find(|p| {
                self.workspace
                    .resolve(p)
                    .is_ok_and(|resolved| &resolved == staged.path())
            }) {
                self.held.insert(path.clone(), staged);
            }
        }
        result.map_err(|err| FlushError {
            path: failed_at
                .map(|p| p.display().to_string())
                .or_else(|| paths.first().cloned())
                .unwrap_or_default(),
            source: store_error(err),
        })
    }

    fn create_parents(&self, path: &ConfinedPath) -> Result<(), StoreError> {
        agent_tools_fs::make_parents(self.workspace, path)
            .map(drop)
            .map_err(store_error)
    }
}

fn store_error(err: ToolError) -> StoreError {
    match err.code() {
        ErrorCode::NotFound => StoreError::NotFound,
        ErrorCode::NotAFile => StoreError::NotAFile,
        ErrorCode::PathEscape => StoreError::PathEscape,
        ErrorCode::InvalidInput
        | ErrorCode::IsBinary
        | ErrorCode::NoMatch
        | ErrorCode::AmbiguousMatch
        | ErrorCode::PatchFailed
        | ErrorCode::Timeout
        | ErrorCode::OutputLimit
        | ErrorCode::TooLarge
        | ErrorCode::IoError
        | ErrorCode::Internal => StoreError::Io(std::io::Error::other(err.message().to_string())),
    }
}

impl FileStore for ConfinedStore<'_> {
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        if let Some(held) = self.held.get(path) {
            return held.read().map_err(StoreError::from);
        }
        let resolved = self.resolve(path)?;
        // Opened without blocking, and refused unless a regular file,
        // before a byte is read; then read at most one byte past the limit,
        // so a device or a file growing meanwhile cannot make the read
        // unbounded.
        let (file, meta) =
            agent_tools_fs::open_regular(self.workspace, &resolved).map_err(store_error)?;
        let limit = self.max_file_bytes;
        if meta.len() > limit {
            return Err(StoreError::TooLarge {
                size: meta.len(),
                limit,
            });
        }
        let data = agent_tools_fs::read_bounded(file, limit, meta.len())
            .map_err(StoreError::Io)?
            .ok_or(StoreError::TooLarge {
                size: limit.saturating_add(1),
                limit,
            })?;
        self.stamps
            .borrow_mut()
            .insert(path.to_owned(), FileStamp::of_std(&meta));
        Ok(data)
    }

    fn check_writable(&self, path: &str) -> Result<(), StoreError> {
        let resolved = self.resolve(path)?;
        let meta = self.workspace.metadata(&resolved).map_err(store_error)?;
        if meta.permissions().readonly() {
            return Err(StoreError::ReadOnly);
        }
        Ok(())
    }

    fn exists(&self, path: &str) -> Result<bool, StoreError> {
        if self.held.contains_key(path) {
            return Ok(true);
        }
        let path = self.resolve(path)?;
        match self.workspace.symlink_metadata(&path) {
            Ok(_) => Ok(true),
            Err(err) if err.code() == ErrorCode::NotFound => Ok(false),
            Err(err) => Err(store_error(err)),
        }
    }

    fn write(&mut self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        let resolved = self.resolve(path)?;
        // Writing a held path again is a rollback putting back what was
        // there; when the file on disk still is exactly that, dropping the
        // held write is all it takes.
        if let Some(held) = self.release(path)
            && self.on_disk_is(&held, data)
        {
            return Ok(());
        }
        self.create_parents(&resolved)?;
        // A path the store never read (nor wrote) is being created.
        let expected = self
            .stamps
            .borrow()
            .get(path)
            .map_or(Expected::Absent, |seen| Expected::Same(*seen));
        if !self.batching {
            let written = agent_tools_fs::write_atomic(self.workspace, &resolved, data, expected)
                .map_err(store_error)?;
            self.stamps.borrow_mut().insert(path.to_owned(), written);
            return Ok(());
        }
        if self.held.len() >= MAX_HELD_WRITES {
            self.commit_held().map_err(|failed| failed.source)?;
        }
        let staged = agent_tools_fs::stage_replace(self.workspace, &resolved, data, expected)
            .map_err(store_error)?;
        self.stamps
            .borrow_mut()
            .insert(path.to_owned(), staged.stamp());
        self.held.insert(path.to_owned(), staged);
        Ok(())
    }

    fn remove(&mut self, path: &str) -> Result<(), StoreError> {
        let resolved = self.resolve(path)?;
        if let Some(held) = self.release(path)
            && held.expected() == Expected::Absent
        {
            // A file the batch created and never committed: dropping the
            // write removes it; the folders made for it go too.
            drop(held);
            self.prune_empty_parents(&resolved);
            return Ok(());
        }
        let seen = self.stamps.borrow_mut().remove(path);
        agent_tools_fs::remove_seen(self.workspace, &resolved, seen).map_err(store_error)?;
        self.prune_empty_parents(&resolved);
        Ok(())
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), StoreError> {
        if self.held.contains_key(from) || self.held.contains_key(to) {
            // Only a rollback moves a file the batch wrote: commit first.
            self.commit_held().map_err(|failed| failed.source)?;
        }
        let from_path = self.resolve(from)?;
        let to_path = self.resolve(to)?;
        self.create_parents(&to_path)?;
        let seen = self.stamps.borrow().get(from).copied();
        agent_tools_fs::rename_new(self.workspace, &from_path, &to_path, seen)
            .map_err(store_error)?;
        let mut stamps = self.stamps.borrow_mut();
        if let Some(seen) = stamps.remove(from) {
            stamps.insert(to.to_owned(), seen);
        }
        drop(stamps);
        self.prune_empty_parents(&from_path);
        Ok(())
    }

    fn mode(&self, path: &str) -> Result<Option<u32>, StoreError> {
        use cap_std::fs::PermissionsExt;
        if let Some(held) = self.held.get(path) {
            return Ok(Some(held.mode().map_err(StoreError::from)?));
        }
        let path = self.resolve(path)?;
        let meta = self.workspace.metadata(&path).map_err(store_error)?;
        Ok(Some(meta.permissions().mode() & 0o7777))
    }

    fn set_mode(&mut self, path: &str, mode: u32) -> Result<(), StoreError> {
        use cap_std::fs::PermissionsExt;
        if let Some(held) = self.held.get(path) {
            // The mode arrives with the content, in the same rename.
            return held.set_mode(mode).map_err(StoreError::from);
        }
        let path = self.resolve(path)?;
        let rel: &Path = path.rel();
        self.workspace
            .base_dir()
            .set_permissions(rel, cap_std::fs::Permissions::from_mode(mode & 0o7777))
            .map_err(|err| store_error(self.workspace.io_error(&err, &path)))
    }

    fn begin_batch(&mut self) {
        self.batching = true;
    }

    fn flush(&mut self) -> Result<(), FlushError> {
        self.batching = false;
        self.commit_held()
    }
}
