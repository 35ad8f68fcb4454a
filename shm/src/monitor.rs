//! What `fairmq-shmmonitor` does, as a library: report a session, clean it, list every session, and
//! watch one (FairMQ's `fair::mq::shmem::Monitor`).
//!
//! Watching follows FairMQ: a session whose heartbeats stopped for `timeout` is cleaned. Beyond
//! FairMQ, every tick also tries the liveness slot of each attached transport (`liveness`): a
//! process that died is counted out at once and the blocks it held in its caches are freed; when
//! the last transport of a session died, the session is cleaned without waiting for the timeout.

use crate::ack_queue::AckQueue;
use crate::error::ShmError;
use crate::management::Management;
use crate::naming::Names;
use crate::segment::Segment;
use crate::sys::flock;
use crate::sys::mapping::names_file;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How often the watch loop looks at the session (FairMQ: 100 ms).
pub const WATCH_INTERVAL: Duration = Duration::from_millis(100);
/// The monitor's executable name.
pub const MONITOR_BINARY: &str = "fairmq-shmmonitor";
const START_POLL: Duration = Duration::from_millis(10);
const START_POLLS: u32 = 1000;

/// The lock a running monitor holds for a session (FairMQ's named mutex `fmq_<id>_ms`): it tells
/// devices that a monitor runs, and keeps a second monitor of the session from starting. The file
/// is removed when the monitor ends; if the monitor is killed, the kernel drops the lock and the
/// next monitor takes the file over.
#[derive(Debug)]
pub struct MonitorLock {
    _file: File,
    path: std::path::PathBuf,
}

impl MonitorLock {
    /// Takes the lock; `None` if another monitor of the session holds it.
    pub fn acquire(names: &Names) -> Result<Option<MonitorLock>, ShmError> {
        let name = names.monitor_lock();
        let path = Names::path(&name);
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| ShmError::io("opening the monitor lock", &name, e))?;
            if !flock::try_exclusive(&file).map_err(|e| ShmError::io("locking the monitor lock", &name, e))? {
                return Ok(None);
            }
            // A monitor that ends unlinks the file while still holding it: a file we locked after
            // that is no longer the session's lock (another monitor may be making a new one), so
            // take the lock again by name.
            if names_file(&file, &path) {
                return Ok(Some(MonitorLock { _file: file, path }));
            }
        }
    }
}

impl Drop for MonitorLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether a monitor runs for the session.
pub fn monitor_running(names: &Names) -> bool {
    match File::open(Names::path(&names.monitor_lock())) {
        Ok(f) => flock::held_by_other(&f).unwrap_or(false),
        Err(_) => false,
    }
}

/// The monitor binary: in `$FAIRMQ_PATH` first, then in `$PATH`.
fn find_monitor_binary() -> Option<PathBuf> {
    let dirs = std::env::var_os("FAIRMQ_PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain(std::env::var_os("PATH").into_iter().flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>()));
    dirs.map(|d| d.join(MONITOR_BINARY)).find(|p| p.is_file())
}

/// Starts `fairmq-shmmonitor -x -m --shmid <id> -d -t 2000` for the session unless a monitor runs
/// (what `--shm-monitor true` does, as FairMQ's `Manager::StartMonitor`). A missing binary is only a
/// warning; a daemon that does not take its lock within 10 s is an error.
pub fn start_daemon(names: &Names) -> Result<(), ShmError> {
    let shm_id = names.shm_id();
    if monitor_running(names) {
        log::debug!("Found fairmq-shmmonitor for shared memory id {shm_id}");
        return Ok(());
    }
    log::debug!("no fairmq-shmmonitor found for shared memory id {shm_id}, starting...");
    let Some(exe) = find_monitor_binary() else {
        log::warn!("could not find fairmq-shmmonitor in \"$FAIRMQ_PATH:$PATH\"");
        return Ok(());
    };
    let mut cmd = Command::new(&exe);
    cmd.args(["-x", "-m", "--shmid", shm_id, "-d", "-t", "2000"]);
    if std::env::var("FAIRMQ_SHMMONITOR_VERBOSE").as_deref() == Ok("true") {
        cmd.arg("--verbose");
    }
    let mut launcher = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| ShmError::io("starting", &exe.display().to_string(), e))?;
    // The launcher exits once it has started the daemon; it is reaped here or by a thread.
    let started = (0..START_POLLS).any(|_| {
        if monitor_running(names) {
            return true;
        }
        std::thread::sleep(START_POLL);
        false
    });
    match launcher.try_wait() {
        Ok(Some(_)) => {}
        _ => {
            std::thread::spawn(move || launcher.wait());
        }
    }
    if !started {
        let ms = START_POLL.as_millis() as u64 * u64::from(START_POLLS);
        log::error!("Did not get response from fairmq-shmmonitor after {ms} milliseconds. Exiting.");
        return Err(ShmError::MonitorStart(ms));
    }
    log::debug!("Started fairmq-shmmonitor for shared memory id {shm_id}");
    Ok(())
}

