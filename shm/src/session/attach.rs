//! Attaching a transport to its session, and detaching it.
//!
//! - [`Management::join`] attaches a transport. The first transport of a session creates the
//!   management segment. Each attached transport holds a process slot (see `liveness`) until it
//!   detaches.
//! - [`Management::detach`] detaches it. The last transport to detach removes every object of the
//!   session ([`remove_objects`]).
//! - [`Management::with_session`] opens or creates the session for objects made outside a
//!   transport (see `external`). Such objects do not attach: they hold no slot, so they keep no
//!   session alive.
//!
//! Attaching and detaching happen under the session lock. The last transport to detach marks the
//! management segment *removed*, and it unlinks every object of the session before it releases
//! the lock. Another process may have opened the old management segment just before. That
//! process sees the mark once it gets the lock, and it starts over with a fresh management
//! segment. So removal is idempotent, and it never removes a session that a newcomer has joined.

use crate::error::ShmError;
use crate::naming::Names;
use crate::session::liveness::{Dead, Heartbeat, StartError};
use crate::session::management::{
    init, process_alive, session_objects, Management, SegmentEntry, SessionLock, MANAGEMENT_SIZE,
};
use crate::session::registry::RegionEntry;
use crate::sys::mapping::{Created, Mapping};
use std::sync::Arc;

impl Management {
    /// [`join`](Management::join) with `create` (the tests' shorthand).
    #[cfg(test)]
    pub(crate) fn attach(names: &Names, session: &str) -> Result<(Arc<Management>, Heartbeat), ShmError> {
        Self::join(names, session, true)
    }

    /// Attaches to the session, creating its management segment if needed with `create` (without,
    /// to a session that exists only: the monitor's sweeping transport must not make a new
    /// session of one removed meanwhile). The returned heartbeat holds a liveness slot, which
    /// counts this transport in (see `liveness`).
    pub(crate) fn join(names: &Names, session: &str, create: bool) -> Result<(Arc<Management>, Heartbeat), ShmError> {
        for _ in 0..1000 {
            let Some(m) = open_or_make(names, session, create)? else { continue };
            let m = Arc::new(m);
            match Heartbeat::start(m.clone()) {
                Ok(hb) => {
                    log::debug!("Attached to shared memory session '{session}' (shmid {})", names.shm_id());
                    return Ok((m, hb));
                }
                // Removed (and unlinked) by the last user of the previous session.
                Err(StartError::Removed) => {
                    finish_removal(&m)?;
                    continue;
                }
                Err(StartError::Failed(e)) => return Err(e),
            }
        }
        Err(ShmError::Layout {
            name: names.management(),
            reason: "could not attach: the session was removed again and again".into(),
        })
    }

