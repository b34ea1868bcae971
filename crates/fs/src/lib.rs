//! The file tools of agent-tools.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
