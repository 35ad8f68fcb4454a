//! The region registry in the management segment: what every process of the session knows about
//! each unmanaged region (size, path of a file-backed one, flags, whether it was destroyed).
//!
//! A slot is 64 words: `tag` (region id + 1, 0 = free; written last, so a reader never sees a
//! half-written slot), `state`, `size`, `creation flags`, `user flags`, `rc segment size`, `path length`,
//! `creator pid`, then the path bytes. Slots are filled under the session lock and never emptied
//! while the session lives (as in FairMQ: an id is used once per session), so lookups need no lock.

use crate::error::ShmError;
use crate::naming::Names;
use crate::session::management::{Management, SessionLock, W_REGION_COUNTER};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

const FIRST_WORD: usize = (64 << 10) / 8;
const SLOTS: usize = 1024;
const SLOT_WORDS: usize = 64;
const W_TAG: usize = 0;
const W_STATE: usize = 1;
const W_SIZE: usize = 2;
const W_CREATION_FLAGS: usize = 3;
const W_USER_FLAGS: usize = 4;
const W_RC_SIZE: usize = 5;
const W_PATH_LEN: usize = 6;
const W_CREATOR: usize = 7;
const W_PATH: usize = 8;
/// Longest path prefix of a file-backed region.
pub const PATH_MAX: usize = (SLOT_WORDS - W_PATH) * 8;
const LIVE: u64 = 1;
const DESTROYED: u64 = 2;
const _: () = assert!((FIRST_WORD + SLOTS * SLOT_WORDS) * 8 <= crate::session::management::MANAGEMENT_SIZE);

/// A region as the registry records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionEntry {
    /// Region id.
    pub id: u16,
    /// Size in bytes.
    pub size: u64,
    /// `mmap` flags it was created with.
    pub creation_flags: i32,
    /// The creator's user flags (reported in region events).
    pub user_flags: u64,
    /// The creator's `rc_segment_size` setting (reported by the monitor).
    pub rc_segment_size: u64,
    /// Path prefix of a file-backed region; empty for a shared-memory object.
    pub path: String,
    /// Pid of the creating process.
    pub creator: u32,
    /// Whether its controller destroyed it.
    pub destroyed: bool,
}

impl RegionEntry {
    /// Where the region's bytes live: `/dev/shm/<name>`, or `<path><name>` for a file-backed region
    /// (the path is a plain prefix, as in FairMQ: include the trailing `/`).
    pub fn data_path(&self, names: &Names) -> PathBuf {
        if self.path.is_empty() {
            Names::path(&names.region(self.id))
        } else {
            PathBuf::from(format!("{}{}", self.path, names.region(self.id)))
        }
    }
}

fn slot_base(i: usize) -> usize {
    FIRST_WORD + i * SLOT_WORDS
}

fn read_slot(m: &Management, i: usize) -> Option<RegionEntry> {
    let w = m.words();
    let b = slot_base(i);
    let tag = w[b + W_TAG].load(Ordering::Acquire);
    if tag == 0 || tag > 1 << 16 {
        return None;
    }
    let len = (w[b + W_PATH_LEN].load(Ordering::Relaxed) as usize).min(PATH_MAX);
    let bytes: Vec<u8> =
        (0..PATH_MAX / 8).flat_map(|k| w[b + W_PATH + k].load(Ordering::Relaxed).to_le_bytes()).collect();
    Some(RegionEntry {
        id: (tag - 1) as u16,
        size: w[b + W_SIZE].load(Ordering::Relaxed),
        creation_flags: w[b + W_CREATION_FLAGS].load(Ordering::Relaxed) as i32,
        user_flags: w[b + W_USER_FLAGS].load(Ordering::Relaxed),
        rc_segment_size: w[b + W_RC_SIZE].load(Ordering::Relaxed),
        path: String::from_utf8_lossy(&bytes[..len]).into_owned(),
        creator: w[b + W_CREATOR].load(Ordering::Relaxed) as u32,
        destroyed: w[b + W_STATE].load(Ordering::Acquire) == DESTROYED,
    })
}

fn slot_of(m: &Management, id: u16) -> Option<usize> {
    let w = m.words();
    (0..SLOTS).find(|&i| w[slot_base(i) + W_TAG].load(Ordering::Acquire) == u64::from(id) + 1)
}

/// Every registered region (live and destroyed), in slot order.
pub fn regions(m: &Management) -> Vec<RegionEntry> {
    (0..SLOTS).filter_map(|i| read_slot(m, i)).collect()
}

/// The registry entry of region `id`.
pub fn find(m: &Management, id: u16) -> Option<RegionEntry> {
    slot_of(m, id).and_then(|i| read_slot(m, i))
}

impl SessionLock<'_> {
    /// The next automatic region id (the first is 1024, as in FairMQ), skipping ids already taken
    /// explicitly.
    pub(crate) fn next_region_id(&self) -> Result<u16, ShmError> {
        let counter = self.word(W_REGION_COUNTER);
        loop {
            let id = counter.load(Ordering::Relaxed);
            let id = u16::try_from(id).map_err(|_| ShmError::TableFull("region id"))?;
            counter.store(u64::from(id) + 1, Ordering::Relaxed);
            if slot_of(self.management(), id).is_none() {
                return Ok(id);
            }
        }
    }

    /// Records a new region and bumps the event counter.
    pub(crate) fn register_region(&self, e: &RegionEntry) -> Result<(), ShmError> {
        let m = self.management();
        if slot_of(m, e.id).is_some() {
            return Err(ShmError::RegionIdTaken { id: e.id });
        }
        if e.path.len() > PATH_MAX {
            return Err(ShmError::Config(format!("region path longer than {PATH_MAX} bytes: {}", e.path)));
        }
        let w = m.words();
        let i = (0..SLOTS)
            .find(|&i| w[slot_base(i) + W_TAG].load(Ordering::Relaxed) == 0)
            .ok_or(ShmError::TableFull("region"))?;
        let b = slot_base(i);
        w[b + W_STATE].store(LIVE, Ordering::Relaxed);
        w[b + W_SIZE].store(e.size, Ordering::Relaxed);
        w[b + W_CREATION_FLAGS].store(e.creation_flags as u32 as u64, Ordering::Relaxed);
        w[b + W_USER_FLAGS].store(e.user_flags, Ordering::Relaxed);
        w[b + W_RC_SIZE].store(e.rc_segment_size, Ordering::Relaxed);
        w[b + W_CREATOR].store(u64::from(e.creator), Ordering::Relaxed);
        w[b + W_PATH_LEN].store(e.path.len() as u64, Ordering::Relaxed);
        for k in 0..PATH_MAX / 8 {
            let mut chunk = [0u8; 8];
            let from = (k * 8).min(e.path.len());
            let to = (k * 8 + 8).min(e.path.len());
            chunk[..to - from].copy_from_slice(&e.path.as_bytes()[from..to]);
            w[b + W_PATH + k].store(u64::from_le_bytes(chunk), Ordering::Relaxed);
        }
        w[b + W_TAG].store(u64::from(e.id) + 1, Ordering::Release);
        self.bump_events();
        Ok(())
    }

    /// Marks region `id` destroyed and bumps the event counter.
    pub(crate) fn mark_region_destroyed(&self, id: u16) {
        if let Some(i) = slot_of(self.management(), id) {
            self.management().words()[slot_base(i) + W_STATE].store(DESTROYED, Ordering::Release);
            self.bump_events();
        }
    }
}
