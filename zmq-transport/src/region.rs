//! Unmanaged regions of the zeromq transport: [`Region`] (FairMQ's `zmq::UnmanagedRegion`).
//!
//! A region is a buffer of this process: an anonymous memory mapping, zeroed when it is made. A
//! message made from a region copies its piece into a new frame. Nothing refers to the region
//! afterwards, so the creator's callback hears of the piece at once, before the call that made the
//! message returns. Acknowledgements are therefore local, and the linger has nothing to wait for.
//!
//! The callback runs while the region holds it locked. A message of a region made inside that
//! region's own callback would wait for itself, so it is refused with
//! [`RegionError::InsideCallback`].
//!
//! # Region events
//!
//! Every transport keeps a FIFO of region events ([`RegionEvents`]):
//!
//! - The FIFO starts with one `local_only` event: regions of this transport are invisible to other
//!   processes.
//! - Each created and each destroyed region adds an event.
//! - A subscription takes the events from the FIFO in order, on a thread of its own. So it gets
//!   every event that no earlier subscription took. A new subscription replaces the old one.

use crate::message::Message;
use crate::vocabulary::region::{RegionBlock, RegionCallback, RegionConfig, RegionEvent, RegionInfo};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Why a region operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegionError {
    /// A piece that does not lie inside the region.
    #[error("trying to create region message with data from outside the region (offset {offset}, size {size}, region size {region_size})")]
    OutsideRegion {
        /// Offset asked for.
        offset: usize,
        /// Size asked for.
        size: usize,
        /// The region's size.
        region_size: usize,
    },
    /// The region belongs to another transport.
    #[error("region {id} belongs to another zeromq transport")]
    ForeignRegion {
        /// The region's id.
        id: u16,
    },
    /// The region's memory could not be mapped.
    #[error("could not create the region's memory: {0}")]
    Memory(String),
    /// No id is left: this transport has already made 65535 regions.
    #[error("no region id left in this transport")]
    IdsExhausted,
    /// The event thread could not start.
    #[error("could not start the region event thread: {0}")]
    Thread(String),
    /// A message of a region was asked for inside that region's own callback. The region holds
    /// its callback locked while the callback runs, so the call would wait for itself.
    #[error("region {id}: a message of the region cannot be made inside its own callback")]
    InsideCallback {
        /// The region's id.
        id: u16,
    },
}

impl RegionError {
    /// The kind of this error (see [`crate::ErrorKind`]). A piece outside the region, a region of
    /// another transport, or a message made inside the region's own callback is the caller's
    /// mistake (`ErrorKind::Invalid`).
    pub fn kind(&self) -> crate::ErrorKind {
        match self {
            RegionError::OutsideRegion { .. }
            | RegionError::ForeignRegion { .. }
            | RegionError::InsideCallback { .. } => crate::ErrorKind::Invalid,
            _ => crate::ErrorKind::Transport,
        }
    }
}

