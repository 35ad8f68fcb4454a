//! A session's managed segments and unmanaged regions made without joining it (FairMQ's
//! `shmem::Segment` and `shmem::UnmanagedRegion`): a program preallocates (and locks, zeroes) them,
//! and the transports that join the session later use them. A transport opens the segment of its
//! `segment_id` if it exists, and [`Transport::create_region`](crate::Transport::create_region) with
//! a region's id adopts that region.
//!
//! Both register in the session, creating its management segment if needed, but hold no liveness
//! slot: they keep no session alive. So whoever removes the session removes them too: the monitor's
//! cleanup, and the last transport to leave unless `--shm-no-cleanup` (as in FairMQ, whose last
//! transport cleans up).

use crate::error::ShmError;
use crate::naming::Names;
use crate::region::ack_queue::AckQueue;
use crate::region::map::{check_creation_flags, create_data, RegionMap};
use crate::segment::{Segment, SegmentInit};
use crate::session::management::Management;
use crate::session::registry::{self, RegionEntry};
use crate::shmid::check_shm_id;
use crate::sys::files;
use crate::sys::mapping::Mapping;
use fairmq_zmq::vocabulary::region::RegionConfig;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A managed segment of a session, created or opened without a transport (FairMQ's
/// `shmem::Segment`). Dropping an `ExternalSegment` only unmaps the segment. The segment itself
/// goes when the session is removed.
///
/// # Examples
///
/// The segment is preallocated before any transport exists. A transport of the session then
/// allocates its messages from this segment.
///
/// ```
/// use fairmq_shm::external::ExternalSegment;
/// use fairmq_shm::{ShmConfig, Transport};
///
/// let session = format!("doc-external-segment-{}", std::process::id());
/// let shm_id = fairmq_shm::shm_id(&session);
/// let segment = ExternalSegment::open_or_create(&shm_id, 0, 16 << 20)?;
/// segment.zero()?;
/// let mut config = ShmConfig::new("doc", &session);
/// config.segment_size = 16 << 20;
/// let t = Transport::new(&config)?;
/// assert_eq!(t.segment_stats().size, segment.size());
/// let free = segment.free_memory();
/// let msg = t.new_message_with_size(1 << 20)?;
/// assert!(segment.free_memory() < free);
/// drop((msg, t)); // the last transport removes the session, this segment too
/// # assert!(fairmq_shm::monitor::cleanup(&shm_id)?.iter().all(|(_, removed)| !removed));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ExternalSegment {
    seg: Segment,
}

impl ExternalSegment {
    /// Opens managed segment `id` of session `shm_id` (see [`shm_id`](crate::shm_id)), or creates
    /// it with `size` bytes (see [`file_size_for`](crate::file_size_for)). Then registers the
    /// segment in the session, and region events report it as created. An existing segment keeps
    /// its size.
    pub fn open_or_create(shm_id: &str, id: u16, size: u64) -> Result<ExternalSegment, ShmError> {
        check_shm_id(shm_id)?;
        let names = Names::new(shm_id);
        let path = Names::path(&names.segment(id));
        let (_, (seg, created)) = Management::with_session(&names, shm_id, |lock| {
            let (seg, created) = Segment::open_or_create(&path, &Names::path(&names.tmp()), id, size)?;
            if let Err(e) = lock.register_segment(id, seg.size()) {
                // Nobody would ever remove an unregistered segment, so remove the one this call
                // created.
                if created {
                    let _ = std::fs::remove_file(&path);
                }
                return Err(e);
            }
            Ok((seg, created))
        })?;
        log::debug!(
            "{} managed shared memory segment {} (outside a transport). Size: {} bytes.",
            if created { "Created" } else { "Opened" },
            names.segment(id),
            seg.size()
        );
        Ok(ExternalSegment { seg })
    }

    /// Segment id.
    pub fn id(&self) -> u16 {
        self.seg.id()
    }

    /// Size in bytes of the segment's file, bookkeeping included.
    pub fn size(&self) -> u64 {
        self.seg.size()
    }

    /// Address of the segment's first byte in this process. The segment's allocator owns these
    /// bytes, so use them only through messages.
    pub fn data_ptr(&self) -> *mut u8 {
        self.seg.base_address() as *mut u8
    }

    /// Number of free bytes, as [`monitor::free_memory`](crate::monitor::free_memory) reports them.
    pub fn free_memory(&self) -> u64 {
        self.seg.stats().free
    }

