//! The filesystem surface's `grep_files` (an ECMAScript regex on regress,
//! driven by ripgrep's searcher) over the generated tree, against `rg`.

use std::path::Path;
use std::process::Command;

use agent_tools::{AgentTools, Config};
use agent_tools_surface_filesystem::FilesystemSurface;
use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::{Ctx, check_same, result_set};
use crate::measure::{Step, interleaved, run_captured};
use crate::report::Table;
use crate::tree::{self, Tree};

/// Large enough that no result is cut, so the sets compare with rg's.
const OUTPUT_CAP: u64 = 16 * 1024 * 1024;

fn call(tools: &AgentTools, args: &Value) -> Result<String> {
    let result = tools.call("grep_files", args.clone());
    if result.is_error {
        bail!("grep_files failed: {}", result.text);
    }
    Ok(result.text)
}

/// `rg -uu` (every file, hidden and ignored ones too, as grep_files
/// searches them) over `root`, absolute paths like ours.
fn rg(root: &Path, args: &[&str]) -> Result<String> {
    let output = run_captured(
        Command::new("rg")
            .args(["--no-config", "-uu", "--no-heading", "-n"])
            .args(args)
            .arg(root),
        &[0, 1],
    )?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// grep_files with patterns both dialects read alike, in process, against
/// rg sorted by path and rg unsorted.
pub fn grep_files(ctx: &Ctx<'_>, tree: &Tree) -> Result<Table> {
    let root = tree.dir.path();
    let tools = AgentTools::with_surface(
        Config::builder(root).max_output_bytes(OUTPUT_CAP).build()?,
        FilesystemSurface,
    )?;
    let runs = ctx.pick(20, 5);
    let mut table = Table::new("grep_files (filesystem surface, ECMAScript) — same tree");
    let shown_root = root.to_string_lossy().into_owned();
    for (kind, pattern) in [("literal", tree::LITERAL), ("regex", tree::REGEX)] {
        eprintln!("grep_files {kind} ...");
        let args = json!({"regex": pattern, "directory": &shown_root, "maxResults": 10000});
        let ours = call(&tools, &args)?;
        let label = format!("{kind}: {} lines", result_set(&ours).len());
        if !ctx.rg {
            let stats = interleaved(
                runs,
                &mut [Box::new(|| call(&tools, &args).map(drop)) as Step<'_>],
            )?;
            table.row(
                format!("{label}, in-process"),
                crate::report::median_mean(&stats[0]),
                "rg not found",
                "—",
            );
            continue;
        }
        let sorted = ["--sort", "path", "-e", pattern];
        let parallel = ["-e", pattern];
        check_same(&mut table, &label, &ours, &rg(root, &sorted)?, "rg -uu");
        let stats = interleaved(
            runs,
            &mut [
                Box::new(|| call(&tools, &args).map(drop)) as Step<'_>,
                Box::new(|| rg(root, &sorted).map(drop)),
                Box::new(|| rg(root, &parallel).map(drop)),
            ],
        )?;
        table.timed(
            format!("{label} — in-process vs `rg -uu -n --sort path`"),
            &stats[0],
            &stats[1],
        );
        table.timed(
            format!("{label} — in-process vs `rg -uu -n` (parallel, unsorted)"),
            &stats[0],
            &stats[2],
        );
    }
    table.note(format!(
        "Patterns: literal `{}`, regex `{}` (both dialects read them alike; grep_files \
         matches with regress, a literal prefilter taken from the pattern skipping lines \
         first). grep_files searches every file (no ignore files), so rg runs with `-uu`. \
         {runs} timed runs each.",
        tree::LITERAL,
        tree::REGEX,
    ));
    Ok(table)
}
