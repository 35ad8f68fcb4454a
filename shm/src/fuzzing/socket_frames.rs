//! Target `socket_frames`: what a peer can send to a shared-memory PULL, through its real receive
//! path (`Socket::receive`, `Socket::receive_parts` and the poller's look, `PollHook::input_ready`),
//! including genuine frames of real messages, replayed and tampered, and genuine lane offers.
//!
//! # Fixture
//!
//! Built once per thread: a real [`Transport`] in a session of its own (8 MiB segment, lanes off),
//! whose `/dev/shm` objects are unlinked as soon as it is created (it keeps them mapped, so a
//! fuzzer killed at any point leaves nothing behind); a shmem PULL, and a plain ZeroMQ DEALER
//! connected to it, which sends every frame of an input (a PULL is a DEALER: a rogue peer needs
//! nothing more); a shmem PAIR with a plain ZeroMQ PAIR connected to it, which captures the genuine
//! frame of every real message the fixture sends on the shmem PAIR (its handed records name real
//! tickets with secret nonces). The plain sockets are sockets of the transport's ZeroMQ context
//! used raw, never through the shared-memory layer.
//!
//! The endpoints are `inproc`: a frame then costs the fuzzer about 15 µs instead of about 100 µs
//! over `ipc` (ZeroMQ's I/O thread and a Unix socket each hop; see `fuzz/README.md` for rates),
//! and the receive path under test is the same: a frame is bytes. With
//! `FAIRMQ_FUZZ_IPC=1` they are `ipc` paths in a temporary directory, removed once the
//! connections stand.
//!
//! Genuine lane frames and offers are written by a lane writer of the crate (`lanes::Writer`, the
//! one a socket uses) whose control frames (offers, wakes) are captured instead of sent.
//!
//! Every genuine message is filled with a pattern of its serial number (8-byte serial, then bytes
//! derived from it; 8 to 308 bytes), so a received message tells which message it is.
//!
//! # Input
//!
//! A sequence of operations, each a first byte `b` and what follows it (missing bytes read as 0).
//! `spec` is one byte: `1 + (spec & 7)` parts, and bit `3 + i` makes part `i` (of the first five)
//! an empty message. `tamper` is an offset byte `at`, a byte `n`, and `1 + (n & 15)` bytes that are
//! xored into the frame from `at % len` on (up to its end).
//!
//! | `b` | then | operation |
//! |---|---|---|
//! | `0x00..=0xef`, `0xfc..=0xff` | `b` bytes | a raw frame of those bytes |
//! | `0xf0` | `spec` | a fresh genuine frame (real messages sent on the shmem PAIR, the captured frame) |
//! | `0xf1` | | the latest genuine frame (socket or lane) again, unchanged (a replay) |
//! | `0xf2` | `spec`, `tamper` | a fresh genuine frame, tampered before its only sending |
//! | `0xf3` | `tamper` | the latest genuine frame again, tampered |
//! | `0xf4` | `spec` | a fresh genuine frame written into the fixture's lane (the first one lays the lane out and makes its offer, which is captured, not sent) |
//! | `0xf5` | | the latest lane offer, unchanged |
//! | `0xf6` | `tamper` | the latest lane offer, tampered |
//! | `0xf7` | a length byte `l`, `l` bytes | a raw frame sent with `ZMQ_SNDMORE` (one ZeroMQ message with the next frame) |
//! | `0xf8` | | the first handed record of the latest genuine socket frame, sent as a lane offer |
//! | `0xf9` | | the handed record of the latest lane offer, sent as a message |
//! | `0xfa` | | the receive method turns once more (see below) |
//! | `0xfb` | | the lane's writer leaves it (closes; a later `0xf4` lays out a new lane) |
//!
//! At most 128 operations and 32 fresh genuine frames count; further ones are skipped.
//!
//! Every frame the DEALER sends is waited for until it is in the PULL's queue (delivery is
//! asynchronous); a frame sent with `ZMQ_SNDMORE` arrives with the frame that ends its message.
//! After each operation the fixture receives until the socket and its lanes are empty, one step at
//! a time, turning through `receive`, `receive_parts` and `input_ready` (timeout 0), so which
//! method meets which frame depends on the input only. After the last operation it sends every
//! lane offer still out, unchanged (so every lane is read), and a sentinel (a fresh genuine single
//! message), and receives until the sentinel arrived and nothing is left.
//!
//! # What must hold
//!
//! - Nothing panics; a receive fails only with a timeout or a metadata error, and a failed
//!   `receive_parts` leaves no parts behind.
//! - Every non-empty message received is a genuine message of this input, with exactly its bytes,
//!   received once: a replayed, tampered or forged frame yields no other bytes and no second copy.
//! - A genuine frame whose first sending was unchanged (and every lane frame) is received whole:
//!   all its messages at once, in order, or, read by `receive` as a multipart, refused as one
//!   (`MetaError::Multipart`, its messages released).
//! - After each input every block comes back: received messages are dropped, tickets of genuine
//!   frames that were only sent tampered are released (as a socket releases a frame nobody takes),
//!   the lane's writer closes and the PULL lets go of the lanes it read; then no ticket is out, and
//!   the segment's free bytes and used blocks are those of the fixture before the first input, and
//!   `check_segment` passes.

