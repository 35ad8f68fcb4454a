//! One process's mapping of an unmanaged region ([`RegionMap`]): the region's bytes, its
//! acknowledgement queue, and the acknowledgements that this process collected but has not sent
//! yet.
//!
//! The region's controller holds one: the process that created or adopted the region. So does
//! every viewer: a process that received a message of the region. Pieces released in this process
//! are batched as in FairMQ: up to [`BATCH`] (256) at a time, sent at least every 500 ms. The
//! transport's acknowledgement thread pushes them to the queue (see `acks`).
//!
//! A [`RegionMap`] also tracks the byte ranges that this process's messages refer to, so that a
//! write through the region never touches bytes that a message may borrow
//! ([`RegionMap::write_unheld`]).
//!
//! [`create_data`] makes a region's bytes. Both kinds of creator use it: a transport, and a
//! program outside one (`external`).

use crate::error::ShmError;
use crate::meta::MetaError;
use crate::region::ack_queue::{Ack, AckQueue};
use crate::session::management::Management;
use crate::session::registry::RegionEntry;
use crate::sys::files;
use crate::sys::mapping::{Created, Mapping};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Acknowledgements sent in one go (FairMQ's batch size).
pub(crate) const BATCH: usize = 256;

/// The `mmap` flags a region may be created with.
const SUPPORTED_FLAGS: i32 = libc::MAP_POPULATE | libc::MAP_LOCKED;

/// Refuses creation flags other than `MAP_POPULATE` and `MAP_LOCKED`. The check applies to every
/// creator of a region: a transport, and a creator outside one.
pub(crate) fn check_creation_flags(flags: i32) -> Result<(), ShmError> {
    if flags & !SUPPORTED_FLAGS != 0 {
        return Err(ShmError::Config(format!(
            "unsupported region creation flags {flags:#x}: MAP_POPULATE and MAP_LOCKED are supported"
        )));
    }
    Ok(())
}

/// Creates the bytes of region `e` without races, and maps them. A shared-memory object is created
/// under the temporary name `shm_tmp`; a file-backed region uses a temporary name under its own
/// path instead.
///
/// Every region is created under the session lock and registered at once. So an object that
/// exists but is not registered is a leftover of a session that was never cleaned up, and
/// `create_data` replaces it.
pub(crate) fn create_data(
    names: &crate::Names,
    e: &RegionEntry,
    shm_tmp: &str,
    populate: bool,
) -> Result<Mapping, ShmError> {
    let path = e.data_path(names);
    let name = path.display().to_string();
    let tmp = if e.path.is_empty() {
        crate::Names::path(shm_tmp)
    } else {
        std::path::PathBuf::from(format!("{}{}", e.path, names.tmp()))
    };
    let size = usize::try_from(e.size).map_err(|_| ShmError::Config(format!("region size {} too large", e.size)))?;
    for attempt in 0..2 {
        match Mapping::create(&path, &tmp, size, |_| Ok(())) {
            Ok(Created::New(_)) => {
                return Mapping::open_with(&path, populate).map_err(|err| ShmError::file("opening region", err));
            }
            Ok(Created::Exists) if attempt == 0 => {
                // `files::remove_own` removes only a file of ours. It refuses another user's file
                // or a link, and never removes them.
                files::remove_own(&path).map_err(|err| ShmError::file("removing leftover region", err))?;
                log::warn!("removed leftover region object '{name}' of an earlier session");
            }
            Ok(Created::Exists) => break,
            Err(err) => {
                return Err(ShmError::file(
                    "Failed to initialize file for shared memory region (size: the region's)",
                    err,
                ))
            }
        }
    }
    Err(ShmError::RegionExists { id: e.id })
}

pub(crate) struct RegionMap {
    pub entry: RegionEntry,
    data: Mapping,
    queue: Option<AckQueue>,
    pending: Mutex<Vec<Ack>>,
    /// Number of messages made from the region minus the number of pieces acknowledged. Only the
    /// controller keeps this count.
    pub outstanding: AtomicI64,
    pub controlled: AtomicBool,
    /// Byte ranges that messages of this process refer to now, each with the number of such
    /// messages. A write through the region must not touch these bytes, because a message's
    /// `data()` may borrow them.
    held: Mutex<BTreeMap<(u64, u64), u32>>,
    /// The session, used to check whether the queue's consumer is still alive. With `None`, a
    /// registered consumer mark is trusted to be alive.
    mng: Option<Arc<Management>>,
}

impl std::fmt::Debug for RegionMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionMap").field("id", &self.entry.id).field("size", &self.entry.size).finish()
    }
}

impl RegionMap {
    /// Wraps a mapped region whose size was checked against `entry`.
    pub(crate) fn new(
        entry: RegionEntry,
        data: Mapping,
        queue: Option<AckQueue>,
        controlled: bool,
        mng: Option<Arc<Management>>,
    ) -> RegionMap {
        debug_assert!(data.len() as u64 >= entry.size);
        RegionMap {
            entry,
            data,
            queue,
            pending: Mutex::new(Vec::new()),
            outstanding: AtomicI64::new(0),
            controlled: AtomicBool::new(controlled),
            held: Mutex::new(BTreeMap::new()),
            mng,
        }
    }

