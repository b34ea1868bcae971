//! The agent-tools facade: tool registry and dispatch pipeline.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
