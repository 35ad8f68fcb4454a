//! The lane a socket writes ([`Writer`]).
//!
//! The writer offers its lane to the socket's single peer. When the lane's reader leaves, the
//! writer takes back what the reader did not read, and sends it first on its next lane. The writer
//! stages each entry in the ring before it marks the entry's blocks in flight and publishes it (see
//! `Ring::push_seen`). So a writer killed at any moment leaves every block accounted for: by a
//! ring entry, a staged entry or its own mark.

use super::resent::Resent;
use super::*;
use crate::error::ShmError;
use crate::meta::{self};
use crate::segment::ring::{self, LaneError, Ring, KIND_FRAME, KIND_INDIRECT, READER_CLOSED, WRITER_CLOSED};
use crate::segment::tickets::{Issued, Kind};
use crate::transport::attachment::Attachment;
use crate::transport::message::Message;
use fairmq_zmq::TransferError;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The lane that a socket with a single peer writes, and the entries taken back from lanes whose
/// reader left.
#[derive(Default)]
pub(crate) struct Writer {
    lane: Option<LaneBlock>,
    /// The ring size in bytes of this writer's lanes. It is fixed at the first send, because
    /// entries taken back from a lane whose reader left must fit in the next lane.
    capacity: u64,
    /// When the lane was last offered, and that offer's ticket. An offer sent just as the peer went
    /// away is lost with the connection. So until a reader claims the lane, the writer offers it
    /// again, and takes back the earlier offer.
    offered: Cell<Option<(Instant, Issued)>>,
    /// Set when someone claimed an offer of the current lane but did not claim the lane yet (a
    /// reader may be about to). It holds the receiver mark that the offer was addressed to. While
    /// that receiver lives, or while it is not known, `Writer::close` does not release the lane as
    /// unclaimable.
    claimed_unseen: Cell<Option<u32>>,
    /// The receiver mark that the last offer was addressed to, or 0 when it is not known.
    offered_to: Cell<u32>,
    resend: VecDeque<Resent>,
    /// 1 when a lane is open and 0 when not, for the metrics. Another thread reads this counter.
    open: Arc<std::sync::atomic::AtomicU64>,
}

/// How a wait for room in a lane ended.
enum Wait {
    /// The entry was written.
    Room,
    /// The lane's reader closed its end or died; nothing was written.
    ReaderGone,
}

/// One entry that `Writer::push` writes into a lane.
#[derive(Clone, Copy)]
struct Outgoing<'e> {
    /// `KIND_FRAME` when the entry holds the records themselves, or `KIND_INDIRECT` when the entry
    /// names a block that holds them.
    kind: u32,
    bytes: &'e [u8],
    /// Marks the entry's blocks in flight. It runs once the entry is staged in the ring.
    mark: &'e dyn Fn(),
}

impl Writer {
    /// Returns the counter of lanes open for writing now (0 or 1). Other threads can read it.
    pub(crate) fn open_count(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.open.clone()
    }

