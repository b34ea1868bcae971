//! The workspace index changes no answer: after every edit of a generated
//! tree, each grep and glob through tools with the index equals the same
//! call through tools without it, byte for byte.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_tools_test_support::rng::Rng;

use std::path::Path;
use std::time::{Duration, SystemTime};

use agent_tools_confine::{Confinement, Workspace};
use std::sync::atomic::AtomicBool;

use agent_tools_fs::ecma::{EcmaMatcher, EcmaRegex, EcmaSearch};
use agent_tools_fs::{
    FileTools, FindOptions, Found, GlobArgs, Globs, GrepArgs, IndexSettings, IndexStatus, Keep,
    Limits, OutputMode,
};

fn tools(root: &Path, indexed: bool) -> FileTools {
    let ws = Workspace::open(root, Confinement::Confined).unwrap();
    let limits = Limits {
        // Small, so some files are over it: those must still be searched
        // (and reported) exactly as without the index.
        max_file_bytes: 2048,
        ..Limits::default()
    };
    let tools = FileTools::new(ws, limits);
    if indexed {
        let tools = tools.with_index(IndexSettings::default());
        let index = tools.index().unwrap();
        assert!(
            index.wait_ready(Duration::from_secs(60)),
            "{:?}",
            index.status()
        );
        tools
    } else {
        tools
    }
}

fn greps() -> Vec<GrepArgs> {
    let mut all = Vec::new();
    for (pattern, ci) in [
        ("alpha", false),
        ("MASK", true),
        ("kelvin", true),
        ("def \\w+_handler\\(", false),
        ("import os", false),
        ("foo_bar|gamma", false),
        ("\\w+ing", false),
        ("x", false),
        ("na.ve", false),
        ("[", false),
    ] {
        let mut args = GrepArgs::new(pattern);
        args.ignore_case = ci;
        all.push(args.clone());
        let mut files = args.clone();
        files.output_mode = OutputMode::FilesWithMatches;
        all.push(files);
        let mut count = args.clone();
        count.output_mode = OutputMode::Count;
        count.glob = Some("*.py".into());
        all.push(count);
        let mut multi = args.clone();
        multi.multiline = true;
        multi.path = Some("src".into());
        all.push(multi);
    }
    all
}

fn globs() -> Vec<GlobArgs> {
    let mut all = Vec::new();
    for pattern in ["**/*", "*.txt", "**/*.py", "src/**", "**/.*", "**/*.log"] {
        for respect_gitignore in [true, false] {
            let mut args = GlobArgs::new(pattern);
            args.respect_gitignore = respect_gitignore;
            all.push(args.clone());
            let mut under = args;
            under.path = Some("src".into());
            all.push(under);
        }
    }
    let mut ignored_dir = GlobArgs::new("**/*");
    ignored_dir.respect_gitignore = false;
    ignored_dir.path = Some("build".into());
    all.push(ignored_dir);
    all
}

