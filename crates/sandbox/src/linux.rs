//! Landlock, seccomp and read-only bind mounts on Linux.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};
use nix::unistd::{getgid, getuid};

use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::{Coverage, DEVICES, SandboxError, SandboxPolicy, coverage_for, mounts, vcs};

/// The ABI the rulesets are written for (see [`TARGET_ABI`]).
const TARGET: ABI = ABI::V7;

/// The kernel's ABI number, as the `landlock` crate reports it after a
/// restriction. The crate tells the running ABI only through the status of
/// a `restrict_self`, so a short-lived thread of its own restricts itself
/// (a Landlock domain and `no_new_privs` belong to that thread alone and end
/// with it) and reports what it saw.
pub(crate) fn probe_abi() -> Result<u8, SandboxError> {
    let probe = std::thread::Builder::new()
        .name("landlock-probe".into())
        .spawn(|| -> Result<LandlockStatus, String> {
            let status = Ruleset::default()
                .handle_access(AccessFs::Execute)
                .and_then(|r| r.create())
                .and_then(|r| r.restrict_self())
                .map_err(|err| err.to_string())?;
            Ok(status.landlock)
        })
        .map_err(|err| SandboxError::Unavailable(format!("cannot start the probe: {err}")))?;
    let status = probe
        .join()
        .map_err(|_| SandboxError::Unavailable("the probe failed".into()))?
        .map_err(SandboxError::Unavailable)?;
    match status {
        LandlockStatus::NotEnabled => Err(SandboxError::Unavailable(
            "the kernel has Landlock but it is not enabled (see the `lsm=` boot parameter)".into(),
        )),
        LandlockStatus::NotImplemented => Err(SandboxError::Unavailable(
            "the kernel is built without Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK is needed)"
                .into(),
        )),
        LandlockStatus::Available { effective_abi, .. } => abi_number(effective_abi),
    }
}

fn abi_number(abi: ABI) -> Result<u8, SandboxError> {
    // The enum is non-exhaustive and cannot be cast; its Display is the number.
    abi.to_string()
        .parse()
        .map_err(|_| SandboxError::Unavailable(format!("unknown Landlock ABI {abi}")))
}

pub(crate) fn enforce(policy: &SandboxPolicy) -> Result<Coverage, SandboxError> {
    // Mounts first: Landlock forbids a restricted process to change them.
    confine_mounts(policy)?;
    let landlock = |err: landlock::RulesetError| SandboxError::Landlock(err.to_string());
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(TARGET))
        .map_err(landlock)?;
    if !policy.network() {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(TARGET))
            .map_err(landlock)?;
    }
    let ruleset = ruleset.scope(Scope::from_all(TARGET)).map_err(landlock)?;
    let mut created = ruleset
        .create()
        .map_err(landlock)?
        // Folders can be listed anywhere; files are read beneath the
        // entries of `/` and `/dev` (below).
        .add_rules(path_beneath_rules(["/"], AccessFs::ReadDir))
        .map_err(landlock)?
        // Devices that do not exist here are skipped.
        .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(TARGET)))
        .map_err(landlock)?;
    for rule in path_beneath_rules(readable_paths(), AccessFs::from_read(TARGET)) {
        // One that Landlock takes no rule on (a pseudo-filesystem) stays
        // unreadable; the rest of the ruleset goes on.
        let _ = (&mut created).add_rule(rule.map_err(landlock)?);
    }
    for path in policy
        .writable()
        .iter()
        .map(|p| p.as_path())
        .chain(policy.tmp_dir())
    {
        // A writable path that cannot be opened is an error, not a rule
        // quietly left out: the command would lose its workspace.
        let fd = PathFd::new(path).map_err(|err| {
            SandboxError::Landlock(format!("cannot open {}: {err}", path.display()))
        })?;
        let access = if path.is_dir() {
            AccessFs::from_all(TARGET)
        } else {
            AccessFs::from_all(TARGET) & AccessFs::from_file(TARGET)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(landlock)?;
    }
    let status = created.restrict_self().map_err(landlock)?;
    let coverage = match status.ruleset {
        RulesetStatus::NotEnforced => {
            return Err(SandboxError::Unavailable(
                "the kernel enforces none of the ruleset".into(),
            ));
        }
        RulesetStatus::PartiallyEnforced => Coverage::Partial,
        RulesetStatus::FullyEnforced => Coverage::Full,
    };
    install_filters(policy.network())?;
    // The crate's status and the ABI agree on a kernel it knows; take the
    // stricter word.
    let by_abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => {
            coverage_for(abi_number(effective_abi).unwrap_or(0))
        }
        _ => Coverage::Partial,
    };
    Ok(if coverage == Coverage::Full && by_abi == Coverage::Full {
        Coverage::Full
    } else {
        Coverage::Partial
    })
}

