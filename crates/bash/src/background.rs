//! Commands started in the background: detached from the call that started
//! them, in a process group (and, with the launcher, a session) of their
//! own, their stdout and stderr both appended to one file the caller
//! opened, stopped on request or when the registry holding them is dropped.
//!
//! The command is spawned the way [`crate::run`] spawns one (the same
//! program and arguments, the same launcher, stdin from `/dev/null`), so a
//! background command is confined exactly as a foreground one. Its launcher
//! stays until every process the command started has ended, so a stop
//! reaches those that left the process group (`setsid`) even after the
//! shell itself has exited.
//!
//! The output goes through a pipe and a thread of its own to the file, which
//! stops at the request's per-stream ceiling
//! ([`OutputLimits::hard_ceiling_per_stream`](crate::OutputLimits::hard_ceiling_per_stream)),
//! as a foreground command's spill file does: past it a note is appended and
//! the command is stopped.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, PipeReader, Read, Write};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::request::RunRequest;
use crate::runner::{KILL_GRACE, Supervision, launch_command, signal_group};

/// How often a stop looks whether the command has exited.
const STOP_POLL: Duration = Duration::from_millis(10);

/// Bytes moved from the pipe to the output file per read.
const COPY_CHUNK: usize = 64 * 1024;

/// A command running (or run) in the background.
#[derive(Debug)]
pub struct BackgroundJob {
    handle: JobHandle,
}

/// What a stop needs, shared with the output thread (which stops a command
/// whose output passed the ceiling).
#[derive(Debug, Clone)]
struct JobHandle {
    pgid: Pid,
    /// Set by the reaper thread once the launcher (or, without one, the
    /// shell) has exited.
    status: Arc<Mutex<Option<ExitStatus>>>,
}

/// How [`BackgroundJobs::stop`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The command was running and its process group was killed.
    Killed,
    /// The command had already exited, with this status; whatever it left
    /// running in its group was killed.
    AlreadyExited(ExitStatus),
}

impl BackgroundJob {
    /// Starts `req`'s command with its output appended to `output`, at most
    /// the request's per-stream ceiling of it. The request's timeout and
    /// inline budget do not apply: the command runs until it ends or is
    /// stopped.
    pub fn spawn(req: &RunRequest, output: File) -> ToolResult<BackgroundJob> {
        let io_error = |what: &str, err: std::io::Error| {
            ToolError::new(ErrorCode::IoError, format!("cannot {what}: {err}"))
        };
        let (reader, writer) = io::pipe().map_err(|err| io_error("create a pipe", err))?;
        let stderr = writer
            .try_clone()
            .map_err(|err| io_error("share the output pipe", err))?;
        let (program, args) = req.program_and_args();
        let mut command = launch_command(req, Supervision::UntilAllEnd)?;
        let spawned = command
            .args(args)
            .current_dir(req.cwd())
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(stderr))
            .spawn();
        // The command keeps this process's copies of the write end: without
        // dropping them the output thread would never see the end.
        drop(command);
        let mut child = spawned.map_err(|err| io_error(&format!("start {program}"), err))?;
        let handle = JobHandle {
            pgid: Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX)),
            status: Arc::new(Mutex::new(None)),
        };
        let reaped = Arc::clone(&handle.status);
        let started = thread::Builder::new()
            .name("bash-background-reaper".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                if let Ok(exit) = child.wait() {
                    *reaped.lock().unwrap_or_else(PoisonError::into_inner) = Some(exit);
                }
            });
        if let Err(err) = started {
            let _ = signal_group(handle.pgid, Some(Signal::SIGKILL), false);
            return Err(ToolError::internal(format!(
                "cannot start the reaper thread: {err}"
            )));
        }
        let ceiling = req.limits().hard_ceiling_per_stream().get();
        let copier = handle.clone();
        let started = thread::Builder::new()
            .name("bash-background-output".into())
            .stack_size(128 * 1024)
            .spawn(move || copy_output(reader, output, ceiling, &copier));
        if let Err(err) = started {
            handle.stop();
            return Err(ToolError::internal(format!(
                "cannot start the output thread: {err}"
            )));
        }
        Ok(BackgroundJob { handle })
    }

    /// The process group's id (the launcher's pid, or the shell's without
    /// a launcher).
    pub fn pgid(&self) -> i32 {
        self.handle.pgid.as_raw()
    }

    /// The command's exit status (the shell's), once it and, with the
    /// launcher, everything it started have ended.
    pub fn status(&self) -> Option<ExitStatus> {
        self.handle.status()
    }

    /// Stops the command: its whole group gets `SIGTERM` (and the launcher
    /// `SIGKILL`s the descendants that left the group), then `SIGKILL`
    /// after [`KILL_GRACE`] if the group's leader is still there.
    pub fn stop(&self) -> Stopped {
        self.handle.stop()
    }
}

impl JobHandle {
    fn status(&self) -> Option<ExitStatus> {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn signal(&self, signal: Signal) {
        let _ = signal_group(self.pgid, Some(signal), self.status().is_some());
    }

    fn stop(&self) -> Stopped {
        if let Some(status) = self.status() {
            // Jobs the shell left behind in its group go too.
            self.signal(Signal::SIGKILL);
            return Stopped::AlreadyExited(status);
        }
        self.signal(Signal::SIGTERM);
        let deadline = Instant::now() + KILL_GRACE;
        while self.status().is_none() && Instant::now() < deadline {
            thread::sleep(STOP_POLL);
        }
        self.signal(Signal::SIGKILL);
        Stopped::Killed
    }
}

/// The line appended to an output file whose command passed the ceiling.
fn ceiling_note(ceiling: u64) -> String {
    format!("\n[the output passed its ceiling of {ceiling} bytes; the command was stopped]\n")
}

/// Copies the command's output to `to` until every writer has closed the
/// pipe, keeping at most `ceiling` bytes. Past it the note is written, the
/// command stopped, and the rest read and dropped, so that no writer is
/// left blocked on a full pipe. A file that cannot be written any more
/// (a full disk) is given up on the same way, without a stop.
fn copy_output(mut from: PipeReader, mut to: File, ceiling: u64, job: &JobHandle) {
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut written: u64 = 0;
    let mut keeping = true;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        if !keeping {
            continue;
        }
        let room = usize::try_from(ceiling - written).unwrap_or(usize::MAX);
        let take = n.min(room);
        if to.write_all(&buf[..take]).is_err() {
            keeping = false;
            continue;
        }
        written += take as u64;
        if take < n {
            keeping = false;
            let _ = to.write_all(ceiling_note(ceiling).as_bytes());
            job.stop();
        }
    }
}