/// The `find` calls compared: whole trees with directories (as
/// `directory_tree` asks), depth limits, exclusions, name tests (as
/// `search_files` asks), and limits that cut the list.
fn finds(tools: &FileTools) -> Vec<(String, Result<Found, String>)> {
    let excludes = Globs::exclusions(&["*.log".into(), "src/deep".into(), ".git".into()]).unwrap();
    let roomy = Keep {
        max_entries: None,
        max_bytes: 1 << 20,
        bytes_per_entry: 48,
    };
    /// Directory, exclusions, directories too, depth, limits.
    type Case<'a> = (&'a str, Option<&'a Globs>, bool, Option<usize>, Keep);
    let cases: Vec<Case<'_>> = vec![
        (".", None, true, None, roomy),
        (".", None, false, None, roomy),
        (".", Some(&excludes), true, None, roomy),
        (".", None, true, Some(0), roomy),
        (".", None, true, Some(1), roomy),
        (".", Some(&excludes), true, Some(2), roomy),
        ("src", None, true, Some(1), roomy),
        ("src", Some(&excludes), true, None, roomy),
        ("build", None, true, None, roomy),
        (
            ".",
            None,
            true,
            None,
            Keep {
                max_entries: Some(5),
                max_bytes: 1 << 20,
                bytes_per_entry: 1,
            },
        ),
        (
            ".",
            None,
            true,
            None,
            Keep {
                max_entries: None,
                max_bytes: 120,
                bytes_per_entry: 10,
            },
        ),
    ];
    let mut out = Vec::new();
    for (dir, exclude, directories, max_depth, keep) in cases {
        let options = FindOptions {
            exclude,
            directories,
            max_depth,
            keep,
        };
        let what = format!(
            "find {dir} dirs={directories} depth={max_depth:?} excl={} keep={keep:?}",
            exclude.is_some()
        );
        let all = tools
            .find(dir, &options, |_, _, _| true, &AtomicBool::new(false))
            .map_err(|e| e.to_string());
        out.push((what.clone(), all));
        // A name test, as search_files makes.
        let named = tools
            .find(
                dir,
                &options,
                |_, name, _| name.contains('a') || name.starts_with('.'),
                &AtomicBool::new(false),
            )
            .map_err(|e| e.to_string());
        out.push((format!("{what} named"), named));
    }
    out
}

/// ECMAScript searches (the filesystem surface's `grep_files`): literal
/// ones the index narrows, case-insensitive ones, ones with non-ASCII
/// characters and classes, and ones it cannot narrow.
fn ecma_greps(tools: &FileTools) -> Vec<(String, Result<String, String>)> {
    let mut out = Vec::new();
    for (pattern, ci) in [
        ("alpha", false),
        ("MASK", true),
        ("kelvin", true),
        (r"na\u00efve|naïve", false),
        ("NAÏVE", true),
        (r"def \w+_handler\(", false),
        (r"import\s+os", false),
        ("after nul", false),
        (r"\uFFFD", false),
        ("(?:foo_bar|gamma)$", false),
        ("^x", false),
        ("t[a-z]+ing", true),
        (r"(a)\1", false),
        ("x", false),
    ] {
        let regex = EcmaRegex::new(pattern, ci).unwrap();
        let matcher = EcmaMatcher::new(regex);
        let search = EcmaSearch {
            matcher: &matcher,
            context: 1,
            max_matches: 100_000,
            budget: Default::default(),
        };
        for dir in ["", "src", "build"] {
            let Ok(base) = tools
                .workspace()
                .resolve_dir(Some(if dir.is_empty() { "." } else { dir }), "dir")
            else {
                continue;
            };
            let found = tools
                .ecma_search(
                    &base,
                    &search,
                    &|rel| !rel.ends_with(".rs"),
                    &AtomicBool::new(false),
                )
                .map(|found| format!("{:?} {:?} {:?}", found.files, found.skipped, found.stopped))
                .map_err(|e| e.to_string());
            out.push((format!("ecma {pattern:?} ci={ci} in {dir:?}"), found));
        }
    }
    out
}

/// Compares every grep and glob; returns how many grep outputs carried the
/// walk's note on files it could not search.
fn same_answers(indexed: &FileTools, plain: &FileTools, step: &str) -> usize {
    let mut noted = 0;
    for args in greps() {
        let want = plain.grep(&args).map_err(|e| e.to_string());
        let got = indexed.grep(&args).map_err(|e| e.to_string());
        assert_eq!(got, want, "grep {args:?} after {step}");
        noted += usize::from(want.is_ok_and(|out| out.contains("not looked at")));
    }
    for args in globs() {
        let want = plain.glob(&args).map_err(|e| e.to_string());
        let got = indexed.glob(&args).map_err(|e| e.to_string());
        assert_eq!(got, want, "glob {args:?} after {step}");
    }
    for pattern in ["**/*.rs", "**/*.log", "*", "**/node_modules/**"] {
        let paths = |tools: &FileTools| {
            let base = tools
                .workspace()
                .resolve_dir(None, "globs a directory")
                .unwrap();
            tools
                .glob_paths(&base, pattern, &AtomicBool::new(false))
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            paths(indexed),
            paths(plain),
            "glob_paths {pattern} after {step}"
        );
    }
    for ((what, want), (_, got)) in finds(plain).into_iter().zip(finds(indexed)) {
        assert_eq!(got, want, "{what} after {step}");
    }
    for ((what, want), (_, got)) in ecma_greps(plain).into_iter().zip(ecma_greps(indexed)) {
        assert_eq!(got, want, "{what} after {step}");
    }
    noted
}

