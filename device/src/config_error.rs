//! The errors of channel configurations, and the limits on the number of sub-channels.
//!
//! - [`ChannelError`] is a channel property with a bad value.
//! - [`ConfigError`] says why a configuration source could not be read.
//! - [`MAX_SUB_CHANNELS`] and [`MAX_DEVICE_SUB_CHANNELS`] bound the sub-channels of a channel and
//!   of a device.
//!
//! This module sits below `error` (whose `Error` wraps these errors) and below the modules that
//! read configurations (`channel`, `channel_parsers`). So none of these modules imports another
//! in a circle.

/// A channel configuration error (FairMQ's `ChannelConfigurationError`): the device goes to ERROR.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelError {
    /// Bad socket type.
    #[error("Invalid channel type: '{0}'")]
    InvalidType(String),
    /// Endpoint without modifier and a channel method other than bind/connect.
    #[error("Invalid endpoint connection method: '{method}' for {endpoint}")]
    InvalidMethod {
        /// The method.
        method: String,
        /// The endpoint.
        endpoint: String,
    },
    /// A negative size.
    #[error("invalid channel {what} (cannot be negative): '{value}'")]
    Negative {
        /// Which property, in FairMQ's words.
        what: &'static str,
        /// The value.
        value: i64,
    },
    /// Unknown transport name.
    #[error("Unknown transport provided: {0}")]
    UnknownTransport(String),
    /// A property has a value of the wrong form.
    #[error("channel property '{key}' has an invalid value '{value}'")]
    BadValue {
        /// Key.
        key: String,
        /// Value as text.
        value: String,
    },
    /// An integer property beyond a C++ `int` (FairMQ's type for all of them).
    #[error("channel property '{key}' is out of range: '{value}', allowed are -2147483648 to 2147483647")]
    OutOfRange {
        /// Key.
        key: String,
        /// Value as text.
        value: String,
    },
    /// A channel name with characters FairMQ forbids.
    #[error("channel name contains illegal character: '{0}', allowed characters are: a-z, A-Z, 0-9, -, _, [, ], #")]
    IllegalName(char),
}

/// Why a channel configuration could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A `--channel-config` token without name.
    #[error("missing channel name in argument of option --channel-config")]
    MissingName,
    /// A channel property of the wrong form.
    #[error(transparent)]
    Channel(#[from] ChannelError),
    /// The JSON file could not be read.
    #[error("could not read '{path}': {source}")]
    Io {
        /// File.
        path: String,
        /// OS error.
        source: std::io::Error,
    },
    /// The JSON is malformed (serde_json's message: nesting beyond its recursion limit is one) or
    /// not FairMQ's format.
    #[error("invalid JSON configuration: {0}")]
    Json(String),
    /// No device id to select the JSON entry.
    #[error("no device ID provided. Provide with `--id` cmd option")]
    NoDeviceId,
    /// A channel defined twice: the second definition would silently replace the first (one
    /// `pull` and one `push` of the same name left a device spinning on errno 95).
    #[error("channel '{name}' is defined more than once ({place})")]
    DuplicateChannel {
        /// Channel name.
        name: String,
        /// Where: `in --channel-config`, `in --mq-config` or `in --mq-config and in --channel-config`.
        place: &'static str,
    },
    /// More sub-channels in all than a device may have.
    #[error("the configuration defines more than the {MAX_DEVICE_SUB_CHANNELS} sub-channels a device may have")]
    TooManySubChannels,
    /// No entry of the JSON file is for this device.
    #[error("no device with key or id '{0}' in the configuration")]
    NoSuchDevice(String),
    /// A `numSockets` beyond what a channel can have.
    #[error(
        "channel {channel}: numSockets {requested} is more than the {MAX_SUB_CHANNELS} sub-channels a channel may have"
    )]
    TooManySockets {
        /// Channel name.
        channel: String,
        /// The `numSockets` given.
        requested: usize,
    },
}

/// Most sub-channels one channel may have. libzmq opens at most 1023 sockets per context by
/// default, so a channel with more could never be built; refusing it at once turns a typo such as
/// `numSockets=10000000000` into an error instead of a device that allocates until it is killed.
pub const MAX_SUB_CHANNELS: usize = 1024;

/// Most sub-channels a device may have in all (each is a socket; libzmq's default context takes
/// 1023): a configuration of thousands of channels is refused before it is built.
pub const MAX_DEVICE_SUB_CHANNELS: usize = 4096;
