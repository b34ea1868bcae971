//! Commands started in the background: detached from the call that started
//! them, in a process group of their own, their stdout and stderr both
//! appended to one file the caller opened, stopped on request or when the
//! registry holding them is dropped.
//!
//! The command is spawned the way [`crate::run`] spawns one (the same
//! program and arguments, the same launcher, stdin from `/dev/null`), so a
//! background command is confined exactly as a foreground one.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use agent_tools_error::{ErrorCode, ToolError, ToolResult};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::request::RunRequest;
use crate::runner::KILL_GRACE;

/// How often a stop looks whether the command has exited.
const STOP_POLL: Duration = Duration::from_millis(10);

/// A command running (or run) in the background.
#[derive(Debug)]
pub struct BackgroundJob {
    pgid: Pid,
    /// Set by the reaper thread once the shell has exited.
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
    /// Starts `req`'s command with its output appended to `output`. The
    /// request's timeout and output limits do not apply: the command runs
    /// until it ends or is stopped.
    pub fn spawn(req: &RunRequest, output: File) -> ToolResult<BackgroundJob> {
        let io_error = |what: &str, err: std::io::Error| {
            ToolError::new(ErrorCode::IoError, format!("cannot {what}: {err}"))
        };
        let stderr = output
            .try_clone()
            .map_err(|err| io_error("share the output file", err))?;
        let (program, args) = req.program_and_args();
        let mut command = crate::runner::launch_command(req)?;
        let mut child = command
            .args(args)
            .current_dir(req.cwd())
            .stdin(Stdio::null())
            .stdout(Stdio::from(output))
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .spawn()
            .map_err(|err| io_error(&format!("start {program}"), err))?;
        let pgid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        let status = Arc::new(Mutex::new(None));
        let reaped = Arc::clone(&status);
        thread::Builder::new()
            .name("bash-background-reaper".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                if let Ok(exit) = child.wait() {
                    *reaped.lock().unwrap_or_else(PoisonError::into_inner) = Some(exit);
                }
            })
            .map_err(|err| {
                let _ = killpg(pgid, Signal::SIGKILL);
                ToolError::internal(format!("cannot start the reaper thread: {err}"))
            })?;
        Ok(BackgroundJob { pgid, status })
    }

    /// The process group's id (the shell's pid).
    pub fn pgid(&self) -> i32 {
        self.pgid.as_raw()
    }

    /// The shell's exit status, once it has exited.
    pub fn status(&self) -> Option<ExitStatus> {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stops the command: its whole group gets `SIGTERM`, then `SIGKILL`
    /// after [`KILL_GRACE`] if the shell is still there.
    pub fn stop(&self) -> Stopped {
        if let Some(status) = self.status() {
            // Jobs the shell left behind in its group go too.
            let _ = killpg(self.pgid, Signal::SIGKILL);
            return Stopped::AlreadyExited(status);
        }
        let _ = killpg(self.pgid, Signal::SIGTERM);
        let deadline = Instant::now() + KILL_GRACE;
        while self.status().is_none() && Instant::now() < deadline {
            thread::sleep(STOP_POLL);
        }
        let _ = killpg(self.pgid, Signal::SIGKILL);
        Stopped::Killed
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
            let _ = killpg(job.pgid, Signal::SIGTERM);
        }
        for job in jobs.values() {
            job.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
