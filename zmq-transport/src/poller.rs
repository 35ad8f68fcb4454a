//! Waiting on several sockets at once: the [`Poller`] (FairMQ's `Poller`).
//!
//! A [`Poller`] watches each socket for the directions that its type supports: input, output or
//! both. [`Poller::poll`] waits until some socket is ready, or until its timeout. Then
//! [`Poller::check_input`] and [`Poller::check_output`] tell which sockets were ready.
//!
//! The poll set also holds the interrupt descriptor of each socket's transport, so an interrupt
//! wakes a waiting poll at once. While a transport is interrupted, a poll only looks and does not
//! wait. It reports the sockets that are ready, or else [`PollError::Interrupted`].
//!
//! A transport layered on this one makes a [`PollEntry`] for each of its sockets, with its
//! [`PollHook`]. The hook adds the readiness that ZeroMQ cannot see: input that does not pass
//! through the socket, and frames on the socket that carry no input.

use crate::layered::PollHook;
use crate::socket::Socket;
use crate::vocabulary::error::PollError;
use crate::vocabulary::interrupt::Interrupter;
use crate::vocabulary::timeout::Timeout;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Waits for input or output readiness on several sockets (FairMQ's `Poller`).
///
/// The poller watches each socket for the directions its type supports. An interrupt of a socket's
/// transport wakes a waiting poll at once, as it wakes a transfer. While a socket's transport is
/// interrupted, a poll that would wait returns [`PollError::Interrupted`].
///
/// # Examples
///
/// ```
/// use fairmq_zmq::{Message, Poller, SocketType, Transport};
/// use std::time::Duration;
///
/// let t = Transport::new("doc")?;
/// let (a, b) = (t.socket(SocketType::Pull, "a")?, t.socket(SocketType::Pull, "b")?);
/// a.bind("inproc://doc-poll-a")?;
/// b.bind("inproc://doc-poll-b")?;
/// let push = t.socket(SocketType::Push, "to-b")?;
/// push.connect("inproc://doc-poll-b")?;
/// push.send(&mut Message::from_slice(b"for b"), 1000)?;
///
/// let mut poller = Poller::new(&[&a, &b]);
/// assert_eq!(poller.poll(Duration::from_secs(1))?, 1, "one socket is ready");
/// assert!(!poller.check_input(0) && poller.check_input(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Poller<'a> {
    items: Vec<zmq::PollItem<'a>>,
    sockets: usize,
    interrupters: Vec<Arc<Interrupter>>,
    hooks: Vec<Option<&'a dyn PollHook>>,
    /// Readiness of hooked sockets at the last poll: (input, output).
    hooked: Vec<(bool, bool)>,
}

/// One socket of a [`Poller`], with the [`PollHook`] of the transport layered on it, if there is
/// one. A layered transport makes the entries of its own sockets. An entry does not give out the
/// socket under it.
#[derive(Clone, Copy)]
pub struct PollEntry<'a> {
    socket: &'a Socket,
    hook: Option<&'a dyn PollHook>,
}

impl<'a> PollEntry<'a> {
    /// A socket polled as it is.
    pub fn plain(socket: &'a Socket) -> Self {
        PollEntry { socket, hook: None }
    }

    /// A socket whose readiness `hook` completes.
    pub fn hooked(socket: &'a Socket, hook: &'a dyn PollHook) -> Self {
        PollEntry { socket, hook: Some(hook) }
    }
}

impl std::fmt::Debug for PollEntry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollEntry").field("socket", self.socket).field("hooked", &self.hook.is_some()).finish()
    }
}

impl std::fmt::Debug for Poller<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Poller").field("sockets", &self.sockets).finish()
    }
}

