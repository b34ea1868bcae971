//! Configuration: given once, checked once, then frozen.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use agent_tools_bash::jobs::JobTable;
use agent_tools_bash::{Launcher, RunError, RunOutcome, RunRequest};
use agent_tools_confine::Confinement;
use agent_tools_fs::{IndexSettings, Limits};
use agent_tools_lsp::{ServerConfigError, ServerSpec};
use agent_tools_sandbox::{Coverage, PolicyError, SandboxError, SandboxPolicy};

/// Why the tools could not start. Each variant names what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The workspace root does not exist or cannot be opened.
    #[error("workspace root {} cannot be opened", root.display())]
    RootMissing {
        /// The root as given.
        root: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The workspace root is a file.
    #[error("workspace root {} is not a directory", root.display())]
    RootNotADirectory {
        /// The root as given.
        root: PathBuf,
    },
    /// A tool's generated argument schema did not compile (a bug in this
    /// crate, caught by its tests; never caused by configuration).
    #[error("the argument schema of tool {tool} is invalid: {message}")]
    InvalidSchema {
        /// The tool.
        tool: &'static str,
        /// The validator's complaint.
        message: String,
    },
    /// The command sandbox was asked for without a launcher to apply it.
    #[error(
        "the command sandbox needs a launcher (the agent-tools binary passes itself); none was configured"
    )]
    SandboxNeedsLauncher,
    /// The command sandbox was asked for while the allowed directories are
    /// to come from the client: its policy is fixed when the server starts,
    /// before the client names them.
    #[error(
        "--sandbox needs the folders on the command line (--root DIR): the sandbox is fixed at startup, before a client announces its roots"
    )]
    SandboxNeedsRoots,
    /// The command sandbox was asked for where it cannot work (no
    /// Landlock in this kernel, or not Linux).
    #[error("--sandbox cannot be used here: {source}")]
    SandboxUnavailable {
        /// Why.
        source: SandboxError,
    },
    /// The roots make no sandbox policy (a read-only root inside a
    /// writable one, say).
    #[error("the command sandbox cannot be set up: {source}")]
    SandboxPolicy {
        /// Why.
        source: PolicyError,
    },
    /// The sandbox's private temporary folder could not be made.
    #[error("the command sandbox's temporary folder cannot be created: {source}")]
    SandboxTmp {
        /// Why.
        source: std::io::Error,
    },
    /// The undo journal could not be opened, or its directory lies inside
    /// a root.
    #[error("--journal: {source}")]
    Journal {
        /// Why.
        source: agent_tools_fs::journal::JournalError,
    },
    /// The undo journal was asked for without a directory while no
    /// default one can be named (neither `XDG_STATE_HOME` nor `HOME` set).
    #[error("--journal needs --journal-dir: neither XDG_STATE_HOME nor HOME is set")]
    JournalNeedsDir,
    /// Structured output was asked for on a surface that has none (the
    /// tools it mirrors declare no output schema, and its clients show the
    /// model only a structured copy).
    #[error("the {surface} surface has no structured output: leave --structured-output off")]
    NoStructuredOutput {
        /// The surface's name.
        surface: &'static str,
    },
    /// A limit is out of range.
    #[error("{name} must be between {min} and {max}, got {value}")]
    LimitOutOfRange {
        /// The option's name.
        name: &'static str,
        /// The value given.
        value: u64,
        /// The smallest accepted value.
        min: u64,
        /// The largest accepted value.
        max: u64,
    },
}

/// What the tools may do beneath one allowed directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RootAccess {
    /// Read and write.
    ReadWrite,
    /// Read only: every write beneath it is refused.
    ReadOnly,
}

/// One allowed directory and what may be done beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedRoot {
    /// The directory as given.
    pub path: PathBuf,
    /// What may be done beneath it.
    pub access: RootAccess,
}

impl AllowedRoot {
    /// Whether writes beneath it are allowed.
    pub fn writable(&self) -> bool {
        self.access == RootAccess::ReadWrite
    }
}

/// Builds a [`Config`]. Every option has a default except the root.
#[derive(Debug, Clone)]
pub struct ConfigBuilder {
    root: PathBuf,
    awaiting_roots: bool,
    root_access: RootAccess,
    more_roots: Vec<AllowedRoot>,
    max_output_bytes: u64,
    max_file_bytes: u64,
    bash_timeout_max_ms: u64,
    read_only: bool,
    confinement: Confinement,
    bash_launcher: Option<Launcher>,
    leave_background_children: bool,
    index: Option<IndexSettings>,
    sandbox: CommandSandbox,
    journal: Option<JournalOptions>,
    lsp: Option<LspOptions>,
    structured_output: bool,
}

