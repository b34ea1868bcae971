//! Differential tests: a generated tree under random edits; after every
//! edit the index's file list must equal a full walk with the same rules
//! (the `ignore` crate's own walker), and its candidates must include every
//! file a brute-force regex scan finds a match in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_tools_test_support::rng::Rng;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use agent_tools_index::{IndexConfig, NameFilter, NotServed, Status, WorkspaceIndex, regex_query};

/// Files larger than this are not indexed in these tests.
const CAP: u64 = 4096;

fn start(root: &Path) -> WorkspaceIndex {
    // These tests check answers, not latency: on a loaded machine the
    // index may take longer than the default wait to catch up.
    let index = WorkspaceIndex::start(
        IndexConfig::new(root)
            .max_file_bytes(CAP)
            .barrier_timeout(Duration::from_secs(60)),
    );
    assert!(
        index.wait_ready(Duration::from_secs(60)),
        "{:?}",
        index.status()
    );
    index
}

/// The reference walk: the `ignore` crate's walker set up with the file
/// tools' rules (hidden files kept, ignore files honoured even outside a
/// repository, `.git` skipped, no symlinks followed, regular files only).
fn reference_files(root: &Path) -> BTreeMap<String, SystemTime> {
    let mut out = BTreeMap::new();
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walk {
        let entry = entry.unwrap();
        if entry.file_type().is_some_and(|t| t.is_file()) {
            let rel = entry.path().strip_prefix(root).unwrap();
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            out.insert(rel.to_str().unwrap().to_string(), meta.modified().unwrap());
        }
    }
    out
}

fn index_files(index: &WorkspaceIndex) -> BTreeMap<String, SystemTime> {
    index
        .files("")
        .unwrap()
        .into_iter()
        .map(|f| (f.path, f.modified))
        .collect()
}

/// Regular files in the tree, ignored or not (symlinks not followed).
fn walkdir_files(root: &Path) -> usize {
    let mut count = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                count += 1;
            }
        }
    }
    count
}

/// Whether a line-by-line or multiline search could find `regex` in the
/// file: what the index must let through.
fn must_be_candidate(bytes: &[u8], regex: &regex::bytes::Regex) -> bool {
    if bytes.len() as u64 > CAP
        || bytes.starts_with(b"\xEF\xBB\xBF")
        || bytes.starts_with(b"\xFF\xFE")
        || bytes.starts_with(b"\xFE\xFF")
    {
        return true;
    }
    let text = match bytes.iter().position(|&b| b == 0) {
        Some(at) if at >= 8 * 1024 => return true,
        Some(at) => &bytes[..at],
        None => bytes,
    };
    regex.is_match(text)
}

/// How often the index narrowed a search, and how many files the walks
/// listed: proof that the run exercised something.
#[derive(Default)]
struct Seen {
    narrowed: usize,
    listed: usize,
    ignored_some: usize,
}

fn check(
    index: &WorkspaceIndex,
    root: &Path,
    patterns: &[(String, bool)],
    step: &str,
    seen: &mut Seen,
) {
    let reference = reference_files(root);
    seen.listed += reference.len();
    let everything = walkdir_files(root);
    if everything > reference.len() {
        seen.ignored_some += 1;
    }
    assert_eq!(index_files(index), reference, "file list after {step}");
    for (pattern, ci) in patterns {
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .case_insensitive(*ci)
            .build()
            .parse(pattern)
            .unwrap();
        let regex = regex::bytes::RegexBuilder::new(pattern)
            .case_insensitive(*ci)
            .unicode(true)
            .build()
            .unwrap();
        let candidates = index.candidates(&regex_query(&hir), "").unwrap();
        if candidates.len() < reference.len() {
            seen.narrowed += 1;
        }
        for path in reference.keys() {
            let bytes = std::fs::read(root.join(path)).unwrap();
            if must_be_candidate(&bytes, &regex) {
                assert!(
                    candidates.binary_search(path).is_ok(),
                    "after {step}: {path} can match {pattern:?} (ci={ci}) but is not a candidate"
                );
            }
        }
        for path in &candidates {
            assert!(reference.contains_key(path), "{path} is not in the tree");
        }
    }
}

