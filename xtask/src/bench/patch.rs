//! A corpus of real commits applied by our patch engine and by `git apply`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_tools::Config;
use agent_tools_patch::{DirStore, apply, parse};
use anyhow::{Context, Result};
use serde_json::json;

use super::Ctx;
use crate::measure::{Stats, settle};
use crate::report::{Table, duration, median_mean, ratio};

/// Where the corpus is looked for when AGENT_TOOLS_PATCH_CORPUS is unset,
/// relative to the workspace root.
pub(super) const DEFAULT_CORPUS: &str = "../shared/patch-corpus/git";

pub(super) struct Case {
    pub(super) patch_path: PathBuf,
    pub(super) patch: Vec<u8>,
    pub(super) before: PathBuf,
    pub(super) after: PathBuf,
}

/// Files of a tree: relative path and content, sorted.
pub(super) type Files = Vec<(PathBuf, Vec<u8>)>;

pub(super) fn files(root: &Path) -> Result<Files> {
    fn walk(root: &Path, dir: &Path, out: &mut Files) -> Result<()> {
        if !dir.is_dir() {
            return Ok(());
        }
        for entry in fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(root, &path, out)?;
            } else {
                out.push((path.strip_prefix(root)?.to_path_buf(), fs::read(&path)?));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(root, root, &mut out)?;
    out.sort();
    Ok(out)
}

pub(super) fn copy_into(from: &Path, to: &Path) -> Result<()> {
    for (rel, data) in files(from)? {
        let dst = to.join(rel);
        if let Some(parent) = dst.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(dst, data)?;
    }
    Ok(())
}

pub(super) fn load_cases(dir: &Path) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let patch_path = path.join("patch.diff");
        if patch_path.is_file() {
            cases.push(Case {
                patch: fs::read(&patch_path)?,
                patch_path: fs::canonicalize(&patch_path)?,
                before: path.join("before"),
                after: path.join("after"),
            });
        }
    }
    cases.sort_by(|a, b| a.patch_path.cmp(&b.patch_path));
    Ok(cases)
}

/// The project a case comes from, per the first word of its SOURCE file.
fn source(case: &Case) -> Option<String> {
    let text = fs::read_to_string(case.patch_path.parent()?.join("SOURCE")).ok()?;
    text.split_whitespace().next().map(str::to_string)
}

/// Where the corpus is: AGENT_TOOLS_PATCH_CORPUS, or [`DEFAULT_CORPUS`].
pub(super) fn corpus_dir() -> Result<PathBuf> {
    Ok(match std::env::var_os("AGENT_TOOLS_PATCH_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => crate::workspace_root()?.join(DEFAULT_CORPUS),
    })
}

/// One engine's figures: total time per run, and cases reproduced.
#[derive(Default)]
struct Engine {
    runs: Vec<Duration>,
    correct: usize,
}

