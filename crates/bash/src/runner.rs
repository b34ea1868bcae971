//! Spawning the shell, pumping its output and ending it.

use std::fs;
use std::io::{self, PipeReader, Read};
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use crate::capture::{Captured, Pushed, SpillNamer, Stream};
use crate::outcome::{RunError, RunOutcome, StreamName};
use crate::procs;
use crate::request::RunRequest;

/// The shell every command runs in.
pub const SHELL: &str = "/bin/sh";

/// After a timeout or a passed ceiling the group gets `SIGTERM`, then
/// `SIGKILL` if any member is still alive this long after.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// After a cancellation the group gets `SIGTERM`, then `SIGKILL` if any
/// member is still alive this long after. Shorter than [`KILL_GRACE`]: nobody
/// waits for the result.
pub const CANCEL_GRACE: Duration = Duration::from_millis(250);

/// Once the shell has exited (or its group is dead), output is still read for
/// at most this long. A background process still holding the pipes does not
/// keep the call waiting beyond it.
pub const DRAIN_GRACE: Duration = Duration::from_millis(200);

/// How often the cancel flag is looked at, at the least.
pub const CANCEL_POLL: Duration = Duration::from_millis(50);

/// While a group is being killed, how often it is checked for survivors.
const KILL_POLL: Duration = Duration::from_millis(10);

/// If the shell is still not reaped this long after `SIGKILL` (a process stuck
/// in the kernel), the call returns without its exit status.
const REAP_LIMIT: Duration = Duration::from_secs(1);

const READ_CHUNK: usize = 64 * 1024;

/// At most this many reads of one stream per wake-up.
const MAX_READS_PER_WAKE: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillReason {
    Timeout,
    OverCeiling(StreamName),
    Cancelled,
}

#[derive(Debug)]
struct Kill {
    reason: KillReason,
    started: Instant,
    grace: Duration,
    sigkilled: bool,
    group_gone: bool,
}

/// How long a launcher stays with its command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Supervision {
    /// Until the shell ends: what a call waits for. Its background jobs
    /// keep running.
    UntilShellEnds,
    /// Until the shell and every process it started have ended: a
    /// background command, which is stopped later as a whole.
    UntilAllEnd,
    /// As [`UntilAllEnd`](Self::UntilAllEnd), and the launcher takes its
    /// standard input (a pseudo-terminal's slave) as its controlling
    /// terminal: a job in a terminal.
    InTerminalUntilAllEnd,
    /// As [`UntilAllEnd`](Self::UntilAllEnd), and the launcher reports the
    /// shell's end on its standard input (a pipe) as soon as it comes: a
    /// plain command whose background children stay under the launcher,
    /// owned by the caller's connection.
    ReportingShellUntilAllEnd,
}

/// The process that starts `req`'s program: the launcher (with the parent's
/// pid and the sandbox policy, which it puts in force between fork and
/// exec) when there is one, else the program itself. Its arguments follow.
/// Every way of starting a command goes through here, so none can skip the
/// launcher or the sandbox.
///
/// The process started leads the command's process group, whose id is its
/// pid: the launcher makes a session of its own (which a group leader may
/// not, so it is not put in a group here); a program started without one
/// gets a new group.
pub(crate) fn launch_command(req: &RunRequest, supervision: Supervision) -> ToolResult<Command> {
    let (program, _) = req.program_and_args();
    match req.launcher() {
        Some(launcher) => {
            let mut command = Command::new(launcher.program());
            command
                .args(launcher.args())
                .arg(crate::launcher::PARENT_PID_ARG)
                .arg(std::process::id().to_string());
            if supervision != Supervision::UntilShellEnds {
                command.arg(crate::launcher::WAIT_FOR_DESCENDANTS_ARG);
            }
            if supervision == Supervision::InTerminalUntilAllEnd {
                command.arg(crate::launcher::TAKE_TERMINAL_ARG);
            }
            if supervision == Supervision::ReportingShellUntilAllEnd {
                command.arg(crate::launcher::REPORT_SHELL_EXIT_ARG);
            }
            if let Some(policy) = req.sandbox() {
                command.args(policy.to_args());
            }
            command.arg("--").arg(program);
            Ok(command)
        }
        // Without a launcher there is nowhere to put the policy in force
        // (safely).
        None if req.sandbox().is_some() => Err(ToolError::new(
            ErrorCode::InvalidInput,
            "a sandboxed command needs a launcher to apply the sandbox; none was given",
        )),
        None => {
            let mut command = Command::new(program);
            command.process_group(0);
            Ok(command)
        }
    }
}

