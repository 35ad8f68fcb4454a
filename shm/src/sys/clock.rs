//! The system's monotonic clock as a number: `Instant` cannot be compared across processes, and
//! the directory's "found empty at" stamps are (see `directory`).

/// Nanoseconds of `CLOCK_MONOTONIC_COARSE` (the same for every process of the host, read without a
/// system call; a few milliseconds coarse, far below what its callers compare).
pub(crate) fn coarse_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which `ts` is, and reads nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    debug_assert_eq!(rc, 0, "CLOCK_MONOTONIC_COARSE exists on every Linux since 2.6.32");
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}
