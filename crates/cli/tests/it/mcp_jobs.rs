//! Jobs over MCP stdio on the default surface: started, driven, read,
//! interrupted and killed by later calls; dead with their connection.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::mcp_client;
use agent_tools_test_support::tree;

use std::path::Path;
use std::time::{Duration, Instant};

use mcp_client::McpClient;
use serde_json::{Value, json};

use tree::sandbox;

fn server(root: &Path) -> McpClient {
    McpClient::start_guarded(root, &[])
}

fn call(client: &mut McpClient, tool: &str, args: Value) -> Value {
    let (is_error, text) = client.call(tool, args);
    assert!(!is_error, "{tool}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// Starts a job with `args` (a `wait_for` among them), checks that its
/// wait matched, and returns its id.
fn start_matched(client: &mut McpClient, args: Value) -> String {
    let started = call(client, "job_start", args);
    assert_eq!(started["matched"], true, "{started}");
    started["job_id"].as_str().unwrap().to_owned()
}

/// Whether process `pid` is alive (a zombie is not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .is_some_and(|i| !stat[i + 1..].trim_start().starts_with(['Z', 'X']))
    })
}

fn pid_in(path: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_dies(pid: i32, after: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(Instant::now() < deadline, "process {pid} survived {after}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_python_repl_is_driven_to_an_answer_interrupted_and_ended() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    let id = start_matched(
        &mut client,
        json!({"command": "python3 -q -i", "tty": true, "wait_for": ">>> $", "wait_ms": 20000}),
    );
    let answer = call(
        &mut client,
        "job_write",
        json!({"job_id": id, "input": "6 * 7\n", "wait_for": "42\n>>> $", "wait_ms": 10000}),
    );
    assert_eq!(answer["matched"], true, "{answer}");
    assert_eq!(answer["output"], "6 * 7\n42\n>>> ");
    assert_eq!(
        answer["hint"],
        Value::Null,
        "quiet for too short a time yet"
    );
    // Ctrl-C as a key reaches the REPL as SIGINT and leaves it alive.
    let _ = call(
        &mut client,
        "job_write",
        json!({"job_id": id, "input": "import time; time.sleep(30)\n", "wait_ms": 300}),
    );
    let interrupted = call(
        &mut client,
        "job_write",
        json!({"job_id": id, "keys": ["C-c"], "wait_for": ">>> $", "wait_ms": 10000}),
    );
    assert!(
        interrupted["output"]
            .as_str()
            .unwrap()
            .contains("KeyboardInterrupt"),
        "{interrupted}"
    );
    assert_eq!(interrupted["status"], "running");
    let again = call(
        &mut client,
        "job_write",
        json!({"job_id": id, "input": "print('still here')\n", "wait_for": "still here\\n", "wait_ms": 10000}),
    );
    assert_eq!(again["matched"], true, "{again}");
    let mut ended = call(
        &mut client,
        "job_write",
        json!({"job_id": id, "keys": ["C-d"], "wait_ms": 10000}),
    );
    // The wait ends on exit or once what the C-d brought has settled (a
    // newline, perhaps): a loaded machine may take longer to exit.
    let deadline = Instant::now() + Duration::from_secs(20);
    while ended["status"] == "running" && Instant::now() < deadline {
        ended = call(
            &mut client,
            "job_read",
            json!({"job_id": id, "wait_ms": 1000}),
        );
    }
    assert_eq!(ended["status"], "exited", "{ended}");
    assert_eq!(ended["exit_code"], 0, "{ended}");
    let (is_error, text) = client.call("job_write", json!({"job_id": id, "input": "1\n"}));
    assert!(is_error && text.contains("has exited"), "{text}");
}

#[test]
fn a_command_reading_stdin_without_a_terminal_ends_at_once() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    let started = call(
        &mut client,
        "job_start",
        json!({"command": "cat; echo cat-ended", "wait_ms": 10000}),
    );
    assert_eq!(started["status"], "exited", "{started}");
    assert_eq!(started["output"], "cat-ended\n");
    assert!(started["waited_ms"].as_u64().unwrap() < 5000, "{started}");
}