const WORDS: &[&str] = &[
    "alpha",
    "Beta",
    "gamma",
    "MASK",
    "ma\u{17F}k",
    "\u{212A}elvin",
    "kelvin",
    "handler(",
    "def ",
    "import os",
    "_handler(",
    "x",
    "\n",
    "  ",
    "foo_bar",
    "Straße",
    "naïve",
];

fn content(rng: &mut Rng) -> Vec<u8> {
    match rng.below(12) {
        0 => {
            // UTF-16LE with a byte-order mark.
            let text: String = (0..rng.below(5) + 1).map(|_| *rng.pick(WORDS)).collect();
            let mut out = vec![0xFF, 0xFE];
            for unit in text.encode_utf16() {
                out.extend_from_slice(&unit.to_le_bytes());
            }
            out
        }
        1 => {
            // Text, a NUL, more text.
            let mut out: Vec<u8> = (0..rng.below(4) + 1)
                .flat_map(|_| rng.pick(WORDS).bytes())
                .collect();
            out.push(0);
            out.extend_from_slice(rng.pick(WORDS).as_bytes());
            out
        }
        2 => {
            // Over the size cap.
            let word = rng.pick(WORDS).as_bytes().to_vec();
            word.iter()
                .copied()
                .cycle()
                .take(CAP as usize + 100)
                .collect()
        }
        _ => (0..rng.below(8) + 1)
            .flat_map(|_| rng.pick(WORDS).bytes().chain(std::iter::once(b' ')))
            .collect(),
    }
}

const NAMES: &[&str] = &[
    "a.txt", "b.py", "c.log", "keep.log", ".hidden", "d.rs", "e.md", "f.bin",
];
const DIRS: &[&str] = &["", "src", "src/deep", "build", "docs", ".cfg"];
const RULES: &[&str] = &[
    "*.log\n",
    "*.log\n!keep.log\n",
    "*.py\n*.rs\n",
    "*.txt\n",
    "build/\n",
    "deep\n",
    "*.md\n",
    "",
    "/a.txt\n",
];

fn patterns() -> Vec<(String, bool)> {
    [
        ("alpha", false),
        ("(?i)beta", false),
        ("mask", true),
        ("MASK", true),
        ("kelvin", true),
        ("def \\w+_handler\\(", false),
        ("import os", false),
        ("foo_bar|gamma", false),
        ("x", false),
        ("stra(ss|ß)e", true),
        ("na.ve", false),
        ("\\w+", false),
        ("[^\\s\\S]", false),
    ]
    .iter()
    .map(|(p, ci)| (p.to_string(), *ci))
    .collect()
}

fn random_edit(rng: &mut Rng, root: &Path) -> String {
    let dir = *rng.pick(DIRS);
    let name = *rng.pick(NAMES);
    let path: PathBuf = root.join(dir).join(name);
    match rng.below(10) {
        0..=2 => {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_dir_all(&path);
            std::fs::write(&path, content(rng)).unwrap();
            format!("write {dir}/{name}")
        }
        3 => {
            let _ = std::fs::remove_file(&path);
            format!("delete {dir}/{name}")
        }
        4 => {
            let to = root.join(rng.pick(DIRS)).join(rng.pick(NAMES));
            if path.is_file() && to.parent().unwrap().is_dir() && !to.is_dir() {
                std::fs::rename(&path, &to).unwrap();
            }
            format!("rename {dir}/{name} -> {}", to.display())
        }
        5 => {
            std::fs::create_dir_all(root.join(dir)).unwrap();
            std::fs::write(root.join(dir).join(".gitignore"), rng.pick(RULES)).unwrap();
            format!("rules in {dir:?}")
        }
        6 => {
            let link = root.join(dir).join("link");
            if root.join(dir).is_dir() {
                let _ = std::fs::remove_file(&link);
                let target = if rng.below(2) == 0 { "a.txt" } else { ".." };
                std::os::unix::fs::symlink(target, &link).unwrap();
            }
            format!("symlink in {dir:?}")
        }
        7 => {
            // Another process writes.
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg("printf 'written by another process: MASK import os\\n' > \"$1\"")
                .arg("sh")
                .arg(&path)
                .status()
                .unwrap();
            assert!(status.success());
            format!("other process writes {dir}/{name}")
        }
        8 => {
            // A whole directory moves or goes.
            let from = root.join(rng.pick(&DIRS[1..]));
            let to = root.join(rng.pick(&["moved", "src/moved", "build"]));
            if from.is_dir() && !to.exists() && !to.starts_with(&from) {
                std::fs::rename(&from, &to).unwrap();
                format!("move dir {} -> {}", from.display(), to.display())
            } else if from.is_dir() && rng.below(3) == 0 {
                std::fs::remove_dir_all(&from).unwrap();
                format!("remove dir {}", from.display())
            } else {
                "nothing".into()
            }
        }
        _ => {
            // Touch: only the modification time changes.
            if path.is_file() {
                let file = std::fs::File::options().write(true).open(&path).unwrap();
                file.set_modified(SystemTime::now() + Duration::from_secs(rng.below(1000) as u64))
                    .unwrap();
            }
            format!("touch {dir}/{name}")
        }
    }
}

