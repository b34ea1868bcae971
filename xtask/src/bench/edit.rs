//! Large files: read_file's tail against `tail`, and edit_file / multi_edit
//! against reading and writing the file once, and against `sed -i`.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;
use std::process::Command;

use agent_tools::{AgentTools, Config};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::Ctx;
use crate::measure::{Step, interleaved, interleaved_with_setup, run_captured, settle};
use crate::report::Table;

fn call(tools: &AgentTools, name: &str, args: &Value) -> Result<String> {
    let result = tools.call(name, args.clone());
    if result.is_error {
        bail!("{name} failed: {}", result.text);
    }
    Ok(result.text)
}

/// The lines of a read_file result without their numbers, and the numbers.
fn strip_numbers(text: &str) -> (Vec<&str>, Vec<u64>) {
    text.lines()
        .filter_map(|line| {
            let (number, rest) = line.split_once('\t')?;
            Some((rest, number.trim().parse::<u64>().ok()?))
        })
        .unzip()
}

/// read_file offset=-100 on a large file vs `tail -n 100`.
pub fn tail(ctx: &Ctx<'_>) -> Result<Table> {
    let megabytes: u64 = ctx.pick(200, 20);
    eprintln!("tail of a {megabytes} MB file ...");
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("big.log");
    let lines = crate::tree::large_file(&path, megabytes * 1_000_000)?;
    let size = fs::metadata(&path)?.len();
    // Below the file's size, so read_file takes its tail path.
    let max_file_bytes = (8u64 << 20).min(size / 2);
    let tools = AgentTools::new(
        Config::builder(dir.path())
            .max_file_bytes(max_file_bytes)
            .build()?,
    )?;
    let args = json!({"path": "big.log", "offset": -100});
    let exe = ctx.exe()?.clone();
    let ours_cli = |out: &mut Option<String>| -> Result<()> {
        let output = run_captured(
            Command::new(&exe)
                .args(["call", "--root"])
                .arg(dir.path())
                .args(["--max-file-bytes", &max_file_bytes.to_string(), "read_file"])
                .arg(args.to_string()),
            &[0],
        )?;
        *out = Some(String::from_utf8_lossy(&output.stdout).into_owned());
        Ok(())
    };
    let tail = || run_captured(Command::new("tail").args(["-n", "100"]).arg(&path), &[0]);

    // Check: the same 100 lines, numbered up to the file's last line.
    let ours = call(&tools, "read_file", &args)?;
    let mut cli_text = None;
    ours_cli(&mut cli_text)?;
    let theirs = String::from_utf8_lossy(&tail()?.stdout).into_owned();
    let (text, numbers) = strip_numbers(&ours);
    let mut table = Table::new(format!(
        "read_file tail — last 100 lines of a {:.0} MB, {}-line file",
        size as f64 / 1e6,
        crate::report::count(lines as usize)
    ));
    if text != theirs.lines().collect::<Vec<_>>() || numbers.last() != Some(&lines) {
        table.note("**warning:** read_file's tail differs from `tail -n 100`'s");
    }
    if cli_text.as_deref() != Some(ours.as_str()) {
        table.note("**warning:** the CLI's tail differs from the in-process call's");
    }

    let runs = ctx.pick(10, 5);
    let mut sink = None;
    let stats = interleaved(
        runs,
        &mut [
            Box::new(|| call(&tools, "read_file", &args).map(drop)) as Step<'_>,
            Box::new(|| ours_cli(&mut sink)),
            Box::new(|| tail().map(drop)),
        ],
    )?;
    table.timed(
        "in-process read_file offset=-100 vs `tail -n 100`",
        &stats[0],
        &stats[2],
    );
    table.timed(
        "CLI read_file offset=-100 vs `tail -n 100`",
        &stats[1],
        &stats[2],
    );
    table.note(format!(
        "{runs} timed runs. max_file_bytes is {} MiB, so read_file reads the tail in blocks from \
         the end; to print real line numbers it then counts the newlines before the tail, which \
         streams the whole file. `tail` only seeks to the end.",
        max_file_bytes >> 20
    ));
    Ok(table)
}

/// Writes `data` to `path` as an atomic replace does: a temporary sibling,
/// flushed to disk, renamed over the file, then the folder flushed.
fn atomic_write(path: &Path, data: &[u8]) -> Result<()> {
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
    const SIZE: usize = 10 * 1024 * 1024;
    const EDITS: usize = 50;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("big.rs");
    let mut content = String::with_capacity(SIZE + 100);
    let mut lines = 0usize;
    while content.len() < SIZE {
        content.push_str(&format!(
            "    let value_{lines} = compute(input, {lines}) + offset; // step {lines}\n"
        ));
        lines += 1;
    }
    let tools = AgentTools::new(Config::builder(dir.path()).build()?)?;

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
