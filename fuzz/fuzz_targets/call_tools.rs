//! Sends arbitrary JSON arguments through the facade's whole pipeline (look
//! up, validate, run, bound, serialize) for every tool but `bash`, in a
//! scratch workspace. The pipeline promises an answer for any input: a result
//! or a typed error, never a panic (which it would report as `internal`).
//! Run with `cargo +nightly fuzz run call_tools`.
//!
//! Input: the first byte picks the tool, the rest is the arguments' JSON.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_tools::{AgentTools, Config, ErrorCode};
use libfuzzer_sys::fuzz_target;

/// `bash` is left out: a fuzzer must not run the commands it invents.
const TOOLS: [&str; 8] = [
    "read_file",
    "list_dir",
    "glob",
    "grep",
    "write_file",
    "edit_file",
    "multi_edit",
    "apply_patch",
];

/// Every this many calls the scratch workspace is laid out afresh, so the
/// files the writers create cannot pile up.
const RESET_EVERY: usize = 2000;

struct Scratch {
    root: PathBuf,
    tools: AgentTools,
    calls: AtomicUsize,
}

fn lay_out(root: &PathBuf) {
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            let path = entry.path();
            let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
        }
    }
    let _ = std::fs::create_dir_all(root.join("src/nested"));
    let _ = std::fs::write(root.join("a.txt"), "alpha\nbeta\n    gamma\n");
    let _ = std::fs::write(root.join("crlf.txt"), "one\r\ntwo\r\n");
    let _ = std::fs::write(
        root.join("src/lib.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    );
    let _ = std::fs::write(root.join("src/nested/bin.dat"), b"\x00\x01\x02");
    let _ = std::fs::write(root.join(".gitignore"), "*.log\n");
}

fn scratch() -> &'static Scratch {
    static SCRATCH: OnceLock<Scratch> = OnceLock::new();
    SCRATCH.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("agent-tools-fuzz-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&root);
        lay_out(&root);
        let config = Config::builder(&root)
            .max_file_bytes(1 << 20)
            .build()
            .expect("scratch config");
        let tools = agent_tools_surface_default::open(config).expect("scratch tools");
        Scratch {
            root,
            tools,
            calls: AtomicUsize::new(0),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, json)) = data.split_first() else {
        return;
    };
    let Ok(args) = serde_json::from_slice::<serde_json::Value>(json) else {
        return;
    };
    let scratch = scratch();
    if scratch.calls.fetch_add(1, Ordering::Relaxed) % RESET_EVERY == RESET_EVERY - 1 {
        lay_out(&scratch.root);
    }
    let name = TOOLS[usize::from(pick) % TOOLS.len()];
    let result = scratch.tools.call(name, args);
    assert_ne!(
        result.error_code(),
        Some(ErrorCode::Internal),
        "{name} answered internal: {}",
        result.text
    );
});
