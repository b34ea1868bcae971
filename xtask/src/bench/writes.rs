//! What the workspace index costs writes: `write_file` over MCP stdio with
//! the index on and with `--no-index`, and `apply_patch` of real commits as
//! the first call of a freshly started server against `git apply`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use super::Ctx;
use super::mcp::Client;
use super::patch::{copy_into, corpus_dir, files, load_cases};
use crate::measure::{Stats, settle};
use crate::report::{Table, duration, ratio};

/// The pause before each spaced call (an agent thinks between calls).
const CALL_GAP: Duration = Duration::from_millis(2);

/// How many calls a server gets before the other's turn.
const BLOCK: usize = 50;

/// The goal: a write with the index on takes at most this much longer
/// than with `--no-index` (median).
const GOAL_RATIO: f64 = 1.10;

/// Files of the tree around each patch case: a server is started in a
/// project, not in a folder of the few files a commit touches, so its
/// index has this much to build when the first call comes.
const PATCH_TREE_FILES: usize = 500;

/// A small source tree: `files` files of code (about 1.5 KB each) in
/// folders of 50, under `top`, as relative paths and contents.
fn tree_files(top: &str, files: usize) -> Vec<(String, String)> {
    let mut rng = crate::tree::Rng::new(11);
    (0..files)
        .map(|i| {
            let mut text = String::new();
            while text.len() < 1500 {
                crate::tree::code_line(&mut rng, &mut text);
            }
            (format!("{top}/m{:03}/f{i:04}.rs", i / 50), text)
        })
        .collect()
}

/// Writes a tree made by [`tree_files`] under `root`.
fn make_tree(root: &Path, tree: &[(String, String)]) -> Result<()> {
    for (rel, text) in tree {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(())
}

/// The files of a patched copy, the tree around the case left out.
fn patched(work: &Path) -> Result<super::patch::Files> {
    let mut all = files(work)?;
    all.retain(|(rel, _)| !rel.starts_with("bench-tree"));
    Ok(all)
}

/// How long the servers get to build their index before the timing; a
/// tree of 4,000 small files is indexed in well under a second.
const BUILD_WAIT: Duration = Duration::from_secs(3);

/// `k` write_file calls on each server, taking turns by blocks, each after
/// `gap` when given; the two contents alternate so every write changes the
/// file.
fn measure(servers: &mut [Client], k: usize, gap: Option<Duration>) -> Result<Vec<Stats>> {
    let mut samples: Vec<Vec<Duration>> = servers.iter().map(|_| Vec::with_capacity(k)).collect();
    let mut text_a = String::new();
    let mut rng = crate::tree::Rng::new(5);
    while text_a.len() < 1024 {
        crate::tree::code_line(&mut rng, &mut text_a);
    }
    let text_b = text_a.replace(';', "; ");
    let mut done = 0;
    while done < k {
        let calls = BLOCK.clamp(1, k - done);
        for (at, client) in servers.iter_mut().enumerate() {
            for call in 0..calls {
                if let Some(gap) = gap {
                    std::thread::sleep(gap);
                }
                let content = if (done + call).is_multiple_of(2) {
                    &text_a
                } else {
                    &text_b
                };
                let args = json!({"path": "src/m000/notes.rs", "content": content});
                let started = Instant::now();
                client.call("write_file", &args)?;
                samples[at].push(started.elapsed());
            }
        }
        done += calls;
    }
    Ok(samples.into_iter().map(Stats::of).collect())
}

/// The median, the 90th percentile and the mean of a write's latency.
fn spread(stats: &Stats) -> String {
    format!(
        "{} / {} / {}",
        duration(stats.median()),
        duration(stats.quantile(0.9)),
        duration(stats.mean())
    )
}

/// The binaries measured: ours, and the baseline when one was given.
fn binaries<'a>(ctx: &'a Ctx<'_>) -> Result<Vec<(&'static str, &'a Path)>> {
    let mut out = vec![("", ctx.exe()?.as_path())];
    if let Some(baseline) = &ctx.args.baseline_exe {
        out.push(("baseline: ", baseline.as_path()));
    }
    Ok(out)
}

/// write_file with the index on vs off, and apply_patch on a fresh server.
pub fn writes(ctx: &Ctx<'_>) -> Result<Table> {
    let exes = binaries(ctx)?;
    let mut table = Table::new("What the workspace index costs writes");
    let files = ctx.pick(4000, 1000);
    eprintln!("writes: trees of {files} files ...");
    let dir = tempfile::tempdir()?;
    let tree = tree_files("src", files);
    // Each server on its own copy, index on then off, per binary.
    let mut servers = Vec::new();
    for (at, (_, exe)) in exes.iter().enumerate() {
        for (options, name) in [(&[][..], "on"), (&["--no-index"][..], "off")] {
            let root = dir.path().join(format!("{at}-{name}"));
            make_tree(&root, &tree)?;
            servers.push(Client::start_with(exe, &root, options)?);
        }
    }
    std::thread::sleep(BUILD_WAIT);
    // Warm-up: every server's first writes (and the index's first events).
    measure(&mut servers, 100, None)?;
    let k = ctx.pick(2000, 400);
    let spaced = measure(&mut servers, k, Some(CALL_GAP))?;
    let tight = measure(&mut servers, k, None)?;
    for server in servers {
        server.shutdown()?;
    }
    let mut worst = 0.0f64;
    for (at, (label, _)) in exes.iter().enumerate() {
        for (how, stats) in [
            (format!("{CALL_GAP:?} between calls"), &spaced),
            ("back to back".to_string(), &tight),
        ] {
            let (with, without) = (&stats[2 * at], &stats[2 * at + 1]);
            table.row(
                format!("{label}write_file of 1 KB, {how}: index on vs `--no-index`"),
                spread(with),
                spread(without),
                ratio(with.median(), without.median()),
            );
            if at == 0 {
                worst = worst.max(with.median().as_secs_f64() / without.median().as_secs_f64());
            }
        }
    }
    table.note(format!(
        "Median / 90th percentile / mean of {k} calls per server over MCP stdio; the servers \
         (each on its own copy of a tree of {files} files) take turns by blocks of {BLOCK} \
         calls. Goal: a write with the index at most {:.0}% slower (median): {} (worst ratio \
         {worst:.2}).",
        (GOAL_RATIO - 1.0) * 100.0,
        if worst <= GOAL_RATIO {
            "met"
        } else {
            "NOT met"
        }
    ));
    first_patch(ctx, &exes, &mut table)?;
    Ok(table)
}

