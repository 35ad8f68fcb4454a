//! The region registry in the management segment. It tells every process of the session what it
//! needs to know about each unmanaged region: its size, the path of a file-backed region, its
//! flags, and whether it was destroyed. [`RegionEntry`] is one region's entry.
//!
//! A slot is 64 words: `tag` (region id + 1; 0 means free), `state`, `size`, `creation flags`,
//! `user flags`, `rc segment size`, `path length`, `creator pid`, then the path bytes. The `tag`
//! is written last, so a reader never sees a half-written slot.
//!
//! Slots are filled under the session lock. They are never emptied while the session lives,
//! because a region id is used only once per session, as in FairMQ. So lookups need no lock.

use crate::error::ShmError;
use crate::naming::Names;
use crate::session::layout::{RegionSlot, REGION_SLOTS};
use crate::session::management::{Management, SessionLock};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// Maximum length, in bytes, of a file-backed region's path prefix.
pub const PATH_MAX: usize = 56 * 8;
const LIVE: u64 = 1;
const DESTROYED: u64 = 2;

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
    /// The file that holds the region's bytes: `/dev/shm/<name>`, or `<path><name>` for a
    /// file-backed region. The path is a plain prefix, as in FairMQ, so it must include the
    /// trailing `/`.
    pub fn data_path(&self, names: &Names) -> PathBuf {
        if self.path.is_empty() {
            Names::path(&names.region(self.id))
        } else {
            PathBuf::from(format!("{}{}", self.path, names.region(self.id)))
        }
    }
}

fn slot(m: &Management, i: usize) -> &RegionSlot {
    &m.layout().regions[i]
}

fn read_slot(m: &Management, i: usize) -> Option<RegionEntry> {
    let r = slot(m, i);
    let tag = r.tag.load(Ordering::Acquire);
    if tag == 0 || tag > 1 << 16 {
        return None;
    }
    let len = (r.path_len.load(Ordering::Relaxed) as usize).min(PATH_MAX);
    let bytes: Vec<u8> = r.path.iter().flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes()).collect();
    Some(RegionEntry {
        id: (tag - 1) as u16,
        size: r.size.load(Ordering::Relaxed),
        creation_flags: r.creation_flags.load(Ordering::Relaxed) as i32,
        user_flags: r.user_flags.load(Ordering::Relaxed),
        rc_segment_size: r.rc_size.load(Ordering::Relaxed),
        path: String::from_utf8_lossy(&bytes[..len]).into_owned(),
        creator: r.creator.load(Ordering::Relaxed) as u32,
        destroyed: r.state.load(Ordering::Acquire) == DESTROYED,
    })
}

fn slot_of(m: &Management, id: u16) -> Option<usize> {
    (0..REGION_SLOTS).find(|&i| slot(m, i).tag.load(Ordering::Acquire) == u64::from(id) + 1)
}

/// Every registered region (live and destroyed), in slot order.
pub fn regions(m: &Management) -> Vec<RegionEntry> {
    (0..REGION_SLOTS).filter_map(|i| read_slot(m, i)).collect()
}

/// The registry entry of region `id`.
pub fn find(m: &Management, id: u16) -> Option<RegionEntry> {
    slot_of(m, id).and_then(|i| read_slot(m, i))
}

impl SessionLock<'_> {
    /// Returns the next automatic region id, skipping ids that were already taken explicitly. The
    /// first automatic id is 1024, as in FairMQ.
    pub(crate) fn next_region_id(&self) -> Result<u16, ShmError> {
        let counter = &self.management().layout().region_counter;
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
        let i = (0..REGION_SLOTS)
            .find(|&i| slot(m, i).tag.load(Ordering::Relaxed) == 0)
            .ok_or(ShmError::TableFull("region"))?;
        let r = slot(m, i);
        r.state.store(LIVE, Ordering::Relaxed);
        r.size.store(e.size, Ordering::Relaxed);
        r.creation_flags.store(e.creation_flags as u32 as u64, Ordering::Relaxed);
        r.user_flags.store(e.user_flags, Ordering::Relaxed);
        r.rc_size.store(e.rc_segment_size, Ordering::Relaxed);
        r.creator.store(u64::from(e.creator), Ordering::Relaxed);
        r.path_len.store(e.path.len() as u64, Ordering::Relaxed);
        for (word, k) in r.path.iter().zip((0..).step_by(8)) {
            let mut chunk = [0u8; 8];
            let from = k.min(e.path.len());
            let to = (k + 8).min(e.path.len());
            chunk[..to - from].copy_from_slice(&e.path.as_bytes()[from..to]);
            word.store(u64::from_le_bytes(chunk), Ordering::Relaxed);
        }
        r.tag.store(u64::from(e.id) + 1, Ordering::Release);
        self.bump_events();
        Ok(())
    }

    /// Marks region `id` destroyed and bumps the event counter.
    pub(crate) fn mark_region_destroyed(&self, id: u16) {
        if let Some(i) = slot_of(self.management(), id) {
            slot(self.management(), i).state.store(DESTROYED, Ordering::Release);
            self.bump_events();
        }
    }
}