/// Sends `signal` (`None`: only checks) to the command's process group,
/// whose id is the pid of the process the runner started.
///
/// A launcher makes that group itself, as its first step, so for a moment
/// after the start the group does not exist yet. Then the signal goes to
/// the launcher alone, which has started nothing yet and dies of it. Once
/// the started process has been reaped (`leader_reaped`) its pid may name
/// another process, so only the group is signalled.
pub(crate) fn signal_group(
    pgid: Pid,
    signal: Option<Signal>,
    leader_reaped: bool,
) -> nix::Result<()> {
    match killpg(pgid, signal) {
        Err(Errno::ESRCH) if !leader_reaped => kill(pgid, signal),
        other => other,
    }
}

/// Runs `req`, polling `cancel` at least every [`CANCEL_POLL`].
///
/// The command runs as `/bin/sh -c COMMAND` in `req.cwd()`, with stdin from
/// `/dev/null`, in a new process group: the launcher's (in a session of its
/// own, without a controlling terminal) when there is one, else the
/// shell's.
///
/// * The shell exits: the outcome is returned (whatever the exit code or
///   signal). Output is drained until both pipes close or [`DRAIN_GRACE`] has
///   passed; the group is **not** killed, so background jobs keep running.
/// * The timeout passes: the group gets `SIGTERM`, then `SIGKILL` after
///   the request's kill grace ([`KILL_GRACE`] unless set) if anything
///   survives, and the call fails with [`RunError::TimedOut`].
/// * A stream passes the hard ceiling: the same kill, then
///   [`RunError::OverCeiling`].
/// * `cancel` is set: the group gets `SIGTERM`, then `SIGKILL` after
///   [`CANCEL_GRACE`], and the call fails with [`RunError::Cancelled`].
///
/// Each of the three carries the output printed until then.
///
/// Otherwise the call fails with [`RunError::Failed`]: a missing `cwd` with
/// `not_found`, a `cwd` that is not a directory with `not_a_file`, a shell
/// that cannot be started or a spill file that cannot be written with
/// `io_error`.
pub fn run(req: &RunRequest, cancel: &AtomicBool) -> Result<RunOutcome, RunError> {
    run_supervised(req, cancel, false).0
}

/// What is left of a plain command whose shell has ended while processes
/// it started in the background still run: the launcher, which stays with
/// them until the last has ended, and the read ends of the output pipes
/// when some of them still hold the write ends.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) launcher: Child,
    pub(crate) stdout: Option<ChildStdout>,
    pub(crate) stderr: Option<ChildStderr>,
}

/// Runs `req` as [`run`] does. With `hold` and a launcher, the launcher
/// stays with the processes the command leaves running in the background
/// (see [`Supervision::ReportingShellUntilAllEnd`]) and, when it is still
/// there as the call ends, comes back as [`Held`] for the caller to own:
/// its kill stops them all, and so does the caller's death.
pub(crate) fn run_supervised(
    req: &RunRequest,
    cancel: &AtomicBool,
    hold: bool,
) -> (Result<RunOutcome, RunError>, Option<Held>) {
    match run_inner(req, cancel, hold && req.launcher().is_some()) {
        Ok((result, held)) => (result, held),
        Err(err) => (Err(err.into()), None),
    }
}

