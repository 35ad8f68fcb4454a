//! The segment's slot table ([`Slots`]): the reference counts and validation data of used blocks,
//! packed densely.
//!
//! A block's header sits at the block's start. For large messages, every header is therefore on a
//! page of its own, and a stream touches a new page on every step: allocation, receipt, release
//! and free. Each new page costs a TLB miss, and often a cache miss from the other core. A slot
//! keeps what those steps need in 32 bytes of one table: the count and owner, and the block's
//! offset, size and data distance. Slots are reused last-freed-first, so a stream cycles through a
//! few pages of the table, whatever the message size.
//!
//! A block gets a slot when it is carved from the heap, if a slot is free. It keeps the slot until
//! it goes back to the heap; the depot lists its blocks by slot number. While a block has a slot,
//! its header word 2 holds [`SLOTTED`]` << 32 | slot` instead of the count, so a heap walk finds
//! the slot of each block. A block without a slot (the table was full) keeps its count in its
//! header, as all blocks did before the table.
//!
//! The table has one slot per 4 KiB of segment, at most 2^20, and none in a segment under 1 MiB
//! ([`count_for`]). A slot's words:
//!
//! | word | content |
//! |---|---|
//! | 0 | count, and owner << 32 (the count word, [`Slots::rc`]) |
//! | 1 | block offset; 0 while the slot is free |
//! | 2 | block size; while the slot is free, the next free slot + 1 (0: none) |
//! | 3 | data distance, and generation << 32 |
//!
//! The owner is a transport's owner mark, or a mark for a block with no single holder:
//! [`SHARED`], [`IN_FLIGHT`], or `depot::DEPOT_OWNER`.
//!
//! The generation moves on each time the block is handed out for a new use (see
//! [`Slots::next_generation`]), and when the slot takes a new block. A record names the generation
//! it was made in. So a record of an earlier use, whose block was freed and handed out again
//! since, no longer matches the block.
//!
//! Only the holder of the segment lock changes the free list and the high-water mark. After a
//! process died holding the lock, [`Slots::rebuild`] derives both from the heap.

use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};

/// Owner value in a block header. It means that the block's count is in a slot, whose number is in
/// the low 32 bits.
pub(crate) const SLOTTED: u32 = u32::MAX - 1;
/// Owner mark of a block whose count went above 1, through copies or publishing. No single holder
/// can be named, so a sweep of dead transports never frees such a block.
pub(crate) const SHARED: u32 = u32::MAX - 2;

/// Whether a count word marks its block `SHARED`, with at least one reference left.
pub(crate) fn is_shared(word: u64) -> bool {
    (word >> 32) as u32 == SHARED && word as u32 > 0
}
/// Owner mark of a block with one reference that was handed to a socket or a lane and not taken
/// yet. The ticket or the lane accounts for the block, not a holder.
pub(crate) const IN_FLIGHT: u32 = u32::MAX - 3;
/// A block without a slot.
pub(crate) const NO_SLOT: u32 = u32::MAX;
/// Bytes per slot.
pub(crate) const SLOT_BYTES: u64 = 32;
const SLOT_WORDS: usize = 4;
/// Index of the count word in a slot's words (see the table above).
pub(crate) const WORD_COUNT: usize = 0;
/// Index of the block offset.
pub(crate) const WORD_OFFSET: usize = 1;
/// Index of the block size.
pub(crate) const WORD_SIZE: usize = 2;
/// Index of the data distance and generation.
pub(crate) const WORD_DELTA: usize = 3;

/// Word 3 of a slot: the data distance and the generation.
pub(crate) fn split_delta_generation(word: u64) -> (u64, u32) {
    (word & u64::from(u32::MAX), (word >> 32) as u32)
}
/// The most slots a segment has: 32 MiB of table, which stays sparse until used.
const MAX_SLOTS: u64 = 1 << 20;

/// Number of slots for a segment of `size` bytes: one per 4 KiB. A segment under 1 MiB gets none,
/// because there the table would cost a noticeable share of the tiny heap.
pub(crate) fn count_for(size: u64) -> u32 {
    if size < (1 << 20) {
        0
    } else {
        (size / 4096).min(MAX_SLOTS) as u32
    }
}

/// Bytes the table of a segment of `size` bytes occupies (whole pages).
pub(crate) fn table_bytes(size: u64) -> u64 {
    (u64::from(count_for(size)) * SLOT_BYTES).div_ceil(4096) * 4096
}

/// What a slot says about its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Offset of the block header.
    pub offset: u64,
    /// Block size.
    pub size: u64,
    /// Distance from the header to the user data.
    pub delta: u64,
}

/// A view of the slot table. The table holds `n` entries, starting at word `at`. The free-list head
/// and the high-water mark are the words `head` and `hw` of the segment's header. `head` holds the
/// first free slot + 1, or 0 when the list is empty.
#[derive(Clone, Copy)]
pub(crate) struct Slots<'a> {
    w: &'a [AtomicU64],
    at: usize,
    n: u32,
    head: &'a AtomicU64,
    hw: &'a AtomicU64,
}

