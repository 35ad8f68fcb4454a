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
    /// Messages it handed to sockets that no receiver took yet (its hand-over tickets out; a
    /// message waiting in a lane is not counted). Reading it scans the table's chunk owners and
    /// this transport's chunks only, not the whole table (a cache line per ticket: 16 MiB for
    /// the largest segments, which scraping every 100 ms would sweep through the caches).
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
        in_flight: mgr.own().tickets().out_in_chunks(|owner| owner == mgr.owner()).len() as u64,
        allocations_retried,
        allocations_failed,
        regions,
    }
}
