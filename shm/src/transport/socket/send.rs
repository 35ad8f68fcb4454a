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

/// Parts of a multipart whose messages `send_parts_of` holds without allocating.
const HELD_ON_STACK: usize = 16;

impl Socket {
    /// Sends the records of `parts` (one message, or the parts of a multipart) in one frame:
    /// through the lane, or on the socket with a ticket for each. On error nothing was handed over.
    ///
    /// A block goes in flight (marked so; the taker marks it as its own) only once a ticket holds
    /// its reference, and comes back (marked as ours again) before the ticket is taken back: a
    /// process killed at any point leaves a block its mark or a ticket accounts for.
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
        // Lane entries have no tickets: the lane accounts for them once staged (the blocks are
        // marked in flight then, see `Writer::send`).
        let mark = || parts.iter().for_each(|p| p.msg().hand_to_lane());
        // One message in a block, the usual case: its frame is built on the stack.
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

    /// Sends the records of `parts` on the socket (to whoever ZeroMQ hands them to), their tickets
    /// naming the receiver where it can be named (see `addressee`).
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

    /// Sends again, first and in order, what receivers that died did not claim (see `addressee`).
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

    /// Issues the tickets of `parts` into `issued`, then marks their blocks in flight (in that
    /// order: a block in flight is always one a ticket holds). A shared reference is unlisted
    /// before its ticket holds it (see `Message::unlist_for_hand_over`).
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

    /// Takes back the tickets of `parts`, whose records did not leave, marking them ours first
    /// (and listing shared references again once no ticket holds them).
    pub(super) fn take_back_parts<P: Held>(&self, parts: &[P], issued: &mut Vec<Issued>) {
        parts.iter().for_each(|p| p.msg().mark_in_flight(false));
        self.take_back(issued);
        parts.iter().for_each(|p| p.msg().list_if_shared());
    }

    /// Closing: waits within `linger` until the peers claimed what they were handed and a reader
    /// claimed the lane, while the socket still delivers (ZeroMQ's own linger, after the close,
    /// lost a frame a router had queued for a peer it was still connecting to; see
    /// [`CLAIM_WAIT_MS`]).
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

    /// Learns the peers that connected (PUSH, PUB; see `peers`): at once with `now` or when none
    /// is known, else at most every [`LEARN_EVERY`] (reading the socket costs a system call).
    pub(super) fn learn_peers(&self, now: bool) {
        let due = now || self.peers.borrow().len() == 0 || self.learnt.get().is_none_or(|t| t.elapsed() >= LEARN_EVERY);
        if due {
            self.learnt.set(Some(std::time::Instant::now()));
            self.peers.borrow_mut().learn(&self.mgr, &self.z, &self.id, self.ty == SocketType::Push);
        }
    }

    /// Sends `frame` to the peer of routing id `id` without waiting: a full queue is a timeout
    /// (or an interruption), a peer gone `EHOSTUNREACH`.
    pub(super) fn send_to(&self, id: &[u8], frame: &[u8]) -> Result<(), TransferError> {
        let mut frames = [fairmq_zmq::Message::from_slice(id), fairmq_zmq::Message::from_slice(frame)];
        self.z.send_parts_uncounted(&mut frames, 0)
    }

    /// A PUSH hands `parts` to one peer: what peers that left did not take goes first, then
    /// `parts`, then, without waiting, what was taken back meanwhile. [`Routed::Lane`]: nothing
    /// was sent, a lane takes `parts`.
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

    /// Sends again what peers that left did not take, in order, within `deadline`.
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

    /// Hands one message to the peer whose turn it is, skipping peers whose queue is full and
    /// waiting within `deadline` while none can take it. Its tickets name the peer that took it.
    /// With `after_taken_back`, a message taken back from a peer that left meanwhile must go
    /// first: nothing is sent then ([`Routed::TakenBack`]).
    pub(super) fn route<P: Held>(
        &self,
        parts: &[P],
        deadline: Deadline,
        after_taken_back: bool,
    ) -> Result<Routed, TransferError> {
        // Records on the socket: the peer has something to claim before a lane may carry more.
        self.lanes.one_peer.set(None);
        let issued = &mut *self.issued.borrow_mut();
        self.issue_for(parts, deadline, issued)?;
        let (frame, _) = &mut *self.scratch.borrow_mut();
        meta::encode_parts(handed(parts, issued), self.mgr.config().metadata_msg_size, frame);
        let mut false_room = 0;
        let mut waited = false;
        loop {
            // Peers are learnt at once when none is known, or after a wait; else now and then.
            self.learn_peers(waited);
            // A single peer came while the message waited for one (or its queue emptied): with
            // nothing of ours left to claim on the socket, a lane carries the message. Before, a
            // stream that started before its receiver connected went through the socket until the
            // receiver once caught up with all of it: thousands of messages at twice the cost.
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
            // Turns wrap around: highest index first, so the others stay where they are.
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
            // Writable twice without a peer taking it: a peer that is not the session's keeps
            // the ROUTER writable; do not spin on it.
            false_room = if self.wait_for_room(deadline) { false_room + 1 } else { 0 };
            if false_room > 1 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            waited = true;
        }
    }