fn run_inner(
    req: &RunRequest,
    cancel: &AtomicBool,
    hold: bool,
) -> ToolResult<(Result<RunOutcome, RunError>, Option<Held>)> {
    check_cwd(req)?;
    let (exit_reader, exit_writer) = io::pipe().map_err(|err| {
        ToolError::new(ErrorCode::IoError, format!("cannot create a pipe: {err}"))
    })?;
    let (program, args) = req.program_and_args();
    let supervision = if hold {
        Supervision::ReportingShellUntilAllEnd
    } else {
        Supervision::UntilShellEnds
    };
    let mut command = launch_command(req, supervision)?;
    command
        .args(args)
        .current_dir(req.cwd())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Holding, the launcher's stdin is the pipe its report comes on (and
    // the shell's is /dev/null, which the launcher sees to); else the exit
    // pipe's write end goes to the reaper thread, closed once it reaped.
    let reaper_end = if hold {
        command.stdin(Stdio::from(exit_writer));
        None
    } else {
        command.stdin(Stdio::null());
        Some(exit_writer)
    };
    let spawned = command.spawn();
    // The command keeps this process's copy of the report pipe's write
    // end: without dropping it, the launcher's end would never be seen.
    drop(command);
    let mut child = spawned.map_err(|err| {
        ToolError::new(ErrorCode::IoError, format!("cannot start {program}: {err}"))
    })?;
    let pgid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    // Non-blocking read ends let one wake-up take all that is buffered. If
    // that cannot be set, each wake-up reads once, which never blocks either.
    let mut nonblocking = true;
    for fd in [
        stdout.as_ref().map(AsFd::as_fd),
        stderr.as_ref().map(AsFd::as_fd),
    ]
    .into_iter()
    .flatten()
    {
        nonblocking &= fcntl(fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).is_ok();
    }
    let end = match reaper_end {
        Some(exit_writer) => ShellEnd::Reaper(spawn_waiter(child, exit_writer, pgid)?),
        None => ShellEnd::Report {
            launcher: child,
            line: Vec::new(),
        },
    };
    let mut pump = Pump {
        req,
        pgid,
        namer: SpillNamer::new(req.spill_dir(), req.spill_display_dir(), req.spill_opener()),
        budget: req.limits().max_output_bytes(),
        out: Stream::new("stdout", req.limits().hard_ceiling_per_stream().get())
            .cutting_at(req.limits().cut()),
        err: Stream::new("stderr", req.limits().hard_ceiling_per_stream().get())
            .cutting_at(req.limits().cut()),
        stdout,
        stderr,
        exit_reader: Some(exit_reader),
        end,
        status: None,
        exited: false,
        kill: None,
        reads_per_wake: if nonblocking { MAX_READS_PER_WAKE } else { 1 },
    };
    let ran = pump.run(cancel);
    if ran.is_err() {
        // A spill file could not be written: stop everything.
        let _ = signal_group(pgid, Some(Signal::SIGKILL), pump.exited);
    }
    // A launcher still there stays with what the command left running;
    // one that has ended is reaped here.
    let stays = match &mut pump.end {
        ShellEnd::Report { launcher, .. } => matches!(launcher.try_wait(), Ok(None)),
        _ => false,
    };
    let held = match stays {
        true => match std::mem::replace(&mut pump.end, ShellEnd::Reaped) {
            ShellEnd::Report { launcher, .. } => Some(Held {
                launcher,
                stdout: pump.stdout.take(),
                stderr: pump.stderr.take(),
            }),
            _ => None,
        },
        false => None,
    };
    let result = match ran {
        Ok(()) => pump.finish(),
        Err(err) => Err(err.into()),
    };
    Ok((result, held))
}

/// How the runner learns that the shell has ended.
#[derive(Debug)]
enum ShellEnd {
    /// The reaper thread sends the status of the process it reaped (the
    /// launcher that exits with the shell, or the shell); the exit pipe
    /// closes then.
    Reaper(Receiver<io::Result<ExitStatus>>),
    /// The launcher, which stays for the shell's background children,
    /// reports the shell's end on the exit pipe (one line, gathered here).
    Report {
        /// The launcher, not reaped yet.
        launcher: Child,
        /// The report read so far.
        line: Vec<u8>,
    },
    /// The launcher went to the caller.
    Reaped,
}

/// A report line is a few bytes; more means something else is writing.
const MAX_REPORT_LINE: usize = 64;

fn check_cwd(req: &RunRequest) -> ToolResult<()> {
    let cwd = req.cwd();
    match fs::metadata(cwd) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(ToolError::new(
            ErrorCode::NotAFile,
            format!("{}: not a directory", cwd.display()),
        )),
        Err(err) => Err(ToolError::from_io(&err, cwd)),
    }
}

/// Reaps the shell on its own thread, so a returning caller never leaves a
/// zombie behind. The status goes over the channel; closing `exit_writer`
/// wakes the poll loop.
fn spawn_waiter(
    mut child: Child,
    exit_writer: io::PipeWriter,
    pgid: Pid,
) -> ToolResult<Receiver<io::Result<ExitStatus>>> {
    let (tx, rx) = mpsc::channel();
    thread::Builder::new()
        .name("bash-reaper".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let status = child.wait();
            let _ = tx.send(status);
            drop(exit_writer);
        })
        .map_err(|err| {
            // The child went with the closure; at least stop the group.
            let _ = signal_group(pgid, Some(Signal::SIGKILL), false);
            ToolError::internal(format!("cannot start the reaper thread: {err}"))
        })?;
    Ok(rx)
}

