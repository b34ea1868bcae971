//! The command sandbox end to end: `agent-tools mcp --sandbox` over stdio.
//! Every test skips, saying why, on a kernel without Landlock.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::mcp_client;
use agent_tools_test_support::tree;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use mcp_client::McpClient;
use serde_json::{Value, json};
use tree::sandbox;

/// Whether the kernel has Landlock; prints why not when it has none.
fn landlock() -> bool {
    match agent_tools_bash::sandbox::landlock_abi() {
        Ok(_) => true,
        Err(err) => {
            eprintln!("skipped: no command sandbox on this machine: {err}");
            false
        }
    }
}

/// A `bash` call: the result object (an error envelope as an object too).
fn bash(client: &mut McpClient, command: &str) -> Value {
    let (_, text) = client.call("bash", json!({"command": command}));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn sandboxed(root: &Path) -> McpClient {
    McpClient::start_guarded(root, &["--sandbox"])
}

/// Whether `text` holds a refused write: Landlock's `EACCES`, seccomp's
/// `EPERM`, or the read-only mount's `EROFS` (which the kernel checks
/// first, where a namespace could be made).
fn names_a_refused_write(text: &str) -> bool {
    [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ]
    .iter()
    .any(|phrase| text.contains(phrase))
}

/// Runs `command` in the sandbox and expects it to fail with a refusal that
/// the result names.
fn assert_refused(client: &mut McpClient, command: &str) -> Value {
    let result = bash(client, command);
    assert_ne!(result["exit_code"], 0, "{command}: {result}");
    let stderr = result["stderr"].as_str().unwrap();
    assert!(names_a_refused_write(stderr), "{command}: {result}");
    let note = result["sandbox"].as_str().unwrap_or_default();
    assert!(note.contains("may have refused"), "{command}: {result}");
    result
}

#[test]
fn nothing_outside_the_root_can_be_created_changed_or_deleted() {
    if !landlock() {
        return;
    }
    let (outer, root) = sandbox();
    let outside = outer.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("keep.txt"), "original\n").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
    let before = tree::snapshot(&outside);
    let out = outside.display().to_string();
    let mut client = sandboxed(&root);
    for command in [
        format!("touch {out}/new"),
        format!("echo changed > {out}/keep.txt"),
        format!("rm {out}/keep.txt"),
        format!("mkdir {out}/dir"),
        format!("mv {out}/keep.txt {out}/moved"),
        format!("truncate -s 0 {out}/keep.txt"),
        "touch ../outside/new".to_string(),
        "echo changed > ../outside/keep.txt".to_string(),
        "touch link/new".to_string(),
        "echo changed > link/keep.txt".to_string(),
        "rm link/keep.txt".to_string(),
        "ln -s /etc/passwd ../outside/ln".to_string(),
    ] {
        assert_refused(&mut client, &command);
    }
    assert_eq!(tree::snapshot(&outside), before);
    // Inside the root everything works, and a success carries no note.
    let result = bash(
        &mut client,
        "mkdir -p d && echo hi > d/f && mv d/f d/g && cat d/g && rm -r d",
    );
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(result["stdout"], "hi\n");
    assert!(result.get("sandbox").is_none(), "{result}");
    client.shutdown();
}

#[test]
fn every_surface_runs_its_commands_in_the_sandbox() {
    if !landlock() {
        return;
    }
    let (outer, root) = sandbox();
    let target = outer.path().join("from-codex");
    let mut client = McpClient::start_guarded(&root, &["--surface", "codex", "--sandbox"]);
    let (is_error, text) = client.call(
        "shell",
        json!({"command": ["touch", target.display().to_string()]}),
    );
    assert!(is_error, "{text}");
    assert!(names_a_refused_write(&text), "{text}");
    assert!(text.contains("may have refused"), "{text}");
    assert!(!target.exists());
    let (is_error, text) = client.call("shell", json!({"command": ["touch", "inside"]}));
    assert!(!is_error, "{text}");
    assert!(root.join("inside").exists());
    client.shutdown();

    // The Claude Code surface, foreground and background.
    let target = outer.path().join("from-claude");
    let mut client = McpClient::start_guarded(&root, &["--surface", "claude-code", "--sandbox"]);
    let (is_error, text) = client.call(
        "Bash",
        json!({"command": format!("touch {}", target.display())}),
    );
    assert!(is_error, "{text}");
    assert!(text.contains("may have refused"), "{text}");
    let late = outer.path().join("from-claude-background");
    let (is_error, text) = client.call(
        "Bash",
        json!({"command": format!("touch {}; touch bg-done", late.display()), "run_in_background": true}),
    );
    assert!(!is_error, "{text}");
    wait_for_file(&root.join("bg-done"));
    assert!(!target.exists() && !late.exists());
    client.shutdown();
}

