//! Confines the commands agent-tools runs.
//!
//! A [`SandboxPolicy`] says where a command may write (the writable roots,
//! a private temporary folder and the usual devices) and whether it may
//! reach the network. Everything else but the terminals stays readable and
//! executable, so compilers and interpreters work; read-only roots get no
//! write right.
//!
//! The policy travels to the command's launcher as arguments
//! ([`SandboxPolicy::to_args`] / [`SandboxPolicy::take_args`]); the
//! launcher calls [`SandboxPolicy::enforce`] on itself before it starts the
//! command, which inherits the restriction and cannot shed it:
//!
//! * **Files** with Landlock: reads and execution everywhere but the
//!   terminal devices, writes (create, modify, delete, rename, truncate,
//!   device ioctls) only beneath the writable paths and [`DEVICES`].
//!   Terminals are not among them: a command may neither read, write nor
//!   control one.
//! * **Version-control folders** ([`VCS_DIRS`]) at the top of a writable
//!   path stay read-only unless the policy allows writing them
//!   ([`SandboxPolicy::with_vcs_writes`]): Landlock only adds rights along a
//!   path, so a writable root would make its `.git` writable too. Instead
//!   the launcher enters a mount namespace of its own (through a user
//!   namespace when it lacks the privilege) and bind-mounts each such
//!   folder read-only onto itself. Git would otherwise run hooks and
//!   settings a command planted there, unconfined, at the user's next
//!   commit.
//! * **Everything else read-only** in that mount namespace, made for every
//!   command: each writable path (and the temporary folder) is bound onto
//!   itself, and every other mount is remounted read-only. Landlock has no
//!   right for a file's mode or times, and seccomp cannot see the path of a
//!   `chmod` or `utimensat`; a read-only mount refuses them (`EROFS`)
//!   outside the writable paths, and in read-only roots. Where no
//!   namespace can be made (user namespaces disabled), commands still run,
//!   and only this is missing.
//! * **A seccomp filter**, always: `ioctl` `TIOCSTI` and `TIOCLINUX` (typing
//!   into a terminal), changes of ownership (the `chown` family) and of
//!   extended attributes (the `setxattr` and `removexattr` families) fail
//!   with `EPERM`, and `io_uring_setup` with `EACCES` (a ring could make
//!   those calls, and open sockets, past the filter). Landlock has no right
//!   for metadata, and seccomp cannot see paths, so ownership and extended
//!   attributes are refused everywhere, inside the writable paths too.
//! * **Network**, when it is off: Landlock denies TCP `connect` and `bind`
//!   (ABI 4 and later), and the seccomp filter also refuses to create any
//!   socket that is not a Unix socket (UDP, raw, netlink, ...).
//! * **Scopes** (ABI 6 and later): no signal to a process outside the
//!   sandbox (the server, say), no connection to an abstract Unix socket
//!   made outside it.
//!
//! Enforcement needs Linux with Landlock; [`landlock_abi`] tells whether the
//! running kernel has it. No `unsafe` here: the `landlock`, `seccompiler`
//! and `nix` crates make the system calls.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::ffi::{OsStr, OsString};
use std::iter::Peekable;
use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod mounts;
// Only Linux can bind the folders read-only; the search is portable.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod vcs;

/// Device files a sandboxed command may write to (and open for ioctls),
/// when they exist: what shells, compilers and test runners expect to use.
/// No terminal is among them (`/dev/tty`, `/dev/ptmx`, `/dev/pts/`): a
/// command could otherwise type into the user's terminal (`TIOCSTI`) or
/// paint on it. Commands get no terminal from the server, so none needs one.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Version-control folders kept read-only at the top of each writable path
/// (unless the policy allows writing them): git's, Mercurial's, Jujutsu's
/// and Subversion's. A `.git` file (a linked worktree or a submodule) is
/// kept read-only too, and so are the folders it names when they lie in a
/// writable path.
pub const VCS_DIRS: &[&str] = &[".git", ".hg", ".jj", ".svn"];

/// The argument that starts a policy among a launcher's arguments.
pub const SANDBOX_ARG: &str = "--sandbox";
const WRITE_ARG: &str = "--sandbox-write";
const READ_ONLY_ARG: &str = "--sandbox-read-only";
const TMP_ARG: &str = "--sandbox-tmp";
const NETWORK_ARG: &str = "--sandbox-network";
const VCS_WRITES_ARG: &str = "--sandbox-allow-vcs-writes";

/// The environment variable the private temporary folder is exported as.
pub const TMPDIR_VAR: &str = "TMPDIR";

/// What a confined command may do. Built with [`SandboxPolicy::new`]; the
/// paths are absolute and no read-only path lies beneath a writable one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    writable: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    tmp_dir: Option<PathBuf>,
    network: bool,
    vcs_writes: bool,
}