struct Pump<'a> {
    req: &'a RunRequest,
    pgid: Pid,
    namer: SpillNamer,
    budget: usize,
    out: Stream,
    err: Stream,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    exit_reader: Option<PipeReader>,
    end: ShellEnd,
    status: Option<ExitStatus>,
    exited: bool,
    kill: Option<Kill>,
    reads_per_wake: usize,
}

impl Pump<'_> {
    fn run(&mut self, cancel: &AtomicBool) -> ToolResult<()> {
        let started = Instant::now();
        let deadline = started + self.req.timeout();
        let mut buf = vec![0u8; READ_CHUNK];
        let mut settled_at: Option<Instant> = None;
        loop {
            let now = Instant::now();

            if !self.exited && self.kill.is_none() && now >= deadline {
                self.begin_kill(KillReason::Timeout, now);
                settled_at = None;
            }
            if cancel.load(Ordering::Relaxed)
                && !matches!(
                    self.kill,
                    Some(Kill {
                        reason: KillReason::Cancelled,
                        ..
                    })
                )
            {
                if self.exited && self.kill.is_none() {
                    // The shell is done; leave its background jobs alone.
                    self.kill = Some(Kill {
                        reason: KillReason::Cancelled,
                        started: now,
                        grace: Duration::ZERO,
                        sigkilled: true,
                        group_gone: true,
                    });
                    return Ok(());
                }
                if self.kill.is_none() {
                    settled_at = None;
                }
                self.begin_kill(KillReason::Cancelled, now);
            }
            self.advance_kill(now);

            let settled = match &self.kill {
                None => self.exited,
                Some(kill) => {
                    (self.exited && (kill.group_gone || kill.sigkilled))
                        || now >= kill.started + kill.grace + REAP_LIMIT
                }
            };
            let mut wait = if self.kill.is_some() {
                KILL_POLL
            } else {
                CANCEL_POLL
            };
            if settled {
                let since = *settled_at.get_or_insert(now);
                let drain_end = since + DRAIN_GRACE;
                if (self.stdout.is_none() && self.stderr.is_none()) || now >= drain_end {
                    return Ok(());
                }
                wait = wait.min(drain_end - now);
            } else if self.kill.is_none() {
                wait = wait.min(deadline.saturating_duration_since(now));
            }

            self.poll_once(wait, &mut buf, now)?;
        }
    }

    fn poll_once(&mut self, wait: Duration, buf: &mut [u8], now: Instant) -> ToolResult<()> {
        // Round up so a wait never spins at 0 ms short of a deadline.
        let mut ms = wait.as_micros().div_ceil(1000);
        if ms == 0 && !wait.is_zero() {
            ms = 1;
        }
        let timeout = PollTimeout::from(u16::try_from(ms).unwrap_or(u16::MAX));
        let (out_ready, err_ready, exit_ready) = {
            let mut fds = Vec::with_capacity(3);
            let mut slots = [None; 3];
            if let Some(fd) = &self.stdout {
                slots[0] = Some(fds.len());
                fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
            }
            if let Some(fd) = &self.stderr {
                slots[1] = Some(fds.len());
                fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
            }
            if let Some(fd) = &self.exit_reader {
                slots[2] = Some(fds.len());
                fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, timeout) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(err) => return Err(ToolError::internal(format!("poll failed: {err}"))),
            }
            let ready = |slot: Option<usize>| {
                slot.and_then(|i| fds[i].revents())
                    .is_some_and(|r| !r.is_empty())
            };
            (ready(slots[0]), ready(slots[1]), ready(slots[2]))
        };

        if out_ready {
            self.read_stream(true, buf, now)?;
        }
        if err_ready {
            self.read_stream(false, buf, now)?;
        }
        if exit_ready {
            self.shell_ended()?;
        }
        Ok(())
    }

    /// The exit pipe is readable: the reaper is done, or the launcher
    /// reported (part of) its line or ended.
    fn shell_ended(&mut self) -> ToolResult<()> {
        let status = match &mut self.end {
            ShellEnd::Reaper(exits) => match exits.try_recv() {
                Ok(Ok(status)) => status,
                Ok(Err(err)) => {
                    return Err(ToolError::internal(format!(
                        "waiting for the shell failed: {err}"
                    )));
                }
                Err(_) => {
                    return Err(ToolError::internal(
                        "the reaper thread ended without a status",
                    ));
                }
            },
            ShellEnd::Report { launcher, line } => {
                let mut chunk = [0u8; MAX_REPORT_LINE];
                let n = match self.exit_reader.as_mut().map(|r| r.read(&mut chunk)) {
                    Some(Ok(n)) => n,
                    Some(Err(err)) if err.kind() == io::ErrorKind::Interrupted => return Ok(()),
                    // Read as the pipe's end.
                    Some(Err(_)) | None => 0,
                };
                if n == 0 {
                    // The launcher ended without a report (killed before
                    // the shell ended): its own status says how.
                    launcher.wait().map_err(|err| {
                        ToolError::internal(format!("waiting for the launcher failed: {err}"))
                    })?
                } else {
                    line.extend_from_slice(&chunk[..n]);
                    let Some(newline) = line.iter().position(|b| *b == b'\n') else {
                        if line.len() > MAX_REPORT_LINE {
                            return Err(ToolError::internal(
                                "the launcher's report of the shell's end is garbled",
                            ));
                        }
                        return Ok(());
                    };
                    std::str::from_utf8(&line[..newline])
                        .ok()
                        .and_then(crate::launcher::parse_report)
                        .ok_or_else(|| {
                            ToolError::internal(
                                "the launcher's report of the shell's end is garbled",
                            )
                        })?
                }
            }
            ShellEnd::Reaped => return Ok(()),
        };
        self.exit_reader = None;
        self.exited = true;
        self.status = Some(status);
        Ok(())
    }

    fn read_stream(&mut self, is_out: bool, buf: &mut [u8], now: Instant) -> ToolResult<()> {
        // Take what is buffered, a bounded number of reads per wake-up so
        // the other stream and the clock get a turn.
        for _ in 0..self.reads_per_wake {
            let read = if is_out {
                self.stdout.as_mut().map(|r| r.read(buf))
            } else {
                self.stderr.as_mut().map(|r| r.read(buf))
            };
            let n = match read {
                None => return Ok(()),
                Some(Ok(n)) => n,
                Some(Err(err)) if err.kind() == io::ErrorKind::Interrupted => continue,
                Some(Err(err)) if err.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                // A broken pipe reads as its end.
                Some(Err(_)) => 0,
            };
            if n == 0 {
                self.close(is_out);
                return Ok(());
            }
            let req = self.req;
            let stream = if is_out { &mut self.out } else { &mut self.err };
            let pushed = stream
                .push(&buf[..n], &mut self.budget, &self.namer)
                .map_err(|err| {
                    // An opener's own typed error goes through unchanged.
                    if let Some(tool_error) =
                        err.get_ref().and_then(|e| e.downcast_ref::<ToolError>())
                    {
                        return tool_error.clone();
                    }
                    let dir = req.spill_display_dir().unwrap_or(req.spill_dir());
                    ToolError::new(
                        ErrorCode::IoError,
                        format!("cannot write a spill file under {}: {err}", dir.display()),
                    )
                })?;
            if pushed == Pushed::OverCeiling {
                let name = if is_out {
                    StreamName::Stdout
                } else {
                    StreamName::Stderr
                };
                self.close(is_out);
                self.begin_kill(KillReason::OverCeiling(name), now);
                return Ok(());
            }
        }
        Ok(())
    }

    fn close(&mut self, is_out: bool) {
        if is_out {
            self.stdout = None;
        } else {
            self.stderr = None;
        }
    }

    fn begin_kill(&mut self, reason: KillReason, now: Instant) {
        if let Some(kill) = &mut self.kill {
            // Already dying: the first reason stands, except that a
            // cancellation is what the caller needs to hear about.
            if reason == KillReason::Cancelled {
                kill.reason = reason;
                kill.grace = kill.grace.min(CANCEL_GRACE);
            }
            return;
        }
        let grace = if reason == KillReason::Cancelled {
            CANCEL_GRACE
        } else {
            self.req.kill_grace()
        };
        let group_gone = matches!(
            signal_group(self.pgid, Some(Signal::SIGTERM), self.exited),
            Err(Errno::ESRCH)
        );
        self.kill = Some(Kill {
            reason,
            started: now,
            grace,
            sigkilled: false,
            group_gone,
        });
    }

    fn advance_kill(&mut self, now: Instant) {
        let Some(kill) = &mut self.kill else { return };
        if kill.group_gone || kill.sigkilled {
            return;
        }
        if !group_alive(self.pgid) {
            kill.group_gone = true;
        } else if now >= kill.started + kill.grace {
            let _ = signal_group(self.pgid, Some(Signal::SIGKILL), self.exited);
            kill.sigkilled = true;
        }
    }

    fn finish(self) -> Result<RunOutcome, RunError> {
        let timeout = self.req.timeout();
        let kill = self.kill.map(|k| k.reason);
        let Pump {
            out, err, status, ..
        } = self;
        let io_err = |err: io::Error| {
            ToolError::new(
                ErrorCode::IoError,
                format!("cannot write a spill file: {err}"),
            )
        };
        let out = out.finish().map_err(io_err)?;
        let err = err.finish().map_err(io_err)?;
        let mut outcome = assemble(out, err, status);
        outcome.maybe_sandbox_refusal = self.req.sandbox().is_some()
            && outcome.exit_code != Some(0)
            && (agent_tools_sandbox::mentions_refusal(&outcome.stderr)
                || agent_tools_sandbox::mentions_refusal(&outcome.stdout));
        let Some(reason) = kill else {
            if status.is_none() {
                return Err(ToolError::internal("the shell ended without an exit status").into());
            }
            return Ok(outcome);
        };
        Err(match reason {
            KillReason::Timeout => {
                outcome.timed_out = true;
                RunError::TimedOut {
                    after: timeout,
                    partial: Box::new(outcome),
                }
            }
            KillReason::OverCeiling(stream) => RunError::OverCeiling {
                stream,
                partial: Box::new(outcome),
            },
            KillReason::Cancelled => RunError::Cancelled {
                partial: Box::new(outcome),
            },
        })
    }
}

