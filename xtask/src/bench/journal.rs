//! The undo journal: what it adds to `edit_file` of a 10 MB file and to
//! `apply_patch` over the real-history corpus, the disk it uses per MB of
//! changed text, the time of `undo` for a 50-file patch, and what
//! detecting commands' changes adds to a `bash` call on a 10,000-file tree.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_tools::{
    AgentTools, Config, IndexSettings, JournalCommands, JournalDurability, JournalOptions,
};
use anyhow::{Context, Result};
use serde_json::json;

use super::Ctx;
use super::edit::call;
use super::patch::{copy_into, corpus_dir, load_cases};
use crate::measure::{Stats, Step, interleaved, settle};
use crate::report::{Table, duration, median_mean, ratio};

/// The tools on `root`: no journal (`None`), or one in `state`.
fn tools(
    root: &Path,
    journal: Option<(&Path, JournalDurability, JournalCommands)>,
    index: bool,
) -> Result<AgentTools> {
    let mut builder = Config::builder(root);
    if index {
        builder = builder.index(IndexSettings::default());
    }
    if let Some((state, durability, commands)) = journal {
        builder = builder.journal(JournalOptions {
            dir: Some(state.to_path_buf()),
            durability,
            commands,
            ..JournalOptions::default()
        });
    }
    Ok(agent_tools_surface_default::open(builder.build()?)?)
}

/// Where the corpus passes put the trees they are done with, by a rename,
/// instead of deleting them between timed calls: on an ext4 without its
/// own journal (such as this bench's machine), creating a file looks past
/// every inode freed in the last minute or so (`recently_deleted`), so a
/// pass that deletes a tree before each call made every file the next
/// call created cost more, and the side that creates more (the journal's
/// records and contents) the most: an effect of the harness, not of the
/// tools. The folder goes with the scratch folder.
struct SetAside {
    dir: std::path::PathBuf,
    next: usize,
}

impl SetAside {
    fn new(scratch: &Path) -> Result<SetAside> {
        let dir = scratch.join("set-aside");
        fs::create_dir_all(&dir)?;
        Ok(SetAside { dir, next: 0 })
    }

    /// Moves `path` (a file or a tree) out of the way.
    fn put(&mut self, path: &Path) -> Result<()> {
        self.next += 1;
        fs::rename(path, self.dir.join(self.next.to_string()))?;
        Ok(())
    }
}

/// Bytes of every file below `dir`.
fn disk_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => stack.push(entry.path()),
                Ok(meta) => total += meta.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// Waits until the journal in `state` has sealed and compressed what its
/// calls kept (its background pass), by running a pass here.
fn compacted(state: &Path) -> Result<()> {
    let journal = agent_tools_fs::journal::Journal::open(agent_tools_fs::journal::Settings::new(
        state.to_path_buf(),
    ))?;
    journal.compact()?;
    Ok(())
}

/// Every figure of the group.
pub fn journal(ctx: &Ctx<'_>) -> Result<Vec<Table>> {
    Ok(vec![writes(ctx)?, commands(ctx)?])
}

