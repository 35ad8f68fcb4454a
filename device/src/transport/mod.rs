//! One API over both transports: [`Transport`], [`Message`], [`Socket`] and [`Poller`].
//!
//! [`Transport`], [`Message`] and [`Socket`] are enums with one variant per transport: `zeromq`
//! (the crate `fairmq_zmq`) and `shmem` (the crate `fairmq_shm`). Enums need no trait objects on
//! the hot path. One device may therefore mix zeromq and shmem channels.
//!
//! - [`create`] makes a transport from the device's options. [`shm_config`] reads the options of
//!   the shared-memory transport.
//! - A [`Socket`] sends a [`Message`] of the other transport by copying it into a message of its
//!   own transport first. (FairMQ wraps it instead.)
//! - A [`Poller`] waits on sockets of either transport, or of both at once.
//! - [`Parts`] is a multipart message: a vector of messages.

mod options;

pub use options::{create, shm_config};

use crate::error::Error;
use fairmq_zmq::layered::LayeredSocket;
use fairmq_zmq::PollEntry;
use fairmq_zmq::Timeout;
use fairmq_zmq::{
    AttachOptions, CounterSnapshot, Counters, Direction, SocketOptions, SocketType, TransferResult, TransportKind,
};
use std::sync::Arc;

/// A transport: the zeromq one, or the shared-memory one.
///
/// # Examples
///
/// One type serves either transport. This example connects a push socket and a pull socket of the
/// shmem transport in one process.
///
/// ```
/// use fairmq::{transport, Properties, SocketType, TransportKind};
/// use fairmq_zmq::{AttachOptions, Method};
///
/// let config = Properties::new();
/// config.set("session", format!("doc-transport-{}", std::process::id()));
/// config.set("shm-segment-size", 16u64 << 20);
/// let transport = transport::create(TransportKind::Shmem, "doc", &config)?;
/// let pull = transport.socket(SocketType::Pull, "data")?;
/// let push = transport.socket(SocketType::Push, "data")?;
/// pull.attach("inproc://doc-transport", &AttachOptions::new(Some(Method::Bind)))?;
/// push.attach("inproc://doc-transport", &AttachOptions::new(Some(Method::Connect)))?;
///
/// let mut msg = transport.new_simple_message(b"over shared memory")?;
/// push.send(&mut msg, 1000, &transport)?;
/// let mut received = transport.new_message();
/// pull.receive(&mut received, 1000, &transport)?;
/// assert_eq!(received.data(), b"over shared memory");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub enum Transport {
    /// The zeromq transport: the payload travels in ZeroMQ frames.
    Zeromq(fairmq_zmq::Transport),
    /// The shared-memory transport: the payload lies in shared memory.
    Shmem(fairmq_shm::Transport),
}

/// A message of either transport.
///
/// # Examples
///
/// ```
/// use fairmq::{transport, Properties, TransportKind};
///
/// let t = transport::create(TransportKind::Zeromq, "doc", &Properties::new())?;
/// let mut msg = t.new_simple_message(b"hit 17")?;
/// assert_eq!((msg.kind(), msg.size()), (TransportKind::Zeromq, 6));
/// msg.data_mut()?[4..].copy_from_slice(b"42");
/// assert!(msg.set_used_size(3), "shrinks in place");
/// assert_eq!(msg.data(), b"hit");
///
/// let mut copy = t.new_message();
/// copy.copy_from(&msg)?;
/// assert_eq!(copy.data(), b"hit");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub enum Message {
    /// A zeromq message.
    Zeromq(fairmq_zmq::Message),
    /// A shared-memory message.
    Shmem(fairmq_shm::Message),
}

