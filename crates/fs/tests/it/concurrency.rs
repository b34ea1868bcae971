//! Writers across processes and against other programs: the cross-process
//! lock, the check that the target is unchanged before the rename, the sweep
//! of killed writers' temporary files, the metadata a replacement keeps, and
//! write_file's refusal of paths that name a directory.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use agent_tools_confine::{Confinement, Workspace};
use agent_tools_error::ErrorCode;
use agent_tools_fs::{
    EditFileArgs, Expected, FileStamp, FileTools, Limits, WriteFileArgs, open_regular, write_atomic,
};
use nix::fcntl::{Flock, FlockArg};

const CHILD_ENV: &str = "AGENT_TOOLS_CONCURRENCY_CHILD";
const EDITS: usize = 300;
const TARGET: &str = "shared.txt";

fn tools(root: &Path) -> FileTools {
    let ws = Workspace::open(root, Confinement::Confined).unwrap();
    FileTools::new(ws, Limits::default())
}

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap().join("ws");
    fs::create_dir(&root).unwrap();
    (dir, root)
}

fn marker(side: &str, i: usize, state: &str) -> String {
    format!("<{side}-{i}> {state}\n")
}

/// The child: `EDITS` edits of its own markers, one result line per edit
/// (`ok I` or `err I CODE`) in the results file.
#[test]
fn concurrency_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return; // Only does something when run as the child.
    };
    let mut parts = spec.splitn(3, '\n');
    let (root, side, results) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let tools = tools(Path::new(root));
    let mut log = String::new();
    for i in 0..EDITS {
        let args = EditFileArgs::new(
            TARGET,
            marker(side, i, "old"),
            marker(side, i, "new by an edit"),
        );
        match tools.edit_file(&args) {
            Ok(_) => log.push_str(&format!("ok {i}\n")),
            Err(err) => log.push_str(&format!("err {i} {}\n", err.code())),
        }
    }
    fs::write(results, log).unwrap();
}

