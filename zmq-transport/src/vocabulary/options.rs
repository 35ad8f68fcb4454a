//! Channel properties that become ZeroMQ socket options, with FairMQ's channel defaults.
//!
//! - [`SocketOptions`] holds the linger, the queue lengths and the kernel buffer sizes that a
//!   channel sets on its socket.
//! - [`AttachOptions`] says how a channel address is attached: the channel's method, and the port
//!   range of auto-bind.

/// Socket options a channel sets (FairMQ's `Channel::Init`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketOptions {
    /// `ZMQ_LINGER` in ms: how long queued outgoing messages may still leave after close
    /// (-1 forever, 0 drop). FairMQ channel default 500.
    pub linger: i32,
    /// `ZMQ_SNDHWM`: send queue length in messages. Default 1000.
    pub snd_buf_size: i32,
    /// `ZMQ_RCVHWM`: receive queue length in messages. Default 1000.
    pub rcv_buf_size: i32,
    /// `ZMQ_SNDBUF` in bytes; 0 leaves the kernel default.
    pub snd_kernel_size: i32,
    /// `ZMQ_RCVBUF` in bytes; 0 leaves the kernel default.
    pub rcv_kernel_size: i32,
}

impl SocketOptions {
    /// FairMQ's channel default linger, ms.
    pub const DEFAULT_LINGER: i32 = 500;
    /// FairMQ's channel default queue length, messages.
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
    /// Method for endpoints without `@`/`+`/`>`; `None` when the channel has none.
    pub method: Option<crate::Method>,
    /// Retry a failed tcp bind on random ports of the range.
    pub auto_bind: bool,
    /// Lowest port auto-bind tries (FairMQ: 22000).
    pub port_range_min: u16,
    /// Highest port auto-bind tries, inclusive (FairMQ: 23000).
    pub port_range_max: u16,
}

impl AttachOptions {
    /// FairMQ's attempts before auto-bind gives up.
    pub const AUTO_BIND_ATTEMPTS: u32 = 1000;

    /// FairMQ's defaults with the given method.
    pub fn new(method: Option<crate::Method>) -> Self {
        AttachOptions { method, auto_bind: true, port_range_min: 22000, port_range_max: 23000 }
    }
}
