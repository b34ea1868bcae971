//! Landlock and seccomp on Linux.

use std::collections::BTreeMap;

use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::{Coverage, DEVICES, SandboxError, SandboxPolicy, coverage_for};

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
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(TARGET)))
        .map_err(landlock)?
        // Devices that do not exist here are skipped.
        .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(TARGET)))
        .map_err(landlock)?;
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
    if !policy.network() {
        deny_sockets()?;
    }
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

/// Installs the seccomp filter for a sandbox without network: `socket()`
/// for any family but `AF_UNIX` and `io_uring_setup()` fail with `EACCES`.
fn deny_sockets() -> Result<(), SandboxError> {
    fn seccomp(err: impl std::fmt::Display) -> SandboxError {
        SandboxError::Seccomp(err.to_string())
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(seccomp)?;
    let not_unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        u64::try_from(libc::AF_UNIX).unwrap_or(1),
    )
    .map_err(seccomp)?;
    let mut rules = BTreeMap::new();
    rules.insert(
        libc::SYS_socket,
        vec![SeccompRule::new(vec![not_unix]).map_err(seccomp)?],
    );
    // An empty rule list matches the call whatever its arguments.
    rules.insert(libc::SYS_io_uring_setup, vec![]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(libc::EACCES).unwrap_or(13)),
        arch,
    )
    .map_err(seccomp)?;
    let program: BpfProgram = filter.try_into().map_err(seccomp)?;
    seccompiler::apply_filter(&program).map_err(seccomp)
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
