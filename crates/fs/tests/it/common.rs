//! Test workspaces for the read tools' tests: a tempdir holding the
//! workspace `ws/` and a sibling `outside/`, so escapes have somewhere to land.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use agent_tools_confine::{Confinement, Workspace};
use agent_tools_fs::{FileTools, Limits};
use tempfile::TempDir;

pub struct Ws {
    _dir: TempDir,
    pub root: PathBuf,
    pub outside: PathBuf,
    pub tools: FileTools,
}

/// A workspace holding `files` (a path ending in `/` is a directory), with
/// the default limits.
pub fn tree<C: AsRef<[u8]>>(files: &[(&str, C)]) -> Ws {
    tree_with(Limits::default(), files)
}

/// A workspace holding `files`, with `limits`. `outside/secret.txt` holds
/// `needle outside`.
pub fn tree_with<C: AsRef<[u8]>>(limits: Limits, files: &[(&str, C)]) -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let outside = dir.path().join("outside");
    fs::create_dir(&root).unwrap();
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret.txt"), "needle outside\n").unwrap();
    let workspace = Workspace::open(&root, Confinement::Confined).unwrap();
    let ws = Ws {
        root: workspace.root().to_path_buf(),
        outside,
        tools: FileTools::new(workspace, limits),
        _dir: dir,
    };
    for (path, content) in files {
        ws.put(path, content);
    }
    ws
}

impl Ws {
    /// Writes `content` at `path` (creating parents); a path ending in `/`
    /// makes a directory.
    pub fn put(&self, path: &str, content: impl AsRef<[u8]>) {
        let full = self.root.join(path);
        if path.ends_with('/') {
            fs::create_dir_all(&full).unwrap();
        } else {
            fs::create_dir_all(full.parent().unwrap()).unwrap();
            fs::write(&full, content).unwrap();
        }
    }

    /// Sets the modification time of `path` to `secs` after a fixed epoch.
    pub fn age(&self, path: &str, secs: u64) {
        let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000 + secs);
        let file = fs::File::options()
            .write(true)
            .open(self.root.join(path))
            .unwrap();
        file.set_modified(when).unwrap();
    }
}

/// Set in a child started by [`in_own_process`]: run the test's body there.
const OWN_PROCESS_ENV: &str = "AGENT_TOOLS_TEST_OWN_PROCESS";

/// For a test that measures its whole process (peak RSS): every test of
/// the package shares one process, so the test runs again alone in a child
/// of this binary. Returns true in that child, where the body runs; in the
/// parent it waits for the child, fails if it failed, and returns false.
pub fn in_own_process(test: &str) -> bool {
    if std::env::var_os(OWN_PROCESS_ENV).is_some() {
        return true;
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(OWN_PROCESS_ENV, "1")
        .status()
        .unwrap();
    assert!(status.success(), "{test} in its own process: {status}");
    false
}
