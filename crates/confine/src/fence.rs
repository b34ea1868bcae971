//! Where an opened directory is, asked of the directory itself.
//!
//! A path checked by name can be changed before it is used: a directory
//! swapped for a symlink after resolution still opens beneath the root's
//! handle when the link stays inside the root. That is enough to keep a
//! path inside the root, but not to keep it out of a part of the root that
//! must not be written through it (a read-only directory nested in a
//! writable one). So the directory a write is about to happen in is asked
//! where it is: starting from its handle, each step opens `..` of the
//! directory the step before opened, and the first marked directory met,
//! compared by device and inode, decides. The answer is about the directory
//! the write goes through, whatever names led to it.

use std::io;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, Metadata, MetadataExt as _};

/// The most `..` steps one walk up takes. A directory deeper than this
/// cannot be reached by any one path the kernel accepts (PATH_MAX is 4096
/// bytes, two per level at least), so a longer climb means something is
/// wrong and the answer is an error, not a guess.
pub const MAX_CLIMB: usize = 2048;

/// Which directory a handle or a metadata record is: its device and inode.
/// Two paths name the same directory exactly when these are equal (a bind
/// mount of a directory has the identity of the directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DirId {
    dev: u64,
    ino: u64,
}

impl DirId {
    /// The identity of an opened directory.
    pub fn of(dir: &Dir) -> io::Result<DirId> {
        Ok(DirId::of_meta(&dir.dir_metadata()?))
    }

    /// The identity recorded in `meta` (taken without following a final
    /// symlink, it is the entry's own).
    pub fn of_meta(meta: &Metadata) -> DirId {
        DirId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    /// The identity recorded in a metadata record of `std`.
    pub fn of_std(meta: &std::fs::Metadata) -> DirId {
        use std::os::unix::fs::MetadataExt as _;
        DirId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    /// The device the directory is on.
    pub fn dev(&self) -> u64 {
        self.dev
    }
}

/// A directory beneath a workspace's root that must not be written through
/// that workspace (a read-only allowed directory nested in a writable one).
/// See [`Workspace::fence_off`](crate::Workspace::fence_off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    id: DirId,
    label: String,
}

impl Fence {
    /// The directory `id`, named `label` in refusals (as the user gave it).
    pub fn new(id: DirId, label: impl Into<String>) -> Fence {
        Fence {
            id,
            label: label.into(),
        }
    }

    /// The fenced directory's identity.
    pub fn id(&self) -> DirId {
        self.id
    }

    /// How refusals name it.
    pub fn label(&self) -> &str {
        &self.label
    }
}

/// Walks up from `dir` (itself first) through `..` and answers the index in
/// `marks` of the first directory met that is one of them, or `None` when
/// the filesystem's root is reached first. Mount points are crossed as the
/// kernel crosses them for `..`. More than [`MAX_CLIMB`] steps is an error.
pub fn first_met(dir: &Dir, marks: &[DirId]) -> io::Result<Option<usize>> {
    let mut here = DirId::of(dir)?;
    let mut opened: Option<Dir> = None;
    for _ in 0..=MAX_CLIMB {
        if let Some(index) = marks.iter().position(|mark| *mark == here) {
            return Ok(Some(index));
        }
        let up = opened
            .as_ref()
            .unwrap_or(dir)
            .open_parent_dir(ambient_authority())?;
        let above = DirId::of(&up)?;
        // `..` of the filesystem's root is the root itself.
        if above == here {
            return Ok(None);
        }
        here = above;
        opened = Some(up);
    }
    Err(io::Error::other(format!(
        "directory nested more than {MAX_CLIMB} levels deep"
    )))
}
