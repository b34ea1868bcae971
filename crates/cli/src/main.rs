//! The `agent-tools` command: serve the tools over MCP, call one, or list them.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use agent_tools::{
    AgentTools, CommandSandbox, Config, ConfigBuilder, Confinement, IndexSettings, Launcher,
    LspOptions, LspReport, RootAccess, SandboxCoverage, SurfaceChoice,
};
use agent_tools_cli::surfaces;
use agent_tools_mcp::ServerLimits;
use agent_tools_mcp::http::{Access, HttpOptions, Principal};
use clap::{Args, Parser, Subcommand};
use serde_json::{Value, json};

#[derive(Parser)]
#[command(
    name = "agent-tools",
    version,
    about = "File and shell tools for AI coding agents, confined to one folder"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the tools over MCP on stdin/stdout, or over Streamable HTTP
    /// with --listen (logs go to stderr).
    Mcp {
        #[command(flatten)]
        workspace: WorkspaceArgs,
        #[command(flatten)]
        http: HttpArgs,
        /// Give every successful answer a structured copy
        /// (`structuredContent`) and every tool an `outputSchema`. Off by
        /// default: Claude Code, codex and VS Code then show the model only
        /// the structured copy, a JSON-escaped form of the text.
        #[arg(long, value_enum, value_name = "on|off", default_value_t = Switch::Off)]
        structured_output: Switch,
    },
    /// Run one tool call and print its text; exit 1 when it is an error.
    Call {
        #[command(flatten)]
        workspace: WorkspaceArgs,
        /// The tool to call.
        tool: String,
        /// The arguments as a JSON object, or `-` to read them from stdin.
        #[arg(default_value = "{}")]
        args: String,
    },
    /// Print every tool with its title, hints and JSON Schema.
    Tools {
        /// Only the tools offered in read-only mode.
        #[arg(long)]
        read_only: bool,
        /// The tool surface to list (see `agent-tools surfaces`).
        #[arg(long, value_name = "NAME", default_value = agent_tools_surface_default::DEFAULT_SURFACE)]
        surface: String,
    },
    /// List what the tools changed, newest call first, from the undo
    /// journal (safe beside a running server on the same folder).
    Changes {
        #[command(flatten)]
        workspace: WorkspaceArgs,
        /// Show this call's diff.
        #[arg(long)]
        call: Option<u64>,
        /// The most calls to list.
        #[arg(long)]
        limit: Option<usize>,
        /// Only calls that changed this path.
        #[arg(long)]
        path: Option<String>,
    },
    /// Undo one call (`--call N`) or every call after one (`--to N`), all or
    /// nothing (safe beside a running server: the same locks).
    Undo {
        #[command(flatten)]
        workspace: WorkspaceArgs,
        /// The call to undo.
        #[arg(long, conflicts_with = "to", required_unless_present = "to")]
        call: Option<u64>,
        /// Undo every call after this one.
        #[arg(long)]
        to: Option<u64>,
        /// Only report what would be done.
        #[arg(long)]
        dry_run: bool,
        /// Overwrite files changed since the call.
        #[arg(long)]
        force: bool,
    },
    /// List the tool surfaces, one a line: name, then what it is for.
    Surfaces,
    /// What this machine offers, one a line: a name, then its state
    /// (`sandbox`: the Landlock ABI `--sandbox` would use, or why it cannot;
    /// `lsp-NAME`: where each built-in language server was found, if it was).
    Status,
}

