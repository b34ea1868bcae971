//! What the workspace index costs writes: `write_file` over MCP stdio with
//! the index on and with `--no-index`, and `apply_patch` of real commits as
//! the first call of a freshly started server against `git apply`.

use std::path::{Path, PathBuf};
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
const PATCH_TREE_FILES: usize = 1000;

/// A small source tree for the servers to index and watch: `files` files
/// of code in folders of 50, under `top`.
fn make_tree(root: &Path, top: &str, files: usize) -> Result<()> {
    let mut rng = crate::tree::Rng::new(11);
    for i in 0..files {
        let dir = root.join(format!("{top}/m{:03}", i / 50));
        std::fs::create_dir_all(&dir)?;
        let mut text = String::new();
        while text.len() < 1500 {
            crate::tree::code_line(&mut rng, &mut text);
        }
        std::fs::write(dir.join(format!("f{i:04}.rs")), text)?;
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
fn measure(servers: &mut [&mut Client; 2], k: usize, gap: Option<Duration>) -> Result<[Stats; 2]> {
    let mut samples: [Vec<Duration>; 2] = std::array::from_fn(|_| Vec::with_capacity(k));
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
                let content = if (done + call) % 2 == 0 {
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
    Ok(samples.map(Stats::of))
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

/// write_file with the index on vs off, and apply_patch on a fresh server.
pub fn writes(ctx: &Ctx<'_>) -> Result<Table> {
    let exe = ctx.exe()?;
    let mut table = Table::new("What the workspace index costs writes");
    let files = ctx.pick(4000, 1000);
    eprintln!("writes: two trees of {files} files ...");
    let dir = tempfile::tempdir()?;
    let on_root = dir.path().join("on");
    let off_root = dir.path().join("off");
    make_tree(&on_root, "src", files)?;
    make_tree(&off_root, "src", files)?;
    let mut on = Client::start_with(exe, &on_root, &[])?;
    let mut off = Client::start_with(exe, &off_root, &["--no-index"])?;
    std::thread::sleep(BUILD_WAIT);
    // Warm-up: both servers' first writes (and the index's first events).
    measure(&mut [&mut on, &mut off], 100, None)?;
    let k = ctx.pick(2000, 400);
    let [spaced_on, spaced_off] = measure(&mut [&mut on, &mut off], k, Some(CALL_GAP))?;
    let [tight_on, tight_off] = measure(&mut [&mut on, &mut off], k, None)?;
    on.shutdown()?;
    off.shutdown()?;
    for (what, with, without) in [
        (
            format!("write_file of 1 KB, {CALL_GAP:?} between calls: index on vs `--no-index`"),
            &spaced_on,
            &spaced_off,
        ),
        (
            "write_file of 1 KB, back to back: index on vs `--no-index`".to_string(),
            &tight_on,
            &tight_off,
        ),
    ] {
        table.row(
            what,
            spread(with),
            spread(without),
            ratio(with.median(), without.median()),
        );
    }
    let worst = [(&spaced_on, &spaced_off), (&tight_on, &tight_off)]
        .iter()
        .map(|(with, without)| with.median().as_secs_f64() / without.median().as_secs_f64())
        .fold(0.0, f64::max);
    table.note(format!(
        "Median / 90th percentile / mean of {k} calls per server over MCP stdio; the two servers \
         (same binary, each on its own copy of a tree of {files} files) take turns by blocks of \
         {BLOCK} calls. Goal: a write with the index at most {:.0}% slower (median): {} (worst \
         ratio {worst:.2}).",
        (GOAL_RATIO - 1.0) * 100.0,
        if worst <= GOAL_RATIO {
            "met"
        } else {
            "NOT met"
        }
    ));
    first_patch(ctx, exe, &mut table)?;
    Ok(table)
}

/// apply_patch of each corpus case as the first call of a server started
/// on a fresh copy (the call alone timed), index on and off, and `git
/// apply` of the same case.
fn first_patch(ctx: &Ctx<'_>, exe: &Path, table: &mut Table) -> Result<()> {
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
    let mut totals: [Vec<Duration>; 3] = Default::default();
    let mut correct = [0usize; 3];
    for run in 0..=runs {
        let mut sums = [Duration::ZERO; 3];
        for (index, case) in cases.iter().enumerate() {
            let want = files(&case.after)?;
            let fresh = |engine: &str| -> Result<PathBuf> {
                let work = scratch.path().join(format!("{run}-{index}-{engine}"));
                std::fs::create_dir_all(&work)?;
                make_tree(&work, "bench-tree", PATCH_TREE_FILES)?;
                copy_into(&case.before, &work)?;
                settle();
                Ok(work)
            };
            let args = json!({"patch": String::from_utf8_lossy(&case.patch)});
            for (at, options) in [(0, &[][..]), (1, &["--no-index"][..])] {
                let work = fresh(if at == 0 { "on" } else { "off" })?;
                let mut server = Client::start_with(exe, &work, options)?;
                let started = Instant::now();
                let ok = server.call("apply_patch", &args).is_ok();
                sums[at] += started.elapsed();
                server.shutdown()?;
                if run == 0 && ok && patched(&work)? == want {
                    correct[at] += 1;
                }
            }
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
                sums[2] += started.elapsed();
                if run == 0 && ok && patched(&work)? == want {
                    correct[2] += 1;
                }
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
    let [on, off, git] = totals.map(Stats::of);
    let against = if ctx.git { &git } else { &off };
    let theirs = if ctx.git {
        "`git apply`"
    } else {
        "`--no-index`"
    };
    table.row(
        format!(
            "apply_patch of {n} real commits, first call of a fresh server, index on vs {theirs}"
        ),
        duration(on.median()),
        duration(against.median()),
        ratio(on.median(), against.median()),
    );
    table.row(
        format!("the same, `--no-index` vs {theirs}"),
        duration(off.median()),
        duration(against.median()),
        ratio(off.median(), against.median()),
    );
    table.row(
        "cases reproduced byte for byte (index on / off vs git)",
        format!("{}/{n} / {}/{n}", correct[0], correct[1]),
        format!("{}/{n}", correct[2]),
        "—",
    );
    table.note(format!(
        "apply_patch: the total of the {n} first calls (median of {runs} runs); each server is \
         started (untimed) on a fresh copy of the case's `before/` inside a tree of \
         {PATCH_TREE_FILES} source files, synced to disk, so its index is still being built when \
         the call comes. Ours writes every file atomically and \
         durably; `git apply` is a process per case (spawn included) and does not fsync."
    ));
    Ok(())
}