#[test]
fn the_filesystem_surface_confines_commands_to_its_writable_roots() {
    if !landlock() {
        return;
    }
    let (outer, root) = sandbox();
    let second = outer.path().join("second");
    let frozen = outer.path().join("frozen");
    std::fs::create_dir_all(&second).unwrap();
    std::fs::create_dir_all(&frozen).unwrap();
    let mut client = McpClient::start_guarded(
        &root,
        &[
            "--surface",
            "filesystem",
            "--sandbox",
            "--root",
            second.to_str().unwrap(),
            "--read-only-root",
            frozen.to_str().unwrap(),
        ],
    );
    let run =
        |client: &mut McpClient, command: String| client.call("bash", json!({"command": command}));
    let (is_error, text) = run(&mut client, format!("touch {}/a", second.display()));
    assert!(!is_error, "a second writable root is writable: {text}");
    assert!(second.join("a").exists());
    let (is_error, text) = run(&mut client, format!("touch {}/a", frozen.display()));
    assert!(is_error, "{text}");
    assert!(text.contains("may have refused"), "{text}");
    assert!(!frozen.join("a").exists());
    let (is_error, text) = run(&mut client, format!("touch {}/a", outer.path().display()));
    assert!(is_error, "{text}");
    assert!(!outer.path().join("a").exists());
    client.shutdown();
}

#[test]
fn read_only_mode_offers_no_command_tool_on_any_surface() {
    if !landlock() {
        return;
    }
    let (_outer, root) = sandbox();
    for surface in ["agent-tools", "codex"] {
        let mut client =
            McpClient::start_guarded(&root, &["--surface", surface, "--read-only", "--sandbox"]);
        let listed = client.request("tools/list", json!({}));
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(
            !names.contains(&"bash") && !names.contains(&"shell"),
            "{surface}: {names:?}"
        );
        client.shutdown();
    }
}

/// Runs the launcher as the server does, with `policy` arguments, and the
/// shell command `command`.
fn launch(policy: &[&str], command: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .arg("__run-command")
        .arg("--parent-pid")
        .arg(std::process::id().to_string())
        .args(policy)
        .args(["--", "/bin/sh", "-c", command])
        .output()
        .unwrap()
}

#[test]
fn a_read_only_root_is_read_only_to_commands() {
    // With one root, read-only mode offers no command tool, so the policy
    // the facade makes for it is tried on the launcher directly.
    if !landlock() {
        return;
    }
    let (outer, root) = sandbox();
    let writable = outer.path().join("writable");
    std::fs::create_dir(&writable).unwrap();
    std::fs::write(root.join("f"), "original\n").unwrap();
    let (ro, rw) = (root.display().to_string(), writable.display().to_string());
    let policy = [
        "--sandbox",
        "--sandbox-read-only",
        &ro,
        "--sandbox-write",
        &rw,
    ];
    let output = launch(
        &policy,
        &format!("cat {ro}/f; echo x > {ro}/f; touch {ro}/new; touch {rw}/ok"),
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "original\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr
            .lines()
            .filter(|line| names_a_refused_write(line))
            .count(),
        2,
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("f")).unwrap(),
        "original\n"
    );
    assert!(!root.join("new").exists());
    assert!(writable.join("ok").exists());
}

