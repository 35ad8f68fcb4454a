//! Unmanaged regions (FairMQ's `UnmanagedRegion`): big buffers the user fills (readout software
//! writes detector data straight into them) and sends pieces of as messages, zero-copy. When the
//! last reference to a piece is released, in whatever process, the region's creator gets its
//! callback with the piece's (data, size, hint), or the bulk callback with a batch of them.
//!
//! A region is a shared-memory object `fmqrs_<shmId>_rg_<id>` or, with a path, a file
//! `<path>fmqrs_<shmId>_rg_<id>`; both are registered in the session (found by id by other
//! processes, announced in region events, removed by cleanup and by the monitor).

use crate::error::ShmError;
use crate::region::ack_queue::{Ack, AckQueue};
use crate::region::map::{RegionMap, BATCH};
use crate::session::registry::RegionEntry;
use crate::sys::files;
use crate::transport::attachment::Attachment;
pub use fairmq_zmq::vocabulary::region::{BulkCallback, RegionBlock, RegionCallback, RegionConfig, SingleCallback};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A region this transport created (or adopted from an external creator).
///
/// # Examples
///
/// Data written once into a region is sent without a copy. When the receiver releases it, the
/// region's callback tells the creator, with the hint that the creator gave.
///
/// ```
/// use fairmq_shm::{RegionCallback, RegionConfig, ShmConfig, Transport};
/// use fairmq_zmq::SocketType;
/// use std::time::Duration;
///
/// let mut config = ShmConfig::new("doc", &format!("doc-region-{}", std::process::id()));
/// config.segment_size = 16 << 20;
/// let t = Transport::new(&config)?;
/// let (released, back) = std::sync::mpsc::channel();
/// let callback = RegionCallback::Single(Box::new(move |b| { let _ = released.send((b.offset, b.hint)); }));
/// let region = t.create_region(1 << 20, callback, &RegionConfig::default())?;
/// region.write(4096, b"detector data")?;
///
/// let push = t.socket(SocketType::Push, "data")?;
/// let pull = t.socket(SocketType::Pull, "data")?;
/// pull.bind("inproc://doc-region")?;
/// push.connect("inproc://doc-region")?;
/// push.send(&mut t.new_message_from_region(&region, 4096, 13, 42)?, 1000)?;
/// let mut msg = t.new_message();
/// pull.receive(&mut msg, 1000)?;
/// assert_eq!(msg.data(), b"detector data");
/// drop(msg); // the last holder: the piece goes back to the creator
/// assert_eq!(back.recv_timeout(Duration::from_secs(10))?, (4096, 42));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Region {
    map: Arc<RegionMap>,
    mgr: Arc<Attachment>,
    receiver: Option<Receiver>,
    linger_ms: AtomicU64,
    remove_on_destruction: bool,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region").field("id", &self.id()).field("size", &self.size()).finish()
    }
}

