//! # fairmq-zmq: FairMQ's zeromq transport
//!
//! This crate is FairMQ's `zeromq` transport: sockets, messages and pollers with FairMQ's
//! semantics, on top of libzmq. Cargo builds libzmq from the patched sources in
//! `vendor/zeromq-src` (see its `PATCHES.md`), so no system package is needed.
//!
//! The payload travels inside ZeroMQ frames. One message is one frame, and a multipart is one
//! ZeroMQ multipart, frame for frame. So a C++ FairMQ device on the other end of a tcp or ipc
//! socket understands this transport.
//!
//! # Main types
//!
//! - [`Transport`] is FairMQ's `zmq::TransportFactory`: one ZeroMQ context, and the sockets and
//!   regions made from it.
//! - [`Socket`] is a socket of one [`SocketType`]. It binds or connects, then sends and receives.
//! - [`Message`] owns one ZeroMQ frame.
//! - [`Poller`] waits on several sockets at once.
//! - [`Region`] is an unmanaged region: a buffer whose pieces become messages.
//!
//! # Transfers
//!
//! - A transfer returns the number of bytes moved, or a [`TransferError`]. The error's
//!   [`code`](TransferError::code) is FairMQ's: -1 error, -2 timeout, -3 interrupted.
//! - A [`Timeout`] is FairMQ's milliseconds (-1 waits forever, 0 does not wait, N waits up to
//!   N ms) or a `Duration`.
//! - A send that fails or times out leaves the message with the caller.
//! - [`Transport::interrupt`] wakes every blocked call at once. libzmq's own blocking wait watches
//!   an eventfd of the transport (see [`vocabulary::interrupt`]). A transfer that can complete at
//!   once still completes while the transport is interrupted.
//! - A socket's [`Counters`] count the messages and bytes of successful transfers. A multipart
//!   counts as one message.
//!
//! # What both transports share
//!
//! The shared-memory transport (`fairmq-shm`) moves its metadata over this crate's sockets. So
//! timeouts, interruption and counters are implemented once, here.
//!
//! - The module [`vocabulary`] holds the types that both transports share: transfer results and
//!   codes, socket types, transport kinds, endpoints, counters, interruption and region types.
//! - The module [`layered`] holds what a transport layered on this one needs of a socket.
//!
//! # Example
//!
//! A PULL socket binds, a PUSH socket connects to it, and one message goes from the PUSH socket
//! to the PULL socket:
//!
//! ```
//! use fairmq_zmq::{Message, SocketType, Transport};
//!
//! let transport = Transport::new("doc")?;
//! let push = transport.socket(SocketType::Push, "data")?;
//! let pull = transport.socket(SocketType::Pull, "data")?;
//! pull.bind("inproc://doc-example")?;
//! push.connect("inproc://doc-example")?;
//!
//! let mut msg = Message::from_slice(b"hello");
//! assert_eq!(push.send(&mut msg, 1000)?, 5);
//! let mut received = Message::new();
//! assert_eq!(pull.receive(&mut received, 1000)?, 5);
//! assert_eq!(received.data(), b"hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs, unreachable_pub)]
pub mod layered;
mod message;
mod monitor;
mod part;
mod poller;
mod region;
mod socket;
mod sys;
mod transport;
pub mod vocabulary;
mod zap;

pub use message::Message;
pub use part::Part;
pub use poller::{PollEntry, Poller};
pub use region::{Region, RegionError};
pub use socket::Socket;
pub use sys::FreeFn;
pub use transport::{Transport, TransportConfig};
pub use vocabulary::counters::{CounterSnapshot, Counters, Direction};
pub use vocabulary::endpoint::{split_endpoints, validate_address, Endpoint, Method, Protocol};
pub use vocabulary::error::{
    transfer_code, AddressProblem, AllocError, ErrorKind, PollError, SocketError, TransferCode, TransferError,
    TransferResult,
};
pub use vocabulary::interrupt::{ms_until, Interrupter};
pub use vocabulary::options::{AttachOptions, SocketOptions};
pub use vocabulary::region::{
    BulkCallback, RegionBlock, RegionCallback, RegionConfig, RegionEvent, RegionInfo, SingleCallback,
};
pub use vocabulary::socket_type::SocketType;
pub use vocabulary::timeout::Timeout;
pub use vocabulary::transport_kind::TransportKind;
