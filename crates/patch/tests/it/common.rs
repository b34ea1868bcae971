//! Helpers shared by the integration tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use agent_tools_patch::MemoryStore;

/// Every regular file under `root`, by `/`-separated relative path.
pub fn read_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if root.is_dir() {
        walk(root, root, &mut out);
    }
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(root, &path, out);
        } else {
            let rel = path.strip_prefix(root).unwrap();
            let rel = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.insert(rel, fs::read(&path).unwrap());
        }
    }
}

/// Copies every file of `from` into `to` (which exists), with default modes.
pub fn copy_tree(from: &Path, to: &Path) {
    for (rel, data) in read_tree(from) {
        let dst = to.join(&rel);
        fs::create_dir_all(dst.parent().unwrap()).unwrap();
        fs::write(&dst, data).unwrap();
    }
}

/// A memory store holding the files under `root`.
pub fn memory_store(root: &Path) -> MemoryStore {
    read_tree(root).into_iter().collect()
}

/// Asserts two trees are equal, naming the first difference.
pub fn assert_trees_equal(
    case: &str,
    got: &BTreeMap<String, Vec<u8>>,
    want: &BTreeMap<String, Vec<u8>>,
) {
    for (path, data) in want {
        match got.get(path) {
            None => panic!("{case}: {path} is missing"),
            Some(g) if g != data => panic!(
                "{case}: {path} differs\n--- got ---\n{}\n--- want ---\n{}",
                String::from_utf8_lossy(g),
                String::from_utf8_lossy(data)
            ),
            Some(_) => {}
        }
    }
    for path in got.keys() {
        assert!(want.contains_key(path), "{case}: {path} should not exist");
    }
}

/// Checks that every file the patch gives a mode to has the executable bit
/// that mode says, under `root`.
pub fn assert_exec_bits(name: &str, patch: &agent_tools_patch::Patch, root: &std::path::Path) {
    #[cfg(unix)]
    for fp in &patch.files {
        use std::os::unix::fs::PermissionsExt;
        if let (Some(path), Some(mode)) = (&fp.new_path, fp.new_mode) {
            let got = std::fs::metadata(root.join(path))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(
                got & 0o100 != 0,
                mode & 0o100 != 0,
                "{name}: exec bit of {path}"
            );
        }
    }
}