#[derive(Args)]
struct WorkspaceArgs {
    /// The tool surface to offer (see `agent-tools surfaces`).
    #[arg(long, value_name = "NAME", default_value = agent_tools_surface_default::DEFAULT_SURFACE)]
    surface: String,
    /// The workspace folder the tools work in. Surfaces that serve several
    /// folders (filesystem) take it more than once; the first is where
    /// relative paths are taken from.
    /// Without any (and no --read-only-root), the filesystem surface takes
    /// the folders from a client that announces its roots.
    #[arg(long, value_name = "DIR")]
    root: Vec<PathBuf>,
    /// A folder the tools may read but never write (surfaces that serve
    /// several folders only; may be given more than once).
    #[arg(long, value_name = "DIR")]
    read_only_root: Vec<PathBuf>,
    /// Offer only the read-only tools.
    #[arg(long)]
    read_only: bool,
    /// Cap on the text one call returns.
    #[arg(long, value_name = "N", default_value_t = agent_tools::DEFAULT_MAX_OUTPUT_BYTES)]
    max_output_bytes: u64,
    /// Cap on the size of a file read or edited whole.
    #[arg(long, value_name = "N", default_value_t = agent_tools::DEFAULT_MAX_FILE_BYTES)]
    max_file_bytes: u64,
    /// The most a command's timeout_ms may ask for.
    #[arg(long, value_name = "N", default_value_t = agent_tools::DEFAULT_BASH_TIMEOUT_MAX_MS)]
    bash_timeout_max_ms: u64,
    /// Leave what a command starts in the background (`cmd &`) running on
    /// its own after the call, even past the connection and the server.
    /// By default it belongs to the connection, like a job: job listings
    /// show it, and it dies with the connection and with the server. (A
    /// one-shot `call` has no connection and always leaves it.)
    #[arg(long)]
    leave_background_children: bool,
    /// Allow paths outside the root (confinement is on unless this is given).
    #[arg(long)]
    no_confine: bool,
    /// Serve without the warm workspace index: every glob and grep walks
    /// the tree (mcp only; a single `call` never builds one).
    #[arg(long)]
    no_index: bool,
    /// The memory budget of the workspace index, per root, in MiB; files
    /// past it are searched on every grep instead of being indexed.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_INDEX_MEMORY_MB)]
    index_memory_mb: u64,
    /// Run every command confined (Linux with Landlock): writes only in the
    /// root (none in read-only mode), a private TMPDIR and the usual
    /// devices; no network unless --sandbox-network.
    #[arg(long)]
    sandbox: bool,
    /// With --sandbox: let commands use the network.
    #[arg(long, requires = "sandbox")]
    sandbox_network: bool,
    /// With --sandbox: let commands write the version-control folders
    /// (.git, .hg, .jj, .svn) at the top of the writable roots, which are
    /// read-only to them otherwise (git would run hooks and settings
    /// planted there outside the sandbox). Needed for `git commit` and the
    /// like inside the sandbox.
    #[arg(long, requires = "sandbox")]
    sandbox_allow_vcs_writes: bool,
    /// Record every change the tools make in the undo journal, and offer
    /// the `changes` and `undo` tools (see SPEC, Undo journal).
    #[arg(long)]
    journal: bool,
    /// The journal's state directory (outside every root); default
    /// $XDG_STATE_HOME/agent-tools/journal/<hash of the roots>.
    #[arg(long, value_name = "DIR")]
    journal_dir: Option<PathBuf>,
    /// The most calls the journal keeps.
    #[arg(long, value_name = "N", default_value_t = agent_tools::JournalSettings::DEFAULT_MAX_CALLS)]
    journal_max_calls: usize,
    /// The most megabytes of stored content the journal keeps.
    #[arg(long, value_name = "MB", default_value_t = agent_tools::JournalSettings::DEFAULT_MAX_BYTES / (1024 * 1024))]
    journal_max_mb: u64,
    /// The oldest call the journal keeps, in days.
    #[arg(long, value_name = "DAYS", default_value_t = 7)]
    journal_max_age_days: u64,
    /// `full` flushes each pre-image and intent before the file changes (a
    /// crash loses no undo data); `relaxed` flushes nothing of the journal
    /// (a crash may lose undo data, never file data).
    #[arg(long, value_name = "full|relaxed", default_value = "full")]
    journal_durability: String,
    /// How commands' changes are recorded: `detect` lists them (with what
    /// each file was left holding) but cannot undo them; `baseline` keeps
    /// the roots' file contents before each command so commands undo like
    /// tool calls; `off` does not look.
    #[arg(long, value_name = "off|detect|baseline", default_value = "detect")]
    journal_commands: String,
    /// The most files the roots may hold for a command's changes to be
    /// looked for (past it the call's record says they were not).
    #[arg(long, value_name = "N", default_value_t = agent_tools::DEFAULT_COMMAND_MAX_FILES)]
    journal_command_max_files: usize,
    /// Use language servers (off by default): after every write the answer
    /// gets the file's errors from its server, and code navigation tools
    /// are offered. Servers are found on PATH (see `agent-tools status`)
    /// and run like commands, under --sandbox when given.
    #[arg(long)]
    lsp: bool,
    /// With --lsp: more servers, or overrides for the built-in ones, in
    /// Claude Code's .lsp.json shape.
    #[arg(long, value_name = "FILE", requires = "lsp")]
    lsp_config: Option<PathBuf>,
    /// With --lsp: how long a write waits for its diagnostics (0-30000;
    /// 0 reports only what is already known).
    #[arg(long, value_name = "MS", default_value_t = agent_tools::DEFAULT_LSP_WAIT_MS)]
    lsp_wait_ms: u64,
    /// With --lsp: what a write reports.
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = LspDiagnostics::Errors)]
    lsp_diagnostics: LspDiagnostics,
}

