//! Liveness: which processes of a session are alive. This module tracks it in two ways.
//!
//! - The heartbeat, which FairMQ's monitor watches. Every transport bumps one shared counter every
//!   [`HEARTBEAT_INTERVAL`] (100 ms). The counter only tells that *some* transport is alive.
//! - A process slot per attached transport, holding the transport's pid and a robust mutex. The
//!   transport's heartbeat thread ([`Heartbeat`]) holds the mutex for the transport's whole life.
//!   When the process dies, however it dies, the kernel releases the mutex and marks it *owner
//!   died*. The next process that tries the mutex learns at once that this transport is gone,
//!   without waiting for a heartbeat timeout. That process then counts the transport out of the
//!   session ([`SessionLock::find_dead`], then [`SessionLock::count_out`] after the sweep).
//!
//! The occupied slots *are* the session's count of attached transports. A slot's pid is published
//! only while the slot's mutex is held, and it is cleared before the mutex is released:
//!
//! - When a transport attaches, its heartbeat thread locks the mutex first and then writes the pid.
//! - When a transport leaves, it clears the pid before its thread unlocks the mutex. In the same
//!   step it decides whether it was the last transport.
//!
//! Both steps run under the session lock. So a process killed at any moment is either still
//! counted (its mutex turns owner-died) or already gone from the count. No moment leaves a slot
//! that nobody can free.

use crate::error::ShmError;
use crate::session::layout::ProcessSlot;
use crate::session::management::{Management, SessionLock};
use crate::sys::mapping::Fresh;
use crate::sys::robust_mutex::{Guard, RobustMutex, TryLock};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::session::layout::PROCESS_SLOTS as SLOTS;

/// How often a transport bumps the heartbeat counter (100 ms, as in FairMQ).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(100);

fn slot_of(m: &Management, slot: usize) -> &ProcessSlot {
    &m.layout().processes[slot]
}

fn mutex(m: &Management, slot: usize) -> RobustMutex<'_> {
    m.mutex(&slot_of(m, slot).mutex)
}

/// Creates the process slots' mutexes in a new management segment. The segment is still private
/// to its creator at this point.
pub(crate) fn init_slots(map: &Fresh<'_>) -> std::io::Result<()> {
    let l: &crate::session::layout::Layout =
        map.view().ok_or_else(|| std::io::Error::other("management segment smaller than its layout"))?;
    l.processes.iter().try_for_each(|slot| map.init_mutex(&slot.mutex))
}

impl Management {
    /// Returns the number of attached transports, which is the number of occupied liveness slots.
    pub fn device_count(&self) -> u64 {
        count(self)
    }
}

/// An attached transport's process, as its liveness slot describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attached {
    /// Process id.
    pub pid: u32,
    /// When the transport attached, in seconds since the Unix epoch.
    pub since: u64,
    /// The owner mark that the blocks this transport allocates or caches carry. The mark is not
    /// the pid, because processes in different pid namespaces can share /dev/shm, and a pid can be
    /// reused. A sweep that frees a dead transport's cached blocks must never free the blocks of a
    /// live transport.
    pub owner: u32,
    /// The transport's metrics endpoint (`--metrics-address`), if the transport published one.
    pub metrics: Option<std::net::SocketAddr>,
}

/// A transport found dead. A sweeper first frees what the transport held, and then counts the
/// transport out of the session (see [`SessionLock::find_dead`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dead {
    /// The dead transport's process id, used only in log messages.
    pub pid: u32,
    /// The dead transport's owner mark, used to free what the transport cached.
    pub owner: u32,
    /// The dead transport's liveness slot. The same number selects its ledger (see `ledger`).
    pub slot: usize,
}

/// Whether `o` can be a transport's owner mark. It cannot be 0, which means no owner. It cannot be
/// one of the four marks that the segment reserves either: a count kept in a slot, a block in the
/// depot, a shared block, and a block in flight.
fn usable_owner(o: u32) -> bool {
    o != 0 && o < crate::segment::slots::IN_FLIGHT
}