#[test]
fn the_launcher_refuses_to_run_what_it_cannot_confine() {
    if !landlock() {
        return;
    }
    let (outer, root) = sandbox();
    let missing = outer.path().join("missing").display().to_string();
    let marker = root.join("ran");
    let command = format!("touch {}", marker.display());
    let output = launch(&["--sandbox", "--sandbox-write", &missing], &command);
    assert_eq!(output.status.code(), Some(126));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("was not run"), "{stderr}");
    assert!(stderr.contains("missing"), "{stderr}");
    assert!(!marker.exists());
    // Arguments that spell no policy are a usage error; nothing runs.
    let output = launch(&["--sandbox", "--sandbox-write"], &command);
    assert_eq!(output.status.code(), Some(125));
    let output = launch(&["--sandbox", "--sandbox-write", "relative"], &command);
    assert_eq!(output.status.code(), Some(125));
    assert!(!marker.exists());
}

#[test]
fn the_launcher_refuses_to_run_without_a_session_of_its_own() {
    // A process group's leader cannot start a session: the command would
    // keep the caller's terminal, so nothing runs.
    use std::os::unix::process::CommandExt as _;
    let (_outer, root) = sandbox();
    let marker = root.join("ran");
    let output = Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .arg("__run-command")
        .arg("--parent-pid")
        .arg(std::process::id().to_string())
        .args(["--", "/bin/sh", "-c"])
        .arg(format!("touch {}", marker.display()))
        .process_group(0)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(126));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("session"), "{stderr}");
    assert!(!marker.exists());
}

/// Whether `program` can be found by the sandboxed shell.
fn have(client: &mut McpClient, program: &str) -> bool {
    let found = bash(client, &format!("command -v {program}"))["exit_code"] == 0;
    if !found {
        eprintln!("skipped {program}: not installed");
    }
    found
}

#[test]
fn system_files_and_the_toolchain_work_inside() {
    if !landlock() {
        return;
    }
    let (_outer, root) = sandbox();
    let mut client = sandboxed(&root);
    let result = bash(&mut client, "head -n 1 /etc/passwd");
    assert_eq!(result["exit_code"], 0, "{result}");
    assert!(result["stdout"].as_str().unwrap().contains(':'), "{result}");
    for (program, command, expect) in [
        ("cc", "cc --version", ""),
        ("python3", "python3 -c 'print(1)'", "1\n"),
        ("cargo", "cargo --version", "cargo "),
    ] {
        if !have(&mut client, program) {
            continue;
        }
        let result = bash(&mut client, command);
        assert_eq!(result["exit_code"], 0, "{command}: {result}");
        assert!(
            result["stdout"].as_str().unwrap().starts_with(expect),
            "{command}: {result}"
        );
    }
    if have(&mut client, "cc") {
        // A real build: the compiler's temporary files go to TMPDIR.
        std::fs::write(root.join("m.c"), "int main(void) { return 7; }\n").unwrap();
        let result = bash(&mut client, "cc -o m m.c && ./m");
        assert_eq!(result["exit_code"], 7, "{result}");
    }
    client.shutdown();
}

#[test]
fn commands_get_a_private_tmpdir_that_goes_with_the_server() {
    if !landlock() {
        return;
    }
    let (_outer, root) = sandbox();
    let mut client = sandboxed(&root);
    let result = bash(
        &mut client,
        "printf %s \"$TMPDIR\"; f=$(mktemp) && echo hi > \"$f\" && cat \"$f\" >&2",
    );
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(result["stderr"], "hi\n", "{result}");
    let tmp = PathBuf::from(result["stdout"].as_str().unwrap());
    assert!(tmp.is_absolute() && tmp != Path::new("/tmp"), "{result}");
    assert!(tmp.is_dir());
    // The shared /tmp is outside the sandbox.
    assert_refused(&mut client, "touch /tmp/agent-tools-sandbox-test-escape");
    client.shutdown();
    assert!(!tmp.exists(), "{} left behind", tmp.display());
}

/// A Python one-liner connecting to `port` on 127.0.0.1; prints `connected`.
fn connect(port: u16) -> String {
    format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5); print(\"connected\")'"
    )
}

