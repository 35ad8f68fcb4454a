//! One-shot views of sessions: the segment report ([`report`]), the list of every session
//! ([`list_all`]), the debug list of allocated blocks ([`debug_info`], [`used_blocks`]), and a
//! segment's free memory ([`free_memory`]).

use crate::error::ShmError;
use crate::naming::Names;
use crate::segment::Segment;
use crate::session::management::Management;
use std::fmt::Write as _;
use std::path::Path;

/// Opens the session's management segment, or returns `None` if the session has none. A
/// management segment that exists but cannot be used is an error.
pub(super) fn open_if_present(names: &Names) -> Result<Option<Management>, ShmError> {
    match Management::open_existing(names) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// The segment report (FairMQ's `PrintShm`): the segments with their free and used memory, the
/// regions, and the attached processes. `None` if the session has no management segment.
pub fn report(shm_id: &str) -> Result<Option<String>, ShmError> {
    let Some(v) = super::sessions::session_view(shm_id)? else { return Ok(None) };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "shm id: {shm_id}, session: {}, creator id: {}, devices: {}, managed segments:",
        v.session, v.creator_uid, v.devices
    );
    for seg in &v.segments {
        match &seg.stats {
            Ok(st) => {
                let _ = writeln!(
                    s,
                    "   [{}]: total: {}, msgs: {}, free: {}, used: {}",
                    seg.id, st.size, st.used_blocks, st.free, st.used
                );
            }
            Err(e) => {
                let _ = writeln!(s, "   [{}]: total: {}, cannot open: {e}", seg.id, seg.size);
            }
        }
    }
    let total = crate::session::management::MANAGEMENT_SIZE;
    let _ = writeln!(s, "   [m]: total: {total}, heartbeat: {}, events: {}", v.heartbeats, v.events);
    if !v.regions.is_empty() {
        let _ = writeln!(s, "   unmanaged regions:");
        for r in &v.regions {
            let state = if r.destroyed { "destroyed" } else { "alive" };
            let _ = write!(s, "      [{}]: {state}, size: {}, user flags: {}", r.id, r.size, r.user_flags);
            if !r.path.is_empty() {
                let _ = write!(s, ", path: '{}'", r.path);
            }
            match r.acks_pending {
                Some(p) => {
                    let _ = writeln!(s, ", acknowledgements pending: {p}");
                }
                None => s.push('\n'),
            }
        }
    }
    let list: Vec<String> = v.attached.iter().map(u32::to_string).collect();
    let _ = writeln!(s, "   attached processes: {}", if list.is_empty() { "none".into() } else { list.join(", ") });
    Ok(Some(s))
}

/// Why a segment's free memory could not be told (FairMQ's `Monitor::GetFreeMemory` errors).
#[derive(Debug, thiserror::Error)]
pub enum FreeMemoryError {
    /// The session has no management segment.
    #[error("Could not find management segment for shmid '{0}'")]
    NoSession(String),
    /// The session registered no segment of this id.
    #[error("Could not find segment id '{0}'")]
    NoSegment(u16),
    /// The session or segment exists but cannot be used.
    #[error(transparent)]
    Shm(#[from] ShmError),
}

/// The free bytes of managed segment `id` of session `shm_id` (FairMQ's `GetFreeMemory`).
pub fn free_memory(shm_id: &str, id: u16) -> Result<u64, FreeMemoryError> {
    let names = Names::new(shm_id);
    let m = open_if_present(&names)?.ok_or_else(|| FreeMemoryError::NoSession(shm_id.to_owned()))?;
    if !m.segments().iter().any(|s| s.id == id) {
        return Err(FreeMemoryError::NoSegment(id));
    }
    Ok(Segment::open(&Names::path(&names.segment(id)), id)?.stats().free)
}

/// Every used block of every segment, with its owner (FairMQ's `--debug`). FairMQ needs a debug
/// build for this. Here, owners are always recorded.
pub fn debug_info(shm_id: &str) -> Result<String, ShmError> {
    let Some(segments) = used_blocks(shm_id)? else { return Ok("no segments found".into()) };
    let mut s = String::new();
    for (id, blocks) in segments {
        let _ = writeln!(s, "found {} messages.", blocks.len());
        for b in blocks {
            let creator = match b.pid {
                Some(pid) => pid.to_string(),
                None => format!("unknown (owner mark {}, not attached)", b.owner),
            };
            let _ = writeln!(
                s,
                "segment: {id:>3}, offset: {:>12}, size: {:>10}, creator PID: {creator}, references: {}",
                b.offset, b.size, b.references
            );
        }
    }
    Ok(s)
}

/// A block in use in a managed segment (FairMQ's `BufferDebugInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsedBlock {
    /// Offset in its segment.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
    /// The owner mark of the transport that allocated it.
    pub owner: u32,
    /// The pid of that transport's process, while the transport is attached.
    pub pid: Option<u32>,
    /// Messages referring to it.
    pub references: u32,
}

/// The blocks in use of each managed segment, by segment id.
pub type SegmentBlocks = Vec<(u16, Vec<UsedBlock>)>;

/// Every block in use, per managed segment id (FairMQ's `GetDebugInfo`). `None` when the session
/// has no management segment.
pub fn used_blocks(shm_id: &str) -> Result<Option<SegmentBlocks>, ShmError> {
    let names = Names::new(shm_id);
    let Some(m) = open_if_present(&names)? else { return Ok(None) };
    // Each block carries the owner mark of its transport. The list of attached transports tells
    // which pid has that owner mark.
    let attached = crate::session::liveness::attached(&m);
    let mut out = Vec::new();
    for seg in m.segments() {
        let sg = match Segment::open(&Names::path(&names.segment(seg.id)), seg.id) {
            Ok(sg) => sg,
            Err(e) if e.is_not_found() => continue, // registered, then removed by hand
            Err(e) => return Err(e),
        };
        let blocks = sg
            .used_blocks()?
            .into_iter()
            .map(|(offset, size, owner, references)| UsedBlock {
                offset,
                size,
                owner,
                pid: attached.iter().find(|a| a.owner == owner).map(|a| a.pid),
                references,
            })
            .collect();
        out.push((seg.id, blocks));
    }
    Ok(Some(out))
}

/// Every session found in `dir` (FairMQ's `--list-all`). A directory that cannot be read is an
/// error. A session that cannot be opened (another user's, say) is listed with the reason.
pub fn list_all(dir: &Path) -> Result<String, ShmError> {
    let mut s = String::new();
    let entries = std::fs::read_dir(dir).map_err(|e| ShmError::io("listing", &dir.display().to_string(), e))?;
    let mut names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    if names.is_empty() {
        return Ok(format!("directory \"{}\" is empty.", dir.display()));
    }
    names.sort();
    for name in names {
        let Some(rest) = name.strip_prefix(crate::naming::PREFIX) else {
            log::debug!("The file '{name}' does not belong to FairMQ, skipping...");
            continue;
        };
        if let Some(id) = rest.strip_suffix("_mng") {
            let _ = writeln!(s, "\nFound shmid '{id}':");
            match report(id) {
                Ok(Some(r)) => s.push_str(&r),
                Ok(None) => {
                    let _ = writeln!(s, "could not open file for shmid '{id}'");
                }
                Err(e) => {
                    let _ = writeln!(s, "could not open file for shmid '{id}': {e}");
                }
            }
        }
    }
    Ok(s)
}