impl Region {
    /// Creates region `cfg.id` (or the next automatic id) with `size` bytes. If an external creator
    /// already registered a region with that id, adopts it instead. Then starts delivering
    /// acknowledgements to `callback`.
    pub(crate) fn create(
        mgr: &Arc<Attachment>,
        size: u64,
        callback: RegionCallback,
        cfg: &RegionConfig,
    ) -> Result<Region, ShmError> {
        crate::region::map::check_creation_flags(cfg.creation_flags)?;
        let map = open_as_controller(mgr, size, cfg)?;
        // Until the `Region` exists, a failure only gives up control of the region. It does not
        // remove the region, as `Region`'s `Drop` would: an adopted region belongs to its creator,
        // and another process may be using it.
        let undo = |e: ShmError| {
            map.controlled.store(false, Ordering::Release);
            e
        };
        let data = map.mapping();
        if cfg.lock || cfg.creation_flags & libc::MAP_LOCKED != 0 {
            data.lock_in_memory()
                .map_err(|e| undo(ShmError::io("Could not lock region", &name_of(mgr, &map.entry), e)))?;
        }
        if cfg.zero {
            data.zero(0, data.len()).map_err(|e| undo(ShmError::io("zeroing region", &name_of(mgr, &map.entry), e)))?;
        }
        let receiver = if matches!(callback, RegionCallback::None) {
            None
        } else {
            let q = map.queue().ok_or_else(|| undo(ShmError::Config("region has no acknowledgement queue".into())))?;
            q.claim_consumer(mgr.owner(), |mark| crate::session::liveness::owner_alive(mgr.management(), mark))
                .map_err(|mark| {
                    let attached = crate::session::liveness::attached(mgr.management());
                    let pid = attached.iter().find(|a| a.owner == mark).map_or(0, |a| a.pid);
                    undo(ShmError::Config(format!(
                        "region {} already has a controller with a callback (pid {pid})",
                        map.id()
                    )))
                })?;
            match Receiver::start(map.clone(), callback) {
                Ok(r) => Some(r),
                Err(e) => {
                    q.release_consumer(mgr.owner());
                    return Err(undo(e));
                }
            }
        };
        Ok(Region {
            map,
            mgr: mgr.clone(),
            receiver,
            linger_ms: AtomicU64::new(cfg.linger.as_millis() as u64),
            remove_on_destruction: cfg.remove_on_destruction,
        })
    }

    /// Region id.
    pub fn id(&self) -> u16 {
        self.map.id()
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.map.size() as usize
    }

    /// Address of the region's first byte in this process. Any process of the session may read the
    /// region at any time. Write only to pieces that no message currently refers to.
    pub fn data_ptr(&self) -> *mut u8 {
        self.map.base()
    }

    /// Copies `bytes` into the region at `offset`. The write is refused while a message of this
    /// process refers to any of those bytes, because the message's `data()` could be reading them.
    ///
    /// This check does not cover messages in other processes. For those, FairMQ's contract
    /// applies: write only to pieces that were acknowledged or never sent.
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<(), ShmError> {
        let (off, len) = (offset as u64, bytes.len() as u64);
        self.map.check(off, len)?;
        let dst = self.map.ptr(off, bytes.len());
        self.map
            .write_unheld(off, len, || {
                // SAFETY: `RegionMap::check` verified that the range lies inside the mapping. No
                // message of this process refers to the range. No message can take it while this
                // runs, because this thread holds the lock of the held ranges. So no `&[u8]` of
                // this process sees the bytes change.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) }
            })
            .ok_or(ShmError::RegionPieceInUse { id: self.map.id(), offset: off, size: len })
    }

    /// How long dropping the handle waits for outstanding acknowledgements.
    pub fn linger(&self) -> Duration {
        Duration::from_millis(self.linger_ms.load(Ordering::Relaxed))
    }

    /// Sets the linger.
    pub fn set_linger(&self, linger: Duration) {
        self.linger_ms.store(linger.as_millis() as u64, Ordering::Relaxed);
    }

    /// Messages made from this region whose pieces were not acknowledged yet.
    pub fn outstanding(&self) -> i64 {
        self.map.outstanding.load(Ordering::Acquire)
    }

    pub(crate) fn map(&self) -> &Arc<RegionMap> {
        &self.map
    }

    pub(crate) fn attachment(&self) -> &Arc<Attachment> {
        &self.mgr
    }
}

fn name_of(mgr: &Attachment, e: &RegionEntry) -> String {
    e.data_path(mgr.names()).display().to_string()
}