#[test]
fn a_flood_stays_bounded_while_other_calls_answer() {
    let (_outer, root) = sandbox();
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    let mut client = server(&root);
    let started = call(
        &mut client,
        "job_start",
        json!({"command": "yes", "wait_ms": 0}),
    );
    let id = started["job_id"].as_str().unwrap().to_owned();
    for _ in 0..5 {
        let at = Instant::now();
        let (is_error, text) = client.call("read_file", json!({"path": "a.txt"}));
        assert!(!is_error, "{text}");
        assert!(at.elapsed() < Duration::from_secs(2), "{:?}", at.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    }
    let (is_error, text) = client.call("job_read", json!({"job_id": id}));
    assert!(!is_error);
    // The answer stays within the server's output budget (256 KiB default).
    assert!(text.len() <= 256 * 1024, "{}", text.len());
    let read: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(read["more"], true);
    assert!(read["output"].as_str().unwrap().starts_with("y\ny\n"));
    let killed = call(&mut client, "job_kill", json!({"job_id": id}));
    assert_eq!(killed["status"], "exited");
}

#[test]
fn paging_from_offset_zero_reads_past_the_memory_tail_from_the_log_file() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    // About 575 KiB: more than a job keeps in memory (256 KiB).
    let started = call(
        &mut client,
        "job_start",
        json!({"command": "seq 1 100000", "wait_ms": 0}),
    );
    let id = started["job_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let read = call(&mut client, "job_read", json!({"job_id": id, "from": -1}));
        if read["status"] == "exited" {
            break;
        }
        assert!(Instant::now() < deadline, "the job did not end: {read}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let expected: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
    let mut text = String::new();
    let mut from = 0;
    loop {
        let page = call(
            &mut client,
            "job_read",
            json!({"job_id": id, "from": from, "max_bytes": 65_537}),
        );
        assert_eq!(page["from"], from, "a page starts where the last ended");
        assert_eq!(page["dropped_bytes"], 0);
        text.push_str(page["output"].as_str().unwrap());
        from = page["to"].as_u64().unwrap();
        if page["more"] == false {
            break;
        }
    }
    assert_eq!(text.len(), expected.len());
    assert!(text == expected, "the pages differ from the output");
}

#[test]
fn ctrl_c_reaches_a_sleeping_command_without_a_terminal() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    let started = call(
        &mut client,
        "job_start",
        json!({"command": "sleep 30", "wait_ms": 0}),
    );
    let id = started["job_id"].as_str().unwrap().to_owned();
    let stopped = call(
        &mut client,
        "job_write",
        json!({"job_id": id, "keys": ["C-c"], "wait_ms": 10000}),
    );
    assert_eq!(stopped["status"], "exited", "{stopped}");
}

#[test]
fn a_web_server_job_answers_bash_and_dies_on_kill() {
    let (_outer, root) = sandbox();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut client = server(&root);
    let id = start_matched(
        &mut client,
        json!({
            "command": format!("python3 -u -m http.server {port} --bind 127.0.0.1"),
            "wait_for": "Serving HTTP",
            "wait_ms": 20000
        }),
    );
    let curl = format!("curl -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/");
    let answered = call(&mut client, "bash", json!({"command": curl}));
    assert_eq!(answered["stdout"], "200", "{answered}");
    let logged = call(
        &mut client,
        "job_read",
        json!({"job_id": id, "wait_for": "GET / ", "wait_ms": 5000}),
    );
    assert_eq!(logged["matched"], true, "{logged}");
    let killed = call(&mut client, "job_kill", json!({"job_id": id}));
    assert_eq!(killed["status"], "exited");
    let refused = call(&mut client, "bash", json!({"command": curl}));
    // curl's "could not connect".
    assert_eq!(refused["exit_code"], 7, "{refused}");
}

/// Starts `sh -c 'setsid ... & sleep 300'` as a job and returns the pid
/// of the child that left the job's session.
fn start_escaping_tree(client: &mut McpClient, marker: &Path) -> i32 {
    let command = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 300' & sleep 300",
        marker.display()
    );
    let _ = call(
        client,
        "job_start",
        json!({"command": command, "wait_ms": 0}),
    );
    let pid = pid_in(marker);
    assert!(alive(pid));
    pid
}