    /// Sends `frame` through the lane, and offers a new lane first if needed. On error, nothing of
    /// `frame` was sent and `mark` was not called. On success, the records of `frame` belong to the
    /// reader.
    ///
    /// `mark` marks the frame's blocks in flight. It runs only once the entry is staged in the ring
    /// (see `Ring::push`), and never while a send waits for room. So a writer killed at any moment
    /// leaves every block accounted for by a ring entry, by its own mark or by a staged entry.
    pub(crate) fn send(
        &mut self,
        mgr: &Arc<Attachment>,
        link: &dyn Link,
        frame: &[u8],
        deadline: Deadline,
        mark: &dyn Fn(),
    ) -> Result<(), TransferError> {
        if self.capacity == 0 {
            self.capacity = capacity_for(link.send_queue(), mgr.own().size());
        }
        let mut holder = indirect(mgr, frame, self.capacity)?;
        // A frame too large for the ring travels in a block of its own. That block is marked in
        // flight first, so that a reader which finishes a staged entry can read it. (A block that
        // its dead writer still marks as its own may be freed by the sweep of the dead.)
        let mark_all = || {
            if let Some((h, _)) = &holder {
                h.mark_in_flight(true);
            }
            mark();
        };
        let (kind, entry) = match &holder {
            Some((_, e)) => (KIND_INDIRECT, e.as_slice()),
            None => (KIND_FRAME, frame),
        };
        loop {
            let Some(l) = &self.lane else {
                self.offer(mgr, link, deadline)?;
                continue;
            };
            // Make the ring's view once per turn, because making it looks the block up in the
            // segment table.
            let ring = l.ring();
            if ring.closed() & READER_CLOSED != 0 {
                self.retire(mgr, false);
                continue;
            }
            if !self.resend.is_empty() {
                if let Wait::ReaderGone = self.push_resent(mgr, link, deadline)? {
                    self.retire(mgr, true);
                }
                // The entries that waited were sent again, or taken back again from a reader that
                // left. Either way, look at the lane afresh.
                continue;
            }
            if ring.reader() == 0 {
                self.reoffer_if_unclaimed(mgr, l, &ring, link);
            }
            // The usual case: the ring has room, so the entry goes in without the call into the
            // waiting loop of `Writer::push`.
            let pushed = match ring.push_seen(kind, entry, mark_all, &l.seen) {
                Ok(true) => Wait::Room,
                _ => self.push(mgr, link, l, &ring, Outgoing { kind, bytes: entry, mark: &mark_all }, deadline)?,
            };
            if let Wait::ReaderGone = pushed {
                self.retire(mgr, true);
                continue;
            }
            // A reader asleep in its socket gets one wake frame per sleep. If the send queue is
            // full, frames wait for the reader anyway, so a failed wake changes nothing.
            if ring.reader_needs_wake() {
                let _ = link.send_control(&meta::WAKE_FRAME, Some(ring.reader()), Deadline::Now, &|_, _| {});
            }
            break;
        }
        if let Some((mut h, _)) = holder.take() {
            h.hand_over();
        }
        Ok(())
    }

