//! Sockets of the shared-memory transport: a ZeroMQ socket that carries metadata records.
//!
//! Timeouts, interruption, linger and the poller are those of `fairmq-zmq`; the counters count
//! payload bytes, not metadata bytes.

pub(crate) mod addressee;
pub(crate) mod directory;
pub(crate) mod lanes;
pub(crate) mod orphans;
pub(crate) mod peers;

use crate::error::ShmError;
use crate::meta::{self, MetaError, Record};
use crate::segment::tickets::{Issued, Kind, TicketError};
use crate::transport::attachment::Attachment;
use crate::transport::message::{Message, Source};
use crate::transport::socket::addressee::Addressee;
use crate::transport::socket::lanes::{release_frame, Deadline, Got, Link, Readers, Writer};
use crate::transport::socket::peers::{Peers, Sent};
use fairmq_zmq::layered::Uncounted;
use fairmq_zmq::{AttachOptions, CounterSnapshot, Counters, SocketOptions, SocketType, TransferError, TransferResult};
use std::cell::RefCell;
use std::sync::Arc;

/// A socket of the shared-memory transport. Not `Sync`, like a ZeroMQ socket.
///
/// PUSH and PUB hand messages to peers they know (see `peers`): over a ZeroMQ ROUTER, to
/// receiving sockets (PULL, SUB: ZeroMQ DEALERs) whose session token the probe of each connection
/// presented, so a socket that is not one of the session's gets nothing, and what a peer that
/// went away did not take comes back. A PUSH takes peers in turn, skipping those whose queue is
/// full, as ZeroMQ's does. PUB/SUB (which FairMQ refuses on shmem) is zero-copy: the record goes
/// to every subscriber, whose reference the block's count holds, so the last subscriber to drop
/// its message frees the block. Like ZeroMQ's PUB, a publisher never waits: a subscriber whose
/// queue is full misses the message.
///
/// # Examples
///
/// A multipart message between the PAIR sockets of two transports of one session (two devices,
/// in life), and a receive that gives up after its timeout.
///
/// ```
/// use fairmq_shm::{ShmConfig, Transport};
/// use fairmq_zmq::{SocketType, TransferError};
///
/// let session = format!("doc-socket-{}", std::process::id());
/// let config = |id: &str| {
///     let mut c = ShmConfig::new(id, &session);
///     c.segment_size = 16 << 20;
///     c
/// };
/// let (a, b) = (Transport::new(&config("a"))?, Transport::new(&config("b"))?);
/// let left = a.socket(SocketType::Pair, "data")?;
/// let right = b.socket(SocketType::Pair, "data")?;
/// // Two transports are two ZeroMQ contexts: ipc, not inproc, between them.
/// let path = std::env::temp_dir().join(&session);
/// left.bind(&format!("ipc://{}", path.display()))?;
/// right.connect(&format!("ipc://{}", path.display()))?;
///
/// let mut parts = vec![a.new_message_from_slice(b"header")?, a.new_message_from_slice(&[7; 4096])?];
/// assert_eq!(left.send_parts(&mut parts, 5000)?, 6 + 4096, "payload bytes sent");
/// let mut got = Vec::new();
/// right.receive_parts(&mut got, 5000)?;
/// assert_eq!(got[0].data(), b"header");
/// assert_eq!(got[1].data(), &[7; 4096][..]);
///
/// let mut nothing = b.new_message();
/// assert!(matches!(right.receive(&mut nothing, 10), Err(TransferError::Timeout)));
/// # drop((left, right));
/// # let _ = std::fs::remove_file(&path);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Socket {
    // Declared first: closing it may wait for linger before the attachment can go.
    z: fairmq_zmq::Socket,
    mgr: Arc<Attachment>,
    id: String,
    ty: SocketType,
    /// PUSH, PUB: the receiving sockets known, and what each was handed; when they were last
    /// looked for.
    peers: Box<RefCell<Peers>>,
    learnt: std::cell::Cell<Option<std::time::Instant>>,
    /// PULL, SUB: what a receiving socket keeps about itself (boxed: most sockets send).
    receiving: Box<Receiving>,
    scratch: RefCell<(Vec<u8>, Vec<Record>)>,
    /// The tickets of the frame being sent.
    issued: RefCell<Vec<Issued>>,
    lanes: Box<LaneState>,
    /// PAIR, REQ, REP, DEALER, ROUTER: the receiver their tickets name, where it can be named.
    addressee: RefCell<Option<Box<Addressee>>>,
}

