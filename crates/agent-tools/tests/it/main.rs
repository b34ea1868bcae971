//! The host's integration tests, one binary: a surface of the tests' own
//! bound to the pipeline, with no surface crate involved.

mod facade_surface;
