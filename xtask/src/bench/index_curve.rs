//! The index's curve: build time, memory, a selective grep, a common
//! literal and a one-match glob at 10k, 100k and 1M generated files,
//! against ripgrep. Each size runs in a child process of its own (the
//! hidden `index-probe` task), so one size's memory does not count in the
//! next one's; the trees stay on disk between runs.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use agent_tools_test_support::measure::{Process, cpu_seconds, load_averages, status_bytes};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::{Ctx, check_same, result_set};
use crate::measure::{Stats, Step, interleaved, run_captured};
use crate::report::{Table, count, median_mean};
use crate::tree::{LITERAL, Rng, code_line};

/// The common literal (a regex): a generated signature in about 4% of the
/// files.
pub const COMMON: &str = r"input: &Config\) -> Result<Config>";
/// Files a folder, as in the trees the goals were set on.
const PER_FOLDER: usize = 100;
/// Per mille of files holding [`LITERAL`].
const LITERAL_RATE: u64 = 1;
/// The share of folders under the ignored subtree: one in this many.
const IGNORED_EVERY: usize = 20;

/// Options of the hidden `index-probe` task.
#[derive(clap::Args, Debug, Clone)]
pub struct ProbeArgs {
    /// The generated tree.
    pub dir: PathBuf,
    /// Timed runs of each query.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Compare with rg (it is on PATH).
    #[arg(long)]
    pub rg: bool,
}

/// What a cached tree holds (its marker file).
struct Generated {
    files: usize,
    ignored: usize,
    bytes: u64,
}

/// The text of one file: source-like lines, about 2 KB.
fn file_text(rng: &mut Rng, literal: bool, out: &mut String) {
    out.clear();
    let target = 400 + rng.below(1200) + rng.below(800) * rng.below(5);
    while (out.len() as u64) < target {
        code_line(rng, out);
    }
    if literal {
        out.push_str("    const MARK: &str = \"");
        out.push_str(LITERAL);
        out.push_str("\";\n");
    }
}