/// The slots of attached transports that are not provably dead.
pub(crate) fn live_slots(m: &Management) -> Vec<usize> {
    occupied(m).filter(|&s| liveness(m, s) != Liveness::Dead).collect()
}

/// Publishes `addr` as the metrics endpoint of the transport in slot `slot`. The slot must be the
/// caller's own: only the slot's transport writes there while it lives. The endpoint takes three
/// words:
///
/// - word 0 holds the port, plus the address family (4 or 6) shifted left by 16;
/// - words 1 and 2 hold the address's 16 bytes; an IPv4 address fills the first 4.
///
/// Readers check what they read.
pub(crate) fn publish_metrics(m: &Management, slot: usize, addr: std::net::SocketAddr) {
    let (family, bytes): (u64, [u8; 16]) = match addr.ip() {
        std::net::IpAddr::V4(a) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&a.octets());
            (4, b)
        }
        std::net::IpAddr::V6(a) => (6, a.octets()),
    };
    let words = &slot_of(m, slot).metrics;
    words[1].store(u64::from_le_bytes(bytes[..8].try_into().unwrap_or_default()), Ordering::Relaxed);
    words[2].store(u64::from_le_bytes(bytes[8..].try_into().unwrap_or_default()), Ordering::Relaxed);
    words[0].store(family << 16 | u64::from(addr.port()), Ordering::Release);
}

/// Reads the endpoint that `words` hold (see [`publish_metrics`]). Returns `None` if no endpoint
/// was published. Also returns `None` for words that name no address: some other process wrote
/// them, not `publish_metrics`.
fn endpoint_of(words: &[AtomicU64; 3]) -> Option<std::net::SocketAddr> {
    let head = words[0].load(Ordering::Acquire);
    let port = (head & 0xffff) as u16;
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&words[1].load(Ordering::Relaxed).to_le_bytes());
    bytes[8..].copy_from_slice(&words[2].load(Ordering::Relaxed).to_le_bytes());
    let ip = match head >> 16 {
        4 => std::net::IpAddr::from([bytes[0], bytes[1], bytes[2], bytes[3]]),
        6 => std::net::IpAddr::from(bytes),
        _ => return None,
    };
    (port != 0).then_some(std::net::SocketAddr::new(ip, port))
}

/// Returns the number of occupied slots, which is the number of transports attached to the
/// session.
pub(crate) fn count(m: &Management) -> u64 {
    (0..SLOTS).filter(|&s| slot_of(m, s).pid.load(Ordering::Acquire) != 0).count() as u64
}

/// Lists the transports attached to the session, as their slots describe them, in slot order.
pub fn attached(m: &Management) -> Vec<Attached> {
    (0..SLOTS)
        .filter_map(|s| match slot_of(m, s).pid.load(Ordering::Acquire) {
            0 => None,
            pid => Some(Attached {
                pid: pid as u32,
                since: slot_of(m, s).since.load(Ordering::Relaxed),
                owner: slot_of(m, s).owner.load(Ordering::Relaxed) as u32,
                metrics: endpoint_of(&slot_of(m, s).metrics),
            }),
        })
        .collect()
}

