//! Times edit_file and multi_edit on a 10 MB file next to the cost of reading
//! the file and writing it back once (atomically, with the same flushes).
//!
//! Run with `cargo run --release -p agent-tools-fs --example bench_edit`.
//! An optional argument sets the number of runs averaged (default 5).

use std::fs;
use std::time::{Duration, Instant};

use agent_tools_confine::{Confinement, Workspace};
use agent_tools_fs::{EditFileArgs, EditSpec, FileTools, Limits, MultiEditArgs, WriteFileArgs};

const SIZE: usize = 10 * 1024 * 1024;
const EDITS: usize = 50;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: u32 = std::env::args()
        .nth(1)
        .map(|arg| arg.parse())
        .transpose()?
        .unwrap_or(5);
    let dir = tempfile::tempdir()?;
    let ws = Workspace::open(dir.path(), Confinement::Confined)?;
    let tools = FileTools::new(ws, Limits::default());
    let path = dir.path().join("big.rs");

    // ~10 MB of code-like lines, each unique through its number.
    let mut content = String::with_capacity(SIZE + 100);
    let mut line = 0usize;
    while content.len() < SIZE {
        content.push_str(&format!(
            "    let value_{line} = compute(input, {line}) + offset; // step {line}\n"
        ));
        line += 1;
    }
    let lines = line;
    let bytes = content.len();

    let reset = || fs::write(&path, &content);

    // Baseline: read the file and write the same bytes back atomically.
    let read_write = time(runs, &reset, || {
        let text = fs::read_to_string(&path)?;
        tools.write_file(&WriteFileArgs::new("big.rs", text))?;
        Ok(())
    })?;

    // Just the atomic write (for reference).
    let write_only = time(runs, &reset, || {
        tools.write_file(&WriteFileArgs::new("big.rs", content.as_str()))?;
        Ok(())
    })?;

    // One unique replacement near the end.
    let near_end = lines - 10;
    let edit = EditFileArgs::new(
        "big.rs",
        format!("compute(input, {near_end}) + offset"),
        format!("compute(input, {near_end}) - offset"),
    );
    let edit_one = time(runs, &reset, || {
        tools.edit_file(&edit)?;
        Ok(())
    })?;

    // 50 unique replacements spread over the file.
    let edits: Vec<EditSpec> = (0..EDITS)
        .map(|i| {
            let n = (i * (lines - 1)) / EDITS + 7;
            EditSpec::new(format!("// step {n}\n"), format!("// step {n} (changed)\n"))
        })
        .collect();
    let multi = MultiEditArgs::new("big.rs", edits);
    let multi_edit = time(runs, &reset, || {
        tools.multi_edit(&multi)?;
        Ok(())
    })?;

    // A tolerant match (indentation-flexible) near the end, for reference.
    let tolerant = EditFileArgs::new(
        "big.rs",
        format!(
            "let value_{near_end} = compute(input, {near_end}) + offset; // step {near_end}\nlet value_{0} = compute(input, {0}) + offset; // step {0}",
            near_end + 1
        ),
        format!("let value_{near_end} = 0;\nlet value_{} = 0;", near_end + 1),
    );
    let edit_tolerant = time(runs, &reset, || {
        tools.edit_file(&tolerant)?;
        Ok(())
    })?;

    println!(
        "file: {:.1} MB, {lines} lines; mean of {runs} runs",
        bytes as f64 / 1e6
    );
    println!("{:<44} {:>10} {:>12}", "operation", "ms", "x read+write");
    let rows = [
        ("read + atomic write (baseline)", read_write),
        ("atomic write only", write_only),
        ("edit_file, 1 exact replacement near the end", edit_one),
        ("multi_edit, 50 exact replacements", multi_edit),
        ("edit_file, indentation-flexible match", edit_tolerant),
    ];
    for (name, took) in rows {
        println!(
            "{name:<44} {:>10.1} {:>12.2}",
            took.as_secs_f64() * 1e3,
            took.as_secs_f64() / read_write.as_secs_f64()
        );
    }
    Ok(())
}

type Step<'a> = dyn Fn() -> Result<(), Box<dyn std::error::Error>> + 'a;

/// Mean time of `op` over `runs`, resetting the file before each (untimed).
fn time(
    runs: u32,
    reset: &dyn Fn() -> std::io::Result<()>,
    op: impl Fn() -> Result<(), Box<dyn std::error::Error>>,
) -> Result<Duration, Box<dyn std::error::Error>> {
    let op: &Step<'_> = &op;
    // One warm-up run.
    reset()?;
    op()?;
    let mut total = Duration::ZERO;
    for _ in 0..runs {
        reset()?;
        let started = Instant::now();
        op()?;
        total += started.elapsed();
    }
    Ok(total / runs)
}
