//! Benchmarks applying a patch corpus: this crate (directory store and
//! memory store) against `git apply`, on the same cases in the same run.
//!
//! ```text
//! cargo run --release -p agent-tools-patch --example bench_corpus -- <corpus-dir> [runs]
//! ```
//!
//! `<corpus-dir>` holds case folders `NNN/{patch.diff,before/,after/}`. Each
//! run applies every case once per engine; `before/` is copied into a fresh
//! temporary directory first, and only the apply is timed (for `git apply`,
//! the whole process, started with the temporary directory as its working
//! directory, outside any repository). Prints the mean time of one run (all
//! cases) and per case, in microseconds.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_tools_patch::{DirStore, MemoryStore, apply, parse};

struct Case {
    name: String,
    patch_path: PathBuf,
    patch: Vec<u8>,
    before: PathBuf,
    after: PathBuf,
}

/// Files of a tree: relative path and content, sorted.
type Tree = Vec<(String, Vec<u8>)>;

fn files(root: &Path) -> Result<Tree, Box<dyn Error>> {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) -> Result<(), Box<dyn Error>> {
        if !dir.is_dir() {
            return Ok(());
        }
        for entry in fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(root, &path, out)?;
            } else {
                let rel = path
                    .strip_prefix(root)?
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, fs::read(&path)?));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(root, root, &mut out)?;
    out.sort();
    Ok(out)
}

fn copy_into(from: &Path, to: &Path) -> Result<(), Box<dyn Error>> {
    for (rel, data) in files(from)? {
        let dst = to.join(rel);
        if let Some(parent) = dst.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(dst, data)?;
    }
    Ok(())
}

fn git_apply(patch: &Path, dir: &Path) -> Result<bool, Box<dyn Error>> {
    let status = Command::new("git")
        .arg("apply")
        .arg(patch)
        .current_dir(dir)
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap_or(dir))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    Ok(status.success())
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: bench_corpus <corpus-dir> [runs]");
        std::process::exit(2);
    };
    let runs: u32 = args
        .next()
        .map(|r| r.parse())
        .transpose()?
        .unwrap_or(5)
        .max(1);

    let mut cases = Vec::new();
    for entry in fs::read_dir(&dir)? {
        let path = entry?.path();
        let patch_path = path.join("patch.diff");
        if patch_path.is_file() {
            cases.push(Case {
                name: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                patch: fs::read(&patch_path)?,
                patch_path: fs::canonicalize(&patch_path)?,
                before: path.join("before"),
                after: path.join("after"),
            });
        }
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    if cases.is_empty() {
        return Err(format!("no cases in {dir}").into());
    }

    let git_available = Command::new("git")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    let (mut dir_total, mut mem_total, mut git_total) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let (mut dir_ok, mut mem_ok, mut git_ok) = (0usize, 0usize, 0usize);

    for run in 0..runs {
        for case in &cases {
            let want = files(&case.after)?;

            // This crate, directory store: parse + apply.
            let tmp = tempfile::tempdir()?;
            copy_into(&case.before, tmp.path())?;
            let start = Instant::now();
            let result = parse(&case.patch).and_then(|p| apply(&p, &mut DirStore::new(tmp.path())));
            dir_total += start.elapsed();
            if run == 0 && result.is_ok() && files(tmp.path())? == want {
                dir_ok += 1;
            }

            // This crate, memory store (the store is built outside the timing).
            let mut store: MemoryStore = files(&case.before)?.into_iter().collect();
            let start = Instant::now();
            let result = parse(&case.patch).and_then(|p| apply(&p, &mut store));
            mem_total += start.elapsed();
            if run == 0
                && result.is_ok()
                && store.files.clone().into_iter().collect::<Vec<_>>() == want
            {
                mem_ok += 1;
            }

            // git apply, as a process.
            if git_available {
                let tmp = tempfile::tempdir()?;
                copy_into(&case.before, tmp.path())?;
                let start = Instant::now();
                let ok = git_apply(&case.patch_path, tmp.path())?;
                git_total += start.elapsed();
                if run == 0 && ok && files(tmp.path())? == want {
                    git_ok += 1;
                }
            }
        }
    }

    let n = cases.len();
    let per_run = |t: Duration| t.as_secs_f64() * 1e6 / f64::from(runs);
    println!("{n} cases, {runs} run(s); times are means; only the apply is timed");
    println!(
        "{:<34} {:>14} {:>14} {:>10}",
        "engine", "µs per run", "µs per case", "correct"
    );
    let row = |name: &str, total: Duration, ok: usize| {
        println!(
            "{:<34} {:>14.0} {:>14.1} {:>7}/{n}",
            name,
            per_run(total),
            per_run(total) / n as f64,
            ok
        );
    };
    row("agent-tools-patch (DirStore)", dir_total, dir_ok);
    row("agent-tools-patch (MemoryStore)", mem_total, mem_ok);
    if git_available {
        row("git apply (process)", git_total, git_ok);
    } else {
        println!("git apply: git not found, skipped");
    }
    Ok(())
}