/// The tree of `files` files under `root`, generated once: 100 files a
/// folder, every name distinct, one folder in twenty under an ignored
/// `generated/`. A tree whose marker says it is complete is reused.
fn tree(root: &Path, files: usize) -> Result<Generated> {
    // Beside the tree, not in it: the tree holds only what is measured.
    let marker = root.with_extension("complete");
    if let Ok(text) = fs::read_to_string(&marker) {
        let value: Value = serde_json::from_str(&text)?;
        let field = |name: &str| value.get(name).and_then(Value::as_u64).unwrap_or(0);
        if field("files") as usize == files {
            return Ok(Generated {
                files,
                ignored: field("ignored") as usize,
                bytes: field("bytes"),
            });
        }
    }
    let _ = fs::remove_file(&marker);
    if root.exists() {
        fs::remove_dir_all(root).with_context(|| format!("clearing {}", root.display()))?;
    }
    fs::create_dir_all(root)?;
    fs::write(root.join(".gitignore"), "/generated/\n")?;
    eprintln!("index curve: generating {} files ...", count(files));
    let started = Instant::now();
    let mut rng = Rng::new(0x5EED_C0DE_0000_0001);
    let words = ["alpha", "buffer", "config", "delta", "entry", "frame"];
    let exts = ["rs", "rs", "rs", "rs", "rs", "py", "py", "ts", "ts", "md"];
    let (mut ignored, mut bytes) = (0usize, 0u64);
    let mut text = String::new();
    let mut folder = PathBuf::new();
    for n in 0..files {
        let leaf = n / PER_FOLDER;
        if n % PER_FOLDER == 0 {
            let name = format!("m{:03}/d{:02}", leaf / 100, leaf % 100);
            folder = if leaf % IGNORED_EVERY == IGNORED_EVERY - 1 {
                root.join("generated").join(name)
            } else {
                root.join(name)
            };
            fs::create_dir_all(&folder)?;
        }
        let literal = rng.below(1000) < LITERAL_RATE;
        file_text(&mut rng, literal, &mut text);
        let path = folder.join(format!("{}_{n:07}.{}", rng.pick(&words), rng.pick(&exts)));
        File::create(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .with_context(|| path.display().to_string())?;
        bytes += text.len() as u64;
        ignored += usize::from(leaf % IGNORED_EVERY == IGNORED_EVERY - 1);
    }
    fs::write(
        &marker,
        json!({"files": files, "ignored": ignored, "bytes": bytes}).to_string(),
    )?;
    eprintln!(
        "index curve: generated {} files, {:.0} MB in {:.0} s",
        count(files),
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(Generated {
        files,
        ignored,
        bytes,
    })
}

/// The group: each size's tree (generated or reused), measured by a child
/// process, in one table.
pub fn curve(ctx: &Ctx<'_>) -> Result<Table> {
    let base = ctx
        .args
        .curve_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("agent-tools-index-curve"));
    let sizes = if ctx.args.curve_sizes.is_empty() {
        if ctx.args.quick {
            vec![10_000]
        } else {
            vec![10_000, 100_000, 1_000_000]
        }
    } else {
        ctx.args.curve_sizes.clone()
    };
    let exe = std::env::current_exe().context("this program's path")?;
    let mut table = Table::new(format!(
        "warm workspace index, the curve — {} generated files (100 a folder, about 2 KB a file, 5% under a .gitignored folder)",
        sizes
            .iter()
            .map(|&n| count(n))
            .collect::<Vec<_>>()
            .join(" / ")
    ));
    let mut all_same = true;
    for &files in &sizes {
        let root = base.join(format!("files-{files}"));
        let generated = tree(&root, files)?;
        let runs = if files >= 1_000_000 {
            ctx.pick(5, 3)
        } else {
            ctx.pick(10, 3)
        };
        eprintln!("index curve: measuring {} files ...", count(files));
        let mut cmd = Command::new(&exe);
        cmd.arg("index-probe")
            .arg(&root)
            .args(["--runs", &runs.to_string()]);
        if ctx.rg {
            cmd.arg("--rg");
        }
        let output = run_captured(&mut cmd, &[0])?;
        let figures: Value =
            serde_json::from_slice(&output.stdout).context("reading the probe's figures")?;
        all_same &= rows(&mut table, &generated, &figures);
    }
    table.note(format!(
        "Each size is measured by a process of its own: it builds the index as the server does \
         (`FileTools::with_index`, the default 256 MiB budget), then times each query against \
         rg, interleaved. *Processor* is the process's user plus system time during the build; \
         on the 2 shared cores wall time is what the other processes leave. *RSS* is the whole \
         process's resident set once the index is ready, against the text indexed. Load \
         averages (1 min) before and after each size are in its first row. {}",
        if all_same {
            "Every result set equals rg's (checked)."
        } else {
            "Some result sets differ from rg's: see the warnings."
        }
    ));
    Ok(table)
}

/// Formats one size's figures as rows; returns whether its result sets
/// equalled rg's.
fn rows(table: &mut Table, generated: &Generated, figures: &Value) -> bool {
    let num = |name: &str| figures.get(name).and_then(Value::as_f64).unwrap_or(0.0);
    let files = count(generated.files - generated.ignored);
    let text = num("text_bytes");
    table.row(
        format!(
            "**{files} files** ({:.0} MB of text of {:.0} MB written; {} indexed, {} over the budget): build, wall (processor) — load {:.2} → {:.2}",
            text / 1e6,
            generated.bytes as f64 / 1e6,
            count(num("indexed_files") as usize),
            count(num("always_candidates") as usize),
            num("load_before"),
            num("load_after"),
        ),
        format!(
            "{:.2} s ({:.2} s processor)",
            num("build_wall"),
            num("build_cpu")
        ),
        "—",
        "—",
    );
    table.row(
        format!(
            "{files} files: server RSS once ready (grew by {:.0} MB; {:.0} MB after the queries; peak {:.0} MB; index {:.0} MB = {:.0} MB lists + {:.0} MB table)",
            (num("rss_after") - num("rss_before")) / 1e6,
            num("rss_end") / 1e6,
            num("rss_peak") / 1e6,
            num("index_bytes") / 1e6,
            num("postings_bytes") / 1e6,
            num("table_bytes") / 1e6,
        ),
        format!("{:.0} MB", num("rss_after") / 1e6),
        format!("{:.0} MB text", text / 1e6),
        format!("{:.2}", num("rss_after") / text.max(1.0)),
    );
    let mut same = true;
    for query in figures
        .get("queries")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field = |name: &str| query.get(name).and_then(Value::as_str).unwrap_or_default();
        let secs = |name: &str| query.get(name).and_then(Value::as_f64).unwrap_or(0.0);
        let ours = secs("ours_median");
        let theirs = secs("rg_median");
        table.row(
            format!(
                "{files} files: {} `{}` ({} files) — indexed vs `{}`",
                field("what"),
                field("pattern"),
                count(query.get("matches").and_then(Value::as_u64).unwrap_or(0) as usize),
                field("rg")
            ),
            field("ours"),
            field("theirs"),
            if theirs > 0.0 {
                format!("{:.3}×", ours / theirs)
            } else {
                "—".into()
            },
        );
        if query.get("same").and_then(Value::as_bool) == Some(false) {
            same = false;
            table.note(format!(
                "**warning:** {files} files, {}: {}",
                field("what"),
                field("difference")
            ));
        }
    }
    same
}

