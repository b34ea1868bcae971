//! A writer killed at a random moment never leaves a partial file under the
//! target's name.
//!
//! The test re-runs its own binary as a child (selected by an environment
//! variable) that overwrites one large file with write_file in a loop, and
//! SIGKILLs it at random moments. After every kill the target must hold
//! exactly one of the two contents the child alternates between.
//!
//! A process killed between creating its temporary file and renaming it
//! leaves that temporary file (`.<name>.agent-tools.tmp.<pid>.<n>`) behind.
//! Those leftovers never carry the target's name, and the next write into
//! the folder removes them (their process is gone); the test checks that,
//! and that files whose names merely look alike are left alone.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_tools_confine::{Confinement, Workspace};
use agent_tools_fs::{FileTools, Limits, WriteFileArgs};

const CHILD_ENV: &str = "AGENT_TOOLS_CRASH_WRITE_CHILD";
const TARGET: &str = "big.txt";
const SIZE: usize = 24 * 1024 * 1024;
const KILLS: usize = 30;

/// The two contents: same length, different bytes throughout, so any mix of
/// them (or a truncated copy) is recognisable.
fn content(which: u8) -> String {
    let line = if which == 0 {
        "old old old old old old old old old old old old old old old\n"
    } else {
        "NEW NEW NEW NEW NEW NEW NEW NEW NEW NEW NEW NEW NEW NEW NEW\n"
    };
    line.repeat(SIZE / line.len())
}

fn tools(root: &Path) -> FileTools {
    let ws = Workspace::open(root, Confinement::Confined).unwrap();
    FileTools::new(ws, Limits::default())
}

/// The child: write the two contents alternately until killed.
#[test]
fn crash_write_child() {
    let Ok(root) = std::env::var(CHILD_ENV) else {
        return; // Only does something when run as the child.
    };
    let tools = tools(Path::new(&root));
    let contents = [content(0), content(1)];
    fs::write(Path::new(&root).join("child-started"), b"").unwrap();
    for round in 0usize.. {
        tools
            .write_file(&WriteFileArgs::new(
                TARGET,
                contents[(round + 1) % 2].as_str(),
            ))
            .unwrap();
    }
}

/// A small xorshift generator seeded from the clock: random enough to spread
/// the kills over the write cycle.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        Rng(seed | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn temp_files(root: &Path) -> Vec<String> {
    fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".agent-tools.tmp.") && !LOOKALIKES.contains(&name.as_str()))
        .collect()
}

/// Names like a leftover's but not one (or one of a live process), which a
/// sweep must never remove.
const LOOKALIKES: &[&str] = &[
    ".big.txt.agent-tools.tmp.4194303.1.bak",
    ".big.txt.tmp.4194303.1",
    "big.txt.agent-tools.tmp.4194303.1",
    ".big.txt.agent-tools.tmp.41x.1",
    // pid 1 is always alive.
    ".big.txt.agent-tools.tmp.1.1",
];

#[test]
fn killed_writer_never_leaves_a_partial_file() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let tools = tools(root);
    let old = content(0);
    let new = content(1);
    tools
        .write_file(&WriteFileArgs::new(TARGET, old.as_str()))
        .unwrap();

    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng::new();
    for name in LOOKALIKES {
        fs::write(root.join(name), b"user data\n").unwrap();
    }
    let mut seen = [0usize; 2];
    let mut kills_leaving_temp = 0;
    let mut most_left = 0;
    for kill in 0..KILLS {
        let started = root.join("child-started");
        let _ = fs::remove_file(&started);
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_write::crash_write_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !started.exists() {
            assert!(Instant::now() < deadline, "child did not start");
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(rng.below(250)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let bytes = fs::read(root.join(TARGET)).unwrap();
        let which = if bytes == old.as_bytes() {
            0
        } else if bytes == new.as_bytes() {
            1
        } else {
            panic!(
                "kill {kill}: the target holds {} bytes that are neither the old nor the new content",
                bytes.len()
            );
        };
        seen[which] += 1;
        let left = temp_files(root).len();
        if left > 0 {
            kills_leaving_temp += 1;
        }
        most_left = most_left.max(left);
    }
    eprintln!(
        "{KILLS} kills: old content {} times, new content {} times; {kills_leaving_temp} kills left a temporary file, never more than {most_left} at once",
        seen[0], seen[1],
    );
    // The kills did land during writes: killed writers left temporary files.
    assert!(kills_leaving_temp > 0);
    // Each child's first write swept what the one before it left.
    assert!(most_left <= 1, "{most_left} leftovers at once");

    // A successful write leaves the target whole and sweeps the leftovers
    // of killed writers, and only those.
    tools
        .write_file(&WriteFileArgs::new(TARGET, "done\n"))
        .unwrap();
    assert_eq!(fs::read(root.join(TARGET)).unwrap(), b"done\n");
    assert_eq!(temp_files(root), Vec::<String>::new());
    for name in LOOKALIKES {
        assert_eq!(fs::read(root.join(name)).unwrap(), b"user data\n", "{name}");
    }
}
