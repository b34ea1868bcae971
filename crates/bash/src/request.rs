//! What to run and under which limits.

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_tools_error::{ToolError, ToolResult};
use agent_tools_sandbox::SandboxPolicy;

/// Timeout used when the caller asks for none: two minutes.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;

/// The usual upper bound for a requested timeout: ten minutes.
pub const DEFAULT_MAX_TIMEOUT_MS: u64 = 600_000;

/// Default inline budget shared by stdout and stderr: 32 KiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 32 * 1024;

/// Default hard ceiling on one stream's total output: 256 MiB.
pub const DEFAULT_HARD_CEILING_PER_STREAM: u64 = 256 * 1024 * 1024;

/// Turns the timeout an agent asked for into the one to use.
///
/// `None` means [`DEFAULT_TIMEOUT_MS`]. The result is clamped into
/// `1 ..= max_ms` (and at least 1 ms even when `max_ms` is 0) without error:
/// an agent asking for more than allowed simply gets the maximum.
///
/// ```
/// use std::time::Duration;
/// use agent_tools_bash::clamp_timeout;
///
/// assert_eq!(clamp_timeout(None, 600_000), Duration::from_millis(120_000));
/// assert_eq!(clamp_timeout(Some(5_000), 600_000), Duration::from_millis(5_000));
/// assert_eq!(clamp_timeout(Some(9_999_999), 600_000), Duration::from_millis(600_000));
/// ```
pub fn clamp_timeout(requested_ms: Option<u64>, max_ms: u64) -> Duration {
    let max_ms = max_ms.max(1);
    let ms = requested_ms.unwrap_or(DEFAULT_TIMEOUT_MS).clamp(1, max_ms);
    Duration::from_millis(ms)
}

/// How much output a run may produce, and how much of it comes back inline.
///
/// * `max_output_bytes` is one budget shared by stdout and stderr: bytes are
///   kept inline in the order they arrive until the budget is used up. A
///   stream that overflows it is written, complete, to a spill file.
/// * `hard_ceiling_per_stream` bounds each stream's total size. A stream that
///   passes it gets the whole process group killed and the run fails with
///   `output_limit`. It is never zero.
///
/// Or, built with [`OutputLimits::cut_per_stream`]: each stream keeps its
/// first bytes inline and the rest is read, counted and dropped; nothing is
/// spilled and the command is never killed for its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    max_output_bytes: usize,
    hard_ceiling_per_stream: NonZeroU64,
    cut_per_stream: Option<usize>,
}

impl OutputLimits {
    /// Limits with the given inline budget and per-stream ceiling.
    pub fn new(max_output_bytes: usize, hard_ceiling_per_stream: NonZeroU64) -> Self {
        OutputLimits {
            max_output_bytes,
            hard_ceiling_per_stream,
            cut_per_stream: None,
        }
    }

    /// Limits that keep the first `bytes` of each stream and drop the rest
    /// (counted in [`RunOutcome::stdout_dropped`](crate::RunOutcome) and
    /// `stderr_dropped`): no spill file, no shared budget, no ceiling.
    pub fn cut_per_stream(bytes: usize) -> Self {
        OutputLimits {
            max_output_bytes: bytes.saturating_mul(2),
            hard_ceiling_per_stream: NonZeroU64::MAX,
            cut_per_stream: Some(bytes),
        }
    }

    /// What each stream keeps when the rest is dropped rather than spilled.
    pub fn cut(&self) -> Option<usize> {
        self.cut_per_stream
    }

    /// The inline budget shared by stdout and stderr, in bytes.
    pub fn max_output_bytes(&self) -> usize {
        self.max_output_bytes
    }

    /// The most bytes one stream may produce before the run is killed.
    pub fn hard_ceiling_per_stream(&self) -> NonZeroU64 {
        self.hard_ceiling_per_stream
    }
}

