//! Channel rate logging in RUNNING, in FairMQ's format:
//! `<name>: in: <msg/s> (<MB/s> MB) out: <msg/s> (<MB/s> MB)`.
//!
//! In RUNNING, the device starts a thread that runs [`log_rates`] for every channel whose
//! `rateLogging` is above 0. The thread logs each such channel every `rateLogging` seconds, until
//! a transition is pending.

use crate::state_machine::StateMachine;
use fairmq_zmq::Counters;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Logs the rates of `chans` (name, interval in seconds, counters) until a transition is pending.
/// Unlike FairMQ, an interval of N seconds divides by the N seconds it covers.
pub(crate) fn log_rates(sm: &StateMachine, chans: &[(String, i32, Arc<Counters>)]) {
    let width = chans.iter().map(|c| c.0.len()).max().unwrap_or(0);
    let mut last: Vec<_> = chans.iter().map(|c| (c.2.snapshot(), Instant::now(), 0i32)).collect();
    while sm.wait_for(Duration::from_secs(1)) {
        for (i, (name, interval, counters)) in chans.iter().enumerate() {
            let (prev, since, ticks) = &mut last[i];
            *ticks += 1;
            if *ticks < *interval {
                continue;
            }
            *ticks = 0;
            let now = counters.snapshot();
            let secs = since.elapsed().as_secs_f64().max(1e-9);
            let rate = |a: u64, b: u64| (a.saturating_sub(b)) as f64 / secs;
            log::info!(
                "{name:>width$}: in: {} ({} MB) out: {} ({} MB)",
                rate(now.messages_rx, prev.messages_rx),
                rate(now.bytes_rx, prev.bytes_rx) / 1e6,
                rate(now.messages_tx, prev.messages_tx),
                rate(now.bytes_tx, prev.bytes_tx) / 1e6
            );
            *prev = now;
            *since = Instant::now();
        }
    }
}