/// A receiving socket's number in its token (0: none), when it last announced itself to the
/// senders it connected to, and its watch for records lost in flight to it (see `orphans`).
struct Receiving {
    number: u64,
    /// The token this socket presents on the connections it makes, once it makes one.
    token: Vec<u8>,
    presented: std::cell::Cell<bool>,
    announced: std::cell::Cell<Option<std::time::Instant>>,
    /// Receives since the last look at the clock for a hello (a busy socket looks now and then).
    busy: std::cell::Cell<u32>,
    /// PULL, SUB: where it is bound, in the session's endpoint directory (see `directory`).
    listing: RefCell<crate::transport::socket::directory::Listing>,
    orphans: RefCell<crate::transport::socket::orphans::Watch>,
}

/// The socket's lanes (boxed: most sockets of a device use few of them).
#[derive(Default)]
struct LaneState {
    writer: RefCell<Writer>,
    readers: RefCell<Readers>,
    /// A frame the poller took off the socket to see whether it carries a message (it did).
    stash: RefCell<Option<fairmq_zmq::Message>>,
    frame: RefCell<Vec<u8>>,
}

/// Frames a closing receiving socket takes off its queue at most, to release their messages.
const CLOSE_DRAIN: usize = 100_000;

/// How often a sending socket looks for new peers and dead ones while it has peers.
const LEARN_EVERY: std::time::Duration = std::time::Duration::from_millis(1);

/// How long a closing socket waits at most for its peers to take what it sent, while it can still
/// deliver (ms; no longer than its linger).
const CLAIM_WAIT_MS: i32 = 2000;

/// What [`Socket::route`] did.
enum Routed {
    Sent,
    /// Nothing: messages taken back from a peer that left go first.
    TakenBack,
}

/// What a look at the socket found.
enum Polled {
    Frame(fairmq_zmq::Message),
    /// A control frame, handled.
    Control,
    Nothing,
}

/// A received metadata frame.
enum Frame {
    Zmq(fairmq_zmq::Message),
    /// In `lanes.frame`.
    Lane,
    /// A frame too large for a lane, in a block of its own.
    Block(Message),
}

impl Drop for Socket {
    fn drop(&mut self) {
        let linger = self.z.linger().unwrap_or(0);
        self.lanes.writer.borrow().offer_before_close(&self.mgr, &*self, Deadline::new(linger));
        // Waiting for the peers to take what they were sent: a moment at most (ZeroMQ's linger
        // waits for frames to leave, not for a receiver to read them; it goes on after the close).
        let moment = Deadline::new(if linger < 0 { CLAIM_WAIT_MS } else { linger.min(CLAIM_WAIT_MS) });
        self.linger(moment);
        self.receiving.orphans.get_mut().close(&self.mgr, self.receiving.number);
        if self.receiving.listing.get_mut().has_entries() {
            crate::transport::socket::directory::unregister(
                self.mgr.management(),
                (self.mgr.owner(), self.receiving.number),
            );
        }
        let released =
            self.peers.get_mut().close(&self.mgr) + self.addressee.get_mut().as_mut().map_or(0, |a| a.close(&self.mgr));
        if released > 0 {
            log::warn!("socket {}: {released} messages sent to peers that left were dropped when it closed", self.id);
        }
        self.lanes.writer.get_mut().close(&self.mgr);
        self.lanes.readers.get_mut().close(&self.mgr);
        if let Some(f) = self.lanes.stash.get_mut().take() {
            // Messages received but never taken: their blocks go back (ZeroMQ drops such frames).
            release_frame(&self.mgr, f.data(), Source::Socket);
        }
        if self.receives() {
            // So do those still queued: their senders, if they live, would never learn that
            // nobody will take them (a bounded drain: a flood must not hold the close).
            let mut f = fairmq_zmq::Message::new();
            for _ in 0..CLOSE_DRAIN {
                if self.z.receive_uncounted(&mut f, 0).is_err() {
                    break;
                }
                release_frame(&self.mgr, f.data(), Source::Socket);
            }
        }
        // A lane freed here is a large block: back to the segment now, not when the list is long.
        self.mgr.flush(false);
    }
}

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket").field("id", &self.z.id()).finish()
    }
}

/// The records that hand `parts` over with `tickets` (one per non-empty part, in order).
fn handed<'a>(parts: &'a [Message], tickets: &'a [Issued]) -> impl ExactSizeIterator<Item = Record> + 'a {
    let mut tickets = tickets.iter();
    parts.iter().map(move |p| match p.record() {
        Record::Empty => Record::Empty,
        _ => tickets.next().expect("a ticket per non-empty part").record(),
    })
}

/// What ZeroMQ says of a transfer a socket of this type cannot make (`errno 95`).
fn not_supported() -> TransferError {
    TransferError::Zmq(zmq::Error::ENOTSUP)
}

/// Whether `e` says a record's ticket hands nothing over (claimed already, taken back, forged).
fn withdrawn(e: &TransferError) -> bool {
    matches!(e, TransferError::Transport(b) if matches!(
        b.downcast_ref::<ShmError>(),
        Some(ShmError::Metadata(MetaError::Ticket(TicketError::NotIssued(_))))
    ))
}

