//! The references a transport holds to shared blocks (published messages, copies).
//!
//! A block held by one transport names it in its count word, so the sweep of the dead frees what a
//! killed process held alone. A shared block (count above 1) names nobody: before, what a killed
//! subscriber held of a published message stayed allocated until the session ended. So each
//! transport lists the shared references it holds in a *ledger*: an area of the management
//! segment that belongs to its liveness slot. The sweep that counts a dead transport out takes its
//! entries (under the session lock, before the slot can be claimed again) and drops each listed
//! reference, freeing the block when it was the last.
//!
//! An entry is written after the reference is taken and cleared before it is dropped: a process
//! killed in between leaves a reference nobody drops (a block that stays, as before), never one
//! dropped twice. Only the transport writes its ledger while it lives.
//!
//! | bytes of a slot's ledger (`ledgers` of the management layout, from 1 MiB) | content |
//! |---|---|
//! | 0..16 | entries used so far (a high-water mark), 0 |
//! | 16.. | [`ENTRIES`] entries of 2 words: block offset + 1 (0: free) \| segment id << 48, slot \| data distance << 32 \| 1 << 63 for a lane's block |
//!
//! A lane's block (see `lanes`) is listed by its writer and its reader. The sweep drops a dead
//! side's reference, except a dead writer's to a lane nobody claimed yet, which it leaves to the
//! first claimant (as a writer that closes does); whoever drops the last reference, the sweep or
//! a live side letting go of its lane, releases what the lane still holds.

use crate::segment::ring::Ring;
use crate::segment::slots::is_shared;
use crate::segment::Segment;
use crate::session::layout::LEDGER_WORDS;
use crate::session::management::Management;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Bit of an entry's data distance word: the block is a lane's (data distances stay far below).
const LANE_BIT: u32 = 1 << 31;
/// An index meaning "not listed".
pub(crate) const NONE: u32 = u32::MAX;
/// Entries per transport (beyond that, shared references are not listed: logged once).
const ENTRIES: u32 = (LEDGER_WORDS / 2 - 1) as u32;
/// The words of slot `slot`'s ledger: header, then entries.
fn area(m: &Management, slot: usize) -> &[AtomicU64] {
    &m.layout().ledgers[slot]
}

fn entry(area: &[AtomicU64], i: u32) -> &[AtomicU64] {
    let at = 2 + i as usize * 2;
    &area[at..at + 2]
}

/// A shared reference a dead transport listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Listed {
    segment: u16,
    offset: u64,
    delta: u32,
    slot: u32,
    lane: bool,
}

/// Slot `slot` is claimed by a new transport: what a former holder left is forgotten (its sweep
/// took it already). Under the session lock.
pub(crate) fn reset(m: &Management, slot: usize) {
    used(m, slot).for_each(|e| e[0].store(0, Ordering::Relaxed));
    area(m, slot)[0].store(0, Ordering::Release);
}

impl Listed {
    /// The entry whose first word is `w0` (read, or taken, by the caller) and second `w1`; `None`
    /// for a free one.
    fn decode(w0: u64, w1: u64) -> Option<Listed> {
        let offset = (w0 & ((1 << 48) - 1)).checked_sub(1)?;
        let distance = (w1 >> 32) as u32;
        Some(Listed {
            segment: (w0 >> 48) as u16,
            offset,
            delta: distance & !LANE_BIT,
            slot: w1 as u32,
            lane: distance & LANE_BIT != 0,
        })
    }
}

/// The entries slot `slot` has used so far.
fn used(m: &Management, slot: usize) -> impl Iterator<Item = &[AtomicU64]> {
    let a = area(m, slot);
    let used = (a[0].load(Ordering::Acquire) as u32).min(ENTRIES);
    (0..used).map(move |i| entry(a, i))
}

