//! The shared-memory transport: the [`Transport`] type, its sockets and its messages.
//!
//! This module holds everything that moves a message from one process of a session to another.
//! The payload stays in shared memory. Only a small metadata record travels over ZeroMQ.
//!
//! # Main types
//!
//! - [`Transport`] is FairMQ's `shmem::TransportFactory`. Creating one attaches this process to
//!   the session and opens a ZeroMQ context for the metadata. The first transport of a session
//!   creates the session's objects; the last one removes them.
//! - [`Attachment`] is the transport's per-process state in the session: the management segment,
//!   the segment this transport allocates in, the segments of its peers and its block caches.
//! - [`Socket`] is a socket of the transport. It wraps a ZeroMQ socket that carries metadata
//!   records, never payloads.
//! - [`Message`] holds one reference to a block of a managed segment, or to a piece of an
//!   unmanaged [`Region`].
//! - [`ShmConfig`] holds the settings.
//!
//! # How a message travels
//!
//! 1. The sender makes a [`Message`], for example with [`Transport::new_message_from_slice`].
//!    The payload is written into a block of the sender's segment, and no send or receive
//!    copies it.
//! 2. [`Socket::send`] writes a hand-over *ticket* into the sender's segment for each part. The
//!    ticket describes the block and holds a fresh random 64-bit nonce (see `segment::tickets`).
//!    The sent message is left empty: its reference now belongs to the ticket.
//! 3. The socket sends one ZeroMQ frame with a 16-byte record per part (a multipart adds an
//!    8-byte header). A record names only the segment, the ticket and the nonce (see `meta`).
//!    A PUSH or PUB picks the receiving peer itself (see [`socket::peers`]). The other socket
//!    types let ZeroMQ pick, and the ticket names the receiver where the session's directory of
//!    endpoints knows it (see [`socket::addressee`]).
//! 4. Between a sender with a single peer and its receiver, the socket writes an entry into a
//!    *lane* instead: a ring in the sender's segment (see [`socket::lanes`]). The entry holds the
//!    block records themselves, without tickets. The ZeroMQ socket then carries only the lane's
//!    offer and the frames that wake a sleeping reader.
//! 5. [`Socket::receive`] reads the ticket that the record names and checks what it describes:
//!    the segment is known, the block is live, and the bounds hold. It then claims the ticket by
//!    swapping the nonce for 0. Only one claim succeeds, so a forged or repeated record grants
//!    nothing. A lane reader instead checks each block an entry names and marks it as its own.
//! 6. The received [`Message`] now holds the reference. Whoever drops the last reference to a
//!    block frees it, in whatever process that is.
//!
//! # When a process dies
//!
//! - A *sweep of the dead* frees the blocks that a dead process held alone. It also drops the
//!   shared references that the dead process listed in its ledger (see `session::ledger`). Every
//!   transport sweeps when it attaches and when it detaches; [`Transport::sweep_dead_processes`]
//!   and the monitor sweep too.
//! - When a receiver dies or goes away, its sender takes back every message the receiver did not
//!   claim. Depending on the socket type, the sender sends the message again to another peer or
//!   releases it (see [`socket::peers`], [`socket::addressee`] and [`socket::lanes`]).
//! - When a sender is killed, the receiver frees the messages that were in flight (see
//!   [`socket::orphans`]).
//!
//! # Submodules
//!
//! - [`attachment`]: [`Attachment`], and the out-of-memory policy.
//! - [`config`]: [`ShmConfig`], named and defaulted as FairMQ's options.
//! - [`events`]: region events (FairMQ's `SubscribeToRegionEvents` and `GetRegionInfo`).
//! - [`message`]: [`Message`], and how a message's reference count works.
//! - [`part`]: the parts a send takes: a [`Message`], or a caller's own message type that holds one.
//! - [`poller`]: waiting on several sockets at once.
//! - [`region`]: unmanaged regions ([`Region`]) and the callbacks that hand their pieces back.
//! - [`socket`]: [`Socket`], with its send and receive paths, lanes, peers, addressees, orphans
//!   and the session's directory of endpoints.
//! - [`usage`]: what a transport uses of the session, read for the metrics.