    fn offer(&mut self, mgr: &Arc<Attachment>, link: &dyn Link, deadline: Deadline) -> Result<(), TransferError> {
        let capacity = self.capacity;
        let block = Message::allocate(mgr.clone(), ring::block_bytes(capacity) as usize, 64)?;
        // Write the ring while the block is still ours alone. If we are killed meanwhile, we leave
        // a block that our mark names, which the sweep of the dead frees. We do not leave a listed
        // lane that the sweep cannot read.
        let words = block.words().ok_or(ShmError::Config("a lane block is not whole words".into()))?;
        Ring::init(words, capacity, mgr.owner());
        // The writer and the reader hold the block, or an unclaimed offer still names it, so the
        // block is never a dead transport's alone (see `Message::mark_held`). The writer's
        // reference is listed first.
        block.list_lane();
        block.mark_held(crate::segment::slots::SHARED);
        let lane = LaneBlock::new(block, capacity);
        self.claimed_unseen.set(None);
        self.send_offer(mgr, &lane, link, deadline)?;
        // There may be no peer to send the offer to yet: the ZeroMQ socket of a push attaches the
        // connection it made a moment after the connect. Wait for the peer within the send's
        // deadline. A message pushed into a lane that nobody heard of would wait until the writer's
        // next send offers the lane. (A single message sent after a connect stayed in the lane that
        // way.)
        //
        // On error, the lane is dropped, and the message stays the caller's.
        while self.offered.get().is_none() {
            if mgr.interrupted() {
                return Err(TransferError::Interrupted);
            }
            if deadline.passed() {
                return Err(TransferError::Timeout);
            }
            std::thread::sleep(Duration::from_millis(1));
            self.send_offer(mgr, &lane, link, deadline)?;
        }
        self.lane = Some(lane);
        self.open.store(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Sends an offer of `l` to the peer. When the offer cannot go out yet because no peer is
    /// known, the writer records the offer as not made, and makes it later.
    fn send_offer(
        &self,
        mgr: &Attachment,
        l: &LaneBlock,
        link: &dyn Link,
        deadline: Deadline,
    ) -> Result<(), TransferError> {
        let ticket = issue_waiting(mgr, Kind::Offer, &l.block.record(), deadline)?;
        let mut frame = Vec::with_capacity(40);
        meta::encode_lane_offer(&ticket.record(), &mut frame);
        // Whoever reads the offer may claim the lane later, even after this writer is gone. So the
        // offer's receiver is recorded where it is known. If the offer is lost with a killed
        // writer's queue, the offer is then released, and its lane with it (see `orphans`).
        let address = |owner, socket| {
            self.offered_to.set(owner);
            mgr.address(&ticket, owner, socket);
        };
        match link.send_control(&frame, None, deadline, &address) {
            Ok(true) => self.offered.set(Some((Instant::now(), ticket))),
            Ok(false) => {
                mgr.take_back(&ticket);
                self.offered.set(None);
            }
            Err(e) => {
                mgr.take_back(&ticket);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Offers an unclaimed lane again once `REOFFER` passed, or at once if it was never offered.
    /// The earlier offer is taken back first.
    ///
    /// Somebody may have claimed the earlier offer without claiming the lane within `REOFFER`. That
    /// claimant is one of two. The first is whoever released the offer as lost because its receiver
    /// went away; it left the lane to this writer, which lives. The second is a reader about to
    /// claim the lane; that reader then finds the lane taken by whoever claims the new offer first,
    /// and gives its reference back.
    ///
    /// The lane is offered again in either case. (Earlier code never offered such a lane again, and
    /// a receiver that came back got nothing.)
    fn reoffer_if_unclaimed(&self, mgr: &Attachment, l: &LaneBlock, ring: &Ring<'_>, link: &dyn Link) {
        // Check the reader first, so that a claimed lane reads no clock. Every send of a running
        // link finds the lane claimed.
        if ring.reader() != 0 || self.offered.get().is_some_and(|(at, _)| at.elapsed() < REOFFER) {
            return;
        }
        if let Some((_, t)) = self.offered.take() {
            if !mgr.take_back(&t) {
                self.claimed_unseen.set(Some(self.offered_to.get()));
            }
        }
        let _ = self.send_offer(mgr, l, link, Deadline::Now);
    }

    fn push_resent(
        &mut self,
        mgr: &Arc<Attachment>,
        link: &dyn Link,
        deadline: Deadline,
    ) -> Result<Wait, TransferError> {
        let l = self.lane.as_ref().expect("a lane was offered");
        let ring = l.ring();
        while let Some(mut e) = self.resend.pop_front() {
            // These entries were taken back from a lane whose reader left, and their blocks are
            // marked ours again. Like the blocks of any entry, they are marked in flight once the
            // entry is staged. The references of the shared parts are unlisted before the entry is
            // published (see `Message::hand_to_lane`), because once it is published, the reader
            // drops them.
            let listed = Cell::new(std::mem::take(&mut e.listed));
            let mark = || {
                // `take_back_all` marked every block as ours when it took the entry back.
                remark_entry(mgr, e.kind, &e.frame, mgr.owner(), crate::segment::slots::IN_FLIGHT);
                super::resent::unlist(mgr, listed.take());
            };
            match self.push(mgr, link, l, &ring, Outgoing { kind: e.kind, bytes: &e.frame, mark: &mark }, deadline) {
                Ok(Wait::Room) => {}
                other => {
                    // The entry was not staged, so its blocks were not marked, and the shared
                    // parts' references are still listed.
                    e.listed = listed.take();
                    self.resend.push_front(e);
                    return other;
                }
            }
        }
        Ok(Wait::Room)
    }

    /// Appends `entry` to `l`, waiting for room until `deadline`. `ring` is the view of the ring of
    /// `l` that the caller made once for the send.
    #[cold]
    fn push(
        &self,
        mgr: &Arc<Attachment>,
        link: &dyn Link,
        l: &LaneBlock,
        ring: &Ring<'_>,
        entry: Outgoing<'_>,
        deadline: Deadline,
    ) -> Result<Wait, TransferError> {
        let lane_error = |source: LaneError| ShmError::Lane { socket: "(writer)".into(), source };
        loop {
            if ring.push_seen(entry.kind, entry.bytes, entry.mark, &l.seen).map_err(lane_error)? {
                return Ok(Wait::Room);
            }
            if mgr.interrupted() {
                return Err(TransferError::Interrupted);
            }
            if deadline.passed() {
                return Err(TransferError::Timeout);
            }
            let reader = ring.reader();
            if ring.closed() & READER_CLOSED != 0 || (reader != 0 && !mgr.owner_alive(reader)) {
                return Ok(Wait::ReaderGone);
            }
            // Do not spin on a full ring. Its reader has a ring's worth of work to do, and sleeping
            // until the reader has done half of it costs one wake per half ring.
            self.reoffer_if_unclaimed(mgr, l, ring, link);
            if let Some(seen) = ring.wait_for_room().map_err(lane_error)? {
                crate::sys::futex::wait(ring.room_word(), seen, deadline.slice());
                // The writer was woken, or the slice ended. Either way, the next turn announces the
                // wait again.
                ring.stop_waiting();
            }
        }
    }

    /// Drops a lane whose reader left or died. What the reader did not read is kept for the next
    /// lane.
    fn retire(&mut self, mgr: &Arc<Attachment>, check_dead: bool) {
        let Some(l) = self.lane.take() else { return };
        self.open.store(0, std::sync::atomic::Ordering::Relaxed);
        let ring = l.ring();
        let reader = ring.reader();
        // A reader that closed its end dropped its reference itself, and may have exited since.
        let closed = ring.closed() & READER_CLOSED != 0;
        let dead = check_dead && !closed && reader != 0 && !mgr.owner_alive(reader);
        let unread = self.take_back_to_resend(mgr, &ring);
        ring.close(WRITER_CLOSED);
        if dead {
            mgr.sweep_dead(); // drops the dead reader's reference
        }
        log::debug!("lane reader {reader:#x} left; {unread} entries go out again on a new lane");
    }

    /// Takes back what the reader of `ring` did not read. These entries go out again before any
    /// entries that already wait. Returns how many entries were taken back.
    fn take_back_to_resend(&mut self, mgr: &Arc<Attachment>, ring: &Ring<'_>) -> usize {
        let unread = take_back(mgr, ring);
        let n = unread.len();
        for e in unread.into_iter().rev() {
            self.resend.push_front(Resent::new(mgr, e));
        }
        n
    }

    /// Returns whether messages wait to go out again: either taken back from a reader that left, or
    /// still in a lane whose reader left or died. They go before any later message, so the next
    /// send must go through the lane. That send takes them back and sends them first.
    pub(crate) fn owes(&self, mgr: &Attachment) -> bool {
        !self.resend.is_empty()
            || self.lane.as_ref().is_some_and(|l| {
                let ring = l.ring();
                let reader = ring.reader();
                !ring.is_empty().unwrap_or(true)
                    && (ring.closed() & READER_CLOSED != 0 || (reader != 0 && !mgr.owner_alive(reader)))
            })
    }

    /// Whether a message could go out now without waiting for room.
    pub(crate) fn has_room(&self) -> bool {
        self.lane.as_ref().is_none_or(|l| l.ring().has_room(meta::BLOCK_LEN).unwrap_or(false))
    }

    /// Closes the writer as the socket closes. A reader still reads what is in the lane, and so
    /// does a reader that claims the lane later: the offer may still wait in ZeroMQ's queue, which
    /// linger delivers without the reader's help.
    ///
    /// A lane with no offer out can never be claimed; either no offer could be made, or the last
    /// one was taken back. Such a lane is released now, with what it holds.
    pub(crate) fn close(&mut self, mgr: &Arc<Attachment>) {
        self.open.store(0, std::sync::atomic::Ordering::Relaxed);
        if let Some(mut l) = self.lane.take() {
            let ring = l.ring();
            // No reader can come when two things hold. First, no offer's ticket is out, or the
            // ticket that is out went to a receiver that is gone (this code takes that ticket
            // back). `send_offer` takes back a ticket whose offer did not go, and a claim wins the
            // ticket before it claims the ring. Second, no claim of an earlier offer may still be
            // on its way to the ring.
            let offer_out = self.offered.get().is_some_and(|(_, t)| !(mgr.addressee_gone(&t) && mgr.take_back(&t)));
            let claim_pending = self.claimed_unseen.get().is_some_and(|r| !mgr.receiver_gone(r));
            if !offer_out && !claim_pending && ring.reader() == 0 {
                ring.close(READER_CLOSED | WRITER_CLOSED);
                self.take_back_to_resend(mgr, &ring);
                drop(l); // our reference, the only one: the block is freed
                return self.release_resend(mgr);
            }
            if leave_to_claimant(&l.block, &ring) {
                l.block.hand_over(); // our reference is the first claimant's
                return self.release_resend(mgr);
            }
            let reader = ring.reader();
            let before = ring.close(WRITER_CLOSED);
            let dead = reader != 0 && before & READER_CLOSED == 0 && !mgr.owner_alive(reader);
            if before & READER_CLOSED != 0 || dead {
                self.take_back_to_resend(mgr, &ring);
            }
            if dead {
                mgr.sweep_dead(); // drops the dead reader's reference
            }
        }
        self.release_resend(mgr);
    }

    /// Offers the lane before the socket closes, when no peer was known to offer it to yet. The
    /// lane is offered as soon as a peer is known, within `deadline` (the socket's linger).
    /// ZeroMQ's linger then delivers the offer, as it would have delivered the records.
    pub(crate) fn offer_before_close(&self, mgr: &Attachment, link: &dyn Link, deadline: Deadline) {
        let Some(l) = &self.lane else { return };
        loop {
            if l.ring().reader() != 0 || self.offered.get().is_some() {
                return;
            }
            let _ = self.send_offer(mgr, l, link, Deadline::Now);
            if self.offered.get().is_some() || deadline.passed() || mgr.interrupted() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Returns whether this writer has a lane that no reader claimed yet.
    pub(crate) fn unclaimed(&self) -> bool {
        self.lane.as_ref().is_some_and(|l| l.ring().reader() == 0)
    }

    /// Releases the entries that were taken back from a reader that left and could not go out
    /// again.
    fn release_resend(&mut self, mgr: &Arc<Attachment>) {
        let n = release_entries(mgr, self.resend.drain(..).map(|e| e.into_taken(mgr)));
        if n > 0 {
            log::warn!("{n} messages sent to a peer that left were dropped when the socket closed");
        }
    }
}

/// Leaves a lane to its first claimant: its block, whose reference this writer lists, and its ring.
/// Returns false when a reader claimed the lane already.
///
/// The writer's reference becomes the claimant's, so the writer unlists it first. Otherwise, if
/// this process were killed right after the lane was orphaned, the sweep of this process would drop
/// the reference as well, and free the lane under the reader that took it over.
///
/// If the process is killed between the two steps, the reference belongs to nobody and the lane
/// stays. That is a leak, but never a double drop.
pub(super) fn leave_to_claimant(block: &Message, ring: &Ring<'_>) -> bool {
    block.unlist_for_hand_over();
    if ring.orphan() {
        ring.close(WRITER_CLOSED);
        return true;
    }
    block.list_lane(); // a reader came first: ours again
    false
}