/// Default for how long a write waits for its file's diagnostics.
pub const DEFAULT_LSP_WAIT_MS: u64 = 3000;
/// The longest a write may be configured to wait for diagnostics.
pub const MAX_LSP_WAIT_MS: u64 = 30_000;

/// Which diagnostics a write reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LspReport {
    /// Errors only.
    #[default]
    Errors,
    /// Errors and warnings.
    Warnings,
}

/// Language servers (see SPEC, Language servers): which serve which files,
/// how long a write waits for its diagnostics, and what it reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LspOptions {
    /// Candidate servers, in order of preference; per file the first that
    /// handles its extension and is found on `PATH` is used.
    pub servers: Vec<ServerSpec>,
    /// How long a write waits for diagnostics, in milliseconds (0 to
    /// [`MAX_LSP_WAIT_MS`]).
    pub wait_ms: u64,
    /// What a write reports.
    pub report: LspReport,
}

impl Default for LspOptions {
    /// The built-in table, the default wait, errors only.
    fn default() -> Self {
        LspOptions {
            servers: agent_tools_lsp::builtin_servers(),
            wait_ms: DEFAULT_LSP_WAIT_MS,
            report: LspReport::Errors,
        }
    }
}

impl LspOptions {
    /// Adds the servers of a `.lsp.json` file's text (Claude Code's shape)
    /// ahead of the built-in ones, so they override them for their
    /// extensions.
    pub fn with_config(mut self, text: &str) -> Result<Self, ServerConfigError> {
        let mut servers = agent_tools_lsp::parse_lsp_json(text)?;
        servers.append(&mut self.servers);
        self.servers = servers;
        Ok(self)
    }
}

/// What `--journal` asks for: where the undo journal lives (`None`: the
/// default state directory for the roots) and its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalOptions {
    /// The state directory; `None` for the default one
    /// ([`JournalSettings::default_dir`]).
    pub dir: Option<PathBuf>,
    /// The most calls kept.
    pub max_calls: usize,
    /// The oldest call kept.
    pub max_age: std::time::Duration,
    /// The most bytes of stored content kept.
    pub max_bytes: u64,
    /// How much the journal flushes.
    pub durability: agent_tools_fs::journal::Durability,
    /// How commands' changes are recorded.
    pub commands: agent_tools_fs::commands::CommandMode,
    /// The most files the roots may hold for commands' changes to be
    /// looked for.
    pub command_max_files: usize,
}

/// The journal's own settings type, for its defaults.
pub use agent_tools_fs::journal::Settings as JournalSettings;

impl Default for JournalOptions {
    fn default() -> Self {
        JournalOptions {
            dir: None,
            max_calls: JournalSettings::DEFAULT_MAX_CALLS,
            max_age: JournalSettings::DEFAULT_MAX_AGE,
            max_bytes: JournalSettings::DEFAULT_MAX_BYTES,
            durability: agent_tools_fs::journal::Durability::Full,
            commands: agent_tools_fs::commands::CommandMode::default(),
            command_max_files: agent_tools_fs::commands::DEFAULT_COMMAND_MAX_FILES,
        }
    }
}

/// The open undo journal of a built [`Config`]; configs compare equal when
/// they share the same one.
#[derive(Debug, Clone)]
pub struct ActiveJournal(
    pub(crate) Arc<agent_tools_fs::journal::Journal>,
    pub(crate) Arc<agent_tools_fs::commands::CommandWatch>,
);

impl ActiveJournal {
    /// The journal.
    pub fn journal(&self) -> &Arc<agent_tools_fs::journal::Journal> {
        &self.0
    }

    /// What looks for commands' changes.
    pub fn commands(&self) -> &agent_tools_fs::commands::CommandWatch {
        &self.1
    }
}

impl PartialEq for ActiveJournal {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ActiveJournal {}

/// Whether commands run confined (see SPEC §9, Command sandbox).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CommandSandbox {
    /// Commands run with the server's full rights.
    #[default]
    Off,
    /// Commands may write only beneath the writable roots, their private
    /// `TMPDIR` and the usual devices, and reach the network only when
    /// `network` is true. The version-control folders at the top of the
    /// writable roots (`.git`, ...) stay read-only unless `vcs_writes`.
    On {
        /// Whether commands may use the network.
        network: bool,
        /// Whether commands may write the version-control folders of the
        /// writable roots (then git can run what a command planted there).
        vcs_writes: bool,
    },
}