pub(crate) mod attachment;
pub(crate) mod config;
pub(crate) mod events;
pub(crate) mod message;
pub(crate) mod part;
pub(crate) mod poller;
pub(crate) mod region;
pub(crate) mod socket;
pub(crate) mod usage;

use crate::error::ShmError;
use crate::segment::SegmentStats;
use crate::transport::attachment::Attachment;
use crate::transport::config::ShmConfig;
use crate::transport::events::{RegionInfo, Subscription};
use crate::transport::message::Message;
use crate::transport::region::{Region, RegionCallback, RegionConfig};
use crate::transport::socket::Socket;
use fairmq_zmq::layered::{LayeredSocket, LayeredTransport};
use fairmq_zmq::{SocketType, TransportConfig};
use std::ffi::c_void;
use std::sync::Arc;

/// The shared-memory transport (FairMQ's `shmem::TransportFactory`). It is cheap to clone.
///
/// Creating a `Transport` attaches this process to the session. The first transport of the
/// session creates the session's objects. When the last transport of the session is gone, the
/// session's objects are removed, unless `no_cleanup` is set.
///
/// # Examples
///
/// Two transports of one session, as two devices would have them. A message that one transport
/// allocates is read by the other without a copy.
///
/// ```
/// use fairmq_shm::{ShmConfig, Transport};
/// use fairmq_zmq::SocketType;
///
/// let session = format!("doc-shm-transport-{}", std::process::id());
/// let config = |id: &str| {
///     let mut c = ShmConfig::new(id, &session);
///     c.segment_size = 16 << 20;
///     c
/// };
/// let (sender, receiver) = (Transport::new(&config("sender"))?, Transport::new(&config("receiver"))?);
/// let pull = receiver.socket(SocketType::Pull, "data")?;
/// // An abstract socket name (no file to remove).
/// let address = format!("ipc://@doc-shm-transport-{}", std::process::id());
/// pull.bind(&address)?;
/// let push = sender.socket(SocketType::Push, "data")?;
/// push.connect(&address)?;
///
/// let mut msg = sender.new_message_with_size(4096)?;
/// msg.data_mut()?.fill(7);
/// push.send(&mut msg, 1000)?;
/// let mut received = receiver.new_message();
/// pull.receive(&mut received, 1000)?;
/// assert!(received.data().iter().all(|&b| b == 7));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Transport {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    // Declared first, because Rust drops fields in declaration order. The ZeroMQ context of the
    // metadata sockets therefore ends, with its linger, before the session is detached.
    zmq: fairmq_zmq::Transport,
    mgr: Arc<Attachment>,
    events: parking_lot::Mutex<Option<Subscription>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The subscription's thread holds the attachment, so stop the thread before the attachment
        // can go. The thread is joined outside the `events` lock, because its callback may take
        // that lock.
        let old = self.events.lock().take();
        drop(old);
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subscription")
    }
}

impl Transport {
    /// Attaches to the session named by `config`.
    pub fn new(config: &ShmConfig) -> Result<Transport, ShmError> {
        Self::join(config, true)
    }

    /// Attaches to a session and a segment that already exist, and creates nothing. The monitor
    /// uses such a transport to sweep what only a transport can release (see `monitor::sweep`).
    pub(crate) fn existing(config: &ShmConfig) -> Result<Transport, ShmError> {
        Self::join(config, false)
    }

    fn join(config: &ShmConfig, create: bool) -> Result<Transport, ShmError> {
        let zmq = fairmq_zmq::Transport::with_config(&TransportConfig {
            id: config.id.clone(),
            io_threads: config.io_threads,
        })?;
        let mgr = Arc::new(Attachment::join(config, zmq.interrupter().clone(), create)?);
        mgr.set_shared();
        // Count dead processes out only after `Attachment::set_shared`. A lane whose last holder
        // died may still hold messages, and releasing them needs the shared attachment.
        mgr.sweep_dead();
        // Only the session's processes may connect to its sockets (see `peers::password`).
        zmq.serve_password(&crate::transport::socket::peers::password(&mgr))?;
        // Release what dead senders left in flight to dead receivers. The sweep above found them.
        crate::transport::socket::orphans::release_unreachable(&mgr);
        Ok(Transport { inner: Arc::new(Inner { zmq, mgr, events: parking_lot::Mutex::new(None) }) })
    }

