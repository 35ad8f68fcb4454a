//! The sockets of the shared-memory transport: [`Socket`] wraps a ZeroMQ socket that carries
//! metadata records instead of payloads.
//!
//! Timeouts, interruption, linger and the poller are those of `fairmq-zmq`. The counters count
//! payload bytes, not the bytes of metadata records.
//!
//! # Submodules
//!
//! - [`send`] and [`receive`]: the send and receive paths.
//! - [`peers`]: the peers of a PUSH or PUB, and what each was handed.
//! - [`addressee`]: the receiver that the tickets of a PAIR, REQ, REP, DEALER or ROUTER name.
//! - [`directory`]: the session's directory of endpoints, from which those receivers are named.
//! - [`lanes`]: rings in shared memory that carry the records between a sender with a single peer
//!   and its receiver.
//! - [`orphans`]: releasing what senders that are gone left in flight.

pub(crate) mod addressee;
pub(crate) mod directory;
pub(crate) mod lanes;
pub(crate) mod orphans;
pub(crate) mod peers;
mod receive;
mod send;

use crate::error::ShmError;
use crate::meta::{self, MetaError, Record};
use crate::segment::tickets::{Issued, Kind, TicketError};
use crate::transport::attachment::Attachment;
use crate::transport::message::{Message, Source};
use crate::transport::part::{Held, Part};
use crate::transport::socket::addressee::Addressee;
use crate::transport::socket::lanes::{release_frame, Deadline, Got, Link, Readers, Writer};
use crate::transport::socket::peers::{Peers, Sent};
use fairmq_zmq::layered::LayeredSocket;
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
    /// When the ZeroMQ socket was last looked at without waiting (see `Socket::socket_due`).
    socket_looked: std::cell::Cell<Option<std::time::Instant>>,
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
    /// A bound PUSH found that its one peer took everything (see `Socket::one_peer_took_all`):
    /// the looks since, and the count of connected peers then. Dropped when a record goes on
    /// the socket.
    one_peer: std::cell::Cell<Option<OnePeer>>,
}

/// Frames a closing receiving socket takes off its queue at most, to release their messages.
const CLOSE_DRAIN: usize = 100_000;

/// How often a sending socket looks for new peers and dead ones while it has peers. Read on the
/// precise clock: the coarse one ticks every few milliseconds, and a message routed meanwhile to
/// a peer that left waits for the next send to be taken back (a bound PUSH whose second peer
/// left sometimes kept one from the first).
const LEARN_EVERY: std::time::Duration = std::time::Duration::from_millis(1);

/// Looks at its lane a bound PUSH makes before it learns its peers again (see
/// `Socket::one_peer_took_all`; a change in the count of connected peers makes it learn at once).
const ONE_PEER_LOOKS: u32 = 64;

/// A bound PUSH's finding that its one peer took everything.
#[derive(Clone, Copy)]
struct OnePeer {
    looks: u32,
    counted: u64,
}

/// How long a closing socket waits at most for its peers to take what it sent, while it can still
/// deliver (ms; no longer than its linger).
const CLAIM_WAIT_MS: i32 = 2000;

/// What [`Socket::route`] did.
enum Routed {
    Sent,
    /// Nothing: messages taken back from a peer that left go first.
    TakenBack,
    /// Nothing: a single peer came while the message waited for one, and a lane carries it.
    Lane,
}

/// What a look at the socket found.
enum Polled {
    Frame(fairmq_zmq::Message),
    /// A control frame, handled.
    Control,
    Nothing,
}