const WORDS: &[&str] = &[
    "alpha ",
    "MASK ",
    "ma\u{17F}k ",
    "\u{212A}elvin ",
    "def on_handler(",
    "import os\n",
    "foo_bar ",
    "gamma\n",
    "naïve ",
    "testing ",
    "x",
    "\n",
];

fn content(rng: &mut Rng) -> Vec<u8> {
    match rng.below(10) {
        0 => {
            let text: String = (0..rng.below(4) + 1).map(|_| *rng.pick(WORDS)).collect();
            let mut out = vec![0xFF, 0xFE];
            for unit in text.encode_utf16() {
                out.extend_from_slice(&unit.to_le_bytes());
            }
            out
        }
        1 => {
            let mut out = rng.pick(WORDS).as_bytes().to_vec();
            out.push(0);
            out.extend_from_slice(b"alpha after nul");
            out
        }
        2 => "alpha import os\n".repeat(200).into_bytes(),
        // One line longer than the searcher may hold: the walk notes it.
        3 => format!("{}alpha\n", "x".repeat(3000)).into_bytes(),
        _ => (0..rng.below(10) + 1)
            .flat_map(|_| rng.pick(WORDS).bytes())
            .collect(),
    }
}

const DIRS: &[&str] = &[
    "",
    "src",
    "src/deep",
    "build",
    "build/out",
    ".cfg",
    ".git",
    ".git/objects",
];
const NAMES: &[&str] = &["a.txt", "b.py", "c.log", ".hidden", "d.rs"];

fn edit(rng: &mut Rng, root: &Path) -> String {
    let dir = root.join(rng.pick(DIRS));
    let name = *rng.pick(NAMES);
    let path = dir.join(name);
    match rng.below(10) {
        0..=3 => {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, content(rng)).unwrap();
            format!("write {}", path.display())
        }
        4 => {
            let _ = std::fs::remove_file(&path);
            format!("delete {}", path.display())
        }
        5 => {
            std::fs::create_dir_all(&dir).unwrap();
            let rules = *rng.pick(&[
                "*.log\n",
                "build/\n",
                "*.py\n",
                "",
                "deep\n",
                "node_modules/\n",
                "!build/\n",
            ]);
            std::fs::write(dir.join(".gitignore"), rules).unwrap();
            format!("rules {rules:?} in {}", dir.display())
        }
        6 => {
            let to = root.join(rng.pick(DIRS)).join(rng.pick(NAMES));
            if path.is_file() && to.parent().unwrap().is_dir() {
                std::fs::rename(&path, &to).unwrap();
            }
            format!("rename {} -> {}", path.display(), to.display())
        }
        7 => {
            // Another process writes.
            std::fs::create_dir_all(&dir).unwrap();
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg("printf 'alpha from another process\\nimport os\\n' >> \"$1\"")
                .arg("sh")
                .arg(&path)
                .status()
                .unwrap();
            assert!(status.success());
            format!("another process appends to {}", path.display())
        }
        8 if rng.below(2) == 0 => {
            // Empty directories, made and removed.
            let empty = dir.join(if rng.below(2) == 0 {
                "empty"
            } else {
                "node_modules"
            });
            if empty.is_dir() {
                let _ = std::fs::remove_dir_all(&empty);
                format!("remove directory {}", empty.display())
            } else {
                std::fs::create_dir_all(&empty).unwrap();
                format!("make directory {}", empty.display())
            }
        }
        8 => {
            if dir.is_dir() {
                let link = dir.join("link.txt");
                let _ = std::fs::remove_file(&link);
                let target = *rng.pick(&["a.txt", "..", "build"]);
                std::os::unix::fs::symlink(target, &link).unwrap();
            }
            format!("symlink in {}", dir.display())
        }
        _ => {
            if path.is_file() {
                let file = std::fs::File::options().write(true).open(&path).unwrap();
                file.set_modified(SystemTime::now() + Duration::from_secs(rng.below(500) as u64))
                    .unwrap();
            }
            format!("touch {}", path.display())
        }
    }
}