/// Whether `name`, an entry of `/dev`, is a terminal (or the console's
/// screen or input): a command may not even read those, as reading the
/// user's terminal takes the keystrokes meant for it. Reading one through
/// `/proc/PID/fd` is refused too, since Landlock looks at the path the
/// link leads to.
fn is_terminal_device(name: &str) -> bool {
    matches!(name, "pts" | "ptmx" | "console" | "input")
        || name.starts_with("tty")
        || name.starts_with("vcs")
}

/// What a command may read (and execute): every entry of `/` but `/dev`,
/// and every entry of `/dev` but the terminals. An entry made after the
/// launch is not readable (programs do not add to `/`). Symbolic links are
/// left out: a rule on one would be on its target, which lies beneath
/// another entry anyway (or is a terminal, or, as `/dev/stdin` leads to
/// the launcher's own pipe, no path at all).
fn readable_paths() -> Vec<std::path::PathBuf> {
    let entries = |dir: &str| {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| entry.file_type().is_ok_and(|t| !t.is_symlink()))
            .map(|entry| entry.file_name())
            .collect::<Vec<_>>()
    };
    let mut paths = Vec::new();
    for name in entries("/") {
        if name != "dev" {
            paths.push(Path::new("/").join(name));
        }
    }
    for name in entries("/dev") {
        if !name.to_str().is_some_and(is_terminal_device) {
            paths.push(Path::new("/dev").join(name));
        }
    }
    paths
}

/// Puts the mounts of the policy in place, in a mount namespace of this
/// process's own (see [`enter_mount_namespace`]): everything read-only but
/// the writable paths ([`mounts::read_only_except`]), then the
/// version-control folders in them read-only again ([`protect_vcs`]).
///
/// When no namespace can be made (user namespaces disabled, as in some
/// containers, or a caller with other threads) nothing is mounted: Landlock
/// and the seccomp filter still hold, but modes and times outside the
/// writable paths can change (noted in the SPEC). That is refused only when
/// a version-control folder needs protecting, as before the rest was made
/// read-only: running without would leave it writable.
fn confine_mounts(policy: &SandboxPolicy) -> Result<(), SandboxError> {
    let vcs_paths = vcs::protected_paths(policy);
    // Taken before the mounts: the working folder is entered again after
    // them, since it would otherwise stay on the mount beneath the
    // writable copy bound over a root, which is read-only.
    let cwd = std::env::current_dir().ok();
    match enter_mount_namespace() {
        Ok(()) => {}
        Err(Namespace::Unavailable(reason)) => {
            return match vcs_paths.first() {
                Some(first) => Err(SandboxError::VcsProtection {
                    path: first.clone(),
                    reason,
                }),
                None => Ok(()),
            };
        }
        Err(Namespace::Failed { path, reason }) => {
            return Err(SandboxError::ReadOnlyMounts { path, reason });
        }
    }
    let writable = mounts::writable_mounts(
        policy
            .writable()
            .iter()
            .map(PathBuf::as_path)
            .chain(policy.tmp_dir()),
    );
    mounts::read_only_except(&writable).map_err(|failure| SandboxError::ReadOnlyMounts {
        path: failure.path,
        reason: failure.reason,
    })?;
    protect_vcs(&vcs_paths)?;
    if let Some(cwd) = cwd {
        // A folder removed meanwhile cannot be entered; the command then
        // starts where it would have anyway.
        let _ = std::env::set_current_dir(cwd);
    }
    Ok(())
}

