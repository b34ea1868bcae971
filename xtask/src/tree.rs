//! The generated data: a deterministic source-like tree and large files.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use tempfile::TempDir;

/// A literal that a few files contain.
pub const LITERAL: &str = "quokka_sentinel";
/// A regex that somewhat more files match, on one to three lines each.
pub const REGEX: &str = r"\b(?:fetch|load)_[a-z]+_v[0-9]{2}\b";
/// The extension globbed for.
pub const GLOB: &str = "**/*.rs";
/// The subtree the tree's .gitignore ignores.
pub const IGNORED_DIR: &str = "generated";

/// Per mille of files containing the literal, and matching the regex.
const LITERAL_RATE: u64 = 5;
const REGEX_RATE: u64 = 30;
const LEAF_DIRS: usize = 400;

/// A seeded xorshift64* generator: the same tree on every machine.
pub struct Rng(u64);

impl Rng {
    /// A generator from a non-zero seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// One of `items`.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "alpha", "buffer", "config", "delta", "entry", "frame", "graph", "handle", "index", "journal",
    "kernel", "layout", "metric", "node", "option", "parser", "query", "record", "signal", "token",
    "update", "vector", "widget", "cursor", "socket", "schema", "stream", "filter", "render",
    "bucket",
];
const TYPES: &[&str] = &[
    "Config", "Frame", "Graph", "Handle", "Index", "Layout", "Node", "Record", "Token", "Vec<u8>",
];
const EXTENSIONS: &[&str] = &["rs", "rs", "rs", "rs", "rs", "py", "py", "ts", "ts", "md"];

/// What was generated, for the report and the checks.
pub struct Tree {
    /// The tree's root (deleted on drop).
    pub dir: TempDir,
    /// Files written, the ignored subtree included.
    pub files: usize,
    /// Files under the ignored subtree.
    pub ignored: usize,
    /// Total bytes of the files.
    pub bytes: u64,
    /// Files outside the ignored subtree containing the literal.
    pub literal_files: usize,
    /// Files outside the ignored subtree matching the regex.
    pub regex_files: usize,
    /// Whether `git init` ran.
    pub git: bool,
}

/// One source-like line.
pub fn code_line(rng: &mut Rng, out: &mut String) {
    let (a, b, c) = (rng.pick(WORDS), rng.pick(WORDS), rng.pick(WORDS));
    let n = rng.below(1000);
    let line = match rng.below(8) {
        0 => format!(
            "fn {a}_{b}(input: &{}) -> Result<{}> {{",
            rng.pick(TYPES),
            rng.pick(TYPES)
        ),
        1 => format!("    let {a}_{n} = {b}.{c}({});", rng.below(100)),
        2 => format!(
            "    // {a} {b} {c}: keeps the {} within {n} steps",
            rng.pick(WORDS)
        ),
        3 => format!("    if {a}.len() > {n} {{ return {b}_{c}; }}"),
        4 => format!("    {a}.push({b}::{c}(&mut {}, {n}));", rng.pick(WORDS)),
        5 => "}".to_string(),
        6 => String::new(),
        _ => format!("    match {a} {{ Some(x) => x.{b}(), None => {c}_{n}() }}"),
    };
    out.push_str(&line);
    out.push('\n');
}

fn file_text(rng: &mut Rng, literal: bool, regex: bool) -> String {
    let target = 200 + rng.below(800) + rng.below(800) * rng.below(5);
    let mut lines = String::with_capacity(target as usize + 200);
    while (lines.len() as u64) < target {
        code_line(rng, &mut lines);
    }
    let mut text: Vec<String> = lines.lines().map(str::to_string).collect();
    if literal {
        let at = rng.below(text.len() as u64 + 1) as usize;
        text.insert(at, format!("    const MARK: &str = \"{LITERAL}\";"));
    }
    if regex {
        for _ in 0..=rng.below(3) {
            let verb = if rng.below(2) == 0 { "fetch" } else { "load" };
            let at = rng.below(text.len() as u64 + 1) as usize;
            let line = format!(
                "    let {} = {verb}_{}_v{:02}(&cfg)?;",
                rng.pick(WORDS),
                rng.pick(WORDS),
                rng.below(100)
            );
            text.insert(at, line);
        }
    }
    let mut out = text.join("\n");
    out.push('\n');
    out
}

