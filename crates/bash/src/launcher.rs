//! The launcher: a small process between the caller and the shell that ties
//! the command's life to the caller's. A binary offers it as a subcommand
//! (the `agent-tools` binary as `agent-tools __run-command`) and passes
//! itself to the runner as a [`Launcher`](crate::Launcher).
//!
//! What it does, in order:
//!
//! 1. Starts a session of its own (`setsid`), before anything else: the
//!    command then has no controlling terminal (`/dev/tty` gives `ENXIO`),
//!    so it cannot type into the terminal the server was started from, and
//!    the launcher leads the command's process group (the group's id is the
//!    launcher's pid, as the runner expects). If it cannot, nothing is run.
//!    Until this is done the launcher is in its caller's group; the runner
//!    signals the launcher alone in that moment, before anything started.
//! 2. Blocks `SIGTERM`, `SIGINT`, `SIGHUP` and `SIGCHLD` and takes them from a
//!    signalfd instead (no signal handler: the crate forbids unsafe code).
//! 3. Asks the kernel for `SIGHUP` when its parent dies (`PR_SET_PDEATHSIG`),
//!    then checks that the parent named by `--parent-pid` is still its
//!    parent: if the caller died before that, it gives up at once.
//! 4. Becomes a child subreaper: a descendant whose parent dies is handed to
//!    the launcher, not to init, so every process the command starts stays
//!    in the launcher's subtree, `setsid` or not.
//! 5. With a sandbox policy among its arguments
//!    ([`SandboxPolicy::to_args`]), restricts itself to it
//!    ([`SandboxPolicy::enforce`]); the shell and all it starts inherit the
//!    restriction, and the shell gets the policy's temporary folder as
//!    `TMPDIR`. If the policy cannot be put in force, nothing is run: the
//!    reason goes to stderr and the launcher exits with
//!    [`EXIT_NOT_STARTED`]. The launcher's own work (signals, reaping,
//!    reading `/proc`) needs no right the sandbox takes away.
//! 6. With [`TAKE_TERMINAL_ARG`] (a job in a pseudo-terminal), takes its
//!    standard input as its controlling terminal, so the terminal's group
//!    is the command's. A job's `SIGINT`, `SIGQUIT` and `SIGTSTP` (its
//!    terminal keys) are left to the command.
//! 7. Starts the shell as its child, in its own process group and session.
//! 8. Waits. When the shell ends, it exits the same way: with the shell's
//!    exit code, or by raising the signal that killed it. Background jobs
//!    are left running, as without a launcher. With [`WAIT_FOR_DESCENDANTS_ARG`]
//!    (a background command) it waits on until every descendant has ended
//!    too, so that stopping the command later still reaches the ones that
//!    left its process group: it has descendants exactly as long as it has
//!    children, since orphans are handed to it. With
//!    [`REPORT_SHELL_EXIT_ARG`] as well (a plain command whose background
//!    children belong to the caller's connection), it lets go of its own
//!    copies of the output pipes and, when the shell ends while children
//!    are left, tells the caller how the shell ended on its standard input
//!    (a pipe the caller reads; the shell gets `/dev/null` instead), so the
//!    caller's call ends with the shell while the launcher stays with the
//!    children. With none left it exits as the shell did, reporting
//!    nothing.
//! 9. On `SIGTERM`, or `SIGINT` for a plain command (the runner's group kill at a timeout or
//!    cancellation reaches the launcher too) it `SIGKILL`s every descendant
//!    that left the process group, which the group kill cannot reach, and
//!    keeps waiting for the shell. On `SIGHUP` from a dead parent it kills
//!    those and then the whole group, itself included.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};

use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, killpg, raise, sigprocmask};
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, dup2_stderr, dup2_stdout, getpgrp, getpid, getppid, setsid};

use agent_tools_sandbox::{SandboxError, SandboxPolicy, TMPDIR_VAR};

use crate::procs;

/// The argument that precedes the caller's process id.
pub const PARENT_PID_ARG: &str = "--parent-pid";

/// The argument (after the parent's pid) that keeps the launcher until
/// every descendant of the shell has ended, not just the shell.
pub const WAIT_FOR_DESCENDANTS_ARG: &str = "--wait-for-descendants";

