//! Per-socket transfer counters.

use std::sync::atomic::{AtomicU64, Ordering};

/// Messages and bytes moved by one socket, successful transfers only; a multipart counts as one
/// message and its bytes are the sum of its parts. Readable from any thread (rate logging does).
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
    /// Records one sent message (or multipart) of `bytes` payload bytes.
    #[inline]
    pub fn record_tx(&self, bytes: usize) {
        self.messages_tx.fetch_add(1, Ordering::Relaxed);
        self.bytes_tx.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Records one received message (or multipart) of `bytes` payload bytes.
    #[inline]
    pub fn record_rx(&self, bytes: usize) {
        self.messages_rx.fetch_add(1, Ordering::Relaxed);
        self.bytes_rx.fetch_add(bytes as u64, Ordering::Relaxed);
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
