//! `cargo xtask bench`: runs the selected groups and writes the report.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::measure::{fs_type, tool_version};
use crate::report::{Table, count};
use crate::{BenchArgs, Group};

pub use http::serve_probe;
pub use index_curve::{ProbeArgs, probe as index_probe};

mod claude;
mod codex;
mod edit;
mod grep_files;
mod http;
mod index;
mod index_curve;
mod jobs;
mod journal;
mod lsp;
mod mcp;
mod patch;
mod sandbox;
mod search;
mod shell;
mod tail;
mod writes;

/// What every group may need: options, and which outside tools exist.
pub struct Ctx<'a> {
    /// The command-line options.
    pub args: &'a BenchArgs,
    /// The release `agent-tools` binary, when a group needs it.
    pub exe: Option<PathBuf>,
    /// Whether `rg` runs.
    pub rg: bool,
    /// Whether `git` runs.
    pub git: bool,
}

impl Ctx<'_> {
    /// Picks the full or the quick value.
    pub fn pick<T>(&self, full: T, quick: T) -> T {
        if self.args.quick { quick } else { full }
    }

    /// The agent-tools binary (built at start when needed).
    pub fn exe(&self) -> Result<&PathBuf> {
        self.exe
            .as_ref()
            .context("the agent-tools binary was not built")
    }
}

/// Runs the benchmark.
pub fn run(args: &BenchArgs) -> Result<()> {
    let started = Instant::now();
    let target = crate::target_dir()?;
    let needs_exe = [
        Group::Grep,
        Group::Glob,
        Group::Mcp,
        Group::Tail,
        Group::Sandbox,
        Group::Writes,
        Group::Jobs,
        Group::Http,
        Group::Lsp,
    ]
    .iter()
    .any(|g| args.wants(*g));
    let exe = if let Some(exe) = &args.exe {
        Some(exe.clone())
    } else if needs_exe {
        Some(crate::build_agent_tools(&target)?)
    } else {
        None
    };
    let rg_version = tool_version("rg");
    let git_version = tool_version("git");
    let ctx = Ctx {
        args,
        exe,
        rg: rg_version.is_some(),
        git: git_version.is_some(),
    };

    let mut report = header(&ctx, rg_version.as_deref(), git_version.as_deref());
    print!("{report}");
    let mut lap = Instant::now();
    let mut emit = |table: Table| {
        eprintln!("  ({:.1} s)", lap.elapsed().as_secs_f64());
        lap = Instant::now();
        let text = table.markdown();
        print!("{text}");
        report.push_str(&text);
    };

    if args.wants(Group::Grep) || args.wants(Group::Glob) || args.wants(Group::Index) {
        let files = args.files.unwrap_or(ctx.pick(40_000, 4_000));
        eprintln!("generating {} files ...", count(files));
        let tree = crate::tree::generate(files, ctx.git)?;
        if args.wants(Group::Grep) {
            for table in search::grep(&ctx, &tree)? {
                emit(table);
            }
            emit(grep_files::grep_files(&ctx, &tree)?);
        }
        if args.wants(Group::Glob) {
            emit(search::glob(&ctx, &tree)?);
        }
        if args.wants(Group::Index) {
            emit(index::index(&ctx, &tree)?);
        }
    }
    if args.wants(Group::Index)
        && let Some(dir) = &args.index_tree
    {
        emit(index::installed(&ctx, dir)?);
    }
    if args.only.contains(&Group::IndexCurve) {
        emit(index_curve::curve(&ctx)?);
    }
    if args.wants(Group::Mcp) {
        emit(mcp::round_trips(&ctx)?);
    }
    if args.wants(Group::Tail) {
        emit(tail::tail(&ctx)?);
    }
    if args.wants(Group::Edit) {
        emit(edit::edits(&ctx)?);
    }
    if args.wants(Group::Patch) {
        emit(patch::corpus(&ctx)?);
    }
    if args.wants(Group::Codex) {
        emit(codex::codex_vs_unified(&ctx)?);
    }
    if args.wants(Group::Bash) {
        emit(shell::bash(&ctx)?);
    }
    if args.wants(Group::Claude) {
        emit(claude::read_window(&ctx)?);
        emit(claude::edit(&ctx)?);
    }
    if args.wants(Group::Sandbox) {
        emit(sandbox::sandbox(&ctx)?);
    }
    if args.wants(Group::Writes) {
        emit(writes::writes(&ctx)?);
    }
    if args.wants(Group::Jobs) {
        emit(jobs::jobs(&ctx)?);
    }
    if args.wants(Group::Http) {
        emit(http::http(&ctx)?);
    }
    if args.wants(Group::Journal) {
        for table in journal::journal(&ctx)? {
            emit(table);
        }
    }
    if args.wants(Group::Lsp) {
        emit(lsp::lsp(&ctx)?);
    }

    let out = match &args.out {
        Some(path) => path.clone(),
        None => target.join("bench-report.md"),
    };
    std::fs::write(&out, &report).with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "report written to {} ({:.0} s)",
        out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn header(ctx: &Ctx<'_>, rg: Option<&str>, git: Option<&str>) -> String {
    let nproc = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let temp = std::env::temp_dir();
    let mut out = String::from("## Benchmarks\n\n");
    let _ = writeln!(
        out,
        "`cargo xtask bench{}` — {nproc} CPUs ({cpu}), {} {}, temp dir on {}; {}; {}.\n",
        if ctx.args.quick { " --quick" } else { "" },
        std::env::consts::OS,
        std::env::consts::ARCH,
        fs_type(&temp).unwrap_or_else(|| "an unknown filesystem".into()),
        rg.unwrap_or("rg not found: ripgrep comparisons skipped"),
        git.map_or("git not found: git comparisons skipped".to_string(), |g| {
            g.to_string()
        }),
    );
    out.push_str(
        "Warm page cache: each contender runs once untimed, then the timed runs, interleaved \
         round-robin. Figures are **median / mean**; ratio = ours ÷ theirs by median \
         (below 1 means we are faster). *In-process* is a library call \
         (`AgentTools::call`); *CLI* is `agent-tools call` and, like every outside tool, \
         is timed as a whole process, start-up included.\n\n",
    );
    out
}

/// The result lines of a tool's or a command's output, as a set: footers
/// (`[...]`), `(no matches)` and context separators left out.
pub fn result_set(text: &str) -> BTreeSet<&str> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('[') && *l != "(no matches)" && *l != "--")
        .collect()
}

/// Compares two result sets; on a difference, warns and adds a note.
/// Returns whether they are equal.
pub fn check_same(
    table: &mut Table,
    what: &str,
    ours: &str,
    theirs: &str,
    their_name: &str,
) -> bool {
    let (a, b) = (result_set(ours), result_set(theirs));
    if a == b {
        return true;
    }
    let only_ours: Vec<&&str> = a.difference(&b).take(2).collect();
    let only_theirs: Vec<&&str> = b.difference(&a).take(2).collect();
    let message = format!(
        "**warning:** {what}: our result set differs from {their_name}'s ({} vs {} entries; \
         only ours e.g. {only_ours:?}, only theirs e.g. {only_theirs:?})",
        a.len(),
        b.len()
    );
    eprintln!("{message}");
    table.note(message);
    false
}
