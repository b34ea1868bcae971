//! grep through the FileTools API: every parameter, the three output modes,
//! paging, determinism, the walking policy and the output cap.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Ws;

use std::os::unix::fs::symlink;

use agent_tools_error::{ErrorCode, ToolResult};
use agent_tools_fs::{GrepArgs, Limits, OutputMode};

fn tree(files: &[(&str, &str)]) -> Ws {
    common::tree(files)
}

fn tree_with(limits: Limits, files: &[(&str, &str)]) -> Ws {
    common::tree_with(limits, files)
}

impl Ws {
    fn run(&self, args: &GrepArgs) -> ToolResult<String> {
        self.tools.grep(args)
    }

    fn grep(&self, args: &GrepArgs) -> String {
        self.run(args).unwrap()
    }

    fn files(&self, pattern: &str) -> String {
        self.grep(&GrepArgs::new(pattern))
    }
}

fn content(pattern: &str) -> GrepArgs {
    GrepArgs {
        output_mode: OutputMode::Content,
        ..GrepArgs::new(pattern)
    }
}

fn count(pattern: &str) -> GrepArgs {
    GrepArgs {
        output_mode: OutputMode::Count,
        ..GrepArgs::new(pattern)
    }
}

fn sample() -> Ws {
    tree(&[
        (
            "src/main.rs",
            "fn main() {\n    let x = helper();\n    println!(\"{x}\");\n}\n",
        ),
        (
            "src/lib.rs",
            "pub fn helper() -> u32 {\n    42\n}\n// helper helper\n",
        ),
        ("README.md", "# Demo\nCall helper() to get 42.\n"),
        ("docs/guide.txt", "nothing to see\n"),
    ])
}

// ---- output modes -------------------------------------------------------------

#[test]
fn files_with_matches_is_the_default_and_sorted() {
    let ws = sample();
    assert_eq!(ws.files("helper"), "README.md\nsrc/lib.rs\nsrc/main.rs\n");
    assert_eq!(ws.files("^fn"), "src/main.rs\n");
}

#[test]
fn content_mode_prints_path_line_and_text() {
    let ws = sample();
    let out = ws.grep(&content("helper"));
    insta::assert_snapshot!("content", out);
    assert_eq!(
        out,
        "README.md:2:Call helper() to get 42.\nsrc/lib.rs:1:pub fn helper() -> u32 {\nsrc/lib.rs:4:// helper helper\nsrc/main.rs:2:    let x = helper();\n"
    );
}

#[test]
fn count_mode_counts_matching_lines_per_file() {
    let ws = sample();
    let out = ws.grep(&count("helper"));
    insta::assert_snapshot!("count", out);
    // Two matches on one line count once.
    assert_eq!(out, "README.md:1\nsrc/lib.rs:2\nsrc/main.rs:1\n");
}

#[test]
fn nothing_matching_is_a_success() {
    let ws = sample();
    for mode in [
        OutputMode::FilesWithMatches,
        OutputMode::Content,
        OutputMode::Count,
    ] {
        let args = GrepArgs {
            output_mode: mode,
            ..GrepArgs::new("no such text")
        };
        assert_eq!(ws.grep(&args), "(no matches)\n", "{mode:?}");
    }
}

#[test]
fn crlf_lines_show_without_carriage_returns_and_long_lines_are_cut() {
    let long = format!("needle{}\n", "z".repeat(3000));
    let ws = tree(&[("dos.txt", "one\r\nneedle two\r\n"), ("long.txt", &long)]);
    let out = ws.grep(&content("needle"));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "dos.txt:2:needle two");
    assert_eq!(
        lines[1],
        format!(
            "long.txt:1:needle{}… [line truncated: 1006 more characters]",
            "z".repeat(1994)
        )
    );
}

// ---- matching options ---------------------------------------------------------

#[test]
fn ignore_case() {
    let ws = tree(&[("a.txt", "Hello\nHELLO\nhello\nhelo\n")]);
    assert_eq!(ws.grep(&content("hello")), "a.txt:3:hello\n");
    let args = GrepArgs {
        ignore_case: true,
        ..content("hello")
    };
    assert_eq!(
        ws.grep(&args),
        "a.txt:1:Hello\na.txt:2:HELLO\na.txt:3:hello\n"
    );
}

