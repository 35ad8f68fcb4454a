//! The references a transport holds to shared blocks (published messages, copies).
//!
//! A block held by one transport names it in its count word, so the sweep of the dead frees what a
//! killed process held alone. A shared block (count above 1) names nobody: before, what a killed
//! subscriber held of a published message stayed allocated until the session ended. So each
//! transport lists the shared references it holds in a *ledger*: an area of the management
//! segment that belongs to its liveness slot, and as many *overflow pages* as it needs beyond
//! (blocks of its own segment, see `overflow`). The sweep that counts a dead transport out takes
//! its entries (before the slot can be claimed again; one sweeper at a time, which took the
//! sweep under the session lock: see `find_dead`) and drops each listed reference, freeing the
//! block when it was the last; the pages go with the other blocks the dead transport held alone.
//!
//! An entry is written after the reference is taken and cleared before it is dropped: a process
//! killed in between leaves a reference nobody drops (a block that stays, as before), never one
//! dropped twice. Only the transport writes its ledger while it lives. There is no limit but the
//! segment's memory: when no page can be had for one more entry, the reference is refused where
//! it can be (a copy or a publish fails with [`ShmError::LedgerFull`]) and logged where it cannot
//! (a message received); a transport that leaves frees its pages itself. Before, references past the area's 1023 entries were not listed (one warning), and
//! a killed holder of 3000 messages and a copy of each left 2489 blocks for the session's life.
//!
//! | words of a slot's ledger (`ledgers` of the management layout, from 1 MiB) | content |
//! |---|---|
//! | 0..4 | entries of the area used so far (a high-water mark), 0, the link to the first overflow page (2 words, see `overflow`) |
//! | 4.. | [`ENTRIES`] entries of 2 words: block offset + 1 (0: free) \| segment id << 48, slot \| data distance << 32 \| 1 << 63 for a lane's block, 1 << 62 for a region piece's count block |
//!
//! Pages hold entries of the same form. Everything read from another process's ledger is
//! checked: an entry names a live block marked shared or it drops nothing, and a link names a
//! page of that ledger (a block held alone by its transport, with the page's header) or the walk
//! ends there, logged. Either leaves references that stay, never a crash or a read out of bounds.
//!
//! A lane's block (see `lanes`) is listed by its writer and its reader. The sweep drops a dead
//! side's reference, except a dead writer's to a lane nobody claimed yet, which it leaves to the
//! first claimant (as a writer that closes does); whoever drops the last reference, the sweep or
//! a live side letting go of its lane, releases what the lane still holds.
//!
//! A region piece's count block (see `region::count`) is listed by every holder of the piece.
//! The sweep that drops its last reference acknowledges the piece to the region's controller.
//!
//! Here: the area and what reads it; `overflow`, the pages; `sweep`, the sweep of a dead
//! transport's ledger; `writer`, a live transport's side.
//!
//! [`ShmError::LedgerFull`]: crate::ShmError::LedgerFull

mod overflow;
mod sweep;
#[cfg(test)]
mod tests;
mod writer;

pub(crate) use overflow::PAGE_BYTES;
pub(crate) use sweep::{release, Sweeper};
pub(crate) use writer::Ledger;

use crate::segment::Segment;
use crate::session::layout::{LEDGER_WORDS, PROCESS_SLOTS};
use crate::session::management::Management;
use overflow::Link;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bit of an entry's data distance word: the block is a lane's (data distances stay far below).
const LANE_BIT: u32 = 1 << 31;
/// Bit of an entry's data distance word: the block is a region piece's count block.
const PIECE_BIT: u32 = 1 << 30;

/// What a listed block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Referent {
    /// A message's block.
    Message,
    /// A lane's block (see `lanes`).
    Lane,
    /// A region piece's count block (see `region::count`).
    Piece,
}
/// An index meaning "not listed".
pub(crate) const NONE: u32 = u32::MAX;
/// Words of an area before its entries.
const HEADER: usize = 4;
/// Entries in a slot's own area (the rest go to overflow pages).
const ENTRIES: u32 = ((LEDGER_WORDS - HEADER) / 2) as u32;

/// The words of slot `slot`'s ledger area: header, then entries.
fn area(m: &Management, slot: usize) -> &[AtomicU64] {
    &m.layout().ledgers[slot]
}

/// The words of an area that link its first overflow page.
fn head(area: &[AtomicU64]) -> &[AtomicU64] {
    &area[2..4]
}

/// Entry `i` of `entries` (the entry words of an area or a page).
fn entry(entries: &[AtomicU64], i: u32) -> &[AtomicU64] {
    let at = i as usize * 2;
    &entries[at..at + 2]
}

/// The entries of `area` used so far.
fn used(area: &[AtomicU64]) -> impl Iterator<Item = &[AtomicU64]> {
    let n = (area[0].load(Ordering::Acquire) as u32).min(ENTRIES);
    let entries = &area[HEADER..];
    (0..n).map(move |i| entry(entries, i))
}

/// The entries of a page (all of them: a free one is 0).
fn on_page(page: &[AtomicU64]) -> impl Iterator<Item = &[AtomicU64]> {
    let entries = overflow::entries(page);
    (0..overflow::PAGE_ENTRIES).map(move |i| entry(entries, i))
}

/// A shared reference a dead transport listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Listed {
    segment: u16,
    offset: u64,
    delta: u32,
    slot: u32,
    what: Referent,
}

