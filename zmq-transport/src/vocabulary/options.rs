//! Channel properties that become ZeroMQ socket options, with FairMQ's channel defaults.
//!
//! - [`SocketOptions`] holds the linger, the queue lengths and the kernel buffer sizes that a
//!   channel sets on its socket.
//! - [`AttachOptions`] says how a channel address is attached: the channel's method, and the port
//!   range of auto-bind.

/// Socket options a channel sets (FairMQ's `Channel::Init`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketOptions {
    /// `ZMQ_LINGER` in ms: how long queued outgoing messages may still be sent after the socket
    /// closes. -1 waits forever, and 0 drops them. FairMQ's channel default is 500.
    pub linger: i32,
    /// `ZMQ_SNDHWM`: the send queue length, in messages. The default is 1000.
    pub snd_buf_size: i32,
    /// `ZMQ_RCVHWM`: the receive queue length, in messages. The default is 1000.
    pub rcv_buf_size: i32,
    /// `ZMQ_SNDBUF` in bytes; 0 leaves the kernel default.
    pub snd_kernel_size: i32,
    /// `ZMQ_RCVBUF` in bytes; 0 leaves the kernel default.
    pub rcv_kernel_size: i32,
}

impl SocketOptions {
    /// FairMQ's channel default linger, in ms.
    pub const DEFAULT_LINGER: i32 = 500;
    /// FairMQ's channel default queue length, in messages.
    pub const DEFAULT_BUF_SIZE: i32 = 1000;
}

impl Default for SocketOptions {
    fn default() -> Self {
        SocketOptions {
            linger: Self::DEFAULT_LINGER,
            snd_buf_size: Self::DEFAULT_BUF_SIZE,
            rcv_buf_size: Self::DEFAULT_BUF_SIZE,
            snd_kernel_size: 0,
            rcv_kernel_size: 0,
        }
    }
}

/// How a channel address is attached: the channel's method and auto-bind settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachOptions {
    /// The method for endpoints without a `@`, `+` or `>` modifier. `None` when the channel has no
    /// method.
    pub method: Option<crate::Method>,
    /// Whether a failed tcp bind is retried on random ports of the range.
    pub auto_bind: bool,
    /// Lowest port auto-bind tries (FairMQ: 22000).
    pub port_range_min: u16,
    /// Highest port auto-bind tries, inclusive (FairMQ: 23000).
    pub port_range_max: u16,
}

impl AttachOptions {
    /// How many attempts auto-bind makes before it gives up, as in FairMQ.
    pub const AUTO_BIND_ATTEMPTS: u32 = 1000;

    /// FairMQ's defaults with the given method.
    pub fn new(method: Option<crate::Method>) -> Self {
        AttachOptions { method, auto_bind: true, port_range_min: 22000, port_range_max: 23000 }
    }
}
