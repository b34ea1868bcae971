//! Parses arbitrary bytes as a patch and, when that succeeds, applies it to
//! an in-memory store whose files hold the hunks' old lines (so the engine
//! runs, not just the lookups). The same bytes are also parsed wrapped in
//! `*** Begin Patch` / `*** End Patch`, so the codex parser and matcher get
//! inputs past their envelope check. Crashes it found are kept in
//! `crates/patch/tests/fixtures/no-panic/`. Run with
//! `cargo +nightly fuzz run parse_patch`.
#![no_main]

use agent_tools_patch::{LineKind, MemoryStore, apply, parse};
use libfuzzer_sys::fuzz_target;

/// Whether `inner` lies beneath `outer` taken as a folder.
fn nests(outer: &str, inner: &str) -> bool {
    inner
        .strip_prefix(outer)
        .is_some_and(|rest| rest.starts_with('/'))
}

fn run(data: &[u8]) {
    let Ok(patch) = parse(data) else {
        return;
    };
    let mut store = MemoryStore::new();
    let mut placed: Vec<&str> = Vec::new();
    for fp in &patch.files {
        if let Some(path) = &fp.old_path {
            // A file system cannot hold a file that is also a folder of
            // another file; such a store would make rollback fail for reasons
            // no real tree has.
            if placed
                .iter()
                .any(|other| nests(other, path) || nests(path, other))
            {
                continue;
            }
            placed.push(path);
            let mut content = Vec::new();
            for hunk in &fp.hunks {
                for context in &hunk.context {
                    content.extend_from_slice(context);
                    content.push(b'\n');
                }
                for line in &hunk.lines {
                    if line.kind != LineKind::Insert {
                        content.extend_from_slice(&line.content);
                        content.push(b'\n');
                    }
                }
            }
            store.insert(path.clone(), content);
        }
    }
    let before = store.clone();
    if apply(&patch, &mut store).is_err() {
        assert_eq!(
            store, before,
            "a failed apply must leave the store unchanged"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    run(data);
    let mut wrapped = b"*** Begin Patch\n".to_vec();
    wrapped.extend_from_slice(data);
    wrapped.extend_from_slice(b"\n*** End Patch\n");
    run(&wrapped);
});