    /// Opens the bytes of a registered region. Refuses a file shorter than the registry's size,
    /// because touching memory past the file's end would raise SIGBUS.
    pub(crate) fn map_data(entry: &RegionEntry, names: &crate::Names, populate: bool) -> Result<Mapping, ShmError> {
        let path = entry.data_path(names);
        let data = Mapping::open_with(&path, populate).map_err(|e| ShmError::file("opening region", e))?;
        if (data.len() as u64) < entry.size {
            return Err(ShmError::RegionSizeMismatch { mapped: data.len() as u64, configured: entry.size });
        }
        Ok(data)
    }

    pub(crate) fn id(&self) -> u16 {
        self.entry.id
    }

    pub(crate) fn size(&self) -> u64 {
        self.entry.size
    }

    pub(crate) fn queue(&self) -> Option<&AckQueue> {
        self.queue.as_ref()
    }

    pub(crate) fn mapping(&self) -> &Mapping {
        &self.data
    }

    /// Local address of the region's first byte.
    pub(crate) fn base(&self) -> *mut u8 {
        self.data.base()
    }

    /// Checks that `size` bytes at `offset` lie inside the region.
    pub(crate) fn check(&self, offset: u64, size: u64) -> Result<(), MetaError> {
        match offset.checked_add(size) {
            Some(end) if end <= self.size() => Ok(()),
            _ => Err(MetaError::OutOfBounds { segment: self.id(), offset, size }),
        }
    }

    /// Pointer to `size` bytes at `offset`. The range must have passed `RegionMap::check`, which
    /// runs before any message of the range exists.
    pub(crate) fn ptr(&self, offset: u64, size: usize) -> *mut u8 {
        self.data.range_ptr(offset as usize, size).expect("region range checked before use")
    }

    /// Adds a released piece to the pending acknowledgements. Returns true when a full batch is
    /// pending and should be sent now.
    pub(crate) fn released(&self, ack: Ack) -> bool {
        let mut p = self.pending.lock();
        p.push(ack);
        p.len() >= BATCH
    }

    /// Pushes the pending acknowledgements to the queue in batches, and waits for room until
    /// `deadline`. With `keep`, what did not fit by then stays pending, and the next round sends
    /// it. Without `keep`, it is dropped and an error is logged.
    ///
    /// When the queue has no consumer, or its consumer is dead, the acknowledgements are dropped.
    /// A region created without a callback has no consumer.
    pub(crate) fn flush(&self, deadline: Instant, keep: bool) {
        let mut acks = std::mem::take(&mut *self.pending.lock());
        if acks.is_empty() {
            return;
        }
        let Some(q) = self.queue.as_ref().filter(|q| self.consumer_alive(q)) else {
            log::trace!("region {}: no one takes acknowledgements, {} dropped", self.id(), acks.len());
            return;
        };
        let mut sent = 0;
        while sent < acks.len() {
            let epoch = q.space_epoch();
            let end = (sent + BATCH).min(acks.len());
            match q.push(&acks[sent..end]) {
                Ok(n) => sent += n,
                Err(e) => {
                    log::error!("region {}: cannot acknowledge {} blocks: {e}", self.id(), acks.len() - sent);
                    return;
                }
            }
            if sent == acks.len() {
                return;
            }
            if !self.consumer_alive(q) {
                log::debug!(
                    "region {}: its controller left, {} acknowledgements dropped",
                    self.id(),
                    acks.len() - sent
                );
                return;
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            q.wait_for_space(epoch, (deadline - now).min(Duration::from_millis(10)));
        }
        let rest = acks.split_off(sent);
        if keep {
            let mut p = self.pending.lock();
            let newer = std::mem::replace(&mut *p, rest);
            p.extend(newer);
        } else {
            log::error!(
                "region {}: acknowledgement queue stayed full, {} acknowledgements lost",
                self.id(),
                rest.len()
            );
        }
    }

    /// Whether the queue's consumer is registered and, as far as the session can tell, alive. A
    /// registered mark is not enough: a controller killed without cleanup leaves its mark behind,
    /// and pushes would wait for it in vain.
    fn consumer_alive(&self, q: &AckQueue) -> bool {
        match (q.consumer(), &self.mng) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(mark), Some(m)) => crate::session::liveness::owner_alive(m, mark),
        }
    }

    /// Counts a message made from the region.
    pub(crate) fn made_message(&self) {
        self.outstanding.fetch_add(1, Ordering::Relaxed);
    }

    /// Records that a message of this process refers to `size` bytes at `offset` from now on.
    pub(crate) fn hold(&self, offset: u64, size: u64) {
        *self.held.lock().entry((offset, offset.saturating_add(size))).or_insert(0) += 1;
    }

    /// Records that a message of this process no longer refers to the bytes it
    /// [held](RegionMap::hold).
    pub(crate) fn unhold(&self, offset: u64, size: u64) {
        let mut held = self.held.lock();
        let key = (offset, offset.saturating_add(size));
        if let Some(n) = held.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                held.remove(&key);
            }
        }
    }

    /// Runs `write` unless a message of this process refers to a byte of `offset..offset + size`.
    /// Returns `None` when one does. While `write` runs, no message can take a byte of the range.
    pub(crate) fn write_unheld<T>(&self, offset: u64, size: u64, write: impl FnOnce() -> T) -> Option<T> {
        let held = self.held.lock();
        let end = offset.saturating_add(size);
        let overlaps = held.range(..(end, 0)).any(|(&(s, e), _)| e > s && s < end && e > offset);
        (!overlaps).then(write)
    }
}
