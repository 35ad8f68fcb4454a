//! The sweep of a dead transport's ledger: each listed reference dropped, checked first.

use super::{area, head, on_page, overflow, used, Entry, Link, Listed, Referent, PIECE_COUNT_BYTES};
use crate::segment::ring::Ring;
use crate::segment::slots::is_shared;
use crate::segment::Segment;
use crate::session::management::Management;
use std::sync::atomic::{AtomicU64, Ordering};

/// Drops the references that a dead transport listed. A `Sweeper` is either a transport (see
/// `attachment`) or the monitor.
pub(crate) trait Sweeper {
    /// Segment `id`, as this sweeper maps it.
    fn segment(&self, id: u16) -> Option<&Segment>;
    /// Frees the block (`offset`, `delta`, `slot`) of `seg`, which lost its last reference.
    fn free(&self, seg: &Segment, offset: u64, delta: u32, slot: u32);
    /// Releases the messages still in `ring`, a lane whose last reference goes. Returns false
    /// when this sweeper cannot release them: the monitor cannot, nor can a transport that is
    /// leaving. Such a lane stays in the segment.
    ///
    /// So the monitor leaves dead transports that listed lanes to a transport that it attaches
    /// (see `monitor::sweep`). The monitor sweeps them itself only when that attach failed.
    fn release_lane_contents(&self, ring: &Ring<'_>) -> bool;
}

/// The monitor sweeps with the session's segments, which it opened. A freed block goes straight
/// back to the heap.
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

/// Acknowledges to its region's controller a region piece whose last reference a sweep dropped.
/// The region layer, above this one, implements `Pieces` (`region::count::Orphans`, which opens
/// the regions' queues).
pub(crate) trait Pieces {
    /// Called when the piece whose count block has the words `block` lost its last reference.
    /// `block` is `None` when the count block is out of bounds. The sweep frees the count block
    /// after this call.
    fn last_reference_dropped(&mut self, block: Option<&[AtomicU64]>);
}

/// Drops the references that a dead transport listed, in its area and on its overflow pages, and
/// returns how many it dropped. The dead transport had liveness slot `slot` and owner mark `owner`.
///
/// Each entry is cleared before its reference is dropped. A sweeper killed in between loses that
/// one reference, and the block stays. The sweeper that takes over never drops a reference twice.
///
/// Each entry is checked first. Only a live block that is marked shared, and still has a reference
/// left, loses a reference. When a region piece loses its last reference, `release` acknowledges
/// the piece to its region's controller through `pieces`. A link to a page that fails its checks
/// ends the walk, and the failure is logged. The references listed past that link stay.
///
/// `release` unlinks the pages once it has walked them. The sweep frees them later, with the other
/// blocks that the dead transport held alone (`Segment::reclaim_dead`). So a sweeper that takes
/// over after that finds no link to a block that was freed meanwhile. (The checks would refuse
/// such a link, but with an error.)
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

/// Takes each of `entries` (clears it) and drops the reference it lists. Returns how many
/// references it dropped.
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
        // A count block is listed before it is marked shared (see `Message::share`). If the
        // transport was killed in between, the dead transport still holds the block alone. Once
        // marked shared here, the block goes below as the last reference, and the piece is
        // acknowledged.
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

/// Drops the shared reference that `l` lists. If it was the last reference, `drop_one` runs
/// `last` and then frees the block.
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

/// Handles a dead side's reference to a lane's block. If the dead side is the lane's writer,
/// nobody has claimed the lane, and an offer of it is out, the reference goes to the lane's first
/// claimant. Otherwise the reference is dropped. When it was the last reference, the messages that
/// the lane holds are released. Releasing them needs a transport: without one, the last reference
/// stays, and so does the lane.
fn drop_lane_reference(by: &(impl Sweeper + ?Sized), seg: &Segment, owner: u32, l: &Listed) -> bool {
    let Some(ring) = lane_ring(seg, l) else {
        // Nothing in the lane can be found. Its block goes like any shared block, with its last
        // reference. (Before, it stayed for the session's life.) It does not go while an offer of
        // it is out: its writer's reference keeps it for the offer's claimant. Nor does it go once
        // the block is no longer the one listed.
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
            // The lane was unclaimed and no offer of it is out, so nobody can claim it any more.
            // A reader that won an offer already holds its own reference, and finds the lane
            // taken. The sweep closes the lane as a reader that claims and closes at once would.
            // The writer's reference goes below. Before, that reference went to a first claimant
            // that never came, and the lane stayed.
            ring.close(crate::segment::ring::READER_CLOSED | crate::segment::ring::WRITER_CLOSED);
        }
    }
    // The sweep drops the reference first. If it took the last one, it releases the messages that
    // the lane holds: nobody reads or writes the lane any more, and its block is still allocated.
    // A live holder that drops its own reference does the same (`LaneBlock`'s drop).
    //
    // Before, the sweep looked at the count and only then took its reference. A live holder that
    // dropped its own reference in between left the lane's messages to the sweep. The sweep had
    // left them to that holder, so they stayed for the session's life.
    let rc = seg.rc(l.offset, l.slot);
    crate::kill_point::here("drop_lane_reference: before the reference goes");
    match rc.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| (v as u32 > 0).then(|| v - 1)) {
        Ok(prev) if prev as u32 == 1 => {
            if !by.release_lane_contents(&ring) {
                // The sweep puts the reference back: the lane stays in the segment, held, as
                // before.
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

/// Opens the ring of the lane whose block `l` names in `seg`. Returns `None` unless the block
/// checks out as a live block that holds a lane.
fn lane_ring<'a>(seg: &'a Segment, l: &Listed) -> Option<Ring<'a>> {
    if seg.check_any_block(l.offset, l.delta, 0).ok() != Some(l.slot) {
        return None;
    }
    let bytes = seg.block_size(l.offset, l.slot).saturating_sub(u64::from(l.delta)) / 8 * 8;
    Ring::open(seg.block_words(l.offset, l.delta, bytes)?).ok()
}

/// The blocks that the entries of the lane `l` name. The entry that the lane's writer is staging
/// counts too, because its blocks go in flight before the entry is published. (Before, a writer
/// stopped between the two showed those blocks as held by nobody.) For an indirect entry, the list
/// has the block that holds the entry's frame.
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
