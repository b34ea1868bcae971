//! No input makes the parser or the applier panic: arbitrary text, mutated
//! real patches, and the saved inputs in `tests/fixtures/no-panic/`.

// Test helpers panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;
use std::path::Path;

use agent_tools_patch::{LineKind, MemoryStore, Patch, apply, check, parse};
use proptest::prelude::*;

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The real patches of the fixture folders, with their `before/` trees.
fn seeds() -> Vec<(Vec<u8>, MemoryStore)> {
    let mut out = Vec::new();
    let mut dirs: Vec<_> = fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        if let Ok(text) = fs::read(dir.join("patch.diff")) {
            out.push((text, common::memory_store(&dir.join("before"))));
        }
    }
    out
}

/// A store where every path the patch reads holds the hunks' old lines, so
/// that applying gets past the lookup and exercises the engine.
fn store_for(patch: &Patch, extra: &[u8]) -> MemoryStore {
    let mut store = MemoryStore::new();
    for fp in &patch.files {
        if let Some(path) = &fp.old_path {
            let mut data = Vec::new();
            for h in &fp.hunks {
                for l in &h.lines {
                    if l.kind != LineKind::Insert {
                        data.extend_from_slice(&l.content);
                        data.push(b'\n');
                    }
                }
            }
            data.extend_from_slice(extra);
            store.insert(path.clone(), data);
        }
    }
    store
}

fn exercise(text: &[u8], base: Option<&MemoryStore>, extra: &[u8]) {
    let Ok(patch) = parse(text) else {
        return;
    };
    let mut derived = store_for(&patch, extra);
    let _ = check(&patch, &derived);
    let _ = apply(&patch, &mut derived);
    if let Some(base) = base {
        let mut store = base.clone();
        if let Err(e) = apply(&patch, &mut store) {
            // All or nothing: a failed apply leaves the store as it was.
            assert_eq!(&store, base, "{e}");
        }
    }
    let _ = apply(&patch, &mut MemoryStore::new());
}

#[derive(Debug, Clone)]
enum Mutation {
    DeleteLine(prop::sample::Index),
    DuplicateLine(prop::sample::Index),
    SwapLines(prop::sample::Index, prop::sample::Index),
    ReplaceLine(prop::sample::Index, String),
    ChangeDigit(prop::sample::Index, u8),
    Truncate(prop::sample::Index),
    InsertBytes(prop::sample::Index, Vec<u8>),
    ToCrlf,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let idx = any::<prop::sample::Index>;
    prop_oneof![
        idx().prop_map(Mutation::DeleteLine),
        idx().prop_map(Mutation::DuplicateLine),
        (idx(), idx()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (
            idx(),
            prop::sample::select(vec![
                "",
                " ",
                "-",
                "+",
                "\\",
                "@@",
                "@@ -1 +1 @@",
                "@@ -0,0 +0,0 @@",
                "--- /dev/null",
                "+++ /dev/null",
                "diff --git a/x b/x",
                "new file mode 100755",
                "deleted file mode 100644",
                "rename from x",
                "rename to y",
                "copy from f",
                "copy to g",
                "old mode 120000",
                "\\ No newline at end of file",
                "GIT binary patch",
                "--- a/../x",
                "+++ b/",
            ])
            .prop_map(str::to_owned)
        )
            .prop_map(|(i, s)| Mutation::ReplaceLine(i, s)),
        (idx(), 0u8..10).prop_map(|(i, d)| Mutation::ChangeDigit(i, d)),
        idx().prop_map(Mutation::Truncate),
        (idx(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(i, b)| Mutation::InsertBytes(i, b)),
        Just(Mutation::ToCrlf),
    ]
}

fn mutate(text: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = text.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    for m in mutations {
        if lines.is_empty() {
            lines.push(Vec::new());
        }
        let n = lines.len();
        match m {
            Mutation::DeleteLine(i) => {
                lines.remove(i.index(n));
            }
            Mutation::DuplicateLine(i) => {
                let l = lines[i.index(n)].clone();
                lines.insert(i.index(n), l);
            }
            Mutation::SwapLines(a, b) => lines.swap(a.index(n), b.index(n)),
            Mutation::ReplaceLine(i, s) => lines[i.index(n)] = s.as_bytes().to_vec(),
            Mutation::ChangeDigit(i, d) => {
                let line = &mut lines[i.index(n)];
                if let Some(pos) = line.iter().position(u8::is_ascii_digit) {
                    line[pos] = b'0' + d;
                }
            }
            Mutation::Truncate(i) => lines.truncate(i.index(n).max(1)),
            Mutation::InsertBytes(i, bytes) => {
                let line = &mut lines[i.index(n)];
                let at = i.index(line.len() + 1);
                line.splice(at..at, bytes.iter().copied());
            }
            Mutation::ToCrlf => {
                for l in &mut lines {
                    l.push(b'\r');
                }
            }
        }
    }
    lines.join(&b'\n')
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_does_not_panic(text in ".{0,400}") {
        exercise(text.as_bytes(), None, b"");
    }

    #[test]
    fn arbitrary_bytes_do_not_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        exercise(&bytes, None, &bytes);
    }

    #[test]
    fn patch_shaped_text_does_not_panic(
        lines in prop::collection::vec(
            prop_oneof![
                Just("--- a/f".to_owned()),
                Just("+++ b/f".to_owned()),
                Just("diff --git a/f b/f".to_owned()),
                Just("\\ No newline at end of file".to_owned()),
                (0usize..4, 0usize..4, 0usize..4, 0usize..4)
                    .prop_map(|(a, b, c, d)| format!("@@ -{a},{b} +{c},{d} @@")),
                "[ +-][a-c\r]{0,3}",
            ],
            0..30,
        ),
        extra in "[a-c\n\r]{0,20}",
    ) {
        exercise(lines.join("\n").as_bytes(), None, extra.as_bytes());
    }

    #[test]
    fn mutated_real_patches_do_not_panic(
        seed in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let seeds = seeds();
        let (text, before) = &seeds[seed.index(seeds.len())];
        exercise(&mutate(text, &mutations), Some(before), b"");
    }
}

#[test]
fn saved_inputs_do_not_panic() {
    let mut count = 0;
    for entry in fs::read_dir(fixtures().join("no-panic")).unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read(&path).unwrap();
        exercise(&text, None, b"");
        exercise(&text, None, b"x\ny\n");
        count += 1;
    }
    assert!(count > 0);
}
