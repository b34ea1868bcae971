//! The filesystem read-only but for the writable paths, in the command's
//! own mount namespace.
//!
//! Landlock has no right for a file's mode or times, and seccomp cannot see
//! the path a `chmod` or `utimensat` names; a read-only mount refuses them
//! (`EROFS`) whatever the path. So every mount the command can reach is
//! made read-only, except the writable paths: each is first bound onto
//! itself, which makes it a mount of its own (with the mounts beneath it,
//! which keep their own flags), and those mounts are left alone.
//!
//! The kernel's `mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)` would do
//! the remounting in one call, but neither `nix` nor `rustix` wraps it and
//! this crate makes no system call by hand; so each mount listed in
//! `/proc/self/mountinfo` is remounted on its own, repeating the flags it
//! already has (a user namespace may not drop the ones the system locked).

use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::{MsFlags, mount};
use rustix::fs::{AtFlags, CWD, StatxFlags, statx};

/// One line of `/proc/self/mountinfo`: what a remount needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MountEntry {
    /// The mount's id, as `statx` reports it for a path on the mount.
    pub(crate) id: u64,
    /// Where it is mounted, relative to the process's root.
    pub(crate) mount_point: PathBuf,
    /// Whether it is read-only already.
    pub(crate) read_only: bool,
    /// The flags it has that a remount must repeat.
    pub(crate) kept: MsFlags,
}

/// The mounts listed in `text` (the contents of `/proc/self/mountinfo`);
/// lines that do not parse are left out.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            // Fields: id, parent id, device, root, mount point, options, ...
            let mut fields = line.split(' ');
            let id = fields.next()?.parse().ok()?;
            let mount_point = unescape(fields.nth(3)?);
            let (read_only, kept) = mount_options(fields.next()?);
            Some(MountEntry {
                id,
                mount_point,
                read_only,
                kept,
            })
        })
        .collect()
}

/// Undoes the kernel's escaping of a path in `mountinfo`: space, tab,
/// newline and backslash are written as `\` and three octal digits.
fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt as _;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|digits| bytes[i] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .and_then(|digits| u8::from_str_radix(std::str::from_utf8(digits).ok()?, 8).ok());
        match octal {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// Whether a mount's options (`mountinfo`'s sixth field) say read-only,
/// and the flags among them a remount must repeat. A bind remount sets
/// every flag anew, so any left out would be dropped (or, when the system
/// locked it, the remount refused); atime behaves differently: without
/// `noatime` or `relatime` the mount updates atimes strictly, which must be
/// asked for, since a remount defaults to `relatime`.
fn mount_options(options: &str) -> (bool, MsFlags) {
    let mut read_only = false;
    let mut kept = MsFlags::empty();
    let mut atime_given = false;
    for option in options.split(',') {
        match option {
            "ro" => read_only = true,
            "nosuid" => kept |= MsFlags::MS_NOSUID,
            "nodev" => kept |= MsFlags::MS_NODEV,
            "noexec" => kept |= MsFlags::MS_NOEXEC,
            "nodiratime" => kept |= MsFlags::MS_NODIRATIME,
            // Not among nix's names; the value is libc's.
            "nosymfollow" => kept |= MsFlags::from_bits_retain(libc::MS_NOSYMFOLLOW),
            "noatime" => {
                kept |= MsFlags::MS_NOATIME;
                atime_given = true;
            }
            "relatime" => {
                kept |= MsFlags::MS_RELATIME;
                atime_given = true;
            }
            _ => {}
        }
    }
    if !atime_given {
        kept |= MsFlags::MS_STRICTATIME;
    }
    (read_only, kept)
}

/// What failed, and where.
#[derive(Debug)]
pub(crate) struct MountFailure {
    /// The path being bound or remounted.
    pub(crate) path: PathBuf,
    /// What failed.
    pub(crate) reason: String,
}

/// The writable paths to keep writable: canonical (a mount lands on the
/// target of a link), none beneath another (it is writable through the
/// outer one), missing ones left out (Landlock reports them next).
pub(crate) fn writable_mounts<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = paths
        .into_iter()
        .filter_map(|path| std::fs::canonicalize(path).ok())
        .collect();
    found.sort();
    found.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in found {
        if !kept.iter().any(|outer| path.starts_with(outer)) {
            kept.push(path);
        }
    }
    kept
}

