//! Per-process block caches, which keep the segment lock off the path of most messages.
//!
//! A [`Cache`] belongs to one transport and holds two kinds of cache:
//!
//! - *Magazines* are small stacks of ready blocks of one size class. A refill takes many blocks
//!   from the segment under one lock. A sender that allocates the same size again and again (the
//!   common case) therefore takes the segment lock once per refill, not once per message. A block
//!   that this process frees in its own segment can go back to its magazine without the segment
//!   lock.
//! - *Deferred frees* are blocks that this process released, kept in a short list. The list is
//!   freed in one locked batch when it is long, when it holds many bytes, or when the process is
//!   about to wait anyway (a receive or a poll that finds nothing). So a receiver does not take
//!   the segment lock per message either.
//!
//! While some process waits for memory, no block goes into a magazine, and the list is freed as
//! soon as it holds a magazine's worth of blocks.
//!
//! Cached blocks count as used in the segment. Their count word names this transport as their
//! owner, with no reference, so the sweep of the dead frees them if the process dies.
//! [`Cache::drain`] returns them all: when an allocation fails, when the transport is flushed, and
//! when it ends.

use crate::segment::depot::{MAGAZINE_SHARE, REFILL_BLOCKS};
use crate::segment::tlsf::{Block, ALIGN, HDR, MIN_BLOCK};
use crate::segment::Segment;

const MAX_MAGAZINES: usize = 8;
const MAGAZINE_BLOCKS: usize = 64;
const DEFERRED_BLOCKS: usize = 64;
/// Deferred frees are flushed once their bytes reach 1/`DEFERRED_SHARE` of the segment, or once
/// they hold [`DEFERRED_BLOCKS`] blocks. Only blocks larger than a few MiB reach the byte limit
/// first. With this limit, a receiver of 16 MiB messages in a 2 GiB segment takes the segment lock
/// once per 15 messages instead of once per 4. (Once per 4 cost a fifth of the stream's rate.) The
/// sender's next refill then takes those 15 blocks from the depot at once. A process that waits for
/// memory, including one about to report out of memory, gets blocks back a magazine at a time (see
/// [`Cache::release`]). A receiver gives back everything when it finds nothing to receive.
const DEFERRED_SHARE: u64 = 8;

/// How many blocks the first refill of a size class takes. Each later refill of the class takes
/// twice as many, up to the class's cap. A pattern that cycles through more classes than there are
/// magazines therefore evicts and refills only a few blocks per miss, while a steady stream soon
/// refills in bulk.
const FIRST_REFILL: usize = 4;

struct Magazine {
    need: u64,
    blocks: Vec<Block>,
    refills: u32,
}

/// A block to free: segment, offset, slot.
pub(crate) type Freed = (u16, u64, u32);

/// The caches of one transport.
pub(crate) struct Cache {
    magazines: Vec<Magazine>,
    deferred: Vec<Freed>,
    deferred_bytes: u64,
    magazine_bytes: u64,
    deferred_limit: u64,
}

/// What to do with a block whose last reference this process just dropped.
pub(crate) enum Released {
    /// Kept in a magazine (nothing else to do).
    Cached,
    /// Queued in the deferred list; the caller should flush when the value is `true`.
    Deferred(bool),
}

impl Cache {
    /// Creates caches sized for a segment of `segment_size` bytes. The sizes ensure that what one
    /// process keeps cached can never starve the other processes of a small segment.
    pub(crate) fn new(segment_size: u64) -> Cache {
        Cache {
            magazines: Vec::new(),
            deferred: Vec::new(),
            deferred_bytes: 0,
            magazine_bytes: segment_size / MAGAZINE_SHARE,
            deferred_limit: segment_size / DEFERRED_SHARE,
        }
    }

    /// How many blocks of class `need` a refill takes, or `None` if the class is not cached at all.
    pub(crate) fn refill_count(&self, need: u64, align: u64) -> Option<usize> {
        let cap = ((self.magazine_bytes / need) as usize).min(REFILL_BLOCKS);
        if align > ALIGN || cap < 2 {
            return None;
        }
        let refills = self.magazines.iter().find(|m| m.need == need).map_or(0, |m| m.refills);
        Some((FIRST_REFILL << refills.min(8)).min(cap))
    }

    /// A cached block of class `need`, if any.
    pub(crate) fn take(&mut self, need: u64) -> Option<Block> {
        let i = self.magazines.iter().position(|m| m.need == need)?;
        let m = &mut self.magazines[i];
        let b = m.blocks.pop();
        if i > 0 {
            self.magazines.swap(i, i - 1); // keep the busiest classes in front
        }
        b
    }

