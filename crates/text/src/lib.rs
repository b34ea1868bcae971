//! Text handling for agent-tools: decoding, binary detection, line endings, BOM, numbered lines.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