/// Writes `total` files over up to 400 leaf folders (20 × 20), 5% of them
/// under an ignored `generated/`, with scrambled distinct mtimes, and runs
/// `git init` when `git` is true.
pub fn generate(total: usize, git: bool) -> Result<Tree> {
    let dir = tempfile::Builder::new().prefix("bench-tree-").tempdir()?;
    let root = dir.path();
    fs::write(root.join(".gitignore"), format!("/{IGNORED_DIR}/\n"))?;
    let mut rng = Rng::new(0x5EED_1234_ABCD_0001);
    let leaves = LEAF_DIRS.min(total.max(1));
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut tree = Stats {
        files: 0,
        ignored: 0,
        bytes: 0,
        literal_files: 0,
        regex_files: 0,
    };
    for leaf in 0..leaves {
        let (top, sub) = (leaf / 20, leaf % 20);
        let top_name = if top == 19 {
            IGNORED_DIR.to_string()
        } else {
            format!("mod{top:02}")
        };
        let ignored = top == 19;
        let folder = root
            .join(&top_name)
            .join(format!("{}_{sub:02}", WORDS[sub]));
        fs::create_dir_all(&folder)?;
        let count = total / leaves + usize::from(leaf < total % leaves);
        for j in 0..count {
            let index = tree.files as u64;
            let literal = rng.below(1000) < LITERAL_RATE;
            let regex = rng.below(1000) < REGEX_RATE;
            let text = file_text(&mut rng, literal, regex);
            let ext = rng.pick(EXTENSIONS);
            let path = folder.join(format!("{}_{j:03}.{ext}", rng.pick(WORDS)));
            let mut file = File::create(&path).with_context(|| path.display().to_string())?;
            file.write_all(text.as_bytes())?;
            // A permutation of minutes: distinct times, unrelated to path order.
            let minutes = (index * 7919) % total as u64;
            file.set_modified(base - Duration::from_secs(minutes * 60 + 1))?;
            tree.files += 1;
            tree.bytes += text.len() as u64;
            if ignored {
                tree.ignored += 1;
            } else {
                tree.literal_files += usize::from(literal);
                tree.regex_files += usize::from(regex);
            }
        }
    }
    let git = git
        && Command::new("git")
            .args(["init", "-q"])
            .current_dir(root)
            .stdout(Stdio::null())
            .status()?
            .success();
    Ok(Tree {
        dir,
        files: tree.files,
        ignored: tree.ignored,
        bytes: tree.bytes,
        literal_files: tree.literal_files,
        regex_files: tree.regex_files,
        git,
    })
}

/// Counts gathered while writing the tree.
struct Stats {
    files: usize,
    ignored: usize,
    bytes: u64,
    literal_files: usize,
    regex_files: usize,
}

/// Writes a log-like file of about `bytes` bytes; returns its line count.
pub fn large_file(path: &Path, bytes: u64) -> Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut rng = Rng::new(42);
    let (mut written, mut lines) = (0u64, 0u64);
    while written < bytes {
        let line = format!(
            "{lines:>9} {} {} request={} status={} took={}ms\n",
            rng.pick(WORDS),
            rng.pick(WORDS),
            rng.below(1 << 20),
            200 + rng.below(4) * 100,
            rng.below(5000)
        );
        out.write_all(line.as_bytes())?;
        written += line.len() as u64;
        lines += 1;
    }
    out.flush()?;
    Ok(lines)
}

/// About `size` bytes of one-statement code lines, each naming its own
/// line number (so every line is unique), and how many lines that is: the
/// 10 MB file of the edit benches.
pub fn numbered_code(size: usize) -> (String, usize) {
    let mut content = String::with_capacity(size + 100);
    let mut lines = 0usize;
    while content.len() < size {
        content.push_str(&format!(
            "    let value_{lines} = compute(input, {lines}) + offset; // step {lines}\n"
        ));
        lines += 1;
    }
    (content, lines)
}
