//! FairMQ's rate limiter for `conditional_run` (`--rate`) and sampler message rates: it measures
//! only every `k` calls and adjusts one sleep, converging on the requested rate cheaply.

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
    /// A limiter for `rate` calls per second (`rate <= 0`: a 1 ns period).
    pub fn new(rate: f64) -> Self {
        let period = if rate > 0.0 { Duration::from_secs_f64(1.0 / rate) } else { Duration::from_nanos(1) };
        let min_k = (Duration::from_millis(5).as_nanos() / period.as_nanos().max(1)).max(1) as u64;
        RateLimiter { period, min_k, k: min_k, count: 0, sleep: Duration::ZERO, mean: None, last: Instant::now() }
    }

    /// Call once per iteration; sleeps when the loop runs too fast.
    pub fn tick(&mut self) {
        self.count += 1;
        if self.count < self.k {
            return;
        }
        let now = Instant::now();
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
        if !self.sleep.is_zero() {
            // The next measurement spans the calls and this sleep, so the sleep converges.
            std::thread::sleep(self.sleep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converges_towards_the_rate() {
        // 200 Hz for 0.5 s: about 100 ticks (generous bounds: the machine is shared).
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
