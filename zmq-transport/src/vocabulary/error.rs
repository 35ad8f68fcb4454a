//! Error types: one small type per kind of operation.
//!
//! - [`TransferError`] says why a send or receive did not happen. Its
//!   [`code`](TransferError::code) is FairMQ's transfer code: -1 error, -2 timeout, -3
//!   interrupted. [`transfer_code`] turns a whole [`TransferResult`] into FairMQ's integer form.
//! - [`SocketError`] says why creating, configuring, binding or connecting a socket failed.
//!   [`AddressProblem`] says what is wrong with an endpoint address.
//! - [`PollError`] says why a poll failed.
//! - [`AllocError`] says that a message's bytes could not be allocated.
//!
//! Every error type of both transports and of the device framework has a `kind()`, an
//! [`ErrorKind`]. So a caller sorts failures without knowing the variants of three crates. The C
//! ABI turns the kinds into its result codes this way.

use std::fmt;

/// FairMQ's `TransferCode` values, as FairMQ's C++ API and the C ABI of fairmq-rs return them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum TransferCode {
    /// Not an error: 0 bytes were moved. This value exists only because FairMQ's enum has it.
    Success = 0,
    /// The transfer failed.
    Error = -1,
    /// The timeout expired before the transfer could be done.
    Timeout = -2,
    /// The transport was interrupted while the transfer had to wait.
    Interrupted = -3,
}

/// What kind of failure an error is.
///
/// Every error type of both transports and of the device framework has a `kind()`, which returns
/// one of these few kinds. So a caller can sort failures without knowing the variants of three
/// crates. The C ABI sorts failures into its result codes this way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The caller's mistake: an unknown name, a malformed address, a piece outside its region.
    Invalid,
    /// A configuration was refused.
    Config,
    /// Something asked for does not exist (a channel, a property).
    NotFound,
    /// No memory for a message.
    Alloc,
    /// The transport or the system failed. This kind also covers a transfer that timed out or was
    /// interrupted where the framework needed it to succeed.
    Transport,
}

/// Why a send or receive did not happen. A failed send leaves the message with the caller.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransferError {
    /// The timeout expired; nothing was transferred.
    #[error("transfer timed out")]
    Timeout,
    /// The transport was interrupted (a state change is pending); nothing was transferred.
    #[error("transfer interrupted")]
    Interrupted,
    /// A multipart with no parts: ZeroMQ has no such message, so both transports refuse it.
    #[error("will not send an empty multipart message")]
    EmptyMultipart,
    /// libzmq refused the transfer (for example `ETERM` after the context was terminated).
    #[error("zeromq error: {0}")]
    Zmq(#[from] zmq::Error),
    /// A transport built on top of this one failed in its own way (bad metadata, out of memory,
    /// ...). Downcast the boxed error to that transport's error type for details.
    #[error("{0}")]
    Transport(Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl TransferError {
    /// The kind of this error (see [`ErrorKind`]): always `ErrorKind::Transport`.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Transport
    }

    /// FairMQ's transfer code for this error: -2 timeout, -3 interrupted, -1 anything else.
    pub fn code(&self) -> TransferCode {
        match self {
            TransferError::Timeout => TransferCode::Timeout,
            TransferError::Interrupted => TransferCode::Interrupted,
            _ => TransferCode::Error,
        }
    }
}

/// A message's bytes could not be allocated: no allocation can hold the size, or the system is out
/// of memory. The error message uses the same words as FairMQ's zeromq transport.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed initializing message with size {size}, alignment {alignment}")]
pub struct AllocError {
    /// The size asked for.
    pub size: usize,
    /// The alignment asked for, or 0 for none.
    pub alignment: usize,
}

impl AllocError {
    /// The kind of this error (see [`ErrorKind`]): always `ErrorKind::Alloc`.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Alloc
    }
}

/// Result of a transfer: bytes moved (payload bytes, summed over parts), or why nothing moved.
pub type TransferResult = Result<usize, TransferError>;

/// Converts a transfer result to FairMQ's integer form: the bytes moved (>= 0), or the error's
/// code (-1, -2 or -3).
pub fn transfer_code(result: &TransferResult) -> i64 {
    match result {
        Ok(n) => i64::try_from(*n).unwrap_or(i64::MAX),
        Err(e) => e.code() as i64,
    }
}