    /// The transport id.
    pub fn id(&self) -> &str {
        self.inner.zmq.id()
    }

    /// The session's shmId.
    pub fn shm_id(&self) -> &str {
        self.inner.mgr.names().shm_id()
    }

    /// The settings in use.
    pub fn config(&self) -> &ShmConfig {
        self.inner.mgr.config()
    }

    /// The password that a plain ZeroMQ socket must present to connect to this session's sockets.
    /// It is used with the PLAIN mechanism and the user `fairmq-rs`. Tests and tools use it to
    /// speak to the sockets as a peer would.
    pub fn connect_password(&self) -> String {
        crate::transport::socket::peers::password(&self.inner.mgr)
    }

    /// A metadata socket of type `ty` that lets in only the session's processes.
    fn zmq_socket(&self, ty: SocketType, name: &str) -> Result<fairmq_zmq::Socket, ShmError> {
        let z = self.inner.zmq.socket(ty, name)?;
        z.require_password(&crate::transport::socket::peers::password(&self.inner.mgr));
        Ok(z)
    }

    /// A socket for the channel `name`. PUB/SUB is zero-copy (see [`Socket`]). XPUB and XSUB
    /// sockets are refused.
    pub fn socket(&self, ty: SocketType, name: &str) -> Result<Socket, ShmError> {
        let id = format!("{}.{name}.{ty}", self.id());
        let z = match ty {
            SocketType::XPub | SocketType::XSub => {
                return Err(ShmError::Config(format!("{ty} sockets are not supported by the shared memory transport")));
            }
            // PUB and PUSH pick their receiving peer themselves (see `peers`), because they must
            // know where each message went.
            SocketType::Pub | SocketType::Push => {
                let z = self.zmq_socket(SocketType::Router, name)?;
                z.set_router_mandatory()?;
                // Peers send this socket only probes and hellos. A larger frame therefore ends the
                // connection instead of being buffered, whatever size the peer announces. The
                // limit also applies to the handshake's READY command, which carries the peer's
                // routing id (up to 255 bytes). 1 KiB leaves room for that routing id.
                z.set_max_message_size(1024)?;
                // A peer that this socket connects to is a peer by configuration, so the socket
                // knows it at once. This matters because a bound DEALER sends no probe to a ROUTER
                // that connects to it. Peers that connect to this socket present a token instead.
                z.name_connections(crate::transport::socket::peers::CONNECTED);
                z
            }
            // SUB and PULL are the receivers of PUB and PUSH. They present the session's token on
            // every connection.
            SocketType::Sub | SocketType::Pull => {
                let z = self.zmq_socket(SocketType::Dealer, name)?;
                // The socket presents the token only on connections that it makes (see
                // `Socket::present_token`). The reason is that ZeroMQ sends a socket's routing id
                // to every peer, including whoever connects to a bound socket.
                let (token, number) = crate::transport::socket::peers::token(&self.inner.mgr);
                z.set_probe_router()?;
                let mut s = Socket::new(z, self.inner.mgr.clone(), ty, id, number);
                s.keep_token(token);
                return Ok(s);
            }
            // The other socket types get a socket number. Their tickets name the receiver where
            // the session's directory of endpoints knows it (see `addressee`). So these sockets
            // are receivers that a ticket may name.
            _ => {
                let z = self.zmq_socket(ty, name)?;
                return Ok(Socket::new(
                    z,
                    self.inner.mgr.clone(),
                    ty,
                    id,
                    crate::transport::socket::peers::socket_number(),
                ));
            }
        };
        Ok(Socket::new(z, self.inner.mgr.clone(), ty, id, 0))
    }

