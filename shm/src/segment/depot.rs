//! The segment's depot: magazines of freed blocks, shared by all processes of the session.
//!
//! In a stream the same blocks cycle: the sender allocates a block, the receiver frees it, and the
//! sender allocates it again. Without the depot, the receiver would free a batch of same-size
//! blocks into the heap, which merges them, and the sender's next refill would carve them out
//! again. Instead, the receiver deposits the batch here as one magazine, and the sender's next
//! refill takes that magazine whole. Both steps take the segment lock once per magazine, cost
//! O(1) per block, and do not touch the heap's lists.
//!
//! A block in the depot is a used block of the heap, with reference count 0 and owner
//! [`DEPOT_OWNER`]. Only blocks with a slot (see `slots`) go into the depot, and the depot lists
//! them by slot number. It holds at most [`SLOTS`] magazines; blocks that do not fit go back to
//! the heap.
//!
//! The depot is only a cache. When a process dies holding the segment lock, the repair empties the
//! depot into the heap (see `Segment::repair`). The repair finds the depot's blocks by their owner,
//! so it also frees the blocks of a deposit that was cut short.
//!
//! | word | content |
//! |---|---|
//! | 0 | magazines held |
//! | 1 | bytes held |
//! | 2.. | [`SLOTS`] magazines of 2 + [`BLOCKS`] words each: block size, block count, then the blocks' slot numbers |

use std::sync::atomic::{AtomicU64, Ordering::Relaxed, Ordering::Release};

/// How many slots (magazines) the depot holds.
pub(crate) const SLOTS: usize = 256;
/// The most blocks a magazine holds.
pub(crate) const BLOCKS: usize = 32;
const SLOT_WORDS: usize = 2 + BLOCKS;
/// How many of the newest magazines a deposit tries to join before it takes a slot of its own.
const JOIN_WINDOW: usize = 8;
/// How many words the depot occupies.
pub(crate) const WORDS: usize = 2 + SLOTS * SLOT_WORDS;
/// Owner recorded in blocks that sit in the depot.
pub(crate) const DEPOT_OWNER: u32 = u32::MAX;

/// A view of the depot at word index `at`.
#[derive(Clone, Copy)]
pub(crate) struct Depot<'a> {
    w: &'a [AtomicU64],
    at: usize,
}

impl<'a> Depot<'a> {
    /// The depot at word `at` of `w`.
    pub(crate) fn new(w: &'a [AtomicU64], at: usize) -> Self {
        debug_assert!(at + WORDS <= w.len());
        Depot { w, at }
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        &self.w[self.at + i]
    }

    fn slot(&self, s: usize, i: usize) -> &AtomicU64 {
        self.word(2 + s * SLOT_WORDS + i)
    }

    /// The [`BLOCKS`] block words of magazine `s`, as one slice, so that the bounds are checked
    /// once.
    fn slot_blocks(&self, s: usize) -> &[AtomicU64] {
        let first = self.at + 2 + s * SLOT_WORDS + 2;
        &self.w[first..first + BLOCKS]
    }

    /// How many magazines the depot holds.
    pub(crate) fn len(&self) -> usize {
        (self.word(0).load(Relaxed) as usize).min(SLOTS)
    }

    /// Whether the depot is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many bytes the depot holds.
    pub(crate) fn bytes(&self) -> u64 {
        self.word(1).load(Relaxed)
    }

    /// Stores a magazine of `offsets`, all blocks of `size` bytes. `Depot::put` appends them to a
    /// magazine of the same size that has room, or else puts them in a free slot. Appending matters
    /// because a receiver that frees what it has before blocking deposits short magazines, which
    /// would otherwise use up the slots. The count is committed last.
    ///
    /// The depot holds no more magazines than it has slots. With that limit, a stream's blocks
    /// cycle through the depot however far the sender runs ahead. (Blocks that overflowed to the
    /// heap had to be carved again, and each one touched a cold header page.) An allocation of
    /// another size that finds no room empties the depot.
    pub(crate) fn put(&self, size: u64, offsets: &[u64]) -> bool {
        let n = self.len();
        let bytes = size.saturating_mul(offsets.len() as u64);
        if offsets.is_empty() || offsets.len() > BLOCKS {
            return false;
        }
        let count = |s: usize| (self.slot(s, 1).load(Relaxed) as usize).min(BLOCKS);
        // Try only the newest magazines; a stream's own magazine is at the top. The scan runs under
        // the segment lock, so its cost must not grow with a depot full of other sizes.
        let joined = (n.saturating_sub(JOIN_WINDOW)..n)
            .rev()
            .find(|&s| self.slot(s, 0).load(Relaxed) == size && count(s) + offsets.len() <= BLOCKS);
        let (s, at) = match joined {
            Some(s) => (s, count(s)),
            None if n < SLOTS => {
                self.slot(n, 0).store(size, Relaxed);
                (n, 0)
            }
            None => return false,
        };
        for (to, &o) in self.slot_blocks(s)[at..].iter().zip(offsets) {
            to.store(o, Relaxed);
        }
        self.word(1).fetch_add(bytes, Relaxed);
        self.slot(s, 1).store((at + offsets.len()) as u64, Release);
        if s == n {
            self.word(0).store(n as u64 + 1, Release);
        }
        true
    }