thread_local! {
    /// The address of the region whose callback this thread is running now, or 0 for none.
    static IN_CALLBACK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Marks this thread as running a region's callback until the guard is dropped. The guard is also
/// dropped when the callback panics. The drop restores the previous mark, which exists when a
/// callback makes a message of another region.
struct Running(usize);

impl Running {
    fn enter(region: usize) -> Running {
        Running(IN_CALLBACK.replace(region))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        IN_CALLBACK.set(self.0);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A callback that panicked poisons the mutex, but the data it guards stays consistent. So the
    // poison is ignored.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A region of the zeromq transport: a buffer of this process.
///
/// A message made from a region holds a copy of its piece. So the region's callback hears of the
/// piece at once, as in FairMQ.
///
/// # Examples
///
/// ```
/// use fairmq_zmq::{RegionCallback, RegionConfig, Transport};
///
/// let t = Transport::new("doc")?;
/// let (released, back) = std::sync::mpsc::channel();
/// let callback = RegionCallback::Single(Box::new(move |b| {
///     let _ = released.send((b.offset, b.size, b.hint));
/// }));
/// let region = t.create_region(4096, callback, &RegionConfig::default())?;
/// region.write(100, b"pedestal")?;
///
/// let msg = t.new_message_from_region(&region, 100, 8, 7)?;
/// assert_eq!(msg.data(), b"pedestal");
/// assert_eq!(back.try_recv()?, (100, 8, 7), "the message holds a copy: the piece is back at once");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Region {
    id: u16,
    ptr: usize,
    size: usize,
    buf: Mutex<memmap2::MmapMut>,
    callback: Mutex<RegionCallback>,
    user_flags: u64,
    events: Arc<RegionEvents>,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region").field("id", &self.id).field("size", &self.size()).finish()
    }
}

impl Region {
    pub(crate) fn create(
        events: &Arc<RegionEvents>,
        size: usize,
        callback: RegionCallback,
        cfg: &RegionConfig,
    ) -> Result<Region, RegionError> {
        // Anonymous pages arrive zeroed, and they cost memory only once they are touched. So the
        // `zero` setting costs nothing.
        let mut buf = memmap2::MmapMut::map_anon(size.max(1)).map_err(|e| RegionError::Memory(e.to_string()))?;
        let id = events.next_id()?;
        let ptr = buf.as_mut_ptr() as usize;
        if cfg.lock {
            if let Err(e) = buf.lock() {
                log::error!("Could not lock region {id}: {e}");
            }
        }
        let region = Region {
            id,
            ptr,
            size,
            buf: Mutex::new(buf),
            callback: Mutex::new(callback),
            user_flags: cfg.user_flags,
            events: events.clone(),
        };
        events.push(RegionInfo {
            managed: false,
            id,
            ptr,
            size: size as u64,
            flags: cfg.user_flags,
            event: RegionEvent::Created,
        });
        Ok(region)
    }

    /// The region's id: 1, 2, 3, ... in each transport.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Address of the first byte (for C callers that fill the region in place).
    pub fn data_ptr(&self) -> *mut u8 {
        self.ptr as *mut u8
    }

    /// Copies `bytes` into the region at `offset`.
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<(), RegionError> {
        let range = checked(offset, bytes.len(), self.size)?;
        let mut buf = lock(&self.buf);
        buf[range].copy_from_slice(bytes);
        Ok(())
    }

    /// Copies the bytes at `offset` into `out`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), RegionError> {
        let range = checked(offset, out.len(), self.size)?;
        let buf = lock(&self.buf);
        out.copy_from_slice(&buf[range]);
        Ok(())
    }

    /// Always zero, because acknowledgements are local. FairMQ's version also logs that the option
    /// is not implemented.
    pub fn linger(&self) -> Duration {
        Duration::ZERO
    }

    /// Ignores `linger`, as FairMQ does: there is nothing to wait for.
    pub fn set_linger(&self, _linger: Duration) {
        log::debug!("ZeroMQ UnmanagedRegion linger option not implemented. Acknowledgements are local.");
    }

    /// A message that holds a copy of the `size` bytes at `offset`. The region's callback hears of
    /// the piece before this call returns.
    pub(crate) fn message(&self, offset: usize, size: usize, hint: u64) -> Result<Message, RegionError> {
        let msg = {
            let range = checked(offset, size, self.size)?;
            Message::from_slice(&lock(&self.buf)[range])
        };
        let block = RegionBlock { ptr: (self.ptr + offset) as *mut u8, offset: offset as u64, size, hint };
        // This thread may be inside this region's callback, which holds the callback lock. Locking
        // it again would make the thread wait for itself, so return an error instead.
        let me = self as *const Region as usize;
        if IN_CALLBACK.get() == me {
            return Err(RegionError::InsideCallback { id: self.id });
        }
        let mut callback = lock(&self.callback);
        let _running = Running::enter(me);
        match &mut *callback {
            RegionCallback::None => {}
            RegionCallback::Single(f) => f(&block),
            RegionCallback::Bulk(f) => f(std::slice::from_ref(&block)),
        }
        Ok(msg)
    }

    pub(crate) fn belongs_to(&self, events: &Arc<RegionEvents>) -> bool {
        Arc::ptr_eq(&self.events, events)
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        self.events.remove(self.id, self.user_flags);
    }
}