#[test]
fn the_network_is_off_unless_allowed() {
    if !landlock() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (_outer, root) = sandbox();
    let mut client = sandboxed(&root);
    if !have(&mut client, "python3") {
        return;
    }
    let result = assert_refused(&mut client, &connect(port));
    assert!(
        result["sandbox"]
            .as_str()
            .unwrap()
            .contains("network is off"),
        "{result}"
    );
    // Other families than TCP are refused as well (UDP here).
    assert_refused(
        &mut client,
        "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)'",
    );
    client.shutdown();

    let mut client = McpClient::start_guarded(&root, &["--sandbox", "--sandbox-network"]);
    let result = bash(&mut client, &connect(port));
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(result["stdout"], "connected\n");
    client.shutdown();
}

/// Waits (bounded) until `path` exists.
fn wait_for_file(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn background_jobs_and_their_children_stay_confined() {
    if !landlock() {
        return;
    }
    let (outer, root) = sandbox();
    let out = outer.path().display().to_string();
    let mut client = sandboxed(&root);
    // The job reports its own exit status inside the root when it is done.
    let result = bash(
        &mut client,
        &format!(
            "(sleep 0.2 && touch {out}/bg; echo $? > bg.done) > /dev/null 2>&1 &\n\
             (setsid sh -c 'sh -c \"touch {out}/grandchild\"; echo $? > child.done') > /dev/null 2>&1 &"
        ),
    );
    assert_eq!(result["exit_code"], 0, "{result}");
    for done in ["bg.done", "child.done"] {
        let done = root.join(done);
        wait_for_file(&done);
        // Written but perhaps not yet flushed: wait for the newline.
        let start = Instant::now();
        let status = loop {
            let text = std::fs::read_to_string(&done).unwrap();
            if text.ends_with('\n') || start.elapsed() > Duration::from_secs(20) {
                break text;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_ne!(status.trim(), "0", "{}", done.display());
    }
    assert!(!outer.path().join("bg").exists());
    assert!(!outer.path().join("grandchild").exists());
    client.shutdown();
}

#[test]
fn without_the_sandbox_nothing_changes() {
    let (outer, root) = sandbox();
    let target = outer.path().join("written-from-bash");
    let mut client = McpClient::start_guarded(&root, &[]);
    let result = bash(
        &mut client,
        &format!("touch {}; echo \"${{TMPDIR-unset}}\"", target.display()),
    );
    assert_eq!(result["exit_code"], 0, "{result}");
    assert!(target.exists());
    assert!(result.get("sandbox").is_none(), "{result}");
    // A failure that looks like a refusal is not called one.
    let result = bash(&mut client, "echo 'Permission denied' >&2; exit 1");
    assert!(result.get("sandbox").is_none(), "{result}");
    client.shutdown();
}

#[test]
fn startup_fails_clearly_when_the_sandbox_cannot_be_set_up() {
    let (_outer, root) = sandbox();
    let run = |args: &[&str], tmpdir: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agent-tools"));
        command.arg("mcp").arg("--root").arg(&root).args(args);
        if let Some(tmpdir) = tmpdir {
            command.env("TMPDIR", tmpdir);
        }
        command.stdin(std::process::Stdio::null()).output().unwrap()
    };
    // The network switch alone is a usage error.
    let output = run(&["--sandbox-network"], None);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--sandbox"));
    if !landlock() {
        // Where Landlock is missing, --sandbox itself is refused.
        let output = run(&["--sandbox"], None);
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--sandbox cannot be used here"), "{stderr}");
        return;
    }
    let output = run(&["--sandbox"], Some("/nonexistent-agent-tools-tmp"));
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("temporary folder"), "{stderr}");
}

#[test]
fn status_names_the_landlock_abi() {
    let output = Command::new(env!("CARGO_BIN_EXE_agent-tools"))
        .arg("status")
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let line = text.lines().find(|l| l.starts_with("sandbox\t")).unwrap();
    match agent_tools_bash::sandbox::landlock_abi() {
        Ok(abi) => assert!(line.contains(&format!("Landlock ABI {abi}")), "{line}"),
        Err(_) => assert!(line.contains("unavailable"), "{line}"),
    }
}

/// Runs `agent-tools` (with `args`) the way a CLI started from a shell
/// would: with a terminal of its own as its controlling terminal, also
/// handed to it as stdin. Its command tries `TIOCSTI` on `/dev/tty`
/// (opened read-write and read-only) and on its stdin. Returns the
/// program's stdout and what arrived as typed input of the terminal.
/// `None` without python3, which drives the terminal.
fn typed_into_a_terminal(args: &[&str]) -> Option<(String, String)> {
    const DRIVER: &str = r#"
import fcntl, json, os, pty, select, subprocess, sys, termios
master, slave = pty.openpty()
def take_terminal():
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
done = subprocess.run(sys.argv[1:], preexec_fn=take_terminal, stdin=slave, pass_fds=(slave,),
                      capture_output=True, text=True)
ready, _, _ = select.select([master], [], [], 0.5)
typed = os.read(master, 100) if ready else b""
print(json.dumps({"stdout": done.stdout, "stderr": done.stderr, "typed": typed.decode("latin-1")}))
"#;
    const PROBE: &str = r#"python3 -c "
import errno, fcntl, os, termios
def sti(fd):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b'Z')
        return 'typed'
    except OSError as e:
        return errno.errorcode[e.errno]
for how in (os.O_RDWR, os.O_RDONLY):
    try:
        print('tty', sti(os.open('/dev/tty', how)))
    except OSError as e:
        print('tty', errno.errorcode[e.errno])
print('stdin', sti(0))
""#;
    let exe = env!("CARGO_BIN_EXE_agent-tools");
    let mut driver = Command::new("python3");
    driver.args(["-c", DRIVER]);
    if args.first() == Some(&"call") {
        driver
            .arg(exe)
            .args(args)
            .args(["bash", &json!({ "command": PROBE }).to_string()]);
    } else {
        // The launcher itself is started by a shell that holds the
        // terminal, as the server would be: a session's leader cannot
        // start another session, so the launcher refuses to run under one.
        driver
            .args([
                "/bin/sh",
                "-c",
                r#"x="$1"; shift; "$x" __run-command --parent-pid $$ "$@"; :"#,
            ])
            .args(["sh", exe])
            .args(args)
            .args(["--", "/bin/sh", "-c", PROBE]);
    }
    let output = driver.output().ok()?;
    let line = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| {
        panic!(
            "driver failed ({e}): {line} {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    eprintln!("stderr: {}", report["stderr"]);
    Some((
        report["stdout"].as_str().unwrap().to_owned(),
        report["typed"].as_str().unwrap().to_owned(),
    ))
}

#[test]
fn commands_cannot_type_into_the_terminal_the_server_was_started_from() {
    if !landlock() {
        return;
    }
    let (_outer, root) = sandbox();
    let root_arg = root.display().to_string();
    // Through the server: /dev/tty is refused by the sandbox (EACCES),
    // and would not be there anyway (see below). The command's stdin is
    // /dev/null; the filter refuses the ioctl before the kernel finds that
    // no terminal.
    let call = ["call", "--sandbox", "--root", &root_arg];
    let Some((stdout, typed)) = typed_into_a_terminal(&call) else {
        eprintln!("skipped: no python3");
        return;
    };
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        result["stdout"], "tty EACCES\ntty EACCES\nstdin EPERM\n",
        "{result}"
    );
    assert_eq!(typed, "", "the command typed into the terminal");
    // Without the sandbox the command has no terminal either: it leads
    // none (ENXIO).
    let call = ["call", "--root", &root_arg];
    let (stdout, typed) = typed_into_a_terminal(&call).unwrap();
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        result["stdout"], "tty ENXIO\ntty ENXIO\nstdin ENOTTY\n",
        "{result}"
    );
    assert_eq!(typed, "");
    // The launcher started with the terminal as stdin hands it on: the
    // seccomp filter refuses the ioctl on it (even for root, whom the
    // kernel would let type into a terminal that is not its own).
    let launcher = ["--sandbox", "--sandbox-write", &root_arg];
    let (stdout, typed) = typed_into_a_terminal(&launcher).unwrap();
    assert_eq!(stdout, "tty EACCES\ntty EACCES\nstdin EPERM\n");
    assert_eq!(typed, "");
}

