//! Waiting on several shared-memory sockets: readiness is that of their metadata sockets and lanes.

use crate::transport::socket::Socket;
use fairmq_zmq::PollError;
use fairmq_zmq::Timeout;

/// A poller over shared-memory sockets (see [`fairmq_zmq::Poller`]). A socket with input in its
/// lane is ready as one with a record on its ZeroMQ socket is.
///
/// # Examples
///
/// ```
/// use fairmq_shm::{Poller, ShmConfig, Transport};
/// use fairmq_zmq::SocketType;
///
/// let mut config = ShmConfig::new("doc", &format!("doc-poller-{}", std::process::id()));
/// config.segment_size = 16 << 20;
/// let t = Transport::new(&config)?;
/// let (a, b) = (t.socket(SocketType::Pull, "a")?, t.socket(SocketType::Pull, "b")?);
/// a.bind("inproc://doc-shm-poll-a")?;
/// b.bind("inproc://doc-shm-poll-b")?;
/// let push = t.socket(SocketType::Push, "to-a")?;
/// push.connect("inproc://doc-shm-poll-a")?;
/// push.send(&mut t.new_message_from_slice(b"for a")?, 1000)?;
///
/// let mut poller = Poller::new(&[&a, &b]);
/// assert_eq!(poller.poll(1000)?, 1);
/// assert!(poller.check_input(0) && !poller.check_input(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Poller<'a>(fairmq_zmq::Poller<'a>);

impl<'a> Poller<'a> {
    /// A poller over `sockets`; index `i` is `sockets[i]`.
    pub fn new(sockets: &[&'a Socket]) -> Self {
        let entries: Vec<_> = sockets.iter().map(|s| s.poll_entry()).collect();
        Poller(fairmq_zmq::Poller::with_entries(&entries))
    }

    /// Waits up to `timeout` (see [`fairmq_zmq::Timeout`]) for readiness; returns the number of ready sockets.
    pub fn poll(&mut self, timeout: impl Into<Timeout>) -> Result<usize, PollError> {
        self.0.poll(timeout)
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
