//! The send path of a [`Socket`]: it sends records through a lane, or on the ZeroMQ socket with a
//! ticket for each. It routes them to one peer or publishes them to all, and takes them back when
//! they cannot go.
//!
//! - A socket with a single peer writes its records into a lane (see `lanes`).
//! - A PUSH hands each message to one peer in turn, skipping peers whose queue is full
//!   ([`Socket::route`]).
//! - A PUB gives every subscriber a reference and a ticket of its own ([`Socket::publish`]).
//! - A PAIR, REQ, REP, DEALER or ROUTER sends on its ZeroMQ socket, and its tickets name the
//!   receiver where it can be named (see `addressee`).
//!
//! Before a new message, a PUSH, PAIR or DEALER sends again, in order, the messages it took back
//! from a receiver that left.
//!
//! A block goes in flight only once a ticket or a staged lane entry holds its reference. It comes
//! back to the sender before its ticket is taken back. So a process killed at any point leaves
//! every block accounted for, by its mark, a ticket or a lane.

use super::*;
use fairmq_zmq::Timeout;

/// How many parts of a multipart `send_parts_of` holds on the stack, without allocating.
const HELD_ON_STACK: usize = 16;

impl Socket {
    /// Sends the records of `parts` (one message, or the parts of a multipart) in one frame. The
    /// frame goes through the lane, or on the ZeroMQ socket with a ticket for each record. On
    /// error, nothing was handed over.
    ///
    /// A block goes in flight only once a ticket holds its reference. The block is then marked in
    /// flight, until its taker marks it as its own. A block comes back, marked as ours again,
    /// before its ticket is taken back. So a process killed at any point leaves every block
    /// accounted for, by its mark or by a ticket.
    pub(super) fn send_records<P: Held>(&self, parts: &[P], timeout_ms: i32) -> Result<(), TransferError> {
        let min = self.mgr.config().metadata_msg_size;
        let deadline = Deadline::new(timeout_ms);
        loop {
            if self.uses_lane() {
                return self.send_through_lane(parts, min, deadline);
            }
            if self.ty != SocketType::Push {
                break;
            }
            match self.push_to_peer(parts, deadline)? {
                Routed::Lane => continue,
                Routed::Sent | Routed::TakenBack => return Ok(()),
            }
        }
        self.resend_to_addressee(deadline)?;
        self.send_addressed(parts, deadline)
    }

    /// Sends the records of `parts` as one entry of the socket's lane.
    fn send_through_lane<P: Held>(&self, parts: &[P], min: usize, deadline: Deadline) -> Result<(), TransferError> {
        // Lane entries have no tickets: once an entry is staged, the lane accounts for it. The
        // blocks are marked in flight only then (see `Writer::send`).
        let mark = || parts.iter().for_each(|p| p.msg().hand_to_lane());
        // In the usual case, one message in a block, the frame is built on the stack.
        let single = match parts {
            [p] if min <= meta::BLOCK_LEN => p.msg().record().block_frame(),
            _ => None,
        };
        let sent = match single {
            Some(frame) => self.lanes.writer.borrow_mut().send(&self.mgr, self, &frame, deadline, &mark),
            None => {
                let (buf, _) = &mut *self.scratch.borrow_mut();
                meta::encode_parts(parts.iter().map(|p| p.msg().record()), min, buf);
                self.lanes.writer.borrow_mut().send(&self.mgr, self, buf, deadline, &mark)
            }
        };
        if sent.is_err() {
            parts.iter().map(P::msg).for_each(|p| {
                p.mark_in_flight(false);
                p.list_if_shared(); // the hand-over did not happen
            });
        }
        sent
    }