/// An option that is on or off.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Switch {
    /// On.
    On,
    /// Off.
    Off,
}

/// What `--lsp-diagnostics` takes.
#[derive(Clone, Copy, clap::ValueEnum)]
enum LspDiagnostics {
    /// Errors only.
    Errors,
    /// Errors and warnings.
    Warnings,
}

#[derive(Args)]
struct HttpArgs {
    /// Serve Streamable HTTP at http://ADDR:PORT/mcp instead of stdio
    /// (`/healthz` answers `ok`). Needs --root and a token.
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<std::net::SocketAddr>,
    /// A file of bearer tokens: one a line, `LABEL:TOKEN` (the label names
    /// the principal) or a bare token (principal `default`).
    #[arg(long, value_name = "FILE", requires = "listen")]
    token_file: Option<PathBuf>,
    /// An environment variable holding tokens in the --token-file format
    /// (lines, or `;` between entries).
    #[arg(long, value_name = "VAR", requires = "listen")]
    token_env: Option<String>,
    /// Serve without any token: only on a loopback address, where every
    /// local user (and any page a browser opens, were Origin not checked)
    /// could run commands as you.
    #[arg(long, requires = "listen", conflicts_with_all = ["token_file", "token_env"])]
    insecure_no_auth_loopback: bool,
    /// A browser origin allowed to call (`scheme://host:port`); any other
    /// `Origin` is refused with 403. May be given more than once.
    #[arg(long, value_name = "ORIGIN", requires = "listen")]
    allowed_origin: Vec<String>,
    /// A `Host` allowed besides the loopback names (`host` or
    /// `host:port`), for serving under a real name. More than once.
    #[arg(long, value_name = "HOST", requires = "listen")]
    allowed_host: Vec<String>,
    /// Seconds an MCP session may be idle before it ends (with its
    /// background commands).
    #[arg(long, value_name = "SECS", default_value_t = agent_tools_mcp::http::DEFAULT_SESSION_IDLE.as_secs())]
    session_idle_secs: u64,
    /// HTTP requests handled at once; more are answered 503.
    #[arg(long, value_name = "N", default_value_t = agent_tools_mcp::http::DEFAULT_MAX_CONCURRENT_REQUESTS)]
    max_concurrent_requests: usize,
    /// HTTP connections open at once; one more is answered 503 and closed.
    #[arg(long, value_name = "N", default_value_t = agent_tools_mcp::http::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
}

