//! Project tasks. `cargo xtask bench` measures the tools side by side with
//! what a user would otherwise run (ripgrep, tail, sed, git apply, sh) and
//! writes a Markdown report.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

mod bench;
mod measure;
mod report;
mod spec;
mod tree;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Project tasks for the agent-tools workspace",
    long_about = "Project tasks for the agent-tools workspace.\n\n\
                  `cargo xtask bench` times our tools against ripgrep, tail, sed, git apply \
                  and sh on generated data, prints one Markdown table per group and writes \
                  the report to <target-dir>/bench-report.md."
)]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Benchmark the tools against the usual command-line tools.
    ///
    /// Everything runs with a warm page cache (each contender runs once,
    /// untimed, before the timed runs, which are interleaved). Needs `rg` and
    /// `git` for some comparisons; a missing one is reported and skipped.
    /// The full run takes a few minutes on 2 cores; `--quick` well under two.
    Bench(BenchArgs),
    /// Check spec/SPEC.md and README.md against the code (the crate table
    /// and dependency graph, every surface's tools, titles, hints and
    /// inputs, the README's layout); without `--check`, first rewrite the
    /// generated dependency block.
    Spec(spec::SpecArgs),
    /// rmcp's minimal Streamable HTTP server, which the `http` benchmark
    /// group starts beside ours: prints its address, serves until killed.
    #[command(hide = true)]
    RmcpProbe,
    /// Builds the index of one generated tree and prints its figures as
    /// JSON (one size of the `index-curve` group, in a process of its own).
    #[command(hide = true)]
    IndexProbe(bench::ProbeArgs),
}

/// Options of `cargo xtask bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Smaller data and fewer runs (4,000 files, 20 MB tail file, ...).
    #[arg(long)]
    pub quick: bool,
    /// Run only this group (repeat for several).
    #[arg(long, value_enum, value_name = "NAME")]
    pub only: Vec<Group>,
    /// Where to write the Markdown report [default: TARGET_DIR/bench-report.md].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Number of files in the generated tree [default: 40000, 4000 with --quick].
    #[arg(long, value_name = "N")]
    pub files: Option<usize>,
    /// Also run the index group on this existing tree (for example an
    /// installed Python library), with patterns agents search such a tree
    /// for.
    #[arg(long, value_name = "DIR")]
    pub index_tree: Option<PathBuf>,
    /// Time this agent-tools binary instead of building one (for example
    /// a build of an earlier commit, to compare).
    #[arg(long, value_name = "FILE")]
    pub exe: Option<PathBuf>,
    /// Also time this agent-tools binary, in the same run, where a group
    /// compares binaries (`writes`, `mcp`): a build of an earlier commit.
    #[arg(long, value_name = "FILE")]
    pub baseline_exe: Option<PathBuf>,
    /// File counts of the `index-curve` group's trees [default:
    /// 10000,100000,1000000; 10000 with --quick].
    #[arg(long, value_name = "N,...", value_delimiter = ',')]
    pub curve_sizes: Vec<usize>,
    /// Where the `index-curve` group keeps its generated trees between
    /// runs [default: TEMP/agent-tools-index-curve].
    #[arg(long, value_name = "DIR")]
    pub curve_dir: Option<PathBuf>,
}

/// The benchmark groups, in the order they run.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// grep (files and content modes) vs rg.
    Grep,
    /// glob vs rg --files.
    Glob,
    /// grep and glob of a warm server with the workspace index vs the walk
    /// and rg, with the index's build time and memory.
    Index,
    /// read_file round trips over MCP stdio.
    Mcp,
    /// read_file of the last 50 lines of a large log (first call, and after an
    /// append) vs tail.
    Tail,
    /// edit_file and multi_edit on a 10 MB file vs read+write and sed -i.
    Edit,
    /// apply_patch on a corpus of real commits vs git apply.
    Patch,
    /// apply_patch of a codex patch vs the same change as a unified diff
    /// (50 chunks on a 10 MB file).
    Codex,
    /// the bash tool vs a bare sh spawn.
    Bash,
    /// the Claude Code surface: Read of a window in the middle of a 100 MB
    /// and a 1 GB file, Edit of a 10 MB file vs a read and atomic write.
    Claude,
    /// `true` through the bash tool with the command sandbox vs without.
    Sandbox,
    /// write_file over MCP with the workspace index on vs `--no-index`, and
    /// apply_patch of real commits as a fresh server's first call vs `git
    /// apply`.
    Writes,
    /// job_start of `echo` until its line vs bash, and job_read of an idle
    /// job vs read_file, over MCP stdio.
    Jobs,
    /// read_file over Streamable HTTP vs rmcp's minimal HTTP server, and
    /// calls per second from 16 clients at once.
    Http,
    /// the undo journal: its cost on edit_file of a 10 MB file and on
    /// apply_patch of real commits, disk per MB changed, undo of a 50-file
    /// patch, and commands' change detection per bash call.
    Journal,
    /// edit_file of a file no language server handles with `--lsp` vs
    /// without (what the servers' hook costs such a write), and the time an
    /// edit's answer waits for a warm pyright's error vs a direct LSP
    /// client (skipped when pyright is not installed).
    Lsp,
    /// The index's curve at 10k, 100k and 1M generated files (build time,
    /// memory, a selective grep, a common literal and a one-match glob vs
    /// rg). Runs only when named: the million-file tree takes about 4 GB
    /// of disk and minutes to write (it is kept for the next run).
    IndexCurve,
}

impl BenchArgs {
    /// Whether `group` is selected.
    pub fn wants(&self, group: Group) -> bool {
        (self.only.is_empty() && group != Group::IndexCurve) || self.only.contains(&group)
    }
}

fn main() -> Result<()> {
    // The server's allocator settings, so that the in-process rows and the
    // index probes measure what the server does.
    agent_tools_cli::allocator::tune();
    let cli = Cli::parse();
    match cli.command {
        Task::Bench(args) => bench::run(&args),
        Task::Spec(args) => spec::run(&workspace_root()?, &args),
        Task::RmcpProbe => bench::serve_probe(),
        Task::IndexProbe(args) => bench::index_probe(&args),
    }
}

/// The workspace root (the parent of this crate's folder).
pub fn workspace_root() -> Result<PathBuf> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .context("xtask has no parent folder")
}

/// The cargo that runs us, or `cargo` from PATH.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Cargo's target directory (honours CARGO_TARGET_DIR and config).
pub fn target_dir() -> Result<PathBuf> {
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(workspace_root()?)
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let meta: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    meta.get("target_directory")
        .and_then(serde_json::Value::as_str)
        .map(PathBuf::from)
        .context("cargo metadata has no target_directory")
}

/// Builds the release `agent-tools` binary and returns its path.
pub fn build_agent_tools(target: &Path) -> Result<PathBuf> {
    eprintln!("building the release agent-tools binary ...");
    let status = cargo()
        .args(["build", "--release", "--quiet", "-p", "agent-tools-cli"])
        .current_dir(workspace_root()?)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build --release -p agent-tools-cli failed");
    }
    let exe = target
        .join("release")
        .join(format!("agent-tools{}", std::env::consts::EXE_SUFFIX));
    if !exe.is_file() {
        bail!("{} was not built", exe.display());
    }
    Ok(exe)
}
