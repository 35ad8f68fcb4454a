//! Removing a session's objects, and forgetting its allocations.
//!
//! - [`cleanup`] removes every object of the session except the monitor's lock (FairMQ's
//!   `Cleanup`).
//! - [`cleanup_full`] removes the monitor's lock too (FairMQ's `CleanupFull`).
//! - [`reset_content`] forgets every allocation in the session's segments, and removes its
//!   regions' acknowledgement queues (FairMQ's `ResetContent`). It refuses while a transport that
//!   is not provably dead is attached.

use super::report::open_if_present;
use crate::error::ShmError;
use crate::naming::Names;
use crate::segment::Segment;
use crate::sys::files;
use std::path::Path;

/// The removals of one cleanup: what was removed, and the first failure. Every object is tried,
/// even after a failure.
#[derive(Default)]
struct Removals {
    done: Vec<(String, bool)>,
    failed: Option<ShmError>,
}

impl Removals {
    /// Removes one object, and logs as FairMQ does. It removes the name itself, never a link's
    /// target. A missing object is fine. Any other failure, such as permission denied, is an error.
    fn remove(&mut self, name: &str, path: &Path) {
        let removed = match files::remove(path) {
            Ok(true) => {
                log::info!("Successfully removed '{name}'.");
                true
            }
            Ok(false) => {
                log::debug!("Did not remove '{name}'. Already removed?");
                false
            }
            Err(e) => {
                log::error!("Could not remove '{name}': {e}");
                self.failed.get_or_insert(ShmError::file("removing a shared-memory object", e));
                false
            }
        };
        self.done.push((name.to_owned(), removed));
    }

    fn finish(self) -> Result<Vec<(String, bool)>, ShmError> {
        match self.failed {
            Some(e) => Err(e),
            None => Ok(self.done),
        }
    }
}

/// Removes every object of the session that the registries know, and the leftovers under the
/// session's prefix. The objects that the registries know are the regions (file-backed ones too),
/// their queues, the segments and the management segment. The monitor lock stays.
///
/// Returns each name and whether it was removed, or the error of the first object that could not
/// be removed.
///
/// A management segment that cannot be read (another user's, or one of another layout) is not
/// trusted for the registries. Only what lies under the session's prefix is removed then.
pub fn cleanup(shm_id: &str) -> Result<Vec<(String, bool)>, ShmError> {
    let mut r = Removals::default();
    cleanup_into(shm_id, &mut r);
    r.finish()
}

fn cleanup_into(shm_id: &str, r: &mut Removals) {
    let names = Names::new(shm_id);
    log::info!("Cleaning up for shared memory id '{shm_id}'...");
    match open_if_present(&names) {
        Ok(None) => log::info!("Did not find '{}' management segment. No regions to cleanup.", names.management()),
        Err(e) => log::error!("Could not read the registries of shared memory id '{shm_id}': {e}"),
        Ok(Some(m)) => {
            let regions = crate::session::registry::regions(&m);
            log::info!("Found {} unmanaged regions...", regions.len());
            for reg in &regions {
                log::info!(
                    "Found UnmanagedRegion with id: {}, path: '{}', flags: {}, fDestroyed: {}.",
                    reg.id,
                    reg.path,
                    reg.creation_flags,
                    u8::from(reg.destroyed)
                );
                let data = reg.data_path(&names);
                r.remove(&data.display().to_string(), &data);
                let q = names.region_queue(reg.id);
                r.remove(&q, &Names::path(&q));
            }
            let segments = m.segments();
            log::info!("Found {} managed segments...", segments.len());
            for s in &segments {
                let n = names.segment(s.id);
                r.remove(&n, &Names::path(&n));
            }
            let mng = names.management();
            r.remove(&mng, &Names::path(&mng));
        }
    }
    let lock = names.monitor_lock();
    for leftover in crate::session::management::session_objects(&names).into_iter().filter(|n| *n != lock) {
        r.remove(&leftover, &Names::path(&leftover));
    }
}

/// [`cleanup`], and also removes the monitor lock. `fairmq-shmmonitor -c` runs this.
pub fn cleanup_full(shm_id: &str) -> Result<Vec<(String, bool)>, ShmError> {
    let mut r = Removals::default();
    cleanup_into(shm_id, &mut r);
    let lock = Names::new(shm_id).monitor_lock();
    let path = Names::path(&lock);
    if std::fs::symlink_metadata(&path).is_ok() {
        r.remove(&lock, &path);
    }
    r.finish()
}

/// Forgets every allocation in the session's segments, and removes its regions' acknowledgement
/// queues. This is FairMQ's experimental `ResetContent`, for reuse after a crash.
///
/// The reset is refused while a transport that is not provably dead is attached. The session lock
/// is held throughout, so no transport attaches meanwhile. Each report line goes to `print` as it
/// happens; FairMQ prints these lines to stdout. The first failure is returned once everything
/// was tried.
pub fn reset_content(shm_id: &str, print: &mut dyn FnMut(&str)) -> Result<(), ShmError> {
    let names = Names::new(shm_id);
    print(&format!("Resetting segments content for shared memory id '{shm_id}'..."));
    let m = match crate::session::management::Management::open_existing(&names) {
        Ok(m) => m,
        Err(e) if e.is_not_found() => {
            print(&format!("Could not find '{}' segment. Nothing to cleanup.", names.management()));
            print(&e.to_string());
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let _lock = m.lock()?;
    let users: Vec<u32> = crate::session::liveness::attached(&m)
        .into_iter()
        .filter(|a| crate::session::liveness::owner_alive(&m, a.owner))
        .map(|a| a.pid)
        .collect();
    if !users.is_empty() {
        let e = ShmError::Config(format!(
            "cannot reset the content of shared memory id '{shm_id}': processes {users:?} still use it"
        ));
        print(&e.to_string());
        return Err(e);
    }
    let mut failed = None;
    let segments = m.segments();
    print(&format!("Found info for {} managed segments", segments.len()));
    for seg in segments {
        let name = names.segment(seg.id);
        print(&format!("Resetting content of segment '{name}'..."));
        // SAFETY: no transport of the session lives (checked above), and none can attach while we
        // hold the session lock: nobody uses a block of the segment.
        match Segment::open(&Names::path(&name), seg.id).and_then(|s| unsafe { s.reset_content() }) {
            Ok(()) => print("Done."),
            Err(e) => {
                print(&format!("Error resetting content of segment '{name}': {e}"));
                failed.get_or_insert(e);
            }
        }
    }
    for r in crate::session::registry::regions(&m) {
        let q = names.region_queue(r.id);
        match files::remove(&Names::path(&q)) {
            Ok(true) => print(&format!("Removed '{q}'.")),
            Ok(false) => {}
            Err(e) => {
                print(&format!("Could not remove '{q}': {e}"));
                failed.get_or_insert(ShmError::file("removing a region queue", e));
            }
        }
    }
    print(&format!("Done resetting segment content for shared memory id '{shm_id}'."));
    failed.map_or(Ok(()), Err)
}
