//! The `codex` surface: the tools codex gives its models, `apply_patch`
//! (the patch text in `input`), `shell` (an argv in `command`), and unified
//! exec's `exec_command` and `write_stdin` (commands that keep running
//! between calls, in pipes or a PTY, on the connection's job table), over the
//! same engine as the default surface, answered in the shapes codex answers
//! them (see SPEC section 10, "The codex surface").
//!
//! Both tools reuse the facade's own paths ([`agent_tools_surface_default::apply_patch_text`]
//! and [`agent_tools_surface_default::run_command`]): confinement, all-or-nothing patches,
//! the launcher, timeouts, spill files and cancellation are the default
//! surface's, only the wording differs.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use agent_tools::{
    CallContext, CallOutcome, Config, Failure, Hints, Reply, StartupError, Surface, ToolDef,
    ToolResult,
};
use agent_tools_bash::RunError;
use agent_tools_patch::{Action, Report};
use agent_tools_surface_default::{CommandLine, DefaultSurface, Services};
use serde::Serialize;

mod args;
mod unified;

pub use unified::CodexSession;

use args::{ApplyPatchArgs, ShellArgs};

/// The surface's name, as `--surface` takes it.
pub const CODEX_SURFACE: &str = "codex";

/// The exit code a timed-out command reports, as codex reports it (the
/// `timeout` utility's convention).
pub const TIMEOUT_EXIT_CODE: i32 = 124;

/// The codex surface: `apply_patch` and `shell`. Failures are plain text
/// with `isError: true`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CodexSurface;

const APPLY_PATCH: &str = "Edit files with a patch, all or nothing. `input` holds the patch: \
`*** Begin Patch`, then one section per file (`*** Add File: PATH` followed by `+` lines; \
`*** Delete File: PATH`; `*** Update File: PATH`, optionally `*** Move to: NEW_PATH`, followed by \
chunks that start with `@@` (optionally `@@ line` to jump past a line such as a function header) \
and list context lines with a leading space, removed lines with `-` and added lines with `+`), \
then `*** End Patch`. A unified diff is accepted too. Paths are relative to the workspace root. \
Chunks are found by their content, in file order; small whitespace and punctuation differences \
are tolerated and reported. If any chunk fails, no file is changed and the answer names the file \
and the lines that were not found. On success the answer lists the files: A added, M modified \
(or moved, under its new path), D deleted.";

const SHELL: &str = "Run a program in the workspace and return its combined output (stdout, then \
stderr) with its exit code and run time as JSON: {\"output\": ..., \"metadata\": {\"exit_code\": N, \
\"duration_seconds\": S}}. `command` is the argv, passed as it is with no shell in between: use \
[\"bash\", \"-lc\", \"SCRIPT\"] for pipes, redirections or globs. `workdir` (inside the workspace; \
the root when omitted) is where it runs. stdin is closed and the call waits for the program to \
end. timeout_ms defaults to 120000 and is capped by the server; on timeout the program and its \
children are killed and the output so far is returned with exit code 124. Output beyond the \
budget is saved complete under .agent-tools/spill/ and the file is named at the end of the output.";

const EXEC_COMMAND: &str =
    "Runs a command in a PTY, returning output or a session ID for ongoing interaction.";

const WRITE_STDIN: &str =
    "Writes characters to an existing unified exec session and returns recent output.";

impl Surface for CodexSurface {
    type State = Services;