/// The hidden task: builds the index of one tree in this process and
/// prints its figures as JSON.
pub fn probe(args: &ProbeArgs) -> Result<()> {
    let root = args.dir.as_path();
    let load_before = load_averages().map_or(0.0, |[one, ..]| one);
    let rss_before = status_bytes(Process::This, "VmRSS").unwrap_or(0);
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let indexed = super::index::tools(root, true)?;
    let index = indexed.index().context("the index is on")?;
    if !index.wait_ready(Duration::from_secs(3600)) {
        bail!("the index did not become ready: {}", index.status());
    }
    let build_wall = index
        .build_time()
        .unwrap_or_else(|| started.elapsed())
        .as_secs_f64();
    let build_cpu = cpu_seconds() - cpu_before;
    let rss_after = status_bytes(Process::This, "VmRSS").unwrap_or(0);
    let rss_peak = status_bytes(Process::This, "VmHWM").unwrap_or(0);
    let load_after = load_averages().map_or(0.0, |[one, ..]| one);
    let stats = index.stats().context("a ready index has figures")?;

    let git = root.join(".git").exists();
    let mut queries = Vec::new();
    let greps = [
        ("grep -l selective literal", LITERAL),
        ("grep -l common literal", COMMON),
    ];
    for (what, pattern) in greps {
        eprintln!("index probe: {what} ...");
        let ours = super::index::grep(&indexed, pattern)?;
        let rg_args = ["-l", "-e", pattern];
        queries.push(timed(
            args,
            root,
            git,
            (what, pattern, "rg -l"),
            &ours,
            || super::index::grep(&indexed, pattern).map(drop),
            &rg_args,
        )?);
    }
    // The one-match glob: a name from the middle of the listing.
    let listed = super::index::glob_of(&indexed, "**/*.md")?;
    let middle: Vec<&str> = result_set(&listed).into_iter().collect();
    let name = middle
        .get(middle.len() / 2)
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .context("the tree has .md files")?;
    let pattern = format!("**/{name}");
    eprintln!("index probe: one-match glob ...");
    let ours = super::index::glob_of(&indexed, &pattern)?;
    let rg_args = ["--files", "-g", pattern.as_str()];
    queries.push(timed(
        args,
        root,
        git,
        ("one-match glob", &pattern, "rg --files -g"),
        &ours,
        || super::index::glob_of(&indexed, &pattern).map(drop),
        &rg_args,
    )?);

    // Once the queries ran: an allocator may hand freed pages back only
    // on later calls.
    let rss_end = status_bytes(Process::This, "VmRSS").unwrap_or(0);
    let figures = json!({
        "rss_end": rss_end,
        "files": stats.files,
        "indexed_files": stats.indexed_files,
        "always_candidates": stats.always_candidates,
        "text_bytes": stats.text_bytes,
        "postings_bytes": stats.postings_bytes,
        "table_bytes": stats.table_bytes,
        "index_bytes": stats.memory_bytes(),
        "build_wall": build_wall,
        "build_cpu": build_cpu,
        "rss_before": rss_before,
        "rss_after": rss_after,
        "rss_peak": rss_peak,
        "load_before": load_before,
        "load_after": load_after,
        "queries": queries,
    });
    println!("{figures}");
    Ok(())
}

/// Times one query against rg (interleaved) and checks the result sets.
fn timed(
    args: &ProbeArgs,
    root: &Path,
    git: bool,
    (what, pattern, rg_name): (&str, &str, &str),
    ours: &str,
    mut query: impl FnMut() -> Result<()>,
    rg_args: &[&str],
) -> Result<Value> {
    let matches = result_set(ours).len();
    let (mut same, mut difference) = (true, String::new());
    if args.rg {
        let theirs = super::index::rg(root, git, rg_args)?;
        let mut scratch = Table::new("");
        same = check_same(&mut scratch, what, ours, &theirs, "rg");
        if !same {
            difference = scratch.markdown();
        }
    }
    let mut steps: Vec<Step<'_>> = vec![Box::new(&mut query)];
    if args.rg {
        steps.push(Box::new(|| super::index::rg(root, git, rg_args).map(drop)));
    }
    let stats = interleaved(args.runs, &mut steps)?;
    let none = Stats::of(Vec::new());
    let theirs = stats.get(1).unwrap_or(&none);
    Ok(json!({
        "what": what,
        "pattern": pattern,
        "rg": rg_name,
        "matches": matches,
        "ours": median_mean(&stats[0]),
        "theirs": if args.rg { median_mean(theirs) } else { "—".into() },
        "ours_median": stats[0].median().as_secs_f64(),
        "rg_median": theirs.median().as_secs_f64(),
        "same": same,
        "difference": difference.trim(),
    }))
}
