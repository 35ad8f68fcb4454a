//! Tickets that nobody will claim, and the release of what they hand over.
//!
//! A ticket is an orphan ([`Orphan`]) when its issuer is gone: dead, or left the session. Such an
//! issuer will never take the ticket back. A transport releases what an orphan hands over in these
//! cases:
//!
//! - The ticket never left its issuer (it names no receiver), or its receiver is gone too
//!   ([`release_unreachable`]).
//! - Its receiving socket found itself empty at two looks, a second or more apart, since it first
//!   saw the ticket ([`Watch`]). The record is not on its way any more: it was lost with the
//!   issuer's queue.
//! - The ticket names one of several sockets, and every live one of them found itself empty well
//!   after the ticket was first seen orphaned ([`ARRIVAL`]: nothing in flight from a dead sender
//!   takes that long to arrive), or none of them lives any more. [`FACING`] names the sockets
//!   facing the issuing socket, of which its ZeroMQ socket picked one. [`AT_ENDPOINT`] names
//!   whichever socket is bound at an endpoint that the issuer connected to.
//! - Its receiving socket closes ([`Watch::close`]).
//!
//! For a lane's offer, the lane and what it holds are released too. Without this module, the
//! blocks in flight when a sender was killed stayed allocated until the session ended.
//!
//! This module never takes a ticket whose issuer lives. The issuer itself takes back what its peer
//! did not claim, and sends it again (see `peers`).

use crate::segment::tickets::{names_one, names_several, Kind, AT_ENDPOINT, FACING};
use crate::transport::attachment::Attachment;
use crate::transport::message::Message;
use crate::transport::socket::directory::{self, Attached, Role};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A ticket out whose issuer is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Orphan {
    segment: u16,
    ticket: u32,
    nonce: u64,
    issuer: u32,
    /// Its receiver's owner mark and socket word (see `tickets`).
    receiver: u32,
    socket: u64,
}

/// A set of sockets one of which a ticket names (see [`Orphan::several`]): its receiver mark, and
/// the issuing transport and socket word.
type Set = (u32, u32, u64);

impl Orphan {
    /// The set of sockets its receiver is one of: those facing its issuing socket, or bound at
    /// an endpoint (`None` for a ticket that names one receiver, or none).
    fn several(&self) -> Option<Set> {
        match self.receiver {
            FACING => Some((FACING, self.issuer, self.socket)),
            AT_ENDPOINT => Some((AT_ENDPOINT, 0, self.socket)),
            _ => None,
        }
    }
}

/// What `look` says of `set`, looked up once per set (a scan of the directory each).
fn looked_up<V>(known: &mut Vec<(Set, V)>, set: Set, look: impl FnOnce() -> V) -> &V {
    let i = match known.iter().position(|(s, _)| *s == set) {
        Some(i) => i,
        None => {
            known.push((set, look()));
            known.len() - 1
        }
    };
    &known[i].1
}

/// The sockets of a set (see [`Orphan::several`]), and whether the socket at `mine` is one of
/// them; `None` when they are not known (the directory is incomplete, or a dead sender's entries
/// were reused).
fn members(mgr: &Attachment, set: Set, mine: &[Attached]) -> Option<(Vec<directory::Facing>, bool)> {
    let alive = |o| o == mgr.owner() || mgr.owner_alive(o);
    let m = mgr.management();
    match set {
        (FACING, issuer, socket) => {
            let theirs = directory::endpoints_of(m, (issuer, socket));
            if theirs.is_empty() {
                return None;
            }
            let me_too = theirs.iter().any(|t| mine.iter().any(|a| a.key == t.key && a.role != t.role));
            Some((directory::facing(m, (issuer, socket), &theirs, alive)?, me_too))
        }
        (_, _, key) => {
            let me_too = mine.iter().any(|a| a.key == key && a.role == Role::Bind);
            Some((directory::facing(m, (0, 0), &[Attached { key, role: Role::Connect }], alive)?, me_too))
        }
    }
}