#[test]
fn random_edits_keep_the_index_exact() {
    let mut ignored_some = 0;
    for seed in [0x9E37_79B9_7F4A_7C15u64, 12345, 777, 4242] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tree");
        std::fs::create_dir(&root).unwrap();
        let mut rng = Rng(seed);
        for _ in 0..30 {
            random_edit(&mut rng, &root);
        }
        let index = start(&root);
        let patterns = patterns();
        let mut seen = Seen::default();
        check(
            &index,
            &root,
            &patterns,
            &format!("build (seed {seed})"),
            &mut seen,
        );
        for step in 0..60 {
            let what = random_edit(&mut rng, &root);
            check(
                &index,
                &root,
                &patterns,
                &format!("step {step}: {what} (seed {seed})"),
                &mut seen,
            );
        }
        assert!(seen.listed > 100, "seed {seed}: the trees stayed tiny");
        assert!(seen.narrowed > 100, "seed {seed}: the index never narrowed");
        ignored_some += seen.ignored_some;
    }
    assert!(ignored_some > 10, "the rules hardly ever ignored a file");
}

#[test]
fn a_write_by_another_process_is_seen_by_the_very_next_query() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.txt"), "nothing here\n").unwrap();
    let index = start(dir.path());
    let hir = regex_syntax::parse("fresh_marker_\\d+").unwrap();
    let query = regex_query(&hir);
    for round in 0..20 {
        let name = format!("new{round}.txt");
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo fresh_marker_{round} >> old.txt; echo x > {name}"
            ))
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let found = index.candidates(&query, "").unwrap();
        assert_eq!(found, vec!["old.txt".to_string()]);
        let files = index.files("").unwrap();
        assert!(files.iter().any(|f| f.path == name), "round {round}");
    }
}

