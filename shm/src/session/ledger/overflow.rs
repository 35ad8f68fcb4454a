//! Overflow pages of a ledger: where a transport lists the shared references its liveness slot's
//! area has no room for.
//!
//! A page is a block of the transport's own segment, held alone by it (its owner mark, count 1),
//! so the sweep that counts the transport out frees its pages with the other blocks it held alone
//! (`Segment::reclaim_dead`), after the references they list were dropped. The slot's area links
//! the first page, each page the next; a transport only appends pages, and frees them as it leaves.
//!
//! | words of a page (4 KiB) | content |
//! |---|---|
//! | 0 | [`MAGIC`] |
//! | 1 | owner mark of the transport \| its liveness slot << 32 |
//! | 2..4 | the link to the next page (0: none) |
//! | 4.. | [`PAGE_ENTRIES`] entries, as the area's |
//!
//! A link is 2 words: block offset + 1 (0: none) \| segment id << 48, then slot \| generation << 32
//! (see `slots`). Whoever follows one checks it first: a used block of a mapped segment in the use
//! the link names, held alone by the ledger's transport, with this page header. A link that fails
//! ends the walk ([`LedgerError`]); so does one that leads back to a page already seen.

use super::{Entry, Sweeper};
use crate::error::{LedgerError, ShmError};
use crate::segment::tlsf::HDR;
use crate::segment::Segment;
use crate::sys::layout::{shared_layout, view};
use std::mem::offset_of;
use std::sync::atomic::{AtomicU64, Ordering};

shared_layout! {
    /// The two words that link a page. A ledger's area holds a link to its first page, and each
    /// page holds a link to the next page.
    pub(super) struct LinkWords {
        /// The block's offset + 1 (0 means no page), ORed with its segment id << 48. This word
        /// is written last (see `Link::write`).
        pub block: AtomicU64,
        /// The block's slot, ORed with its generation << 32.
        pub check: AtomicU64,
    }
}

shared_layout! {
    /// The header of a page, before its entries.
    struct PageHeader {
        /// [`MAGIC`].
        magic: AtomicU64,
        /// The owner mark of the page's transport, ORed with the transport's liveness slot << 32
        /// (see `tag`).
        tag: AtomicU64,
        /// The link to the next page.
        next: LinkWords,
    }
}
const _: () = assert!(offset_of!(PageHeader, next) == 16 && size_of::<PageHeader>() == PAGE_HEADER * 8);

/// Size of a page in bytes: the user bytes of its block.
pub(crate) const PAGE_BYTES: u64 = 4096;
const PAGE_WORDS: usize = (PAGE_BYTES / 8) as usize;
/// Number of header words in a page, before its entries.
const PAGE_HEADER: usize = 4;
/// Entries per page.
pub(super) const PAGE_ENTRIES: u32 = ((PAGE_WORDS - PAGE_HEADER) * 8 / size_of::<Entry>()) as u32;
/// First word of every page.
const MAGIC: u64 = u64::from_le_bytes(*b"FMQLEDGP");
/// Mask of the 48 bits of a link that hold the offset + 1. The value 0 means "none", so a link
/// can name only the offsets below `OFFSET_BITS`.
const OFFSET_BITS: u64 = (1 << 48) - 1;

/// Where a page is: the block that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Link {
    pub segment: u16,
    pub offset: u64,
    pub slot: u32,
    pub generation: u32,
}

impl Link {
    /// Reads the link held in `w`. Returns `None` when `w` links no page.
    pub(super) fn read(w: &LinkWords) -> Option<Link> {
        let w0 = w.block.load(Ordering::Acquire);
        let offset = (w0 & OFFSET_BITS).checked_sub(1)?;
        let w1 = w.check.load(Ordering::Relaxed);
        Some(Link { segment: (w0 >> 48) as u16, offset, slot: w1 as u32, generation: (w1 >> 32) as u32 })
    }

    /// Publishes this link in `w`. The second word is written first. So a reader that sees the
    /// first word (with Acquire) also sees the second word, and the page that the link names,
    /// which was initialised before.
    pub(super) fn write(self, w: &LinkWords) {
        w.check.store(u64::from(self.slot) | u64::from(self.generation) << 32, Ordering::Relaxed);
        w.block.store((self.offset + 1) | u64::from(self.segment) << 48, Ordering::Release);
    }

    /// Clears `w`, so that it links no page any more.
    pub(super) fn clear(w: &LinkWords) {
        w.block.store(0, Ordering::Release);
        w.check.store(0, Ordering::Relaxed);
    }
}

/// The words of a page's entries.
pub(super) fn entries(page: &[AtomicU64]) -> &[AtomicU64] {
    &page[PAGE_HEADER..PAGE_HEADER + size_of::<Entry>() / 8 * PAGE_ENTRIES as usize]
}

/// The header of a page. `page` holds the whole words of a page's block, which were checked when
/// the page was opened or made.
fn header(page: &[AtomicU64]) -> &PageHeader {
    view(page).expect("a page's header")
}