#[test]
fn a_tree_with_setsid_children_leaves_nothing_after_a_kill_or_a_disconnect() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    let first = start_escaping_tree(&mut client, &root.join("first.pid"));
    let killed = call(&mut client, "job_kill", json!({"job_id": "job_1"}));
    assert_eq!(killed["status"], "exited");
    assert_dies(first, "job_kill");
    let second = start_escaping_tree(&mut client, &root.join("second.pid"));
    client.shutdown();
    assert_dies(second, "the end of the connection");
}

#[test]
fn jobs_die_with_a_killed_server() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    let escaped = start_escaping_tree(&mut client, &root.join("tree.pid"));
    let tty = call(
        &mut client,
        "job_start",
        json!({"command": format!("echo $$ > {}; exec sleep 300", root.join("tty.pid").display()), "tty": true, "wait_ms": 0}),
    );
    assert_eq!(tty["status"], "running");
    let in_tty = pid_in(&root.join("tty.pid"));
    client.signal("KILL");
    assert_dies(escaped, "SIGKILL of the server");
    assert_dies(in_tty, "SIGKILL of the server");
}

#[test]
fn a_pager_using_command_ends_by_itself_in_a_terminal() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    let setup = "git init -q repo && cd repo && git config user.email a@b && git config user.name a \
                 && for i in $(seq 1 120); do git commit -q --allow-empty -m \"change $i\"; done";
    let made = call(
        &mut client,
        "bash",
        json!({"command": setup, "timeout_ms": 60000}),
    );
    assert_eq!(made["exit_code"], 0, "{made}");
    let logged = call(
        &mut client,
        "job_start",
        json!({"command": "git log --oneline", "cwd": "repo", "tty": true, "wait_ms": 15000, "wait_for": "change 1$"}),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut status = logged["status"].clone();
    while status != "exited" {
        assert!(
            Instant::now() < deadline,
            "git log waits on a pager: {logged}"
        );
        let read = call(
            &mut client,
            "job_read",
            json!({"job_id": "job_1", "wait_ms": 1000}),
        );
        status = read["status"].clone();
    }
    let all = call(
        &mut client,
        "job_read",
        json!({"job_id": "job_1", "from": 0}),
    );
    assert_eq!(
        all["output"].as_str().unwrap().lines().count(),
        120,
        "{all}"
    );
}

#[test]
fn a_full_screen_program_shows_its_screen() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    // The alternate screen, a cleared page and text at a position.
    let started = call(
        &mut client,
        "job_start",
        json!({
            "command": r"printf '\033[?1049h\033[2J\033[3;5Hmenu item\033[1;1Htop'; sleep 30",
            "tty": true,
            "rows": 10,
            "cols": 40,
            "wait_for": "top"
        }),
    );
    let id = started["job_id"].as_str().unwrap().to_owned();
    let screen = call(
        &mut client,
        "job_read",
        json!({"job_id": id, "screen": true}),
    );
    assert_eq!(screen["screen"]["alternate_screen"], true, "{screen}");
    assert_eq!(screen["screen"]["text"], "top\n\n    menu item", "{screen}");
}

#[test]
fn the_terminal_job_limit_refuses_with_a_clear_error() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    for _ in 0..16 {
        let _ = call(
            &mut client,
            "job_start",
            json!({"command": "sleep 30", "tty": true, "wait_ms": 0}),
        );
    }
    let (is_error, text) = client.call(
        "job_start",
        json!({"command": "sleep 30", "tty": true, "wait_ms": 0}),
    );
    assert!(is_error, "{text}");
    assert!(
        text.contains("16 jobs with a terminal are running already"),
        "{text}"
    );
    let plain = call(
        &mut client,
        "job_start",
        json!({"command": "true", "wait_ms": 0}),
    );
    assert_eq!(plain["job_id"], "job_17");
}