    /// Takes a magazine of blocks of at least `need` and less than `need + slack` bytes. Returns
    /// the block size, and appends the offsets to `out`.
    pub(crate) fn take(&self, need: u64, slack: u64, out: &mut Vec<u64>) -> Option<u64> {
        let n = self.len();
        let s = (0..n).rev().find(|&s| {
            let size = self.slot(s, 0).load(Relaxed);
            size >= need && size < need + slack
        })?;
        let size = self.slot(s, 0).load(Relaxed);
        let count = (self.slot(s, 1).load(Relaxed) as usize).min(BLOCKS);
        out.extend(self.slot_blocks(s)[..count].iter().map(|b| b.load(Relaxed)));
        // Fill the hole with the last magazine, then commit the shorter depot.
        if s != n - 1 {
            for i in 0..SLOT_WORDS {
                self.slot(s, i).store(self.slot(n - 1, i).load(Relaxed), Relaxed);
            }
        }
        self.word(1).fetch_sub(size.saturating_mul(count as u64).min(self.bytes()), Relaxed);
        self.word(0).store(n as u64 - 1, Release);
        Some(size)
    }

    /// Forgets every magazine. The caller must free their blocks.
    pub(crate) fn clear(&self) {
        self.word(0).store(0, Release);
        self.word(1).store(0, Relaxed);
    }
}

/// A magazine holds at most 1/`MAGAZINE_SHARE` of the segment. Large messages are therefore cached
/// too, a few per magazine. Without this rule, every large message took the segment lock on both
/// sides. Sizes whose refill would be fewer than two blocks are not cached.
pub(crate) const MAGAZINE_SHARE: u64 = 32;
/// The most blocks a magazine is refilled with.
pub(crate) const REFILL_BLOCKS: usize = 32;

/// Blocks per magazine for `size`-byte blocks in a segment of `segment_size` bytes; the same rule
/// for a process's own magazines and the segment's shared depot.
pub(crate) fn magazine_blocks(segment_size: u64, size: u64) -> usize {
    ((segment_size / MAGAZINE_SHARE / size.max(1)) as usize).min(REFILL_BLOCKS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_take_and_limits() {
        let w: Vec<AtomicU64> = (0..WORDS).map(|_| AtomicU64::new(0)).collect();
        let d = Depot::new(&w, 0);
        assert!(d.put(64, &[100, 200]));
        assert!(d.put(128, &[300]));
        assert!(!d.put(64, &[1; 40]), "too many blocks for a slot");
        assert!(!d.put(64, &[]), "nothing to store");
        assert!(d.put(64, &[400]), "joins the first magazine of its size");
        assert_eq!((d.len(), d.bytes()), (2, 320));
        let mut out = Vec::new();
        assert_eq!(d.take(64, 48, &mut out), Some(64));
        assert_eq!(out, [100, 200, 400]);
        assert_eq!(d.take(64, 48, &mut out), None, "128 is not within the slack of 64");
        assert_eq!(d.take(100, 48, &mut out), Some(128));
        assert!(d.is_empty() && d.bytes() == 0);
        for i in 0..SLOTS as u64 {
            assert!(d.put(64 + i * 16, &[i; BLOCKS]));
        }
        assert!(!d.put(64, &[0]), "all slots taken, each full");
        assert!(!d.put(4096, &[0]), "all slots taken");
    }

    #[test]
    fn a_deposit_joins_only_one_of_the_newest_magazines() {
        let w: Vec<AtomicU64> = (0..WORDS).map(|_| AtomicU64::new(0)).collect();
        let d = Depot::new(&w, 0);
        assert!(d.put(64, &[1]));
        for i in 0..JOIN_WINDOW as u64 - 1 {
            assert!(d.put(1000 + i * 16, &[i]));
        }
        assert!(d.put(64, &[2]), "still within the window: joins");
        assert_eq!(d.len(), JOIN_WINDOW);
        assert!(d.put(5000, &[3]));
        assert!(d.put(64, &[4]), "the 64-byte magazine is beyond the window: a slot of its own");
        assert_eq!(d.len(), JOIN_WINDOW + 2);
        let mut out = Vec::new();
        assert_eq!(d.take(64, 16, &mut out), Some(64));
        assert_eq!(out, [4], "the newest magazine of the size first");
        assert_eq!(d.take(64, 16, &mut out), Some(64));
        assert_eq!(out, [4, 1, 2]);
    }
}
