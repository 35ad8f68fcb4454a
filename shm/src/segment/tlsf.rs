//! A TLSF (two-level segregated fit) allocator over 64-bit words, addressed by byte offsets.
//!
//! It lives inside a shared segment and is used by every process of a session under one robust mutex.
//! Allocation and free are O(1): two bitmap scans find a free list whose blocks are all big enough;
//! freed blocks coalesce with free neighbours at once, which keeps fragmentation low under mixed sizes.
//!
//! Crash safety: a process may die at any instruction while holding the lock. Every change of the
//! physical block chain is *committed* by one 8-byte store of a block's `size|flags` word, written
//! after everything that store makes reachable; so the chain of blocks from the heap start is always
//! walkable and each block is either free or used. Free lists, bitmaps, `prev` links and statistics are
//! derived data: [`Tlsf::recover`] rebuilds them from the chain (and merges neighbouring free blocks).
//!
//! Block layout, the type `Header` (offsets are multiples of 16; a header is 32 bytes):
//!
//! | word | used block | free block |
//! |---|---|---|
//! | 0 | offset of the previous physical block (0: first) | same |
//! | 1 | size in bytes, bit 0 clear | size, bit 0 set (`FREE`) |
//! | 2 | reference count (low 32 bits), owner pid (high 32); or, for a block with a slot in the segment's slot table, a mark and the slot number (see `slots`) | next free block (0: none) |
//! | 3 | distance from block start to user data (low 32), check tag of the offset (high 32) | previous free block (0: none) |
//!
//! The check tag lets `free` refuse an offset that is not the start of a used block (a peer's bug),
//! instead of treating whatever bytes lie there as a header.

pub use crate::error::Corrupt;
use crate::sys::layout::{shared_layout, view};
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed, Ordering::Release};

/// Granularity and minimum alignment of blocks and user data.
pub const ALIGN: u64 = 16;
/// Block header size.
pub const HDR: u64 = 32;
/// Smallest block ever split off (a header plus 16 bytes).
pub const MIN_BLOCK: u64 = 48;
/// Largest alignment honoured. In every process a mapping is only page aligned, so a larger
/// alignment cannot hold for all processes.
pub const MAX_ALIGN: u64 = 4096;

const FREE: u64 = 1;
const SL_LOG2: u32 = 4;
const SL: usize = 1 << SL_LOG2;
const FL_SHIFT: u32 = SL_LOG2 + 4;
const SMALL: u64 = 1 << FL_SHIFT;
const FL_COUNT: usize = 40;

shared_layout! {
    /// The heap's control block: the two levels of bitmaps, the free lists' heads and the
    /// statistics. All of it is derived data (see [`Tlsf::recover`]).
    pub(crate) struct Control {
        /// Bit `f` set: some list of first-level class `f` is not empty.
        fl_map: AtomicU64,
        /// For each first-level class, bit `s` set: list `(f, s)` is not empty.
        sl_maps: [AtomicU64; FL_COUNT],
        /// The first block of each free list (0: empty), by first- then second-level class.
        heads: [[AtomicU64; SL]; FL_COUNT],
        /// Bytes in free blocks, headers included.
        free_bytes: AtomicU64,
        /// Free blocks.
        free_blocks: AtomicU64,
        /// Used blocks.
        used_blocks: AtomicU64,
    }
}

/// Words the control block occupies.
pub const CONTROL_WORDS: usize = size_of::<Control>() / 8;
// Pins the layout the control block had when it was addressed by word indices, so that a build
// of either kind reads the heap of the other.
const _: () = assert!(offset_of!(Control, heads) == (1 + FL_COUNT) * 8 && CONTROL_WORDS == 1 + FL_COUNT * (1 + SL) + 3);

impl Control {
    /// Sets every word to 0: the lists and counts of an empty heap, before they are built.
    fn clear(&self) {
        let counts = [&self.fl_map, &self.free_bytes, &self.free_blocks, &self.used_blocks];
        let maps = self.sl_maps.iter().chain(self.heads.iter().flatten());
        counts.into_iter().chain(maps).for_each(|w| w.store(0, Relaxed));
    }
}

shared_layout! {
    /// A block's header, at the block's start. Words 2 and 3 mean one thing in a free block and
    /// another in a used block (see the table in the module doc).
    struct Header {
        /// Offset of the previous physical block (0: first).
        prev_block: AtomicU64,
        /// Size in bytes; bit 0 ([`FREE`]) set in a free block. Written last by every change of the
        /// chain (see `commit`).
        size_flags: AtomicU64,
        /// Free block: the next block of its free list (0: none). Used block: its count word.
        next_or_count: AtomicU64,
        /// Free block: the previous block of its free list (0: none). Used block: the distance to
        /// its data (low 32 bits) and the check tag of its offset (high 32).
        prev_or_delta: AtomicU64,
    }
}
// The header's words sit where the table in the module doc puts them.
const _: () = assert!(size_of::<Header>() as u64 == HDR && offset_of!(Header, size_flags) == 8);
const _: () = assert!(offset_of!(Header, next_or_count) == 16 && offset_of!(Header, prev_or_delta) == 24);

