//! What the metrics endpoint reads of a running device: [`Telemetry`].
//!
//! [`Telemetry`] holds the device's channels ([`ChannelView`]: counters, peers, lanes), its
//! transports, how often it entered each state, and since when it runs. The device's threads
//! publish these values where they change anyway: when a channel is set up, when a state is
//! entered. The endpoint's thread only reads them. A scrape therefore never touches a socket,
//! because the sockets belong to the device's thread. The interactive control's `[p]` key reads
//! the channels' peer counts here too.

use crate::state::State;
use crate::transport::Transport;
use fairmq_zmq::{Counters, TransportKind};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One sub-socket of a channel (`name[index]`), as the endpoint sees it.
#[derive(Debug, Clone)]
pub(crate) struct ChannelView {
    /// The channel's name (without the index).
    pub name: String,
    /// The sub-socket's index.
    pub index: usize,
    pub transport: TransportKind,
    pub counters: Arc<Counters>,
    /// The number of peers connected now. The transport keeps this count up to date.
    pub peers: Arc<AtomicU64>,
    /// For shmem only: the number of lanes written and read now (see
    /// `fairmq_shm::Socket::lane_counts`).
    pub lanes: Option<(Arc<AtomicU64>, Arc<AtomicU64>)>,
}

/// A device's telemetry. Each state machine has one.
#[derive(Debug)]
pub(crate) struct Telemetry {
    channels: Mutex<Vec<ChannelView>>,
    /// The transports that the device made. The device's `Context` holds the same list.
    transports: Arc<Mutex<Vec<Transport>>>,
    /// How often each state was entered, indexed by `State as usize`.
    entered: [AtomicU64; State::ALL.len()],
    started: Instant,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry {
            channels: Mutex::default(),
            transports: Arc::default(),
            entered: std::array::from_fn(|_| AtomicU64::new(0)),
            started: Instant::now(),
        }
    }
}

impl Telemetry {
    /// Replaces the device's channels with `channels`, sorted by name and index. The list is
    /// empty while the device has no channels.
    pub(crate) fn set_channels(&self, mut channels: Vec<ChannelView>) {
        channels.sort_by(|a, b| (&a.name, a.index).cmp(&(&b.name, b.index)));
        *self.channels.lock() = channels;
    }

    pub(crate) fn channels(&self) -> Vec<ChannelView> {
        self.channels.lock().clone()
    }

    /// The list of the device's transports, shared with its `Context`.
    pub(crate) fn transports(&self) -> &Arc<Mutex<Vec<Transport>>> {
        &self.transports
    }

    /// Records that `state` was entered. This happens once per state change, never per message.
    pub(crate) fn entered(&self, state: State) {
        self.entered[state as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// How often `state` was entered.
    pub(crate) fn times_entered(&self, state: State) -> u64 {
        self.entered[state as usize].load(Ordering::Relaxed)
    }

    /// Seconds since the device's state machine was made.
    pub(crate) fn uptime(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_entered_are_counted_per_state() {
        let t = Telemetry::default();
        for s in [State::Idle, State::InitializingDevice, State::Idle] {
            t.entered(s);
        }
        assert_eq!(t.times_entered(State::Idle), 2);
        assert_eq!(t.times_entered(State::InitializingDevice), 1);
        assert_eq!(t.times_entered(State::Running), 0);
        assert!(State::ALL.iter().enumerate().all(|(i, &s)| s as usize == i), "indexable by state");
    }
}