#[test]
fn version_control_folders_are_read_only_unless_allowed() {
    if !landlock() {
        return;
    }
    let (outer, root) = sandbox();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(root.join(".hg")).unwrap();
    // A linked worktree in a second root: its `.git` file names a git
    // folder in a repository deeper in the first root (not at its top),
    // whose hooks it shares.
    let worktree = outer.path().join("worktree");
    let main_git = root.join("nested/main/.git");
    std::fs::create_dir_all(main_git.join("hooks")).unwrap();
    let gitdir = main_git.join("worktrees/wt");
    std::fs::create_dir_all(&gitdir).unwrap();
    std::fs::create_dir_all(&worktree).unwrap();
    std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
    std::fs::write(
        worktree.join(".git"),
        format!("gitdir: {}\n", gitdir.display()),
    )
    .unwrap();
    let before = (
        tree::snapshot(&root.join(".git")),
        tree::snapshot(&main_git),
    );
    let wt = worktree.display().to_string();
    let start = |extra: &[&str]| {
        let mut args = vec!["--surface", "filesystem", "--sandbox", "--root"];
        args.push(&wt);
        args.extend_from_slice(extra);
        McpClient::start_guarded(&root, &args)
    };
    // The filesystem surface answers stderr in a second item: folded in.
    let run = |client: &mut McpClient, command: &str| {
        client.call("bash", json!({"command": format!("({command}) 2>&1")}))
    };
    let mut client = start(&[]);
    for command in [
        "printf '#!/bin/sh\\necho ran\\n' > .git/hooks/pre-commit".to_owned(),
        "echo '[core] fsmonitor = echo x' >> .git/config".to_owned(),
        "touch .hg/hgrc".to_owned(),
        "rm -r .git".to_owned(),
        "mv .git moved".to_owned(),
        // Through the worktree: its file, its git folder, and the hooks it
        // shares.
        format!("echo 'gitdir: /tmp' > {wt}/.git"),
        format!("mv {wt}/.git {wt}/moved"),
        format!("touch {}/HEAD", gitdir.display()),
        format!("touch {}/hooks/post-checkout", main_git.display()),
    ] {
        let (is_error, text) = run(&mut client, &command);
        assert!(is_error, "{command}: {text}");
        assert!(
            text.contains("Read-only file system") || text.contains("Device or resource busy"),
            "{command}: {text}"
        );
    }
    assert_eq!(
        (
            tree::snapshot(&root.join(".git")),
            tree::snapshot(&main_git)
        ),
        before
    );
    assert!(!root.join(".hg/hgrc").exists());
    assert!(
        std::fs::read_to_string(worktree.join(".git"))
            .unwrap()
            .contains("worktrees")
    );
    // Everything else in the roots is writable: new files at the top too.
    let (is_error, text) = run(
        &mut client,
        &format!(
            "echo hi > new.txt && mkdir -p src && echo x > src/a && echo y > {wt}/b && cat new.txt"
        ),
    );
    assert!(!is_error, "{text}");
    assert!(root.join("src/a").exists() && worktree.join("b").exists());
    client.shutdown();

    // Allowed, the same writes go through.
    let mut client = start(&["--sandbox-allow-vcs-writes"]);
    let (is_error, text) = run(
        &mut client,
        "echo '#!/bin/sh' > .git/hooks/pre-commit && touch .hg/hgrc",
    );
    assert!(!is_error, "{text}");
    assert!(root.join(".git/hooks/pre-commit").exists());
    client.shutdown();
}

