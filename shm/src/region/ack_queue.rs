//! A region's acknowledgement queue ([`AckQueue`]), the file `fmqrs_<shmId>_rgq_<r>`. Released
//! pieces of the region travel back to the region's controller through it.
//!
//! The queue is a ring of `(offset, size, hint)` entries ([`Ack`]), from byte 4096 of the file.
//! The producers are the processes that released pieces. A producer appends under a robust mutex:
//! it writes the entries first, then publishes them with one store of `tail`. So a producer killed
//! half-way leaves nothing visible. The single consumer, the controller's receiver thread, reads
//! `[head, tail)` without the lock and advances `head`. Two futex words wake the consumer when
//! entries arrive (`data`) and the producers when space frees up (`space`).
//!
//! The `consumer` word holds the consumer's owner mark. Producers drop acknowledgements when no
//! consumer is registered (a region created without a callback) or the consumer is dead. So a
//! queue never fills with acknowledgements that nobody will read.
//!
//! Any word read here may have been written by a faulty process. The indices are checked, and the
//! consumer checks every entry against the region before use.

use crate::error::ShmError;
use crate::naming::Names;
use crate::sys::futex;
use crate::sys::layout::{shared_layout, Kind, MutexPlace, Tag};
use crate::sys::mapping::{Created, Fresh, Mapping};
use std::mem::{offset_of, size_of};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;

const KIND: Kind = Kind { what: "region queue", magic: u64::from_le_bytes(*b"FMQRSRGQ"), layout: 2 };
/// Number of entries the ring holds, 24 bytes each. The file is sparse, so entries that were never
/// written take no memory.
pub(crate) const CAPACITY: u64 = 1 << 16;

shared_layout! {
    /// The whole queue: header, lock, and the ring from byte 4096.
    struct Layout {
        tag: Tag,
        capacity: AtomicU64,
        /// Count of all entries ever consumed. Only the consumer advances it.
        head: AtomicU64,
        /// Count of all entries ever published. Producers advance it while they hold `lock`.
        tail: AtomicU64,
        /// Futex bumped when entries were pushed.
        data: AtomicU64,
        /// Futex bumped when the consumer took entries.
        space: AtomicU64,
        /// The registered consumer's owner mark, or 0 when no consumer is registered.
        consumer: AtomicU64,
        /// A number derived from the file name that the queue was created under (see
        /// `files::name_tag`).
        name_tag: AtomicU64,
        _spare: [AtomicU64; 7],
        /// The robust mutex that producers hold while they append.
        lock: MutexPlace,
        _pad: [AtomicU64; 488],
        /// The ring: one `(offset, size, hint)` entry per acknowledgement.
        entries: [[AtomicU64; 3]; CAPACITY as usize],
    }
}
const _: () = assert!(offset_of!(Layout, consumer) == 56 && offset_of!(Layout, lock) == 128);
const _: () = assert!(offset_of!(Layout, entries) == 4096);
const SIZE: usize = size_of::<Layout>();
const _: () = assert!(CAPACITY.is_power_of_two(), "slots must stay in order when the indices wrap");

/// One released piece of a region, as it travels back to the region's controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ack {
    /// Offset of the piece in the region.
    pub offset: u64,
    /// Size of the piece in bytes.
    pub size: u64,
    /// The hint that was passed when the piece's message was made.
    pub hint: u64,
}

/// A mapped acknowledgement queue.
pub(crate) struct AckQueue {
    map: Mapping,
}

impl std::fmt::Debug for AckQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AckQueue").field("path", &self.map.path()).finish()
    }
}