#[test]
fn a_waiting_read_does_not_hold_other_calls() {
    let (_outer, root) = sandbox();
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    let mut client = server(&root);
    let _ = call(
        &mut client,
        "job_start",
        json!({"command": "sleep 30", "wait_ms": 0}),
    );
    let waiting = client.send_request(
        "tools/call",
        json!({"name": "job_read", "arguments": {"job_id": "job_1", "wait_ms": 3000, "wait_for": "never"}}),
    );
    let at = Instant::now();
    let (is_error, text) = client.call("read_file", json!({"path": "a.txt"}));
    assert!(!is_error, "{text}");
    assert!(
        at.elapsed() < Duration::from_millis(1500),
        "{:?}",
        at.elapsed()
    );
    // Nor does it hold a poll of the same job (answered on the protocol's
    // own thread): the waiting read holds no lock while it waits.
    let at = Instant::now();
    let polled = call(&mut client, "job_read", json!({"job_id": "job_1"}));
    assert_eq!(polled["status"], "running", "{polled}");
    assert!(
        at.elapsed() < Duration::from_millis(1500),
        "{:?}",
        at.elapsed()
    );
    let response = client.wait_for(waiting);
    let (is_error, text) = McpClient::call_result(&response);
    assert!(!is_error, "{text}");
    let read: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(read["matched"], false);
    assert!(read["waited_ms"].as_u64().unwrap() >= 2900, "{read}");
}

/// `bash` runs `command`, which leaves `sleep 300` in the background
/// (plainly, or in a session of its own with `setsid`, its pid in
/// `marker`), and must answer at once: the call never waits for it.
fn leave_in_background(client: &mut McpClient, marker: &Path, setsid: bool) -> i32 {
    let command = if setsid {
        format!(
            "setsid sh -c 'echo $$ > {}; exec sleep 300' &",
            marker.display()
        )
    } else {
        format!("sleep 300 & echo $! > {}", marker.display())
    };
    let at = Instant::now();
    let ran = call(
        client,
        "bash",
        json!({"command": command, "timeout_ms": 60000}),
    );
    assert_eq!(ran["exit_code"], 0, "{ran}");
    assert!(
        at.elapsed() < Duration::from_secs(10),
        "bash waited for its background child: {:?}",
        at.elapsed()
    );
    let pid = pid_in(marker);
    assert!(alive(pid), "the background child did not outlive the call");
    pid
}

fn backgrounds(client: &mut McpClient) -> Vec<Value> {
    let listed = call(client, "job_list", json!({}));
    listed["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|job| job["kind"] == "background")
        .cloned()
        .collect()
}

#[test]
fn background_children_of_bash_are_listed_read_killed_and_die_with_the_connection() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    let plain = leave_in_background(&mut client, &root.join("plain.pid"), false);
    let escaped = leave_in_background(&mut client, &root.join("setsid.pid"), true);
    let listed = backgrounds(&mut client);
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["job_id"], "bg_1", "{listed:?}");
    assert_eq!(listed[0]["status"], "running", "{listed:?}");
    assert_eq!(listed[0]["tty"], false, "{listed:?}");
    assert!(
        listed[0]["command"]
            .as_str()
            .unwrap()
            .starts_with("sleep 300 & echo $!"),
        "{listed:?}"
    );
    assert!(listed[1]["pid"].as_i64().unwrap() > 0, "{listed:?}");
    // What a background child prints after the call goes to its log.
    let _ = call(
        &mut client,
        "bash",
        json!({"command": "(sleep 1; echo late-line) &"}),
    );
    let late = call(
        &mut client,
        "job_read",
        json!({"job_id": "bg_3", "wait_for": "late-line", "wait_ms": 10000}),
    );
    assert_eq!(late["matched"], true, "{late}");
    assert_eq!(late["output"], "late-line\n", "{late}");
    // A kill takes the child with it; the other stays.
    let killed = call(&mut client, "job_kill", json!({"job_id": "bg_1"}));
    assert_eq!(killed["status"], "exited", "{killed}");
    assert_dies(plain, "job_kill");
    assert!(alive(escaped));
    let (is_error, text) = client.call("job_kill", json!({"job_id": "bg_9"}));
    assert!(is_error && text.contains("no background job 9"), "{text}");
    // A command that leaves nothing running makes no entry.
    let _ = call(&mut client, "bash", json!({"command": "echo done"}));
    assert_eq!(backgrounds(&mut client).len(), 3);
    client.shutdown();
    assert_dies(escaped, "the end of the connection");
}

