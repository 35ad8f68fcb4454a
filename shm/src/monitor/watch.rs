//! The monitor mode ([`Watcher`]): it watches a session's heartbeats and the liveness of its
//! processes, and cleans up what the dead left.
//!
//! As in FairMQ, the monitor cleans a session whose heartbeats stopped for the timeout. Beyond
//! FairMQ, every step ([`Watcher::step`]) also tries the liveness slot of each attached transport
//! (see `liveness`), and sweeps the dead ([`sweep`]):
//!
//! - The monitor counts a dead process out of the session at once. It drops the shared references
//!   that the process's ledger lists, finishes the process's claims under way, and frees the
//!   blocks that the process held alone or kept in its caches.
//! - A dead process that listed a lane may hold the lane's last reference. Releasing what a lane
//!   holds takes a transport, so the monitor then attaches one for a moment instead, and that
//!   transport's attach sweeps the dead.
//! - When the last transport of a session died, the monitor cleans the session without waiting
//!   for the timeout.
//!
//! The monitor does not clean a session whose heartbeats stopped while one of its transports is
//! provably alive, that is, while the transport holds its slot's mutex. Its process may be stopped
//! by a signal or a debugger, or busy. The heartbeats decide alone only for transports whose
//! liveness cannot be seen.

use super::cleanup;
use super::report::open_if_present;
use crate::error::ShmError;
use crate::naming::Names;
use crate::segment::Segment;
use crate::session::management::{Management, SessionLock};
use std::time::{Duration, Instant};

/// How often the watch loop looks at the session (FairMQ: 100 ms).
pub const WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// What one sweep for dead processes found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Pids of the transports found dead. They were counted out of the session.
    pub dead: Vec<u32>,
    /// Blocks and bytes freed from the caches of the dead transports.
    pub freed: (u64, u64),
    /// Whether the session was cleaned because no transport is left.
    pub cleaned: bool,
    /// Whether a transport that the monitor attached swept the dead transports. This happens when
    /// some of them listed lanes (see [`sweep`]).
    pub by_transport: bool,
}

/// Looks for dead processes in the session and counts them out. Frees their cached blocks in every
/// segment. If the dead processes were the session's last ones, cleans the session.
///
/// A dead transport that listed a lane may hold the lane's last reference. Releasing what a lane
/// still holds takes a transport: it drops the messages and region pieces, each as the lane's
/// reader would drop it. So the monitor then attaches a transport for a moment, and the attach of
/// that transport sweeps every dead transport. Previously, the monitor counted such a dead
/// transport out, and the lane stayed with its messages for the session's life.
///
/// In that case the monitor does no part of the sweep itself first. A dead writer's staged lane
/// entry names blocks that are still marked as the writer's own, and a sweep split in two could
/// free them twice.
///
/// A last user that detaches while the monitor's transport is attached leaves the session to the
/// monitor. The monitor then cleans the session after the heartbeat timeout.
pub fn sweep(shm_id: &str) -> Result<Sweep, ShmError> {
    let names = Names::new(shm_id);
    sweep_open(Management::open_existing(&names)?, &names)
}

/// Removes the session when none of its processes lives, and returns whether it did. The check
/// and the removal both happen under the session lock `lock`, as in a last transport's detach. So
/// a process that attaches meanwhile either came first and is counted, or finds the session
/// removed.
fn remove_if_nobody_lives(m: &Management, lock: &SessionLock<'_>, dead: &[u32]) -> bool {
    if !crate::session::liveness::live_slots(m).is_empty() {
        return false;
    }
    log::info!("every process of session {} died ({dead:?}), cleaning...", m.names().shm_id());
    for name in lock.remove_session() {
        log::info!("Successfully removed '{name}'.");
    }
    true
}

