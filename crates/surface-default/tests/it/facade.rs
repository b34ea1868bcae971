//! Helpers for driving `AgentTools::call` in tests.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on purpose

use std::path::{Path, PathBuf};

use agent_tools::{AgentTools, Config, ConfigBuilder, DispatchResult};
use serde_json::Value;

/// An outer temporary folder holding the workspace (`ws/`), so that tests
/// can check that nothing lands next to the workspace.
pub struct Sandbox {
    /// Held so the folder lives as long as the sandbox.
    #[allow(dead_code)]
    pub outer: tempfile::TempDir,
    pub root: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let outer = tempfile::tempdir().unwrap();
        // Canonical, so absolute paths given to the tools match the root.
        let base = std::fs::canonicalize(outer.path()).unwrap();
        let root = base.join("ws");
        std::fs::create_dir(&root).unwrap();
        Sandbox { outer, root }
    }

    /// The canonical outer folder (the workspace's parent).
    pub fn outside(&self) -> PathBuf {
        self.root.parent().unwrap().to_path_buf()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, bytes).unwrap();
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    pub fn read_string(&self, rel: &str) -> String {
        String::from_utf8(self.read(rel)).unwrap()
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).symlink_metadata().is_ok()
    }

    pub fn tools(&self) -> AgentTools {
        self.tools_with(|b| b)
    }

    pub fn tools_with(&self, configure: impl FnOnce(ConfigBuilder) -> ConfigBuilder) -> AgentTools {
        agent_tools_surface_default::open(configure(Config::builder(&self.root)).build().unwrap())
            .unwrap()
    }
}

/// Calls a tool that must succeed; returns its text.
pub fn ok(tools: &AgentTools, name: &str, args: Value) -> String {
    let result = tools.call(name, args.clone());
    assert!(!result.is_error, "{name}({args}) failed: {}", result.text);
    result.text
}

/// Calls a tool that must fail; returns (code, message, whole envelope).
pub fn fail(tools: &AgentTools, name: &str, args: Value) -> (String, String, Value) {
    let result = tools.call(name, args.clone());
    envelope(name, &args, &result)
}

pub fn envelope(name: &str, args: &Value, result: &DispatchResult) -> (String, String, Value) {
    assert!(
        result.is_error,
        "{name}({args}) succeeded but should fail: {}",
        result.text
    );
    let value: Value = serde_json::from_str(&result.text)
        .unwrap_or_else(|e| panic!("not a JSON envelope ({e}): {}", result.text));
    let code = value["error"].as_str().unwrap().to_string();
    let message = value["message"].as_str().unwrap().to_string();
    (code, message, value)
}

/// Asserts the call fails with `code`; returns the message.
pub fn fail_with(tools: &AgentTools, name: &str, args: Value, code: &str) -> String {
    let (got, message, _) = fail(tools, name, args.clone());
    assert_eq!(got, code, "{name}({args}): {message}");
    message
}

pub fn is_pid_alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid)
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.rsplit_once(')')?.1.trim_start().to_string();
            after.chars().next()
        })
        .is_some_and(|state| state == 'Z')
}