    /// Sends the records of `parts` on the ZeroMQ socket, to whichever peer ZeroMQ hands them to.
    /// Their tickets name the receiver when it can be named (see `addressee`).
    pub(super) fn send_addressed<P: Held>(&self, parts: &[P], deadline: Deadline) -> Result<(), TransferError> {
        let issued = &mut *self.issued.borrow_mut();
        self.issue_for(parts, deadline, issued)?;
        let receiver = self.addressee.borrow_mut().as_mut().map_or((0, 0), |a| a.receiver(&self.mgr));
        for t in issued.iter() {
            self.mgr.address(t, receiver.0, receiver.1);
        }
        let (buf, _) = &mut *self.scratch.borrow_mut();
        meta::encode_parts(handed(parts, issued), self.mgr.config().metadata_msg_size, buf);
        let sent = self.z.send_uncounted(&mut fairmq_zmq::Message::from_slice(buf), deadline.ms_left());
        match (&sent, self.addressee.borrow_mut().as_mut()) {
            (Err(_), _) => self.take_back_parts(parts, issued),
            (Ok(()), Some(a)) if receiver.0 != 0 => a.handed(&self.mgr, receiver.0, Sent::of(parts, issued)),
            (Ok(()), Some(a)) => a.forget_claimed(&self.mgr),
            (Ok(()), None) => {}
        }
        sent
    }