/// The argument (after [`WAIT_FOR_DESCENDANTS_ARG`]) that makes the
/// launcher take its standard input, a pseudo-terminal's slave, as the
/// controlling terminal of its new session: the terminal's Ctrl-C then
/// reaches the command's process group as `SIGINT`, and the terminal's
/// hang-up as `SIGHUP`.
pub const TAKE_TERMINAL_ARG: &str = "--take-terminal";

/// The argument (after [`WAIT_FOR_DESCENDANTS_ARG`], instead of
/// [`TAKE_TERMINAL_ARG`]) that makes the launcher write how the shell
/// ended to its standard input, a pipe's write end, as soon as it ends
/// (one line: `exit CODE` or `signal NUMBER`), while it stays for the
/// shell's descendants. The shell's own standard input is `/dev/null`.
pub const REPORT_SHELL_EXIT_ARG: &str = "--report-shell-exit";

/// Exit code when the arguments are wrong.
pub const EXIT_USAGE: i32 = 125;
/// Exit code when the caller died before the shell could start, or the
/// shell could not be started.
pub const EXIT_NOT_STARTED: i32 = 126;

/// Runs the launcher with its arguments (`--parent-pid PID
/// [--wait-for-descendants [--take-terminal | --report-shell-exit]]
/// [POLICY...] -- PROGRAM ARGS...`, without the
/// binary's own name or subcommand) and returns the exit code to end with.
/// When the shell was killed by a signal, the launcher raises that signal
/// on itself and does not return.
pub fn main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let mut args = args.into_iter().peekable();
    if args.peek().is_some_and(|a| a == EXEC_UNBLOCKED_ARG) {
        args.next();
        return exec_unblocked(args);
    }
    // First of all, so that the runner's group signals reach the launcher
    // as early as they can (see step 1 above).
    if let Err(err) = setsid() {
        eprintln!("agent-tools launcher: cannot start a session of its own: {err}");
        return EXIT_NOT_STARTED;
    }
    let (Some(flag), Some(parent)) = (args.next(), args.next()) else {
        return usage();
    };
    let Some(parent) = parent.to_str().and_then(|p| p.parse::<i32>().ok()) else {
        return usage();
    };
    let wait_for_descendants = args.next_if(|a| a == WAIT_FOR_DESCENDANTS_ARG).is_some();
    let take_terminal = args.next_if(|a| a == TAKE_TERMINAL_ARG).is_some();
    let report_shell_exit = args.next_if(|a| a == REPORT_SHELL_EXIT_ARG).is_some();
    if report_shell_exit && (take_terminal || !wait_for_descendants) {
        // The report goes where a terminal would be; and a launcher that
        // leaves with the shell has nothing to report early.
        return usage();
    }
    let sandbox = match SandboxPolicy::take_args(&mut args) {
        Ok(sandbox) => sandbox,
        Err(err) => {
            eprintln!("agent-tools launcher: {err}");
            return EXIT_USAGE;
        }
    };
    if flag != PARENT_PID_ARG || args.next().is_none_or(|dashes| dashes != "--") {
        return usage();
    }
    let Some(program) = args.next() else {
        return usage();
    };
    let rest: Vec<OsString> = args.collect();

    let mut signals = SigSet::empty();
    for signal in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGCHLD,
        // A job's terminal keys (Ctrl-\, Ctrl-Z) and terminal I/O reach the
        // launcher's group too; they are meant for the command, and must
        // neither kill nor stop the launcher. The child clears the mask.
        Signal::SIGQUIT,
        Signal::SIGTSTP,
        Signal::SIGTTIN,
        Signal::SIGTTOU,
    ] {
        signals.add(signal);
    }
    if let Err(err) = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&signals), None) {
        eprintln!("agent-tools launcher: cannot block signals: {err}");
        return EXIT_NOT_STARTED;
    }
    let Ok(signalfd) = SignalFd::new(&signals) else {
        eprintln!("agent-tools launcher: cannot create a signalfd");
        return EXIT_NOT_STARTED;
    };
    if prctl::set_pdeathsig(Signal::SIGHUP).is_err() || getppid().as_raw() != parent {
        // The caller is gone (or cannot be watched): run nothing.
        return EXIT_NOT_STARTED;
    }
    let _ = prctl::set_child_subreaper(true);
    let mut report = None;
    if report_shell_exit {
        match std::io::stdin().as_fd().try_clone_to_owned() {
            Ok(fd) => report = Some(std::fs::File::from(fd)),
            Err(err) => {
                eprintln!("agent-tools launcher: cannot take the report pipe: {err}");
                return EXIT_NOT_STARTED;
            }
        }
    }
    if take_terminal {
        // Opening a terminal without O_NOCTTY in a session that has none
        // makes it the session's controlling terminal (the standard library
        // never adds O_NOCTTY); the descriptor itself is not needed after.
        if let Err(err) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/proc/self/fd/0")
        {
            eprintln!("agent-tools launcher: cannot take the terminal: {err}");
            return EXIT_NOT_STARTED;
        }
    }
    if let Some(policy) = &sandbox {
        // Partial coverage (a kernel older than the ruleset's ABI) is
        // reported once by the server at startup, not on every command.
        if let Err(err) = policy.enforce() {
            let hint = match err {
                SandboxError::VcsProtection { .. } => {
                    " (the server's --sandbox-allow-vcs-writes lets commands write version-control folders instead)"
                }
                _ => "",
            };
            eprintln!(
                "agent-tools launcher: the sandbox could not be put in force, so the command was not run: {err}{hint}"
            );
            return EXIT_NOT_STARTED;
        }
        // The kernel drops the death signal when credentials change; a new
        // user namespace should not count as one, but nothing is left to
        // that: armed again, and the parent checked again.
        if prctl::set_pdeathsig(Signal::SIGHUP).is_err() || getppid().as_raw() != parent {
            return EXIT_NOT_STARTED;
        }
    }

    // A child inherits the signal mask, and the standard library offers no
    // safe way to clear it between fork and exec. So the child is this same
    // program again, in a mode that clears the mask and then becomes the
    // shell by exec.
    let mut child = Command::new(SELF_EXE);
    child
        .args(own_prefix())
        .arg(EXEC_UNBLOCKED_ARG)
        .arg("--")
        .arg(&program)
        .args(&rest);
    if let Some(tmp) = sandbox.as_ref().and_then(SandboxPolicy::tmp_dir) {
        child.env(TMPDIR_VAR, tmp);
    }
    if report.is_some() {
        // The report pipe is the launcher's alone: a descendant holding it
        // would keep the caller from seeing the launcher's end.
        child.stdin(Stdio::null());
    }
    let shell = match child.spawn() {
        Ok(child) => Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX)),
        Err(err) => {
            eprintln!(
                "agent-tools launcher: cannot start {}: {err}",
                program.to_string_lossy()
            );
            return EXIT_NOT_STARTED;
        }
    };

    if report.is_some() {
        // The caller's call ends with the shell; it must not wait for the
        // launcher's copies of the output pipes, which only the shell and
        // its children write. Nothing is written to them from here on.
        if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
            let _ = dup2_stdout(&null);
            let _ = dup2_stderr(&null);
        }
    }

    let mut shell_status = None;
    loop {
        let reaped = reap(shell);
        shell_status = shell_status.or(reaped.shell);
        if let Some(status) = shell_status
            && (!wait_for_descendants || reaped.childless)
        {
            // With nothing left in the background the report is not
            // written: the caller reads the launcher's end (the same
            // status) instead, and has no launcher left to keep.
            return mirror(status);
        }
        if let Some(status) = shell_status
            && let Some(mut pipe) = report.take()
        {
            // A caller that is gone or stopped reading loses the report,
            // nothing else: the launcher goes on with the children.
            let _ = pipe.write_all(report_line(status).as_bytes());
        }
        let signal = match signalfd.read_signal() {
            Ok(Some(info)) => Signal::try_from(i32::try_from(info.ssi_signo).unwrap_or(0)).ok(),
            Ok(None) | Err(Errno::EINTR) => None,
            Err(_) => {
                // Cannot wait for signals any more: stop everything.
                kill_tree(true);
                return EXIT_NOT_STARTED;
            }
        };
        match signal {
            Some(Signal::SIGTERM) => kill_tree(false),
            // A job's Ctrl-C is for the command, which gets it too; only a
            // plain command's interrupt (a cancelled call) stops the tree.
            Some(Signal::SIGINT) if !wait_for_descendants => kill_tree(false),
            Some(Signal::SIGHUP) if getppid().as_raw() != parent => kill_tree(true),
            _ => {}
        }
    }
}