/// The command sandbox of a built [`Config`]: the policy every command
/// runs under, the Landlock ABI found at startup, and the private temporary
/// folder (removed when the last clone of the config is dropped).
#[derive(Debug, Clone)]
pub struct ActiveSandbox {
    policy: SandboxPolicy,
    abi: u8,
    tmp: Arc<tempfile::TempDir>,
}

impl PartialEq for ActiveSandbox {
    fn eq(&self, other: &Self) -> bool {
        self.policy == other.policy && self.abi == other.abi
    }
}

impl Eq for ActiveSandbox {}

impl ActiveSandbox {
    /// The policy commands run under.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// The running kernel's Landlock ABI.
    pub fn abi(&self) -> u8 {
        self.abi
    }

    /// How much of the policy this kernel enforces.
    pub fn coverage(&self) -> Coverage {
        agent_tools_sandbox::coverage_for(self.abi)
    }

    /// The private temporary folder, exported to commands as `TMPDIR`.
    pub fn tmp_dir(&self) -> &Path {
        self.tmp.path()
    }

    fn start(
        roots: &[AllowedRoot],
        read_only: bool,
        network: bool,
        vcs_writes: bool,
    ) -> Result<ActiveSandbox, StartupError> {
        let abi = agent_tools_sandbox::landlock_abi()
            .map_err(|source| StartupError::SandboxUnavailable { source })?;
        let tmp = tempfile::Builder::new()
            .prefix("agent-tools-sandbox-")
            .tempdir()
            .map_err(|source| StartupError::SandboxTmp { source })?;
        // Landlock resolves links when the rules are made; the check that no
        // read-only root lies inside a writable one is lexical, so both sides
        // are canonical.
        let mut writable = Vec::new();
        let mut read_only_paths = Vec::new();
        for root in roots {
            let path =
                std::fs::canonicalize(&root.path).map_err(|source| StartupError::RootMissing {
                    root: root.path.clone(),
                    source,
                })?;
            // The one place the roots become the policy: in read-only mode
            // every root is read-only to commands too.
            if root.writable() && !read_only {
                writable.push(path);
            } else {
                read_only_paths.push(path);
            }
        }
        let tmp_path = std::fs::canonicalize(tmp.path())
            .map_err(|source| StartupError::SandboxTmp { source })?;
        let policy = SandboxPolicy::new(writable, read_only_paths)
            .and_then(|policy| policy.with_tmp_dir(tmp_path))
            .map_err(|source| StartupError::SandboxPolicy { source })?
            .with_network(network)
            .with_vcs_writes(vcs_writes);
        Ok(ActiveSandbox {
            policy,
            abi,
            tmp: Arc::new(tmp),
        })
    }
}

/// The frozen configuration every call reads. Only [`ConfigBuilder::build`]
/// makes one, so a `Config` is always valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    root: PathBuf,
    awaiting_roots: bool,
    root_access: RootAccess,
    more_roots: Vec<AllowedRoot>,
    max_output_bytes: usize,
    max_file_bytes: u64,
    bash_timeout_max_ms: u64,
    read_only: bool,
    confinement: Confinement,
    bash_launcher: Option<Launcher>,
    leave_background_children: bool,
    index: Option<IndexSettings>,
    sandbox: Option<ActiveSandbox>,
    journal: Option<ActiveJournal>,
    lsp: Option<LspOptions>,
    structured_output: bool,
}

/// Default cap on one call's output, in bytes.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = Limits::DEFAULT_MAX_OUTPUT_BYTES as u64;
/// Default cap on the size of a file read or edited whole, in bytes.
pub const DEFAULT_MAX_FILE_BYTES: u64 = Limits::DEFAULT_MAX_FILE_BYTES;
/// Default memory budget of the workspace index, in bytes (per root).
pub const DEFAULT_INDEX_MEMORY_BYTES: u64 = agent_tools_fs::DEFAULT_INDEX_MEMORY_BYTES;
/// Default ceiling for a command's timeout, in milliseconds.
pub const DEFAULT_BASH_TIMEOUT_MAX_MS: u64 = agent_tools_bash::DEFAULT_MAX_TIMEOUT_MS;