impl SessionLock<'_> {
    /// Finds the transports whose process died, and assigns their sweep to `sweeper`.
    ///
    /// A transport counts as dead when its slot's mutex is owner-died or not held at all. A live
    /// transport's mutex is always held while its pid is published.
    ///
    /// `sweeper` is the caller's owner mark. It is 0 for a sweeper that holds this lock until it
    /// has counted the dead transports out. `find_dead` skips a dead transport that a live
    /// transport already sweeps.
    ///
    /// The dead transports' slots stay occupied until [`count_out`], which the caller calls after
    /// the sweep. If the sweeper is killed before then, the slots pass to the next sweeper, with
    /// what their transports held. Earlier versions counted a dead transport out as soon as they
    /// found it. A sweeper killed before it freed what the dead transport held then left those
    /// blocks allocated for the session's life.
    ///
    /// [`count_out`]: SessionLock::count_out
    pub(crate) fn find_dead(&self, sweeper: u32) -> Vec<Dead> {
        let m = self.management();
        let mut dead = Vec::new();
        for slot in 0..SLOTS {
            let pid = slot_of(m, slot).pid.load(Ordering::Acquire);
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
                TryLock::Busy => continue,
                TryLock::OwnerDied(guard) => drop(guard),
                TryLock::Acquired(guard) => {
                    drop(guard);
                    log::warn!("liveness slot {slot} names process {pid} but nobody holds it");
                }
            }
            let other = slot_of(m, slot).sweeper.load(Ordering::Relaxed) as u32;
            if other != 0 && other != sweeper && owner_alive(m, other) {
                continue; // a live transport sweeps it
            }
            slot_of(m, slot).sweeper.store(u64::from(sweeper), Ordering::Relaxed);
            let mut owner = slot_of(m, slot).owner.load(Ordering::Relaxed) as u32;
            // A sweep frees what carries the dead transport's owner mark. Two kinds of marks show
            // a damaged slot: a mark that no transport can have, and a mark that another occupied
            // slot also names (`claim` keeps marks unique). A damaged mark is replaced by 0, so
            // the sweep frees nothing by it. Earlier versions used the damaged mark, and freed a
            // live transport's blocks.
            let named_twice =
                occupied(m).any(|s| s != slot && slot_of(m, s).owner.load(Ordering::Relaxed) as u32 == owner);
            if !usable_owner(owner) || named_twice {
                log::error!("liveness slot {slot} of dead process {pid} has a damaged owner mark {owner:#x}: counted out, nothing freed by it");
                owner = 0;
                slot_of(m, slot).owner.store(0, Ordering::Relaxed); // as counted out
            }
            dead.push(Dead { pid: pid as u32, owner, slot });
        }
        dead
    }

    /// Counts the swept transport `d` out of the session. Its slot can then be claimed again.
    pub(crate) fn count_out(&self, d: &Dead) {
        let m = self.management();
        // Pids are 32-bit, so only the low half of the pid word is compared. A damaged high half
        // must not keep the slot occupied forever. When it did, every sweep, the monitor's
        // included, walked every heap again for that slot.
        let same = slot_of(m, d.slot).pid.load(Ordering::Acquire) as u32 == d.pid
            && slot_of(m, d.slot).owner.load(Ordering::Relaxed) as u32 == d.owner;
        if !same {
            return; // counted out by another sweeper (which took it over from us)
        }
        slot_of(m, d.slot).sweeper.store(0, Ordering::Relaxed);
        slot_of(m, d.slot).pid.store(0, Ordering::Release);
        let left = count(m);
        log::warn!("process {} died without detaching from the session; {left} transports remain", d.pid);
    }
}

/// What a slot's mutex reveals about the slot's transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Liveness {
    /// The mutex is held, so the process is alive. The process may be running, stopped or busy,
    /// and it may be in any pid namespace.
    Alive,
    /// The mutex is owner-died, or not held at all. A dead holder's mutex turns owner-died. The
    /// next sweep counts a slot in this state out.
    Dead,
    /// The mutex is in a bad state, so the process's liveness cannot be determined.
    Unknown,
}

fn liveness(m: &Management, slot: usize) -> Liveness {
    match mutex(m, slot).try_lock() {
        Ok(TryLock::Busy) => Liveness::Alive,
        Ok(TryLock::OwnerDied(_) | TryLock::Acquired(_)) => Liveness::Dead,
        Err(_) => Liveness::Unknown,
    }
}

fn occupied(m: &Management) -> impl Iterator<Item = usize> + '_ {
    (0..SLOTS).filter(|&s| slot_of(m, s).pid.load(Ordering::Acquire) != 0)
}

