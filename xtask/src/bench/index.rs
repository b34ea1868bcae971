//! The warm workspace index: grep and glob of a server whose index is
//! built, against the same tools without it (today's walk) and ripgrep,
//! with the index's build time and memory.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use agent_tools_confine::{Confinement, Workspace};
use std::sync::atomic::AtomicBool;

use agent_tools_fs::ecma::{EcmaBudget, EcmaMatcher, EcmaRegex, EcmaSearch};
use agent_tools_fs::{
    FileTools, FindOptions, GlobArgs, GrepArgs, IndexSettings, Keep, Limits, OutputMode,
};
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

pub(super) fn tools(root: &Path, indexed: bool) -> Result<FileTools> {
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

pub(super) fn grep(tools: &FileTools, pattern: &str) -> Result<String> {
    let mut args = GrepArgs::new(pattern);
    args.output_mode = OutputMode::FilesWithMatches;
    tools
        .grep(&args)
        .map_err(|err| anyhow::anyhow!("grep {pattern:?}: {err}"))
}

pub(super) fn rg(root: &Path, git: bool, args: &[&str]) -> Result<String> {
    let mut cmd = Command::new("rg");
    // Our tools search hidden files and skip `.git`; rg does either only
    // when asked.
    cmd.args(["--no-config", "--hidden", "-g", "!.git"])
        .current_dir(root);
    if !git {
        cmd.arg("--no-require-git");
    }
    let output = run_captured(cmd.args(args), &[0, 1])?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The group on the generated tree: build figures, then each query three
/// ways.
pub fn index(ctx: &Ctx<'_>, tree: &Tree) -> Result<Table> {
    let root = tree.dir.path();
    let title = format!(
        "warm workspace index — {} files ({} in a .gitignored subtree), {:.0} MB",
        count(tree.files),
        count(tree.ignored),
        tree.bytes as f64 / 1e6
    );
    let listed = tree.files - tree.ignored;
    // The common literal: the candidate nearest the wanted share.
    let plain = tools(root, false)?;
    let mut common = COMMON_CANDIDATES[0];
    let mut best = f64::MAX;
    for candidate in COMMON_CANDIDATES {
        let share = result_set(&grep(&plain, candidate)?).len() as f64 / listed.max(1) as f64;
        if (share - COMMON_SHARE).abs() < best {
            best = (share - COMMON_SHARE).abs();
            common = candidate;
        }
    }
    let cases = [
        ("selective literal", tree::LITERAL),
        ("common literal", common),
        ("regex", tree::REGEX),
        ("no usable literal", NO_LITERAL),
    ];
    measure(ctx, title, root, tree.git, listed, &cases, tree::GLOB)
}

/// The group on a tree already on disk (`--index-tree DIR`, for example an
/// installed Python library), with patterns of the kind agents search for
/// in one.
pub fn installed(ctx: &Ctx<'_>, root: &Path) -> Result<Table> {
    let plain = tools(root, false)?;
    let listed = result_set(&glob_of(&plain, "**/*")?).len();
    let title = format!(
        "warm workspace index — {} ({} files after ignore rules)",
        root.display(),
        count(listed)
    );
    let cases = [
        ("selective regex", r"def \w+_handler\("),
        ("common literal", "import os"),
        ("case-insensitive", r"(?i)deprecationwarning\("),
        ("no usable literal", NO_LITERAL),
    ];
    measure(ctx, title, root, false, listed, &cases, "**/*.py")
}

/// `find` over the whole tree, directories included, as `directory_tree`
/// asks (`name_has`: only entries whose name holds it, as `search_files`
/// asks), printed whole.
fn find_all(tools: &FileTools, name_has: Option<&str>) -> Result<String> {
    let options = FindOptions {
        exclude: None,
        directories: true,
        max_depth: None,
        keep: Keep {
            max_entries: None,
            max_bytes: 64 * 1024 * 1024,
            bytes_per_entry: 48,
        },
    };
    let found = tools
        .find(
            ".",
            &options,
            |_, name, _| name_has.is_none_or(|part| name.contains(part)),
            &AtomicBool::new(false),
        )
        .map_err(|err| anyhow::anyhow!("find: {err}"))?;
    Ok(format!("{found:?}"))
}

/// A glob that lists ignored files too (the Claude Code surface's `Glob`).
fn glob_all(tools: &FileTools, pattern: &str) -> Result<String> {
    let mut args = GlobArgs::new(pattern);
    args.respect_gitignore = false;
    tools
        .glob(&args)
        .map_err(|err| anyhow::anyhow!("glob: {err}"))
}

/// An ECMAScript search of the whole tree, ignored files included (the
/// filesystem surface's `grep_files`), printed whole.
fn ecma_grep(tools: &FileTools, pattern: &str) -> Result<String> {
    let regex = EcmaRegex::new(pattern, false).map_err(|err| anyhow::anyhow!("{err}"))?;
    let matcher = EcmaMatcher::new(regex);
    let search = EcmaSearch {
        matcher: &matcher,
        context: 0,
        max_matches: 1_000_000,
        budget: EcmaBudget::default(),
    };
    let base = tools
        .workspace()
        .resolve_dir(Some("."), "a directory")
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    let found = tools
        .ecma_search(&base, &search, &|_| true, &AtomicBool::new(false))
        .map_err(|err| anyhow::anyhow!("ecma grep: {err}"))?;
    Ok(format!(
        "{:?} {:?} {}",
        found.files, found.skipped, found.scan_note
    ))
}

/// The queries that include ignored files (find, a glob that does not
/// respect ignore files, the ECMAScript search), indexed vs walk, checked
/// identical. Returns whether every output was.
fn ignored_too(
    table: &mut Table,
    indexed: &FileTools,
    plain: &FileTools,
    runs: usize,
    glob_pattern: &str,
    cases: &[(&str, &str)],
) -> Result<bool> {
    type Query<'a> = Box<dyn Fn(&FileTools) -> Result<String> + 'a>;
    let mut queries: Vec<(String, Query<'_>)> = vec![
        (
            "find, whole tree with directories (directory_tree)".into(),
            Box::new(|tools| find_all(tools, None)),
        ),
        (
            "find, names holding `_1` (search_files)".into(),
            Box::new(|tools| find_all(tools, Some("_1"))),
        ),
        (
            format!("glob `{glob_pattern}`, ignored files included"),
            Box::new(move |tools| glob_all(tools, glob_pattern)),
        ),
    ];
    for &(what, pattern) in cases {
        // Only the patterns ECMAScript reads: `(?i)` is Rust's.
        if EcmaRegex::new(pattern, false).is_ok() {
            queries.push((
                format!("ECMAScript grep {what} `{pattern}`, ignored files included"),
                Box::new(move |tools| ecma_grep(tools, pattern)),
            ));
        }
    }
    let mut all_same = true;
    for (label, query) in &queries {
        eprintln!("index: {label} ...");
        let ours = query(indexed)?;
        if ours != query(plain)? {
            all_same = false;
            table.note(format!(
                "**warning:** {label}: the output with the index differs from the walk's"
            ));
        }
        let mut steps: Vec<Step<'_>> = vec![
            Box::new(|| query(indexed).map(drop)),
            Box::new(|| query(plain).map(drop)),
        ];
        let timed = interleaved(runs, &mut steps)?;
        table.timed(format!("{label} — indexed vs walk"), &timed[0], &timed[1]);
    }
    Ok(all_same)
}

/// A glob naming one file (`**/NAME`, the middle one of `listed`), which
/// the index answers from its name index: indexed vs walk vs rg.
#[allow(clippy::too_many_arguments)]
fn one_match_glob(
    ctx: &Ctx<'_>,
    table: &mut Table,
    indexed: &FileTools,
    plain: &FileTools,
    root: &Path,
    git: bool,
    listed: &str,
    runs: usize,
) -> Result<bool> {
    let files: Vec<&str> = result_set(listed).into_iter().collect();
    let Some(middle) = files.get(files.len() / 2) else {
        return Ok(true);
    };
    let name = middle.rsplit('/').next().unwrap_or(middle);
    let pattern = format!("**/{name}");
    let ours = glob_of(indexed, &pattern)?;
    let mut all_same = ours == glob_of(plain, &pattern)?;
    if !all_same {
        table
            .note("**warning:** one-match glob: the output with the index differs from the walk's");
    }
    let rg_args = ["--files", "-g", pattern.as_str()];
    if ctx.rg {
        all_same &= check_same(
            table,
            "one-match glob",
            &ours,
            &rg(root, git, &rg_args)?,
            "rg",
        );
    }
    let label = format!(
        "one-match glob `{pattern}` ({} files)",
        count(result_set(&ours).len())
    );
    let mut steps: Vec<Step<'_>> = vec![
        Box::new(|| glob_of(indexed, &pattern).map(drop)),
        Box::new(|| glob_of(plain, &pattern).map(drop)),
    ];
    if ctx.rg {
        steps.push(Box::new(|| rg(root, git, &rg_args).map(drop)));
    }
    let timed = interleaved(runs, &mut steps)?;
    table.timed(format!("{label} — indexed vs walk"), &timed[0], &timed[1]);
    if let Some(rg_stats) = timed.get(2) {
        table.timed(
            format!("{label} — indexed vs `rg --files -g`"),
            &timed[0],
            rg_stats,
        );
    }
    Ok(all_same)
}

