//! The sweep of a dead transport's ledger: each listed reference dropped, checked first.

use super::{area, head, on_page, overflow, used, Entry, Link, Listed, Referent, PIECE_COUNT_BYTES};
use crate::segment::ring::Ring;
use crate::segment::slots::is_shared;
use crate::segment::Segment;
use crate::session::management::Management;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// What a sweep does with a region piece whose last reference it dropped: acknowledge it to the
/// region's controller. The region layer, above this one, implements it (`region::count::Orphans`,
/// which opens the regions' queues).
pub(crate) trait Pieces {
    /// The piece whose count block has the words `block` (`None`: the block is out of bounds)
    /// lost its last reference; the sweep frees the block next.
    fn last_reference_dropped(&mut self, block: Option<&[AtomicU64]>);
}

/// Drops the references the dead transport of slot `slot` and owner mark `owner` listed, in its
/// area and on its overflow pages; returns how many. Each entry is cleared before its reference
/// is dropped: a sweeper killed in between loses that one reference (the block stays), and the
/// sweeper that takes over never drops one twice. Each is checked: only a live block marked
/// shared, with a reference left, loses one. A region piece whose last reference goes is
/// acknowledged to its region's controller through `pieces`. A link to a page that does not check ends the walk
/// (logged): the references listed past it stay.
///
/// The pages are unlinked once walked, and freed later in the sweep with the other blocks the
/// dead transport held alone (`Segment::reclaim_dead`): a sweeper that takes over after that
/// finds no link to a block that went meanwhile (the checks would refuse it, with an error).
pub(crate) fn release(
    by: &(impl Sweeper + ?Sized),
    pieces: &mut dyn Pieces,
    m: &Management,
    slot: usize,
    owner: u32,
) -> usize {
    let a = area(m, slot);
    let mut n = take_all(by, owner, pieces, used(a));
    let walked = overflow::walk(by, head(a), owner, slot, |page| n += take_all(by, owner, pieces, on_page(page)));
    if let Err(e) = walked {
        log::error!("{e}: the shared references listed past it stay until the session ends");
    }
    Link::clear(head(a));
    n
}

/// Takes the entries `entries` and drops the references they list; how many it dropped.
fn take_all<'a>(
    by: &(impl Sweeper + ?Sized),
    owner: u32,
    pieces: &mut dyn Pieces,
    entries: impl Iterator<Item = &'a Entry>,
) -> usize {
    entries
        .filter_map(|e| Listed::decode(e.block.swap(0, Ordering::AcqRel), e.place.load(Ordering::Relaxed)))
        .filter(|l| drop_shared(by, owner, pieces, l))
        .count()
}

fn drop_shared(by: &(impl Sweeper + ?Sized), owner: u32, pieces: &mut dyn Pieces, l: &Listed) -> bool {
    let Some(seg) = by.segment(l.segment) else { return false };
    let least = if l.what == Referent::Piece { PIECE_COUNT_BYTES } else { 0 };
    if seg.check_any_block(l.offset, l.delta, least).ok() != Some(l.slot) {
        return false;
    }
    let rc = seg.rc(l.offset, l.slot);
    if l.what == Referent::Piece {
        // Listed, then killed before it was marked shared (see `Message::share`): still the dead
        // transport's alone; shared now, it goes as the last reference below, acknowledged.
        let alone = u64::from(owner) << 32 | 1;
        let shared = u64::from(crate::segment::slots::SHARED) << 32 | 1;
        let _ = rc.compare_exchange(alone, shared, Ordering::AcqRel, Ordering::Relaxed);
    }
    if !is_shared(rc.load(Ordering::Acquire)) {
        return false;
    }
    match l.what {
        Referent::Message => drop_one(by, seg, l, || {}),
        Referent::Lane => drop_lane_reference(by, seg, owner, l),
        Referent::Piece => drop_one(by, seg, l, || {
            pieces.last_reference_dropped(seg.block_words(l.offset, l.delta, PIECE_COUNT_BYTES));
        }),
    }
}

/// Drops the shared reference `l` lists; with the last one, `last` runs, then the block is freed.
fn drop_one(by: &(impl Sweeper + ?Sized), seg: &Segment, l: &Listed, last: impl FnOnce()) -> bool {
    match seg.rc(l.offset, l.slot).fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| is_shared(v).then(|| v - 1)) {
        Ok(prev) if prev as u32 == 1 => {
            last();
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
        return listed_block && !seg.offered(l.offset) && drop_one(by, seg, l, || {});
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
#[cfg(any(test, feature = "testing"))]
pub(super) fn in_lane(seg: &Segment, l: &Listed) -> Vec<(u16, u64)> {
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