/// A free block's link to a neighbour in its free list.
#[derive(Debug, Clone, Copy)]
enum Link {
    Next,
    Prev,
}

impl Link {
    fn of(self, h: &Header) -> &AtomicU64 {
        match self {
            Link::Next => &h.next_or_count,
            Link::Prev => &h.prev_or_delta,
        }
    }
}

type R<T> = Result<T, Corrupt>;

/// A successful allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Offset of the block header.
    pub offset: u64,
    /// Distance from the block header to the user data.
    pub delta: u32,
    /// Size of the whole block.
    pub size: u64,
    /// The block's slot in the segment's slot table. `slots::NO_SLOT` means no slot; the reference
    /// count is then in the header.
    pub slot: u32,
    /// The slot's generation for the block's current use (see `slots`). It is 0 without a slot, or
    /// before the block is handed out.
    pub generation: u32,
}

/// Allocator statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes in free blocks (headers included).
    pub free_bytes: u64,
    /// Number of free blocks.
    pub free_blocks: u64,
    /// Number of used blocks.
    pub used_blocks: u64,
    /// Size of the largest free block.
    pub largest_free: u64,
}

/// A view of one TLSF heap. Its control block starts at a word index, and its blocks fill the
/// byte range `[start, end)`.
#[derive(Clone, Copy)]
pub struct Tlsf<'a> {
    w: &'a [AtomicU64],
    ctl: &'a Control,
    start: u64,
    end: u64,
}

impl std::fmt::Debug for Tlsf<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tlsf").field("start", &self.start).field("end", &self.end).finish()
    }
}

/// The free-list class of a block size: a first-level and a second-level index.
fn mapping(size: u64) -> (usize, usize) {
    if size < SMALL {
        (0, (size / ALIGN) as usize)
    } else {
        let fl = 63 - size.leading_zeros();
        let sl = ((size >> (fl - SL_LOG2)) as usize) ^ SL;
        (((fl - (FL_SHIFT - 1)) as usize).min(FL_COUNT - 1), sl)
    }
}

/// The class to search for a request of `size` bytes. The size is rounded up so that every block
/// of the class is big enough.
fn mapping_search(size: u64) -> (usize, usize) {
    if size < SMALL {
        mapping(size)
    } else {
        let fl = 63 - size.leading_zeros();
        mapping(size + (1u64 << (fl - SL_LOG2)) - 1)
    }
}

/// Check tag stored in a used block's header, derived from its offset.
fn tag(off: u64) -> u64 {
    u64::from(((off >> 4) as u32).wrapping_mul(0x9E37_79B1) ^ 0x5AFE_B10C)
}

/// Rounds `v` up to a multiple of `a`, or returns `None` past `u64::MAX`. Sizes come from users
/// and peers, and a wrapped size would give a tiny block for a huge request.
fn round_up(v: u64, a: u64) -> Option<u64> {
    v.checked_next_multiple_of(a)
}

impl<'a> Tlsf<'a> {
    /// Creates a view. The control block (`CONTROL_WORDS` words from word index `ctl`) and the
    /// heap must lie inside `w`.
    pub fn new(w: &'a [AtomicU64], ctl: usize, start: u64, end: u64) -> Self {
        debug_assert!(start % ALIGN == 0 && end % ALIGN == 0 && start < end);
        debug_assert!((end as usize) <= w.len() * 8);
        let ctl = w.get(ctl..).and_then(view).expect("the words hold the heap's control block");
        Tlsf { w, ctl, start, end }
    }

    /// The block size needed for `size` user bytes aligned to `align`. Returns `None` if no heap
    /// could hold such a block.
    pub fn block_size_for(size: u64, align: u64) -> Option<u64> {
        let extra = align.max(ALIGN) - ALIGN;
        let need = HDR.checked_add(round_up(size.checked_add(extra)?, ALIGN)?)?;
        Some(need.max(MIN_BLOCK))
    }

    /// Largest user size one allocation could ever get here (the whole heap in one block).
    #[cfg(any(test, feature = "testing"))]
    pub fn capacity(&self) -> u64 {
        self.end - self.start - HDR
    }

    /// Formats an empty heap: one free block spanning it.
    pub fn format(&self) {
        self.ctl.clear();
        let first = self.header_at(self.start);
        first.prev_block.store(0, Relaxed);
        first.size_flags.store((self.end - self.start) | FREE, Relaxed);
        // `insert` cannot fail here: the block was just written inside the heap.
        let _ = self.insert(self.start, self.end - self.start);
    }