#[test]
fn multiline_matches_span_lines_and_dot_matches_newline() {
    let ws = tree(&[
        ("a.rs", "struct A {\n    x: u8,\n}\nfn f() {}\n"),
        ("b.rs", "struct B;\n"),
    ]);
    // Without multiline nothing spans a line break.
    assert_eq!(ws.grep(&content(r"\{.x")), "(no matches)\n");
    assert_eq!(ws.grep(&content(r"A \{\s*x")), "(no matches)\n");
    let multi = |pattern: &str, mode: OutputMode| GrepArgs {
        multiline: true,
        output_mode: mode,
        ..GrepArgs::new(pattern)
    };
    let out = ws.grep(&multi(r"struct A \{.*?\}", OutputMode::Content));
    assert_eq!(out, "a.rs:1:struct A {\na.rs:2:    x: u8,\na.rs:3:}\n");
    assert_eq!(
        ws.grep(&multi(r"u8,\n\}", OutputMode::Content)),
        "a.rs:2:    x: u8,\na.rs:3:}\n"
    );
    assert_eq!(
        ws.grep(&multi(r"u8,\n\}", OutputMode::FilesWithMatches)),
        "a.rs\n"
    );
    assert_eq!(ws.grep(&multi(r"u8,\n\}", OutputMode::Count)), "a.rs:2\n");
    // ^ and $ still anchor at line boundaries.
    assert_eq!(
        ws.grep(&multi(r"^\}$\n^fn", OutputMode::Content)),
        "a.rs:3:}\na.rs:4:fn f() {}\n"
    );
}

#[test]
fn a_bad_regex_is_invalid_input() {
    let ws = sample();
    for pattern in ["(unclosed", "a{2,1}", "[z-a]"] {
        let err = ws.run(&GrepArgs::new(pattern)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput, "{pattern}");
    }
}

// ---- context ------------------------------------------------------------------

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn context_lines_and_group_separators() {
    let mut text = numbered(20);
    text = text.replace("line 5\n", "line 5 HIT\n");
    text = text.replace("line 7\n", "line 7 HIT\n");
    text = text.replace("line 15\n", "line 15 HIT\n");
    let ws = tree(&[("a.txt", &text), ("b.txt", "HIT first\nsecond\n")]);
    let args = GrepArgs {
        context: 1,
        ..content("HIT")
    };
    let out = ws.grep(&args);
    insta::assert_snapshot!("context", out);
    assert_eq!(
        out,
        "a.txt-4-line 4\na.txt:5:line 5 HIT\na.txt-6-line 6\na.txt:7:line 7 HIT\na.txt-8-line 8\n--\na.txt-14-line 14\na.txt:15:line 15 HIT\na.txt-16-line 16\n--\nb.txt:1:HIT first\nb.txt-2-second\n"
    );
}

