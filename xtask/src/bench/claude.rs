//! The Claude Code surface: Read of a window in the middle of a large file
//! (two sizes, to show the time does not grow with the file once its
//! newline index is kept), and Edit of a 10 MB file against reading it and
//! writing it back atomically.

use std::fs;
use std::process::Command;

use agent_tools::{AgentTools, CallContext, Config, Session};
use agent_tools_surface_claude_code::{ClaudeCodeSession, ClaudeCodeSurface};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::Ctx;
use super::edit::atomic_write;
use crate::measure::{Stats, Step, interleaved, interleaved_with_setup, run_captured, settle};
use crate::report::Table;

/// Lines read from the middle of the file.
const WINDOW: u64 = 100;

fn surface(root: &std::path::Path, max_file_bytes: u64) -> Result<AgentTools> {
    let config = Config::builder(root)
        .max_file_bytes(max_file_bytes)
        .build()?;
    Ok(AgentTools::with_surface(config, ClaudeCodeSurface)?)
}

fn call(tools: &AgentTools, session: &CallContext, name: &str, args: &Value) -> Result<String> {
    let outcome = tools.dispatch(name, args.clone(), session);
    if outcome.is_error() {
        bail!("{name} failed: {}", outcome.text());
    }
    Ok(outcome.text().into_owned())
}

fn session() -> CallContext {
    CallContext::in_session(Session::new(ClaudeCodeSession::new()))
}

/// Read offset/limit of a window in the middle, at two sizes.
pub fn read_window(ctx: &Ctx<'_>) -> Result<Table> {
    let sizes: [u64; 2] = ctx.pick([100, 1000], [10, 100]);
    let mut table = Table::new(format!(
        "Claude Code Read — {WINDOW} lines from the middle of a {} MB and a {} MB file",
        sizes[0], sizes[1]
    ));
    let runs = ctx.pick(15, 5);
    let mut kept_stats: Vec<Stats> = Vec::new();
    for megabytes in sizes {
        eprintln!("Read window of a {megabytes} MB file ...");
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("big.log");
        let lines = crate::tree::large_file(&path, megabytes * 1_000_000)?;
        // The server trusts a kept newline index only for a file that had
        // not changed for a few seconds when it was counted (a rewrite
        // within one tick of the clock cannot be told apart): let it age.
        std::thread::sleep(std::time::Duration::from_secs(4));
        let middle = lines / 2;
        let args = json!({
            "file_path": path.to_string_lossy(),
            "offset": middle,
            "limit": WINDOW,
        });
        // A file far over max_file_bytes: Read streams it whatever its size.
        let kept = surface(dir.path(), 1 << 20)?;
        let kept_session = session();
        let range = format!("{middle},{}p;{}q", middle + WINDOW - 1, middle + WINDOW - 1);
        let sed = || run_captured(Command::new("sed").args(["-n", &range]).arg(&path), &[0]);
        // Check: the same lines as sed prints, numbered from the middle.
        let ours = call(&kept, &kept_session, "Read", &args)?;
        let theirs = String::from_utf8_lossy(&sed()?.stdout).into_owned();
        let stripped: Vec<&str> = ours
            .lines()
            .filter_map(|line| line.split_once('\u{2192}').map(|(_, text)| text))
            .collect();
        let first_number = ours
            .lines()
            .next()
            .and_then(|line| line.split_once('\u{2192}'))
            .and_then(|(n, _)| n.trim().parse::<u64>().ok());
        if stripped != theirs.lines().collect::<Vec<_>>() || first_number != Some(middle) {
            table.note(format!(
                "**warning:** Read's window of the {megabytes} MB file differs from `sed -n`'s"
            ));
        }
        settle();
        let stats = interleaved(
            runs,
            &mut [
                Box::new(|| call(&kept, &kept_session, "Read", &args).map(drop)) as Step<'_>,
                Box::new(|| {
                    // A new server: the newline index is counted first.
                    let fresh = surface(dir.path(), 1 << 20)?;
                    call(&fresh, &session(), "Read", &args).map(drop)
                }),
                Box::new(|| sed().map(drop)),
            ],
        )?;
        table.timed(
            format!("{megabytes} MB, kept server (index cached) vs `sed -n` of the same lines"),
            &stats[0],
            &stats[2],
        );
        table.timed(
            format!("{megabytes} MB, new server (counts the newlines once) vs `sed -n`"),
            &stats[1],
            &stats[2],
        );
        kept_stats.push(stats.into_iter().next().context("no stats")?);
        drop(kept);
        fs::remove_file(&path).ok();
    }
    if let [small, large] = &kept_stats[..] {
        table.timed(
            format!(
                "kept server: {} MB vs {} MB (size independence)",
                sizes[1], sizes[0]
            ),
            large,
            small,
        );
    }
    table.note(format!(
        "{runs} timed runs each, interleaved. The window starts at the middle line; the files \
         are far over max_file_bytes (1 MB here), which a window read ignores. A first Read \
         counts the file's newlines once at memory speed (a new server each time); the server \
         keeps checkpoints, so later windows seek near the line and read only it (each file \
         is left to age 4 s after it is written: an index counted sooner after a change is not \
         kept as it is). `sed -n` scans from the start to the window and stops after it."
    ));
    Ok(table)
}

/// Edit of a 10 MB file vs a read and an atomic write of it.
pub fn edit(ctx: &Ctx<'_>) -> Result<Table> {
    eprintln!("Claude Code Edit of a 10 MB file ...");
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("big.rs");
    let (content, lines) = crate::tree::numbered_code(10 * 1024 * 1024);
    let near_end = lines - 10;
    let tools = surface(dir.path(), 64 * 1024 * 1024)?;
    let context = session();
    let file_path = path.to_string_lossy().into_owned();
    let edit = json!({
        "file_path": file_path,
        "old_string": format!("compute(input, {near_end}) + offset"),
        "new_string": format!("compute(input, {near_end}) - offset"),
    });
    let read = json!({"file_path": file_path, "limit": 1});
    let reset = || -> Result<()> {
        fs::remove_file(&path).ok();
        fs::write(&path, &content).context("restoring the file")?;
        // The Read the Edit needs, untimed.
        call(&tools, &context, "Read", &read)?;
        settle();
        Ok(())
    };
    let mut table = Table::new(format!(
        "Claude Code Edit — {:.1} MB file, {} lines",
        content.len() as f64 / 1e6,
        crate::report::count(lines)
    ));
    reset()?;
    call(&tools, &context, "Edit", &edit)?;
    let edited = fs::read_to_string(&path)?;
    if edited == content || edited.len() != content.len() {
        table.note("**warning:** the Edit did not change the one line");
    }
    let runs = ctx.pick(15, 3);
    let stats = interleaved_with_setup(
        runs,
        &mut || reset(),
        &mut [
            Box::new(|| call(&tools, &context, "Edit", &edit).map(drop)) as Step<'_>,
            Box::new(|| {
                let text = fs::read(&path)?;
                atomic_write(&path, &text)
            }),
        ],
    )?;
    table.timed(
        "Edit (session check, locked read, digest, replace, atomic write) vs read + atomic write",
        &stats[0],
        &stats[1],
    );
    table.note(format!(
        "{runs} timed runs each, interleaved; before each run the file is rewritten and Read \
         (untimed), so the Edit passes its read-before-write check. The Edit reads the file \
         under its locks, checks the session's record, replaces one line near the end, writes \
         a temporary file flushed to disk and renames it over, and records the new digest."
    ));
    Ok(table)
}
