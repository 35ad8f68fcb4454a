//! The management segment of a session, as one process sees it: [`Management`].
//!
//! This module reads and writes these parts of the management segment:
//!
//! - the session lock, a robust mutex; [`SessionLock`] holds it;
//! - the session secret (see `peers`);
//! - the registry of managed segments ([`SegmentEntry`]);
//! - the event counter, which is bumped whenever a segment or region is created or destroyed;
//! - the heartbeat counter that FairMQ's monitor watches.
//!
//! The region registry (see `registry`) and the process slots (see `liveness`) live in the
//! management segment too. The occupied process slots are the count of attached transports.
//! `layout` gives the place of every table.
//!
//! Attaching and detaching happen under the session lock. The last transport to detach marks the
//! management segment *removed* and unlinks every object of the session while it still holds the
//! lock. Another process may have opened the old management segment just before. That process
//! sees the mark once it gets the lock, and it starts over with a fresh management segment. So
//! removal is idempotent, and it never removes a session that a newcomer has joined (see
//! `attach`).

use crate::error::ShmError;
use crate::naming::Names;
pub use crate::session::layout::MANAGEMENT_SIZE;
use crate::session::layout::{Layout, KIND, SEGMENT_SLOTS, SESSION_MAX};
use crate::sys::layout::MutexPlace;
use crate::sys::mapping::{Fresh, Mapping};
use crate::sys::robust_mutex::{Guard, RobustMutex};
use std::sync::atomic::{AtomicU64, Ordering};

const LIVE: u64 = 1;
const REMOVED: u64 = 2;
/// First automatic region id, as in FairMQ.
pub const FIRST_REGION_ID: u64 = 1024;

/// A registered managed segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentEntry {
    /// Segment id.
    pub id: u16,
    /// Size in bytes.
    pub size: u64,
}

/// This process's attachment to a session's management segment.
pub struct Management {
    map: Mapping,
    names: Names,
}

impl Management {
    /// Whether the session's name still refers to this management segment.
    pub(crate) fn still_linked(&self) -> bool {
        self.map.still_linked()
    }
}

impl std::fmt::Debug for Management {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Management").field("shm_id", &self.names.shm_id()).finish()
    }
}

/// Holds the session lock.
pub(crate) struct SessionLock<'a> {
    m: &'a Management,
    _g: Guard<'a>,
}

impl Management {
    /// The session secret (see `peers`).
    pub(crate) fn secret(&self) -> [u64; 2] {
        [0, 1].map(|i| self.layout().secret[i].load(Ordering::Relaxed))
    }

    /// Opens the management segment without counting as an attached transport. The monitor uses
    /// this.
    pub fn open_existing(names: &Names) -> Result<Management, ShmError> {
        let map = Mapping::open(&Names::path(&names.management()))
            .map_err(|e| ShmError::file("opening management segment", e))?;
        Management::from_mapping(map, names)
    }

    pub(crate) fn from_mapping(map: Mapping, names: &Names) -> Result<Management, ShmError> {
        let path = map.path().to_owned();
        KIND.open(
            map.words(),
            |l: &Layout| &l.tag,
            |l| crate::sys::files::check_name_tag(l.name_tag.load(Ordering::Relaxed), &path),
        )
        .map_err(|e| ShmError::Layout { name: names.management(), reason: e.to_string() })?;
        Ok(Management { map, names: names.clone() })
    }

    /// The segment's layout. The layout was checked to fit when the segment was opened.
    pub(crate) fn layout(&self) -> &Layout {
        self.map.view().expect("a management segment holds its layout")
    }

    /// The mutex at `place` in the layout. Callers use it for the process slots' mutexes.
    pub(crate) fn mutex(&self, place: &MutexPlace) -> RobustMutex<'_> {
        self.map.mutex(place)
    }

    /// The session's object names.
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// Takes the session lock. The lock guards only the registry and the counters. Each of them is
    /// updated by single stores, so a holder that died leaves nothing to repair.
    pub(crate) fn lock(&self) -> Result<SessionLock<'_>, ShmError> {
        let g = self.map.mutex(&self.layout().lock).lock(|| {
            log::warn!("a process died holding the session lock of {}", self.names.shm_id());
            true
        })?;
        Ok(SessionLock { m: self, _g: g })
    }

    /// The event counter: bumped when segments or regions are created or destroyed.
    pub fn event_count(&self) -> u64 {
        self.layout().events.load(Ordering::Acquire)
    }

    /// Sleeps until the event counter differs from `seen`, or until `timeout` has passed. A bump
    /// wakes every waiter of the session at once.
    pub(crate) fn wait_for_events(&self, seen: u64, timeout: std::time::Duration) {
        crate::sys::futex::wait(&self.layout().events, seen as u32, timeout);
    }

    /// Wakes every waiter for events. Each waiter looks again, and sleeps on if nothing changed.
    pub(crate) fn wake_event_waiters(&self) {
        crate::sys::futex::wake_all(&self.layout().events);
    }

    /// The heartbeat counter's value.
    pub fn heartbeat_count(&self) -> u64 {
        self.layout().heartbeat.load(Ordering::Relaxed)
    }

    /// The heartbeat counter.
    pub(crate) fn heartbeat(&self) -> &AtomicU64 {
        &self.layout().heartbeat
    }

    /// Session name as recorded by the creator.
    pub fn session_name(&self) -> String {
        let l = self.layout();
        let len = (l.session_len.load(Ordering::Relaxed) as usize).min(SESSION_MAX);
        let bytes: Vec<u8> = l.session.iter().flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes()).collect();
        String::from_utf8_lossy(&bytes[..len]).into_owned()
    }

    /// Effective uid of the session's creator.
    pub fn creator_uid(&self) -> u32 {
        self.layout().creator_uid.load(Ordering::Relaxed) as u32
    }

    /// Registered segments.
    pub fn segments(&self) -> Vec<SegmentEntry> {
        (0..SEGMENT_SLOTS).filter_map(|i| self.segment_slot(i)).collect()
    }

    fn segment_slot(&self, i: usize) -> Option<SegmentEntry> {
        let s = &self.layout().segments[i];
        match s.tagged.load(Ordering::Acquire) {
            0 => None,
            tagged => Some(SegmentEntry { id: (tagged - 1) as u16, size: s.size.load(Ordering::Relaxed) }),
        }
    }
}