impl Listed {
    /// The entry whose first word is `w0` (read, or taken, by the caller) and second `w1`; `None`
    /// for a free one.
    fn decode(w0: u64, w1: u64) -> Option<Listed> {
        let offset = (w0 & ((1 << 48) - 1)).checked_sub(1)?;
        let distance = (w1 >> 32) as u32;
        let what = match (distance & LANE_BIT != 0, distance & PIECE_BIT != 0) {
            (false, false) => Referent::Message,
            (true, false) => Referent::Lane,
            (false, true) => Referent::Piece,
            // Written by nobody: a damaged entry, which drops nothing (no block has this distance).
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

    /// Writes this reference into the entry `e` (free): its first word last, so a reader that
    /// sees it sees the second.
    fn encode(self, e: &[AtomicU64]) {
        let bit = match self.what {
            Referent::Message => 0,
            Referent::Lane => LANE_BIT,
            Referent::Piece => PIECE_BIT,
        };
        let distance = (self.delta & !(LANE_BIT | PIECE_BIT)) | bit;
        e[1].store(u64::from(self.slot) | u64::from(distance) << 32, Ordering::Relaxed);
        e[0].store((self.offset + 1) | u64::from(self.segment) << 48, Ordering::Release);
    }

    /// The entry `e`, read (not taken).
    fn read(e: &[AtomicU64]) -> Option<Listed> {
        Listed::decode(e[0].load(Ordering::Acquire), e[1].load(Ordering::Relaxed))
    }
}

/// Slot `slot` is claimed by a new transport: what a former holder left is forgotten (its sweep
/// took it already, and freed its pages; one that left freed them itself). Under the session
/// lock.
pub(crate) fn reset(m: &Management, slot: usize) {
    let a = area(m, slot);
    used(a).for_each(|e| e[0].store(0, Ordering::Relaxed));
    Link::clear(head(a));
    a[0].store(0, Ordering::Release);
}

/// The owner mark of slot `slot`'s transport (its pages carry it).
fn owner_of(m: &Management, slot: usize) -> u32 {
    m.layout().processes[slot].owner.load(Ordering::Relaxed) as u32
}

/// The references slot `slot`'s ledger lists (of the transport of owner mark `owner`), read (not
/// taken); pages in segments `by` maps. A link that does not check ends the list (logged).
fn listed(by: &(impl Sweeper + ?Sized), m: &Management, slot: usize, owner: u32) -> Vec<Listed> {
    let a = area(m, slot);
    let mut out: Vec<Listed> = used(a).filter_map(Listed::read).collect();
    let walked = overflow::walk(by, head(a), owner, slot, |page| out.extend(on_page(page).filter_map(Listed::read)));
    if let Err(e) = walked {
        log::error!("{e}: the references listed past it are not seen");
    }
    out
}

/// The blocks (segment, offset) that live transports list shared references to, and those the
/// entries of the lanes among them name (for inspection: a shared block, or one waiting in a lane,
/// names no holder in its count word; a lane read meanwhile may be missed or misread).
pub(crate) fn held_by_live(m: &Management, live_slots: &[usize], by: &(impl Sweeper + ?Sized)) -> Vec<(u16, u64)> {
    let mut out = Vec::new();
    for &slot in live_slots.iter().filter(|&&s| s < PROCESS_SLOTS) {
        for l in listed(by, m, slot, owner_of(m, slot)) {
            out.push((l.segment, l.offset));
            if l.what == Referent::Lane {
                out.extend(by.segment(l.segment).map(|seg| sweep::in_lane(seg, &l)).unwrap_or_default());
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether the ledger of slot `slot` (of the transport of owner mark `owner`) lists a reference to
/// a lane's block (its transport may hold the lane's last reference: see
/// `Sweeper::release_lane_contents`); pages in segments `by` maps.
pub(crate) fn lists_a_lane(by: &(impl Sweeper + ?Sized), m: &Management, slot: usize, owner: u32) -> bool {
    listed(by, m, slot, owner).iter().any(|l| l.what == Referent::Lane)
}

/// The blocks `(segment, offset)` slot `slot`'s ledger lists references to (for tests of what a
/// killed transport would have dropped for it).
#[cfg(test)]
pub(crate) fn listed_blocks(by: &(impl Sweeper + ?Sized), m: &Management, slot: usize) -> Vec<(u16, u64)> {
    listed(by, m, slot, owner_of(m, slot)).iter().map(|l| (l.segment, l.offset)).collect()
}

/// The liveness slot of the attached transport of process `pid`, if any.
fn slot_of_pid(m: &Management, pid: u32) -> Option<usize> {
    (0..PROCESS_SLOTS).find(|&s| m.layout().processes[s].pid.load(Ordering::Acquire) as u32 == pid && pid != 0)
}

/// How many overflow pages the ledger of process `pid`'s transport links, checked as a sweep
/// checks them (segments opened by `segments`); `None` when no transport of that process is
/// attached (for tests).
pub(crate) fn overflow_pages(
    m: &Management,
    segments: &[Segment],
    pid: u32,
) -> Option<Result<usize, crate::error::LedgerError>> {
    let slot = slot_of_pid(m, pid)?;
    let mut n = 0;
    Some(overflow::walk(segments, head(area(m, slot)), owner_of(m, slot), slot, |_| n += 1).map(|()| n))
}

/// Overwrites the first word of the link to the first overflow page of the ledger of process
/// `pid`'s transport with `word` (a damaged ledger, for tests of the sweep); false when no
/// transport of that process is attached.
pub(crate) fn damage_overflow_link(m: &Management, pid: u32, word: u64) -> bool {
    let Some(slot) = slot_of_pid(m, pid) else { return false };
    head(area(m, slot))[0].store(word, Ordering::Release);
    true
}
