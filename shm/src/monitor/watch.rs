//! The monitor mode: watching a session's heartbeats and the liveness of its processes, and
//! cleaning what the dead left.
//!
//! Heartbeats follow FairMQ: a session whose heartbeats stopped for the timeout is cleaned. Beyond
//! FairMQ, every tick also tries the liveness slot of each attached transport (`liveness`): a
//! process that died is counted out at once and the blocks it held in its caches are freed; when
//! the last transport of a session died, the session is cleaned without waiting for the timeout.

use super::cleanup;
use crate::error::ShmError;
use crate::management::Management;
use crate::naming::Names;
use crate::segment::Segment;
use std::time::{Duration, Instant};

/// How often the watch loop looks at the session (FairMQ: 100 ms).
pub const WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// What one sweep for dead processes found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Pids of transports found dead (counted out of the session).
    pub dead: Vec<u32>,
    /// Blocks (and bytes) freed from their caches.
    pub freed: (u64, u64),
    /// Whether the session was cleaned because no transport is left.
    pub cleaned: bool,
}

/// Looks for dead processes in the session, counts them out, frees their cached blocks in every
/// segment and, if they were the last ones, cleans the session.
pub fn sweep(shm_id: &str) -> Result<Sweep, ShmError> {
    let names = Names::new(shm_id);
    sweep_open(Management::open_existing(&names)?, &names)
}

/// [`sweep`] with the management segment already open (closed before a cleanup).
fn sweep_open(m: Management, names: &Names) -> Result<Sweep, ShmError> {
    let shm_id = names.shm_id();
    let lock = m.lock()?;
    let dead = lock.sweep_dead();
    let mut out = Sweep { dead: dead.iter().map(|d| d.pid).collect(), ..Sweep::default() };
    if out.dead.is_empty() {
        return Ok(out);
    }
    if m.device_count() == 0 {
        // Decided and done under the session lock, as a last transport's detach does: a process
        // attaching meanwhile either came before (and is counted) or finds the session removed.
        log::info!("every process of session {shm_id} died ({:?}), cleaning...", out.dead);
        for name in lock.remove_session() {
            log::info!("Successfully removed '{name}'.");
        }
        out.cleaned = true;
        return Ok(out);
    }
    drop(lock);
    for seg in m.segments() {
        let Ok(sg) = Segment::open(&Names::path(&names.segment(seg.id)), seg.id) else { continue };
        for d in &dead {
            if let Ok((n, b)) = sg.reclaim_cached_of(d.owner) {
                out.freed.0 += n;
                out.freed.1 += b;
            }
        }
    }
    Ok(out)
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
}

impl Watcher {
    /// Watches `shm_id`: clean after `timeout` without heartbeats; with `self_destruct`, stop once
    /// the session was seen and then went away (or was never seen within twice the timeout).
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
        }
    }

    /// One look at the session. An error (a management segment that exists but cannot be used,
    /// objects that cannot be removed) ends the watch.
    pub fn step(&mut self) -> Result<Step, ShmError> {
        let now = Instant::now();
        let m = match Management::open_existing(&self.names) {
            Ok(m) => m,
            Err(e) if e.is_not_found() => return self.absent(now),
            Err(e) => return Err(e),
        };
        self.seen_once = true;
        let count = m.heartbeat_count();
        if count != self.last_count {
            self.last_count = count;
            self.triggered = true;
            self.last_heartbeat = now;
        }
        match sweep_open(m, &self.names) {
            Ok(s) if s.cleaned => return Ok(self.cleaned()),
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

    /// No management segment: FairMQ's self-destruct rules.
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

    /// No heartbeat for longer than the timeout: the session is removed, under its lock with the
    /// removed mark as a last detach does (a process attaching at this moment opens a new session
    /// instead of one being removed).
    fn heartbeats_timed_out(&mut self) -> Result<Step, ShmError> {
        log::info!("no heartbeats since over {} milliseconds, cleaning...", self.timeout.as_millis());
        let locked = Management::open_existing(&self.names).and_then(|m| Ok(m.lock()?.remove_session()));
        match locked {
            Ok(removed) => removed.iter().for_each(|n| log::info!("Successfully removed '{n}'.")),
            Err(e) if e.is_not_found() => {}
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
