//! Per-socket transfer counters.

use std::sync::atomic::{AtomicU64, Ordering};

/// Messages and bytes moved by one socket, successful transfers only; a multipart counts as one
/// message and its bytes are the sum of its parts. Readable from any thread (rate logging does);
/// written only by the thread that uses the socket, so an update is a plain load and store (no
/// locked read-modify-write on the per-message path).
#[derive(Debug, Default)]
pub struct Counters {
    messages_tx: AtomicU64,
    bytes_tx: AtomicU64,
    messages_rx: AtomicU64,
    bytes_rx: AtomicU64,
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
}

impl Counters {
    /// Records one sent message (or multipart) of `bytes` payload bytes. Single writer: call only
    /// from the thread that uses the socket (the counters are bumped without a locked instruction).
    #[inline]
    pub fn record_tx(&self, bytes: usize) {
        bump(&self.messages_tx, 1);
        bump(&self.bytes_tx, bytes as u64);
    }

    /// Records one received message (or multipart) of `bytes` payload bytes (single writer, as
    /// [`Counters::record_tx`]).
    #[inline]
    pub fn record_rx(&self, bytes: usize) {
        bump(&self.messages_rx, 1);
        bump(&self.bytes_rx, bytes as u64);
    }

    /// The current values.
    pub fn snapshot(&self) -> CounterSnapshot {
        CounterSnapshot {
            messages_tx: self.messages_tx.load(Ordering::Relaxed),
            bytes_tx: self.bytes_tx.load(Ordering::Relaxed),
            messages_rx: self.messages_rx.load(Ordering::Relaxed),
            bytes_rx: self.bytes_rx.load(Ordering::Relaxed),
        }
    }
}

/// Single-writer increment: readers see the old or the new value, never a torn one.
#[inline]
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}
