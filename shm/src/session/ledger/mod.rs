//! Ledgers: each transport's list of the references it holds to shared blocks (published
//! messages, copies, lanes, the count blocks of region pieces).
//!
//! # Why ledgers exist
//!
//! A block held by one transport names that transport in its count word. So the sweep of the dead
//! can free what a killed process held alone. A shared block (count above 1) names nobody. Before
//! ledgers, what a killed subscriber held of a published message stayed allocated until the
//! session ended.
//!
//! # What a ledger is
//!
//! Each transport lists the shared references it holds in its *ledger*. The ledger starts in an
//! area of the management segment that belongs to the transport's liveness slot. When the area's
//! [`ENTRIES`] entries are used, the ledger goes on in *overflow pages*, as many as it needs. The
//! pages are blocks of the transport's own segment (see `overflow`). Only the transport writes its
//! ledger while it lives ([`Ledger`]).
//!
//! The transport writes an entry after it takes the reference, and clears the entry before it
//! drops the reference. A process killed in between leaves a reference that nobody drops: the
//! block stays, as it did before ledgers. No reference is ever dropped twice.
//!
//! The ledger has no limit but the segment's memory. When no page can be had for one more entry,
//! the reference is refused where it can be: a copy or a publish fails with
//! [`ShmError::LedgerFull`]. Where it cannot be refused (a message received), the missing entry is
//! logged. A transport that leaves frees its pages itself. Before, references past the area's
//! 1023 entries were not listed (one warning), and a killed holder of 3000 messages and a copy of
//! each left 2489 blocks for the session's life.
//!
//! # The sweep of a dead transport's ledger
//!
//! The sweep that counts a dead transport out takes the entries of its ledger, before the slot
//! can be claimed again. One sweeper at a time does this: the one that took the sweep under the
//! session lock (see `find_dead`). The sweep drops each listed reference, and frees the block when
//! it was the last reference. The pages are freed with the other blocks that the dead transport
//! held alone.
//!
//! Everything read from another process's ledger is checked:
//!
//! - An entry drops something only if it names a live block marked shared.
//! - A link is followed only if it names a page of that ledger: a block held alone by the
//!   ledger's transport, with the page's header. Otherwise the walk ends there, and it is logged.
//!
//! A failed check leaves some references in place. It never causes a crash or a read out of
//! bounds.
//!
//! # Layout
//!
//! | words of a slot's ledger (`ledgers` of the management layout, from 1 MiB) | content |
//! |---|---|
//! | 0..4 | entries of the area used so far (a high-water mark), 0, the link to the first overflow page (2 words, see `overflow`) |
//! | 4.. | [`ENTRIES`] entries of 2 words: block offset + 1 (0: free) \| segment id << 48, slot \| data distance << 32 \| 1 << 63 for a lane's block, 1 << 62 for a region piece's count block |
//!
//! Overflow pages hold entries of the same form.
//!
//! # Lanes and region pieces
//!
//! A lane's block (see `lanes`) is listed by both its writer and its reader. The sweep drops the
//! reference of a dead side, with one exception: a dead writer's reference to a lane that nobody
//! has claimed yet. The sweep leaves that reference to the lane's first claimant, just as a
//! writer that closes before any claim does. Whoever drops the last reference releases the
//! messages the lane still holds: a sweep, or a live side that lets go of its lane.
//!
//! A region piece's count block (see `region::count`) is listed by every holder of the piece. The
//! sweep that drops the last reference acknowledges the piece to the region's controller.
//!
//! # Submodules
//!
//! - This module: the area in the management segment, and the code that reads it.
//! - `overflow`: the overflow pages.
//! - `sweep`: the sweep of a dead transport's ledger.
//! - `writer`: the live transport's side ([`Ledger`]).
//! - `inspect`: reading the ledgers from outside their transports, for the tests and the
//!   inspection methods of `Transport` (cargo feature `testing`).
//!
//! [`ShmError::LedgerFull`]: crate::ShmError::LedgerFull

mod overflow;
mod sweep;
#[cfg(test)]
mod tests;
mod writer;

