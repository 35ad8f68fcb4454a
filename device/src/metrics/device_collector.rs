//! The device's own metrics: its state, the states it entered, how long it runs, errors logged;
//! and its channels' transfers.

use super::families::{Family, Labels, Value};
use crate::properties::Properties;
use crate::state::State;
use crate::state_machine::StateMachine;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use std::sync::atomic::Ordering;
use std::sync::Arc;

const STATE: Family = Family::gauge("device_state", "Whether the device is in this state now (1) or not (0)");
const ENTERED: Family = Family::counter(
    "device_transitions",
    "How often the device entered this state (transient states show here, between scrapes)",
);
const UPTIME: Family = Family::gauge("device_uptime", "Time since the device's state machine started").in_seconds();
const ERRORS: Family = Family::counter("device_errors", "Error and fatal log lines the device's process wrote");

const SENT: Family = Family::counter("channel_sent_messages", "Messages sent (a multipart counts once)");
const SENT_BYTES: Family = Family::counter("channel_sent", "Payload bytes sent").in_bytes();
const RECEIVED: Family = Family::counter("channel_received_messages", "Messages received (a multipart counts once)");
const RECEIVED_BYTES: Family = Family::counter("channel_received", "Payload bytes received").in_bytes();
const SEND_TIMEOUTS: Family = Family::counter("channel_send_timeouts", "Sends that timed out");
const RECEIVE_TIMEOUTS: Family = Family::counter("channel_receive_timeouts", "Receives that timed out");
const SEND_ERRORS: Family =
    Family::counter("channel_send_errors", "Sends that failed (not timeouts, not interruptions)");
const RECEIVE_ERRORS: Family =
    Family::counter("channel_receive_errors", "Receives that failed (not timeouts, not interruptions)");
const PEERS: Family = Family::gauge("channel_peers", "Peers connected to the channel's socket now");
const LANES: Family = Family::gauge(
    "shm_lanes",
    "Lanes (rings in the segment between single peers) the channel's shmem socket writes or reads now",
);

/// A collector that reads the device's state machine and channels at each scrape.
#[derive(Debug)]
pub(crate) struct DeviceCollector {
    pub sm: Arc<StateMachine>,
    pub config: Arc<Properties>,
}

/// Returns the value of the `device` label, which is the device's id. The id is read at each
/// scrape because a plugin may rename the device.
pub(crate) fn device_label(config: &Properties) -> String {
    config.get_or::<String>("id", String::new()).unwrap_or_default()
}

impl Collector for DeviceCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let device = device_label(&self.config);
        let of = |extra: &[(&'static str, String)]| -> Labels {
            let mut l = vec![("device", device.clone())];
            l.extend_from_slice(extra);
            l
        };
        let now = self.sm.current_state();
        let t = self.sm.telemetry();
        let per_state = |v: &dyn Fn(State) -> Value| {
            State::ALL.into_iter().map(|s| (of(&[("state", s.name().to_owned())]), v(s))).collect::<Vec<_>>()
        };
        STATE.write(&mut enc, per_state(&|s| Value::Int(u64::from(s == now))))?;
        ENTERED.write(&mut enc, per_state(&|s| Value::Int(t.times_entered(s))))?;
        UPTIME.write(&mut enc, [(of(&[]), Value::Float(t.uptime()))])?;
        ERRORS.write(&mut enc, [(of(&[]), Value::Int(crate::logging::errors_logged()))])?;

        let channels = t.channels();
        let labels: Vec<Labels> = channels
            .iter()
            .map(|c| {
                of(&[
                    ("channel", c.name.clone()),
                    ("index", c.index.to_string()),
                    ("transport", c.transport.to_string()),
                ])
            })
            .collect();
        let counts: Vec<_> = channels.iter().map(|c| c.counters.snapshot()).collect();
        let each = |f: fn(&fairmq_zmq::CounterSnapshot) -> u64| {
            labels.iter().cloned().zip(counts.iter().map(move |c| Value::Int(f(c)))).collect::<Vec<_>>()
        };
        SENT.write(&mut enc, each(|c| c.messages_tx))?;
        SENT_BYTES.write(&mut enc, each(|c| c.bytes_tx))?;
        RECEIVED.write(&mut enc, each(|c| c.messages_rx))?;
        RECEIVED_BYTES.write(&mut enc, each(|c| c.bytes_rx))?;
        SEND_TIMEOUTS.write(&mut enc, each(|c| c.send_timeouts))?;
        RECEIVE_TIMEOUTS.write(&mut enc, each(|c| c.receive_timeouts))?;
        SEND_ERRORS.write(&mut enc, each(|c| c.send_errors))?;
        RECEIVE_ERRORS.write(&mut enc, each(|c| c.receive_errors))?;
        let peers = channels.iter().map(|c| Value::Int(c.peers.load(Ordering::Relaxed)));
        PEERS.write(&mut enc, labels.iter().cloned().zip(peers))?;
        let lanes = labels.iter().zip(&channels).filter_map(|(l, c)| c.lanes.as_ref().map(|lanes| (l, lanes)));
        let lanes = lanes.flat_map(|(l, (write, read))| {
            [("write", write), ("read", read)].map(|(direction, n)| {
                let mut l = l.clone();
                l.push(("direction", direction.to_owned()));
                (l, Value::Int(n.load(Ordering::Relaxed)))
            })
        });
        LANES.write(&mut enc, lanes)?;
        Ok(())
    }
}