fn remove(name: &str, path: &Path, out: &mut Vec<(String, bool)>) {
    let removed = std::fs::remove_file(path).is_ok();
    if removed {
        log::info!("Successfully removed '{name}'.");
    } else {
        log::debug!("Did not remove '{name}'. Already removed?");
    }
    out.push((name.to_owned(), removed));
}

/// Removes every object of the session the registries know (regions, also file-backed ones, their
/// queues, segments, the management segment) and leftovers under the session's prefix; the monitor
/// lock stays. Returns each name and whether it was removed.
pub fn cleanup(shm_id: &str) -> Vec<(String, bool)> {
    let names = Names::new(shm_id);
    log::info!("Cleaning up for shared memory id '{shm_id}'...");
    let mut out = Vec::new();
    match Management::open_existing(&names) {
        Err(_) => {
            log::info!("Did not find '{}' management segment. No regions to cleanup.", names.management());
        }
        Ok(m) => {
            let regions = crate::registry::regions(&m);
            log::info!("Found {} unmanaged regions...", regions.len());
            for r in &regions {
                log::info!(
                    "Found UnmanagedRegion with id: {}, path: '{}', flags: {}, fDestroyed: {}.",
                    r.id,
                    r.path,
                    r.creation_flags,
                    u8::from(r.destroyed)
                );
                let data = r.data_path(&names);
                remove(&data.display().to_string(), &data, &mut out);
                let q = names.region_queue(r.id);
                remove(&q, &Names::path(&q), &mut out);
            }
            let segments = m.segments();
            log::info!("Found {} managed segments...", segments.len());
            for s in &segments {
                let n = names.segment(s.id);
                remove(&n, &Names::path(&n), &mut out);
            }
            let mng = names.management();
            remove(&mng, &Names::path(&mng), &mut out);
        }
    }
    let lock = names.monitor_lock();
    for leftover in crate::management::remove_session_except(&names, Some(&lock)) {
        log::info!("Successfully removed '{leftover}'.");
        out.push((leftover, true));
    }
    out
}

/// [`cleanup`] plus the monitor lock (what `fairmq-shmmonitor -c` runs).
pub fn cleanup_full(shm_id: &str) -> Vec<(String, bool)> {
    let mut out = cleanup(shm_id);
    let names = Names::new(shm_id);
    let lock = names.monitor_lock();
    let path = Names::path(&lock);
    if path.exists() {
        remove(&lock, &path, &mut out);
    }
    out
}