use crate::meta::{self, MetaError, Record};
use crate::transport::attachment::Attachment;
use crate::transport::message::{Message, Source};
use crate::transport::socket::lanes::{release_frame, Deadline, Link, Writer};
use crate::{ShmConfig, ShmError, Socket, Transport};
use fairmq_zmq::layered::{PollHook, Raw};
use fairmq_zmq::{SocketType, TransferError};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Operation bytes (see the module docs).
const LAST_RAW: u8 = 0xef;
const OP_FRESH: u8 = 0xf0;
const OP_REPLAY: u8 = 0xf1;
const OP_TAMPER_FRESH: u8 = 0xf2;
const OP_TAMPER_LATEST: u8 = 0xf3;
const OP_LANE: u8 = 0xf4;
const OP_OFFER: u8 = 0xf5;
const OP_TAMPER_OFFER: u8 = 0xf6;
const OP_MORE: u8 = 0xf7;
const OP_MESSAGE_AS_OFFER: u8 = 0xf8;
const OP_OFFER_AS_MESSAGE: u8 = 0xf9;
const OP_NEXT_METHOD: u8 = 0xfa;
const OP_WRITER_LEAVES: u8 = 0xfb;

/// Operations of one input that count, and fresh genuine frames among them.
const MAX_OPS: usize = 128;
const MAX_FRESH: usize = 32;
/// The fixture's segment: room for a lane (64 KiB ring) and every message of an input.
const SEGMENT_SIZE: u64 = 8 << 20;
/// Longest wait for a frame the fixture sent (ipc delivery is asynchronous, but quick).
const SETTLE: Duration = Duration::from_secs(10);
/// One wait for a frame on its way, in ms.
const WAIT_MS: i32 = 5;
/// ZeroMQ send and receive timeouts of the fixture's plain sockets, in ms.
const ZMQ_TIMEOUT: i32 = 5000;

/// Parts of a genuine frame: `1..=8`, and which of the first five are empty messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Number of parts, 1 to 8.
    pub parts: u8,
    /// Bit `i`: part `i` is an empty message (bits 0 to 4).
    pub empty: u8,
}

impl Spec {
    fn from_byte(b: u8) -> Spec {
        Spec { parts: 1 + (b & 7), empty: b >> 3 }
    }

    fn byte(self) -> u8 {
        (self.parts.clamp(1, 8) - 1) | self.empty << 3
    }
}

/// Bytes xored into a frame from offset `at % len` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tamper {
    /// Offset (modulo the frame's length).
    pub at: u8,
    /// 1 to 16 bytes.
    pub xor: Vec<u8>,
}

/// One operation of a `socket_frames` input (see the module docs); [`encode`] writes an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A raw frame of at most 255 bytes (lengths `0xf0..=0xfb` are opcodes: [`encode`] cuts such
    /// a frame to 239 bytes).
    Raw(Vec<u8>),
    /// A raw frame sent with `ZMQ_SNDMORE`.
    RawMore(Vec<u8>),
    /// A fresh genuine frame.
    Fresh(Spec),
    /// The latest genuine frame again.
    Replay,
    /// A fresh genuine frame, tampered before its only sending.
    TamperFresh(Spec, Tamper),
    /// The latest genuine frame again, tampered.
    TamperLatest(Tamper),
    /// A fresh genuine frame written into the lane.
    Lane(Spec),
    /// The latest lane offer.
    Offer,
    /// The latest lane offer, tampered.
    TamperOffer(Tamper),
    /// The first handed record of the latest genuine socket frame as a lane offer.
    MessageAsOffer,
    /// The latest lane offer's handed record as a message.
    OfferAsMessage,
    /// The receive method turns once more.
    NextMethod,
    /// The lane's writer leaves.
    WriterLeaves,
}

/// Writes `ops` as a `socket_frames` input.
pub fn encode(ops: &[Op]) -> Vec<u8> {
    let mut out = Vec::new();
    let tamper = |out: &mut Vec<u8>, t: &Tamper| {
        let n = t.xor.len().clamp(1, 16);
        out.extend([t.at, (n - 1) as u8]);
        out.extend(t.xor.iter().copied().chain(std::iter::repeat(0)).take(n));
    };
    for op in ops {
        match op {
            Op::Raw(bytes) => {
                let len = match bytes.len().min(255) {
                    0xf0..=0xfb => usize::from(LAST_RAW),
                    n => n,
                };
                out.push(len as u8);
                out.extend_from_slice(&bytes[..len]);
            }
            Op::RawMore(bytes) => {
                let len = bytes.len().min(255);
                out.extend([OP_MORE, len as u8]);
                out.extend_from_slice(&bytes[..len]);
            }
            Op::Fresh(s) => out.extend([OP_FRESH, s.byte()]),
            Op::Replay => out.push(OP_REPLAY),
            Op::TamperFresh(s, t) => {
                out.extend([OP_TAMPER_FRESH, s.byte()]);
                tamper(&mut out, t);
            }
            Op::TamperLatest(t) => {
                out.push(OP_TAMPER_LATEST);
                tamper(&mut out, t);
            }
            Op::Lane(s) => out.extend([OP_LANE, s.byte()]),
            Op::Offer => out.push(OP_OFFER),
            Op::TamperOffer(t) => {
                out.push(OP_TAMPER_OFFER);
                tamper(&mut out, t);
            }
            Op::MessageAsOffer => out.push(OP_MESSAGE_AS_OFFER),
            Op::OfferAsMessage => out.push(OP_OFFER_AS_MESSAGE),
            Op::NextMethod => out.push(OP_NEXT_METHOD),
            Op::WriterLeaves => out.push(OP_WRITER_LEAVES),
        }
    }
    out
}

