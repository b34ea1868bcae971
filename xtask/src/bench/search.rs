//! grep and glob over the generated tree, against ripgrep.

use std::path::Path;
use std::process::Command;

use agent_tools::{AgentTools, Config};
use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::{Ctx, check_same, result_set};
use crate::measure::{Stats, Step, interleaved, run_captured};
use crate::report::{Table, count};
use crate::tree::{self, Tree};

/// Output cap for the search tools here: large enough that no result is
/// cut, so the result sets can be compared with ripgrep's.
const OUTPUT_CAP: u64 = 16 * 1024 * 1024;

fn tools(root: &Path) -> Result<AgentTools> {
    Ok(agent_tools_surface_default::open(
        Config::builder(root).max_output_bytes(OUTPUT_CAP).build()?,
    )?)
}

/// One in-process call that must succeed; returns its text.
fn call(tools: &AgentTools, name: &str, args: &Value) -> Result<String> {
    let result = tools.call(name, args.clone());
    if result.is_error {
        bail!("{name} failed: {}", result.text);
    }
    Ok(result.text)
}

/// `agent-tools call --root ROOT TOOL ARGS` as a process; returns stdout.
fn cli(exe: &Path, root: &Path, name: &str, args: &Value) -> Result<String> {
    let output = run_captured(
        Command::new(exe)
            .args(["call", "--root"])
            .arg(root)
            .args(["--max-output-bytes", &OUTPUT_CAP.to_string(), name])
            .arg(args.to_string()),
        &[0],
    )?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `rg ARGS` in `root`; exit 1 (nothing found) is fine.
fn rg(root: &Path, git: bool, args: &[&str]) -> Result<String> {
    let mut cmd = Command::new("rg");
    cmd.arg("--no-config").current_dir(root);
    if !git {
        // Outside a repository rg ignores .gitignore unless told otherwise.
        cmd.arg("--no-require-git");
    }
    let output = run_captured(cmd.args(args), &[0, 1])?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Times the same search four ways, interleaved: in process, through our
/// CLI, `rg` sorted by path and `rg` unsorted.
#[allow(clippy::too_many_arguments)]
fn four_ways(
    runs: usize,
    tools: &AgentTools,
    exe: &Path,
    root: &Path,
    git: bool,
    tool: &str,
    args: &Value,
    sorted: &[&str],
    parallel: &[&str],
) -> Result<[Stats; 4]> {
    let stats = interleaved(
        runs,
        &mut [
            Box::new(|| call(tools, tool, args).map(drop)) as Step<'_>,
            Box::new(|| cli(exe, root, tool, args).map(drop)),
            Box::new(|| rg(root, git, sorted).map(drop)),
            Box::new(|| rg(root, git, parallel).map(drop)),
        ],
    )?;
    stats
        .try_into()
        .map_err(|_| anyhow::anyhow!("four contenders gave another number of timings"))
}

fn searched(tree: &Tree) -> String {
    format!(
        "{} files, {} of them in a .gitignored subtree; {:.0} MB",
        count(tree.files),
        count(tree.ignored),
        tree.bytes as f64 / 1e6
    )
}

/// grep: files and content modes, a literal and a regex.
pub fn grep(ctx: &Ctx<'_>, tree: &Tree) -> Result<Vec<Table>> {
    let root = tree.dir.path();
    let tools = tools(root)?;
    let exe = ctx.exe()?.clone();
    let runs = ctx.pick(20, 5);
    let mut table = Table::new(format!("grep — {}", searched(tree)));
    let mut all_same = true;
    let variants = [
        (
            "files",
            "literal",
            tree::LITERAL,
            "files_with_matches",
            "-l",
        ),
        ("files", "regex", tree::REGEX, "files_with_matches", "-l"),
        ("content", "literal", tree::LITERAL, "content", "-n"),
        ("content", "regex", tree::REGEX, "content", "-n"),
    ];
    for (mode, kind, pattern, output_mode, flag) in variants {
        eprintln!("grep {mode} {kind} ...");
        let args = json!({"pattern": pattern, "output_mode": output_mode});
        let sorted = [flag, "--no-heading", "--sort", "path", "-e", pattern];
        let parallel = [flag, "--no-heading", "-e", pattern];

        let ours = call(&tools, "grep", &args)?;
        let ours_cli = cli(&exe, root, "grep", &args)?;
        check_same(
            &mut table,
            &format!("{mode} {kind}, CLI"),
            &ours_cli,
            &ours,
            "in-process",
        );
        if mode == "files" {
            let expected = if kind == "literal" {
                tree.literal_files
            } else {
                tree.regex_files
            };
            let got = result_set(&ours).len();
            if got != expected {
                all_same = false;
                table.note(format!(
                    "**warning:** {mode} {kind}: {got} files found, {expected} generated"
                ));
            }
        }
        let label = format!("{mode}, {kind}: {} results", result_set(&ours).len());
        if !ctx.rg {
            let stats = interleaved(
                runs,
                &mut [Box::new(|| call(&tools, "grep", &args).map(drop)) as Step<'_>],
            )?;
            table.row(
                format!("{label}, in-process"),
                crate::report::median_mean(&stats[0]),
                "rg not found",
                "—",
            );
            continue;
        }
        check_same(
            &mut table,
            &label,
            &ours,
            &rg(root, tree.git, &sorted)?,
            "rg",
        );
        check_same(
            &mut table,
            &label,
            &ours,
            &rg(root, tree.git, &parallel)?,
            "rg (unsorted)",
        );

        let [ref inproc, ref cli_s, ref rg_sorted, ref rg_par] = four_ways(
            runs, &tools, &exe, root, tree.git, "grep", &args, &sorted, &parallel,
        )?;
        table.timed(
            format!("{label} — in-process vs `rg {flag} --sort path`"),
            inproc,
            rg_sorted,
        );
        table.timed(
            format!("{label} — CLI vs `rg {flag} --sort path`"),
            cli_s,
            rg_sorted,
        );
        table.timed(
            format!("{label} — CLI vs `rg {flag}` (parallel, unsorted)"),
            cli_s,
            rg_par,
        );
    }
    table.note(format!(
        "Patterns: literal `{}`, regex `{}`. {runs} timed runs each. Our output is sorted by \
         path, so `rg --sort path` (single-threaded) is the like-for-like figure; plain `rg` \
         is its parallel fast path with unordered output.{}",
        tree::LITERAL,
        tree::REGEX,
        if !ctx.rg {
            ""
        } else if all_same {
            " Every result set equals rg's and the generated counts (checked)."
        } else {
            " Some result sets differ: see the warnings."
        }
    ));
    if ctx.rg && !tree.git {
        table.note("git not found: the tree is not a repository, so rg ran with --no-require-git.");
    }
    Ok(vec![table])
}

/// glob `**/*.rs`, newest first, against `rg --files --sortr=modified`.
pub fn glob(ctx: &Ctx<'_>, tree: &Tree) -> Result<Table> {
    eprintln!("glob ...");
    let root = tree.dir.path();
    let tools = tools(root)?;
    let exe = ctx.exe()?.clone();
    let runs = ctx.pick(20, 5);
    let mut table = Table::new(format!("glob `{}` — {}", tree::GLOB, searched(tree)));
    let args = json!({"pattern": tree::GLOB});
    let ours = call(&tools, "glob", &args)?;
    let ours_cli = cli(&exe, root, "glob", &args)?;
    check_same(&mut table, "glob, CLI", &ours_cli, &ours, "in-process");
    let label = format!("{} files", count(result_set(&ours).len()));
    let sorted = ["--files", "--sortr=modified", "-g", tree::GLOB];
    let parallel = ["--files", "-g", tree::GLOB];
    if !ctx.rg {
        let stats = interleaved(
            runs,
            &mut [Box::new(|| call(&tools, "glob", &args).map(drop)) as Step<'_>],
        )?;
        table.row(
            format!("{label}, in-process"),
            crate::report::median_mean(&stats[0]),
            "rg not found",
            "—",
        );
        return Ok(table);
    }
    let theirs = rg(root, tree.git, &sorted)?;
    let same = check_same(&mut table, "glob", &ours, &theirs, "rg");
    let order = if ours.lines().eq(theirs.lines()) {
        "in the same order"
    } else {
        // rg sorts the entries of each folder as it walks (a folder by its
        // own mtime), not the whole list.
        "in another order: ours is newest first over the whole tree, while rg sorts the \
         entries within each folder (a folder by its own mtime)"
    };
    if same {
        table.note(format!("Same files as rg (checked), {order}."));
    }
    let [ref inproc, ref cli_s, ref rg_sorted, ref rg_par] = four_ways(
        runs, &tools, &exe, root, tree.git, "glob", &args, &sorted, &parallel,
    )?;
    table.timed(
        format!("{label} — in-process vs `rg --files --sortr=modified -g`"),
        inproc,
        rg_sorted,
    );
    table.timed(
        format!("{label} — CLI vs `rg --files --sortr=modified -g`"),
        cli_s,
        rg_sorted,
    );
    table.timed(
        format!("{label} — CLI vs `rg --files -g` (parallel, unsorted)"),
        cli_s,
        rg_par,
    );
    table.note(format!("{runs} timed runs each."));
    Ok(table)
}
