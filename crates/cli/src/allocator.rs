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
//! Fixed at 4 MiB, the same build leaves 443–446 MB run after run, and
//! blocks below 4 MiB (a file read or edited, most answers) are still
//! reused from the heaps rather than mapped and faulted in afresh on every
//! call. (A fixed trim threshold alone also fixes the mapping threshold at
//! glibc's 128 KiB default, which would do that for any block over it.)

/// What [`tune`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tuning {
    /// Both thresholds are now fixed at [`THRESHOLD`].
    Fixed,
    /// `GLIBC_TUNABLES` sets malloc's own settings: they are kept.
    LeftToTheEnvironment,
    /// The allocator is not glibc's, or it refused the setting.
    Unavailable,
}

/// The fixed size, in bytes, of both thresholds.
pub const THRESHOLD: i32 = 4 << 20;

/// Fixes glibc malloc's mapping and trimming thresholds at [`THRESHOLD`],
/// unless `GLIBC_TUNABLES` already says how malloc should behave. Called
/// once, first thing, by the server (and by the benchmarks, so that what
/// they measure is what the server does); a library embedding the index
/// in a long-lived process may call it too.
pub fn tune() -> Tuning {
    if tunables_set_malloc(std::env::var_os("GLIBC_TUNABLES").as_deref()) {
        return Tuning::LeftToTheEnvironment;
    }
    fix_thresholds()
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
fn fix_thresholds() -> Tuning {
    // SAFETY: `mallopt` reads its two integers and updates malloc's
    // parameters under malloc's lock; it touches no memory of ours.
    let mapped = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD) };
    // SAFETY: as above.
    let trimmed = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, THRESHOLD) };
    // `mallopt` returns 1 on success, 0 on error.
    if mapped == 1 && trimmed == 1 {
        Tuning::Fixed
    } else {
        Tuning::Unavailable
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn fix_thresholds() -> Tuning {
    Tuning::Unavailable
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

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
        assert_eq!(fix_thresholds(), Tuning::Fixed);
    }
}
