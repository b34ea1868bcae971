//! A unified-diff parser and all-or-nothing patch applier.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