fn checked(offset: usize, size: usize, len: usize) -> Result<std::ops::Range<usize>, RegionError> {
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(offset..end),
        _ => Err(RegionError::OutsideRegion { offset, size, region_size: len }),
    }
}

/// Region ids, live regions and the event FIFO of one transport.
pub(crate) struct RegionEvents {
    state: Mutex<EventState>,
    wake: Condvar,
}

struct EventState {
    next_id: u32,
    live: Vec<RegionInfo>,
    queue: VecDeque<RegionInfo>,
    /// Incremented by every subscription and unsubscription. A delivery thread of an older
    /// generation ends.
    generation: u64,
    thread: Option<JoinHandle<()>>,
}

impl RegionEvents {
    pub(crate) fn new() -> Arc<RegionEvents> {
        let first = RegionInfo { managed: true, id: 0, ptr: 0, size: 0, flags: 0, event: RegionEvent::LocalOnly };
        Arc::new(RegionEvents {
            state: Mutex::new(EventState {
                next_id: 1,
                live: Vec::new(),
                queue: VecDeque::from([first]),
                generation: 0,
                thread: None,
            }),
            wake: Condvar::new(),
        })
    }

    fn next_id(&self) -> Result<u16, RegionError> {
        let mut s = lock(&self.state);
        let id = u16::try_from(s.next_id).map_err(|_| RegionError::IdsExhausted)?;
        s.next_id += 1;
        Ok(id)
    }

    fn push(&self, info: RegionInfo) {
        let mut s = lock(&self.state);
        s.live.push(info);
        s.queue.push_back(info);
        self.wake.notify_all();
    }

    fn remove(&self, id: u16, flags: u64) {
        let mut s = lock(&self.state);
        match s.live.iter().position(|r| r.id == id) {
            Some(i) => {
                s.live.remove(i);
                s.queue.push_back(RegionInfo {
                    managed: false,
                    id,
                    ptr: 0,
                    size: 0,
                    flags,
                    event: RegionEvent::Destroyed,
                });
                self.wake.notify_all();
            }
            None => log::error!("RemoveRegion: given id ({id}) not found."),
        }
    }

    /// Live regions.
    pub(crate) fn info(&self) -> Vec<RegionInfo> {
        lock(&self.state).live.clone()
    }

    /// Starts delivering queued and future events to `callback`, on a thread of its own. This
    /// replaces an earlier subscription.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        mut callback: Box<dyn FnMut(RegionInfo) + Send>,
    ) -> Result<(), RegionError> {
        if self.unsubscribe() {
            log::warn!("Already subscribed. Overwriting previous subscription.");
        }
        let me = self.clone();
        let generation = lock(&self.state).generation;
        let thread = std::thread::Builder::new()
            .name("fmq-zmq-region-events".into())
            .spawn(move || {
                let mut s = lock(&me.state);
                while s.generation == generation {
                    match s.queue.pop_front() {
                        Some(e) => {
                            drop(s);
                            callback(e);
                            s = lock(&me.state);
                        }
                        None => s = me.wake.wait(s).unwrap_or_else(|p| p.into_inner()),
                    }
                }
            })
            .map_err(|e| RegionError::Thread(e.to_string()))?;
        lock(&self.state).thread = Some(thread);
        Ok(())
    }

    /// Ends the subscription, if there is one, and waits for its thread to end. Returns whether
    /// there was a subscription.
    pub(crate) fn unsubscribe(&self) -> bool {
        let thread = {
            let mut s = lock(&self.state);
            s.generation += 1;
            self.wake.notify_all();
            s.thread.take()
        };
        match thread {
            Some(t) => {
                if t.thread().id() != std::thread::current().id() {
                    let _ = t.join();
                }
                true
            }
            None => false,
        }
    }

    pub(crate) fn subscribed(&self) -> bool {
        lock(&self.state).thread.is_some()
    }
}
