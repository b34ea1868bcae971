//! The same 50 changes to a 10 MB file, as a codex patch and as a unified
//! diff, applied by our patch engine: what the codex format's search by
//! content costs over the unified diff's stated line numbers.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::fs;

use agent_tools_patch::{DirStore, MemoryStore, apply_patch};
use anyhow::{Context, Result, bail};

use super::Ctx;
use crate::measure::{Step, interleaved_with_setup, settle};
use crate::report::{Table, count};
use crate::tree::{Rng, code_line};

/// About 10 MB of generated source lines.
const SIZE: usize = 10 * 1024 * 1024;
/// Changes spread through the file, one chunk (hunk) each.
const CHANGES: usize = 50;
/// Lines of context above and below each change, as codex's prompt asks.
const CONTEXT: usize = 3;
/// The file's name inside the scratch folder.
const FILE: &str = "big.rs";

/// The generated file, the changed lines, and both patches.
struct Change {
    before: String,
    after: String,
    lines: usize,
    unified: String,
    codex: String,
}

/// Picks `CHANGES` lines spread evenly through the file (each moved down to
/// a line long enough to be distinctive, so that the codex chunks' first
/// match is the intended one) and appends a marker to each.
fn make_change() -> Result<Change> {
    let mut rng = Rng::new(0xC0DE_C520_2500);
    let mut before = String::with_capacity(SIZE + 200);
    while before.len() < SIZE {
        code_line(&mut rng, &mut before);
    }
    let lines: Vec<&str> = before.lines().collect();
    let n = lines.len();
    let mut targets = Vec::with_capacity(CHANGES);
    for k in 0..CHANGES {
        let mut at = CONTEXT + k * (n - 2 * CONTEXT - 1) / CHANGES + 17;
        while lines[at].len() < 24 {
            at += 1;
        }
        if at + CONTEXT >= n || targets.last().is_some_and(|&prev| at <= prev + 2 * CONTEXT) {
            bail!("change {k} has no room at line {at}");
        }
        targets.push(at);
    }

    let mut after_lines: Vec<String> = lines.iter().map(|l| (*l).to_string()).collect();
    let mut unified = format!("--- a/{FILE}\n+++ b/{FILE}\n");
    let mut codex = format!("*** Begin Patch\n*** Update File: {FILE}\n");
    for (k, &at) in targets.iter().enumerate() {
        let new = format!("{} // changed {k}", lines[at]);
        let above = &lines[at - CONTEXT..at];
        let below = &lines[at + 1..=at + CONTEXT];
        let span = 2 * CONTEXT + 1;
        let start = at - CONTEXT + 1;
        let _ = writeln!(unified, "@@ -{start},{span} +{start},{span} @@");
        codex.push_str("@@\n");
        for text in [&mut unified, &mut codex] {
            for line in above {
                let _ = writeln!(text, " {line}");
            }
            let _ = writeln!(text, "-{}", lines[at]);
            let _ = writeln!(text, "+{new}");
            for line in below {
                let _ = writeln!(text, " {line}");
            }
        }
        after_lines[at] = new;
    }
    codex.push_str("*** End Patch\n");
    let mut after = after_lines.join("\n");
    after.push('\n');
    Ok(Change {
        before,
        after,
        lines: n,
        unified,
        codex,
    })
}

/// Applies both patches to a fresh copy of the file each run, on disk and
/// in memory, interleaved.
pub fn codex_vs_unified(ctx: &Ctx<'_>) -> Result<Table> {
    eprintln!("codex patch vs unified diff on a 10 MB file ...");
    let change = make_change()?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join(FILE);
    let fresh_memory = || {
        let mut store = MemoryStore::new();
        store.insert(FILE, change.before.as_bytes());
        store
    };
    let memory = [RefCell::new(fresh_memory()), RefCell::new(fresh_memory())];
    let mut reset = || -> Result<()> {
        // A new file each time, as the atomic commit replaces it.
        fs::remove_file(&path).ok();
        fs::write(&path, &change.before).context("restoring the file")?;
        for store in &memory {
            *store.borrow_mut() = fresh_memory();
        }
        settle();
        Ok(())
    };
    let on_disk = |text: &str| -> Result<()> {
        apply_patch(text, &mut DirStore::new(dir.path()))
            .map(drop)
            .map_err(|e| anyhow::anyhow!("{e}"))
    };
    let in_memory = |text: &str, store: &RefCell<MemoryStore>| -> Result<()> {
        apply_patch(text, &mut *store.borrow_mut())
            .map(drop)
            .map_err(|e| anyhow::anyhow!("{e}"))
    };

    let mut table = Table::new(format!(
        "apply_patch — codex patch vs unified diff, {CHANGES} changes to a {:.1} MB file ({} lines)",
        change.before.len() as f64 / 1e6,
        count(change.lines)
    ));
    // Both formats must leave exactly the intended bytes, on disk and in memory.
    for (name, text) in [
        ("unified diff", &change.unified),
        ("codex patch", &change.codex),
    ] {
        reset()?;
        on_disk(text)?;
        if fs::read(&path)? != change.after.as_bytes() {
            bail!("the {name} left different bytes on disk");
        }
        in_memory(text, &memory[0])?;
        if memory[0].borrow().get(FILE) != Some(change.after.as_bytes()) {
            bail!("the {name} left different bytes in memory");
        }
    }

    let runs = ctx.pick(15, 3);
    let stats = interleaved_with_setup(
        runs,
        &mut reset,
        &mut [
            Box::new(|| on_disk(&change.codex)) as Step<'_>,
            Box::new(|| on_disk(&change.unified)),
            Box::new(|| in_memory(&change.codex, &memory[0])),
            Box::new(|| in_memory(&change.unified, &memory[1])),
        ],
    )?;
    table.timed(
        "codex patch vs unified diff, parse + apply, `DirStore` (atomic write, fsync)",
        &stats[0],
        &stats[1],
    );
    table.timed(
        "codex patch vs unified diff, parse + apply, `MemoryStore` (engine only)",
        &stats[2],
        &stats[3],
    );
    table.note(format!(
        "Goal: codex within 1.5× the unified diff. {runs} timed runs, interleaved; the file \
         is restored and synced to disk (untimed) before each. Each of the {CHANGES} chunks \
         has {CONTEXT} lines of context above and below; the codex chunks are plain `@@` \
         and are found by content after the previous chunk, the unified hunks at their \
         stated lines. Patches: codex {} KB, unified {} KB. Both leave identical bytes, \
         the intended ones (checked).",
        change.codex.len() / 1000,
        change.unified.len() / 1000,
    ));
    Ok(table)
}
