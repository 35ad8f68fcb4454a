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

/// The lane a socket with a single peer writes, and entries taken back from lanes whose reader left.
#[derive(Default)]
pub(crate) struct Writer {
    lane: Option<LaneBlock>,
    /// Ring bytes of this writer's lanes, fixed at its first send (entries taken back from a lane
    /// whose reader left must fit the next one).
    capacity: u64,
    /// When the lane was last offered, and the offer's ticket (an offer sent just as the peer went
    /// away is lost with the connection; until a reader claims the lane it is offered again, the
    /// earlier offer taken back).
    offered: Cell<Option<(Instant, Issued)>>,
    /// An offer of the current lane was claimed by someone who did not claim the lane yet (a
    /// reader may be about to), and the receiver it was addressed to: while that one lives (or is
    /// not known), the lane is not released as unclaimable at close.
    claimed_unseen: Cell<Option<u32>>,
    /// The receiver mark the last offer was addressed to (0: not known).
    offered_to: Cell<u32>,
    resend: VecDeque<Resent>,
    /// Whether a lane is open (1) or not (0), for the metrics (another thread reads it).
    open: Arc<std::sync::atomic::AtomicU64>,
}

/// How a wait for room in a lane ended.
enum Wait {
    /// The entry was written.
    Room,
    /// The lane's reader closed its end or died; nothing was written.
    ReaderGone,
}

/// One entry a push writes into a lane.
#[derive(Clone, Copy)]
struct Outgoing<'e> {
    /// `KIND_FRAME` (the records themselves) or `KIND_INDIRECT` (a block that holds them).
    kind: u32,
    bytes: &'e [u8],
    /// Marks the entry's blocks in flight, once the entry is staged in the ring.
    mark: &'e dyn Fn(),
}

impl Writer {
    /// Lanes open for writing now (0 or 1), readable from other threads.
    pub(crate) fn open_count(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.open.clone()
    }

    /// Sends `frame` through the lane (offering a new one first if needed). On error nothing of
    /// `frame` was sent (and `mark` was not called); on success its records belong to the reader.
    /// `mark` marks the frame's blocks in flight: it runs only once the entry is staged in the
    /// ring (see `Ring::push`), never while a send waits for room, so that a writer killed at any
    /// moment leaves blocks a ring entry, its own mark or a staged entry accounts for.
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
        // A frame too large for the ring travels in a block of its own: marked first, so a reader
        // finishing a staged entry can read it (a block its dead writer still marks may be freed).
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
            // The ring's view is made once per turn (it looks the block up in the segment table).
            let ring = l.ring();
            if ring.closed() & READER_CLOSED != 0 {
                self.retire(mgr, false);
                continue;
            }
            if !self.resend.is_empty() {
                if let Wait::ReaderGone = self.push_resent(mgr, link, deadline)? {
                    self.retire(mgr, true);
                }
                // Taken back (or sent again) first: the lane is looked at afresh.
                continue;
            }
            if ring.reader() == 0 {
                self.reoffer_if_unclaimed(mgr, l, &ring, link);
            }
            // The usual case, room in the ring, without the call into the waiting loop.
            let pushed = match ring.push_seen(kind, entry, mark_all, &l.seen) {
                Ok(true) => Wait::Room,
                _ => self.push(mgr, link, l, &ring, Outgoing { kind, bytes: entry, mark: &mark_all }, deadline)?,
            };
            if let Wait::ReaderGone = pushed {
                self.retire(mgr, true);
                continue;
            }
            // A reader asleep in its socket gets a wake frame (one per sleep). A full queue means
            // frames wait for it anyway, so a failed wake changes nothing.
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
        // The ring written while the block is still ours alone: killed meanwhile, we leave a
        // block our mark names (the sweep of the dead frees it), not a listed lane it cannot read.
        let words = block.words().ok_or(ShmError::Config("a lane block is not whole words".into()))?;
        Ring::init(words, capacity, mgr.owner());
        // Writer and reader hold it, or an unclaimed offer still names it: never a dead
        // transport's alone (see `Message::mark_held`); the writer's reference is listed first.
        block.list_lane();
        block.mark_held(crate::segment::slots::SHARED);
        let lane = LaneBlock::new(block, capacity);
        self.claimed_unseen.set(None);
        self.send_offer(mgr, &lane, link, deadline)?;
        // No peer to send it to yet: a push's ZeroMQ socket attaches the connection it made a
        // moment after the connect. Wait for it within the send's deadline: a message pushed into
        // a lane nobody heard of would wait for the writer's next send to be offered (a single
        // message sent after a connect stayed there). On error the lane goes, and the message
        // stays the caller's.
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

    /// Sends an offer of `l` to the peer; one that cannot go out yet (no peer known) is remembered
    /// as not made, and made later.
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
        // Whoever reads it may claim the lane later, also after this writer is gone. Its receiver
        // is named where it can be: an offer lost with a killed writer's queue is released then,
        // and its lane with it (see `orphans`).
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

