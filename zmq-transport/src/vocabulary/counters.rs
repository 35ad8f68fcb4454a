//! Per-socket transfer counters: [`Counters`], read as a [`CounterSnapshot`].
//!
//! - Messages and payload bytes count successful transfers only, in each direction. A multipart
//!   counts as one message, and its bytes are the sum of its parts. The socket records them.
//! - Timeouts and other failures count apart, by [`Direction`]. Whoever sees the failure records
//!   it with [`Counters::record_failure`]; the device framework does. An interruption is not
//!   counted, because it only means that the device changes state.
//!
//! Any thread may read the counters, as rate logging does. Only the thread that uses the socket
//! writes them. So an update is a plain load and store, with no locked read-modify-write on the
//! per-message path.

use crate::TransferError;
use std::sync::atomic::{AtomicU64, Ordering};

/// The transfer counters of one socket.
///
/// The message and byte counts include successful transfers only. A multipart counts as one
/// message, and its bytes are the sum of its parts. Failed transfers are counted apart, by
/// `Direction`, as timeouts or as other errors.
///
/// Any thread may read the counters, as rate logging does. Only the thread that uses the socket
/// writes them. So an update is a plain load and store, with no locked read-modify-write on the
/// per-message path.
#[derive(Debug, Default)]
pub struct Counters {
    messages_tx: AtomicU64,
    bytes_tx: AtomicU64,
    messages_rx: AtomicU64,
    bytes_rx: AtomicU64,
    send_timeouts: AtomicU64,
    receive_timeouts: AtomicU64,
    send_errors: AtomicU64,
    receive_errors: AtomicU64,
}

/// Which way a failed transfer went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// A send.
    Send,
    /// A receive.
    Receive,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    /// Messages sent.
    pub messages_tx: u64,
    /// Payload bytes sent.
    pub bytes_tx: u64,
    /// Messages received.
    pub messages_rx: u64,
    /// Payload bytes received.
    pub bytes_rx: u64,
    /// Sends that timed out.
    pub send_timeouts: u64,
    /// Receives that timed out.
    pub receive_timeouts: u64,
    /// Sends that failed for another reason than a timeout. Interrupted sends are not counted,
    /// because an interruption is a state change, not a failure.
    pub send_errors: u64,
    /// Receives that failed for another reason than a timeout. Interrupted receives are not
    /// counted.
    pub receive_errors: u64,
}

impl Counters {
    /// Records one sent message, or one sent multipart, of `bytes` payload bytes.
    ///
    /// Call it only from the thread that uses the socket: the counters are updated without a locked
    /// instruction, so they allow a single writer only.
    #[inline]
    pub fn record_tx(&self, bytes: usize) {
        bump(&self.messages_tx, 1);
        bump(&self.bytes_tx, bytes as u64);
    }

    /// Records one received message, or one received multipart, of `bytes` payload bytes.
    ///
    /// Call it only from the thread that uses the socket, as for [`Counters::record_tx`].
    #[inline]
    pub fn record_rx(&self, bytes: usize) {
        bump(&self.messages_rx, 1);
        bump(&self.bytes_rx, bytes as u64);
    }

    /// Records a transfer that failed with `e`, as a timeout or as an error. An interruption is not
    /// counted, because it only means that the device changes state.
    ///
    /// Call it only from the thread that uses the socket, as for [`Counters::record_tx`].
    #[cold]
    pub fn record_failure(&self, dir: Direction, e: &TransferError) {
        let c = match (dir, e) {
            (_, TransferError::Interrupted) => return,
            (Direction::Send, TransferError::Timeout) => &self.send_timeouts,
            (Direction::Receive, TransferError::Timeout) => &self.receive_timeouts,
            (Direction::Send, _) => &self.send_errors,
            (Direction::Receive, _) => &self.receive_errors,
        };
        bump(c, 1);
    }

    /// The current values.
    pub fn snapshot(&self) -> CounterSnapshot {
        CounterSnapshot {
            messages_tx: self.messages_tx.load(Ordering::Relaxed),
            bytes_tx: self.bytes_tx.load(Ordering::Relaxed),
            messages_rx: self.messages_rx.load(Ordering::Relaxed),
            bytes_rx: self.bytes_rx.load(Ordering::Relaxed),
            send_timeouts: self.send_timeouts.load(Ordering::Relaxed),
            receive_timeouts: self.receive_timeouts.load(Ordering::Relaxed),
            send_errors: self.send_errors.load(Ordering::Relaxed),
            receive_errors: self.receive_errors.load(Ordering::Relaxed),
        }
    }
}

/// Adds `n` to `c`, for a single writer. A reader sees the old or the new value, never a torn one.
#[inline]
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_counted_by_direction_and_kind_and_interruptions_not_at_all() {
        let c = Counters::default();
        c.record_failure(Direction::Send, &TransferError::Timeout);
        c.record_failure(Direction::Send, &TransferError::Timeout);
        c.record_failure(Direction::Receive, &TransferError::Timeout);
        c.record_failure(Direction::Receive, &TransferError::Interrupted);
        c.record_failure(Direction::Send, &TransferError::Transport("lost".into()));
        c.record_tx(10);
        let s = c.snapshot();
        assert_eq!((s.send_timeouts, s.receive_timeouts, s.send_errors, s.receive_errors), (2, 1, 1, 0));
        assert_eq!((s.messages_tx, s.bytes_tx, s.messages_rx), (1, 10, 0));
    }
}
