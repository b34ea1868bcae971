//! The state of one connection: which files were read (and what was seen
//! of them), and the commands running in the background.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use agent_tools_bash::{BackgroundJob, BackgroundJobs, Stopped};
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
#[derive(Debug, Default)]
pub struct ClaudeCodeSession {
    reads: Mutex<Reads>,
    jobs: BackgroundJobs,
    commands: Mutex<BTreeMap<String, String>>,
    next_job: AtomicU64,
}

#[derive(Debug, Default)]
struct Reads {
    seen: HashMap<PathBuf, (Seen, u64)>,
    clock: u64,
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

    /// A fresh id for a background command: `bash_1`, `bash_2`, ...
    pub(crate) fn next_job_id(&self) -> String {
        format!("bash_{}", self.next_job.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// How many background commands the session keeps.
    pub fn background_count(&self) -> usize {
        self.jobs.ids().len()
    }

    pub(crate) fn keep_job(&self, id: &str, command: &str, job: BackgroundJob) {
        self.lock_commands()
            .insert(id.to_owned(), command.to_owned());
        self.jobs.insert(id, job);
    }

    /// Stops background command `id`; its command line and how it went, or
    /// `None` when the session has no such command.
    pub(crate) fn stop_job(&self, id: &str) -> Option<(String, Stopped)> {
        let stopped = self.jobs.stop(id)?;
        let command = self.lock_commands().remove(id).unwrap_or_default();
        Some((command, stopped))
    }

    fn lock_reads(&self) -> MutexGuard<'_, Reads> {
        self.reads.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_commands(&self) -> MutexGuard<'_, BTreeMap<String, String>> {
        self.commands.lock().unwrap_or_else(PoisonError::into_inner)
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
    fn job_ids_count_up() {
        let session = ClaudeCodeSession::new();
        assert_eq!(session.next_job_id(), "bash_1");
        assert_eq!(session.next_job_id(), "bash_2");
        assert!(session.stop_job("bash_1").is_none());
    }
}