#[test]
fn before_and_after_context_override_context_per_side() {
    let text = numbered(10).replace("line 5\n", "line 5 HIT\n");
    let ws = tree(&[("a.txt", &text)]);
    let run = |context: u32, before: Option<u32>, after: Option<u32>| {
        let out = ws.grep(&GrepArgs {
            context,
            before_context: before,
            after_context: after,
            ..content("HIT")
        });
        out.lines()
            .map(|l| l.split(['-', ':']).nth(1).unwrap().to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(run(0, None, None), "5");
    assert_eq!(run(2, None, None), "3,4,5,6,7");
    assert_eq!(run(0, Some(2), None), "3,4,5");
    assert_eq!(run(0, None, Some(3)), "5,6,7,8");
    assert_eq!(run(2, Some(0), None), "5,6,7");
    assert_eq!(run(2, None, Some(1)), "3,4,5,6");
    assert_eq!(run(1, Some(3), Some(0)), "2,3,4,5");
    // Context reaching past either end of the file stops there.
    assert_eq!(run(20, None, None), "1,2,3,4,5,6,7,8,9,10");
}

#[test]
fn context_is_ignored_outside_content_mode() {
    let ws = tree(&[("a.txt", "x\nHIT\ny\n")]);
    let args = GrepArgs {
        context: 3,
        ..count("HIT")
    };
    assert_eq!(ws.grep(&args), "a.txt:1\n");
    let args = GrepArgs {
        context: 3,
        ..GrepArgs::new("HIT")
    };
    assert_eq!(ws.grep(&args), "a.txt\n");
}

// ---- paging -------------------------------------------------------------------

fn many_files(n: usize) -> Ws {
    let files: Vec<(String, String)> = (0..n)
        .map(|i| {
            (
                format!("d{}/f{i:03}.txt", i % 7),
                format!("header\nmatch {i} a\nfiller\nmatch {i} b\n"),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    tree(&refs)
}

#[test]
fn head_limit_and_offset_page_with_an_honest_footer() {
    let ws = many_files(12);
    let all = ws.files("match");
    assert_eq!(all.lines().count(), 12);
    let page = |offset: u64, head_limit: Option<u64>| {
        ws.grep(&GrepArgs {
            head_limit,
            offset,
            ..GrepArgs::new("match")
        })
    };
    let first = page(0, Some(5));
    insta::assert_snapshot!("paging_footer", first);
    let all_lines: Vec<&str> = all.lines().collect();
    assert_eq!(
        first,
        format!(
            "{}\n[showing 1..5 of 12; call again with offset=5 for more]\n",
            all_lines[..5].join("\n")
        )
    );
    assert_eq!(
        page(5, Some(5)),
        format!(
            "{}\n[showing 6..10 of 12; call again with offset=10 for more]\n",
            all_lines[5..10].join("\n")
        )
    );
    // The last page has no footer: nothing is left.
    assert_eq!(
        page(10, Some(5)),
        format!("{}\n", all_lines[10..].join("\n"))
    );
    // Offset alone skips; head_limit alone truncates.
    assert_eq!(page(9, None), format!("{}\n", all_lines[9..].join("\n")));
    assert_eq!(
        page(0, Some(1)),
        format!(
            "{}\n[showing 1..1 of 12; call again with offset=1 for more]\n",
            all_lines[0]
        )
    );
}

#[test]
fn paging_counts_matching_lines_in_content_mode() {
    let ws = many_files(3);
    let all = ws.grep(&content("match"));
    let all_lines: Vec<&str> = all.lines().collect();
    assert_eq!(all_lines.len(), 6);
    let out = ws.grep(&GrepArgs {
        head_limit: Some(3),
        offset: 2,
        ..content("match")
    });
    assert_eq!(
        out,
        format!(
            "{}\n[showing 3..5 of 6; call again with offset=5 for more]\n",
            all_lines[2..5].join("\n")
        )
    );
    // Count mode pages over files.
    let out = ws.grep(&GrepArgs {
        head_limit: Some(2),
        ..count("match")
    });
    assert_eq!(
        out,
        "d0/f000.txt:2\nd1/f001.txt:2\n[showing 1..2 of 3; call again with offset=2 for more]\n"
    );
}

#[test]
fn following_the_footer_visits_every_result_once() {
    let ws = many_files(40);
    for args in [GrepArgs::new("match"), content("match"), count("match")] {
        let all = ws.grep(&args);
        let mut offset = 0;
        let mut seen = String::new();
        for _ in 0..100 {
            let out = ws.grep(&GrepArgs {
                head_limit: Some(7),
                offset,
                ..args.clone()
            });
            match out.split_once("[showing ") {
                None => {
                    seen.push_str(&out);
                    break;
                }
                Some((body, footer)) => {
                    seen.push_str(body);
                    let next = footer.split("offset=").nth(1).unwrap();
                    offset = next.split(' ').next().unwrap().parse().unwrap();
                }
            }
        }
        assert_eq!(seen, all, "{:?}", args.output_mode);
    }
}

#[test]
fn an_offset_past_the_end_says_so() {
    let ws = many_files(3);
    let out = ws.grep(&GrepArgs {
        offset: 3,
        ..GrepArgs::new("match")
    });
    insta::assert_snapshot!("offset_past_end", out);
    assert!(out.contains("of 3"), "{out}");
    let out = ws.grep(&GrepArgs {
        offset: 50,
        head_limit: Some(10),
        ..content("match")
    });
    assert!(out.contains("offset 50") && out.contains("of 6"), "{out}");
}

#[test]
fn a_zero_head_limit_is_invalid_input() {
    let ws = sample();
    let err = ws
        .run(&GrepArgs {
            head_limit: Some(0),
            ..GrepArgs::new("helper")
        })
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
}

#[test]
fn output_is_deterministic_across_runs() {
    let ws = tree(&[]);
    for i in 0..200 {
        let text = format!("alpha {i}\nbeta\nalpha again {i}\n");
        ws.put(
            &format!("d{}/sub{}/file{i}.txt", i % 5, i % 3),
            text.as_bytes(),
        );
    }
    for args in [GrepArgs::new("alpha"), content("alpha"), count("alpha")] {
        let first = ws.grep(&args);
        // Sorted by path, then line.
        let paths: Vec<&str> = first
            .lines()
            .map(|l| l.split(':').next().unwrap())
            .collect();
        let mut sorted = paths.clone();
        sorted.sort();
        assert_eq!(paths, sorted);
        for _ in 0..20 {
            assert_eq!(ws.grep(&args), first);
        }
    }
    assert_eq!(ws.files("alpha").lines().count(), 200);
}

// ---- what is searched -------------------------------------------------------------

#[test]
fn path_narrows_to_a_directory_or_one_file() {
    let ws = sample();
    let args = |path: &str| GrepArgs {
        path: Some(path.to_string()),
        ..content("helper")
    };
    assert_eq!(
        ws.grep(&args("src")),
        "src/lib.rs:1:pub fn helper() -> u32 {\nsrc/lib.rs:4:// helper helper\nsrc/main.rs:2:    let x = helper();\n"
    );
    assert_eq!(
        ws.grep(&args("src/main.rs")),
        "src/main.rs:2:    let x = helper();\n"
    );
    let abs = ws.root.join("README.md");
    assert_eq!(
        ws.grep(&args(abs.to_str().unwrap())),
        "README.md:2:Call helper() to get 42.\n"
    );
    assert_eq!(ws.grep(&args("docs")), "(no matches)\n");
}

#[test]
fn glob_filters_by_name_at_any_depth_or_by_anchored_path() {
    let ws = tree(&[
        ("a.rs", "needle\n"),
        ("a.md", "needle\n"),
        ("src/b.rs", "needle\n"),
        ("src/deep/c.rs", "needle\n"),
        ("other/src/d.rs", "needle\n"),
    ]);
    let with_glob = |glob: &str| {
        ws.grep(&GrepArgs {
            glob: Some(glob.to_string()),
            ..GrepArgs::new("needle")
        })
    };
    assert_eq!(
        with_glob("*.rs"),
        "a.rs\nother/src/d.rs\nsrc/b.rs\nsrc/deep/c.rs\n"
    );
    assert_eq!(with_glob("*.md"), "a.md\n");
    assert_eq!(with_glob("src/*.rs"), "src/b.rs\n");
    assert_eq!(with_glob("src/**/*.rs"), "src/b.rs\nsrc/deep/c.rs\n");
    assert_eq!(with_glob("*.{md,txt}"), "a.md\n");
    assert_eq!(with_glob("*.py"), "(no matches)\n");
    // A leading `!` keeps everything else.
    assert_eq!(with_glob("!*.rs"), "a.md\n");
    assert_eq!(
        with_glob("!src/*.rs"),
        "a.md\na.rs\nother/src/d.rs\nsrc/deep/c.rs\n"
    );
    // Relative to the search path.
    let out = ws.grep(&GrepArgs {
        glob: Some("deep/*.rs".to_string()),
        path: Some("src".to_string()),
        ..GrepArgs::new("needle")
    });
    assert_eq!(out, "src/deep/c.rs\n");
    let err = ws
        .run(&GrepArgs {
            glob: Some("a[".to_string()),
            ..GrepArgs::new("needle")
        })
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
}

#[test]
fn hidden_files_are_searched_but_dot_git_is_not() {
    let ws = tree(&[
        (".env", "TOKEN=needle\n"),
        (".config/tool.toml", "needle = 1\n"),
        (".git/HEAD", "needle\n"),
        (".git/config", "needle\n"),
        ("visible.txt", "needle\n"),
    ]);
    assert_eq!(ws.files("needle"), ".config/tool.toml\n.env\nvisible.txt\n");
}

#[test]
fn gitignored_files_are_skipped_even_when_a_glob_names_them() {
    let ws = tree(&[
        (".gitignore", "*.tmpout\nbuild/\n"),
        ("a.txt", "needle\n"),
        ("x.tmpout", "needle\n"),
        ("build/gen.txt", "needle\n"),
        ("sub/.gitignore", "local.txt\n"),
        ("sub/local.txt", "needle\n"),
        (".ignore", "private*\n"),
        ("private.txt", "needle\n"),
    ]);
    assert_eq!(ws.files("needle"), "a.txt\n");
    let args = GrepArgs {
        glob: Some("*.tmpout".to_string()),
        ..GrepArgs::new("needle")
    };
    assert_eq!(ws.grep(&args), "(no matches)\n");
    // Also in a git repository, and below a search path.
    ws.put(".git/HEAD", b"ref: refs/heads/main\n");
    assert_eq!(ws.files("needle"), "a.txt\n");
    let args = GrepArgs {
        path: Some("sub".to_string()),
        ..GrepArgs::new("needle")
    };
    assert_eq!(ws.grep(&args), "(no matches)\n");
}

#[test]
fn binary_files_are_skipped() {
    let ws = tree(&[("text.txt", "needle\n")]);
    ws.put("early.bin", b"\0\x01needle\n");
    ws.put("late.bin", b"needle first\nthen a nul \0 byte\n");
    let mut far = "needle\n".repeat(20_000).into_bytes();
    far.extend_from_slice(b"\0");
    ws.put("far.bin", &far);
    // A NUL byte in the first block read skips the file. One further in
    // ends its search there, as in ripgrep: matches in earlier blocks are
    // kept, so the file is listed.
    assert_eq!(ws.files("needle"), "far.bin\ntext.txt\n");
    // Count mode counts what it saw before the block holding the NUL.
    let counted = ws.grep(&count("needle"));
    let far: u64 = counted
        .strip_prefix("far.bin:")
        .and_then(|rest| rest.split('\n').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..20_000).contains(&far), "{counted}");
    assert!(counted.ends_with("\ntext.txt:1\n"));
    // Named directly, a binary file is an error, not a silent "(no matches)".
    let args = GrepArgs {
        path: Some("late.bin".to_string()),
        ..content("needle")
    };
    assert_eq!(ws.run(&args).unwrap_err().code(), ErrorCode::IsBinary);
}

#[test]
fn files_over_the_size_limit_are_streamed_and_what_cannot_be_searched_is_named() {
    let limits = Limits {
        max_file_bytes: 100,
        ..Limits::default()
    };
    let big = format!("{}needle\n", "x\n".repeat(200));
    let long_line = format!("needle {}\n", "y".repeat(200_000));
    let ws = tree_with(
        limits,
        &[
            ("small.txt", "needle\n"),
            ("big.txt", &big),
            ("long.txt", &long_line),
        ],
    );
    // big.txt is larger than max_file_bytes but its lines are short.
    let out = ws.files("needle");
    assert!(out.starts_with("big.txt\nsmall.txt\n"), "{out}");
    // long.txt holds a line over the bound: named in a note, not dropped silently.
    assert!(
        out.contains(
            "[note: 1 path was not looked at: long.txt (it has a line over the 100 byte limit)]"
        ),
        "{out}"
    );
    let named = |path: &str, multiline: bool| {
        ws.run(&GrepArgs {
            path: Some(path.to_string()),
            multiline,
            ..content("needle")
        })
    };
    assert_eq!(named("big.txt", false).unwrap(), "big.txt:201:needle\n");
    let err = named("long.txt", false).unwrap_err();
    assert_eq!(err.code(), ErrorCode::IoError, "{err}");
    assert!(
        err.message().contains("line over the 100 byte limit"),
        "{err}"
    );
    // A multiline search needs the file whole: a large one is refused, by name.
    let huge = "z\n".repeat(100_000);
    ws.put("huge.txt", huge.as_bytes());
    let err = ws
        .run(&GrepArgs {
            path: Some("huge.txt".to_string()),
            multiline: true,
            ..content("(?s)z.z")
        })
        .unwrap_err();
    assert!(
        err.message().contains("search it without multiline"),
        "{err}"
    );
}

#[test]
fn utf16_files_are_searched_as_text() {
    let ws = tree(&[]);
    let mut bytes = vec![0xFF, 0xFE];
    for unit in "first\nsecond needle\n".encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    ws.put("wide.txt", &bytes);
    assert_eq!(ws.grep(&content("needle")), "wide.txt:2:second needle\n");
}

// ---- errors and confinement -----------------------------------------------------

#[test]
fn missing_paths_and_escapes() {
    let ws = sample();
    let at = |path: &str| {
        ws.run(&GrepArgs {
            path: Some(path.to_string()),
            ..GrepArgs::new("needle")
        })
        .unwrap_err()
        .code()
    };
    assert_eq!(at("nope"), ErrorCode::NotFound);
    assert_eq!(at("src/nope.rs"), ErrorCode::NotFound);
    symlink(&ws.outside, ws.root.join("out")).unwrap();
    symlink(ws.outside.join("secret.txt"), ws.root.join("out.txt")).unwrap();
    let outside = ws.outside.to_str().unwrap().to_string();
    for path in [
        "..",
        "../outside",
        &outside,
        "out",
        "out.txt",
        "out/secret.txt",
    ] {
        assert_eq!(at(path), ErrorCode::PathEscape, "{path}");
    }
    // Walking the root does not follow the links out.
    assert_eq!(ws.files("needle"), "(no matches)\n");
}

// ---- the output cap ---------------------------------------------------------------

#[test]
fn a_scan_cut_short_by_the_output_cap_says_so() {
    let limits = Limits {
        max_output_bytes: 1000,
        ..Limits::default()
    };
    let ws = tree_with(limits, &[]);
    let line = format!("needle {}\n", "y".repeat(60));
    for i in 0..300 {
        ws.put(&format!("f{i:03}.txt"), line.repeat(5).as_bytes());
    }
    let out = ws.grep(&content("needle"));
    assert!(out.len() <= 1000, "{} bytes", out.len());
    let tail: Vec<&str> = out.lines().rev().take(2).collect();
    let warning = tail[0];
    assert!(
        warning.starts_with("[warning: the scan stopped early"),
        "{warning}"
    );
    insta::assert_snapshot!("cut_warning", warning);
    // The page itself still ends in a footer that says where to go on.
    assert!(
        tail[1].starts_with("[output limit reached; showing 1.."),
        "{}",
        tail[1]
    );
    // A search small enough for the cap has no warning.
    let out = ws.grep(&GrepArgs {
        path: Some("f000.txt".to_string()),
        ..content("needle")
    });
    assert!(!out.contains("warning"), "{out}");
}

#[test]
fn one_file_with_many_matches_is_paged_within_the_output_budget() {
    let limits = Limits {
        max_output_bytes: 2000,
        ..Limits::default()
    };
    let text: String = (1..=200)
        .map(|i| format!("needle {i:03} padding padding\n"))
        .collect();
    let ws = tree_with(limits, &[("one.txt", &text)]);
    let out = ws.grep(&content("needle"));
    assert!(out.len() <= 2000, "{} bytes", out.len());
    let (body, footer) = out
        .split_once("[output limit reached; showing 1..")
        .unwrap();
    let shown = body.lines().count();
    assert!(shown > 10, "{shown}");
    assert_eq!(
        footer,
        format!("{shown} of 200; call again with offset={shown} for more]\n")
    );
    // Paging on continues right after the last shown line.
    let next = ws.grep(&GrepArgs {
        offset: shown as u64,
        ..content("needle")
    });
    assert!(
        next.starts_with(&format!("one.txt:{}:needle", shown + 1)),
        "{next}"
    );
}

// ---- hostile trees ----------------------------------------------------------------

use crate::bounded;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bounded::within_deadline;

fn shared(ws: Ws) -> Arc<Ws> {
    Arc::new(ws)
}

/// grep and glob (the two walkers) over the whole tree, under the deadline.
fn walk_both(ws: &Arc<Ws>, pattern: &str) -> (String, String) {
    let for_grep = Arc::clone(ws);
    let pattern = pattern.to_string();
    let grep = within_deadline("grep", move || for_grep.files(&pattern));
    let for_glob = Arc::clone(ws);
    let glob = within_deadline("glob", move || {
        for_glob
            .tools
            .glob(&agent_tools_fs::GlobArgs::new("**/*"))
            .unwrap()
    });
    (grep, glob)
}

#[test]
fn symlinked_ignore_files_are_not_followed() {
    // To an endless device: no crash, no unbounded read.
    let ws = tree(&[("x.txt", "needle\n"), ("sub/y.txt", "needle\n")]);
    symlink("/dev/zero", ws.root.join(".gitignore")).unwrap();
    symlink("/dev/urandom", ws.root.join("sub/.ignore")).unwrap();
    let ws = shared(ws);
    let (grep, glob) = walk_both(&ws, "needle");
    assert!(grep.starts_with("sub/y.txt\nx.txt\n"), "{grep}");
    assert!(
        grep.contains(".gitignore (ignore file not read: it is a symlink)"),
        "{grep}"
    );
    assert!(
        grep.contains("sub/.ignore (ignore file not read: it is a symlink)"),
        "{grep}"
    );
    assert!(
        glob.starts_with("sub/y.txt\nx.txt\n") || glob.contains("x.txt\n"),
        "{glob}"
    );

    // To a secret outside: its lines are not used as rules (no oracle).
    let ws = tree(&[("hunter2", "needle\n"), ("guess1", "needle\n")]);
    std::fs::write(ws.outside.join("secret.txt"), "hunter2\n").unwrap();
    symlink("../outside/secret.txt", ws.root.join(".gitignore")).unwrap();
    let ws = shared(ws);
    let (grep, glob) = walk_both(&ws, "needle");
    assert!(grep.starts_with("guess1\nhunter2\n"), "{grep}");
    assert!(glob.contains("hunter2\n"), "{glob}");
}

#[test]
fn fifos_as_ignore_files_or_search_targets_never_block() {
    for fifo in [
        ".gitignore",
        ".ignore",
        "sub/.gitignore",
        ".git/info/exclude",
    ] {
        let ws = tree(&[("x.txt", "needle\n"), ("sub/", ""), (".git/info/", "")]);
        nix::unistd::mkfifo(&ws.root.join(fifo), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let ws = shared(ws);
        let (grep, glob) = walk_both(&ws, "needle");
        assert!(grep.starts_with("x.txt\n"), "{fifo}: {grep}");
        assert!(grep.contains("it is a named pipe (FIFO)"), "{fifo}: {grep}");
        assert!(glob.contains("x.txt\n"), "{fifo}: {glob}");
    }
    // A FIFO among the files is not searched; named, it is not_a_file.
    let ws = tree(&[("x.txt", "needle\n")]);
    nix::unistd::mkfifo(&ws.root.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let ws = shared(ws);
    let (grep, _) = walk_both(&ws, "needle");
    assert_eq!(grep, "x.txt\n");
    let named = Arc::clone(&ws);
    let err = within_deadline("grep on a FIFO", move || {
        named
            .run(&GrepArgs {
                path: Some("pipe".to_string()),
                ..GrepArgs::new("needle")
            })
            .unwrap_err()
    });
    assert_eq!(err.code(), ErrorCode::NotAFile, "{err}");
}

#[test]
fn a_device_node_is_never_read() {
    let ws = tree(&[("x.txt", "needle\n")]);
    let dev = nix::sys::stat::makedev(1, 5); // /dev/zero
    if nix::sys::stat::mknod(
        &ws.root.join("zero"),
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::S_IRUSR,
        dev,
    )
    .is_err()
    {
        println!("note: mknod needs root; the device-node test is skipped");
        return;
    }
    let ws = shared(ws);
    let (grep, glob) = walk_both(&ws, "needle");
    assert_eq!(grep, "x.txt\n");
    assert_eq!(glob, "x.txt\n");
    let named = Arc::clone(&ws);
    let err = within_deadline("grep on a device", move || {
        named
            .run(&GrepArgs {
                path: Some("zero".to_string()),
                ..GrepArgs::new("needle")
            })
            .unwrap_err()
    });
    assert_eq!(err.code(), ErrorCode::NotAFile, "{err}");
    let named = Arc::clone(&ws);
    let err = within_deadline("read_file on a device", move || {
        named
            .tools
            .read_file(&agent_tools_fs::ReadFileArgs::new("zero"))
            .unwrap_err()
    });
    assert_eq!(err.code(), ErrorCode::NotAFile, "{err}");
    assert!(err.message().contains("character device"), "{err}");
}

#[test]
fn a_swap_race_never_leaks_outside_content_or_names() {
    // A file and a directory are swapped again and again with symlinks to
    // the outside while grep and glob walk: nothing outside may show.
    let ws = tree(&[
        ("f", "TOPSECRET-inside\n"),
        ("d/inner.txt", "TOPSECRET-inside\n"),
    ]);
    std::fs::write(ws.outside.join("secret.txt"), "TOPSECRET-race\n").unwrap();
    std::fs::write(ws.outside.join("outside-name.txt"), "TOPSECRET-race\n").unwrap();
    symlink(ws.outside.join("secret.txt"), ws.root.join("f.lnk")).unwrap();
    symlink(&ws.outside, ws.root.join("d.lnk")).unwrap();
    let ws = shared(ws);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = {
        let root = ws.root.clone();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
            let mut count = 0u64;
            while !stop.load(Ordering::Relaxed) || count < 4000 {
                for (a, b) in [("f", "f.lnk"), ("d", "d.lnk")] {
                    renameat2(
                        AT_FDCWD,
                        &root.join(a),
                        AT_FDCWD,
                        &root.join(b),
                        RenameFlags::RENAME_EXCHANGE,
                    )
                    .unwrap();
                    count += 1;
                }
            }
            count
        })
    };
    let checker = Arc::clone(&ws);
    within_deadline("grep and glob under a swap race", move || {
        for _ in 0..150 {
            let walked = checker.grep(&content("TOPSECRET"));
            assert!(!walked.contains("race"), "{walked}");
            let named = checker.run(&GrepArgs {
                path: Some("f".to_string()),
                ..content("TOPSECRET")
            });
            if let Ok(out) = named {
                assert!(!out.contains("race"), "{out}");
            }
            let in_dir = checker.run(&GrepArgs {
                path: Some("d".to_string()),
                ..content("TOPSECRET")
            });
            if let Ok(out) = in_dir {
                assert!(!out.contains("race"), "{out}");
            }
            let listed = checker
                .tools
                .glob(&agent_tools_fs::GlobArgs::new("**/*"))
                .unwrap();
            assert!(!listed.contains("outside-name"), "{listed}");
            assert!(!listed.contains("secret.txt"), "{listed}");
        }
    });
    stop.store(true, Ordering::Relaxed);
    let count = swaps.join().unwrap();
    assert!(count >= 4000, "only {count} swaps");
}

#[test]
fn a_large_file_is_streamed_to_its_last_line() {
    let mut big = "filler line\n".repeat(1_500_000);
    big.push_str("FATAL ERROR here\n");
    let ws = tree(&[("huge.log", big.as_str())]);
    assert!(big.len() as u64 > agent_tools_fs::Limits::DEFAULT_MAX_FILE_BYTES);
    let named = GrepArgs {
        path: Some("huge.log".to_string()),
        ..content("FATAL")
    };
    assert_eq!(ws.grep(&named), "huge.log:1500001:FATAL ERROR here\n");
    assert_eq!(ws.files("FATAL"), "huge.log\n");
}

#[test]
fn content_rendering_is_linear_in_the_lines_gathered() {
    // Quadratic rendering took minutes on these; linear takes well under
    // the deadline even in a debug build.
    let ws = tree_with(
        Limits {
            max_output_bytes: 8_000_000,
            ..Limits::default()
        },
        &[("m.txt", &*"a\n".repeat(1_000_000))],
    );
    let ws = shared(ws);
    let many = Arc::clone(&ws);
    let out = within_deadline("content mode on a million matching lines", move || {
        many.grep(&content("a"))
    });
    assert!(out.starts_with("m.txt:1:a\nm.txt:2:a\n"), "{}", &out[..40]);
    assert!(
        out.contains("call again with offset="),
        "{}",
        &out[out.len() - 300..]
    );

    let ws = shared(tree(&[("m.txt", &*"a\n".repeat(1_000_000))]));
    let spanning = Arc::clone(&ws);
    let out = within_deadline("one multiline match over a million lines", move || {
        spanning.grep(&GrepArgs {
            multiline: true,
            ..content("(?s)a.*")
        })
    });
    assert!(out.starts_with("m.txt:1:a\n"), "{}", &out[..40]);
    assert!(
        out.len() <= agent_tools_fs::Limits::DEFAULT_MAX_OUTPUT_BYTES,
        "{}",
        out.len()
    );
}

#[test]
fn a_cancelled_search_stops_with_an_error() {
    let ws = tree(&[("a.txt", "needle\n"), ("sub/b.txt", "needle\n")]);
    let cancel = AtomicBool::new(true);
    let err = ws
        .tools
        .grep_with(&GrepArgs::new("needle"), &cancel)
        .unwrap_err();
    assert!(err.is_cancelled(), "{err:?}");
    let named = GrepArgs {
        path: Some("a.txt".to_string()),
        ..GrepArgs::new("needle")
    };
    assert!(ws.tools.grep_with(&named, &cancel).is_err());
    let err = ws
        .tools
        .glob_with(&agent_tools_fs::GlobArgs::new("**"), &cancel)
        .unwrap_err();
    assert!(err.is_cancelled(), "{err:?}");
    // Not cancelled, the same calls succeed.
    let go = AtomicBool::new(false);
    assert_eq!(
        ws.tools.grep_with(&GrepArgs::new("needle"), &go).unwrap(),
        "a.txt\nsub/b.txt\n"
    );
}

#[test]
fn ignore_files_above_the_root_are_not_honoured() {
    let ws = tree(&[("main.rs", "needle\n"), ("sub/lib.rs", "needle\n")]);
    // The root's parent (another user's folder, say) ignores every .rs file.
    std::fs::write(ws.root.parent().unwrap().join(".gitignore"), "*.rs\n").unwrap();
    assert_eq!(ws.files("needle"), "main.rs\nsub/lib.rs\n");
    // The root's own .gitignore applies to a search from a subdirectory.
    ws.put(".gitignore", "sub/lib.rs\n");
    let args = GrepArgs {
        path: Some("sub".to_string()),
        ..GrepArgs::new("needle")
    };
    assert_eq!(ws.grep(&args), "(no matches)\n");
}

#[test]
fn file_names_cannot_forge_output_lines() {
    let ws = tree(&[("ok.txt", "needle\n")]);
    ws.put("fakedir/x:1:injected match", "needle\n");
    ws.put("fake.txt\nsecret.txt", "needle\n");
    let out = ws.grep(&content("needle"));
    assert_eq!(
        out,
        "\"fake.txt\\nsecret.txt\":1:needle\n\"fakedir/x:1:injected match\":1:needle\nok.txt:1:needle\n"
    );
    // The quoted spelling is a JSON string naming the file.
    let quoted = out.lines().next().unwrap().rsplitn(3, ':').nth(2).unwrap();
    let path: String = serde_json::from_str(quoted).unwrap();
    let args = GrepArgs {
        path: Some(path),
        ..count("needle")
    };
    assert_eq!(ws.grep(&args), "\"fake.txt\\nsecret.txt\":1\n");
    // A name that is not UTF-8 cannot be addressed: it is named in a note.
    use std::os::unix::ffi::OsStrExt;
    std::fs::write(
        ws.root.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt")),
        "needle\n",
    )
    .unwrap();
    let out = ws.files("needle");
    assert!(
        out.contains("[note: 1 path was not looked at: \"caf\\xe9.txt\" (the name is not UTF-8"),
        "{out}"
    );
}

#[test]
fn a_path_past_path_max_is_still_searched() {
    let ws = tree(&[]);
    let mut deep = ws.root.clone();
    let name = "d".repeat(200);
    let mut rel = String::new();
    for _ in 0..25 {
        deep.push(&name);
        rel.push_str(&name);
        rel.push('/');
    }
    // Built with relative steps: the whole path is longer than PATH_MAX.
    let mut dir = std::fs::File::open(&ws.root).unwrap();
    for _ in 0..25 {
        nix::sys::stat::mkdirat(&dir, name.as_str(), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let fd = nix::fcntl::openat(
            &dir,
            name.as_str(),
            nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_RDONLY,
            nix::sys::stat::Mode::empty(),
        )
        .unwrap();
        dir = std::fs::File::from(fd);
    }
    let fd = nix::fcntl::openat(
        &dir,
        "deep.txt",
        nix::fcntl::OFlag::O_CREAT | nix::fcntl::OFlag::O_WRONLY,
        nix::sys::stat::Mode::S_IRWXU,
    )
    .unwrap();
    std::io::Write::write_all(&mut std::fs::File::from(fd), b"needle\n").unwrap();
    assert!(rel.len() > 4096);
    let found = ws.files("needle");
    assert_eq!(found, format!("{rel}deep.txt\n"));
    let listed = ws
        .tools
        .glob(&agent_tools_fs::GlobArgs::new("**/deep.txt"))
        .unwrap();
    assert_eq!(listed, format!("{rel}deep.txt\n"));
    // read_file cannot take it in one call: a clear error, not a silent miss.
    let err = ws
        .tools
        .read_file(&agent_tools_fs::ReadFileArgs::new(format!("{rel}deep.txt")))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::IoError, "{err}");
    assert!(
        err.message().contains("longer than the system allows"),
        "{err}"
    );
}
