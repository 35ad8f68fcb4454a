//! Waiting on several shared-memory sockets: readiness is that of their metadata sockets and lanes.

use crate::transport::socket::Socket;
use fairmq_zmq::PollError;

/// A poller over shared-memory sockets (see [`fairmq_zmq::Poller`]).
#[derive(Debug)]
pub struct Poller<'a>(fairmq_zmq::Poller<'a>);

impl<'a> Poller<'a> {
    /// A poller over `sockets`; index `i` is `sockets[i]`.
    pub fn new(sockets: &[&'a Socket]) -> Self {
        let entries: Vec<_> = sockets.iter().map(|s| s.poll_entry()).collect();
        Poller(fairmq_zmq::Poller::with_entries(&entries))
    }

    /// Waits up to `timeout_ms` for readiness; returns the number of ready sockets.
    pub fn poll(&mut self, timeout_ms: i32) -> Result<usize, PollError> {
        self.0.poll(timeout_ms)
    }

    /// Whether socket `index` had input at the last poll.
    pub fn check_input(&self, index: usize) -> bool {
        self.0.check_input(index)
    }

    /// Whether socket `index` could send at the last poll.
    pub fn check_output(&self, index: usize) -> bool {
        self.0.check_output(index)
    }
}