/// A socket of either transport.
///
/// # Examples
///
/// A request and its reply. The example gives timeouts both as a `Duration` and as FairMQ's
/// milliseconds.
///
/// ```
/// use fairmq::{transport, Properties, SocketType, TransferError, TransportKind};
/// use fairmq_zmq::{AttachOptions, Method};
/// use std::time::Duration;
///
/// let t = transport::create(TransportKind::Zeromq, "doc", &Properties::new())?;
/// let rep = t.socket(SocketType::Rep, "server")?;
/// let req = t.socket(SocketType::Req, "client")?;
/// rep.attach("inproc://doc-device-socket", &AttachOptions::new(Some(Method::Bind)))?;
/// req.attach("inproc://doc-device-socket", &AttachOptions::new(Some(Method::Connect)))?;
///
/// req.send(&mut t.new_simple_message(b"status?")?, 1000, &t)?;
/// let mut request = t.new_message();
/// rep.receive(&mut request, Duration::from_secs(1), &t)?;
/// assert_eq!(request.data(), b"status?");
/// rep.send(&mut t.new_simple_message(b"running")?, 1000, &t)?;
/// let mut reply = t.new_message();
/// assert_eq!(req.receive(&mut reply, 1000, &t)?, 7);
///
/// let mut nothing = t.new_message();
/// assert!(matches!(rep.receive(&mut nothing, 0, &t), Err(TransferError::Timeout)), "no request waits");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub enum Socket {
    /// A zeromq socket.
    Zeromq(fairmq_zmq::Socket),
    /// A shared-memory socket.
    Shmem(fairmq_shm::Socket),
}

impl Transport {
    /// Which transport this is.
    pub fn kind(&self) -> TransportKind {
        match self {
            Transport::Zeromq(_) => TransportKind::Zeromq,
            Transport::Shmem(_) => TransportKind::Shmem,
        }
    }

    /// Creates a socket of this transport for channel `name`.
    pub fn socket(&self, ty: SocketType, name: &str) -> Result<Socket, Error> {
        Ok(match self {
            Transport::Zeromq(t) => Socket::Zeromq(t.socket(ty, name)?),
            Transport::Shmem(t) => Socket::Shmem(t.socket(ty, name)?),
        })
    }

    /// Creates an empty message, for example to receive into.
    pub fn new_message(&self) -> Message {
        match self {
            Transport::Zeromq(_) => Message::Zeromq(fairmq_zmq::Message::new()),
            Transport::Shmem(t) => Message::Shmem(t.new_message()),
        }
    }

    /// Creates a message of `size` bytes. On zeromq the bytes are zeroed. On shmem their content is
    /// not initialised.
    pub fn new_message_with_size(&self, size: usize) -> Result<Message, Error> {
        Ok(match self {
            Transport::Zeromq(_) => Message::Zeromq(fairmq_zmq::Message::try_with_size(size)?),
            Transport::Shmem(t) => Message::Shmem(t.new_message_with_size(size)?),
        })
    }

    /// Creates a message of `size` bytes aligned to `alignment`. An `alignment` of 0 requests no
    /// alignment.
    pub fn new_message_aligned(&self, size: usize, alignment: usize) -> Result<Message, Error> {
        Ok(match self {
            Transport::Zeromq(_) => Message::Zeromq(fairmq_zmq::Message::try_with_size_aligned(size, alignment)?),
            Transport::Shmem(t) => Message::Shmem(t.new_message_aligned(size, alignment)?),
        })
    }

    /// Creates a message that holds a copy of `bytes`, like FairMQ's `NewSimpleMessage`.
    pub fn new_simple_message(&self, bytes: &[u8]) -> Result<Message, Error> {
        Ok(match self {
            Transport::Zeromq(_) => Message::Zeromq(fairmq_zmq::Message::try_from_slice(bytes)?),
            Transport::Shmem(t) => Message::Shmem(t.new_message_from_slice(bytes)?),
        })
    }