impl Default for OutputLimits {
    /// [`DEFAULT_MAX_OUTPUT_BYTES`] inline, [`DEFAULT_HARD_CEILING_PER_STREAM`] per stream.
    fn default() -> Self {
        OutputLimits {
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            hard_ceiling_per_stream: NonZeroU64::MIN
                .saturating_add(DEFAULT_HARD_CEILING_PER_STREAM - 1),
            cut_per_stream: None,
        }
    }
}

/// Creates one spill file: given a bare file name (no `/`), returns that file
/// in the spill folder, newly created (`create_new`) and open for writing.
/// `AlreadyExists` makes the runner try another name. An error may carry a
/// [`ToolError`] (`io::Error::other(tool_error)`); the run then fails with
/// that error as it is.
type SpillOpenFn = dyn Fn(&str) -> io::Result<File> + Send + Sync;

/// How spill files get created, when the caller wants a say in it (e.g. to
/// open them through a confined directory handle). See
/// [`RunRequest::with_spill_opener`].
#[derive(Clone)]
pub struct SpillOpener(Arc<SpillOpenFn>);

impl SpillOpener {
    /// An opener calling `open` with each file name.
    pub fn new(open: impl Fn(&str) -> io::Result<File> + Send + Sync + 'static) -> Self {
        SpillOpener(Arc::new(open))
    }

    /// Opens (creates) the file `name`.
    pub fn open(&self, name: &str) -> io::Result<File> {
        (self.0)(name)
    }
}

impl fmt::Debug for SpillOpener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SpillOpener(..)")
    }
}

impl PartialEq for SpillOpener {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SpillOpener {}

/// A program the shell is started through, e.g. one that ties the command's
/// life to the caller's (see [`crate::launcher`]).
///
/// The runner starts `PROGRAM ARGS... --parent-pid PID [POLICY...] --
/// /bin/sh -c COMMAND`; `PID` is the caller's process id and `POLICY` the
/// request's sandbox policy as arguments
/// ([`SandboxPolicy::to_args`]), which the launcher must put in force
/// before it starts the shell, or refuse to start it. The program must end up
/// running the shell with the same stdin, stdout and stderr, in its own
/// process group (the runner makes the launcher its leader), and exit with
/// the shell's status: its exit code, or the signal that killed it, raised
/// on itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    program: PathBuf,
    args: Vec<OsString>,
}

impl Launcher {
    /// A launcher run as `program args...` followed by the runner's own
    /// arguments.
    pub fn new(program: impl Into<PathBuf>, args: impl IntoIterator<Item = OsString>) -> Self {
        Launcher {
            program: program.into(),
            args: args.into_iter().collect(),
        }
    }

    /// The program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The arguments placed before the runner's own.
    pub fn args(&self) -> &[OsString] {
        &self.args
    }
}

/// One command to run.
///
/// Built with [`RunRequest::new`], then adjusted with the `with_*` methods.
/// The command never holds a NUL byte and the timeout is never zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRequest {
    command: String,
    argv: Option<Vec<String>>,
    shell: Option<String>,
    cwd: PathBuf,
    spill_dir: PathBuf,
    spill_display_dir: Option<PathBuf>,
    timeout: Duration,
    limits: OutputLimits,
    spill_opener: Option<SpillOpener>,
    launcher: Option<Launcher>,
    kill_grace: Duration,
    sandbox: Option<SandboxPolicy>,
}

impl RunRequest {
    /// A request to run `command` with `sh -c` in `cwd`, spilling overflowing
    /// output under `spill_dir` (created on first use).
    ///
    /// `cwd` must already be confined by the caller; the runner only checks
    /// that it exists and is a directory. The timeout starts at
    /// [`DEFAULT_TIMEOUT_MS`] and the limits at [`OutputLimits::default`].
    ///
    /// Fails with `invalid_input` if `command` contains a NUL byte, which no
    /// shell argument can carry.
    pub fn new(
        command: impl Into<String>,
        cwd: impl Into<PathBuf>,
        spill_dir: impl Into<PathBuf>,
    ) -> ToolResult<Self> {
        let command = command.into();
        if command.contains('\0') {
            return Err(ToolError::invalid_input("command contains a NUL byte"));
        }
        Ok(RunRequest {
            command,
            argv: None,
            shell: None,
            cwd: cwd.into(),
            spill_dir: spill_dir.into(),
            spill_display_dir: None,
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            limits: OutputLimits::default(),
            spill_opener: None,
            launcher: None,
            kill_grace: crate::runner::KILL_GRACE,
            sandbox: None,
        })
    }

