//! The receiver that a socket's tickets name ([`Addressee`]), for the socket types whose ZeroMQ
//! socket picks where a record goes: PAIR, REQ, REP, DEALER and ROUTER.
//!
//! The socket looks up the sockets at the other end of its endpoints in the session's directory
//! (see `directory`). When exactly one live socket is there, the tickets name it. When several are
//! there, the tickets name "one of the sockets facing this socket" ([`FACING`]). A REP names the
//! transport that issued the request it answers; it reads that transport from the request's
//! ticket.
//!
//! The socket keeps what it handed to a named receiver until the receiver claims it. When the
//! receiver's transport dies, the sender takes back what the receiver did not claim. A PAIR or
//! DEALER sends it again, and the next peer gets it. A REP or ROUTER releases it: ZeroMQ routes a
//! reply to its requester's connection, which went away with the requester.
//!
//! A message handed to one of several sockets can only have gone to a dead one when two things
//! hold: one of them was found dead after the message was sent, and every live one found itself
//! empty well after it was sent. The socket then takes the message back, as above.
//!
//! A REQ takes nothing back while it is open. Its request may still wait in its own queue for the
//! peer's successor, and a REQ cannot send it again. When a socket closes, it releases what dead
//! receivers did not claim.

use crate::segment::tickets::FACING;
use crate::sys::clock::coarse_ns;
use crate::transport::attachment::Attachment;
use crate::transport::message::Message;
use crate::transport::socket::directory::{self, Attached, Listing, SocketMark};
use crate::transport::socket::orphans::ARRIVAL;
use crate::transport::socket::peers::{reclaim, still_out, Sent};
use fairmq_zmq::SocketType;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a socket checks whether the receivers of the messages it handed out still live.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What a socket does with the messages a dead receiver did not claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnDeath {
    Resend,
    Release,
    /// Do nothing with them while the socket is open (REQ).
    Keep,
}

/// The receiver that a socket names on its tickets, and the messages that the socket handed to
/// named receivers and that are not claimed yet.
pub(crate) struct Addressee {
    on_death: OnDeath,
    /// This socket's mark in the directory.
    me: SocketMark,
    /// This socket's endpoints and their entries in the directory.
    listing: Listing,
    /// The directory generation at the last look (`u64::MAX`: no look yet, or a new look is due).
    /// The next three fields hold what that look found. `peer` is the one live socket facing this
    /// socket, if exactly one lives. `facing_known` says whether the sockets facing this socket are
    /// known. `known` lists the live ones.
    seen: u64,
    peer: Option<SocketMark>,
    facing_known: bool,
    known: Vec<SocketMark>,
    /// When a socket facing this one was last found dead (coarse ns; 0: never).
    death_at: u64,
    /// Messages handed to a single named receiver and not claimed yet, oldest first. Each message
    /// comes with its receiver's owner mark.
    sent: VecDeque<(u32, Sent)>,
    /// Messages handed to one of several facing sockets, oldest first. Each message comes with the
    /// time it was handed over (coarse ns).
    shared: VecDeque<(u64, Sent)>,
    last_check: Option<Instant>,
    /// REP only: the transport whose request came last. The reply goes to that transport. The
    /// value is `Some(None)` until a request came, and when the last request's issuer is not known.
    requester: Option<Option<u32>>,
    /// Messages taken back from dead receivers (PAIR, DEALER). They go out again before new
    /// messages.
    pub resend: VecDeque<Vec<Message>>,
}

impl Addressee {
    /// Creates the addressee state of socket number `number`, of type `ty`, in `mgr`'s transport.
    /// Returns `None` for the types that learn their peers another way (PUSH, PUB) and for the
    /// types that only receive (PULL, SUB).
    pub(crate) fn new(mgr: &Attachment, ty: SocketType, number: u64) -> Option<Addressee> {
        let on_death = match ty {
            SocketType::Pair | SocketType::Dealer => OnDeath::Resend,
            SocketType::Rep | SocketType::Router => OnDeath::Release,
            SocketType::Req => OnDeath::Keep,
            _ => return None,
        };
        Some(Addressee {
            on_death,
            me: (mgr.owner(), number),
            listing: Listing::default(),
            seen: u64::MAX,
            peer: None,
            facing_known: false,
            known: Vec::new(),
            death_at: 0,
            sent: VecDeque::new(),
            shared: VecDeque::new(),
            last_check: None,
            requester: (ty == SocketType::Rep).then_some(None),
            resend: VecDeque::new(),
        })
    }

