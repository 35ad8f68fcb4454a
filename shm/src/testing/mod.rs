//! Internals for this crate's tests, benchmarks and fuzz targets and for the tests of the crates
//! above it: not part of the API (hidden from the documentation; they change without notice).

/// Entry points of the fuzz targets (`fuzz/`) and of the test that replays their corpora. Needs
/// the cargo feature `fuzzing`.
#[cfg(feature = "fuzzing")]
pub mod fuzzing {
    pub use crate::fuzzing::*;
}
/// Ledgers of shared references (see `ledger`), as a sweep sees them.
pub mod ledger {
    use crate::naming::Names;
    use crate::segment::Segment;
    use crate::session::management::Management;

    /// Bytes of an overflow page.
    pub const PAGE_BYTES: u64 = crate::session::ledger::PAGE_BYTES;

    /// Counts the overflow pages that the ledger of process `pid`'s transport in session `shm_id`
    /// links. The links are checked as a sweep checks them, and `Err` describes the link that
    /// fails the check. Returns `None` when no transport of that process is attached.
    pub fn overflow_pages(shm_id: &str, pid: u32) -> Option<Result<usize, String>> {
        let names = Names::new(shm_id);
        let m = Management::open_existing(&names).ok()?;
        let segments: Vec<Segment> =
            m.segments().iter().filter_map(|s| Segment::open(&Names::path(&names.segment(s.id)), s.id).ok()).collect();
        crate::session::ledger::overflow_pages(&m, &segments, pid).map(|r| r.map_err(|e| e.to_string()))
    }

    /// Overwrites, with `word`, the first word of the link to the first overflow page in the
    /// ledger of process `pid`'s transport in session `shm_id`. A faulty process could do the
    /// same. `word` holds `block offset + 1 | segment id << 48`. Returns false when no transport of
    /// that process is attached.
    pub fn damage_overflow_link(shm_id: &str, pid: u32, word: u64) -> bool {
        Management::open_existing(&Names::new(shm_id))
            .is_ok_and(|m| crate::session::ledger::damage_overflow_link(&m, pid, word))
    }
}
/// Which processes of the session are alive.
pub mod liveness {
    pub use crate::session::liveness::*;
}
/// The session's management segment.
pub mod management {
    pub use crate::session::management::*;
}
/// Metadata records.
pub mod meta {
    pub use crate::meta::*;
}
/// The region registry.
pub mod registry {
    pub use crate::session::registry::*;
}
/// Segments.
pub mod segment {
    pub use crate::segment::*;
}
/// Hand-over tickets.
pub mod tickets {
    pub use crate::segment::tickets::*;
}
/// The TLSF allocator.
pub mod tlsf {
    pub use crate::segment::tlsf::*;
}
pub use crate::segment::Segment;

/// Processes a test starts, reaped when it ends.
pub mod process;
/// Sessions owned by a test or benchmark, removed when it ends.
pub mod session;

/// The segment `t` allocates from.
pub fn segment(t: &crate::Transport) -> &Segment {
    t.segment()
}