/// The segment report (FairMQ's `PrintShm`): segments with free and used memory, regions,
/// attached processes. `None` if the session has no management segment.
pub fn report(shm_id: &str) -> Option<String> {
    let names = Names::new(shm_id);
    let m = Management::open_existing(&names).ok()?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "shm id: {shm_id}, session: {}, creator id: {}, devices: {}, managed segments:",
        m.session_name(),
        m.creator_uid(),
        m.device_count()
    );
    for seg in m.segments() {
        match Segment::open(&Names::path(&names.segment(seg.id)), seg.id) {
            Ok(sg) => {
                let st = sg.stats();
                let _ = writeln!(
                    s,
                    "   [{}]: total: {}, msgs: {}, free: {}, used: {}",
                    seg.id, st.size, st.used_blocks, st.free, st.used
                );
            }
            Err(e) => {
                let _ = writeln!(s, "   [{}]: total: {}, cannot open: {e}", seg.id, seg.size);
            }
        }
    }
    let total = crate::management::MANAGEMENT_SIZE;
    let _ = writeln!(s, "   [m]: total: {total}, heartbeat: {}, events: {}", m.heartbeat_count(), m.event_count());
    let regions = crate::registry::regions(&m);
    if !regions.is_empty() {
        let _ = writeln!(s, "   unmanaged regions:");
        for r in regions {
            let state = if r.destroyed { "destroyed" } else { "alive" };
            let pending = AckQueue::open(&Names::path(&names.region_queue(r.id))).map(|q| q.pending()).ok();
            let _ = write!(s, "      [{}]: {state}, size: {}, user flags: {}", r.id, r.size, r.user_flags);
            if !r.path.is_empty() {
                let _ = write!(s, ", path: '{}'", r.path);
            }
            match pending {
                Some(p) => {
                    let _ = writeln!(s, ", acknowledgements pending: {p}");
                }
                None => s.push('\n'),
            }
        }
    }
    let procs = crate::liveness::attached(&m);
    let list: Vec<String> = procs.iter().map(|a| a.pid.to_string()).collect();
    let _ = writeln!(s, "   attached processes: {}", if list.is_empty() { "none".into() } else { list.join(", ") });
    Some(s)
}

/// Every used block of every segment with its owner (FairMQ's `--debug`, which needs a debug build
/// there; here owners are always recorded).
pub fn debug_info(shm_id: &str) -> String {
    let names = Names::new(shm_id);
    let Ok(m) = Management::open_existing(&names) else { return "no segments found".into() };
    // Blocks carry their transport's owner mark; the attached transports tell whose pid that is.
    let attached = crate::liveness::attached(&m);
    let creator = |owner: u32| match attached.iter().find(|a| a.owner == owner) {
        Some(a) => a.pid.to_string(),
        None => format!("unknown (owner mark {owner}, not attached)"),
    };
    let mut s = String::new();
    for seg in m.segments() {
        let Ok(sg) = Segment::open(&Names::path(&names.segment(seg.id)), seg.id) else { continue };
        let Ok(blocks) = sg.used_blocks() else { continue };
        let _ = writeln!(s, "found {} messages.", blocks.len());
        for (off, size, owner, count) in blocks {
            let _ = writeln!(
                s,
                "segment: {:>3}, offset: {off:>12}, size: {size:>10}, creator PID: {}, references: {count}",
                seg.id,
                creator(owner)
            );
        }
    }
    s
}

/// Forgets every allocation in the session's segments and removes its regions' acknowledgement
/// queues (FairMQ's experimental `ResetContent`, for reuse after a crash; only sound when no process
/// uses the session). Returns the report lines (FairMQ prints them to stdout).
pub fn reset_content(shm_id: &str) -> Vec<String> {
    let names = Names::new(shm_id);
    let mut out = vec![format!("Resetting segments content for shared memory id '{shm_id}'...")];
    let m = match Management::open_existing(&names) {
        Ok(m) => m,
        Err(e) => {
            out.push(format!("Could not find '{}' segment. Nothing to cleanup.", names.management()));
            out.push(e.to_string());
            return out;
        }
    };
    let segments = m.segments();
    out.push(format!("Found info for {} managed segments", segments.len()));
    for seg in segments {
        let name = names.segment(seg.id);
        out.push(format!("Resetting content of segment '{name}'..."));
        match Segment::open(&Names::path(&name), seg.id).and_then(|s| s.reset_content()) {
            Ok(()) => out.push("Done.".into()),
            Err(e) => out.push(format!("Error resetting content of segment '{name}': {e}")),
        }
    }
    for r in crate::registry::regions(&m) {
        let q = names.region_queue(r.id);
        if std::fs::remove_file(Names::path(&q)).is_ok() {
            out.push(format!("Removed '{q}'."));
        }
    }
    out.push(format!("Done resetting segment content for shared memory id '{shm_id}'."));
    out
}

