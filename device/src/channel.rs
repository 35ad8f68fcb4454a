//! Channels: the configuration of a sub-channel ([`ChannelConfig`]), and the sub-channel with
//! its socket ([`Channel`]).
//!
//! A channel has a name (`data`) and one or more sub-channels (`data[0]`, `data[1]`, ...).
//!
//! - [`ChannelConfig`] holds FairMQ's channel properties, with FairMQ's defaults: socket type,
//!   method, address, transport, queue and kernel buffer sizes, timeouts, linger, rate logging
//!   and the auto-bind port range. [`ChannelConfig::validate`] checks them as FairMQ does. The
//!   device's [`Properties`] hold the same values under `chans.<name>.<index>.<property>`.
//! - [`Channel`] is a sub-channel of a running device: its configuration, its [`Transport`] and
//!   its [`Socket`]. The device makes one per sub-channel in INITIALIZING DEVICE. It binds or
//!   connects it in BINDING or CONNECTING.
//!
//! A property with a bad value is a [`ChannelError`], and the device goes to ERROR.

pub use crate::config_error::ChannelError;
use crate::error::Error;
use crate::properties::{Properties, Value};
use crate::transport::{Message, Parts, Socket, Transport};
use fairmq_zmq::Timeout;
use fairmq_zmq::{
    split_endpoints, AttachOptions, CounterSnapshot, Method, SocketOptions, SocketType, TransferResult, TransportKind,
};
use std::fmt;

/// Every channel property key. The same keys appear in `--channel-config`, in JSON files and in
/// `chans.<name>.<i>.<key>`.
pub(crate) const PROPERTY_KEYS: [&str; 16] = [
    "type",
    "method",
    "address",
    "transport",
    "sndBufSize",
    "rcvBufSize",
    "sndKernelSize",
    "rcvKernelSize",
    "sndTimeoutMs",
    "rcvTimeoutMs",
    "linger",
    "rateLogging",
    "portRangeMin",
    "portRangeMax",
    "autoBind",
    "numSockets",
];

/// The configuration of one sub-channel, with FairMQ's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelConfig {
    /// The channel name without the index, such as `data`.
    pub prefix: String,
    /// Sub-channel index.
    pub index: usize,
    /// The socket type, such as `push`. The default is `unspecified`.
    pub ty: String,
    /// The method: `bind`, `connect` or `unspecified`.
    pub method: String,
    /// The endpoints. The default is `unspecified`.
    pub address: String,
    /// The transport: `default`, `zeromq` or `shmem`.
    pub transport: String,
    /// The send queue length, in messages.
    pub snd_buf_size: i32,
    /// The receive queue length, in messages.
    pub rcv_buf_size: i32,
    /// The kernel send buffer size, in bytes. 0 means the system default.
    pub snd_kernel_size: i32,
    /// The kernel receive buffer size, in bytes.
    pub rcv_kernel_size: i32,
    /// The default send timeout, in milliseconds. -1 means wait forever.
    pub snd_timeout_ms: i32,
    /// The default receive timeout, in milliseconds.
    pub rcv_timeout_ms: i32,
    /// The linger time, in milliseconds.
    pub linger: i32,
    /// The rate logging interval, in seconds. 0 turns rate logging off.
    pub rate_logging: i32,
    /// The low end of the auto-bind port range.
    pub port_range_min: i32,
    /// The high end of the auto-bind port range.
    pub port_range_max: i32,
    /// Whether a failed tcp bind is retried on random ports of the auto-bind port range.
    pub auto_bind: bool,
}

impl ChannelConfig {
    /// Creates sub-channel `index` of channel `prefix`, with FairMQ's defaults.
    pub fn new(prefix: &str, index: usize) -> Self {
        ChannelConfig {
            prefix: prefix.to_owned(),
            index,
            ty: "unspecified".into(),
            method: "unspecified".into(),
            address: "unspecified".into(),
            transport: "default".into(),
            snd_buf_size: 1000,
            rcv_buf_size: 1000,
            snd_kernel_size: 0,
            rcv_kernel_size: 0,
            snd_timeout_ms: -1,
            rcv_timeout_ms: -1,
            linger: 500,
            rate_logging: 1,
            port_range_min: 22000,
            port_range_max: 23000,
            auto_bind: true,
        }
    }

