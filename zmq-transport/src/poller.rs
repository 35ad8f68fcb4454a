//! Waiting on several sockets at once.

use crate::error::PollError;
use crate::interrupt::Interrupter;
use crate::socket::Socket;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Waits for input or output readiness on several sockets (FairMQ's `Poller`). Each socket is watched
/// for the directions its type supports. Like a transfer, a poll that would wait returns
/// [`PollError::Interrupted`] while a socket's transport is interrupted, and wakes at once when it is.
pub struct Poller<'a> {
    items: Vec<zmq::PollItem<'a>>,
    sockets: usize,
    interrupters: Vec<Arc<Interrupter>>,
}

impl std::fmt::Debug for Poller<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Poller").field("sockets", &self.sockets).finish()
    }
}

impl<'a> Poller<'a> {
    /// A poller over `sockets`; index `i` in `check_input`/`check_output` is `sockets[i]`.
    pub fn new(sockets: &[&'a Socket]) -> Self {
        let mut items: Vec<_> = sockets.iter().map(|s| s.poll_item()).collect();
        let mut interrupters: Vec<Arc<Interrupter>> = Vec::new();
        for s in sockets {
            if !interrupters.iter().any(|i| Arc::ptr_eq(i, s.interrupter())) {
                interrupters.push(s.interrupter().clone());
            }
        }
        for i in &interrupters {
            items.push(zmq::PollItem::from_fd(i.raw_fd(), zmq::POLLIN));
        }
        Poller { items, sockets: sockets.len(), interrupters }
    }

    /// Waits up to `timeout_ms` (-1: forever, 0: no wait) until some socket is ready. Returns the number
    /// of ready sockets (0 on timeout).
    pub fn poll(&mut self, timeout_ms: i32) -> Result<usize, PollError> {
        if self.items.is_empty() {
            // Nothing can ever become ready (and libzmq would sleep "forever" as -1000 us, wrapped).
            if timeout_ms > 0 {
                std::thread::sleep(Duration::from_millis(timeout_ms as u64));
            }
            return Ok(0);
        }
        let deadline = (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64));
        loop {
            let interrupted = self.interrupters.iter().any(|i| i.is_interrupted());
            // While interrupted, only look (do not wait) so ready sockets are still reported.
            let wait = match (interrupted, deadline) {
                (true, _) => 0,
                (false, None) => i64::from(timeout_ms.max(-1)),
                (false, Some(d)) => {
                    let left = d.saturating_duration_since(Instant::now());
                    i64::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i64::MAX)
                }
            };
            match zmq::poll(&mut self.items, wait) {
                Ok(_) => {}
                Err(zmq::Error::EINTR) => continue,
                Err(e) => return Err(PollError::Zmq(e)),
            }
            let ready = self.items[..self.sockets].iter().filter(|i| !i.get_revents().is_empty()).count();
            if ready > 0 {
                return Ok(ready);
            }
            if interrupted || self.interrupters.iter().any(|i| i.is_interrupted()) {
                if interrupted {
                    return Err(PollError::Interrupted);
                }
                continue; // woken by an interrupt: look once more without waiting, then report it
            }
            if timeout_ms == 0 || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(0);
            }
        }
    }

    /// Whether socket `index` had input at the last poll (false for an index out of range).
    pub fn check_input(&self, index: usize) -> bool {
        index < self.sockets && self.items[index].is_readable()
    }

    /// Whether socket `index` could send at the last poll (false for an index out of range).
    pub fn check_output(&self, index: usize) -> bool {
        index < self.sockets && self.items[index].is_writable()
    }

    /// Number of sockets polled.
    pub fn len(&self) -> usize {
        self.sockets
    }

    /// Whether the poller has no sockets.
    pub fn is_empty(&self) -> bool {
        self.sockets == 0
    }
}