    /// Waits until the socket may take a frame or a peer's probe arrived, the transport is
    /// interrupted, or `deadline` (at most a moment: peers' liveness is looked at between waits).
    /// Returns whether the socket said it may take a frame.
    pub(super) fn wait_for_room(&self, deadline: Deadline) -> bool {
        const MOMENT: i64 = 100;
        let ms = match deadline {
            Deadline::Never => MOMENT,
            d => i64::from(d.ms_left()).min(MOMENT),
        };
        self.z.wait_writable(self.mgr.interrupter_fd(), ms)
    }

    /// Issues a ticket for each non-empty record into `out`, waiting within `deadline` while every
    /// ticket this transport can get is out (its peers claim them as they receive). On error none
    /// is left issued.
    pub(super) fn issue_all(
        &self,
        records: impl Iterator<Item = Record>,
        deadline: Deadline,
        out: &mut Vec<Issued>,
    ) -> Result<(), TransferError> {
        out.clear();
        let records: smallvec::SmallVec<[Record; 16]> = records.filter(|r| !r.is_empty()).collect();
        // Every part holds its ticket until received: a multipart of more parts than the segment
        // has tickets would wait forever.
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

    /// Sends one message: only its metadata travels. On success the receiver owns the block and
    /// `msg` is empty; on any error `msg` is unchanged.
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

    /// Sends all parts in one metadata frame. Empty multiparts are refused (as by the zeromq transport).
    pub fn send_parts(&self, parts: &mut [Message], timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        self.send_held(parts, timeout_ms)
    }

    /// [`send_parts`](Socket::send_parts) of a caller's own messages that hold ours (see
    /// [`Part`]): each part's message is asked for once; a multipart with a part that holds none
    /// is refused whole, with an error.
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

    /// A publisher's number of known subscribers (those whose probe arrived; FairMQ's
    /// `GetNumberOfConnectedPeers`); 0 for other socket types.
    pub fn connected_subscribers(&self) -> usize {
        if self.ty != SocketType::Pub {
            return 0;
        }
        self.learn_peers(true);
        self.peers.borrow().len()
    }

    /// Connections refused so far because the peer was not a shared-memory socket of this session
    /// (PUSH, PUB).
    pub fn refused_peers(&self) -> u64 {
        self.learn_peers(true);
        self.peers.borrow().refused()
    }

    /// Sends the parts' records to every subscriber, one reference and one ticket each; the
    /// publisher's own references are released afterwards (freeing blocks nobody got).
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
            // Like a full queue, no free ticket makes this subscriber miss the message.
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
                    // Gone (ROUTER_MANDATORY says unroutable): forget it; full queue: it misses this one.
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

    /// A PUSH in a session of its own, a message of 100 bytes and a copy of it (a shared block)
    /// whose ticket was just issued, as a send does; the copy's record and tickets.
    /// (Fields drop in this order: the session's files go last.)
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

        /// The shared block was freed, once, and the segment is sound.
        fn assert_freed_once(&self) {
            let Record::Block { offset, slot, .. } = self.rec else { panic!("a block") };
            let count = self.s.mgr.own().rc(offset, slot).load(std::sync::atomic::Ordering::Acquire) as u32;
            assert_eq!(count, 0, "freed once");
            self.s.mgr.own().check().unwrap();
        }
    }

    /// A sender killed after a ticket took a shared part's reference (between issuing it and
    /// forgetting the message) leaves that reference to the ticket (its receiver, or the release
    /// of orphans) alone: the sweep of the dead must not drop it too. Before, it stayed in the
    /// sender's ledger until the send returned, and was dropped twice.
    #[test]
    fn a_shared_part_handed_to_a_ticket_is_not_in_its_senders_ledger() {
        let mut f = CopyIssued::new("send-ledger");
        assert_eq!(f.s.mgr.release_ledger_as_if_dead(), 1, "only the original's reference is listed");
        f.original.hand_over(); // dropped by that sweep
        f.s.take_back_parts(std::slice::from_ref(&f.copy), &mut f.issued);
        drop(std::mem::replace(&mut f.copy, Message::empty(f.s.mgr.clone()))); // taken back: the last reference
        f.assert_freed_once();
    }

    /// A shared part taken back from a ticket nobody claimed (its receiver died: `reclaim`, for
    /// the resend queue or for release) is this process's reference again, and is listed again:
    /// a sender killed while it waits in the resend queue leaves it to the sweep of the dead.
    /// Before, it was not listed, and the block stayed for the session's life.
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