/// Tickets out in every segment of the session whose issuer is gone and whose receiver (owner
/// mark, socket word; see `tickets`) `wanted` accepts. Only chunks a dead transport holds, or that
/// one that left gave up with tickets out ([`LEFT`]), are looked at (liveness looked up once per
/// owner); free chunks hold no ticket.
///
/// [`LEFT`]: crate::segment::tickets::LEFT
pub(crate) fn find(mgr: &Attachment, wanted: impl Fn(u32, u64) -> bool) -> Vec<Orphan> {
    let mut alive = crate::segment::tickets::remembered(|owner| owner == mgr.owner() || mgr.owner_alive(owner));
    let mut out = Vec::new();
    for entry in mgr.management().segments() {
        let Ok(seg) = mgr.segment(entry.id) else { continue };
        let tickets = seg.tickets();
        for (ticket, nonce, issuer, receiver, socket) in
            tickets.out_in_chunks(|owner| owner == crate::segment::tickets::LEFT || (owner != 0 && !alive(owner)))
        {
            if !alive(issuer) && wanted(receiver, socket) {
                out.push(Orphan { segment: entry.id, ticket, nonce, issuer, receiver, socket });
            }
        }
    }
    out
}

/// Takes `o` back, if it is still out, and releases what it hands over; true when it did.
pub(crate) fn release(mgr: &Arc<Attachment>, o: &Orphan) -> bool {
    let Ok(seg) = mgr.segment(o.segment) else { return false };
    let tickets = seg.tickets();
    // What it names is read before the claim: once claimed, the ticket may be issued again.
    let Ok((kind, rec)) = tickets.resolve(o.ticket, o.nonce) else { return false };
    // An issuer killed between handing the block to the ticket and marking it in flight left its
    // own mark on it: marked in flight first, so that a sweep that no longer sees the ticket once
    // it is claimed does not free the block as the dead issuer's as well.
    let _ = mgr.remark(&rec, o.issuer, crate::segment::slots::IN_FLIGHT);
    if kind == Kind::Offer {
        // Claimed, the offer can never be: nobody will claim its lane either.
        let Ok(block) =
            Message::claim_offer(mgr, o.segment, o.ticket, o.nonce, crate::transport::socket::lanes::drop_lane)
        else {
            return false;
        };
        crate::transport::socket::lanes::release_unclaimed(mgr, block);
        return true;
    }
    // Claimed as a receiver claims (the block ours before the claim ends): killed on the way, this
    // process leaves nothing that nobody accounts for.
    if !tickets.claim_as(o.ticket, o.nonce, mgr.owner()) {
        return false;
    }
    let marked = mgr.remark(&rec, crate::segment::slots::IN_FLIGHT, mgr.owner());
    tickets.claimed(o.ticket, mgr.owner());
    if marked == crate::segment::Remark::Refused {
        // Not in flight: a block some holder keeps (a faulty ticket), not ours to free.
        log::error!("a ticket a dead sender left names a block it did not hand over; left alone");
        return true;
    }
    match Message::from_record(mgr, rec) {
        Ok(m) => drop(m),
        Err(e) => log::error!("could not release a message its sender left in flight: {e}"),
    }
    true
}

/// Releases the tickets of gone issuers that never left them (no receiver: the issuer died before
/// sending) or were addressed to gone receivers (a sweep of the dead), also to several of which
/// none lives; returns how many.
pub(crate) fn release_unreachable(mgr: &Arc<Attachment>) -> usize {
    let gone = find(mgr, |receiver, _| {
        receiver == 0
            || names_several(receiver)
            || (names_one(receiver) && receiver != mgr.owner() && !mgr.owner_alive(receiver))
    });
    let mut sets: Vec<(Set, bool)> = Vec::new();
    gone.iter()
        .filter(|o| match o.several() {
            None => true,
            Some(set) => {
                *looked_up(&mut sets, set, || members(mgr, set, &[]).is_some_and(|(f, _)| f.iter().all(|f| !f.alive)))
            }
        })
        .filter(|o| release(mgr, o))
        .count()
}