    /// Creates a message from `bytes`. On zeromq the message takes the vector without a copy. On
    /// shmem the bytes are copied into shared memory.
    pub fn new_message_from_vec(&self, bytes: Vec<u8>) -> Result<Message, Error> {
        Ok(match self {
            Transport::Zeromq(_) => Message::Zeromq(fairmq_zmq::Message::from_vec(bytes)),
            Transport::Shmem(t) => Message::Shmem(t.new_message_from_slice(&bytes)?),
        })
    }

    /// Creates a message over static bytes, like FairMQ's `NewStaticMessage`. On zeromq the message
    /// refers to the bytes without a copy. On shmem the bytes are copied into shared memory.
    pub fn new_static_message(&self, bytes: &'static [u8]) -> Result<Message, Error> {
        Ok(match self {
            Transport::Zeromq(_) => Message::Zeromq(fairmq_zmq::Message::from_static(bytes)),
            Transport::Shmem(t) => Message::Shmem(t.new_message_from_slice(bytes)?),
        })
    }

    /// Interrupts the transport: blocked transfers return `Interrupted`.
    pub fn interrupt(&self) {
        match self {
            Transport::Zeromq(t) => t.interrupt(),
            Transport::Shmem(t) => t.interrupt(),
        }
    }

    /// Ends the interruption, so that transfers block again.
    pub fn resume(&self) {
        match self {
            Transport::Zeromq(t) => t.resume(),
            Transport::Shmem(t) => t.resume(),
        }
    }

    /// Whether the transport is interrupted.
    pub fn is_interrupted(&self) -> bool {
        match self {
            Transport::Zeromq(t) => t.is_interrupted(),
            Transport::Shmem(t) => t.is_interrupted(),
        }
    }
}

impl Message {
    /// Which transport made this message.
    pub fn kind(&self) -> TransportKind {
        match self {
            Message::Zeromq(_) => TransportKind::Zeromq,
            Message::Shmem(_) => TransportKind::Shmem,
        }
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        match self {
            Message::Zeromq(m) => m.size(),
            Message::Shmem(m) => m.size(),
        }
    }

    /// Whether the size is 0.
    pub fn is_empty(&self) -> bool {
        self.size() == 0
    }

    /// The bytes.
    pub fn data(&self) -> &[u8] {
        match self {
            Message::Zeromq(m) => m.data(),
            Message::Shmem(m) => m.data(),
        }
    }

    /// The address of the data, like FairMQ's `GetData`. The address is null when the message is
    /// empty.
    pub fn data_ptr(&self) -> *const u8 {
        match self {
            Message::Zeromq(m) => m.data_ptr(),
            Message::Shmem(m) => m.data_ptr(),
        }
    }

    /// The bytes, writable. If the bytes are shared with other messages, the message first copies
    /// them. The copy can fail for lack of memory.
    pub fn data_mut(&mut self) -> Result<&mut [u8], Error> {
        match self {
            Message::Zeromq(m) => Ok(m.try_data_mut()?),
            Message::Shmem(m) => Ok(m.data_mut()?),
        }
    }

    /// Shrinks the message to `size` bytes. Returns false if `size` is larger than the current
    /// size.
    pub fn set_used_size(&mut self, size: usize) -> bool {
        match self {
            Message::Zeromq(m) => m.set_used_size(size),
            Message::Shmem(m) => m.set_used_size(size),
        }
    }

    /// How many messages, in every process, refer to this message's bytes. On shmem, this is the
    /// reference count of the message's block or region piece. A zeromq message answers 1, because
    /// libzmq does not expose its count.
    pub fn ref_count(&self) -> u32 {
        match self {
            Message::Zeromq(_) => 1,
            Message::Shmem(m) => m.refcount(),
        }
    }

    /// Releases the content. The message becomes empty.
    pub fn rebuild(&mut self) {
        match self {
            Message::Zeromq(m) => m.rebuild(),
            Message::Shmem(m) => m.rebuild(),
        }
    }

    /// Moves the content into a new message of the same transport. This message becomes empty.
    pub fn take(&mut self) -> Message {
        match self {
            Message::Zeromq(m) => Message::Zeromq(std::mem::take(m)),
            Message::Shmem(m) => Message::Shmem(m.take()),
        }
    }