impl ConfigBuilder {
    /// Starts a configuration for the workspace at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ConfigBuilder {
            root: root.into(),
            awaiting_roots: false,
            root_access: RootAccess::ReadWrite,
            more_roots: Vec::new(),
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            bash_timeout_max_ms: DEFAULT_BASH_TIMEOUT_MAX_MS,
            read_only: false,
            confinement: Confinement::Confined,
            bash_launcher: None,
            leave_background_children: false,
            index: None,
            sandbox: CommandSandbox::Off,
            journal: None,
            lsp: None,
            structured_output: false,
        }
    }

    /// A configuration with no allowed directory yet, for a surface that
    /// serves several and takes them from the client (MCP roots) once it
    /// connects. Until then every path is refused. A surface that needs a
    /// root cannot open on it.
    pub fn awaiting_roots() -> Self {
        ConfigBuilder {
            awaiting_roots: true,
            ..ConfigBuilder::new(PathBuf::new())
        }
    }

    /// What may be done beneath the root itself (read-write unless this is
    /// called). Unlike [`read_only`](Self::read_only), which hides the
    /// writing tools, a read-only root keeps them offered and refuses
    /// their writes beneath it.
    pub fn root_access(mut self, access: RootAccess) -> Self {
        self.root_access = access;
        self
    }

    /// Allows one more directory besides the root, for surfaces that
    /// serve several (the filesystem surface). The root stays the first
    /// and is where relative paths are taken from. The default surface
    /// serves the root alone.
    pub fn also_root(mut self, path: impl Into<PathBuf>, access: RootAccess) -> Self {
        self.more_roots.push(AllowedRoot {
            path: path.into(),
            access,
        });
        self
    }

    /// Caps the text one call returns (1 KiB to 64 MiB).
    pub fn max_output_bytes(mut self, bytes: u64) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Caps the size of a file read or edited whole (1 byte to 4 GiB).
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// The most a command's `timeout_ms` may ask for (1 ms to 24 h).
    pub fn bash_timeout_max_ms(mut self, ms: u64) -> Self {
        self.bash_timeout_max_ms = ms;
        self
    }

    /// Gives every successful answer a structured copy beside its text
    /// (MCP's `structuredContent`, with an `outputSchema` per tool; see
    /// [`crate::structured`]). Off by default: the main clients show the
    /// model only the structured copy when there is one, which loses the
    /// text's layout.
    pub fn structured_output(mut self, on: bool) -> Self {
        self.structured_output = on;
        self
    }

    /// Offers only the read-only tools.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Whether paths are confined to the root. Confined unless this is called
    /// with [`Confinement::Unconfined`].
    pub fn confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = confinement;
        self
    }

    /// Start `bash` commands through `launcher` (the `agent-tools` binary
    /// passes itself, so commands die with the server). Without one the
    /// shell is started directly.
    pub fn bash_launcher(mut self, launcher: Launcher) -> Self {
        self.bash_launcher = Some(launcher);
        self
    }

    /// Leave what a command starts in the background (`cmd &`) running on
    /// its own after the call, as a shell would, instead of making it part
    /// of the connection (off by default: it dies with the connection and
    /// with the server, and job listings show it). See
    /// [`Config::run_command`].
    pub fn leave_background_children(mut self, leave: bool) -> Self {
        self.leave_background_children = leave;
        self
    }

    /// Turns the warm workspace index on (off unless this is called): each
    /// root gets one, built in the background, and glob and grep answer
    /// from it when it can vouch for the answer. Its memory budget must be
    /// 1 MiB to 64 GiB.
    pub fn index(mut self, settings: IndexSettings) -> Self {
        self.index = Some(settings);
        self
    }

    /// Runs every command of every surface in the command sandbox (off by
    /// default). Needs a [launcher](Self::bash_launcher) and a Linux kernel
    /// with Landlock: [`build`](Self::build) checks both, makes the private
    /// temporary folder and fixes the policy (the root writable, or
    /// read-only in read-only mode).
    pub fn sandbox(mut self, sandbox: CommandSandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Turns the undo journal on (off unless this is called): every change
    /// the tools make is recorded, and the `changes` and `undo` tools are
    /// offered. Its directory must lie outside every root.
    pub fn journal(mut self, options: JournalOptions) -> Self {
        self.journal = Some(options);
        self
    }

    /// Turns language servers on (off by default).
    pub fn lsp(mut self, options: LspOptions) -> Self {
        self.lsp = Some(options);
        self
    }

    /// Checks everything and freezes the configuration.
    pub fn build(self) -> Result<Config, StartupError> {
        check_range(
            "max_output_bytes",
            self.max_output_bytes,
            1024,
            64 * 1024 * 1024,
        )?;
        check_range(
            "max_file_bytes",
            self.max_file_bytes,
            1,
            4 * 1024 * 1024 * 1024,
        )?;
        check_range(
            "bash_timeout_max_ms",
            self.bash_timeout_max_ms,
            1,
            24 * 3600 * 1000,
        )?;
        if let Some(index) = &self.index {
            check_range(
                "index_memory_bytes",
                index.memory_budget_bytes,
                1024 * 1024,
                64 * 1024 * 1024 * 1024,
            )?;
        }
        if let Some(lsp) = &self.lsp {
            check_range("lsp_wait_ms", lsp.wait_ms, 0, MAX_LSP_WAIT_MS)?;
        }
        if !self.awaiting_roots {
            check_directory(&self.root)?;
        }
        for more in &self.more_roots {
            check_directory(&more.path)?;
        }
        let sandbox = match self.sandbox {
            CommandSandbox::Off => None,
            CommandSandbox::On { .. } if self.bash_launcher.is_none() => {
                return Err(StartupError::SandboxNeedsLauncher);
            }
            CommandSandbox::On { .. } if self.awaiting_roots => {
                return Err(StartupError::SandboxNeedsRoots);
            }
            CommandSandbox::On {
                network,
                vcs_writes,
            } => {
                let mut roots = vec![AllowedRoot {
                    path: self.root.clone(),
                    access: self.root_access,
                }];
                roots.extend(self.more_roots.iter().cloned());
                Some(ActiveSandbox::start(
                    &roots,
                    self.read_only,
                    network,
                    vcs_writes,
                )?)
            }
        };
        let journal = match &self.journal {
            None => None,
            Some(options) => Some(self.open_journal(options)?),
        };
        Ok(Config {
            journal,
            root: self.root,
            awaiting_roots: self.awaiting_roots,
            root_access: self.root_access,
            more_roots: self.more_roots,
            max_output_bytes: usize::try_from(self.max_output_bytes).unwrap_or(usize::MAX),
            max_file_bytes: self.max_file_bytes,
            bash_timeout_max_ms: self.bash_timeout_max_ms,
            read_only: self.read_only,
            confinement: self.confinement,
            bash_launcher: self.bash_launcher,
            leave_background_children: self.leave_background_children,
            index: self.index,
            sandbox,
            lsp: self.lsp,
            structured_output: self.structured_output,
        })
    }
}

