//! The default surface's integration tests, one binary: each module was
//! once a test binary of its own; `facade` drives the surface's tools
//! through the host's pipeline for them.

mod facade;
mod facade_bash;
mod facade_codex_patch;
mod facade_patch;
mod facade_writers;
mod patch_corpus_tool;