    /// Stores refilled blocks of class `need`, creating the class's magazine if needed. When all
    /// magazine slots are taken, `Cache::stock` evicts the least recently used magazine and returns
    /// its blocks for freeing.
    pub(crate) fn stock(&mut self, need: u64, blocks: impl IntoIterator<Item = Block>) -> Vec<Block> {
        let mut evicted = Vec::new();
        let i = match self.magazines.iter().position(|m| m.need == need) {
            Some(i) => i,
            None => {
                if self.magazines.len() == MAX_MAGAZINES {
                    evicted = self.magazines.pop().map(|m| m.blocks).unwrap_or_default();
                }
                self.magazines.push(Magazine { need, blocks: Vec::new(), refills: 0 });
                self.magazines.len() - 1
            }
        };
        let m = &mut self.magazines[i];
        m.refills = m.refills.saturating_add(1);
        m.blocks.extend(blocks);
        evicted
    }

    /// Files a block that this process released, that is, a block whose reference count reached 0.
    /// `own` says whether the block lies in the segment this process allocates from.
    ///
    /// `wanted` says that some process waits for memory. Then no block is kept in a magazine, and
    /// the deferred frees go back as soon as they make up a magazine of this block's size.
    #[inline]
    pub(crate) fn release(&mut self, seg: &Segment, block: Block, own: bool, wanted: bool) -> Released {
        if own && !wanted && u64::from(block.delta) == HDR {
            if let Some(m) = self
                .magazines
                .iter_mut()
                .find(|m| block.size >= m.need && block.size < m.need + MIN_BLOCK && m.blocks.len() < MAGAZINE_BLOCKS)
            {
                m.blocks.push(block);
                return Released::Cached;
            }
        }
        self.deferred_bytes = self.deferred_bytes.saturating_add(block.size); // a size word another process damaged
        self.deferred.push((seg.id(), block.offset, block.slot));
        // When a process waits for memory, give blocks back soon. When blocks of one size stream
        // through, give back a whole magazine at a time: the waiter's next refill then takes that
        // magazine from the depot as it is.
        let soon = wanted && self.deferred.len() >= seg.magazine_blocks(block.size).max(1);
        Released::Deferred(soon || self.deferred.len() >= DEFERRED_BLOCKS || self.deferred_bytes >= self.deferred_limit)
    }

    /// Takes the deferred frees, so that the caller can free them outside the cache lock.
    pub(crate) fn take_deferred(&mut self) -> Vec<Freed> {
        self.deferred_bytes = 0;
        if self.deferred.is_empty() {
            return Vec::new();
        }
        // The new `Vec` is sized for a whole batch. An empty `Vec` grew five times on the way to a
        // full batch.
        std::mem::replace(&mut self.deferred, Vec::with_capacity(DEFERRED_BLOCKS))
    }

    /// Whether any deferred frees are waiting.
    pub(crate) fn has_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// Takes everything cached: the deferred frees, and the magazine blocks, which lie in segment
    /// `own`.
    pub(crate) fn drain(&mut self, own: u16) -> Vec<Freed> {
        let mut all = self.take_deferred();
        for m in self.magazines.drain(..) {
            all.extend(m.blocks.into_iter().map(|b| (own, b.offset, b.slot)));
        }
        all
    }
}

/// Frees blocks grouped by segment, one lock per segment.
pub(crate) fn free_all<'a>(mut blocks: Vec<Freed>, segment: impl Fn(u16) -> Option<&'a Segment>) {
    // Usually all blocks lie in one segment, and then grouping needs no sort. (The sort showed in a
    // receiver's profile.)
    if blocks.windows(2).any(|w| w[0].0 != w[1].0) {
        blocks.sort_unstable_by_key(|b| b.0);
    }
    for group in blocks.chunk_by(|a, b| a.0 == b.0) {
        let id = group[0].0;
        let offsets: Vec<(u64, u32)> = group.iter().map(|&(_, o, slot)| (o, slot)).collect();
        match segment(id).map(|s| s.free(&offsets)) {
            Some(Ok(())) => {}
            Some(Err(e)) => log::error!("could not free {} blocks of segment {id}: {e}", offsets.len()),
            None => log::error!("could not free {} blocks of unmapped segment {id}", offsets.len()),
        }
    }
}
