//! The client against the scripted server in `testdata/fake_lsp.py`.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::*;

fn fake(mode: &str, pids: &Path) -> ServerSpec {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/fake_lsp.py");
    let mut spec = ServerSpec::new("fake", script, &[], &[(".fk", "fake")]);
    spec.env = vec![
        ("FAKE_LSP_MODE".to_owned(), mode.to_owned()),
        (
            "FAKE_LSP_PIDS".to_owned(),
            pids.to_string_lossy().into_owned(),
        ),
    ];
    spec
}

struct Setup {
    dir: tempfile::TempDir,
    client: LspClient,
    pids: PathBuf,
}

fn setup_with(mode: &str, wait_ms: u64, edit: impl FnOnce(&mut ServerSpec)) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let mut spec = fake(mode, &pids);
    edit(&mut spec);
    let client = LspClient::new(LspSettings {
        root: dir.path().to_path_buf(),
        servers: vec![spec],
        wait: Duration::from_millis(wait_ms),
        report: Severity::Warning,
        launch: Launch::default(),
    });
    Setup { dir, client, pids }
}

fn setup(mode: &str) -> Setup {
    setup_with(mode, 3000, |_| {})
}

impl Setup {
    fn write(&self, name: &str, text: &str) -> Option<Report> {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        self.client.after_write(&path, &AtomicBool::new(false))
    }

    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(&self.pids)
            .unwrap_or_default()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    }
}

fn alive(pid: i32) -> bool {
    // A zombie has been killed but not yet reaped by its parent.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn checked(report: &Report) -> &[FileDiagnostic] {
    match &report.outcome {
        Outcome::Checked { diagnostics } => diagnostics,
        Outcome::Note(note) => panic!("expected diagnostics, got {note:?}"),
    }
}