    /// Releases the content and allocates `size` new bytes.
    pub fn rebuild_with_size(&mut self, size: usize) -> Result<(), Error> {
        self.rebuild_with_size_aligned(size, 0)
    }

    /// Releases the content and allocates `size` new bytes aligned to `alignment`. `alignment` is
    /// a power of two, or 0 for no alignment.
    pub fn rebuild_with_size_aligned(&mut self, size: usize, alignment: usize) -> Result<(), Error> {
        match self {
            Message::Zeromq(m) => m.try_rebuild_with_size_aligned(size, alignment)?,
            Message::Shmem(m) => m.rebuild_with_size(size, alignment)?,
        }
        Ok(())
    }

    /// Makes this message refer to `other`'s content. When both messages are of the same
    /// transport, they share the content. Otherwise this message gets a copy.
    pub fn copy_from(&mut self, other: &Message) -> Result<(), Error> {
        match (self, other) {
            (Message::Zeromq(a), Message::Zeromq(b)) => a.copy_from(b),
            (Message::Shmem(a), Message::Shmem(b)) => a.copy_from(b)?,
            (Message::Zeromq(a), b) => *a = fairmq_zmq::Message::try_from_slice(b.data())?,
            (Message::Shmem(a), b) => a.rebuild_from_slice(b.data())?,
        }
        Ok(())
    }
}

/// The parts of a multipart message (FairMQ's `Parts`).
pub type Parts = Vec<Message>;

impl Socket {
    /// The socket id, `<device id>.<channel>.<type>`.
    pub fn id(&self) -> &str {
        match self {
            Socket::Zeromq(s) => s.id(),
            Socket::Shmem(s) => s.id(),
        }
    }

    /// Which transport the socket belongs to.
    pub fn kind(&self) -> TransportKind {
        match self {
            Socket::Zeromq(_) => TransportKind::Zeromq,
            Socket::Shmem(_) => TransportKind::Shmem,
        }
    }

    /// The socket type, that is, the messaging pattern.
    pub fn socket_type(&self) -> SocketType {
        match self {
            Socket::Zeromq(s) => s.socket_type(),
            Socket::Shmem(s) => s.socket_type(),
        }
    }

    /// Applies the channel options: linger, and the queue and kernel buffer sizes.
    pub fn set_options(&self, o: &SocketOptions) -> Result<(), Error> {
        match self {
            Socket::Zeromq(s) => s.set_options(o)?,
            Socket::Shmem(s) => s.set_options(o)?,
        }
        Ok(())
    }

    /// The channel options the socket has now (see [`set_options`](Socket::set_options)).
    pub fn options(&self) -> Result<SocketOptions, Error> {
        Ok(match self {
            Socket::Zeromq(s) => s.options()?,
            Socket::Shmem(s) => s.options()?,
        })
    }

    /// Binds or connects to a channel address. Returns the address as attached.
    pub fn attach(&self, address: &str, o: &AttachOptions) -> Result<String, Error> {
        Ok(match self {
            Socket::Zeromq(s) => s.attach(address, o)?,
            Socket::Shmem(s) => s.attach(address, o)?,
        })
    }