#[test]
fn background_children_past_the_cap_are_stopped_and_the_answer_says_so() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    let cap = agent_tools_bash::jobs::DEFAULT_MAX_BACKGROUND_JOBS;
    let mut pids = Vec::new();
    for n in 0..cap {
        pids.push(leave_in_background(
            &mut client,
            &root.join(format!("kept-{n}.pid")),
            false,
        ));
    }
    let marker = root.join("over.pid");
    let ran = call(
        &mut client,
        "bash",
        json!({"command": format!("sleep 300 & echo $! > {}", marker.display())}),
    );
    assert_eq!(ran["exit_code"], 0, "{ran}");
    let stderr = ran["stderr"].as_str().unwrap();
    assert!(
        stderr.contains(&format!(
            "[{cap} processes that earlier commands left in the background are still running"
        )),
        "{ran}"
    );
    assert_dies(pid_in(&marker), "the call that passed the cap");
    let listed = backgrounds(&mut client);
    assert_eq!(listed.len(), cap, "{listed:?}");
    assert!(
        listed.iter().all(|job| job["status"] == "running"),
        "{listed:?}"
    );
    // Room again once one is stopped.
    let _ = call(&mut client, "job_kill", json!({"job_id": "bg_1"}));
    assert_dies(pids[0], "job_kill");
    let again = call(&mut client, "bash", json!({"command": "sleep 300 &"}));
    assert_eq!(again["stderr"], "", "{again}");
    client.shutdown();
    for pid in pids {
        assert_dies(pid, "the end of the connection");
    }
}

#[test]
fn background_children_of_bash_die_with_a_killed_server() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    let plain = leave_in_background(&mut client, &root.join("plain.pid"), false);
    let escaped = leave_in_background(&mut client, &root.join("setsid.pid"), true);
    client.signal("KILL");
    assert_dies(plain, "SIGKILL of the server");
    assert_dies(escaped, "SIGKILL of the server");
}

/// Kills `pid` (a test's own leftover) when dropped, pass or fail.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .status();
    }
}

#[test]
fn the_leave_flag_lets_background_children_outlive_the_connection() {
    let (_outer, root) = sandbox();
    let mut client = McpClient::start_guarded(&root, &["--leave-background-children"]);
    let plain = KillOnDrop(leave_in_background(
        &mut client,
        &root.join("plain.pid"),
        false,
    ));
    let escaped = KillOnDrop(leave_in_background(
        &mut client,
        &root.join("setsid.pid"),
        true,
    ));
    assert_eq!(backgrounds(&mut client), Vec::<Value>::new());
    client.shutdown();
    assert!(alive(plain.0), "left, yet killed with the connection");
    assert!(alive(escaped.0), "left, yet killed with the connection");
}