/// Reads an input into its operations (all of them: the limits apply when they run). A raw
/// frame cut short by the end of the input is shorter; other missing bytes read as 0.
pub fn decode(data: &[u8]) -> Vec<Op> {
    let mut rest = data;
    let mut take = |n: usize| {
        let (head, tail) = rest.split_at(n.min(rest.len()));
        rest = tail;
        head.to_vec()
    };
    let mut ops = Vec::new();
    loop {
        let Some(&b) = take(1).first() else { return ops };
        let mut byte = || take(1).first().copied().unwrap_or(0);
        let op = match b {
            OP_FRESH => Op::Fresh(Spec::from_byte(byte())),
            OP_REPLAY => Op::Replay,
            OP_TAMPER_FRESH => {
                let spec = Spec::from_byte(byte());
                Op::TamperFresh(spec, read_tamper(&mut take))
            }
            OP_TAMPER_LATEST => Op::TamperLatest(read_tamper(&mut take)),
            OP_LANE => Op::Lane(Spec::from_byte(byte())),
            OP_OFFER => Op::Offer,
            OP_TAMPER_OFFER => Op::TamperOffer(read_tamper(&mut take)),
            OP_MORE => {
                let n = byte();
                Op::RawMore(take(usize::from(n)))
            }
            OP_MESSAGE_AS_OFFER => Op::MessageAsOffer,
            OP_OFFER_AS_MESSAGE => Op::OfferAsMessage,
            OP_NEXT_METHOD => Op::NextMethod,
            OP_WRITER_LEAVES => Op::WriterLeaves,
            n => Op::Raw(take(usize::from(n))),
        };
        ops.push(op);
    }
}

fn read_tamper(take: &mut impl FnMut(usize) -> Vec<u8>) -> Tamper {
    let head = take(2);
    let at = head.first().copied().unwrap_or(0);
    let n = 1 + usize::from(head.get(1).copied().unwrap_or(0) & 15);
    let mut xor = take(n);
    xor.resize(n, 0);
    Tamper { at, xor }
}

/// The bytes of genuine message `serial`: the serial, then bytes derived from it (8 to 308 bytes).
fn pattern(serial: u64) -> Vec<u8> {
    let size = 8 + (serial % 61) as usize * 5;
    let mut bytes = serial.to_le_bytes().to_vec();
    bytes.extend((8..size).map(|i| (serial as u8).wrapping_mul(151).wrapping_add(i as u8)));
    bytes
}

/// A lane writer's link that keeps the control frames (offers, wakes) instead of sending them.
#[derive(Default)]
struct Capture {
    frames: RefCell<Vec<Vec<u8>>>,
}

impl Link for Capture {
    fn send_control(
        &self,
        frame: &[u8],
        _to: Option<u32>,
        _deadline: Deadline,
        _address: &dyn Fn(u32, u64),
    ) -> Result<bool, TransferError> {
        self.frames.borrow_mut().push(frame.to_vec());
        Ok(true)
    }

    fn send_queue(&self) -> i32 {
        1000 // ZeroMQ's default: the smallest ring
    }
}

struct Fixture {
    // Sockets first: they close before their transport.
    pull: Socket,
    genuine: Socket,
    /// A plain ZeroMQ DEALER (a socket of the transport's context used raw, never through the
    /// shared-memory layer), connected to `pull`.
    dealer: Socket,
    /// A plain ZeroMQ PAIR (used raw, like `dealer`), connected to `genuine`.
    capture: Socket,
    transport: Transport,
    mgr: Arc<Attachment>,
    /// The next genuine message's serial (0 marks an empty part).
    serial: u64,
    /// Free bytes and used blocks of the segment with nothing in flight (measured after the
    /// first message went through).
    baseline: Option<(u64, u64)>,
}

thread_local! {
    // Per thread, as sockets are: the fuzzer runs on one thread, each replay test on its own.
    static FIXTURE: RefCell<Option<Fixture>> = const { RefCell::new(None) };
}

impl Fixture {
    fn new() -> Fixture {
        let session = format!("fuzz-socket-{}-{:08x}", std::process::id(), crate::naming::random_u32());
        let mut config = ShmConfig::new("fuzz", &session);
        config.segment_size = SEGMENT_SIZE;
        config.lanes = false; // records of the PAIR go on the socket, where they are captured
        let transport = Transport::new(&config).expect("the fixture's transport");
        // It keeps what it mapped: nothing of the session needs its name any more.
        crate::session::management::remove_session(&crate::Names::new(transport.shm_id()));
        if std::env::var_os("FAIRMQ_FUZZ_IPC").is_some_and(|v| v == "1") {
            let dir = std::env::temp_dir().join(format!("fairmq-{session}"));
            std::fs::create_dir_all(&dir).expect("the fixture's ipc directory");
            let fixture = Fixture::connect(transport, &|name| format!("ipc://{}", dir.join(name).display()));
            // The connections stand (a frame went through each): their paths are not needed.
            let _ = std::fs::remove_dir_all(&dir);
            fixture
        } else {
            Fixture::connect(transport, &|name| format!("inproc://{session}-{name}"))
        }
    }