/// Every session found in `dir` (FairMQ's `--list-all`).
pub fn list_all(dir: &Path) -> String {
    let mut s = String::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => return format!("error: {e}"),
    };
    let mut names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    if names.is_empty() {
        return format!("directory \"{}\" is empty.", dir.display());
    }
    names.sort();
    for name in names {
        let Some(rest) = name.strip_prefix(crate::naming::PREFIX) else {
            log::debug!("The file '{name}' does not belong to FairMQ, skipping...");
            continue;
        };
        if let Some(id) = rest.strip_suffix("_mng") {
            let _ = writeln!(s, "\nFound shmid '{id}':");
            match report(id) {
                Some(r) => s.push_str(&r),
                None => {
                    let _ = writeln!(s, "could not open file for shmid '{id}'");
                }
            }
        }
    }
    s
}

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
            if let Ok((n, b)) = sg.reclaim_dead(d.owner) {
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

    /// One look at the session.
    pub fn step(&mut self) -> Step {
        let now = Instant::now();
        let Ok(m) = Management::open_existing(&self.names) else {
            self.triggered = false;
            if self.self_destruct {
                if self.seen_once {
                    log::info!("self destructing (segment has been observed and cleaned up orderly)");
                    return Step::Stop;
                }
                if now.duration_since(self.started) > 2 * self.timeout {
                    cleanup(&self.shm_id);
                    log::info!("self destructing (no segments observed within (timeout * 2) since start)");
                    return Step::Stop;
                }
            }
            return Step::Continue;
        };
        self.seen_once = true;
        let count = m.heartbeat_count();
        if count != self.last_count {
            self.last_count = count;
            self.triggered = true;
            self.last_heartbeat = now;
        }
        match sweep_open(m, &self.names) {
            Ok(s) if s.cleaned => return self.cleaned(),
            Ok(s) if !s.dead.is_empty() => {
                log::info!("processes {:?} died; freed {} cached blocks ({} bytes)", s.dead, s.freed.0, s.freed.1);
            }
            Ok(_) => {}
            Err(e) => log::warn!("could not look for dead processes of {}: {e}", self.shm_id),
        }
        if self.triggered && now.duration_since(self.last_heartbeat) > self.timeout {
            log::info!("no heartbeats since over {} milliseconds, cleaning...", self.timeout.as_millis());
            // Under the session lock with the removed mark, as a last detach does, so a process
            // attaching at this moment opens a new session instead of one being removed.
            let locked = Management::open_existing(&self.names).and_then(|m| Ok(m.lock()?.remove_session()));
            match locked {
                Ok(removed) => removed.iter().for_each(|n| log::info!("Successfully removed '{n}'.")),
                Err(e) => {
                    log::warn!("could not lock session {} ({e}): removing its objects anyway", self.shm_id);
                    cleanup(&self.shm_id);
                }
            }
            return self.cleaned();
        }
        Step::Continue
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

    #[test]
    fn a_lock_file_its_last_holder_unlinked_is_not_taken_over() {
        let names = Names::new(&crate::shm_id(&format!("monlock-{}", std::process::id())));
        let path = Names::path(&names.monitor_lock());
        let a = MonitorLock::acquire(&names).unwrap().expect("free");
        assert!(MonitorLock::acquire(&names).unwrap().is_none(), "held");
        let stale = File::open(&path).unwrap(); // a second monitor opened the file just now
        drop(a); // unlinks, then unlocks
        assert!(flock::try_exclusive(&stale).unwrap(), "the old file can be locked");
        assert!(!names_file(&stale, &path), "but it is no longer the session's lock");
        let b = MonitorLock::acquire(&names).unwrap().expect("the lock by name is free");
        assert!(names_file(&b._file, &path));
        drop(b);
        assert!(!path.exists());
    }
}
