//! Runs shell commands for agents: timeouts, process groups, bounded output.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