    /// Records in the directory that the socket bound to `endpoint` (`bound` true) or connected
    /// to it.
    pub(crate) fn attached(&mut self, mgr: &Attachment, endpoint: &str, bound: bool) {
        self.listing.enter(mgr, self.me, endpoint, bound);
        self.seen = u64::MAX;
    }

    /// Returns the socket's endpoints in the directory, or none when one of them is missing there.
    pub(crate) fn endpoints(&self) -> &[Attached] {
        self.listing.endpoints()
    }

    /// Records in the directory that the socket found itself empty, with nothing to receive (see
    /// `directory::stamp_empty`).
    pub(crate) fn found_empty(&mut self, mgr: &Attachment) {
        self.listing.found_empty(mgr.management(), self.me);
    }

    /// REP only: records that a request came from the transport `issuer`, so that the reply goes
    /// there. `issuer` is the owner mark of the transport that issued the request's ticket. The
    /// value 0 means that the issuer is not known.
    pub(crate) fn heard_from(&mut self, issuer: u32) {
        if let Some(r) = &mut self.requester {
            *r = (issuer != 0).then_some(issuer);
        }
    }

    /// Returns the receiver to name on the tickets of the next message:
    ///
    /// - one known receiver: `(owner mark, socket number)`;
    /// - one of several sockets: `(FACING, this socket's number)`;
    /// - no receiver can be named: `(0, 0)`.
    ///
    /// A REP's reply goes to its requester. The requester's socket number is known only when the
    /// directory names that socket as the one live socket facing this socket; otherwise it is 0.
    pub(crate) fn receiver(&mut self, mgr: &Attachment) -> SocketMark {
        let generation = directory::generation(mgr.management());
        if generation != self.seen {
            self.seen = generation;
            self.look(mgr);
        }
        match self.requester {
            Some(Some(owner)) => (owner, self.peer.filter(|p| p.0 == owner).map_or(0, |p| p.1)),
            Some(None) => (0, 0),
            None => self.peer.unwrap_or(if self.facing_known { (FACING, self.me.1) } else { (0, 0) }),
        }
    }

    /// Looks up the sockets facing this socket in the directory. A facing socket that was alive at
    /// the last look and is gone now counts as a death (see `Addressee::note_deaths`).
    fn look(&mut self, mgr: &Attachment) {
        self.note_deaths(mgr);
        let alive = |o| o == mgr.owner() || mgr.owner_alive(o);
        let facing = match self.listing.endpoints() {
            [] => None,
            mine => directory::facing(mgr.management(), self.me, mine, alive),
        };
        self.facing_known = facing.is_some();
        let live: Vec<SocketMark> = facing.iter().flatten().filter(|f| f.alive).map(|f| f.mark).collect();
        self.peer = match live[..] {
            [one] => Some(one),
            _ => None,
        };
        self.known = live;
    }

    /// Records the time when a socket known to face this socket is found gone, because its
    /// transport is gone.
    fn note_deaths(&mut self, mgr: &Attachment) {
        let before = self.known.len();
        self.known.retain(|m| m.0 == mgr.owner() || mgr.owner_alive(m.0));
        if self.known.len() != before {
            self.death_at = coarse_ns();
            // The named receiver may be the dead socket. A death does not change the directory's
            // generation, so a new look must be forced.
            self.seen = u64::MAX;
        }
    }

    /// Records that a message with the tickets in `sent` went to `receiver` (an owner mark, or
    /// [`FACING`]). The socket keeps the message until its receiver claims it.
    pub(crate) fn handed(&mut self, mgr: &Attachment, receiver: u32, sent: Sent) {
        self.forget_claimed(mgr);
        if receiver == FACING {
            self.shared.push_back((coarse_ns(), sent));
        } else {
            self.sent.push_back((receiver, sent));
        }
    }

