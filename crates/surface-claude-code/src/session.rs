//! The state of one connection: which files were read (and what was seen
//! of them), and the commands running in the background.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_tools_bash::jobs::{Job, JobError, JobLimits, JobSpec, JobStatus, JobTable};
use agent_tools_fs::Seen;

/// The most files a session remembers having read; past it the least
/// recently recorded is forgotten (a later write to it needs a new read).
pub const MAX_READ_RECORDS: usize = 1000;

/// The most background commands a session keeps at once.
pub const MAX_BACKGROUND_JOBS: usize = 32;

/// One connection's state on the Claude Code surface. The MCP server makes
/// one per connection; a Rust caller makes one per conversation and passes
/// it in every call's context:
///
/// ```
/// use agent_tools::{CallContext, Session};
/// use agent_tools_surface_claude_code::ClaudeCodeSession;
///
/// let context = CallContext::in_session(Session::new(ClaudeCodeSession::new()));
/// let session = context.session.get::<ClaudeCodeSession>().unwrap();
/// assert_eq!(session.read_count(), 0);
/// ```
///
/// Dropping the session stops its background commands.
#[derive(Debug)]
pub struct ClaudeCodeSession {
    reads: Mutex<Reads>,
    /// Background commands; `bash_N` is the table's job N.
    jobs: JobTable,
}

impl Default for ClaudeCodeSession {
    fn default() -> Self {
        ClaudeCodeSession {
            reads: Mutex::default(),
            jobs: JobTable::new(JobLimits {
                max_running: MAX_BACKGROUND_JOBS,
                ..JobLimits::default()
            }),
        }
    }
}

#[derive(Debug, Default)]
struct Reads {
    seen: HashMap<PathBuf, (Seen, u64)>,
    clock: u64,
}

/// The id Claude Code shows for job `n`.
fn job_name(n: u64) -> String {
    format!("bash_{n}")
}

impl ClaudeCodeSession {
    /// A session that has read nothing and runs nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// What the session saw of the file at `abs` (its resolved absolute
    /// path), when it read or wrote it.
    pub fn seen(&self, abs: &Path) -> Option<Seen> {
        self.lock_reads().seen.get(abs).map(|(seen, _)| *seen)
    }

    /// Records that the session saw the file at `abs` as `seen`.
    pub fn record(&self, abs: &Path, seen: Seen) {
        let mut reads = self.lock_reads();
        reads.clock += 1;
        let clock = reads.clock;
        reads.seen.insert(abs.to_path_buf(), (seen, clock));
        if reads.seen.len() > MAX_READ_RECORDS
            && let Some(oldest) = reads
                .seen
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(path, _)| path.clone())
        {
            reads.seen.remove(&oldest);
        }
    }

    /// How many files the session remembers.
    pub fn read_count(&self) -> usize {
        self.lock_reads().seen.len()
    }

    /// The connection's job table: `run_in_background` commands, and what
    /// foreground commands leave running in the background.
    pub fn jobs(&self) -> &JobTable {
        &self.jobs
    }

    /// How many background commands are running.
    pub fn background_count(&self) -> usize {
        self.jobs
            .list()
            .iter()
            .filter(|job| job.status().is_running())
            .count()
    }

    /// Starts a background command; its id is `bash_N`.
    pub(crate) fn start_job(&self, spec: JobSpec) -> Result<(String, Arc<Job>), JobError> {
        let job = self.jobs.start(spec)?;
        Ok((job_name(job.id()), job))
    }

    /// Background command `id` (`bash_N`).
    pub(crate) fn job(&self, id: &str) -> Option<Arc<Job>> {
        let n = id.strip_prefix("bash_")?.parse().ok()?;
        self.jobs.get(n).ok()
    }

    /// Stops background command `id` and forgets it: its command line and
    /// its status before the stop, or `None` when there is no such command.
    pub(crate) fn stop_job(&self, id: &str) -> Option<(String, JobStatus)> {
        let job = self.job(id)?;
        let before = job.status();
        let _ = self.jobs.remove(job.id());
        Some((job.command().to_owned(), before))
    }

    fn lock_reads(&self) -> MutexGuard<'_, Reads> {
        self.reads.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn records_are_bounded_and_the_oldest_goes_first() {
        let session = ClaudeCodeSession::new();
        let seen = Seen::new(SystemTime::UNIX_EPOCH, None);
        for index in 0..=MAX_READ_RECORDS {
            session.record(Path::new(&format!("/f{index}")), seen);
        }
        assert_eq!(session.read_count(), MAX_READ_RECORDS);
        assert!(session.seen(Path::new("/f0")).is_none());
        assert!(session.seen(Path::new("/f1")).is_some());
        let later = Seen::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1), None);
        session.record(Path::new("/f1"), later);
        assert_eq!(session.seen(Path::new("/f1")), Some(later));
    }

    #[test]
    fn job_ids_count_up_and_unknown_ones_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let session = ClaudeCodeSession::new();
        let spec = || {
            let request =
                agent_tools_bash::RunRequest::new("true", dir.path(), dir.path()).unwrap();
            JobSpec::new(request, agent_tools_bash::jobs::JobMode::Pipes)
        };
        assert_eq!(session.start_job(spec()).unwrap().0, "bash_1");
        assert_eq!(session.start_job(spec()).unwrap().0, "bash_2");
        assert!(session.job("bash_2").is_some());
        assert!(session.job("bash_9").is_none());
        assert!(session.job("task_1").is_none());
        assert!(session.stop_job("bash_7").is_none());
        assert_eq!(session.stop_job("bash_1").unwrap().0, "true");
        assert!(session.job("bash_1").is_none());
    }
}
