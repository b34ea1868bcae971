//! What the workspace's tests share, in one place instead of files pulled
//! into each test binary by path: whole trees built, copied and compared
//! ([`tree`]), a seeded generator whose failures name their seed ([`rng`]),
//! a client for a stdio MCP server ([`mcp`]) used by the end-to-end
//! tests and by the round-trip benchmark alike, and what a benchmark reads
//! about its own process ([`measure`]).
//!
//! It is a dev-dependency only; its helpers panic on a broken fixture,
//! except the client's fallible calls, which the benchmark reports.

#![deny(missing_docs)]
// A broken fixture is the test's failure, so helpers panic rather than return.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod mcp;
pub mod measure;
pub mod rng;
pub mod tree;