    /// A request to run the program `argv[0]` with the arguments `argv[1..]`
    /// directly (no shell between: every element reaches the program as
    /// it is, spaces and quotes included). The program is looked up in
    /// `PATH` when it has no `/`. Everything else is as for [`new`](Self::new):
    /// the launcher, the timeout, the limits and the spill files.
    ///
    /// Fails with `invalid_input` if `argv` is empty or an element contains
    /// a NUL byte, which no program argument can carry.
    pub fn argv(
        argv: Vec<String>,
        cwd: impl Into<PathBuf>,
        spill_dir: impl Into<PathBuf>,
    ) -> ToolResult<Self> {
        if argv.is_empty() {
            return Err(ToolError::invalid_input(
                "command is empty: give the program and its arguments, e.g. [\"ls\", \"-l\"]",
            ));
        }
        if let Some(at) = argv.iter().position(|arg| arg.contains('\0')) {
            return Err(ToolError::invalid_input(format!(
                "command element {at} contains a NUL byte"
            )));
        }
        let mut request = RunRequest::new(argv.join(" "), cwd, spill_dir)?;
        request.argv = Some(argv);
        Ok(request)
    }

    /// Sets the timeout. A zero duration is raised to one millisecond; use
    /// [`clamp_timeout`] to turn an agent's request into a duration.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a command stopped for its timeout or its output has between
    /// `SIGTERM` and `SIGKILL` ([`KILL_GRACE`](crate::KILL_GRACE) unless
    /// set).
    pub fn with_kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace;
        self
    }

    /// The grace between `SIGTERM` and `SIGKILL`.
    pub fn kill_grace(&self) -> Duration {
        self.kill_grace
    }

    /// Sets the output limits.
    pub fn with_limits(mut self, limits: OutputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Names spill files in results as `dir/<file>` instead of by their path
    /// under the spill directory. The facade passes the spill directory
    /// relative to the workspace root here (e.g. `.agent-tools/spill`) so the
    /// agent sees workspace-relative paths, in successes and errors alike.
    pub fn with_spill_display_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.spill_display_dir = Some(dir.into());
        self
    }

    /// Creates spill files with `opener` instead of by name under
    /// `spill_dir` (which then only names them in messages when no display
    /// directory is set).
    pub fn with_spill_opener(mut self, opener: SpillOpener) -> Self {
        self.spill_opener = Some(opener);
        self
    }

    /// Runs the command line with `shell -c` instead of [`SHELL`](crate::SHELL)
    /// (no effect on an [`argv`](Self::argv) request).
    pub fn with_shell(mut self, shell: impl Into<String>) -> Self {
        self.shell = Some(shell.into());
        self
    }

    /// Starts the shell through `launcher` instead of directly.
    pub fn with_launcher(mut self, launcher: Launcher) -> Self {
        self.launcher = Some(launcher);
        self
    }

    /// Runs the command confined by `policy`. The launcher puts it in
    /// force before it starts the command (see [`crate::launcher`]), so a
    /// launcher is needed: without one the run fails with `invalid_input`
    /// and nothing is started.
    pub fn with_sandbox(mut self, policy: SandboxPolicy) -> Self {
        self.sandbox = Some(policy);
        self
    }

    /// The sandbox policy, if one was set.
    pub fn sandbox(&self) -> Option<&SandboxPolicy> {
        self.sandbox.as_ref()
    }

    /// The spill opener, if one was set.
    pub fn spill_opener(&self) -> Option<&SpillOpener> {
        self.spill_opener.as_ref()
    }

    /// The launcher, if one was set.
    pub fn launcher(&self) -> Option<&Launcher> {
        self.launcher.as_ref()
    }

    /// The shell command (for an [`argv`](Self::argv) request, its elements
    /// joined by spaces, for messages only).
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The program and its arguments, when the request runs them without a
    /// shell.
    pub fn argv_elements(&self) -> Option<&[String]> {
        self.argv.as_deref()
    }

    /// What is started after the launcher (if any): `/bin/sh -c COMMAND`, or
    /// the argv as given.
    pub(crate) fn program_and_args(&self) -> (&str, Vec<&str>) {
        match &self.argv {
            Some(argv) => {
                let (program, args) = argv
                    .split_first()
                    .map_or(("", &[][..]), |(p, a)| (p.as_str(), a));
                (program, args.iter().map(String::as_str).collect())
            }
            None => (
                self.shell.as_deref().unwrap_or(crate::runner::SHELL),
                vec!["-c", self.command.as_str()],
            ),
        }
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Where spill files are written.
    pub fn spill_dir(&self) -> &Path {
        &self.spill_dir
    }

    /// The directory spill files are reported under, if not `spill_dir`.
    pub fn spill_display_dir(&self) -> Option<&Path> {
        self.spill_display_dir.as_deref()
    }

    /// The timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The output limits.
    pub fn limits(&self) -> OutputLimits {
        self.limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_defaults_and_clamps() {
        assert_eq!(
            clamp_timeout(None, DEFAULT_MAX_TIMEOUT_MS),
            Duration::from_millis(120_000)
        );
        assert_eq!(clamp_timeout(None, 10_000), Duration::from_millis(10_000));
        assert_eq!(clamp_timeout(Some(0), 10_000), Duration::from_millis(1));
        assert_eq!(clamp_timeout(Some(1), 10_000), Duration::from_millis(1));
        assert_eq!(
            clamp_timeout(Some(10_001), 10_000),
            Duration::from_millis(10_000)
        );
        assert_eq!(clamp_timeout(Some(5), 0), Duration::from_millis(1));
    }

    #[test]
    fn default_limits() {
        let limits = OutputLimits::default();
        assert_eq!(limits.max_output_bytes(), DEFAULT_MAX_OUTPUT_BYTES);
        assert_eq!(
            limits.hard_ceiling_per_stream().get(),
            DEFAULT_HARD_CEILING_PER_STREAM
        );
    }

    #[test]
    fn nul_in_command_is_rejected() {
        let err = RunRequest::new("echo a\0b", "/", "/tmp").unwrap_err();
        assert_eq!(err.code(), agent_tools_error::ErrorCode::InvalidInput);
    }

    #[test]
    fn argv_requests_refuse_empty_and_nul() {
        let err = RunRequest::argv(vec![], "/", "/tmp").unwrap_err();
        assert_eq!(err.code(), agent_tools_error::ErrorCode::InvalidInput);
        assert!(err.message().contains("empty"), "{}", err.message());
        let err = RunRequest::argv(vec!["echo".into(), "a\0b".into()], "/", "/tmp").unwrap_err();
        assert_eq!(err.code(), agent_tools_error::ErrorCode::InvalidInput);
        assert!(err.message().contains("element 1"), "{}", err.message());
    }

    #[test]
    fn argv_requests_start_the_program_itself() {
        let req =
            RunRequest::argv(vec!["ls".into(), "-l".into(), "a b".into()], "/", "/tmp").unwrap();
        assert_eq!(req.program_and_args(), ("ls", vec!["-l", "a b"]));
        assert_eq!(req.argv_elements().map(<[String]>::len), Some(3));
        let shell = RunRequest::new("echo hi", "/", "/tmp").unwrap();
        assert_eq!(shell.program_and_args(), ("/bin/sh", vec!["-c", "echo hi"]));
        assert_eq!(shell.argv_elements(), None);
    }

    #[test]
    fn zero_timeout_becomes_one_millisecond() {
        let req = RunRequest::new("true", "/", "/tmp")
            .unwrap()
            .with_timeout(Duration::ZERO);
        assert_eq!(req.timeout(), Duration::from_millis(1));
    }
}