/// [`sweep`], with the management segment already open. The management segment is closed before
/// a cleanup.
fn sweep_open(m: Management, names: &Names) -> Result<Sweep, ShmError> {
    let shm_id = names.shm_id();
    // Hold the session lock until the dead are counted out. The monitor has no slot, and so no
    // owner mark, to claim their sweep with. So nobody else may find them dead meanwhile (see
    // `find_dead`).
    let lock = m.lock()?;
    let dead = lock.find_dead(0);
    let mut out = Sweep { dead: dead.iter().map(|d| d.pid).collect(), ..Sweep::default() };
    if out.dead.is_empty() {
        return Ok(out);
    }
    if remove_if_nobody_lives(&m, &lock, &out.dead) {
        out.cleaned = true;
        return Ok(out);
    }
    let opened: Vec<Segment> =
        m.segments().iter().filter_map(|s| Segment::open(&Names::path(&names.segment(s.id)), s.id).ok()).collect();
    let lists_a_lane = |d: &crate::session::liveness::Dead| {
        d.owner != 0 && crate::session::ledger::lists_a_lane(&opened[..], &m, d.slot, d.owner)
    };
    let (lock, dead) = if dead.iter().any(lists_a_lane) {
        drop(lock);
        crate::kill_point::here("sweep_open: the lock let go, no transport attached");
        match sweep_by_transport(&m, names) {
            Ok(()) => {
                out.by_transport = true;
                // That transport counted out every dead process it found, including those that
                // died after the look above. If nobody is left alive, nobody will find them dead
                // again. So the session goes here, as the last detach would have removed it. (That
                // transport left the removal to the monitor.) Previously, the session stayed until
                // the heartbeats timed out.
                out.cleaned = remove_if_nobody_lives(&m, &m.lock()?, &out.dead);
                return Ok(out);
            }
            Err(e) => {
                // The monitor sweeps here itself, as it did before. The lanes whose last reference
                // the dead held then stay.
                log::warn!(
                    "could not attach a transport to session {shm_id} to release the lanes of dead processes: {e}"
                );
                let lock = m.lock()?;
                let dead = lock.find_dead(0);
                (lock, dead)
            }
        }
    } else {
        (lock, dead)
    };
    // A slot with a damaged owner mark (0) is counted out, but nothing is freed for it.
    let swept: Vec<_> = dead.iter().filter(|d| d.owner != 0).collect();
    let mut pieces = crate::region::count::Orphans::new(&m);
    for d in &swept {
        // Drop the shared references that the dead process listed in its ledger (see `ledger`).
        // A reference that is a lane's last reference stays.
        crate::session::ledger::release(&opened[..], &mut pieces, &m, d.slot, d.owner);
    }
    // Finish the claims that the dead left under way, as a transport's sweep finishes them.
    // Previously, their tickets stayed claimed, and their blocks stayed in flight until the
    // session ended.
    let owners: Vec<u32> = swept.iter().map(|d| d.owner).collect();
    let segment = |id: u16| opened.iter().find(|s| s.id() == id);
    for sg in &opened {
        sg.finish_claims(&owners, segment);
    }
    let ticketed = crate::segment::Ticketed::of(&opened);
    for sg in &opened {
        for d in &swept {
            if let Ok((n, b)) = sg.reclaim_dead(d.owner, &ticketed) {
                out.freed.0 += n;
                out.freed.1 += b;
            }
        }
    }
    crate::session::attach::remove_tmp_of(names, &dead);
    dead.iter().for_each(|d| lock.count_out(d));
    Ok(out)
}

/// Attaches a transport to the session and detaches it again, leaving the session in place. The
/// attach sweeps the dead and releases what their lanes hold (see [`sweep`]). The transport uses
/// one of the session's segments, as it is. A session or segment removed meanwhile is not made
/// again.
fn sweep_by_transport(m: &Management, names: &Names) -> Result<(), ShmError> {
    let shm_id = names.shm_id();
    let number = crate::shmid::shm_id_number(shm_id)
        .filter(|&n| crate::shmid::shm_id_from_number(n) == shm_id)
        .ok_or_else(|| ShmError::Config(format!("shmid {shm_id} is not one a transport can attach by")))?;
    let segment = m.segments().first().copied().ok_or_else(|| ShmError::Config("no segment".into()))?;
    let mut c = crate::ShmConfig::new("shmmonitor-sweep", shm_id);
    c.shm_id = Some(number);
    c.segment_id = segment.id;
    c.segment_size = segment.size;
    // The monitor decides whether the session goes. Its users may keep it with
    // `--shm-no-cleanup`.
    c.no_cleanup = true;
    drop(crate::Transport::existing(&c)?);
    Ok(())
}

/// What a watch step decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Keep watching.
    Continue,
    /// Self-destruct: stop the monitor.
    Stop,
}

/// The monitor mode's loop state (FairMQ's `Watch` and `CheckHeartbeats`).
#[derive(Debug)]
pub struct Watcher {
    shm_id: String,
    names: Names,
    timeout: Duration,
    self_destruct: bool,
    started: Instant,
    last_heartbeat: Instant,
    last_count: u64,
    triggered: bool,
    seen_once: bool,
    /// The heartbeats timed out, but live processes kept the session. The monitor logs this once
    /// per stall.
    held_back: bool,
}

impl Watcher {
    /// Watches `shm_id`. The watcher cleans the session after `timeout` without heartbeats, unless
    /// a process of the session is alive. With `self_destruct`, the watcher stops once the session
    /// was seen and then went away, or when the session was not seen within twice the timeout.
    pub fn new(shm_id: &str, timeout: Duration, self_destruct: bool) -> Watcher {
        let now = Instant::now();
        Watcher {
            shm_id: shm_id.to_owned(),
            names: Names::new(shm_id),
            timeout,
            self_destruct,
            started: now,
            last_heartbeat: now,
            last_count: 0,
            triggered: false,
            seen_once: false,
            held_back: false,
        }
    }

