//! Benchmarks of fairmq-rs: criterion micro-benchmarks (`benches/`) and a cross-process harness
//! (`src/bin/throughput.rs`, built from the [`harness`] modules) that compares fairmq-shm, fairmq-zmq,
//! bare libzmq and (with the `iceoryx2` feature) iceoryx2 side by side. See `benches/README.md`.

#![warn(missing_docs, unreachable_pub)]
pub mod harness;
pub mod session;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Counts messages a receiver thread has taken, so a timed batch ends only when all were delivered.
#[derive(Clone, Debug, Default)]
pub struct Delivered {
    count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Delivered {
    /// Called by the receiver for every message; returns true when the receiver should end.
    #[inline]
    pub fn add_one(&self) -> bool {
        self.count.fetch_add(1, Ordering::Release);
        self.stop.load(Ordering::Relaxed)
    }

    /// The count at which a batch of `n` more messages will be complete.
    pub fn expect(&self, n: u64) -> u64 {
        self.count.load(Ordering::Acquire) + n
    }

    /// Waits (spinning, then yielding) until `target` messages were received.
    pub fn wait_for(&self, target: u64) {
        while self.count.load(Ordering::Acquire) < target {
            std::thread::yield_now();
        }
    }

    /// Times a batch: `send(n)` sends `n` messages, and the batch ends only when the receiver has
    /// taken all of them (the target is fixed before the first send, so nothing queued but
    /// undelivered is ever counted).
    pub fn time_batch(&self, n: u64, send: impl FnOnce(u64)) -> std::time::Duration {
        let start = std::time::Instant::now();
        let target = self.expect(n);
        send(n);
        self.wait_for(target);
        start.elapsed()
    }

    /// Tells the receiver to end after its next message.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A temporary directory for ipc endpoints, removed on drop.
pub fn ipc_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}