    /// Writes zeros over the segment's free memory. It does so under the allocator's lock, so it
    /// is safe while transports use the segment.
    pub fn zero(&self) -> Result<(), ShmError> {
        self.seg.apply(SegmentInit { zero: true, mlock: false })
    }

    /// Locks the segment's pages in RAM with `mlock`. This needs the privilege to lock memory or a
    /// large enough `RLIMIT_MEMLOCK`.
    pub fn lock(&self) -> Result<(), ShmError> {
        self.seg.apply(SegmentInit { zero: false, mlock: true })
    }

    /// Unlinks managed segment `id` of session `shm_id` (FairMQ's `Segment::Remove`). Returns
    /// false if there was no such segment. The session's registry still lists the segment
    /// afterwards. This does no harm: a later cleanup only fails to remove it again.
    pub fn remove(shm_id: &str, id: u16) -> Result<bool, ShmError> {
        check_shm_id(shm_id)?;
        files::remove(&Names::path(&Names::new(shm_id).segment(id))).map_err(|e| ShmError::file("removing segment", e))
    }
}

/// An unmanaged region of a session, created or opened without a transport (FairMQ's
/// `shmem::UnmanagedRegion`, a controller). A transport of the session adopts the region by its
/// id.
///
/// Dropping an `ExternalRegion` removes the region unless `remove_on_destruction` is false. The
/// drop removes the region even when a transport still uses it: as in FairMQ, that is the owner's
/// responsibility. If the session was removed in the meantime, the drop removes nothing, because
/// whatever now has the same names belongs to another session.
///
/// # Examples
///
/// ```
/// use fairmq_shm::external::ExternalRegion;
/// use fairmq_shm::{RegionCallback, RegionConfig, ShmConfig, Transport};
///
/// let session = format!("doc-external-region-{}", std::process::id());
/// let shm_id = fairmq_shm::shm_id(&session);
/// let cfg = RegionConfig { id: Some(7), remove_on_destruction: false, ..Default::default() };
/// let external = ExternalRegion::open_or_create(&shm_id, 1 << 20, &cfg)?;
/// let mut config = ShmConfig::new("doc", &session);
/// config.segment_size = 16 << 20;
/// let t = Transport::new(&config)?;
/// let adopted = t.create_region(0, RegionCallback::None, &cfg)?; // size 0: the existing size
/// assert_eq!((adopted.id(), adopted.size()), (7, external.size()));
/// drop((adopted, t)); // the last transport removes the session, this region too
/// # assert!(fairmq_shm::monitor::cleanup(&shm_id)?.iter().all(|(_, removed)| !removed));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ExternalRegion {
    mng: Arc<Management>,
    entry: RegionEntry,
    data: Mapping,
    remove_on_destruction: bool,
    linger_ms: AtomicU64,
}

impl std::fmt::Debug for ExternalRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalRegion").field("id", &self.entry.id).field("size", &self.entry.size).finish()
    }
}

