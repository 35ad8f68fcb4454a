//! How long a transfer or a poll may wait: FairMQ's milliseconds or Rust's durations.

use std::time::Duration;

/// How long a transfer or a poll may wait.
///
/// Every call that waits takes `impl Into<Timeout>`, so each caller writes what it has:
///
/// - FairMQ's `i32` milliseconds: `-1` (any negative) waits as long as it takes, `0` does not
///   wait, `N` waits up to N ms. The C ABI and code ported from FairMQ pass these.
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
/// assert_eq!(Timeout::from(None::<Duration>), Timeout::Forever);
/// assert_eq!(Timeout::from(-1).as_ms(), -1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Timeout {
    /// Waits as long as it takes (FairMQ's -1).
    Forever,
    /// Waits at most this long; [`Duration::ZERO`] does not wait.
    After(Duration),
}

impl Timeout {
    /// Does not wait (FairMQ's 0).
    pub const NO_WAIT: Timeout = Timeout::After(Duration::ZERO);

    /// FairMQ's milliseconds: -1 for [`Forever`](Timeout::Forever); a duration rounded up to
    /// whole milliseconds (so a positive one never becomes "no wait"), at most `i32::MAX`.
    #[inline]
    pub fn as_ms(self) -> i32 {
        match self {
            Timeout::Forever => -1,
            Timeout::After(d) => i32::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX),
        }
    }
}

impl From<i32> for Timeout {
    #[inline]
    fn from(ms: i32) -> Timeout {
        match u64::try_from(ms) {
            Ok(ms) => Timeout::After(Duration::from_millis(ms)),
            Err(_) => Timeout::Forever,
        }
    }
}

impl From<Duration> for Timeout {
    #[inline]
    fn from(d: Duration) -> Timeout {
        Timeout::After(d)
    }
}

impl From<Option<Duration>> for Timeout {
    #[inline]
    fn from(d: Option<Duration>) -> Timeout {
        d.map_or(Timeout::Forever, Timeout::After)
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
        assert_eq!(Timeout::from(-1), Timeout::Forever);
        assert_eq!(Timeout::from(-7).as_ms(), -1, "any negative waits forever, as in libzmq");
        assert_eq!(Timeout::from(Duration::from_micros(1)).as_ms(), 1, "a positive wait never becomes no wait");
        assert_eq!(Timeout::from(Duration::from_micros(1500)).as_ms(), 2);
        assert_eq!(Timeout::from(Duration::from_secs(u64::MAX)).as_ms(), i32::MAX);
        assert_eq!(Timeout::from(Some(Duration::ZERO)), Timeout::NO_WAIT);
        assert_eq!(Timeout::from(None::<Duration>), Timeout::Forever);
    }
}