#[test]
fn every_answer_with_the_index_equals_the_scan_after_each_edit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    std::fs::create_dir_all(root.join("src")).unwrap();
    for _ in 0..25 {
        edit(&mut rng, root);
    }
    let indexed = tools(root, true);
    let plain = tools(root, false);
    let mut noted = same_answers(&indexed, &plain, "the build");
    for step in 0..60 {
        let what = edit(&mut rng, root);
        noted += same_answers(&indexed, &plain, &format!("step {step}: {what}"));
    }
    // Files the searcher refused were reported the same way both times.
    assert!(noted > 0, "no file was ever over the line limit");
    // The index answered (rather than always deferring to the scan).
    assert_eq!(indexed.index().unwrap().status(), IndexStatus::Ready);
    let stats = indexed.index().unwrap().stats().unwrap();
    assert!(stats.indexed_files > 0, "{stats:?}");
}

#[test]
fn a_failed_index_says_the_results_came_from_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "needle\n").unwrap();
    let ws = Workspace::open(dir.path(), Confinement::Confined).unwrap();
    let indexed = FileTools::new(ws, Limits::default()).with_index(IndexSettings::default());
    let index = indexed.index().unwrap();
    assert!(index.wait_ready(Duration::from_secs(60)));
    let plain = tools(dir.path(), false);
    // While the index is up, the output is the scan's.
    let args = GrepArgs::new("needle");
    assert_eq!(indexed.grep(&args).unwrap(), plain.grep(&args).unwrap());
    // After lost events the index walks the tree again: a call meanwhile
    // walks too and says why; either way the results are the walk's.
    index.inject_overflow();
    let want = plain.grep(&args).unwrap();
    let out = indexed.grep(&args).unwrap();
    let caught_up = format!(
        "{want}[note: searched by walking the tree: the workspace index is catching up (events were lost (the event queue overflowed))]\n"
    );
    assert!(out == want || out == caught_up, "{out}");
    assert!(index.wait_ready(Duration::from_secs(60)));
    assert_eq!(indexed.grep(&args).unwrap(), want);
}

#[test]
fn the_watch_limit_is_reported_in_the_output() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["a", "b", "c"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        std::fs::write(dir.path().join(sub).join("f.txt"), "needle\n").unwrap();
    }
    let ws = Workspace::open(dir.path(), Confinement::Confined).unwrap();
    let indexed = FileTools::new(ws, Limits::default()).with_index(IndexSettings {
        max_watches: Some(2),
        ..IndexSettings::default()
    });
    let index = indexed.index().unwrap();
    assert!(!index.wait_ready(Duration::from_secs(60)));
    let plain = tools(dir.path(), false);
    let args = GrepArgs::new("needle");
    let out = indexed.grep(&args).unwrap();
    let want = plain.grep(&args).unwrap();
    assert_eq!(
        out,
        format!(
            "{want}[note: searched by walking the tree: the workspace index is unavailable (the limit on watched directories was reached (on Linux, raise fs.inotify.max_user_watches); searches scan the tree)]\n"
        )
    );
    let out = indexed.glob(&GlobArgs::new("**/*.txt")).unwrap();
    assert!(out.contains("[note: searched by walking the tree"), "{out}");
    assert!(out.contains("a/f.txt"), "{out}");
}

