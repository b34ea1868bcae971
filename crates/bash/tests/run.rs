//! Runs real commands through `sh`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use std::fs;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use agent_tools_bash::{OutputLimits, RunError, RunOutcome, RunRequest, run};
use agent_tools_error::{ErrorCode, ToolError};
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use tempfile::TempDir;

struct Ws {
    dir: TempDir,
}

impl Ws {
    fn new() -> Self {
        Ws {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn spill_dir(&self) -> PathBuf {
        self.root().join(".agent-tools/spill")
    }

    fn req(&self, command: &str) -> RunRequest {
        RunRequest::new(command, self.root(), self.spill_dir())
            .unwrap()
            .with_timeout(Duration::from_secs(20))
    }

    fn run(&self, command: &str) -> RunOutcome {
        run(&self.req(command), &AtomicBool::new(false)).unwrap()
    }
}

fn limits(inline: usize, ceiling: u64) -> OutputLimits {
    OutputLimits::new(inline, NonZeroU64::new(ceiling).unwrap())
}

fn run_req(req: &RunRequest) -> Result<RunOutcome, RunError> {
    run(req, &AtomicBool::new(false))
}

/// Whether process group `pgid` has a member that is not a zombie. Orphaned
/// zombies may linger until whoever adopted them reaps them.
fn live_member(pgid: i32) -> bool {
    if matches!(killpg(Pid::from_raw(pgid), None), Err(Errno::ESRCH)) {
        return false;
    }
    fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        let Some(close) = stat.rfind(')') else {
            return false;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        fields.len() > 3 && fields[2] == pgid.to_string() && fields[0] != "Z"
    })
}

/// Waits up to `limit` for process group `pgid` to have no live members left.
fn group_gone(pgid: i32, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    loop {
        if !live_member(pgid) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// A cancel flag and the thread that sets it after `delay`.
fn cancel_after(delay: Duration) -> (Arc<AtomicBool>, thread::JoinHandle<()>) {
    let cancel = Arc::new(AtomicBool::new(false));
    let setter = {
        let cancel = Arc::clone(&cancel);
        thread::spawn(move || {
            thread::sleep(delay);
            cancel.store(true, Ordering::Relaxed);
        })
    };
    (cancel, setter)
}

/// A field of the partial outcome a stopped run carries, as serialized.
fn field(err: &RunError, key: &str) -> Value {
    let partial = err
        .partial()
        .unwrap_or_else(|| panic!("no partial output in {err:?}"));
    partial
        .to_json()
        .get(key)
        .cloned()
        .unwrap_or_else(|| panic!("no field {key} in {err:?}"))
}

#[test]
fn exit_codes_are_reported_not_errors() {
    let ws = Ws::new();
    for (command, code) in [("true", 0), ("false", 1), ("exit 3", 3), ("exit 255", 255)] {
        let outcome = ws.run(command);
        assert_eq!(outcome.exit_code, Some(code), "{command}");
        assert_eq!(outcome.signal, None);
        assert!(!outcome.timed_out);
    }
}

#[test]
fn stdout_and_stderr_are_separate() {
    let ws = Ws::new();
    let outcome = ws.run("echo out; echo err >&2; echo out2");
    assert_eq!(outcome.stdout, "out\nout2\n");
    assert_eq!(outcome.stderr, "err\n");
    assert!(!outcome.truncated);
    assert_eq!(outcome.stdout_spill, None);
}

#[test]
fn runs_in_the_working_directory() {
    let ws = Ws::new();
    fs::create_dir(ws.root().join("sub")).unwrap();
    let req = RunRequest::new("pwd", ws.root().join("sub"), ws.spill_dir()).unwrap();
    let outcome = run_req(&req).unwrap();
    let shown = PathBuf::from(outcome.stdout.trim_end());
    assert_eq!(
        shown.canonicalize().unwrap(),
        ws.root().join("sub").canonicalize().unwrap()
    );
}

#[test]
fn bad_working_directories() {
    let ws = Ws::new();
    let missing = RunRequest::new("true", ws.root().join("nope"), ws.spill_dir()).unwrap();
    assert_eq!(run_req(&missing).unwrap_err().code(), ErrorCode::NotFound);
    fs::write(ws.root().join("file"), "x").unwrap();
    let file = RunRequest::new("true", ws.root().join("file"), ws.spill_dir()).unwrap();
    assert_eq!(run_req(&file).unwrap_err().code(), ErrorCode::NotAFile);
}

#[test]
fn stdin_is_closed() {
    let ws = Ws::new();
    let started = Instant::now();
    let outcome = ws.run("cat");
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.stdout, "");
    let outcome = ws.run("read x");
    assert_ne!(outcome.exit_code, Some(0));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_signal_is_reported_by_name() {
    let ws = Ws::new();
    let outcome = ws.run("echo before; kill -TERM $$; echo after");
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.signal.as_deref(), Some("SIGTERM"));
    assert_eq!(outcome.stdout, "before\n");
    let outcome = ws.run("kill -KILL $$");
    assert_eq!(outcome.signal.as_deref(), Some("SIGKILL"));
}

#[test]
fn timeout_kills_the_whole_group() {
    let ws = Ws::new();
    let marker = ws.root().join("marker");
    let req = ws
        .req("(sleep 1; echo x > marker) & sleep 10")
        .with_timeout(Duration::from_millis(200));
    let started = Instant::now();
    let err = run_req(&req).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Timeout);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    thread::sleep(Duration::from_millis(1500));
    assert!(!marker.exists(), "the grandchild survived the timeout");
}

#[test]
fn timeout_carries_partial_output() {
    let ws = Ws::new();
    let req = ws
        .req("echo partial; echo oops >&2; sleep 10")
        .with_timeout(Duration::from_millis(300));
    let err = run_req(&req).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Timeout);
    assert_eq!(err.to_string(), "command timed out after 300 ms");
    let RunError::TimedOut { after, partial } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*after, Duration::from_millis(300));
    assert_eq!(partial.stdout, "partial\n");
    assert_eq!(partial.stderr, "oops\n");
    assert!(partial.timed_out);
    assert!(partial.stdout_spill.is_none());
    let envelope = ToolError::from(err).to_envelope_value();
    assert_eq!(envelope["error"], "timeout");
    assert_eq!(envelope["message"], "command timed out after 300 ms");
}