/// The words of a page that link the next page.
pub(super) fn next(page: &[AtomicU64]) -> &LinkWords {
    &header(page).next
}

/// The tag of the pages of the transport with owner mark `owner` in liveness slot `slot`.
fn tag(owner: u32, slot: usize) -> u64 {
    u64::from(owner) | (slot as u64) << 32
}

/// Opens the page that `link` names, and checks it. The page must be a used block of a mapped
/// segment, in the use (slot and generation) that the link names. The transport with owner mark
/// `owner` in slot `slot` must hold the block alone. The block must start with a page header of
/// that transport's ledger.
pub(super) fn open(
    by: &(impl Sweeper + ?Sized),
    link: Link,
    owner: u32,
    slot: usize,
) -> Result<&[AtomicU64], LedgerError> {
    let Link { segment, offset, .. } = link;
    let seg = by.segment(segment).ok_or(LedgerError::UnknownSegment { slot, segment })?;
    let refused = |why| LedgerError::NotAPage { slot, segment, offset, why };
    seg.check_use(offset, HDR as u32, PAGE_BYTES, link.slot, link.generation)
        .map_err(|_| refused("not a used block in that use"))?;
    if seg.rc(offset, link.slot).load(Ordering::Acquire) != u64::from(owner) << 32 | 1 {
        return Err(refused("not held alone by the ledger's transport"));
    }
    let words = seg.block_words(offset, HDR as u32, PAGE_BYTES).ok_or(refused("not whole words"))?;
    let h = view::<PageHeader>(words).ok_or(refused("not whole words"))?;
    if h.magic.load(Ordering::Relaxed) != MAGIC || h.tag.load(Ordering::Relaxed) != tag(owner, slot) {
        return Err(refused("no page header of that ledger"));
    }
    Ok(words)
}

/// Calls `each` with every page linked from `head`, in order. `head` holds the link words of the
/// area of slot `slot`, whose transport has owner mark `owner`. The walk stops at the first link
/// that fails its checks.
pub(super) fn walk<'a>(
    by: &'a (impl Sweeper + ?Sized),
    head: &LinkWords,
    owner: u32,
    slot: usize,
    mut each: impl FnMut(&'a [AtomicU64]),
) -> Result<(), LedgerError> {
    let mut seen = std::collections::HashSet::new();
    let mut link = Link::read(head);
    while let Some(l) = link {
        if !seen.insert((l.segment, l.offset)) {
            return Err(LedgerError::Cycle { slot, segment: l.segment, offset: l.offset });
        }
        let page = open(by, l, owner, slot)?;
        each(page);
        link = Link::read(next(page));
    }
    Ok(())
}

/// Makes a new, empty page in `seg` for the ledger of slot `slot`, whose transport has owner mark
/// `owner`. That transport holds the page alone. The page is not linked yet. If the first
/// allocation gets no block, `make` returns the depot's blocks to the heap and tries once more.
pub(super) fn make(seg: &Segment, owner: u32, slot: usize) -> Result<Link, ShmError> {
    let mut out = Vec::with_capacity(1);
    seg.allocate(PAGE_BYTES, 0, owner, 1, &mut out)?;
    if out.is_empty() && seg.drain_depot()? {
        seg.allocate(PAGE_BYTES, 0, owner, 1, &mut out)?;
    }
    let full = || ShmError::LedgerFull { page: PAGE_BYTES, free: seg.stats().free };
    let b = out.pop().ok_or_else(full)?;
    let link = Link { segment: seg.id(), offset: b.offset, slot: b.slot, generation: b.generation };
    let words = match seg.block_words(b.offset, b.delta, PAGE_BYTES) {
        Some(w) if u64::from(b.delta) == HDR && b.offset < OFFSET_BITS => w,
        // A link cannot name this block. (An unaligned request like the one above should not get
        // such a block.)
        _ => {
            free(seg, owner, link);
            return Err(full());
        }
    };
    words[PAGE_HEADER..].iter().for_each(|w| w.store(0, Ordering::Relaxed));
    let h = header(words);
    Link::clear(&h.next);
    h.tag.store(tag(owner, slot), Ordering::Relaxed);
    h.magic.store(MAGIC, Ordering::Relaxed);
    Ok(link)
}

/// The words of one of this transport's own pages. `make` checked them when it made the page.
pub(super) fn words(seg: &Segment, page: Link) -> Option<&[AtomicU64]> {
    seg.block_words(page.offset, HDR as u32, PAGE_BYTES)
}

/// Frees `page`, one of this transport's own pages. The caller unlinks it first.
pub(super) fn free(seg: &Segment, owner: u32, page: Link) {
    // Like any block that is freed, the page first loses its reference (count 0). So a heap
    // walk meanwhile sees no holder.
    seg.rc(page.offset, page.slot).store(u64::from(owner) << 32, Ordering::Release);
    if let Err(e) = seg.free(&[(page.offset, page.slot)]) {
        log::error!("could not free a ledger page: {e}");
    }
}
