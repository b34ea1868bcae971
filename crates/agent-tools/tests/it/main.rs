//! The facade's integration tests, one binary: each module was once a test
//! binary of its own; `facade` drives `AgentTools::call` for them.

mod facade;
mod facade_bash;
mod facade_codex_patch;
mod facade_patch;
mod facade_surface;
mod facade_writers;
mod patch_corpus_tool;
