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

/// The interrupt flag of one transport, with a file descriptor that is readable while the flag is
/// set.
#[derive(Debug)]
pub struct Interrupter {
    flag: AtomicBool,
    /// Serialises `Interrupter::interrupt` and `Interrupter::resume`, so that the eventfd's counter
    /// always matches the flag.
    change: Mutex<()>,
    fd: EventFd,
}

impl Interrupter {
    /// Creates an interrupter that is not interrupted.
    pub fn new() -> Result<Self, SocketError> {
        let fd = EventFd::from_value_and_flags(0, EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)?;
        Ok(Interrupter { flag: AtomicBool::new(false), change: Mutex::new(()), fd })
    }

    /// Sets the flag and wakes every call waiting on this transport.
    pub fn interrupt(&self) {
        let _g = self.change.lock().unwrap_or_else(|p| p.into_inner());
        if !self.flag.swap(true, Ordering::SeqCst) {
            // This write cannot fail. The flag was clear, so the counter is 0 here
            // (`Interrupter::resume` drained it), far from overflow.
            let _ = self.fd.write(1);
        }
    }

    /// Clears the flag, so that calls block again.
    pub fn resume(&self) {
        let _g = self.change.lock().unwrap_or_else(|p| p.into_inner());
        if self.flag.swap(false, Ordering::SeqCst) {
            // The read drains the counter. If it fails with EAGAIN because there is nothing to
            // drain, no harm is done.
            let _ = self.fd.read();
        }
    }

    /// Whether the flag is set.
    #[inline]
    pub fn is_interrupted(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// The file descriptor that is readable while the transport is interrupted, for poll sets.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_fd().as_raw_fd()
    }

    /// Sleeps for `duration`, or until the transport is interrupted. Returns `true` when the sleep
    /// was interrupted.
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
            // A signal can end the poll early with EINTR. The loop then sleeps for the rest of the
            // time.
            let mut items = [zmq::PollItem::from_fd(self.raw_fd(), zmq::POLLIN)];
            let _ = zmq::poll(&mut items, ms);
        }
    }
}

/// The time left before `deadline`, in milliseconds, or `None` once the deadline has passed. The
/// time is rounded up to whole milliseconds, so that a wait never ends just short of the deadline.
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