/// apply_patch of each corpus case as the first call of a server started
/// on a fresh copy (the call alone timed), index on and off, and `git
/// apply` of the same case.
fn first_patch(ctx: &Ctx<'_>, exes: &[(&str, &Path)], table: &mut Table) -> Result<()> {
    let dir = corpus_dir()?;
    if !dir.is_dir() {
        table.note("apply_patch on a fresh server: skipped, no patch corpus.");
        return Ok(());
    }
    let cases = load_cases(&dir)?;
    if cases.is_empty() {
        return Ok(());
    }
    eprintln!(
        "writes: apply_patch of {} cases on fresh servers ...",
        cases.len()
    );
    let runs = ctx.pick(3, 1);
    let scratch = tempfile::tempdir()?;
    let tree = tree_files("bench-tree", PATCH_TREE_FILES);
    // Per binary, index on and off; then git.
    let engines = exes.len() * 2 + 1;
    let mut totals: Vec<Vec<Duration>> = vec![Vec::new(); engines];
    let mut correct = vec![0usize; engines];
    for run in 0..=runs {
        let mut sums = vec![Duration::ZERO; engines];
        for (index, case) in cases.iter().enumerate() {
            let want = files(&case.after)?;
            let mut works = Vec::new();
            for engine in 0..engines {
                let work = scratch.path().join(format!("{run}-{index}-{engine}"));
                std::fs::create_dir_all(&work)?;
                make_tree(&work, &tree)?;
                copy_into(&case.before, &work)?;
                works.push(work);
            }
            settle();
            let args = json!({"patch": String::from_utf8_lossy(&case.patch)});
            for (at, (_, exe)) in exes.iter().enumerate() {
                for (side, options) in [(0, &[][..]), (1, &["--no-index"][..])] {
                    let engine = 2 * at + side;
                    let work = &works[engine];
                    let mut server = Client::start_with(exe, work, options)?;
                    let started = Instant::now();
                    let ok = server.call("apply_patch", &args).is_ok();
                    sums[engine] += started.elapsed();
                    server.shutdown()?;
                    if run == 0 && ok && patched(work)? == want {
                        correct[engine] += 1;
                    }
                }
            }
            if ctx.git {
                let engine = engines - 1;
                let work = &works[engine];
                let started = Instant::now();
                let ok = Command::new("git")
                    .arg("apply")
                    .arg(&case.patch_path)
                    .current_dir(work)
                    .env("GIT_CEILING_DIRECTORIES", scratch.path())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .context("running git apply")?
                    .success();
                sums[engine] += started.elapsed();
                if run == 0 && ok && patched(work)? == want {
                    correct[engine] += 1;
                }
            }
            for work in works {
                std::fs::remove_dir_all(work)?;
            }
        }
        // Run 0 is the untimed warm-up that checks the results.
        if run > 0 {
            for (at, sum) in sums.into_iter().enumerate() {
                totals[at].push(sum);
            }
        }
        std::fs::remove_dir_all(scratch.path())?;
        std::fs::create_dir_all(scratch.path())?;
    }
    let n = cases.len();
    let stats: Vec<Stats> = totals.into_iter().map(Stats::of).collect();
    let git = &stats[engines - 1];
    let (against, theirs) = if ctx.git {
        (git, "`git apply`")
    } else {
        (&stats[1], "`--no-index`")
    };
    for (at, (label, _)) in exes.iter().enumerate() {
        for (side, what) in [(0, "index on"), (1, "`--no-index`")] {
            let ours = &stats[2 * at + side];
            table.row(
                format!(
                    "{label}apply_patch of {n} real commits, first call of a fresh server, {what} vs {theirs}"
                ),
                duration(ours.median()),
                duration(against.median()),
                ratio(ours.median(), against.median()),
            );
        }
    }
    let reproduced: Vec<String> = correct[..engines - 1]
        .iter()
        .map(|c| format!("{c}/{n}"))
        .collect();
    table.row(
        "cases reproduced byte for byte (index on / off per binary vs git)",
        reproduced.join(" / "),
        format!("{}/{n}", correct[engines - 1]),
        "—",
    );
    table.note(format!(
        "apply_patch: the total of the {n} first calls (median of {runs} runs); each server is \
         started (untimed) on a fresh copy of the case's `before/` inside a tree of \
         {PATCH_TREE_FILES} source files, synced to disk, so its index is still being built when \
         the call comes. Ours writes every file atomically and durably; `git apply` is a \
         process per case (spawn included) and does not fsync."
    ));
    Ok(())
}