/// Makes every mount this process can reach read-only, except `writable`
/// (from [`writable_mounts`]) and the mounts beneath them. Call it in a
/// mount namespace of the process's own whose mounts do not propagate out.
///
/// A mount that no path reaches (hidden beneath another, or beneath a
/// folder the caller cannot enter) is left as it is: a command could not
/// name a file on it either.
pub(crate) fn read_only_except(writable: &[PathBuf]) -> Result<(), MountFailure> {
    let failed = |path: &Path, what: &str, err: &dyn std::fmt::Display| MountFailure {
        path: path.to_path_buf(),
        reason: format!("{what}: {err}"),
    };
    for path in writable {
        bind_onto_itself(path).map_err(|err| failed(path, "cannot bind it onto itself", &err))?;
    }
    let info = Path::new("/proc/self/mountinfo");
    let text = std::fs::read_to_string(info).map_err(|err| failed(info, "cannot read", &err))?;
    for entry in parse_mountinfo(&text) {
        let point = &entry.mount_point;
        if entry.read_only || writable.iter().any(|w| point.starts_with(w)) {
            continue;
        }
        // The mount the path reaches now, without starting an automount
        // (which could wait on a network) and without following a link.
        // Every kernel with Landlock (5.13) reports the mount id (5.8).
        let reached = statx(
            CWD,
            point,
            AtFlags::NO_AUTOMOUNT | AtFlags::SYMLINK_NOFOLLOW,
            StatxFlags::MNT_ID,
        );
        let reachable = reached.is_ok_and(|stat| {
            StatxFlags::from_bits_retain(stat.stx_mask).contains(StatxFlags::MNT_ID)
                && stat.stx_mnt_id == entry.id
        });
        if !reachable {
            continue;
        }
        remount_read_only(point, entry.kept)
            .map_err(|err| failed(point, "cannot make it read-only", &err))?;
    }
    Ok(())
}

/// Bind-mounts `path` onto itself, so that it is a mount of its own whose
/// flags can be changed apart from the mount it sits on. Recursive, because
/// a user namespace may not bind a folder without the mounts beneath it;
/// those keep their own flags. A path that is gone (removed since it was
/// found) is left alone: `Ok(false)`.
pub(crate) fn bind_onto_itself(path: &Path) -> Result<bool, Errno> {
    match mount(
        Some(path),
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    ) {
        Ok(()) => Ok(true),
        Err(Errno::ENOENT) => Ok(false),
        Err(err) => Err(err),
    }
}

/// Remounts the mount at `path` read-only, repeating `kept`: the flags a
/// user namespace may not drop (nosuid, nodev, noexec, the atime mode).
pub(crate) fn remount_read_only(path: &Path, kept: MsFlags) -> Result<(), Errno> {
    mount(
        None::<&str>,
        path,
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | kept,
        None::<&str>,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_the_point_the_state_and_the_flags_to_keep() {
        let text = "\
22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
27 1 254:0 / / rw,noatime - ext4 /dev/vda rw
28 27 0:25 / /mnt/with\\040space\\134x ro,nosuid,nodev,relatime shared:5 - tmpfs t ro
29 27 0:26 / /strict rw,nosymfollow,nodiratime - tmpfs t rw
not a mount line
";
        let entries = parse_mountinfo(text);
        assert_eq!(entries.len(), 4);
        assert_eq!(entries[0].id, 22);
        assert_eq!(entries[0].mount_point, Path::new("/proc"));
        assert!(!entries[0].read_only);
        assert_eq!(
            entries[0].kept,
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC | MsFlags::MS_RELATIME
        );
        assert_eq!(entries[1].kept, MsFlags::MS_NOATIME);
        assert_eq!(entries[2].mount_point, Path::new("/mnt/with space\\x"));
        assert!(entries[2].read_only);
        // No atime option is strict atime, which a remount must ask for.
        assert_eq!(
            entries[3].kept,
            MsFlags::from_bits_retain(libc::MS_NOSYMFOLLOW)
                | MsFlags::MS_NODIRATIME
                | MsFlags::MS_STRICTATIME
        );
    }

    #[test]
    fn a_backslash_not_followed_by_three_octal_digits_stays() {
        assert_eq!(unescape("/a\\b\\04"), Path::new("/a\\b\\04"));
        assert_eq!(unescape("/a\\011b"), Path::new("/a\tb"));
    }

    #[test]
    fn writable_mounts_are_canonical_and_outermost() {
        let outer = tempfile::tempdir().unwrap();
        let outer = std::fs::canonicalize(outer.path()).unwrap();
        let (a, b) = (outer.join("a"), outer.join("b"));
        std::fs::create_dir_all(a.join("inner")).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::os::unix::fs::symlink(&b, outer.join("link")).unwrap();
        let given = [
            a.join("inner"),
            outer.join("link"),
            a.clone(),
            outer.join("missing"),
            b.clone(),
        ];
        assert_eq!(writable_mounts(given.iter().map(PathBuf::as_path)), [a, b]);
    }
}