#[test]
fn timeout_escalates_to_sigkill() {
    let ws = Ws::new();
    // The shell and its child ignore SIGTERM; only SIGKILL ends them.
    let req = ws
        .req("trap '' TERM; echo $$; sleep 30")
        .with_timeout(Duration::from_millis(100));
    let started = Instant::now();
    let err = run_req(&req).unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(err.code(), ErrorCode::Timeout);
    assert!(elapsed >= agent_tools_bash::KILL_GRACE, "{elapsed:?}");
    assert!(
        elapsed < agent_tools_bash::KILL_GRACE + Duration::from_secs(2),
        "{elapsed:?}"
    );
    let pgid: i32 = field(&err, "stdout")
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_gone(pgid, Duration::from_secs(1)));
}

#[test]
fn large_output_is_spilled_completely() {
    const SIZE: usize = 50 * 1024 * 1024;
    let ws = Ws::new();
    let req = ws
        .req(&format!("yes abcdefghij | head -c {SIZE}; echo done >&2"))
        .with_limits(limits(1000, 256 * 1024 * 1024));
    let outcome = run_req(&req).unwrap();
    let expected: Vec<u8> = b"abcdefghij\n".iter().copied().cycle().take(SIZE).collect();
    assert_eq!(outcome.exit_code, Some(0));
    assert!(outcome.truncated);
    // The budget counts escaped bytes: each newline costs two.
    let mut cost = 0;
    let fits = expected
        .iter()
        .take_while(|&&b| {
            cost += agent_tools_bash::json_escaped_len(b);
            cost <= 1000
        })
        .count();
    assert_eq!(fits, 83 * 11 + 4);
    assert_eq!(outcome.stdout.as_bytes(), &expected[..fits]);
    // The budget went to stdout; stderr's few bytes spilled too.
    assert_eq!(outcome.stderr, "");
    let spill = outcome.stdout_spill.clone().unwrap();
    assert!(spill.starts_with(ws.spill_dir()), "{spill:?}");
    assert!(spill.to_string_lossy().ends_with(".stdout"));
    let written = fs::read(&spill).unwrap();
    assert_eq!(written.len(), SIZE);
    assert!(written == expected, "spill differs from the output");
    let stderr_spill = outcome.stderr_spill.clone().unwrap();
    assert_eq!(fs::read(stderr_spill).unwrap(), b"done\n");
    let json = outcome.to_json();
    assert_eq!(json["stdout_spill"], spill.to_string_lossy().as_ref());
    assert_eq!(json["truncated"], true);
}

