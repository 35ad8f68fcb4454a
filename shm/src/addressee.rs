//! The receiver of a socket whose ZeroMQ socket picks where a record goes (PAIR, REQ, REP,
//! DEALER, ROUTER), when it can be named: the one socket at the other end of its endpoints in the
//! session's directory (see `directory`). Its tickets name that receiver, and what it was handed
//! is kept until it claims it: when its transport dies, the sender takes back what it did not
//! claim, to send again (PAIR, DEALER: the next peer gets it) or to release (REP, ROUTER: ZeroMQ
//! routes a reply to its requester's connection, gone with it; a REP names the transport whose
//! request it answers, from that request's ticket). A REQ takes nothing back while it
//! is open: its request may still wait in its own queue for the peer's successor, and a REQ
//! cannot send it again; it releases what dead receivers left when it closes.

use crate::directory::{self, Attached, SocketMark};
use crate::manager::Manager;
use crate::message::Message;
use crate::peers::{reclaim, still_out, Sent};
use fairmq_zmq::SocketType;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a socket looks whether the receivers of what it handed out still live.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What a socket does with the messages a dead receiver did not claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnDeath {
    Resend,
    Release,
    /// Nothing while the socket is open (REQ).
    Keep,
}

/// A socket's named receiver and what it handed to named receivers.
pub(crate) struct Addressee {
    on_death: OnDeath,
    /// This socket in the directory.
    me: SocketMark,
    /// Its endpoints.
    attached: Vec<Attached>,
    /// The directory generation of the last look (`u64::MAX`: none yet), and what it found.
    seen: u64,
    peer: Option<SocketMark>,
    /// Messages handed to a named receiver (its owner mark) and not claimed yet, oldest first.
    sent: VecDeque<(u32, Sent)>,
    last_check: Option<Instant>,
    /// REP: the transport whose request came last (its reply goes there), once one came.
    requester: Option<Option<u32>>,
    /// Messages taken back from dead receivers, to go out first (PAIR, DEALER).
    pub resend: VecDeque<Vec<Message>>,
}

impl Addressee {
    /// The addressee state of a socket of type `ty`, number `number`, of `mgr`'s transport; `None`
    /// for types that know their peers otherwise (PUSH, PUB) or only receive (PULL, SUB).
    pub(crate) fn new(mgr: &Manager, ty: SocketType, number: u64) -> Option<Addressee> {
        let on_death = match ty {
            SocketType::Pair | SocketType::Dealer => OnDeath::Resend,
            SocketType::Rep | SocketType::Router => OnDeath::Release,
            SocketType::Req => OnDeath::Keep,
            _ => return None,
        };
        Some(Addressee {
            on_death,
            me: (mgr.owner(), number),
            attached: Vec::new(),
            seen: u64::MAX,
            peer: None,
            sent: VecDeque::new(),
            last_check: None,
            requester: (ty == SocketType::Rep).then_some(None),
            resend: VecDeque::new(),
        })
    }

    /// The socket bound (`bound`) or connected to `endpoint`: recorded in the directory.
    pub(crate) fn attached(&mut self, mgr: &Manager, endpoint: &str, bound: bool) {
        self.attached.extend(directory::enter(mgr, self.me, endpoint, bound));
    }

    /// REP: a request came from the transport `issuer` (owner mark of its ticket; 0: not known).
    pub(crate) fn heard_from(&mut self, issuer: u32) {
        if let Some(r) = &mut self.requester {
            *r = (issuer != 0).then_some(issuer);
        }
    }

    /// The receiver to name on the tickets of the next message: `(owner mark, socket number)`,
    /// `(0, 0)` when it cannot be named. A REP's reply goes to its requester, whose socket is known
    /// when the directory names it.
    pub(crate) fn receiver(&mut self, mgr: &Manager) -> SocketMark {
        let generation = directory::generation(mgr.management());
        if generation != self.seen {
            self.seen = generation;
            self.peer = directory::counterpart(mgr.management(), self.me, &self.attached, |o| {
                o == mgr.owner() || mgr.owner_alive(o)
            });
        }
        match self.requester {
            Some(Some(owner)) => (owner, self.peer.filter(|p| p.0 == owner).map_or(0, |p| p.1)),
            Some(None) => (0, 0),
            None => self.peer.unwrap_or((0, 0)),
        }
    }

    /// A message went to the named receiver `receiver` (owner mark) with `sent`'s tickets.
    pub(crate) fn handed(&mut self, mgr: &Manager, receiver: u32, sent: Sent) {
        self.forget_claimed(mgr);
        self.sent.push_back((receiver, sent));
    }

    /// Forgets the oldest messages, as long as they were claimed.
    pub(crate) fn forget_claimed(&mut self, mgr: &Manager) {
        while self.sent.front().is_some_and(|(_, s)| s.tickets().iter().all(|t| !still_out(mgr, t))) {
            self.sent.pop_front();
        }
    }

    /// Every [`CHECK_EVERY`] (or now, with `now`): forgets what was claimed and takes back what
    /// receivers that died did not claim. Returns how many messages were released.
    pub(crate) fn check(&mut self, mgr: &Arc<Manager>, now: bool) -> usize {
        if !now && self.last_check.is_some_and(|t| t.elapsed() < CHECK_EVERY) {
            return 0;
        }
        self.last_check = Some(Instant::now());
        self.sent.retain(|(_, s)| s.tickets().iter().any(|t| still_out(mgr, t)));
        if self.on_death == OnDeath::Keep {
            return 0;
        }
        self.take_back_dead(mgr, self.on_death == OnDeath::Resend)
    }

    /// Takes back what dead receivers did not claim: to send again (`resend`) or released.
    fn take_back_dead(&mut self, mgr: &Arc<Manager>, resend: bool) -> usize {
        let mut dead = crate::liveness::remembered(|o| !mgr.owner_alive(o));
        let (gone, kept): (VecDeque<_>, VecDeque<_>) =
            std::mem::take(&mut self.sent).into_iter().partition(|(r, _)| dead(*r));
        self.sent = kept;
        if !gone.is_empty() {
            // The receiver named may be the dead one: a death does not move the generation.
            self.seen = u64::MAX;
        }
        let mut released = 0;
        for (receiver, s) in gone {
            match reclaim(mgr, s) {
                Some(frame) if resend => {
                    log::debug!("receiver {receiver:#x} died: a message it had not taken goes out again");
                    self.resend.push_back(frame);
                }
                Some(_) => released += 1,
                None => {}
            }
        }
        released
    }

    /// The socket closes: what dead receivers did not claim is released, and so is what waited to
    /// go out again; live ones may still claim theirs. Leaves the directory. Returns how many
    /// messages were released.
    pub(crate) fn close(&mut self, mgr: &Arc<Manager>) -> usize {
        let released = self.resend.drain(..).count() + self.take_back_dead(mgr, false);
        if !self.attached.is_empty() {
            directory::unregister(mgr.management(), self.me);
        }
        released
    }
}