/// What a receive hands on: a frame's bytes, or a lane entry's records as its reader checked them.
pub(super) enum Received<'a> {
    Frame(&'a [u8], Source),
    /// Decoded from the entry's own copy, checked and marked ours (see `Source::Remarked`), and
    /// whether the entry was a multipart (one of one part is still one).
    Records(&'a [Record], bool),
}

/// What a receive found ready in a lane before it looked further (see `lane_first`).
enum LaneFirst {
    /// The usual case: a single message, taken.
    Message(Message),
    /// A single message whose record was refused (the error says why).
    Refused(TransferError),
    /// Another frame to use first, or none ready.
    Frame(Option<Frame>),
}

/// A received metadata frame.
enum Frame {
    Zmq(fairmq_zmq::Message),
    /// In `lanes.frame`, its records in the readers' `entry_records`.
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
fn handed<'a, P: Held>(parts: &'a [P], tickets: &'a [Issued]) -> impl ExactSizeIterator<Item = Record> + 'a {
    let mut tickets = tickets.iter();
    parts.iter().map(move |p| match p.msg().record() {
        Record::Empty => Record::Empty,
        _ => tickets.next().expect("a ticket per non-empty part").record(),
    })
}

/// What ZeroMQ says of a transfer a socket of this type cannot make (`errno 95`).
fn not_supported() -> TransferError {
    TransferError::Zmq(zmq::Error::ENOTSUP)
}

/// Whether `e` is the refusal of a frame's metadata (malformed, of another version, naming what
/// does not exist, forged or repeated, a ticket that hands nothing over): the frame is skipped,
/// as the peer that sent it, not the application, made the mistake (logged where it was found).
/// A valid multipart received as a single message is the application's to hear of.
fn refused(e: &TransferError) -> bool {
    matches!(e, TransferError::Transport(b) if matches!(
        b.downcast_ref::<ShmError>(),
        Some(ShmError::Metadata(m)) if !matches!(m, MetaError::Multipart(_))
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
                socket_looked: std::cell::Cell::new(None),
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

    /// The ZeroMQ socket that carries this socket's records. Crate-private: a raw frame written
    /// on it would bypass every check a send makes. The fuzz targets write such frames.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn metadata_socket(&self) -> &fairmq_zmq::Socket {
        &self.z
    }

    /// Applies a channel's options to the socket that carries the records: linger, and queue
    /// sizes in messages (a multipart counts once).
    pub fn set_options(&self, o: &SocketOptions) -> Result<(), ShmError> {
        Ok(self.z.set_options(o)?)
    }

    /// The options [`set_options`](Socket::set_options) applies, as the socket has them now.
    pub fn options(&self) -> Result<SocketOptions, ShmError> {
        Ok(self.z.options()?)
    }

    /// This socket in a [`fairmq_zmq::Poller`], beside sockets of the zeromq transport: its
    /// readiness is that of its records and its lane.
    pub fn poll_entry(&self) -> fairmq_zmq::PollEntry<'_> {
        fairmq_zmq::PollEntry::hooked(&self.z, self)
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
        let actual = self.z.last_endpoint();
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
        self.z.set_routing_id(&r.token)?;
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
    ///
    /// Once found, the answer stands for [`ONE_PEER_LOOKS`] looks (sends, and polls for room)
    /// while the count of connected peers stays and nothing goes on the socket (see `route`,
    /// which drops it): nothing can be left unclaimed or taken back meanwhile, and a peer that
    /// connects changes the count (learning peers reads the clock and the socket, which cost more
    /// than the lane's send). A peer that leaves as another comes between two looks leaves the
    /// count as it was: the writer finds its reader gone and offers a new lane, and at worst the
    /// looks left go to that lane before the two peers are learnt.
    fn one_peer_took_all(&self) -> bool {
        let counted = self.z.counted_peers();
        if let Some(o) = self.lanes.one_peer.get() {
            if o.looks < ONE_PEER_LOOKS && o.counted == counted {
                self.lanes.one_peer.set(Some(OnePeer { looks: o.looks + 1, ..o }));
                return true;
            }
        }
        self.learn_peers(false);
        let mut peers = self.peers.borrow_mut();
        let yes = peers.len() == 1 && peers.resend.is_empty() && !peers.unclaimed(&self.mgr);
        // Only while the peers learnt are those counted: a peer whose probe has not come yet is
        // learnt at the next send.
        let settled = yes && counted == 1;
        self.lanes.one_peer.set(settled.then_some(OnePeer { looks: 0, counted }));
        yes
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

    /// The counters, borrowed (cheaper than [`shared_counters`](Socket::shared_counters) on
    /// every transfer).
    pub fn counters_ref(&self) -> &Counters {
        self.z.counters_ref()
    }

    /// The counters, for reading from another thread.
    pub fn shared_counters(&self) -> Arc<Counters> {
        self.z.shared_counters()
    }

    /// Lanes this socket writes and reads now, readable from other threads (for metrics; see
    /// `lanes`): (written, read).
    pub fn lane_counts(&self) -> (Arc<std::sync::atomic::AtomicU64>, Arc<std::sync::atomic::AtomicU64>) {
        (self.lanes.writer.borrow().open_count(), self.lanes.readers.borrow().open_count())
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