#[test]
fn two_processes_editing_one_file_lose_no_edit() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let (dir, root) = workspace();
    let mut content = String::new();
    for i in 0..EDITS {
        content.push_str(&marker("A", i, "old"));
        content.push_str(&marker("B", i, "old"));
    }
    fs::write(root.join(TARGET), content).unwrap();

    let exe = std::env::current_exe().unwrap();
    let mut children = Vec::new();
    for side in ["A", "B"] {
        let results = dir.path().join(format!("results-{side}.txt"));
        let child = Command::new(&exe)
            .args([
                "--exact",
                "concurrency::concurrency_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                CHILD_ENV,
                format!("{}\n{side}\n{}", root.display(), results.display()),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        children.push((side, child, results));
    }
    let deadline = Instant::now() + Duration::from_secs(240);
    for (side, child, _) in &mut children {
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "child {side}: {status}");
                break;
            }
            if Instant::now() > deadline {
                child.kill().unwrap();
                panic!("child {side} did not finish in time");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    let after = fs::read_to_string(root.join(TARGET)).unwrap();
    let (mut succeeded, mut failed, mut lost) = (0, 0, Vec::new());
    for (side, _, results) in &children {
        for line in fs::read_to_string(results).unwrap().lines() {
            let mut words = line.split(' ');
            let (status, i) = (words.next().unwrap(), words.next().unwrap());
            let i: usize = i.parse().unwrap();
            if status == "ok" {
                succeeded += 1;
                if !after.contains(&marker(side, i, "new by an edit")) {
                    lost.push(format!("{side}-{i}"));
                }
            } else {
                failed += 1;
            }
        }
    }
    eprintln!(
        "2 processes x {EDITS} edits: {succeeded} succeeded, {failed} failed, {} lost",
        lost.len()
    );
    assert_eq!(succeeded + failed, 2 * EDITS);
    assert!(lost.is_empty(), "edits reported as done but lost: {lost:?}");
    // Waiting on the lock, not failing, is what the other process meets.
    assert_eq!(failed, 0);
}

#[test]
fn a_change_by_a_program_that_takes_no_lock_is_not_overwritten() {
    let (_dir, root) = workspace();
    let ws = Workspace::open(&root, Confinement::Confined).unwrap();
    let path = ws.resolve("f.txt").unwrap();

    // Changed in place after the read: same inode, other size.
    fs::write(root.join("f.txt"), "one\n").unwrap();
    let (_file, meta) = open_regular(&ws, &path).unwrap();
    let seen = FileStamp::of_std(&meta);
    fs::write(root.join("f.txt"), "one, changed elsewhere\n").unwrap();
    let err = write_atomic(&ws, &path, b"mine\n", Expected::Same(seen)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::IoError);
    assert!(
        err.message().contains("changed on disk since it was read"),
        "{}",
        err.message()
    );
    assert_eq!(
        fs::read_to_string(root.join("f.txt")).unwrap(),
        "one, changed elsewhere\n"
    );

    // Replaced by a rename after the read: same size, same content, a new inode.
    let (_file, meta) = open_regular(&ws, &path).unwrap();
    let seen = FileStamp::of_std(&meta);
    fs::write(root.join("other"), "one, changed elsewhere\n").unwrap();
    fs::rename(root.join("other"), root.join("f.txt")).unwrap();
    let err = write_atomic(&ws, &path, b"mine\n", Expected::Same(seen)).unwrap_err();
    assert!(
        err.message().contains("changed on disk"),
        "{}",
        err.message()
    );

    // Created by someone else while we meant to create it.
    let new = ws.resolve("new.txt").unwrap();
    fs::write(root.join("new.txt"), "theirs\n").unwrap();
    let err = write_atomic(&ws, &new, b"mine\n", Expected::Absent).unwrap_err();
    assert_eq!(err.code(), ErrorCode::IoError);
    assert!(
        err.message().contains("another program created it"),
        "{}",
        err.message()
    );
    assert_eq!(
        fs::read_to_string(root.join("new.txt")).unwrap(),
        "theirs\n"
    );

    // Unchanged: the write goes through, and its stamp is what is on disk.
    let (_file, meta) = open_regular(&ws, &path).unwrap();
    let written = write_atomic(
        &ws,
        &path,
        b"mine\n",
        Expected::Same(FileStamp::of_std(&meta)),
    )
    .unwrap();
    assert_eq!(fs::read_to_string(root.join("f.txt")).unwrap(), "mine\n");
    let (_file, meta) = open_regular(&ws, &path).unwrap();
    assert_eq!(FileStamp::of_std(&meta), written);
    // No temporary file is left by the refused writes.
    let leftovers: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".agent-tools.tmp."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn open_regular_refuses_a_fifo_without_blocking() {
    let (_dir, root) = workspace();
    nix::unistd::mkfifo(
        &root.join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let (tx, rx) = mpsc::channel();
    let thread_root = root.clone();
    std::thread::spawn(move || {
        let ws = Workspace::open(&thread_root, Confinement::Confined).unwrap();
        let path = ws.resolve("pipe").unwrap();
        let _ = tx.send(open_regular(&ws, &path).map(drop).unwrap_err().code());
    });
    let code = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("opening a FIFO blocked");
    assert_eq!(code, ErrorCode::NotAFile);
}

fn lock(path: &Path) -> Flock<fs::File> {
    Flock::lock(fs::File::open(path).unwrap(), FlockArg::LockExclusive).unwrap()
}

#[test]
fn a_writer_waits_for_the_lock_of_another_process_and_follows_a_replaced_file() {
    let (_dir, root) = workspace();
    fs::write(root.join("f.txt"), "first\n").unwrap();
    // Another process (here: this test's own descriptor, which flock treats
    // alike) holds the lock of the file's inode.
    let first = lock(&root.join("f.txt"));

    let (tx, rx) = mpsc::channel();
    let thread_root = root.clone();
    std::thread::spawn(move || {
        let tools = tools(&thread_root);
        let result = tools.write_file(&WriteFileArgs::new("f.txt", "from the waiting writer\n"));
        let _ = tx.send(result.map_err(|err| err.message().to_string()));
    });
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(fs::read_to_string(root.join("f.txt")).unwrap(), "first\n");

    // The holder replaces the file (a new inode, locked by it too) and then
    // lets go of the old one: the waiting writer must now wait on the new one.
    fs::write(root.join("next"), "second\n").unwrap();
    let second = lock(&root.join("next"));
    fs::rename(root.join("next"), root.join("f.txt")).unwrap();
    drop(first);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(fs::read_to_string(root.join("f.txt")).unwrap(), "second\n");

    drop(second);
    let result = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the writer never finished");
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(
        fs::read_to_string(root.join("f.txt")).unwrap(),
        "from the waiting writer\n"
    );
}

#[test]
fn the_next_write_in_a_folder_sweeps_leftovers_of_dead_writers_only() {
    let (_dir, root) = workspace();
    fs::create_dir(root.join("sub")).unwrap();
    // A pid that is surely gone: a child that exited and was reaped.
    let mut child = Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    let dead = child.id();
    let leftover = format!(".a.txt.agent-tools.tmp.{dead}.7");
    let keep = [
        ".a.txt.agent-tools.tmp.1.7".to_string(), // pid 1 is alive
        format!(".a.txt.agent-tools.tmp.{dead}.7.orig"),
        format!("a.txt.agent-tools.tmp.{dead}.7"),
        format!(".a.txt.tmp.{dead}.7"),
    ];
    fs::write(root.join("sub").join(&leftover), "partial").unwrap();
    for name in &keep {
        fs::write(root.join("sub").join(name), "user data").unwrap();
    }
    // A directory with a leftover's name is not a leftover.
    let dir_named = format!(".b.txt.agent-tools.tmp.{dead}.8");
    fs::create_dir(root.join("sub").join(&dir_named)).unwrap();

    // A write of another file in the same folder sweeps.
    tools(&root)
        .write_file(&WriteFileArgs::new("sub/other.txt", "x"))
        .unwrap();
    assert!(!root.join("sub").join(&leftover).exists());
    for name in &keep {
        assert_eq!(
            fs::read_to_string(root.join("sub").join(name)).unwrap(),
            "user data",
            "{name}"
        );
    }
    assert!(root.join("sub").join(&dir_named).is_dir());
}

#[test]
fn write_file_refuses_a_path_that_names_a_directory() {
    let (_dir, root) = workspace();
    fs::write(root.join("a.txt"), "keep\n").unwrap();
    let tools = tools(&root);
    for path in ["a.txt/", "newdir/", "newdir/.", "a.txt/."] {
        let err = tools
            .write_file(&WriteFileArgs::new(path, "x"))
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::NotAFile, "{path}");
        assert!(
            err.message().contains("names a directory"),
            "{}",
            err.message()
        );
    }
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "keep\n");
    assert!(!root.join("newdir").exists());
}

#[test]
fn a_rewrite_keeps_extended_attributes_and_clears_set_id_bits() {
    use xattr::FileExt;
    let (_dir, root) = workspace();
    let file = root.join("tool.sh");
    fs::write(&file, "echo 1\n").unwrap();
    let tagged = fs::File::open(&file)
        .unwrap()
        .set_xattr("user.tag", b"kept");
    if let Err(err) = &tagged {
        eprintln!("skipped the extended-attribute part: {err}");
    }
    fs::set_permissions(&file, fs::Permissions::from_mode(0o4755)).unwrap();
    let set_id_applied = fs::metadata(&file).unwrap().mode() & 0o4000 != 0;

    let tools = tools(&root);
    tools
        .edit_file(&EditFileArgs::new("tool.sh", "echo 1", "echo 2"))
        .unwrap();
    assert_eq!(fs::read_to_string(&file).unwrap(), "echo 2\n");
    let mode = fs::metadata(&file).unwrap().mode() & 0o7777;
    assert_eq!(mode, 0o755, "{mode:o}");
    if set_id_applied {
        eprintln!("set-user-ID was set and is cleared by the rewrite");
    }
    if tagged.is_ok() {
        let value = fs::File::open(&file)
            .unwrap()
            .get_xattr("user.tag")
            .unwrap();
        assert_eq!(value.as_deref(), Some(&b"kept"[..]));
    }

    tools
        .write_file(&WriteFileArgs::new("tool.sh", "echo 3\n"))
        .unwrap();
    if tagged.is_ok() {
        let value = fs::File::open(&file)
            .unwrap()
            .get_xattr("user.tag")
            .unwrap();
        assert_eq!(value.as_deref(), Some(&b"kept"[..]));
    }
}