/// What is wrong with an endpoint address, in FairMQ's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressProblem {
    /// `tcp://` without `:port`.
    MissingPort,
    /// `ipc://` with nothing after it.
    EmptyIpc,
    /// `inproc://` with nothing after it.
    EmptyInproc,
    /// Neither `tcp://`, `ipc://` nor `inproc://`.
    MissingProtocol,
    /// `unspecified` or empty.
    Unspecified,
    /// The port of a tcp address is not a number in 0..=65535.
    BadPort,
    /// A NUL character, which no endpoint can hold (libzmq takes C strings).
    Nul,
}

impl fmt::Display for AddressProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressProblem::MissingPort => "missing port?",
            AddressProblem::EmptyIpc => "empty IPC address?",
            AddressProblem::EmptyInproc => "empty inproc address?",
            AddressProblem::MissingProtocol => "missing protocol specifier?",
            AddressProblem::Nul => "NUL character in the address?",
            AddressProblem::Unspecified => "address not specified",
            AddressProblem::BadPort => "port is not a number between 0 and 65535",
        })
    }
}

/// Errors creating, configuring, binding or connecting sockets and transports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SocketError {
    /// A socket type name FairMQ does not know.
    #[error("Invalid channel type: '{0}'")]
    InvalidSocketType(String),
    /// A transport name FairMQ does not know.
    #[error("Unknown transport provided: {0}")]
    UnknownTransport(String),
    /// A method other than bind/connect.
    #[error("Invalid endpoint connection method: '{method}' for {endpoint}")]
    InvalidMethod {
        /// The method given.
        method: String,
        /// The endpoint it was given for.
        endpoint: String,
    },
    /// A malformed endpoint address.
    #[error("invalid channel address: '{address}' ({problem})")]
    InvalidAddress {
        /// The endpoint as given.
        address: String,
        /// What is wrong with it.
        problem: AddressProblem,
    },
    /// The host of a tcp endpoint has no IPv4 address.
    #[error("could not resolve hostname '{host}'")]
    Resolve {
        /// The host name.
        host: String,
    },
    /// Auto-bind used up all its attempts in the port range, and none of them bound.
    #[error("could not bind to any (TCP) port in the given range {min}-{max} after {attempts} attempts")]
    AutoBindExhausted {
        /// Lower bound of the range.
        min: u16,
        /// Upper bound of the range.
        max: u16,
        /// Attempts made.
        attempts: u32,
    },
    /// `portRangeMin` is greater than `portRangeMax`.
    #[error("invalid port range: {min} > {max}")]
    InvalidPortRange {
        /// Lower bound given.
        min: u16,
        /// Upper bound given.
        max: u16,
    },
    /// libzmq refused to bind.
    #[error("Failed binding socket {socket}, address: {address}, reason: {source}")]
    Bind {
        /// Socket id.
        socket: String,
        /// Endpoint.
        address: String,
        /// libzmq's error.
        source: zmq::Error,
    },
    /// libzmq refused to connect.
    #[error("Failed connecting socket {socket}, address: {address}, reason: {source}")]
    Connect {
        /// Socket id.
        socket: String,
        /// Endpoint.
        address: String,
        /// libzmq's error.
        source: zmq::Error,
    },
    /// A socket option could not be set or read.
    #[error("failed setting {option}, reason: {source}")]
    Option {
        /// The ZeroMQ option name.
        option: &'static str,
        /// libzmq's error.
        source: zmq::Error,
    },
    /// libzmq could not create a context or socket.
    #[error("failed creating {what}, reason: {source}")]
    Create {
        /// What could not be created, such as "context" or "socket".
        what: &'static str,
        /// libzmq's error.
        source: zmq::Error,
    },
    /// The operating system refused a resource (the interrupt eventfd).
    #[error("system error: {0}")]
    Os(#[from] nix::Error),
}

impl SocketError {
    /// The kind of this error (see [`ErrorKind`]). A bad name, method, address or port range from
    /// the caller is [`ErrorKind::Invalid`]. A refusal by libzmq or by the system is
    /// [`ErrorKind::Transport`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            SocketError::InvalidSocketType(_)
            | SocketError::UnknownTransport(_)
            | SocketError::InvalidMethod { .. }
            | SocketError::InvalidAddress { .. }
            | SocketError::InvalidPortRange { .. } => ErrorKind::Invalid,
            _ => ErrorKind::Transport,
        }
    }
}

/// Errors of [`Poller::poll`](crate::Poller::poll).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PollError {
    /// The transport was interrupted and no socket was ready.
    #[error("poll interrupted")]
    Interrupted,
    /// libzmq failed the poll.
    #[error("Polling failed, reason: {0}")]
    Zmq(#[from] zmq::Error),
}

impl PollError {
    /// The kind of this error (see [`ErrorKind`]): always `ErrorKind::Transport`.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Transport
    }
}