    // ---- word access -------------------------------------------------------------------------

    /// The header at `off`, if its words lie inside the mapping. The check matters because `off`
    /// may come from a peer.
    fn header(&self, off: u64) -> R<&'a Header> {
        let at = usize::try_from(off / 8).map_err(|_| Corrupt(off))?;
        self.w.get(at..).and_then(view).ok_or(Corrupt(off))
    }
    /// The header of a block known to be inside the heap.
    fn header_at(&self, off: u64) -> &'a Header {
        self.header(off).expect("a block inside the heap")
    }
    /// Commits a change of the block chain by storing the block's size and flags. This store comes
    /// last (see the module doc).
    fn commit(&self, off: u64, size_flags: u64) {
        self.header_at(off).size_flags.store(size_flags, Release);
    }
    /// Points the block at `off` back to its physical predecessor `prev`. The link is derived data
    /// (see [`Tlsf::recover`]), so a header that does not fit in the mapping is left alone. Only a
    /// damaged chain names such a header.
    fn link_prev_block(&self, off: u64, prev: u64) {
        if let Ok(h) = self.header(off) {
            h.prev_block.store(prev, Relaxed);
        }
    }

    /// Whether `off` could be a block header of this heap.
    fn in_heap(&self, off: u64) -> bool {
        off >= self.start && off < self.end && off % ALIGN == 0 && self.end - off >= HDR
    }

    /// Reads a block's size and free flag, checking the block lies inside the heap.
    fn block(&self, off: u64) -> R<(u64, bool)> {
        if !self.in_heap(off) {
            return Err(Corrupt(off));
        }
        let sf = self.header(off)?.size_flags.load(Relaxed);
        let size = sf & !(ALIGN - 1);
        if size < HDR || size > self.end - off {
            return Err(Corrupt(off));
        }
        Ok((size, sf & FREE != 0))
    }

    // ---- free lists --------------------------------------------------------------------------

    fn head(&self, fl: usize, sl: usize) -> &AtomicU64 {
        &self.ctl.heads[fl][sl]
    }

    /// Checks that `link`, read from a free block's list words, is a free block whose `back` link
    /// points back at `off`; otherwise returns `Corrupt(link)`. Links are checked before anything
    /// is written through them. A message written past its end damages the next block's words.
    /// Writing through such a damaged link without this check overwrote a live block's words.
    fn links_back(&self, link: u64, back: Link, off: u64) -> R<()> {
        match self.block(link) {
            Ok((_, true)) if back.of(self.header(link)?).load(Relaxed) == off => Ok(()),
            _ => Err(Corrupt(link)),
        }
    }

    fn insert(&self, off: u64, size: u64) -> R<()> {
        let (fl, sl) = mapping(size);
        let head = self.head(fl, sl).load(Relaxed);
        if head != 0 {
            // The head has no predecessor.
            self.links_back(head, Link::Prev, 0)?;
        }
        let h = self.header_at(off);
        h.next_or_count.store(head, Relaxed);
        h.prev_or_delta.store(0, Relaxed);
        if head != 0 {
            self.header_at(head).prev_or_delta.store(off, Relaxed);
        }
        self.head(fl, sl).store(off, Relaxed);
        self.ctl.fl_map.fetch_or(1 << fl, Relaxed);
        self.ctl.sl_maps[fl].fetch_or(1 << sl, Relaxed);
        self.ctl.free_bytes.fetch_add(size, Relaxed);
        self.ctl.free_blocks.fetch_add(1, Relaxed);
        Ok(())
    }

    fn remove(&self, off: u64, size: u64) -> R<()> {
        let (fl, sl) = mapping(size);
        let h = self.header(off)?;
        let (next, prev) = (h.next_or_count.load(Relaxed), h.prev_or_delta.load(Relaxed));
        if next != 0 {
            self.links_back(next, Link::Prev, off)?;
        }
        if prev != 0 {
            self.links_back(prev, Link::Next, off)?;
        } else if self.head(fl, sl).load(Relaxed) != off {
            return Err(Corrupt(off));
        }
        if next != 0 {
            self.header_at(next).prev_or_delta.store(prev, Relaxed);
        }
        if prev != 0 {
            self.header_at(prev).next_or_count.store(next, Relaxed);
        } else {
            if self.head(fl, sl).load(Relaxed) != off {
                return Err(Corrupt(off));
            }
            self.head(fl, sl).store(next, Relaxed);
            if next == 0 {
                let sl_map = self.ctl.sl_maps[fl].fetch_and(!(1 << sl), Relaxed) & !(1 << sl);
                if sl_map == 0 {
                    self.ctl.fl_map.fetch_and(!(1 << fl), Relaxed);
                }
            }
        }
        self.ctl.free_bytes.fetch_sub(size, Relaxed);
        self.ctl.free_blocks.fetch_sub(1, Relaxed);
        Ok(())
    }

    fn find(&self, need: u64) -> Option<u64> {
        self.find_good_fit(need).or_else(|| self.find_in_own_class(need))
    }

    /// The O(1) search: returns the first block of the smallest non-empty class in which every
    /// block fits.
    fn find_good_fit(&self, need: u64) -> Option<u64> {
        let (fl, sl) = mapping_search(need);
        if fl >= FL_COUNT {
            return None;
        }
        let mut sl_map = self.ctl.sl_maps[fl].load(Relaxed) & (u64::MAX << sl);
        let fl = if sl_map != 0 {
            fl
        } else {
            let fl_map = self.ctl.fl_map.load(Relaxed) & u64::MAX.checked_shl(fl as u32 + 1).unwrap_or(0);
            if fl_map == 0 {
                return None;
            }
            let f = fl_map.trailing_zeros() as usize;
            sl_map = self.ctl.sl_maps[f].load(Relaxed);
            f
        };
        let sl = sl_map.trailing_zeros() as usize;
        Some(self.head(fl, sl).load(Relaxed))
    }

    /// Looks at a few blocks of the request's own class. When no larger class has a block, the
    /// request's own class may still hold one that fits. This matters near a full heap, for
    /// example for one request for the whole heap.
    fn find_in_own_class(&self, need: u64) -> Option<u64> {
        let (fl, sl) = mapping(need);
        if fl >= FL_COUNT {
            return None;
        }
        let mut b = self.head(fl, sl).load(Relaxed);
        for _ in 0..16 {
            match self.block(b) {
                Ok((size, true)) if size >= need => return Some(b),
                Ok((_, true)) => b = self.header(b).ok()?.next_or_count.load(Relaxed),
                _ => return None,
            }
        }
        None
    }

    // ---- operations --------------------------------------------------------------------------

    /// Allocates `size` user bytes aligned to `align` for `owner`, with reference count 1. `align`
    /// is a power of two, at most [`MAX_ALIGN`]. Returns `Ok(None)` when no free block is big
    /// enough.
    pub fn alloc(&self, size: u64, align: u64, owner: u32) -> R<Option<Block>> {
        let align = align.clamp(ALIGN, MAX_ALIGN);
        let Some(need) = Self::block_size_for(size, align) else { return Ok(None) };
        let Some(off) = self.find(need) else { return Ok(None) };
        let (bsize, free) = self.block(off)?;
        if !free || bsize < need {
            return Err(Corrupt(off));
        }
        // `Tlsf::block` checked that `off` lies inside the heap, so this sum is far from
        // overflowing. `delta` is computed before the block leaves its free list, so that an
        // error cannot lose the block.
        let delta = round_up(off + HDR, align).ok_or(Corrupt(off))? - off;
        self.remove(off, bsize)?;
        // Fields of the used block first; the commit below makes them meaningful.
        let h = self.header_at(off);
        h.next_or_count.store((u64::from(owner) << 32) | 1, Relaxed);
        h.prev_or_delta.store(delta | (tag(off) << 32), Relaxed);
        let rest = bsize - need;
        let used = if rest >= MIN_BLOCK {
            let r = off + need;
            let split = self.header_at(r);
            split.prev_block.store(off, Relaxed);
            split.size_flags.store(rest | FREE, Relaxed);
            self.commit(off, need);
            let after = r + rest;
            if after < self.end {
                self.link_prev_block(after, r);
            }
            self.insert(r, rest)?;
            need
        } else {
            self.commit(off, bsize);
            bsize
        };
        self.ctl.used_blocks.fetch_add(1, Relaxed);
        Ok(Some(Block {
            offset: off,
            delta: delta as u32,
            size: used,
            slot: crate::segment::slots::NO_SLOT,
            generation: 0,
        }))
    }

    /// Validates that `off` is a used block; returns its size.
    pub fn used_block(&self, off: u64) -> R<u64> {
        match self.block(off)? {
            (size, false) if self.header(off)?.prev_or_delta.load(Relaxed) >> 32 == tag(off) => Ok(size),
            _ => Err(Corrupt(off)),
        }
    }

    /// Frees the used block at `off` and merges it with its free neighbours. Returns the size of
    /// the freed block.
    pub fn free(&self, off: u64) -> R<u64> {
        let size = self.used_block(off)?;
        self.commit(off, size | FREE);
        self.ctl.used_blocks.fetch_sub(1, Relaxed);
        let (mut start, mut total) = (off, size);
        let prev = self.header(off)?.prev_block.load(Relaxed);
        if prev != 0 {
            let (psize, pfree) = self.block(prev)?;
            if pfree && prev + psize == off {
                self.remove(prev, psize)?;
                total += psize;
                start = prev;
                self.commit(start, total | FREE);
            }
        }
        self.absorb_next_and_insert(start, total)?;
        Ok(size)
    }

    /// Finishes freeing the block `[start, start + total)`, which is already committed free. The
    /// block absorbs a free right neighbour, fixes the `prev` link of the block after it, and joins
    /// its free list.
    fn absorb_next_and_insert(&self, start: u64, mut total: u64) -> R<()> {
        let next = start + total;
        if next < self.end {
            let (nsize, nfree) = self.block(next)?;
            if nfree {
                self.remove(next, nsize)?;
                total += nsize;
                self.commit(start, total | FREE);
            }
        }
        if start + total < self.end {
            self.link_prev_block(start + total, start);
        }
        self.insert(start, total)
    }

    /// Gives the tail of the used block at `off` back to the heap and keeps `keep` bytes of the
    /// block, header included.
    /// Does nothing when the tail would be too small to be a block. Returns the new block size.
    pub fn shrink(&self, off: u64, keep: u64) -> R<u64> {
        let size = self.used_block(off)?;
        let keep = match round_up(keep.max(MIN_BLOCK), ALIGN) {
            Some(keep) if keep <= size && size - keep >= MIN_BLOCK => keep,
            _ => return Ok(size),
        };
        let tail = off + keep;
        let t = self.header_at(tail);
        t.prev_block.store(off, Relaxed);
        t.size_flags.store((size - keep) | FREE, Relaxed);
        self.commit(off, keep);
        self.absorb_next_and_insert(tail, size - keep)?;
        Ok(keep)
    }

    /// Whether [`Tlsf::recover`] can rebuild the lists from the block chain. The check only reads
    /// the chain. It requires every size to be in range, every used block to carry its check tag,
    /// and the chain to end exactly at the heap's end. `recover` needs this check because it clears
    /// the lists first and stops at the first bad block. On a chain that a message written past its
    /// end has broken, `recover` would leave no list at all, or take user bytes for headers.
    pub fn chain_sound(&self) -> bool {
        let mut off = self.start;
        while off < self.end {
            match self.block(off) {
                Ok((size, true)) => off += size,
                Ok((size, false))
                    if self.header(off).is_ok_and(|h| h.prev_or_delta.load(Relaxed) >> 32 == tag(off)) =>
                {
                    off += size
                }
                _ => return false,
            }
        }
        off == self.end
    }

    /// Every block of the heap in address order: (offset, size, free). Stops at a header that
    /// fails its checks (a damaged heap), so a walk never reads out of bounds.
    pub fn walk(&self) -> impl Iterator<Item = (u64, u64, bool)> + '_ {
        let mut off = self.start;
        std::iter::from_fn(move || {
            if off >= self.end {
                return None;
            }
            let (size, free) = self.block(off).ok()?;
            let item = (off, size, free);
            off += size;
            Some(item)
        })
    }

    /// The atomic word of a used block that holds its reference count and owner. The caller must
    /// already have checked that `off` is a valid block.
    pub fn refcount_word(&self, off: u64) -> R<&'a AtomicU64> {
        self.header(off).map(|h| &h.next_or_count)
    }

    /// Distance to the user data of a used block.
    pub fn delta(&self, off: u64) -> R<u64> {
        Ok(self.header(off)?.prev_or_delta.load(Relaxed) & 0xffff_ffff)
    }

    /// Rebuilds free lists, bitmaps, `prev` links and statistics from the block chain, merging
    /// neighbouring free blocks. The process that takes the lock after a holder died runs it.
    pub fn recover(&self) -> R<Stats> {
        self.ctl.clear();
        let (mut off, mut prev) = (self.start, 0u64);
        let mut free_run: Option<(u64, u64)> = None;
        let mut used = 0;
        while off < self.end {
            let (size, free) = self.block(off)?;
            if free {
                free_run = Some(match free_run {
                    Some((s, t)) => {
                        self.commit(s, (t + size) | FREE);
                        (s, t + size)
                    }
                    None => {
                        self.header_at(off).prev_block.store(prev, Relaxed);
                        (off, size)
                    }
                });
            } else {
                if let Some((s, t)) = free_run.take() {
                    self.insert(s, t)?;
                    prev = s;
                }
                self.header_at(off).prev_block.store(prev, Relaxed);
                prev = off;
                used += 1;
            }
            off += size;
        }
        if off != self.end {
            return Err(Corrupt(off));
        }
        if let Some((s, t)) = free_run {
            self.insert(s, t)?;
        }
        self.ctl.used_blocks.store(used, Relaxed);
        Ok(self.stats())
    }

    /// The free-bytes counter. Callers that only want a hint read it without the lock.
    pub fn free_bytes_hint(&self) -> u64 {
        self.ctl.free_bytes.load(Relaxed)
    }

    /// Current statistics. The monitor and out-of-memory messages also read them without the lock,
    /// while another process changes the heap. The maps and lists may then disagree; the result
    /// must then be a rough figure, never a panic.
    pub fn stats(&self) -> Stats {
        let highest = |map: u64| (map != 0).then(|| 63 - map.leading_zeros() as usize);
        let fl = highest(self.ctl.fl_map.load(Relaxed)).map(|fl| fl.min(FL_COUNT - 1));
        let sl = fl.and_then(|fl| highest(self.ctl.sl_maps[fl].load(Relaxed)).map(|sl| (fl, sl.min(SL - 1))));
        let largest = match sl {
            None => 0,
            Some((fl, sl)) => {
                // The largest block is in the highest non-empty list, so scan that list. Lists of
                // the top class are short.
                let mut best = 0;
                let mut b = self.head(fl, sl).load(Relaxed);
                let mut steps = 0;
                while b != 0 && steps < 64 {
                    match self.block(b) {
                        Ok((s, true)) => best = best.max(s),
                        _ => break,
                    }
                    b = self.header(b).map_or(0, |h| h.next_or_count.load(Relaxed));
                    steps += 1;
                }
                best
            }
        };
        Stats {
            free_bytes: self.ctl.free_bytes.load(Relaxed),
            free_blocks: self.ctl.free_blocks.load(Relaxed),
            used_blocks: self.ctl.used_blocks.load(Relaxed),
            largest_free: largest,
        }
    }

    /// Walks everything and checks every invariant (tests and the monitor's deep check).
    #[cfg(any(test, feature = "testing"))]
    pub fn check(&self) -> Result<(), String> {
        let (mut off, mut prev, mut prev_free) = (self.start, 0u64, false);
        let (mut free_bytes, mut free_blocks, mut used) = (0, 0, 0);
        let mut free_set = std::collections::HashSet::new();
        while off < self.end {
            let (size, free) = self.block(off).map_err(|e| e.to_string())?;
            if self.header(off).map_or(u64::MAX, |h| h.prev_block.load(Relaxed)) != prev {
                return Err(format!("block {off}: prev link is not {prev}"));
            }
            if free && prev_free {
                return Err(format!("block {off}: two neighbouring free blocks"));
            }
            if free {
                free_bytes += size;
                free_blocks += 1;
                free_set.insert(off);
            } else {
                used += 1;
            }
            prev = off;
            prev_free = free;
            off += size;
        }
        if off != self.end {
            return Err(format!("chain ends at {off}, heap at {}", self.end));
        }
        let mut listed = 0;
        for fl in 0..FL_COUNT {
            for sl in 0..SL {
                let mut b = self.head(fl, sl).load(Relaxed);
                let bit = self.ctl.sl_maps[fl].load(Relaxed) >> sl & 1 == 1;
                if bit != (b != 0) {
                    return Err(format!("bitmap of class ({fl},{sl}) disagrees with its list"));
                }
                let mut back = 0;
                while b != 0 {
                    if !free_set.remove(&b) {
                        return Err(format!("list ({fl},{sl}) holds {b}, not a free block (or twice)"));
                    }
                    let (size, _) = self.block(b).map_err(|e| e.to_string())?;
                    if mapping(size) != (fl, sl) || self.header(b).map_or(1, |h| h.prev_or_delta.load(Relaxed)) != back
                    {
                        return Err(format!("block {b} in the wrong list or with a bad back link"));
                    }
                    listed += 1;
                    back = b;
                    b = self.header(b).map_or(0, |h| h.next_or_count.load(Relaxed));
                }
            }
        }
        if !free_set.is_empty() || listed != free_blocks {
            return Err(format!("{} free blocks are in no list", free_set.len()));
        }
        let s = self.stats();
        if (s.free_bytes, s.free_blocks, s.used_blocks) != (free_bytes, free_blocks, used) {
            return Err(format!("stats {s:?} but counted free {free_bytes} B in {free_blocks}, used {used}"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn heap(words: usize) -> Vec<AtomicU64> {
        (0..words).map(|_| AtomicU64::new(0)).collect()
    }

    const CTL: usize = 0;
    fn start() -> u64 {
        round_up((CONTROL_WORDS * 8) as u64, 64).unwrap()
    }

    #[test]
    fn classes_are_monotonic_and_search_rounds_up() {
        // Smallest size of each class, found in one ascending sweep.
        let mut class_min = std::collections::HashMap::new();
        let mut last = (0, 0);
        for size in (MIN_BLOCK..1 << 21).step_by(16) {
            let m = mapping(size);
            assert!(m >= last, "mapping not monotonic at {size}");
            last = m;
            class_min.entry(m).or_insert(size);
        }
        for size in (MIN_BLOCK..1 << 20).step_by(16) {
            // Every block of the class searched for `size` is at least `size`.
            let min_of_class = class_min[&mapping_search(size)];
            assert!(min_of_class >= size, "class searched for {size} holds {min_of_class}");
        }
    }

    #[test]
    fn stats_read_while_the_maps_disagree_do_not_panic() {
        let w = heap(1 << 16);
        let t = Tlsf::new(&w, CTL, start(), (w.len() * 8) as u64);
        t.format();
        let free = t.stats().free_bytes;
        // A reader without the lock can see another process's change halfway through. It may find
        // a first level marked non-empty whose second-level map is already empty, or bits beyond
        // the classes.
        let fl = 63 - t.ctl.fl_map.load(Relaxed).leading_zeros() as usize;
        t.ctl.sl_maps[fl].store(0, Relaxed);
        assert_eq!(t.stats().largest_free, 0);
        t.ctl.fl_map.store(u64::MAX, Relaxed);
        t.ctl.sl_maps[FL_COUNT - 1].store(u64::MAX, Relaxed);
        assert_eq!(t.stats().free_bytes, free, "the counters are read as they are");
    }

    #[test]
    fn alloc_free_round_trip_restores_one_block() {
        let w = heap(1 << 16);
        let t = Tlsf::new(&w, CTL, start(), (w.len() * 8) as u64);
        t.format();
        let initial = t.stats();
        assert_eq!(initial.free_blocks, 1);
        let a = t.alloc(100, 16, 7).unwrap().unwrap();
        let b = t.alloc(5000, 4096, 7).unwrap().unwrap();
        assert_eq!((b.offset + u64::from(b.delta)) % 4096, 0);
        assert_eq!(t.refcount_word(a.offset).unwrap().load(Relaxed), (7 << 32) | 1);
        t.check().unwrap();
        t.free(a.offset).unwrap();
        t.check().unwrap();
        assert!(t.free(a.offset).is_err(), "double free is detected");
        t.free(b.offset).unwrap();
        t.check().unwrap();
        assert_eq!(t.stats(), initial);
    }

    #[test]
    fn out_of_memory_and_bad_offsets() {
        let w = heap(4096);
        let t = Tlsf::new(&w, CTL, start(), (w.len() * 8) as u64);
        t.format();
        assert_eq!(t.alloc(t.capacity() + 1, 16, 1).unwrap(), None);
        let all = t.alloc(t.capacity(), 16, 1).unwrap().unwrap();
        assert_eq!(t.alloc(1, 16, 1).unwrap(), None);
        assert!(t.free(all.offset + 16).is_err());
        assert!(t.free(3).is_err());
        assert!(t.free(u64::MAX - 7).is_err());
        t.free(all.offset).unwrap();
        t.check().unwrap();
    }

    /// Issue 17, item 8: sizes close to `u64::MAX` used to wrap to a 48-byte block, or to panic.
    #[test]
    fn i08_sizes_that_overflow_are_refused_not_wrapped() {
        for size in [u64::MAX, u64::MAX - 15, u64::MAX - HDR] {
            for align in [0, ALIGN, MAX_ALIGN] {
                assert_eq!(Tlsf::block_size_for(size, align), None, "size {size}, alignment {align}");
            }
        }
        assert_eq!(Tlsf::block_size_for(u64::MAX - MAX_ALIGN, MAX_ALIGN), None, "the alignment's slack overflows");
        let w = heap(4096);
        let t = Tlsf::new(&w, CTL, start(), (w.len() * 8) as u64);
        t.format();
        for size in [u64::MAX, u64::MAX - 40, u64::MAX / 2] {
            assert_eq!(t.alloc(size, 16, 1).unwrap(), None, "{size}");
        }
        let a = t.alloc(1000, 16, 1).unwrap().unwrap();
        assert_eq!(t.shrink(a.offset, u64::MAX).unwrap(), a.size, "a size to keep that overflows changes nothing");
        t.check().unwrap();
        t.free(a.offset).unwrap();
        t.check().unwrap();
    }

    #[test]
    fn shrink_returns_the_tail() {
        let w = heap(1 << 14);
        let t = Tlsf::new(&w, CTL, start(), (w.len() * 8) as u64);
        t.format();
        let free0 = t.stats().free_bytes;
        let a = t.alloc(10_000, 16, 1).unwrap().unwrap();
        let kept = t.shrink(a.offset, HDR + 100).unwrap();
        assert_eq!(kept, round_up(HDR + 100, 16).unwrap());
        t.check().unwrap();
        assert_eq!(t.stats().free_bytes, free0 - kept);
        t.free(a.offset).unwrap();
        assert_eq!(t.stats().free_bytes, free0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Alloc(u64, u32),
        Free(usize),
        Recover,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (prop_oneof![1u64..64, 64u64..4096, 4096u64..200_000], 0u32..4).prop_map(|(s, a)| Op::Alloc(s, a)),
            4 => any::<usize>().prop_map(Op::Free),
            1 => Just(Op::Recover),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Random sequences of alloc, free and recovery. Live blocks never overlap, the invariants
        /// hold, and freeing everything restores the initial state.
        #[test]
        fn random_sequences_keep_invariants(ops in prop::collection::vec(op(), 1..200)) {
            let w = heap(1 << 17);
            let t = Tlsf::new(&w, CTL, start(), (w.len() * 8) as u64);
            t.format();
            let initial = t.stats();
            let mut live: Vec<(u64, u64, u64)> = Vec::new(); // (data start, data end, block)
            for op in ops {
                match op {
                    Op::Alloc(size, a) => {
                        let align = 16u64 << (a * 2);
                        if let Some(b) = t.alloc(size, align, 1).unwrap() {
                            let data = b.offset + u64::from(b.delta);
                            prop_assert_eq!(data % align, 0);
                            prop_assert!(data + size <= b.offset + b.size);
                            for &(s, e, _) in &live {
                                prop_assert!(data + size <= s || data >= e, "overlap");
                            }
                            live.push((data, data + size, b.offset));
                        }
                    }
                    Op::Free(i) if !live.is_empty() => {
                        let (_, _, blk) = live.swap_remove(i % live.len());
                        t.free(blk).unwrap();
                    }
                    Op::Free(_) => {}
                    Op::Recover => { t.recover().unwrap(); }
                }
                t.check().map_err(TestCaseError::fail)?;
            }
            for (_, _, blk) in live {
                t.free(blk).unwrap();
            }
            t.check().map_err(TestCaseError::fail)?;
            prop_assert_eq!(t.stats(), initial);
        }
    }

    /// A free block's list words are damaged, as when a message written past its end reaches the
    /// next block's header. Links are checked before anything is written through them. So the
    /// used block that a damaged link names keeps its words, and the rebuilt lists are sound
    /// again. Before the fix, taking the free block off its list wrote into the used block's
    /// header.
    #[test]
    fn a_damaged_free_list_link_writes_into_no_used_block() {
        for link in [Link::Next, Link::Prev] {
            let w = heap(1 << 14);
            let t = Tlsf::new(&w, CTL, start(), (w.len() * 8) as u64);
            t.format();
            let a = t.alloc(1000, 16, 1).unwrap().unwrap();
            let b = t.alloc(1000, 16, 1).unwrap().unwrap();
            let c = t.alloc(1000, 16, 1).unwrap().unwrap();
            let _d = t.alloc(1000, 16, 1).unwrap().unwrap();
            t.free(b.offset).unwrap();
            // Words 1 to 3 of C: its size, its count, and its delta with the check tag. Word 0, the
            // link to the previous block, is derived data that the heap fixes itself.
            let words_of_c = || {
                let h = t.header(c.offset).unwrap();
                [&h.size_flags, &h.next_or_count, &h.prev_or_delta].map(|w| w.load(Relaxed))
            };
            let before = words_of_c();
            // Damage B's link so that it names C, a used block. Freeing A merges A with B and takes
            // B off its free list.
            link.of(t.header(b.offset).unwrap()).store(c.offset, Relaxed);
            assert!(t.free(a.offset).is_err(), "a damaged link ({link:?}) is refused");
            assert_eq!(words_of_c(), before, "the used block's words are untouched ({link:?})");
            // The free of A was cut short, like a free that a killed process left unfinished.
            // `Tlsf::recover` finishes it.
            t.recover().unwrap();
            t.check().unwrap();
            assert_eq!(words_of_c(), before);
        }
    }

    #[test]
    fn recovery_repairs_an_interrupted_free() {
        let w = heap(1 << 14);
        let t = Tlsf::new(&w, CTL, start(), (w.len() * 8) as u64);
        t.format();
        let a = t.alloc(1000, 16, 1).unwrap().unwrap();
        let b = t.alloc(1000, 16, 1).unwrap().unwrap();
        let _c = t.alloc(1000, 16, 1).unwrap().unwrap();
        t.free(a.offset).unwrap();
        // Simulate a holder killed right after the commit store that frees `b`. Block `b` is
        // flagged free, but it is neither merged with `a` nor in a free list.
        t.commit(b.offset, b.size | FREE);
        assert!(t.check().is_err());
        t.recover().unwrap();
        t.check().unwrap();
        assert_eq!(t.stats().used_blocks, 1);
    }
}