/// edit_file, apply_patch over the corpus, disk use and undo.
fn writes(ctx: &Ctx<'_>) -> Result<Table> {
    let mut table = Table::new("Undo journal — the cost of recording writes (in-process)");
    let scratch = tempfile::tempdir()?;

    // edit_file of a 10 MB file, each contender on its own copy, the same
    // one-line edit made and reversed in turn.
    eprintln!("journal: edit_file of a 10 MB file ...");
    let (content, lines) = crate::tree::numbered_code(10 * 1024 * 1024);
    let near_end = lines - 10;
    let (old, new) = (
        format!("compute(input, {near_end}) + offset"),
        format!("compute(input, {near_end}) - offset"),
    );
    let forth = json!({"path": "big.rs", "old_string": old, "new_string": new});
    let back = json!({"path": "big.rs", "old_string": new, "new_string": old});
    let contenders = [
        ("no journal", None),
        ("`--journal`", Some(JournalDurability::Full)),
        (
            "`--journal-durability relaxed`",
            Some(JournalDurability::Relaxed),
        ),
    ];
    let mut all = Vec::new();
    for (at, (_, durability)) in contenders.iter().enumerate() {
        let root = scratch.path().join(format!("edit-{at}/root"));
        let state = scratch.path().join(format!("edit-{at}/state"));
        fs::create_dir_all(&root)?;
        fs::write(root.join("big.rs"), &content)?;
        let journal = durability.map(|d| (state.as_path(), d, JournalCommands::Off));
        all.push(tools(&root, journal, false)?);
    }
    settle();
    let mut flips = [false; 3];
    let mut steps: Vec<Step<'_>> = Vec::new();
    for (tools, flip) in all.iter().zip(flips.iter_mut()) {
        let (forth, back) = (&forth, &back);
        steps.push(Box::new(move || {
            *flip = !*flip;
            call(tools, "edit_file", if *flip { forth } else { back }).map(drop)
        }));
    }
    let stats = interleaved(ctx.pick(21, 5), &mut steps)?;
    drop(steps);
    drop(all);
    for ((label, _), stat) in contenders.iter().zip(&stats).skip(1) {
        table.timed(
            format!("`edit_file` of a 10 MB file: {label} vs no journal"),
            stat,
            &stats[0],
        );
    }

    // apply_patch over the corpus, with and without the journal.
    let mut set_aside = SetAside::new(scratch.path())?;
    let dir = corpus_dir()?;
    let cases = if dir.is_dir() {
        load_cases(&dir)?
    } else {
        Vec::new()
    };
    if cases.is_empty() {
        table.note(format!(
            "apply_patch over the corpus skipped: no corpus at {}.",
            dir.display()
        ));
    } else {
        eprintln!("journal: apply_patch over {} real commits ...", cases.len());
        let runs = ctx.pick(5, 2);
        let state = scratch.path().join("patch-state");
        // No journal, `full`, `relaxed` (its own state directory): what
        // the journal's flushes cost apart from the rest of it.
        let relaxed_state = scratch.path().join("patch-state-relaxed");
        let mut totals = [Vec::new(), Vec::new(), Vec::new()];
        let mut changed_bytes = 0u64;
        for run in 0..=runs {
            let mut sums = [Duration::ZERO; 3];
            for (index, case) in cases.iter().enumerate() {
                // Rotated, so no side always goes first.
                for turn in 0..3 {
                    let side = (run + index + turn) % 3;
                    let work = scratch.path().join(format!("p-{run}-{index}-{side}"));
                    fs::create_dir_all(&work)?;
                    copy_into(&case.before, &work)?;
                    let journal = match side {
                        1 => Some((
                            state.as_path(),
                            JournalDurability::Full,
                            JournalCommands::Off,
                        )),
                        2 => Some((
                            relaxed_state.as_path(),
                            JournalDurability::Relaxed,
                            JournalCommands::Off,
                        )),
                        _ => None,
                    };
                    let tools = tools(&work, journal, false)?;
                    let args = json!({"patch": String::from_utf8_lossy(&case.patch)});
                    settle();
                    let started = Instant::now();
                    let result = tools.call("apply_patch", args);
                    sums[side] += started.elapsed();
                    drop(tools);
                    if result.is_error {
                        continue;
                    }
                    if run == 0 && side == 1 {
                        changed_bytes += changed_text(&case.before, &case.after)?;
                    }
                    set_aside.put(&work)?;
                }
            }
            if run == 0 {
                // After the warm-up run: what the journal keeps of one
                // pass over the corpus.
                compacted(&state)?;
                let used = disk_bytes(&state.join("objects"));
                table.row(
                    "disk used by the journal's contents per MB of changed files (corpus, one pass, compressed)",
                    format!(
                        "{:.2} MB per MB ({:.1} MB for {:.1} MB)",
                        used as f64 / changed_bytes.max(1) as f64,
                        used as f64 / 1e6,
                        changed_bytes as f64 / 1e6
                    ),
                    "—",
                    "—",
                );
            } else {
                for (total, sum) in totals.iter_mut().zip(sums) {
                    total.push(sum);
                }
            }
        }
        let [off, on, relaxed] = totals.map(Stats::of);
        table.timed(
            format!(
                "`apply_patch` of {} real commits, one fresh tool set each: `--journal` vs no journal (sum per pass)",
                cases.len()
            ),
            &on,
            &off,
        );
        table.timed(
            format!(
                "`apply_patch` of {} real commits, one fresh tool set each: `--journal-durability relaxed` vs no journal (sum per pass)",
                cases.len()
            ),
            &relaxed,
            &off,
        );
    }

    if !cases.is_empty() {
        // The same commits through one tool set per contender for the whole
        // pass, as a running server applies them: each commit's `before/`
        // is copied over the contender's emptied root (untimed; its files
        // moved aside, see `SetAside`), and its
        // journal keeps every call, so no call pays for a fresh start.
        eprintln!(
            "journal: apply_patch over {} commits, one server each ...",
            cases.len()
        );
        let runs = ctx.pick(5, 2);
        let durabilities = [
            None,
            Some(JournalDurability::Full),
            Some(JournalDurability::Relaxed),
        ];
        let mut servers = Vec::new();
        for (side, durability) in durabilities.iter().enumerate() {
            let root = scratch.path().join(format!("server-{side}/root"));
            let state = scratch.path().join(format!("server-{side}/state"));
            fs::create_dir_all(&root)?;
            let journal = durability.map(|d| (state.as_path(), d, JournalCommands::Off));
            servers.push((root.clone(), tools(&root, journal, false)?));
        }
        let mut totals = [Vec::new(), Vec::new(), Vec::new()];
        for run in 0..=runs {
            let mut sums = [Duration::ZERO; 3];
            for (index, case) in cases.iter().enumerate() {
                let args = json!({"patch": String::from_utf8_lossy(&case.patch)});
                for turn in 0..3 {
                    let side = (run + index + turn) % 3;
                    let (root, tools) = &servers[side];
                    for entry in fs::read_dir(root)? {
                        set_aside.put(&entry?.path())?;
                    }
                    copy_into(&case.before, root)?;
                    settle();
                    let started = Instant::now();
                    // An error (a commit this engine refuses) is timed
                    // alike on every side.
                    let _ = tools.call("apply_patch", args.clone());
                    sums[side] += started.elapsed();
                }
            }
            if run > 0 {
                for (total, sum) in totals.iter_mut().zip(sums) {
                    total.push(sum);
                }
            }
        }
        drop(servers);
        let [off, on, relaxed] = totals.map(Stats::of);
        table.timed(
            format!(
                "`apply_patch` of {} real commits, one tool set for the pass: `--journal` vs no journal (sum per pass)",
                cases.len()
            ),
            &on,
            &off,
        );
        table.timed(
            format!(
                "`apply_patch` of {} real commits, one tool set for the pass: `--journal-durability relaxed` vs no journal (sum per pass)",
                cases.len()
            ),
            &relaxed,
            &off,
        );
    }

    // undo of a 50-file patch.
    eprintln!("journal: undo of a 50-file patch ...");
    let root = scratch.path().join("undo/root");
    let state = scratch.path().join("undo/state");
    fs::create_dir_all(&root)?;
    let body: String = (0..120)
        .map(|i| format!("line {i} of the file\n"))
        .collect();
    for i in 0..50 {
        fs::write(root.join(format!("f{i:02}.txt")), &body)?;
    }
    let undo_tools = tools(
        &root,
        Some((&state, JournalDurability::Full, JournalCommands::Off)),
        false,
    )?;
    let mut patch = String::from("*** Begin Patch\n");
    for i in 0..50 {
        patch.push_str(&format!(
            "*** Update File: f{i:02}.txt\n@@\n line 59 of the file\n-line 60 of the file\n+line 60, changed\n line 61 of the file\n"
        ));
    }
    patch.push_str("*** End Patch\n");
    let mut undo_times = Vec::new();
    for run in 0..=ctx.pick(10, 3) {
        call(&undo_tools, "apply_patch", &json!({"patch": patch}))?;
        let listed = call(&undo_tools, "changes", &json!({"limit": 1}))?;
        let id = last_call(&listed).context("the patch is listed")?;
        settle();
        let started = Instant::now();
        call(&undo_tools, "undo", &json!({"call": id}))?;
        if run > 0 {
            undo_times.push(started.elapsed());
        }
        if fs::read_to_string(root.join("f07.txt"))? != body {
            anyhow::bail!("undo did not restore the files");
        }
    }
    let undo_stats = Stats::of(undo_times);
    table.row(
        "`undo` of a 50-file `apply_patch` (restored exactly)",
        median_mean(&undo_stats),
        "—",
        "—",
    );
    table.note(
        "In-process calls (`AgentTools::call`), release build, journal durability `full` unless \
         said; each contender has its own folder and journal. edit_file: the same one-line edit \
         near the end, made and reversed in turn, interleaved. Corpus: every commit applied to a \
         fresh copy of its `before/` with and without the journal, in turn (setup and the tool \
         set's start untimed); *one tool set for the pass*: the same, each contender's one \
         tool set (and journal) applying every commit in its root, emptied and refilled \
         untimed before each, as a running server does. Trees done with are moved aside, not \
         deleted, during a pass (an ext4 without its own journal makes a new file look past \
         the inodes freed in the last minute or so). Disk: the journal's contents after one pass over the corpus, \
         sealed and compressed, per MB of the files the commits rewrote (their size after).",
    );
    Ok(table)
}

