//! How long a transfer or a poll may wait: [`Timeout`], made from FairMQ's milliseconds or from
//! Rust's durations.

use std::time::Duration;

/// How long a transfer or a poll may wait.
///
/// Every call that waits takes `impl Into<Timeout>`, so each caller writes what it has:
///
/// - FairMQ's `i32` milliseconds: `-1` (or any negative value) waits as long as it takes, `0`
///   does not wait, and `N` waits up to N ms. The C ABI and code ported from FairMQ pass these.
/// - a [`Duration`]: waits up to that long; [`Duration::ZERO`] does not wait.
/// - an `Option<Duration>`: `None` waits as long as it takes.
///
/// # Examples
///
/// ```
/// use fairmq_zmq::{Message, SocketType, TransferError, Transport, Timeout};
/// use std::time::Duration;
///
/// let t = Transport::new("doc")?;
/// let pull = t.socket(SocketType::Pull, "in")?;
/// pull.bind("inproc://doc-timeout")?;
/// let mut msg = Message::new();
/// // Nothing arrives: each of these gives up.
/// assert!(matches!(pull.receive(&mut msg, Duration::from_millis(5)), Err(TransferError::Timeout)));
/// assert!(matches!(pull.receive(&mut msg, 0), Err(TransferError::Timeout)));
/// assert!(matches!(pull.receive(&mut msg, Timeout::NO_WAIT), Err(TransferError::Timeout)));
/// assert_eq!(Timeout::from(None::<Duration>), Timeout::FOREVER);
/// assert_eq!(Timeout::from(-1).as_ms(), -1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Timeout {
    /// The timeout in FairMQ's form, kept as given. Every layer that a transfer passes through
    /// converts the timeout again. So the common case, an `i32` from FairMQ's API, must cost
    /// nothing.
    ms: i32,
}

impl Timeout {
    /// Waits as long as it takes (FairMQ's -1).
    pub const FOREVER: Timeout = Timeout { ms: -1 };
    /// Does not wait (FairMQ's 0).
    pub const NO_WAIT: Timeout = Timeout { ms: 0 };

    /// The timeout in FairMQ's milliseconds, where -1 waits as long as it takes. A `Duration` is
    /// rounded up to whole milliseconds, so a positive one never becomes "no wait". The value is
    /// at most `i32::MAX`.
    #[inline]
    pub fn as_ms(self) -> i32 {
        self.ms
    }

    /// The longest wait, `None` for [`FOREVER`](Timeout::FOREVER).
    pub fn duration(self) -> Option<Duration> {
        u64::try_from(self.ms).ok().map(Duration::from_millis)
    }
}

impl From<i32> for Timeout {
    #[inline]
    fn from(ms: i32) -> Timeout {
        Timeout { ms: ms.max(-1) }
    }
}

impl From<Duration> for Timeout {
    #[inline]
    fn from(d: Duration) -> Timeout {
        let ms = d.as_secs().saturating_mul(1000).saturating_add(u64::from(d.subsec_nanos().div_ceil(1_000_000)));
        Timeout { ms: i32::try_from(ms).unwrap_or(i32::MAX) }
    }
}

impl From<Option<Duration>> for Timeout {
    #[inline]
    fn from(d: Option<Duration>) -> Timeout {
        d.map_or(Timeout::FOREVER, Timeout::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_round_trip_and_durations_round_up() {
        for ms in [0, 1, 500, i32::MAX] {
            assert_eq!(Timeout::from(ms).as_ms(), ms);
        }
        assert_eq!(Timeout::from(-1), Timeout::FOREVER);
        assert_eq!(Timeout::from(-7).as_ms(), -1, "any negative waits forever, as in libzmq");
        assert_eq!(Timeout::from(Duration::from_micros(1)).as_ms(), 1, "a positive wait never becomes no wait");
        assert_eq!(Timeout::from(Duration::from_micros(1500)).as_ms(), 2);
        assert_eq!(Timeout::from(Duration::from_secs(u64::MAX)).as_ms(), i32::MAX);
        assert_eq!(Timeout::from(Some(Duration::ZERO)), Timeout::NO_WAIT);
        assert_eq!(Timeout::from(None::<Duration>), Timeout::FOREVER);
        assert_eq!(Timeout::FOREVER.duration(), None);
        assert_eq!(Timeout::from(Duration::from_millis(250)).duration(), Some(Duration::from_millis(250)));
    }
}
