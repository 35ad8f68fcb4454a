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

/// A channel configuration error (FairMQ's `ChannelConfigurationError`). It sends the device to
/// the ERROR state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelError {
    /// The socket type is not known.
    #[error("Invalid channel type: '{0}'")]
    InvalidType(String),
    /// An endpoint has no modifier (`@`, `+` or `>`), and the channel's method is neither `bind`
    /// nor `connect`.
    #[error("Invalid endpoint connection method: '{method}' for {endpoint}")]
    InvalidMethod {
        /// The method.
        method: String,
        /// The endpoint.
        endpoint: String,
    },
    /// A size is negative.
    #[error("invalid channel {what} (cannot be negative): '{value}'")]
    Negative {
        /// The property, named in FairMQ's words.
        what: &'static str,
        /// The value.
        value: i64,
    },
    /// The transport name is not known.
    #[error("Unknown transport provided: {0}")]
    UnknownTransport(String),
    /// A property has a value of the wrong form.
    #[error("channel property '{key}' has an invalid value '{value}'")]
    BadValue {
        /// The key.
        key: String,
        /// The value, as text.
        value: String,
    },
    /// An integer property lies outside the range of a C++ `int`. FairMQ stores every integer
    /// channel property as an `int`.
    #[error("channel property '{key}' is out of range: '{value}', allowed are -2147483648 to 2147483647")]
    OutOfRange {
        /// The key.
        key: String,
        /// The value, as text.
        value: String,
    },
    /// A channel name contains a character that FairMQ forbids.
    #[error("channel name contains illegal character: '{0}', allowed characters are: a-z, A-Z, 0-9, -, _, [, ], #")]
    IllegalName(char),
}

/// Why a channel configuration could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A `--channel-config` token has no channel name.
    #[error("missing channel name in argument of option --channel-config")]
    MissingName,
    /// A channel property has a bad value.
    #[error(transparent)]
    Channel(#[from] ChannelError),
    /// The JSON file could not be read.
    #[error("could not read '{path}': {source}")]
    Io {
        /// The file's path.
        path: String,
        /// The error from the operating system.
        source: std::io::Error,
    },
    /// The JSON is malformed, or it is not in FairMQ's format. For malformed JSON, the text is
    /// serde_json's message. Nesting deeper than serde_json's recursion limit is one such case.
    #[error("invalid JSON configuration: {0}")]
    Json(String),
    /// No device id is given to select the device's entry in the JSON file.
    #[error("no device ID provided. Provide with `--id` cmd option")]
    NoDeviceId,
    /// A channel is defined twice. The second definition would silently replace the first: a
    /// `pull` and a `push` channel of the same name once left a device spinning on errno 95.
    #[error("channel '{name}' is defined more than once ({place})")]
    DuplicateChannel {
        /// The channel's name.
        name: String,
        /// Where the channel is defined: `in --channel-config`, `in --mq-config` or
        /// `in --mq-config and in --channel-config`.
        place: &'static str,
    },
    /// The configuration defines more sub-channels in total than a device may have
    /// (`MAX_DEVICE_SUB_CHANNELS`).
    #[error("the configuration defines more than the {MAX_DEVICE_SUB_CHANNELS} sub-channels a device may have")]
    TooManySubChannels,
    /// The JSON file has no entry for this device.
    #[error("no device with key or id '{0}' in the configuration")]
    NoSuchDevice(String),
    /// A `numSockets` value exceeds the number of sub-channels a channel may have
    /// (`MAX_SUB_CHANNELS`).
    #[error(
        "channel {channel}: numSockets {requested} is more than the {MAX_SUB_CHANNELS} sub-channels a channel may have"
    )]
    TooManySockets {
        /// The channel's name.
        channel: String,
        /// The `numSockets` given.
        requested: usize,
    },
}

/// The most sub-channels that one channel may have. By default, libzmq opens at most 1023 sockets
/// per context, so a channel with more could never be built. Refusing such a channel at once turns
/// a typo such as `numSockets=10000000000` into an error. Otherwise the device would allocate
/// until it is killed.
pub const MAX_SUB_CHANNELS: usize = 1024;

/// The most sub-channels that a device may have in total. Each sub-channel is a socket, and
/// libzmq's default context takes 1023 sockets. So a configuration of thousands of channels is
/// refused before it is built.
pub const MAX_DEVICE_SUB_CHANNELS: usize = 4096;
