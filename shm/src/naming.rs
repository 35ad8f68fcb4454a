//! Every shared-memory object name of a session, made in one place.
//!
//! Names start with `fmqrs_<shmId>_`; C++ FairMQ's start with `fmq_`, so the two formats (which are
//! not compatible) never open each other's objects.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where POSIX shared memory lives on Linux.
pub(crate) const SHM_DIR: &str = "/dev/shm";
/// Prefix of every object that this crate creates.
pub(crate) const PREFIX: &str = "fmqrs_";

/// Names of one session's objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    shm_id: String,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Names {
    /// Names for the session with this shmId.
    pub fn new(shm_id: &str) -> Self {
        Names { shm_id: shm_id.to_owned() }
    }

    /// The shmId.
    pub fn shm_id(&self) -> &str {
        &self.shm_id
    }

    /// `fmqrs_<shmId>_`, the prefix of every object of the session.
    pub fn session_prefix(&self) -> String {
        format!("{PREFIX}{}_", self.shm_id)
    }

    /// The management segment.
    pub fn management(&self) -> String {
        format!("{}mng", self.session_prefix())
    }

    /// Managed segment `id`.
    pub fn segment(&self, id: u16) -> String {
        format!("{}m_{id}", self.session_prefix())
    }

    /// Unmanaged region `id`: the name of a shared-memory object, or a file name under the
    /// region's path.
    pub fn region(&self, id: u16) -> String {
        format!("{}rg_{id}", self.session_prefix())
    }

    /// The acknowledgement queue of region `id`.
    pub fn region_queue(&self, id: u16) -> String {
        format!("{}rgq_{id}", self.session_prefix())
    }

    /// The lock file a running `fairmq-shmmonitor` holds for the session.
    pub fn monitor_lock(&self) -> String {
        format!("{}ms", self.session_prefix())
    }

    /// A temporary name, unique to this process and this call, for creating objects without
    /// races. The name also holds a random part. Two processes that share /dev/shm but not a pid
    /// namespace can have the same pid and the same counter, and the random part keeps their
    /// names apart.
    pub fn tmp(&self) -> String {
        let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        format!("{}tmp_{}_{:08x}_{n}", self.session_prefix(), std::process::id(), random_u32())
    }

    /// Like [`Names::tmp`], for a transport whose owner mark is `owner` (see `liveness`). The name
    /// carries the mark. The sweep that counts that transport out finds the objects the transport
    /// left by this mark. Unlike a pid, the mark belongs to the session: a pid may belong to a live
    /// process in another pid namespace.
    pub fn tmp_for(&self, owner: u32) -> String {
        format!("{}_o{owner:x}", self.tmp())
    }

    /// The pid in `name`, if `name` is a temporary name of this session.
    pub fn tmp_owner(&self, name: &str) -> Option<u32> {
        let rest = name.strip_prefix(&self.session_prefix())?.strip_prefix("tmp_")?;
        rest.split('_').next()?.parse().ok()
    }

    /// The owner mark in `name`, if `name` is a temporary name of this session made by
    /// [`Names::tmp_for`].
    pub fn tmp_mark(&self, name: &str) -> Option<u32> {
        let rest = name.strip_prefix(&self.session_prefix())?.strip_prefix("tmp_")?;
        u32::from_str_radix(rest.rsplit_once("_o")?.1, 16).ok()
    }

    /// Path of a shared-memory object.
    pub fn path(name: &str) -> PathBuf {
        PathBuf::from(SHM_DIR).join(name)
    }
}

/// A random number, different on every call. It comes from std's randomly keyed hasher, which
/// needs no extra dependency.
pub(crate) fn random_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_scheme() {
        let n = Names::new("eca859e3");
        assert_eq!(n.management(), "fmqrs_eca859e3_mng");
        assert_eq!(n.segment(0), "fmqrs_eca859e3_m_0");
        assert_eq!(n.region(1024), "fmqrs_eca859e3_rg_1024");
        assert_eq!(n.region_queue(1024), "fmqrs_eca859e3_rgq_1024");
        assert_eq!(n.monitor_lock(), "fmqrs_eca859e3_ms");
        let t = n.tmp();
        assert!(t.starts_with("fmqrs_eca859e3_tmp_"));
        assert_eq!(n.tmp_owner(&t), Some(std::process::id()));
        assert_ne!(n.tmp(), n.tmp(), "unique per call");
        assert_eq!(n.tmp_owner("fmqrs_eca859e3_m_0"), None);
        assert_eq!(n.tmp_mark(&t), None, "no transport's");
        let marked = n.tmp_for(0x5a5a);
        assert_eq!((n.tmp_owner(&marked), n.tmp_mark(&marked)), (Some(std::process::id()), Some(0x5a5a)));
        assert_eq!(Names::path("x"), PathBuf::from("/dev/shm/x"));
    }
}
