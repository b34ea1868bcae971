//! Running a call that could block or take quadratic time under a deadline,
//! so a regression fails the test instead of hanging CI.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

/// How long a call may take before the test calls it stuck.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Runs `call` on its own thread and returns its result, or fails the test
/// when it has not returned within [`DEADLINE`] (the stuck thread is left
/// behind; the test process ends anyway).
pub fn within_deadline<T: Send + 'static>(
    what: &str,
    call: impl FnOnce() -> T + Send + 'static,
) -> T {
    let worker = std::thread::spawn(call);
    let start = Instant::now();
    while !worker.is_finished() {
        assert!(
            start.elapsed() < DEADLINE,
            "{what} did not return within {DEADLINE:?}: it blocks or is far too slow"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    worker.join().unwrap()
}
