//! Staging a whole patch in memory, then committing it all or nothing.

use std::collections::BTreeSet;

use crate::engine::{Applied, apply_hunks};
use crate::error::PatchError;
use crate::model::{FilePatch, Format, Operation, Patch};
use crate::parse::parse;
use crate::report::{Action, FileReport, Report};
use crate::store::{FileStore, StoreError};

/// Parses `text` and applies it to `store`; see [`apply`].
///
/// # Errors
///
/// As [`parse`] and [`apply`].
pub fn apply_patch<S: FileStore + ?Sized>(
    text: impl AsRef<[u8]>,
    store: &mut S,
) -> Result<Report, PatchError> {
    let patch = parse(text)?;
    apply(&patch, store)
}

/// Applies `patch` to `store`, all or nothing.
///
/// First every file block is validated and its result computed in memory
/// (nothing is written if any block fails). Then the changes are written:
/// deletions, then renames, then writes, then mode changes. If a write
/// fails, the changes already made are undone in reverse order, restoring
/// the exact bytes.
///
/// # Errors
///
/// Any [`PatchError`]; see [`PatchError::kind`] for the classes. When the
/// undo itself fails, [`PatchError::RollbackFailed`] lists the paths that
/// could not be restored.
pub fn apply<S: FileStore + ?Sized>(patch: &Patch, store: &mut S) -> Result<Report, PatchError> {
    let staged = stage(patch, &*store)?;
    commit(&staged, store)?;
    Ok(staged.report)
}

/// Validates `patch` against `store` and computes the report, without
/// writing anything (a dry run of [`apply`]).
///
/// # Errors
///
/// The same staging errors [`apply`] would return.
pub fn check<S: FileStore + ?Sized>(patch: &Patch, store: &S) -> Result<Report, PatchError> {
    Ok(stage(patch, store)?.report)
}

/// A whole file's new content, for [`replace_all`]: `data` replaces
/// `previous`, which the caller read through the same store (so the store
/// knows the file as it was, and a change by anyone else since fails the
/// write instead of being overwritten).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// The file, as the store names it.
    pub path: String,
    /// Its content as read.
    pub previous: Vec<u8>,
    /// Its new content.
    pub data: Vec<u8>,
}

/// Replaces the content of existing files all or nothing, with the commit
/// and rollback of [`apply`]: for edits computed elsewhere (a language
/// server's rename), which need no hunks matched.
///
/// # Errors
///
/// [`PatchError::DuplicatePath`] for a file named twice (its line 0: there
/// is no patch text), and the store's
/// errors (a file not writable, changed meanwhile, a failed write) after
/// the files already written are restored.
pub fn replace_all<S: FileStore + ?Sized>(
    replacements: &[Replacement],
    store: &mut S,
) -> Result<(), PatchError> {
    let mut claimed = BTreeSet::new();
    let mut ops = Vec::with_capacity(replacements.len());
    for replacement in replacements {
        let path = replacement.path.as_str();
        if !claimed.insert(path) {
            return Err(PatchError::DuplicatePath {
                path: path.to_owned(),
                line: 0,
            });
        }
        check_writable(store, path)?;
        ops.push(Op::Write {
            path: path.to_owned(),
            data: replacement.data.clone(),
            previous: Some(replacement.previous.clone()),
        });
    }
    let staged = Staged {
        ops,
        report: Report { files: Vec::new() },
    };
    commit(&staged, store)
}

enum Op {
    Remove {
        path: String,
        previous: Vec<u8>,
        /// The permission bits before, when the store has them.
        mode: Option<u32>,
    },
    Rename {
        from: String,
        to: String,
    },
    Write {
        path: String,
        data: Vec<u8>,
        /// `None` when the file is created.
        previous: Option<Vec<u8>>,
    },
    /// Sets the permission bits (the previous mode is read at commit time,
    /// so it can be restored exactly).
    SetMode {
        path: String,
        mode: u32,
    },
}

impl Op {
    fn phase(&self) -> u8 {
        match self {
            Op::Remove { .. } => 0,
            Op::Rename { .. } => 1,
            Op::Write { .. } => 2,
            Op::SetMode { .. } => 3,
        }
    }
}