#[test]
fn ownership_and_extended_attributes_are_refused_but_modes_inside_work() {
    if !landlock() {
        return;
    }
    let (outer, root) = sandbox();
    let outside = outer.path().join("outside.txt");
    std::fs::write(&outside, "x").unwrap();
    std::fs::write(root.join("inside.txt"), "x").unwrap();
    let mut client = sandboxed(&root);
    if !have(&mut client, "python3") {
        return;
    }
    let out = outside.display().to_string();
    for path in [out.as_str(), "inside.txt"] {
        for call in [
            format!("os.chown('{path}', os.getuid(), os.getgid())"),
            format!("os.setxattr('{path}', 'user.tag', b'x')"),
            format!("os.removexattr('{path}', 'user.tag')"),
        ] {
            let result = assert_refused(&mut client, &format!("python3 -c \"import os; {call}\""));
            assert!(
                result["stderr"]
                    .as_str()
                    .unwrap()
                    .contains("Operation not permitted"),
                "{call}: {result}"
            );
        }
    }
    // Modes inside the root still change (`chmod +x` of a script).
    let result = bash(&mut client, "chmod +x inside.txt && test -x inside.txt");
    assert_eq!(result["exit_code"], 0, "{result}");
    client.shutdown();
}

/// A file's mode and modification time: what `chmod` and `touch -d` change.
fn mode_and_mtime(path: &Path) -> (u32, i64, i64) {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::symlink_metadata(path).unwrap();
    (meta.mode(), meta.mtime(), meta.mtime_nsec())
}