impl AckQueue {
    /// Opens the queue of region `id`, creating it if needed.
    pub(crate) fn open_or_create(names: &Names, id: u16) -> Result<AckQueue, ShmError> {
        let name = names.region_queue(id);
        let path = Names::path(&name);
        for _ in 0..100 {
            match AckQueue::open(&path) {
                Ok(q) => return Ok(q),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
            match Mapping::create(&path, &Names::path(&names.tmp()), SIZE, |m| init(m, &path)) {
                Ok(Created::New(_) | Created::Exists) => continue,
                Err(e) => return Err(ShmError::file("creating region queue", e)),
            }
        }
        Err(ShmError::Layout { name, reason: "created and removed again and again".into() })
    }

    /// Opens an existing queue.
    pub(crate) fn open(path: &Path) -> Result<AckQueue, ShmError> {
        let name = path.display().to_string();
        let map = Mapping::open(path).map_err(|e| ShmError::file("opening region queue", e))?;
        KIND.open(
            map.words(),
            |q: &Layout| &q.tag,
            |q| match q.capacity.load(Ordering::Relaxed) {
                CAPACITY => crate::sys::files::check_name_tag(q.name_tag.load(Ordering::Relaxed), path),
                other => Err(format!("capacity {other} (this build uses {CAPACITY})")),
            },
        )
        .map_err(|e| ShmError::Layout { name, reason: e.to_string() })?;
        Ok(AckQueue { map })
    }

    /// The queue's layout. `AckQueue::open` checked that the mapping is large enough for it.
    fn q(&self) -> &Layout {
        self.map.view().expect("a region queue holds its layout")
    }

    /// Registers the transport with owner mark `me` as the consumer. Fails with the holder's mark
    /// when another transport holds the role and `alive` says that this mark is alive.
    ///
    /// The role is held by owner mark, not by pid: a pid can name another process in another pid
    /// namespace that shares /dev/shm.
    pub(crate) fn claim_consumer(&self, me: u32, alive: impl Fn(u32) -> bool) -> Result<(), u32> {
        let w = &self.q().consumer;
        loop {
            let cur = w.load(Ordering::Acquire);
            if cur != 0 && cur != u64::from(me) && alive(cur as u32) {
                return Err(cur as u32);
            }
            if w.compare_exchange(cur, u64::from(me), Ordering::AcqRel, Ordering::Acquire).is_ok() {
                return Ok(());
            }
        }
    }

    /// Gives up the consumer role if mark `me` holds it. Producers then drop later
    /// acknowledgements.
    pub(crate) fn release_consumer(&self, me: u32) {
        let _ = self.q().consumer.compare_exchange(u64::from(me), 0, Ordering::AcqRel, Ordering::Relaxed);
        futex::bump_and_wake_all(&self.q().space);
    }

    /// The owner mark of the transport that reads this queue, if one registered.
    pub(crate) fn consumer(&self) -> Option<u32> {
        match self.q().consumer.load(Ordering::Acquire) {
            0 => None,
            mark => Some(mark as u32),
        }
    }

    /// Appends as many of `acks` as fit in the ring, and returns how many it appended.
    pub(crate) fn push(&self, acks: &[Ack]) -> Result<usize, ShmError> {
        let n = {
            // If the lock's previous holder died, there is nothing to repair: the entries it wrote
            // past `tail` were never published.
            let _g = self.map.mutex(&self.q().lock).lock(|| {
                log::warn!("a process died while acknowledging region blocks");
                true
            })?;
            let head = self.q().head.load(Ordering::Acquire);
            let tail = self.q().tail.load(Ordering::Relaxed);
            let used = tail.wrapping_sub(head);
            if used > CAPACITY {
                return Err(ShmError::Layout {
                    name: self.map.path().display().to_string(),
                    reason: format!("corrupt indices: head {head}, tail {tail}"),
                });
            }
            let n = (CAPACITY - used).min(acks.len() as u64) as usize;
            for (i, a) in acks[..n].iter().enumerate() {
                let [offset, size, hint] = self.entry(tail.wrapping_add(i as u64));
                offset.store(a.offset, Ordering::Relaxed);
                size.store(a.size, Ordering::Relaxed);
                hint.store(a.hint, Ordering::Relaxed);
            }
            self.q().tail.store(tail.wrapping_add(n as u64), Ordering::Release);
            n
        };
        if n > 0 {
            futex::bump_and_wake_all(&self.q().data);
        }
        Ok(n)
    }

    /// Acknowledgements waiting for the consumer.
    pub(crate) fn pending(&self) -> u64 {
        let head = self.q().head.load(Ordering::Acquire);
        self.q().tail.load(Ordering::Acquire).wrapping_sub(head).min(CAPACITY)
    }

    /// Moves up to `max` entries into `out`, and returns how many it moved. Only the consumer
    /// calls this.
    pub(crate) fn pop(&self, max: usize, out: &mut Vec<Ack>) -> usize {
        let head = self.q().head.load(Ordering::Relaxed);
        let tail = self.q().tail.load(Ordering::Acquire);
        let avail = tail.wrapping_sub(head);
        if avail > CAPACITY {
            log::error!("region queue {} has corrupt indices; dropping its content", self.map.path().display());
            self.q().head.store(tail, Ordering::Release);
            return 0;
        }
        let n = avail.min(max as u64) as usize;
        for i in 0..n {
            let [offset, size, hint] = self.entry(head.wrapping_add(i as u64));
            out.push(Ack {
                offset: offset.load(Ordering::Relaxed),
                size: size.load(Ordering::Relaxed),
                hint: hint.load(Ordering::Relaxed),
            });
        }
        if n > 0 {
            self.q().head.store(head.wrapping_add(n as u64), Ordering::Release);
            futex::bump_and_wake_all(&self.q().space);
        }
        n
    }

    /// Overwrites the ring's indices, as a faulty producer could. The fuzzing harness uses this to
    /// check that the queue survives any index values.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn force_indices(&self, head: u64, tail: u64) {
        self.q().head.store(head, Ordering::Release);
        self.q().tail.store(tail, Ordering::Release);
    }

    /// The value to pass to [`AckQueue::wait_for_data`].
    pub(crate) fn data_epoch(&self) -> u32 {
        futex::low32(&self.q().data)
    }

    /// Sleeps until entries are pushed after `epoch` was read, or until `timeout` has passed.
    pub(crate) fn wait_for_data(&self, epoch: u32, timeout: Duration) {
        futex::wait(&self.q().data, epoch, timeout);
    }

    /// The value to pass to [`AckQueue::wait_for_space`].
    pub(crate) fn space_epoch(&self) -> u32 {
        futex::low32(&self.q().space)
    }

    /// Sleeps until the consumer takes entries after `epoch` was read, or until `timeout` has
    /// passed.
    pub(crate) fn wait_for_space(&self, epoch: u32, timeout: Duration) {
        futex::wait(&self.q().space, epoch, timeout);
    }

    /// The entry at ring index `index`. Indices only ever grow, and they wrap around at
    /// `u64::MAX`. A faulty process may have set them to any value. Because `CAPACITY` divides
    /// 2^64, the entries stay in order when an index wraps.
    fn entry(&self, index: u64) -> &[AtomicU64; 3] {
        &self.q().entries[(index % CAPACITY) as usize]
    }

    /// Wakes the consumer so that it sees a stop request.
    pub(crate) fn wake_consumer(&self) {
        futex::bump_and_wake_all(&self.q().data);
    }
}

fn init(m: &Fresh<'_>, path: &Path) -> std::io::Result<()> {
    let q: &Layout = m.view().ok_or_else(|| std::io::Error::other("region queue smaller than its layout"))?;
    q.name_tag.store(crate::sys::files::name_tag(path), Ordering::Relaxed);
    q.capacity.store(CAPACITY, Ordering::Relaxed);
    m.init_mutex(&q.lock)?;
    KIND.stamp(&q.tag);
    Ok(())
}