    /// An empty message, to receive into.
    pub fn new_message(&self) -> Message {
        Message::empty(self.inner.mgr.clone())
    }

    /// A message of `size` bytes in shared memory. Its content is not initialised to anything in
    /// particular. When the segment has no room, the out-of-memory policy decides whether the
    /// allocation waits or fails (see `ShmConfig::bad_alloc`).
    pub fn new_message_with_size(&self, size: usize) -> Result<Message, ShmError> {
        Message::allocate(self.inner.mgr.clone(), size, 0)
    }

    /// A message of `size` bytes whose data is aligned to `alignment` (at most 4096).
    pub fn new_message_aligned(&self, size: usize, alignment: usize) -> Result<Message, ShmError> {
        Message::allocate(self.inner.mgr.clone(), size, alignment)
    }

    /// A message holding a copy of `bytes`.
    pub fn new_message_from_slice(&self, bytes: &[u8]) -> Result<Message, ShmError> {
        Message::copy_of(self.inner.mgr.clone(), bytes)
    }

    /// FairMQ's `NewMessage(data, size, ffn, hint)`.
    ///
    /// The bytes are copied into shared memory. The caller's buffer is then released at once: by
    /// `ffn(data, hint)`, or by `free(data)` when `ffn` is `None`. When `size == 0`, nothing is
    /// allocated, but the buffer is still released. FairMQ does the same, because its empty chunk
    /// counts as initialised.
    ///
    /// # Safety
    /// `data` must be valid for reads of `size` bytes, and `ffn` (or `free`) must be the right way
    /// to release it.
    // SAFETY: this function is unsafe to call because it reads `data` and then releases it (see
    // the contract above).
    pub unsafe fn new_message_from_raw_parts(
        &self,
        data: *mut u8,
        size: usize,
        ffn: Option<fairmq_zmq::FreeFn>,
        hint: *mut c_void,
    ) -> Result<Message, ShmError> {
        let m = if size == 0 {
            self.new_message()
        } else {
            // SAFETY: `data` is valid for reads of `size` bytes (the caller's contract).
            self.new_message_from_slice(unsafe { std::slice::from_raw_parts(data, size) })?
        };
        // SAFETY: the caller guarantees that `ffn` (or `free`) is the right way to release `data`.
        // The copy above was the last use of `data`.
        unsafe {
            match ffn {
                Some(f) => f(data.cast(), hint),
                None => libc::free(data.cast()),
            }
        }
        Ok(m)
    }

    /// Creates an unmanaged region of `size` bytes, or opens the registered region `config.id` that
    /// an external creator made. The region calls `callback` for every piece that its last holder
    /// released.
    pub fn create_region(
        &self,
        size: usize,
        callback: RegionCallback,
        config: &RegionConfig,
    ) -> Result<Region, ShmError> {
        Region::create(&self.inner.mgr, size as u64, callback, config)
    }

    /// A message that refers to `size` bytes at `offset` in `region`, without copying them. The
    /// region's callback receives `hint` once the last holder has released the piece.
    pub fn new_message_from_region(
        &self,
        region: &Region,
        offset: usize,
        size: usize,
        hint: u64,
    ) -> Result<Message, ShmError> {
        Message::from_region(self.inner.mgr.clone(), region, offset, size, hint)
    }

    /// Every managed segment and unmanaged region of the session (FairMQ's `GetRegionInfo`).
    pub fn region_info(&self) -> Vec<RegionInfo> {
        crate::transport::events::region_info(&self.inner.mgr)
    }

    /// Calls `callback`, on a thread of its own, whenever a segment or region of the session
    /// appears or is destroyed. The first calls report the segments and regions that exist
    /// already. A second subscription replaces the first.
    pub fn subscribe_to_region_events(
        &self,
        callback: impl FnMut(RegionInfo) + Send + 'static,
    ) -> Result<(), ShmError> {
        // Join the old subscription's thread outside the `events` lock, because its callback may
        // take that lock.
        let old = self.inner.events.lock().take();
        if old.is_some() {
            log::warn!("Already subscribed. Overwriting previous subscription.");
        }
        drop(old);
        let sub = Subscription::start(self.inner.mgr.clone(), Box::new(callback))
            .map_err(|e| ShmError::io("starting the region event thread", "fmq-region-events", e))?;
        let replaced = self.inner.events.lock().replace(sub);
        drop(replaced); // another thread subscribed meanwhile: the newest wins
        Ok(())
    }