    /// The full name, such as `data[0]`.
    pub fn name(&self) -> String {
        format!("{}[{}]", self.prefix, self.index)
    }

    /// The device property that holds this sub-channel's property `key`:
    /// `chans.<prefix>.<index>.<key>`.
    pub fn key(&self, key: &str) -> String {
        format!("chans.{}.{}.{key}", self.prefix, self.index)
    }

    /// Reads the properties `chans.<prefix>.<index>.*`. A missing key keeps its default.
    pub fn from_properties(props: &Properties, prefix: &str, index: usize) -> Result<Self, ChannelError> {
        let mut c = ChannelConfig::new(prefix, index);
        for (k, v) in props.starting_with(&format!("chans.{prefix}.{index}.")) {
            let key = k.rsplit('.').next().unwrap_or("");
            c.set(key, &v)?;
        }
        Ok(c)
    }

    /// Sets one property from a value. Numbers and booleans may come as text, as they may in JSON.
    pub fn set(&mut self, key: &str, v: &Value) -> Result<(), ChannelError> {
        let bad = || ChannelError::BadValue { key: key.to_owned(), value: v.to_string() };
        let int = || -> Result<i32, ChannelError> {
            let wide: i128 = match v {
                Value::Int(i) => i128::from(*i),
                Value::UInt(u) => i128::from(*u),
                Value::Str(s) => s.trim().parse().map_err(|_| bad())?,
                _ => return Err(bad()),
            };
            i32::try_from(wide).map_err(|_| ChannelError::OutOfRange { key: key.to_owned(), value: v.to_string() })
        };
        let text = || v.to_string();
        match key {
            "type" => self.ty = text(),
            "method" => self.method = text(),
            "address" => self.address = text(),
            "transport" => self.transport = text(),
            "sndBufSize" => self.snd_buf_size = int()?,
            "rcvBufSize" => self.rcv_buf_size = int()?,
            "sndKernelSize" => self.snd_kernel_size = int()?,
            "rcvKernelSize" => self.rcv_kernel_size = int()?,
            "sndTimeoutMs" => self.snd_timeout_ms = int()?,
            "rcvTimeoutMs" => self.rcv_timeout_ms = int()?,
            "linger" => self.linger = int()?,
            "rateLogging" => self.rate_logging = int()?,
            "portRangeMin" => self.port_range_min = int()?,
            "portRangeMax" => self.port_range_max = int()?,
            "autoBind" => {
                self.auto_bind = match v {
                    Value::Bool(b) => *b,
                    Value::Str(s) => crate::options::parse_bool(s).ok_or_else(bad)?,
                    _ => return Err(bad()),
                }
            }
            _ => {} // numSockets and unknown keys do not describe one sub-channel
        }
        Ok(())
    }

    /// Writes every property to `props`, as FairMQ's `AddChannel` does.
    pub fn write_to(&self, props: &Properties) {
        let entries: [(&str, Value); 15] = [
            ("type", self.ty.clone().into()),
            ("method", self.method.clone().into()),
            ("address", self.address.clone().into()),
            ("transport", self.transport.clone().into()),
            ("sndBufSize", self.snd_buf_size.into()),
            ("rcvBufSize", self.rcv_buf_size.into()),
            ("sndKernelSize", self.snd_kernel_size.into()),
            ("rcvKernelSize", self.rcv_kernel_size.into()),
            ("sndTimeoutMs", self.snd_timeout_ms.into()),
            ("rcvTimeoutMs", self.rcv_timeout_ms.into()),
            ("linger", self.linger.into()),
            ("rateLogging", self.rate_logging.into()),
            ("portRangeMin", self.port_range_min.into()),
            ("portRangeMax", self.port_range_max.into()),
            ("autoBind", self.auto_bind.into()),
        ];
        for (k, v) in entries {
            props.set(&self.key(k), v);
        }
    }

    /// Parses the socket type. An invalid type is an error.
    pub fn socket_type(&self) -> Result<SocketType, ChannelError> {
        self.ty.parse().map_err(|_| ChannelError::InvalidType(self.ty.clone()))
    }