/// How often a receiving socket that found itself empty looks for records lost on their way to it.
const EVERY: Duration = Duration::from_secs(1);
/// Longer than any record takes from a ZeroMQ socket to its peer's queue on one host (ns).
pub(crate) const ARRIVAL: u64 = 1_000_000_000;

/// A receiving socket's watch for tickets addressed to it whose issuer is gone: seen at one look
/// and still out at the next, a second or more later while the socket was empty again, the record
/// was lost with its issuer's queue (or it would have arrived), and is released. A ticket
/// addressed to one of the sockets facing its issuer ([`FACING`]) waits until every live one of
/// them found itself empty [`ARRIVAL`] after this watch first saw it.
#[derive(Default)]
pub(crate) struct Watch {
    last: Option<Instant>,
    /// Sets, not lists: a table full of orphans (2^18 tickets a segment) must not cost a look
    /// time in the square of their number.
    seen: HashSet<Orphan>,
    /// Tickets addressed to one of several sockets, this one among them, and when they were first
    /// seen (coarse ns).
    shared: HashMap<Orphan, u64>,
}

impl Watch {
    /// The socket (`socket`, of this transport, attached to `mine` in the directory; empty when it
    /// is not listed there) found nothing to receive.
    pub(crate) fn idle(&mut self, mgr: &Arc<Attachment>, socket: u64, mine: &[Attached]) {
        if socket == 0 || self.last.is_some_and(|t| t.elapsed() < EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        let now = find(mgr, |receiver, s| {
            (receiver == mgr.owner() && s == socket) || (names_several(receiver) && !mine.is_empty())
        });
        let (shared, now): (Vec<Orphan>, Vec<Orphan>) = now.into_iter().partition(|o| names_several(o.receiver));
        let mut released = now.iter().filter(|o| self.seen.contains(o) && release(mgr, o)).count();
        self.seen = now.into_iter().collect();
        released += self.release_shared(mgr, shared, mine);
        if released > 0 {
            log::warn!("released {released} messages lost in flight to this socket by senders that are gone");
        }
    }

    /// Of the orphans `found` addressed to one of several sockets, those this socket (at `mine`)
    /// is one of are released once every live one of them was empty [`ARRIVAL`] after they were
    /// first seen here; returns how many.
    fn release_shared(&mut self, mgr: &Arc<Attachment>, found: Vec<Orphan>, mine: &[Attached]) -> usize {
        let now = crate::sys::clock::coarse_ns();
        let mut sets: Vec<(Set, Option<Vec<directory::Facing>>)> = Vec::new();
        let mut released = 0;
        let mut kept = HashMap::new();
        for o in found {
            let Some(set) = o.several() else { continue };
            let ours = || members(mgr, set, mine).and_then(|(f, me_too)| me_too.then_some(f));
            let Some(facing) = looked_up(&mut sets, set, ours) else { continue };
            let since = self.shared.get(&o).copied().unwrap_or(now);
            let all_empty = facing.iter().filter(|f| f.alive).all(|f| f.empty_at > since.saturating_add(ARRIVAL));
            if all_empty && release(mgr, &o) {
                released += 1;
            } else {
                kept.insert(o, since);
            }
        }
        self.shared = kept;
        released
    }

    /// Milliseconds until the next look is due (a receive that waits wakes for it: a sender may
    /// die while it sleeps, and nothing else would wake it).
    pub(crate) fn next_look_ms(&self) -> i32 {
        let left = self.last.map_or(Duration::ZERO, |t| EVERY.saturating_sub(t.elapsed()));
        i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1)
    }

    /// The socket closes: nothing addressed to it will be claimed any more.
    pub(crate) fn close(&mut self, mgr: &Arc<Attachment>, socket: u64) {
        if socket == 0 {
            return;
        }
        for o in find(mgr, |receiver, s| receiver == mgr.owner() && s == socket) {
            release(mgr, &o);
        }
    }
}