    /// Forgets messages from the oldest on, and stops at the first one that is not claimed yet.
    pub(crate) fn forget_claimed(&mut self, mgr: &Attachment) {
        let claimed = |s: &Sent| s.tickets().iter().all(|t| !still_out(mgr, t));
        while self.sent.front().is_some_and(|(_, s)| claimed(s)) {
            self.sent.pop_front();
        }
        while self.shared.front().is_some_and(|(_, s)| claimed(s)) {
            self.shared.pop_front();
        }
    }

    /// Forgets the messages that were claimed, and takes back the messages that dead receivers did
    /// not claim. The check runs at most once every [`CHECK_EVERY`], unless `now` is true. Returns
    /// how many messages were released.
    pub(crate) fn check(&mut self, mgr: &Arc<Attachment>, now: bool) -> usize {
        if !now && self.last_check.is_some_and(|t| t.elapsed() < CHECK_EVERY) {
            return 0;
        }
        self.last_check = Some(Instant::now());
        let out = |s: &Sent| s.tickets().iter().any(|t| still_out(mgr, t));
        self.sent.retain(|(_, s)| out(s));
        self.shared.retain(|(_, s)| out(s));
        self.note_deaths(mgr);
        if self.on_death == OnDeath::Keep {
            return 0;
        }
        let resend = self.on_death == OnDeath::Resend;
        self.take_back_dead(mgr, resend) + self.take_back_shared(mgr, resend)
    }

    /// Takes back the messages that dead named receivers did not claim. The messages are sent
    /// again if `resend` is true, and released otherwise.
    fn take_back_dead(&mut self, mgr: &Arc<Attachment>, resend: bool) -> usize {
        let mut dead = crate::segment::tickets::remembered(|o| !mgr.owner_alive(o));
        let (gone, kept): (VecDeque<_>, VecDeque<_>) =
            std::mem::take(&mut self.sent).into_iter().partition(|(r, _)| dead(*r));
        self.sent = kept;
        if !gone.is_empty() {
            self.seen = u64::MAX;
        }
        self.give_back(mgr, gone.into_iter().map(|(_, s)| s), resend)
    }

    /// Takes back the messages handed to one of several facing sockets that can only have gone to
    /// a socket that died. Such a message meets two conditions. First, it was sent before the last
    /// death was noticed. Second, every live facing socket found itself empty more than `ARRIVAL`
    /// after the message was sent, which is long enough for the message to have arrived.
    fn take_back_shared(&mut self, mgr: &Arc<Attachment>, resend: bool) -> usize {
        let mine = self.listing.endpoints();
        if self.death_at == 0 || self.shared.is_empty() || mine.is_empty() {
            return 0;
        }
        let alive = |o| o == mgr.owner() || mgr.owner_alive(o);
        let Some(facing) = directory::facing(mgr.management(), self.me, mine, alive) else {
            return 0;
        };
        let empty_since = facing.iter().filter(|f| f.alive).map(|f| f.empty_at).min().unwrap_or(u64::MAX);
        let death_at = self.death_at;
        let (gone, kept): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut self.shared)
            .into_iter()
            .partition(|&(at, _)| at < death_at && empty_since > at.saturating_add(ARRIVAL));
        self.shared = kept;
        self.give_back(mgr, gone.into_iter().map(|(_, s)| s), resend)
    }

    /// Takes back the messages in `gone`, which their receivers did not claim. The messages are
    /// sent again if `resend` is true, and released otherwise. Returns how many messages were
    /// released.
    fn give_back(&mut self, mgr: &Arc<Attachment>, gone: impl Iterator<Item = Sent>, resend: bool) -> usize {
        let mut released = 0;
        for s in gone {
            match reclaim(mgr, s) {
                Some(frame) if resend => {
                    log::debug!("a receiver died: a message it had not taken goes out again");
                    self.resend.push_back(frame);
                }
                Some(_) => released += 1,
                None => {}
            }
        }
        released
    }

    /// Runs when the socket closes. It releases the messages that dead receivers did not claim,
    /// and the messages that waited to be sent again. Live receivers may still claim theirs. The
    /// socket leaves the directory. Returns how many messages were released.
    pub(crate) fn close(&mut self, mgr: &Arc<Attachment>) -> usize {
        self.note_deaths(mgr);
        let released =
            self.resend.drain(..).count() + self.take_back_dead(mgr, false) + self.take_back_shared(mgr, false);
        if self.listing.has_entries() {
            directory::unregister(mgr.management(), self.me);
        }
        released
    }
}
