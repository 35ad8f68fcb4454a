//! What a transport uses of the session, read at once for the metrics (see `fairmq`'s metrics
//! endpoint): memory of its segment, messages in flight, allocations that waited, its regions.
//! Everything here is read when asked; nothing is counted per message.

use crate::segment::SegmentStats;
use crate::transport::attachment::Attachment;
use std::sync::atomic::Ordering;

/// A transport's use of its segment and regions.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    /// The segment it allocates in.
    pub segment: SegmentStats,
    /// Messages handed to sockets and not taken yet (hand-over tickets out in its segment's
    /// table; reading them scans the table, about a millisecond for the largest segments).
    pub in_flight: u64,
    /// Allocations that found no room at first (they waited, or retried).
    pub allocations_retried: u64,
    /// Allocations that failed in the end (out of memory, after the retries the policy allows).
    pub allocations_failed: u64,
    /// The regions this transport has mapped (made, or received messages of).
    pub regions: Vec<RegionUsage>,
}

/// One region mapped by a transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionUsage {
    /// Region id.
    pub id: u16,
    /// Size in bytes.
    pub size: u64,
    /// Whether this transport controls it (made or adopted it, and hears its acknowledgements).
    pub controlled: bool,
    /// Messages made from it and not acknowledged yet (its controller's count; 0 elsewhere).
    pub pieces_out: u64,
    /// Acknowledgements in its queue that its controller has not taken yet.
    pub acks_pending: u64,
}

pub(crate) fn of(mgr: &Attachment) -> Usage {
    let (allocations_retried, allocations_failed) = mgr.allocation_counts();
    let mut regions: Vec<RegionUsage> = mgr
        .acks()
        .all()
        .iter()
        .map(|r| RegionUsage {
            id: r.id(),
            size: r.size(),
            controlled: r.controlled.load(Ordering::Relaxed),
            pieces_out: r.outstanding.load(Ordering::Relaxed).max(0) as u64,
            acks_pending: r.queue().map_or(0, |q| q.pending()),
        })
        .collect();
    regions.sort_by_key(|r| r.id);
    Usage {
        segment: mgr.own().stats(),
        in_flight: u64::from(mgr.own().tickets().outstanding()),
        allocations_retried,
        allocations_failed,
        regions,
    }
}