    /// Sends again the messages not claimed by receivers that died, in order and before any new
    /// message (see `addressee`).
    pub(super) fn resend_to_addressee(&self, deadline: Deadline) -> Result<(), TransferError> {
        loop {
            let frame = {
                let mut a = self.addressee.borrow_mut();
                let Some(a) = a.as_mut() else { return Ok(()) };
                let released = a.check(&self.mgr, false);
                if released > 0 {
                    log::warn!(
                        "socket {}: released {released} messages whose receiver died before taking them",
                        self.id
                    );
                }
                let Some(frame) = a.resend.pop_front() else { return Ok(()) };
                frame
            };
            match self.send_addressed(&frame, deadline) {
                Ok(()) => frame.into_iter().for_each(|mut p| p.hand_over()),
                Err(e) => {
                    if let Some(a) = self.addressee.borrow_mut().as_mut() {
                        a.resend.push_front(frame);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Issues the tickets of `parts` into `issued`, then marks their blocks in flight. The order
    /// matters: a block in flight is always one that a ticket holds. A shared reference is
    /// unlisted before its ticket holds it (see `Message::unlist_for_hand_over`).
    pub(super) fn issue_for<P: Held>(
        &self,
        parts: &[P],
        deadline: Deadline,
        issued: &mut Vec<Issued>,
    ) -> Result<(), TransferError> {
        parts.iter().for_each(|p| p.msg().unlist_for_hand_over());
        if let Err(e) = self.issue_all(parts.iter().map(|p| p.msg().record()), deadline, issued) {
            parts.iter().for_each(|p| p.msg().list_if_shared());
            return Err(e);
        }
        parts.iter().for_each(|p| p.msg().mark_in_flight(true));
        Ok(())
    }

    /// Takes back the tickets of `parts`, whose records did not leave. `take_back_parts` first
    /// marks the blocks as ours again. Once no ticket holds the shared references, it lists them
    /// again.
    pub(super) fn take_back_parts<P: Held>(&self, parts: &[P], issued: &mut Vec<Issued>) {
        parts.iter().for_each(|p| p.msg().mark_in_flight(false));
        self.take_back(issued);
        parts.iter().for_each(|p| p.msg().list_if_shared());
    }

    /// On close, waits within `linger` until the peers claimed what they were handed and a
    /// reader claimed the lane. This wait happens while the socket still delivers, because
    /// ZeroMQ's own linger, after the close, lost a frame that a router had queued for a peer it
    /// was still connecting to (see [`CLAIM_WAIT_MS`]).
    pub(super) fn linger(&self, linger: Deadline) {
        loop {
            let lane = self.lanes.writer.borrow().unclaimed();
            let peers = matches!(self.ty, SocketType::Push | SocketType::Pub) && {
                self.learn_peers(true);
                self.peers.borrow_mut().unclaimed(&self.mgr)
            };
            if !(lane || peers) || linger.passed() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// Learns which peers connected (PUSH, PUB; see `peers`). It learns at once with `now` or
    /// when no peer is known. Otherwise it learns at most every [`LEARN_EVERY`], because reading
    /// the socket costs a system call.
    pub(super) fn learn_peers(&self, now: bool) {
        let due = now || self.peers.borrow().len() == 0 || self.learnt.get().is_none_or(|t| t.elapsed() >= LEARN_EVERY);
        if due {
            self.learnt.set(Some(std::time::Instant::now()));
            self.peers.borrow_mut().learn(&self.mgr, &self.z, &self.id, self.ty == SocketType::Push);
        }
    }

    /// Sends `frame` to the peer with routing id `id`, without waiting. A full queue gives a
    /// timeout (or an interruption). A peer that is gone gives `EHOSTUNREACH`.
    pub(super) fn send_to(&self, id: &[u8], frame: &[u8]) -> Result<(), TransferError> {
        let mut frames = [fairmq_zmq::Message::from_slice(id), fairmq_zmq::Message::from_slice(frame)];
        self.z.send_parts_uncounted(&mut frames, 0)
    }

    /// A PUSH hands `parts` to one peer. The messages not taken by peers that left go first,
    /// then `parts`, then, without waiting, the messages taken back meanwhile.
    /// [`Routed::Lane`] means that nothing was sent and a lane takes `parts`.
    pub(super) fn push_to_peer<P: Held>(&self, parts: &[P], deadline: Deadline) -> Result<Routed, TransferError> {
        loop {
            self.resend_taken_back(deadline)?;
            match self.route(parts, deadline, true)? {
                Routed::Sent => break,
                Routed::TakenBack => {}
                Routed::Lane => return Ok(Routed::Lane),
            }
        }
        let _ = self.resend_taken_back(Deadline::Now);
        Ok(Routed::Sent)
    }

    /// Sends again, in order and within `deadline`, the messages not taken by peers that left.
    pub(super) fn resend_taken_back(&self, deadline: Deadline) -> Result<(), TransferError> {
        loop {
            let Some(frame) = self.peers.borrow_mut().resend.pop_front() else { return Ok(()) };
            match self.route(&frame, deadline, false) {
                Ok(_) => frame.into_iter().for_each(|mut p| p.hand_over()),
                Err(e) => {
                    self.peers.borrow_mut().resend.push_front(frame);
                    return Err(e);
                }
            }
        }
    }

    /// Hands one message to the peer whose turn it is. `route` skips peers whose queue is full,
    /// and waits within `deadline` while no peer can take the message. The message's tickets name
    /// the peer that took it. With `after_taken_back`, a message taken back meanwhile from a peer
    /// that left must go first. Then nothing is sent, and `route` returns [`Routed::TakenBack`].
    pub(super) fn route<P: Held>(
        &self,
        parts: &[P],
        deadline: Deadline,
        after_taken_back: bool,
    ) -> Result<Routed, TransferError> {
        // These records go on the socket, so the peer has something to claim there before a lane
        // may carry more.
        self.lanes.one_peer.set(None);
        let issued = &mut *self.issued.borrow_mut();
        self.issue_for(parts, deadline, issued)?;
        let (frame, _) = &mut *self.scratch.borrow_mut();
        meta::encode_parts(handed(parts, issued), self.mgr.config().metadata_msg_size, frame);
        let mut false_room = 0;
        let mut waited = false;
        loop {
            // Peers are learnt at once when none is known or after a wait, and otherwise now and
            // then.
            self.learn_peers(waited);
            // A single peer came while the message waited for one, or that peer's queue emptied.
            // With nothing of ours left to claim on the socket, a lane carries the message.
            // Before this check, a stream that started before its receiver connected went through
            // the socket until the receiver once caught up with all of it. That meant thousands
            // of messages at twice the cost.
            if waited && after_taken_back && self.uses_lane() {
                self.take_back_parts(parts, issued);
                return Ok(Routed::Lane);
            }
            let mut peers = self.peers.borrow_mut();
            if after_taken_back && !peers.resend.is_empty() {
                drop(peers);
                self.take_back_parts(parts, issued);
                return Ok(Routed::TakenBack);
            }
            let (mut gone, mut took) = (Vec::new(), None);
            for k in 0..peers.len() {
                let i = peers.turn(k);
                let p = peers.get_mut(i);
                let (owner, socket) = p.receiver();
                for t in issued.iter() {
                    self.mgr.address(t, owner, socket);
                }
                match self.send_to(&p.id, frame) {
                    Ok(()) => {
                        p.handed(&self.mgr, Sent::of(parts, issued));
                        took = Some(i);
                        break;
                    }
                    Err(TransferError::Zmq(zmq::Error::EHOSTUNREACH)) => gone.push(i),
                    Err(TransferError::Timeout | TransferError::Interrupted) => {} // its queue is full
                    Err(e) => {
                        self.take_back_parts(parts, issued);
                        return Err(e);
                    }
                }
            }
            if let Some(i) = took {
                peers.took(i);
            }
            // Turns wrap around, so `gone` is not in order. Peers are taken back from the highest
            // index down, so that the other peers stay where they are.
            gone.sort_unstable();
            for &i in gone.iter().rev() {
                log::debug!("socket {}: a peer left", self.id);
                peers.take_back(&self.mgr, i, true);
            }
            drop(peers);
            if took.is_some() {
                issued.clear();
                return Ok(Routed::Sent);
            }
            if self.mgr.interrupted() {
                self.take_back_parts(parts, issued);
                return Err(TransferError::Interrupted);
            }
            if deadline.passed() {
                self.take_back_parts(parts, issued);
                return Err(TransferError::Timeout);
            }
            // The socket was writable twice, yet no peer took the message. A peer that is not of
            // this session keeps the ROUTER writable, so do not spin on it.
            false_room = if self.wait_for_room(deadline) { false_room + 1 } else { 0 };
            if false_room > 1 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            waited = true;
        }
    }

    /// Waits until the socket may take a frame, a peer's probe arrived, the transport is
    /// interrupted, or `deadline` passed. It waits at most a moment, because the peers' liveness
    /// is looked at between waits. Returns whether the socket said it may take a frame.
    pub(super) fn wait_for_room(&self, deadline: Deadline) -> bool {
        const MOMENT: i64 = 100;
        let ms = match deadline {
            Deadline::Never => MOMENT,
            d => i64::from(d.ms_left()).min(MOMENT),
        };
        self.z.wait_writable(self.mgr.interrupter_fd(), ms)
    }

    /// Issues a ticket into `out` for each non-empty record. While every ticket this transport
    /// can get is out, `issue_all` waits within `deadline`: the transport's peers claim tickets
    /// as they receive. On error, no ticket is left issued.
    pub(super) fn issue_all(
        &self,
        records: impl Iterator<Item = Record>,
        deadline: Deadline,
        out: &mut Vec<Issued>,
    ) -> Result<(), TransferError> {
        out.clear();
        let records: smallvec::SmallVec<[Record; 16]> = records.filter(|r| !r.is_empty()).collect();
        // Every part holds its ticket until it is received. So a multipart with more parts than
        // the segment has tickets would wait forever.
        let capacity = self.mgr.ticket_capacity();
        if records.len() > capacity as usize {
            return Err(ShmError::Config(format!(
                "a multipart of {} parts needs a hand-over ticket each at once, and segment {} has {capacity} \
                 (one per 8 KiB of --shm-segment-size, at least 512): send fewer parts or use a larger segment",
                records.len(),
                self.mgr.own().id()
            ))
            .into());
        }
        for rec in records {
            match crate::transport::socket::lanes::issue_waiting(&self.mgr, Kind::Message, &rec, deadline) {
                Ok(t) => out.push(t),
                Err(e) => {
                    self.take_back(out);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Takes back tickets whose records did not leave.
    pub(super) fn take_back(&self, issued: &mut Vec<Issued>) {
        for t in issued.drain(..) {
            if !self.mgr.take_back(&t) {
                log::error!("socket {}: ticket {} of a record that never left was claimed", self.id, t.ticket);
            }
        }
    }

    /// Sends one message; only its metadata travels. On success, the receiver owns the block and
    /// `msg` is empty. On any error, `msg` is unchanged.
    pub fn send(&self, msg: &mut Message, timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        self.check_session(msg)?;
        match self.ty {
            SocketType::Pub => return self.publish(std::slice::from_mut(msg)),
            SocketType::Sub | SocketType::Pull => return Err(not_supported()),
            _ => {}
        }
        let size = msg.size();
        self.send_records(std::slice::from_ref(msg), timeout_ms)?;
        msg.hand_over();
        self.z.counters_ref().record_tx(size);
        Ok(size)
    }

    /// Sends all parts in one metadata frame. An empty multipart is refused, as the zeromq
    /// transport refuses it.
    pub fn send_parts(&self, parts: &mut [Message], timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        self.send_held(parts, timeout_ms)
    }

    /// [`send_parts`](Socket::send_parts) for a caller's own messages that hold ours (see
    /// [`Part`]). Each part is asked for its message once. A multipart with a part that holds no
    /// message of ours is refused whole, with an error.
    pub fn send_parts_of<P: Part>(&self, parts: &mut [P], timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        // On the stack for the usual few parts: no allocation per send.
        let mut held: smallvec::SmallVec<[&mut Message; HELD_ON_STACK]> =
            smallvec::SmallVec::with_capacity(parts.len());
        for p in parts.iter_mut() {
            let m = p.as_shm_mut().ok_or_else(|| ShmError::Config("a part is not a shared-memory message".into()))?;
            held.push(m);
        }
        self.send_held(&mut held, timeout_ms)
    }

    fn send_held<P: Held>(&self, parts: &mut [P], timeout_ms: i32) -> TransferResult {
        if parts.is_empty() {
            return Err(TransferError::EmptyMultipart);
        }
        for p in parts.iter() {
            self.check_session(p.msg())?;
        }
        match self.ty {
            SocketType::Pub => return self.publish(parts),
            SocketType::Sub | SocketType::Pull => return Err(not_supported()),
            _ => {}
        }
        let total: usize = parts.iter().map(|p| p.msg().size()).sum();
        self.send_records(parts, timeout_ms)?;
        for p in parts.iter_mut() {
            p.msg_mut().hand_over();
        }
        self.z.counters_ref().record_tx(total);
        Ok(total)
    }

    /// The number of subscribers a publisher knows: those whose probe arrived (FairMQ's
    /// `GetNumberOfConnectedPeers`). Returns 0 for other socket types.
    pub fn connected_subscribers(&self) -> usize {
        if self.ty != SocketType::Pub {
            return 0;
        }
        self.learn_peers(true);
        self.peers.borrow().len()
    }

    /// How many connections this socket (PUSH, PUB) refused so far because the peer was not a
    /// shared-memory socket of this session.
    pub fn refused_peers(&self) -> u64 {
        self.learn_peers(true);
        self.peers.borrow().refused()
    }

    /// Sends the records of `parts` to every subscriber, each with a reference and a ticket of its
    /// own. Afterwards the publisher releases its own references, which frees the blocks that no
    /// subscriber got.
    pub(super) fn publish<P: Held>(&self, parts: &mut [P]) -> TransferResult {
        for p in parts.iter().map(P::msg) {
            p.share()?;
            p.list_before_sharing()?;
        }
        self.learn_peers(false);
        let total: usize = parts.iter().map(|p| p.msg().size()).sum();
        let min = self.mgr.config().metadata_msg_size;
        let (frame, _) = &mut *self.scratch.borrow_mut();
        let issued = &mut *self.issued.borrow_mut();
        let mut peers = self.peers.borrow_mut();
        let mut gone = Vec::new();
        for i in 0..peers.len() {
            let p = peers.get_mut(i);
            parts.iter().for_each(|p| p.msg().add_reference());
            // Without a free ticket, this subscriber misses the message, as with a full queue.
            if self.issue_all(parts.iter().map(|p| p.msg().record()), Deadline::Now, issued).is_err() {
                parts.iter().for_each(|p| p.msg().drop_reference());
                continue;
            }
            for t in issued.iter() {
                self.mgr.address(t, p.owner, p.socket);
            }
            meta::encode_parts(handed(parts, issued), min, frame);
            match self.send_to(&p.id, frame) {
                Ok(()) => p.handed(&self.mgr, Sent::of(parts, issued)),
                Err(e) => {
                    self.take_back(issued);
                    parts.iter().for_each(|p| p.msg().drop_reference());
                    // A subscriber that is gone (ROUTER_MANDATORY says unroutable) is forgotten.
                    // A subscriber whose queue is full misses this message only.
                    if matches!(e, TransferError::Zmq(zmq::Error::EHOSTUNREACH)) {
                        gone.push(i);
                    }
                }
            }
        }
        for &i in gone.iter().rev() {
            peers.take_back(&self.mgr, i, false);
        }
        drop(peers);
        for p in parts.iter_mut() {
            p.msg_mut().rebuild();
        }
        self.z.counters_ref().record_tx(total);
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PUSH in a session of its own, a message of 100 bytes, and a copy of it (a shared block)
    /// whose ticket was just issued, as a send issues it. It also holds the copy's record and
    /// tickets. The fields drop in the order declared, so the session's files go last.
    struct CopyIssued {
        original: Message,
        copy: Message,
        rec: Record,
        issued: Vec<Issued>,
        s: Socket,
        _t: crate::Transport,
        _scratch: crate::scratch::Scratch,
    }

    impl CopyIssued {
        fn new(tag: &str) -> CopyIssued {
            let mut c = crate::transport::config::ShmConfig::new("t", &format!("{tag}-{}", std::process::id()));
            c.segment_size = 8 << 20;
            let scratch = crate::scratch::Scratch::of_shm_id(&c.resolved_shm_id());
            let t = crate::Transport::new(&c).unwrap();
            let s = t.socket(SocketType::Push, "out").unwrap();
            let original = t.new_message_with_size(100).unwrap();
            let mut copy = t.new_message();
            copy.copy_from(&original).unwrap();
            let rec = copy.record();
            let mut issued = Vec::new();
            s.issue_for(std::slice::from_ref(&copy), Deadline::Now, &mut issued).unwrap();
            assert_eq!(issued.len(), 1);
            CopyIssued { original, copy, rec, issued, s, _t: t, _scratch: scratch }
        }

        /// Asserts that the shared block was freed exactly once and that the segment is sound.
        fn assert_freed_once(&self) {
            let Record::Block { offset, slot, .. } = self.rec else { panic!("a block") };
            let count = self.s.mgr.own().rc(offset, slot).load(std::sync::atomic::Ordering::Acquire) as u32;
            assert_eq!(count, 0, "freed once");
            self.s.mgr.own().check().unwrap();
        }
    }

    /// A sender may be killed after a ticket took a shared part's reference, that is, between
    /// issuing the ticket and forgetting the message. The reference then belongs to the ticket
    /// alone: the ticket's receiver, or the release of orphans, drops it. The sweep of the dead
    /// must not drop it too. Before, the reference stayed in the sender's ledger until the send
    /// returned, and was dropped twice.
    #[test]
    fn a_shared_part_handed_to_a_ticket_is_not_in_its_senders_ledger() {
        let mut f = CopyIssued::new("send-ledger");
        assert_eq!(f.s.mgr.release_ledger_as_if_dead(), 1, "only the original's reference is listed");
        f.original.hand_over(); // dropped by that sweep
        f.s.take_back_parts(std::slice::from_ref(&f.copy), &mut f.issued);
        drop(std::mem::replace(&mut f.copy, Message::empty(f.s.mgr.clone()))); // taken back: the last reference
        f.assert_freed_once();
    }

    /// A shared part taken back from a ticket that nobody claimed is this process's reference
    /// again, and is listed again. The ticket's receiver died, and `reclaim` took the part back,
    /// for the resend queue or for release. So a sender killed while the part waits in the resend
    /// queue leaves the reference to the sweep of the dead. Before, the part was not listed, and
    /// the block stayed for the session's life.
    #[test]
    fn a_shared_part_taken_back_from_its_ticket_is_listed_again() {
        let mut f = CopyIssued::new("send-relist");
        f.copy.hand_over(); // sent: its ticket holds the reference now
        let sent = Sent::One(f.rec, f.issued.pop().expect("a ticket"));
        let mut back = crate::transport::socket::peers::reclaim(&f.s.mgr, sent).expect("taken back whole");
        assert_eq!(back.len(), 1);
        assert_eq!(f.s.mgr.release_ledger_as_if_dead(), 2, "the original's reference and the one taken back");
        f.original.hand_over(); // both dropped by that sweep
        back.iter_mut().for_each(Message::hand_over);
        f.assert_freed_once();
    }
}
