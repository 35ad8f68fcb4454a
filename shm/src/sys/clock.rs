//! The system's monotonic clock as a number: `Instant` cannot be compared across processes, and
//! the directory's "found empty at" stamps are (see `directory`).

/// Returns the time of `CLOCK_MONOTONIC_COARSE`, in nanoseconds.
///
/// Every process of the host reads the same clock, and reading it needs no system call. The clock
/// is a few milliseconds coarse, far below the time spans that its callers compare.
pub(crate) fn coarse_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `clock_gettime` writes one `timespec`, here `ts`, and reads no other memory.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    debug_assert_eq!(rc, 0, "CLOCK_MONOTONIC_COARSE exists on every Linux since 2.6.32");
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}