#[test]
fn a_forced_overflow_rewalks_and_answers_exactly_again() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/a.txt"), "needle\n").unwrap();
    let index = start(dir.path());
    index.inject_overflow();
    std::fs::write(dir.path().join("sub/b.txt"), "needle too\n").unwrap();
    // The overflow is applied before any later query's barrier completes:
    // the query either sees "catching up" (and would scan) or an answer
    // that already includes the re-walk.
    let hir = regex_syntax::parse("needle").unwrap();
    let query = regex_query(&hir);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match index.candidates(&query, "") {
            Ok(found) => {
                assert_eq!(
                    found,
                    vec!["sub/a.txt".to_string(), "sub/b.txt".to_string()]
                );
                break;
            }
            Err(NotServed::CatchingUp(_)) => {
                assert!(std::time::Instant::now() < deadline, "never caught up");
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(index.status(), Status::Ready);
}

#[test]
fn the_watch_limit_makes_the_index_unavailable_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["a", "b", "c"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let index = WorkspaceIndex::start(IndexConfig::new(dir.path()).max_watches(2));
    assert!(!index.wait_ready(Duration::from_secs(30)));
    let Status::Unavailable(why) = index.status() else {
        panic!("{:?}", index.status());
    };
    assert!(why.contains("limit"), "{why}");
    match index.files("") {
        Err(err @ NotServed::Unavailable(_)) => assert!(err.is_failure()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_watch_limit_reached_later_also_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    let index = WorkspaceIndex::start(IndexConfig::new(dir.path()).max_watches(2));
    assert!(index.wait_ready(Duration::from_secs(30)));
    std::fs::create_dir_all(dir.path().join("x/y/z")).unwrap();
    match index.files("") {
        Err(NotServed::Unavailable(why)) => assert!(why.contains("limit"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_path_the_walk_would_note_defers_to_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("real"), "*.x\n").unwrap();
    let index = start(dir.path());
    std::os::unix::fs::symlink("real", dir.path().join(".gitignore")).unwrap();
    match index.files("") {
        Err(err @ NotServed::Unlisted(_)) => {
            assert!(!err.is_failure());
            assert!(err.to_string().contains(".gitignore"), "{err}");
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_file(dir.path().join(".gitignore")).unwrap();
    let files = index.files("").unwrap();
    assert_eq!(files.len(), 1);
}

#[test]
fn the_memory_budget_turns_files_into_candidates_not_losses() {
    let dir = tempfile::tempdir().unwrap();
    // File i holds more distinct trigrams the larger i is.
    for i in 0..50 {
        let words: String = (0..i).map(|k| format!("w{k}q{i} ")).collect();
        std::fs::write(
            dir.path().join(format!("f{i:02}.txt")),
            format!("unique_{i}_content and some shared words {words}\n"),
        )
        .unwrap();
    }
    let index = WorkspaceIndex::start(IndexConfig::new(dir.path()).memory_budget(4000));
    assert!(index.wait_ready(Duration::from_secs(30)));
    let stats = index.stats().unwrap();
    assert!(stats.always_candidates > 0, "{stats:?}");
    assert!(stats.indexed_files > 0, "{stats:?}");
    assert!(stats.postings_bytes <= 4000, "{stats:?}");
    let hir = regex_syntax::parse("unique_7_content").unwrap();
    let found = index.candidates(&regex_query(&hir), "").unwrap();
    assert!(found.contains(&"f07.txt".to_string()));
    assert!(found.len() as u64 <= stats.always_candidates + 1);
    // The largest files went out first: the files left out are the last.
    let hir = regex_syntax::parse("absent_everywhere").unwrap();
    let out = index.candidates(&regex_query(&hir), "").unwrap();
    let first_out = 50 - out.len();
    let want: Vec<String> = (first_out..50).map(|i| format!("f{i:02}.txt")).collect();
    assert_eq!(out, want, "{stats:?}");
    // The answer counts the files it holds only for the budget.
    let counted = index.candidate_files(&regex_query(&hir), "").unwrap();
    assert_eq!(counted.paths, want);
    assert_eq!(counted.over_budget, want.len() as u64);
    assert_eq!(counted.over_budget, stats.always_candidates);
}

#[test]
fn queries_under_a_directory_keep_to_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    std::fs::create_dir_all(dir.path().join("ab")).unwrap();
    std::fs::write(dir.path().join("a/b/x.txt"), "word\n").unwrap();
    std::fs::write(dir.path().join("ab/y.txt"), "word\n").unwrap();
    let index = start(dir.path());
    let names: Vec<String> = index
        .files("a")
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(names, vec!["a/b/x.txt".to_string()]);
    let hir = regex_syntax::parse("word").unwrap();
    assert_eq!(
        index.candidates(&regex_query(&hir), "ab").unwrap(),
        vec!["ab/y.txt".to_string()]
    );
}

/// The index's sync markers live in the system's temp folder; when that
/// lies inside the root, only the marker directory is left out of the
/// file table. Run in a child process with `TMPDIR` pointing into the tree
/// (the environment of this process is left alone).
#[test]
fn a_temp_folder_inside_the_root_keeps_its_other_files_listed() {
    const CHILD: &str = "AGENT_TOOLS_INDEX_TEST_ROOT";
    if let Some(root) = std::env::var_os(CHILD) {
        let root = PathBuf::from(root);
        let index = start(&root);
        let files: Vec<String> = index
            .files("")
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(files, vec!["a.txt".to_string(), "tmp/kept.txt".to_string()]);
        let hir = regex_syntax::parse("kept").unwrap();
        assert_eq!(
            index.candidates(&regex_query(&hir), "").unwrap(),
            vec!["tmp/kept.txt".to_string()]
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tmp")).unwrap();
    std::fs::write(dir.path().join("a.txt"), "top\n").unwrap();
    std::fs::write(dir.path().join("tmp/kept.txt"), "kept\n").unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_temp_folder_inside_the_root_keeps_its_other_files_listed",
            "--nocapture",
        ])
        .env(CHILD, dir.path())
        .env("TMPDIR", dir.path().join("tmp"))
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn marker_directories_of_processes_that_are_gone_are_removed() {
    // A process that has exited: its id stays unused long enough here.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let temp = std::env::temp_dir();
    let abandoned = temp.join(format!(
        ".agent-tools-index-{gone}-test{}",
        std::process::id()
    ));
    std::fs::create_dir(&abandoned).unwrap();
    let ours = temp.join(format!(
        ".agent-tools-index-{}-test-kept",
        std::process::id()
    ));
    std::fs::create_dir(&ours).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let index = WorkspaceIndex::start(IndexConfig::new(dir.path()));
    // The clearing happens on the index's thread, before its build.
    assert!(index.wait_ready(Duration::from_secs(60)));
    assert!(!abandoned.exists(), "{}", abandoned.display());
    assert!(ours.exists(), "a live process keeps its directory");
    std::fs::remove_dir(&ours).unwrap();
}

#[test]
fn a_directory_swapped_with_a_symlink_to_outside_never_shows_outside_names() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret-name.txt"), "SECRET-CONTENT\n").unwrap();
    for d in ["d0", "d1"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
        std::fs::write(root.join(d).join("inside.txt"), "inside\n").unwrap();
    }
    let index = start(&root);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (root, outside, stop) = (root.clone(), outside.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut round = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let d = root.join(if round.is_multiple_of(2) { "d0" } else { "d1" });
                let aside = root.join("aside");
                std::fs::rename(&d, &aside).unwrap();
                std::os::unix::fs::symlink(&outside, &d).unwrap();
                std::fs::remove_file(&d).unwrap();
                std::fs::rename(&aside, &d).unwrap();
                round += 1;
            }
        })
    };
    let query = regex_query(&regex_syntax::parse("SECRET-CONTENT").unwrap());
    let deadline = std::time::Instant::now() + Duration::from_millis(1500);
    while std::time::Instant::now() < deadline {
        if let Ok(files) = index.files("") {
            assert!(
                !files.iter().any(|f| f.path.contains("secret")),
                "{files:?}"
            );
        }
        if let Ok(found) = index.candidates(&query, "") {
            assert!(!found.iter().any(|p| p.contains("secret")), "{found:?}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    // Once the churn stops, the index converges on the tree as it is: both
    // directories listed again with their files, within a bounded wait.
    let want = reference_files(&root);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut got = BTreeMap::new();
    while std::time::Instant::now() < deadline {
        match index.files("") {
            Ok(files) => {
                got = files.into_iter().map(|f| (f.path, f.modified)).collect();
                if got == want {
                    break;
                }
            }
            Err(NotServed::Lagging | NotServed::CatchingUp(_)) => {}
            Err(other) => panic!("{other}"),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(got, want, "the index did not converge after the churn");
    // Still watched: a change inside each directory is seen at once.
    for d in ["d0", "d1"] {
        std::fs::write(root.join(d).join("later.txt"), "later\n").unwrap();
    }
    let files = index.files("").unwrap();
    for d in ["d0", "d1"] {
        let later = format!("{d}/later.txt");
        assert!(files.iter().any(|f| f.path == later), "{later}: {files:?}");
    }
}

/// Globs answered through the name index on a larger generated tree (a
/// few thousand files over nested folders, a `.gitignore`d subtree,
/// varied names and extensions) give exactly the files a walk filtered by
/// the same glob gives, before and after a round of edits (files added,
/// renamed, removed, a subtree moved).
mod globs_by_name {
    use super::*;

    const STEMS: &[&str] = &[
        "main",
        "lib",
        "mod",
        "util_test",
        "README",
        "Makefile",
        ".env",
    ];
    const EXTS: &[&str] = &["rs", "py", "ts", "md", "tar.gz", "", "RS"];

    fn name(rng: &mut Rng, n: usize) -> String {
        let stem = *rng.pick(STEMS);
        let ext = *rng.pick(EXTS);
        let stem = if rng.below(3) == 0 {
            stem.to_string()
        } else {
            format!("{stem}_{n}")
        };
        if ext.is_empty() {
            stem
        } else {
            format!("{stem}.{ext}")
        }
    }

    fn tree(root: &Path, rng: &mut Rng, files: usize) {
        std::fs::write(root.join(".gitignore"), "/gen/\n*.log\n").unwrap();
        for n in 0..files {
            let dir = match rng.below(4) {
                0 => format!("src/a{}", rng.below(20)),
                1 => format!("src/a{}/b{}", rng.below(20), rng.below(5)),
                2 => format!("gen/c{}", rng.below(5)),
                _ => format!("t{}", rng.below(10)),
            };
            std::fs::create_dir_all(root.join(&dir)).unwrap();
            let file = if rng.below(30) == 0 {
                format!("x{n}.log")
            } else {
                name(rng, n)
            };
            std::fs::write(root.join(dir).join(file), b"x").unwrap();
        }
    }

    const GLOBS: &[&str] = &[
        "**/*.rs",
        "**/*.RS",
        "*.rs",
        "src/**/*.py",
        "src/*/main.rs",
        "**/main.rs",
        "**/README",
        "**/Makefile_1*",
        "**/*.{rs,py}",
        "**/{main,lib}.rs",
        "**/*.tar.gz",
        "**/*.gz",
        "**/.env",
        "**/.env*",
        "**/*.log",
        "t1/*.md",
        "**/m?d_*.ts",
        "**/[ml]*.rs",
        "src/**",
        "**/*",
        "**/*_test*",
        "**/lib_1?.rs",
    ];

    fn matches(glob: &str, root: &Path, index: &WorkspaceIndex, step: &str) {
        let matcher = globset::GlobBuilder::new(glob)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .unwrap()
            .compile_matcher();
        let want: Vec<String> = reference_files(root)
            .into_keys()
            .filter(|p| matcher.is_match(p))
            .collect();
        let filter = NameFilter::from_glob(glob);
        let mut got: Vec<String> = index
            .files_named("", filter.as_ref(), |p| matcher.is_match(p))
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect();
        got.sort();
        assert_eq!(got, want, "{glob} after {step}");
        // With ignored files too (the table's side of the answer).
        let mut got: Vec<String> = index
            .tree_named("", filter.as_ref(), |p| matcher.is_match(p))
            .unwrap()
            .files
            .into_iter()
            .map(|f| f.path)
            .collect();
        got.sort();
        let mut want_all: Vec<String> = index
            .tree("", |p| matcher.is_match(p))
            .unwrap()
            .files
            .into_iter()
            .map(|f| f.path)
            .collect();
        want_all.sort();
        assert_eq!(got, want_all, "{glob} with ignored files after {step}");
    }

    #[test]
    fn glob_answers_equal_a_walk_on_a_large_tree_under_edits() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut rng = Rng(0x6106);
        tree(root, &mut rng, 3000);
        let index = start(root);
        let filtered = GLOBS
            .iter()
            .filter(|g| NameFilter::from_glob(g).is_some())
            .count();
        assert!(filtered >= 15, "most shapes use the name index");
        for glob in GLOBS {
            matches(glob, root, &index, "the build");
        }
        // Edits: new files, renames (a name's entry changes), removals, a
        // folder moved, the ignore file changed.
        for n in 0..200 {
            let file = name(&mut rng, 10_000 + n);
            std::fs::write(root.join("t1").join(file), b"y").unwrap();
        }
        for (removed, entry) in std::fs::read_dir(root.join("t2")).unwrap().enumerate() {
            let path = entry.unwrap().path();
            if removed % 2 == 0 {
                std::fs::remove_file(&path).unwrap();
            } else {
                let renamed = path.with_file_name(format!("main_{removed}.rs"));
                std::fs::rename(&path, renamed).unwrap();
            }
        }
        std::fs::create_dir_all(root.join("t9")).unwrap();
        std::fs::rename(root.join("src/a3"), root.join("t9/moved")).unwrap();
        std::fs::write(root.join(".gitignore"), "/gen/\n").unwrap();
        for glob in GLOBS {
            matches(glob, root, &index, "the edits");
        }
    }
}