impl HttpArgs {
    /// Who may call, from the token file or variable (never argv).
    fn access(&self) -> anyhow::Result<Access> {
        if self.insecure_no_auth_loopback {
            return Ok(Access::NoAuthLoopback);
        }
        let mut principals = Vec::new();
        if let Some(file) = &self.token_file {
            let text = std::fs::read_to_string(file).map_err(|err| {
                anyhow::anyhow!("cannot read the token file {}: {err}", file.display())
            })?;
            principals.extend(parse_tokens(&text)?);
        }
        if let Some(var) = &self.token_env {
            let text = std::env::var(var)
                .map_err(|_| anyhow::anyhow!("the token variable {var} is not set"))?;
            principals.extend(parse_tokens(&text.replace(';', "\n"))?);
        }
        if principals.is_empty() {
            anyhow::bail!(
                "--listen needs a token (--token-file or --token-env), or \
                 --insecure-no-auth-loopback on a loopback address"
            );
        }
        Ok(Access::Tokens(principals))
    }
}

/// Reads `LABEL:TOKEN` or bare-token lines; blank lines and `#` comments
/// are skipped. Labels must be distinct.
fn parse_tokens(text: &str) -> anyhow::Result<Vec<Principal>> {
    let mut principals: Vec<Principal> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (label, token) = match line.split_once(':') {
            Some((label, token)) => (label.trim(), token.trim()),
            None => ("default", line),
        };
        if token.is_empty() {
            anyhow::bail!("the token of principal {label:?} is empty");
        }
        if principals.iter().any(|p| p.label == label) {
            anyhow::bail!("principal {label:?} is given twice");
        }
        principals.push(Principal {
            label: label.to_owned(),
            token: token.to_owned(),
        });
    }
    Ok(principals)
}

/// The default of `--index-memory-mb`.
const DEFAULT_INDEX_MEMORY_MB: u64 = agent_tools::DEFAULT_INDEX_MEMORY_BYTES / (1024 * 1024);

/// The hidden subcommand the binary re-executes itself as to start a
/// command (see `agent_tools_bash::launcher`).
const LAUNCHER_SUBCOMMAND: &str = "__run-command";

impl WorkspaceArgs {
    /// Opens the tools; `serving` says whether this is a long-lived server
    /// (which builds the workspace index unless `--no-index`).
    fn open(&self, serving: bool) -> anyhow::Result<AgentTools> {
        self.open_with(serving, false)
    }

