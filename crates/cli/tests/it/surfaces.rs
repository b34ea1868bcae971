//! What models see, for every surface: the advertised tools pinned by a
//! snapshot (a change must be deliberate), and every schema in the portable
//! subset every client and model API takes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use serde_json::{Value, json};

/// A surface's tools as clients see them: name, title, description, hints,
/// argument schema.
fn advertised(choice: &agent_tools::SurfaceChoice, read_only: bool) -> Value {
    Value::Array(
        choice
            .tools(read_only)
            .iter()
            .map(|tool| {
                let hints = tool.hints();
                json!({
                    "name": tool.name(),
                    "title": tool.title(),
                    "description": tool.description(),
                    "annotations": {
                        "readOnlyHint": hints.read_only,
                        "destructiveHint": hints.destructive,
                        "idempotentHint": hints.idempotent,
                        "openWorldHint": hints.open_world,
                    },
                    "inputSchema": &**tool.input_schema(),
                })
            })
            .collect(),
    )
}

#[test]
fn every_surface_advertises_what_its_snapshot_pins() {
    let surfaces = agent_tools_cli::surfaces();
    assert_eq!(
        surfaces[0].name(),
        agent_tools_surface_default::DEFAULT_SURFACE
    );
    for choice in &surfaces {
        insta::assert_json_snapshot!(choice.name(), advertised(choice, false));
    }
}

#[test]
fn read_only_mode_offers_exactly_the_read_only_tools() {
    for choice in agent_tools_cli::surfaces() {
        let all = choice.tools(false);
        let read_only: Vec<_> = choice.tools(true).iter().map(|t| t.name()).collect();
        let expected: Vec<_> = all
            .iter()
            .filter(|t| t.hints().read_only)
            .map(|t| t.name())
            .collect();
        assert_eq!(read_only, expected, "{}", choice.name());
    }
}

#[test]
fn every_schema_of_every_surface_is_portable() {
    for choice in agent_tools_cli::surfaces() {
        for tool in choice.tools(false) {
            let problems = agent_tools::schema::portability_problems(tool.input_schema());
            assert!(
                problems.is_empty(),
                "{}/{}: {problems:#?}",
                choice.name(),
                tool.name()
            );
            // The schema of the structured copy, listed when it is on.
            let problems = agent_tools::schema::portability_problems(tool.output_schema());
            assert!(
                problems.is_empty(),
                "{}/{} output: {problems:#?}",
                choice.name(),
                tool.name()
            );
            assert!(!tool.title().is_empty() && tool.title() != tool.name());
            assert!(!tool.description().is_empty());
        }
    }
}

#[test]
fn names_are_unique_within_a_surface_and_surfaces_are_unique() {
    let surfaces = agent_tools_cli::surfaces();
    let mut names: Vec<_> = surfaces.iter().map(|s| s.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), surfaces.len());
    for choice in &surfaces {
        let mut tools: Vec<_> = choice.tools(false).iter().map(|t| t.name()).collect();
        let count = tools.len();
        tools.sort_unstable();
        tools.dedup();
        assert_eq!(tools.len(), count, "{}", choice.name());
    }
}

/// One line per rendering: what kind of answer, its cause, its text.
fn rendered(outcome: &agent_tools::CallOutcome) -> String {
    match outcome {
        agent_tools::CallOutcome::Result(result) => format!(
            "result is_error={} cause={:?} {:?}",
            result.is_error,
            result.cause,
            outcome.text()
        ),
        agent_tools::CallOutcome::Protocol(error) => format!(
            "protocol {} cause={:?} {:?}",
            error.code, error.cause, error.message
        ),
    }
}

/// How every surface renders every error code at every stage, plus a
/// schema issue and a cancelled call: one table, so that a change to any
/// rendering, or a new code, shows here as a deliberate snapshot change.
#[test]
fn every_surface_renders_every_code_at_every_stage() {
    use agent_tools::{ErrorCode, Failure, Issue, Stage, ToolError};
    use std::fmt::Write as _;

    let mut table = String::new();
    for choice in agent_tools_cli::surfaces() {
        let mut row = |label: String, failure: Failure<'_>| {
            let shown = rendered(&choice.render_error(failure));
            writeln!(table, "{} | {label} | {shown}", choice.name()).unwrap();
        };
        for stage in [Stage::Lookup, Stage::Validation, Stage::Run] {
            for code in ErrorCode::ALL {
                let error =
                    ToolError::new(code, format!("the {code} message")).with_field("extra", 1);
                let failure = Failure {
                    tool: "some_tool",
                    stage,
                    error,
                    cancelled: false,
                    issues: Vec::new(),
                };
                row(format!("{stage:?} {code}"), failure);
            }
        }
        row(
            "Validation invalid_input with an issue".to_owned(),
            Failure {
                tool: "some_tool",
                stage: Stage::Validation,
                error: ToolError::invalid_input("path: missing"),
                cancelled: false,
                issues: vec![Issue::Missing {
                    param: "path".to_owned(),
                }],
            },
        );
        row(
            "Run cancelled".to_owned(),
            Failure {
                tool: "some_tool",
                stage: Stage::Run,
                error: ToolError::cancelled("call cancelled"),
                cancelled: true,
                issues: Vec::new(),
            },
        );
    }
    insta::assert_snapshot!(table);
}

/// Codex strips `default`, `minimum` and `maximum` from a schema before its
/// model sees it, so each default and each bound we chose is also written in
/// the parameter's description (the schema's numbers come from the
/// constants, so this keeps the words and the constants in step). Bounds
/// that only restate the JSON type (0 for a count, 2^32 - 1, ±(2^53 - 1))
/// are no choice of ours and need no words.
#[test]
fn every_default_and_bound_is_stated_in_its_description() {
    const ONLY_THE_TYPE: [i64; 4] = [
        0,
        4_294_967_295,
        9_007_199_254_740_991,
        -9_007_199_254_740_991,
    ];
    let mut missing = Vec::new();
    for choice in agent_tools_cli::surfaces() {
        for tool in choice.every_tool() {
            let schema = tool.input_schema();
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                continue;
            };
            for (name, property) in properties {
                let description = property
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                // The numbers written in the description, digits only
                // (`120000` and `120,000` alike).
                let written: Vec<String> = description
                    .replace([',', '_'], "")
                    .split(|c: char| !c.is_ascii_digit())
                    .filter(|digits| !digits.is_empty())
                    .map(str::to_owned)
                    .collect();
                for key in ["default", "minimum", "maximum"] {
                    let Some(number) = property.get(key).and_then(Value::as_i64) else {
                        continue;
                    };
                    if key != "default" && ONLY_THE_TYPE.contains(&number) {
                        continue;
                    }
                    if !written.contains(&number.unsigned_abs().to_string()) {
                        missing.push(format!(
                            "{} {}.{name}: {key} {number} is not in {description:?}",
                            choice.name(),
                            tool.name()
                        ));
                    }
                }
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
