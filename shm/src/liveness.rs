//! Liveness of a session's processes, two ways.
//!
//! - The heartbeat FairMQ's monitor watches: every transport bumps one shared counter every 100 ms.
//!   It only tells that *someone* is alive.
//! - A slot per attached transport (pid and a robust mutex) whose mutex the transport's heartbeat
//!   thread holds for the transport's whole life. When the process dies, however it dies, the kernel
//!   releases the mutex marked *owner died*; whoever tries it next learns at once, without waiting for
//!   a heartbeat timeout, that this transport is gone, and counts it out of the session.
//!
//! Slots are claimed and swept under the session lock.

use crate::error::ShmError;
use crate::management::{Management, SessionLock};
use crate::sys::mapping::Mapping;
use crate::sys::robust_mutex::{RobustMutex, TryLock, MUTEX_BYTES};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const FIRST_BYTE: usize = 16 << 10;
const SLOTS: usize = 256;
const SLOT_BYTES: usize = 128;
const W_PID: usize = 0;
const W_SINCE: usize = 1;
const MUTEX_OFF: usize = 64;
const _: () = assert!(MUTEX_OFF + MUTEX_BYTES <= SLOT_BYTES && FIRST_BYTE + SLOTS * SLOT_BYTES <= 64 << 10);
/// How often a transport bumps the heartbeat (FairMQ: 100 ms).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(100);

fn word(m: &Management, slot: usize, w: usize) -> &std::sync::atomic::AtomicU64 {
    &m.words()[(FIRST_BYTE + slot * SLOT_BYTES) / 8 + w]
}

fn mutex(m: &Management, slot: usize) -> RobustMutex {
    let ptr = m.range_ptr(FIRST_BYTE + slot * SLOT_BYTES + MUTEX_OFF, MUTEX_BYTES).expect("slot inside the segment");
    // SAFETY: `init_slots` made a robust mutex there when the segment was created; the management
    // segment stays mapped as long as `m`, and callers use the handle only while borrowing `m`.
    unsafe { RobustMutex::at(ptr) }
}

/// Creates the slots' mutexes in a new management segment (still private to its creator).
pub(crate) fn init_slots(map: &Mapping) -> std::io::Result<()> {
    for slot in 0..SLOTS {
        let ptr = map.range_ptr(FIRST_BYTE + slot * SLOT_BYTES + MUTEX_OFF, MUTEX_BYTES).expect("inside the mapping");
        // SAFETY: the object is not yet visible to other processes; the range is inside it and aligned.
        unsafe { RobustMutex::init(ptr)? };
    }
    Ok(())
}

/// An attached process as its slot shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attached {
    /// Process id.
    pub pid: u32,
    /// When it attached (seconds since the Unix epoch).
    pub since: u64,
}

/// Transports attached to the session, by their slots.
pub fn attached(m: &Management) -> Vec<Attached> {
    (0..SLOTS)
        .filter_map(|s| match word(m, s, W_PID).load(Ordering::Acquire) {
            0 => None,
            pid => Some(Attached { pid: pid as u32, since: word(m, s, W_SINCE).load(Ordering::Relaxed) }),
        })
        .collect()
}

impl SessionLock<'_> {
    /// Finds transports whose process died (their slot's mutex is owner-died), frees their slots and
    /// counts them out of the session. Returns their pids (one entry per dead transport).
    pub(crate) fn sweep_dead(&self) -> Vec<u32> {
        let m = self.management();
        let mut dead = Vec::new();
        for slot in 0..SLOTS {
            let pid = word(m, slot, W_PID).load(Ordering::Acquire);
            if pid == 0 {
                continue;
            }
            let mx = mutex(m, slot);
            // One slot in a bad state must not hide the other slots' dead processes.
            let state = match mx.try_lock() {
                Ok(state) => state,
                Err(e) => {
                    log::error!("liveness slot {slot} of process {pid}: {e}");
                    continue;
                }
            };
            match state {
                // Starting (not locked yet) or leaving (unlocked, slot not freed yet): alive either way.
                TryLock::Acquired(guard) => drop(guard),
                TryLock::Busy => {}
                TryLock::OwnerDied(guard) => {
                    drop(guard);
                    word(m, slot, W_PID).store(0, Ordering::Release);
                    let left = self.count_out_dead();
                    log::warn!("process {pid} died without detaching from the session; {left} transports remain");
                    dead.push(pid as u32);
                }
            };
        }
        dead
    }
}

/// A transport's heartbeat thread, which also holds its liveness slot.
pub(crate) struct Heartbeat {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    slot: usize,
    mng: Arc<Management>,
}

impl Heartbeat {
    /// Claims a slot and starts beating; returns once the slot's mutex is held.
    pub fn start(mng: Arc<Management>) -> Result<Heartbeat, ShmError> {
        let slot = {
            let _lock = mng.lock()?;
            let slot = (0..SLOTS)
                .find(|&s| word(&mng, s, W_PID).load(Ordering::Relaxed) == 0)
                .ok_or(ShmError::TableFull("process"))?;
            let since = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
            word(&mng, slot, W_SINCE).store(since, Ordering::Relaxed);
            word(&mng, slot, W_PID).store(u64::from(std::process::id()), Ordering::Release);
            slot
        };
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), ShmError>>(1);
        let m = mng.clone();
        let spawned = std::thread::Builder::new().name("fmq-heartbeat".into()).spawn(move || {
            let mx = mutex(&m, slot);
            let guard = match mx.lock(|| {}) {
                Ok(g) => g,
                Err(e) => {
                    let _ = ready_tx.send(Err(e.into()));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(()));
            loop {
                m.heartbeat().fetch_add(1, Ordering::Relaxed);
                match stop_rx.recv_timeout(HEARTBEAT_INTERVAL) {
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    _ => break,
                }
            }
            drop(guard);
        });
        let mut hb = Heartbeat { stop: Some(stop_tx), thread: None, slot, mng };
        match spawned {
            Ok(t) => hb.thread = Some(t),
            Err(e) => return Err(ShmError::io("starting the heartbeat thread", "fmq-heartbeat", e)),
        }
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(hb),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ShmError::Config("the heartbeat thread ended before it started".into())),
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        match self.mng.lock() {
            Ok(_lock) => word(&self.mng, self.slot, W_PID).store(0, Ordering::Release),
            Err(e) => log::error!("could not free the liveness slot: {e}"),
        }
    }
}
