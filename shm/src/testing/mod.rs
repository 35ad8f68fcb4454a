//! Internals for this crate's tests, benchmarks and fuzz targets and for the tests of the crates
//! above it: not part of the API (hidden from the documentation; they change without notice).

/// Entry points of the fuzz targets (`fuzz/`) and of the test replaying their corpora (cargo
/// feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub mod fuzzing {
    pub use crate::fuzzing::*;
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