    fn name(&self) -> &'static str {
        CODEX_SURFACE
    }

    fn summary(&self) -> &'static str {
        "the tools codex gives its models: apply_patch (the patch in `input`), shell \
         (an argv in `command`) and exec_command/write_stdin (sessions that keep running), \
         answered in codex's shapes, errors as plain text"
    }

    fn instructions(&self) -> &'static str {
        "File editing and command tools confined to one workspace folder, in the shapes codex \
         uses: apply_patch takes a `*** Begin Patch` patch in `input`, shell takes an argv in \
         `command`. Paths are relative to the workspace root. Failures come back as plain text."
    }

    fn open(&self, config: &Config) -> Result<Services, StartupError> {
        // The same engine handles as the default surface: one workspace,
        // one set of file tools and locks.
        DefaultSurface.open(config)
    }

    fn tools(&self) -> Vec<ToolDef<Services>> {
        vec![
            ToolDef::typed("apply_patch", APPLY_PATCH, true, apply_patch)
                // A second identical patch finds its lines gone, or edits again.
                .titled("Apply patch", Hints::EDIT),
            ToolDef::typed("shell", SHELL, true, shell)
                .titled("Run command", Hints::RUN)
                .bounding_itself(),
            ToolDef::typed("exec_command", EXEC_COMMAND, true, unified::exec_command)
                .titled("Run command in a session", Hints::RUN)
                .bounding_itself()
                .bound_to_connection(),
            ToolDef::typed("write_stdin", WRITE_STDIN, true, unified::write_stdin)
                .titled("Write to a command session", Hints::RUN)
                .bounding_itself()
                .bound_to_connection(),
        ]
    }

    fn new_session(&self) -> agent_tools::Session {
        // The connection's processes live, and die, with it.
        agent_tools::Session::new(CodexSession::default())
    }

    fn workspace_index<'a>(&self, state: &'a Services) -> Option<&'a agent_tools::WorkspaceIndex> {
        state.files().index()
    }

    fn render_error(&self, failure: Failure<'_>) -> CallOutcome {
        // codex shows its model the failure's text and nothing else, for
        // every code at every stage; the snapshot of every code, stage and
        // surface (tests/surfaces.rs) makes a new code's rendering a visible
        // decision.
        CallOutcome::error_text(failure.error.message().to_owned(), failure.cause())
    }
}

fn apply_patch(
    services: &Services,
    args: ApplyPatchArgs,
    call: &CallContext,
) -> ToolResult<String> {
    let (patch, report) = agent_tools_surface_default::apply_patch_text(services, &args.input)?;
    // With --lsp, the written files' diagnostics follow, as on the default
    // surface (and removed files are forgotten by their servers).
    Ok(services.after_patch(patch_summary(&report), &patch, call.cancel.flag()))
}

/// codex's summary (added, then modified, then deleted; a move listed as
/// modified under its new path), followed by what the engine adds when
/// there is something to disclose: a tolerant match, an overwrite, an
/// offset.
fn patch_summary(report: &Report) -> String {
    let mut out = String::from("Success. Updated the following files:\n");
    let groups: [(&str, &[Action]); 3] = [
        ("A", &[Action::Created, Action::Copied]),
        ("M", &[Action::Modified, Action::Renamed]),
        ("D", &[Action::Deleted]),
    ];
    for (letter, actions) in groups {
        for file in report.files.iter().filter(|f| actions.contains(&f.action)) {
            let _ = writeln!(out, "{letter} {}", file.path);
        }
    }
    let notes: Vec<String> = report
        .files
        .iter()
        .filter(|f| f.fuzz.is_some() || f.overwrote || !f.offsets.is_empty())
        .map(ToString::to_string)
        .collect();
    if !notes.is_empty() {
        out.push_str("Notes:\n");
        for note in notes {
            out.push_str(&note);
            out.push('\n');
        }
    }
    out
}

