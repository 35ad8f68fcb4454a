//! Tickets nobody will claim: their issuer is gone (dead, or left the session), so it will never
//! take them back, and their receiver is gone too, or has seen its socket empty twice since the
//! issuer went (the record is not on its way any more: it was lost with the issuer's queue). What
//! they hand over is released here; without this, blocks in flight when a sender was killed stayed
//! allocated until the session ended.
//!
//! A ticket whose issuer lives is never taken here: the issuer takes back what its peer did not
//! claim and sends it again (see `peers`).

use crate::manager::Manager;
use crate::message::Message;
use crate::tickets::{Kind, ELSEWHERE};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A ticket out whose issuer is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Orphan {
    segment: u16,
    ticket: u32,
    nonce: u64,
    issuer: u32,
}

/// Tickets out in every segment of the session whose issuer is gone and whose receiver (owner
/// mark, socket number; 0 when not known) `wanted` accepts. Only chunks a gone transport holds,
/// or that nobody holds, are looked at (liveness looked up once per owner).
pub(crate) fn find(mgr: &Manager, wanted: impl Fn(u32, u64) -> bool) -> Vec<Orphan> {
    let mut alive = crate::liveness::remembered(|owner| owner == mgr.owner() || mgr.owner_alive(owner));
    let mut out = Vec::new();
    for entry in mgr.management().segments() {
        let Ok(seg) = mgr.segment(entry.id) else { continue };
        let tickets = seg.tickets();
        for (ticket, nonce, issuer, receiver, socket) in tickets.out_in_chunks(|owner| owner == 0 || !alive(owner)) {
            if !alive(issuer) && wanted(receiver, socket) {
                out.push(Orphan { segment: entry.id, ticket, nonce, issuer });
            }
        }
    }
    out
}

/// Takes `o` back, if it is still out, and releases what it hands over; true when it did.
pub(crate) fn release(mgr: &Arc<Manager>, o: &Orphan) -> bool {
    let Ok(seg) = mgr.segment(o.segment) else { return false };
    let tickets = seg.tickets();
    // What it names is read before the claim: once claimed, the ticket may be issued again.
    let Ok((kind, rec)) = tickets.resolve(o.ticket, o.nonce) else { return false };
    // An issuer killed between handing the block to the ticket and marking it in flight left its
    // own mark on it: marked in flight first, so that a sweep that no longer sees the ticket once
    // it is claimed does not free the block as the dead issuer's as well.
    mgr.remark(&rec, o.issuer, crate::slots::IN_FLIGHT);
    if kind == Kind::Offer {
        return tickets.claim(o.ticket, o.nonce);
    }
    // Claimed as a receiver claims (the block ours before the claim ends): killed on the way, this
    // process leaves nothing that nobody accounts for.
    if !tickets.claim_as(o.ticket, o.nonce, mgr.owner()) {
        return false;
    }
    mgr.remark(&rec, crate::slots::IN_FLIGHT, mgr.owner());
    tickets.claimed(o.ticket, mgr.owner());
    match Message::from_record(mgr, rec) {
        Ok(m) => drop(m),
        Err(e) => log::error!("could not release a message its sender left in flight: {e}"),
    }
    true
}

/// Releases the tickets of gone issuers that never left them (no receiver: the issuer died before
/// sending) or were addressed to gone receivers (a sweep of the dead); returns how many.
pub(crate) fn release_unreachable(mgr: &Arc<Manager>) -> usize {
    let gone = find(mgr, |receiver, _| {
        receiver == 0 || (receiver != ELSEWHERE && receiver != mgr.owner() && !mgr.owner_alive(receiver))
    });
    gone.iter().filter(|o| release(mgr, o)).count()
}

/// How often a receiving socket that found itself empty looks for records lost on their way to it.
const EVERY: Duration = Duration::from_secs(1);

/// A receiving socket's watch for tickets addressed to it whose issuer is gone: seen at one look
/// and still out at the next, a second or more later while the socket was empty again, the record
/// was lost with its issuer's queue (or it would have arrived), and is released.
#[derive(Default)]
pub(crate) struct Watch {
    last: Option<Instant>,
    seen: Vec<Orphan>,
}

impl Watch {
    /// The socket (`socket`, of this transport) found nothing to receive.
    pub(crate) fn idle(&mut self, mgr: &Arc<Manager>, socket: u64) {
        if socket == 0 || self.last.is_some_and(|t| t.elapsed() < EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        let now = find(mgr, |receiver, s| receiver == mgr.owner() && s == socket);
        let released = now.iter().filter(|o| self.seen.contains(o) && release(mgr, o)).count();
        if released > 0 {
            log::warn!("released {released} messages lost in flight to this socket by senders that are gone");
        }
        self.seen = now;
    }

    /// Milliseconds until the next look is due (a receive that waits wakes for it: a sender may
    /// die while it sleeps, and nothing else would wake it).
    pub(crate) fn next_look_ms(&self) -> i32 {
        let left = self.last.map_or(Duration::ZERO, |t| EVERY.saturating_sub(t.elapsed()));
        i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1)
    }

    /// The socket closes: nothing addressed to it will be claimed any more.
    pub(crate) fn close(&mut self, mgr: &Arc<Manager>, socket: u64) {
        if socket == 0 {
            return;
        }
        for o in find(mgr, |receiver, s| receiver == mgr.owner() && s == socket) {
            release(mgr, &o);
        }
    }
}
