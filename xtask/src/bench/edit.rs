//! Large files: edit_file / multi_edit against reading and writing the file
//! once, and against `sed -i`.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;
use std::process::Command;

use agent_tools::{AgentTools, Config};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::Ctx;
use crate::measure::{Step, interleaved_with_setup, run_captured, settle};
use crate::report::Table;

pub(super) fn call(tools: &AgentTools, name: &str, args: &Value) -> Result<String> {
    let result = tools.call(name, args.clone());
    if result.is_error {
        bail!("{name} failed: {}", result.text);
    }
    Ok(result.text)
}

/// Writes `data` to `path` as an atomic replace does: a temporary sibling,
/// flushed to disk, renamed over the file, then the folder flushed.
pub(super) fn atomic_write(path: &Path, data: &[u8]) -> Result<()> {
    let parent = path.parent().context("no parent")?;
    let temp = parent.join(".bench-atomic.tmp");
    let mut file = File::create(&temp)?;
    file.write_all(data)?;
    file.sync_all()?;
    drop(file);
    fs::rename(&temp, path)?;
    File::open(parent)?.sync_all()?;
    Ok(())
}

/// edit_file and multi_edit on a 10 MB file.
pub fn edits(ctx: &Ctx<'_>) -> Result<Table> {
    eprintln!("edits on a 10 MB file ...");
    const EDITS: usize = 50;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("big.rs");
    let (content, lines) = crate::tree::numbered_code(10 * 1024 * 1024);
    let tools = agent_tools_surface_default::open(Config::builder(dir.path()).build()?)?;

    let near_end = lines - 10;
    let (old, new) = (
        format!("compute(input, {near_end}) + offset"),
        format!("compute(input, {near_end}) - offset"),
    );
    let edit = json!({"path": "big.rs", "old_string": old, "new_string": new});
    let sed_one = format!("s/{old}/{new}/");
    let steps: Vec<usize> = (0..EDITS).map(|i| (i * (lines - 1)) / EDITS + 7).collect();
    let multi = json!({
        "path": "big.rs",
        "edits": steps.iter().map(|n| json!({
            "old_string": format!("// step {n}\n"),
            "new_string": format!("// step {n} (changed)\n"),
        })).collect::<Vec<_>>(),
    });
    let mut sed_multi: Vec<String> = Vec::new();
    for n in &steps {
        sed_multi.push("-e".into());
        sed_multi.push(format!("s|// step {n}$|// step {n} (changed)|"));
    }
    let sed = |script: &[String]| {
        run_captured(Command::new("sed").arg("-i").args(script).arg(&path), &[0]).map(drop)
    };
    let reset = || -> Result<()> {
        // A fresh file each time, as the atomic writers and sed leave one.
        fs::remove_file(&path).ok();
        fs::write(&path, &content).context("restoring the file")?;
        settle();
        Ok(())
    };

    // Check that ours and sed leave the same bytes.
    let mut table = Table::new(format!(
        "edit_file / multi_edit — {:.1} MB file, {} lines",
        content.len() as f64 / 1e6,
        crate::report::count(lines)
    ));
    let sed_one_args = [sed_one.clone()];
    let mut same = true;
    for (name, args, script) in [
        ("edit_file", &edit, &sed_one_args[..]),
        ("multi_edit", &multi, &sed_multi[..]),
    ] {
        reset()?;
        call(&tools, name, args)?;
        let ours = fs::read(&path)?;
        reset()?;
        sed(script)?;
        if fs::read(&path)? != ours || ours == content.as_bytes() {
            same = false;
            table.note(format!(
                "**warning:** {name} and `sed -i` leave different files"
            ));
        }
    }

    let runs = ctx.pick(15, 3);
    let stats = interleaved_with_setup(
        runs,
        &mut || reset(),
        &mut [
            Box::new(|| call(&tools, "edit_file", &edit).map(drop)) as Step<'_>,
            Box::new(|| call(&tools, "multi_edit", &multi).map(drop)),
            Box::new(|| {
                let text = fs::read(&path)?;
                fs::write(&path, text)?;
                Ok(())
            }),
            Box::new(|| {
                let text = fs::read(&path)?;
                atomic_write(&path, &text)
            }),
            Box::new(|| sed(&sed_one_args)),
            Box::new(|| sed(&sed_multi)),
        ],
    )?;
    let (one, many, plain, atomic, sed1, sed50) = (
        &stats[0], &stats[1], &stats[2], &stats[3], &stats[4], &stats[5],
    );
    table.timed(
        "edit_file, 1 replacement near the end vs read + write once (`std::fs`)",
        one,
        plain,
    );
    table.timed(
        "edit_file vs read + atomic write (fsync, rename, fsync dir)",
        one,
        atomic,
    );
    table.timed("edit_file vs `sed -i 's/…/…/'`", one, sed1);
    table.timed(
        "multi_edit, 50 replacements vs read + write once (`std::fs`)",
        many,
        plain,
    );
    table.timed("multi_edit vs read + atomic write", many, atomic);
    table.timed("multi_edit vs `sed -i -e … ×50`", many, sed50);
    table.note(format!(
        "{runs} timed runs; the file is restored and synced to disk (untimed) before each. Our edits write \
         atomically and flush to disk (temporary file, fsync, rename, fsync of the folder); \
         `sed -i` renames a temporary file but does not fsync.{}",
        if same {
            " Ours and sed leave identical bytes (checked)."
        } else {
            ""
        }
    ));
    Ok(table)
}
