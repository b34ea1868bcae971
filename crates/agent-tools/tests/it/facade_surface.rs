//! The surface mechanism, driven from outside the facade crate the way a
//! surface crate would: a surface of its own with rich content, protocol
//! errors, session state and cancellation, through the same pipeline.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use agent_tools::{
    AgentTools, CallContext, CallOutcome, Cause, Config, Content, ErrorCode, Failure, Hints,
    ProtocolError, Reply, Session, Stage, StartupError, Surface, ToolDef, ToolError, ToolResult,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// What the test surface's tools work with.
struct Root {
    name: String,
}

/// Counts the calls of one session.
#[derive(Default)]
struct Counter(Mutex<u32>);

#[derive(Default)]
struct TestSurface;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FailArgs {
    /// The code to fail with.
    code: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TextArgs {
    /// How many bytes of text each of the two items holds.
    size: usize,
    /// Optional, to check that null still means absent.
    #[serde(default)]
    note: Option<String>,
}

fn pictures(root: &Root, _: NoArgs, _: &CallContext) -> ToolResult<Reply> {
    Ok(Reply::items(vec![
        Content::text(format!("from {}", root.name)),
        Content::Image {
            data: vec![0x89, b'P', b'N', b'G'],
            mime_type: "image/png".into(),
        },
        Content::blob("file:///x.bin", "application/octet-stream", vec![0, 1, 2]),
    ]))
}

fn fail(_: &Root, args: FailArgs, _: &CallContext) -> ToolResult<String> {
    let code = match args.code.as_str() {
        "path_escape" => ErrorCode::PathEscape,
        "not_found" => ErrorCode::NotFound,
        _ => ErrorCode::IoError,
    };
    Err(ToolError::new(code, format!("failed with {code}")))
}

fn count(_: &Root, _: NoArgs, call: &CallContext) -> ToolResult<String> {
    let counter = call
        .session
        .get::<Counter>()
        .ok_or_else(|| ToolError::internal("no session"))?;
    let mut n = counter.0.lock().unwrap();
    *n += 1;
    Ok(n.to_string())
}

fn wait_for_cancel(_: &Root, _: NoArgs, call: &CallContext) -> ToolResult<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !call.cancel.flag().load(Ordering::SeqCst) {
        if Instant::now() > deadline {
            return Ok("never cancelled".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Err(ToolError::new(ErrorCode::IoError, "stopped"))
}

fn texts(_: &Root, args: TextArgs, _: &CallContext) -> ToolResult<Reply> {
    let item = "x".repeat(args.size);
    let mut reply = Reply::items(vec![Content::text(item.clone()), Content::text(item)]);
    if let Some(note) = args.note {
        reply.content.push(Content::text(note));
    }
    Ok(reply)
}

impl Surface for TestSurface {
    type State = Root;

    fn name(&self) -> &'static str {
        "test"
    }

    fn summary(&self) -> &'static str {
        "a surface for the tests"
    }

    fn instructions(&self) -> &'static str {
        "test tools"
    }

    fn offers_structured_output(&self) -> bool {
        true
    }

    fn open(&self, config: &Config) -> Result<Root, StartupError> {
        Ok(Root {
            name: config.root().display().to_string(),
        })
    }

    fn tools(&self) -> Vec<ToolDef<Root>> {
        vec![
            ToolDef::typed("pictures", "Returns rich content.", false, pictures)
                .titled("Pictures", Hints::READ)
                .answering_media(),
            ToolDef::typed("fail", "Fails.", false, fail).titled("Fail", Hints::READ),
            ToolDef::typed("count", "Counts calls.", false, count).titled("Count", Hints::READ),
            ToolDef::typed("wait", "Waits to be cancelled.", false, wait_for_cancel)
                .titled("Wait", Hints::READ),
            ToolDef::typed("texts", "Two text items.", false, texts).titled("Texts", Hints::READ),
            ToolDef::typed(
                "touch",
                "Changes things.",
                true,
                |_: &Root, _: NoArgs, _| Ok::<_, ToolError>("touched".to_string()),
            )
            .titled("Touch", Hints::EDIT),
            // Declares a JSON answer and answers text: a defect whose
            // answer keeps its text and goes without a structured copy.
            ToolDef::typed(
                "claims_json",
                "Says it answers JSON.",
                false,
                |_: &Root, _: NoArgs, _| Ok::<_, ToolError>("plain".to_string()),
            )
            .titled("Claims JSON", Hints::READ)
            .answering_json::<TextArgs>()
            .unlisted(),
            ToolDef::typed("old_count", "An older name of count.", false, count)
                .titled("Count (old name)", Hints::READ)
                .unlisted(),
        ]
    }

