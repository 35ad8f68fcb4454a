//! The monitor's lock file ([`MonitorLock`]), which keeps a session to one monitor, and
//! [`start_daemon`], which starts a monitor daemon for a session that has none.

use crate::error::ShmError;
use crate::naming::Names;
use crate::sys::files;
use crate::sys::flock;
use crate::sys::mapping::names_file;
use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The monitor's executable name.
pub const MONITOR_BINARY: &str = "fairmq-shmmonitor";
const START_POLL: Duration = Duration::from_millis(10);
const START_POLLS: u32 = 1000;

/// The lock that a running monitor holds for a session (FairMQ's named mutex `fmq_<id>_ms`). The
/// lock tells devices that a monitor runs, and keeps a second monitor of the session from starting.
///
/// The lock file is removed when the monitor ends. If the monitor is killed, the kernel drops the
/// lock, and the next monitor takes the file over. The file is private to the monitor's user (mode
/// 0600), and is created without following a link. A lock file of another user, or a link, is
/// refused.
#[derive(Debug)]
pub struct MonitorLock {
    _file: File,
    path: PathBuf,
}

impl MonitorLock {
    /// Takes the lock; `None` if another monitor of the session holds it.
    pub fn acquire(names: &Names) -> Result<Option<MonitorLock>, ShmError> {
        let name = names.monitor_lock();
        let path = Names::path(&name);
        loop {
            let file = match files::create_new(&path) {
                Ok(f) => f,
                // A killed monitor left the file, or a live monitor holds it. Open it only if it is
                // our own file, and never through a link.
                Err(e) if e.kind() == Some(std::io::ErrorKind::AlreadyExists) => match files::open_own(&path) {
                    Ok(f) => f,
                    Err(e) if e.is_not_found() => continue, // its monitor just ended
                    Err(e) => return Err(ShmError::file("opening the monitor lock", e)),
                },
                Err(e) => return Err(ShmError::file("creating the monitor lock", e)),
            };
            if !flock::try_exclusive(&file).map_err(|e| ShmError::io("locking the monitor lock", &name, e))? {
                return Ok(None);
            }
            // A monitor that ends unlinks the file while it still holds the lock. A file locked
            // after that is no longer the session's lock, and another monitor may be making a new
            // one. So take the lock again by name.
            if names_file(&file, &path) {
                return Ok(Some(MonitorLock { _file: file, path }));
            }
        }
    }
}

impl Drop for MonitorLock {
    fn drop(&mut self) {
        // Remove the file only while the name still refers to our file. `fairmq-shmmonitor -c`
        // may have removed our file, and a new monitor may have made and locked another file under
        // the name. That other file must stay.
        if names_file(&self._file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether a monitor runs for the session. A lock file that is not this user's own (another
/// user's file, or a link) is an error, because no monitor of this user could take it.
pub fn monitor_running(names: &Names) -> Result<bool, ShmError> {
    match files::open_own(&Names::path(&names.monitor_lock())) {
        Ok(f) => {
            flock::held_by_other(&f).map_err(|e| ShmError::io("probing the monitor lock", &names.monitor_lock(), e))
        }
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(ShmError::file("opening the monitor lock", e)),
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

/// Starts `fairmq-shmmonitor -x -m --shmid <id> -d -t 2000` for the session, unless a monitor
/// runs. `--shm-monitor true` does this, as FairMQ's `Manager::StartMonitor` does. A missing
/// binary is only a warning. A daemon that does not take its lock within 10 s is an error.
pub fn start_daemon(names: &Names) -> Result<(), ShmError> {
    let shm_id = names.shm_id();
    if monitor_running(names)? {
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
    // The launcher process exits once it has started the daemon. It is reaped here, or by a
    // thread if it has not exited yet.
    let mut started = Ok(false);
    for _ in 0..START_POLLS {
        started = monitor_running(names);
        if !matches!(started, Ok(false)) {
            break;
        }
        std::thread::sleep(START_POLL);
    }
    match launcher.try_wait() {
        Ok(Some(_)) => {}
        _ => {
            std::thread::spawn(move || launcher.wait());
        }
    }
    if !started? {
        let ms = START_POLL.as_millis() as u64 * u64::from(START_POLLS);
        log::error!("Did not get response from fairmq-shmmonitor after {ms} milliseconds. Exiting.");
        return Err(ShmError::MonitorStart(ms));
    }
    log::debug!("Started fairmq-shmmonitor for shared memory id {shm_id}");
    Ok(())
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

    #[test]
    fn a_monitor_that_ends_leaves_the_lock_file_of_the_monitor_after_it() {
        let names = Names::new(&crate::shm_id(&format!("monlock2-{}", std::process::id())));
        let path = Names::path(&names.monitor_lock());
        let a = MonitorLock::acquire(&names).unwrap().expect("free");
        std::fs::remove_file(&path).unwrap(); // `fairmq-shmmonitor -c` cleans up meanwhile
        let b = MonitorLock::acquire(&names).unwrap().expect("a new lock file under the name");
        drop(a); // removed b's file by name before
        assert!(names_file(&b._file, &path), "the new monitor's lock file stays");
        assert!(MonitorLock::acquire(&names).unwrap().is_none(), "and a third monitor cannot start");
        drop(b);
        assert!(!path.exists());
    }
}