fn shell(services: &Services, args: ShellArgs, call: &CallContext) -> ToolResult<Reply> {
    let max_output = services.config().max_output_bytes();
    // Leave room for the JSON around the output and the spill note.
    let budget = max_output.saturating_sub(1024).max(256);
    let started = Instant::now();
    let result = agent_tools_surface_default::run_command(
        services,
        CommandLine::Argv(args.command),
        args.workdir.as_deref(),
        "workdir must be a directory",
        args.timeout_ms,
        budget,
        call.session
            .get::<unified::CodexSession>()
            .map(unified::CodexSession::jobs),
        call,
    );
    let elapsed = started.elapsed();
    match result {
        Ok(outcome) => {
            // A signal reads as 128 + its number: the shell's convention,
            // which codex follows too.
            let exit_code = outcome.shell_exit_code();
            let note =
                agent_tools_surface_default::sandbox_refusal_note(services.config(), &outcome);
            let mut output = outcome.stdout;
            output.push_str(&outcome.stderr);
            if let Some(note) = note {
                output.push_str(&format!("\n[{note}]\n"));
            }
            let spills = [outcome.stdout_spill, outcome.stderr_spill];
            let spills = spills
                .iter()
                .flatten()
                .map(|p| p.to_string_lossy().into_owned());
            let text = render_exec(output, spills.collect(), exit_code, elapsed, max_output);
            Ok(Reply {
                content: vec![agent_tools::Content::Text(text)],
                is_error: exit_code != 0,
            })
        }
        Err(RunError::TimedOut { partial, .. }) => {
            // codex answers a timeout like a finished command: the output
            // so far under a first line saying so, exit code 124.
            let mut output = format!(
                "command timed out after {} milliseconds\n",
                elapsed.as_millis()
            );
            output.push_str(&partial.stdout);
            output.push_str(&partial.stderr);
            let spills = [partial.stdout_spill, partial.stderr_spill]
                .iter()
                .flatten()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            let text = render_exec(output, spills, TIMEOUT_EXIT_CODE, elapsed, max_output);
            Ok(Reply {
                content: vec![agent_tools::Content::Text(text)],
                is_error: true,
            })
        }
        // The ceiling and a cancellation are failures here, in their words.
        Err(
            err @ (RunError::OverCeiling { .. } | RunError::Cancelled { .. } | RunError::Failed(_)),
        ) => Err(err.into()),
    }
}

/// The JSON codex returns for a command, keys in its order.
#[derive(Serialize)]
struct ExecAnswer<'a> {
    output: &'a str,
    metadata: ExecMetadata,
}

/// The metadata of [`ExecAnswer`].
#[derive(Serialize)]
struct ExecMetadata {
    exit_code: i32,
    duration_seconds: f64,
}

