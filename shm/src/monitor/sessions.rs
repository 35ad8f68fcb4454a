//! Sessions as data ([`SessionView`]), read from a session's shared memory without attaching to
//! it. The segment report prints this data (see `report`), and the monitor's metrics export it.

use crate::error::ShmError;
use crate::naming::Names;
use crate::region::ack_queue::AckQueue;
use crate::segment::{Segment, SegmentStats};
use std::path::Path;

/// One session, as its management segment and segments say now.
#[derive(Debug, Clone)]
pub struct SessionView {
    /// Its shm id.
    pub shm_id: String,
    /// Its session name.
    pub session: String,
    /// The user id of its creator.
    pub creator_uid: u32,
    /// The number of transports attached (FairMQ's device count).
    pub devices: u64,
    /// The number of heartbeats of the management segment so far.
    pub heartbeats: u64,
    /// The number of region events so far.
    pub events: u64,
    /// Its managed segments.
    pub segments: Vec<SegmentView>,
    /// Its unmanaged regions.
    pub regions: Vec<RegionView>,
    /// The pids of the processes attached.
    pub attached: Vec<u32>,
    /// The metrics endpoints that the attached processes published, as (pid, endpoint). Each
    /// pair is listed once.
    pub endpoints: Vec<(u32, std::net::SocketAddr)>,
}

/// A managed segment of a session.
#[derive(Debug, Clone)]
pub struct SegmentView {
    /// Segment id.
    pub id: u16,
    /// Its size as registered.
    pub size: u64,
    /// Its memory figures, or why it could not be opened.
    pub stats: Result<SegmentStats, String>,
}

/// An unmanaged region of a session.
#[derive(Debug, Clone)]
pub struct RegionView {
    /// Region id.
    pub id: u16,
    /// Size in bytes.
    pub size: u64,
    /// Whether its controller destroyed it.
    pub destroyed: bool,
    /// The creator's user flags.
    pub user_flags: u64,
    /// Path prefix of a file-backed region. It is empty for a region in shared memory.
    pub path: String,
    /// Acknowledgements waiting for its controller. `None` if its queue cannot be opened.
    pub acks_pending: Option<u64>,
}

/// The shm ids of the sessions whose management segments are in `dir` (sorted).
pub fn session_ids(dir: &Path) -> Result<Vec<String>, ShmError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ShmError::io("listing", &dir.display().to_string(), e))?;
    let mut ids: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            Some(name.strip_prefix(crate::naming::PREFIX)?.strip_suffix("_mng")?.to_owned())
        })
        .collect();
    ids.sort();
    Ok(ids)
}

/// Session `shm_id` as it is now; `None` if it has no management segment.
pub fn session_view(shm_id: &str) -> Result<Option<SessionView>, ShmError> {
    let names = Names::new(shm_id);
    let Some(m) = super::report::open_if_present(&names)? else { return Ok(None) };
    let segments = m
        .segments()
        .into_iter()
        .map(|seg| SegmentView {
            id: seg.id,
            size: seg.size,
            stats: Segment::open(&Names::path(&names.segment(seg.id)), seg.id)
                .map(|s| s.stats())
                .map_err(|e| e.to_string()),
        })
        .collect();
    let regions = crate::session::registry::regions(&m)
        .into_iter()
        .map(|r| RegionView {
            id: r.id,
            size: r.size,
            destroyed: r.destroyed,
            user_flags: r.user_flags,
            acks_pending: AckQueue::open(&Names::path(&names.region_queue(r.id))).map(|q| q.pending()).ok(),
            path: r.path,
        })
        .collect();
    let attached = crate::session::liveness::attached(&m);
    // A process with several transports in the session published its endpoint in each slot.
    let mut endpoints: Vec<(u32, std::net::SocketAddr)> =
        attached.iter().filter_map(|a| Some((a.pid, a.metrics?))).collect();
    endpoints.sort_unstable();
    endpoints.dedup();
    Ok(Some(SessionView {
        shm_id: shm_id.to_owned(),
        session: m.session_name(),
        creator_uid: m.creator_uid(),
        devices: m.device_count(),
        heartbeats: m.heartbeat_count(),
        events: m.event_count(),
        segments,
        regions,
        attached: attached.iter().map(|a| a.pid).collect(),
        endpoints,
    }))
}
