//! The loops every system shares, so that the systems differ only in how they move a message:
//! a timed sender, a receiver that counts until every end marker, ping and pong, and the `touch`
//! mode's writing and checking of every byte.

use super::options::Mode;
use std::time::{Duration, Instant};

/// Messages between two clock reads of a sender: reading the clock per message (~25 ns here) would
/// cap a fast loop, but a batch must not outlast the requested time by much when messages are big.
pub fn clock_batch(size: usize, parts: usize) -> u64 {
    let bytes = (size * parts).max(1);
    ((4 << 20) / bytes).clamp(1, 64) as u64
}

/// Calls `send(seq)` until `duration` passed (checking the clock once per `batch` calls); returns the
/// number of calls. The caller sends its end marker afterwards.
pub fn send_for(duration: Duration, batch: u64, mut send: impl FnMut(u64)) -> u64 {
    let start = Instant::now();
    let mut seq = 0;
    loop {
        for _ in 0..batch {
            send(seq);
            seq += 1;
        }
        if start.elapsed() >= duration {
            return seq;
        }
    }
}

/// What a receiver counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tally {
    /// Units received (messages or multiparts; samples for iceoryx2), end markers excluded.
    pub units: u64,
    /// From the first unit to the last end marker.
    pub seconds: f64,
}

/// Receives until `senders` end markers arrived. `recv` receives one unit (touching it in `touch`
/// mode) and returns its payload bytes: 0 is an end marker.
pub fn receive_until_end(senders: usize, mut recv: impl FnMut() -> usize) -> Tally {
    let mut units = 0u64;
    let mut ends = 0;
    let mut start = None;
    while ends < senders {
        if recv() == 0 {
            ends += 1;
        } else {
            start.get_or_insert_with(Instant::now);
            units += 1;
        }
    }
    Tally { units, seconds: start.map_or(0.0, |s| s.elapsed().as_secs_f64()) }
}

/// The byte a touching sender writes into every byte of message `seq` (never 0, so a block that was
/// never written cannot pass the check).
pub fn fill_byte(seq: u64) -> u8 {
    (seq % 255) as u8 + 1
}

/// `touch` mode's write: every byte of `buf` set to `fill_byte(seq)`. Nothing in `fairmq` mode.
#[inline]
pub fn write(mode: Mode, buf: &mut [u8], seq: u64) {
    if mode == Mode::Touch {
        buf.fill(fill_byte(seq));
    }
}

/// `touch` mode's read: sums every byte of `buf` and checks that all equal the first (the sender
/// wrote one value per message), so a torn or foreign block is caught. Nothing in `fairmq` mode.
#[inline]
pub fn read(mode: Mode, buf: &[u8]) {
    if mode == Mode::Touch && !buf.is_empty() {
        let sum: u64 = buf.iter().map(|&b| u64::from(b)).sum();
        let expect = u64::from(buf[0]) * buf.len() as u64;
        assert!(
            buf[0] != 0 && sum == expect,
            "touch: a message of {} bytes does not hold one repeated non-zero byte",
            buf.len()
        );
        std::hint::black_box(sum);
    }
}

/// Round-trip times of a ping process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// Median round trip, nanoseconds.
    pub median_ns: f64,
    /// 99th percentile, nanoseconds.
    pub p99_ns: f64,
    /// Round trips measured (after the warm-up).
    pub count: u64,
}

/// Runs `round_trip(seq)` for a warm-up (a tenth of the time, at least 100 round trips) and then for
/// `duration`, timing each one (a round trip is microseconds, so one clock read each is affordable).
pub fn ping_for(duration: Duration, mut round_trip: impl FnMut(u64)) -> Latency {
    let warm = Instant::now();
    let mut seq = 0;
    while seq < 100 || warm.elapsed() < duration / 10 {
        round_trip(seq);
        seq += 1;
    }
    let mut times = Vec::with_capacity(1 << 16);
    let start = Instant::now();
    while start.elapsed() < duration {
        let t = Instant::now();
        round_trip(seq);
        times.push(t.elapsed().as_nanos() as u64);
        seq += 1;
    }
    times.sort_unstable();
    let at = |q: f64| times.get(((times.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0) as f64;
    Latency { median_ns: at(0.5), p99_ns: at(0.99), count: times.len() as u64 }
}

/// Keeps a sender attached until the harness closes our stdin (after the receiver ended): libzmq 4.3
/// may drop the tail of a stream whose sender closes while the peer's queue is full, even with
/// linger -1 (libzmq issue #4660), and an iceoryx2 publisher's samples go with it.
pub fn wait_for_stdin_close() {
    let mut sink = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
}

/// Tells the harness that this process is bound and ready (one line on stdout).
pub fn announce_ready() {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
}

/// ZeroMQ's high-water marks count messages, not bytes: 1000 queued 16 MiB messages would be 16 GB
/// (and real memory in `touch` mode). Both sides of the ZeroMQ-based systems queue at most about
/// 128 MiB (and at least one message, at most ZeroMQ's default of 1000).
pub fn zmq_hwm(size: usize, parts: usize) -> i32 {
    ((128usize << 20) / (size * parts).max(1)).clamp(1, 1000) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touch_round_trip_and_detection() {
        let mut buf = vec![0u8; 1000];
        write(Mode::Touch, &mut buf, 7);
        read(Mode::Touch, &buf);
        buf[500] ^= 1;
        assert!(std::panic::catch_unwind(|| read(Mode::Touch, &buf)).is_err());
        // fairmq mode neither writes nor reads
        let mut zero = vec![0u8; 16];
        write(Mode::Fairmq, &mut zero, 3);
        assert_eq!(zero, vec![0u8; 16]);
        read(Mode::Fairmq, &zero);
    }

    #[test]
    fn receiver_counts_until_every_end() {
        let mut script = [64, 64, 0, 64, 0].into_iter();
        let t = receive_until_end(2, || script.next().unwrap());
        assert_eq!(t.units, 3);
    }

    #[test]
    fn bounds() {
        assert_eq!(zmq_hwm(64, 1), 1000);
        assert_eq!(zmq_hwm(1 << 20, 1), 128);
        assert_eq!(zmq_hwm(16 << 20, 64), 1);
        assert_eq!(clock_batch(64, 1), 64);
        assert_eq!(clock_batch(16 << 20, 1), 1);
        assert_eq!(fill_byte(254), 255);
        assert_eq!(fill_byte(255), 1);
    }
}
