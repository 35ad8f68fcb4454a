//! What a transport layered on this one needs beyond the API devices use (the shared-memory
//! transport sends its metadata records as ZeroMQ frames): transfers that leave the socket's
//! counters to the layered transport, which counts its own payload bytes in
//! [`Socket::shared_counters`], and hooks that add to a poll the readiness ZeroMQ cannot see. One
//! narrow interface, imported by the layered transport only.

use crate::{Message, Socket, TransferError};

pub use crate::poller::PollHook;

/// Transfers of frames that the socket does not count.
pub trait Uncounted {
    /// Sends one frame like [`Socket::send`].
    fn send_uncounted(&self, frame: &mut Message, timeout_ms: i32) -> Result<(), TransferError>;
    /// Receives one frame like [`Socket::receive`].
    fn receive_uncounted(&self, frame: &mut Message, timeout_ms: i32) -> Result<(), TransferError>;
    /// Sends frames as one multipart like [`Socket::send_parts`] (one frame as a plain frame).
    fn send_parts_uncounted(&self, parts: &mut [Message], timeout_ms: i32) -> Result<(), TransferError>;
    /// Receives a multipart like [`Socket::receive_parts`].
    fn receive_parts_uncounted(&self, parts: &mut Vec<Message>, timeout_ms: i32) -> Result<(), TransferError>;
}

impl Uncounted for Socket {
    fn send_uncounted(&self, frame: &mut Message, timeout_ms: i32) -> Result<(), TransferError> {
        self.send_frame(frame, timeout_ms)
    }

    fn receive_uncounted(&self, frame: &mut Message, timeout_ms: i32) -> Result<(), TransferError> {
        self.receive_frame(frame, timeout_ms)
    }

    fn send_parts_uncounted(&self, parts: &mut [Message], timeout_ms: i32) -> Result<(), TransferError> {
        self.send_frames(parts, timeout_ms)
    }

    fn receive_parts_uncounted(&self, parts: &mut Vec<Message>, timeout_ms: i32) -> Result<(), TransferError> {
        self.receive_frames(parts, std::convert::identity, timeout_ms).map(|_| ())
    }
}