/// Whether the transport with owner mark `owner` is attached and alive. A mark that no occupied
/// slot carries counts as not alive. A slot whose mutex is in a bad state counts as alive.
pub(crate) fn owner_alive(m: &Management, owner: u32) -> bool {
    occupied(m)
        .filter(|&s| slot_of(m, s).owner.load(Ordering::Relaxed) as u32 == owner)
        .any(|s| liveness(m, s) != Liveness::Dead)
}

/// Returns the pids of the attached transports that are provably alive. The heartbeat counter
/// plays no part in this.
pub(crate) fn alive(m: &Management) -> Vec<u32> {
    occupied(m)
        .filter(|&s| liveness(m, s) == Liveness::Alive)
        .map(|s| slot_of(m, s).pid.load(Ordering::Relaxed) as u32)
        .filter(|&pid| pid != 0) // left since the look
        .collect()
}

/// A transport's heartbeat thread, which also holds its liveness slot.
pub(crate) struct Heartbeat {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    slot: usize,
    owner: u32,
    /// Whether the slot was given up (by [`Heartbeat::leave`]).
    left: AtomicBool,
    mng: Arc<Management>,
}

/// Why a heartbeat could not start.
pub(crate) enum StartError {
    /// The session was removed after the caller opened it. The caller must open it again.
    Removed,
    /// Any other error.
    Failed(ShmError),
}

impl From<ShmError> for StartError {
    fn from(e: ShmError) -> Self {
        StartError::Failed(e)
    }
}

