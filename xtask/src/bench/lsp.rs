//! What `--lsp` costs an edit to a file no language server handles: the
//! same `edit_file` with the servers on and off, side by side.

use std::cell::Cell;

use agent_tools::{AgentTools, Config, LspOptions};
use anyhow::{Result, bail};
use serde_json::json;

use super::Ctx;
use crate::measure::{Step, interleaved};
use crate::report::Table;

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
    let open = |lsp: bool| -> Result<(tempfile::TempDir, AgentTools)> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("notes.txt"), text)?;
        let mut config = Config::builder(dir.path());
        if lsp {
            config = config.lsp(LspOptions::default());
        }
        let tools = agent_tools_surface_default::open(config.build()?)?;
        Ok((dir, tools))
    };
    let (_on_dir, on) = open(true)?;
    let (_off_dir, off) = open(false)?;
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
    let (on_flip, off_flip) = (Cell::new(false), Cell::new(false));
    let runs = ctx.pick(3000, 1000);
    let stats = interleaved(
        runs,
        &mut [
            Box::new(|| edit(&on, &on_flip)) as Step<'_>,
            Box::new(|| edit(&off, &off_flip)),
        ],
    )?;
    let (ours, bare) = (&stats[0], &stats[1]);
    table.timed(
        "`edit_file` of a `.txt` file, in process: with `--lsp` vs without",
        ours,
        bare,
    );
    let difference = (ours.median().as_secs_f64() - bare.median().as_secs_f64()) * 1e6;
    table.row(
        format!("cost of `--lsp` on an edit no server handles (median difference; goal < {GOAL_MICROS:.0} µs)"),
        format!("{difference:+.1} µs"),
        "—",
        "—",
    );
    table.note(format!(
        "{runs} edits of each, interleaved, after one untimed warm-up; each flips a word of a \
         three-line file, so every call writes (atomically, through the engine's writer). \
         With `--lsp` the built-in server table is loaded; no server handles `.txt`, so none \
         is started and nothing is waited for.{}",
        if difference < GOAL_MICROS {
            ""
        } else {
            " **Goal missed.**"
        }
    ));
    Ok(table)
}