/// The background commands of one session, by id. Dropping the registry
/// stops every command still in it.
#[derive(Debug, Default)]
pub struct BackgroundJobs {
    jobs: Mutex<BTreeMap<String, BackgroundJob>>,
}

impl BackgroundJobs {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `job` under `id` (replacing nothing: ids are the caller's to
    /// make unique; a reused id stops the job it named).
    pub fn insert(&self, id: impl Into<String>, job: BackgroundJob) {
        let previous = self.lock().insert(id.into(), job);
        if let Some(previous) = previous {
            previous.stop();
        }
    }

    /// Stops the job `id` and forgets it; `None` when there is no such job.
    pub fn stop(&self, id: &str) -> Option<Stopped> {
        let job = self.lock().remove(id)?;
        Some(job.stop())
    }

    /// The ids of the jobs kept, in order.
    pub fn ids(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// Whether job `id` is kept.
    pub fn contains(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, BackgroundJob>> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for BackgroundJobs {
    fn drop(&mut self) {
        let jobs = std::mem::take(&mut *self.lock());
        for job in jobs.values() {
            // Everything at once first, so the graces overlap.
            job.handle.signal(Signal::SIGTERM);
        }
        for job in jobs.values() {
            job.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OutputLimits;
    use nix::sys::signal::killpg;

    fn group_alive(pgid: i32) -> bool {
        killpg(Pid::from_raw(pgid), None).is_ok()
    }

    fn wait_until(mut done: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if done() {
                return true;
            }
            thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn output_goes_to_the_file_and_a_stop_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let out_path = dir.path().join("out");
        let output = File::create(&out_path).unwrap();
        let req = RunRequest::new(
            "echo started; echo oops >&2; sleep 30 & sleep 30",
            dir.path(),
            dir.path().join("spill"),
        )
        .unwrap();
        let job = BackgroundJob::spawn(&req, output).unwrap();
        let pgid = job.pgid();
        assert!(wait_until(|| {
            std::fs::read_to_string(&out_path).unwrap_or_default() == "started\noops\n"
        }));
        assert!(job.status().is_none());
        let jobs = BackgroundJobs::new();
        jobs.insert("b1", job);
        assert_eq!(jobs.ids(), ["b1"]);
        assert_eq!(jobs.stop("b1"), Some(Stopped::Killed));
        assert!(wait_until(|| !group_alive(pgid)), "the group survived");
        assert_eq!(jobs.stop("b1"), None);
    }

    #[test]
    fn a_finished_job_reports_its_status_and_dropping_the_registry_stops_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let req = RunRequest::new("exit 3", dir.path(), dir.path().join("spill")).unwrap();
        let done = BackgroundJob::spawn(&req, File::create(dir.path().join("a")).unwrap()).unwrap();
        assert!(wait_until(|| done.status().is_some()));
        let jobs = BackgroundJobs::new();
        jobs.insert("done", done);
        match jobs.stop("done") {
            Some(Stopped::AlreadyExited(status)) => assert_eq!(status.code(), Some(3)),
            other => panic!("{other:?}"),
        }
        let req = RunRequest::new("sleep 30", dir.path(), dir.path().join("spill")).unwrap();
        let long = BackgroundJob::spawn(&req, File::create(dir.path().join("b")).unwrap()).unwrap();
        let pgid = long.pgid();
        let jobs = BackgroundJobs::new();
        jobs.insert("long", long);
        assert!(jobs.contains("long"));
        drop(jobs);
        assert!(
            wait_until(|| !group_alive(pgid)),
            "the group survived the drop"
        );
    }

    #[test]
    fn the_output_file_stops_at_the_ceiling_and_the_command_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let out_path = dir.path().join("out");
        let ceiling = 100_000;
        let req = RunRequest::new(
            "head -c 300000 /dev/zero; echo never-here; sleep 30",
            dir.path(),
            dir.path().join("spill"),
        )
        .unwrap()
        .with_limits(OutputLimits::new(
            1024,
            std::num::NonZeroU64::new(ceiling).unwrap(),
        ));
        let job = BackgroundJob::spawn(&req, File::create(&out_path).unwrap()).unwrap();
        assert!(
            wait_until(|| job.status().is_some()),
            "the command was not stopped"
        );
        let status = job.status().unwrap();
        assert!(status.code().is_none(), "ended by a signal: {status:?}");
        let note = ceiling_note(ceiling);
        let expected = usize::try_from(ceiling).unwrap() + note.len();
        assert!(wait_until(|| {
            std::fs::metadata(&out_path).is_ok_and(|m| m.len() == expected as u64)
        }));
        let written = std::fs::read(&out_path).unwrap();
        assert!(written[..100_000].iter().all(|&b| b == 0));
        assert_eq!(&written[100_000..], note.as_bytes());
        assert!(wait_until(|| !crate::runner::group_alive(Pid::from_raw(
            job.pgid()
        ))));
    }
}
