//! Serves agent-tools over MCP stdio.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
