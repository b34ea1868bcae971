//! Jobs: commands that outlive the call that started them, read, typed
//! into, interrupted and killed by later calls.
//!
//! A [`JobTable`] holds one connection's jobs. Each job runs through the
//! same launcher and sandbox as a plain command ([`crate::run`]), in a
//! session of its own, and stays under the launcher until every process it
//! started has ended, so a kill reaches the whole tree (`setsid` children
//! included). Dropping the table kills every job still running; a server
//! that dies takes its jobs with it (the launcher's parent-death signal).
//!
//! * **Modes.** [`JobMode::Pipes`]: stdin `/dev/null`, stdout and stderr
//!   kept apart; Ctrl-C, Ctrl-\ and Ctrl-Z become signals to the job's
//!   process group. [`JobMode::Terminal`]: a pseudo-terminal that is the
//!   job's controlling terminal (`isatty` is true, Ctrl-C typed is
//!   `SIGINT`), stdout and stderr merged, a rendered screen on request.
//! * **Output.** A log per job keeps the newest
//!   [`JobLimits::max_log_bytes`]; what falls off the front is counted
//!   ([`JobRead::dropped_bytes`]) and reading goes on, so a chatty job never
//!   blocks. The log is in a file of the job's (unnamed, on disk); only its
//!   newest [`JobLimits::memory_tail_bytes`] are also in memory, so a
//!   server running many chatty jobs holds little of their output. Reads
//!   go by cursor (new since the last cursor read) or by byte offset, and
//!   come back as plain text: escapes stripped, carriage-return
//!   progress lines collapsed, UTF-8 never split.
//! * **Waits.** A read may wait ([`Wait`]): until the job exits, a pattern
//!   shows in the new output, the output settles, or a deadline, bounded
//!   by [`MAX_WAIT`] and the caller's cancel flag.
//! * **Environment.** `PAGER`, `GIT_PAGER` and `GH_PAGER` are `cat` and
//!   `NO_COLOR` is set, so no pager or colour code stalls or floods a job.
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use std::time::Duration;
//! use agent_tools_bash::RunRequest;
//! use agent_tools_bash::jobs::{JobLimits, JobMode, JobSpec, JobTable, ReadFrom, Wait};
//!
//! let dir = std::env::temp_dir();
//! let table = JobTable::new(JobLimits::default());
//! let request = RunRequest::new("echo ready; sleep 0.2; echo done", &dir, &dir).unwrap();
//! let job = table.start(JobSpec::new(request, JobMode::Pipes)).unwrap();
//! let wait = Wait::until_exit(Duration::from_secs(10));
//! let read = job.read(ReadFrom::Cursor, 1 << 20, &wait, &AtomicBool::new(false)).unwrap();
//! assert_eq!(read.text, "ready\ndone\n");
//! assert!(!read.status.is_running());
//! ```

mod keys;
mod log;
mod plain;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use agent_tools_error::{ErrorCode, ToolError};
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::pty::{Winsize, openpty};
use nix::unistd::Pid;
use regex::Regex;

use crate::outcome::{RunError, RunOutcome};
use crate::request::RunRequest;
use crate::runner::{Held, KILL_GRACE, Supervision, launch_command, run_supervised, signal_group};

pub use keys::KEY_NAMES;
pub use log::OutputStream;
pub use nix::sys::signal::Signal;

/// Running jobs one table allows at once (default).
pub const DEFAULT_MAX_RUNNING_JOBS: usize = 32;
/// Background jobs (what plain commands left running) one table keeps
/// running at once (default); what a command leaves past it is stopped
/// when the command ends.
pub const DEFAULT_MAX_BACKGROUND_JOBS: usize = 32;
/// Running jobs in a terminal one table allows at once (default).
pub const DEFAULT_MAX_TERMINAL_JOBS: usize = 16;
/// Running jobs in a terminal the whole server allows at once: terminals
/// are a system-wide resource.
pub const MAX_TERMINAL_JOBS_PER_SERVER: usize = 64;
/// Exited jobs one table keeps, with their logs (default); past it the
/// oldest exited one is forgotten when a new job starts.
pub const DEFAULT_MAX_EXITED_JOBS: usize = 64;
/// The newest bytes of output kept per job (default): 8 MiB, in the job's
/// log file ([`DEFAULT_MEMORY_TAIL_BYTES`] of them in memory too).
pub const DEFAULT_MAX_LOG_BYTES: usize = 8 * 1024 * 1024;
/// The output bytes one table keeps across its jobs (default): 256 MiB.
/// Past it, starting a job forgets the oldest exited jobs first, and is
/// refused when the running ones' logs leave no room.
pub const DEFAULT_MAX_TABLE_LOG_BYTES: usize = 256 * 1024 * 1024;
/// The newest bytes of each job's log also kept in memory (default):
/// 256 KiB; older ones are read from the job's log file. Four times what
/// the output thread reads at once, and more than a surface's answer
/// mostly takes (codex's 10,000 tokens, Claude Code's 30,000
/// characters), so polls of a running job, and pattern waits on its new
/// output, rarely touch the disk; and 32 floods hold 8 MiB, not 32 times
/// their logs' cap.
pub const DEFAULT_MEMORY_TAIL_BYTES: usize = 256 * 1024;
/// The most bytes one write may send to a job (default): 64 KiB.
pub const DEFAULT_MAX_WRITE_BYTES: usize = 64 * 1024;
/// The longest any wait lasts, whatever was asked: under the 60 s after
/// which common MCP clients give up on a call.
pub const MAX_WAIT: Duration = Duration::from_millis(55_000);
/// Without a pattern, a wait that has seen new output ends once the
/// output has been quiet this long.
pub const SETTLE: Duration = Duration::from_millis(300);
/// After the job's last process exits, output still in flight is awaited
/// at most this long.
pub const EXIT_DRAIN: Duration = Duration::from_millis(50);
/// A write to a terminal that cannot go through this long (the program
/// reads no input) is given up.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// Terminal size of a job that asks for none.
pub const DEFAULT_ROWS: u16 = 40;
/// Terminal width of a job that asks for none.
pub const DEFAULT_COLS: u16 = 120;
/// The fewest rows a terminal gets, whatever was asked.
pub const MIN_ROWS: u16 = 2;
/// The fewest columns a terminal gets, whatever was asked.
pub const MIN_COLS: u16 = 10;

/// The size a terminal gets when `rows`×`cols` is asked: a terminal too
/// small to hold a prompt would only confuse the programs in it.
fn terminal_size(rows: u16, cols: u16) -> (u16, u16) {
    (rows.max(MIN_ROWS), cols.max(MIN_COLS))
}
/// Scrollback rows the screen of a terminal job keeps: none, since only
/// the visible screen is ever shown (the log has the rest).
const SCROLLBACK_ROWS: usize = 0;
/// How often a wait looks at the cancel flag, at the least.
const WAIT_SLICE: Duration = Duration::from_millis(50);
/// How much of the newest output a pattern is looked for in, per look.
const PATTERN_WINDOW: u64 = 1024 * 1024;
/// Bytes read from a job's output per read.
const READ_CHUNK: usize = 64 * 1024;

/// Terminal jobs running in this process, across tables.
static TERMINALS_IN_USE: AtomicUsize = AtomicUsize::new(0);

/// The limits of one table; each refuses with its own [`JobError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobLimits {
    /// Running jobs at once.
    pub max_running: usize,
    /// Running background jobs at once (what plain commands left
    /// running, see [`JobTable::run`]), counted apart from the others.
    pub max_background: usize,
    /// Running jobs in a terminal at once.
    pub max_terminals: usize,
    /// Exited jobs kept.
    pub max_exited: usize,
    /// Newest output bytes kept per job.
    pub max_log_bytes: usize,
    /// Output bytes kept across the table's jobs; exited ones are
    /// forgotten, oldest first, to stay under it, and a start is refused
    /// when the running ones' logs leave no room for one more.
    pub max_table_log_bytes: usize,
    /// The newest output bytes of each job also kept in memory (the rest
    /// of its log is read from its log file).
    pub memory_tail_bytes: usize,
    /// Bytes per write.
    pub max_write_bytes: usize,
}

impl Default for JobLimits {
    fn default() -> Self {
        JobLimits {
            max_running: DEFAULT_MAX_RUNNING_JOBS,
            max_background: DEFAULT_MAX_BACKGROUND_JOBS,
            max_terminals: DEFAULT_MAX_TERMINAL_JOBS,
            max_exited: DEFAULT_MAX_EXITED_JOBS,
            max_log_bytes: DEFAULT_MAX_LOG_BYTES,
            max_table_log_bytes: DEFAULT_MAX_TABLE_LOG_BYTES,
            memory_tail_bytes: DEFAULT_MEMORY_TAIL_BYTES,
            max_write_bytes: DEFAULT_MAX_WRITE_BYTES,
        }
    }
}

/// How a job's standard streams are connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobMode {
    /// stdin `/dev/null`, stdout and stderr two pipes.
    Pipes,
    /// A pseudo-terminal of this size, the job's controlling terminal.
    Terminal {
        /// Rows.
        rows: u16,
        /// Columns.
        cols: u16,
    },
}

impl JobMode {
    /// A terminal of the default size.
    pub const TERMINAL: JobMode = JobMode::Terminal {
        rows: DEFAULT_ROWS,
        cols: DEFAULT_COLS,
    };

    /// Whether the job has a terminal.
    pub fn is_terminal(self) -> bool {
        matches!(self, JobMode::Terminal { .. })
    }
}

/// What to start: the command (its working directory, launcher and
/// sandbox), the mode, and environment variables besides the defaults.
#[derive(Debug)]
pub struct JobSpec {
    request: RunRequest,
    mode: JobMode,
    env: Vec<(OsString, OsString)>,
    log_file: Option<(File, String)>,
}

impl JobSpec {
    /// A job running `request`'s command in `mode`. The request's timeout
    /// and output limits do not apply: a job runs until it ends or is
    /// killed, and its output goes to its log.
    pub fn new(request: RunRequest, mode: JobMode) -> Self {
        JobSpec {
            request,
            mode,
            env: Vec::new(),
            log_file: None,
        }
    }

