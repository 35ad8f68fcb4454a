//! The receive path of a [`Socket`]: it takes frames from the lanes or from the ZeroMQ socket,
//! handles control frames (lane offers, wakes), and turns records into messages.
//!
//! A receive looks at the socket's lanes first, then at the ZeroMQ socket. Before it sleeps, it
//! spins on its lanes for a moment, frees what this process deferred, says in the directory that
//! the socket found itself empty, and marks its lanes' reader asleep, so that a writer wakes it
//! with a frame on the socket. A frame whose records are refused (malformed, forged, repeated, or
//! taken back by their sender) is skipped, and the receive goes on within its timeout; a REQ
//! returns the error instead.

use super::*;
use fairmq_zmq::Timeout;

impl Socket {
    /// Handles `frame` if it is a control frame (a lane offer or a wake), and returns true.
    /// Returns false when `frame` carries messages instead.
    pub(super) fn control(&self, frame: &fairmq_zmq::Message) -> Result<bool, TransferError> {
        match meta::control(frame.data()) {
            None => Ok(false),
            Some(Ok(meta::Control::Wake)) => Ok(true),
            Some(Ok(meta::Control::Lane(rec))) => {
                match self.lanes.readers.borrow_mut().attach(&self.mgr, rec, &self.id) {
                    Ok(()) => Ok(true),
                    // The writer withdrew this offer because no reader claimed it soon enough,
                    // and it offers the lane again: the new offer follows. A forged offer also
                    // ends up here, and like a withdrawn one it grants nothing.
                    Err(ShmError::Metadata(MetaError::Ticket(TicketError::NotIssued(t)))) => {
                        log::debug!("socket {}: lane offer {t} was withdrawn", self.id);
                        Ok(true)
                    }
                    // This socket cannot take the offer, because it is forged or damaged. The
                    // offer is refused and skipped. Meanwhile, the writer's messages come
                    // through the ZeroMQ socket.
                    Err(e) => {
                        log::error!("socket {}: lane offer refused: {e}", self.id);
                        Ok(true)
                    }
                }
            }
            // This build cannot read the control frame, so the frame is refused and skipped.
            Some(Err(e)) => {
                log::error!("socket {}: control frame refused: {e}", self.id);
                Ok(true)
            }
        }
    }

    pub(super) fn take_from_lanes(&self) -> Result<Option<Frame>, TransferError> {
        let mut readers = self.lanes.readers.borrow_mut();
        if readers.is_empty() {
            return Ok(None);
        }
        let got = readers.take(&self.mgr, &mut self.lanes.frame.borrow_mut(), &self.id);
        Ok(got.inspect_err(|e| log::error!("{e}"))?.map(Frame::from))
    }

    /// Reports that nothing waits for this socket: its lanes and its ZeroMQ socket are empty.
    /// `found_empty` says so in the directory (see `addressee`). Then the watch for records lost
    /// on their way to this socket (`orphans::Watch::idle`) takes a look.
    pub(super) fn found_empty(&self) {
        let mut a = self.addressee.borrow_mut();
        let mut listing = self.receiving.listing.borrow_mut();
        let me = (self.mgr.owner(), self.receiving.number);
        let mine = match a.as_mut() {
            Some(a) => {
                a.found_empty(&self.mgr);
                a.endpoints()
            }
            None => {
                listing.found_empty(self.mgr.management(), me);
                listing.endpoints()
            }
        };
        self.receiving.orphans.borrow_mut().idle(&self.mgr, self.receiving.number, mine);
    }

    /// Takes a frame from the ZeroMQ socket without waiting.
    pub(super) fn poll_socket(&self) -> Result<Polled, TransferError> {
        let mut frame = fairmq_zmq::Message::new();
        match self.z.receive_uncounted(&mut frame, 0) {
            Ok(()) if self.control(&frame)? => Ok(Polled::Control),
            Ok(()) => Ok(Polled::Frame(frame)),
            Err(TransferError::Timeout) => Ok(Polled::Nothing),
            Err(e) => Err(e),
        }
    }

    /// Looks at the ZeroMQ socket.
    /// While the socket has lanes, a look that finds nothing delays the next look (see
    /// `socket_due`). After a frame or a control frame, the next look is due at once: a new lane
    /// may have input, and more control frames may follow.
    fn look_at_socket(&self) -> Result<Polled, TransferError> {
        let polled = self.poll_socket()?;
        let empty = matches!(polled, Polled::Nothing) && !self.lanes.readers.borrow().is_empty();
        self.receiving.socket_looked.set(empty.then(std::time::Instant::now));
        Ok(polled)
    }