fn meta_error(e: MetaError) -> TransferError {
    log::error!("{e}");
    ShmError::Metadata(e).into()
}

impl Socket {
    pub(crate) fn new(z: fairmq_zmq::Socket, mgr: Arc<Attachment>, ty: SocketType, id: String, number: u64) -> Socket {
        let addressee = RefCell::new(Addressee::new(&mgr, ty, number).map(Box::new));
        Socket {
            z,
            mgr,
            id,
            ty,
            peers: Box::default(),
            learnt: std::cell::Cell::new(None),
            receiving: Box::new(Receiving {
                number,
                token: Vec::new(),
                presented: std::cell::Cell::new(false),
                announced: std::cell::Cell::new(None),
                busy: std::cell::Cell::new(0),
                listing: RefCell::default(),
                orphans: RefCell::default(),
            }),
            scratch: RefCell::new((Vec::with_capacity(64), Vec::new())),
            issued: RefCell::new(Vec::new()),
            lanes: Box::default(),
            addressee,
        }
    }

    /// `<transport id>.<channel name>.<type>`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The socket pattern.
    pub fn socket_type(&self) -> SocketType {
        self.ty
    }

    /// The metadata socket, for its options (linger, queue sizes: a multipart counts once).
    pub fn metadata_socket(&self) -> &fairmq_zmq::Socket {
        &self.z
    }

    /// Applies a channel's options to the metadata socket.
    pub fn set_options(&self, o: &SocketOptions) -> Result<(), ShmError> {
        Ok(self.z.set_options(o)?)
    }

    /// Binds or connects a channel address (see [`fairmq_zmq::Socket::attach`]).
    pub fn attach(&self, address: &str, o: &AttachOptions) -> Result<String, ShmError> {
        if fairmq_zmq::split_endpoints(address).any(|ep| ep.method(o.method) == Some(fairmq_zmq::Method::Connect)) {
            self.present_token()?;
        }
        let attached = self.z.attach(address, o).inspect_err(|_| {
            // Endpoints connected before the one that failed are not named: keys stay in step.
            self.peers.borrow_mut().connected_before(self.z.endpoint_counts().1 as usize);
        })?;
        for ep in fairmq_zmq::split_endpoints(&attached) {
            self.enter_in_directory(ep.address, ep.method(o.method) == Some(fairmq_zmq::Method::Bind));
        }
        Ok(attached)
    }

    /// Binds one endpoint.
    pub fn bind(&self, address: &str) -> Result<(), ShmError> {
        self.z.bind(address)?;
        let actual = self.z.as_zmq().get_last_endpoint().ok().and_then(Result::ok);
        self.enter_in_directory(actual.as_deref().unwrap_or(address), true);
        Ok(())
    }

    /// Connects one endpoint.
    pub fn connect(&self, address: &str) -> Result<(), ShmError> {
        self.present_token()?;
        self.z.connect(address)?;
        self.enter_in_directory(address, false);
        Ok(())
    }

    /// Records an endpoint the socket bound or connected in the session's directory (see
    /// `addressee`).
    /// A PULL or SUB lists where it binds, so that a PUSH connecting there can name it; a PUSH
    /// notes where it connects, to look that name up.
    fn enter_in_directory(&self, endpoint: &str, bound: bool) {
        if let Some(a) = self.addressee.borrow_mut().as_mut() {
            a.attached(&self.mgr, endpoint, bound);
            return;
        }
        let r = &self.receiving;
        match self.ty {
            SocketType::Pull | SocketType::Sub if bound => {
                r.listing.borrow_mut().enter(&self.mgr, (self.mgr.owner(), r.number), endpoint, true);
            }
            SocketType::Push if !bound => {
                let key = crate::transport::socket::directory::key(endpoint, self.mgr.owner());
                self.peers.borrow_mut().connected_to(key);
            }
            _ => {}
        }
    }

    /// A receiving socket keeps its token until it connects somewhere.
    pub(crate) fn keep_token(&mut self, token: Vec<u8>) {
        self.receiving.token = token;
    }

    /// Before a receiving socket's first connect: its routing id becomes its token, which the
    /// senders it connects to check (see `peers`). Only then: ZeroMQ tells every peer a socket's
    /// routing id, also those that connect to it, and a token told to anyone who can reach a bound
    /// endpoint would let them pose as this socket to the session's senders.
    fn present_token(&self) -> Result<(), ShmError> {
        let r = &self.receiving;
        if r.token.is_empty() || r.presented.get() {
            return Ok(());
        }
        self.z
            .as_zmq()
            .set_identity(&r.token)
            .map_err(|source| ShmError::Socket(fairmq_zmq::SocketError::Option { option: "ZMQ_IDENTITY", source }))?;
        r.presented.set(true);
        Ok(())
    }