struct Staged {
    ops: Vec<Op>,
    report: Report,
}

fn store_err(path: &str) -> impl FnOnce(StoreError) -> PatchError + '_ {
    move |source| PatchError::Store {
        path: path.to_owned(),
        source,
    }
}

/// The permission bits a git mode asks for.
fn permission_bits(mode: u32) -> u32 {
    mode & 0o777
}

fn check_mode(path: &str, mode: Option<u32>) -> Result<(), PatchError> {
    let what = match mode.map(|m| m & 0o170_000) {
        Some(0o120_000) => "a symbolic link".to_owned(),
        Some(0o160_000) => "a submodule (gitlink)".to_owned(),
        // Set-user-ID, set-group-ID and sticky bits are never set from a
        // patch (git does not record them either).
        _ if mode.is_some_and(|m| m & 0o7000 != 0) => format!(
            "mode {:o} (set-user-ID, set-group-ID or sticky bit)",
            mode.unwrap_or_default()
        ),
        _ => return Ok(()),
    };
    Err(PatchError::Unsupported {
        path: path.to_owned(),
        what,
    })
}

fn check_writable<S: FileStore + ?Sized>(store: &S, path: &str) -> Result<(), PatchError> {
    store.check_writable(path).map_err(store_err(path))
}

fn need<'a>(path: &'a Option<String>, fp: &FilePatch) -> Result<&'a str, PatchError> {
    path.as_deref().ok_or_else(|| PatchError::Parse {
        line: fp.line,
        message: "file block is missing a path".to_owned(),
    })
}

fn read_text<S: FileStore + ?Sized>(
    store: &S,
    path: &str,
    has_hunks: bool,
) -> Result<Vec<u8>, PatchError> {
    let data = store.read(path).map_err(store_err(path))?;
    if has_hunks && memchr::memchr(0, &data).is_some() {
        return Err(PatchError::BinaryFile {
            path: path.to_owned(),
        });
    }
    Ok(data)
}

/// The new content of one file block's target, by the block's format.
fn compute(fp: &FilePatch, path: &str, data: &[u8]) -> Result<Applied, PatchError> {
    match fp.format {
        Format::Unified => apply_hunks(path, data, &fp.hunks),
        Format::Codex => crate::codex::apply_chunks(path, data, &fp.hunks),
    }
}

/// A file about to be overwritten: its bytes and permission bits.
type Replaced = (Vec<u8>, Option<u32>);

/// For a codex block, which overwrites an existing target (as codex does):
/// the target's current bytes and mode, to restore on rollback, after
/// checking it is a writable regular file. `None` when the target is free.
fn replaced<S: FileStore + ?Sized>(store: &S, path: &str) -> Result<Option<Replaced>, PatchError> {
    if !store.exists(path).map_err(store_err(path))? {
        return Ok(None);
    }
    let data = read_text(store, path, false)?;
    check_writable(store, path)?;
    let mode = store.mode(path).map_err(store_err(path))?;
    Ok(Some((data, mode)))
}

fn ensure_absent<S: FileStore + ?Sized>(store: &S, path: &str) -> Result<(), PatchError> {
    if store.exists(path).map_err(store_err(path))? {
        return Err(PatchError::AlreadyExists {
            path: path.to_owned(),
        });
    }
    Ok(())
}

