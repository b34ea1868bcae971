//! How the process's memory allocator gives memory back.
//!
//! glibc's malloc, left to itself, raises two thresholds each time a large
//! block it mapped on its own is freed: the size from which a block gets a
//! mapping of its own (up to 32 MiB), and the free room at the top of a
//! heap it keeps rather than gives back (up to twice that). Building the
//! index of a large tree frees many such blocks, so the heaps then kept
//! what the build had freed: on a million-file tree the server held
//! 450–555 MB once ready, of which about 100 MB was free memory, the
//! amount changing from run to run with how the build's threads met.
//! Fixed at 1 MiB and 128 KiB while an index builds, the same build
//! leaves 435 MB, and smaller trees less than with glibc's own sliding
//! (10,000 files: 16 MB against 19; 100,000: 55 MB against 65); at 4 MiB
//! each, 443–503 MB, but 37 and 86 MB for the smaller trees, whose
//! 2 MiB blocks then stayed in the heaps. Once no index builds, both are
//! fixed at what glibc's
//! sliding ones reach at most, so the blocks of a large file's read or
//! edit are reused from the heaps rather than mapped and faulted in
//! afresh on every call. (Setting either threshold stops both sliding.)

use std::sync::{Mutex, PoisonError};

/// What [`tune`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tuning {
    /// The thresholds are fixed: at [`BUILD_MMAP_THRESHOLD`] and
    /// [`BUILD_TRIM_THRESHOLD`] while an index builds, at
    /// [`STEADY_MMAP_THRESHOLD`] and [`STEADY_TRIM_THRESHOLD`] otherwise.
    Fixed,
    /// `GLIBC_TUNABLES` sets malloc's own settings: they are kept.
    LeftToTheEnvironment,
    /// The allocator is not glibc's, or it refused the setting.
    Unavailable,
}

/// The mapping threshold, in bytes, while an index builds.
pub const BUILD_MMAP_THRESHOLD: i32 = 1 << 20;

/// The trimming threshold, in bytes, while an index builds: glibc's
/// starting value.
pub const BUILD_TRIM_THRESHOLD: i32 = 128 << 10;

/// The mapping threshold otherwise: the most glibc's sliding one reaches
/// (32 MiB on 64-bit systems), which a server reaches anyway after its
/// first edit of a large file. A block under it is reused from the heaps:
/// fixed at 4 MiB, every edit of a 10 MB file mapped and faulted in its
/// buffers afresh and took twice as long (33 ms against 16–24 ms).
pub const STEADY_MMAP_THRESHOLD: i32 = 32 << 20;

/// The trimming threshold otherwise: twice the mapping threshold, as
/// glibc's sliding one is.
pub const STEADY_TRIM_THRESHOLD: i32 = 64 << 20;

/// Indexes building now.
static BUILDING: Mutex<usize> = Mutex::new(0);

/// Fixes glibc malloc's mapping and trimming thresholds, and has the
/// index lower them while it builds (through
/// [`agent_tools_index::set_build_hooks`]), unless `GLIBC_TUNABLES`
/// already says how malloc should behave. Called once, first thing, by
/// the server (and by the benchmarks, so that what they measure is what
/// the server does); a program embedding the index in a long-lived
/// process may call it too.
pub fn tune() -> Tuning {
    if tunables_set_malloc(std::env::var_os("GLIBC_TUNABLES").as_deref()) {
        return Tuning::LeftToTheEnvironment;
    }
    let tuning = {
        let building = BUILDING.lock().unwrap_or_else(PoisonError::into_inner);
        fix_thresholds(thresholds(*building))
    };
    if tuning == Tuning::Fixed {
        agent_tools_index::set_build_hooks(agent_tools_index::BuildHooks {
            started: build_started,
            finished: build_finished,
        });
    }
    tuning
}

/// The mapping and trimming thresholds while `building` indexes build.
fn thresholds(building: usize) -> (i32, i32) {
    if building > 0 {
        (BUILD_MMAP_THRESHOLD, BUILD_TRIM_THRESHOLD)
    } else {
        (STEADY_MMAP_THRESHOLD, STEADY_TRIM_THRESHOLD)
    }
}

fn build_started() {
    let mut building = BUILDING.lock().unwrap_or_else(PoisonError::into_inner);
    *building += 1;
    if *building == 1 {
        fix_thresholds(thresholds(*building));
    }
}

fn build_finished() {
    let mut building = BUILDING.lock().unwrap_or_else(PoisonError::into_inner);
    *building = building.saturating_sub(1);
    if *building == 0 {
        fix_thresholds(thresholds(*building));
    }
}

/// Whether a `GLIBC_TUNABLES` value names any of malloc's tunables.
fn tunables_set_malloc(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|value| {
        value
            .to_string_lossy()
            .split(':')
            .any(|tunable| tunable.trim_start().starts_with("glibc.malloc."))
    })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
// The one unsafe call of the workspace: `mallopt` is a plain C function
// with integer arguments, and no crate wraps it. It is safe to call at any
// time from any thread (it takes malloc's own lock).
#[allow(unsafe_code)]
fn fix_thresholds((mmap, trim): (i32, i32)) -> Tuning {
    // SAFETY: `mallopt` reads its two integers and updates malloc's
    // parameters under malloc's lock; it touches no memory of ours.
    let mapped = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, mmap) };
    // SAFETY: as above.
    let trimmed = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, trim) };
    // `mallopt` returns 1 on success, 0 on error.
    if mapped == 1 && trimmed == 1 {
        Tuning::Fixed
    } else {
        Tuning::Unavailable
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn fix_thresholds(_: (i32, i32)) -> Tuning {
    Tuning::Unavailable
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn builds_lower_the_thresholds_until_the_last_ends() {
        assert_eq!(
            thresholds(0),
            (STEADY_MMAP_THRESHOLD, STEADY_TRIM_THRESHOLD)
        );
        assert_eq!(thresholds(1), (BUILD_MMAP_THRESHOLD, BUILD_TRIM_THRESHOLD));
        assert_eq!(thresholds(2), (BUILD_MMAP_THRESHOLD, BUILD_TRIM_THRESHOLD));
        build_started();
        build_started();
        build_finished();
        assert_eq!(*BUILDING.lock().unwrap_or_else(PoisonError::into_inner), 1);
        build_finished();
        assert_eq!(*BUILDING.lock().unwrap_or_else(PoisonError::into_inner), 0);
        // An unmatched end never goes below none.
        build_finished();
        assert_eq!(*BUILDING.lock().unwrap_or_else(PoisonError::into_inner), 0);
    }

    #[test]
    fn malloc_tunables_in_the_environment_are_kept() {
        assert!(tunables_set_malloc(Some(OsStr::new(
            "glibc.malloc.arena_max=1"
        ))));
        assert!(tunables_set_malloc(Some(OsStr::new(
            "glibc.rtld.nns=2:glibc.malloc.trim_threshold=0"
        ))));
        assert!(!tunables_set_malloc(Some(OsStr::new("glibc.rtld.nns=2"))));
        assert!(!tunables_set_malloc(Some(OsStr::new(""))));
        assert!(!tunables_set_malloc(None));
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn glibc_takes_the_thresholds() {
        assert_eq!(fix_thresholds(thresholds(1)), Tuning::Fixed);
        assert_eq!(fix_thresholds(thresholds(0)), Tuning::Fixed);
    }
}