/// Why no mount namespace was entered.
enum Namespace {
    /// None could be made; the process is as it was.
    Unavailable(String),
    /// One was made but not finished (its user ids unmapped, or its mounts
    /// still sharing events with the system's): the command must not run.
    Failed {
        /// What was being written or changed.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
}

/// Moves this process into a mount namespace of its own: entered directly
/// with `CAP_SYS_ADMIN`, else through a user namespace mapping only the
/// caller's own ids, so files keep their owners and permissions. Mount
/// events are then kept from flowing back to the system's namespace.
fn enter_mount_namespace() -> Result<(), Namespace> {
    if unshare(CloneFlags::CLONE_NEWNS).is_err() {
        // Without the privilege: a user namespace first. Its ids map to the
        // caller's own, so `id` and file owners look the same. From inside,
        // a process may map only its own ids; so a root without
        // CAP_SYS_ADMIN loses, in there, its rights over files of other
        // owners (noted in the SPEC).
        let (uid, gid) = (getuid(), getgid());
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(|err| {
            Namespace::Unavailable(format!("cannot make a user and mount namespace: {err}"))
        })?;
        for (file, text) in [
            // A gid map written from inside needs setgroups off first.
            ("/proc/self/setgroups", "deny".to_owned()),
            ("/proc/self/uid_map", format!("{uid} {uid} 1")),
            ("/proc/self/gid_map", format!("{gid} {gid} 1")),
        ] {
            std::fs::write(file, text).map_err(|err| Namespace::Failed {
                path: PathBuf::from(file),
                reason: format!("cannot write it: {err}"),
            })?;
        }
    }
    // The namespace starts as a copy whose mounts may share events with
    // the system's: as a slave it still sees the system's new mounts, and
    // its own stay in it.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_SLAVE,
        None::<&str>,
    )
    .map_err(|err| Namespace::Failed {
        path: PathBuf::from("/"),
        reason: format!("cannot make the mounts private: {err}"),
    })
}

/// Makes `paths` read-only to this process and all it starts, in the mount
/// namespace [`enter_mount_namespace`] made: each path bind-mounted
/// read-only onto itself. Writes there then fail with `EROFS`, and the
/// path cannot be renamed or removed (`EBUSY`). Nothing happens when
/// `paths` is empty.
fn protect_vcs(paths: &[PathBuf]) -> Result<(), SandboxError> {
    let failed =
        |path: &Path, what: &str, err: &dyn std::fmt::Display| SandboxError::VcsProtection {
            path: path.to_path_buf(),
            reason: format!("{what}: {err}"),
        };
    for path in paths {
        // Gone since it was found: nothing left to protect.
        if !mounts::bind_onto_itself(path).map_err(|err| failed(path, "cannot bind it", &err))? {
            continue;
        }
        // A remount in a user namespace must keep the flags the system
        // locked on the mount (nosuid, nodev, noexec, atime).
        let kept = statvfs(path)
            .map(|stat| locked_flags(stat.flags()))
            .map_err(|err| failed(path, "cannot read its mount flags", &err))?;
        mounts::remount_read_only(path, kept)
            .map_err(|err| failed(path, "cannot make it read-only", &err))?;
    }
    Ok(())
}

/// The mount flags a bind remount must repeat, from `statvfs`'s.
fn locked_flags(flags: FsFlags) -> MsFlags {
    [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ]
    .into_iter()
    .filter(|(st, _)| flags.contains(*st))
    .fold(MsFlags::empty(), |all, (_, ms)| all | ms)
}

/// `ioctl` requests that act on a terminal for someone else: `TIOCSTI`
/// pushes bytes into its input as if typed, `TIOCLINUX` (on a console)
/// can paste the selection and more.
const TERMINAL_IOCTLS: [u64; 2] = [libc::TIOCSTI, libc::TIOCLINUX];

