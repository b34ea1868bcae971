//! Builds the index of a generated source-like tree and prints what it
//! costs: build time, memory per file and per MB of text, resident set,
//! and the latency of a one-match glob and a selective search.
//!
//! `cargo run --release -p agent-tools-index --example scale -- FILES [DIR]`
//! writes FILES files (100 a folder, about 2 KB each) into DIR (a
//! temporary directory when not given; an existing DIR with the same
//! count is reused). A third argument sets the memory budget in MiB.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_tools_index::{IndexConfig, NameFilter, WorkspaceIndex, regex_query};
use agent_tools_test_support::measure::{Process, cpu_seconds, status_bytes};

const WORDS: &[&str] = &[
    "alpha", "buffer", "config", "delta", "entry", "frame", "graph", "handle", "index", "journal",
    "kernel", "layout", "metric", "node", "option", "parser", "query", "record", "signal", "token",
    "update", "vector", "widget", "cursor", "socket", "schema", "stream", "filter", "render",
    "bucket",
];
const EXTENSIONS: &[&str] = &["rs", "rs", "rs", "rs", "rs", "py", "py", "ts", "ts", "md"];

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

fn file_text(rng: &mut Rng, out: &mut String) {
    out.clear();
    let target = 200 + rng.below(800) + rng.below(800) * rng.below(5);
    while (out.len() as u64) < target {
        let (a, b, c) = (rng.pick(WORDS), rng.pick(WORDS), rng.pick(WORDS));
        let n = rng.below(1000);
        match rng.below(6) {
            0 => writeln!(out, "fn {a}_{b}(input: &{c}) -> Result<{a}> {{"),
            1 => writeln!(out, "    let {a}_{n} = {b}.{c}({});", rng.below(100)),
            2 => writeln!(
                out,
                "    // {a} {b} {c}: keeps the {} within {n} steps",
                rng.pick(WORDS)
            ),
            3 => writeln!(out, "    if {a}.len() > {n} {{ return {b}_{c}; }}"),
            4 => writeln!(
                out,
                "    {a}.push({b}::{c}(&mut {}, {n}));",
                rng.pick(WORDS)
            ),
            _ => writeln!(
                out,
                "    match {a} {{ Some(x) => x.{b}(), None => {c}_{n}() }}"
            ),
        }
        .unwrap_or(());
    }
}

fn generate(root: &Path, files: usize) -> std::io::Result<u64> {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut text = String::new();
    let mut bytes = 0;
    for n in 0..files {
        let dir = root.join(format!("m{:03}/d{:03}", n / 100_000, (n / 100) % 1000));
        if n % 100 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        file_text(&mut rng, &mut text);
        if n % 997 == 0 {
            text.push_str("const MARK: &str = \"quokka_sentinel\";\n");
        }
        let name = format!("{}_{:06}.{}", rng.pick(WORDS), n, rng.pick(EXTENSIONS));
        std::fs::write(dir.join(name), &text)?;
        bytes += text.len() as u64;
    }
    Ok(bytes)
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(40_000);
    let dir = args.next();
    // An optional memory budget in MiB (the default otherwise).
    let budget_mib: Option<u64> = args.next().and_then(|a| a.parse().ok());
    let (_temp, root) = match dir {
        Some(dir) => (None, PathBuf::from(dir)),
        None => {
            let temp = tempfile::tempdir()?;
            let root = temp.path().to_path_buf();
            (Some(temp), root)
        }
    };
    let marker = root.join(format!(".generated-{files}"));
    if !marker.exists() {
        let started = Instant::now();
        let bytes = generate(&root, files)?;
        std::fs::write(&marker, bytes.to_string())?;
        eprintln!(
            "generated {files} files, {bytes} bytes in {:?}",
            started.elapsed()
        );
    }
    let before = status_bytes(Process::This, "VmRSS").unwrap_or(0) / 1024;
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let mut config = IndexConfig::new(&root);
    if let Some(mib) = budget_mib {
        config = config.memory_budget(mib * 1024 * 1024);
    }
    let index = WorkspaceIndex::start(config);
    assert!(
        index.wait_ready(Duration::from_secs(3600)),
        "{:?}",
        index.status()
    );
    let build = started.elapsed();
    let cpu = cpu_seconds() - cpu_before;
    let after = status_bytes(Process::This, "VmRSS").unwrap_or(0) / 1024;
    let stats = index.stats().unwrap_or_default();
    println!(
        "files {} indexed {} always {}",
        stats.files, stats.indexed_files, stats.always_candidates
    );
    println!(
        "build {:.2} s wall, {cpu:.2} s processor",
        build.as_secs_f64()
    );
    println!(
        "text {:.1} MB, postings {} ({:.2} per file), postings bytes {:.1} MB ({:.3} B/posting), table {:.1} MB ({:.0} B/file)",
        stats.text_bytes as f64 / 1e6,
        stats.postings,
        stats.postings as f64 / stats.indexed_files.max(1) as f64,
        stats.postings_bytes as f64 / 1e6,
        stats.postings_bytes as f64 / stats.postings.max(1) as f64,
        stats.table_bytes as f64 / 1e6,
        stats.table_bytes as f64 / stats.files.max(1) as f64,
    );
    println!(
        "memory {:.1} MB = {:.3} of text; rss {} -> {} kB ({:.3} of text)",
        stats.memory_bytes() as f64 / 1e6,
        stats.memory_bytes() as f64 / stats.text_bytes.max(1) as f64,
        before,
        after,
        (after.saturating_sub(before) * 1024) as f64 / stats.text_bytes.max(1) as f64,
    );
    let listed = index.files("").unwrap_or_default();
    let wanted = listed
        .get(listed.len() / 2)
        .map(|f| f.path.rsplit('/').next().unwrap_or_default().to_string())
        .unwrap_or_default();
    let one = format!("**/{wanted}");
    let suffix = format!("/{wanted}");
    let filter = NameFilter::from_glob(&one);
    for round in 0..3 {
        let started = Instant::now();
        let found = index
            .files_named("", filter.as_ref(), |p| p.ends_with(&suffix))
            .map(|f| f.len());
        let named = started.elapsed();
        let started = Instant::now();
        let by_ext = index
            .files_named("", NameFilter::from_glob("**/*.md").as_ref(), |p| {
                p.ends_with(".md")
            })
            .map(|f| f.len());
        let ext = started.elapsed();
        println!(
            "  glob **/*.md by name {by_ext:?} ({:.3} ms)",
            ext.as_secs_f64() * 1e3
        );
        let started = Instant::now();
        let scanned = index
            .files_where("", |p| p.ends_with(&suffix))
            .map(|f| f.len());
        let scan = started.elapsed();
        let started = Instant::now();
        let hir = regex_syntax::parse("quokka_sentinel").unwrap_or_else(|e| panic!("{e}"));
        let candidates = index.candidates(&regex_query(&hir), "").map(|c| c.len());
        let grep = started.elapsed();
        println!(
            "round {round}: glob {one} by name {found:?} ({:.3} ms), by scan {scanned:?} ({:.3} ms); candidates {candidates:?} ({:.3} ms)",
            named.as_secs_f64() * 1e3,
            scan.as_secs_f64() * 1e3,
            grep.as_secs_f64() * 1e3,
        );
    }
    Ok(())
}
