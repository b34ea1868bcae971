//! Workspace root and race-free path confinement for agent-tools.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