impl ConfigBuilder {
    /// Opens the journal in its directory, refused inside any root.
    fn open_journal(&self, options: &JournalOptions) -> Result<ActiveJournal, StartupError> {
        let mut roots: Vec<PathBuf> = self.more_roots.iter().map(|r| r.path.clone()).collect();
        if !self.awaiting_roots {
            roots.insert(0, self.root.clone());
        }
        let roots: Vec<PathBuf> = roots
            .iter()
            .map(|root| std::fs::canonicalize(root).unwrap_or_else(|_| root.clone()))
            .collect();
        let dir = match &options.dir {
            Some(dir) => dir.clone(),
            None => JournalSettings::default_dir(&roots).ok_or(StartupError::JournalNeedsDir)?,
        };
        let settings = JournalSettings {
            dir,
            max_calls: options.max_calls,
            max_age: options.max_age,
            max_bytes: options.max_bytes,
            max_file_bytes: self.max_file_bytes,
            durability: options.durability,
        };
        settings
            .check_outside(&roots)
            .map_err(|source| StartupError::Journal { source })?;
        let journal = agent_tools_fs::journal::Journal::open(settings)
            .map_err(|source| StartupError::Journal { source })?;
        let commands = agent_tools_fs::commands::CommandWatch::new(
            options.commands,
            options.command_max_files,
        );
        Ok(ActiveJournal(journal, Arc::new(commands)))
    }
}

/// An allowed directory must exist and be a directory.
fn check_directory(root: &Path) -> Result<(), StartupError> {
    let meta = std::fs::metadata(root).map_err(|source| StartupError::RootMissing {
        root: root.to_path_buf(),
        source,
    })?;
    if meta.is_dir() {
        Ok(())
    } else {
        Err(StartupError::RootNotADirectory {
            root: root.to_path_buf(),
        })
    }
}