/// Who drops a dead transport's listed references: a transport (see `attachment`) or the monitor.
pub(crate) trait Sweeper {
    /// Segment `id`, mapped.
    fn segment(&self, id: u16) -> Option<&Segment>;
    /// The block (offset, delta, slot) of `seg` lost its last reference: freed.
    fn free(&self, seg: &Segment, offset: u64, delta: u32, slot: u32);
    /// Releases the messages still in `ring`, a lane whose last reference goes; false when this
    /// sweeper cannot (the monitor, or a transport that is leaving): such a lane stays. (The
    /// monitor leaves dead transports that listed lanes to a transport it attaches: see
    /// `monitor::sweep`; it sweeps them itself only when that attach failed.)
    fn release_lane_contents(&self, ring: &Ring<'_>) -> bool;
}

/// The monitor's sweep: the session's segments, opened; blocks go straight back to the heap.
impl Sweeper for [Segment] {
    fn segment(&self, id: u16) -> Option<&Segment> {
        self.iter().find(|s| s.id() == id)
    }

    fn free(&self, seg: &Segment, offset: u64, _delta: u32, _slot: u32) {
        if let Err(e) = seg.free_block(offset) {
            log::error!("could not free a block a dead process held last: {e}");
        }
    }

    fn release_lane_contents(&self, _ring: &Ring<'_>) -> bool {
        false
    }
}

/// The blocks (segment, offset) that live transports list shared references to, and those the
/// entries of the lanes among them name (for inspection: a shared block, or one waiting in a lane,
/// names no holder in its count word; a lane read meanwhile may be missed or misread).
pub(crate) fn held_by_live(m: &Management, live_slots: &[usize], by: &(impl Sweeper + ?Sized)) -> Vec<(u16, u64)> {
    let mut out = Vec::new();
    for &slot in live_slots {
        for l in listed(m, slot) {
            out.push((l.segment, l.offset));
            if l.lane {
                out.extend(by.segment(l.segment).map(|seg| in_lane(seg, &l)).unwrap_or_default());
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether slot `slot`'s ledger lists a reference to a lane's block (its transport may hold the
/// lane's last reference: see `Sweeper::release_lane_contents`).
pub(crate) fn lists_a_lane(m: &Management, slot: usize) -> bool {
    listed(m, slot).any(|l| l.lane)
}

/// The blocks `(segment, offset)` slot `slot`'s ledger lists references to (for tests of what a
/// killed transport would have dropped for it).
#[cfg(test)]
pub(crate) fn listed_blocks(m: &Management, slot: usize) -> Vec<(u16, u64)> {
    listed(m, slot).map(|l| (l.segment, l.offset)).collect()
}

/// The references slot `slot`'s ledger lists, read (not taken).
fn listed(m: &Management, slot: usize) -> impl Iterator<Item = Listed> + '_ {
    used(m, slot).filter_map(|e| Listed::decode(e[0].load(Ordering::Acquire), e[1].load(Ordering::Relaxed)))
}

/// The ring of the lane whose block `l` names in `seg`, once the block checks out as a live one
/// holding a lane.
fn lane_ring<'a>(seg: &'a Segment, l: &Listed) -> Option<Ring<'a>> {
    if seg.check_any_block(l.offset, l.delta, 0).ok() != Some(l.slot) {
        return None;
    }
    let bytes = seg.block_size(l.offset, l.slot).saturating_sub(u64::from(l.delta)) / 8 * 8;
    Ring::open(seg.block_words(l.offset, l.delta, bytes)?).ok()
}

/// The blocks the entries of the lane `l` names, the one its writer is staging too (its blocks go
/// in flight before it is published; before, a writer stopped between the two showed them held by
/// nobody); an indirect entry: the block holding its frame.
fn in_lane(seg: &Segment, l: &Listed) -> Vec<(u16, u64)> {
    let Some(ring) = lane_ring(seg, l) else { return Vec::new() };
    let mut out = Vec::new();
    let (mut frame, mut records) = (Vec::new(), Vec::new());
    let staged = ring.staged().ok().flatten();
    for e in ring.entries().unwrap_or_default().into_iter().chain(staged) {
        ring.read(&e, &mut frame);
        records.clear();
        if crate::meta::decode(&frame, &mut records).is_ok() {
            out.extend(records.iter().filter_map(|r| match *r {
                crate::meta::Record::Block { segment, offset, .. } => Some((segment, offset)),
                _ => None,
            }));
        }
    }
    out
}

/// Drops the references the dead transport of slot `slot` and owner mark `owner` listed; returns
/// how many. Each entry is cleared before its reference is dropped: a sweeper killed in between
/// loses that one reference (the block stays), and the sweeper that takes over never drops one
/// twice. Each is checked: only a live block marked shared, with a reference left, loses one.
pub(crate) fn release(by: &(impl Sweeper + ?Sized), m: &Management, slot: usize, owner: u32) -> usize {
    used(m, slot)
        .filter_map(|e| Listed::decode(e[0].swap(0, Ordering::AcqRel), e[1].load(Ordering::Relaxed)))
        .filter(|l| drop_shared(by, owner, l))
        .count()
}

fn drop_shared(by: &(impl Sweeper + ?Sized), owner: u32, l: &Listed) -> bool {
    let Some(seg) = by.segment(l.segment) else { return false };
    if seg.check_any_block(l.offset, l.delta, 0).ok() != Some(l.slot) {
        return false;
    }
    let rc = seg.rc(l.offset, l.slot);
    if !is_shared(rc.load(Ordering::Acquire)) {
        return false;
    }
    if l.lane {
        return drop_lane_reference(by, seg, owner, l);
    }
    drop_one(by, seg, l)
}

/// Drops the shared reference `l` lists; frees the block with the last one.
fn drop_one(by: &(impl Sweeper + ?Sized), seg: &Segment, l: &Listed) -> bool {
    match seg.rc(l.offset, l.slot).fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| is_shared(v).then(|| v - 1)) {
        Ok(prev) if prev as u32 == 1 => {
            by.free(seg, l.offset, l.delta, l.slot);
            true
        }
        Ok(_) => true,
        Err(_) => false,
    }
}

/// A dead side's reference to a lane's block: handed to the first claimant when the dead side is
/// its writer and nobody claimed the lane; else dropped, and with the last one what the lane holds
/// is released (that needs a transport: without one, the last reference stays, and the lane).
fn drop_lane_reference(by: &(impl Sweeper + ?Sized), seg: &Segment, owner: u32, l: &Listed) -> bool {
    let Some(ring) = lane_ring(seg, l) else {
        // Nothing in it can be found: the block goes as any shared block's, with its last
        // reference (before, it stayed for the session's life); not while an offer of it is out
        // (its writer's reference keeps it for the offer's claimant), nor once it is not the block
        // listed any more.
        log::error!("a lane a dead process held is damaged: messages it may hold stay in the segment");
        let listed_block = seg.check_any_block(l.offset, l.delta, 0).ok() == Some(l.slot);
        return listed_block && !seg.offered(l.offset) && drop_one(by, seg, l);
    };
    if ring.writer() == owner {
        if seg.offered(l.offset) {
            if ring.orphan() {
                ring.close(crate::segment::ring::WRITER_CLOSED);
                return true; // the first claimant's now
            }
        } else if ring.claim(owner) == crate::segment::ring::Claim::Fresh {
            // Unclaimed, and no offer of it is out: nobody can claim it any more (a reader that
            // won an offer holds its own reference already, and finds the lane taken). Closed as
            // a reader that claims and closes at once would; the writer's reference goes below.
            // Before, it went to a first claimant that never came: the lane stayed.
            ring.close(crate::segment::ring::READER_CLOSED | crate::segment::ring::WRITER_CLOSED);
        }
    }
    // The reference goes first, and the sweep that took the last one releases what the lane holds
    // (nobody reads or writes it any more; it is still allocated). A live holder that drops its
    // own does the same (`LaneBlock`'s drop). Before, the sweep looked at the count and then took
    // its reference: a live holder that dropped its own in between left the lane's messages to
    // the sweep, which had left them to that holder, and they stayed for the session's life.
    let rc = seg.rc(l.offset, l.slot);
    crate::kill_point::here("drop_lane_reference: before the reference goes");
    match rc.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| (v as u32 > 0).then(|| v - 1)) {
        Ok(prev) if prev as u32 == 1 => {
            if !by.release_lane_contents(&ring) {
                // The reference back: the lane stays in the segment, held, as before.
                rc.fetch_add(1, Ordering::AcqRel);
                log::warn!("a lane whose last holder died stays in the segment: no transport to release its messages");
                return false;
            }
            by.free(seg, l.offset, l.delta, l.slot);
        }
        Ok(_) => {}
        Err(_) => return false,
    }
    true
}

/// A transport's ledger: its liveness slot's area, and which entries are free.
pub(crate) struct Ledger {
    slot: usize,
    state: Mutex<State>,
}

struct State {
    /// Entries below this were used; those above are free.
    used: u32,
    free: Vec<u32>,
    full_logged: bool,
}

impl Ledger {
    /// The liveness slot whose ledger this is.
    #[cfg(test)]
    pub(crate) fn slot(&self) -> usize {
        self.slot
    }

