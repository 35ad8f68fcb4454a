//! The loops every system shares, so that the systems differ only in how they move a message:
//! a timed sender, a receiver that counts until every end marker, ping and pong, and the `touch`
//! mode's writing and checking of every byte.

use super::options::Mode;
use std::time::{Duration, Instant};

/// Fewest sends of a sender, whatever the time: a 1 GiB multipart can take longer than the whole
/// run, and the receiver needs messages after its warm-up to time anything.
pub const MIN_SENDS: u64 = 8;

/// Calls `send(seq)` until `duration` passed and at least [`MIN_SENDS`] times; returns the number
/// of calls. `bytes` is the payload of one call. The caller sends its end marker afterwards.
///
/// The clock is read once per batch, and the batch adapts to what a send costs: reading it per
/// message (~25 ns here) would cap a fast loop, and a batch sized from the payload alone charged that
/// cost to a zero-copy transport's large messages (16 MiB in 250 ns). A batch grows while it takes
/// under `BATCH_SHORT` and shrinks past `BATCH_LONG`; it never moves more than
/// `BATCH_BYTES`, so sends that turn slow within a batch (a queue filled up) overrun the duration
/// by a few tens of milliseconds at most.
pub fn send_for(duration: Duration, bytes: usize, mut send: impl FnMut(u64)) -> u64 {
    let start = Instant::now();
    let cap = (BATCH_BYTES / bytes.max(1) as u64).clamp(1, MAX_BATCH);
    let (mut seq, mut batch, mut last) = (0, 1u64, start);
    loop {
        for _ in 0..batch {
            send(seq);
            seq += 1;
        }
        let now = Instant::now();
        if seq >= MIN_SENDS && now.duration_since(start) >= duration {
            return seq;
        }
        batch = next_batch(batch, now.duration_since(last)).min(cap);
        last = now;
    }
}

/// A batch that took less than this doubles.
const BATCH_SHORT: Duration = Duration::from_micros(100);
/// A batch that took more than this halves.
const BATCH_LONG: Duration = Duration::from_millis(2);
const MAX_BATCH: u64 = 1024;
/// Most payload bytes of one batch.
const BATCH_BYTES: u64 = 64 << 20;

/// The size of the next batch after one of `batch` sends took `took`.
fn next_batch(batch: u64, took: Duration) -> u64 {
    if took < BATCH_SHORT {
        (batch * 2).min(MAX_BATCH)
    } else if took > BATCH_LONG {
        (batch / 2).max(1)
    } else {
        batch
    }
}

/// What a receiver counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tally {
    /// Units (messages or multiparts; samples for iceoryx2) received in the timed window.
    pub units: u64,
    /// Length of the timed window.
    pub seconds: f64,
}

/// Receives until `senders` end markers arrived. `recv` receives one unit (touching it in `touch`
/// mode) and returns its payload bytes: 0 is an end marker.
///
/// Units arriving within `warmup` of the first are not timed (fresh segments, page faults, cold
/// caches and connection set-up belong to no steady state). The timed window opens when the first
/// unit after the warm-up has arrived, which is therefore not counted (it ends the interval before
/// the window: counting it would credit a whole transfer to a zero-length window), and closes at
/// the last end marker, which each sender sends right after its last unit. The clock is read per
/// unit only during the warm-up.
pub fn receive_until_end(senders: usize, warmup: Duration, mut recv: impl FnMut() -> usize) -> Tally {
    let mut ends = 0;
    let mut first: Option<Instant> = None;
    let mut window: Option<Instant> = None;
    let mut units = 0u64;
    while ends < senders {
        if recv() == 0 {
            ends += 1;
        } else if window.is_some() {
            units += 1;
        } else {
            let now = Instant::now();
            let first = *first.get_or_insert(now);
            if now.duration_since(first) >= warmup {
                window = Some(now);
            }
        }
    }
    Tally { units, seconds: window.map_or(0.0, |w| w.elapsed().as_secs_f64()) }
}

