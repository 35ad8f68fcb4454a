//! Entries taken back from a lane whose reader left ([`Resent`]). They wait to go out again on the
//! writer's next lane; a writer with no peer keeps them until its socket closes.
//!
//! The writer marked their blocks as its own when it took them back (see `take_back_all`), so a
//! sweep frees those blocks if the writer is killed meanwhile. A shared part names no holder, so
//! its reference is listed in the writer's ledger while the entry waits (see `session::ledger`).
//! So is a region piece's reference to its count block. Both are unlisted when the entry is
//! published again or released. Before, nothing listed a shared part: a writer killed while such
//! an entry waited left the block allocated for the session's life.

use super::*;

/// An entry taken back, and the ledger entries that list its shared parts' references.
pub(crate) struct Resent {
    pub kind: u32,
    pub frame: Vec<u8>,
    /// Taken out by a send while it publishes the entry (see `Writer::push_resent`).
    pub listed: Vec<u32>,
}

impl Resent {
    /// Lists the references `taken`'s shared parts hold (its records checked as any lane entry's).
    pub(crate) fn new(mgr: &Arc<Attachment>, taken: Taken) -> Resent {
        let (kind, frame) = taken;
        let mut blocks = Vec::new();
        let mut listed = Vec::new();
        if entry_blocks(mgr, kind, &frame, &mut blocks) {
            for r in &blocks {
                // A region piece's count block (its first copy made one): the entry holds one of
                // its references, listed as the writer's again (see `region::count`).
                if let Some((segment, offset, delta, slot)) = piece_count(mgr, r) {
                    let what = crate::session::ledger::Referent::Piece;
                    if let Ok(i) = mgr.ledger().note(mgr.management(), segment, offset, delta, slot, what) {
                        listed.push(i);
                    }
                    continue;
                }
                if held(mgr, r) != Held::Shared {
                    continue;
                }
                let &Record::Block { segment, offset, delta, slot, .. } = r else { continue };
                // Without room in the ledger (logged there) it waits unlisted.
                if let Ok(i) = mgr.ledger().note(
                    mgr.management(),
                    segment,
                    offset,
                    delta,
                    slot,
                    crate::session::ledger::Referent::Message,
                ) {
                    listed.push(i);
                }
            }
        }
        Resent { kind, frame, listed }
    }

    /// The entry, to be released at once: its references are no longer listed here (the release
    /// lists each again as it takes it, and drops it; killed in between, the writer leaves a
    /// reference nobody drops, the ledger's direction).
    pub(crate) fn into_taken(self, mgr: &Attachment) -> Taken {
        unlist(mgr, self.listed);
        (self.kind, self.frame)
    }
}

/// The count block (segment, offset, delta, slot) a region record names, once it checks out as
/// that piece's; `None` for other records.
fn piece_count(mgr: &Attachment, r: &Record) -> Option<(u16, u64, u32, u32)> {
    let Record::Region { region, offset, rc: Some(h), .. } = *r else { return None };
    let slot = crate::region::count::checked(mgr.segment(h.segment).ok()?, h, region, offset).ok()?;
    Some((h.segment, h.offset, u32::from(h.delta), slot))
}

/// Clears the ledger entries `listed` (their references are handed over, or dropped next).
pub(crate) fn unlist(mgr: &Attachment, listed: Vec<u32>) {
    for i in listed {
        mgr.ledger().forget(mgr.management(), i);
    }
}