#[cfg(any(test, feature = "testing"))]
mod inspect;
#[cfg(test)]
pub(crate) use inspect::listed_blocks;
#[cfg(any(test, feature = "testing"))]
pub(crate) use inspect::{damage_overflow_link, held_by_live, overflow_pages};
#[cfg(any(test, feature = "testing"))]
pub(crate) use overflow::PAGE_BYTES;
pub(crate) use sweep::{release, Pieces, Sweeper};

/// Size in bytes of a region piece's count block (see `region::count`). A ledger lists such a
/// block as a [`Referent::Piece`].
pub(crate) const PIECE_COUNT_BYTES: u64 = 32;
pub(crate) use writer::Ledger;

use crate::session::layout::LEDGER_WORDS;
use crate::session::management::Management;
use crate::sys::layout::{shared_layout, view};
use overflow::Link;
use std::mem::offset_of;
use std::sync::atomic::{AtomicU64, Ordering};

shared_layout! {
    /// One ledger entry: a shared reference that the ledger's transport holds (see [`Listed`]).
    pub(crate) struct Entry {
        /// The block's offset + 1 (0 means a free entry), ORed with its segment id << 48. This
        /// word is written last (see `Listed::encode`).
        pub block: AtomicU64,
        /// The block's slot, ORed with its data distance << 32. The distance may carry
        /// [`LANE_BIT`] or [`PIECE_BIT`].
        pub place: AtomicU64,
    }
}
const _: () = assert!(offset_of!(Entry, place) == 8 && size_of::<Entry>() == 16);
/// Words of an entry.
const ENTRY_WORDS: usize = size_of::<Entry>() / 8;

/// Bit set in an entry's data distance when the block is a lane's block. Real data distances
/// stay far below this bit.
const LANE_BIT: u32 = 1 << 31;
/// Bit set in an entry's data distance when the block is a region piece's count block.
const PIECE_BIT: u32 = 1 << 30;

/// The kind of block that an entry lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Referent {
    /// A message's block.
    Message,
    /// A lane's block (see `lanes`).
    Lane,
    /// A region piece's count block (see `region::count`).
    Piece,
}
/// An entry index that means "not listed".
pub(crate) const NONE: u32 = u32::MAX;
/// Number of header words in an area, before its entries.
const HEADER: usize = 4;
/// Number of entries in a slot's own area. Further entries go to overflow pages.
const ENTRIES: u32 = ((LEDGER_WORDS - HEADER) / ENTRY_WORDS) as u32;

shared_layout! {
    /// A slot's ledger area: one element of `ledgers` in the management layout. The layout table
    /// in the module doc shows its words.
    struct Area {
        /// Number of the area's entries used so far (a high-water mark).
        used: AtomicU64,
        _zero: AtomicU64,
        /// The link to the first overflow page.
        head: overflow::LinkWords,
        /// The entries.
        entries: [Entry; ENTRIES as usize],
    }
}
const _: () = assert!(offset_of!(Area, entries) == HEADER * 8 && size_of::<Area>() == LEDGER_WORDS * 8);

/// The ledger area of liveness slot `slot`.
fn area(m: &Management, slot: usize) -> &Area {
    view(&m.layout().ledgers[slot]).expect("a ledger area's words")
}

/// The words of an area that link its first overflow page.
fn head(area: &Area) -> &overflow::LinkWords {
    &area.head
}

/// Entry `i` of `entries`, the entry words of an area or of a page.
fn entry(entries: &[AtomicU64], i: u32) -> &Entry {
    let at = i as usize * ENTRY_WORDS;
    view(&entries[at..at + ENTRY_WORDS]).expect("an entry's words")
}

/// The entries of `area` used so far.
fn used(area: &Area) -> impl Iterator<Item = &Entry> {
    let n = (area.used.load(Ordering::Acquire) as u32).min(ENTRIES);
    area.entries[..n as usize].iter()
}