#[test]
fn an_edit_gets_the_diagnostics_of_its_own_version() {
    let s = setup("normal");
    let report = s.write("a.fk", "fine\n").unwrap();
    assert_eq!(checked(&report), &[]);
    assert_eq!(
        report.render_plain("a.fk").lines().nth(1),
        Some("no errors in a.fk")
    );

    let report = s.write("a.fk", "fine\n  x ERROR y\nWARN\n").unwrap();
    let found = checked(&report);
    assert_eq!(found.len(), 2);
    assert_eq!(
        found[0].line_for("a.fk"),
        "a.fk:2:5: error: found error: x ERROR y [E1]"
    );
    assert_eq!(found[1].severity, Severity::Warning);
    assert!(!found[0].preexisting);
    let text = report.render_plain("a.fk");
    assert!(text.starts_with("diagnostics (fake, "), "{text}");

    // A second error: the first is reported as there before.
    let report = s
        .write("a.fk", "ERROR here\nfine\n  x ERROR y\nWARN\n")
        .unwrap();
    let text = report.render_plain("a.fk");
    assert!(
        text.contains("a.fk:1:1: error: found error: ERROR here [E1]"),
        "{text}"
    );
    assert!(
        text.contains("(2 problems were already there before this write)"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 3, "{text}");

    // The fix clears it, never showing the stale set.
    let report = s.write("a.fk", "fine\n").unwrap();
    assert_eq!(checked(&report), &[]);
}

#[test]
fn only_errors_when_asked_for_errors() {
    let mut s = setup("normal");
    s.client = LspClient::new(LspSettings {
        report: Severity::Error,
        ..s.client.settings().clone()
    });
    let report = s.write("a.fk", "WARN\n").unwrap();
    assert_eq!(checked(&report), &[]);
}

#[test]
fn columns_are_characters() {
    let s = setup("normal");
    // The fake counts columns in code points; ASCII keeps both the same.
    let report = s.write("a.fk", "ab ERROR\n").unwrap();
    assert_eq!(checked(&report)[0].column, 4);
}

#[test]
fn files_no_server_handles_cost_nothing() {
    let s = setup("normal");
    let started = Instant::now();
    assert!(s.write("a.txt", "ERROR").is_none());
    assert!(s.write("Makefile", "ERROR").is_none());
    assert!(started.elapsed() < Duration::from_millis(50));
    assert!(s.pids().is_empty(), "nothing was started");
}

#[test]
fn a_server_without_versions_is_taken_at_its_next_publication() {
    let s = setup("noversion");
    assert_eq!(checked(&s.write("a.fk", "ERROR\n").unwrap()).len(), 1);
    assert_eq!(checked(&s.write("a.fk", "ok\n").unwrap()).len(), 0);
}

#[test]
fn pull_diagnostics_are_used_when_offered() {
    let s = setup("pull");
    assert_eq!(checked(&s.write("a.fk", "ERROR\n").unwrap()).len(), 1);
    assert_eq!(checked(&s.write("a.fk", "ok\n").unwrap()).len(), 0);
}

#[test]
fn a_slow_start_is_a_note_then_the_next_call_gets_diagnostics() {
    let s = setup_with("slowinit", 300, |_| {});
    let started = Instant::now();
    let report = s.write("a.fk", "ERROR\n").unwrap();
    assert!(started.elapsed() < Duration::from_millis(1000));
    assert_eq!(report.outcome, Outcome::Note(Note::Starting));
    assert!(
        report
            .render_plain("a.fk")
            .contains("fake is still starting")
    );
    // Later calls carry on where it left (polled: the start takes 1.5 s
    // plus however long the loaded machine needs).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut n = 1;
    loop {
        n += 1;
        let text = "ERROR\n".repeat(n);
        let report = s.write("a.fk", &text).unwrap();
        if report.outcome != Outcome::Note(Note::Starting) {
            assert_eq!(checked(&report).len(), n);
            break;
        }
        assert!(Instant::now() < deadline, "still starting");
    }
}

#[test]
fn a_server_that_never_answers_costs_the_wait_and_is_disabled_after_its_timeout() {
    let s = setup_with("noinit", 400, |spec| {
        spec.startup_timeout = Duration::from_millis(800);
    });
    let started = Instant::now();
    let report = s.write("a.fk", "x\n").unwrap();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_millis(900),
        "{took:?}"
    );
    assert_eq!(report.outcome, Outcome::Note(Note::Starting));
    std::thread::sleep(Duration::from_millis(500));
    let report = s.write("a.fk", "y\n").unwrap();
    let Outcome::Note(Note::Disabled { reason }) = &report.outcome else {
        panic!("{report:?}");
    };
    assert!(
        reason.contains("did not answer initialize within 0.8 s"),
        "{reason}"
    );
    let pids = s.pids();
    assert_eq!(pids.len(), 1);
    assert!(!alive(pids[0]), "the silent server was killed");
}

#[test]
fn crashes_are_restarted_then_the_server_is_disabled_with_the_reason() {
    let s = setup_with("crash", 2000, |spec| spec.max_restarts = 1);
    let report = s.write("a.fk", "x\n").unwrap();
    let Outcome::Note(Note::Crashed { reason }) = &report.outcome else {
        panic!("{report:?}");
    };
    assert!(
        reason.contains("exited with code 3: fake: boom"),
        "{reason}"
    );
    // Restarted (no backoff after the first crash), crashes again: disabled.
    let report = s.write("a.fk", "y\n").unwrap();
    let Outcome::Note(Note::Disabled { reason }) = &report.outcome else {
        panic!("{report:?}");
    };
    assert!(reason.contains("stopped 2 times"), "{reason}");
    assert!(reason.contains("fake: boom"), "{reason}");
    // Disabled answers at once and starts nothing more.
    let started = Instant::now();
    let report = s.write("a.fk", "z\n").unwrap();
    assert!(matches!(
        report.outcome,
        Outcome::Note(Note::Disabled { .. })
    ));
    assert!(started.elapsed() < Duration::from_millis(100));
    assert_eq!(s.pids().len(), 2);
}