impl ExternalRegion {
    /// Opens region `cfg.id` of session `shm_id`, or creates it with `size` bytes. `cfg.id` is
    /// required. A newly created region is registered in the session, and region events report it
    /// as created.
    ///
    /// An existing region must have `size` bytes; a `size` of 0 takes the existing size. An id that
    /// was destroyed before in the session is not used again. `cfg.lock` (or `MAP_LOCKED`) and
    /// `cfg.zero` apply as they do for a transport's region. The callbacks are those of the
    /// transport that adopts the region.
    pub fn open_or_create(shm_id: &str, size: u64, cfg: &RegionConfig) -> Result<ExternalRegion, ShmError> {
        check_shm_id(shm_id)?;
        let id = cfg.id.ok_or_else(|| ShmError::Config("a region made outside a transport needs an id".into()))?;
        check_creation_flags(cfg.creation_flags)?;
        let names = Names::new(shm_id);
        let populate = cfg.creation_flags & libc::MAP_POPULATE != 0;
        let (mng, (entry, data, created)) = Management::with_session(&names, shm_id, |lock| {
            match registry::find(lock.management(), id) {
                Some(e) if e.destroyed => Err(ShmError::RegionIdTaken { id }),
                Some(e) if size != 0 && size != e.size => {
                    Err(ShmError::RegionSizeMismatch { mapped: e.size, configured: size })
                }
                Some(e) => {
                    let data = RegionMap::map_data(&e, &names, populate)?;
                    Ok((e, data, false))
                }
                None if size == 0 => Err(ShmError::Config(format!("region {id}: size must be greater than 0"))),
                None => {
                    let entry = RegionEntry {
                        id,
                        size,
                        creation_flags: cfg.creation_flags,
                        user_flags: cfg.user_flags,
                        rc_segment_size: cfg.rc_segment_size,
                        path: cfg.path.clone(),
                        creator: std::process::id(),
                        destroyed: false,
                    };
                    let data = create_data(&names, &entry, &names.tmp(), populate)?;
                    // Create the acknowledgement queue before the registry lists the region. The
                    // viewers of the adopting transport's region find the region in the registry,
                    // and they must find its queue too.
                    let registered = AckQueue::open_or_create(&names, id).and_then(|_| lock.register_region(&entry));
                    registered.inspect_err(|_| {
                        let _ = std::fs::remove_file(entry.data_path(&names));
                        let _ = files::remove_own(&Names::path(&names.region_queue(id)));
                    })?;
                    Ok((entry, data, true))
                }
            }
        })?;
        log::debug!(
            "{} unmanaged shared memory region {} (outside a transport). Size: {} bytes.",
            if created { "Created" } else { "Opened" },
            entry.data_path(&names).display(),
            entry.size
        );
        let mut region = ExternalRegion {
            mng,
            entry,
            data,
            remove_on_destruction: cfg.remove_on_destruction,
            linger_ms: AtomicU64::new(cfg.linger.as_millis() as u64),
        };
        let init = || -> Result<(), ShmError> {
            if cfg.lock || cfg.creation_flags & libc::MAP_LOCKED != 0 {
                region.lock()?;
            }
            if cfg.zero {
                region.zero()?;
            }
            Ok(())
        };
        if let Err(e) = init() {
            // The drop removes a region that this call created. A region that this call only
            // opened still belongs to its creator, so the drop leaves it.
            region.remove_on_destruction = created;
            return Err(e);
        }
        Ok(region)
    }

    /// Region id.
    pub fn id(&self) -> u16 {
        self.entry.id
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.entry.size as usize
    }

    /// Address of the first byte in this process (for filling the region in place).
    pub fn data_ptr(&self) -> *mut u8 {
        self.data.base()
    }

    /// Writes zeros over the whole region, touching every page. Call it only while no message
    /// refers to any piece of the region.
    pub fn zero(&self) -> Result<(), ShmError> {
        self.data.zero(0, self.size()).map_err(|e| ShmError::io("zeroing region", &self.name(), e))
    }

    /// Locks the region's pages in RAM with `mlock`. This needs the privilege to lock memory or a
    /// large enough `RLIMIT_MEMLOCK`.
    pub fn lock(&self) -> Result<(), ShmError> {
        self.data.lock_in_memory().map_err(|e| ShmError::io("Could not lock region", &self.name(), e))
    }

    /// The linger setting of FairMQ's API. Nothing here waits for it: acknowledgements go to the
    /// adopting transport, and that transport's region has its own linger.
    pub fn linger(&self) -> Duration {
        Duration::from_millis(self.linger_ms.load(Ordering::Relaxed))
    }

    /// Sets the linger.
    pub fn set_linger(&self, linger: Duration) {
        self.linger_ms.store(linger.as_millis() as u64, Ordering::Relaxed);
    }

    /// Whether dropping the handle removes the region.
    pub fn remove_on_destruction(&self) -> bool {
        self.remove_on_destruction
    }

    fn name(&self) -> String {
        self.entry.data_path(self.mng.names()).display().to_string()
    }
}

impl Drop for ExternalRegion {
    fn drop(&mut self) {
        let (id, names) = (self.entry.id, self.mng.names());
        if !self.remove_on_destruction {
            log::debug!(
                "Skipping removal of {} unmanaged region, because removeOnDestruction is false",
                names.region(id)
            );
            return;
        }
        let lock = match self.mng.lock() {
            Ok(l) => l,
            Err(e) => {
                log::error!("could not destroy region {id}: {e}");
                return;
            }
        };
        // A cleanup removed the region with its session. The names may belong to a new session
        // by now, so remove nothing.
        if !self.mng.still_linked() {
            log::debug!("Region {} went with its session.", names.region(id));
            return;
        }
        if registry::find(&self.mng, id).is_some_and(|e| !e.destroyed) {
            lock.mark_region_destroyed(id);
        }
        let path = self.entry.data_path(names);
        if std::fs::remove_file(&path).is_ok() {
            log::trace!("Region '{}' destroyed.", path.display());
        }
        let _ = std::fs::remove_file(Names::path(&names.region_queue(id)));
    }
}
