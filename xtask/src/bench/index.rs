//! The warm workspace index: grep and glob of a server whose index is
//! built, against the same tools without it (today's walk) and ripgrep,
//! with the index's build time and memory.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use agent_tools_confine::{Confinement, Workspace};
use agent_tools_fs::{FileTools, GlobArgs, GrepArgs, IndexSettings, Limits, OutputMode};
use anyhow::{Context, Result, bail};

use super::{Ctx, check_same, result_set};
use crate::measure::{Step, interleaved, run_captured};
use crate::report::{Table, count};
use crate::tree::{self, Tree};

/// Literals (written as regexes) tried for the "common" case; the one whose share of files is
/// nearest [`COMMON_SHARE`] is used.
const COMMON_CANDIDATES: &[&str] = &[
    r"input: &Config\) -> Result<Config>",
    r"input: &Node\) -> Result<",
    r"if alpha\.len\(\) > 1",
    r"if alpha\.len\(\) > 2",
    "alpha_buffer",
    "match alpha \\{",
    "fn alpha_",
    "let alpha_1",
];
/// The share of files the common literal should be found in.
const COMMON_SHARE: f64 = 0.05;
/// A pattern with no literal of three bytes: the index narrows nothing.
const NO_LITERAL: &str = r"\w{5}_\d{3}\b";

fn tools(root: &Path, indexed: bool) -> Result<FileTools> {
    let ws = Workspace::open(root, Confinement::Confined)?;
    let limits = Limits {
        max_output_bytes: 16 * 1024 * 1024,
        ..Limits::default()
    };
    let tools = FileTools::new(ws, limits);
    Ok(if indexed {
        tools.with_index(IndexSettings::default())
    } else {
        tools
    })
}

fn grep(tools: &FileTools, pattern: &str) -> Result<String> {
    let mut args = GrepArgs::new(pattern);
    args.output_mode = OutputMode::FilesWithMatches;
    tools
        .grep(&args)
        .map_err(|err| anyhow::anyhow!("grep {pattern:?}: {err}"))
}

fn glob(tools: &FileTools) -> Result<String> {
    tools
        .glob(&GlobArgs::new(tree::GLOB))
        .map_err(|err| anyhow::anyhow!("glob: {err}"))
}

