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

/// A socket of the shared-memory transport. Like a ZeroMQ socket, it is not `Sync`.
///
/// PUSH and PUB hand messages only to peers they know (see `peers`). They send over a ZeroMQ
/// ROUTER to receiving sockets (PULL and SUB, which are ZeroMQ DEALERs). A receiving socket
/// becomes known when the probe of its connection presents a session token. So a socket that is
/// not one of the session's gets nothing. What a peer did not take before it went away comes
/// back to the sender.
///
/// A PUSH takes its peers in turn and skips those whose queue is full, as ZeroMQ's PUSH does.
/// PUB/SUB is zero-copy (FairMQ refuses PUB/SUB on shmem): the record goes to every subscriber.
/// The block's reference count holds one reference for each subscriber, so the last subscriber
/// to drop its message frees the block. Like ZeroMQ's PUB, a publisher never waits: a subscriber
/// whose queue is full misses the message.
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
    // Declared first, so that it is dropped first. Closing it may wait for linger, and the
    // attachment must stay until then.
    z: fairmq_zmq::Socket,
    mgr: Arc<Attachment>,
    id: String,
    ty: SocketType,
    /// PUSH, PUB: the receiving sockets this socket knows, and what it handed to each.
    peers: Box<RefCell<Peers>>,
    /// PUSH, PUB: when this socket last looked for its peers.
    learnt: std::cell::Cell<Option<std::time::Instant>>,
    /// What a receiving socket (PULL, SUB, PAIR, REQ, REP, DEALER, ROUTER) keeps about itself.
    /// It is boxed, because most sockets send.
    receiving: Box<Receiving>,
    scratch: RefCell<(Vec<u8>, Vec<Record>)>,
    /// The tickets of the frame being sent.
    issued: RefCell<Vec<Issued>>,
    lanes: Box<LaneState>,
    /// PAIR, REQ, REP, DEALER, ROUTER: the receiver their tickets name, where it can be named.
    addressee: RefCell<Option<Box<Addressee>>>,
}

/// What a receiving socket keeps about itself: its number as its token holds it (0: none), when
/// it last announced itself to the senders it connected to, and its watch for records lost in
/// flight to it (see `orphans`).
struct Receiving {
    number: u64,
    /// The token this socket presents on the connections it makes, once it makes one.
    token: Vec<u8>,
    presented: std::cell::Cell<bool>,
    announced: std::cell::Cell<Option<std::time::Instant>>,
    /// Receives since the socket last looked at the clock to see whether a hello is due. A busy
    /// socket looks at the clock only now and then, not on every receive.
    busy: std::cell::Cell<u32>,
    /// When the ZeroMQ socket was last looked at without waiting (see `Socket::socket_due`).
    socket_looked: std::cell::Cell<Option<std::time::Instant>>,
    /// PULL, SUB: the endpoints where this socket is bound, as listed in the session's endpoint
    /// directory (see `directory`).
    listing: RefCell<crate::transport::socket::directory::Listing>,
    orphans: RefCell<crate::transport::socket::orphans::Watch>,
}

/// The socket's lanes. They are boxed, because most sockets of a device use few of them.
#[derive(Default)]
struct LaneState {
    writer: RefCell<Writer>,
    readers: RefCell<Readers>,
    /// A frame that the poller took off the ZeroMQ socket to see whether it carries a message.
    /// A frame is kept here only when it does.
    stash: RefCell<Option<fairmq_zmq::Message>>,
    frame: RefCell<Vec<u8>>,
    /// Set when a bound PUSH found that its one peer took everything (see
    /// `Socket::one_peer_took_all`). It holds the looks made since then, and the count of
    /// connected peers at that time. It is cleared when a record goes on the ZeroMQ socket.
    one_peer: std::cell::Cell<Option<OnePeer>>,
}

/// The most frames that a closing receiving socket takes off its queue to release their
/// messages.
const CLOSE_DRAIN: usize = 100_000;

/// How often a sending socket looks for new and dead peers while it has peers. The time is read
/// on the precise clock, because the coarse clock ticks only every few milliseconds. Between two
/// looks, a message may be routed to a peer that left, and that message is taken back only at
/// the next send. With the coarse clock, a bound PUSH whose second peer left sometimes withheld a
/// message from its first peer this way.
const LEARN_EVERY: std::time::Duration = std::time::Duration::from_millis(1);

/// How many looks at its lane a bound PUSH makes before it learns its peers again (see
/// `Socket::one_peer_took_all`). A change in the count of connected peers makes it learn at once.
const ONE_PEER_LOOKS: u32 = 64;

/// A bound PUSH's finding that its one peer took everything.
#[derive(Clone, Copy)]
struct OnePeer {
    looks: u32,
    counted: u64,
}

/// The longest time, in ms, that a closing socket waits for its peers to take what it sent. The
/// socket waits while it can still deliver. The wait is never longer than the socket's linger.
const CLAIM_WAIT_MS: i32 = 2000;

/// What [`Socket::route`] did.
enum Routed {
    Sent,
    /// Nothing was sent: messages taken back from a peer that left must go first.
    TakenBack,
    /// Nothing was sent: a single peer came while the message waited for one, so a lane carries
    /// the message.
    Lane,
}