impl SessionLock<'_> {
    /// The management segment this lock guards.
    pub(crate) fn management(&self) -> &Management {
        self.m
    }

    /// Bumps the event counter, to signal that segments or regions were created or destroyed.
    pub(crate) fn bump_events(&self) {
        crate::sys::futex::bump_and_wake_all(&self.m.layout().events);
    }

    /// Marks the session removed, so that a newcomer that opened it will open a new one. Marking
    /// is the first of a removal's two steps; unlinking the objects is the second. A remover killed
    /// between the two steps leaves only the mark.
    pub(crate) fn mark_removed(&self) {
        self.m.layout().state.store(REMOVED, Ordering::Release);
    }

    /// Whether the last transport of the session removed it. If so, a newcomer must open a new
    /// session.
    pub(crate) fn removed(&self) -> bool {
        self.m.layout().state.load(Ordering::Relaxed) == REMOVED
    }

    /// Registers segment `id` of `size` bytes and bumps the event counter. A segment that is
    /// already registered is left as it is, and the counter is not bumped.
    pub(crate) fn register_segment(&self, id: u16, size: u64) -> Result<(), ShmError> {
        if self.m.segments().iter().any(|s| s.id == id) {
            return Ok(());
        }
        let slot =
            (0..SEGMENT_SLOTS).find(|&i| self.m.segment_slot(i).is_none()).ok_or(ShmError::TableFull("segment"))?;
        let s = &self.m.layout().segments[slot];
        s.size.store(size, Ordering::Relaxed);
        s.tagged.store(u64::from(id) + 1, Ordering::Release);
        self.bump_events();
        Ok(())
    }
}

/// Lays out a new management segment, which is still private to its creator. `attach` adds the
/// process slots' mutexes afterwards, through `liveness::init_slots`.
pub(crate) fn init(m: &Fresh<'_>, path: &std::path::Path, session: &str) -> std::io::Result<()> {
    let l: &Layout = m.view().ok_or_else(|| std::io::Error::other("management segment smaller than its layout"))?;
    l.name_tag.store(crate::sys::files::name_tag(path), Ordering::Relaxed);
    l.state.store(LIVE, Ordering::Relaxed);
    l.region_counter.store(FIRST_REGION_ID, Ordering::Relaxed);
    l.creator_uid.store(u64::from(crate::sys::files::euid()), Ordering::Relaxed);
    let name = &session.as_bytes()[..session.len().min(SESSION_MAX)];
    l.session_len.store(name.len() as u64, Ordering::Relaxed);
    for (word, chunk) in l.session.iter().zip(name.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        word.store(u64::from_le_bytes(b), Ordering::Relaxed);
    }
    m.init_mutex(&l.lock)?;
    for (word, v) in l.secret.iter().zip(secret()?) {
        word.store(v, Ordering::Relaxed);
    }
    KIND.stamp(&l.tag);
    Ok(())
}

/// A new session secret, from the kernel's random source.
fn secret() -> std::io::Result<[u64; 2]> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok([0, 8].map(|at| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))))
}

/// Removes every object whose name starts with the session's prefix, whatever state the session
/// is in. Tests' guards and benchmarks use it. Returns the removed names.
#[cfg(any(test, feature = "testing"))]
pub fn remove_session(names: &Names) -> Vec<String> {
    session_objects(names).into_iter().filter(|name| std::fs::remove_file(Names::path(name)).is_ok()).collect()
}

/// Names of the session's objects now in `/dev/shm`, sorted.
pub fn session_objects(names: &Names) -> Vec<String> {
    let prefix = names.session_prefix();
    let mut found: Vec<String> = match std::fs::read_dir(crate::naming::SHM_DIR) {
        Ok(dir) => dir
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&prefix))
            .collect(),
        Err(_) => Vec::new(),
    };
    found.sort();
    found
}

pub(crate) fn process_alive(pid: u32) -> bool {
    crate::sys::process::exists(pid)
}