    /// [`Self::open`], with answers carrying a structured copy when
    /// `structured_output`.
    fn open_with(&self, serving: bool, structured_output: bool) -> anyhow::Result<AgentTools> {
        // An unknown surface is refused before anything else is looked at.
        let surface = agent_tools_cli::surface(&self.surface)?;
        // `/proc/self/exe` names this very binary in the child too, even if
        // the file was replaced or deleted since the server started.
        let launcher = Launcher::new("/proc/self/exe", [LAUNCHER_SUBCOMMAND.into()]);
        if (self.root.len() > 1 || !self.read_only_root.is_empty())
            && !surface.serves_several_roots()
        {
            anyhow::bail!(
                "the {} surface serves one folder: give --root once and no --read-only-root \
                 (the filesystem surface serves several)",
                surface.name()
            );
        }
        // Every folder in order: the read-write ones, then the read-only
        // ones; the first is where relative paths are taken from.
        let mut folders = self
            .root
            .iter()
            .map(|root| (root, RootAccess::ReadWrite))
            .chain(
                self.read_only_root
                    .iter()
                    .map(|root| (root, RootAccess::ReadOnly)),
            );
        let mut config = match folders.next() {
            Some((first, access)) => Config::builder(first).root_access(access),
            None if surface.serves_several_roots() => ConfigBuilder::awaiting_roots(),
            None => anyhow::bail!("--root DIR is required"),
        };
        for (root, access) in folders {
            config = config.also_root(root, access);
        }
        if serving && !self.no_index {
            config = config.index(IndexSettings {
                memory_budget_bytes: self.index_memory_mb.saturating_mul(1024 * 1024),
                ..IndexSettings::default()
            });
        }
        if self.journal {
            let durability = match self.journal_durability.as_str() {
                "full" => agent_tools::JournalDurability::Full,
                "relaxed" => agent_tools::JournalDurability::Relaxed,
                other => {
                    anyhow::bail!("--journal-durability: expected full or relaxed, got {other:?}")
                }
            };
            let commands = match self.journal_commands.as_str() {
                "off" => agent_tools::JournalCommands::Off,
                "detect" => agent_tools::JournalCommands::Detect,
                "baseline" => agent_tools::JournalCommands::Baseline,
                other => anyhow::bail!(
                    "--journal-commands: expected off, detect or baseline, got {other:?}"
                ),
            };
            if self.journal_max_calls == 0 {
                anyhow::bail!("--journal-max-calls must be at least 1");
            }
            config = config.journal(agent_tools::JournalOptions {
                dir: self.journal_dir.clone(),
                max_calls: self.journal_max_calls,
                max_age: std::time::Duration::from_secs(
                    self.journal_max_age_days.saturating_mul(86_400),
                ),
                max_bytes: self.journal_max_mb.saturating_mul(1024 * 1024),
                durability,
                commands,
                command_max_files: self.journal_command_max_files,
            });
        }
        if self.lsp {
            let mut options = LspOptions {
                wait_ms: self.lsp_wait_ms,
                report: match self.lsp_diagnostics {
                    LspDiagnostics::Errors => LspReport::Errors,
                    LspDiagnostics::Warnings => LspReport::Warnings,
                },
                ..LspOptions::default()
            };
            if let Some(file) = &self.lsp_config {
                let text = std::fs::read_to_string(file)
                    .map_err(|err| anyhow::anyhow!("--lsp-config {}: {err}", file.display()))?;
                options = options
                    .with_config(&text)
                    .map_err(|err| anyhow::anyhow!("--lsp-config {}: {err}", file.display()))?;
            }
            config = config.lsp(options);
        }
        let config = config
            .bash_launcher(launcher)
            .read_only(self.read_only)
            .structured_output(structured_output)
            .max_output_bytes(self.max_output_bytes)
            .max_file_bytes(self.max_file_bytes)
            .bash_timeout_max_ms(self.bash_timeout_max_ms)
            .leave_background_children(self.leave_background_children || !serving)
            .confinement(if self.no_confine {
                Confinement::Unconfined
            } else {
                Confinement::Confined
            })
            .sandbox(if self.sandbox {
                CommandSandbox::On {
                    network: self.sandbox_network,
                    vcs_writes: self.sandbox_allow_vcs_writes,
                }
            } else {
                CommandSandbox::Off
            })
            .build()?;
        log_sandbox(&config);
        Ok(surface.open(config)?)
    }
}

/// The log target of the sandbox's startup line, shown by default.
const SANDBOX_LOG: &str = "agent_tools::sandbox";

