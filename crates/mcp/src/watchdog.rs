//! Keeps the protocol served while a brief call runs long.
//!
//! A brief call runs on a runtime thread without waking another one: that
//! is what makes a small call fast on an idle machine. But the thread that
//! ran it was the one watching stdin, and the runtime's idle threads sleep
//! without watching it, so a brief call that turns out long (the first
//! count of a large file's lines) would hold back every message behind it,
//! a `ping` or a cancellation included. Waking an idle thread at the start
//! of every brief call costs more than the call itself (about 60 µs on an
//! idle two-core machine), so the wake is put off: each brief call arms a
//! one-shot timer, and only when it fires, the call still running, does a
//! thread of ours ask the runtime to wake an idle thread, which then
//! watches stdin. Arming and disarming the timer are one system call each
//! and wake nobody.
//!
//! Why a timer file descriptor by hand: the runtime's own timers are kept
//! by the very threads that are busy or asleep here.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

/// How long a brief call may hold its thread before an idle one is woken
/// to watch stdin: the most a message can wait behind a brief call, plus a
/// thread's wake-up. Longer than the scheduler's tick (4 ms at 250 Hz) on
/// purpose: a timer due before the next tick makes arming reprogram the
/// timer hardware, which on a virtual machine took about 17 µs per call,
/// half of a small call's round trip; one due after it is only queued.
pub(crate) const SLOW_BRIEF_CALL: Duration = Duration::from_millis(10);

/// The timer and the thread that waits on it.
#[derive(Debug)]
pub(crate) struct Watchdog {
    timer: Arc<TimerFd>,
    stopped: Arc<AtomicBool>,
}

impl Watchdog {
    /// Starts the waiting thread for `runtime`; None when the system has
    /// no timer descriptors (brief calls then run unwatched, as before).
    pub(crate) fn start(runtime: tokio::runtime::Handle) -> Option<Watchdog> {
        let timer = TimerFd::new(ClockId::CLOCK_MONOTONIC, TimerFlags::TFD_CLOEXEC)
            .map_err(|err| tracing::warn!(error = %err, "no timer for long brief calls"))
            .ok()?;
        let timer = Arc::new(timer);
        let stopped = Arc::new(AtomicBool::new(false));
        let (waiting, stop) = (timer.clone(), stopped.clone());
        std::thread::Builder::new()
            .name("brief-call-watch".into())
            .spawn(move || {
                while waiting.wait().is_ok() && !stop.load(Ordering::Acquire) {
                    // Scheduled from outside the runtime, a task wakes an
                    // idle runtime thread, which runs it and then waits on
                    // stdin (and every other event) while the busy one
                    // finishes its call.
                    runtime.spawn(async {});
                }
            })
            .map_err(|err| tracing::warn!(error = %err, "no thread to watch long brief calls"))
            .ok()?;
        Some(Watchdog { timer, stopped })
    }

    /// A brief call starts: fire after [`SLOW_BRIEF_CALL`] unless disarmed.
    pub(crate) fn arm(&self) {
        let after = Expiration::OneShot(TimeSpec::from_duration(SLOW_BRIEF_CALL));
        if let Err(err) = self.timer.set(after, TimerSetTimeFlags::empty()) {
            tracing::debug!(error = %err, "arming the brief-call timer failed");
        }
    }

    /// No brief call runs any more.
    pub(crate) fn disarm(&self) {
        if let Err(err) = self.timer.unset() {
            tracing::debug!(error = %err, "disarming the brief-call timer failed");
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Wake the thread at once so that it sees the flag and ends.
        self.stopped.store(true, Ordering::Release);
        let now = Expiration::OneShot(TimeSpec::from_duration(Duration::from_nanos(1)));
        let _ = self.timer.set(now, TimerSetTimeFlags::empty());
    }
}