/// What a look at the socket found.
enum Polled {
    Frame(fairmq_zmq::Message),
    /// A control frame, which the look already handled.
    Control,
    Nothing,
}

/// What a receive hands on: a frame's bytes, or the records of a lane entry as the lane's reader
/// checked them.
pub(super) enum Received<'a> {
    Frame(&'a [u8], Source),
    /// The entry's records, and whether the entry was a multipart (a multipart of one part is
    /// still a multipart). The records were decoded from the entry's own copy, checked, and
    /// marked as ours (see `Source::Remarked`).
    Records(&'a [Record], bool),
}

/// What a receive found ready in a lane before it looked anywhere else (see
/// `Socket::lane_first`).
enum LaneFirst {
    /// The usual case: a single message, which the receive took.
    Message(Message),
    /// A single message whose record was refused (the error says why).
    Refused(TransferError),
    /// Any other frame, which the receive uses first, or `None` when no frame is ready.
    Frame(Option<Frame>),
}

/// A received metadata frame.
enum Frame {
    Zmq(fairmq_zmq::Message),
    /// A lane entry. Its bytes are in `lanes.frame`, and its records are in the readers'
    /// `entry_records`.
    Lane,
    /// A frame too large for a lane, in a block of its own.
    Block(Message),
}

impl From<Got> for Frame {
    fn from(got: Got) -> Frame {
        match got {
            Got::Frame => Frame::Lane,
            Got::Indirect(m) => Frame::Block(m),
        }
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let linger = self.z.linger().unwrap_or(0);
        self.lanes.writer.borrow().offer_before_close(&self.mgr, &*self, Deadline::new(linger));
        // Wait a moment at most for the peers to take what they were sent. ZeroMQ's linger does
        // not do this: it waits only for frames to leave, not for a receiver to read them, and it
        // goes on after the close.
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
            // The stashed frame's messages were received but never taken, so their blocks go
            // back. ZeroMQ drops such frames too.
            release_frame(&self.mgr, f.data(), Source::Socket);
        }
        if self.receives() {
            // The blocks of the messages still queued go back too. Their senders, if they live,
            // would never learn that nobody will take them. The drain is bounded, so that a
            // flood cannot hold up the close.
            let mut f = fairmq_zmq::Message::new();
            for _ in 0..CLOSE_DRAIN {
                if self.z.receive_uncounted(&mut f, 0).is_err() {
                    break;
                }
                release_frame(&self.mgr, f.data(), Source::Socket);
            }
        }
        // A lane freed here is a large block. It goes back to the segment now, not later when
        // the list of deferred blocks is long.
        self.mgr.flush(false);
    }
}

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket").field("id", &self.z.id()).finish()
    }
}

/// The records that hand `parts` over with `tickets`. `tickets` holds one ticket for each
/// non-empty part, in order.
fn handed<'a, P: Held>(parts: &'a [P], tickets: &'a [Issued]) -> impl ExactSizeIterator<Item = Record> + 'a {
    let mut tickets = tickets.iter();
    parts.iter().map(move |p| match p.msg().record() {
        Record::Empty => Record::Empty,
        _ => tickets.next().expect("a ticket per non-empty part").record(),
    })
}

/// The error that ZeroMQ gives for a transfer that a socket of this type cannot make
/// (`errno 95`).
fn not_supported() -> TransferError {
    TransferError::Zmq(zmq::Error::ENOTSUP)
}