    /// The fixture's sockets, on the endpoints `endpoint` names.
    fn connect(transport: Transport, endpoint: &dyn Fn(&str) -> String) -> Fixture {
        let socket = |ty, name| {
            let s = transport.socket(ty, name).expect("socket");
            s.metadata_socket().set_linger(0).expect("linger");
            s
        };
        let pull = socket(SocketType::Pull, "fuzz-in");
        let genuine = socket(SocketType::Pair, "fuzz-genuine");
        // Plain ZeroMQ sockets, in the transport's context so that inproc reaches its sockets.
        let dealer = socket(SocketType::Dealer, "fuzz-rogue");
        let capture = socket(SocketType::Pair, "fuzz-capture");
        pull.bind(&endpoint("in")).expect("pull binds");
        genuine.bind(&endpoint("genuine")).expect("pair binds");
        for (s, to) in [(&dealer, "in"), (&capture, "genuine")] {
            let z = s.metadata_socket().as_zmq();
            z.set_sndtimeo(ZMQ_TIMEOUT).expect("send timeout");
            z.set_rcvtimeo(ZMQ_TIMEOUT).expect("receive timeout");
            s.connect(&endpoint(to)).expect("plain socket connects");
        }
        let mgr = transport.new_message().mgr.clone();
        let mut fx = Fixture { pull, genuine, dealer, capture, transport, mgr, serial: 1, baseline: None };
        // A first genuine message through both connections.
        let mut run = Run::new(&mut fx);
        run.fresh(Spec { parts: 1, empty: 0 }, None);
        let sentinel = run.frames[0].parts[0];
        run.settle(sentinel);
        run.finish();
        fx
    }
}

/// A genuine frame of the input.
struct Genuine {
    bytes: Vec<u8>,
    /// The serial of each part (0: an empty message).
    parts: Vec<u64>,
    lane: bool,
    /// Its first sending was unchanged (lane frames: always), so it must arrive whole.
    whole: bool,
}

/// The receive methods the fixture turns through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Receive,
    Parts,
    Look,
}

const METHODS: [Method; 3] = [Method::Receive, Method::Parts, Method::Look];

/// One input's run against the fixture.
struct Run<'a> {
    fx: &'a mut Fixture,
    frames: Vec<Genuine>,
    /// Frame of each serial.
    owner: HashMap<u64, usize>,
    received: HashSet<u64>,
    /// `MetaError::Multipart(n)` refusals seen, by `n`.
    refused_multiparts: HashMap<usize, usize>,
    latest: Option<usize>,
    latest_socket: Option<usize>,
    writer: Writer,
    link: Capture,
    /// Lane offers the writer made, oldest first.
    offers: Vec<Vec<u8>>,
    /// Turns of the receive method.
    turn: usize,
    /// Fresh genuine frames so far.
    fresh_frames: usize,
}

