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
    /// The words that link a page: in a ledger's area (its first page) and in a page (the next).
    pub(super) struct LinkWords {
        /// Block offset + 1 (0: no page), and segment id << 48. Written last.
        pub block: AtomicU64,
        /// The block's slot, and its generation << 32.
        pub check: AtomicU64,
    }
}

shared_layout! {
    /// The header of a page, before its entries.
    struct PageHeader {
        /// [`MAGIC`].
        magic: AtomicU64,
        /// The owner mark of the page's transport, and its liveness slot << 32 (see `tag`).
        tag: AtomicU64,
        /// The link to the next page.
        next: LinkWords,
    }
}
const _: () = assert!(offset_of!(PageHeader, next) == 16 && size_of::<PageHeader>() == PAGE_HEADER * 8);

/// Bytes of a page (user bytes of its block).
pub(crate) const PAGE_BYTES: u64 = 4096;
const PAGE_WORDS: usize = (PAGE_BYTES / 8) as usize;
/// Words of a page before its entries.
const PAGE_HEADER: usize = 4;
/// Entries per page.
pub(super) const PAGE_ENTRIES: u32 = ((PAGE_WORDS - PAGE_HEADER) * 8 / size_of::<Entry>()) as u32;
/// First word of every page.
const MAGIC: u64 = u64::from_le_bytes(*b"FMQLEDGP");
/// Offsets a link can name (48 bits, one value taken by "none").
const OFFSET_BITS: u64 = (1 << 48) - 1;

/// Where a page is: its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Link {
    pub segment: u16,
    pub offset: u64,
    pub slot: u32,
    pub generation: u32,
}

impl Link {
    /// The link held in `w`; `None`: none.
    pub(super) fn read(w: &LinkWords) -> Option<Link> {
        let w0 = w.block.load(Ordering::Acquire);
        let offset = (w0 & OFFSET_BITS).checked_sub(1)?;
        let w1 = w.check.load(Ordering::Relaxed);
        Some(Link { segment: (w0 >> 48) as u16, offset, slot: w1 as u32, generation: (w1 >> 32) as u32 })
    }

    /// Publishes this link in `w`: its second word first, so a reader that sees the first (with
    /// Acquire) sees the second and the page it names, initialised before.
    pub(super) fn write(self, w: &LinkWords) {
        w.check.store(u64::from(self.slot) | u64::from(self.generation) << 32, Ordering::Relaxed);
        w.block.store((self.offset + 1) | u64::from(self.segment) << 48, Ordering::Release);
    }

    /// No page is linked from `w` any more.
    pub(super) fn clear(w: &LinkWords) {
        w.block.store(0, Ordering::Release);
        w.check.store(0, Ordering::Relaxed);
    }
}

/// The words of a page's entries.
pub(super) fn entries(page: &[AtomicU64]) -> &[AtomicU64] {
    &page[PAGE_HEADER..PAGE_HEADER + size_of::<Entry>() / 8 * PAGE_ENTRIES as usize]
}

/// The header of a page (whole words of a page's block: checked when it was opened or made).
fn header(page: &[AtomicU64]) -> &PageHeader {
    view(page).expect("a page's header")
}

/// The words of a page that link the next.
pub(super) fn next(page: &[AtomicU64]) -> &LinkWords {
    &header(page).next
}

/// The tag of the pages of slot `slot`'s transport of owner mark `owner`.
fn tag(owner: u32, slot: usize) -> u64 {
    u64::from(owner) | (slot as u64) << 32
}

/// The page `link` names, checked: a used block of a mapped segment in the use the link names,
/// held alone by the transport of owner mark `owner` (in slot `slot`), with a page's header.
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

/// Calls `each` with every page linked from `head` (the link words of slot `slot`'s area, whose
/// transport has owner mark `owner`), in order; stops at the first link that does not check.
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

/// A new page in `seg` for the ledger of slot `slot` (owner mark `owner`), empty, not linked yet;
/// held alone by that transport. Tried again once after the depot went back to the heap.
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
        // Not where a link can name it (an unaligned block would not be asked for like this).
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

/// The words of one of our own pages (checked when it was made).
pub(super) fn words(seg: &Segment, page: Link) -> Option<&[AtomicU64]> {
    seg.block_words(page.offset, HDR as u32, PAGE_BYTES)
}

/// Frees our page `page` (unlinked first by the caller).
pub(super) fn free(seg: &Segment, owner: u32, page: Link) {
    // No reference left, as any block freed: a heap walk meanwhile sees no holder.
    seg.rc(page.offset, page.slot).store(u64::from(owner) << 32, Ordering::Release);
    if let Err(e) = seg.free(&[(page.offset, page.slot)]) {
        log::error!("could not free a ledger page: {e}");
    }
}