/// Whether `e` is the refusal of a frame's metadata. Metadata is refused when it is malformed,
/// of another version, forged or repeated, when it names what does not exist, or when it holds
/// a ticket that hands nothing over. Such a frame is skipped, because the peer that sent it made
/// the mistake, not the application. The mistake was logged where it was found. A valid
/// multipart received as a single message is not a refusal: the application must hear of it.
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

    /// The socket's id: `<transport id>.<channel name>.<type>`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The socket pattern.
    pub fn socket_type(&self) -> SocketType {
        self.ty
    }

    /// The ZeroMQ socket that carries this socket's records. It is crate-private, because a raw
    /// frame written on it would bypass every check that a send makes. The fuzz targets write
    /// such frames.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn metadata_socket(&self) -> &fairmq_zmq::Socket {
        &self.z
    }

    /// Applies a channel's options to the ZeroMQ socket that carries the records: the linger,
    /// and the queue sizes in messages. A multipart counts as one message.
    pub fn set_options(&self, o: &SocketOptions) -> Result<(), ShmError> {
        Ok(self.z.set_options(o)?)
    }

    /// The options [`set_options`](Socket::set_options) applies, as the socket has them now.
    pub fn options(&self) -> Result<SocketOptions, ShmError> {
        Ok(self.z.options()?)
    }

    /// This socket as an entry of a [`fairmq_zmq::Poller`], beside sockets of the zeromq
    /// transport. The entry's readiness is that of the socket's records and of its lane.
    pub fn poll_entry(&self) -> fairmq_zmq::PollEntry<'_> {
        fairmq_zmq::PollEntry::hooked(&self.z, self)
    }

    /// Binds or connects a channel address (see [`fairmq_zmq::Socket::attach`]).
    pub fn attach(&self, address: &str, o: &AttachOptions) -> Result<String, ShmError> {
        if fairmq_zmq::split_endpoints(address).any(|ep| ep.method(o.method) == Some(fairmq_zmq::Method::Connect)) {
            self.present_token()?;
        }
        let attached = self.z.attach(address, o).inspect_err(|_| {
            // The endpoints connected before the one that failed are not named: they get key 0.
            // This keeps the directory keys in step with the connections.
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

    /// Records an endpoint that the socket bound or connected, in the session's directory (see
    /// `addressee`).
    /// A PULL or SUB lists where it binds, so that a PUSH that connects there can name it. A
    /// PUSH notes where it connects, so that it can look that name up.
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

    /// Makes a receiving socket's token its routing id, before the socket's first connect. The
    /// senders that the socket connects to check the token (see `peers`). The token is set only
    /// then, because ZeroMQ tells a socket's routing id to every peer, including the peers that
    /// connect to it. A token told to anyone who can reach a bound endpoint would let them pose
    /// as this socket to the session's senders.
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

    /// Whether records go through a lane. They do when the socket has a single peer: a PAIR, a
    /// PUSH connected to one endpoint and bound to none, or a bound PUSH with one peer. The lane
    /// then reaches the same peer that ZeroMQ would have picked.
    /// A send queue limited below ZeroMQ's default (1000) keeps its limit. The ZeroMQ socket then
    /// carries the records, not a lane, because the smallest ring of a lane holds about 1600
    /// records. A larger limit sizes the ring (see `lanes::capacity_for`). A segment too small
    /// for a ring has no lanes.
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

    /// Whether a bound PUSH may use a lane. It may while one peer is connected, nothing waits to
    /// go out again, and the peer took everything it was sent on the ZeroMQ socket. Then the
    /// lane's entries never overtake what went on the socket before, because a receiver reads
    /// its lanes first. With a second peer, records go on the socket again. The first peer still
    /// reads what its lane holds before it reads those records. What a lane owes (messages taken
    /// back from a reader that left) goes through a lane first, whatever the peers are.
    ///
    /// Once `one_peer_took_all` finds that the one peer took everything, the answer stands for
    /// [`ONE_PEER_LOOKS`] looks (sends, and polls for room). It stands only while the count of
    /// connected peers stays the same and nothing goes on the socket (`Socket::route` drops the
    /// answer). Meanwhile, nothing can be left unclaimed or taken back, and a peer that connects
    /// changes the count. The answer is kept because learning the peers reads the clock and the
    /// socket, which costs more than the lane's send.
    ///
    /// A peer may leave while another comes, between two looks. The count then stays as it was.
    /// The writer finds its reader gone and offers a new lane. At worst, the looks left go to
    /// that lane before the two peers are learnt.
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
        // The answer is kept only while the peers learnt are the peers counted. When they differ,
        // a peer's probe has not come yet, and the next send learns that peer.
        let settled = yes && counted == 1;
        self.lanes.one_peer.set(settled.then_some(OnePeer { looks: 0, counted }));
        yes
    }

    /// Fails for PUSH and PUB, which cannot receive: their ROUTER only hears the peers' probes.
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

    /// The count of connected peers, readable from other threads.
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

    /// How many lanes this socket writes and reads now, as (written, read). The counts are
    /// readable from other threads, for metrics (see `lanes`).
    pub fn lane_counts(&self) -> (Arc<std::sync::atomic::AtomicU64>, Arc<std::sync::atomic::AtomicU64>) {
        (self.lanes.writer.borrow().open_count(), self.lanes.readers.borrow().open_count())
    }
}

impl fairmq_zmq::layered::PollHook for Socket {
    fn input_ready(&self) -> bool {
        // PUB and PUSH have nothing to receive. A publisher's socket carries only the
        // subscribers' probes, and a receive on a PUSH fails. A poller that reported a PUSH ready
        // made its callers spin on that failure.
        if !self.receives() {
            return false;
        }
        loop {
            if self.lanes.stash.borrow().is_some() || self.lanes.readers.borrow().any_ready() {
                return true;
            }
            match self.poll_socket() {
                // The receive would skip a frame whose message was taken back, and then wait. So
                // such a frame is not input.
                Ok(Polled::Frame(f)) if self.taken_back(f.data()) => {}
                Ok(Polled::Frame(f)) => {
                    *self.lanes.stash.borrow_mut() = Some(f);
                    return true;
                }
                // A bad control frame was logged and dropped, so keep looking.
                Ok(Polled::Control) | Err(TransferError::Transport(_)) => {}
                Ok(Polled::Nothing) | Err(TransferError::Interrupted | TransferError::Timeout) => return false,
                // The socket failed. It is reported ready, so that the receive that follows
                // reports the error.
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
        // Before a poller sleeps, it frees what this process deferred, as a receive does.
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
            // The peer is gone, or its queue is full. The offer is made again later, as if no
            // peer had been known.
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