#[test]
fn files_past_the_memory_budget_are_counted_in_the_note() {
    let dir = tempfile::tempdir().unwrap();
    // File i holds more distinct trigrams the larger i is: the largest go
    // out of a small budget first.
    for i in 0..40 {
        let words: String = (0..i).map(|k| format!("w{k}q{i} ")).collect();
        std::fs::write(
            dir.path().join(format!("f{i:02}.txt")),
            format!("needle_{i} and shared words {words}\n"),
        )
        .unwrap();
    }
    // The smallest file, read first (its path sorts first): it stays in.
    std::fs::create_dir(dir.path().join("a_sub")).unwrap();
    std::fs::write(dir.path().join("a_sub/a.txt"), "needle_sub\n").unwrap();
    let ws = Workspace::open(dir.path(), Confinement::Confined).unwrap();
    let indexed = FileTools::new(ws, Limits::default()).with_index(IndexSettings {
        memory_budget_bytes: 4000,
        ..IndexSettings::default()
    });
    ready(&indexed);
    let stats = indexed.index().unwrap().stats().unwrap();
    let left_out = stats.always_candidates;
    assert!(left_out > 1 && stats.indexed_files > 0, "{stats:?}");
    let plain = tools(dir.path(), false);
    let note = format!(
        "[note: {left_out} files are past the workspace index's memory budget: they are not indexed, so every search reads them whole, as a walk would]\n"
    );
    let mut args = GrepArgs::new("needle_(3|39)\\b");
    args.output_mode = OutputMode::FilesWithMatches;
    let want = plain.grep(&args).unwrap();
    assert_eq!(indexed.grep(&args).unwrap(), format!("{want}{note}"));
    // The same through the ECMAScript engine.
    let matcher = EcmaMatcher::new(EcmaRegex::new(r"needle_39\b", false).unwrap());
    let search = EcmaSearch {
        matcher: &matcher,
        context: 0,
        max_matches: 100,
        budget: Default::default(),
    };
    let base = indexed.workspace().resolve_dir(Some("."), "dir").unwrap();
    let found = indexed
        .ecma_search(&base, &search, &|_| true, &AtomicBool::new(false))
        .unwrap();
    let files: Vec<&str> = found.files.iter().map(|f| f.rel.as_str()).collect();
    assert_eq!(files, ["f39.txt"]);
    assert_eq!(found.scan_note, note);
    // Below a directory holding none of them, nothing is said.
    let mut args = GrepArgs::new("needle_sub");
    args.path = Some("a_sub".into());
    let want = plain.grep(&args).unwrap();
    assert_eq!(want, "a_sub/a.txt\n");
    assert_eq!(indexed.grep(&args).unwrap(), want);
}

/// Waits for the index of `tools` to be ready.
fn ready(tools: &FileTools) {
    let index = tools.index().unwrap();
    assert!(
        index.wait_ready(Duration::from_secs(60)),
        "{:?}",
        index.status()
    );
}