    /// Whether to look at the ZeroMQ socket now.
    /// Without lanes, the answer is always yes. With lanes, the lanes carry the messages, and the
    /// ZeroMQ socket carries only control frames and the messages of peers without a lane. So
    /// after a look that found nothing, the next look comes no sooner than `SOCKET_LOOK_EVERY`.
    /// The reason is cost: a look is a system call (libzmq polls its mailbox). That call took
    /// longer than a message on a lane, and a receiver that polled with timeout 0 paid it on
    /// every call.
    fn socket_due(&self) -> bool {
        /// Longer than the time a few lane messages take, far shorter than one ZeroMQ hop (tens
        /// of us).
        const SOCKET_LOOK_EVERY: std::time::Duration = std::time::Duration::from_micros(20);
        self.receiving.socket_looked.get().is_none_or(|t| t.elapsed() >= SOCKET_LOOK_EVERY)
    }

    /// Says hello, once a second, to the senders that this receiving socket connected to.
    /// The reason: after a sender restarts, the connection to it carries no probe, because the
    /// DEALER's pipe outlives the reconnect. The sender picks whom it sends to, so without a
    /// hello it would never learn of this socket.
    pub(super) fn announce(&self) {
        const EVERY: std::time::Duration = std::time::Duration::from_secs(1);
        let connected = self.z.endpoint_counts().1;
        if self.receiving.token.is_empty()
            || connected == 0
            || self.receiving.announced.get().is_some_and(|t| t.elapsed() < EVERY)
        {
            return;
        }
        self.receiving.announced.set(Some(std::time::Instant::now()));
        // Send one hello per connection, since the DEALER takes its connections in turn. A
        // connection whose queue is full misses its hello.
        for _ in 0..connected {
            let _ = self.z.send_uncounted(&mut fairmq_zmq::Message::from_slice(&meta::HELLO_FRAME), 0);
        }
    }

    /// Lets a busy socket say hello too, because one of its senders may have restarted. A busy
    /// socket never waits, so `count_busy` counts its receives instead of reading the clock on
    /// every receive.
    fn count_busy(&self) {
        let busy = self.receiving.busy.get().wrapping_add(1);
        self.receiving.busy.set(busy);
        if busy % 1024 == 0 {
            self.announce();
        }
    }

    /// Takes the first frame of a receive when a lane has one ready and no frame waits in the
    /// stash (a stashed frame goes first). When that frame is the usual single message,
    /// `lane_first` returns the message itself. This fast path skips the deadline, the loop and
    /// the frame dispatch of the general receive.
    fn lane_first(&self) -> Result<LaneFirst, TransferError> {
        if self.lanes.stash.borrow().is_some() {
            return Ok(LaneFirst::Frame(None));
        }
        // As `take_from_lanes`, with the borrows kept for what follows.
        let mut readers = self.lanes.readers.borrow_mut();
        if readers.is_empty() {
            return Ok(LaneFirst::Frame(None));
        }
        let buf = &mut *self.lanes.frame.borrow_mut();
        let got = readers.take(&self.mgr, buf, &self.id).inspect_err(|e| log::error!("{e}"))?;
        let Some(frame) = got.map(Frame::from) else { return Ok(LaneFirst::Frame(None)) };
        self.count_busy();
        match (&frame, readers.entry_records()) {
            // REQ and REP take the general path: they pair each receive with a send, even a
            // receive whose record was refused (see `receive_with`).
            (Frame::Lane, &[rec])
                if !meta::is_multipart(buf) && !matches!(self.ty, SocketType::Req | SocketType::Rep) =>
            {
                match Message::receive(&self.mgr, rec, readers.entry_source()) {
                    Ok(m) => Ok(LaneFirst::Message(m)),
                    Err(e) => Ok(LaneFirst::Refused(meta_error(e))),
                }
            }
            _ => Ok(LaneFirst::Frame(Some(frame))),
        }
    }

