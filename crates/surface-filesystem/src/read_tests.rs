//! The reads of named files: which calls are brief, and how
//! `read_multiple_files` keeps to the answer's budget.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_tools::{AgentTools, BRIEF_READ_BYTES, CallContext, Config};
use serde_json::{Value, json};

use crate::FilesystemSurface;

fn tools(dir: &std::path::Path, max_output: u64) -> AgentTools {
    let config = Config::builder(dir)
        .max_output_bytes(max_output)
        .build()
        .unwrap();
    AgentTools::with_surface(config, FilesystemSurface).unwrap()
}

fn texts(tools: &AgentTools, name: &str, args: Value) -> Vec<String> {
    let outcome = tools.dispatch(name, args, &CallContext::default());
    assert!(!outcome.is_error(), "{}", outcome.text());
    let agent_tools::CallOutcome::Result(result) = outcome else {
        unreachable!()
    };
    result
        .content
        .iter()
        .map(|item| item.as_text().unwrap().to_owned())
        .collect()
}

#[test]
fn read_file_is_brief_for_small_files_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.txt"), "a\n").unwrap();
    let big = vec![b'x'; BRIEF_READ_BYTES as usize + 1];
    std::fs::write(dir.path().join("big.txt"), big).unwrap();
    let tools = tools(dir.path(), 256 * 1024);
    let brief = |path: &std::path::Path| {
        let args = json!({"path": path.to_string_lossy()});
        tools.is_brief("read_file", args.as_object().unwrap())
    };
    assert!(brief(&dir.path().join("small.txt")));
    assert!(!brief(&dir.path().join("big.txt")));
    assert!(brief(&dir.path().join("missing.txt")));
    assert!(brief(std::path::Path::new("/etc/passwd")));
    assert!(tools.is_brief("read_multiple_files", &serde_json::Map::new()));
    assert!(!tools.is_brief("write_file", &serde_json::Map::new()));
}

#[test]
fn read_multiple_files_stops_reading_where_the_answers_budget_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    for name in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        std::fs::write(dir.path().join(name), "é".repeat(1500)).unwrap();
    }
    let max_output = 6 * 1024;
    let tools = tools(dir.path(), max_output as u64);
    let names: Vec<String> = ["a.txt", "b.txt", "c.txt", "d.txt"]
        .iter()
        .map(|name| path(name))
        .collect();
    let items = texts(&tools, "read_multiple_files", json!({"paths": names}));
    let total: usize = items.iter().map(String::len).sum();
    assert!(total <= max_output, "{total}");
    // The first file whole, the second cut on a character boundary, the
    // rest named as not read.
    assert_eq!(items[0], format!("{}:\n{}", names[0], "é".repeat(1500)));
    assert!(
        items[1].starts_with(&format!("{}:\néé", names[1])),
        "{}",
        items[1]
    );
    assert!(
        items[1].ends_with("[cut: the answer's budget of 4096 bytes is spent; read this file alone to see the rest]"),
        "{}",
        items[1]
    );
    assert!(!items[1].contains('\u{FFFD}'), "{}", items[1]);
    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(
        items[2],
        format!(
            "[not read: the answer's budget of 4096 bytes was spent before 2 more file(s); read them in another call: {} {}]",
            names[2], names[3]
        )
    );
}

#[test]
fn a_long_list_of_files_not_read_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("{}.txt", "n".repeat(200));
    std::fs::write(dir.path().join(&name), "x".repeat(5000)).unwrap();
    let one = dir.path().join(&name).to_string_lossy().into_owned();
    let tools = tools(dir.path(), 6 * 1024);
    let items = texts(
        &tools,
        "read_multiple_files",
        json!({"paths": vec![one; 50]}),
    );
    let note = items.last().unwrap();
    assert!(note.starts_with("[not read: "), "{note}");
    assert!(note.contains(" more]"), "{note}");
    assert!(note.len() < 2048, "{}", note.len());
}
