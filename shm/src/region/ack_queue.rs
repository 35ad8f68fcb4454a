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
/// Entries the ring holds (24 bytes each; the file is sparse).
pub(crate) const CAPACITY: u64 = 1 << 16;

shared_layout! {
    /// The whole queue: header, lock, and the ring from byte 4096.
    struct Layout {
        tag: Tag,
        capacity: AtomicU64,
        /// Entries ever consumed (by the consumer).
        head: AtomicU64,
        /// Entries ever published (by producers, under the lock).
        tail: AtomicU64,
        /// Futex bumped when entries were pushed.
        data: AtomicU64,
        /// Futex bumped when the consumer took entries.
        space: AtomicU64,
        /// The consumer's owner mark (0: none).
        consumer: AtomicU64,
        /// The number of the file name it was made under (see `files::name_tag`).
        name_tag: AtomicU64,
        _spare: [AtomicU64; 7],
        /// Guards producers.
        lock: MutexPlace,
        _pad: [AtomicU64; 488],
        /// `(offset, size, hint)` of each acknowledgement.
        entries: [[AtomicU64; 3]; CAPACITY as usize],
    }
}
const _: () = assert!(offset_of!(Layout, consumer) == 56 && offset_of!(Layout, lock) == 128);
const _: () = assert!(offset_of!(Layout, entries) == 4096);
const SIZE: usize = size_of::<Layout>();
const _: () = assert!(CAPACITY.is_power_of_two(), "slots must stay in order when the indices wrap");

/// One released piece of a region, as it travels back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ack {
    /// Offset of the piece in the region.
    pub offset: u64,
    /// Its size.
    pub size: u64,
    /// The hint given when its message was made.
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

    /// The queue's words (checked to fit when it was opened).
    fn q(&self) -> &Layout {
        self.map.view().expect("a region queue holds its layout")
    }

    /// Registers the transport of owner mark `me` as the consumer unless another transport that
    /// is `alive` (by its mark) is; returns the holder's mark if so. Marks, not pids: a pid can
    /// name another process in another pid namespace sharing /dev/shm.
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

    /// Gives up the consumer role (if mark `me` holds it); later acknowledgements are dropped.
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

    /// Appends as many of `acks` as fit; returns how many did.
    pub(crate) fn push(&self, acks: &[Ack]) -> Result<usize, ShmError> {
        let n = {
            // Nothing to repair after a dead holder: its entries past `tail` were never published.
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

    /// The consumer: moves up to `max` entries into `out`; returns how many.
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

    /// Overwrites the ring's indices as a faulty producer could (for the fuzzing harness, which
    /// checks that the queue survives any values there).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn force_indices(&self, head: u64, tail: u64) {
        self.q().head.store(head, Ordering::Release);
        self.q().tail.store(tail, Ordering::Release);
    }

    /// The value to pass to [`AckQueue::wait_for_data`].
    pub(crate) fn data_epoch(&self) -> u32 {
        futex::low32(&self.q().data)
    }

    /// Sleeps until entries were pushed after `epoch` was read, at most `timeout`.
    pub(crate) fn wait_for_data(&self, epoch: u32, timeout: Duration) {
        futex::wait(&self.q().data, epoch, timeout);
    }

    /// The value to pass to [`AckQueue::wait_for_space`].
    pub(crate) fn space_epoch(&self) -> u32 {
        futex::low32(&self.q().space)
    }

    /// Sleeps until the consumer took entries after `epoch` was read, at most `timeout`.
    pub(crate) fn wait_for_space(&self, epoch: u32, timeout: Duration) {
        futex::wait(&self.q().space, epoch, timeout);
    }

    /// The entry at ring index `index`. Indices only ever grow and wrap around at `u64::MAX` (a
    /// faulty process may have put them anywhere); `CAPACITY` divides 2^64, so the entries stay in
    /// order across the wrap.
    fn entry(&self, index: u64) -> &[AtomicU64; 3] {
        &self.q().entries[(index % CAPACITY) as usize]
    }

    /// Wakes the consumer (to see a stop request).
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
