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

/// A ticket that is still out and whose issuer is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Orphan {
    segment: u16,
    ticket: u32,
    nonce: u64,
    issuer: u32,
    /// The ticket's receiver mark (`receiver`) and socket word (`socket`); see `tickets`.
    receiver: u32,
    socket: u64,
}

/// A set of sockets, one of which a ticket names (see [`Orphan::several`]). The tuple holds the
/// ticket's receiver mark, the issuing transport (0 for `AT_ENDPOINT`) and the socket word.
type Set = (u32, u32, u64);

impl Orphan {
    /// Returns the set of sockets that the ticket's receiver is one of. The set is either the
    /// sockets facing the issuing socket, or the sockets bound at an endpoint. Returns `None` for
    /// a ticket that names one receiver, or none.
    fn several(&self) -> Option<Set> {
        match self.receiver {
            FACING => Some((FACING, self.issuer, self.socket)),
            AT_ENDPOINT => Some((AT_ENDPOINT, 0, self.socket)),
            _ => None,
        }
    }
}

/// Returns what `look` says of `set`, and remembers it in `known`. Each set is looked up only
/// once, because each look scans the directory.
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

/// Returns the sockets of a set (see [`Orphan::several`]), and whether the socket attached at
/// `mine` is one of them. Returns `None` when the sockets are not known: the directory is
/// incomplete, or the entries of a dead sender were reused.
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

/// Returns the tickets still out, in every segment of the session, whose issuer is gone and whose
/// receiver `wanted` accepts. `wanted` gets the receiver's owner mark and the socket word (see
/// `tickets`).
/// `find` looks only at the chunks that a dead transport holds, and at the chunks that a transport
/// gave up with tickets out when it left ([`LEFT`]). Free chunks hold no ticket. Whether an owner
/// is alive is looked up once per owner.
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

/// Takes `o` back if it is still out, and releases what it hands over. Returns true when it took
/// `o` back.
pub(crate) fn release(mgr: &Arc<Attachment>, o: &Orphan) -> bool {
    let Ok(seg) = mgr.segment(o.segment) else { return false };
    let tickets = seg.tickets();
    // Read what the ticket names before the claim. Once claimed, the ticket may be issued again.
    let Ok((kind, rec)) = tickets.resolve(o.ticket, o.nonce) else { return false };
    // The issuer may have been killed after it handed the block to the ticket and before it
    // marked the block in flight. The block then still carries the issuer's own mark, so mark it
    // in flight first. Otherwise, once the ticket is claimed, a sweep no longer sees the ticket.
    // The sweep would then free the block as the dead issuer's, on top of this release.
    let _ = mgr.remark(&rec, o.issuer, crate::segment::slots::IN_FLIGHT);
    if kind == Kind::Offer {
        // Nobody can claim this offer any more, so nobody will claim its lane either.
        let Ok(block) =
            Message::claim_offer(mgr, o.segment, o.ticket, o.nonce, crate::transport::socket::lanes::drop_lane)
        else {
            return false;
        };
        crate::transport::socket::lanes::release_unclaimed(mgr, block);
        return true;
    }
    // Claim the ticket the way a receiver does: the block becomes this transport's before the
    // claim ends. If this process is killed midway, every block is still accounted for.
    if !tickets.claim_as(o.ticket, o.nonce, mgr.owner()) {
        return false;
    }
    let marked = mgr.remark(&rec, crate::segment::slots::IN_FLIGHT, mgr.owner());
    tickets.claimed(o.ticket, mgr.owner());
    if marked == crate::segment::Remark::Refused {
        // The block was not in flight: some holder keeps it, and the ticket is faulty. The block
        // is not this transport's to free.
        log::error!("a ticket a dead sender left names a block it did not hand over; left alone");
        return true;
    }
    match Message::from_record(mgr, rec) {
        Ok(m) => drop(m),
        Err(e) => log::error!("could not release a message its sender left in flight: {e}"),
    }
    true
}

/// Releases the tickets of gone issuers that no receiver can claim, and returns how many. These
/// are the tickets that never left their issuer (no receiver: the issuer died before sending), the
/// tickets addressed to a gone receiver (found by a sweep of the dead), and the tickets addressed
/// to one of several sockets of which none lives.
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
/// A time (ns) longer than any record takes to go from a ZeroMQ socket to its peer's queue on one
/// host.
pub(crate) const ARRIVAL: u64 = 1_000_000_000;

/// A receiving socket's watch for tickets addressed to it whose issuer is gone.
/// The watch sees such a ticket at one look. If the ticket is still out at the next look, a second
/// or more later, while the socket was empty again, then its record was lost with the issuer's
/// queue: otherwise the record would have arrived. The watch then releases the ticket.
/// A ticket addressed to one of the sockets facing its issuer ([`FACING`]) waits longer: until
/// every live one of those sockets found itself empty more than [`ARRIVAL`] after this watch first
/// saw the ticket.
#[derive(Default)]
pub(crate) struct Watch {
    last: Option<Instant>,
    /// The orphans addressed to this socket alone that the last look saw. `seen` and `shared` are
    /// hashed sets, not lists: with a table full of orphans (2^18 tickets per segment), a look
    /// must not take time in the square of their number.
    seen: HashSet<Orphan>,
    /// Tickets addressed to one of several sockets, this socket among them, with the time each
    /// ticket was first seen (coarse ns).
    shared: HashMap<Orphan, u64>,
}

impl Watch {
    /// Runs when the socket found nothing to receive, and releases the records lost on their way
    /// to it. `socket` is the socket's number in this transport. `mine` holds the socket's
    /// endpoints in the directory, and is empty when the socket is not listed there.
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

    /// Releases orphans from `found`, which are addressed to one of several sockets. Only the
    /// orphans whose set includes this socket (attached at `mine`) count. Such an orphan is
    /// released once every live socket of its set was empty more than [`ARRIVAL`] after this
    /// watch first saw the orphan. Returns how many orphans were released.
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

    /// Returns the milliseconds until the next look is due. A receive that waits wakes up for that
    /// look: a sender may die while the receive sleeps, and nothing else would wake it.
    pub(crate) fn next_look_ms(&self) -> i32 {
        let left = self.last.map_or(Duration::ZERO, |t| EVERY.saturating_sub(t.elapsed()));
        i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1)
    }

    /// Runs when the socket closes, and releases the orphans addressed to the socket: nothing
    /// addressed to it will be claimed any more.
    pub(crate) fn close(&mut self, mgr: &Arc<Attachment>, socket: u64) {
        if socket == 0 {
            return;
        }
        for o in find(mgr, |receiver, s| receiver == mgr.owner() && s == socket) {
            release(mgr, &o);
        }
    }
}