#[test]
fn a_missing_program_is_not_offered() {
    let s = setup_with("normal", 100, |spec| {
        spec.command = "/nonexistent/server".to_owned()
    });
    assert!(s.write("a.fk", "ERROR").is_none());
    assert!(s.client.status()[0].found.is_none());
}

#[test]
fn dropping_the_client_stops_every_server() {
    let s = setup("normal");
    s.write("a.fk", "x\n").unwrap();
    let pids = s.pids();
    assert_eq!(pids.len(), 1);
    assert!(alive(pids[0]));
    let started = Instant::now();
    drop(s.client);
    assert!(started.elapsed() < SHUTDOWN_GRACE + Duration::from_secs(1));
    assert!(!alive(pids[0]));
}

#[test]
fn navigation_requests_open_the_file_and_see_outside_changes() {
    let s = setup("normal");
    let path = s.dir.path().join("b.fk");
    std::fs::write(&path, "def helper\nhelper()\n").unwrap();
    let cancel = AtomicBool::new(false);
    let answer = s
        .client
        .request(
            &path,
            "textDocument/references",
            |uri| {
                json!({"textDocument": {"uri": uri}, "position": {"line": 1, "character": 0},
                "context": {"includeDeclaration": true}})
            },
            &cancel,
        )
        .unwrap();
    assert_eq!(answer.as_array().unwrap().len(), 2);
    // A change made behind the tools' back is sent before the next request.
    std::fs::write(&path, "ERROR\n").unwrap();
    let report = s.client.diagnostics(&path, &cancel).unwrap();
    assert_eq!(checked(&report).len(), 1);
    let err = s
        .client
        .request(
            &s.dir.path().join("c.txt"),
            "textDocument/hover",
            |_| json!({}),
            &cancel,
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "no language server for .txt files");
}

#[test]
fn a_cancelled_wait_returns_at_once() {
    let s = setup_with("noinit", 3000, |_| {});
    let path = s.dir.path().join("a.fk");
    std::fs::write(&path, "x").unwrap();
    let started = Instant::now();
    let report = s.client.after_write(&path, &AtomicBool::new(true)).unwrap();
    assert!(started.elapsed() < Duration::from_millis(300));
    assert_eq!(report.outcome, Outcome::Note(Note::Cancelled));
}

#[test]
fn other_open_files_changed_on_disk_are_sent_before_a_request_and_gone_ones_closed() {
    let s = setup("normal");
    s.write("a.fk", "fine\n").unwrap();
    s.write("b.fk", "fine\n").unwrap();
    let a = s.dir.path().join("a.fk");
    let b = s.dir.path().join("b.fk");
    let text_of = |path: &Path| s.client.open_text(path);
    let (_, version) = text_of(&a).unwrap();
    // A command rewrites a.fk; a question about b.fk sends it first.
    std::fs::write(&a, "now ERROR\n").unwrap();
    let report = s.client.diagnostics(&b, &AtomicBool::new(false)).unwrap();
    assert!(checked(&report).is_empty());
    assert_eq!(text_of(&a), Some(("now ERROR\n".to_owned(), version + 1)));
    // Its publication for the new text arrived (the server was told).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if s.client.published(&a) == Some((Some(version + 1), 1)) {
            break;
        }
        assert!(Instant::now() < deadline, "no publication for the new text");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Unchanged on disk: nothing is sent again.
    s.client.diagnostics(&b, &AtomicBool::new(false)).unwrap();
    assert_eq!(text_of(&a).unwrap().1, version + 1);
    // Removed: the server is told it is closed, and it is forgotten.
    std::fs::remove_file(&a).unwrap();
    s.client
        .request(
            &b,
            "textDocument/hover",
            |uri| json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
            &AtomicBool::new(false),
        )
        .unwrap();
    assert_eq!(text_of(&a), None);
}