/// Picks the region's id, creates and registers the region's object or opens the existing one,
/// and opens or creates its queue. All of this happens under the session lock.
fn open_as_controller(mgr: &Arc<Attachment>, size: u64, cfg: &RegionConfig) -> Result<Arc<RegionMap>, ShmError> {
    let names = mgr.names();
    let lock = mgr.management().lock()?;
    let id = match cfg.id {
        Some(id) => id,
        None => lock.next_region_id()?,
    };
    if let Some(existing) = mgr.acks().get(id) {
        if existing.controlled.swap(true, Ordering::AcqRel) {
            return Err(ShmError::RegionExists { id });
        }
        return Ok(existing); // viewed so far: this process controls it now
    }
    let registered = crate::session::registry::find(mgr.management(), id);
    let (entry, data) = match registered {
        Some(e) if e.destroyed => return Err(ShmError::RegionIdTaken { id }),
        Some(e) => {
            if size != 0 && size != e.size {
                return Err(ShmError::RegionSizeMismatch { mapped: e.size, configured: size });
            }
            let populate = cfg.creation_flags & libc::MAP_POPULATE != 0;
            let data = RegionMap::map_data(&e, names, populate)?;
            log::debug!("Opened unmanaged shared memory region: {} (controller)", name_of(mgr, &e));
            (e, data)
        }
        None => {
            if size == 0 {
                return Err(ShmError::Config(format!("region {id}: size must be greater than 0")));
            }
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
            let populate = cfg.creation_flags & libc::MAP_POPULATE != 0;
            let data = crate::region::map::create_data(names, &entry, &names.tmp_for(mgr.owner()), populate)?;
            // Create the queue before the registry names the region. A viewer that finds the
            // region must also find its queue; otherwise the viewer's acknowledgements would be
            // dropped for good. An event subscriber can find the region at once.
            let registered = AckQueue::open_or_create(names, id).and_then(|_| lock.register_region(&entry));
            registered.inspect_err(|_| {
                let _ = std::fs::remove_file(entry.data_path(names));
                // Remove the queue only if it is ours. `files::remove_own` refuses another user's
                // queue and never removes it.
                let _ = files::remove_own(&crate::Names::path(&names.region_queue(id)));
            })?;
            log::debug!("Created unmanaged shared memory region: {} (controller)", name_of(mgr, &entry));
            (entry, data)
        }
    };
    let queue = AckQueue::open_or_create(names, id)?;
    drop(lock);
    let mine = Arc::new(RegionMap::new(entry, data, Some(queue), true, Some(mgr.management().clone())));
    let map = mgr.acks().insert(mine.clone());
    // This process may have mapped the region as a viewer in the meantime, because an event
    // subscriber of this process looks at a region as soon as it is registered. This process now
    // controls that view, unless another of its threads took control of it first. Without this
    // step, the creator would hold a mere view, and its callback would never hear of its pieces.
    if !Arc::ptr_eq(&map, &mine) && map.controlled.swap(true, Ordering::AcqRel) {
        return Err(ShmError::RegionExists { id: map.id() });
    }
    Ok(map)
}

impl Drop for Region {
    fn drop(&mut self) {
        let id = self.id();
        // Flush this process's own releases first, so that the receiver sees them before it stops.
        let linger = self.linger();
        self.map.flush(Instant::now() + linger, false);
        if let Some(r) = self.receiver.take() {
            r.stop(linger);
        }
        if let Some(q) = self.map.queue() {
            q.release_consumer(self.mgr.owner());
        }
        self.map.controlled.store(false, Ordering::Release);
        let names = self.mgr.names();
        let lock = match self.mgr.management().lock() {
            Ok(l) => l,
            Err(e) => {
                log::error!("could not destroy region {id}: {e}");
                return;
            }
        };
        if self.remove_on_destruction {
            lock.mark_region_destroyed(id);
            let path = self.map.entry.data_path(names);
            if std::fs::remove_file(&path).is_ok() {
                log::trace!("Region '{}' destroyed.", path.display());
            }
            let _ = std::fs::remove_file(crate::Names::path(&names.region_queue(id)));
            self.mgr.acks().remove(id);
        } else {
            log::debug!(
                "Skipping removal of {} unmanaged region, because RegionConfig::removeOnDestruction is false",
                names.region(id)
            );
        }
    }
}