    /// Parses the transport. The result may be `Default`: the device resolves it, not this method.
    pub fn transport_kind(&self) -> Result<TransportKind, ChannelError> {
        self.transport.parse().map_err(|_| ChannelError::UnknownTransport(self.transport.clone()))
    }

    /// The channel's method, or `None` when the method is neither `bind` nor `connect`.
    pub fn method_kind(&self) -> Option<Method> {
        self.method.parse().ok()
    }

    /// Checks the configuration as FairMQ's `Validate` does.
    ///
    /// - `Ok(true)`: the configuration is valid.
    /// - `Ok(false)`: the channel cannot attach yet, because its address is unspecified or
    ///   malformed. The method logs the reason.
    /// - `Err`: the configuration has an error.
    pub fn validate(&self) -> Result<bool, ChannelError> {
        let name = self.name();
        if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || "-_[]#".contains(*c))) {
            log::error!(
                "channel name contains illegal character: '{c}', allowed characters are: a-z, A-Z, 0-9, -, _, [, ], #"
            );
            return Err(ChannelError::IllegalName(c));
        }
        self.socket_type()?;
        self.transport_kind()?;
        for (what, v) in [
            ("send buffer size", self.snd_buf_size),
            ("receive buffer size", self.rcv_buf_size),
            ("send kernel transmit size", self.snd_kernel_size),
            ("receive kernel transmit size", self.rcv_kernel_size),
            ("socket rate logging interval", self.rate_logging),
        ] {
            if v < 0 {
                return Err(ChannelError::Negative { what, value: i64::from(v) });
            }
        }
        if self.address.is_empty() || self.address == "unspecified" {
            log::debug!("Validating channel '{name}'... INVALID (address unspecified)");
            return Ok(false);
        }
        for ep in split_endpoints(&self.address) {
            if ep.modifier.is_none() && self.method_kind().is_none() {
                return Err(ChannelError::InvalidMethod {
                    method: self.method.clone(),
                    endpoint: ep.address.to_owned(),
                });
            }
            if let Err(e) = ep.validate() {
                log::error!("{e}");
                return Ok(false);
            }
        }
        log::debug!("Validating channel '{name}'... VALID");
        Ok(true)
    }

    /// The socket options that these properties set.
    pub fn socket_options(&self) -> SocketOptions {
        SocketOptions {
            linger: self.linger,
            snd_buf_size: self.snd_buf_size,
            rcv_buf_size: self.rcv_buf_size,
            snd_kernel_size: self.snd_kernel_size,
            rcv_kernel_size: self.rcv_kernel_size,
        }
    }

    /// The attach options that these properties set.
    pub fn attach_options(&self) -> AttachOptions {
        AttachOptions {
            method: self.method_kind(),
            auto_bind: self.auto_bind,
            port_range_min: self.port_range_min.clamp(0, 65535) as u16,
            port_range_max: self.port_range_max.clamp(0, 65535) as u16,
        }
    }
}

impl fmt::Display for ChannelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "name: {}, type: {}, method: {}, address: {}", self.name(), self.ty, self.method, self.address)
    }
}

/// A sub-channel of a running device: its configuration, transport and socket.
///
/// # Examples
///
/// Two channels, as a device's `--channel-config` would describe them
/// (`name=data,type=push,method=bind,...`). They use the zeromq transport. The shmem transport
/// works the same way.
///
/// ```
/// use fairmq::{transport, Channel, ChannelConfig, Properties, TransportKind};
///
/// let transport = transport::create(TransportKind::Zeromq, "doc", &Properties::new())?;
/// let config = |ty: &str, method: &str| {
///     let mut c = ChannelConfig::new("data", 0);
///     (c.ty, c.method, c.address) = (ty.into(), method.into(), "inproc://doc-channel".into());
///     c
/// };
/// let mut out = Channel::new(config("push", "bind"), transport.clone())?;
/// let mut input = Channel::new(config("pull", "connect"), transport)?;
/// out.attach()?;
/// input.attach()?;
///
/// out.send(&mut out.new_simple_message(b"event 1")?)?;
/// let mut msg = input.new_message();
/// assert_eq!(input.receive_timeout(&mut msg, 1000)?, 7);
/// assert_eq!(msg.data(), b"event 1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Channel {
    config: ChannelConfig,
    transport: Transport,
    socket: Socket,
}

