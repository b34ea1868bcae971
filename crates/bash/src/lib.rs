//! Runs shell commands for agents: timeouts, process groups, bounded output.
//!
//! [`run`] executes `/bin/sh -c COMMAND` in a working directory with stdin
//! closed, in a process group of its own, and returns a [`RunOutcome`]:
//! exit code or signal, and stdout and stderr captured separately.
//!
//! * **Output.** stdout and stderr share one inline budget
//!   ([`OutputLimits::max_output_bytes`]). A stream that overflows it is
//!   streamed, complete, to a spill file (`<id>.stdout` / `<id>.stderr` under
//!   the request's spill directory) and the outcome names that file. A
//!   stream passing [`OutputLimits::hard_ceiling_per_stream`] gets the group
//!   killed and the call fails with [`RunError::OverCeiling`] (`output_limit`).
//! * **Timeout.** The whole group gets `SIGTERM`, then `SIGKILL` after
//!   [`KILL_GRACE`]; the call fails with [`RunError::TimedOut`] (`timeout`),
//!   which carries the partial output.
//! * **Exit.** Once the shell exits, output is drained for at most
//!   [`DRAIN_GRACE`], so a background job holding the pipes cannot stall the
//!   call. The group is not killed: background jobs keep running.
//! * **Cancellation.** The `cancel` flag is checked at least every
//!   [`CANCEL_POLL`]; a cancelled call fails with [`RunError::Cancelled`].
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use agent_tools_bash::{RunRequest, run};
//!
//! let dir = std::env::temp_dir();
//! let req = RunRequest::new("echo hi", &dir, dir.join("spill")).unwrap();
//! let outcome = run(&req, &AtomicBool::new(false)).unwrap();
//! assert_eq!(outcome.exit_code, Some(0));
//! assert_eq!(outcome.stdout, "hi\n");
//! assert_eq!(
//!     outcome.to_json(),
//!     serde_json::json!({
//!         "exit_code": 0, "stdout": "hi\n", "stderr": "", "signal": null, "timed_out": false
//!     })
//! );
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod capture;
pub mod jobs;
pub mod launcher;
mod outcome;
mod procs;
mod request;
mod runner;

pub use agent_tools_sandbox as sandbox;
pub use capture::json_escaped_len;
pub use outcome::{RunError, RunOutcome, SIGNAL_EXIT_BASE, StreamName, signal_exit_code};
pub use request::{
    DEFAULT_HARD_CEILING_PER_STREAM, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_TIMEOUT_MS,
    DEFAULT_TIMEOUT_MS, Launcher, OutputLimits, RunRequest, SpillOpener, clamp_timeout,
};
pub use runner::{CANCEL_GRACE, CANCEL_POLL, DRAIN_GRACE, KILL_GRACE, SHELL, run};