/// The mode a launcher starts its child in: clear the signal mask, then
/// exec the program (`--exec-unblocked -- PROGRAM ARGS...`).
pub const EXEC_UNBLOCKED_ARG: &str = "--exec-unblocked";

/// This program, also in a child, even if its file was replaced since.
const SELF_EXE: &str = "/proc/self/exe";

/// The arguments this process was started with before its launcher
/// arguments (e.g. the binary's subcommand), so that the child reaches the
/// same entry point.
fn own_prefix() -> Vec<OsString> {
    std::env::args_os()
        .skip(1)
        .take_while(|arg| arg != PARENT_PID_ARG)
        .collect()
}

fn exec_unblocked(mut args: impl Iterator<Item = OsString>) -> i32 {
    if args.next().is_none_or(|dashes| dashes != "--") {
        return usage();
    }
    let Some(program) = args.next() else {
        return usage();
    };
    if let Err(err) = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None) {
        eprintln!("agent-tools launcher: cannot clear the signal mask: {err}");
        return EXIT_NOT_STARTED;
    }
    let err = Command::new(&program).args(args).exec();
    eprintln!(
        "agent-tools launcher: cannot start {}: {err}",
        program.to_string_lossy()
    );
    EXIT_NOT_STARTED
}

fn usage() -> i32 {
    eprintln!(
        "usage: {PARENT_PID_ARG} PID [{WAIT_FOR_DESCENDANTS_ARG} [{TAKE_TERMINAL_ARG} | {REPORT_SHELL_EXIT_ARG}]] [--sandbox [SANDBOX OPTIONS...]] -- PROGRAM [ARGS...]"
    );
    EXIT_USAGE
}