/// Whether process group `pgid` still has a member that is not a zombie.
///
/// Signal 0 tells whether the group has members at all, but counts zombies:
/// orphans of a killed shell are reaped by whoever adopts them, which may
/// take a while. On Linux `/proc` tells zombies apart; elsewhere any member
/// counts as alive and the `SIGKILL` escalation settles the matter.
pub(crate) fn group_alive(pgid: Pid) -> bool {
    if matches!(killpg(pgid, None), Err(Errno::ESRCH)) {
        return false;
    }
    match procs::snapshot() {
        Some(procs) => procs.iter().any(|p| p.pgrp == pgid.as_raw() && !p.dead),
        // Without procfs, assume the worst.
        None => true,
    }
}

fn assemble(out: Captured, err: Captured, status: Option<ExitStatus>) -> RunOutcome {
    let truncated = out.spill.is_some() || err.spill.is_some();
    RunOutcome {
        exit_code: status.and_then(|s| s.code()),
        stdout: out.text,
        stderr: err.text,
        signal: status.and_then(|s| s.signal()).map(signal_name),
        timed_out: false,
        stdout_spill: out.spill,
        stderr_spill: err.spill,
        truncated,
        lossy: out.lossy || err.lossy,
        stdout_dropped: out.dropped,
        stderr_dropped: err.dropped,
        maybe_sandbox_refusal: false,
    }
}

fn signal_name(number: i32) -> String {
    match Signal::try_from(number) {
        Ok(signal) => signal.as_str().to_owned(),
        Err(_) => format!("signal {number}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// A launcher not yet in its own session is a process whose pid names
    /// no group: the signal reaches it alone, until it has been reaped.
    #[test]
    fn a_group_signal_reaches_a_leader_that_has_no_group_yet() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
        assert_eq!(killpg(pid, None), Err(Errno::ESRCH), "not a group leader");
        assert_eq!(
            signal_group(pid, None, true),
            Err(Errno::ESRCH),
            "a reaped leader's pid is not signalled"
        );
        signal_group(pid, Some(Signal::SIGTERM), false).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the signal did not arrive");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.signal(), Some(Signal::SIGTERM as i32));
    }
}