#[test]
fn a_terminal_job_gets_its_size_and_a_new_one_with_sigwinch() {
    let (_outer, root) = sandbox();
    let mut client = server(&root);
    // The program prints the terminal's size at its start and each time
    // SIGWINCH comes (Python runs its handler at once; a shell's trap waits
    // for the command in hand).
    let program = "import os, signal\n\
                   def show(*_):\n    cols, rows = os.get_terminal_size()\n    print(rows, cols, flush=True)\n\
                   signal.signal(signal.SIGWINCH, show)\nshow()\nwhile True:\n    signal.pause()\n";
    let id = start_matched(
        &mut client,
        json!({
            "command": format!("python3 -c '{program}'"),
            "tty": true,
            "cols": 50,
            "rows": 12,
            "wait_for": "12 50",
            "wait_ms": 10000
        }),
    );
    let resized = call(
        &mut client,
        "job_write",
        json!({"job_id": id, "cols": 100, "rows": 30, "wait_for": "30 100", "wait_ms": 10000}),
    );
    assert_eq!(resized["matched"], true, "{resized}");
    // One dimension alone keeps the other.
    let narrower = call(
        &mut client,
        "job_write",
        json!({"job_id": id, "cols": 60, "wait_for": "30 60", "wait_ms": 10000}),
    );
    assert_eq!(narrower["matched"], true, "{narrower}");
    let screen = call(
        &mut client,
        "job_read",
        json!({"job_id": id, "screen": true}),
    );
    assert_eq!(screen["screen"]["rows"], 30, "{screen}");
    assert_eq!(screen["screen"]["cols"], 60, "{screen}");
    // `stty size` asks the terminal; the new size comes before the typing.
    let stty = call(
        &mut client,
        "job_start",
        json!({"command": "stty size; read x; stty size", "tty": true, "cols": 50, "rows": 12, "wait_for": "12 50", "wait_ms": 10000}),
    );
    assert_eq!(stty["matched"], true, "{stty}");
    let asked = call(
        &mut client,
        "job_write",
        json!({"job_id": stty["job_id"], "cols": 100, "rows": 30, "keys": ["Enter"], "wait_for": "30 100", "wait_ms": 10000}),
    );
    assert_eq!(asked["matched"], true, "{asked}");
    let (is_error, text) = client.call("job_write", json!({"job_id": id, "cols": 5}));
    assert!(is_error && text.contains("cols"), "{text}");
    let (is_error, text) = client.call("job_write", json!({"job_id": id}));
    assert!(is_error && text.contains("a new size"), "{text}");
    let pipes = call(
        &mut client,
        "job_start",
        json!({"command": "sleep 30", "wait_ms": 0}),
    );
    let (is_error, text) = client.call("job_write", json!({"job_id": pipes["job_id"], "rows": 20}));
    assert!(is_error && text.contains("has no terminal"), "{text}");
}

#[test]
fn ctrl_c_reaches_a_job_of_a_server_started_with_interrupts_ignored() {
    // A server started in the background by a script inherits SIGINT
    // ignored, and a shell cannot trap a signal ignored when it started.
    // The server's own interrupt handler replaces the ignored action, and
    // a handler is reset to the default across exec, so a job's command
    // starts able to trap C-c (a process that ignores SIGINT and starts
    // commands without such a handler passes the ignoring on).
    let (_outer, root) = sandbox();
    let mut command = std::process::Command::new("bash");
    command
        .arg("-c")
        .arg("trap '' INT; exec \"$0\" mcp --root \"$1\"")
        .arg(env!("CARGO_BIN_EXE_agent-tools"))
        .arg(&root)
        .stderr(std::process::Stdio::inherit());
    let mut client: McpClient = agent_tools_test_support::mcp::McpClient::spawn(command)
        .unwrap()
        .guarded()
        .into();
    client.try_initialize(json!({}), "test-client").unwrap();
    let id = start_matched(
        &mut client,
        json!({
            "command": "trap 'echo got-int; exit 3' INT; echo ready; while :; do sleep 0.05; done",
            "wait_for": "ready",
            "wait_ms": 10000
        }),
    );
    let stopped = call(
        &mut client,
        "job_write",
        json!({"job_id": id, "keys": ["C-c"], "wait_ms": 10000}),
    );
    assert_eq!(stopped["status"], "exited", "{stopped}");
    assert_eq!(stopped["exit_code"], 3, "{stopped}");
    assert!(
        stopped["output"].as_str().unwrap().contains("got-int"),
        "{stopped}"
    );
}