    /// Runs `f` under the session lock of a live (not removed) management segment of the session,
    /// creating that segment if needed, WITHOUT joining (no liveness slot, no heartbeat): for
    /// objects made outside a transport (see `external`), which `f` registers. Checking that the
    /// session is live under the same lock as the registration matters: a last transport detaching
    /// in between would unlink the session, and objects registered in its dead management segment
    /// would be found by no cleanup. The last transport to leave removes what `f` registered
    /// (unless `--shm-no-cleanup`), as in FairMQ.
    pub(crate) fn with_session<T>(
        names: &Names,
        session: &str,
        f: impl FnOnce(&SessionLock<'_>) -> Result<T, ShmError>,
    ) -> Result<(Arc<Management>, T), ShmError> {
        for _ in 0..1000 {
            let Some(m) = open_or_make(names, session, true)? else { continue };
            let m = Arc::new(m);
            let lock = m.lock()?;
            if lock.removed() {
                drop(lock);
                finish_removal(&m)?;
                continue;
            }
            let t = f(&lock)?;
            drop(lock);
            return Ok((m, t));
        }
        Err(ShmError::Layout {
            name: names.management(),
            reason: "could not open: the session was removed again and again".into(),
        })
    }

    /// Counts this transport out (its heartbeat gives up its slot); the last one removes every
    /// object of the session unless `no_cleanup`. Both happen in one step under the session lock;
    /// the heartbeat's mutex is let go only afterwards. Dead transports not yet counted out keep
    /// nothing: the last live one removes the session (the caller swept the dead before).
    /// Returns whether this was the last transport and the session's objects were removed.
    pub(crate) fn detach(&self, heartbeat: Heartbeat, no_cleanup: bool) -> Result<bool, ShmError> {
        let lock = self.lock()?;
        heartbeat.leave(&lock);
        let left = crate::session::liveness::live_slots(self).len();
        if left > 0 {
            log::debug!("Other segment users present ({left}), skipping removal.");
            return Ok(false);
        }
        if no_cleanup {
            log::debug!("Last segment user, skipping removal (--shm-no-cleanup is true).");
            return Ok(false);
        }
        log::debug!("Last segment user, removing segment.");
        lock.remove_session();
        Ok(true)
    }
}

/// Opens the session's management segment, creating it first with `create` (without, a missing
/// one is an error). `Ok(None)`: it was just created (by us or another process), or its creation
/// raced with a removal; open it again.
fn open_or_make(names: &Names, session: &str, create: bool) -> Result<Option<Management>, ShmError> {
    let path = Names::path(&names.management());
    let map = match Mapping::open(&path) {
        Ok(map) => map,
        Err(e) if e.is_not_found() && !create => return Err(ShmError::file("opening management segment", e)),
        Err(e) if e.is_not_found() => {
            let tmp = Names::path(&names.tmp());
            return match Mapping::create(&path, &tmp, MANAGEMENT_SIZE, |m| {
                init(m, &path, session).and_then(|()| crate::session::liveness::init_slots(m))
            }) {
                // Whoever created it, open it by name.
                Ok(Created::New(_) | Created::Exists) => Ok(None),
                // The remover of an old session swept our temporary file: try again.
                Err(e) if e.is_not_found() => Ok(None),
                Err(e) => Err(ShmError::file("creating management segment", e)),
            };
        }
        Err(e) => return Err(ShmError::file("opening management segment", e)),
    };
    Management::from_mapping(map, names).map(Some)
}

impl SessionLock<'_> {
    /// Marks the session removed (a newcomer that opened it will open a new one) and removes its
    /// objects, in one step under this lock, so nobody attaches in between. Returns their names.
    pub(crate) fn remove_session(&self) -> Vec<String> {
        self.mark_removed();
        let m = self.management();
        remove_objects(m.names(), &m.segments(), &crate::session::registry::regions(m))
    }
}

/// Unlinks every object of a session: registered regions (also file-backed ones), registered
/// segments, the management segment, and temporary files of dead creators. Missing objects are fine
/// (removal is idempotent). Returns what was removed.
pub(crate) fn remove_objects(names: &Names, segments: &[SegmentEntry], regions: &[RegionEntry]) -> Vec<String> {
    let mut removed = Vec::new();
    for r in regions {
        let data = r.data_path(names);
        if std::fs::remove_file(&data).is_ok() {
            log::debug!("Removed '{}'.", data.display());
            removed.push(data.display().to_string());
        }
    }
    let mut unlink = |name: String| unlink_into(&mut removed, name);
    for r in regions {
        unlink(names.region_queue(r.id));
    }
    for s in segments {
        unlink(names.segment(s.id));
    }
    unlink(names.management());
    removed.extend(remove_tmp(names, |name| names.tmp_owner(name).is_some_and(|pid| !process_alive(pid))));
    removed
}

/// Unlinks the temporary files the `dead` transports made in the session, found by their owner
/// marks (see `Names::tmp_for`): nobody links them under a name any more. A creator killed between
/// making a segment or region file and linking it left it with all the room it reserved
/// (gigabytes of the tmpfs) until the session ended. Returns what was removed.
pub(crate) fn remove_tmp_of(names: &Names, dead: &[Dead]) -> Vec<String> {
    remove_tmp(names, |name| names.tmp_mark(name).is_some_and(|o| o != 0 && dead.iter().any(|d| d.owner == o)))
}

/// Unlinks the session's temporary files that `gone` says nobody will link any more.
fn remove_tmp(names: &Names, gone: impl Fn(&str) -> bool) -> Vec<String> {
    let mut removed = Vec::new();
    for name in session_objects(names).into_iter().filter(|n| gone(n)) {
        unlink_into(&mut removed, name);
    }
    removed
}

/// Unlinks the session object `name`, noting it in `removed` if it was there.
fn unlink_into(removed: &mut Vec<String>, name: String) {
    if std::fs::remove_file(Names::path(&name)).is_ok() {
        log::debug!("Removed '{name}'.");
        removed.push(name);
    }
}

/// A session marked removed whose objects are still under their names: its remover died between
/// marking and unlinking (a live remover holds the lock until it is done). Finishes the removal
/// under the lock, so the next attempt starts anew.
fn finish_removal(m: &Management) -> Result<(), ShmError> {
    let lock = m.lock()?;
    if lock.removed() && m.still_linked() {
        log::warn!("session {} was left half removed; removing the rest", m.names().shm_id());
        lock.remove_session();
    }
    Ok(())
}
