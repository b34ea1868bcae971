//! The failed-edit corpus: edits models really get wrong, in realistic files,
//! each with the outcome a careful engineer wants (see
//! `tests/edit_corpus/<case>/case.json`). Runs every case through
//! `edit_file` / `multi_edit`, prints the failures and three rates, and holds
//! the matcher to its goals: no wrong-place or corrupting edit, refusals that
//! point at the intended lines, tolerant edits applied exactly.

// Test code unwraps: a malformed case must stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use agent_tools_error::{ErrorCode, ToolError};
use agent_tools_fs::{EditFileArgs, EditSpec, MultiEditArgs};
use regex::Regex;
use serde::Deserialize;

/// Fewest cases the corpus must hold.
const MIN_CASES: usize = 150;
/// A named region points right when both its ends are this close to the
/// intended ones.
const LINE_SLACK: usize = 2;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Tool {
    EditFile,
    MultiEdit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Expect {
    /// Applies, leaving exactly `after/<file>`.
    Apply,
    /// Refuses, file untouched, naming a region near `lines`.
    Refuse,
    /// Refuses, file untouched; no particular lines.
    RefuseUntouched,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    file: String,
    tool: Tool,
    old_string: Option<String>,
    new_string: Option<String>,
    #[serde(default)]
    replace_all: bool,
    edits: Option<Vec<EditSpec>>,
    expect: Expect,
    lines: Option<[usize; 2]>,
    kind: String,
    #[serde(default)]
    tolerant: bool,
    why: String,
}

/// What went wrong with one case, for the failure table.
struct Failure {
    case: String,
    expected: String,
    got: String,
    message: String,
}

#[derive(Default)]
struct Tally {
    cases: usize,
    tolerant: usize,
    tolerant_applied: usize,
    controls_missed: usize,
    refusals: usize,
    refusals_pointing_right: usize,
    wrong_place: usize,
    failures: Vec<Failure>,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/edit_corpus")
}

fn load(dir: &Path) -> Case {
    let text = fs::read_to_string(dir.join("case.json")).unwrap();
    let case: Case = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: bad case.json: {e}", dir.display()));
    assert!(
        !case.kind.is_empty() && !case.why.is_empty(),
        "{}: kind and why are required",
        dir.display()
    );
    assert_eq!(
        case.expect == Expect::Refuse,
        case.lines.is_some(),
        "{}: lines go with expect = refuse, and only there",
        dir.display()
    );
    case
}

fn run(case: &Case, ws: &common::Ws) -> Result<String, ToolError> {
    match case.tool {
        Tool::EditFile => {
            let mut args = EditFileArgs::new(
                &case.file,
                case.old_string
                    .as_deref()
                    .expect("edit_file case without old_string"),
                case.new_string
                    .as_deref()
                    .expect("edit_file case without new_string"),
            );
            args.replace_all = case.replace_all;
            ws.tools.edit_file(&args)
        }
        Tool::MultiEdit => {
            let edits = case.edits.clone().expect("multi_edit case without edits");
            ws.tools.multi_edit(&MultiEditArgs::new(&case.file, edits))
        }
    }
}

/// Every region a message names: `line N`, `lines N-M`, and lists such as
/// `lines 3-5 and 10-12` or `lines 4, 9, 20`.
fn named_regions(message: &str) -> Vec<(usize, usize)> {
    let list = Regex::new(r"\blines? (\d+(?:-\d+)?(?:(?:,|,? and) \d+(?:-\d+)?)*)").unwrap();
    let item = Regex::new(r"(\d+)(?:-(\d+))?").unwrap();
    list.captures_iter(message)
        .flat_map(|c| {
            item.captures_iter(c.get(1).unwrap().as_str())
                .map(|i| {
                    let first: usize = i[1].parse().unwrap();
                    let last = i.get(2).map_or(first, |m| m.as_str().parse().unwrap());
                    (first, last)
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn points_at(message: &str, [first, last]: [usize; 2]) -> bool {
    named_regions(message).into_iter().any(|(a, b)| {
        a <= last && b >= first && a.abs_diff(first) <= LINE_SLACK && b.abs_diff(last) <= LINE_SLACK
    })
}

fn head(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    line.chars().take(110).collect()
}

/// Where the written file first departs from the expected one.
fn first_difference(expected: &[u8], got: &[u8]) -> String {
    let expected = String::from_utf8_lossy(expected);
    let got = String::from_utf8_lossy(got);
    let mut want = expected.split_inclusive('\n');
    let mut have = got.split_inclusive('\n');
    for line in 1.. {
        match (want.next(), have.next()) {
            (None, None) => break,
            (w, h) if w == h => {}
            (w, h) => return format!("line {line}: want {w:?}, got {h:?}"),
        }
    }
    "bytes differ".to_string()
}

fn check(name: &str, dir: &Path, tally: &mut Tally) {
    let case = load(dir);
    let before = fs::read(dir.join("before").join(&case.file)).unwrap();
    let ws = common::tree(&[(case.file.as_str(), &before)]);
    let result = run(&case, &ws);
    let now = fs::read(ws.root.join(&case.file)).unwrap();

    tally.cases += 1;
    let expected = match case.expect {
        Expect::Apply => format!("apply{}", if case.tolerant { " (tolerant)" } else { "" }),
        Expect::Refuse => {
            let [a, b] = case.lines.unwrap();
            format!("refuse at {a}-{b}")
        }
        Expect::RefuseUntouched => "refuse".to_string(),
    };
    let mut fail = |got: &str, message: &str| {
        tally.failures.push(Failure {
            case: name.to_string(),
            expected: expected.clone(),
            got: got.to_string(),
            message: if std::env::var_os("EDIT_CORPUS_VERBOSE").is_some() {
                format!("\n{message}\n")
            } else {
                head(message)
            },
        });
    };

    match (case.expect, result) {
        (Expect::Apply, Ok(_)) => {
            let after = fs::read(dir.join("after").join(&case.file))
                .unwrap_or_else(|e| panic!("{name}: apply case without after/: {e}"));
            if now == after {
                if case.tolerant {
                    tally.tolerant_applied += 1;
                }
            } else {
                tally.wrong_place += 1;
                fail("WRONG-PLACE/CORRUPT", &first_difference(&after, &now));
            }
        }
        (Expect::Apply, Err(err)) => {
            if now != before {
                tally.wrong_place += 1;
                fail("refused but CHANGED the file", err.message());
            } else if case.tolerant {
                fail("missed apply", err.message());
            } else {
                tally.controls_missed += 1;
                fail("missed apply (exact control)", err.message());
            }
        }
        (Expect::Refuse | Expect::RefuseUntouched, Ok(out)) => {
            tally.wrong_place += 1;
            fail("WRONG-PLACE (applied)", &out);
        }
        (Expect::Refuse | Expect::RefuseUntouched, Err(err)) => {
            let message = err.message();
            let right_code = matches!(err.code(), ErrorCode::NoMatch | ErrorCode::AmbiguousMatch);
            if now != before {
                tally.wrong_place += 1;
                fail("refused but CHANGED the file", message);
            } else if !right_code {
                fail(&format!("refused with code {:?}", err.code()), message);
            } else if let Some(lines) = case.lines {
                if points_at(message, lines) {
                    tally.refusals_pointing_right += 1;
                } else {
                    fail("refused, other lines", message);
                }
            }
        }
    }
    if case.expect == Expect::Apply && case.tolerant {
        tally.tolerant += 1;
    }
    if case.expect == Expect::Refuse {
        tally.refusals += 1;
    }
}

fn percent(n: usize, of: usize) -> f64 {
    if of == 0 {
        100.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

#[test]
fn failed_edit_corpus() {
    let mut dirs: Vec<(String, PathBuf)> = fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    dirs.sort();

    let mut tally = Tally::default();
    for (name, dir) in &dirs {
        check(name, dir, &mut tally);
    }

    println!("{:<48} {:<22} {:<30} message", "case", "expected", "got");
    for f in &tally.failures {
        println!(
            "{:<48} {:<22} {:<30} {}",
            f.case, f.expected, f.got, f.message
        );
    }
    let tolerant_rate = percent(tally.tolerant_applied, tally.tolerant);
    let refusal_rate = percent(tally.refusals_pointing_right, tally.refusals);
    println!("cases: {}", tally.cases);
    println!(
        "tolerant applied correctly: {}/{} ({tolerant_rate:.1}%)",
        tally.tolerant_applied, tally.tolerant
    );
    println!(
        "refusals pointing at the right lines: {}/{} ({refusal_rate:.1}%)",
        tally.refusals_pointing_right, tally.refusals
    );
    println!("wrong-place or corrupted edits: {}", tally.wrong_place);
    println!("exact controls missed: {}", tally.controls_missed);

    assert!(
        tally.cases >= MIN_CASES,
        "the corpus holds {} cases",
        tally.cases
    );
    assert_eq!(tally.wrong_place, 0, "wrong-place or corrupted edits");
    assert_eq!(tally.controls_missed, 0, "exact controls must apply");
    assert!(
        refusal_rate >= 95.0,
        "refusals pointing right: {refusal_rate:.1}%"
    );
    assert!(
        tolerant_rate >= 90.0,
        "tolerant applied: {tolerant_rate:.1}%"
    );
}

#[test]
fn named_regions_reads_single_lines_ranges_and_lists() {
    assert_eq!(named_regions("closest is line 12"), vec![(12, 12)]);
    assert_eq!(
        named_regions("at lines 3-5 and 10-12; nothing"),
        vec![(3, 5), (10, 12)]
    );
    assert_eq!(
        named_regions("places (at lines 4, 9, 20)"),
        vec![(4, 4), (9, 9), (20, 20)]
    );
    assert_eq!(named_regions("old_string has 3 lines and no match"), vec![]);
    assert!(points_at("see lines 40-44", [41, 45]));
    assert!(!points_at("see lines 40-44", [47, 50]));
    assert!(!points_at("see line 40", [40, 46]));
}
