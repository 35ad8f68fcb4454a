//! What a segment's tickets hand over, and what dead processes left in the segment.
//!
//! The sweep of the dead (`session::ledger`, `Attachment::sweep_dead`) and the monitor use these:
//!
//! - [`Segment::finish_claims`] finishes the claims that dead receivers left under way.
//! - [`Segment::in_flight`] lists the blocks that tickets hand over and nobody claimed yet.
//!   [`Ticketed`] collects those blocks, and the blocks being claimed, over several segments.
//! - [`Segment::reclaim_dead`] frees the blocks that a dead transport held alone or kept in its
//!   caches, except those that a ticket hands over.
//!
//! [`remark`] changes the holder mark of a block with one reference, for example from a sender's
//! owner mark to [`slots::IN_FLIGHT`]. Sends, lanes and the release of orphaned tickets use it.

use super::{slots, tickets, Segment};
use crate::error::ShmError;
use std::sync::atomic::Ordering;

impl Segment {
    /// Counts the used blocks whose owner mark is `owner` (see `liveness::Attached::owner`).
    /// Returns (count, bytes).
    #[cfg(any(test, feature = "testing"))]
    pub fn owned_by(&self, owner: u32) -> Result<(u64, u64), ShmError> {
        self.locked(|t| {
            let owned = self.owned_blocks(t, owner);
            Ok((owned.len() as u64, owned.iter().map(|b| b.1).sum()))
        })
    }

    /// Finishes the claims of this segment's tickets that the dead `owners` left under way. Such a
    /// claimer was killed between claiming a ticket and marking the ticket's block as its own.
    /// The block gets the dead claimer's mark, so that it is freed with what the claimer held, and
    /// the ticket becomes free. `segment` finds the segment that a record names.
    pub(crate) fn finish_claims<'a>(&self, owners: &[u32], segment: impl Fn(u16) -> Option<&'a Segment> + Copy) {
        let tickets = self.tickets();
        for (t, word, claimer) in tickets.claiming_by(owners) {
            if let Ok((tickets::Kind::Message, rec)) = tickets.resolve(t, word) {
                let _ = remark(segment, &rec, slots::IN_FLIGHT, claimer);
            }
            tickets.claimed(t, claimer);
        }
    }

    /// The blocks of this segment's message tickets that a receiver is claiming. Such a block
    /// belongs to the claimer, or to the claimer's sweep once the claimer died, whatever the
    /// block's mark says now.
    fn being_claimed(&self) -> Vec<(u16, u64)> {
        let t = self.tickets();
        t.claiming_all()
            .into_iter()
            .filter_map(|(ticket, word)| match t.resolve(ticket, word) {
                Ok((tickets::Kind::Message, crate::meta::Record::Block { segment, offset, .. })) => {
                    Some((segment, offset))
                }
                _ => None,
            })
            .collect()
    }

    /// The blocks handed over through this segment's tickets and not claimed yet, for sweeps and
    /// fault tests. Each entry is (segment, block offset, issuer's owner mark, receiver's owner
    /// mark). The receiver's owner mark can also be:
    ///
    /// - 0: the record was not sent yet.
    /// - [`crate::segment::tickets::ELSEWHERE`]: the receiver is not known.
    /// - [`crate::segment::tickets::FACING`]: one of the sockets facing the sender.
    pub fn in_flight(&self) -> Vec<(u16, u64, u32, u32)> {
        self.handed(tickets::Kind::Message)
    }

    /// Whether an offer is out for the lane whose block is at `offset` in this segment. The lane's
    /// block belongs to the lane's writer, so the writer's offers are tickets of this segment's
    /// table.
    pub(crate) fn offered(&self, offset: u64) -> bool {
        self.handed(tickets::Kind::Offer).iter().any(|&(segment, o, ..)| segment == self.id && o == offset)
    }

    /// The blocks that the tickets of `kind` out in this segment's table hand over, in the form
    /// of [`in_flight`].
    ///
    /// [`in_flight`]: Segment::in_flight
    fn handed(&self, kind: tickets::Kind) -> Vec<(u16, u64, u32, u32)> {
        let t = self.tickets();
        t.out_in_chunks(|_| true)
            .into_iter()
            .filter_map(|(ticket, nonce, issuer, receiver, _)| match t.resolve(ticket, nonce) {
                Ok((k, crate::meta::Record::Block { segment, offset, .. })) if k == kind => {
                    Some((segment, offset, issuer, receiver))
                }
                _ => None,
            })
            .collect()
    }

    /// Every used block: (offset, size, owner mark, reference count), for the monitor's debug view.
    pub fn used_blocks(&self) -> Result<Vec<(u64, u64, u32, u32)>, ShmError> {
        self.locked(|t| {
            Ok(t.walk()
                .filter(|&(_, _, free)| !free)
                .map(|(off, size, _)| {
                    let rc = self.block_rc(off).load(Ordering::Acquire);
                    (off, size, (rc >> 32) as u32, rc as u32)
                })
                .collect())
        })
    }

    /// Frees what the dead transport with owner mark `owner` had, and returns (count, bytes). The
    /// transport had blocks in its caches (no reference) and blocks it held alone (one reference
    /// and its mark, see `Message::mark_held`). Nobody else can reach these blocks: a block in
    /// flight or a shared block carries another mark.
    ///
    /// `ticketed` lists the blocks that the tickets out hand over, across every segment's table.
    /// Such a block is in flight, whatever its mark says: its holder was killed between handing it
    /// to a ticket and marking it. `Segment::reclaim_dead` leaves such a block to its ticket.
    pub(crate) fn reclaim_dead(&self, owner: u32, ticketed: &Ticketed) -> Result<(u64, u64), ShmError> {
        let (cached, held) = (u64::from(owner) << 32, u64::from(owner) << 32 | 1);
        let r = self.locked(|t| {
            let gone: Vec<(u64, u64)> = t
                .walk()
                .filter(|&(off, _, free)| !free && [cached, held].contains(&self.block_rc(off).load(Ordering::Acquire)))
                .filter(|&(off, _, _)| !ticketed.contains(self.id, off))
                .map(|(off, size, _)| (off, size))
                .collect();
            for &(off, _) in &gone {
                self.free_to_heap(t, off, self.slot_of(off))?;
            }
            Ok((gone.len() as u64, gone.iter().map(|b| b.1).sum()))
        })?;
        if r.0 > 0 {
            self.wake_waiters();
        }
        Ok(r)
    }

    #[cfg(any(test, feature = "testing"))]
    fn owned_blocks(&self, t: &super::tlsf::Tlsf<'_>, owner: u32) -> Vec<(u64, u64)> {
        t.walk()
            .filter(|&(off, _, free)| !free && (self.block_rc(off).load(Ordering::Acquire) >> 32) as u32 == owner)
            .map(|(off, size, _)| (off, size))
            .collect()
    }
}