fn stage<S: FileStore + ?Sized>(patch: &Patch, store: &S) -> Result<Staged, PatchError> {
    // Structural checks first: no I/O until the patch is self-consistent.
    let mut claimed = BTreeSet::new();
    for fp in &patch.files {
        let targets: Vec<&Option<String>> = match fp.operation {
            Operation::Modify | Operation::Delete => vec![&fp.old_path],
            Operation::Create | Operation::Copy => vec![&fp.new_path],
            Operation::Rename => vec![&fp.old_path, &fp.new_path],
        };
        for t in targets {
            let t = need(t, fp)?;
            if !claimed.insert(t) {
                return Err(PatchError::DuplicatePath {
                    path: t.to_owned(),
                    line: fp.line,
                });
            }
        }
        if fp.old_mode.is_some_and(|m| m & 0o170_000 != 0o100_000) {
            check_mode(fp.path(), fp.old_mode)?;
        }
        check_mode(fp.path(), fp.new_mode)?;
    }

    let mut ops = Vec::new();
    let mut files = Vec::new();
    for fp in &patch.files {
        let has_hunks = !fp.hunks.is_empty();
        let mode_change = match (fp.old_mode, fp.new_mode) {
            (Some(a), Some(b)) if a != b && fp.operation != Operation::Create => Some((a, b)),
            _ => None,
        };
        let mut offsets = Vec::new();
        let mut fuzz = None;
        let mut overwrote = false;
        let (action, path, from) = match fp.operation {
            Operation::Create => {
                let path = need(&fp.new_path, fp)?;
                let previous = if fp.format == Format::Codex {
                    replaced(store, path)?.map(|(data, _)| data)
                } else {
                    ensure_absent(store, path)?;
                    None
                };
                overwrote = previous.is_some();
                let applied = compute(fp, path, b"")?;
                offsets = applied.offsets;
                ops.push(Op::Write {
                    path: path.to_owned(),
                    data: applied.data,
                    previous,
                });
                if let Some(mode) = fp.new_mode {
                    ops.push(Op::SetMode {
                        path: path.to_owned(),
                        mode: permission_bits(mode),
                    });
                }
                (Action::Created, path, None)
            }
            Operation::Delete => {
                let path = need(&fp.old_path, fp)?;
                let data = read_text(store, path, has_hunks)?;
                check_writable(store, path)?;
                if has_hunks {
                    let applied = compute(fp, path, &data)?;
                    if applied.lines > 0 {
                        return Err(PatchError::DeleteIncomplete {
                            path: path.to_owned(),
                            remaining: applied.lines,
                        });
                    }
                    offsets = applied.offsets;
                }
                let mode = store.mode(path).map_err(store_err(path))?;
                ops.push(Op::Remove {
                    path: path.to_owned(),
                    previous: data,
                    mode,
                });
                (Action::Deleted, path, None)
            }
            Operation::Modify => {
                let path = need(&fp.old_path, fp)?;
                let data = read_text(store, path, has_hunks)?;
                if has_hunks {
                    check_writable(store, path)?;
                    let applied = compute(fp, path, &data)?;
                    offsets = applied.offsets;
                    fuzz = applied.fuzz;
                    ops.push(Op::Write {
                        path: path.to_owned(),
                        data: applied.data,
                        previous: Some(data),
                    });
                }
                if let Some((_, new)) = mode_change {
                    ops.push(Op::SetMode {
                        path: path.to_owned(),
                        mode: permission_bits(new),
                    });
                }
                (Action::Modified, path, None)
            }
            Operation::Rename | Operation::Copy => {
                let from = need(&fp.old_path, fp)?;
                let to = need(&fp.new_path, fp)?;
                let data = read_text(store, from, has_hunks)?;
                if fp.format == Format::Codex && fp.operation == Operation::Rename {
                    if let Some((previous, mode)) = replaced(store, to)? {
                        // Removed first (deletions go first), so the move
                        // lands on a free path; rollback restores it.
                        ops.push(Op::Remove {
                            path: to.to_owned(),
                            previous,
                            mode,
                        });
                        overwrote = true;
                    }
                } else {
                    ensure_absent(store, to)?;
                }
                if has_hunks && fp.operation == Operation::Rename {
                    check_writable(store, from)?;
                }
                let mode_before = store.mode(from).map_err(store_err(from))?;
                let new_data = if has_hunks {
                    let applied = compute(fp, to, &data)?;
                    offsets = applied.offsets;
                    fuzz = applied.fuzz;
                    Some(applied.data)
                } else {
                    None
                };
                let action = if fp.operation == Operation::Rename {
                    ops.push(Op::Rename {
                        from: from.to_owned(),
                        to: to.to_owned(),
                    });
                    if let Some(new_data) = new_data {
                        ops.push(Op::Write {
                            path: to.to_owned(),
                            data: new_data,
                            previous: Some(data),
                        });
                    }
                    if let Some((_, new)) = mode_change {
                        ops.push(Op::SetMode {
                            path: to.to_owned(),
                            mode: permission_bits(new),
                        });
                    }
                    Action::Renamed
                } else {
                    ops.push(Op::Write {
                        path: to.to_owned(),
                        data: new_data.unwrap_or(data),
                        previous: None,
                    });
                    // The copy takes the mode the patch names, or else the
                    // source's (without set-id bits).
                    let mode = fp.new_mode.or(mode_before).map(permission_bits);
                    if let Some(mode) = mode {
                        ops.push(Op::SetMode {
                            path: to.to_owned(),
                            mode,
                        });
                    }
                    Action::Copied
                };
                (action, to, Some(from.to_owned()))
            }
        };
        files.push(FileReport {
            action,
            path: path.to_owned(),
            from,
            hunks: fp.hunks.len(),
            offsets,
            mode_change,
            fuzz,
            overwrote,
        });
    }
    // Deletions first (so a directory can become a file), then renames,
    // writes and modes; the sort is stable, so patch order holds within a phase.
    ops.sort_by_key(Op::phase);
    Ok(Staged {
        ops,
        report: Report { files },
    })
}

