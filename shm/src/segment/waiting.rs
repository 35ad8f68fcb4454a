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
    /// Counts the caller as waiting for `need`-byte blocks until the returned guard drops: frees
    /// wake it from now on, also between its last look for memory and its sleep.
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
    /// depot (it waits for exactly that size class), so frees may keep them together for it.
    pub(super) fn waiters_take(&self, size: u64) -> bool {
        let want = self.header().want.load(Ordering::Acquire);
        size >= want && size < want.saturating_add(tlsf::MIN_BLOCK)
    }

    /// Whether some process waits for memory in this segment.
    pub(crate) fn has_waiters(&self) -> bool {
        self.header().waiters.load(Ordering::Relaxed) > 0
    }

    /// Wakes every process waiting for memory in this segment. Once per arming: a receiver frees
    /// in small batches, and a woken sender may wait for a processor long enough for dozens more,
    /// each a system call (with a page-table walk for the shared futex) the receiver paid for.
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
    /// The free epoch, read before a look for memory; then arms the wake, so the first free from
    /// then on bumps the epoch and the sleep that follows a failed look cannot miss it (a free
    /// before is seen by the look). The epoch is read first: read after arming, it could already
    /// include the bump of a free whose memory the look then misses (taken by another process),
    /// and later frees, seeing the wake issued, would not bump it again.
    pub(crate) fn arm(&self) -> u32 {
        let epoch = futex::low32(&self.seg.header().epoch);
        self.seg.header().wake.store(0, Ordering::SeqCst);
        epoch
    }

    /// Sleeps until a free after [`arm`](Waiting::arm) returned `epoch`, a wake, or `timeout`.
    pub(crate) fn sleep(&self, epoch: u32, timeout: Duration) {
        futex::wait(&self.seg.header().epoch, epoch, timeout);
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.seg.header().waiters.fetch_sub(1, Ordering::AcqRel);
    }
}