    /// Looks at the session once. An error ends the watch: for example a management segment that
    /// exists but cannot be used, or objects that cannot be removed.
    pub fn step(&mut self) -> Result<Step, ShmError> {
        let now = Instant::now();
        let Some(m) = open_if_present(&self.names)? else { return self.absent(now) };
        self.seen_once = true;
        let count = m.heartbeat_count();
        if count != self.last_count {
            self.last_count = count;
            self.triggered = true;
            self.held_back = false;
            self.last_heartbeat = now;
        }
        match sweep_open(m, &self.names) {
            Ok(s) if s.cleaned => return Ok(self.cleaned()),
            Ok(s) if s.by_transport => {
                log::info!(
                    "processes {:?} died; what they held, their lanes too, was released by a transport's sweep",
                    s.dead
                );
                // The sweeping transport's heartbeats do not come from the session's users, so
                // they are not counted.
                if let Ok(Some(m)) = open_if_present(&self.names) {
                    self.last_count = m.heartbeat_count();
                }
            }
            Ok(s) if !s.dead.is_empty() => {
                log::info!("processes {:?} died; freed {} cached blocks ({} bytes)", s.dead, s.freed.0, s.freed.1);
            }
            Ok(_) => {}
            Err(e) => log::warn!("could not look for dead processes of {}: {e}", self.shm_id),
        }
        if self.triggered && now.duration_since(self.last_heartbeat) > self.timeout {
            return self.heartbeats_timed_out();
        }
        Ok(Step::Continue)
    }

    /// Applies FairMQ's self-destruct rules when the session has no management segment.
    fn absent(&mut self, now: Instant) -> Result<Step, ShmError> {
        self.triggered = false;
        if self.self_destruct {
            if self.seen_once {
                log::info!("self destructing (segment has been observed and cleaned up orderly)");
                return Ok(Step::Stop);
            }
            if now.duration_since(self.started) > 2 * self.timeout {
                cleanup(&self.shm_id)?;
                log::info!("self destructing (no segments observed within (timeout * 2) since start)");
                return Ok(Step::Stop);
            }
        }
        Ok(Step::Continue)
    }

    /// Handles a session that had no heartbeat for longer than the timeout. The session is
    /// removed, unless a transport of the session is alive. As in a last detach, the removal
    /// happens under the session lock and sets the removed mark. So a process that attaches at
    /// this moment opens a new session instead of one that is being removed.
    fn heartbeats_timed_out(&mut self) -> Result<Step, ShmError> {
        let ms = self.timeout.as_millis();
        let Some(m) = open_if_present(&self.names)? else { return Ok(Step::Continue) };
        let lock = m.lock();
        let alive = crate::session::liveness::alive(&m);
        if !alive.is_empty() {
            if !self.held_back {
                log::warn!(
                    "no heartbeats since over {ms} milliseconds, but processes {alive:?} of the session are alive \
                     (stopped or busy): not cleaning"
                );
                self.held_back = true;
            }
            return Ok(Step::Continue);
        }
        log::info!("no heartbeats since over {ms} milliseconds, cleaning...");
        match lock {
            Ok(lock) => lock.remove_session().iter().for_each(|n| log::info!("Successfully removed '{n}'.")),
            Err(e) => {
                log::warn!("could not lock session {} ({e}): removing its objects anyway", self.shm_id);
                cleanup(&self.shm_id)?;
            }
        }
        Ok(self.cleaned())
    }