#[test]
fn a_file_written_into_an_ignored_directory_is_found_by_the_very_next_query() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir_all(root.join("target/debug")).unwrap();
    std::fs::create_dir_all(root.join(".git/refs")).unwrap();
    std::fs::write(root.join("kept.txt"), "alpha\n").unwrap();
    let ws = Workspace::open(root, Confinement::Confined).unwrap();
    let indexed = FileTools::new(ws, Limits::default()).with_index(IndexSettings::default());
    ready(&indexed);
    let stats = indexed.index().unwrap().stats().unwrap();
    // target/ and .git are recorded, not entered (nor watched).
    assert_eq!(stats.pruned_directories, 2, "{stats:?}");
    assert_eq!(stats.directories, 1, "{stats:?}");
    let plain = tools(root, false);
    let matcher = EcmaMatcher::new(EcmaRegex::new("needle", false).unwrap());
    let search = EcmaSearch {
        matcher: &matcher,
        context: 0,
        max_matches: 100,
        budget: Default::default(),
    };
    let base = indexed.workspace().resolve_dir(Some("."), "dir").unwrap();
    let everything = FindOptions {
        exclude: None,
        directories: true,
        max_depth: None,
        keep: Keep {
            max_entries: None,
            max_bytes: 1 << 20,
            bytes_per_entry: 1,
        },
    };
    let mut glob = GlobArgs::new("**/*");
    glob.respect_gitignore = false;
    for (round, name) in ["target/debug/out.rs", "build.log", ".git/refs/HEAD"]
        .into_iter()
        .enumerate()
    {
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg("printf 'the needle\\n' > \"$1\"")
            .arg("sh")
            .arg(root.join(name))
            .status()
            .unwrap();
        assert!(status.success());
        let found = indexed
            .ecma_search(&base, &search, &|_| true, &AtomicBool::new(false))
            .unwrap();
        let paths: Vec<&str> = found.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(paths.len(), round + 1, "{paths:?}");
        assert!(paths.contains(&name), "{paths:?}");
        let listed = indexed
            .find(".", &everything, |_, _, _| true, &AtomicBool::new(false))
            .unwrap();
        assert!(listed.entries.iter().any(|e| e.rel == name), "{listed:?}");
        let want = plain
            .find(".", &everything, |_, _, _| true, &AtomicBool::new(false))
            .unwrap();
        assert_eq!(listed, want);
        let globbed = indexed.glob(&glob).unwrap();
        assert!(globbed.contains(name), "{globbed}");
    }
}

#[test]
fn an_ecmascript_search_reads_past_a_nul_after_its_binary_probe() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A NUL past the first 4096 bytes but within the index's first block:
    // the index holds the text before it only, the search reads on.
    let mut bytes = "line of text\n".repeat(400).into_bytes();
    bytes.push(0);
    bytes.extend_from_slice(b"\nthe needle after the nul\n");
    std::fs::write(root.join("late.txt"), &bytes).unwrap();
    std::fs::write(root.join("plain.txt"), "no match here\n").unwrap();
    let ws = Workspace::open(root, Confinement::Confined).unwrap();
    let indexed = FileTools::new(ws, Limits::default()).with_index(IndexSettings::default());
    ready(&indexed);
    let matcher = EcmaMatcher::new(EcmaRegex::new("needle after", false).unwrap());
    let search = EcmaSearch {
        matcher: &matcher,
        context: 0,
        max_matches: 100,
        budget: Default::default(),
    };
    let base = indexed.workspace().resolve_dir(Some("."), "dir").unwrap();
    let found = indexed
        .ecma_search(&base, &search, &|_| true, &AtomicBool::new(false))
        .unwrap();
    assert_eq!(found.files.len(), 1, "{found:?}");
    assert_eq!(found.files[0].rel, "late.txt");
}

#[test]
fn grep_finds_a_line_written_through_a_hard_link_outside_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("f.txt"), "hello world\n").unwrap();
    std::fs::write(root.join("g.txt"), "other\n").unwrap();
    std::fs::hard_link(root.join("f.txt"), outside.join("f-alias.txt")).unwrap();
    let indexed = tools(&root, true);
    let plain = tools(&root, false);
    let mut args = GrepArgs::new("NEEDLE-XYZ");
    args.output_mode = OutputMode::FilesWithMatches;
    assert_eq!(indexed.grep(&args).unwrap(), plain.grep(&args).unwrap());
    // Written through the other name: the watched directory sees nothing.
    std::fs::write(outside.join("f-alias.txt"), "hello NEEDLE-XYZ world\n").unwrap();
    let found = indexed.grep(&args).unwrap();
    assert!(found.contains("f.txt"), "{found}");
    assert!(!found.contains("[note"), "answered from the index: {found}");
    assert_eq!(found, plain.grep(&args).unwrap());
    let glob = GlobArgs::new("**/*");
    assert_eq!(indexed.glob(&glob).unwrap(), plain.glob(&glob).unwrap());
}