    /// The ledger of the transport in liveness slot `slot` (reset when the slot was claimed).
    pub(crate) fn new(slot: usize) -> Ledger {
        Ledger { slot, state: Mutex::new(State { used: 0, free: Vec::new(), full_logged: false }) }
    }

    /// Lists a shared reference this transport took to the block (`seg`, `offset`, `delta`,
    /// `slot`); returns its entry ([`NONE`] when the ledger is full: logged once, the reference
    /// then stays if the process is killed).
    pub(crate) fn note(&self, m: &Management, seg: u16, offset: u64, delta: u32, slot: u32, lane: bool) -> u32 {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let a = area(m, self.slot);
        let i = match s.free.pop() {
            Some(i) => i,
            None if s.used < ENTRIES => {
                s.used += 1;
                a[0].store(u64::from(s.used), Ordering::Release);
                s.used - 1
            }
            None => {
                if !std::mem::replace(&mut s.full_logged, true) {
                    log::warn!("the ledger of shared references is full ({ENTRIES}): further ones are not listed");
                }
                return NONE;
            }
        };
        let e = entry(a, i);
        let delta = (delta & !LANE_BIT) | if lane { LANE_BIT } else { 0 };
        e[1].store(u64::from(slot) | u64::from(delta) << 32, Ordering::Relaxed);
        e[0].store((offset + 1) | u64::from(seg) << 48, Ordering::Release);
        i
    }