/// What [`remark`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Remark {
    /// The block had the expected mark and one reference. It now has the new mark.
    Done,
    /// Nothing to mark: the record names no block (a region piece or an empty part), or the
    /// record names a shared block, whose mark names no holder.
    NoMark,
    /// Not the caller's to take: the block has another holder's mark or was freed, or the record
    /// names no block.
    Refused,
}

/// Changes the holder mark of the block that `rec` names from `from` to `to`, if the block has
/// one reference and the mark `from`. `segment` finds the segment that holds the block. The
/// record is checked first, because it comes from a lane entry or a ticket, which a faulty peer
/// may have damaged.
#[inline]
pub(crate) fn remark<'a>(
    segment: impl Fn(u16) -> Option<&'a Segment>,
    rec: &crate::meta::Record,
    from: u32,
    to: u32,
) -> Remark {
    let crate::meta::Record::Block { segment: id, offset, delta, size, slot, generation } = *rec else {
        return if matches!(rec, crate::meta::Record::Handed { .. }) { Remark::Refused } else { Remark::NoMark };
    };
    let Some(seg) = segment(id) else { return Remark::Refused };
    let Ok(rc) = seg.checked_count(offset, delta, size, slot, Some(generation)) else { return Remark::Refused };
    let current = |s: &Segment| s.check_generation(offset, slot, generation).is_ok();
    let (from, to) = (u64::from(from) << 32 | 1, u64::from(to) << 32 | 1);
    match rc.compare_exchange(from, to, Ordering::AcqRel, Ordering::Relaxed) {
        Ok(_) if current(seg) => Remark::Done,
        Ok(_) => {
            // The block was freed and handed out again between the check and the swap, so it
            // belongs to another use: give it back its mark. (The generation cannot move while the
            // block carries our mark.)
            let _ = rc.compare_exchange(to, from, Ordering::AcqRel, Ordering::Relaxed);
            Remark::Refused
        }
        Err(v) if slots::is_shared(v) => Remark::NoMark,
        Err(_) => Remark::Refused,
    }
}

/// The blocks, as `(segment, offset)`, that the tickets out in the tables of some segments hand
/// over, and those whose claim is under way.
pub(crate) struct Ticketed(std::collections::HashSet<(u16, u64)>);

impl Ticketed {
    /// What the tables of `segments` hand over, or hand over now (claims under way).
    pub(crate) fn of<'a>(segments: impl IntoIterator<Item = &'a Segment>) -> Ticketed {
        Ticketed(
            segments
                .into_iter()
                .flat_map(|s| {
                    let out = s.in_flight().into_iter().map(|(segment, offset, _, _)| (segment, offset));
                    out.chain(s.being_claimed())
                })
                .collect(),
        )
    }

    fn contains(&self, segment: u16, offset: u64) -> bool {
        self.0.contains(&(segment, offset))
    }
}
