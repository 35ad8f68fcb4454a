//! The monitor's metrics: every session of the host (segments, free memory, attached
//! processes, regions), read from shared memory at each scrape, so that one scrape target per
//! host covers its shared memory (`fairmq-shmmonitor --metrics-address`). Named
//! `fairmq_shmmonitor_*`: a device exports its own segment's figures as `fairmq_shm_*`, and a
//! sum over both would count a segment twice. Sessions are found in the directory given and
//! read where the transport keeps them (`/dev/shm`), as `--list-all` does.

use super::families::{Family, Labels, Value};
use fairmq_shm::monitor::{session_ids, session_view, SessionView};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use std::path::PathBuf;

const SESSIONS: Family =
    Family::gauge("shmmonitor_sessions", "Sessions found (management segments in the directory watched)");
const READABLE: Family =
    Family::gauge("shmmonitor_session_readable", "Whether the session could be read (0: another user's, or damaged)");
const DEVICES: Family = Family::gauge("shmmonitor_session_devices", "Transports attached to the session");
const ATTACHED: Family = Family::gauge("shmmonitor_session_attached_processes", "Processes attached to the session");
const SIZE: Family = Family::gauge("shmmonitor_segment_size", "Size of the managed segment").in_bytes();
const FREE: Family = Family::gauge("shmmonitor_segment_free", "Free memory of the managed segment").in_bytes();
const USED: Family =
    Family::gauge("shmmonitor_segment_used", "Used memory of the managed segment (cached blocks included)").in_bytes();
const LARGEST: Family = Family::gauge(
    "shmmonitor_segment_largest_free_block",
    "The largest free block (the largest message that fits at once)",
)
.in_bytes();
const CACHED: Family =
    Family::gauge("shmmonitor_segment_cached", "Freed blocks kept for reuse (counted as used, not as free)").in_bytes();
const MESSAGES: Family = Family::gauge("shmmonitor_segment_messages", "Blocks allocated in the managed segment");
const REGION_SIZE: Family =
    Family::gauge("shmmonitor_region_size", "Size of an unmanaged region of the session").in_bytes();
const REGION_ACKS: Family = Family::gauge(
    "shmmonitor_region_acks_pending",
    "Acknowledgements queued for the region's controller, not taken yet",
);
const REGION_DESTROYED: Family =
    Family::gauge("shmmonitor_region_destroyed", "Whether the region's controller destroyed it (1) or not (0)");

/// A collector that reads every session in `dir` at each scrape.
#[derive(Debug)]
pub(crate) struct SessionCollector {
    pub dir: PathBuf,
}

impl Collector for SessionCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let ids = session_ids(&self.dir).unwrap_or_else(|e| {
            log::error!("metrics: cannot list the sessions in {}: {e}", self.dir.display());
            Vec::new()
        });
        let read: Vec<(String, Option<SessionView>)> = ids
            .into_iter()
            .map(|id| {
                let v = session_view(&id).unwrap_or_else(|e| {
                    log::debug!("metrics: session {id} cannot be read: {e}");
                    None
                });
                (id, v)
            })
            .collect();
        let views: Vec<&SessionView> = read.iter().filter_map(|(_, v)| v.as_ref()).collect();
        SESSIONS.write(&mut enc, [(Vec::new(), Value::Int(read.len() as u64))])?;
        let readable = read.iter().map(|(id, v)| (vec![("shmid", id.clone())], Value::Int(u64::from(v.is_some()))));
        READABLE.write(&mut enc, readable)?;
        let session = |v: &SessionView| -> Labels { vec![("shmid", v.shm_id.clone()), ("session", v.session.clone())] };
        DEVICES.write(&mut enc, views.iter().map(|v| (session(v), Value::Int(v.devices))))?;
        ATTACHED.write(&mut enc, views.iter().map(|v| (session(v), Value::Int(v.attached.len() as u64))))?;

        let segments: Vec<(Labels, fairmq_shm::SegmentStats)> = views
            .iter()
            .flat_map(|v| {
                v.segments.iter().filter_map(move |s| {
                    let mut l = session(v);
                    l.push(("segment", s.id.to_string()));
                    Some((l, s.stats.clone().ok()?))
                })
            })
            .collect();
        let each = |f: fn(&fairmq_shm::SegmentStats) -> u64| {
            segments.iter().map(|(l, s)| (l.clone(), Value::Int(f(s)))).collect::<Vec<_>>()
        };
        SIZE.write(&mut enc, each(|s| s.size))?;
        FREE.write(&mut enc, each(|s| s.free))?;
        USED.write(&mut enc, each(|s| s.used))?;
        LARGEST.write(&mut enc, each(|s| s.largest_free))?;
        CACHED.write(&mut enc, each(|s| s.cached))?;
        MESSAGES.write(&mut enc, each(|s| s.used_blocks))?;

        let regions: Vec<(Labels, &fairmq_shm::monitor::RegionView)> = views
            .iter()
            .flat_map(|v| {
                v.regions.iter().map(move |r| {
                    let mut l = session(v);
                    l.push(("region", r.id.to_string()));
                    (l, r)
                })
            })
            .collect();
        REGION_SIZE.write(&mut enc, regions.iter().map(|(l, r)| (l.clone(), Value::Int(r.size))))?;
        let pending = regions.iter().filter_map(|(l, r)| Some((l.clone(), Value::Int(r.acks_pending?))));
        REGION_ACKS.write(&mut enc, pending)?;
        let destroyed = regions.iter().map(|(l, r)| (l.clone(), Value::Int(u64::from(r.destroyed))));
        REGION_DESTROYED.write(&mut enc, destroyed)?;
        Ok(())
    }
}
