//! The one allocator setting of the server process.
//!
//! glibc's allocator serves a block of 128 KiB or more by a mapping of its
//! own, given back when freed, but raises that threshold to the size of
//! any such block freed (up to 32 MiB). An index build allocates and frees
//! many blocks of megabytes (its readers' buckets, small segments, the
//! walk's lists), so after the first few the rest came from the heaps, and
//! the heaps kept what the build freed: on the generated million-file tree
//! the server held 440–525 MB once the index was ready, against 416–419 MB
//! with the threshold held where it starts, and the build was no slower
//! (README, "the curve"). Held, large blocks keep their own mappings and
//! are returned when freed.
//!
//! No crate wraps `mallopt`, and `libc` exposes it only as a foreign
//! function: hence this crate's one `unsafe` block.

/// Keeps glibc's allocator serving blocks of 128 KiB and more by mappings
/// of their own, returned to the system when freed, instead of raising that
/// threshold as large blocks are freed. A process-wide setting, for a
/// program's `main` (the server's, or a benchmark that builds an index as
/// the server does), best made before other threads start. Elsewhere than
/// on glibc it does nothing.
#[allow(unsafe_code)]
pub fn keep_large_blocks_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` takes two integers and no pointer; it changes the
    // allocator's parameters under the allocator's own lock, so it may be
    // called at any time from any thread. A refusal (it returns 0) leaves
    // the allocator as it was, which is only less frugal.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