    /// Sets an environment variable for the command (after the defaults,
    /// so it may replace one).
    pub fn with_env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Also appends the raw output to `file` (shown to the caller as
    /// `shown`), up to the log cap; past it a note ends the file.
    pub fn with_log_file(mut self, file: File, shown: impl Into<String>) -> Self {
        self.log_file = Some((file, shown.into()));
        self
    }
}

/// Why a job call was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum JobError {
    /// No job has this id (never had, or it was forgotten).
    #[error("no job {0}; job_list shows the jobs there are")]
    UnknownJob(u64),
    /// No background job has this id (never had, or it was forgotten).
    #[error("no background job {0}; job_list shows the ones there are")]
    UnknownBackground(u64),
    /// The table runs its most jobs already.
    #[error(
        "{limit} jobs are running already, the most allowed at once; kill one you no longer need first"
    )]
    TooManyRunning {
        /// The limit.
        limit: usize,
    },
    /// The table keeps its most running background jobs already: what a
    /// command left running in the background was stopped.
    #[error(
        "[{limit} processes that earlier commands left in the background are still running, the most kept at once; what this command left in the background was stopped. Stop one you no longer need first.]"
    )]
    TooManyBackground {
        /// The limit.
        limit: usize,
    },
    /// The table (or the server) runs its most terminal jobs already.
    #[error(
        "{limit} jobs with a terminal are running already{scope}, the most allowed at once; kill one first or start this one without a terminal",
        scope = if *server { " in this server" } else { "" }
    )]
    TooManyTerminals {
        /// The limit.
        limit: usize,
        /// Whether the server-wide limit was reached.
        server: bool,
    },
    /// The job has exited: nothing can be written to it.
    #[error("job {0} has exited; it takes no more input")]
    Exited(u64),
    /// A write larger than allowed.
    #[error(
        "the input is {len} bytes, over the limit of {limit} bytes for one write; send it in parts"
    )]
    WriteTooLarge {
        /// The size asked.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// Text for a job without a terminal, whose stdin is `/dev/null`.
    #[error(
        "job {0} has no terminal and its stdin is closed: it takes only the keys C-c, C-\\ and C-z (sent as signals); start it with a terminal to type into it"
    )]
    NoStdin(u64),
    /// A key name nobody knows, or one a job without a terminal cannot take.
    #[error("unknown key {name:?}; keys are {names}", names = KEY_NAMES)]
    UnknownKey {
        /// The name given.
        name: String,
    },
    /// The terminal took only part of a write in [`WRITE_TIMEOUT`].
    #[error(
        "the job read only {written} of {len} bytes in 2 s; it is not reading its input (busy, or stopped)"
    )]
    WriteStalled {
        /// Bytes written.
        written: usize,
        /// Bytes asked.
        len: usize,
    },
    /// A size for a job without a terminal.
    #[error("job {0} has no terminal, so it has no size to set; start it with a terminal")]
    NoTerminal(u64),
    /// The terminal refused the new size.
    #[error("the terminal of job {id} took no new size: {reason}")]
    Resize {
        /// The job.
        id: u64,
        /// What the system said.
        reason: String,
    },
    /// The logs the table keeps, the running jobs' included, leave no
    /// room for one more log.
    #[error(
        "the jobs of this connection hold {kept} bytes of output, and one more log of up to {log} bytes would pass the {limit} bytes they may hold together; kill a job you no longer need first (exited ones are forgotten to make room)"
    )]
    LogTotal {
        /// The bytes the table's logs hold.
        kept: usize,
        /// The room one more log takes.
        log: usize,
        /// The limit.
        limit: usize,
    },
    /// The job's log file could not be read. The log holds only its
    /// newest bytes (those in memory) from then on.
    #[error(
        "the log of job {id} could not be read ({reason}); its output before byte {kept_from} is lost, the rest can be read again"
    )]
    LogUnreadable {
        /// The job.
        id: u64,
        /// What the system said.
        reason: String,
        /// The first offset still kept after.
        kept_from: u64,
    },
    /// The job could not be started.
    #[error("{0}")]
    Start(ToolError),
}

impl From<JobError> for ToolError {
    fn from(err: JobError) -> ToolError {
        let code = match &err {
            JobError::UnknownJob(_) | JobError::UnknownBackground(_) => ErrorCode::NotFound,
            JobError::WriteTooLarge { .. } => ErrorCode::TooLarge,
            JobError::WriteStalled { .. } => ErrorCode::Timeout,
            JobError::Resize { .. } | JobError::LogUnreadable { .. } => ErrorCode::IoError,
            JobError::Start(inner) => return inner.clone(),
            JobError::TooManyRunning { .. }
            | JobError::TooManyBackground { .. }
            | JobError::TooManyTerminals { .. }
            | JobError::LogTotal { .. }
            | JobError::Exited(_)
            | JobError::NoStdin(_)
            | JobError::NoTerminal(_)
            | JobError::UnknownKey { .. } => ErrorCode::InvalidInput,
        };
        ToolError::new(code, err.to_string())
    }
}

/// Where a job is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobStatus {
    /// Some process of the job is still running.
    Running,
    /// Every process of the job has ended.
    Exited {
        /// The shell's exit code, when it exited.
        code: Option<i32>,
        /// The signal that ended the shell (`SIGTERM`...), when one did.
        signal: Option<String>,
        /// Whether a kill through the table ended it.
        killed: bool,
    },
}

impl JobStatus {
    /// Whether the job is still running.
    pub fn is_running(&self) -> bool {
        matches!(self, JobStatus::Running)
    }

    /// `"running"` or `"exited"`.
    pub fn name(&self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Exited { .. } => "exited",
        }
    }
}

/// Where a read starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFrom {
    /// At the job's cursor, which the read then moves past what it
    /// returned: each cursor read gives what is new since the last.
    Cursor,
    /// At this byte offset in everything the job printed (the cursor is
    /// left alone). Offsets before the kept part start at its first byte.
    Offset(u64),
    /// This many bytes before the end (the cursor is left alone).
    Tail(u64),
}

/// How long a read waits before it answers, and for what. Every wait ends
/// when the job has exited (and its output is read), when the caller's
/// cancel flag is set, and at [`MAX_WAIT`] at the latest.
#[derive(Debug, Clone)]
pub struct Wait {
    /// The longest wait.
    pub max: Duration,
    /// End when the new output (as plain text) matches.
    pub pattern: Option<Regex>,
    /// End once there is new output and it has been quiet for [`SETTLE`].
    pub settle: bool,
    /// Only output from this byte offset on can end the wait (by matching
    /// or settling); it is still returned from where the read starts. A
    /// write sets it to the log's end before the input goes in, so a
    /// prompt printed before the input, but not yet read, is not taken
    /// for the answer to it.
    pub fresh_from: u64,
}

impl Wait {
    /// No wait.
    pub fn none() -> Self {
        Wait {
            max: Duration::ZERO,
            pattern: None,
            settle: false,
            fresh_from: 0,
        }
    }

    /// Until exit or `max`.
    pub fn until_exit(max: Duration) -> Self {
        Wait {
            max,
            pattern: None,
            settle: false,
            fresh_from: 0,
        }
    }

    /// Until exit, `pattern` (when given, else settled output) or `max`:
    /// the default surface's wait.
    pub fn for_output(max: Duration, pattern: Option<Regex>) -> Self {
        let settle = pattern.is_none();
        Wait {
            max,
            pattern,
            settle,
            fresh_from: 0,
        }
    }

    /// The same wait, ended only by output from `offset` on (see
    /// [`Wait::fresh_from`]); [`Job::output_end`] before a write gives it.
    #[must_use]
    pub fn after(mut self, offset: u64) -> Self {
        self.fresh_from = offset;
        self
    }
}

/// What a read returned.
#[derive(Debug, Clone)]
pub struct JobRead {
    /// The first byte offset the text covers.
    pub from: u64,
    /// The offset just past the last byte it covers.
    pub to: u64,
    /// The offset just past the last byte printed so far.
    pub end: u64,
    /// The output in `[from, to)` as plain text.
    pub text: String,
    /// The same, cut where the stream changes (one part for a terminal).
    pub parts: Vec<(OutputStream, String)>,
    /// Whether output past `to` is there already.
    pub more: bool,
    /// Bytes that fell off the front of the log (over its cap).
    pub dropped_bytes: u64,
    /// With a pattern: whether it was seen.
    pub matched: Option<bool>,
    /// How long the read waited.
    pub waited: Duration,
    /// The job's status when the read returned.
    pub status: JobStatus,
}

/// A terminal job's screen as a terminal would show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screen {
    /// The visible rows, as text.
    pub text: String,
    /// The terminal's size: rows and columns.
    pub size: (u16, u16),
    /// Whether a full-screen program switched to the alternate screen.
    pub alternate: bool,
    /// The cursor's row and column.
    pub cursor: (u16, u16),
}

/// One connection's jobs. Dropping it kills every job still running.
#[derive(Debug)]
pub struct JobTable {
    limits: JobLimits,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    jobs: BTreeMap<u64, Arc<Job>>,
    next_id: u64,
    /// The jobs being started, by id (whether each has a terminal): they
    /// count as running until they are in `jobs`.
    starting: BTreeMap<u64, bool>,
    /// What plain commands left in the background, by their own ids.
    background: BTreeMap<u64, Arc<Job>>,
    next_background_id: u64,
}

/// Makes room in the table for one more record of `origin`'s kind: the
/// oldest exited records of that kind go first, down to
/// [`JobLimits::max_exited`], then more of them while the logs kept by
/// the whole table leave no room for one more full log. Running jobs are
/// never dropped. Returns the bytes the table's logs hold after, the
/// running jobs' included.
fn make_room(inner: &mut Inner, origin: JobOrigin, limits: &JobLimits) -> usize {
    let mut kept: usize = inner
        .jobs
        .values()
        .chain(inner.background.values())
        .map(|job| job.retained_bytes())
        .sum();
    let records = match origin {
        JobOrigin::Started => &mut inner.jobs,
        JobOrigin::Background => &mut inner.background,
    };
    let exited: Vec<u64> = records
        .iter()
        .filter(|(_, job)| !job.status().is_running())
        .map(|(id, _)| *id)
        .collect();
    let excess = (exited.len() + 1).saturating_sub(limits.max_exited.max(1));
    for (n, id) in exited.into_iter().enumerate() {
        if n >= excess && kept.saturating_add(limits.max_log_bytes) <= limits.max_table_log_bytes {
            break;
        }
        if let Some(job) = records.remove(&id) {
            kept = kept.saturating_sub(job.retained_bytes());
        }
    }
    kept
}