/// Applies every case with each engine; only the apply is timed.
pub fn corpus(ctx: &Ctx<'_>) -> Result<Table> {
    let dir = corpus_dir()?;
    let mut table = Table::new("apply_patch — corpus of real commits");
    if !dir.is_dir() {
        table.note(format!(
            "Skipped: no patch corpus (set AGENT_TOOLS_PATCH_CORPUS, or place one at {DEFAULT_CORPUS} \
             relative to the repository root)."
        ));
        eprintln!("patch corpus not found at {}: skipped", dir.display());
        return Ok(table);
    }
    let cases = load_cases(&dir)?;
    if cases.is_empty() {
        table.note(format!("Skipped: no cases in {}.", dir.display()));
        return Ok(table);
    }
    eprintln!("patch corpus: {} cases ...", cases.len());
    let runs = ctx.pick(10, 2);
    let scratch = tempfile::tempdir()?;
    let (mut lib, mut tool, mut git) = (Engine::default(), Engine::default(), Engine::default());
    // Run 0 is the untimed warm-up that checks the results.
    for run in 0..=runs {
        let mut totals = [Duration::ZERO; 3];
        for (index, case) in cases.iter().enumerate() {
            let want = files(&case.after)?;
            let fresh = |engine: &str| -> Result<PathBuf> {
                let work = scratch.path().join(format!("{run}-{index}-{engine}"));
                fs::create_dir_all(&work)?;
                copy_into(&case.before, &work)?;
                settle();
                Ok(work)
            };

            // The library: parse + apply through a directory store.
            let work = fresh("lib")?;
            let started = Instant::now();
            let ok = parse(&case.patch)
                .and_then(|p| apply(&p, &mut DirStore::new(&work)))
                .is_ok();
            totals[0] += started.elapsed();
            if run == 0 && ok && files(&work)? == want {
                lib.correct += 1;
            }

            // The apply_patch tool, in process (the tools are set up untimed).
            let work = fresh("tool")?;
            let tools = agent_tools_surface_default::open(Config::builder(&work).build()?)?;
            let args = json!({"patch": String::from_utf8_lossy(&case.patch)});
            let started = Instant::now();
            let ok = !tools.call("apply_patch", args).is_error;
            totals[1] += started.elapsed();
            drop(tools);
            if run == 0 && ok && files(&work)? == want {
                tool.correct += 1;
            }

            // git apply, a process per case, outside any repository.
            if ctx.git {
                let work = fresh("git")?;
                let started = Instant::now();
                let ok = Command::new("git")
                    .arg("apply")
                    .arg(&case.patch_path)
                    .current_dir(&work)
                    .env("GIT_CEILING_DIRECTORIES", scratch.path())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .context("running git apply")?
                    .success();
                totals[2] += started.elapsed();
                if run == 0 && ok && files(&work)? == want {
                    git.correct += 1;
                }
            }
        }
        if run > 0 {
            lib.runs.push(totals[0]);
            tool.runs.push(totals[1]);
            git.runs.push(totals[2]);
        }
        fs::remove_dir_all(scratch.path())?;
        fs::create_dir_all(scratch.path())?;
    }

    let n = cases.len();
    let per_case = |s: &Stats| s.mean() / u32::try_from(n).unwrap_or(u32::MAX);
    let (lib_s, tool_s, git_s) = (
        Stats::of(lib.runs),
        Stats::of(tool.runs),
        Stats::of(git.runs),
    );
    table = Table::new(format!("apply_patch — corpus of {n} real commits"));
    if ctx.git {
        table.timed(
            format!("all {n} cases: library (parse + apply, `DirStore`) vs `git apply`"),
            &lib_s,
            &git_s,
        );
        table.timed(
            format!("all {n} cases: `apply_patch` tool, in-process vs `git apply`"),
            &tool_s,
            &git_s,
        );
        table.row(
            "per case (mean): library vs `git apply`",
            duration(per_case(&lib_s)),
            duration(per_case(&git_s)),
            ratio(per_case(&lib_s), per_case(&git_s)),
        );
        table.row(
            "per case (mean): `apply_patch` tool vs `git apply`",
            duration(per_case(&tool_s)),
            duration(per_case(&git_s)),
            ratio(per_case(&tool_s), per_case(&git_s)),
        );
        table.row(
            "cases reproduced byte for byte (library / tool vs git)",
            format!("{}/{n} / {}/{n}", lib.correct, tool.correct),
            format!("{}/{n}", git.correct),
            "—",
        );
    } else {
        table.row(
            format!("all {n} cases: library (parse + apply, `DirStore`)"),
            median_mean(&lib_s),
            "git not found",
            "—",
        );
        table.row(
            format!("all {n} cases: `apply_patch` tool, in-process"),
            median_mean(&tool_s),
            "git not found",
            "—",
        );
    }
    table.note(format!(
        "{runs} timed runs of the whole corpus; `before/` is copied to a fresh folder \
         and synced to disk (untimed) for every apply. Ours is in-process and writes every file atomically and \
         durably, in one batch: a temporary file per file, all fsynced together, renamed, \
         then each folder fsynced once.{}{}",
        if ctx.git {
            " `git apply` is a process per case (spawn included) and does not fsync."
        } else {
            ""
        },
        source(&cases[0]).map_or(String::new(), |s| format!(" Cases are commits of {s}."))
    ));
    Ok(table)
}
