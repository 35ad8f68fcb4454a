//! # fairmq-zmq: FairMQ's zeromq transport
//!
//! Sockets, messages and pollers with FairMQ's semantics on top of libzmq (bundled and built by
//! cargo, no system package needed). The payload travels inside ZeroMQ frames: one message is one
//! frame, a multipart is one ZeroMQ multipart, frame for frame, so C++ FairMQ devices on the other end
//! of a tcp or ipc socket understand us.
//!
//! - Transfers return the bytes moved or a [`TransferError`] whose [`code`](TransferError::code) is
//!   FairMQ's (-1 error, -2 timeout, -3 interrupted). Timeouts ([`Timeout`]): FairMQ's ms (-1
//!   forever, 0 no wait, N ms) or a `Duration`.
//! - A failed or timed-out send leaves the message with the caller.
//! - [`Transport::interrupt`] wakes every blocked call at once (an eventfd that libzmq's own
//!   blocking wait watches, see `interrupt`);
//!   a transfer that can complete at once still completes while interrupted.
//! - Counters count successful transfers; a multipart is one message.
//!
//! The shared-memory transport (`fairmq-shm`) moves its metadata over these sockets, so timeouts,
//! interruption and counters are implemented once, here; the [`vocabulary`] both transports share
//! (transfer results and codes, socket types, transport kinds, endpoints, counters, interruption,
//! region types) is one module, and what a layered transport needs of a socket is [`layered`].
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
