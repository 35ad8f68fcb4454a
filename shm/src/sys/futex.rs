//! Futex wait and wake on a word in shared memory (cross-process: not the PRIVATE variants).
//!
//! The word is the low half of a 64-bit atomic (little-endian: the low 32 bits come first).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Sleeps while the low 32 bits of `word` equal `expected`. The sleep lasts at most `timeout`,
/// and ends earlier if another thread or process wakes `word`.
pub(crate) fn wait(word: &AtomicU64, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: `word` is a live, 8-aligned `AtomicU64`, so its first 4 bytes are a valid futex
    // word. The kernel only reads that word and the `timespec`, which lives across the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr().cast::<u32>(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Increments `word` and wakes every waiter on it.
pub(crate) fn bump_and_wake_all(word: &AtomicU64) {
    word.fetch_add(1, Ordering::Release);
    wake_all(word);
}

/// Wakes every waiter on `word` without changing the word. Each waiter looks again, and sleeps
/// again if nothing changed.
pub(crate) fn wake_all(word: &AtomicU64) {
    // SAFETY: `word` is a valid futex word, as in `wait`. `FUTEX_WAKE` only uses its address as a
    // key.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr().cast::<u32>(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// Returns the low 32 bits of `word`: the value that a waiter passes to `wait` as `expected`.
pub(crate) fn low32(word: &AtomicU64) -> u32 {
    word.load(Ordering::Acquire) as u32
}
