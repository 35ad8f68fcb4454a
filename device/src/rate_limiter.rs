//! FairMQ's rate limiter: [`RateLimiter`].
//!
//! The device uses it to limit the calls of `conditional_run` to `--rate` per second. The
//! benchmark sampler uses it to limit its message rate. [`RateLimiter::tick`] measures the time
//! only every `k` calls and adjusts one sleep, so the loop converges on the requested rate
//! cheaply.

use std::time::{Duration, Instant};

/// Limits how often [`tick`](RateLimiter::tick) returns per second.
#[derive(Debug)]
pub struct RateLimiter {
    period: Duration,
    min_k: u64,
    k: u64,
    count: u64,
    sleep: Duration,
    mean: Option<Duration>,
    last: Instant,
}

impl RateLimiter {
    /// Creates a limiter for `rate` calls per second.
    ///
    /// A `rate` of 0 or less gives a period of 1 ns. A rate below one call an hour becomes one call
    /// an hour, so that the arithmetic on the period cannot overflow.
    pub fn new(rate: f64) -> Self {
        const LONGEST: Duration = Duration::from_secs(3600);
        let period = if rate > 0.0 {
            Duration::try_from_secs_f64(1.0 / rate).map_or(LONGEST, |p| p.min(LONGEST))
        } else {
            Duration::from_nanos(1)
        };
        let min_k = (Duration::from_millis(5).as_nanos() / period.as_nanos().max(1)).max(1) as u64;
        RateLimiter { period, min_k, k: min_k, count: 0, sleep: Duration::ZERO, mean: None, last: Instant::now() }
    }

    /// Call `tick` once per iteration of the loop. It sleeps when the loop runs too fast.
    pub fn tick(&mut self) {
        self.count += 1;
        if self.count < self.k {
            return;
        }
        let sleep = self.adjust(Instant::now());
        if !sleep.is_zero() {
            // The next measurement spans both the calls and this sleep. `RateLimiter::adjust` can
            // therefore correct the sleep until it converges.
            std::thread::sleep(sleep);
        }
    }

    /// Measures the time of the last `k` calls, which end at `now`. Returns the sleep to take once
    /// per measurement, that is once every `k` calls.
    fn adjust(&mut self, now: Instant) -> Duration {
        let w = (now - self.last) / self.k as u32;
        self.last = now;
        self.count = 0;
        let w = match self.mean {
            None => w,
            Some(m) => (m + 3 * w) / 4,
        };
        self.mean = Some(w);
        let p = self.period;
        if w > p * 65 / 64 {
            if !self.sleep.is_zero() {
                self.sleep = self.sleep.saturating_sub((w - p) * self.k as u32 / 2);
            } else {
                let max_k = (Duration::from_secs(1).as_nanos() / p.as_nanos().max(1)).max(1) as u64;
                self.k = max_k.min((5 * self.k).div_ceil(4));
            }
        } else if w < p * 63 / 64 {
            if self.k > self.min_k {
                self.k = self.min_k.max(3 * self.k / 4);
            } else {
                self.sleep += (p - w) * self.k as u32 * 7 / 8;
            }
        }
        self.sleep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_rates_do_not_panic() {
        for rate in [1e-20, 3e-18, f64::MIN_POSITIVE, 1e300, f64::INFINITY, f64::NAN, -1.0] {
            let mut r = RateLimiter::new(rate);
            assert!(r.period <= Duration::from_secs(3600), "{rate}");
            let start = r.last;
            for i in [1u64, 1000, 1 << 40] {
                r.adjust(start + Duration::from_nanos(i)); // computes without sleeping
            }
        }
    }

    #[test]
    fn converges_towards_the_rate() {
        // 200 Hz for 0.5 s gives about 100 ticks. The bounds are generous because the machine is
        // shared.
        let mut r = RateLimiter::new(200.0);
        let start = Instant::now();
        let mut n = 0;
        while start.elapsed() < Duration::from_millis(500) {
            r.tick();
            n += 1;
        }
        assert!(n < 1000, "rate not limited: {n} ticks");
        assert!(n > 10, "far too slow: {n} ticks");
    }
}