impl Default for JobTable {
    fn default() -> Self {
        JobTable::new(JobLimits::default())
    }
}

impl JobTable {
    /// An empty table with these limits.
    pub fn new(limits: JobLimits) -> Self {
        JobTable {
            limits,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The table's limits.
    pub fn limits(&self) -> JobLimits {
        self.limits
    }

    /// Starts a job; its id counts up from 1 in this table.
    ///
    /// The process is started without the table's lock held (a start takes
    /// milliseconds): the jobs being started count as running meanwhile,
    /// so two starts at once cannot pass a limit.
    pub fn start(&self, spec: JobSpec) -> Result<Arc<Job>, JobError> {
        let mut inner = self.lock();
        let running: Vec<&Arc<Job>> = inner
            .jobs
            .values()
            .filter(|job| job.status().is_running())
            .collect();
        if running.len() + inner.starting.len() >= self.limits.max_running {
            return Err(JobError::TooManyRunning {
                limit: self.limits.max_running,
            });
        }
        let terminal = spec.mode.is_terminal();
        if terminal {
            let in_table = running.iter().filter(|job| job.mode.is_terminal()).count()
                + inner.starting.values().filter(|t| **t).count();
            if in_table >= self.limits.max_terminals {
                return Err(JobError::TooManyTerminals {
                    limit: self.limits.max_terminals,
                    server: false,
                });
            }
            if TERMINALS_IN_USE.fetch_add(1, Ordering::SeqCst) >= MAX_TERMINAL_JOBS_PER_SERVER {
                TERMINALS_IN_USE.fetch_sub(1, Ordering::SeqCst);
                return Err(JobError::TooManyTerminals {
                    limit: MAX_TERMINAL_JOBS_PER_SERVER,
                    server: true,
                });
            }
        }
        // Room for the new record: the oldest exited ones go first. The
        // running jobs' logs count too; when they alone leave no room for
        // one more, the start is refused rather than the total passed.
        let kept = make_room(&mut inner, JobOrigin::Started, &self.limits);
        if kept.saturating_add(self.limits.max_log_bytes) > self.limits.max_table_log_bytes {
            if terminal {
                TERMINALS_IN_USE.fetch_sub(1, Ordering::SeqCst);
            }
            return Err(JobError::LogTotal {
                kept,
                log: self.limits.max_log_bytes,
                limit: self.limits.max_table_log_bytes,
            });
        }
        inner.next_id += 1;
        let id = inner.next_id;
        inner.starting.insert(id, terminal);
        drop(inner);
        let spawned = Job::spawn(id, spec, &self.limits);
        let mut inner = self.lock();
        inner.starting.remove(&id);
        match spawned {
            Ok(job) => {
                let job = Arc::new(job);
                inner.jobs.insert(id, Arc::clone(&job));
                Ok(job)
            }
            Err(err) => {
                if terminal {
                    TERMINALS_IN_USE.fetch_sub(1, Ordering::SeqCst);
                }
                Err(err)
            }
        }
    }

    /// Runs a plain command as [`crate::run`] does, except that what it
    /// leaves running in the background (`cmd &`, `setsid cmd &`) stays
    /// under the command's launcher and becomes a job of this table
    /// ([`JobOrigin::Background`], see [`JobTable::background`]): it keeps
    /// running after the call, its output (when it still writes to the
    /// command's pipes) goes to its log, a kill stops it with all it
    /// started, and it dies with the table and with this process, like any
    /// job. Without a launcher in `request`, it is just [`crate::run`].
    ///
    /// These jobs do not count towards [`JobLimits::max_running`]; they
    /// have a limit of their own, [`JobLimits::max_background`] running at
    /// once. The processes exist already when the call ends, so past that
    /// limit they are not refused but stopped: the command's leftovers are
    /// killed as a job is (the whole tree, `TERM` then `KILL`), no record
    /// of them is kept, and the outcome's stderr ends with a line saying so
    /// ([`JobError::TooManyBackground`]); the background jobs already
    /// running are left alone. Exited records are kept as the started
    /// jobs' are, at most [`JobLimits::max_exited`], the oldest forgotten
    /// first.
    pub fn run(&self, request: &RunRequest, cancel: &AtomicBool) -> Result<RunOutcome, RunError> {
        let (mut result, held) = run_supervised(request, cancel, true);
        if let Some(held) = held
            && let Err(refused) = self.adopt(request.command(), held, request.spill_dir())
        {
            let stderr = match &mut result {
                Ok(outcome) => Some(&mut outcome.stderr),
                Err(
                    RunError::TimedOut { partial, .. }
                    | RunError::OverCeiling { partial, .. }
                    | RunError::Cancelled { partial },
                ) => Some(&mut partial.stderr),
                Err(RunError::Failed(_)) => None,
            };
            if let Some(stderr) = stderr {
                if !stderr.is_empty() && !stderr.ends_with('\n') {
                    stderr.push('\n');
                }
                stderr.push_str(&refused.to_string());
                stderr.push('\n');
            }
        }
        result
    }

    /// Makes `held` a background job of the table (its log file in
    /// `log_dir`), or stops it when the table runs its most background
    /// jobs already.
    fn adopt(&self, command: &str, held: Held, log_dir: &Path) -> Result<(), JobError> {
        let mut inner = self.lock();
        let running = inner
            .background
            .values()
            .filter(|job| job.status().is_running())
            .count();
        if running >= self.limits.max_background {
            drop(inner);
            // Under a job of its own (never listed), so that the kill is
            // a job's: the whole tree, TERM then KILL.
            if let Ok(job) = Job::adopt(0, command, held, &self.limits, None) {
                job.kill(Signal::SIGTERM);
            }
            return Err(JobError::TooManyBackground {
                limit: self.limits.max_background,
            });
        }
        make_room(&mut inner, JobOrigin::Background, &self.limits);
        inner.next_background_id += 1;
        let id = inner.next_background_id;
        // Only a thread that cannot be started fails this, and the
        // launcher was killed then.
        if let Ok(job) = Job::adopt(id, command, held, &self.limits, Some(log_dir)) {
            inner.background.insert(id, Arc::new(job));
        }
        Ok(())
    }

    /// What plain commands left running in the background, by id, the
    /// exited ones kept too.
    pub fn backgrounds(&self) -> Vec<Arc<Job>> {
        self.lock().background.values().cloned().collect()
    }

    /// Background job `id` (see [`JobTable::run`]).
    pub fn background(&self, id: u64) -> Result<Arc<Job>, JobError> {
        self.lock()
            .background
            .get(&id)
            .cloned()
            .ok_or(JobError::UnknownBackground(id))
    }

    /// Job `id`.
    pub fn get(&self, id: u64) -> Result<Arc<Job>, JobError> {
        self.lock()
            .jobs
            .get(&id)
            .cloned()
            .ok_or(JobError::UnknownJob(id))
    }

    /// Every job kept, by id.
    pub fn list(&self) -> Vec<Arc<Job>> {
        self.lock().jobs.values().cloned().collect()
    }

    /// Forgets job `id` (its log with it), killing it first if it runs.
    pub fn remove(&self, id: u64) -> Result<JobStatus, JobError> {
        let job = self
            .lock()
            .jobs
            .remove(&id)
            .ok_or(JobError::UnknownJob(id))?;
        Ok(job.kill(Signal::SIGTERM))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for JobTable {
    fn drop(&mut self) {
        let jobs: Vec<Arc<Job>> = {
            let mut inner = self.lock();
            let started = std::mem::take(&mut inner.jobs);
            let background = std::mem::take(&mut inner.background);
            started
                .into_values()
                .chain(background.into_values())
                .collect()
        };
        // Every job gets its TERM at once, so the graces run side by side:
        // the drop takes at most one grace, however many jobs ignore it.
        let running: Vec<&Arc<Job>> = jobs.iter().filter(|job| job.mark_killed()).collect();
        for job in &running {
            job.send(Signal::SIGTERM);
        }
        let deadline = Instant::now() + KILL_GRACE;
        for job in &running {
            job.wait_exit(deadline.saturating_duration_since(Instant::now()));
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        for job in &running {
            if job.status().is_running() {
                job.send(Signal::SIGKILL);
            }
        }
        for job in &running {
            job.wait_exit(deadline.saturating_duration_since(Instant::now()));
        }
    }
}

/// Where a job came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobOrigin {
    /// Started as a job ([`JobTable::start`]).
    Started,
    /// Left running by a plain command run through the table
    /// ([`JobTable::run`]): what it started in the background (`cmd &`,
    /// `setsid cmd &`), under the command's launcher, which stayed with it.
    /// Its ids are counted apart from the started jobs'.
    Background,
}

/// A started process, before its threads: what [`Job::supervise`] needs.
struct Launched {
    id: u64,
    origin: JobOrigin,
    command: String,
    mode: JobMode,
    child: Child,
    sources: Vec<(File, OutputStream)>,
    master: Option<OwnedFd>,
    screen: Option<vt100::Parser>,
    log_file: Option<(File, String)>,
    /// Where the job's own log file is made (see [`log::create_file`]).
    log_dir: Option<PathBuf>,
}

/// The output pipes still open, as the reader's sources.
fn pipe_sources(
    stdout: Option<std::process::ChildStdout>,
    stderr: Option<std::process::ChildStderr>,
) -> Vec<(File, OutputStream)> {
    let mut sources = Vec::new();
    if let Some(out) = stdout {
        sources.push((File::from(OwnedFd::from(out)), OutputStream::Stdout));
    }
    if let Some(err) = stderr {
        sources.push((File::from(OwnedFd::from(err)), OutputStream::Stderr));
    }
    sources
}

/// One job.
#[derive(Debug)]
pub struct Job {
    id: u64,
    origin: JobOrigin,
    pid: Pid,
    command: String,
    mode: JobMode,
    started: Instant,
    log_file: Option<String>,
    max_write: usize,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// The terminal's master, for writes; gone once the job has exited.
    writer: Mutex<Option<File>>,
}

struct State {
    log: log::OutputLog,
    /// Where the next cursor read starts: the end of the last one.
    cursor: u64,
    status: Option<ExitStatus>,
    exited_at: Option<Instant>,
    killed: bool,
    /// Every output stream has reached its end.
    closed: bool,
    last_output: Option<Instant>,
    screen: Option<vt100::Parser>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("end", &self.log.end())
            .field("status", &self.status)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

/// The file a job's raw output also goes to when the caller asks (a named
/// copy for people and other tools, apart from the job's own log file),
/// written by the job's reader alone (outside the state's lock: a slow
/// disk never holds up a read).
struct LogFile {
    file: File,
    room: usize,
}

impl LogFile {
    /// Appends `data` up to the room left; false once the file takes no
    /// more (full, or it failed).
    fn append(&mut self, data: &[u8]) -> bool {
        let take = data.len().min(self.room);
        let ok = self.file.write_all(&data[..take]).is_ok();
        self.room -= take;
        if ok && take < data.len() {
            let _ = self.file.write_all(
                b"\n[the log file reached its cap; the job's tools read its later output]\n",
            );
        }
        ok && take == data.len()
    }
}

impl State {
    /// Appends output (see [`log::OutputLog::push`]); false once the log
    /// has given up its file.
    fn push(&mut self, stream: OutputStream, data: &[u8], stored: bool) -> bool {
        let keeps_file = self.log.push(stream, data, stored);
        self.last_output = Some(Instant::now());
        if let Some(screen) = &mut self.screen {
            screen.process(data);
        }
        keeps_file
    }
}

impl Job {
    fn spawn(id: u64, spec: JobSpec, limits: &JobLimits) -> Result<Job, JobError> {
        let JobSpec {
            request,
            mode,
            env,
            log_file,
        } = spec;
        let start_err = |what: &str, err: &dyn std::fmt::Display| {
            JobError::Start(ToolError::new(
                ErrorCode::IoError,
                format!("cannot {what}: {err}"),
            ))
        };
        let cwd = request.cwd();
        match std::fs::metadata(cwd) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(JobError::Start(ToolError::new(
                    ErrorCode::NotAFile,
                    format!("{}: not a directory", cwd.display()),
                )));
            }
            Err(err) => return Err(JobError::Start(ToolError::from_io(&err, cwd))),
        }
        let (program, args) = request.program_and_args();
        let supervision = if mode.is_terminal() {
            Supervision::InTerminalUntilAllEnd
        } else {
            Supervision::UntilAllEnd
        };
        let mut command = launch_command(&request, supervision).map_err(JobError::Start)?;
        command
            .args(args)
            .current_dir(cwd)
            .env("PAGER", "cat")
            .env("GIT_PAGER", "cat")
            .env("GH_PAGER", "cat")
            .env("NO_COLOR", "1");
        let mut master = None;
        let screen = match mode {
            JobMode::Pipes => {
                command
                    .env("TERM", "dumb")
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                None
            }
            JobMode::Terminal { rows, cols } => {
                let (rows, cols) = terminal_size(rows, cols);
                let size = Winsize {
                    ws_row: rows,
                    ws_col: cols,
                    ws_xpixel: 0,
                    ws_ypixel: 0,
                };
                let pty =
                    openpty(Some(&size), None).map_err(|err| start_err("open a terminal", &err))?;
                let dup = |fd: &OwnedFd| {
                    fd.try_clone()
                        .map_err(|err| start_err("share the terminal", &err))
                };
                command
                    .env("TERM", "xterm-256color")
                    .env("COLUMNS", cols.to_string())
                    .env("LINES", rows.to_string())
                    // Python 3.13's own line editor draws with escapes the
                    // plain text would lose; the basic one reads lines.
                    .env("PYTHON_BASIC_REPL", "1")
                    .stdin(Stdio::from(dup(&pty.slave)?))
                    .stdout(Stdio::from(dup(&pty.slave)?))
                    .stderr(Stdio::from(pty.slave));
                master = Some(pty.master);
                Some(vt100::Parser::new(
                    std::num::NonZeroU16::new(rows).unwrap_or(std::num::NonZeroU16::MIN),
                    std::num::NonZeroU16::new(cols).unwrap_or(std::num::NonZeroU16::MIN),
                    SCROLLBACK_ROWS,
                ))
            }
        };
        for (key, value) in env {
            command.env(key, value);
        }
        let spawned = command.spawn();
        // The command keeps this process's copies of the terminal's slave:
        // without dropping them the master would never see the end.
        drop(command);
        let mut child = spawned.map_err(|err| start_err(&format!("start {program}"), &err))?;
        let sources: Vec<(File, OutputStream)> = match &master {
            Some(_) => Vec::new(),
            None => pipe_sources(child.stdout.take(), child.stderr.take()),
        };
        Job::supervise(
            Launched {
                id,
                origin: JobOrigin::Started,
                command: request.command().to_owned(),
                mode,
                child,
                sources,
                master,
                screen,
                log_file,
                log_dir: Some(request.spill_dir().to_path_buf()),
            },
            limits,
        )
    }

    /// What a plain command left running in the background, under its
    /// launcher, as a job of its own (its log file in `log_dir`).
    fn adopt(
        id: u64,
        command: &str,
        held: Held,
        limits: &JobLimits,
        log_dir: Option<&Path>,
    ) -> Result<Job, JobError> {
        let Held {
            launcher,
            stdout,
            stderr,
        } = held;
        Job::supervise(
            Launched {
                id,
                origin: JobOrigin::Background,
                command: command.to_owned(),
                mode: JobMode::Pipes,
                child: launcher,
                sources: pipe_sources(stdout, stderr),
                master: None,
                screen: None,
                log_file: None,
                log_dir: log_dir.map(Path::to_path_buf),
            },
            limits,
        )
    }

    /// Starts the threads that reap the job's launcher and move its output
    /// into its log.
    fn supervise(launched: Launched, limits: &JobLimits) -> Result<Job, JobError> {
        let Launched {
            id,
            origin,
            command,
            mode,
            child,
            mut sources,
            master,
            screen,
            log_file,
            log_dir,
        } = launched;
        let start_err = |what: &str, err: &dyn std::fmt::Display| {
            JobError::Start(ToolError::new(
                ErrorCode::IoError,
                format!("cannot {what}: {err}"),
            ))
        };
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        let (file, shown) = match log_file {
            Some((file, shown)) => (
                Some(LogFile {
                    file,
                    room: limits.max_log_bytes,
                }),
                Some(shown),
            ),
            None => (None, None),
        };
        let writer = match &master {
            Some(master) => {
                // Writes must never block a call for long: the master is
                // non-blocking (the reader polls it) and a write waits at
                // most WRITE_TIMEOUT for room.
                let _ = fcntl(master.as_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK));
                master.try_clone().ok().map(File::from)
            }
            None => None,
        };
        // A log that fits its memory tail needs no file.
        let (store, ring) = if limits.max_log_bytes > limits.memory_tail_bytes {
            match log::create_file(log_dir.as_deref(), limits.max_log_bytes) {
                Some((file, writer)) => (Some(file), Some(writer)),
                None => (None, None),
            }
        } else {
            (None, None)
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                log: log::OutputLog::new(limits.max_log_bytes, limits.memory_tail_bytes, store),
                cursor: 0,
                status: None,
                exited_at: None,
                killed: false,
                closed: false,
                last_output: None,
                screen,
            }),
            changed: Condvar::new(),
            writer: Mutex::new(writer),
        });
        if let Some(master) = master {
            sources.push((File::from(master), OutputStream::Stdout));
        }
        let terminal = mode.is_terminal();
        let reaper_shared = Arc::clone(&shared);
        let reaper = thread::Builder::new()
            .name("job-reaper".into())
            .stack_size(64 * 1024)
            .spawn(move || reap(child, &reaper_shared, terminal));
        if let Err(err) = reaper {
            let _ = signal_group(pid, Some(Signal::SIGKILL), false);
            return Err(start_err("start the reaper thread", &err));
        }
        let reader_shared = Arc::clone(&shared);
        let reader = thread::Builder::new()
            .name("job-output".into())
            .stack_size(256 * 1024)
            .spawn(move || pump(sources, file, ring, &reader_shared));
        if let Err(err) = reader {
            let _ = signal_group(pid, Some(Signal::SIGKILL), false);
            return Err(start_err("start the output thread", &err));
        }
        Ok(Job {
            id,
            origin,
            pid,
            command,
            mode,
            started: Instant::now(),
            log_file: shown,
            max_write: limits.max_write_bytes,
            shared,
        })
    }

    /// The job's id in its table (among the jobs of its origin).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether the job was started as one or left in the background by a
    /// plain command.
    pub fn origin(&self) -> JobOrigin {
        self.origin
    }

    /// The pid of the job's first process (the launcher's, whose process
    /// group is the job's).
    pub fn pid(&self) -> i32 {
        self.pid.as_raw()
    }

    /// The command line.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The job's mode.
    pub fn mode(&self) -> JobMode {
        self.mode
    }

    /// When the job started (for a background job: when the call that
    /// left it ended).
    pub fn started_at(&self) -> Instant {
        self.started
    }

    /// How long ago the job started.
    pub fn runtime(&self) -> Duration {
        let state = self.state();
        match state.exited_at {
            Some(at) => at.saturating_duration_since(self.started),
            None => self.started.elapsed(),
        }
    }

    /// The log file the output also goes to, as the caller named it.
    pub fn log_file(&self) -> Option<&str> {
        self.log_file.as_deref()
    }

    /// How long the job has printed nothing (since its start when it never
    /// printed).
    pub fn quiet_for(&self) -> Duration {
        self.state().last_output.unwrap_or(self.started).elapsed()
    }

    /// The bytes of output the job's log holds (in its file and memory).
    pub fn retained_bytes(&self) -> usize {
        let state = self.state();
        usize::try_from(state.log.end() - state.log.start()).unwrap_or(usize::MAX)
    }

    /// The offset just past the last byte printed so far.
    pub fn output_end(&self) -> u64 {
        self.state().log.end()
    }

    /// Where the job is in its life.
    pub fn status(&self) -> JobStatus {
        status_of(&self.state())
    }

    /// Waits as `wait` says, then returns at most `max_bytes` of output
    /// from `from`.
    ///
    /// Fails only when the job's log file cannot be read
    /// ([`JobError::LogUnreadable`]); the log then keeps only what it has
    /// in memory, and the next read answers from there.
    pub fn read(
        &self,
        from: ReadFrom,
        max_bytes: usize,
        wait: &Wait,
        cancel: &AtomicBool,
    ) -> Result<JobRead, JobError> {
        let started = Instant::now();
        let deadline = started + wait.max.min(MAX_WAIT);
        // Only the state's lock is taken, and a wait lets go of it: a
        // poll of the job is never held up by another call's wait.
        let kind = from;
        let mut state = self.state();
        let origin = match kind {
            ReadFrom::Cursor => state.cursor,
            ReadFrom::Offset(offset) => offset,
            ReadFrom::Tail(back) => state.log.end().saturating_sub(back),
        };
        // Output before this cannot end the wait.
        let fresh = origin.max(wait.fresh_from);
        let mut scanned = fresh;
        let mut matched = wait.pattern.as_ref().map(|_| false);
        loop {
            let now = Instant::now();
            let end = state.log.end();
            if let Some(pattern) = &wait.pattern
                && end > scanned
            {
                let look_from = scanned
                    .saturating_sub(1024)
                    .max(fresh)
                    .max(end.saturating_sub(PATTERN_WINDOW));
                let bytes = state
                    .log
                    .read(look_from, end)
                    .map_err(|err| self.unreadable(&mut state, &err))?;
                if pattern.is_match(&plain::render(&bytes)) {
                    matched = Some(true);
                    break;
                }
                scanned = end;
            }
            if let Some(at) = state.exited_at
                && (state.closed || now >= at + EXIT_DRAIN)
            {
                break;
            }
            let mut slice = WAIT_SLICE;
            if wait.settle
                && end > fresh
                && let Some(last) = state.last_output
            {
                let quiet_until = last + SETTLE;
                if now >= quiet_until {
                    break;
                }
                slice = slice.min(quiet_until - now);
            }
            if now >= deadline || cancel.load(Ordering::Relaxed) {
                break;
            }
            if let Some(at) = state.exited_at {
                slice = slice.min((at + EXIT_DRAIN).saturating_duration_since(now));
            }
            slice = slice.min(deadline - now).max(Duration::from_millis(1));
            state = self
                .shared
                .changed
                .wait_timeout(state, slice)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let finished = state.closed;
        // A cursor read answers from where the cursor is now: a read that
        // answered during this one's wait moved it, and what that read
        // returned is not returned twice.
        let origin = match kind {
            ReadFrom::Cursor => origin.max(state.cursor),
            _ => origin,
        };
        let end = state.log.end();
        let start = origin.clamp(state.log.start(), end);
        // One read of the log: up to three bytes more at the front, in
        // case it starts inside a character.
        let window = state
            .log
            .read(
                start,
                end.min(start.saturating_add(max_bytes as u64).saturating_add(3)),
            )
            .map_err(|err| self.unreadable(&mut state, &err))?;
        let log = &state.log;
        // Never start inside a character.
        let skip = agent_tools_text::utf8_char_start(&window);
        let from = start + skip as u64;
        let mut to = end.min(from.saturating_add(max_bytes as u64));
        let at = |offset: u64| usize::try_from(offset - start).unwrap_or(usize::MAX);
        if to < end || !finished {
            to -= plain::unfinished_tail(&window[skip..at(to)]) as u64;
        }
        let text = plain::render(&window[skip..at(to)]);
        let parts = log
            .runs_in(from, to)
            .into_iter()
            .map(|(stream, a, b)| (stream, plain::render(&window[at(a)..at(b)])))
            .collect();
        let read = JobRead {
            from,
            to,
            end,
            text,
            parts,
            more: to < end,
            dropped_bytes: log.start(),
            matched,
            waited: started.elapsed(),
            status: status_of(&state),
        };
        if kind == ReadFrom::Cursor {
            state.cursor = state.cursor.max(read.to);
        }
        Ok(read)
    }

    /// The error of a read of the log file that failed; the log keeps
    /// only what it has in memory from then on.
    fn unreadable(&self, state: &mut State, err: &io::Error) -> JobError {
        state.log.lose_file();
        JobError::LogUnreadable {
            id: self.id,
            reason: err.to_string(),
            kept_from: state.log.start(),
        }
    }

    /// Types `input` and then `keys` (names, see [`KEY_NAMES`]) into a
    /// terminal job. A job without a terminal takes only the keys (or raw
    /// control characters) C-c, C-\ and C-z, sent as `SIGINT`, `SIGQUIT`
    /// and `SIGTSTP` to its process group. Returns the bytes written (or
    /// signals sent).
    pub fn write(&self, input: &[u8], keys: &[String]) -> Result<usize, JobError> {
        if !self.status().is_running() {
            return Err(JobError::Exited(self.id));
        }
        if !self.mode.is_terminal() {
            let mut signals = Vec::new();
            for byte in input {
                signals.push(keys::byte_signal(*byte).ok_or(JobError::NoStdin(self.id))?);
            }
            for key in keys {
                match keys::key_signal(key) {
                    Some(signal) => signals.push(signal),
                    None if keys::key_bytes(key, false).is_some() => {
                        return Err(JobError::NoStdin(self.id));
                    }
                    None => return Err(JobError::UnknownKey { name: key.clone() }),
                }
            }
            for signal in &signals {
                self.send(*signal);
            }
            return Ok(signals.len());
        }
        let application_cursor = self
            .state()
            .screen
            .as_ref()
            .is_some_and(|p| p.screen().application_cursor());
        let mut bytes = input.to_vec();
        for key in keys {
            let seq = keys::key_bytes(key, application_cursor)
                .ok_or_else(|| JobError::UnknownKey { name: key.clone() })?;
            bytes.extend(seq);
        }
        if bytes.len() > self.max_write {
            return Err(JobError::WriteTooLarge {
                len: bytes.len(),
                limit: self.max_write,
            });
        }
        let mut writer = self
            .shared
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(file) = writer.as_mut() else {
            return Err(JobError::Exited(self.id));
        };
        let deadline = Instant::now() + WRITE_TIMEOUT;
        let mut written = 0;
        while written < bytes.len() {
            match file.write(&bytes[written..]) {
                Ok(n) => written += n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    let ms = u16::try_from(left.as_millis().max(1)).unwrap_or(u16::MAX);
                    let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLOUT)];
                    let _ = poll(&mut fds, PollTimeout::from(ms));
                }
                // The terminal is gone: the job is ending.
                Err(_) => return Err(JobError::Exited(self.id)),
            }
        }
        if written < bytes.len() {
            return Err(JobError::WriteStalled {
                written,
                len: bytes.len(),
            });
        }
        Ok(written)
    }

    /// Gives a terminal job's terminal a new size (at least
    /// [`MIN_ROWS`]×[`MIN_COLS`]): the kernel sends `SIGWINCH` to the
    /// terminal's foreground process group, and the screen is redrawn at
    /// that size from then on.
    pub fn resize(&self, rows: u16, cols: u16) -> Result<(), JobError> {
        if !self.mode.is_terminal() {
            return Err(JobError::NoTerminal(self.id));
        }
        let (rows, cols) = terminal_size(rows, cols);
        let writer = self
            .shared
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(master) = writer.as_ref() else {
            return Err(JobError::Exited(self.id));
        };
        let size = rustix::termios::Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(master, size).map_err(|err| JobError::Resize {
            id: self.id,
            reason: err.to_string(),
        })?;
        // The screen follows while the writer lock is held, so two resizes
        // cannot leave the terminal and the screen at different sizes.
        if let Some(screen) = &mut self.state().screen {
            screen.set_size(
                std::num::NonZeroU16::new(rows).unwrap_or(std::num::NonZeroU16::MIN),
                std::num::NonZeroU16::new(cols).unwrap_or(std::num::NonZeroU16::MIN),
            );
        }
        Ok(())
    }

    /// Sends `signal` once to the job's process group.
    pub fn send(&self, signal: Signal) {
        let reaped = self.state().exited_at.is_some();
        let _ = signal_group(self.pid, Some(signal), reaped);
    }

    /// Kills the job. With `SIGTERM` its whole tree goes: the group gets
    /// `SIGTERM` (the launcher kills the processes that left the group),
    /// then `SIGKILL` after [`KILL_GRACE`]; a job that has exited has
    /// whatever it left in its group killed. Any other signal is sent once
    /// to the group. Returns the status after.
    pub fn kill(&self, signal: Signal) -> JobStatus {
        if signal != Signal::SIGTERM && signal != Signal::SIGKILL {
            self.send(signal);
            return self.wait_exit(Duration::from_millis(100));
        }
        if !self.mark_killed() {
            self.send(Signal::SIGKILL);
            return self.status();
        }
        self.send(signal);
        if signal == Signal::SIGTERM && self.wait_exit(KILL_GRACE).is_running() {
            self.send(Signal::SIGKILL);
        }
        self.wait_exit(Duration::from_secs(1))
    }

    /// Records that a kill through the table is ending the job; false when
    /// it had exited already.
    fn mark_killed(&self) -> bool {
        let mut state = self.state();
        if state.exited_at.is_some() {
            return false;
        }
        state.killed = true;
        true
    }

    fn wait_exit(&self, max: Duration) -> JobStatus {
        let deadline = Instant::now() + max;
        let mut state = self.state();
        while state.exited_at.is_none() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        status_of(&state)
    }

    /// A terminal job's screen; `None` for a job without a terminal.
    pub fn screen(&self) -> Option<Screen> {
        let state = self.state();
        let screen = state.screen.as_ref()?.screen();
        let (rows, cols) = screen.size();
        Some(Screen {
            text: screen.contents(),
            size: (rows.get(), cols.get()),
            alternate: screen.alternate_screen(),
            cursor: screen.cursor_position(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn status_of(state: &State) -> JobStatus {
    match (state.exited_at, state.status) {
        (Some(_), Some(status)) => JobStatus::Exited {
            code: status.code(),
            signal: status.signal().map(signal_name),
            killed: state.killed,
        },
        (Some(_), None) => JobStatus::Exited {
            code: None,
            signal: None,
            killed: state.killed,
        },
        _ => JobStatus::Running,
    }
}

fn signal_name(number: i32) -> String {
    match Signal::try_from(number) {
        Ok(signal) => signal.as_str().to_owned(),
        Err(_) => format!("signal {number}"),
    }
}

/// Waits for the job's first process (the launcher, which stays until
/// every process of the job has ended) and records how it ended.
fn reap(mut child: Child, shared: &Shared, terminal: bool) {
    let status = child.wait().ok();
    if terminal {
        TERMINALS_IN_USE.fetch_sub(1, Ordering::SeqCst);
    }
    // The terminal takes no more input.
    *shared.writer.lock().unwrap_or_else(PoisonError::into_inner) = None;
    let mut state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
    state.status = status;
    state.exited_at = Some(Instant::now());
    shared.changed.notify_all();
}

/// Moves the job's output into its log (its file through `ring`, written
/// outside the state's lock, so a slow disk never holds up a read) until
/// every source has ended. A terminal's master reads `EIO` once no process
/// holds the slave: its end.
fn pump(
    mut sources: Vec<(File, OutputStream)>,
    mut log_file: Option<LogFile>,
    mut ring: Option<log::RingWriter>,
    shared: &Shared,
) {
    let mut buf = vec![0u8; READ_CHUNK];
    while !sources.is_empty() {
        let ready: Vec<bool> = {
            let mut fds: Vec<PollFd<'_>> = sources
                .iter()
                .map(|(fd, _)| PollFd::new(fd.as_fd(), PollFlags::POLLIN))
                .collect();
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => break,
            }
            fds.iter()
                .map(|fd| fd.revents().is_some_and(|r| !r.is_empty()))
                .collect()
        };
        let mut ended = Vec::new();
        for (index, (file, stream)) in sources.iter_mut().enumerate() {
            if !ready[index] {
                continue;
            }
            match file.read(&mut buf) {
                Ok(0) => ended.push(index),
                Ok(n) => {
                    let mut stored = true;
                    if let Some(writer) = &ring {
                        let at = shared
                            .state
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .log
                            .begin_push(n);
                        stored = writer.write(at, &buf[..n]).is_ok();
                    }
                    {
                        let mut state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
                        if !state.push(*stream, &buf[..n], stored) {
                            ring = None;
                        }
                        shared.changed.notify_all();
                    }
                    if let Some(log) = &mut log_file
                        && !log.append(&buf[..n])
                    {
                        log_file = None;
                    }
                }
                Err(err)
                    if matches!(
                        err.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) => {}
                Err(_) => ended.push(index),
            }
        }
        for index in ended.into_iter().rev() {
            sources.remove(index);
        }
    }
    let mut state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
    state.closed = true;
    state.log.shrink();
    shared.changed.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(dir: &tempfile::TempDir, command: &str) -> RunRequest {
        RunRequest::new(command, dir.path(), dir.path().join("spill")).unwrap()
    }

    fn no_cancel() -> AtomicBool {
        AtomicBool::new(false)
    }

    fn until_exit() -> Wait {
        Wait::until_exit(Duration::from_secs(20))
    }

    fn read_all(job: &Job, wait: &Wait) -> JobRead {
        job.read(ReadFrom::Cursor, 1 << 20, wait, &no_cancel())
            .unwrap()
    }

    #[test]
    fn pipes_keep_the_streams_apart_and_the_cursor_moves_on() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::default();
        let job = table
            .start(JobSpec::new(
                request(&dir, "echo one; echo two >&2; sleep 0.3; echo three"),
                JobMode::Pipes,
            ))
            .unwrap();
        let first = job
            .read(
                ReadFrom::Cursor,
                1 << 20,
                &Wait::for_output(Duration::from_secs(10), Some(Regex::new("two").unwrap())),
                &no_cancel(),
            )
            .unwrap();
        assert_eq!(first.matched, Some(true));
        assert!(first.status.is_running());
        assert_eq!(first.text, "one\ntwo\n");
        assert_eq!(
            first.parts,
            [
                (OutputStream::Stdout, "one\n".to_owned()),
                (OutputStream::Stderr, "two\n".to_owned())
            ]
        );
        let second = read_all(&job, &until_exit());
        assert_eq!(second.text, "three\n");
        assert_eq!(second.from, 8);
        assert_eq!(
            second.status,
            JobStatus::Exited {
                code: Some(0),
                signal: None,
                killed: false
            }
        );
        let again = job
            .read(ReadFrom::Offset(0), 1 << 20, &Wait::none(), &no_cancel())
            .unwrap();
        assert_eq!(again.text, "one\ntwo\nthree\n");
        let tail = job
            .read(ReadFrom::Tail(6), 1 << 20, &Wait::none(), &no_cancel())
            .unwrap();
        assert_eq!(tail.text, "three\n");
        assert_eq!(read_all(&job, &Wait::none()).text, "");
    }

    #[test]
    fn a_command_reading_stdin_without_a_terminal_ends_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::default();
        let job = table
            .start(JobSpec::new(
                request(&dir, "cat; read x; echo \"end $?\""),
                JobMode::Pipes,
            ))
            .unwrap();
        let read = read_all(&job, &Wait::until_exit(Duration::from_secs(5)));
        assert_eq!(read.text, "end 1\n");
        assert!(read.waited < Duration::from_secs(3), "{:?}", read.waited);
        assert_eq!(job.write(b"x", &[]), Err(JobError::Exited(job.id())));
    }

    #[test]
    fn a_terminal_job_is_a_terminal_takes_input_and_shows_a_screen() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::default();
        let job = table
            .start(JobSpec::new(
                request(
                    &dir,
                    "test -t 0 && echo tty-yes; printf 'name? '; read name; echo \"hi $name\"",
                ),
                JobMode::TERMINAL,
            ))
            .unwrap();
        let wait = Wait::for_output(
            Duration::from_secs(10),
            Some(Regex::new(r"name\? $").unwrap()),
        );
        let prompt = read_all(&job, &wait);
        assert_eq!(prompt.matched, Some(true), "{prompt:?}");
        assert_eq!(prompt.text, "tty-yes\nname? ");
        job.write(b"ann", &["Enter".to_owned()]).unwrap();
        let answer = read_all(&job, &until_exit());
        // The terminal echoes the input.
        assert_eq!(answer.text, "ann\nhi ann\n");
        assert!(!answer.status.is_running());
        let screen = job.screen().unwrap();
        assert!(
            screen.text.starts_with("tty-yes\nname? ann\nhi ann"),
            "{screen:?}"
        );
        assert!(!screen.alternate);
        assert_eq!(job.write(b"x", &[]), Err(JobError::Exited(job.id())));
    }

    #[test]
    fn a_terminal_takes_its_size_at_the_start_and_a_new_one_later() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::default();
        let job = table
            .start(JobSpec::new(
                request(&dir, "stty size; read x; stty size; sleep 30"),
                JobMode::Terminal { rows: 12, cols: 50 },
            ))
            .unwrap();
        let first = read_all(
            &job,
            &Wait::for_output(Duration::from_secs(10), Some(Regex::new("12 50").unwrap())),
        );
        assert_eq!(first.matched, Some(true), "{first:?}");
        job.resize(30, 100).unwrap();
        // Without a launcher the terminal is no one's controlling terminal,
        // so no SIGWINCH comes (the server's tests see it): the size is
        // asked for again after a line.
        job.write(b"", &["Enter".to_owned()]).unwrap();
        let second = read_all(
            &job,
            &Wait::for_output(Duration::from_secs(10), Some(Regex::new("30 100").unwrap())),
        );
        assert_eq!(second.matched, Some(true), "{second:?}");
        assert_eq!(job.screen().unwrap().size, (30, 100));
        // Too small a size is raised to the least.
        job.resize(0, 1).unwrap();
        assert_eq!(job.screen().unwrap().size, (MIN_ROWS, MIN_COLS));
        job.kill(Signal::SIGTERM);
        assert_eq!(job.resize(30, 100), Err(JobError::Exited(job.id())));
        let pipes = table
            .start(JobSpec::new(request(&dir, "sleep 30"), JobMode::Pipes))
            .unwrap();
        assert_eq!(pipes.resize(30, 100), Err(JobError::NoTerminal(pipes.id())));
        assert_eq!(
            ToolError::from(JobError::NoTerminal(1)).code(),
            ErrorCode::InvalidInput
        );
    }

    #[test]
    fn a_flood_stays_within_the_log_cap_and_the_job_dies_on_kill() {
        let dir = tempfile::tempdir().unwrap();
        let limits = JobLimits {
            max_log_bytes: 64 * 1024,
            ..JobLimits::default()
        };
        let table = JobTable::new(limits);
        let job = table
            .start(JobSpec::new(request(&dir, "yes"), JobMode::Pipes))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while job.output_end() < 1024 * 1024 {
            assert!(Instant::now() < deadline, "the flood stalled");
            thread::sleep(Duration::from_millis(20));
        }
        let read = job
            .read(ReadFrom::Cursor, 4096, &Wait::none(), &no_cancel())
            .unwrap();
        assert!(read.dropped_bytes > 0);
        assert_eq!(read.from, read.dropped_bytes);
        assert!(read.more);
        assert!(
            read.text.len() <= 4096 && read.text.starts_with("y\n"),
            "{}",
            read.text.len()
        );
        let status = job.kill(Signal::SIGTERM);
        match status {
            JobStatus::Exited { killed, .. } => assert!(killed),
            JobStatus::Running => panic!("still running"),
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while crate::runner::group_alive(Pid::from_raw(job.pid())) {
            assert!(Instant::now() < deadline, "the kill left the job");
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (10 s at most) until the job has printed `bytes`, reading
    /// none of it.
    fn wait_for_output_end(job: &Job, bytes: u64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while job.output_end() < bytes {
            assert!(
                Instant::now() < deadline,
                "the job printed {} bytes, not {bytes}",
                job.output_end()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Starts a terminal job that prints an unanswered prompt, and waits
    /// until the prompt is in its log without reading it.
    fn job_with_an_unread_prompt(dir: &tempfile::TempDir, table: &JobTable) -> Arc<Job> {
        let job = table
            .start(JobSpec::new(
                // No echo, so nothing but the slow answer follows the input.
                request(
                    dir,
                    "stty -echo; printf '> '; read x; sleep 0.8; echo got-$x",
                ),
                JobMode::TERMINAL,
            ))
            .unwrap();
        wait_for_output_end(&job, 2);
        // Quiet long enough that a settle wait counting the prompt would
        // end at once.
        thread::sleep(SETTLE + Duration::from_millis(50));
        job
    }

    #[test]
    fn a_prompt_printed_before_a_write_does_not_end_the_wait_for_its_answer() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::default();
        for pattern in [None, Some(Regex::new("(?m)> ?$|got-hi").unwrap())] {
            let job = job_with_an_unread_prompt(&dir, &table);
            let wait =
                Wait::for_output(Duration::from_secs(20), pattern.clone()).after(job.output_end());
            job.write(b"hi\n", &[]).unwrap();
            let read = read_all(&job, &wait);
            assert!(read.text.starts_with("> "), "{pattern:?}: {read:?}");
            assert!(read.text.contains("got-hi"), "{pattern:?}: {read:?}");
            job.kill(Signal::SIGKILL);
        }
    }

    #[test]
    fn ctrl_c_reaches_a_job_without_a_terminal_as_a_signal() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::default();
        let job = table
            .start(JobSpec::new(
                request(
                    &dir,
                    "trap 'echo got-int; exit 3' INT; echo ready; while :; do sleep 0.05; done",
                ),
                JobMode::Pipes,
            ))
            .unwrap();
        let wait = Wait::for_output(Duration::from_secs(10), Some(Regex::new("ready").unwrap()));
        assert_eq!(read_all(&job, &wait).matched, Some(true));
        assert_eq!(job.write(b"text", &[]), Err(JobError::NoStdin(job.id())));
        assert_eq!(
            job.write(b"", &["Enter".to_owned()]),
            Err(JobError::NoStdin(job.id()))
        );
        assert!(matches!(
            job.write(b"", &["Hyper".to_owned()]),
            Err(JobError::UnknownKey { .. })
        ));
        assert_eq!(job.write(b"", &["C-c".to_owned()]), Ok(1));
        let read = read_all(&job, &until_exit());
        // The status says whether the interrupt was lost (still running
        // after the wait) or the trap's output was (exited).
        assert_eq!(
            read.text, "got-int\n",
            "status after C-c: {:?}",
            read.status
        );
        assert!(matches!(
            read.status,
            JobStatus::Exited { code: Some(3), .. }
        ));
    }

    #[test]
    fn a_character_split_across_writes_is_never_mangled() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::default();
        let job = table
            .start(JobSpec::new(
                request(&dir, r"printf 'a\342\202'; sleep 0.5; printf '\254b\n'"),
                JobMode::Pipes,
            ))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while job.output_end() < 3 {
            assert!(Instant::now() < deadline);
            thread::sleep(Duration::from_millis(10));
        }
        let first = read_all(&job, &Wait::none());
        assert_eq!((first.text.as_str(), first.to), ("a", 1));
        let second = read_all(&job, &until_exit());
        assert_eq!(second.text, "\u{20ac}b\n");
        // An offset inside the character starts after it.
        let inside = job
            .read(ReadFrom::Offset(2), 100, &Wait::none(), &no_cancel())
            .unwrap();
        assert_eq!(inside.text, "b\n");
    }

    #[test]
    fn paging_by_offset_returns_every_line_once() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::default();
        let job = table
            .start(JobSpec::new(request(&dir, "seq 1 5000"), JobMode::Pipes))
            .unwrap();
        let _ = read_all(&job, &until_exit());
        let mut text = String::new();
        let mut from = 0;
        loop {
            let page = job
                .read(ReadFrom::Offset(from), 1000, &Wait::none(), &no_cancel())
                .unwrap();
            text.push_str(&page.text);
            from = page.to;
            if !page.more {
                break;
            }
        }
        let expected: String = (1..=5000).map(|n| format!("{n}\n")).collect();
        assert_eq!(text, expected);
    }

    /// Limits with a small memory tail, so that most of a log is read
    /// from its file.
    fn small_tail() -> JobLimits {
        JobLimits {
            max_log_bytes: 1024 * 1024,
            memory_tail_bytes: 4096,
            ..JobLimits::default()
        }
    }

    fn lines(from: u32, to: u32) -> String {
        (from..=to).map(|n| format!("{n}\n")).collect()
    }

    #[test]
    fn output_older_than_the_memory_tail_is_read_from_the_log_file() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::new(small_tail());
        let job = table
            .start(JobSpec::new(request(&dir, "seq 1 20000"), JobMode::Pipes))
            .unwrap();
        let whole = read_all(&job, &until_exit());
        let expected = lines(1, 20000);
        assert_eq!(whole.text, expected);
        assert_eq!((whole.from, whole.dropped_bytes), (0, 0));
        assert!(job.state().log.memory() <= 4096 * 2);
        // From offset 0, the file's bytes; pages of an odd size cross the
        // border between the file and memory without a seam.
        let again = job
            .read(ReadFrom::Offset(0), 1 << 20, &Wait::none(), &no_cancel())
            .unwrap();
        assert_eq!(again.text, expected);
        let mut text = String::new();
        let mut from = 0;
        loop {
            let page = job
                .read(ReadFrom::Offset(from), 777, &Wait::none(), &no_cancel())
                .unwrap();
            assert_eq!(page.from, from, "a page starts where the last ended");
            text.push_str(&page.text);
            from = page.to;
            if !page.more {
                break;
            }
        }
        assert_eq!(text, expected);
        let end = whole.end;
        let across = job
            .read(
                ReadFrom::Offset(end - 4096 - 6),
                12,
                &Wait::none(),
                &no_cancel(),
            )
            .unwrap();
        assert_eq!(
            across.text.as_bytes(),
            &expected.as_bytes()[(end - 4096 - 6) as usize..(end - 4096 + 6) as usize]
        );
    }

    #[test]
    fn cursor_reads_of_a_running_job_cross_the_border_without_a_seam() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::new(small_tail());
        let job = table
            .start(JobSpec::new(
                request(&dir, "seq 1 20000; sleep 0.3; seq 20001 30000"),
                JobMode::Pipes,
            ))
            .unwrap();
        // Fall behind by more than the memory tail before the first read.
        wait_for_output_end(&job, 100_000);
        let mut text = String::new();
        let mut last_to = 0;
        loop {
            let read = job
                .read(
                    ReadFrom::Cursor,
                    3001,
                    &Wait::until_exit(Duration::from_secs(20)),
                    &no_cancel(),
                )
                .unwrap();
            assert_eq!(read.from, last_to, "a cursor read skipped or repeated");
            last_to = read.to;
            text.push_str(&read.text);
            if !read.status.is_running() && !read.more {
                break;
            }
        }
        assert_eq!(text, lines(1, 30000));
    }

    #[test]
    fn a_flood_keeps_only_its_tail_in_memory_and_the_rest_of_its_cap_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::new(small_tail());
        let job = table
            .start(JobSpec::new(request(&dir, "yes"), JobMode::Pipes))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while job.output_end() < 3 * 1024 * 1024 {
            assert!(Instant::now() < deadline, "the flood stalled");
            thread::sleep(Duration::from_millis(20));
        }
        let read = job
            .read(ReadFrom::Offset(0), 1 << 20, &Wait::none(), &no_cancel())
            .unwrap();
        assert!(read.dropped_bytes > 0);
        assert_eq!(read.from, read.dropped_bytes);
        assert!(read.end - read.dropped_bytes <= 1024 * 1024);
        assert!(read.text.starts_with("y\ny\n"));
        assert!(read.text.split_terminator('\n').all(|line| line == "y"));
        assert!(job.retained_bytes() <= 1024 * 1024);
        assert!(job.state().log.memory() <= 4096 * 2);
        job.kill(Signal::SIGKILL);
    }

    #[test]
    fn a_log_file_that_cannot_be_read_is_an_error_then_the_tail_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::new(small_tail());
        let job = table
            .start(JobSpec::new(request(&dir, "seq 1 20000"), JobMode::Pipes))
            .unwrap();
        let end = read_all(&job, &until_exit()).end;
        // Someone cut the file under the job.
        job.state().log.file().unwrap().set_len(10).unwrap();
        let err = job
            .read(ReadFrom::Offset(0), 1 << 20, &Wait::none(), &no_cancel())
            .unwrap_err();
        let kept_from = end - 4096;
        match &err {
            JobError::LogUnreadable {
                id,
                reason,
                kept_from: from,
            } => {
                assert_eq!((*id, *from), (job.id(), kept_from));
                assert!(reason.contains("it was cut"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().contains("could not be read"), "{err}");
        assert_eq!(ToolError::from(err).code(), ErrorCode::IoError);
        // What is in memory is read on, the rest counted as dropped.
        let after = job
            .read(ReadFrom::Offset(0), 1 << 20, &Wait::none(), &no_cancel())
            .unwrap();
        assert_eq!((after.from, after.dropped_bytes), (kept_from, kept_from));
        assert!(after.text.ends_with("19999\n20000\n"), "{}", after.text);
    }

    #[test]
    fn a_spill_folder_that_cannot_hold_the_log_file_leaves_it_to_the_temporary_folder() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").unwrap();
        let table = JobTable::new(small_tail());
        let request = RunRequest::new("seq 1 20000", dir.path(), blocker.join("spill")).unwrap();
        let job = table.start(JobSpec::new(request, JobMode::Pipes)).unwrap();
        let _ = read_all(&job, &until_exit());
        assert!(job.state().log.file().is_some());
        let read = job
            .read(ReadFrom::Offset(0), 1 << 20, &Wait::none(), &no_cancel())
            .unwrap();
        assert_eq!(read.text, lines(1, 20000));
    }

    #[test]
    fn running_jobs_logs_count_against_the_table_total() {
        let dir = tempfile::tempdir().unwrap();
        let limits = JobLimits {
            max_log_bytes: 1000,
            max_table_log_bytes: 2500,
            ..JobLimits::default()
        };
        let table = JobTable::new(limits);
        let chatty = || {
            let job = table
                .start(JobSpec::new(
                    request(&dir, "head -c 1000 /dev/zero; exec sleep 30"),
                    JobMode::Pipes,
                ))
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            while job.output_end() < 1000 {
                assert!(Instant::now() < deadline, "the job printed too little");
                thread::sleep(Duration::from_millis(10));
            }
            job
        };
        let first = chatty();
        let _second = chatty();
        // Two running logs of 1000 leave no room for a third within 2500.
        let refused = table
            .start(JobSpec::new(request(&dir, "true"), JobMode::Pipes))
            .unwrap_err();
        assert_eq!(
            refused,
            JobError::LogTotal {
                kept: 2000,
                log: 1000,
                limit: 2500
            }
        );
        assert!(refused.to_string().contains("kill a job"), "{refused}");
        assert_eq!(ToolError::from(refused).code(), ErrorCode::InvalidInput);
        // Once one is killed, its record is forgotten for the new job.
        first.kill(Signal::SIGKILL);
        let third = table
            .start(JobSpec::new(request(&dir, "true"), JobMode::Pipes))
            .unwrap();
        assert_eq!(
            table.get(first.id()).unwrap_err(),
            JobError::UnknownJob(first.id())
        );
        assert!(table.get(third.id()).is_ok());
    }

    #[test]
    fn a_settled_wait_ends_after_quiet_and_a_cancelled_one_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::default();
        let job = table
            .start(JobSpec::new(
                request(&dir, "echo hello; sleep 30"),
                JobMode::Pipes,
            ))
            .unwrap();
        let read = read_all(&job, &Wait::for_output(Duration::from_secs(10), None));
        assert_eq!(read.text, "hello\n");
        assert!(read.waited < Duration::from_secs(3), "{:?}", read.waited);
        let cancel = AtomicBool::new(true);
        let read = job
            .read(
                ReadFrom::Cursor,
                100,
                &Wait::until_exit(Duration::from_secs(10)),
                &cancel,
            )
            .unwrap();
        assert!(read.waited < Duration::from_secs(1));
        assert!(read.status.is_running());
        let pid = job.pid();
        drop(table);
        let deadline = Instant::now() + Duration::from_secs(5);
        while crate::runner::group_alive(Pid::from_raw(pid)) {
            assert!(Instant::now() < deadline, "the drop left the job");
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn limits_refuse_with_their_own_errors() {
        let dir = tempfile::tempdir().unwrap();
        let limits = JobLimits {
            max_running: 2,
            max_terminals: 1,
            max_exited: 1,
            max_write_bytes: 8,
            ..JobLimits::default()
        };
        let table = JobTable::new(limits);
        let quick = table
            .start(JobSpec::new(request(&dir, "true"), JobMode::Pipes))
            .unwrap();
        let _ = read_all(&quick, &until_exit());
        let tty = table
            .start(JobSpec::new(request(&dir, "cat"), JobMode::TERMINAL))
            .unwrap();
        assert_eq!(
            table
                .start(JobSpec::new(request(&dir, "cat"), JobMode::TERMINAL))
                .unwrap_err(),
            JobError::TooManyTerminals {
                limit: 1,
                server: false
            }
        );
        let _sleeper = table
            .start(JobSpec::new(request(&dir, "sleep 30"), JobMode::Pipes))
            .unwrap();
        assert_eq!(
            table
                .start(JobSpec::new(request(&dir, "true"), JobMode::Pipes))
                .unwrap_err(),
            JobError::TooManyRunning { limit: 2 }
        );
        assert_eq!(
            tty.write(b"123456789", &[]),
            Err(JobError::WriteTooLarge { len: 9, limit: 8 })
        );
        assert_eq!(table.get(99).unwrap_err(), JobError::UnknownJob(99));
        let message = ToolError::from(JobError::TooManyRunning { limit: 2 });
        assert_eq!(message.code(), ErrorCode::InvalidInput);
        tty.kill(Signal::SIGTERM);
        // A second exited job pushes the first record out.
        let next = table
            .start(JobSpec::new(request(&dir, "true"), JobMode::Pipes))
            .unwrap();
        assert_eq!(
            table.get(quick.id()).unwrap_err(),
            JobError::UnknownJob(quick.id())
        );
        assert!(table.get(next.id()).is_ok());
        let _ = read_all(&next, &until_exit());
        let err = table
            .start(JobSpec::new(
                RunRequest::new("true", dir.path().join("missing"), dir.path()).unwrap(),
                JobMode::Pipes,
            ))
            .unwrap_err();
        assert!(matches!(err, JobError::Start(_)), "{err:?}");
    }

    #[test]
    fn dropping_the_table_takes_one_grace_for_all_stubborn_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::default();
        let mut pids = Vec::new();
        let ready = Regex::new("ready").unwrap();
        for _ in 0..3 {
            let job = table
                .start(JobSpec::new(
                    request(&dir, "trap '' TERM; echo ready; sleep 30"),
                    JobMode::Pipes,
                ))
                .unwrap();
            let wait = Wait::for_output(Duration::from_secs(10), Some(ready.clone()));
            assert_eq!(read_all(&job, &wait).matched, Some(true));
            pids.push(job.pid());
        }
        let started = Instant::now();
        drop(table);
        let took = started.elapsed();
        assert!(took >= KILL_GRACE, "{took:?}: TERM was not ignored");
        assert!(
            took < KILL_GRACE * 2,
            "{took:?}: the graces did not overlap"
        );
        for pid in pids {
            let deadline = Instant::now() + Duration::from_secs(5);
            while crate::runner::group_alive(Pid::from_raw(pid)) {
                assert!(Instant::now() < deadline, "job {pid} survived the drop");
                thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// A process standing for a launcher a command left behind: in a
    /// group of its own, printing `line` and then sleeping.
    fn held(line: &str) -> Held {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sh")
            .args(["-c", &format!("echo {line}; exec sleep 300")])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Held {
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            launcher: child,
        }
    }

    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rfind(')')
                .is_some_and(|i| !stat[i + 1..].trim_start().starts_with(['Z', 'X']))
        })
    }

    #[test]
    fn background_jobs_past_their_cap_are_stopped_and_exited_ones_forgotten_oldest_first() {
        let limits = JobLimits {
            max_background: 2,
            max_exited: 2,
            ..JobLimits::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::new(limits);
        table.adopt("first &", held("one"), dir.path()).unwrap();
        table.adopt("second &", held("two"), dir.path()).unwrap();
        // A third running one is past the cap: it is stopped, whole, and
        // leaves no record; the two running ones stay.
        let third = held("three");
        let pid = i32::try_from(third.launcher.id()).unwrap();
        assert_eq!(
            table.adopt("third &", third, dir.path()),
            Err(JobError::TooManyBackground { limit: 2 })
        );
        assert!(!alive(pid), "the background job past the cap still runs");
        let kept = table.backgrounds();
        assert_eq!(kept.iter().map(|job| job.id()).collect::<Vec<_>>(), [1, 2]);
        assert!(kept.iter().all(|job| job.status().is_running()));
        let message = JobError::TooManyBackground { limit: 2 }.to_string();
        assert!(
            message.contains("2 processes that earlier commands left"),
            "{message}"
        );
        assert_eq!(
            ToolError::from(JobError::TooManyBackground { limit: 2 }).code(),
            ErrorCode::InvalidInput
        );
        // Once one has ended there is room again; exited records past
        // max_exited go, the oldest first.
        table.background(1).unwrap().kill(Signal::SIGTERM);
        table.adopt("fourth &", held("four"), dir.path()).unwrap();
        table.background(2).unwrap().kill(Signal::SIGTERM);
        table.adopt("fifth &", held("five"), dir.path()).unwrap();
        let kept: Vec<(u64, bool)> = table
            .backgrounds()
            .iter()
            .map(|job| (job.id(), job.status().is_running()))
            .collect();
        assert_eq!(kept, [(2, false), (3, true), (4, true)]);
        assert_eq!(
            table.background(1).unwrap_err(),
            JobError::UnknownBackground(1)
        );
        // The running ones die with the table.
        let pids: Vec<i32> = table.backgrounds().iter().map(|job| job.pid()).collect();
        drop(table);
        for pid in pids {
            assert!(!alive(pid), "{pid} outlived the table");
        }
    }

    #[test]
    fn exited_logs_are_forgotten_to_keep_the_table_under_its_total() {
        let dir = tempfile::tempdir().unwrap();
        let limits = JobLimits {
            max_log_bytes: 1000,
            max_table_log_bytes: 2500,
            ..JobLimits::default()
        };
        let table = JobTable::new(limits);
        let mut ids = Vec::new();
        for _ in 0..3 {
            let job = table
                .start(JobSpec::new(
                    request(&dir, "head -c 1000 /dev/zero"),
                    JobMode::Pipes,
                ))
                .unwrap();
            let _ = read_all(&job, &until_exit());
            assert_eq!(job.retained_bytes(), 1000);
            ids.push(job.id());
        }
        // Three logs of 1000 kept would pass 2500 with the next one's room.
        assert!(table.get(ids[0]).is_err(), "the oldest log was kept");
        assert!(table.get(ids[1]).is_ok());
        assert!(table.get(ids[2]).is_ok());
    }

    #[test]
    fn pagers_are_cat_and_colour_is_off() {
        let dir = tempfile::tempdir().unwrap();
        let table = JobTable::default();
        let job = table
            .start(JobSpec::new(
                request(&dir, "echo $PAGER $GIT_PAGER $NO_COLOR $TERM"),
                JobMode::Pipes,
            ))
            .unwrap();
        assert_eq!(read_all(&job, &until_exit()).text, "cat cat 1 dumb\n");
    }

    #[test]
    fn the_log_file_gets_the_raw_output() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.log");
        let table = JobTable::default();
        let job = table
            .start(
                JobSpec::new(
                    request(&dir, r"printf '\033[1mbold\033[0m\n'"),
                    JobMode::Pipes,
                )
                .with_log_file(File::create(&path).unwrap(), "job.log"),
            )
            .unwrap();
        assert_eq!(read_all(&job, &until_exit()).text, "bold\n");
        assert_eq!(job.log_file(), Some("job.log"));
        assert_eq!(std::fs::read(&path).unwrap(), b"\x1b[1mbold\x1b[0m\n");
    }
}
