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
    let surfaces = agent_tools_mcp::surfaces();
    assert_eq!(surfaces[0].name(), agent_tools::DEFAULT_SURFACE);
    for choice in &surfaces {
        insta::assert_json_snapshot!(choice.name(), advertised(choice, false));
    }
}

#[test]
fn read_only_mode_offers_exactly_the_read_only_tools() {
    for choice in agent_tools_mcp::surfaces() {
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
    for choice in agent_tools_mcp::surfaces() {
        for tool in choice.tools(false) {
            let problems = agent_tools::schema::portability_problems(tool.input_schema());
            assert!(
                problems.is_empty(),
                "{}/{}: {problems:#?}",
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
    let surfaces = agent_tools_mcp::surfaces();
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
