//! The file tools' integration tests, one binary: each module was once a
//! test binary of its own; `common` and `bounded` are the helpers they share.

mod bounded;
mod common;
mod concurrency;
mod crash_write;
mod ecma_prefilter;
mod edit_corpus;
mod edit_roundtrip;
mod glob;
mod grep;
mod indexed;
mod list_dir;
mod read_file;
mod results_as_data;
mod writers;