/// Why a policy is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A path is relative: a policy must not depend on a working directory.
    #[error("sandbox path {} is not absolute", .0.display())]
    NotAbsolute(PathBuf),
    /// A read-only path lies beneath a writable one. Landlock only adds
    /// rights along a path, so such a folder would be writable after all.
    #[error(
        "read-only root {} lies inside writable root {}: the sandbox cannot make it read-only",
        read_only.display(),
        writable.display()
    )]
    ReadOnlyInsideWritable {
        /// The read-only path.
        read_only: PathBuf,
        /// The writable path holding it.
        writable: PathBuf,
    },
    /// The launcher arguments do not spell a policy.
    #[error("malformed sandbox arguments: {0}")]
    MalformedArgs(String),
}

/// Why a policy could not be put in force.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel has no Landlock (too old, not built in, not enabled at
    /// boot), or this is not Linux.
    #[error("Landlock is not available: {0}")]
    Unavailable(String),
    /// Landlock refused the ruleset or a rule (a writable path that cannot
    /// be opened, say).
    #[error("the Landlock ruleset could not be applied: {0}")]
    Landlock(String),
    /// The seccomp filter could not be built or installed.
    #[error("the seccomp filter could not be installed: {0}")]
    Seccomp(String),
    /// The version-control folders could not be made read-only: no mount
    /// namespace could be made (user namespaces disabled, say) or a bind
    /// mount failed. The policy can allow writing them instead.
    #[error("the version-control folder {} could not be made read-only: {reason}", path.display())]
    VcsProtection {
        /// The folder (or `.git` file) to protect.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// A mount namespace was made, but the filesystem outside the writable
    /// paths could not be made read-only in it (or the namespace could not
    /// be finished): a mount refused the change, say.
    #[error("the filesystem outside the writable paths could not be made read-only at {}: {reason}", path.display())]
    ReadOnlyMounts {
        /// The mount (or namespace file) being changed.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
}

/// How much of a policy the kernel enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Everything the policy asks for.
    Full,
    /// Part of it: the kernel's Landlock is older than the ABI the policy
    /// targets ([`TARGET_ABI`]), so some rights are not handled (see the
    /// SPEC's list of what each ABI adds).
    Partial,
}

/// The Landlock ABI the rulesets are written for: the newest one tested.
/// A newer kernel enforces it fully; an older one partially.
pub const TARGET_ABI: u8 = 7;

/// The Landlock ABI of the running kernel (as far as the `landlock` crate
/// knows ABIs), or why there is none.
pub fn landlock_abi() -> Result<u8, SandboxError> {
    #[cfg(target_os = "linux")]
    {
        linux::probe_abi()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(SandboxError::Unavailable(
            "Landlock exists only on Linux".into(),
        ))
    }
}

/// What the coverage of a policy on a kernel with `abi` is.
pub fn coverage_for(abi: u8) -> Coverage {
    if abi >= TARGET_ABI {
        Coverage::Full
    } else {
        Coverage::Partial
    }
}

impl SandboxPolicy {
    /// A policy letting commands write beneath `writable` only, with
    /// `read_only` paths named read-only, network off and no temporary
    /// folder. Fails when a path is relative or a read-only path lies
    /// beneath a writable one. Give canonical paths: the check is lexical.
    pub fn new(writable: Vec<PathBuf>, read_only: Vec<PathBuf>) -> Result<Self, PolicyError> {
        for path in writable.iter().chain(&read_only) {
            if !path.is_absolute() {
                return Err(PolicyError::NotAbsolute(path.clone()));
            }
        }
        for ro in &read_only {
            if let Some(w) = writable.iter().find(|w| ro.starts_with(w)) {
                return Err(PolicyError::ReadOnlyInsideWritable {
                    read_only: ro.clone(),
                    writable: w.clone(),
                });
            }
        }
        Ok(SandboxPolicy {
            writable,
            read_only,
            tmp_dir: None,
            network: false,
            vcs_writes: false,
        })
    }

    /// Adds a private temporary folder: writable, and exported to the
    /// command as `TMPDIR`.
    pub fn with_tmp_dir(mut self, dir: impl Into<PathBuf>) -> Result<Self, PolicyError> {
        let dir = dir.into();
        if !dir.is_absolute() {
            return Err(PolicyError::NotAbsolute(dir));
        }
        if let Some(ro) = self.read_only.iter().find(|ro| ro.starts_with(&dir)) {
            return Err(PolicyError::ReadOnlyInsideWritable {
                read_only: ro.clone(),
                writable: dir,
            });
        }
        self.tmp_dir = Some(dir);
        Ok(self)
    }

