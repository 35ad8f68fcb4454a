//! What a transport layered on this one needs beyond the API that devices use.
//!
//! The shared-memory transport sends its metadata records as ZeroMQ frames through this crate's
//! sockets. For that it needs more than a device does:
//!
//! - [`Uncounted`]: transfers that leave the socket's counters to the layered transport;
//! - [`LayeredSocket`]: access control, peer counts, routing ids and a few ZeroMQ options of a
//!   socket;
//! - [`LayeredTransport`]: the password handler and the interrupt flag of a transport;
//! - [`PollHook`]: a hook that adds to a poll the readiness that ZeroMQ cannot see, given to a
//!   `Poller` through a `PollEntry`.
//!
//! [`Uncounted`], [`LayeredSocket`] and [`LayeredTransport`] are sealed: only this crate's
//! `Socket` and `Transport` implement them. [`PollHook`] is not sealed, because the layered
//! transport implements it for its own sockets. No signature of these four traits names the `zmq`
//! crate's types. An application never needs them.
//!
//! The sealed trait `Raw` gives the libzmq socket under a `Socket`. It exists only with the cargo
//! feature `raw`, for the fuzz targets of the shared-memory transport, which write raw frames. No
//! device build enables that feature.

use crate::vocabulary::counters::Counters;
use crate::vocabulary::error::SocketError;
use crate::vocabulary::interrupt::Interrupter;
use crate::{Message, TransferError};
use std::os::fd::RawFd;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// What a transport layered on a socket adds to the socket's readiness.
///
/// The layered transport may have input that does not pass through the socket. The socket may
/// carry frames that bring no input. The layered transport also has a wait of its own. The
/// shared-memory transport's lanes use this hook, through a [`PollEntry`](crate::PollEntry).
pub trait PollHook {
    /// Whether a receive would find input now. The hook may take frames that carry no input off
    /// the socket.
    fn input_ready(&self) -> bool;
    /// Whether a send could go out now, given that the socket itself could send.
    fn output_ready(&self) -> bool;
    /// Called before the poll waits in the socket. From now on, new input must wake that wait.
    /// Returns false, and arms nothing, when input arrived in the meantime.
    fn arm(&self) -> bool;
    /// Called when the wait is over.
    fn disarm(&self);
}

pub(crate) mod sealed {
    /// Keeps the sealed traits of [`layered`](super) implemented by this crate's types only. The
    /// impls sit beside the types.
    pub trait Sealed {}
}

/// Transfers of frames that the socket does not count.
pub trait Uncounted: sealed::Sealed {
    /// Sends one frame like [`Socket::send`](crate::Socket::send).
    fn send_uncounted(&self, frame: &mut Message, timeout_ms: i32) -> Result<(), TransferError>;
    /// Receives one frame like [`Socket::receive`](crate::Socket::receive).
    fn receive_uncounted(&self, frame: &mut Message, timeout_ms: i32) -> Result<(), TransferError>;
    /// Sends frames as one multipart like [`Socket::send_parts`](crate::Socket::send_parts). A
    /// single frame is sent as a plain frame.
    fn send_parts_uncounted(&self, parts: &mut [Message], timeout_ms: i32) -> Result<(), TransferError>;
    /// Receives a multipart like [`Socket::receive_parts`](crate::Socket::receive_parts).
    fn receive_parts_uncounted(&self, parts: &mut Vec<Message>, timeout_ms: i32) -> Result<(), TransferError>;
}

/// A socket's plumbing for a layered transport: access control, peers, routing ids, options.
pub trait LayeredSocket: sealed::Sealed {
    /// The count of connected peers as the monitor thread last counted it. The call does not wait
    /// for the monitor thread to catch up, so the count may be a moment late. In exchange, the
    /// call is cheap enough to make on every send.
    fn counted_peers(&self) -> u64;
    /// The count behind
    /// [`Socket::number_of_connected_peers`](crate::Socket::number_of_connected_peers), readable
    /// from other threads. It holds what the monitor thread last counted, so it may be a moment
    /// late.
    fn peer_count(&self) -> Arc<AtomicU64>;
    /// Endpoints bound from now on let in only peers that present `password`. They use ZeroMQ's
    /// PLAIN mechanism, and the transport's handler checks the password (see
    /// [`LayeredTransport::serve_password`]). Endpoints connected from now on present `password`.
    /// A peer without the password is refused in the handshake, before any frame. libzmq takes a
    /// socket's options when an endpoint is made, so one socket can both ask for the password on
    /// the endpoints it binds and present it on the endpoints it connects.
    fn require_password(&self, password: &str);
    /// How many endpoints this socket has bound and connected. The counts tell whether the socket
    /// can have more than one peer.
    fn endpoint_counts(&self) -> (u32, u32);
    /// Makes a router name the peer of each endpoint that it connects to from now on
    /// (`ZMQ_CONNECT_ROUTING_ID`). The name is `prefix` followed by the connection's number. So
    /// the router can send to that peer before the peer says anything (see
    /// [`connected_peers`](LayeredSocket::connected_peers)).
    fn name_connections(&self, prefix: &[u8]);
    /// The routing ids given to the peers of connected endpoints (see
    /// [`name_connections`](LayeredSocket::name_connections)).
    fn connected_peers(&self) -> Vec<Vec<u8>>;
    /// The socket's counters, borrowed, for a layered transport that records its own transfers.
    /// They are borrowed because cloning the `Arc` for every message cost two locked
    /// instructions, more than the record itself.
    fn counters_ref(&self) -> &Counters;
    /// The endpoint last bound or connected, as libzmq resolved it. For example, a wildcard port is
    /// replaced by the real port.
    fn last_endpoint(&self) -> Option<String>;
    /// `ZMQ_ROUTING_ID`: the identity this socket presents on connections it makes from now on.
    fn set_routing_id(&self, id: &[u8]) -> Result<(), SocketError>;
    /// `ZMQ_ROUTER_MANDATORY`: a router's send to a peer that is not connected fails instead of
    /// dropping the message.
    fn set_router_mandatory(&self) -> Result<(), SocketError>;
    /// `ZMQ_PROBE_ROUTER`: the socket sends an empty probe on every connection it makes.
    fn set_probe_router(&self) -> Result<(), SocketError>;
    /// `ZMQ_MAXMSGSIZE`: a peer that sends a larger frame is disconnected.
    fn set_max_message_size(&self, bytes: i64) -> Result<(), SocketError>;
    /// Waits up to `ms` until the socket can send or has input, or `wake` (a file descriptor) is
    /// readable. Returns whether the socket can send.
    fn wait_writable(&self, wake: RawFd, ms: i64) -> bool;
}

/// A transport's plumbing for a layered transport.
pub trait LayeredTransport: sealed::Sealed {
    /// Lets a peer connect to a socket of this transport that asks for a password
    /// ([`LayeredSocket::require_password`]) when the peer presents `password`. The handshake
    /// refuses every other peer. The first password served stays: later calls change nothing.
    /// The check runs in a thread of the transport's own until the transport is dropped.
    fn serve_password(&self, password: &str) -> Result<(), SocketError>;
    /// The transport's interrupt flag. A layered transport's own waits must wake on it too.
    fn interrupter(&self) -> &Arc<Interrupter>;
}

/// The libzmq socket under a [`Socket`], for the fuzz targets of a layered transport, which write
/// raw frames on it. This trait exists only with the `raw` feature, which no device build enables.
#[cfg(feature = "raw")]
pub trait Raw: sealed::Sealed {
    /// The underlying `zmq` socket.
    fn as_zmq(&self) -> &zmq::Socket;
}