/// The controller's thread that takes acknowledgements off the queue and calls the callback.
struct Receiver {
    stop: Arc<(AtomicU64, std::sync::atomic::AtomicBool)>,
    thread: JoinHandle<()>,
    map: Arc<RegionMap>,
}

impl Receiver {
    fn start(map: Arc<RegionMap>, callback: RegionCallback) -> Result<Receiver, ShmError> {
        let stop = Arc::new((AtomicU64::new(0), std::sync::atomic::AtomicBool::new(false)));
        let (m, s) = (map.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name(format!("fmq-region-{}", map.id()))
            .spawn(move || receive(&m, callback, &s))
            .map_err(|e| ShmError::io("starting the region acknowledgement receiver", "fmq-region", e))?;
        Ok(Receiver { stop, thread, map })
    }

    /// Stops the thread once the outstanding pieces are acknowledged, or when `linger` has passed.
    fn stop(self, linger: Duration) {
        self.stop.0.store(linger.as_millis() as u64, Ordering::Relaxed);
        self.stop.1.store(true, Ordering::Release);
        if let Some(q) = self.map.queue() {
            q.wake_consumer();
        }
        let _ = self.thread.join();
    }
}

fn receive(map: &RegionMap, mut callback: RegionCallback, stop: &(AtomicU64, std::sync::atomic::AtomicBool)) {
    let q = map.queue().expect("a region with a callback has a queue");
    let mut acks = Vec::with_capacity(BATCH);
    let mut blocks = Vec::with_capacity(BATCH);
    let mut deadline = None;
    loop {
        let epoch = q.data_epoch();
        if take_batch(map, q, &mut callback, &mut acks, &mut blocks) > 0 {
            continue;
        }
        if stop.1.load(Ordering::Acquire) {
            let d =
                *deadline.get_or_insert_with(|| Instant::now() + Duration::from_millis(stop.0.load(Ordering::Relaxed)));
            let now = Instant::now();
            if map.outstanding.load(Ordering::Acquire) <= 0 || now >= d {
                let left = map.outstanding.load(Ordering::Acquire);
                if left > 0 {
                    log::debug!("region {}: stopped with {left} pieces not acknowledged", map.id());
                }
                return;
            }
            q.wait_for_data(epoch, (d - now).min(Duration::from_millis(100)));
        } else {
            q.wait_for_data(epoch, Duration::from_millis(100));
        }
    }
}

/// Takes up to one batch off `q` into `acks`, and delivers the valid pieces among them. Returns how
/// many acknowledgements it took; 0 means that the queue was empty.
///
/// Other processes wrote what `q` holds, so each piece is checked against the region before it
/// is delivered.
pub(crate) fn take_batch(
    map: &RegionMap,
    q: &AckQueue,
    callback: &mut RegionCallback,
    acks: &mut Vec<Ack>,
    blocks: &mut Vec<RegionBlock>,
) -> usize {
    acks.clear();
    let n = q.pop(BATCH, acks);
    if n > 0 {
        deliver(map, callback, acks, blocks);
    }
    n
}

fn deliver(map: &RegionMap, callback: &mut RegionCallback, acks: &[Ack], blocks: &mut Vec<RegionBlock>) {
    blocks.clear();
    for a in acks {
        match map.check(a.offset, a.size) {
            Ok(()) => blocks.push(RegionBlock {
                ptr: map.ptr(a.offset, a.size as usize),
                offset: a.offset,
                size: a.size as usize,
                hint: a.hint,
            }),
            Err(e) => log::error!("region {}: invalid acknowledgement dropped: {e}", map.id()),
        }
    }
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match callback {
        RegionCallback::None => {}
        RegionCallback::Single(f) => blocks.iter().for_each(f),
        RegionCallback::Bulk(f) => f(blocks),
    }));
    if run.is_err() {
        log::error!("region {}: the release callback panicked", map.id());
    }
    map.outstanding.fetch_sub(blocks.len() as i64, Ordering::AcqRel);
}