    fn render_error(&self, failure: Failure<'_>) -> CallOutcome {
        let cause = Some(failure.cause());
        let stage = match failure.stage {
            Stage::Lookup => "lookup",
            Stage::Validation => "validation",
            Stage::Run => "run",
        };
        let message = format!("{stage}: {}", failure.error.message());
        let code = match failure.error.code() {
            ErrorCode::PathEscape => -32001,
            ErrorCode::NotFound => -32002,
            ErrorCode::InvalidInput => -32602,
            ErrorCode::NotAFile
            | ErrorCode::IsBinary
            | ErrorCode::NoMatch
            | ErrorCode::AmbiguousMatch
            | ErrorCode::PatchFailed
            | ErrorCode::Timeout
            | ErrorCode::OutputLimit
            | ErrorCode::TooLarge
            | ErrorCode::IoError
            | ErrorCode::Internal => {
                let mut outcome = CallOutcome::error_text(message, failure.cause());
                if let CallOutcome::Result(result) = &mut outcome {
                    result.cause = cause;
                }
                return outcome;
            }
        };
        CallOutcome::Protocol(ProtocolError {
            code,
            message,
            cause,
        })
    }

    fn new_session(&self) -> Session {
        Session::new(Counter::default())
    }
}

fn open(read_only: bool) -> (tempfile::TempDir, AgentTools) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::builder(dir.path())
        .read_only(read_only)
        .max_output_bytes(1024)
        .build()
        .unwrap();
    let tools = AgentTools::with_surface(config, TestSurface).unwrap();
    (dir, tools)
}

fn protocol(outcome: &CallOutcome) -> &ProtocolError {
    match outcome {
        CallOutcome::Protocol(error) => error,
        CallOutcome::Result(result) => panic!("expected a protocol error, got {result:?}"),
    }
}

#[test]
fn rich_content_comes_through_item_by_item() {
    let (dir, tools) = open(false);
    assert_eq!(tools.surface_name(), "test");
    let outcome = tools.dispatch("pictures", json!({}), &CallContext::default());
    let CallOutcome::Result(result) = &outcome else {
        panic!("{outcome:?}")
    };
    assert!(!result.is_error);
    assert_eq!(result.content.len(), 3);
    assert_eq!(
        result.content[0].as_text(),
        Some(format!("from {}", dir.path().display()).as_str())
    );
    assert!(
        matches!(&result.content[1], Content::Image { mime_type, .. } if mime_type == "image/png")
    );
    // The text view keeps the text items only.
    let text = tools.call("pictures", json!({}));
    assert!(!text.is_error);
    assert_eq!(text.text, format!("from {}", dir.path().display()));
}

#[test]
fn the_surface_maps_errors_to_its_own_codes_at_every_stage() {
    let (_dir, tools) = open(false);
    let call = CallContext::default();

    let outcome = tools.dispatch("fail", json!({"code": "path_escape"}), &call);
    assert_eq!(protocol(&outcome).code, -32001);
    assert_eq!(protocol(&outcome).message, "run: failed with path_escape");
    assert_eq!(outcome.error_code(), Some(ErrorCode::PathEscape));

    let outcome = tools.dispatch("fail", json!({"code": "not_found"}), &call);
    assert_eq!(protocol(&outcome).code, -32002);

    let outcome = tools.dispatch("fail", json!({"code": "other"}), &call);
    assert!(matches!(&outcome, CallOutcome::Result(r) if r.is_error));
    assert_eq!(outcome.error_code(), Some(ErrorCode::IoError));

    let outcome = tools.dispatch("fail", json!({}), &call);
    assert_eq!(protocol(&outcome).code, -32602);
    assert!(protocol(&outcome).message.starts_with("validation: "));

    let outcome = tools.dispatch("nope", json!({}), &call);
    assert_eq!(protocol(&outcome).code, -32002);
    assert!(protocol(&outcome).message.starts_with("lookup: "));

    // The text view of a protocol error is its message, typed code kept.
    let text = tools.call("nope", json!({}));
    assert!(text.is_error);
    assert_eq!(text.error_code(), Some(ErrorCode::NotFound));
}

#[test]
fn read_only_mode_hides_what_the_hints_say_mutates() {
    let (_dir, tools) = open(true);
    let names: Vec<_> = tools.list_tools().iter().map(|t| t.name()).collect();
    assert!(!names.contains(&"touch"), "{names:?}");
    let outcome = tools.dispatch("touch", json!({}), &CallContext::default());
    assert!(protocol(&outcome).message.contains("read-only"));
}

#[test]
fn an_unlisted_tool_is_callable_but_never_advertised() {
    for read_only in [false, true] {
        let (_dir, tools) = open(read_only);
        let names: Vec<_> = tools.list_tools().iter().map(|t| t.name()).collect();
        assert!(!names.contains(&"old_count"), "{names:?}");
        let result = tools.call("old_count", json!({}));
        assert!(!result.is_error, "{}", result.text);
    }
    let listed: Vec<_> = agent_tools::offered_specs(&TestSurface, false)
        .iter()
        .map(|t| t.name())
        .collect();
    assert!(!listed.contains(&"old_count"), "{listed:?}");
    assert!(listed.contains(&"count"), "{listed:?}");
}

