//! Opening and looking at paths beneath a directory descriptor, never by
//! absolute name: the primitives of the walk and of the workspace index.
//!
//! The index once stat-ed, listed and read by absolute path: a directory
//! swapped for a symlink between the check and the listing was listed
//! through the link, and names and trigrams of files outside the root came
//! into answers. Here every lookup starts at a descriptor and refuses any
//! symlink on the way (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`; where the kernel lacks it, one `openat` per
//! component with `O_NOFOLLOW`), so whatever the tree looks like at the
//! moment, nothing outside is reached: a swapped component makes the lookup
//! fail, and the event of the swap brings the path up to date.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use cap_std::fs::Dir;
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// How often `openat2` is retried when the kernel reports a concurrent
/// rename (`EAGAIN`) before the component walk is used instead.
const OPENAT2_TRIES: usize = 4;

/// Opens `rel` (a `/`-separated path relative to `base`, `""` for `base`
/// itself) beneath `base` with `flags` (read-only, never following a
/// symlink, the final component included).
fn open(base: impl AsFd, rel: &str, flags: OFlags) -> io::Result<OwnedFd> {
    let base = base.as_fd();
    let flags = flags | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if rel.is_empty() {
        return Ok(rustix::fs::openat(base, ".", flags, Mode::empty())?);
    }
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    for _ in 0..OPENAT2_TRIES {
        match rustix::fs::openat2(base, rel, flags, Mode::empty(), resolve) {
            Ok(fd) => return Ok(fd),
            Err(Errno::AGAIN | Errno::INTR) => continue,
            // No openat2 (an older kernel, or a filter that refuses it).
            Err(Errno::NOSYS | Errno::PERM) => break,
            Err(err) => return Err(err.into()),
        }
    }
    open_by_components(base, rel, flags)
}

/// The same as [`open`] with one `openat` per component.
fn open_by_components(
    base: std::os::fd::BorrowedFd<'_>,
    rel: &str,
    flags: OFlags,
) -> io::Result<OwnedFd> {
    let mut parts = rel.split('/').peekable();
    let mut at: Option<OwnedFd> = None;
    while let Some(part) = parts.next() {
        let from = at.as_ref().map_or(base, AsFd::as_fd);
        let last = parts.peek().is_none();
        let step = if last { flags } else { OFlags::DIRECTORY };
        at = Some(open_component(from, OsStr::new(part), step)?);
    }
    at.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))
}

/// Opens the entry `name` of `dir` with `flags` (read-only, never following
/// a symlink): one component, so it cannot leave `dir`. An empty name, `.`,
/// `..` or a name holding `/` is refused.
fn open_component(
    dir: std::os::fd::BorrowedFd<'_>,
    name: &OsStr,
    flags: OFlags,
) -> io::Result<OwnedFd> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let flags = flags | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?)
}

/// The subdirectory `name` (one component) of `dir`, as a handle to list
/// from: never through a symlink, and without blocking should a FIFO have
/// taken the directory's place.
pub fn open_subdir(dir: impl AsFd, name: &OsStr) -> io::Result<Dir> {
    let fd = open_component(dir.as_fd(), name, OFlags::DIRECTORY | OFlags::NONBLOCK)?;
    Ok(Dir::from_std_file(File::from(fd)))
}

/// The directory at `rel` beneath `base`, as a handle to list from.
pub fn open_dir(base: impl AsFd, rel: &str) -> io::Result<Dir> {
    let fd = open(base, rel, OFlags::DIRECTORY)?;
    Ok(Dir::from_std_file(File::from(fd)))
}

/// The file at `rel` beneath `base`, opened for reading without blocking
/// on a FIFO and without taking a terminal.
pub fn open_file(base: impl AsFd, rel: &str) -> io::Result<File> {
    Ok(File::from(open(
        base,
        rel,
        OFlags::NONBLOCK | OFlags::NOCTTY,
    )?))
}

/// The file `name` (one component) of `dir`, opened as
/// [`open_file`] opens one: a reader of many files of one directory opens
/// the directory once and each file from it, rather than resolving every
/// component of each file's path again.
pub fn open_file_in(dir: impl AsFd, name: &OsStr) -> io::Result<File> {
    Ok(File::from(open_component(
        dir.as_fd(),
        name,
        OFlags::NONBLOCK | OFlags::NOCTTY,
    )?))
}

/// What `rel` beneath `base` is, without following a symlink (a symlink
/// is reported as one).
pub fn metadata(base: impl AsFd, rel: &str) -> io::Result<std::fs::Metadata> {
    File::from(open(base, rel, OFlags::PATH)?).metadata()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_on_the_way_are_refused_and_reported_as_themselves() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("d"))?;
        std::fs::create_dir_all(dir.path().join("outside"))?;
        std::fs::write(dir.path().join("outside/secret"), "s")?;
        std::fs::write(root.join("d/f"), "f")?;
        std::os::unix::fs::symlink("../outside", root.join("link"))?;
        std::os::unix::fs::symlink("d", root.join("inner"))?;
        let base = File::open(&root)?;
        assert!(open_file(&base, "d/f").is_ok());
        assert!(open_file(&base, "link/secret").is_err());
        assert!(open_dir(&base, "link").is_err());
        // Even a symlink that stays inside is not followed.
        assert!(open_file(&base, "inner/f").is_err());
        assert!(metadata(&base, "link")?.file_type().is_symlink());
        assert!(metadata(&base, "link/secret").is_err());
        assert!(metadata(&base, "d")?.is_dir());
        assert!(open_file(&base, "../outside/secret").is_err());
        let d = open_dir(&base, "d")?;
        assert!(open_file_in(&d, OsStr::new("f")).is_ok());
        let top = open_dir(&base, "")?;
        // One component only, never a symlink, never a way out.
        assert!(open_file_in(&top, OsStr::new("inner")).is_err());
        assert!(open_file_in(&top, OsStr::new("link")).is_err());
        assert!(open_file_in(&top, OsStr::new("d/f")).is_err());
        assert!(open_file_in(&d, OsStr::new("..")).is_err());
        assert!(open_file_in(&d, OsStr::new("")).is_err());
        assert!(open_file_in(&d, OsStr::new("missing")).is_err());
        let by_parts = open_by_components(base.as_fd(), "link/secret", OFlags::RDONLY);
        assert!(by_parts.is_err());
        assert!(open_by_components(base.as_fd(), "d/f", OFlags::RDONLY).is_ok());
        Ok(())
    }
}