/// Says at startup which sandbox commands run in, if any.
fn log_sandbox(config: &Config) {
    let Some(sandbox) = config.sandbox() else {
        return;
    };
    let policy = sandbox.policy();
    let paths = |list: &[std::path::PathBuf]| {
        list.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    tracing::info!(
        target: SANDBOX_LOG,
        abi = sandbox.abi(),
        writable = %paths(policy.writable()),
        read_only = %paths(policy.read_only()),
        tmpdir = %sandbox.tmp_dir().display(),
        network = policy.network(),
        vcs_writes = policy.vcs_writes(),
        "commands run in the sandbox (Landlock ABI {})",
        sandbox.abi()
    );
    if sandbox.coverage() == SandboxCoverage::Partial {
        tracing::warn!(
            target: SANDBOX_LOG,
            "this kernel's Landlock ABI {} is older than {}: the sandbox is only partly enforced (see SPEC, Command sandbox)",
            sandbox.abi(),
            agent_tools::SANDBOX_TARGET_ABI
        );
    }
}

/// The `status` line for the sandbox.
fn sandbox_status() -> String {
    match agent_tools_bash::sandbox::landlock_abi() {
        Ok(abi) => {
            let coverage = match agent_tools_bash::sandbox::coverage_for(abi) {
                SandboxCoverage::Full => "enforced fully",
                SandboxCoverage::Partial => "enforced partly",
            };
            format!("sandbox\tLandlock ABI {abi}: --sandbox is available, {coverage}\n")
        }
        Err(err) => format!("sandbox\tunavailable: {err}\n"),
    }
}

/// The `status` lines for the built-in language servers: where each was
/// found on PATH, or that it was not.
fn lsp_status() -> String {
    agent_tools::lsp::builtin_servers()
        .iter()
        .map(|spec| match spec.locate() {
            Some(path) => format!("lsp-{}\t{}\n", spec.name, path.display()),
            None => format!(
                "lsp-{}\tnot found ({} is not on PATH)\n",
                spec.name, spec.command
            ),
        })
        .collect()
}

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|arg| arg == LAUNCHER_SUBCOMMAND) {
        let code = agent_tools_bash::launcher::main(args);
        return ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX));
    }
    // Before any thread starts or anything large is allocated.
    agent_tools_cli::allocator::tune();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AGENT_TOOLS_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new(format!("warn,{SANDBOX_LOG}=info"))
            }),
        )
        .with_ansi(false)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("agent-tools: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Completes on SIGTERM or SIGINT.
fn termination_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

/// Writes `text` to stdout. A reader that went away (`| head`) is not an
/// error worth a message: the rest of the text is simply not wanted.
fn print_quietly(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(err),
        _ => Ok(()),
    }
}

/// Calls one tool and prints its text; exit 1 when it failed.
fn call_and_print(tools: &AgentTools, name: &str, args: Value) -> anyhow::Result<ExitCode> {
    // Absent options are left out rather than sent as null.
    let args = match args {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    };
    print_result(tools.call(name, args))
}