/// Bytes of the files that differ between two trees (their size after).
fn changed_text(before: &Path, after: &Path) -> Result<u64> {
    let old = super::patch::files(before)?;
    let new = super::patch::files(after)?;
    let mut total = 0;
    for (path, data) in &new {
        if old.iter().find(|(p, _)| p == path).map(|(_, d)| d) != Some(data) {
            total += data.len() as u64;
        }
    }
    Ok(total)
}

/// The id of the newest call in a `changes` listing (`call ID ...`).
fn last_call(listing: &str) -> Option<u64> {
    listing.lines().find_map(|line| {
        line.strip_prefix("call ")?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}

/// What detecting commands' changes adds to a `bash` call.
fn commands(ctx: &Ctx<'_>) -> Result<Table> {
    eprintln!("journal: command change detection on a 10,000-file tree ...");
    let mut table =
        Table::new("Undo journal — commands' changes, per `bash` call (10,000-file tree)");
    let scratch = tempfile::tempdir()?;
    let contenders: [(&str, Option<JournalCommands>, bool); 6] = [
        ("no journal, index on", None, true),
        ("no journal, `--no-index`", None, false),
        (
            "`detect`, the index's table",
            Some(JournalCommands::Detect),
            true,
        ),
        (
            "`detect`, a stat walk (`--no-index`)",
            Some(JournalCommands::Detect),
            false,
        ),
        (
            "`baseline`, the index's table",
            Some(JournalCommands::Baseline),
            true,
        ),
        (
            "`baseline`, a stat walk",
            Some(JournalCommands::Baseline),
            false,
        ),
    ];
    let mut all: Vec<(AgentTools, PathBuf)> = Vec::new();
    let mut first = Vec::new();
    for (at, (_, mode, index)) in contenders.iter().enumerate() {
        let root = scratch.path().join(format!("c{at}/root"));
        let state = scratch.path().join(format!("c{at}/state"));
        tree_of(&root, 10_000)?;
        let journal = mode.map(|m| (state.as_path(), JournalDurability::Full, m));
        let tools = tools(&root, journal, *index)?;
        if *index {
            wait_for_index(&tools)?;
        }
        let started = Instant::now();
        call(&tools, "bash", &json!({"command": "true"}))?;
        first.push(started.elapsed());
        all.push((tools, root));
    }
    let mut steps: Vec<Step<'_>> = Vec::new();
    for (tools, _) in &all {
        steps.push(Box::new(move || {
            call(
                tools,
                "bash",
                &json!({"command": "echo x >> d07/f0042.txt"}),
            )
            .map(drop)
        }));
    }
    let stats = interleaved(ctx.pick(15, 4), &mut steps)?;
    drop(steps);
    for (at, (label, _, _)) in contenders.iter().enumerate() {
        let base = if contenders[at].2 {
            &stats[0]
        } else {
            &stats[1]
        };
        table.row(
            format!("{label}: first call / later calls (median / mean)"),
            format!("{} / {}", duration(first[at]), median_mean(&stats[at])),
            if at < 2 {
                "—".to_string()
            } else {
                median_mean(base)
            },
            if at < 2 {
                "—".to_string()
            } else {
                ratio(stats[at].median(), base.median())
            },
        );
    }
    table.note(
        "In-process `bash` calls appending a line to one file, interleaved; each contender has \
         its own copy of the tree (10,000 files of about 700 bytes in 100 folders) and journal. \
         The third column is the matching no-journal figure (index on or off).",
    );
    Ok(table)
}

/// A tree of `files` small files in 100 folders.
fn tree_of(root: &Path, files: usize) -> Result<()> {
    let body: String = (0..20)
        .map(|i| format!("text line {i} of a file\n"))
        .collect();
    for i in 0..files {
        let dir = root.join(format!("d{:02}", i % 100));
        if i < 100 {
            fs::create_dir_all(&dir)?;
        }
        fs::write(dir.join(format!("f{:04}.txt", i / 100)), &body)?;
    }
    Ok(())
}

/// Waits (up to ten minutes) until the tools' index is ready, so the
/// calls use its table.
fn wait_for_index(tools: &AgentTools) -> Result<()> {
    let index = tools.workspace_index().context("the index is on")?;
    if !index.wait_ready(Duration::from_secs(600)) {
        anyhow::bail!("the index did not become ready: {}", index.status());
    }
    Ok(())
}
