//! The patch engine's integration tests, one binary: each module was once a
//! test binary of its own; `common` holds the helpers they share.

mod apply;
mod codex;
mod common;
mod corpus;
mod fixtures;
mod no_panic;
mod parse;
mod rollback;
mod roundtrip;
mod search;