impl Heartbeat {
    /// Starts the heartbeat thread, and returns once the thread has claimed a slot. Claiming the
    /// slot counts this transport into the session. The thread locks the slot's mutex before the
    /// slot names this process, and holds the mutex from then on.
    pub(crate) fn start(mng: Arc<Management>) -> Result<Heartbeat, StartError> {
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(usize, u32), StartError>>(1);
        let m = mng.clone();
        let spawned = std::thread::Builder::new().name("fmq-heartbeat".into()).spawn(move || {
            let handles: Vec<RobustMutex> = (0..SLOTS).map(|slot| mutex(&m, slot)).collect();
            let (slot, owner, guard) = match claim(&m, &handles) {
                Ok(claimed) => claimed,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok((slot, owner)));
            loop {
                m.heartbeat().fetch_add(1, Ordering::Relaxed);
                match stop_rx.recv_timeout(HEARTBEAT_INTERVAL) {
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    _ => break,
                }
            }
            drop(guard);
        });
        let thread = spawned.map_err(|e| ShmError::io("starting the heartbeat thread", "fmq-heartbeat", e))?;
        match ready_rx.recv() {
            Ok(Ok((slot, owner))) => Ok(Heartbeat {
                stop: Some(stop_tx),
                thread: Some(thread),
                slot,
                owner,
                left: AtomicBool::new(false),
                mng,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(ShmError::Config("the heartbeat thread ended before it started".into()).into()),
        }
    }

    /// The transport's liveness slot. The same number selects the transport's ledger (see
    /// `ledger`).
    pub(crate) fn slot(&self) -> usize {
        self.slot
    }

    /// The owner mark that this transport's blocks carry. No other attached transport has the
    /// same mark.
    pub(crate) fn owner(&self) -> u32 {
        self.owner
    }

    /// Gives up the slot, which counts this transport out of the session. The caller passes the
    /// session `lock`, so that it can decide in the same step whether this transport was the last.
    /// The slot's mutex stays held until the `Heartbeat` is dropped.
    pub(crate) fn leave(&self, lock: &SessionLock<'_>) {
        if !self.left.swap(true, Ordering::AcqRel) {
            slot_of(lock.management(), self.slot).pid.store(0, Ordering::Release);
        }
    }
}

/// Picks a new owner mark at random. The mark is usable, and it differs from every occupied slot's
/// mark. The caller holds the session lock.
fn new_owner(m: &Management) -> u32 {
    loop {
        let o = crate::naming::random_u32();
        let taken = (0..SLOTS).any(|s| {
            slot_of(m, s).pid.load(Ordering::Relaxed) != 0 && slot_of(m, s).owner.load(Ordering::Relaxed) as u32 == o
        });
        if usable_owner(o) && !taken {
            return o;
        }
    }
}

/// Claims a free slot for this process, under the session lock. `claim` first locks a free slot's
/// mutex, and only then writes the owner mark and the pid. A free slot's mutex can be in one of two
/// special states:
///
/// - owner-died: its last holder died after leaving. `claim` takes such a slot as well.
/// - busy: its holder has left but has not unlocked the mutex yet. `claim` skips such a slot.
fn claim<'a>(m: &Management, handles: &[RobustMutex<'a>]) -> Result<(usize, u32, Guard<'a>), StartError> {
    let lock = m.lock()?;
    if lock.removed() {
        // The attaching caller finishes the removal if the remover did not (see `attach`).
        return Err(StartError::Removed);
    }
    for (slot, mx) in handles.iter().enumerate() {
        if slot_of(m, slot).pid.load(Ordering::Relaxed) != 0 {
            continue;
        }
        let guard = match mx.try_lock() {
            Ok(TryLock::Acquired(g) | TryLock::OwnerDied(g)) => g,
            Ok(TryLock::Busy) => continue,
            // A free slot with a damaged mutex is skipped. Earlier versions failed every attach to
            // the session instead.
            Err(e) => {
                log::error!("liveness slot {slot} is damaged, another is taken: {e}");
                continue;
            }
        };
        let since = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        slot_of(m, slot).since.store(since, Ordering::Relaxed);
        let owner = new_owner(m);
        slot_of(m, slot).owner.store(u64::from(owner), Ordering::Relaxed);
        slot_of(m, slot).sweeper.store(0, Ordering::Relaxed);
        slot_of(m, slot).metrics.iter().for_each(|w| w.store(0, Ordering::Relaxed));
        crate::session::ledger::reset(m, slot);
        slot_of(m, slot).pid.store(u64::from(std::process::id()), Ordering::Release);
        drop(lock);
        return Ok((slot, owner, guard));
    }
    Err(ShmError::TableFull("process").into())
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        if !self.left.load(Ordering::Acquire) {
            match self.mng.lock() {
                Ok(lock) => self.leave(&lock),
                Err(e) => log::error!("could not free the liveness slot: {e}"),
            }
        }
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Makes slot `slot` name process `pid` with owner mark `owner`, while nobody holds the slot's
/// mutex. A sweep sees this as a transport that died. Tests of what sweeps free use it.
#[cfg(test)]
pub(crate) fn fake_dead_transport(m: &Management, slot: usize, pid: u32, owner: u32) {
    slot_of(m, slot).owner.store(u64::from(owner), Ordering::Relaxed);
    slot_of(m, slot).pid.store(u64::from(pid), Ordering::Release);
}

/// Holds slot `slot`'s mutex on a new thread, as a live transport's slot is held (for tests). The
/// thread waits for a message through the returned sender. `true` makes the thread unlock the
/// mutex. `false` makes the thread end while it still holds the mutex, so the kernel marks the
/// mutex owner-died.
#[cfg(test)]
pub(crate) fn hold(m: &Arc<Management>, slot: usize) -> (mpsc::Sender<bool>, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<bool>();
    let (held_tx, held_rx) = mpsc::channel();
    let m = m.clone();
    let t = std::thread::spawn(move || {
        let mx = mutex(&m, slot);
        let guard = mx.lock(|| true).unwrap();
        held_tx.send(()).unwrap();
        if !rx.recv().unwrap() {
            std::mem::forget(guard);
        }
    });
    held_rx.recv().unwrap();
    (tx, t)
}

/// Makes slot `slot` name process `pid` with owner mark `owner`, while a thread holds the slot's
/// mutex, as a live transport's is held. When told through the returned sender, the thread
/// unlocks the mutex (`true`) or dies holding it (`false`).
#[cfg(test)]
pub(crate) fn fake_live_transport(
    m: &Arc<Management>,
    slot: usize,
    pid: u32,
    owner: u32,
) -> (mpsc::Sender<bool>, JoinHandle<()>) {
    let held = hold(m, slot);
    fake_dead_transport(m, slot, pid, owner);
    held
}

/// Makes slot `slot` name process `pid` with owner mark `owner`, and damages the slot's mutex.
/// The damage is a mutex kind that no pthread call accepts, written to glibc's `__kind` (bytes
/// 16..20 of the mutex on 64-bit Linux). Every lock attempt then fails, so the transport's liveness
/// cannot be determined. Tests of what the heartbeats decide use it.
#[cfg(test)]
pub(crate) fn fake_unseen_transport(m: &Management, slot: usize, pid: u32, owner: u32) {
    const NO_SUCH_KIND: u64 = 100; // priority-protect, priority-inherit and type 4 at once
    slot_of(m, slot).mutex[2].store(NO_SUCH_KIND, Ordering::Relaxed);
    assert!(mutex(m, slot).try_lock().is_err(), "the damaged mutex refuses every try");
    fake_dead_transport(m, slot, pid, owner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::Scratch;

    /// Creates a session for one test. The session is removed when the test ends, also when the
    /// test fails.
    fn scratch(tag: &str) -> Scratch {
        Scratch::new(&format!("liveness-{tag}"))
    }

    /// A metrics endpoint published in a slot reads back as it was written. Words that name no
    /// address read as none; such words are damaged, or were never written.
    #[test]
    fn a_slots_metrics_endpoint_reads_back_and_garbage_reads_as_none() {
        let s = scratch("metricsslot");
        let (m, hb) = Management::attach(&s.0, "s").unwrap();
        let slot = hb.slot();
        assert_eq!(attached(&m)[0].metrics, None, "none published");
        for addr in ["127.0.0.1:9100", "[::1]:40123", "10.2.3.4:1"] {
            let addr: std::net::SocketAddr = addr.parse().unwrap();
            publish_metrics(&m, slot, addr);
            assert_eq!(attached(&m)[0].metrics, Some(addr));
        }
        let words = &slot_of(&m, slot).metrics;
        for head in [0, 5 << 16 | 80, 4 << 16] {
            words[0].store(head, Ordering::Relaxed);
            assert_eq!(endpoint_of(words), None, "{head:#x}");
        }
        m.detach(hb, false).unwrap();
    }

    #[test]
    fn slots_count_the_transports_and_the_last_to_leave_removes_the_session() {
        let s = scratch("count");
        let (m, a) = Management::attach(&s.0, "s").unwrap();
        let (_, b) = Management::attach(&s.0, "s").unwrap();
        assert_eq!(m.device_count(), 2);
        // One process with two transports has two owner marks, because a sweep frees blocks by
        // mark, never by pid.
        assert_ne!(a.owner(), b.owner());
        assert!(usable_owner(a.owner()) && usable_owner(b.owner()));
        let marks: Vec<u32> = attached(&m).iter().map(|x| x.owner).collect();
        assert!(marks.contains(&a.owner()) && marks.contains(&b.owner()), "{marks:?}");
        assert!(!m.detach(a, false).unwrap(), "one is left: the session stays");
        assert_eq!(m.device_count(), 1);
        assert!(m.detach(b, false).unwrap(), "the last one removes the session");
        assert!(Management::open_existing(&s.0).is_err());
    }

    #[test]
    fn a_session_left_half_removed_is_finished_and_made_anew() {
        let s = scratch("halfremoved");
        let (m, hb) = Management::attach(&s.0, "s").unwrap();
        // The last transport is killed after marking the session removed, before unlinking it.
        {
            let lock = m.lock().unwrap();
            hb.leave(&lock);
            lock.mark_removed();
        }
        drop(hb); // its thread ends (the slot was already given up)
        assert!(m.still_linked());
        let (fresh, hb2) = Management::attach(&s.0, "s").expect("a newcomer gets a new session");
        assert!(!m.still_linked(), "the old management segment was removed");
        assert!(fresh.still_linked());
        assert_eq!(fresh.device_count(), 1);
        assert!(fresh.detach(hb2, false).unwrap());
    }

    #[test]
    fn a_slot_that_names_a_process_nobody_holds_is_counted_out() {
        let s = scratch("unheld");
        let (m, hb) = Management::attach(&s.0, "s").unwrap();
        slot_of(&m, 7).owner.store(77, Ordering::Relaxed);
        slot_of(&m, 7).pid.store(4_000_000, Ordering::Release);
        assert_eq!(m.device_count(), 2);
        let dead = m.lock().unwrap().find_dead(hb.owner());
        assert_eq!(dead, [Dead { pid: 4_000_000, owner: 77, slot: 7 }]);
        assert_eq!(m.device_count(), 2, "counted out after its sweep, not before");
        m.lock().unwrap().count_out(&dead[0]);
        assert_eq!(m.device_count(), 1);
        assert!(m.detach(hb, false).unwrap());
    }

    /// A dead slot whose pid word holds no 32-bit pid is counted out too. A faulty process wrote
    /// such a word. Earlier versions of `count_out` compared the whole word with the pid found, and
    /// the two were never equal. Every sweep then found the slot dead again, and each sweep walked
    /// every segment's heap.
    #[test]
    fn a_dead_slot_with_a_damaged_pid_is_counted_out() {
        let s = scratch("badpid");
        let (m, hb) = Management::attach(&s.0, "s").unwrap();
        slot_of(&m, 7).owner.store(77, Ordering::Relaxed);
        slot_of(&m, 7).pid.store(1 << 32 | 5, Ordering::Release);
        let dead = m.lock().unwrap().find_dead(hb.owner());
        assert_eq!(dead, [Dead { pid: 5, owner: 77, slot: 7 }]);
        m.lock().unwrap().count_out(&dead[0]);
        assert_eq!(m.device_count(), 1, "counted out");
        assert!(m.lock().unwrap().find_dead(hb.owner()).is_empty(), "and not found again");
        assert!(m.detach(hb, false).unwrap());
    }

    /// A dead slot may carry an owner mark that no transport can have, or a live transport's
    /// mark. Such a slot is counted out with owner 0, so its sweep frees nothing by that mark.
    #[test]
    fn a_dead_slot_with_a_damaged_owner_mark_frees_nothing_by_it() {
        let s = scratch("badmark");
        let (m, hb) = Management::attach(&s.0, "s").unwrap();
        for (slot, mark) in [(7, hb.owner()), (8, crate::segment::slots::IN_FLIGHT), (9, 0)] {
            slot_of(&m, slot).owner.store(u64::from(mark), Ordering::Relaxed);
            slot_of(&m, slot).pid.store(4_000_000 + slot as u64, Ordering::Release);
        }
        let mut dead = m.lock().unwrap().find_dead(hb.owner());
        dead.sort_by_key(|d| d.slot);
        let owners: Vec<u32> = dead.iter().map(|d| d.owner).collect();
        assert_eq!(owners, [0, 0, 0]);
        dead.iter().for_each(|d| m.lock().unwrap().count_out(d));
        assert_eq!(m.device_count(), 1);
        assert!(m.detach(hb, false).unwrap());
    }

    /// A newcomer skips a free slot whose mutex is damaged, and takes the next free slot.
    #[test]
    fn a_newcomer_skips_a_free_slot_whose_mutex_is_damaged() {
        let s = scratch("badfree");
        let (m, a) = Management::attach(&s.0, "s").unwrap();
        const NO_SUCH_KIND: u64 = 100; // as in `fake_unseen_transport`
        slot_of(&m, 1).mutex[2].store(NO_SUCH_KIND, Ordering::Relaxed);
        let (_, b) = Management::attach(&s.0, "s").expect("attached past the damaged slot");
        assert_eq!((a.slot, b.slot), (0, 2));
        assert!(!m.detach(b, false).unwrap());
        assert!(m.detach(a, false).unwrap());
    }

    #[test]
    fn a_newcomer_skips_a_slot_still_held_and_reuses_one_whose_holder_died() {
        let s = scratch("reuse");
        let (m, first) = Management::attach(&s.0, "s").unwrap();
        assert_eq!(first.slot, 0);
        // Slot 1 stands for a transport that has left (no pid) but whose thread still holds the
        // mutex. Slot 2 stands for a transport killed at that moment (its mutex is owner-died).
        let (busy, busy_thread) = hold(&m, 1);
        let (died, died_thread) = hold(&m, 2);
        died.send(false).unwrap();
        died_thread.join().unwrap();
        let (_, second) = Management::attach(&s.0, "s").unwrap();
        assert_eq!(second.slot, 2, "the busy slot is skipped, the dead holder's slot is taken");
        assert_eq!(m.device_count(), 2);
        assert!(m.lock().unwrap().find_dead(second.owner()).is_empty(), "both holders are alive");
        busy.send(true).unwrap();
        busy_thread.join().unwrap();
        assert!(!m.detach(second, false).unwrap());
        assert!(m.detach(first, false).unwrap());
    }

    #[test]
    fn a_transport_that_left_is_not_counted_again_while_its_thread_still_holds_the_mutex() {
        let s = scratch("twice");
        let (m, keep) = Management::attach(&s.0, "s").unwrap();
        let (_, gone) = Management::attach(&s.0, "s").unwrap();
        // `gone` gave up its slot. A kill now would leave the mutex owner-died but the slot free.
        gone.leave(&m.lock().unwrap());
        assert_eq!(m.device_count(), 1);
        let mx = mutex(&m, gone.slot);
        assert!(matches!(mx.try_lock().unwrap(), TryLock::Busy), "its heartbeat thread still holds the mutex");
        assert!(m.lock().unwrap().find_dead(keep.owner()).is_empty(), "a free slot is nobody's to count out");
        assert_eq!(m.device_count(), 1);
        drop(gone);
        assert_eq!(m.device_count(), 1, "dropping a heartbeat that left frees nothing more");
        assert!(m.detach(keep, false).unwrap());
    }

    /// One live sweeper at a time sweeps a dead transport. The dead transport is counted out only
    /// when its sweep is done. A sweeper killed before then leaves the dead transport to the next
    /// sweeper. Earlier versions counted a dead transport out as soon as a sweeper found it. A
    /// sweeper killed before it freed what the dead transport held then left those blocks
    /// allocated for the session's life.
    #[test]
    fn a_dead_transport_stays_until_its_sweep_is_done_and_passes_to_the_next_sweeper() {
        let s = scratch("sweepers");
        let (m, a) = Management::attach(&s.0, "s").unwrap();
        let (_, b) = Management::attach(&s.0, "s").unwrap();
        slot_of(&m, 7).owner.store(77, Ordering::Relaxed);
        slot_of(&m, 7).pid.store(4_000_000, Ordering::Release);
        let found = m.lock().unwrap().find_dead(a.owner());
        assert_eq!(found, [Dead { pid: 4_000_000, owner: 77, slot: 7 }]);
        assert!(m.lock().unwrap().find_dead(b.owner()).is_empty(), "a live sweeper has it");
        assert_eq!(m.lock().unwrap().find_dead(a.owner()), found, "its own sweeper finds it again");
        // The sweeper dies before it counts the dead transport out. A mark that no attached
        // transport carries stands for the dead sweeper.
        slot_of(&m, 7).sweeper.store(4242, Ordering::Relaxed);
        assert_eq!(m.lock().unwrap().find_dead(b.owner()), found, "the next sweeper takes it over");
        assert_eq!(m.device_count(), 3, "not counted out yet");
        m.lock().unwrap().count_out(&found[0]);
        assert_eq!(m.device_count(), 2);
        m.lock().unwrap().count_out(&found[0]);
        assert_eq!(m.device_count(), 2, "counted out once");
        assert!(!m.detach(a, false).unwrap());
        assert!(m.detach(b, false).unwrap());
    }
}
