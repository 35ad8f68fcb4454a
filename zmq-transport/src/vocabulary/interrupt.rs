//! Interruption of blocked transfers: the [`Interrupter`] of a transport.
//!
//! FairMQ polls an atomic flag every 100 ms. This crate keeps the flag, because it is cheap to
//! read, and adds an eventfd:
//!
//! - Every socket of the transport hands the eventfd to the vendored libzmq
//!   (`ZMQ_FAIRMQ_WAKE_FD`). libzmq's blocking send and receive poll it beside the socket's own
//!   descriptor.
//! - Every poller puts the eventfd into its poll set.
//!
//! [`Interrupter::interrupt`] makes the eventfd readable, so all waiters wake at once. The eventfd
//! stays readable (level-triggered) until [`Interrupter::resume`]. So a call that starts waiting
//! while the transport is interrupted returns at once too.
//!
//! [`ms_until`] gives the rest of a timeout, rounded up to whole milliseconds.

use crate::vocabulary::error::SocketError;
use nix::sys::eventfd::{EfdFlags, EventFd};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The interrupt flag of one transport, with a file descriptor that is readable while it is set.
#[derive(Debug)]
pub struct Interrupter {
    flag: AtomicBool,
    /// Serialises interrupt/resume so the eventfd's counter matches the flag.
    change: Mutex<()>,
    fd: EventFd,
}

impl Interrupter {
    /// A new, not interrupted, interrupter.
    pub fn new() -> Result<Self, SocketError> {
        let fd = EventFd::from_value_and_flags(0, EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)?;
        Ok(Interrupter { flag: AtomicBool::new(false), change: Mutex::new(()), fd })
    }

    /// Sets the flag and wakes every call waiting on this transport.
    pub fn interrupt(&self) {
        let _g = self.change.lock().unwrap_or_else(|p| p.into_inner());
        if !self.flag.swap(true, Ordering::SeqCst) {
            // Cannot fail: the counter is 0 here (resume drained it), far from overflow.
            let _ = self.fd.write(1);
        }
    }

    /// Clears the flag: calls block again.
    pub fn resume(&self) {
        let _g = self.change.lock().unwrap_or_else(|p| p.into_inner());
        if self.flag.swap(false, Ordering::SeqCst) {
            // Drains the counter; a spurious EAGAIN (nothing to drain) is harmless.
            let _ = self.fd.read();
        }
    }

    /// Whether the flag is set.
    #[inline]
    pub fn is_interrupted(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// The descriptor that is readable while interrupted (for poll sets).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_fd().as_raw_fd()
    }

    /// Sleeps for `duration` or until interrupted; returns true when interrupted.
    pub fn sleep(&self, duration: Duration) -> bool {
        let deadline = Instant::now().checked_add(duration);
        loop {
            if self.is_interrupted() {
                return true;
            }
            let ms = match deadline.map(ms_until) {
                Some(Some(ms)) => ms,
                Some(None) => return false,
                None => -1, // beyond the clock's range: for ever
            };
            // A signal ends the poll early (EINTR): sleep on for the rest.
            let mut items = [zmq::PollItem::from_fd(self.raw_fd(), zmq::POLLIN)];
            let _ = zmq::poll(&mut items, ms);
        }
    }
}

/// Time left before `deadline`, rounded up to whole ms so a wait never ends just short of it;
/// `None` once it passed.
pub fn ms_until(deadline: Instant) -> Option<i64> {
    let left = deadline.checked_duration_since(Instant::now())?;
    if left.is_zero() {
        return None;
    }
    Some(i64::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn interrupt_wakes_a_sleeper_and_resume_restores_sleeping() {
        let i = Arc::new(Interrupter::new().unwrap());
        let i2 = i.clone();
        let t = std::thread::spawn(move || {
            let start = Instant::now();
            let woke = i2.sleep(Duration::from_secs(30));
            (woke, start.elapsed())
        });
        std::thread::sleep(Duration::from_millis(50));
        i.interrupt();
        let (woke, took) = t.join().unwrap();
        assert!(woke);
        assert!(took < Duration::from_secs(10), "woken by the interrupt, not the 30 s timeout");
        i.interrupt(); // idempotent
        assert!(i.sleep(Duration::from_secs(30)), "still interrupted: returns at once");
        i.resume();
        assert!(!i.is_interrupted());
        assert!(!i.sleep(Duration::from_millis(20)), "after resume a sleep runs to its end");
        i.resume(); // idempotent
        assert!(!i.is_interrupted());
    }
}