    fn check_session(&self, msg: &Message) -> Result<(), TransferError> {
        if msg.same_session(&self.mgr) {
            Ok(())
        } else {
            Err(ShmError::Config("message belongs to another shared-memory session".into()).into())
        }
    }

    /// Whether records go through a lane: the socket has a single peer (PAIR, a PUSH connected to
    /// one endpoint and bound to none, or a bound PUSH with one peer), so the lane reaches whoever
    /// ZeroMQ would have picked.
    /// A send queue limited below ZeroMQ's default (1000) keeps its limit: the socket, not a lane
    /// (whose smallest ring holds about 1600 records), carries the records then. A larger limit
    /// sizes the ring (see `lanes::capacity_for`). A segment too small for a ring has no lanes.
    fn uses_lane(&self) -> bool {
        self.mgr.config().lanes
            && crate::transport::socket::lanes::fits_segment(self.mgr.own().size())
            && self.z.snd_buf_size().is_ok_and(|n| n == 0 || n >= 1000)
            && match self.ty {
                SocketType::Pair => true,
                SocketType::Push => match self.z.endpoint_counts() {
                    (0, 1) => true,
                    (bound, 0) if bound > 0 => self.one_peer_took_all() || self.lanes.writer.borrow().owes(&self.mgr),
                    _ => false,
                },
                _ => false,
            }
    }

    /// A bound PUSH uses a lane while one peer is connected, nothing waits to go out again and the
    /// peer took everything it was sent on the socket: its lane's entries never overtake what went
    /// on the socket before (a receiver reads its lanes first). With a second peer, records go on
    /// the socket again (the first still reads what its lane holds, before them). What a lane owes
    /// (taken back from a reader that left) goes through a lane first, whatever the peers.
    fn one_peer_took_all(&self) -> bool {
        self.learn_peers(false);
        let mut peers = self.peers.borrow_mut();
        peers.len() == 1 && peers.resend.is_empty() && !peers.unclaimed(&self.mgr)
    }

    /// Sends the records of `parts` (one message, or the parts of a multipart) in one frame:
    /// through the lane, or on the socket with a ticket for each. On error nothing was handed over.
    ///
    /// A block goes in flight (marked so; the taker marks it as its own) only once a ticket holds
    /// its reference, and comes back (marked as ours again) before the ticket is taken back: a
    /// process killed at any point leaves a block its mark or a ticket accounts for.
    fn send_records(&self, parts: &[Message], timeout_ms: i32) -> Result<(), TransferError> {
        let min = self.mgr.config().metadata_msg_size;
        let deadline = Deadline::new(timeout_ms);
        if self.uses_lane() {
            // Lane entries have no tickets: the lane accounts for them once staged (the blocks
            // are marked in flight then, see `Writer::send`).
            let sent = {
                let (buf, _) = &mut *self.scratch.borrow_mut();
                meta::encode_parts(parts.iter().map(Message::record), min, buf);
                let mark = || parts.iter().for_each(|p| p.mark_in_flight(true));
                self.lanes.writer.borrow_mut().send(&self.mgr, self, buf, deadline, &mark)
            };
            if sent.is_err() {
                parts.iter().for_each(|p| p.mark_in_flight(false));
            }
            return sent;
        }
        if self.ty == SocketType::Push {
            return self.push_to_peer(parts, deadline);
        }
        self.resend_to_addressee(deadline)?;
        self.send_addressed(parts, deadline)
    }