#[test]
fn sessions_keep_state_per_connection() {
    let (_dir, tools) = open(false);
    // Calls that bring no session share the instance's own.
    assert_eq!(tools.call("count", json!({})).text, "1");
    assert_eq!(tools.call("count", json!({})).text, "2");
    // A connection's session is its own.
    let connection = CallContext::in_session(tools.new_session());
    assert_eq!(tools.dispatch("count", json!({}), &connection).text(), "1");
    assert_eq!(tools.dispatch("count", json!({}), &connection).text(), "2");
    assert_eq!(tools.call("count", json!({})).text, "3");
}

#[test]
fn a_cancelled_call_is_typed_as_cancelled() {
    let (_dir, tools) = open(false);
    let tools = std::sync::Arc::new(tools);
    let call = CallContext::default();
    let cancel = call.cancel.clone();
    let worker = {
        let tools = tools.clone();
        std::thread::spawn(move || tools.dispatch("wait", json!({}), &call))
    };
    cancel.cancel();
    let outcome = worker.join().unwrap();
    assert!(outcome.is_cancelled(), "{outcome:?}");
    assert_eq!(outcome.cause(), Some(Cause::Cancelled));
    assert_eq!(outcome.error_code(), None);
}

#[test]
fn the_output_budget_spans_every_text_item_and_null_means_absent() {
    let (_dir, tools) = open(false);
    let small = tools.dispatch(
        "texts",
        json!({"size": 100, "note": null}),
        &CallContext::default(),
    );
    assert!(!small.is_error(), "{small:?}");
    assert_eq!(small.text().len(), 201);
    let big = tools.dispatch("texts", json!({"size": 1000}), &CallContext::default());
    let CallOutcome::Result(result) = &big else {
        panic!("{big:?}")
    };
    let total: usize = result
        .content
        .iter()
        .filter_map(Content::as_text)
        .map(str::len)
        .sum();
    // The first item fits whole; the second gets what is left of the
    // budget (here nothing but the note saying what was cut).
    assert!(total <= 1024 + 96, "{total}");
    assert_eq!(result.content[0].as_text().unwrap().len(), 1000);
    let second = result.content[1].as_text().unwrap();
    assert!(second.contains("[output truncated"), "{second}");
}

#[test]
fn structured_copies_follow_each_tools_declaration_and_only_when_on() {
    let dir = tempfile::tempdir().unwrap();
    let open = |on| {
        let config = Config::builder(dir.path())
            .structured_output(on)
            .build()
            .unwrap();
        AgentTools::with_surface(config, TestSurface).unwrap()
    };
    let copy = |tools: &AgentTools, name: &str, args| match tools.dispatch(
        name,
        args,
        &CallContext::default(),
    ) {
        CallOutcome::Result(result) => result.structured,
        other => panic!("{other:?}"),
    };
    let off = open(false);
    assert_eq!(copy(&off, "texts", json!({"size": 2})), None);
    let on = open(true);
    assert_eq!(
        copy(&on, "texts", json!({"size": 2})),
        Some(json!({"content": "xx\nxx"}))
    );
    assert_eq!(
        copy(&on, "pictures", json!({})),
        Some(
            json!({"content": format!("from {}", dir.path().display()), "media": [
                {"type": "image", "mimeType": "image/png", "bytes": 4},
                {"type": "resource", "mimeType": "application/octet-stream",
                 "uri": "file:///x.bin", "bytes": 3},
            ]})
        )
    );
    assert_eq!(copy(&on, "claims_json", json!({})), None);
    assert_eq!(on.call("claims_json", json!({})).text, "plain");
    // An error result: no copy.
    assert_eq!(copy(&on, "fail", json!({"code": "io"})), None);
    assert!(on.call("fail", json!({"code": "io"})).is_error);
}

#[test]
fn advertised_schemas_are_portable_and_validation_unchanged() {
    for tool in TestSurface.tools() {
        let problems = agent_tools::schema::portability_problems(tool.spec().input_schema());
        assert!(problems.is_empty(), "{}: {problems:?}", tool.name());
        let problems = agent_tools::schema::portability_problems(tool.spec().output_schema());
        assert!(problems.is_empty(), "{} output: {problems:?}", tool.name());
    }
    let texts = TestSurface
        .tools()
        .into_iter()
        .find(|t| t.name() == "texts")
        .unwrap();
    // Advertised: a plain optional string; validated: null still taken.
    assert_eq!(
        texts.spec().input_schema()["properties"]["note"]["type"],
        json!("string")
    );
    assert_eq!(
        texts.validation_schema()["properties"]["note"]["type"],
        json!(["string", "null"])
    );
}