    /// Whether a region event subscription runs.
    pub fn subscribed_to_region_events(&self) -> bool {
        self.inner.events.lock().is_some()
    }

    /// Ends the region event subscription, and waits for its thread.
    pub fn unsubscribe_from_region_events(&self) {
        let old = self.inner.events.lock().take();
        // The thread is joined outside the `events` lock, because its callback may take that
        // lock. `Subscription::finish` first reports what changed until now.
        if let Some(sub) = old {
            sub.finish();
        }
    }

    /// Counts dead processes out of the session now, and frees the blocks they held in their
    /// caches. Every attach and detach does this too. Returns the pids of the dead processes.
    pub fn sweep_dead_processes(&self) -> Vec<u32> {
        let dead = self.inner.mgr.sweep_dead();
        crate::transport::socket::orphans::release_unreachable(&self.inner.mgr);
        dead
    }

    /// Makes blocked transfers, polls and out-of-memory retries of this transport return at once.
    pub fn interrupt(&self) {
        self.inner.zmq.interrupt();
        self.inner.mgr.wake_allocators();
    }

    /// Lets transfers block again, after `Transport::interrupt`.
    pub fn resume(&self) {
        self.inner.zmq.resume();
    }

    /// Whether the transport is interrupted.
    pub fn is_interrupted(&self) -> bool {
        self.inner.zmq.is_interrupted()
    }

    /// Memory figures of the segment this transport allocates in.
    pub fn segment_stats(&self) -> SegmentStats {
        self.inner.mgr.own().stats()
    }

    /// What this transport uses of the session now: its segment's memory, messages in flight,
    /// allocations that waited, and its regions. The figures are for metrics. They are read when
    /// asked for, not counted per message.
    pub fn usage(&self) -> usage::Usage {
        usage::of(&self.inner.mgr)
    }

    /// Returns every block that this process caches, and the segment's depot, to the heap.
    /// Without this call, frees happen lazily.
    pub fn flush(&self) {
        self.inner.mgr.flush(true);
        if let Err(e) = self.inner.mgr.own().drain_depot() {
            log::error!("could not empty the depot: {e}");
        }
    }

    /// Checks every invariant of the segment's allocator.
    #[cfg(feature = "testing")]
    pub fn check_segment(&self) -> Result<(), String> {
        self.inner.mgr.own().check()
    }

    /// The segment this transport allocates in, for statistics and dead-process accounting.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn segment(&self) -> &crate::segment::Segment {
        self.inner.mgr.own()
    }

    /// Number of transports attached to the session.
    pub fn attached_transports(&self) -> u64 {
        self.inner.mgr.management().device_count()
    }

    /// The transports attached to the session: pids and the owner marks their blocks carry.
    #[cfg(feature = "testing")]
    pub fn attached(&self) -> Vec<crate::session::liveness::Attached> {
        crate::session::liveness::attached(self.inner.mgr.management())
    }

    /// The blocks, as (segment id, offset), of the shared messages and lanes that live transports
    /// of the session hold references to, and of the messages waiting in those lanes. The holders
    /// are read from the transports' ledgers, because a shared block's count names no holder.
    /// This is for inspection only: a lane in use may be misread.
    #[cfg(feature = "testing")]
    pub fn shared_blocks_held(&self) -> Vec<(u16, u64)> {
        let m = self.inner.mgr.management();
        crate::session::ledger::held_by_live(m, &crate::session::liveness::live_slots(m), &*self.inner.mgr)
    }

    /// The owner mark of this transport's blocks.
    #[cfg(feature = "testing")]
    pub fn owner(&self) -> u32 {
        self.inner.mgr.owner()
    }
}
