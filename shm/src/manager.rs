//! Per-transport shared-memory state: the session attachment, the segment this transport allocates
//! in, segments of peers (mapped on first use), the caches, and the out-of-memory policy.

use crate::cache::{self, Cache, Released};
use crate::config::ShmConfig;
use crate::error::ShmError;
use crate::management::Management;
use crate::meta::MetaError;
use crate::naming::Names;
use crate::segment::{Segment, SegmentInit};
use crate::tlsf::Block;
use fairmq_zmq::Interrupter;
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

pub(crate) struct Manager {
    names: Names,
    config: ShmConfig,
    pid: u32,
    own: Arc<Segment>,
    segments: SegmentTable,
    cache: Mutex<Cache>,
    interrupter: Arc<Interrupter>,
    // Last: detaching may remove the session, after everything above is released.
    mng: Management,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager").field("shm_id", &self.names.shm_id()).field("segment", &self.own.id()).finish()
    }
}

impl Manager {
    pub fn new(config: &ShmConfig, interrupter: Arc<Interrupter>) -> Result<Manager, ShmError> {
        config.validate()?;
        let shm_id = config.resolved_shm_id();
        log::debug!("Generated shmid '{shm_id}' out of session id '{}'.", config.session);
        let names = Names::new(&shm_id);
        let mng = Management::attach(&names, &config.session)?;
        let own = match Self::own_segment(&names, &mng, config) {
            Ok(s) => s,
            Err(e) => {
                let _ = mng.detach(config.no_cleanup);
                return Err(e);
            }
        };
        let segments = SegmentTable::default();
        segments.insert(own.clone());
        let cache = Mutex::new(Cache::new(own.size()));
        Ok(Manager { names, config: config.clone(), pid: std::process::id(), own, segments, cache, interrupter, mng })
    }

    fn own_segment(names: &Names, mng: &Management, c: &ShmConfig) -> Result<Arc<Segment>, ShmError> {
        let id = c.segment_id;
        let path = Names::path(&names.segment(id));
        let lock = mng.lock()?;
        let (seg, created) = Segment::open_or_create(&path, &Names::path(&names.tmp()), id, c.segment_size)?;
        lock.register_segment(id, seg.size())?;
        drop(lock);
        log::debug!(
            "{} managed shared memory segment {}. Size: {} bytes. Available: {} bytes.",
            if created { "Created" } else { "Opened" },
            names.segment(id),
            seg.size(),
            seg.stats().free
        );
        if created {
            seg.apply(SegmentInit { zero: c.zero_segment_on_creation, mlock: c.mlock_segment_on_creation })?;
        }
        seg.apply(SegmentInit { zero: c.zero_segment, mlock: c.mlock_segment })?;
        Ok(Arc::new(seg))
    }

    pub fn names(&self) -> &Names {
        &self.names
    }

    pub fn config(&self) -> &ShmConfig {
        &self.config
    }

    pub fn own(&self) -> &Arc<Segment> {
        &self.own
    }

    pub fn management(&self) -> &Management {
        &self.mng
    }

    /// Segment `id`, mapped on first use.
    pub fn segment(&self, id: u16) -> Result<&Segment, MetaError> {
        if let Some(s) = self.segments.get(id) {
            return Ok(s);
        }
        let seg = Segment::open(&Names::path(&self.names.segment(id)), id).map_err(|e| {
            log::error!("Could not get segment with id '{id}': {e}");
            MetaError::Unknown { kind: "segment", id }
        })?;
        Ok(self.segments.insert(Arc::new(seg)))
    }

    /// A segment this manager has mapped (every message's segment is).
    pub fn mapped(&self, id: u16) -> &Segment {
        self.segments.get(id).expect("a message's segment is mapped before the message exists and stays mapped")
    }