/// Calls that change a file's owner or extended attributes (security
/// labels, file capabilities and ACLs among them). Landlock has no right
/// for them and seccomp cannot see the path, so they are refused
/// everywhere. Numbers from 463 up are newer than the `libc` crate's list
/// and the same on every architecture but alpha.
const METADATA_CALLS: &[i64] = &[
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chown,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_lchown,
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    // setxattrat, removexattrat (Linux 6.13).
    463,
    466,
    // file_setattr (Linux 6.17): inode flags and project ids.
    469,
    // mount_setattr: a command that is root in its user namespace could
    // clear a mount's read-only flag with it. Landlock refuses mount,
    // umount and remount; this one is refused here whatever Landlock
    // checks, as no command needs it.
    libc::SYS_mount_setattr,
];

/// Installs the seccomp filters (seccompiler gives one filter one action,
/// so there are two):
///
/// * `EPERM`: `ioctl` with a [`TERMINAL_IOCTLS`] request, compared on its
///   low 32 bits as the kernel reads it (the upper half cannot hide it),
///   and every call in [`METADATA_CALLS`];
/// * `EACCES`: `io_uring_setup` (a ring makes calls the filter never
///   sees), and without `network` `socket()` for any family but `AF_UNIX`.
fn install_filters(network: bool) -> Result<(), SandboxError> {
    fn seccomp(err: impl std::fmt::Display) -> SandboxError {
        SandboxError::Seccomp(err.to_string())
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(seccomp)?;
    let install = |rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32| {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(u32::try_from(errno).unwrap_or(1)),
            arch,
        )
        .map_err(seccomp)?;
        let program: BpfProgram = filter.try_into().map_err(seccomp)?;
        seccompiler::apply_filter(&program).map_err(seccomp)
    };

    let mut refused = BTreeMap::new();
    let mut ioctls = Vec::new();
    for request in TERMINAL_IOCTLS {
        let is = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
            .map_err(seccomp)?;
        ioctls.push(SeccompRule::new(vec![is]).map_err(seccomp)?);
    }
    refused.insert(libc::SYS_ioctl, ioctls);
    for &call in METADATA_CALLS {
        // An empty rule list matches the call whatever its arguments.
        refused.insert(call, vec![]);
    }
    install(refused, libc::EPERM)?;

    let mut denied = BTreeMap::new();
    denied.insert(libc::SYS_io_uring_setup, vec![]);
    if !network {
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            u64::try_from(libc::AF_UNIX).unwrap_or(1),
        )
        .map_err(seccomp)?;
        denied.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix]).map_err(seccomp)?],
        );
    }
    install(denied, libc::EACCES)
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;
    use std::net::{TcpListener, TcpStream, UdpSocket};

    use super::*;
    use crate::TARGET_ABI;

    #[test]
    fn the_target_enum_and_number_agree() {
        assert_eq!(abi_number(TARGET).unwrap(), TARGET_ABI);
    }

    /// Runs `check` on a thread restricted by `policy` (the restriction
    /// ends with the thread); `None` when this kernel has no Landlock.
    fn confined<T: Send + 'static>(
        policy: SandboxPolicy,
        check: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        if let Err(err) = probe_abi() {
            eprintln!("skipped: {err}");
            return None;
        }
        let thread = std::thread::spawn(move || {
            policy.enforce().unwrap();
            check()
        });
        Some(thread.join().unwrap())
    }

    #[test]
    fn writes_land_only_beneath_the_writable_paths_and_the_tmp_dir() {
        let outer = tempfile::tempdir().unwrap();
        let (ws, tmp, out) = (
            outer.path().join("ws"),
            outer.path().join("tmp"),
            outer.path().join("out"),
        );
        for dir in [&ws, &tmp, &out] {
            std::fs::create_dir(dir).unwrap();
        }
        let policy = SandboxPolicy::new(vec![ws.clone()], vec![])
            .unwrap()
            .with_tmp_dir(&tmp)
            .unwrap();
        let (ws2, tmp2, out2) = (ws.clone(), tmp.clone(), out.clone());
        let Some(results) = confined(policy, move || {
            [
                std::fs::write(ws2.join("a"), "x").map_err(|e| e.kind()),
                std::fs::write(tmp2.join("b"), "x").map_err(|e| e.kind()),
                std::fs::write(out2.join("c"), "x").map_err(|e| e.kind()),
                std::fs::write("/dev/null", "x").map_err(|e| e.kind()),
                std::fs::read("/etc/passwd").map(drop).map_err(|e| e.kind()),
            ]
        }) else {
            return;
        };
        assert_eq!(results[0], Ok(()));
        assert_eq!(results[1], Ok(()));
        assert_eq!(results[2], Err(ErrorKind::PermissionDenied));
        assert_eq!(results[3], Ok(()));
        assert_eq!(results[4], Ok(()));
        assert!(!out.join("c").exists());
    }

    #[test]
    fn the_network_is_off_unless_allowed() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let off = SandboxPolicy::new(vec![], vec![]).unwrap();
        let Some((tcp, udp, unix)) = confined(off, move || {
            (
                TcpStream::connect(addr).map(drop).map_err(|e| e.kind()),
                UdpSocket::bind("127.0.0.1:0")
                    .map(drop)
                    .map_err(|e| e.kind()),
                std::os::unix::net::UnixDatagram::unbound()
                    .map(drop)
                    .map_err(|e| e.kind()),
            )
        }) else {
            return;
        };
        assert_eq!(tcp, Err(ErrorKind::PermissionDenied));
        assert_eq!(udp, Err(ErrorKind::PermissionDenied));
        assert_eq!(unix, Ok(()));
        let on = SandboxPolicy::new(vec![], vec![])
            .unwrap()
            .with_network(true);
        let tcp = confined(on, move || {
            TcpStream::connect(addr).map(drop).map_err(|e| e.kind())
        });
        assert_eq!(tcp, Some(Ok(())));
    }

    #[test]
    fn ownership_and_extended_attributes_cannot_be_changed_even_inside() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let inside = ws.join("f");
        std::fs::write(&inside, "x").unwrap();
        let policy = SandboxPolicy::new(vec![ws], vec![]).unwrap();
        let me = std::fs::metadata(&inside).unwrap();
        let (uid, gid) = (
            std::os::unix::fs::MetadataExt::uid(&me),
            std::os::unix::fs::MetadataExt::gid(&me),
        );
        let path = inside.clone();
        let Some(results) = confined(policy, move || {
            let errno = |r: std::io::Result<()>| r.map_err(|e| e.raw_os_error());
            [
                // Even a change to the owner it already has.
                errno(std::os::unix::fs::chown(&path, Some(uid), Some(gid))),
                errno(std::os::unix::fs::lchown(&path, Some(uid), None)),
                errno(xattr::set(&path, "user.tag", b"x")),
                errno(xattr::remove(&path, "user.tag")),
                // What Landlock allows is unchanged: the file can be written.
                errno(std::fs::write(&path, "y")),
            ]
        }) else {
            return;
        };
        let eperm = Err(Some(libc::EPERM));
        assert_eq!(results[..4], [eperm, eperm, eperm, eperm], "{results:?}");
        assert_eq!(results[4], Ok(()));
    }

    #[test]
    fn typing_into_a_terminal_is_refused_with_or_without_network() {
        let probe = [
            "import errno, fcntl, termios",
            "def ioctl(request):",
            "    try:",
            "        fcntl.ioctl(0, request, b'x')",
            "        return 'ok'",
            "    except OSError as e:",
            "        return errno.errorcode[e.errno]",
            "print('sti', ioctl(termios.TIOCSTI))",
            "print('linux', ioctl(0x541C))",
        ]
        .join("\n");
        let run = move |probe: String| {
            std::process::Command::new("python3")
                .args(["-c", &probe])
                .stdin(std::fs::File::open("/dev/null").unwrap())
                .output()
                .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let Ok(unconfined) = run(probe.clone()) else {
            eprintln!("skipped: no python3");
            return;
        };
        // On /dev/null, which is no terminal, the kernel answers ENOTTY:
        // the filter's EPERM comes before it.
        assert_eq!(unconfined, "sti ENOTTY\nlinux ENOTTY\n");
        for network in [false, true] {
            let policy = SandboxPolicy::new(vec![], vec![])
                .unwrap()
                .with_network(network);
            let probe = probe.clone();
            let Some(output) = confined(policy, move || run(probe)) else {
                return;
            };
            assert_eq!(output.unwrap(), "sti EPERM\nlinux EPERM\n");
        }
    }

    #[test]
    fn changing_mount_attributes_is_refused() {
        // The call has no wrapper here: Python makes it through libc.
        let probe = [
            "import ctypes, errno".to_owned(),
            "libc = ctypes.CDLL(None, use_errno=True)".to_owned(),
            format!(
                "libc.syscall({}, -1, None, 0, None, 0)",
                libc::SYS_mount_setattr
            ),
            "print(errno.errorcode[ctypes.get_errno()])".to_owned(),
        ]
        .join("\n");
        let run = move |probe: String| {
            std::process::Command::new("python3")
                .args(["-c", &probe])
                .output()
                .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let Ok(unconfined) = run(probe.clone()) else {
            eprintln!("skipped: no python3");
            return;
        };
        // Unconfined, the kernel looks at the arguments (none are valid).
        assert!(
            ["EINVAL\n", "EBADF\n"].contains(&unconfined.as_str()),
            "{unconfined}"
        );
        let policy = SandboxPolicy::new(vec![], vec![]).unwrap();
        let Some(output) = confined(policy, move || run(probe)) else {
            return;
        };
        assert_eq!(output.unwrap(), "EPERM\n");
    }

    #[test]
    fn terminals_are_not_writable() {
        let Some(results) = confined(SandboxPolicy::new(vec![], vec![]).unwrap(), || {
            ["/dev/ptmx", "/dev/tty"].map(|dev| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(dev)
                    .map(drop)
                    .map_err(|e| e.kind())
            })
        }) else {
            return;
        };
        assert_eq!(results, [Err(ErrorKind::PermissionDenied); 2]);
    }

    #[test]
    fn terminals_cannot_be_read_and_everything_else_can() {
        let Some(results) = confined(SandboxPolicy::new(vec![], vec![]).unwrap(), || {
            let open = |path: &str| std::fs::File::open(path).map(drop).map_err(|e| e.kind());
            let ptys: Vec<_> = std::fs::read_dir("/dev/pts")
                .into_iter()
                .flatten()
                .flatten()
                .map(|entry| open(&entry.path().to_string_lossy()))
                .collect();
            (
                [
                    open("/dev/tty"),
                    open("/dev/urandom"),
                    open("/etc/passwd"),
                    open("/proc/self/status"),
                ],
                std::fs::read_dir("/dev/pts")
                    .map(drop)
                    .map_err(|e| e.kind()),
                ptys,
            )
        }) else {
            return;
        };
        let (files, listing, ptys) = results;
        assert_eq!(
            files,
            [Err(ErrorKind::PermissionDenied), Ok(()), Ok(()), Ok(())]
        );
        assert_eq!(listing, Ok(()), "folders can still be listed");
        assert!(
            ptys.iter().all(|r| *r == Err(ErrorKind::PermissionDenied)),
            "{ptys:?}"
        );
        assert!(is_terminal_device("tty7") && is_terminal_device("pts"));
        assert!(!is_terminal_device("null") && !is_terminal_device("shm"));
    }

    #[test]
    fn a_missing_writable_path_is_an_error() {
        if probe_abi().is_err() {
            return;
        }
        let outer = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy::new(vec![outer.path().join("gone")], vec![]).unwrap();
        let err = std::thread::spawn(move || policy.enforce().unwrap_err())
            .join()
            .unwrap();
        assert!(matches!(err, SandboxError::Landlock(_)), "{err}");
        assert!(err.to_string().contains("gone"), "{err}");
    }
}