fn rg(root: &Path, git: bool, args: &[&str]) -> Result<String> {
    let mut cmd = Command::new("rg");
    cmd.arg("--no-config").current_dir(root);
    if !git {
        cmd.arg("--no-require-git");
    }
    let output = run_captured(cmd.args(args), &[0, 1])?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The group: build figures, then each query three ways.
pub fn index(ctx: &Ctx<'_>, tree: &Tree) -> Result<Table> {
    let root = tree.dir.path();
    let runs = ctx.pick(20, 5);
    let mut table = Table::new(format!(
        "warm workspace index — {} files ({} in a .gitignored subtree), {:.0} MB",
        count(tree.files),
        count(tree.ignored),
        tree.bytes as f64 / 1e6
    ));

    eprintln!("index: building ...");
    let started = Instant::now();
    let indexed = tools(root, true)?;
    let index = indexed.index().context("the index is on")?;
    if !index.wait_ready(Duration::from_secs(600)) {
        bail!("the index did not become ready: {}", index.status());
    }
    let waited = started.elapsed();
    let plain = tools(root, false)?;
    let stats = index.stats().context("a ready index has figures")?;
    let build = index.build_time().unwrap_or(waited);
    table.row(
        "background build (walk, watches, read, trigrams, merge)",
        format!("{:.2} s", build.as_secs_f64()),
        "—",
        "—",
    );
    table.row(
        format!(
            "index memory: {} indexed files, {:.1} MB of text, {} postings",
            count(stats.indexed_files as usize),
            stats.text_bytes as f64 / 1e6,
            count(stats.postings as usize)
        ),
        format!(
            "{:.1} MB ({:.1} MB postings + {:.1} MB tables)",
            stats.memory_bytes() as f64 / 1e6,
            stats.postings_bytes as f64 / 1e6,
            stats.table_bytes as f64 / 1e6
        ),
        format!("{:.1} MB text", stats.text_bytes as f64 / 1e6),
        format!(
            "{:.2}",
            stats.memory_bytes() as f64 / stats.text_bytes.max(1) as f64
        ),
    );

    // The common literal: the candidate nearest the wanted share.
    let mut common = COMMON_CANDIDATES[0];
    let mut best = f64::MAX;
    let listed = (tree.files - tree.ignored).max(1) as f64;
    for candidate in COMMON_CANDIDATES {
        let share = result_set(&grep(&plain, candidate)?).len() as f64 / listed;
        if (share - COMMON_SHARE).abs() < best {
            best = (share - COMMON_SHARE).abs();
            common = candidate;
        }
    }

    let mut all_same = true;
    let cases = [
        ("selective literal", tree::LITERAL),
        ("common literal", common),
        ("regex", tree::REGEX),
        ("no usable literal", NO_LITERAL),
    ];
    for (what, pattern) in cases {
        eprintln!("index: grep {what} ...");
        let ours = grep(&indexed, pattern)?;
        let today = grep(&plain, pattern)?;
        if ours != today {
            all_same = false;
            table.note(format!(
                "**warning:** grep {what}: the output with the index differs from the walk's"
            ));
        }
        let sorted = ["-l", "--sort", "path", "-e", pattern];
        let parallel = ["-l", "-e", pattern];
        if ctx.rg {
            all_same &= check_same(&mut table, what, &ours, &rg(root, tree.git, &sorted)?, "rg");
        }
        let share = 100.0 * result_set(&ours).len() as f64 / listed;
        let label = format!(
            "grep -l {what} `{pattern}` ({} files, {share:.1}%)",
            count(result_set(&ours).len())
        );
        let mut steps: Vec<Step<'_>> = vec![
            Box::new(|| grep(&indexed, pattern).map(drop)),
            Box::new(|| grep(&plain, pattern).map(drop)),
        ];
        if ctx.rg {
            steps.push(Box::new(|| rg(root, tree.git, &parallel).map(drop)));
        }
        let timed = interleaved(runs, &mut steps)?;
        table.timed(format!("{label} — indexed vs walk"), &timed[0], &timed[1]);
        if let Some(rg_stats) = timed.get(2) {
            table.timed(format!("{label} — indexed vs `rg -l`"), &timed[0], rg_stats);
        }
    }

    eprintln!("index: glob ...");
    let ours = glob(&indexed)?;
    if ours != glob(&plain)? {
        all_same = false;
        table.note("**warning:** glob: the output with the index differs from the walk's");
    }
    let label = format!(
        "glob `{}` ({} files)",
        tree::GLOB,
        count(result_set(&ours).len())
    );
    let rg_args = ["--files", "--sortr=modified", "-g", tree::GLOB];
    if ctx.rg {
        all_same &= check_same(
            &mut table,
            "glob",
            &ours,
            &rg(root, tree.git, &rg_args)?,
            "rg",
        );
    }
    let mut steps: Vec<Step<'_>> = vec![
        Box::new(|| glob(&indexed).map(drop)),
        Box::new(|| glob(&plain).map(drop)),
    ];
    if ctx.rg {
        steps.push(Box::new(|| {
            rg(root, tree.git, &["--files", "-g", tree::GLOB]).map(drop)
        }));
        steps.push(Box::new(|| rg(root, tree.git, &rg_args).map(drop)));
    }
    let timed = interleaved(runs, &mut steps)?;
    table.timed(format!("{label} — indexed vs walk"), &timed[0], &timed[1]);
    if timed.len() == 4 {
        table.timed(
            format!("{label} — indexed vs `rg --files -g`"),
            &timed[0],
            &timed[2],
        );
        table.timed(
            format!("{label} — indexed vs `rg --files --sortr=modified -g`"),
            &timed[0],
            &timed[3],
        );
    }
    table.note(format!(
        "In-process `FileTools` calls with the index built and ready, after every \
         freshness barrier (each call first waits for the events queued before it). \
         *walk* is the same call without an index (today's path). {runs} timed runs each. {}",
        if all_same {
            "Every output with the index is byte-identical to the walk's, and every result \
             set equals rg's (checked)."
        } else {
            "Some outputs differ: see the warnings."
        }
    ));
    Ok(table)
}
