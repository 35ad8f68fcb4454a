//! The shared-memory transport's metrics: the segment the device allocates in (size, free,
//! used, largest free block, cached), messages in flight, allocations that waited or failed;
//! and the regions the device maps (size, pieces out, acknowledgements pending).

use super::device_collector::device_label;
use super::families::{Family, Labels, Value};
use crate::properties::Properties;
use crate::state_machine::StateMachine;
use crate::transport::Transport;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use std::sync::Arc;

const SIZE: Family = Family::gauge("shm_segment_size", "Size of the managed segment").in_bytes();
const FREE: Family = Family::gauge("shm_segment_free", "Free memory of the managed segment").in_bytes();
const USED: Family =
    Family::gauge("shm_segment_used", "Used memory of the managed segment (cached blocks included)").in_bytes();
const LARGEST: Family =
    Family::gauge("shm_segment_largest_free_block", "The largest free block (the largest message that fits at once)")
        .in_bytes();
const CACHED: Family =
    Family::gauge("shm_segment_cached", "Freed blocks kept for reuse (counted as used, not as free)").in_bytes();
const IN_FLIGHT: Family =
    Family::gauge("shm_messages_in_flight", "Messages this device handed to sockets that no receiver took yet");
const RETRIES: Family =
    Family::counter("shm_allocation_retries", "Allocations that found no room at first and waited or retried");
const FAILURES: Family = Family::counter("shm_allocation_failures", "Allocations that failed for lack of memory");
const REGION_SIZE: Family = Family::gauge("region_size", "Size of an unmanaged region the device maps").in_bytes();
const REGION_OUT: Family =
    Family::gauge("region_pieces_in_flight", "Messages made from a region the device controls, not acknowledged yet");
const REGION_ACKS: Family =
    Family::gauge("region_acks_pending", "Acknowledgements queued for the region's controller, not taken yet");

/// A collector that reads the device's shared-memory transports at each scrape.
#[derive(Debug)]
pub(crate) struct ShmCollector {
    pub sm: Arc<StateMachine>,
    pub config: Arc<Properties>,
}

impl Collector for ShmCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let device = device_label(&self.config);
        // The usage is read while the lock is held. This is cheap: a few loads and a scan of the
        // ticket table. No transport is cloned, so the device's thread still drops the transports
        // when the device resets.
        let usages: Vec<fairmq_shm::Usage> = self
            .sm
            .telemetry()
            .transports()
            .lock()
            .iter()
            .filter_map(|t| match t {
                Transport::Shmem(s) => Some(s.usage()),
                Transport::Zeromq(_) => None,
            })
            .collect();
        let segment = |u: &fairmq_shm::Usage| -> Labels {
            vec![("device", device.clone()), ("segment", u.segment.id.to_string())]
        };
        let each = |f: fn(&fairmq_shm::Usage) -> u64| {
            usages.iter().map(|u| (segment(u), Value::Int(f(u)))).collect::<Vec<_>>()
        };
        SIZE.write(&mut enc, each(|u| u.segment.size))?;
        FREE.write(&mut enc, each(|u| u.segment.free))?;
        USED.write(&mut enc, each(|u| u.segment.used))?;
        LARGEST.write(&mut enc, each(|u| u.segment.largest_free))?;
        CACHED.write(&mut enc, each(|u| u.segment.cached))?;
        IN_FLIGHT.write(&mut enc, each(|u| u.in_flight))?;
        RETRIES.write(&mut enc, each(|u| u.allocations_retried))?;
        FAILURES.write(&mut enc, each(|u| u.allocations_failed))?;

        let mut regions: Vec<fairmq_shm::RegionUsage> = usages.iter().flat_map(|u| u.regions.iter().copied()).collect();
        // Two transports of the device can map the same region. The sort puts the view of the
        // region's controller first, so the dedup keeps that view.
        regions.sort_by_key(|r| (r.id, !r.controlled));
        regions.dedup_by_key(|r| r.id);
        let region = |r: &fairmq_shm::RegionUsage| -> Labels {
            vec![("device", device.clone()), ("transport", "shmem".to_owned()), ("region", r.id.to_string())]
        };
        let each = |f: fn(&fairmq_shm::RegionUsage) -> u64| {
            regions.iter().map(|r| (region(r), Value::Int(f(r)))).collect::<Vec<_>>()
        };
        REGION_SIZE.write(&mut enc, each(|r| r.size))?;
        REGION_OUT.write(&mut enc, each(|r| r.pieces_out))?;
        REGION_ACKS.write(&mut enc, each(|r| r.acks_pending))?;
        Ok(())
    }
}
