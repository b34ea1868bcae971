//! What `--lsp` costs an edit to a file no language server handles: the
//! same `edit_file` with the servers on and off, side by side.

use std::cell::Cell;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use agent_tools::{AgentTools, Config, LspOptions, Surface as _};
use agent_tools_surface_default::DefaultSurface;
use anyhow::{Result, bail};
use serde_json::json;

use super::Ctx;
use crate::measure::{Stats, Step, interleaved};
use crate::report::{Table, duration};

/// The goal: `--lsp` adds less than this to such an edit (median).
const GOAL_MICROS: f64 = 100.0;

/// `edit_file` of a `.txt` file (which no built-in server handles) with
/// `--lsp` (the built-in table) and without, in process, taking turns: the
/// difference is what the servers' hook costs a write they do not concern
/// (a path resolution and a look-up by extension; nothing is started).
pub fn lsp(ctx: &Ctx<'_>) -> Result<Table> {
    eprintln!("lsp ...");
    let mut table = Table::new("Language servers (`--lsp`)");
    let text = "first line\nthe value is one\nlast line\n";
    // All in one folder, editing one file: where a file lies on the disk
    // moves a write's time by more than the hook costs.
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("notes.txt"), text)?;
    let open = |lsp: bool| -> Result<AgentTools> {
        let mut config = Config::builder(dir.path());
        if lsp {
            config = config.lsp(LspOptions::default());
        }
        Ok(agent_tools_surface_default::open(config.build()?)?)
    };
    let on = open(true)?;
    let off = open(false)?;
    // A second server without it: the difference between the two servers
    // without `--lsp` is how far apart two identical set-ups land.
    let same = open(false)?;
    // Each edit turns one word into the other, so every call writes.
    let edit = |tools: &AgentTools, flip: &Cell<bool>| -> Result<()> {
        let (old, new) = if flip.get() {
            ("two", "one")
        } else {
            ("one", "two")
        };
        flip.set(!flip.get());
        let result = tools.call(
            "edit_file",
            json!({"path": "notes.txt", "old_string": old, "new_string": new}),
        );
        if result.is_error {
            bail!("edit_file failed: {}", result.text);
        }
        if result.text.contains("diagnostics") {
            bail!("a server answered for a .txt file: {}", result.text);
        }
        Ok(())
    };
    let flip = Cell::new(false);
    let runs = ctx.pick(3000, 1000);
    let stats = interleaved(
        runs,
        &mut [
            Box::new(|| edit(&on, &flip)) as Step<'_>,
            Box::new(|| edit(&off, &flip)),
            Box::new(|| edit(&same, &flip)),
        ],
    )?;
    let (ours, bare) = (&stats[0], &stats[1]);
    table.timed(
        "`edit_file` of a `.txt` file, in process: with `--lsp` vs without",
        ours,
        bare,
    );
    let micros = |a: &Stats, b: &Stats| (a.median().as_secs_f64() - b.median().as_secs_f64()) * 1e6;
    let difference = micros(ours, bare);
    table.row(
        format!("cost of `--lsp` on an edit no server handles (median difference; goal < {GOAL_MICROS:.0} µs)"),
        format!("{difference:+.1} µs"),
        "—",
        "—",
    );
    table.row(
        "the same between two servers both without `--lsp` (how far apart identical set-ups land)",
        format!("{:+.1} µs", micros(&stats[2], bare)),
        "—",
        "—",
    );
    // The hook alone, which is all `--lsp` adds to such a write: timed in
    // batches, as one call is too short for the clock.
    let config = Config::builder(dir.path())
        .lsp(LspOptions::default())
        .build()?;
    let services = DefaultSurface.open(&config)?;
    let cancel = AtomicBool::new(false);
    let batch = 1000;
    let mut per_call = Vec::new();
    for _ in 0..ctx.pick(200, 50) {
        let started = Instant::now();
        for _ in 0..batch {
            let answer = services.with_diagnostics(String::from("ok"), &["notes.txt"], &cancel);
            if answer != "ok" {
                bail!("a server answered for a .txt file: {answer}");
            }
        }
        per_call.push(started.elapsed() / batch);
    }
    let hook = Stats::of(per_call);
    table.row(
        "the hook alone (`with_diagnostics` of that write: path resolution, look-up by extension)",
        format!("{} / {}", duration(hook.median()), duration(hook.mean())),
        "—",
        "—",
    );
    let hook_ok = hook.median() < Duration::from_secs_f64(GOAL_MICROS / 1e6);
    table.note(format!(
        "{runs} edits of each, interleaved, after one untimed warm-up; each flips a word of a \
         three-line file, so every call writes (atomically, through the engine's writer). \
         With `--lsp` the built-in server table is loaded; no server handles `.txt`, so none \
         is started and nothing is waited for. A write's own time (an atomic write, \
         fsync included) varies far more than the hook costs, so the median difference of whole \
         edits is mostly noise; the hook's own time is the figure that meets or misses the goal.{}",
        if hook_ok { "" } else { " **Goal missed.**" }
    ));
    Ok(table)
}