    /// Allows (`true`) or denies (`false`, the default) the network.
    pub fn with_network(mut self, allowed: bool) -> Self {
        self.network = allowed;
        self
    }

    /// Lets commands write the version-control folders ([`VCS_DIRS`]) of
    /// the writable paths (`true`), or keeps them read-only (`false`, the
    /// default). Read-only, a command cannot plant a hook or a setting that
    /// git later runs outside the sandbox; but `git commit` and the like
    /// fail inside it.
    pub fn with_vcs_writes(mut self, allowed: bool) -> Self {
        self.vcs_writes = allowed;
        self
    }

    /// Whether commands may write the version-control folders.
    pub fn vcs_writes(&self) -> bool {
        self.vcs_writes
    }

    /// The paths commands may write beneath (the temporary folder aside).
    pub fn writable(&self) -> &[PathBuf] {
        &self.writable
    }

    /// The paths named read-only.
    pub fn read_only(&self) -> &[PathBuf] {
        &self.read_only
    }

    /// The private temporary folder, if any.
    pub fn tmp_dir(&self) -> Option<&Path> {
        self.tmp_dir.as_deref()
    }

    /// Whether the network is allowed.
    pub fn network(&self) -> bool {
        self.network
    }

    /// The policy as launcher arguments: [`SANDBOX_ARG`] and its options.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args = vec![OsString::from(SANDBOX_ARG)];
        for path in &self.writable {
            args.push(WRITE_ARG.into());
            args.push(path.into());
        }
        for path in &self.read_only {
            args.push(READ_ONLY_ARG.into());
            args.push(path.into());
        }
        if let Some(tmp) = &self.tmp_dir {
            args.push(TMP_ARG.into());
            args.push(tmp.into());
        }
        if self.network {
            args.push(NETWORK_ARG.into());
        }
        if self.vcs_writes {
            args.push(VCS_WRITES_ARG.into());
        }
        args
    }

    /// Reads a policy from launcher arguments when the next one is
    /// [`SANDBOX_ARG`]: takes its options, up to (not including) the first
    /// argument that is none of them. `Ok(None)` when no policy starts
    /// here (nothing is taken).
    pub fn take_args<I: Iterator<Item = OsString>>(
        args: &mut Peekable<I>,
    ) -> Result<Option<Self>, PolicyError> {
        if args.next_if(|a| a == SANDBOX_ARG).is_none() {
            return Ok(None);
        }
        let (mut writable, mut read_only, mut tmp) = (vec![], vec![], None);
        let (mut network, mut vcs_writes) = (false, false);
        let value = |args: &mut Peekable<I>, flag: &str| {
            args.next()
                .map(PathBuf::from)
                .ok_or_else(|| PolicyError::MalformedArgs(format!("{flag} needs a path")))
        };
        while let Some(flag) = args.peek().map(OsString::as_os_str) {
            if flag == OsStr::new(WRITE_ARG) {
                args.next();
                writable.push(value(args, WRITE_ARG)?);
            } else if flag == OsStr::new(READ_ONLY_ARG) {
                args.next();
                read_only.push(value(args, READ_ONLY_ARG)?);
            } else if flag == OsStr::new(TMP_ARG) {
                args.next();
                if tmp.replace(value(args, TMP_ARG)?).is_some() {
                    return Err(PolicyError::MalformedArgs(format!("{TMP_ARG} given twice")));
                }
            } else if flag == OsStr::new(NETWORK_ARG) {
                args.next();
                network = true;
            } else if flag == OsStr::new(VCS_WRITES_ARG) {
                args.next();
                vcs_writes = true;
            } else {
                break;
            }
        }
        let mut policy = SandboxPolicy::new(writable, read_only)?
            .with_network(network)
            .with_vcs_writes(vcs_writes);
        if let Some(tmp) = tmp {
            policy = policy.with_tmp_dir(tmp)?;
        }
        Ok(Some(policy))
    }

    /// Restricts the calling thread, and every process it starts from now
    /// on, to the policy; irreversible. Call it in a single-threaded process
    /// (a launcher) just before starting the command: the process moves to
    /// a mount namespace of its own (and a user namespace, which a process
    /// with other threads cannot enter) where all but the writable paths is
    /// read-only. Where none can be made, the rest holds without it, unless
    /// a version-control folder needs it.
    ///
    /// Returns how much the kernel enforces. Fails, leaving the caller
    /// unrestricted or partly restricted, when Landlock is missing or
    /// enforces nothing, a rule cannot be added (a writable path that does
    /// not exist, say), a version-control folder or another mount cannot be
    /// made read-only, or the seccomp filter cannot be installed: the
    /// caller must then not run the command.
    pub fn enforce(&self) -> Result<Coverage, SandboxError> {
        #[cfg(target_os = "linux")]
        {
            linux::enforce(self)
        }
        #[cfg(not(target_os = "linux"))]
        {
            Err(SandboxError::Unavailable(
                "Landlock exists only on Linux".into(),
            ))
        }
    }
}