    /// Clears entry `i` (its reference is about to be dropped or handed over).
    pub(crate) fn forget(&self, m: &Management, i: u32) {
        if i >= ENTRIES {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        entry(area(m, self.slot), i)[0].store(0, Ordering::Release);
        s.free.push(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::message::Message;

    /// A process killed while it held a message and a copy of it (a shared block, two references
    /// listed): the sweep drops both and the block is freed; entries that do not name a shared
    /// block with a reference left are ignored.
    #[test]
    fn the_references_a_dead_transport_listed_are_dropped_once() {
        let (_scratch, mgr) = crate::scratch::attachment("ledger");
        let settled_free = || {
            mgr.flush(true);
            mgr.own().drain_depot().unwrap();
            mgr.own().stats().free
        };
        let free0 = settled_free();
        let m = Message::allocate(mgr.clone(), 1000, 0).unwrap();
        let mut copy = Message::empty(mgr.clone());
        copy.copy_from(&m).unwrap();
        let crate::meta::Record::Block { offset, slot, .. } = m.record() else { panic!("a block") };
        let count = || mgr.own().rc(offset, slot).load(Ordering::Acquire);
        assert_eq!(count(), u64::from(crate::segment::slots::SHARED) << 32 | 2);
        // Killed: its messages are never dropped; the sweep releases its entries in place.
        std::mem::forget((m, copy));
        let (mng, slot, me) = (mgr.management(), mgr.ledger().slot, mgr.owner());
        assert_eq!(used(mng, slot).filter(|e| e[0].load(Ordering::Relaxed) != 0).count(), 2, "both listed");
        // A damaged entry (its offset moved) names no block: it drops nothing, the other its one.
        let first = entry(area(mng, slot), 0);
        let good = first[0].load(Ordering::Relaxed);
        first[0].store(good + 8, Ordering::Relaxed);
        assert_eq!(release(&*mgr, mng, slot, me), 1, "only the good entry dropped its reference");
        assert_eq!(count(), u64::from(crate::segment::slots::SHARED) << 32 | 1);
        // The good value back (as if it had been so): dropped, and with it the last reference.
        first[0].store(good, Ordering::Relaxed);
        assert_eq!(release(&*mgr, mng, slot, me), 1);
        assert_eq!(count() as u32, 0, "the block was freed with the last one");
        // A sweeper that takes over from one killed after it released finds nothing to drop twice.
        assert_eq!(release(&*mgr, mng, slot, me), 0, "every entry was cleared as it was released");
        assert_eq!(settled_free(), free0);
        mgr.own().check().unwrap();
    }

    /// A writer killed with a lane nobody claimed: while an offer of it is out, its reference goes
    /// to the offer's claimant; with none out, nobody can claim the lane any more, and the sweep
    /// drops the reference and frees the lane. Before, it waited for a claimant that never came
    /// (a writer whose reader had died, killed while its new lane had no peer to be offered to).
    #[test]
    fn a_dead_writers_unclaimed_lane_waits_for_a_claimant_only_while_an_offer_is_out() {
        use crate::segment::ring::{self, Ring, ORPHANED};
        let (_scratch, mgr) = crate::scratch::attachment("ledger-lane");
        mgr.set_shared();
        let (mng, slot, me) = (mgr.management(), mgr.ledger().slot, mgr.owner());
        // As a writer makes a lane (see `lanes::Writer::offer`), then is killed.
        let lane = || {
            let block = Message::allocate(mgr.clone(), ring::block_bytes(ring::MIN_CAPACITY) as usize, 64).unwrap();
            block.list_lane();
            block.mark_held(crate::segment::slots::SHARED);
            Ring::init(block.words().unwrap(), ring::MIN_CAPACITY, me);
            let rec = block.record();
            std::mem::forget(block);
            rec
        };
        let count = |rec: crate::meta::Record| {
            let crate::meta::Record::Block { offset, slot, .. } = rec else { panic!("a block") };
            mgr.own().rc(offset, slot).load(Ordering::Acquire)
        };
        let reader = |rec: crate::meta::Record| {
            let crate::meta::Record::Block { offset, delta, size, .. } = rec else { panic!("a block") };
            Ring::open(mgr.own().block_words(offset, delta, size).unwrap()).unwrap().reader()
        };
        let offered = lane();
        let ticket = mgr.issue(crate::segment::tickets::Kind::Offer, &offered).unwrap();
        assert_eq!(release(&*mgr, mng, slot, me), 1);
        assert_eq!(count(offered), u64::from(crate::segment::slots::SHARED) << 32 | 1, "kept for the claimant");
        assert_eq!(reader(offered), ORPHANED, "handed to the first claimant");
        assert!(mgr.take_back(&ticket));
        let alone = lane();
        assert_eq!(release(&*mgr, mng, slot, me), 1);
        assert_eq!(count(alone) as u32, 0, "no offer out: the lane was freed");
    }
}