#[test]
fn inline_budget_is_shared() {
    let ws = Ws::new();
    // stdout comes first and takes 6 of the 10 bytes; stderr gets 4.
    let req = ws
        .req("printf 123456; sleep 0.2; printf abcdefgh >&2")
        .with_limits(limits(10, 1024));
    let outcome = run_req(&req).unwrap();
    assert_eq!(outcome.stdout, "123456");
    assert_eq!(outcome.stdout_spill, None);
    assert_eq!(outcome.stderr, "abcd");
    assert!(outcome.truncated);
    assert_eq!(
        fs::read(outcome.stderr_spill.unwrap()).unwrap(),
        b"abcdefgh"
    );

    // The other way round.
    let req = ws
        .req("printf abcdefgh >&2; sleep 0.2; printf 123456")
        .with_limits(limits(10, 1024));
    let outcome = run_req(&req).unwrap();
    assert_eq!(outcome.stderr, "abcdefgh");
    assert_eq!(outcome.stdout, "12");
    assert_eq!(fs::read(outcome.stdout_spill.unwrap()).unwrap(), b"123456");
}

#[test]
fn spill_paths_can_be_shown_relative() {
    let ws = Ws::new();
    let req = ws
        .req("printf 0123456789")
        .with_limits(limits(4, 1024))
        .with_spill_display_dir(".agent-tools/spill");
    let outcome = run_req(&req).unwrap();
    let shown = outcome.stdout_spill.unwrap();
    assert!(shown.starts_with(".agent-tools/spill"), "{shown:?}");
    assert_eq!(fs::read(ws.root().join(shown)).unwrap(), b"0123456789");
}

#[test]
fn truncation_lands_on_a_char_boundary() {
    let ws = Ws::new();
    let req = ws.req("printf 'ééé'").with_limits(limits(5, 1024));
    let outcome = run_req(&req).unwrap();
    assert_eq!(outcome.stdout, "éé");
    assert!(outcome.truncated);
    assert!(!outcome.lossy);
    assert_eq!(
        fs::read_to_string(outcome.stdout_spill.unwrap()).unwrap(),
        "ééé"
    );
}

#[test]
fn output_limit_kills_and_names_the_spill() {
    let ws = Ws::new();
    let req = ws
        .req("echo $$ >&2; sleep 0.1; yes")
        .with_limits(limits(100, 10_000));
    let started = Instant::now();
    let err = run_req(&req).unwrap_err();
    assert_eq!(err.code(), ErrorCode::OutputLimit);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        err.to_string()
            .starts_with("stdout passed the output ceiling"),
        "{}",
        err.to_string()
    );
    let spill = PathBuf::from(field(&err, "stdout_spill").as_str().unwrap());
    let written = fs::read(spill).unwrap();
    assert_eq!(written.len(), 10_000);
    assert!(written.chunks(2).all(|c| c == b"y\n"));
    assert_eq!(field(&err, "truncated"), true);
    let pgid: i32 = field(&err, "stderr")
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_gone(pgid, Duration::from_secs(1)));
}

#[test]
fn output_exactly_at_the_ceiling_is_fine() {
    let ws = Ws::new();
    let req = ws.req("printf 0123456789").with_limits(limits(4, 10));
    let outcome = run_req(&req).unwrap();
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.stdout, "0123");
}

#[test]
fn background_child_holding_the_pipe_does_not_stall() {
    let ws = Ws::new();
    let started = Instant::now();
    let outcome = ws.run("sleep 30 & echo $!");
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_millis(800), "{elapsed:?}");
    assert_eq!(outcome.exit_code, Some(0));
    let pid: i32 = outcome.stdout.trim().parse().unwrap();
    // Not killed on a normal exit; clean up here.
    assert!(nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok());
    nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
}