impl<'a> Poller<'a> {
    /// A poller over `sockets`; index `i` in `check_input`/`check_output` is `sockets[i]`.
    pub fn new(sockets: &[&'a Socket]) -> Self {
        Self::with_entries(&sockets.iter().map(|&s| PollEntry::plain(s)).collect::<Vec<_>>())
    }

    /// A poller over sockets of which some have a [`PollHook`] (see [`PollEntry`]).
    pub fn with_entries(entries: &[PollEntry<'a>]) -> Self {
        let sockets: Vec<&'a Socket> = entries.iter().map(|e| e.socket).collect();
        let hooks = entries.iter().map(|e| e.hook).collect();
        let mut items: Vec<_> = sockets.iter().map(|s| s.poll_item()).collect();
        let mut interrupters: Vec<Arc<Interrupter>> = Vec::new();
        for s in &sockets {
            if !interrupters.iter().any(|i| Arc::ptr_eq(i, s.interrupter())) {
                interrupters.push(s.interrupter().clone());
            }
        }
        for i in &interrupters {
            items.push(zmq::PollItem::from_fd(i.raw_fd(), zmq::POLLIN));
        }
        Poller { items, sockets: sockets.len(), interrupters, hooks, hooked: vec![(false, false); sockets.len()] }
    }

    /// Waits until some socket is ready, for at most `timeout` (a [`Timeout`]; -1: forever, 0: no
    /// wait). Returns the number of ready sockets, or 0 on timeout.
    pub fn poll(&mut self, timeout: impl Into<Timeout>) -> Result<usize, PollError> {
        let timeout_ms = timeout.into().as_ms();
        if self.items.is_empty() {
            // Nothing can ever become ready. libzmq is not called, because it would sleep
            // "forever" here: a wait of -1 ms becomes -1000 us, which wraps.
            if timeout_ms > 0 {
                std::thread::sleep(Duration::from_millis(timeout_ms as u64));
            }
            return Ok(0);
        }
        let deadline = (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64));
        loop {
            let interrupted = self.interrupters.iter().any(|i| i.is_interrupted());
            // While a transport is interrupted, the poll only looks and does not wait. So ready
            // sockets are still reported.
            let wait = match (interrupted, deadline) {
                (true, _) => 0,
                (false, None) => i64::from(timeout_ms.max(-1)),
                (false, Some(d)) => {
                    let left = d.saturating_duration_since(Instant::now());
                    i64::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i64::MAX)
                }
            };
            let (early, wait) = self.before_wait(wait);
            let polled = zmq::poll(&mut self.items, wait);
            self.after_wait(early, wait);
            match polled {
                Ok(_) => {}
                Err(zmq::Error::EINTR) => continue,
                Err(e) => return Err(PollError::Zmq(e)),
            }
            let ready = (0..self.sockets).filter(|&i| self.check_input(i) || self.check_output(i)).count();
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
        match self.hooks.get(index) {
            Some(Some(_)) => self.hooked[index].0,
            Some(None) => self.items[index].is_readable(),
            None => false,
        }
    }

    /// Whether socket `index` could send at the last poll (false for an index out of range).
    pub fn check_output(&self, index: usize) -> bool {
        match self.hooks.get(index) {
            Some(Some(_)) => self.hooked[index].1,
            Some(None) => self.items[index].is_writable(),
            None => false,
        }
    }

    /// Prepares the hooked sockets for a wait. When a hook finds input ready, the poll does not
    /// wait. Otherwise `Poller::before_wait` arms the hooks. Returns whether input was found
    /// early, and the wait to use.
    fn before_wait(&mut self, wait: i64) -> (bool, i64) {
        let mut early = false;
        for (i, h) in self.hooks.iter().enumerate() {
            if let Some(h) = h {
                self.hooked[i].0 = h.input_ready();
                early |= self.hooked[i].0;
            }
        }
        if early || wait == 0 {
            return (early, 0);
        }
        for (i, h) in self.hooks.iter().enumerate() {
            if let Some(h) = h {
                if !h.arm() {
                    // This hook's input arrived in the meantime.
                    self.hooked[i].0 = true;
                    self.hooks[..i].iter().flatten().for_each(|h| h.disarm());
                    return (true, 0);
                }
            }
        }
        (false, wait)
    }

    /// Disarms what `before_wait` armed and computes the hooked sockets' readiness.
    fn after_wait(&mut self, early: bool, wait: i64) {
        let armed = !early && wait != 0;
        for (i, h) in self.hooks.iter().enumerate() {
            if let Some(h) = h {
                // After a wait, the socket's own input may be only wake frames, so the hook
                // decides. Without a wait, what `before_wait` found stands.
                if armed {
                    h.disarm();
                    self.hooked[i].0 = h.input_ready();
                }
                self.hooked[i].1 = self.items[i].is_writable() && h.output_ready();
            }
        }
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