/// Passes messages on until `senders` end markers passed (`forward()` moves one and returns its
/// bytes, 0 for an end marker), then waits for stdin to close, as a sender does.
pub fn forward_until_end(senders: usize, mut forward: impl FnMut() -> usize) {
    let mut ends = 0;
    while ends < senders {
        if forward() == 0 {
            ends += 1;
        }
    }
    wait_for_stdin_close();
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

/// Busy-waiting for a peer: spin a little, then give the CPU away on every further attempt.
///
/// Pure spinning is right with a core per process (iceoryx2's own benchmark does it), but on a
/// machine where the peer shares our core it burns whole scheduler slices: a round trip becomes
/// milliseconds and a stream moves one receive buffer per slice. Yielding after a short spin costs
/// nothing on an idle machine (the peer answers within the spin) and lets a peer on our core run.
#[derive(Debug, Default)]
pub struct Spin(u32);

impl Spin {
    /// Spins before the first yield (a `pause` is tens of ns: about 10 us in all).
    const SPINS: u32 = 256;

    /// One more wait.
    #[inline]
    pub fn wait(&mut self) {
        if self.0 < Self::SPINS {
            self.0 += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
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

/// Runs `round_trip(seq)` for `warmup` (and at least 100 round trips), then for `duration`, timing
/// each one (a round trip is microseconds, so one clock read each is affordable).
pub fn ping_for(warmup: Duration, duration: Duration, mut round_trip: impl FnMut(u64)) -> Latency {
    let warm = Instant::now();
    let mut seq = 0;
    while seq < 100 || warm.elapsed() < warmup {
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

/// Runs `round_trip(seq)` exactly `count` times, timing each one (for a run whose cost is
/// counted per round trip: the same number of round trips whatever the machine's speed).
pub fn ping_count(count: u64, mut round_trip: impl FnMut(u64)) -> Latency {
    let mut times = Vec::with_capacity(count.min(1 << 20) as usize);
    for seq in 0..count {
        let t = Instant::now();
        round_trip(seq);
        times.push(t.elapsed().as_nanos() as u64);
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
        // The first unit opens the window (no warm-up), the others are counted.
        let mut script = [64, 64, 0, 64, 0].into_iter();
        let t = receive_until_end(2, Duration::ZERO, || script.next().unwrap());
        assert_eq!(t.units, 2);
        // Units within the warm-up are not counted.
        let mut script = [64, 64, 64, 0].into_iter();
        let t = receive_until_end(1, Duration::from_secs(3600), || script.next().unwrap());
        assert_eq!((t.units, t.seconds), (0, 0.0));
    }

    #[test]
    fn batches_follow_the_cost_of_a_send() {
        assert_eq!(next_batch(1, Duration::from_micros(1)), 2, "fast sends: fewer clock reads");
        assert_eq!(next_batch(MAX_BATCH, Duration::ZERO), MAX_BATCH);
        assert_eq!(next_batch(64, Duration::from_micros(500)), 64, "within the band: kept");
        assert_eq!(next_batch(64, Duration::from_millis(10)), 32, "slow sends: more clock reads");
        assert_eq!(next_batch(1, Duration::from_secs(1)), 1);
        // Sends slower than a long batch are timed one by one: the loop ends at the first clock
        // read past the duration, here at MIN_SENDS (8 x 3 ms > 20 ms).
        let n = send_for(Duration::from_millis(20), 64, |_| std::thread::sleep(Duration::from_millis(3)));
        assert_eq!(n, MIN_SENDS);
        // Large payloads: a batch never holds more than BATCH_BYTES.
        let mut calls = 0;
        send_for(Duration::ZERO, 16 << 20, |_| calls += 1);
        assert!((MIN_SENDS..=MIN_SENDS + 3).contains(&calls), "batches of 16 MiB sends hold at most 4: {calls}");
    }

    #[test]
    fn bounds() {
        assert_eq!(zmq_hwm(64, 1), 1000);
        assert_eq!(zmq_hwm(1 << 20, 1), 128);
        assert_eq!(zmq_hwm(16 << 20, 64), 1);
        assert_eq!(fill_byte(254), 255);
        assert_eq!(fill_byte(255), 1);
    }
}
