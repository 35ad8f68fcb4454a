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
    /// Calls [`join`](Management::join) with `create` set. Tests use this shorthand.
    #[cfg(test)]
    pub(crate) fn attach(names: &Names, session: &str) -> Result<(Arc<Management>, Heartbeat), ShmError> {
        Self::join(names, session, true)
    }

    /// Attaches this transport to the session.
    ///
    /// With `create`, `join` creates the session's management segment if needed. Without `create`,
    /// `join` attaches only to a session that exists. The monitor's sweeping transport needs this:
    /// it must not make a new session out of one that was removed meanwhile.
    ///
    /// The returned `Heartbeat` holds a liveness slot, which counts this transport into the
    /// session (see `liveness`).
    pub(crate) fn join(names: &Names, session: &str, create: bool) -> Result<(Arc<Management>, Heartbeat), ShmError> {
        for _ in 0..1000 {
            let Some(m) = open_or_make(names, session, create)? else { continue };
            let m = Arc::new(m);
            match Heartbeat::start(m.clone()) {
                Ok(hb) => {
                    log::debug!("Attached to shared memory session '{session}' (shmid {})", names.shm_id());
                    return Ok((m, hb));
                }
                // The last user of the previous session removed (and unlinked) this segment.
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

    /// Runs `f` under the session lock of a live management segment of the session, that is, one
    /// not marked removed. `with_session` creates that segment if needed.
    ///
    /// `with_session` does NOT join the session: it takes no liveness slot and starts no
    /// heartbeat. It serves objects made outside a transport (see `external`), which `f` registers.
    ///
    /// The check that the session is live must happen under the same lock as the registration.
    /// Otherwise the last transport could detach in between and unlink the session. No cleanup
    /// would then find the objects registered in the dead management segment.
    ///
    /// As in FairMQ, the last transport to leave removes what `f` registered, unless
    /// `--shm-no-cleanup` is set.
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

    /// Counts this transport out of the session: its `Heartbeat` gives up its slot. If this was
    /// the last transport, `detach` also removes every object of the session, unless `no_cleanup`
    /// is set.
    ///
    /// Both steps happen together under the session lock. The heartbeat's mutex is released only
    /// afterwards. Dead transports that are not counted out yet do not keep the session alive: the
    /// last live transport removes it. The caller has swept the dead transports before.
    ///
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

/// Opens the session's management segment. With `create`, `open_or_make` first creates a missing
/// segment. Without `create`, a missing segment is an error.
///
/// `Ok(None)` tells the caller to open the segment again. Either the segment was just created, by
/// this process or another, or its creation raced with a removal.
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
                // Whichever process created the segment, the next attempt opens it by name.
                Ok(Created::New(_) | Created::Exists) => Ok(None),
                // The remover of an old session removed our temporary file. The caller tries again.
                Err(e) if e.is_not_found() => Ok(None),
                Err(e) => Err(ShmError::file("creating management segment", e)),
            };
        }
        Err(e) => return Err(ShmError::file("opening management segment", e)),
    };
    Management::from_mapping(map, names).map(Some)
}

impl SessionLock<'_> {
    /// Marks the session removed and removes its objects, in one step under this lock. A newcomer
    /// that opened the session will see the mark and open a new one. Doing both under the lock
    /// keeps anyone from attaching in between. Returns the names of the removed objects.
    pub(crate) fn remove_session(&self) -> Vec<String> {
        self.mark_removed();
        let m = self.management();
        remove_objects(m.names(), &m.segments(), &crate::session::registry::regions(m))
    }
}

/// Unlinks every object of a session: the registered regions (file-backed ones too), the
/// registered segments, the management segment, and the temporary files of dead creators. Missing
/// objects are not an error, so removal is idempotent. Returns the names of what was removed.
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

/// Unlinks the temporary files that the `dead` transports made in the session. The files are found
/// by their owner marks (see `Names::tmp_for`). Nobody will link these files under a name any
/// more. Without this, a creator killed between making a segment or region file and linking it
/// left the file, with all the room it reserved (gigabytes of the tmpfs), until the session ended.
/// Returns the names of what was removed.
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

/// Unlinks the session object `name`. If the object existed, adds `name` to `removed`.
fn unlink_into(removed: &mut Vec<String>, name: String) {
    if std::fs::remove_file(Names::path(&name)).is_ok() {
        log::debug!("Removed '{name}'.");
        removed.push(name);
    }
}

/// Finishes the removal of a session that is marked removed but whose objects are still under
/// their names. This state means that the remover died between marking and unlinking: a live
/// remover holds the lock until it is done. `finish_removal` works under the lock, so that the
/// caller's next attempt starts anew.
fn finish_removal(m: &Management) -> Result<(), ShmError> {
    let lock = m.lock()?;
    if lock.removed() && m.still_linked() {
        log::warn!("session {} was left half removed; removing the rest", m.names().shm_id());
        lock.remove_session();
    }
    Ok(())
}
