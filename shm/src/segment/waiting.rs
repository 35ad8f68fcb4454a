//! Processes that wait for memory in a segment, and the frees that wake them.
//!
//! A process that finds no room counts itself in the header's `waiters` word
//! ([`Segment::start_waiting`]) and sleeps on the free epoch, a futex word ([`Waiting::sleep`]).
//! A free that finds waiters bumps the epoch and wakes them ([`Segment::wake_waiters`]), at most
//! once per arming ([`Waiting::arm`]); later frees skip the system call. When all waiters need the
//! same block size, the `want` word holds it, and frees keep magazines of that size in the depot
//! for them. While a process waits, frees of any other size go to the heap, whose merged free
//! space a waiter needs.

use super::{tlsf, Segment};
use crate::sys::futex;
use std::sync::atomic::Ordering;
use std::time::Duration;

impl Segment {
    /// Counts the caller as waiting for `need`-byte blocks until the returned guard drops. From now
    /// on frees wake the caller, also in the gap between its last look for memory and its sleep.
    pub(crate) fn start_waiting(&self, need: u64) -> Waiting<'_> {
        let (waiters, want) = (&self.header().waiters, &self.header().want);
        if waiters.fetch_add(1, Ordering::AcqRel) == 0 {
            want.store(need, Ordering::Release);
        } else if want.load(Ordering::Acquire) != need {
            want.store(0, Ordering::Release); // waiters for different sizes: wants anything
        }
        Waiting { seg: self }
    }

    /// Whether a process waiting for memory could use a magazine of `size`-byte blocks from the
    /// depot. It could when it waits for exactly that size class. Frees may then keep such blocks
    /// together in magazines for it.
    pub(super) fn waiters_take(&self, size: u64) -> bool {
        let want = self.header().want.load(Ordering::Acquire);
        size >= want && size < want.saturating_add(tlsf::MIN_BLOCK)
    }

    /// Whether some process waits for memory in this segment.
    pub(crate) fn has_waiters(&self) -> bool {
        self.header().waiters.load(Ordering::Relaxed) > 0
    }

    /// Wakes every process waiting for memory in this segment. Only the first call after each
    /// arming makes the system call. A receiver frees in small batches, and a woken sender may
    /// wait for a processor long enough for dozens more batches. Without the limit, the receiver
    /// would pay a system call for each batch, with a page-table walk for the shared futex.
    pub(crate) fn wake_waiters(&self) {
        if self.header().wake.swap(1, Ordering::SeqCst) == 0 {
            futex::bump_and_wake_all(&self.header().epoch);
        }
    }
}

/// A process waiting for memory in a segment (see [`Segment::start_waiting`]).
pub(crate) struct Waiting<'a> {
    seg: &'a Segment,
}

impl Waiting<'_> {
    /// Reads the free epoch and then arms the wake. Call it before each look for memory, and pass
    /// the returned epoch to `Waiting::sleep`. Once the wake is armed, the first free bumps the
    /// epoch, so the sleep that follows a failed look cannot miss that free. The look itself sees
    /// any free from before the arming.
    ///
    /// The epoch is read before arming for a reason. Read after arming, it could already include
    /// the bump of a free whose memory the look then misses, because another process took it.
    /// Later frees would see that the wake was issued and would not bump the epoch again.
    pub(crate) fn arm(&self) -> u32 {
        let epoch = futex::low32(&self.seg.header().epoch);
        self.seg.header().wake.store(0, Ordering::SeqCst);
        epoch
    }

    /// Sleeps until a free happens after [`arm`](Waiting::arm) returned `epoch`, until a wake, or
    /// until `timeout` passes.
    pub(crate) fn sleep(&self, epoch: u32, timeout: Duration) {
        futex::wait(&self.seg.header().epoch, epoch, timeout);
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.seg.header().waiters.fetch_sub(1, Ordering::AcqRel);
    }
}