pub(super) fn glob_of(tools: &FileTools, pattern: &str) -> Result<String> {
    tools
        .glob(&GlobArgs::new(pattern))
        .map_err(|err| anyhow::anyhow!("glob: {err}"))
}

/// Builds the index of `root`, reports its build time and memory, then
/// times each grep case and the glob with the index, without it (the
/// walk) and with rg, checking that the outputs agree.
fn measure(
    ctx: &Ctx<'_>,
    title: String,
    root: &Path,
    git: bool,
    listed: usize,
    cases: &[(&str, &str)],
    glob_pattern: &str,
) -> Result<Table> {
    let runs = ctx.pick(20, 5);
    let mut table = Table::new(title);
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

    let listed = listed.max(1) as f64;
    let mut all_same = true;
    for &(what, pattern) in cases {
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
            all_same &= check_same(&mut table, what, &ours, &rg(root, git, &sorted)?, "rg");
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
            steps.push(Box::new(|| rg(root, git, &parallel).map(drop)));
        }
        let timed = interleaved(runs, &mut steps)?;
        table.timed(format!("{label} — indexed vs walk"), &timed[0], &timed[1]);
        if let Some(rg_stats) = timed.get(2) {
            table.timed(format!("{label} — indexed vs `rg -l`"), &timed[0], rg_stats);
        }
    }

    eprintln!("index: glob ...");
    let ours = glob_of(&indexed, glob_pattern)?;
    if ours != glob_of(&plain, glob_pattern)? {
        all_same = false;
        table.note("**warning:** glob: the output with the index differs from the walk's");
    }
    let label = format!(
        "glob `{}` ({} files)",
        glob_pattern,
        count(result_set(&ours).len())
    );
    let rg_args = ["--files", "--sortr=modified", "-g", glob_pattern];
    if ctx.rg {
        all_same &= check_same(&mut table, "glob", &ours, &rg(root, git, &rg_args)?, "rg");
    }
    let mut steps: Vec<Step<'_>> = vec![
        Box::new(|| glob_of(&indexed, glob_pattern).map(drop)),
        Box::new(|| glob_of(&plain, glob_pattern).map(drop)),
    ];
    if ctx.rg {
        steps.push(Box::new(|| {
            rg(root, git, &["--files", "-g", glob_pattern]).map(drop)
        }));
        steps.push(Box::new(|| rg(root, git, &rg_args).map(drop)));
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
    all_same &= one_match_glob(ctx, &mut table, &indexed, &plain, root, git, &ours, runs)?;
    all_same &= ignored_too(&mut table, &indexed, &plain, runs, glob_pattern, cases)?;
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
