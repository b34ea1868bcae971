//! The bash tool against a bare `sh -c` spawn.

use std::fs;
use std::process::{Command, Stdio};

use agent_tools::Config;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::Ctx;
use crate::measure::{Step, interleaved, interleaved_with_setup, settle};
use crate::report::{Table, throughput};

/// Spawn cost of `true`, and throughput of a large output.
pub fn bash(ctx: &Ctx<'_>) -> Result<Table> {
    eprintln!("bash ...");
    let dir = tempfile::tempdir()?;
    let root = dir.path();
    let tools = agent_tools_surface_default::open(Config::builder(root).build()?)?;
    let run_tool = |command: &str| -> Result<Value> {
        let result = tools.call("bash", json!({"command": command}));
        if result.is_error {
            bail!("bash failed: {}", result.text);
        }
        let value: Value = serde_json::from_str(&result.text)?;
        if value.get("exit_code").and_then(Value::as_i64) != Some(0) {
            bail!("{command:?} did not exit 0: {}", result.text);
        }
        Ok(value)
    };
    let sh = |script: &str| -> Result<()> {
        let status = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            bail!("sh -c {script:?}: {status}");
        }
        Ok(())
    };

    let runs = ctx.pick(300, 50);
    let spawn = interleaved(
        runs,
        &mut [
            Box::new(|| run_tool("true").map(drop)) as Step<'_>,
            Box::new(|| sh("true")),
        ],
    )?;
    let (ours, bare) = (&spawn[0], &spawn[1]);

    let bytes: u64 = ctx.pick(200, 50) * 1_000_000;
    let producer = format!("yes abcdefghijklmnopqrstuvwxyz | head -c {bytes}");
    let to_null = format!("{producer} > /dev/null");
    let to_file = format!("{producer} > out.txt");
    let spill_dir = root.join(".agent-tools");
    let big_runs = ctx.pick(5, 2);
    let big = interleaved_with_setup(
        big_runs,
        &mut || {
            if spill_dir.exists() {
                fs::remove_dir_all(&spill_dir)?;
            }
            let out = root.join("out.txt");
            if out.exists() {
                fs::remove_file(out)?;
            }
            settle();
            Ok(())
        },
        &mut [
            Box::new(|| {
                let value = run_tool(&producer)?;
                let spill = value
                    .get("stdout_spill")
                    .and_then(Value::as_str)
                    .context("the output was not spilled")?;
                let len = fs::metadata(root.join(spill))?.len();
                if len != bytes {
                    bail!("the spill file holds {len} bytes, not {bytes}");
                }
                Ok(())
            }) as Step<'_>,
            Box::new(|| sh(&to_null)),
            Box::new(|| {
                Command::new("sh")
                    .arg("-c")
                    .arg(&to_file)
                    .current_dir(root)
                    .stdin(Stdio::null())
                    .status()?;
                Ok(())
            }),
        ],
    )?;
    let (spilled, discarded, filed) = (&big[0], &big[1], &big[2]);

    let mut table = Table::new("bash");
    table.timed(
        "`true`: bash tool (in-process call) vs `sh -c true` spawn",
        ours,
        bare,
    );
    table.row(
        "overhead per call (median difference)",
        format!(
            "+{:.0} µs",
            (ours.median().as_secs_f64() - bare.median().as_secs_f64()) * 1e6
        ),
        "—",
        "—",
    );
    table.timed(
        format!(
            "{} MB of output: bash tool (inline budget, rest spilled to a file) vs `sh -c '… > /dev/null'`",
            bytes / 1_000_000
        ),
        spilled,
        discarded,
    );
    table.row(
        "throughput of the same",
        throughput(bytes, spilled.median()),
        throughput(bytes, discarded.median()),
        "—",
    );
    table.timed(
        format!(
            "{} MB of output: bash tool vs `sh -c '… > FILE'` (redirected to a file)",
            bytes / 1_000_000
        ),
        spilled,
        filed,
    );
    table.note(format!(
        "{runs} runs of `true` and {big_runs} of the large output, each after one untimed \
         warm-up. The producer is `yes … | head -c {bytes}`; ours captures it (the first \
         ~256 KiB inline, all of it in the spill file), theirs throws it away."
    ));
    Ok(table)
}