/// What a refused write or connection looks like in a command's output:
/// the messages of `EACCES`, `EPERM`, `EROFS` and `ECONNREFUSED`.
pub const REFUSAL_PHRASES: &[&str] = &[
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
    "Connection refused",
];

/// Whether `output` holds one of [`REFUSAL_PHRASES`]: a hint, not a proof,
/// that a sandbox refused the command something.
pub fn mentions_refusal(output: &str) -> bool {
    REFUSAL_PHRASES.iter().any(|phrase| output.contains(phrase))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn relative_paths_are_refused() {
        assert_eq!(
            SandboxPolicy::new(vec![p("ws")], vec![]),
            Err(PolicyError::NotAbsolute(p("ws")))
        );
        assert_eq!(
            SandboxPolicy::new(vec![], vec![p("ro")]),
            Err(PolicyError::NotAbsolute(p("ro")))
        );
        let policy = SandboxPolicy::new(vec![p("/ws")], vec![]).unwrap();
        assert_eq!(
            policy.with_tmp_dir("tmp"),
            Err(PolicyError::NotAbsolute(p("tmp")))
        );
    }

    #[test]
    fn read_only_inside_writable_is_refused() {
        let err = SandboxPolicy::new(vec![p("/a")], vec![p("/a/b")]).unwrap_err();
        assert_eq!(
            err,
            PolicyError::ReadOnlyInsideWritable {
                read_only: p("/a/b"),
                writable: p("/a")
            }
        );
        assert!(err.to_string().contains("cannot make it read-only"));
        // The other way round is fine: a writable folder in a read-only one.
        let policy = SandboxPolicy::new(vec![p("/a/b")], vec![p("/a")]).unwrap();
        assert!(matches!(
            policy.with_tmp_dir("/"),
            Err(PolicyError::ReadOnlyInsideWritable { .. })
        ));
        // A sibling with a common prefix is not inside.
        assert!(SandboxPolicy::new(vec![p("/a")], vec![p("/ab")]).is_ok());
    }

    #[test]
    fn args_round_trip_and_stop_at_the_first_other_argument() {
        let policy = SandboxPolicy::new(vec![p("/w1"), p("/w 2")], vec![p("/ro")])
            .unwrap()
            .with_tmp_dir("/tmp/x")
            .unwrap()
            .with_network(true)
            .with_vcs_writes(true);
        let mut args = policy.to_args();
        args.push("--".into());
        args.push("sh".into());
        let mut iter = args.into_iter().peekable();
        let back = SandboxPolicy::take_args(&mut iter).unwrap();
        assert_eq!(back, Some(policy));
        assert_eq!(iter.next(), Some(OsString::from("--")));

        let off = SandboxPolicy::new(vec![], vec![]).unwrap();
        assert!(!off.vcs_writes() && !off.network());
        let mut iter = off.to_args().into_iter().peekable();
        assert_eq!(SandboxPolicy::take_args(&mut iter).unwrap(), Some(off));

        let mut none = vec![OsString::from("--"), "sh".into()]
            .into_iter()
            .peekable();
        assert_eq!(SandboxPolicy::take_args(&mut none).unwrap(), None);
        assert_eq!(none.next(), Some(OsString::from("--")));
    }

    #[test]
    fn malformed_args_are_refused() {
        let take = |list: &[&str]| {
            let mut iter = list
                .iter()
                .map(OsString::from)
                .collect::<Vec<_>>()
                .into_iter()
                .peekable();
            SandboxPolicy::take_args(&mut iter)
        };
        assert!(matches!(
            take(&["--sandbox", "--sandbox-write"]),
            Err(PolicyError::MalformedArgs(_))
        ));
        assert!(matches!(
            take(&["--sandbox", "--sandbox-tmp", "/a", "--sandbox-tmp", "/b"]),
            Err(PolicyError::MalformedArgs(_))
        ));
        assert!(matches!(
            take(&["--sandbox", "--sandbox-write", "rel"]),
            Err(PolicyError::NotAbsolute(_))
        ));
    }

    #[test]
    fn refusals_are_recognised_by_their_messages() {
        assert!(mentions_refusal(
            "touch: cannot touch '/x': Permission denied"
        ));
        assert!(mentions_refusal("curl: (7) Connection refused"));
        assert!(!mentions_refusal("all good"));
        assert_eq!(coverage_for(TARGET_ABI), Coverage::Full);
        assert_eq!(coverage_for(TARGET_ABI + 1), Coverage::Full);
        assert_eq!(coverage_for(3), Coverage::Partial);
    }
}