impl Channel {
    /// Creates the channel's socket and applies the channel's socket options, as FairMQ's
    /// `Channel::Init` does.
    pub fn new(config: ChannelConfig, transport: Transport) -> Result<Channel, Error> {
        let socket = transport.socket(config.socket_type()?, &config.name())?;
        socket.set_options(&config.socket_options())?;
        Ok(Channel { config, transport, socket })
    }

    /// The configuration.
    pub fn config(&self) -> &ChannelConfig {
        &self.config
    }

    /// The full name, such as `data[0]`.
    pub fn name(&self) -> String {
        self.config.name()
    }

    /// The channel's transport.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The socket.
    pub fn socket(&self) -> &Socket {
        &self.socket
    }

    /// Lets `f` change the socket options in the configuration (`linger` and the buffer sizes).
    /// Then applies them to the socket. FairMQ does this with `Socket::SetOption` and its setters.
    pub fn update_socket_options(&mut self, f: impl FnOnce(&mut ChannelConfig)) -> Result<(), Error> {
        f(&mut self.config);
        self.socket.set_options(&self.config.socket_options())
    }

    /// Binds or connects to `address`, as FairMQ's `Channel::Bind` and `Channel::Connect` do.
    /// `method` says which of the two.
    ///
    /// The method stores `method` and `address` in the configuration and validates it. Then the
    /// socket attaches. Returns the address as attached.
    pub fn attach_to(&mut self, method: &str, address: &str) -> Result<String, Error> {
        self.config.method = method.to_owned();
        self.config.address = address.to_owned();
        match self.config.validate() {
            Ok(true) => self.attach(),
            Ok(false) => Err(Error::Unattachable {
                channel: self.name(),
                method: method.to_owned(),
                address: address.to_owned(),
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Binds or connects every endpoint of the address. Returns the address as attached, and
    /// stores it in the configuration.
    pub fn attach(&mut self) -> Result<String, Error> {
        let attached = self.socket.attach(&self.config.address, &self.config.attach_options())?;
        log::debug!("Attached channel {} to {attached} ({}) ({})", self.name(), self.config.method, self.config.ty);
        self.config.address = attached.clone();
        Ok(attached)
    }

    /// Sends with the channel's default timeout (`sndTimeoutMs`).
    pub fn send(&self, msg: &mut Message) -> TransferResult {
        self.send_timeout(msg, self.config.snd_timeout_ms)
    }

    /// Sends with an explicit timeout. The timeout is either FairMQ's milliseconds (-1 waits
    /// forever, 0 does not wait) or a `Duration` (see [`Timeout`]).
    pub fn send_timeout(&self, msg: &mut Message, timeout: impl Into<Timeout>) -> TransferResult {
        self.socket.send(msg, timeout, &self.transport)
    }

    /// Receives with the channel's default timeout (`rcvTimeoutMs`).
    pub fn receive(&self, msg: &mut Message) -> TransferResult {
        self.receive_timeout(msg, self.config.rcv_timeout_ms)
    }

    /// Receives with an explicit timeout.
    pub fn receive_timeout(&self, msg: &mut Message, timeout: impl Into<Timeout>) -> TransferResult {
        self.socket.receive(msg, timeout, &self.transport)
    }

    /// Sends a multipart message with the default timeout.
    pub fn send_parts(&self, parts: &mut Parts) -> TransferResult {
        self.send_parts_timeout(parts, self.config.snd_timeout_ms)
    }

    /// Sends a multipart message with an explicit timeout.
    pub fn send_parts_timeout(&self, parts: &mut Parts, timeout: impl Into<Timeout>) -> TransferResult {
        self.socket.send_parts(parts, timeout, &self.transport)
    }

    /// Receives a multipart message with the default timeout, and appends its parts to `parts`.
    pub fn receive_parts(&self, parts: &mut Parts) -> TransferResult {
        self.receive_parts_timeout(parts, self.config.rcv_timeout_ms)
    }

    /// Receives a multipart message with an explicit timeout.
    pub fn receive_parts_timeout(&self, parts: &mut Parts, timeout: impl Into<Timeout>) -> TransferResult {
        self.socket.receive_parts(parts, timeout)
    }

    /// Creates an empty message of this channel's transport.
    pub fn new_message(&self) -> Message {
        self.transport.new_message()
    }

    /// Creates a message of `size` bytes, of this channel's transport.
    pub fn new_message_with_size(&self, size: usize) -> Result<Message, Error> {
        self.transport.new_message_with_size(size)
    }

    /// Creates a message of this channel's transport that holds a copy of `bytes`.
    pub fn new_simple_message(&self, bytes: &[u8]) -> Result<Message, Error> {
        self.transport.new_simple_message(bytes)
    }

    /// The counts of messages and bytes that the socket moved so far.
    pub fn counters(&self) -> CounterSnapshot {
        self.socket.counters()
    }

    /// How many peers the channel's socket has now (FairMQ's `GetNumberOfConnectedPeers`).
    pub fn number_of_connected_peers(&self) -> u64 {
        self.socket.number_of_connected_peers()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(ty: &str, method: &str, address: &str) -> ChannelConfig {
        ChannelConfig { ty: ty.into(), method: method.into(), address: address.into(), ..ChannelConfig::new("data", 0) }
    }

    #[test]
    fn validation_rules_of_fairmq() {
        assert!(
            matches!(ChannelConfig::new("data", 0).validate(), Err(ChannelError::InvalidType(_))),
            "default type unspecified"
        );
        assert_eq!(ch("pair", "unspecified", "unspecified").validate(), Ok(false), "no address");
        assert!(matches!(ch("pair", "unspecified", "bla").validate(), Err(ChannelError::InvalidMethod { .. })));
        for bad in ["ipc://", "verbs://", "inproc://", "tcp://", "bla"] {
            assert_eq!(ch("pair", "bind", bad).validate(), Ok(false), "{bad}");
        }
        assert_eq!(ch("pair", "bind", "tcp://localhost:5555").validate(), Ok(true));
        assert_eq!(
            ch("pair", "unspecified", "@tcp://*:5555,+ipc:///tmp/x").validate(),
            Ok(true),
            "modifiers set the method"
        );
        for key in ["sndBufSize", "rcvBufSize", "sndKernelSize", "rcvKernelSize", "rateLogging"] {
            let mut c = ch("push", "bind", "tcp://*:1");
            c.set(key, &Value::Int(-1)).unwrap();
            assert!(matches!(c.validate(), Err(ChannelError::Negative { .. })), "{key}");
        }
        let mut c = ch("push", "bind", "tcp://*:1");
        c.transport = "ofi".into();
        assert!(matches!(c.validate(), Err(ChannelError::UnknownTransport(_))));
        let c = ChannelConfig { prefix: "da ta".into(), ..ch("push", "bind", "tcp://*:1") };
        assert_eq!(c.validate(), Err(ChannelError::IllegalName(' ')));
    }

    #[test]
    fn properties_round_trip_with_text_values() {
        let p = Properties::new();
        let mut c = ch("push", "bind", "tcp://*:5555");
        c.linger = 1000;
        c.auto_bind = false;
        c.write_to(&p);
        assert_eq!(ChannelConfig::from_properties(&p, "data", 0).unwrap(), c);
        p.set("chans.data.0.sndBufSize", "42");
        p.set("chans.data.0.autoBind", "true");
        let c2 = ChannelConfig::from_properties(&p, "data", 0).unwrap();
        assert_eq!((c2.snd_buf_size, c2.auto_bind), (42, true));
        p.set("chans.data.0.linger", "long");
        assert!(matches!(ChannelConfig::from_properties(&p, "data", 0), Err(ChannelError::BadValue { .. })));
        p.set("chans.data.0.linger", "2147483648");
        let e = ChannelConfig::from_properties(&p, "data", 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "channel property 'linger' is out of range: '2147483648', allowed are -2147483648 to 2147483647",
            "issue 17 item 14: the property and the range are named"
        );
        assert_eq!(c.name(), "data[0]");
        assert_eq!(c.to_string(), "name: data[0], type: push, method: bind, address: tcp://*:5555");
    }
}