/// All the entries of a page, free ones included. A free entry is 0, so `Listed::decode` returns
/// `None` for it.
fn on_page(page: &[AtomicU64]) -> impl Iterator<Item = &Entry> {
    let entries = overflow::entries(page);
    (0..overflow::PAGE_ENTRIES).map(move |i| entry(entries, i))
}

/// A shared reference that a ledger entry lists. The sweep reads these from a dead transport's
/// ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Listed {
    segment: u16,
    offset: u64,
    delta: u32,
    slot: u32,
    what: Referent,
}

impl Listed {
    /// Decodes the entry whose first word is `w0` and whose second word is `w1`. The caller has
    /// read or taken `w0`. Returns `None` for a free entry.
    fn decode(w0: u64, w1: u64) -> Option<Listed> {
        let offset = (w0 & ((1 << 48) - 1)).checked_sub(1)?;
        let distance = (w1 >> 32) as u32;
        let what = match (distance & LANE_BIT != 0, distance & PIECE_BIT != 0) {
            (false, false) => Referent::Message,
            (true, false) => Referent::Lane,
            (false, true) => Referent::Piece,
            // No writer sets both bits, so the entry is damaged. It drops nothing, since no block
            // has such a data distance.
            (true, true) => return None,
        };
        Some(Listed {
            segment: (w0 >> 48) as u16,
            offset,
            delta: distance & !(LANE_BIT | PIECE_BIT),
            slot: w1 as u32,
            what,
        })
    }

    /// Writes this reference into the entry `e`, which is free. The first word is written last,
    /// so a reader that sees the first word also sees the second.
    fn encode(self, e: &Entry) {
        let bit = match self.what {
            Referent::Message => 0,
            Referent::Lane => LANE_BIT,
            Referent::Piece => PIECE_BIT,
        };
        let distance = (self.delta & !(LANE_BIT | PIECE_BIT)) | bit;
        e.place.store(u64::from(self.slot) | u64::from(distance) << 32, Ordering::Relaxed);
        e.block.store((self.offset + 1) | u64::from(self.segment) << 48, Ordering::Release);
    }

    /// Reads the entry `e` without taking it: the entry stays as it is.
    fn read(e: &Entry) -> Option<Listed> {
        Listed::decode(e.block.load(Ordering::Acquire), e.place.load(Ordering::Relaxed))
    }
}

/// Empties the ledger of slot `slot` for a new transport that claims the slot. Whatever a former
/// holder of the slot left in the ledger is forgotten. A former holder that died was swept: its
/// sweep already took its entries and freed its pages. A former holder that left freed its pages
/// itself. The caller holds the session lock.
pub(crate) fn reset(m: &Management, slot: usize) {
    let a = area(m, slot);
    used(a).for_each(|e| e.block.store(0, Ordering::Relaxed));
    Link::clear(head(a));
    a.used.store(0, Ordering::Release);
}

/// Reads, without taking them, the references that the ledger of slot `slot` lists. `owner` is
/// the owner mark of the ledger's transport. The overflow pages are looked up in the segments that
/// `by` maps. A link that fails its checks ends the list, and the failure is logged.
fn listed(by: &(impl Sweeper + ?Sized), m: &Management, slot: usize, owner: u32) -> Vec<Listed> {
    let a = area(m, slot);
    let mut out: Vec<Listed> = used(a).filter_map(Listed::read).collect();
    let walked = overflow::walk(by, head(a), owner, slot, |page| out.extend(on_page(page).filter_map(Listed::read)));
    if let Err(e) = walked {
        log::error!("{e}: the references listed past it are not seen");
    }
    out
}

/// Whether the ledger of slot `slot` lists a reference to a lane's block. `owner` is the owner
/// mark of the ledger's transport. If the ledger lists one, its transport may hold the lane's last
/// reference (see `Sweeper::release_lane_contents`). The overflow pages are looked up in the
/// segments that `by` maps.
pub(crate) fn lists_a_lane(by: &(impl Sweeper + ?Sized), m: &Management, slot: usize, owner: u32) -> bool {
    listed(by, m, slot, owner).iter().any(|l| l.what == Referent::Lane)
}