    /// Receives a frame from the lanes or the ZeroMQ socket.
    /// Before `receive_frame` sleeps, it looks at the lanes a little longer. It also frees what
    /// this process deferred, since it would wait anyway. Then it marks its lanes' reader asleep,
    /// so that a writer wakes it through the ZeroMQ socket.
    pub(super) fn receive_frame(&self, timeout_ms: i32) -> Result<Frame, TransferError> {
        if let Some(f) = self.lanes.stash.borrow_mut().take() {
            return Ok(Frame::Zmq(f));
        }
        let deadline = Deadline::new(timeout_ms);
        self.count_busy();
        loop {
            if let Some(f) = self.take_from_lanes()? {
                return Ok(f);
            }
            // True when this pass looked at the ZeroMQ socket and found it empty. Only then may
            // the directory hear that nothing waits here (see `found_empty`).
            let mut empty = false;
            if self.socket_due() {
                match self.look_at_socket()? {
                    Polled::Frame(f) => return Ok(Frame::Zmq(f)),
                    Polled::Control => continue,
                    Polled::Nothing => empty = true,
                }
            }
            if matches!(deadline, Deadline::Now) {
                // A receiver that polls frees what this process deferred when it finds nothing,
                // just as a receiver that blocks does before it sleeps.
                self.mgr.flush(false);
                if empty {
                    self.found_empty();
                }
                return Err(TransferError::Timeout);
            }
            if self.lanes.readers.borrow().spin() {
                continue;
            }
            if !empty {
                // This pass did not look at the ZeroMQ socket (with lanes, `socket_due` allows a
                // look only now and then). A frame may wait there, so the receiver looks before
                // it says the socket is empty and sleeps.
                match self.look_at_socket()? {
                    Polled::Frame(f) => return Ok(Frame::Zmq(f)),
                    Polled::Control => continue,
                    Polled::Nothing => {}
                }
            }
            self.mgr.flush(false);
            self.found_empty();
            if !self.lanes.readers.borrow_mut().sleep(&self.mgr) {
                continue;
            }
            let mut frame = fairmq_zmq::Message::new();
            // A sleeping receiver wakes for two things: the watch's next look, which releases
            // records lost in flight, and its hello, which senders must hear (see `announce`).
            self.announce();
            let look = self.receiving.orphans.borrow().next_look_ms();
            let wait = match deadline.ms_left() {
                ms if ms < 0 || ms > look => look,
                ms => ms,
            };
            let r = self.z.receive_uncounted(&mut frame, wait);
            self.lanes.readers.borrow().wake_up();
            match r {
                Ok(()) if self.control(&frame)? => {}
                Ok(()) => return Ok(Frame::Zmq(frame)),
                Err(TransferError::Timeout) if !deadline.passed() => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Receives a frame and hands its bytes, and where they came from, to `use_frame`.
    ///
    /// When a frame's metadata is refused, `receive_with` skips the frame (the error was logged)
    /// and goes on receiving within its timeout. A malformed, forged or repeated record is a
    /// peer's mistake, and it must not end the application's receive loop.
    ///
    /// A frame whose message its sender took back is skipped the same way. This happens when the
    /// message's receiver died before taking it. The sender then sends the message again (see
    /// `addressee`), but the old record was still waiting in the sender's queue, and it went to
    /// the next receiver over that receiver's connection.
    ///
    /// REQ and REP cannot simply skip. A REP answers a refused request with an empty frame,
    /// because ZeroMQ counted the request and only a reply may follow. The requester then refuses
    /// that empty reply in turn. A REQ cannot skip a refused reply, because a request must follow
    /// it, so it returns the error.
    ///
    /// `first`, when given, is the frame to use first (see `lane_first`).
    pub(super) fn receive_with<T>(
        &self,
        timeout_ms: i32,
        mut first: Option<Frame>,
        mut use_frame: impl FnMut(Received<'_>) -> Result<T, TransferError>,
    ) -> Result<T, TransferError> {
        let deadline = Deadline::new(timeout_ms);
        loop {
            let frame = match first.take() {
                Some(f) => f,
                None => self.receive_frame(deadline.ms_left())?,
            };
            let got = match frame {
                Frame::Zmq(f) => use_frame(Received::Frame(f.data(), Source::Socket)),
                // The reader already decoded these records from the entry's own copy, checked
                // them, and marked them its own as it took the entry. They are not decoded again.
                Frame::Lane => {
                    let multipart = meta::is_multipart(&self.lanes.frame.borrow());
                    use_frame(Received::Records(self.lanes.readers.borrow().entry_records(), multipart))
                }
                Frame::Block(m) => use_frame(Received::Frame(m.data(), Source::Lane)),
            };
            match got {
                Err(e) if refused(&e) && self.ty != SocketType::Req => {
                    if self.ty == SocketType::Rep {
                        // ZeroMQ's REP takes the next request only after a reply.
                        let _ = self.z.send_uncounted(&mut fairmq_zmq::Message::new(), 0);
                    }
                    if deadline.passed() {
                        return Err(TransferError::Timeout);
                    }
                }
                got => return got,
            }
        }
    }

    /// Calls [`Message::receive_all`] with this socket's transport.
    pub(super) fn messages<T>(
        &self,
        records: &[Record],
        source: Source,
        out: &mut Vec<T>,
        wrap: fn(Message) -> T,
    ) -> Result<usize, TransferError> {
        Message::receive_all(&self.mgr, records, source, out, wrap).map_err(meta_error)
    }

    /// Whether `frame`'s first record names a ticket that no longer hands anything over.
    /// Always false for REQ and REP, which still receive such a frame (see `receive_with`).
    pub(super) fn taken_back(&self, frame: &[u8]) -> bool {
        match Record::decode(frame) {
            Ok((Record::Handed { segment, ticket, nonce }, _))
                if !matches!(self.ty, SocketType::Req | SocketType::Rep) =>
            {
                let gone = self.mgr.segment(segment).is_ok_and(|s| !s.tickets().issued(ticket, nonce));
                if gone {
                    log::error!("socket {}: {}", self.id, TicketError::NotIssued(ticket));
                }
                gone
            }
            _ => false,
        }
    }

    /// For a REP, notes who sent the request in `frame`, because the reply goes there (see
    /// `addressee`). The requester is the issuer of the frame's first ticket. `note_requester`
    /// reads it before the claim frees the ticket.
    pub(super) fn note_requester(&self, frame: &[u8]) {
        if self.ty != SocketType::Rep {
            return;
        }
        let issuer = match Record::decode(frame) {
            Ok((Record::Handed { segment, ticket, nonce }, _)) => {
                self.mgr.segment(segment).ok().and_then(|s| s.tickets().issuer(ticket, nonce)).unwrap_or(0)
            }
            _ => 0,
        };
        if let Some(a) = self.addressee.borrow_mut().as_mut() {
            a.heard_from(issuer);
        }
    }

    /// Receives one message into `msg`, and releases the block that `msg` held before.
    /// A multipart frame is an error here, and its blocks are released.
    pub fn receive(&self, msg: &mut Message, timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        self.check_can_receive()?;
        // Fast path for the usual case: a single message ready in a lane is taken at once.
        let first = match self.lane_first()? {
            LaneFirst::Message(m) => {
                *msg = m;
                let size = msg.size();
                self.z.counters_ref().record_rx(size);
                return Ok(size);
            }
            // A refused record is skipped, as the general receive skips one (see `receive_with`).
            LaneFirst::Refused(e) if !refused(&e) => return Err(e),
            LaneFirst::Refused(_) if timeout_ms == 0 => return Err(TransferError::Timeout),
            LaneFirst::Refused(_) => None,
            LaneFirst::Frame(f) => f,
        };
        *msg = self.receive_with(timeout_ms, first, |received| {
            let mut got: Vec<Message> = Vec::new();
            let (data, source) = match received {
                Received::Records(&[rec], false) => {
                    let source = self.lanes.readers.borrow().entry_source();
                    return Message::receive(&self.mgr, rec, source).map_err(meta_error);
                }
                Received::Records(recs, _) => {
                    self.messages(recs, Source::Remarked, &mut got, std::convert::identity)?;
                    return Err(meta_error(MetaError::Multipart(got.len())));
                }
                Received::Frame(data, source) => (data, source),
            };
            self.note_requester(data);
            // Fast path for the common case, one record alone in its frame: it needs none of the
            // multipart machinery.
            if let Ok((rec, n)) = Record::decode(data) {
                if data[n..].iter().all(|&b| b == 0) {
                    return Message::receive(&self.mgr, rec, source).map_err(meta_error);
                }
            }
            let (_, recs) = &mut *self.scratch.borrow_mut();
            recs.clear();
            meta::decode(data, recs).map_err(meta_error)?;
            self.messages(recs, source, &mut got, std::convert::identity)?;
            // A valid frame that is not a single record is a multipart; its parts are released.
            Err(meta_error(MetaError::Multipart(got.len())))
        })?;
        let size = msg.size();
        self.z.counters_ref().record_rx(size);
        Ok(size)
    }

    /// Receives a multipart (or single) message and appends its parts to `parts`.
    pub fn receive_parts(&self, parts: &mut Vec<Message>, timeout: impl Into<Timeout>) -> TransferResult {
        self.receive_parts_into(parts, std::convert::identity, timeout)
    }

    /// Receives a multipart (or single) message and appends its parts to `parts`, each turned
    /// into a `T` by `wrap`.
    /// With `wrap`, a caller's own message type (a device's, for example) holds the parts where
    /// they land, with no vector of ours in between. `wrap` runs inside the receive, so it must
    /// not use this socket. On error, `parts` is left as it was.
    pub fn receive_parts_into<T>(
        &self,
        parts: &mut Vec<T>,
        wrap: fn(Message) -> T,
        timeout: impl Into<Timeout>,
    ) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        self.check_can_receive()?;
        let total = self.receive_with(timeout_ms, None, |received| {
            let (data, source) = match received {
                Received::Records(recs, _) => return self.messages(recs, Source::Remarked, parts, wrap),
                Received::Frame(data, source) => (data, source),
            };
            self.note_requester(data);
            let (_, recs) = &mut *self.scratch.borrow_mut();
            recs.clear();
            meta::decode(data, recs).map_err(meta_error)?;
            self.messages(recs, source, parts, wrap)
        })?;
        self.z.counters_ref().record_rx(total);
        Ok(total)
    }
}