fn check_range(name: &'static str, value: u64, min: u64, max: u64) -> Result<(), StartupError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(StartupError::LimitOutOfRange {
            name,
            value,
            min,
            max,
        })
    }
}

impl Config {
    /// Starts a builder for the workspace at `root`.
    pub fn builder(root: impl Into<PathBuf>) -> ConfigBuilder {
        ConfigBuilder::new(root)
    }

    /// The workspace root as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every allowed directory: the root first (none when
    /// [awaiting](ConfigBuilder::awaiting_roots) the client's), then those
    /// added with [`ConfigBuilder::also_root`], in the order given.
    pub fn roots(&self) -> Vec<AllowedRoot> {
        let root = (!self.awaiting_roots).then(|| AllowedRoot {
            path: self.root.clone(),
            access: self.root_access,
        });
        root.into_iter()
            .chain(self.more_roots.iter().cloned())
            .collect()
    }

    /// Whether the allowed directories are to come from the client.
    pub fn awaiting_client_roots(&self) -> bool {
        self.awaiting_roots
    }

    /// The same configuration for one of its allowed directories alone:
    /// that directory as the root, with its access, and no other root.
    /// Surfaces with several roots open one engine per root from it.
    pub fn for_root(&self, root: &AllowedRoot) -> Config {
        Config {
            root: root.path.clone(),
            awaiting_roots: false,
            root_access: root.access,
            more_roots: Vec::new(),
            ..self.clone()
        }
    }

    /// `request` as this configuration starts commands: through the
    /// launcher, and in the sandbox when there is one. Every surface's
    /// commands (foreground or background) pass through here, so none runs
    /// outside the sandbox the server was started with.
    pub fn confine_command(&self, request: RunRequest) -> RunRequest {
        let request = match self.bash_launcher() {
            Some(launcher) => request.with_launcher(launcher.clone()),
            None => request,
        };
        match self.sandbox() {
            Some(sandbox) => request.with_sandbox(sandbox.policy().clone()),
            None => request,
        }
    }

    /// The output cap of one call.
    pub fn max_output_bytes(&self) -> usize {
        self.max_output_bytes
    }

    /// The size cap of a whole-file read or edit.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
    }

    /// The ceiling of a command's timeout.
    pub fn bash_timeout_max_ms(&self) -> u64 {
        self.bash_timeout_max_ms
    }

    /// Whether answers carry a structured copy and tools an output schema.
    pub fn structured_output(&self) -> bool {
        self.structured_output
    }

    /// Whether only the read tools are offered.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// Whether paths are confined.
    pub fn confinement(&self) -> Confinement {
        self.confinement
    }

    /// The program `bash` commands are started through, if any.
    pub fn bash_launcher(&self) -> Option<&Launcher> {
        self.bash_launcher.as_ref()
    }

    /// Whether background children of commands are left to themselves
    /// (see [`ConfigBuilder::leave_background_children`]).
    pub fn leave_background_children(&self) -> bool {
        self.leave_background_children
    }

    /// Runs a command tool's `request` (made with
    /// [`confine_command`](Self::confine_command)): through the
    /// connection's `jobs` when there are some, so that what the command
    /// leaves running in the background stays under its launcher as a job
    /// of the connection ([`JobTable::run`]), unless this configuration
    /// leaves such children to themselves; else as a plain run, whose
    /// background children live on after the launcher.
    pub fn run_command(
        &self,
        request: &RunRequest,
        jobs: Option<&JobTable>,
        cancel: &AtomicBool,
    ) -> Result<RunOutcome, RunError> {
        match jobs {
            Some(jobs) if !self.leave_background_children => jobs.run(request, cancel),
            _ => agent_tools_bash::run(request, cancel),
        }
    }

    /// The workspace index settings, when it is on.
    pub fn index(&self) -> Option<IndexSettings> {
        self.index
    }

    /// The command sandbox, when commands run confined.
    pub fn sandbox(&self) -> Option<&ActiveSandbox> {
        self.sandbox.as_ref()
    }

    /// The undo journal, when `--journal` is on.
    pub fn journal(&self) -> Option<&ActiveJournal> {
        self.journal.as_ref()
    }

    /// The language servers, when they are on.
    pub fn lsp(&self) -> Option<&LspOptions> {
        self.lsp.as_ref()
    }

    /// The limits handed to the file tools.
    pub fn limits(&self) -> Limits {
        Limits {
            max_file_bytes: self.max_file_bytes,
            max_output_bytes: self.max_output_bytes,
        }
    }
}