    /// Sends one message. A message of the other transport is first copied into a message of this
    /// socket's transport.
    pub fn send(&self, msg: &mut Message, timeout: impl Into<Timeout>, transport: &Transport) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        let r = self.adopt(msg, transport).and_then(|()| match (self, msg) {
            (Socket::Zeromq(s), Message::Zeromq(m)) => s.send(m, timeout_ms),
            (Socket::Shmem(s), Message::Shmem(m)) => s.send(m, timeout_ms),
            // `Socket::adopt` either made the message the socket's kind or returned an error.
            _ => unreachable!("adopt made the message the socket's kind"),
        });
        self.counted(Direction::Send, r)
    }

    /// Receives one message into `msg`. If `msg` is of the other transport, it is first replaced by
    /// a message of this socket's transport.
    pub fn receive(&self, msg: &mut Message, timeout: impl Into<Timeout>, transport: &Transport) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        if msg.kind() != self.kind() {
            if let Err(e) = self.own_kind(transport) {
                return self.counted(Direction::Receive, Err(e));
            }
            *msg = transport.new_message();
        }
        let r = match (self, msg) {
            (Socket::Zeromq(s), Message::Zeromq(m)) => s.receive(m, timeout_ms),
            (Socket::Shmem(s), Message::Shmem(m)) => s.receive(m, timeout_ms),
            _ => unreachable!("message kind matched above"),
        };
        self.counted(Direction::Receive, r)
    }

    /// Sends all parts as one multipart message.
    pub fn send_parts(&self, parts: &mut Parts, timeout: impl Into<Timeout>, transport: &Transport) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        // Parts of the other transport are first copied into this socket's transport. Usually
        // there are none, and the check costs one look at each part.
        if parts.iter().any(|p| p.kind() != self.kind()) {
            for p in parts.iter_mut() {
                if let Err(e) = self.adopt(p, transport) {
                    return self.counted(Direction::Send, Err(e));
                }
            }
        }
        let r = match self {
            // The parts are sent where they lie, without a move into another vector (see
            // `fairmq_zmq::Part` and `fairmq_shm::Part`).
            Socket::Zeromq(s) => s.send_parts_of(parts, timeout_ms),
            Socket::Shmem(s) => s.send_parts_of(parts, timeout_ms),
        };
        self.counted(Direction::Send, r)
    }

    /// Receives a multipart message and appends its parts to `parts`.
    pub fn receive_parts(&self, parts: &mut Parts, timeout: impl Into<Timeout>) -> TransferResult {
        let timeout_ms = timeout.into().as_ms();
        let r = match self {
            Socket::Zeromq(s) => s.receive_parts_into(parts, Message::Zeromq, timeout_ms),
            Socket::Shmem(s) => s.receive_parts_into(parts, Message::Shmem, timeout_ms),
        };
        self.counted(Direction::Receive, r)
    }

    /// Returns `r`. When `r` is a failure (a timeout or an error), `Socket::counted` first counts
    /// it for the metrics. A transfer that succeeds gets nothing added here.
    #[inline]
    fn counted(&self, dir: Direction, r: TransferResult) -> TransferResult {
        if let Err(e) = &r {
            let counters = match self {
                Socket::Zeromq(s) => s.counters_ref(),
                Socket::Shmem(s) => s.counters_ref(),
            };
            counters.record_failure(dir, e);
        }
        r
    }

    /// Fails unless `transport` is of this socket's kind. A transfer uses `transport` to make the
    /// messages that replace messages of the other transport. Before this check, a zeromq socket
    /// given a shmem transport (or the reverse) made a message of the wrong kind and panicked.
    fn own_kind(&self, transport: &Transport) -> Result<(), fairmq_zmq::TransferError> {
        if transport.kind() == self.kind() {
            return Ok(());
        }
        let e = format!(
            "a {} socket was given a {} transport to make its messages with: give it the transport it was made by",
            self.kind(),
            transport.kind()
        );
        Err(fairmq_zmq::TransferError::Transport(e.into()))
    }

    /// Turns a message of the other transport into a copy of this socket's transport. FairMQ wraps
    /// the message instead. `Socket::adopt` is inlined because every send calls it, and almost
    /// every message is already of this socket's transport.
    #[inline]
    fn adopt(&self, msg: &mut Message, transport: &Transport) -> Result<(), fairmq_zmq::TransferError> {
        if msg.kind() == self.kind() {
            return Ok(());
        }
        self.adopt_foreign(msg, transport)
    }

    #[cold]
    fn adopt_foreign(&self, msg: &mut Message, transport: &Transport) -> Result<(), fairmq_zmq::TransferError> {
        self.own_kind(transport)?;
        let copy = if msg.is_empty() {
            transport.new_message()
        } else {
            transport.new_simple_message(msg.data()).map_err(|e| fairmq_zmq::TransferError::Transport(Box::new(e)))?
        };
        *msg = copy;
        Ok(())
    }

    /// The counts of messages and bytes that the socket moved so far.
    pub fn counters(&self) -> CounterSnapshot {
        match self {
            Socket::Zeromq(s) => s.counters(),
            Socket::Shmem(s) => s.counters(),
        }
    }

    /// How many peers are connected now, like FairMQ's `GetNumberOfConnectedPeers`. ZeroMQ does not
    /// report inproc connections. It reports the other connections a moment late.
    pub fn number_of_connected_peers(&self) -> u64 {
        match self {
            Socket::Zeromq(s) => s.number_of_connected_peers(),
            Socket::Shmem(s) => s.number_of_connected_peers(),
        }
    }

    /// The count of `Socket::number_of_connected_peers`, readable from other threads.
    pub fn peer_count(&self) -> Arc<std::sync::atomic::AtomicU64> {
        match self {
            Socket::Zeromq(s) => s.peer_count(),
            Socket::Shmem(s) => s.peer_count(),
        }
    }

    /// The counters, readable from other threads.
    pub fn shared_counters(&self) -> Arc<Counters> {
        match self {
            Socket::Zeromq(s) => s.shared_counters(),
            Socket::Shmem(s) => s.shared_counters(),
        }
    }

    /// The numbers of lanes that a shmem socket writes and reads now, as (written, read). Other
    /// threads can read them, for the metrics. Returns `None` on zeromq.
    pub fn lane_counts(&self) -> Option<(Arc<std::sync::atomic::AtomicU64>, Arc<std::sync::atomic::AtomicU64>)> {
        match self {
            Socket::Zeromq(_) => None,
            Socket::Shmem(s) => Some(s.lane_counts()),
        }
    }

    /// The socket of the zeromq transport. Returns `None` on shmem, because a shmem socket's
    /// ZeroMQ socket carries records that only the shmem transport may write.
    pub fn as_zeromq(&self) -> Option<&fairmq_zmq::Socket> {
        match self {
            Socket::Zeromq(s) => Some(s),
            Socket::Shmem(_) => None,
        }
    }
}