enum Undo<'a> {
    Remove(&'a str),
    Restore {
        path: &'a str,
        data: &'a [u8],
        mode: Option<u32>,
    },
    Rename {
        from: &'a str,
        to: &'a str,
    },
    SetMode(&'a str, u32),
}

fn commit<S: FileStore + ?Sized>(staged: &Staged, store: &mut S) -> Result<(), PatchError> {
    let mut undo = Vec::with_capacity(staged.ops.len());
    // The store may hold the writes back and make them durable together at
    // the flush; a failed flush is undone like any failed step.
    store.begin_batch();
    for op in &staged.ops {
        let result = match op {
            Op::Remove {
                path,
                previous,
                mode,
            } => store.remove(path).map(|()| {
                undo.push(Undo::Restore {
                    path,
                    data: previous,
                    mode: *mode,
                });
            }),
            Op::Rename { from, to } => store.rename(from, to).map(|()| {
                undo.push(Undo::Rename { from: to, to: from });
            }),
            Op::Write {
                path,
                data,
                previous,
            } => store.write(path, data).map(|()| {
                undo.push(match previous {
                    Some(prev) => Undo::Restore {
                        path,
                        data: prev,
                        mode: None,
                    },
                    None => Undo::Remove(path),
                });
            }),
            Op::SetMode { path, mode } => match store.mode(path) {
                Ok(Some(before)) => store.set_mode(path, *mode).map(|()| {
                    undo.push(Undo::SetMode(path, before));
                }),
                Ok(None) => store.set_mode(path, *mode),
                Err(e) => Err(e),
            },
        };
        if let Err(source) = result {
            let path = match op {
                Op::Remove { path, .. } | Op::Write { path, .. } | Op::SetMode { path, .. } => path,
                Op::Rename { from, .. } => from,
            };
            let error = PatchError::Store {
                path: path.clone(),
                source,
            };
            return Err(rollback(store, undo, error));
        }
    }
    if let Err(failed) = store.flush() {
        let error = PatchError::Store {
            path: failed.path,
            source: failed.source,
        };
        return Err(rollback(store, undo, error));
    }
    Ok(())
}

fn rollback<S: FileStore + ?Sized>(
    store: &mut S,
    undo: Vec<Undo<'_>>,
    error: PatchError,
) -> PatchError {
    let mut failed = Vec::new();
    for u in undo.into_iter().rev() {
        let (path, result) = match u {
            Undo::Remove(path) => (path, store.remove(path)),
            Undo::Restore { path, data, mode } => (
                path,
                store.write(path, data).and_then(|()| match mode {
                    Some(m) => store.set_mode(path, m),
                    None => Ok(()),
                }),
            ),
            Undo::Rename { from, to } => (from, store.rename(from, to)),
            Undo::SetMode(path, m) => (path, store.set_mode(path, m)),
        };
        if let Err(e) = result {
            failed.push(format!("{path} ({e})"));
        }
    }
    if let Err(e) = store.flush() {
        failed.push(format!("{} ({})", e.path, e.source));
    }
    if failed.is_empty() {
        error
    } else {
        PatchError::RollbackFailed {
            source: Box::new(error),
            failed,
        }
    }
}