/// Prints a call's text on a line of its own; exit 1 when it failed.
fn print_result(result: agent_tools::DispatchResult) -> anyhow::Result<ExitCode> {
    let mut text = result.text;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    print_quietly(&text)?;
    Ok(if result.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Mcp {
            workspace,
            http,
            structured_output,
        } => {
            let listen = match http.listen {
                Some(listen) => {
                    // Client roots name the client's folders, not ours.
                    if workspace.root.is_empty() && workspace.read_only_root.is_empty() {
                        anyhow::bail!(
                            "--listen needs --root: over HTTP the folders are the server's"
                        );
                    }
                    Some(HttpOptions {
                        listen,
                        access: http.access()?,
                        allowed_hosts: http.allowed_host.clone(),
                        allowed_origins: http.allowed_origin.clone(),
                        session_idle: std::time::Duration::from_secs(http.session_idle_secs),
                        max_concurrent_requests: http.max_concurrent_requests,
                        max_connections: http.max_connections,
                    })
                }
                None => None,
            };
            let tools = workspace.open_with(true, structured_output == Switch::On)?;
            let sandbox_tmp = tools
                .config()
                .sandbox()
                .map(|sandbox| sandbox.tmp_dir().to_path_buf());
            let limits = ServerLimits::for_max_file_bytes(tools.config().max_file_bytes());
            // Commands run as our user: without this they could open
            // /proc/<server>/fd/1 and write forged responses. (It does not
            // stop root; see SPEC, Security.)
            if let Err(err) = nix::sys::prctl::set_dumpable(false) {
                tracing::warn!(error = %err, "cannot make the server non-dumpable");
            }
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let served = runtime.block_on(async {
                let stop = termination_signal()?;
                match listen {
                    Some(options) => {
                        agent_tools_mcp::http::serve_http(
                            tools,
                            limits,
                            options,
                            // The address on stderr: with port 0 it is how
                            // a caller learns the port.
                            |addr| eprintln!("agent-tools: listening on http://{addr}/mcp"),
                            stop,
                        )
                        .await
                    }
                    None => agent_tools_mcp::serve_stdio_with(tools, limits, stop).await,
                }
            });
            // Nothing is waited for: every call was cancelled and the
            // answers that could be written were. Calls still running (a
            // read stuck on a FIFO, say) run on threads of their own, and
            // so do a terminal's reader and writer; their commands die with
            // us through the launcher. Dropping the runtime's tasks here
            // (hundreds, with a flooded queue) took longer than the whole
            // end is allowed.
            runtime.shutdown_background();
            // The folder goes with the tools when they are dropped, but a
            // call still running holds them past this point: remove it now.
            if let Some(tmp) = sandbox_tmp {
                let _ = std::fs::remove_dir_all(tmp);
            }
            served?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call {
            workspace,
            tool,
            args,
        } => {
            let tools = workspace.open(false)?;
            if tools
                .list_tools()
                .iter()
                .any(|spec| spec.name() == tool && spec.connection_bound())
            {
                anyhow::bail!(
                    "{tool} works with jobs, which live only as long as the connection that started them; a one-shot call has none: use `agent-tools mcp`"
                );
            }
            let text = if args == "-" {
                let mut input = String::new();
                std::io::stdin().read_to_string(&mut input)?;
                input
            } else {
                args
            };
            let args: Value = serde_json::from_str(&text)
                .map_err(|err| anyhow::anyhow!("the arguments are not valid JSON: {err}"))?;
            // Sent as given: an explicit null is the caller's to make.
            print_result(tools.call(&tool, args))
        }
        Command::Tools { read_only, surface } => {
            let surface = agent_tools_cli::surface(&surface)?;
            let listed: Vec<Value> = surface
                .tools(read_only)
                .iter()
                .map(|tool| {
                    let hints = tool.hints();
                    json!({
                        "name": tool.name(),
                        "title": tool.title(),
                        "description": tool.description(),
                        "mutating": tool.mutating(),
                        "annotations": {
                            "readOnlyHint": hints.read_only,
                            "destructiveHint": hints.destructive,
                            "idempotentHint": hints.idempotent,
                            "openWorldHint": hints.open_world,
                        },
                        "input_schema": &**tool.input_schema(),
                    })
                })
                .collect();
            print_quietly(&format!("{}\n", serde_json::to_string_pretty(&listed)?))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Changes {
            mut workspace,
            call,
            limit,
            path,
        } => {
            workspace.journal = true;
            let tools = workspace.open(false)?;
            let (name, _) = agent_tools::journal_tools::names(tools.surface_name());
            let args = json!({"call": call, "limit": limit, "path": path});
            call_and_print(&tools, name, args)
        }
        Command::Undo {
            mut workspace,
            call,
            to,
            dry_run,
            force,
        } => {
            workspace.journal = true;
            let tools = workspace.open(false)?;
            let (_, name) = agent_tools::journal_tools::names(tools.surface_name());
            let args = json!({"call": call, "to": to, "dry_run": dry_run, "force": force});
            call_and_print(&tools, name, args)
        }
        Command::Status => {
            print_quietly(&sandbox_status())?;
            print_quietly(&lsp_status())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Surfaces => {
            let listing: String = surfaces()
                .iter()
                .map(|choice: &SurfaceChoice| format!("{}\t{}\n", choice.name(), choice.summary()))
                .collect();
            print_quietly(&listing)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