/// codex's structured answer for a command: `{"output": ..., "metadata":
/// {"exit_code": N, "duration_seconds": S}}`, seconds rounded to a tenth.
/// Spill files are named at the end of the output; the output is cut from
/// its end (on a character boundary) if the whole would pass `max`, and
/// the cut said so.
fn render_exec(
    mut output: String,
    spills: Vec<String>,
    exit_code: i32,
    elapsed: Duration,
    max: usize,
) -> String {
    let seconds = (elapsed.as_secs_f64() * 10.0).round() / 10.0;
    let mut note = String::new();
    for spill in &spills {
        let _ = write!(
            note,
            "\n[output truncated; the complete stream is in {spill}]"
        );
    }
    // Rendered from structs, not a JSON map, so that the keys come in
    // codex's order (output first) rather than sorted.
    let render = |output: &str| {
        serde_json::to_string(&ExecAnswer {
            output,
            metadata: ExecMetadata {
                exit_code,
                duration_seconds: seconds,
            },
        })
        // Strings and numbers always serialize (a non-finite f64 becomes null).
        .unwrap_or_default()
    };
    let full = format!("{output}{note}");
    let text = render(&full);
    if text.len() <= max {
        return text;
    }
    // Too long once escaped (invalid UTF-8 replaced, many escapes): drop
    // characters from the end until the escaped whole fits.
    let cut_note = "\n[output cut to fit the answer]";
    let fixed = render(&format!("{cut_note}{note}")).len();
    let room = max.saturating_sub(fixed);
    let mut used = 0;
    let mut keep = 0;
    for (at, ch) in output.char_indices() {
        let mut utf8 = [0u8; 4];
        let cost: usize = ch
            .encode_utf8(&mut utf8)
            .bytes()
            .map(agent_tools_bash::json_escaped_len)
            .sum();
        if used + cost > room {
            break;
        }
        used += cost;
        keep = at + ch.len_utf8();
    }
    output.truncate(keep);
    render(&format!("{output}{cut_note}{note}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use agent_tools_bash::signal_exit_code;
    use agent_tools_patch::{FileReport, MatchLevel};
    use serde_json::Value;

    fn file(action: Action, path: &str) -> FileReport {
        FileReport {
            action,
            path: path.into(),
            from: None,
            hunks: 0,
            offsets: vec![],
            mode_change: None,
            fuzz: None,
            overwrote: false,
        }
    }

    #[test]
    fn the_summary_groups_files_as_codex_does() {
        let mut moved = file(Action::Renamed, "b/new.txt");
        moved.from = Some("a/old.txt".into());
        let report = Report {
            files: vec![
                file(Action::Deleted, "gone.txt"),
                file(Action::Modified, "m.txt"),
                file(Action::Created, "new.txt"),
                moved,
            ],
        };
        assert_eq!(
            patch_summary(&report),
            "Success. Updated the following files:\nA new.txt\nM m.txt\nM b/new.txt\nD gone.txt\n"
        );
    }

    /// codex-rs `apply-patch/src/lib.rs` (`apply_hunks_to_files` pushes the
    /// destination into `modified`; test `test_update_file_hunk_can_move_file`
    /// expects `M <dest>`): a moved file is listed once, as modified, under
    /// its new path. Checked on the engine's own report of a real patch.
    #[test]
    fn a_move_is_listed_as_modified_under_its_new_path() {
        let mut store = agent_tools_patch::MemoryStore::new();
        store.insert("src/old.txt", "line\n");
        store.insert("dest.txt", "replaced by the move\n");
        store.insert("m.txt", "a\nb\n");
        store.insert("gone.txt", "x\n");
        let patch = "*** Begin Patch\n\
                     *** Add File: added.txt\n+new\n\
                     *** Update File: src/old.txt\n*** Move to: dest.txt\n@@\n-line\n+line2\n\
                     *** Update File: m.txt\n@@\n a\n-b\n+c\n\
                     *** Delete File: gone.txt\n\
                     *** End Patch\n";
        let report = agent_tools_patch::apply_patch(patch, &mut store).unwrap();
        assert_eq!(store.get("dest.txt"), Some(&b"line2\n"[..]));
        assert_eq!(store.get("src/old.txt"), None);
        let text = patch_summary(&report);
        let (summary, notes) = text.split_once("Notes:\n").unwrap();
        assert_eq!(
            summary,
            "Success. Updated the following files:\nA added.txt\nM dest.txt\nM m.txt\nD gone.txt\n"
        );
        // The overwrite of dest.txt is disclosed after codex's lines.
        assert!(notes.contains("dest.txt"), "{notes}");
        assert!(!notes.contains("added.txt"), "{notes}");
    }

    #[test]
    fn tolerant_matches_are_disclosed_after_the_summary() {
        let mut fuzzy = file(Action::Modified, "m.txt");
        fuzzy.fuzz = Some(MatchLevel::TrailingWhitespace);
        let text = patch_summary(&Report { files: vec![fuzzy] });
        assert!(
            text.ends_with("M m.txt\nNotes:\nM m.txt (matched ignoring trailing whitespace)\n"),
            "{text}"
        );
    }

    #[test]
    fn signals_map_to_128_plus_their_number() {
        assert_eq!(signal_exit_code(Some("SIGKILL")), 137);
        assert_eq!(signal_exit_code(Some("SIGTERM")), 143);
        assert_eq!(signal_exit_code(Some("signal 99")), -1);
        assert_eq!(signal_exit_code(None), -1);
    }

    #[test]
    fn exec_answers_are_codex_shaped_and_bounded() {
        let text = render_exec(
            "hi\n".into(),
            vec![],
            0,
            Duration::from_millis(1234),
            10_000,
        );
        // Byte for byte, keys in codex's order: output, then metadata.
        assert_eq!(
            text,
            r#"{"output":"hi\n","metadata":{"exit_code":0,"duration_seconds":1.2}}"#
        );

        let long = "\u{1}".repeat(5000); // escapes to six bytes each
        let text = render_exec(
            long,
            vec![".agent-tools/spill/x".into()],
            1,
            Duration::ZERO,
            2000,
        );
        assert!(text.len() <= 2000, "{}", text.len());
        let value: Value = serde_json::from_str(&text).unwrap();
        let output = value["output"].as_str().unwrap();
        assert!(output.starts_with('\u{1}'));
        assert!(output.ends_with(
            "[output cut to fit the answer]\n[output truncated; the complete stream is in .agent-tools/spill/x]"
        ));
        assert_eq!(value["metadata"]["exit_code"], 1);
    }
}