    /// Sends the records of `parts` on the socket (to whoever ZeroMQ hands them to), their tickets
    /// naming the receiver where it can be named (see `addressee`).
    fn send_addressed(&self, parts: &[Message], deadline: Deadline) -> Result<(), TransferError> {
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
    fn resend_to_addressee(&self, deadline: Deadline) -> Result<(), TransferError> {
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
    /// order: a block in flight is always one a ticket holds).
    fn issue_for(&self, parts: &[Message], deadline: Deadline, issued: &mut Vec<Issued>) -> Result<(), TransferError> {
        self.issue_all(parts.iter().map(Message::record), deadline, issued)?;
        parts.iter().for_each(|p| p.mark_in_flight(true));
        Ok(())
    }

    /// Takes back the tickets of `parts`, whose records did not leave, marking them ours first.
    fn take_back_parts(&self, parts: &[Message], issued: &mut Vec<Issued>) {
        parts.iter().for_each(|p| p.mark_in_flight(false));
        self.take_back(issued);
    }

    /// Closing: waits within `linger` until the peers claimed what they were handed and a reader
    /// claimed the lane, while the socket still delivers (ZeroMQ's own linger, after the close,
    /// lost a frame a router had queued for a peer it was still connecting to; see
    /// [`CLAIM_WAIT_MS`]).
    fn linger(&self, linger: Deadline) {
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
    fn learn_peers(&self, now: bool) {
        let due = now || self.peers.borrow().len() == 0 || self.learnt.get().is_none_or(|t| t.elapsed() >= LEARN_EVERY);
        if due {
            self.learnt.set(Some(std::time::Instant::now()));
            self.peers.borrow_mut().learn(&self.mgr, &self.z, &self.id, self.ty == SocketType::Push);
        }
    }

    /// Sends `frame` to the peer of routing id `id` without waiting: a full queue is a timeout
    /// (or an interruption), a peer gone `EHOSTUNREACH`.
    fn send_to(&self, id: &[u8], frame: &[u8]) -> Result<(), TransferError> {
        let mut frames = [fairmq_zmq::Message::from_slice(id), fairmq_zmq::Message::from_slice(frame)];
        self.z.send_parts_uncounted(&mut frames, 0)
    }

    /// A PUSH hands `parts` to one peer: what peers that left did not take goes first, then
    /// `parts`, then, without waiting, what was taken back meanwhile.
    fn push_to_peer(&self, parts: &[Message], deadline: Deadline) -> Result<(), TransferError> {
        loop {
            self.resend_taken_back(deadline)?;
            if let Routed::Sent = self.route(parts, deadline, true)? {
                break;
            }
        }
        let _ = self.resend_taken_back(Deadline::Now);
        Ok(())
    }

    /// Sends again what peers that left did not take, in order, within `deadline`.
    fn resend_taken_back(&self, deadline: Deadline) -> Result<(), TransferError> {
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
    fn route(&self, parts: &[Message], deadline: Deadline, after_taken_back: bool) -> Result<Routed, TransferError> {
        let issued = &mut *self.issued.borrow_mut();
        self.issue_for(parts, deadline, issued)?;
        let (frame, _) = &mut *self.scratch.borrow_mut();
        meta::encode_parts(handed(parts, issued), self.mgr.config().metadata_msg_size, frame);
        let mut false_room = 0;
        let mut waited = false;
        loop {
            // Peers are learnt at once when none is known, or after a wait; else now and then.
            self.learn_peers(waited);
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
    fn wait_for_room(&self, deadline: Deadline) -> bool {
        const MOMENT: i64 = 100;
        let ms = match deadline {
            Deadline::Never => MOMENT,
            d => i64::from(d.ms_left()).min(MOMENT),
        };
        let mut items = [
            self.z.as_zmq().as_poll_item(zmq::POLLIN | zmq::POLLOUT),
            zmq::PollItem::from_fd(self.mgr.interrupter_fd(), zmq::POLLIN),
        ];
        zmq::poll(&mut items, ms).is_ok_and(|n| n > 0) && items[0].is_writable()
    }

    /// Issues a ticket for each non-empty record into `out`, waiting within `deadline` while every
    /// ticket this transport can get is out (its peers claim them as they receive). On error none
    /// is left issued.
    fn issue_all(
        &self,
        records: impl Iterator<Item = Record>,
        deadline: Deadline,
        out: &mut Vec<Issued>,
    ) -> Result<(), TransferError> {
        out.clear();
        for rec in records.filter(|r| !r.is_empty()) {
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
    fn take_back(&self, issued: &mut Vec<Issued>) {
        for t in issued.drain(..) {
            if !self.mgr.take_back(&t) {
                log::error!("socket {}: ticket {} of a record that never left was claimed", self.id, t.ticket);
            }
        }
    }

    /// Sends one message: only its metadata travels. On success the receiver owns the block and
    /// `msg` is empty; on any error `msg` is unchanged.
    pub fn send(&self, msg: &mut Message, timeout_ms: i32) -> TransferResult {
        self.check_session(msg)?;
        match self.ty {
            SocketType::Pub => return self.publish(std::slice::from_mut(msg)),
            SocketType::Sub | SocketType::Pull => return Err(not_supported()),
            _ => {}
        }
        let size = msg.size();
        self.send_records(std::slice::from_ref(msg), timeout_ms)?;
        msg.hand_over();
        self.z.shared_counters().record_tx(size);
        Ok(size)
    }

    /// Sends all parts in one metadata frame. Empty multiparts are refused (as by the zeromq transport).
    pub fn send_parts(&self, parts: &mut [Message], timeout_ms: i32) -> TransferResult {
        if parts.is_empty() {
            return Err(TransferError::EmptyMultipart);
        }
        for p in parts.iter() {
            self.check_session(p)?;
        }
        match self.ty {
            SocketType::Pub => return self.publish(parts),
            SocketType::Sub | SocketType::Pull => return Err(not_supported()),
            _ => {}
        }
        let total: usize = parts.iter().map(Message::size).sum();
        self.send_records(parts, timeout_ms)?;
        for p in parts.iter_mut() {
            p.hand_over();
        }
        self.z.shared_counters().record_tx(total);
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
    fn publish(&self, parts: &mut [Message]) -> TransferResult {
        for p in parts.iter() {
            p.share()?;
        }
        self.learn_peers(false);
        let total: usize = parts.iter().map(Message::size).sum();
        let min = self.mgr.config().metadata_msg_size;
        let (frame, _) = &mut *self.scratch.borrow_mut();
        let issued = &mut *self.issued.borrow_mut();
        let mut peers = self.peers.borrow_mut();
        let mut gone = Vec::new();
        for i in 0..peers.len() {
            let p = peers.get_mut(i);
            parts.iter().for_each(|m| {
                m.add_reference();
                m.list_if_shared();
            });
            // Like a full queue, no free ticket makes this subscriber miss the message.
            if self.issue_all(parts.iter().map(Message::record), Deadline::Now, issued).is_err() {
                parts.iter().for_each(|m| m.drop_reference());
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
                    parts.iter().for_each(|m| m.drop_reference());
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
            p.rebuild();
        }
        self.z.shared_counters().record_tx(total);
        Ok(total)
    }

    /// Handles a control frame (lane offer, wake); false for a frame that carries messages.
    fn control(&self, frame: &fairmq_zmq::Message) -> Result<bool, TransferError> {
        match meta::control(frame.data()) {
            None => Ok(false),
            Some(Ok(meta::Control::Wake)) => Ok(true),
            Some(Ok(meta::Control::Lane(rec))) => {
                match self.lanes.readers.borrow_mut().attach(&self.mgr, rec, &self.id) {
                    Ok(()) => Ok(true),
                    // An offer its writer took back to offer the lane again (it was not claimed
                    // soon enough): the new offer follows. A forged one grants nothing either.
                    Err(ShmError::Metadata(MetaError::Ticket(TicketError::NotIssued(t)))) => {
                        log::debug!("socket {}: lane offer {t} was withdrawn", self.id);
                        Ok(true)
                    }
                    Err(e) => {
                        log::error!("{e}");
                        Err(e.into())
                    }
                }
            }
            Some(Err(e)) => Err(meta_error(e)),
        }
    }

    fn take_from_lanes(&self) -> Result<Option<Frame>, TransferError> {
        let mut readers = self.lanes.readers.borrow_mut();
        if readers.is_empty() {
            return Ok(None);
        }
        let got = readers.take(&self.mgr, &mut self.lanes.frame.borrow_mut(), &self.id);
        match got.inspect_err(|e| log::error!("{e}"))? {
            None => Ok(None),
            Some(Got::Frame) => Ok(Some(Frame::Lane)),
            Some(Got::Indirect(m)) => Ok(Some(Frame::Block(m))),
        }
    }

    /// A frame from the socket without waiting.
    /// Nothing waits for this socket (its lanes and ZeroMQ socket are empty): said in the
    /// directory (see `addressee`), and the watch for records lost on their way here looks.
    fn found_empty(&self) {
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

    fn poll_socket(&self) -> Result<Polled, TransferError> {
        let mut frame = fairmq_zmq::Message::new();
        match self.z.receive_uncounted(&mut frame, 0) {
            Ok(()) if self.control(&frame)? => Ok(Polled::Control),
            Ok(()) => Ok(Polled::Frame(frame)),
            Err(TransferError::Timeout) => Ok(Polled::Nothing),
            Err(e) => Err(e),
        }
    }

    /// A receiving socket that connected to senders says hello to them once a second: a
    /// connection to a sender that restarted carries no probe (the DEALER's pipe outlives the
    /// reconnect), and the sender, which picks whom it sends to, would never learn of us.
    fn announce(&self) {
        const EVERY: std::time::Duration = std::time::Duration::from_secs(1);
        let connected = self.z.endpoint_counts().1;
        if self.receiving.token.is_empty()
            || connected == 0
            || self.receiving.announced.get().is_some_and(|t| t.elapsed() < EVERY)
        {
            return;
        }
        self.receiving.announced.set(Some(std::time::Instant::now()));
        // One each, as the DEALER takes its connections in turn; a full queue skips one.
        for _ in 0..connected {
            let _ = self.z.send_uncounted(&mut fairmq_zmq::Message::from_slice(&meta::HELLO_FRAME), 0);
        }
    }

    /// Receives a frame from the lanes or the socket. Before sleeping it looks at the lanes a little
    /// longer, frees what this process deferred (it would wait anyway) and marks its lanes' reader
    /// asleep, so a writer wakes it through the socket.
    fn receive_frame(&self, timeout_ms: i32) -> Result<Frame, TransferError> {
        if let Some(f) = self.lanes.stash.borrow_mut().take() {
            return Ok(Frame::Zmq(f));
        }
        let deadline = Deadline::new(timeout_ms);
        // A busy socket, which never waits, says hello too (one of its senders may have
        // restarted), without reading the clock on every receive.
        let busy = self.receiving.busy.get().wrapping_add(1);
        self.receiving.busy.set(busy);
        if busy % 1024 == 0 {
            self.announce();
        }
        loop {
            if let Some(f) = self.take_from_lanes()? {
                return Ok(f);
            }
            match self.poll_socket()? {
                Polled::Frame(f) => return Ok(Frame::Zmq(f)),
                Polled::Control => continue, // a new lane may have input
                Polled::Nothing => {}
            }
            if matches!(deadline, Deadline::Now) {
                // A receiver that polls gives back what it freed when it finds nothing, as one
                // that blocks does before it sleeps.
                self.mgr.flush(false);
                self.found_empty();
                return Err(TransferError::Timeout);
            }
            if self.lanes.readers.borrow().spin() {
                continue;
            }
            self.mgr.flush(false);
            self.found_empty();
            if !self.lanes.readers.borrow_mut().sleep(&self.mgr) {
                continue;
            }
            let mut frame = fairmq_zmq::Message::new();
            // Records lost in flight are released at the watch's next look, and senders hear our
            // hello: wake for them.
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
    /// A frame whose message its sender took back is skipped (the error was logged): its receiver
    /// died before taking it, and the sender sends it again (see `addressee`), while the record
    /// still waited in the sender's queue for the connection to the next receiver; a repeated or
    /// forged record is skipped alike.
    fn receive_with<T>(
        &self,
        timeout_ms: i32,
        mut use_frame: impl FnMut(&[u8], Source) -> Result<T, TransferError>,
    ) -> Result<T, TransferError> {
        let deadline = Deadline::new(timeout_ms);
        loop {
            let got = match self.receive_frame(deadline.ms_left())? {
                Frame::Zmq(f) => use_frame(f.data(), Source::Socket),
                Frame::Lane => use_frame(&self.lanes.frame.borrow(), Source::Lane),
                Frame::Block(m) => use_frame(m.data(), Source::Lane),
            };
            match got {
                // Not on REQ and REP: ZeroMQ counted the frame as the request (or reply), and
                // only a send may follow.
                Err(e) if withdrawn(&e) && !matches!(self.ty, SocketType::Req | SocketType::Rep) => {
                    if deadline.passed() {
                        return Err(TransferError::Timeout);
                    }
                }
                got => return got,
            }
        }
    }

    /// Turns records into messages; if any record is bad, the good ones are released (we own them)
    /// and the error is returned.
    fn messages(&self, records: &[Record], source: Source, out: &mut Vec<Message>) -> Result<usize, TransferError> {
        let start = out.len();
        let mut first_error = None;
        for &r in records {
            match Message::receive(&self.mgr, r, source) {
                Ok(m) => out.push(m),
                Err(e) => {
                    // No further claim: a sender that won this part takes back the others (see
                    // `peers::reclaim`), and a part claimed here would be lost to both.
                    first_error = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = first_error {
            out.truncate(start);
            return Err(meta_error(e));
        }
        Ok(out[start..].iter().map(Message::size).sum())
    }

    /// Whether `frame`'s first record names a ticket that hands nothing over any more (REQ and REP
    /// receive it still: see `receive_with`).
    fn taken_back(&self, frame: &[u8]) -> bool {
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

    /// A REP notes whose request a frame is (its reply goes there; see `addressee`): the issuer
    /// of its first ticket, read before the claim frees the ticket.
    fn note_requester(&self, frame: &[u8]) {
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

    /// Receives one message into `msg` (its previous block is released). A multipart frame is an
    /// error here (its blocks are released).
    pub fn receive(&self, msg: &mut Message, timeout_ms: i32) -> TransferResult {
        self.check_can_receive()?;
        *msg = self.receive_with(timeout_ms, |data, source| {
            self.note_requester(data);
            // The common case, one record alone in its frame, without the multipart machinery.
            if let Ok((rec, n)) = Record::decode(data) {
                if data[n..].iter().all(|&b| b == 0) {
                    return Message::receive(&self.mgr, rec, source).map_err(meta_error);
                }
            }
            let (_, recs) = &mut *self.scratch.borrow_mut();
            recs.clear();
            meta::decode(data, recs).map_err(meta_error)?;
            let mut got = Vec::with_capacity(recs.len());
            self.messages(recs, source, &mut got)?;
            // A valid frame that is not a single record is a multipart; its parts are released.
            Err(meta_error(MetaError::Multipart(got.len())))
        })?;
        let size = msg.size();
        self.z.shared_counters().record_rx(size);
        Ok(size)
    }

    /// Receives a multipart (or single) message and appends its parts to `parts`.
    pub fn receive_parts(&self, parts: &mut Vec<Message>, timeout_ms: i32) -> TransferResult {
        self.check_can_receive()?;
        let total = self.receive_with(timeout_ms, |data, source| {
            self.note_requester(data);
            let (_, recs) = &mut *self.scratch.borrow_mut();
            recs.clear();
            meta::decode(data, recs).map_err(meta_error)?;
            self.messages(recs, source, parts)
        })?;
        self.z.shared_counters().record_rx(total);
        Ok(total)
    }

    /// PUSH and PUB cannot receive (their ROUTER only hears peers' probes).
    fn check_can_receive(&self) -> Result<(), TransferError> {
        if self.receives() {
            Ok(())
        } else {
            Err(not_supported())
        }
    }

    /// Whether this socket can receive messages (PUSH and PUB cannot).
    fn receives(&self) -> bool {
        !matches!(self.ty, SocketType::Push | SocketType::Pub)
    }

    /// How many peers the metadata socket has now (FairMQ's `GetNumberOfConnectedPeers`).
    pub fn number_of_connected_peers(&self) -> u64 {
        self.z.number_of_connected_peers()
    }

    /// That count, readable from other threads.
    pub fn peer_count(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.z.peer_count()
    }

    /// Messages and payload bytes moved so far.
    pub fn counters(&self) -> CounterSnapshot {
        self.z.counters()
    }

    /// The counters, for reading from another thread.
    pub fn shared_counters(&self) -> Arc<Counters> {
        self.z.shared_counters()
    }
}

impl fairmq_zmq::layered::PollHook for Socket {
    fn input_ready(&self) -> bool {
        // Nothing to receive: a publisher's socket carries only subscribers' probes, and a
        // receive on a push socket fails (a poller reporting it ready made callers spin on that).
        if !self.receives() {
            return false;
        }
        loop {
            if self.lanes.stash.borrow().is_some() || self.lanes.readers.borrow().any_ready() {
                return true;
            }
            match self.poll_socket() {
                // A frame whose message was taken back would be skipped by the receive, which then
                // waits: not input.
                Ok(Polled::Frame(f)) if self.taken_back(f.data()) => {}
                Ok(Polled::Frame(f)) => {
                    *self.lanes.stash.borrow_mut() = Some(f);
                    return true;
                }
                // A bad control frame was logged and dropped: look on.
                Ok(Polled::Control) | Err(TransferError::Transport(_)) => {}
                Ok(Polled::Nothing) | Err(TransferError::Interrupted | TransferError::Timeout) => return false,
                // The socket failed: the receive that follows reports it.
                Err(_) => return true,
            }
        }
    }

    fn output_ready(&self) -> bool {
        match self.ty {
            SocketType::Pull | SocketType::Sub => return false,
            SocketType::Push if !self.uses_lane() => {
                self.learn_peers(false);
                return self.peers.borrow().len() > 0;
            }
            _ => {}
        }
        !self.uses_lane() || self.lanes.writer.borrow().has_room()
    }

    fn arm(&self) -> bool {
        // A poller about to sleep gives back what this process freed, as a receive does.
        self.mgr.flush(false);
        self.announce();
        self.found_empty();
        self.lanes.readers.borrow_mut().sleep(&self.mgr)
    }

    fn disarm(&self) {
        self.lanes.readers.borrow().wake_up();
    }
}

impl Link for Socket {
    fn send_control(
        &self,
        frame: &[u8],
        to: Option<u32>,
        deadline: Deadline,
        address: &dyn Fn(u32, u64),
    ) -> Result<bool, TransferError> {
        if self.ty != SocketType::Push {
            let (owner, socket) = self.addressee.borrow_mut().as_mut().map_or((0, 0), |a| a.receiver(&self.mgr));
            address(owner, socket);
            return self
                .z
                .send_uncounted(&mut fairmq_zmq::Message::from_slice(frame), deadline.ms_left())
                .map(|()| true);
        }
        self.learn_peers(false);
        let Some((id, (owner, socket))) = self.peers.borrow().find(to).map(|p| (p.id.to_vec(), p.receiver())) else {
            return Ok(false);
        };
        address(owner, socket);
        match self.send_to(&id, frame) {
            Ok(()) => Ok(true),
            // Gone, or its queue full: the offer is made again later, as if none had been known.
            Err(TransferError::Zmq(zmq::Error::EHOSTUNREACH) | TransferError::Timeout | TransferError::Interrupted) => {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    fn send_queue(&self) -> i32 {
        self.z.snd_buf_size().unwrap_or(0)
    }
}
