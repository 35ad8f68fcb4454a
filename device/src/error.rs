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

/// What user hooks return as an error: anything.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The result of a hook.
pub type HookResult<T = ()> = Result<T, BoxError>;

/// Errors of the framework itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Socket or address set-up.
    #[error(transparent)]
    Socket(#[from] fairmq_zmq::SocketError),
    /// Shared-memory transport.
    #[error(transparent)]
    Shm(#[from] fairmq_shm::ShmError),
    /// A zeromq message's bytes could not be allocated.
    #[error(transparent)]
    Alloc(#[from] fairmq_zmq::AllocError),
    /// Channel configuration.
    #[error(transparent)]
    Channel(#[from] ChannelError),
    /// Configuration sources.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Properties.
    #[error(transparent)]
    Property(#[from] PropertyError),
    /// A channel that does not exist.
    #[error("GetChannel(): '{0}' does not exist.")]
    NoChannel(String),
    /// An unknown transport name.
    #[error("invalid transport type provided: {0}")]
    Transport(String),
    /// Binding channels failed.
    #[error("{0} of the binding channels could not initialize. Initial configuration incomplete.")]
    Binding(usize),
    /// Connecting channels timed out (FairMQ's words; FairMQ gives the seconds as the attempts).
    #[error("could not connect all channels after {attempts} attempts in {seconds} s (--init-timeout)")]
    Connecting {
        /// Attempts made.
        attempts: u64,
        /// `--init-timeout`.
        seconds: u64,
    },
    /// A channel without bind/connect.
    #[error("Cannot update configuration. Socket method (bind/connect) for channel '{0}' not specified.")]
    NoMethod(String),
    /// `--network-interface` names an interface without an IPv4 address (a bind channel without
    /// address would listen on it).
    #[error("network interface '{0}' has no IPv4 address to bind on")]
    NoInterface(String),
    /// A transfer failed where the framework needed it.
    #[error(transparent)]
    Transfer(#[from] fairmq_zmq::TransferError),
    /// A poll failed.
    #[error(transparent)]
    Poll(#[from] fairmq_zmq::PollError),
    /// A region operation of the zeromq transport.
    #[error(transparent)]
    Region(#[from] fairmq_zmq::RegionError),
    /// A message asked of one transport for a region of the other.
    #[error("region type ({region}) does not match message type ({message})")]
    RegionKind {
        /// The region's transport.
        region: fairmq_zmq::TransportKind,
        /// The message's transport.
        message: fairmq_zmq::TransportKind,
    },
    /// A channel told to bind or connect to an address it cannot use.
    #[error("channel {channel} cannot {method} to '{address}' (an invalid or unspecified address)")]
    Unattachable {
        /// Full channel name.
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
    /// Its kind (see [`ErrorKind`]), the same sorting as the transports' errors.
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