/// What one round of reaping found.
struct Reaped {
    /// The shell's status, when it ended in this round.
    shell: Option<WaitStatus>,
    /// No child is left: every descendant has ended and been reaped.
    childless: bool,
}

/// Reaps every child that has ended (the shell, or adopted orphans).
fn reap(shell: Pid) -> Reaped {
    let mut reaped = Reaped {
        shell: None,
        childless: false,
    };
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return reaped,
            Err(err) => {
                reaped.childless = err == Errno::ECHILD;
                return reaped;
            }
            Ok(status) => {
                if status.pid() == Some(shell)
                    && matches!(status, WaitStatus::Exited(..) | WaitStatus::Signaled(..))
                {
                    reaped.shell = Some(status);
                }
            }
        }
    }
}

/// The report of how the shell ended: `exit CODE` or `signal NUMBER`, one
/// line ([`parse_report`] reads it).
fn report_line(status: WaitStatus) -> String {
    match status {
        WaitStatus::Signaled(_, signal, _) => format!("signal {}\n", signal as i32),
        WaitStatus::Exited(_, code) => format!("exit {code}\n"),
        _ => format!("exit {EXIT_NOT_STARTED}\n"),
    }
}

/// How the shell ended, from the launcher's report line (without its
/// newline); `None` when it is not one.
pub(crate) fn parse_report(line: &str) -> Option<ExitStatus> {
    let (kind, number) = line.trim_end().split_once(' ')?;
    let number: i32 = number.parse().ok()?;
    match kind {
        // The raw wait status: the code in the second byte, or the signal
        // in the low seven bits.
        "exit" if (0..=255).contains(&number) => Some(ExitStatus::from_raw(number << 8)),
        "signal" if (1..=127).contains(&number) => Some(ExitStatus::from_raw(number)),
        _ => None,
    }
}

/// Ends the launcher the way the shell ended.
fn mirror(status: WaitStatus) -> i32 {
    match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, signal, _) => {
            let mut only = SigSet::empty();
            only.add(signal);
            let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
            let _ = raise(signal);
            // Only a signal whose default is to be ignored gets here.
            crate::SIGNAL_EXIT_BASE + signal as i32
        }
        _ => EXIT_NOT_STARTED,
    }
}

/// `SIGKILL`s every descendant outside the launcher's process group (those a
/// group kill misses), then, with `whole_group`, the group itself. Repeated
/// while new ones show up, since a dying parent's children are handed to the
/// launcher and a forking process may add more between two looks.
fn kill_tree(whole_group: bool) {
    let me = getpid().as_raw();
    let group = getpgrp().as_raw();
    for _ in 0..16 {
        let Some(procs) = procs::snapshot() else {
            break;
        };
        let escaped: Vec<i32> = procs::descendants(&procs, me)
            .into_iter()
            .filter(|p| p.pgrp != group)
            .map(|p| p.pid)
            .collect();
        if escaped.is_empty() {
            break;
        }
        for pid in escaped {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    if whole_group {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
}
