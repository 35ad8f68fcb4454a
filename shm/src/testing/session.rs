//! Shared-memory sessions owned by one test or benchmark: a unique name, and removal of every
//! object of the session when the owner is done, also when it panics (the one guard the tests,
//! benchmarks and the C ABI's tests of every crate use).
//!
//! The transports of a session remove its objects when the last of them detaches; the guards here
//! catch what that cannot: a process that panicked or was killed while attached.

use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A session name that no other test or benchmark, in this or another process, uses. The name
/// joins `prefix`, the pid and a counter.
pub fn unique_session(prefix: &str) -> String {
    format!("{prefix}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Removes the objects of a shared-memory session when dropped, whether the owner ended normally
/// or by a panic. Drop it after every transport of the session in this process.
#[derive(Debug)]
pub struct SessionGuard {
    session: String,
    only_on_panic: bool,
}

impl SessionGuard {
    /// A guard for session `session` that removes the session on every drop.
    pub fn new(session: &str) -> Self {
        SessionGuard { session: session.to_owned(), only_on_panic: false }
    }

    /// A guard that removes the session only when it is dropped during a panic. Use it in a
    /// process that shares the session with other processes that are still attached. Removing the
    /// session on a normal exit would take it from them. A normal exit only detaches, and the last
    /// transport removes the objects itself.
    pub fn on_panic(session: &str) -> Self {
        SessionGuard { session: session.to_owned(), only_on_panic: true }
    }

    /// The session name.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Removes the session's objects now; returns their names.
    pub fn remove(&self) -> Vec<String> {
        remove_session(&self.session)
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        if !self.only_on_panic || std::thread::panicking() {
            let removed = self.remove();
            if std::thread::panicking() && !removed.is_empty() {
                eprintln!("removed {} shared-memory objects of session {}", removed.len(), self.session);
            }
        }
    }
}

/// Removes every object of `session` from /dev/shm; returns their names.
pub fn remove_session(session: &str) -> Vec<String> {
    crate::session::management::remove_session(&names(session))
}

/// The names of `session`'s objects now in /dev/shm, sorted.
pub fn session_objects(session: &str) -> Vec<String> {
    crate::session::management::session_objects(&names(session))
}

fn names(session: &str) -> crate::Names {
    crate::Names::new(&crate::shm_id(session))
}