    /// Allocates a block for `size` bytes aligned to `align` in this transport's segment, following
    /// the out-of-memory policy.
    pub fn allocate(&self, size: usize, align: usize) -> Result<Block, ShmError> {
        let (size64, align64) = (size as u64, (align as u64).max(1).next_power_of_two());
        let need = self.own.needed(size64, align64).ok_or(ShmError::TooLarge {
            requested: size64.saturating_add(crate::tlsf::HDR + align64),
            segment: self.own.size(),
        })?;
        if let Some(b) = self.try_allocate(size64, align64, need)? {
            return Ok(b);
        }
        let policy = self.config.bad_alloc;
        let bad_alloc = || ShmError::BadAlloc { size, alignment: align.max(16), free: self.own.stats().free };
        let mut attempts = 0;
        loop {
            // What this process holds in its caches, and the depot, are the first places to find room.
            self.flush(true);
            if let Err(e) = self.own.drain_depot() {
                log::error!("could not empty the depot: {e}");
            }
            let epoch = self.own.epoch();
            if let Some(b) = self.try_allocate(size64, align64, need)? {
                return Ok(b);
            }
            attempts += 1;
            if policy.max_attempts >= 0 && attempts >= policy.max_attempts {
                return Err(bad_alloc());
            }
            if attempts == 1 {
                log::warn!(
                    "shmem: could not create a message of size {size}, alignment: {align}, free memory: {}. \
                     Will try {} more times, in {}ms intervals",
                    self.own.stats().free,
                    if policy.max_attempts < 0 { "infinite".to_owned() } else { (policy.max_attempts - 1).to_string() },
                    policy.interval.as_millis()
                );
            }
            if self.interrupter.is_interrupted() {
                return Err(bad_alloc());
            }
            // Woken early by any free in the segment, or by an interrupt of this transport.
            self.own.wait_for_free(epoch, policy.interval);
            if self.interrupter.is_interrupted() {
                return Err(bad_alloc());
            }
        }
    }

    fn try_allocate(&self, size: u64, align: u64, need: u64) -> Result<Option<Block>, ShmError> {
        let mut cache = self.cache.lock();
        let Some(refill) = cache.refill_count(need, align) else {
            drop(cache);
            let mut out = Vec::with_capacity(1);
            self.own.allocate(size, align, self.pid, 1, &mut out)?;
            return Ok(out.pop());
        };
        if let Some(b) = cache.take(need) {
            drop(cache);
            self.own.refcount(b.offset).store((u64::from(self.pid) << 32) | 1, Ordering::Release);
            return Ok(Some(b));
        }
        let mut out = Vec::with_capacity(refill.max(crate::depot::BLOCKS));
        self.own.allocate(size, align, self.pid, refill, &mut out)?;
        let first = out.pop();
        let evicted = cache.stock(need, out);
        drop(cache);
        if !evicted.is_empty() {
            let own = self.own.id();
            cache::free_all(evicted.into_iter().map(|b| (own, b.offset)).collect(), |id| self.segments.get(id));
        }
        Ok(first)
    }

    /// Called when this process dropped the last reference to a block.
    pub fn release(&self, seg: &Segment, offset: u64, delta: u32) {
        let size = seg.block_size(offset);
        let block = Block { offset, delta, size };
        let own = seg.id() == self.own.id();
        if own {
            // Record ourselves as owner while the block sits in our cache.
            seg.refcount(offset).store(u64::from(self.pid) << 32, Ordering::Relaxed);
        }
        let wanted = seg.has_waiters();
        let flush = match self.cache.lock().release(seg, block, own, wanted) {
            Released::Cached => false,
            Released::Deferred(flush) => flush,
        };
        if flush {
            self.flush(false);
        }
    }

    /// Frees deferred blocks now; with `everything`, magazine blocks too.
    pub fn flush(&self, everything: bool) {
        let blocks = {
            let mut c = self.cache.lock();
            if everything {
                c.drain(self.own.id())
            } else if c.has_deferred() {
                c.take_deferred()
            } else {
                return;
            }
        };
        cache::free_all(blocks, |id| self.segments.get(id));
    }

    /// Wakes this process's (and others') allocations waiting for memory, so they see an interrupt.
    pub fn wake_allocators(&self) {
        self.own.wake_waiters();
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        self.flush(true);
        if let Err(e) = self.mng.detach(self.config.no_cleanup) {
            log::error!("could not detach from shared memory session {}: {e}", self.names.shm_id());
        }
    }
}

/// 256 consecutive segment ids.
type Chunk = Box<[OnceLock<Arc<Segment>>]>;

/// Segments by id: lock-free lookups; entries are added once and never removed.
struct SegmentTable {
    chunks: Box<[OnceLock<Chunk>]>,
}

impl Default for SegmentTable {
    fn default() -> Self {
        SegmentTable { chunks: (0..256).map(|_| OnceLock::new()).collect() }
    }
}

impl SegmentTable {
    fn get(&self, id: u16) -> Option<&Segment> {
        let chunk = self.chunks[usize::from(id >> 8)].get()?;
        chunk[usize::from(id & 0xff)].get().map(|s| &**s)
    }

    /// Adds `seg` unless its id is present already; returns the entry.
    fn insert(&self, seg: Arc<Segment>) -> &Segment {
        let id = seg.id();
        let chunk = self.chunks[usize::from(id >> 8)].get_or_init(|| (0..256).map(|_| OnceLock::new()).collect());
        let slot = &chunk[usize::from(id & 0xff)];
        let _ = slot.set(seg); // a concurrent first use may have won: its mapping serves as well
        slot.get().expect("just set")
    }
}
