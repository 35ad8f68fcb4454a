//! Metrics for Prometheus: the endpoint that `--metrics-address HOST:PORT` starts.
//!
//! A device program started with `--metrics-address HOST:PORT` serves `GET /metrics` there. It
//! answers in the Prometheus text format (0.0.4), or in OpenMetrics when the scraper asks for it
//! (Prometheus does). Port 0 picks a free port; the program logs the address and writes it back
//! into the option. Every value is read at scrape time from what the device keeps anyway. Without
//! the option there is no endpoint, no thread and no cost. The endpoint is read-only: it exposes
//! counts and states, never payload. Still, bind it to loopback or to a trusted interface.
//!
//! - [`Endpoint`] is a running endpoint. [`start_for_sessions`] starts the one of
//!   `fairmq-shmmonitor`.
//! - [`targets`] writes Prometheus' file_sd lists of endpoints.
//!
//! A device exports these metrics:
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `fairmq_device_state` | gauge | `device`, `state` | 1 for the current state, 0 for the others |
//! | `fairmq_device_transitions_total` | counter | `device`, `state` | entries into each state |
//! | `fairmq_device_uptime_seconds` | gauge | `device` | time since the state machine started |
//! | `fairmq_device_errors_total` | counter | `device` | error and fatal log lines of the process |
//! | `fairmq_channel_{sent,received}_messages_total` | counter | `device`, `channel`, `index`, `transport` | messages moved (a multipart once) |
//! | `fairmq_channel_{sent,received}_bytes_total` | counter | same | payload bytes moved |
//! | `fairmq_channel_{send,receive}_{timeouts,errors}_total` | counter | same | transfers that timed out, or failed otherwise |
//! | `fairmq_channel_peers` | gauge | same | peers connected now |
//! | `fairmq_shm_lanes` | gauge | same, and `direction` (`write`, `read`) | shmem lanes (rings between single peers) open now |
//! | `fairmq_shm_segment_{size,free,used,largest_free_block,cached}_bytes` | gauge | `device`, `segment` | the segment the device allocates in |
//! | `fairmq_shm_messages_in_flight` | gauge | `device`, `segment` | messages handed to sockets, not taken yet |
//! | `fairmq_shm_allocation_{retries,failures}_total` | counter | `device`, `segment` | allocations that waited, or failed |
//! | `fairmq_region_size_bytes`, `fairmq_region_pieces_in_flight`, `fairmq_region_acks_pending` | gauge | `device`, `transport`, `region` | the unmanaged regions the device maps |
//! | `process_*` | | | client_golang's process metrics: CPU, memory, descriptors, threads, start time |
//!
//! `fairmq-shmmonitor --metrics-address` exports every session of its host instead, with the
//! labels `shmid`, `session`, and `segment` or `region`. Its metrics have names of their own, so
//! that a sum over both never counts a segment twice: `fairmq_shmmonitor_sessions`,
//! `fairmq_shmmonitor_session_readable`, `fairmq_shmmonitor_session_devices`,
//! `fairmq_shmmonitor_session_attached_processes`,
//! `fairmq_shmmonitor_segment_{size,free,used,largest_free_block,cached}_bytes`,
//! `fairmq_shmmonitor_segment_messages`, `fairmq_shmmonitor_region_size_bytes`,
//! `fairmq_shmmonitor_region_acks_pending`, `fairmq_shmmonitor_region_destroyed`; and its own
//! `process_*`.

mod address;
mod device_collector;
mod endpoint;
mod families;
pub(crate) mod http;
mod negotiation;
mod process_collector;
mod session_collector;
mod shm_collector;
pub mod targets;

pub use address::{parse as parse_address, AddressError};
pub use endpoint::Endpoint;

use crate::properties::Properties;
use crate::state_machine::StateMachine;
use prometheus_client::registry::Registry;
use std::sync::Arc;

/// The option that asks for an endpoint.
pub const OPTION: &str = crate::options::METRICS_ADDRESS;

/// The error returned when the metrics endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The given address is not a valid address.
    #[error(transparent)]
    Address(#[from] AddressError),
    /// The address could not be bound.
    #[error("cannot serve metrics on {given}: {source}")]
    Bind {
        /// The address given.
        given: String,
        /// Why binding failed.
        source: std::io::Error,
    },
}

/// Starts an endpoint at `given` (`HOST:PORT`) that exports every session whose management
/// segment is in `dir`. `fairmq-shmmonitor` starts this endpoint, with its `--list-all-path` as
/// `dir`. Logs the address that the endpoint serves on.
pub fn start_for_sessions(given: &str, dir: &std::path::Path) -> Result<Endpoint, MetricsError> {
    let addr = address::parse(given)?;
    let mut registry = Registry::default();
    registry.register_collector(Box::new(process_collector::ProcessCollector));
    let fairmq = registry.sub_registry_with_prefix("fairmq");
    fairmq.register_collector(Box::new(session_collector::SessionCollector { dir: dir.to_owned() }));
    let endpoint =
        Endpoint::start(addr, registry).map_err(|source| MetricsError::Bind { given: given.to_owned(), source })?;
    log::info!("metrics: serving http://{}/metrics", endpoint.address());
    Ok(endpoint)
}

/// Starts the endpoint that `--metrics-address` asks for, or none when the option is empty. Logs
/// the address that the endpoint serves on. Writes that address back into the option, so that the
/// option holds the chosen port when port 0 was given.
pub(crate) fn start_for_device(
    config: &Arc<Properties>,
    sm: &Arc<StateMachine>,
) -> Result<Option<Endpoint>, MetricsError> {
    let given = config.get_or::<String>(OPTION, String::new()).unwrap_or_default();
    if given.is_empty() {
        return Ok(None);
    }
    let addr = address::parse(&given)?;
    let mut registry = Registry::default();
    registry.register_collector(Box::new(process_collector::ProcessCollector));
    let fairmq = registry.sub_registry_with_prefix("fairmq");
    fairmq.register_collector(Box::new(device_collector::DeviceCollector { sm: sm.clone(), config: config.clone() }));
    fairmq.register_collector(Box::new(shm_collector::ShmCollector { sm: sm.clone(), config: config.clone() }));
    let endpoint = Endpoint::start(addr, registry).map_err(|source| MetricsError::Bind { given, source })?;
    log::info!("metrics: serving http://{}/metrics", endpoint.address());
    config.set(OPTION, endpoint.address().to_string());
    Ok(Some(endpoint))
}