/// Waits on sockets of one or both transports.
///
/// # Examples
///
/// ```
/// use fairmq::{transport, Poller, Properties, SocketType, TransportKind};
/// use fairmq_zmq::{AttachOptions, Method};
///
/// let t = transport::create(TransportKind::Zeromq, "doc", &Properties::new())?;
/// let (bind, connect) = (AttachOptions::new(Some(Method::Bind)), AttachOptions::new(Some(Method::Connect)));
/// let quiet = t.socket(SocketType::Pull, "quiet")?;
/// let busy = t.socket(SocketType::Pull, "busy")?;
/// quiet.attach("inproc://doc-device-poll-quiet", &bind)?;
/// busy.attach("inproc://doc-device-poll-busy", &bind)?;
/// let push = t.socket(SocketType::Push, "out")?;
/// push.attach("inproc://doc-device-poll-busy", &connect)?;
/// push.send(&mut t.new_simple_message(b"x")?, 1000, &t)?;
///
/// let mut poller = Poller::new(&[&quiet, &busy]);
/// assert_eq!(poller.poll(1000)?, 1);
/// assert!(!poller.check_input(0) && poller.check_input(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Poller<'a>(fairmq_zmq::Poller<'a>);

impl<'a> Poller<'a> {
    /// Creates a poller over `sockets`. Index `i` in the poller's methods means `sockets[i]`.
    pub fn new(sockets: &[&'a Socket]) -> Self {
        let entries: Vec<PollEntry<'a>> = sockets
            .iter()
            .map(|&s| match s {
                Socket::Zeromq(z) => PollEntry::plain(z),
                Socket::Shmem(m) => m.poll_entry(),
            })
            .collect();
        Poller(fairmq_zmq::Poller::with_entries(&entries))
    }

    /// Waits up to `timeout` (see [`Timeout`]). Returns the number of ready sockets.
    pub fn poll(&mut self, timeout: impl Into<Timeout>) -> Result<usize, fairmq_zmq::PollError> {
        self.0.poll(timeout)
    }

    /// Whether socket `i` had input at the last poll.
    pub fn check_input(&self, i: usize) -> bool {
        self.0.check_input(i)
    }

    /// Whether socket `i` could send at the last poll.
    pub fn check_output(&self, i: usize) -> bool {
        self.0.check_output(i)
    }
}

/// Lets a zeromq socket send a device's multipart message as it is. The socket takes each part's
/// zeromq message. A shmem part has none, and the socket refuses it. But `Socket::send_parts` has
/// already made every part a zeromq message.
impl fairmq_zmq::Part for Message {
    #[inline]
    fn as_zmq_mut(&mut self) -> Option<&mut fairmq_zmq::Message> {
        match self {
            Message::Zeromq(m) => Some(m),
            Message::Shmem(_) => None,
        }
    }
}

/// Lets a shmem socket send a device's multipart message as it is, in the same way (see
/// `fairmq_shm::Part`).
impl fairmq_shm::Part for Message {
    #[inline]
    fn as_shm_mut(&mut self) -> Option<&mut fairmq_shm::Message> {
        match self {
            Message::Shmem(m) => Some(m),
            Message::Zeromq(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Properties;
    use fairmq_zmq::{Method, TransferError};

    /// A socket given the other transport to make its messages with refuses the transfer with an
    /// error. Before, it made a message of the wrong kind and panicked. A socket given its own
    /// transport copies a message of the other kind and sends the copy.
    #[test]
    fn a_socket_refuses_a_transport_that_is_not_its_own() {
        let config = Properties::new();
        config.set("session", format!("foreign-transport-{}", std::process::id()));
        config.set("shm-segment-size", 16u64 << 20);
        let zmq = create(TransportKind::Zeromq, "z", &config).unwrap();
        let shm = create(TransportKind::Shmem, "s", &config).unwrap();
        let (pull, push) = (zmq.socket(SocketType::Pull, "in").unwrap(), zmq.socket(SocketType::Push, "out").unwrap());
        pull.attach("inproc://foreign-transport", &AttachOptions::new(Some(Method::Bind))).unwrap();
        push.attach("inproc://foreign-transport", &AttachOptions::new(Some(Method::Connect))).unwrap();

        let mut m = shm.new_simple_message(b"made by shmem").unwrap();
        let e = push.send(&mut m, 100, &shm).unwrap_err();
        assert!(matches!(e, TransferError::Transport(_)), "{e}");
        assert!(e.to_string().contains("a zeromq socket was given a shmem transport"), "{e}");
        assert_eq!(m.data(), b"made by shmem", "the message is kept");
        let mut parts = vec![shm.new_simple_message(b"part").unwrap()];
        assert!(matches!(push.send_parts(&mut parts, 100, &shm), Err(TransferError::Transport(_))));
        let mut target = shm.new_message();
        assert!(matches!(pull.receive(&mut target, 100, &shm), Err(TransferError::Transport(_))));

        assert_eq!(push.send(&mut m, 1000, &zmq).unwrap(), 13, "its own transport copies the message");
        let mut got = shm.new_message();
        assert_eq!(pull.receive(&mut got, 1000, &zmq).unwrap(), 13);
        assert_eq!((got.kind(), got.data()), (TransportKind::Zeromq, &b"made by shmem"[..]));
        let errors = push.counters().send_errors + pull.counters().receive_errors;
        assert_eq!(errors, 3, "the refusals are counted as transfer errors");
    }
}