    /// Offers an unclaimed lane again once `REOFFER` passed (at once if it was never offered), the
    /// earlier offer taken back first. One that somebody claimed without claiming the lane within
    /// `REOFFER` was claimed by whoever released it as lost (its receiver went away) and left the
    /// lane to this writer, which lives; or by a reader about to claim the lane, which then finds
    /// it taken by whoever claims the new offer first and gives its reference back. Offered again
    /// either way: before, such a lane was never offered again, and a receiver that came back
    /// got nothing.
    fn reoffer_if_unclaimed(&self, mgr: &Attachment, l: &LaneBlock, ring: &Ring<'_>, link: &dyn Link) {
        // The reader first: a claimed lane (every send of a running link) reads no clock.
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
            // Taken back from a lane whose reader left, their blocks marked ours again: in flight
            // once staged, as any entry's, and the shared parts' references unlisted before the
            // entry is published (see `Message::hand_to_lane`): once it is, the reader drops them.
            let listed = Cell::new(std::mem::take(&mut e.listed));
            let mark = || {
                // Every block was marked ours as it was taken back (see `take_back_all`).
                remark_entry(mgr, e.kind, &e.frame, mgr.owner(), crate::segment::slots::IN_FLIGHT);
                super::resent::unlist(mgr, listed.take());
            };
            match self.push(mgr, link, l, &ring, Outgoing { kind: e.kind, bytes: &e.frame, mark: &mark }, deadline) {
                Ok(Wait::Room) => {}
                other => {
                    // Not staged, so not marked: still listed.
                    e.listed = listed.take();
                    self.resend.push_front(e);
                    return other;
                }
            }
        }
        Ok(Wait::Room)
    }

    /// Appends `entry` to `l` (whose ring view `ring` the caller made once for the send),
    /// waiting for room within `deadline`.
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
            // No spinning on a full ring: its reader has a ring's worth of work, and sleeping
            // until half of it is done costs one wake per half ring.
            self.reoffer_if_unclaimed(mgr, l, ring, link);
            if let Some(seen) = ring.wait_for_room().map_err(lane_error)? {
                crate::sys::futex::wait(ring.room_word(), seen, deadline.slice());
                // Woken or not (a slice ended): the next turn announces itself again.
                ring.stop_waiting();
            }
        }
    }

    /// Drops a lane whose reader left or died, keeping what it did not read for the next lane.
    fn retire(&mut self, mgr: &Arc<Attachment>, check_dead: bool) {
        let Some(l) = self.lane.take() else { return };
        self.open.store(0, std::sync::atomic::Ordering::Relaxed);
        let ring = l.ring();
        let reader = ring.reader();
        // A reader that closed its end dropped its reference itself (and may have exited since).
        let closed = ring.closed() & READER_CLOSED != 0;
        let dead = check_dead && !closed && reader != 0 && !mgr.owner_alive(reader);
        let unread = self.take_back_to_resend(mgr, &ring);
        ring.close(WRITER_CLOSED);
        if dead {
            mgr.sweep_dead(); // drops the dead reader's reference
        }
        log::debug!("lane reader {reader:#x} left; {unread} entries go out again on a new lane");
    }

    /// Takes back what `ring`'s reader did not read, to go out again before anything waiting
    /// already; returns how many entries.
    fn take_back_to_resend(&mut self, mgr: &Arc<Attachment>, ring: &Ring<'_>) -> usize {
        let unread = take_back(mgr, ring);
        let n = unread.len();
        for e in unread.into_iter().rev() {
            self.resend.push_front(Resent::new(mgr, e));
        }
        n
    }

    /// Whether messages wait to go out again (taken back from a reader that left), or sit in a lane
    /// whose reader left or died: they go before any later message, so the next send goes through
    /// the lane (whose send takes them back and offers them first).
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

    /// The socket closes: a reader still reads what is in the lane, also one that claims it later
    /// (its offer may still wait in ZeroMQ's queue, which linger delivers without the reader's
    /// help). A lane with no offer out (none could be made, or the last one was taken back) can
    /// never be claimed: it goes now, with what it holds.
    pub(crate) fn close(&mut self, mgr: &Arc<Attachment>) {
        self.open.store(0, std::sync::atomic::Ordering::Relaxed);
        if let Some(mut l) = self.lane.take() {
            let ring = l.ring();
            // No reader can come when no offer's ticket is out (`send_offer` takes back one that
            // did not go; a claim wins the ticket before it claims the ring), or when the one out
            // went to a receiver that is gone (taken back here), and no claim of an earlier offer
            // may still be on its way to the ring.
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

    /// The socket is about to close with a lane no peer was offered yet (none was known): offers
    /// it as soon as one is, within `deadline` (the socket's linger), so that ZeroMQ's linger
    /// delivers the offer as it would have delivered the records.
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

    /// Whether this writer has a lane no reader claimed yet.
    pub(crate) fn unclaimed(&self) -> bool {
        self.lane.as_ref().is_some_and(|l| l.ring().reader() == 0)
    }

    /// Drops what was taken back from a reader that left and could not go out again.
    fn release_resend(&mut self, mgr: &Arc<Attachment>) {
        let n = release_entries(mgr, self.resend.drain(..).map(|e| e.into_taken(mgr)));
        if n > 0 {
            log::warn!("{n} messages sent to a peer that left were dropped when the socket closed");
        }
    }
}

/// Leaves a lane (its block, whose reference this writer lists, and its ring) to its first
/// claimant, unless a reader claimed it already (false). The reference becomes the claimant's, so
/// it is unlisted first: the sweep of this process, killed right after the lane was orphaned,
/// would drop it as well, and free the lane under the reader that took it over. (Killed between
/// the two steps, the reference is nobody's and the lane stays: a leak, never a double drop.)
pub(super) fn leave_to_claimant(block: &Message, ring: &Ring<'_>) -> bool {
    block.unlist_for_hand_over();
    if ring.orphan() {
        ring.close(WRITER_CLOSED);
        return true;
    }
    block.list_lane(); // a reader came first: ours again
    false
}