impl<'a> Run<'a> {
    fn new(fx: &'a mut Fixture) -> Run<'a> {
        Run {
            fx,
            frames: Vec::new(),
            owner: HashMap::new(),
            received: HashSet::new(),
            refused_multiparts: HashMap::new(),
            latest: None,
            latest_socket: None,
            writer: Writer::default(),
            link: Capture::default(),
            offers: Vec::new(),
            turn: 0,
            fresh_frames: 0,
        }
    }

    fn op(&mut self, op: Op) {
        match op {
            Op::Raw(bytes) => self.send(&bytes),
            Op::RawMore(bytes) => self.send_flags(&bytes, zmq::SNDMORE),
            Op::Fresh(spec) => self.fresh(spec, None),
            Op::TamperFresh(spec, t) => self.fresh(spec, Some(t)),
            Op::Replay => {
                if let Some(i) = self.latest {
                    let bytes = self.frames[i].bytes.clone();
                    self.send(&bytes);
                }
            }
            Op::TamperLatest(t) => {
                if let Some(i) = self.latest {
                    let bytes = tampered(&self.frames[i].bytes, &t);
                    self.send(&bytes);
                }
            }
            Op::Lane(spec) => self.lane(spec),
            Op::Offer => {
                if let Some(offer) = self.offers.last().cloned() {
                    self.send(&offer);
                }
            }
            Op::TamperOffer(t) => {
                if let Some(offer) = self.offers.last() {
                    let bytes = tampered(offer, &t);
                    self.send(&bytes);
                }
            }
            Op::MessageAsOffer => {
                let first = self.latest_socket.and_then(|i| handed(&self.frames[i].bytes).into_iter().next());
                if let Some(rec) = first {
                    let mut frame = Vec::new();
                    meta::encode_lane_offer(&rec, &mut frame);
                    self.send(&frame);
                }
            }
            Op::OfferAsMessage => {
                if let Some(offer) = self.offers.last() {
                    let frame = offer[8..].to_vec();
                    self.send(&frame);
                }
            }
            Op::NextMethod => self.turn += 1,
            Op::WriterLeaves => std::mem::take(&mut self.writer).close(&self.fx.mgr),
        }
    }

    /// Fresh genuine messages for `spec`, and their serials.
    fn messages(&mut self, spec: Spec) -> (Vec<Message>, Vec<u64>) {
        let (mut msgs, mut serials) = (Vec::new(), Vec::new());
        for i in 0..spec.parts.clamp(1, 8) {
            if i < 5 && spec.empty & 1 << i != 0 {
                msgs.push(self.fx.transport.new_message());
                serials.push(0);
                continue;
            }
            let serial = self.fx.serial;
            self.fx.serial += 1;
            msgs.push(self.fx.transport.new_message_from_slice(&pattern(serial)).expect("room for a message"));
            serials.push(serial);
        }
        (msgs, serials)
    }

    fn add(&mut self, bytes: Vec<u8>, parts: Vec<u64>, lane: bool, whole: bool) {
        let i = self.frames.len();
        for &s in parts.iter().filter(|&&s| s != 0) {
            self.owner.insert(s, i);
        }
        self.frames.push(Genuine { bytes, parts, lane, whole });
        self.latest = Some(i);
        if !lane {
            self.latest_socket = Some(i);
        }
    }

    /// Sends fresh genuine messages on the shmem PAIR, and their frame (tampered with `tamper`)
    /// on to the PULL.
    fn fresh(&mut self, spec: Spec, tamper: Option<Tamper>) {
        let (mut msgs, parts) = self.messages(spec);
        self.fx.genuine.send_parts(&mut msgs, ZMQ_TIMEOUT).expect("the genuine PAIR sends");
        let capture = self.fx.capture.metadata_socket().as_zmq();
        let bytes = again(|| capture.recv_bytes(0)).expect("the genuine frame is captured");
        let sent = tamper.map_or_else(|| bytes.clone(), |t| tampered(&bytes, &t));
        let whole = sent == bytes;
        self.add(bytes, parts, false, whole);
        self.send(&sent);
    }

    /// Writes fresh genuine messages into the lane, as a socket with a lane does.
    fn lane(&mut self, spec: Spec) {
        let (mut msgs, parts) = self.messages(spec);
        let mut frame = Vec::new();
        meta::encode_parts(msgs.iter().map(Message::record), 0, &mut frame);
        let mark = || msgs.iter().for_each(|m| m.mark_in_flight(true));
        let sent = self.writer.send(&self.fx.mgr, &self.link, &frame, Deadline::Now, &mark);
        if let Err(e) = sent {
            // An input's frames fill a fraction of the ring, and the segment has room.
            panic!("the lane writer refused a frame: {e}");
        }
        msgs.iter_mut().for_each(Message::hand_over);
        self.add(frame, parts, true, true);
        let control = std::mem::take(&mut *self.link.frames.borrow_mut());
        for c in control {
            match meta::control(&c) {
                Some(Ok(meta::Control::Lane(_))) => self.offers.push(c),
                // A wake: the reader went to sleep in its socket; it goes there as it would.
                _ => self.send(&c),
            }
        }
    }

    fn send(&mut self, frame: &[u8]) {
        self.send_flags(frame, 0);
    }

    /// Sends `frame` from the DEALER and, unless more frames of its ZeroMQ message follow, waits
    /// until it is in the PULL's queue (which the receive steps after each operation emptied), so
    /// that the steps after this operation meet it.
    fn send_flags(&mut self, frame: &[u8], flags: i32) {
        let dealer = self.fx.dealer.metadata_socket().as_zmq();
        again(|| dealer.send(frame, flags)).expect("the DEALER sends");
        if flags & zmq::SNDMORE != 0 {
            return;
        }
        let socket = self.fx.pull.metadata_socket().as_zmq();
        let until = Instant::now() + SETTLE;
        // A poll a signal ended (`EINTR`) is made again, as one that found nothing.
        while !socket.poll(zmq::POLLIN, WAIT_MS.into()).is_ok_and(|n| n > 0) {
            assert!(Instant::now() < until, "a frame sent to the socket did not arrive within {SETTLE:?}");
        }
    }

    /// One receive step of `method` within `timeout_ms` (the look never waits); whether it found a
    /// frame (a message, a refusal, or for the look input ready).
    fn step(&mut self, method: Method, timeout_ms: i32) -> bool {
        let pull = &self.fx.pull;
        match method {
            Method::Receive => {
                let mut m = self.fx.transport.new_message();
                match pull.receive(&mut m, timeout_ms) {
                    Ok(n) => {
                        assert_eq!(n, m.size(), "receive reported another size than the message's");
                        self.single(&m);
                        true
                    }
                    Err(e) => self.refused(e),
                }
            }
            Method::Parts => {
                let mut parts = Vec::new();
                match pull.receive_parts(&mut parts, timeout_ms) {
                    Ok(n) => {
                        assert_eq!(n, parts.iter().map(Message::size).sum::<usize>(), "receive_parts miscounted");
                        self.parts(&parts);
                        true
                    }
                    Err(e) => {
                        assert!(parts.is_empty(), "a failed receive_parts left {} parts behind", parts.len());
                        self.refused(e)
                    }
                }
            }
            Method::Look => pull.input_ready(),
        }
    }

    /// A failed receive: a timeout (false) or a refused frame (true); nothing else.
    fn refused(&mut self, e: TransferError) -> bool {
        let TransferError::Transport(e) = e else {
            assert!(matches!(e, TransferError::Timeout), "a receive failed otherwise than with a timeout: {e}");
            return false;
        };
        match e.downcast_ref::<ShmError>() {
            Some(ShmError::Metadata(MetaError::Multipart(n))) => *self.refused_multiparts.entry(*n).or_default() += 1,
            Some(ShmError::Metadata(_)) => {}
            _ => panic!("a receive failed otherwise than with a metadata error: {e}"),
        }
        true
    }

    /// Checks a received message; returns its serial (`None` for an empty message).
    fn check(&mut self, m: &Message) -> Option<u64> {
        let data = m.data();
        if data.is_empty() {
            return None;
        }
        let head: Option<[u8; 8]> = data.get(..8).and_then(|h| h.try_into().ok());
        let serial = head.map(u64::from_le_bytes).filter(|s| self.owner.contains_key(s));
        let Some(serial) = serial else {
            panic!("received {} bytes that no genuine message of this input had: {data:02x?}", data.len())
        };
        assert!(data == pattern(serial), "message {serial} arrived with other bytes: {data:02x?}");
        assert!(self.received.insert(serial), "message {serial} was received twice");
        Some(serial)
    }

    fn single(&mut self, m: &Message) {
        if let Some(serial) = self.check(m) {
            let f = &self.frames[self.owner[&serial]];
            assert!(!f.whole || f.parts.len() == 1, "message {serial} arrived alone, from a frame of {:?}", f.parts);
        }
    }

    fn parts(&mut self, parts: &[Message]) {
        let serials: Vec<u64> = parts.iter().map(|p| self.check(p).unwrap_or(0)).collect();
        let Some(&first) = serials.iter().find(|&&s| s != 0) else { return };
        let f = &self.frames[self.owner[&first]];
        if f.whole {
            assert_eq!(serials, f.parts, "parts of a genuine frame arrived other than whole and in order");
        }
    }

    /// The receive method whose turn it is.
    fn next_method(&mut self) -> Method {
        self.turn += 1;
        METHODS[(self.turn - 1) % METHODS.len()]
    }

    /// Receives with timeout 0 until the socket and the lanes are empty.
    fn drain(&mut self) {
        for _ in 0..4 * MAX_OPS + 64 {
            let method = self.next_method();
            if !self.step(method, 0) {
                return;
            }
        }
        panic!("the socket had more input than was sent to it");
    }

    /// Receives, waiting a little when nothing is there, until message `serial` arrived (every
    /// frame sent before it has then been received), then drains.
    fn settle(&mut self, serial: u64) {
        let until = Instant::now() + SETTLE;
        while !self.received.contains(&serial) {
            assert!(Instant::now() < until, "frames sent to the socket did not arrive within {SETTLE:?}");
            let method = self.next_method();
            if !self.step(method, WAIT_MS) && method == Method::Look {
                self.step(Method::Receive, WAIT_MS);
            }
        }
        self.drain();
    }

    /// Sends what is still out (lane offers, a sentinel), receives everything, checks that every
    /// genuine frame arrived, and brings every block back.
    fn finish(mut self) {
        let out = |offer: &Vec<u8>| match meta::control(offer) {
            Some(Ok(meta::Control::Lane(Record::Handed { ticket, nonce, .. }))) => {
                self.fx.mgr.own().tickets().issued(ticket, nonce)
            }
            _ => false,
        };
        let unclaimed: Vec<Vec<u8>> = self.offers.iter().filter(|o| out(o)).cloned().collect();
        for offer in unclaimed {
            self.send(&offer);
        }
        // The sentinel also ends a ZeroMQ message that a raw frame with `ZMQ_SNDMORE` began.
        self.fresh(Spec { parts: 1, empty: 0 }, None);
        let sentinel = *self.frames.last().and_then(|f| f.parts.first()).expect("the sentinel");
        self.settle(sentinel);

        for (i, f) in self.frames.iter().enumerate().filter(|(_, f)| f.whole) {
            let serials: Vec<u64> = f.parts.iter().copied().filter(|&s| s != 0).collect();
            let got = serials.iter().filter(|s| self.received.contains(s)).count();
            if got == serials.len() {
                continue;
            }
            assert_eq!(got, 0, "genuine frame {i} ({:?}): only some of its messages arrived", f.parts);
            let refusals = self.refused_multiparts.get_mut(&f.parts.len()).filter(|n| **n > 0);
            let Some(n) = refusals else {
                panic!("genuine frame {i} ({:?}, lane: {}) never arrived", f.parts, f.lane);
            };
            *n -= 1;
        }

        // What only went out tampered is released as a socket releases a frame nobody will take.
        for f in self.frames.iter().filter(|f| !f.whole) {
            release_frame(&self.fx.mgr, &f.bytes, Source::Socket);
        }
        std::mem::take(&mut self.writer).close(&self.fx.mgr);
        // The PULL lets go of the lanes it read (their writer closed): what a poller does before
        // it sleeps.
        let _ = self.fx.pull.arm();
        self.fx.pull.disarm();
        self.fx.transport.flush();

        let fx = &mut *self.fx;
        assert_eq!(fx.mgr.own().tickets().outstanding(), 0, "tickets are left out");
        let stats = fx.transport.segment_stats();
        let now = (stats.free, stats.used_blocks);
        let baseline = *fx.baseline.get_or_insert(now);
        let used = || fx.transport.segment().used_blocks().unwrap_or_default();
        assert_eq!(now, baseline, "blocks did not come back (free bytes, used blocks); used: {:?}", used());
        if let Err(e) = fx.transport.check_segment() {
            panic!("the segment is damaged: {e}");
        }
    }
}

/// A call on a plain ZeroMQ socket, made again when a signal interrupted it (`EINTR`: libFuzzer's
/// timeout check is a periodic `SIGALRM`). The transport's own calls do the same.
fn again<T>(mut call: impl FnMut() -> zmq::Result<T>) -> zmq::Result<T> {
    loop {
        match call() {
            Err(zmq::Error::EINTR) => {}
            done => return done,
        }
    }
}

/// The handed records of a genuine frame.
fn handed(frame: &[u8]) -> Vec<Record> {
    let mut recs = Vec::new();
    let _ = meta::decode(frame, &mut recs);
    recs.retain(|r| matches!(r, Record::Handed { .. }));
    recs
}

/// `frame` with `t` applied.
fn tampered(frame: &[u8], t: &Tamper) -> Vec<u8> {
    let mut bytes = frame.to_vec();
    if !bytes.is_empty() {
        let at = usize::from(t.at) % bytes.len();
        for (b, x) in bytes[at..].iter_mut().zip(&t.xor) {
            *b ^= x;
        }
    }
    bytes
}

/// Runs `f` on this thread's fixture, built on first use.
fn with_fixture<R>(f: impl FnOnce(&mut Fixture) -> R) -> R {
    FIXTURE.with(|cell| f(cell.borrow_mut().get_or_insert_with(Fixture::new)))
}

/// Target `socket_frames`: see the module docs.
pub fn socket_frames(data: &[u8]) {
    with_fixture(|fx| {
        let mut run = Run::new(fx);
        for op in decode(data).into_iter().take(MAX_OPS) {
            let fresh = matches!(op, Op::Fresh(_) | Op::TamperFresh(..) | Op::Lane(_));
            if fresh {
                if run.fresh_frames == MAX_FRESH {
                    continue;
                }
                run.fresh_frames += 1;
            }
            run.op(op);
            run.drain();
        }
        run.finish();
    });
}

/// Seeds of `socket_frames`, written by [`encode`]: each kind of operation, and the frames that
/// found bugs before (issue 17 item 1: a 9-byte wake frame).
pub(super) fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let v = meta::VERSION;
    let spec = |parts: u8, empty: u8| Spec { parts, empty };
    let one = spec(1, 0);
    let xor = |at: u8, xor: &[u8]| Tamper { at, xor: xor.to_vec() };
    let mut block_record = Vec::new();
    Record::Block { segment: 0, offset: 4096, delta: 32, size: 8, slot: 0, generation: 1 }.encode(&mut block_record);
    let mut forged_offer = vec![v, 4, 0, 0, 0, 0, 0, 0];
    Record::Handed { segment: 0, ticket: 1, nonce: 0x1234_5678 }.encode(&mut forged_offer);
    let mut offer_of_block = vec![v, 4, 0, 0, 0, 0, 0, 0];
    offer_of_block.extend_from_slice(&block_record);
    let seeds: Vec<(&str, Vec<Op>)> = vec![
        ("genuine-single", vec![Op::Fresh(one)]),
        (
            "genuine-multipart",
            vec![Op::Fresh(spec(3, 0)), Op::NextMethod, Op::Fresh(spec(4, 0b101)), Op::Fresh(spec(2, 0b11))],
        ),
        ("replay", vec![Op::Fresh(one), Op::Replay, Op::Fresh(spec(2, 0)), Op::Replay, Op::Replay]),
        (
            "tamper-fresh",
            vec![
                Op::TamperFresh(one, xor(8, &[1])),                  // the nonce
                Op::TamperFresh(spec(3, 0), xor(20, &[0xff, 0xff])), // a part's ticket
                Op::TamperFresh(spec(2, 0), xor(4, &[1])),           // the part count
            ],
        ),
        (
            "tamper-latest",
            vec![
                Op::Fresh(spec(2, 0)),
                Op::TamperLatest(xor(12, &[1])),
                Op::Fresh(one),
                Op::TamperLatest(xor(4, &[1])),
            ],
        ),
        // The original after a copy refused before any claim (a reserved byte): it still counts.
        ("tampered-then-original", vec![Op::TamperFresh(spec(2, 0), xor(2, &[1])), Op::Replay]),
        // A copy whose second part is bad: the first one is claimed and released, none arrives.
        ("tampered-part", vec![Op::TamperFresh(spec(2, 0), xor(30, &[1])), Op::Replay]),
        ("lane", vec![Op::Lane(one), Op::Lane(spec(3, 0b10)), Op::Offer, Op::Lane(spec(2, 0))]),
        (
            "lane-offer-tampered",
            vec![Op::Lane(one), Op::TamperOffer(xor(16, &[1])), Op::TamperOffer(xor(2, &[1])), Op::Offer, Op::Offer],
        ),
        ("lane-writer-leaves", vec![Op::Lane(one), Op::Offer, Op::WriterLeaves, Op::Lane(spec(2, 0)), Op::Offer]),
        ("lane-orphaned", vec![Op::Lane(spec(2, 0)), Op::WriterLeaves, Op::Lane(one)]),
        // A lane's block records on the socket, as they are and as a handed record (tag 1 -> 6).
        ("lane-frame-on-socket", vec![Op::Lane(one), Op::Replay, Op::TamperLatest(xor(1, &[7])), Op::Offer]),
        ("message-as-offer", vec![Op::TamperFresh(one, xor(0, &[1])), Op::MessageAsOffer, Op::Replay]),
        ("offer-as-message", vec![Op::Lane(one), Op::OfferAsMessage, Op::Offer]),
        (
            "wake-frames",
            vec![
                Op::Raw(meta::WAKE_FRAME.to_vec()),
                Op::Raw([&meta::WAKE_FRAME[..], &[0xff]].concat()), // issue 17 item 1
                Op::Raw(meta::WAKE_FRAME[..7].to_vec()),
                Op::Raw([&meta::WAKE_FRAME[..], &[0; 8]].concat()),
                Op::Fresh(one),
            ],
        ),
        (
            "forged-control",
            vec![
                Op::Raw(vec![v, 4, 0, 0, 0, 0, 0, 0]),
                Op::Raw(vec![v, 4, 0, 0, 0, 0, 0, 0, v]),
                Op::Raw(forged_offer),
                Op::Raw(offer_of_block),
                Op::Fresh(one),
            ],
        ),
        (
            "untracked-records",
            vec![
                Op::Raw(block_record.clone()),
                Op::Raw([&[v, 3, 0, 0, 2, 0, 0, 0][..], &block_record, &[v, 0, 0, 0, 0, 0, 0, 0]].concat()),
                Op::Raw(vec![v, 0, 0, 0, 0, 0, 0, 0]),
                Op::Raw(vec![v, 3, 0, 0, 2, 0, 0, 0, v, 0, 0, 0, 0, 0, 0, 0, v, 0, 0, 0, 0, 0, 0, 0]),
                Op::Raw(Vec::new()),
            ],
        ),
        ("zmq-more", vec![Op::RawMore(meta::WAKE_FRAME.to_vec()), Op::Fresh(one), Op::RawMore(vec![1, 2, 3])]),
        (
            "methods",
            vec![
                Op::Fresh(one),
                Op::NextMethod,
                Op::Fresh(spec(3, 0)),
                Op::NextMethod,
                Op::Lane(spec(2, 0)),
                Op::Offer,
                Op::NextMethod,
                Op::NextMethod,
                Op::Fresh(spec(2, 0)),
            ],
        ),
    ];
    seeds.into_iter().map(|(name, ops)| ("socket_frames", name.to_owned(), encode(&ops))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_decode_to_what_was_encoded() {
        for (_, name, bytes) in seeds() {
            assert_eq!(encode(&decode(&bytes)), bytes, "seed {name}");
        }
        let ops = vec![
            Op::Raw(vec![9; 0xf5]), // a length that is an opcode: cut to 239 bytes
            Op::TamperOffer(Tamper { at: 3, xor: vec![] }),
        ];
        let back = decode(&encode(&ops));
        assert_eq!(back, [Op::Raw(vec![9; 0xef]), Op::TamperOffer(Tamper { at: 3, xor: vec![0] })]);
        // Cut short: a raw frame is shorter, missing operands read as 0.
        assert_eq!(decode(&[5, 1, 2]), [Op::Raw(vec![1, 2])]);
        assert_eq!(decode(&[OP_TAMPER_LATEST, 7]), [Op::TamperLatest(Tamper { at: 7, xor: vec![0] })]);
        assert_eq!(decode(&[OP_LANE]), [Op::Lane(Spec { parts: 1, empty: 0 })]);
    }

    #[test]
    fn tampering_xors_from_the_offset_to_the_end() {
        let t = Tamper { at: 5, xor: vec![1, 2, 3] };
        assert_eq!(tampered(&[0; 6], &t), [0, 0, 0, 0, 0, 1]);
        assert_eq!(tampered(&[0; 4], &t), [0, 1, 2, 3], "the offset wraps around the length");
        assert_eq!(tampered(&[], &t), Vec::<u8>::new());
    }

    /// The checks catch what they are there for (each test thread has a fixture of its own).
    #[test]
    #[should_panic(expected = "no genuine message of this input had")]
    fn a_message_no_genuine_frame_carried_is_caught() {
        with_fixture(|fx| {
            let mut run = Run::new(fx);
            run.fresh(Spec { parts: 1, empty: 0 }, None);
            let stranger = run.fx.transport.new_message_from_slice(&pattern(run.fx.serial + 7)).unwrap();
            run.check(&stranger);
        });
    }

    #[test]
    #[should_panic(expected = "received twice")]
    fn a_second_copy_is_caught() {
        with_fixture(|fx| {
            let mut run = Run::new(fx);
            run.fresh(Spec { parts: 1, empty: 0 }, None);
            let serial = run.frames[0].parts[0];
            let copy = run.fx.transport.new_message_from_slice(&pattern(serial)).unwrap();
            run.check(&copy);
            run.check(&copy);
        });
    }

    #[test]
    #[should_panic(expected = "blocks did not come back")]
    fn a_lost_block_is_caught() {
        with_fixture(|fx| {
            let mut run = Run::new(fx);
            std::mem::forget(run.fx.transport.new_message_with_size(100).unwrap());
            run.fresh(Spec { parts: 1, empty: 0 }, None);
            run.finish();
        });
    }

    #[test]
    #[should_panic(expected = "never arrived")]
    fn a_genuine_frame_that_never_arrives_is_caught() {
        with_fixture(|fx| {
            let mut run = Run::new(fx);
            // Recorded as sent whole, but what went out was its tampered copy.
            run.fresh(Spec { parts: 1, empty: 0 }, Some(Tamper { at: 9, xor: vec![1] }));
            run.frames[0].whole = true;
            run.finish();
        });
    }
}
