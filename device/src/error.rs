//! Errors of the device framework.
//!
//! - [`Error`] is an error of the framework itself: of a socket, a transport, a channel
//!   configuration, a property or a transition.
//! - [`BoxError`] is what a hook returns as its error: any error type. [`HookResult`] is the
//!   result of a hook.
//! - [`ErrorKind`] sorts errors the same way for the device and for both transports
//!   ([`Error::kind`]).

use crate::config_error::{ChannelError, ConfigError};
use crate::properties::PropertyError;
pub use fairmq_zmq::ErrorKind;

/// The error type that user hooks return: any error type.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The result of a hook.
pub type HookResult<T = ()> = Result<T, BoxError>;

/// Errors of the framework itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Setting up a socket or an address failed.
    #[error(transparent)]
    Socket(#[from] fairmq_zmq::SocketError),
    /// The shared-memory transport failed.
    #[error(transparent)]
    Shm(#[from] fairmq_shm::ShmError),
    /// A zeromq message's bytes could not be allocated.
    #[error(transparent)]
    Alloc(#[from] fairmq_zmq::AllocError),
    /// A channel configuration error.
    #[error(transparent)]
    Channel(#[from] ChannelError),
    /// A configuration source could not be read.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Reading a property failed.
    #[error(transparent)]
    Property(#[from] PropertyError),
    /// A channel that does not exist.
    #[error("GetChannel(): '{0}' does not exist.")]
    NoChannel(String),
    /// An unknown transport name.
    #[error("invalid transport type provided: {0}")]
    Transport(String),
    /// Binding channels failed. The number is how many channels could not bind.
    #[error("{0} of the binding channels could not initialize. Initial configuration incomplete.")]
    Binding(usize),
    /// Connecting channels timed out. The message uses FairMQ's words, but FairMQ's own message
    /// gives the seconds as the number of attempts.
    #[error("could not connect all channels after {attempts} attempts in {seconds} s (--init-timeout)")]
    Connecting {
        /// Attempts made.
        attempts: u64,
        /// The timeout in seconds (`--init-timeout`).
        seconds: u64,
    },
    /// A channel has no method: neither `bind` nor `connect`.
    #[error("Cannot update configuration. Socket method (bind/connect) for channel '{0}' not specified.")]
    NoMethod(String),
    /// `--network-interface` names an interface without an IPv4 address. A bind channel without
    /// an address would listen on that interface's address.
    #[error("network interface '{0}' has no IPv4 address to bind on")]
    NoInterface(String),
    /// A transfer that the framework itself needed failed.
    #[error(transparent)]
    Transfer(#[from] fairmq_zmq::TransferError),
    /// A poll failed.
    #[error(transparent)]
    Poll(#[from] fairmq_zmq::PollError),
    /// A region operation of the zeromq transport failed.
    #[error(transparent)]
    Region(#[from] fairmq_zmq::RegionError),
    /// A message was asked of one transport for a region of the other transport.
    #[error("region type ({region}) does not match message type ({message})")]
    RegionKind {
        /// The region's transport.
        region: fairmq_zmq::TransportKind,
        /// The message's transport.
        message: fairmq_zmq::TransportKind,
    },
    /// A channel was told to bind or connect to an address that it cannot use.
    #[error("channel {channel} cannot {method} to '{address}' (an invalid or unspecified address)")]
    Unattachable {
        /// The full channel name.
        channel: String,
        /// `bind` or `connect`.
        method: String,
        /// The address given.
        address: String,
    },
    /// A state change was refused.
    #[error("Invalid transition: {0}: failed to change state of a fairmq device")]
    Transition(crate::state::Transition),
}

impl Error {
    /// The kind of this error (see [`ErrorKind`]). The transports' errors are sorted into the
    /// same kinds.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Socket(e) => e.kind(),
            Error::Shm(e) => e.kind(),
            Error::Alloc(e) => e.kind(),
            Error::Transfer(e) => e.kind(),
            Error::Poll(e) => e.kind(),
            Error::Region(e) => e.kind(),
            Error::Channel(_)
            | Error::Config(_)
            | Error::NoMethod(_)
            | Error::NoInterface(_)
            | Error::Unattachable { .. } => ErrorKind::Config,
            Error::Property(PropertyError::NotFound(_)) | Error::NoChannel(_) => ErrorKind::NotFound,
            Error::Property(_) | Error::Transport(_) | Error::RegionKind { .. } | Error::Transition(_) => {
                ErrorKind::Invalid
            }
            Error::Binding(_) | Error::Connecting { .. } => ErrorKind::Transport,
        }
    }
}