    /// After the monitor cleaned the session: watch for the next one, or self-destruct.
    fn cleaned(&mut self) -> Step {
        self.triggered = false;
        if self.self_destruct {
            log::info!("self destructing (segment has been observed and cleaned up by the monitor)");
            return Step::Stop;
        }
        Step::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::Scratch;
    use std::sync::Arc;

    /// Makes a session whose only transport is the one that `make` puts into slot 9, and a watcher
    /// with a short timeout. The transport that made the session, and beat its heartbeat, has
    /// left.
    fn session_of(tag: &str, make: impl FnOnce(&Arc<Management>)) -> (Scratch, Arc<Management>, Watcher) {
        let scratch = Scratch::new(&format!("watch-{tag}"));
        let names = scratch.0.clone();
        let (m, hb) = Management::attach(&names, "s").unwrap();
        make(&m);
        assert!(!m.detach(hb, false).unwrap(), "slot 9 keeps the session");
        (scratch, m, Watcher::new(names.shm_id(), Duration::from_millis(200), true))
    }

    fn deadline() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    /// Issue 17, item 6: a live process that stopped beating keeps its session. Here, a thread
    /// that holds the slot plays the process. Once the process is gone, the session is cleaned.
    #[test]
    fn i06_a_live_transport_keeps_its_session_without_heartbeats() {
        let mut live = None;
        let (_s, m, mut w) =
            session_of("alive", |m| live = Some(crate::session::liveness::fake_live_transport(m, 9, 4_000_000, 99)));
        let until = deadline();
        while !w.held_back {
            assert_eq!(w.step().unwrap(), Step::Continue, "the session is kept");
            assert!(Instant::now() < until, "the watcher never reached its timeout");
            std::thread::sleep(WATCH_INTERVAL);
        }
        assert!(m.still_linked(), "the session survives the heartbeat timeout");
        let (release, holder) = live.unwrap();
        release.send(true).unwrap();
        holder.join().unwrap();
        assert_eq!(w.step().unwrap(), Step::Stop, "its process gone, the session is cleaned");
        assert!(!m.still_linked());
    }

    /// The monitor's sweeping transport attaches only to a session that exists. A session removed
    /// between the monitor's look and the attach is not made again, and neither is its segment.
    #[test]
    fn the_sweeping_transport_makes_no_session() {
        let mut c = crate::ShmConfig::new("sweep", &format!("watch-none-{}", std::process::id()));
        c.segment_size = 8 << 20;
        let _scratch = Scratch::of_shm_id(&c.resolved_shm_id());
        let names = Names::new(&c.resolved_shm_id());
        assert!(crate::Transport::existing(&c).is_err(), "no session to attach to");
        assert!(!Names::path(&names.management()).exists(), "no session made");
        assert!(!Names::path(&names.segment(0)).exists(), "no segment made");
        let ordinary = crate::Transport::new(&c).unwrap();
        assert!(Names::path(&names.management()).exists(), "an ordinary transport makes one: the names are right");
        drop(ordinary);
    }

    /// The monitor finds one dead process, which listed a lane, and leaves the sweep to a
    /// transport of its own. The session's other process dies before that transport attaches,
    /// and the transport counts out both. Nobody lives, so the session goes at once. Previously,
    /// nobody found them dead again, and the session stayed until the heartbeats timed out. The
    /// kill test of the monitor mode hung under load because of that.
    #[test]
    fn a_session_whose_last_process_dies_while_a_transport_sweeps_for_the_monitor_is_cleaned_at_once() {
        let mut c = crate::ShmConfig::new("race", &format!("watch-race-{}", std::process::id()));
        c.segment_size = 8 << 20;
        let _scratch = Scratch::of_shm_id(&c.resolved_shm_id());
        let names = Names::new(&c.resolved_shm_id());
        let first = crate::Transport::new(&c).unwrap(); // makes the session and its segment
        let m = Arc::new(Management::open_existing(&names).unwrap());
        let (end_a, a) = crate::session::liveness::fake_live_transport(&m, 9, 4_000_001, 91);
        let (end_b, b) = crate::session::liveness::fake_live_transport(&m, 10, 4_000_002, 92);
        // A lists a lane. The entry names no block, so the sweep checks it and drops nothing.
        let own = Arc::new(Segment::open(&Names::path(&names.segment(0)), 0).unwrap());
        crate::session::ledger::Ledger::new(9, 91, own)
            .note(&m, 0, 1 << 20, 0, 0, crate::session::ledger::Referent::Lane)
            .unwrap();
        drop(first); // A and B keep the session
        assert!(m.still_linked());
        end_a.send(false).unwrap(); // A dies
        a.join().unwrap();
        crate::kill_point::meanwhile("sweep_open: the lock let go, no transport attached", move || {
            end_b.send(false).unwrap(); // B dies
            b.join().unwrap();
        });
        let out = sweep(names.shm_id()).unwrap();
        assert_eq!(out.dead, [4_000_001], "the monitor found A");
        assert!(out.by_transport, "a transport swept");
        assert!(out.cleaned, "the session was cleaned");
        assert!(!m.still_linked());
    }

    /// Issue 17, item 6: for a transport whose liveness cannot be seen, the heartbeats decide.
    #[test]
    fn i06_heartbeats_decide_for_a_transport_whose_liveness_cannot_be_seen() {
        let (_s, m, mut w) =
            session_of("unseen", |m| crate::session::liveness::fake_unseen_transport(m, 9, 4_000_000, 99));
        let until = deadline();
        while w.step().unwrap() == Step::Continue {
            assert!(Instant::now() < until, "the session was never cleaned");
            std::thread::sleep(WATCH_INTERVAL);
        }
        assert!(!m.still_linked(), "cleaned after the heartbeat timeout");
    }
}