#[test]
fn background_job_with_redirected_output_keeps_running() {
    let ws = Ws::new();
    let started = Instant::now();
    let outcome = ws.run("(sleep 1; echo x > marker) > /dev/null 2>&1 &");
    assert!(started.elapsed() < Duration::from_millis(900));
    assert_eq!(outcome.exit_code, Some(0));
    let marker = ws.root().join("marker");
    let end = Instant::now() + Duration::from_secs(5);
    while !marker.exists() && Instant::now() < end {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(marker.exists(), "the background job was killed");
}

#[test]
fn cancellation_kills_the_group_and_returns() {
    let ws = Ws::new();
    let (cancel, setter) = cancel_after(Duration::from_millis(100));
    let req = ws.req("echo $$; sleep 30");
    let started = Instant::now();
    let err = run(&req, &cancel).unwrap_err();
    let elapsed = started.elapsed();
    setter.join().unwrap();
    assert!(elapsed < Duration::from_millis(600), "{elapsed:?}");
    assert!(matches!(err, RunError::Cancelled { .. }), "{err:?}");
    assert_eq!(err.code(), ErrorCode::Internal);
    let pgid: i32 = field(&err, "stdout")
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(ToolError::from(err).is_cancelled());
    assert!(group_gone(pgid, Duration::from_millis(500)));
}

#[test]
fn invalid_utf8_is_replaced_and_flagged() {
    let ws = Ws::new();
    let outcome = ws.run(r"printf 'a\377b'; printf 'ok' >&2");
    assert_eq!(outcome.stdout, "a\u{FFFD}b");
    assert_eq!(outcome.stderr, "ok");
    assert!(outcome.lossy);
    assert_eq!(outcome.to_json()["lossy"], true);
}

#[test]
fn many_commands_in_parallel() {
    let ws = Arc::new(Ws::new());
    let handles: Vec<_> = (0..32)
        .map(|i| {
            let ws = Arc::clone(&ws);
            thread::spawn(move || {
                let outcome = ws.run(&format!("echo out{i}; echo err{i} >&2; exit {}", i % 7));
                assert_eq!(outcome.stdout, format!("out{i}\n"));
                assert_eq!(outcome.stderr, format!("err{i}\n"));
                assert_eq!(outcome.exit_code, Some(i % 7));
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
}

#[test]
fn outcome_json_shape() {
    let ws = Ws::new();
    let outcome = ws.run("echo hi; echo there >&2; exit 2");
    insta::assert_json_snapshot!(outcome.to_json(), @r#"
    {
      "exit_code": 2,
      "signal": null,
      "stderr": "there\n",
      "stdout": "hi\n",
      "timed_out": false
    }
    "#);
}

#[test]
fn the_shell_leads_its_own_process_group() {
    let ws = Ws::new();
    // Field 5 of /proc/PID/stat is the process group (sh has no spaces in comm).
    let outcome = ws.run("echo $$; cut -d' ' -f5 /proc/$$/stat");
    let lines: Vec<&str> = outcome.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{outcome:?}");
    assert_eq!(lines[0], lines[1]);
    assert_ne!(lines[1], nix::unistd::getpgrp().as_raw().to_string());
}

#[test]
fn unwritable_spill_dir_is_an_io_error() {
    let ws = Ws::new();
    fs::write(ws.root().join("blocker"), "").unwrap();
    let req = RunRequest::new(
        "yes | head -c 100000",
        ws.root(),
        ws.root().join("blocker/spill"),
    )
    .unwrap()
    .with_limits(limits(10, 1_000_000));
    let err = run_req(&req).unwrap_err();
    assert_eq!(err.code(), ErrorCode::IoError);
    assert!(err.to_string().contains("spill"), "{}", err.to_string());
}

#[test]
fn cancellation_escalates_quickly() {
    let ws = Ws::new();
    let (cancel, setter) = cancel_after(Duration::from_millis(150));
    // Ignores SIGTERM: only the SIGKILL after the short cancel grace ends it.
    let req = ws.req("trap '' TERM; echo $$; sleep 30");
    let started = Instant::now();
    let err = run(&req, &cancel).unwrap_err();
    let elapsed = started.elapsed();
    setter.join().unwrap();
    assert!(err.is_cancelled(), "{err:?}");
    assert!(elapsed < Duration::from_millis(1000), "{elapsed:?}");
    let pgid: i32 = field(&err, "stdout")
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_gone(pgid, Duration::from_secs(1)));
}

fn argv_req(ws: &Ws, argv: &[&str]) -> RunRequest {
    RunRequest::argv(
        argv.iter().map(|a| (*a).to_owned()).collect(),
        ws.root(),
        ws.spill_dir(),
    )
    .unwrap()
    .with_timeout(Duration::from_secs(20))
}

#[test]
fn argv_elements_reach_the_program_verbatim() {
    let ws = Ws::new();
    // No shell in between: `$HOME`, quotes, `;` and spaces stay literal.
    let outcome = run_req(&argv_req(
        &ws,
        &["printf", "[%s]\n", "a b", "$HOME", "'q'", "x;y", ""],
    ))
    .unwrap();
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.stdout, "[a b]\n[$HOME]\n['q']\n[x;y]\n[]\n");
}

#[test]
fn argv_runs_a_shell_when_asked_and_reports_its_exit() {
    let ws = Ws::new();
    fs::write(ws.root().join("here.txt"), "x").unwrap();
    let outcome = run_req(&argv_req(&ws, &["sh", "-c", "ls; echo oops >&2; exit 3"])).unwrap();
    assert_eq!(outcome.exit_code, Some(3));
    assert_eq!(outcome.stdout, "here.txt\n");
    assert_eq!(outcome.stderr, "oops\n");
}

#[test]
fn argv_with_a_missing_program_is_an_io_error_naming_it() {
    let ws = Ws::new();
    let err = run_req(&argv_req(&ws, &["no-such-program-here-7"])).unwrap_err();
    assert_eq!(err.code(), ErrorCode::IoError);
    assert!(
        err.to_string()
            .contains("cannot start no-such-program-here-7"),
        "{}",
        err.to_string()
    );
}

#[test]
fn argv_timeout_kills_the_program() {
    let ws = Ws::new();
    let req = argv_req(&ws, &["sleep", "30"]).with_timeout(Duration::from_millis(200));
    let err = run_req(&req).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Timeout);
    assert_eq!(field(&err, "timed_out"), Value::Bool(true));
}

#[test]
fn a_cut_run_keeps_each_streams_start_and_drops_the_rest_without_spilling() {
    let ws = Ws::new();
    let req = ws
        .req("head -c 5000 /dev/zero | tr '\\0' a; head -c 3000 /dev/zero | tr '\\0' b >&2; echo done")
        .with_limits(OutputLimits::cut_per_stream(1000));
    let outcome = run_req(&req).unwrap();
    assert_eq!(outcome.exit_code, Some(0), "the command is not killed");
    assert_eq!(outcome.stdout, "a".repeat(1000));
    assert_eq!(outcome.stdout_dropped, 4005);
    assert_eq!(outcome.stderr, "b".repeat(1000));
    assert_eq!(outcome.stderr_dropped, 2000);
    assert!(!outcome.truncated);
    assert_eq!(outcome.stdout_spill, None);
    assert!(!ws.spill_dir().exists());
    assert_eq!(outcome.to_json()["stdout_dropped"], 4005);
}

#[test]
fn the_kill_grace_can_be_set_and_a_timeout_keeps_the_cut_output() {
    let ws = Ws::new();
    let req = ws
        .req("trap '' TERM; head -c 3000 /dev/zero | tr '\\0' a; sleep 30")
        .with_timeout(Duration::from_millis(100))
        .with_kill_grace(Duration::from_millis(200))
        .with_limits(OutputLimits::cut_per_stream(1000));
    assert_eq!(req.kill_grace(), Duration::from_millis(200));
    let err = run_req(&req).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Timeout);
    assert_eq!(field(&err, "stdout"), "a".repeat(1000).as_str());
    assert_eq!(field(&err, "stdout_dropped"), 2000);
    assert_eq!(ws.req("true").kill_grace(), agent_tools_bash::KILL_GRACE);
}

#[test]
fn a_sandboxed_request_without_a_launcher_is_refused_before_anything_runs() {
    let ws = Ws::new();
    let policy =
        agent_tools_bash::sandbox::SandboxPolicy::new(vec![ws.root().to_path_buf()], vec![])
            .unwrap();
    let req = ws.req("touch ran").with_sandbox(policy);
    let err = run_req(&req).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    assert!(err.to_string().contains("launcher"), "{}", err.to_string());
    assert!(!ws.root().join("ran").exists());
}

#[test]
fn an_unsandboxed_failure_is_never_called_a_sandbox_refusal() {
    let ws = Ws::new();
    let outcome = ws.run("echo 'Permission denied' >&2; exit 1");
    assert_eq!(outcome.exit_code, Some(1));
    assert!(!outcome.maybe_sandbox_refusal);
}
