//! End-to-end: apply_patch with the `*** Begin Patch` format and the
//! `input` argument name, through `AgentTools::call`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use crate::facade;
use agent_tools_test_support::tree;

use facade::{Sandbox, fail, fail_with, ok};
use serde_json::json;

const CODEX: &str = "*** Begin Patch
*** Update File: src/a.rs
@@ pub fn a() -> u32 {
-    1
+    10
*** Add File: src/c.rs
+pub fn c() {}
*** Delete File: gone.txt
*** Update File: old.txt
*** Move to: moved/new.txt
*** End Patch
";

fn project() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("src/a.rs", "pub fn a() -> u32 {\r\n    1\r\n}\r\n");
    sb.write("gone.txt", "bye\n");
    sb.write("old.txt", "kept\n");
    sb
}

#[test]
fn codex_patch_applies_under_either_argument_name() {
    for name in ["patch", "input"] {
        let sb = project();
        let tools = sb.tools();
        let text = ok(&tools, "apply_patch", json!({ name: CODEX }));
        assert!(text.starts_with("applied patch to 4 files:"), "{text}");
        assert_eq!(
            std::fs::read_to_string(sb.path("src/a.rs")).unwrap(),
            "pub fn a() -> u32 {\r\n    10\r\n}\r\n"
        );
        assert_eq!(
            std::fs::read_to_string(sb.path("src/c.rs")).unwrap(),
            "pub fn c() {}\n"
        );
        assert!(!sb.path("gone.txt").exists());
        assert_eq!(
            std::fs::read_to_string(sb.path("moved/new.txt")).unwrap(),
            "kept\n"
        );
    }
}

#[test]
fn exactly_one_of_patch_and_input_is_required() {
    let sb = project();
    let before = tree::snapshot(&sb.root);
    let tools = sb.tools();
    fail_with(&tools, "apply_patch", json!({}), "invalid_input");
    fail_with(
        &tools,
        "apply_patch",
        json!({"patch": CODEX, "input": CODEX}),
        "invalid_input",
    );
    fail_with(&tools, "apply_patch", json!({"input": 3}), "invalid_input");
    tree::assert_same_tree(&before, &tree::snapshot(&sb.root), "workspace");
}

#[test]
fn failing_codex_chunk_changes_nothing() {
    let sb = project();
    let before = tree::snapshot(&sb.root);
    let tools = sb.tools();
    let patch = "*** Begin Patch\n*** Delete File: gone.txt\n*** Update File: src/a.rs\n-    2\n+    3\n*** End Patch\n";
    let (code, message, _) = fail(&tools, "apply_patch", json!({ "input": patch }));
    assert_eq!(code, "patch_failed");
    assert!(
        message.contains("Failed to find expected lines in src/a.rs:"),
        "{message}"
    );
    tree::assert_same_tree(&before, &tree::snapshot(&sb.root), "workspace");
}

#[test]
fn truncated_codex_patch_is_refused() {
    let sb = project();
    let before = tree::snapshot(&sb.root);
    let tools = sb.tools();
    let cut = &CODEX[..CODEX.find("*** End Patch").unwrap()];
    let (code, message, _) = fail(&tools, "apply_patch", json!({ "patch": cut }));
    assert_eq!(code, "invalid_input");
    assert!(message.contains("*** End Patch"), "{message}");
    tree::assert_same_tree(&before, &tree::snapshot(&sb.root), "workspace");
}
