//! Whole-tree snapshots for tests: every file's bytes, every directory and
//! every symlink target, keyed by `/`-separated path relative to the root.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A regular file's bytes.
    File(Vec<u8>),
    /// A directory (its entries are listed on their own).
    Dir,
    /// A symlink's target, as written.
    Symlink(String),
}

/// Every entry under `root` (not following symlinks), the root excluded.
pub fn snapshot(root: &Path) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Like [`snapshot`], files only (directories left out): what a patch corpus
/// `after/` folder is compared with.
pub fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    snapshot(root)
        .into_iter()
        .filter_map(|(path, entry)| match entry {
            Entry::File(bytes) => Some((path, bytes)),
            _ => None,
        })
        .collect()
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Entry>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()))
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            let target = fs::read_link(&path).unwrap();
            out.insert(rel, Entry::Symlink(target.to_string_lossy().into_owned()));
        } else if kind.is_dir() {
            out.insert(rel, Entry::Dir);
            walk(root, &path, out);
        } else {
            out.insert(rel, Entry::File(fs::read(&path).unwrap()));
        }
    }
}

/// Copies the tree at `from` into `to` (which must exist): files and
/// directories; symlinks are recreated with the same target.
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            fs::create_dir_all(&dst).unwrap();
            copy_tree(&src, &dst);
        } else {
            fs::copy(&src, &dst).unwrap();
            // A source kept without write bits (a shared read-only copy)
            // still gives files its owner may write, as a checkout has.
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&dst).unwrap().permissions().mode();
            fs::set_permissions(&dst, fs::Permissions::from_mode(mode | 0o200)).unwrap();
        }
    }
}

/// Asserts two trees are equal, naming the first differing path.
pub fn assert_same_tree(
    before: &BTreeMap<String, Entry>,
    after: &BTreeMap<String, Entry>,
    what: &str,
) {
    if before == after {
        return;
    }
    for (path, entry) in before {
        match after.get(path) {
            None => panic!("{what}: {path} disappeared"),
            Some(other) if other != entry => panic!(
                "{what}: {path} changed:\n  before: {}\n  after:  {}",
                show(entry),
                show(other)
            ),
            _ => {}
        }
    }
    for path in after.keys() {
        if !before.contains_key(path) {
            panic!("{what}: stray entry {path} appeared");
        }
    }
}

fn show(entry: &Entry) -> String {
    match entry {
        Entry::File(bytes) => format!("file {:?}", String::from_utf8_lossy(bytes)),
        Entry::Dir => "directory".into(),
        Entry::Symlink(target) => format!("symlink -> {target}"),
    }
}

/// `outer/ws`, canonical, so that tests can look around the workspace.
pub fn sandbox() -> (tempfile::TempDir, std::path::PathBuf) {
    let outer = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(outer.path()).unwrap().join("ws");
    fs::create_dir(&root).unwrap();
    (outer, root)
}
