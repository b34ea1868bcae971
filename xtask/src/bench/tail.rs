//! read_file's tail of a large log against `tail -n 50`: the first call
//! (which counts every newline once, for real line numbers) and a repeated
//! call after the log grew (which counts only the appended bytes).

use std::cell::{Cell, RefCell};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::process::Command;
use std::time::Instant;

use agent_tools::{AgentTools, Config};
use anyhow::Result;
use serde_json::json;

use super::Ctx;
use super::edit::call;
use crate::measure::{Stats, run_captured};
use crate::report::Table;

/// Lines shown, as `tail -n 50`.
const LINES: i64 = 50;

/// Bytes appended to the log before each repeated call.
const APPEND: usize = 1_000_000;

/// The lines of a read_file result without their numbers, and the numbers.
fn strip_numbers(text: &str) -> (Vec<&str>, Vec<u64>) {
    text.lines()
        .filter_map(|line| {
            let (number, rest) = line.split_once('\t')?;
            Some((rest, number.trim().parse::<u64>().ok()?))
        })
        .unzip()
}

/// About [`APPEND`] bytes of log lines, numbered on from `first`.
fn appended_lines(first: u64) -> (Vec<u8>, u64) {
    let mut out = Vec::with_capacity(APPEND + 100);
    let mut line = first;
    while out.len() < APPEND {
        out.extend_from_slice(
            format!(
                "{line:>9} appended entry status=200 took={}ms\n",
                line % 977
            )
            .as_bytes(),
        );
        line += 1;
    }
    (out, line - first)
}

/// read_file offset=-50 of a 200 MB log, `max_file_bytes` above its size.
pub fn tail(ctx: &Ctx<'_>) -> Result<Table> {
    let megabytes: u64 = ctx.pick(200, 20);
    eprintln!("tail of a {megabytes} MB log ...");
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("big.log");
    let lines = Cell::new(crate::tree::large_file(&path, megabytes * 1_000_000)?);
    let size = fs::metadata(&path)?.len();
    // Above the file's size (and all it grows by): the file could be read
    // whole, but a tail is still read from the end.
    let max_file_bytes = size * 2;
    let config = || {
        Config::builder(dir.path())
            .max_file_bytes(max_file_bytes)
            .build()
    };
    let args = json!({"path": "big.log", "offset": -LINES});
    let exe = ctx.exe()?.clone();
    let ours_cli = || {
        run_captured(
            Command::new(&exe)
                .args(["call", "--root"])
                .arg(dir.path())
                .args(["--max-file-bytes", &max_file_bytes.to_string(), "read_file"])
                .arg(args.to_string()),
            &[0],
        )
    };
    let tail = || run_captured(Command::new("tail").args(["-n", "50"]).arg(&path), &[0]);
    let wc = || run_captured(Command::new("wc").arg("-l").arg(&path), &[0]);
    let append = || -> Result<()> {
        let (bytes, count) = appended_lines(lines.get());
        OpenOptions::new()
            .append(true)
            .open(&path)?
            .write_all(&bytes)?;
        lines.set(lines.get() + count);
        Ok(())
    };

    // The long-lived server: it indexed the log once, here.
    let kept = agent_tools_surface_default::open(config()?)?;
    let mut table = Table::new(format!(
        "read_file tail — last 50 lines of a {:.0} MB log, max_file_bytes above its size",
        size as f64 / 1e6
    ));
    // Check: the same 50 lines as `tail -n 50`, numbered up to the last line,
    // first from a cold start, then after an append from the kept index.
    let theirs = String::from_utf8_lossy(&tail()?.stdout).into_owned();
    let first = call(
        &agent_tools_surface_default::open(config()?)?,
        "read_file",
        &args,
    )?;
    let kept_first = call(&kept, "read_file", &args)?;
    let cli = String::from_utf8_lossy(&ours_cli()?.stdout).into_owned();
    let lines_first = lines.get();
    append()?;
    let theirs_after = String::from_utf8_lossy(&tail()?.stdout).into_owned();
    let after = call(&kept, "read_file", &args)?;
    for (what, ours, theirs, last) in [
        ("first call", &first, &theirs, lines_first),
        (
            "kept server's first call",
            &kept_first,
            &theirs,
            lines_first,
        ),
        ("call after an append", &after, &theirs_after, lines.get()),
    ] {
        let (text, numbers) = strip_numbers(ours);
        if text != theirs.lines().collect::<Vec<_>>() || numbers.last() != Some(&last) {
            table.note(format!(
                "**warning:** read_file's {what} differs from `tail -n 50`'s"
            ));
        }
    }
    if cli.trim_end() != first.trim_end() {
        table.note("**warning:** the CLI's tail differs from the in-process call's");
    }

    // Five contenders, timed round-robin in a rotating order; the log grows
    // by 1 MB (untimed) right before each repeated call, and the first call
    // gets a new server (untimed) with nothing cached.
    let runs = ctx.pick(11, 5);
    let fresh = RefCell::new(None::<AgentTools>);
    let contenders = 5;
    let mut samples: Vec<Vec<_>> = (0..contenders).map(|_| Vec::with_capacity(runs)).collect();
    for round in 0..=runs {
        for step in (0..contenders).map(|i| (round + i) % contenders) {
            match step {
                0 => *fresh.borrow_mut() = Some(agent_tools_surface_default::open(config()?)?),
                1 => append()?,
                _ => {}
            }
            let started = Instant::now();
            match step {
                0 => {
                    let tools = fresh.borrow();
                    if let Some(tools) = tools.as_ref() {
                        call(tools, "read_file", &args)?;
                    }
                }
                1 => drop(call(&kept, "read_file", &args)?),
                2 => drop(ours_cli()?),
                3 => drop(tail()?),
                _ => drop(wc()?),
            }
            // Round 0 warms up, untimed.
            if round > 0 {
                samples[step].push(started.elapsed());
            }
        }
    }
    let stats: Vec<Stats> = samples.into_iter().map(Stats::of).collect();
    table.timed(
        "first call, in-process (counts the whole log) vs `tail -n 50`",
        &stats[0],
        &stats[3],
    );
    table.timed(
        "first call, in-process vs one pass `wc -l`",
        &stats[0],
        &stats[4],
    );
    table.timed(
        "CLI (a new process: always a first call) vs `tail -n 50`",
        &stats[2],
        &stats[3],
    );
    table.timed(
        "repeated call after appending 1 MB vs `tail -n 50`",
        &stats[1],
        &stats[3],
    );
    table.note(format!(
        "{runs} timed runs each, interleaved. max_file_bytes is {} MB, above the log's size, so \
         the file could be read whole; a negative offset still reads it from the end in blocks. \
         Real line numbers need the newlines before the tail counted: a first call counts the \
         whole log once, at memory speed (compare `wc -l`, one pass); the server keeps \
         checkpoints of the count, so a repeated call after the log grew by 1 MB counts only \
         that 1 MB. The CLI starts cold every time. `tail` only seeks to the end.",
        max_file_bytes / 1_000_000
    ));
    Ok(table)
}