impl<'a> Slots<'a> {
    /// The table over `w`.
    pub(crate) fn new(w: &'a [AtomicU64], at: usize, n: u32, head: &'a AtomicU64, hw: &'a AtomicU64) -> Self {
        debug_assert!(at + n as usize * SLOT_WORDS <= w.len());
        Slots { w, at, n, head, hw }
    }

    /// The four words of `slot` at once, with one bounds check for all four. Returns `None` when
    /// the slot number is out of range. Index the words with [`WORD_COUNT`], [`WORD_OFFSET`],
    /// [`WORD_SIZE`] and [`WORD_DELTA`].
    pub(crate) fn words(&self, slot: u32) -> Option<&'a [AtomicU64; SLOT_WORDS]> {
        if slot >= self.n {
            return None;
        }
        let at = self.at + slot as usize * SLOT_WORDS;
        self.w.get(at..at + SLOT_WORDS)?.try_into().ok()
    }

    fn word(&self, slot: u32, i: usize) -> &'a AtomicU64 {
        &self.w[self.at + slot as usize * SLOT_WORDS + i]
    }

    /// The count word of `slot`. The caller has checked `slot < len()`.
    pub(crate) fn rc(&self, slot: u32) -> &'a AtomicU64 {
        self.word(slot, 0)
    }

    /// The block that `slot` describes, if the slot is in use. Returns `None` also for a slot
    /// number out of range.
    pub(crate) fn entry(&self, slot: u32) -> Option<Entry> {
        let w = self.words(slot)?;
        let offset = w[WORD_OFFSET].load(Acquire);
        (offset != 0).then(|| Entry {
            offset,
            size: w[WORD_SIZE].load(Relaxed),
            delta: split_delta_generation(w[WORD_DELTA].load(Relaxed)).0,
        })
    }

    /// The generation of the block in `slot` (0 for a slot number out of range).
    pub(crate) fn generation(&self, slot: u32) -> u32 {
        if slot >= self.n {
            return 0;
        }
        (self.word(slot, 3).load(Acquire) >> 32) as u32
    }

    /// Moves the generation of the block in `slot` on, as the block is handed out for a new use,
    /// and returns the new generation. Only the block's holder calls `Slots::next_generation`, and
    /// nobody else may change the block at that time. The record that carries the generation to
    /// others is published after this call.
    pub(crate) fn next_generation(&self, slot: u32) -> u32 {
        if slot >= self.n {
            return 0;
        }
        let delta = self.word(slot, 3).load(Relaxed) & u64::from(u32::MAX);
        self.move_on(slot, delta, Release)
    }

    /// Writes word 3 of `slot`: the data distance `delta`, and the generation after the one that
    /// the word held. Returns the new generation.
    fn move_on(&self, slot: u32, delta: u64, order: std::sync::atomic::Ordering) -> u32 {
        let w = self.word(slot, 3);
        let next = ((w.load(Relaxed) >> 32) as u32).wrapping_add(1);
        w.store(delta | u64::from(next) << 32, order);
        next
    }

    /// Takes a free slot for the block `e`, with count word `rc`. The caller holds the segment
    /// lock.
    pub(crate) fn take(&self, e: Entry, rc: u64) -> Option<u32> {
        let mut head = self.head.load(Relaxed);
        // A head slot that is out of range or in use (it has an offset of its own) means that the
        // free list is damaged. `Slots::take` then drops the list, and the list's free slots stay
        // lost until a heap repair rebuilds the table. New slots come from the high-water mark
        // instead. Before this fix, every later block went without a slot, and was never cached,
        // for the rest of the session.
        if head != 0 && ((head - 1) >= u64::from(self.n) || self.word((head - 1) as u32, 1).load(Relaxed) != 0) {
            log::error!("the slot table's free list is damaged (head {head}); new slots come from its unused end");
            self.head.store(0, Relaxed);
            head = 0;
        }
        let slot = if head != 0 {
            let s = (head - 1) as u32;
            self.head.store(self.word(s, 2).load(Relaxed), Relaxed);
            s
        } else {
            let hw = self.hw.load(Relaxed);
            if hw >= u64::from(self.n) || self.word(hw as u32, 1).load(Relaxed) != 0 {
                return None; // full, or a damaged high-water mark: no slot for this block
            }
            self.hw.store(hw + 1, Relaxed);
            hw as u32
        };
        // A new block is a new use. Its generation goes on from the generation of the slot's last
        // block, so no record of that last block matches. The generation moves on before the count
        // word says that the block is held.
        self.move_on(slot, e.delta, Relaxed);
        self.word(slot, 0).store(rc, Release);
        self.word(slot, 2).store(e.size, Relaxed);
        self.word(slot, 1).store(e.offset, Release);
        Some(slot)
    }

    /// Records a new size for the block of `slot` (it was shrunk).
    pub(crate) fn resize(&self, slot: u32, size: u64) {
        if slot < self.n {
            self.word(slot, 2).store(size, Relaxed);
        }
    }

    /// Returns `slot` to the free list. The caller holds the segment lock, and the slot's block is
    /// back in the heap.
    pub(crate) fn give_back(&self, slot: u32) {
        if slot >= self.n {
            return;
        }
        self.word(slot, 1).store(0, Release);
        self.word(slot, 2).store(self.head.load(Relaxed), Relaxed);
        self.head.store(u64::from(slot) + 1, Relaxed);
    }

    /// Empties the table after the heap was formatted. `Slots::clear` marks every slot used so far
    /// free, by setting its offset to 0. Otherwise `Slots::take` would find the first slot in use,
    /// and would never give a block a slot again. The generations stay, and go on from there.
    pub(crate) fn clear(&self) {
        let hw = self.hw.load(Relaxed).min(u64::from(self.n)) as u32;
        for slot in 0..hw {
            self.word(slot, 1).store(0, Release);
        }
        self.head.store(0, Relaxed);
        self.hw.store(0, Relaxed);
    }

    /// Rebuilds the free list after a process died holding the lock. `in_use` lists the slots that
    /// used blocks point to; these were already checked against their entries. Every other slot
    /// below the high-water mark is free.
    pub(crate) fn rebuild(&self, in_use: &[u32]) {
        let hw = self.hw.load(Relaxed).min(u64::from(self.n)) as u32;
        self.hw.store(u64::from(hw), Relaxed);
        let mut used = vec![false; hw as usize];
        for &s in in_use {
            if s < hw {
                used[s as usize] = true;
            }
        }
        self.head.store(0, Relaxed);
        for s in (0..hw).rev().filter(|&s| !used[s as usize]) {
            self.give_back(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(n: u32) -> Vec<AtomicU64> {
        (0..2 + n as usize * SLOT_WORDS).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn take_give_back_and_reuse_last_freed_first() {
        let w = table(3);
        let s = Slots::new(&w, 2, 3, &w[0], &w[1]);
        let e = |o| Entry { offset: o, size: 96, delta: 32 };
        assert_eq!(s.take(e(4096), 7), Some(0));
        assert_eq!(s.take(e(8192), 7), Some(1));
        assert_eq!(s.take(e(12288), 7), Some(2));
        assert_eq!(s.take(e(16384), 7), None, "table full");
        assert_eq!(s.entry(1), Some(e(8192)));
        assert_eq!(s.rc(1).load(Relaxed), 7);
        s.give_back(1);
        s.give_back(0);
        assert_eq!(s.entry(1), None, "a free slot describes no block");
        assert_eq!(s.take(e(20480), 1), Some(0), "last freed first");
        assert_eq!(s.take(e(24576), 1), Some(1));
        assert_eq!(s.entry(3), None, "out of range");
    }

    /// After a format, every slot is free again. A block that takes a slot gets a later generation
    /// than the slot's last block had. Before this fix, `clear` left the slots' offsets in place.
    /// The first `take` then found slot 0 in use, so no block got a slot (nor a cache) after a
    /// format.
    #[test]
    fn a_cleared_table_gives_slots_again_in_later_generations() {
        let w = table(2);
        let s = Slots::new(&w, 2, 2, &w[0], &w[1]);
        let e = Entry { offset: 4096, size: 96, delta: 32 };
        assert_eq!(s.take(e, 1), Some(0));
        assert_eq!(s.take(e, 1), Some(1));
        let before = s.generation(0);
        s.clear();
        assert_eq!(s.entry(1), None, "a cleared slot describes no block");
        assert_eq!(s.take(e, 1), Some(0), "slots are given again after a format");
        assert_eq!(s.entry(0), Some(e));
        assert_ne!(s.generation(0), before, "the block in it is another use");
        assert_eq!(s.next_generation(0), s.generation(0), "a hand-out moves it on again");
    }

    #[test]
    fn rebuild_frees_what_no_block_uses() {
        let w = table(4);
        let s = Slots::new(&w, 2, 4, &w[0], &w[1]);
        for o in 1..=4 {
            s.take(Entry { offset: o * 4096, size: 64, delta: 32 }, 0).unwrap();
        }
        w[0].store(99, Relaxed); // a damaged head
        s.rebuild(&[1, 3]);
        assert_eq!(s.entry(1).map(|e| e.offset), Some(8192));
        assert_eq!(s.entry(0), None);
        let mut got =
            vec![s.take(Entry { offset: 1, size: 1, delta: 1 }, 0), s.take(Entry { offset: 1, size: 1, delta: 1 }, 0)];
        got.sort();
        assert_eq!(got, [Some(0), Some(2)]);
        assert_eq!(s.take(Entry { offset: 1, size: 1, delta: 1 }, 0), None);
    }

    #[test]
    fn sizes() {
        assert_eq!(count_for(1 << 19), 0);
        assert_eq!(count_for(2 << 30), 1 << 19);
        assert_eq!(count_for(1 << 40), 1 << 20);
        assert_eq!(table_bytes(2 << 30), 16 << 20);
        assert_eq!(table_bytes(0), 0);
    }
}
