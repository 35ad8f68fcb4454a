//! Reading the ledgers of a session from outside the transports that keep them: what the tests
//! and the inspection methods of `Transport` (cargo feature `testing`) look at.

use super::{area, head, listed, overflow, sweep, Referent, Sweeper};
use crate::segment::Segment;
use crate::session::layout::PROCESS_SLOTS;
use crate::session::management::Management;
use std::sync::atomic::Ordering;

/// The owner mark of slot `slot`'s transport (its pages carry it).
fn owner_of(m: &Management, slot: usize) -> u32 {
    m.layout().processes[slot].owner.load(Ordering::Relaxed) as u32
}

/// The blocks (segment, offset) that live transports list shared references to, and those the
/// entries of the lanes among them name (for inspection: a shared block, or one waiting in a lane,
/// names no holder in its count word; a lane read meanwhile may be missed or misread).
pub(crate) fn held_by_live(m: &Management, live_slots: &[usize], by: &(impl Sweeper + ?Sized)) -> Vec<(u16, u64)> {
    let mut out = Vec::new();
    for &slot in live_slots.iter().filter(|&&s| s < PROCESS_SLOTS) {
        for l in listed(by, m, slot, owner_of(m, slot)) {
            out.push((l.segment, l.offset));
            if l.what == Referent::Lane {
                out.extend(by.segment(l.segment).map(|seg| sweep::in_lane(seg, &l)).unwrap_or_default());
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The blocks `(segment, offset)` slot `slot`'s ledger lists references to (for tests of what a
/// killed transport would have dropped for it).
#[cfg(test)]
pub(crate) fn listed_blocks(by: &(impl Sweeper + ?Sized), m: &Management, slot: usize) -> Vec<(u16, u64)> {
    listed(by, m, slot, owner_of(m, slot)).iter().map(|l| (l.segment, l.offset)).collect()
}

/// The liveness slot of the attached transport of process `pid`, if any.
fn slot_of_pid(m: &Management, pid: u32) -> Option<usize> {
    (0..PROCESS_SLOTS).find(|&s| m.layout().processes[s].pid.load(Ordering::Acquire) as u32 == pid && pid != 0)
}

/// How many overflow pages the ledger of process `pid`'s transport links, checked as a sweep
/// checks them (segments opened by `segments`); `None` when no transport of that process is
/// attached (for tests).
pub(crate) fn overflow_pages(
    m: &Management,
    segments: &[Segment],
    pid: u32,
) -> Option<Result<usize, crate::error::LedgerError>> {
    let slot = slot_of_pid(m, pid)?;
    let mut n = 0;
    Some(overflow::walk(segments, head(area(m, slot)), owner_of(m, slot), slot, |_| n += 1).map(|()| n))
}

/// Overwrites the first word of the link to the first overflow page of the ledger of process
/// `pid`'s transport with `word` (a damaged ledger, for tests of the sweep); false when no
/// transport of that process is attached.
pub(crate) fn damage_overflow_link(m: &Management, pid: u32, word: u64) -> bool {
    let Some(slot) = slot_of_pid(m, pid) else { return false };
    head(area(m, slot)).block.store(word, Ordering::Release);
    true
}