/// Runs `command` in the sandbox and expects the read-only mount to refuse
/// it, with the note.
fn assert_read_only(client: &mut McpClient, command: &str) {
    let result = bash(client, command);
    assert_ne!(result["exit_code"], 0, "{command}: {result}");
    let stderr = result["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("Read-only file system"),
        "{command}: {result}"
    );
    let note = result["sandbox"].as_str().unwrap_or_default();
    assert!(note.contains("may have refused"), "{command}: {result}");
}

#[test]
fn modes_and_times_change_only_inside_the_writable_roots() {
    if !landlock() {
        return;
    }
    let (outer, root) = sandbox();
    let outside = outer.path().join("outside.txt");
    std::fs::write(&outside, "x").unwrap();
    std::fs::set_permissions(
        &outside,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(root.join("inside.txt"), "x").unwrap();
    let watched = [outside.clone(), root.join(".git/config"), root.join(".git")];
    let before = watched.clone().map(|path| mode_and_mtime(&path));
    let out = outside.display().to_string();
    let mut client = sandboxed(&root);
    for command in [
        format!("chmod 777 {out}"),
        format!("touch -d 2001-01-01 {out}"),
        format!("touch -m {out}"),
        // Relative to the working folder, which lies in the root.
        "chmod 777 ../outside.txt".to_owned(),
        "touch -d 2001-01-01 ../outside.txt".to_owned(),
        // The version-control folder stays read-only, metadata included.
        "chmod 777 .git/config".to_owned(),
        "touch -d 2001-01-01 .git/config".to_owned(),
        "chmod 777 .git".to_owned(),
        // Nor do system files change, nor the root's own folder entry
        // through its parent.
        "chmod 777 /etc/passwd".to_owned(),
    ] {
        assert_read_only(&mut client, &command);
    }
    assert_eq!(watched.clone().map(|path| mode_and_mtime(&path)), before);
    // Inside the root both still change, and writing works as before.
    let result = bash(
        &mut client,
        "chmod 700 inside.txt && touch -d @978307200 inside.txt && echo y >> inside.txt && touch -d @978307200 inside.txt",
    );
    assert_eq!(result["exit_code"], 0, "{result}");
    let (mode, mtime, _) = mode_and_mtime(&root.join("inside.txt"));
    assert_eq!(mode & 0o777, 0o700);
    assert_eq!(mtime, 978_307_200, "2001-01-01 UTC");
    // So do files in the private temporary folder, and /dev/null takes
    // writes on a read-only mount.
    let result = bash(
        &mut client,
        "echo x > \"$TMPDIR/t\" && chmod 700 \"$TMPDIR/t\" && touch -d 2001-01-01 \"$TMPDIR/t\" && echo gone > /dev/null",
    );
    assert_eq!(result["exit_code"], 0, "{result}");
    client.shutdown();
}

#[test]
fn modes_and_times_in_a_read_only_root_cannot_change() {
    // As `a_read_only_root_is_read_only_to_commands`: the launcher with the
    // policy a read-only root gets.
    if !landlock() {
        return;
    }
    let (outer, root) = sandbox();
    let writable = outer.path().join("writable");
    std::fs::create_dir(&writable).unwrap();
    std::fs::write(root.join("f"), "original\n").unwrap();
    std::fs::write(writable.join("g"), "mine\n").unwrap();
    let before = mode_and_mtime(&root.join("f"));
    let (ro, rw) = (root.display().to_string(), writable.display().to_string());
    let policy = [
        "--sandbox",
        "--sandbox-read-only",
        &ro,
        "--sandbox-write",
        &rw,
    ];
    let output = launch(
        &policy,
        &format!(
            "chmod 777 {ro}/f; touch -d 2001-01-01 {ro}/f; chmod 777 {ro}; \
             chmod 700 {rw}/g && touch -d @978307200 {rw}/g && echo changed"
        ),
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "changed\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.matches("Read-only file system").count(),
        3,
        "{stderr}"
    );
    assert_eq!(mode_and_mtime(&root.join("f")), before);
    let (mode, mtime, _) = mode_and_mtime(&writable.join("g"));
    assert_eq!((mode & 0o777, mtime), (0o700, 978_307_200));
}

#[test]
fn without_the_privilege_the_same_mounts_are_made_through_a_user_namespace() {
    // The launcher enters the mount namespace directly when it may (as root
    // here, usually); another user goes through a user namespace. Only root
    // can become another user to try that path.
    if !landlock() {
        return;
    }
    let setpriv = Command::new("setpriv").arg("--version").output();
    // `/proc/self` belongs to the process's own user.
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    if uid != 0 || setpriv.is_err() {
        eprintln!("skipped: needs root and setpriv to run the launcher as another user");
        return;
    }
    let (outer, root) = sandbox();
    let outside = outer.path().join("outside.txt");
    std::fs::write(&outside, "x").unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join("inside.txt"), "x").unwrap();
    let nobody = 65_534;
    for path in [
        outer.path(),
        &outside,
        &root,
        &root.join(".git"),
        &root.join("inside.txt"),
    ] {
        std::os::unix::fs::chown(path, Some(nobody), Some(nobody)).unwrap();
    }
    let before = mode_and_mtime(&outside);
    let output = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--",
        ])
        .arg(env!("CARGO_BIN_EXE_agent-tools"))
        .arg("__run-command")
        .arg("--parent-pid")
        .arg(std::process::id().to_string())
        .args(["--sandbox", "--sandbox-write"])
        .arg(&root)
        .args(["--", "/bin/sh", "-c"])
        .arg(
            "chmod 777 ../outside.txt; touch -d @978307200 ../outside.txt; touch .git/x; \
             chmod 700 inside.txt && touch -d @978307200 inside.txt && id -u",
        )
        .current_dir(&root)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Its own id, mapped: files keep their owner.
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "65534\n",
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("Read-only file system").count(),
        3,
        "{stderr}"
    );
    assert_eq!(mode_and_mtime(&outside), before);
    assert!(!root.join(".git/x").exists());
    let (mode, mtime, _) = mode_and_mtime(&root.join("inside.txt"));
    assert_eq!((mode & 0o777, mtime), (0o700, 978_307_200));
}

/// Jobs run in the sandbox like commands, in a terminal too: a write
/// outside the root is refused, one inside it is not.
#[test]
fn jobs_in_pipes_and_in_a_terminal_stay_confined() {
    if !landlock() {
        return;
    }
    let (outer, root) = sandbox();
    let out = outer.path().display().to_string();
    let mut client = sandboxed(&root);
    for tty in [false, true] {
        let command = format!(
            "touch {out}/escaped-{tty} 2>&1; echo \"outside $?\"; touch inside-{tty}; echo \"inside $?\""
        );
        let (is_error, text) = client.call(
            "job_start",
            json!({"command": command, "tty": tty, "wait_ms": 20000, "wait_for": "inside \\d"}),
        );
        assert!(!is_error, "{text}");
        let job: Value = serde_json::from_str(&text).unwrap();
        let output = job["output"].as_str().unwrap();
        assert!(names_a_refused_write(output), "{output}");
        assert!(output.contains("outside 1"), "{output}");
        assert!(output.contains("inside 0"), "{output}");
        assert!(!outer.path().join(format!("escaped-{tty}")).exists());
        assert!(root.join(format!("inside-{tty}")).exists());
    }
}
