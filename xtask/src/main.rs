//! Project chores, run as `cargo xtask ...`.
fn main() {}
