//! The peers of a socket that hands each message to one peer of its choosing (PUSH) or to every
//! subscriber (PUB), over a ZeroMQ ROUTER ([`Peers`]): who the peers are, and what each was handed
//! and has not taken yet.
//!
//! Only the session's processes can connect at all: every socket asks a peer for a password made
//! from the session secret ([`password`], ZeroMQ's PLAIN mechanism).
//!
//! A receiving socket (PULL or SUB, a ZeroMQ DEALER) makes a *token* its routing id before its
//! first connect ([`token`]). The token holds the socket's transport's owner mark, a random number
//! of the socket, and a MAC of both, keyed with the session secret, which only processes that can
//! map the session know. ZeroMQ sends the routing id in the connection's handshake, and the
//! DEALER's probe makes it known to the ROUTER at once. A peer whose token does not verify (a
//! plain ZeroMQ socket, another session, a forger) is never handed anything. A sending socket that
//! connects to an endpoint names the socket bound there from the session's directory instead (see
//! `directory`).
//!
//! The socket keeps every message it handed to a peer on that peer's list, with its tickets
//! (addressed to that peer), until the peer claims them. When the peer goes away, the socket takes
//! back what the peer did not claim. A peer goes away when the ROUTER finds it unreachable, when it
//! connects again, or when its transport died. A PUSH sends what it took back again, to another
//! peer. A PUB releases it: its subscribers miss what they cannot take, as ZeroMQ's do. A peer
//! takes its messages in order, so a message left behind one that the peer took was lost on the
//! way (with a dropped connection), and is taken back too. A ticket that the peer claimed first
//! stays claimed: nothing is handed over twice.

use crate::meta::Record;
use crate::segment::tickets::Issued;
use crate::transport::attachment::Attachment;
use crate::transport::message::Message;
use crate::transport::part::Held;
use fairmq_zmq::layered::{LayeredSocket, Uncounted};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MAGIC: &[u8; 6] = b"FMQRS3";
/// The prefix of the routing ids a sending socket gives the peers of endpoints it connects to.
pub(crate) const CONNECTED: &[u8] = b"fmqrs-connected-";
/// The length of a token, in bytes.
pub(crate) const TOKEN_LEN: usize = 6 + 4 + 8 + 8;
/// The most frames that a socket reads in one look for new peers.
const LEARN_FRAMES: usize = 1000;
/// How long `reclaim` waits for a peer that claimed a message's first part to claim the other
/// parts.
const PART_CLAIM_WAIT: Duration = Duration::from_millis(200);
/// How often a socket with peers checks whether the peers' transports still live.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Makes the routing id of a receiving socket of `mgr`'s transport:
/// `magic, owner u32, socket u64, mac u64`. Returns the token and the socket's number.
pub(crate) fn token(mgr: &Attachment) -> (Vec<u8>, u64) {
    let socket = socket_number();
    let owner = mgr.owner();
    let mut t = Vec::with_capacity(TOKEN_LEN);
    t.extend_from_slice(MAGIC);
    t.extend_from_slice(&owner.to_le_bytes());
    t.extend_from_slice(&socket.to_le_bytes());
    t.extend_from_slice(&mac(mgr.management().secret(), owner, socket).to_le_bytes());
    (t, socket)
}

/// Makes a new socket's number. The number is random, so that one socket's tickets are not taken
/// for another socket's.
pub(crate) fn socket_number() -> u64 {
    u64::from(crate::naming::random_u32()) << 32 | u64::from(crate::naming::random_u32())
}

/// The session's password for ZeroMQ's PLAIN mechanism. Every socket of the session asks it of a
/// peer that connects to it, and presents it where it connects. Only processes that can map the
/// session know the password. So a plain ZeroMQ socket, or a socket of another session, cannot
/// even connect. The password is in hex, made from a hash of the session secret. It is never the
/// secret itself.
pub(crate) fn password(mgr: &Attachment) -> String {
    use sha2::{Digest, Sha256};
    let secret = mgr.management().secret();
    let mut h = Sha256::new();
    h.update(b"fairmq-rs connect");
    h.update(secret[0].to_le_bytes());
    h.update(secret[1].to_le_bytes());
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

fn mac(secret: [u64; 2], owner: u32, socket: u64) -> u64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(secret[0].to_le_bytes());
    h.update(secret[1].to_le_bytes());
    h.update(owner.to_le_bytes());
    h.update(socket.to_le_bytes());
    u64::from_le_bytes(h.finalize()[..8].try_into().expect("a digest is longer than 8 bytes"))
}

/// The owner mark and socket number that routing id `id` presents, if `id` is a token of this
/// session.
pub(crate) fn verify(mgr: &Attachment, id: &[u8]) -> Option<(u32, u64)> {
    if id.len() != TOKEN_LEN || &id[..6] != MAGIC {
        return None;
    }
    let owner = u32::from_le_bytes(id[6..10].try_into().ok()?);
    let socket = u64::from_le_bytes(id[10..18].try_into().ok()?);
    let tag = u64::from_le_bytes(id[18..26].try_into().ok()?);
    (mac(mgr.management().secret(), owner, socket) == tag).then_some((owner, socket))
}

/// One message handed to a peer: the records of its parts, empty parts included, and the tickets
/// of the non-empty parts, in order. A single part, the common case, costs no allocation.
pub(crate) enum Sent {
    One(Record, Issued),
    Many { records: Vec<Record>, tickets: Vec<Issued> },
}

impl Sent {
    /// Builds the `Sent` for `parts`, which were sent with `tickets`.
    pub(crate) fn of<P: Held>(parts: &[P], tickets: &[Issued]) -> Sent {
        match (parts, tickets) {
            ([one], [t]) => Sent::One(one.msg().record(), *t),
            _ => Sent::Many { records: parts.iter().map(|p| p.msg().record()).collect(), tickets: tickets.to_vec() },
        }
    }

    pub(crate) fn tickets(&self) -> &[Issued] {
        match self {
            Sent::One(_, t) => std::slice::from_ref(t),
            Sent::Many { tickets, .. } => tickets,
        }
    }
}

/// A receiving socket of the session, known by its token; a peer of an endpoint this socket
/// connected to is known by the routing id its connection got.
pub(crate) struct Peer {
    pub id: Vec<u8>,
    /// The receiving transport's owner mark and socket number (0: not known).
    pub owner: u32,
    pub socket: u64,
    sent: VecDeque<Sent>,
    /// For a peer of an endpoint that this socket connected to: the endpoint's directory key (0:
    /// none). The connection outlives the receivers bound at the endpoint, so the directory names
    /// the receiver bound there now.
    endpoint: Option<u64>,
}

impl Peer {
    /// The receiver that the tickets of a message handed to this peer name. It is the peer's
    /// transport and socket when they are known, else the endpoint that this socket connected to
    /// (see `tickets`), else nobody (0, 0).
    pub(crate) fn receiver(&self) -> (u32, u64) {
        match self.endpoint {
            _ if self.owner != 0 => (self.owner, self.socket),
            Some(key) if key != 0 => (crate::segment::tickets::AT_ENDPOINT, key),
            _ => (0, 0),
        }
    }

    /// Forgets the messages that the peer took already. The peer takes messages in order, so
    /// `prune` stops at the oldest message not taken yet.
    fn prune(&mut self, mgr: &Attachment) {
        while self.sent.front().is_some_and(|s| s.tickets().iter().all(|t| !still_out(mgr, t))) {
            self.sent.pop_front();
        }
    }

    /// Remembers what was handed to the peer.
    pub(crate) fn handed(&mut self, mgr: &Attachment, sent: Sent) {
        self.prune(mgr);
        self.sent.push_back(sent);
    }
}

pub(crate) fn still_out(mgr: &Attachment, t: &Issued) -> bool {
    mgr.segment(t.segment).is_ok_and(|s| s.tickets().issued(t.ticket, t.nonce))
}

/// What a socket knows of its peers.
#[derive(Default)]
pub(crate) struct Peers {
    list: Vec<Peer>,
    next: usize,
    /// PUSH only: messages taken back from peers that went away. They go out again before any
    /// new message.
    pub resend: VecDeque<Vec<Message>>,
    last_check: Option<Instant>,
    refused: u64,
    /// How many peers of connected endpoints were added so far.
    connected: usize,
    /// The directory keys of the endpoints this socket connected to, in order (0: an endpoint
    /// that the directory cannot name).
    keys: Vec<u64>,
    /// The directory generation at which the connected peers were named (`None`: not yet).
    named_at: Option<u64>,
}

impl Peers {
    /// Learns the peers whose probes wait on the ROUTER `z`. A probe from a known peer means a
    /// new connection of that peer. What its old connection held is gone, so `learn` takes it
    /// back. Every [`CHECK_EVERY`], `learn` also checks the peers' transports.
    pub(crate) fn learn(&mut self, mgr: &Arc<Attachment>, z: &fairmq_zmq::Socket, socket: &str, resend: bool) {
        // The peer of an endpoint we connected to is whoever listens there. Its transport is not
        // known, so the liveness check does not look after it; only its connection does.
        if z.endpoint_counts().1 as usize > self.connected {
            self.named_at = None;
            for id in z.connected_peers().into_iter().skip(self.connected) {
                let endpoint = Some(self.keys.get(self.connected).copied().unwrap_or(0));
                self.list.push(Peer { id, owner: 0, socket: 0, sent: VecDeque::new(), endpoint });
                self.connected += 1;
            }
        }
        // The loop is bounded, so that a peer flooding the socket cannot hold up a send here.
        for _ in 0..LEARN_FRAMES {
            let mut frames = Vec::new();
            if z.receive_parts_uncounted(&mut frames, 0).is_err() {
                break;
            }
            // A probe is the peer's id and an empty frame. A hello is the peer's id and a hello
            // frame (see `Socket::announce`). Anything else a peer sends is ignored.
            let [id, frame] = &frames[..] else { continue };
            let hello = frame.data() == crate::meta::HELLO_FRAME;
            if !frame.is_empty() && !hello {
                continue;
            }
            let id = id.data();
            if let Some(i) = self.list.iter().position(|p| p.id == id) {
                if self.list[i].endpoint.is_some() || hello {
                    // A peer we connected to keeps its pipe, and what waits in it, across
                    // reconnects.
                    continue;
                }
                log::debug!("socket {socket}: peer {:#x} connected again", self.list[i].owner);
                let (again, _) = self.take_back(mgr, i, resend);
                self.list.push(again);
                continue;
            }
            match verify(mgr, id) {
                Some((owner, sock)) => {
                    self.list.push(Peer {
                        id: id.to_vec(),
                        owner,
                        socket: sock,
                        sent: VecDeque::new(),
                        endpoint: None,
                    });
                    // A new peer often replaces a dead one. The liveness check runs now, so the
                    // dead peer gives back what it had before the newcomer gets anything.
                    self.last_check = None;
                }
                None => {
                    self.refused += 1;
                    log::warn!(
                        "socket {socket}: a peer that is not a shared-memory socket of this session connected; it gets nothing"
                    );
                }
            }
        }
        self.name_connected(mgr);
        if self.last_check.is_none_or(|t| t.elapsed() >= CHECK_EVERY) {
            self.last_check = Some(Instant::now());
            let mut i = 0;
            while i < self.list.len() {
                let owner = self.list[i].owner;
                if owner == 0 || mgr.owner_alive(owner) {
                    self.recover_lost(mgr, i, resend);
                    i += 1;
                } else if self.list[i].endpoint.is_some() {
                    // The receiver bound at the endpoint died. The connection stays, for the
                    // next receiver bound there.
                    log::debug!("socket {socket}: peer {owner:#x} died");
                    let p = &mut self.list[i];
                    (p.owner, p.socket) = (0, 0);
                    let sent = std::mem::take(&mut p.sent);
                    self.give_back(mgr, sent, resend);
                    i += 1;
                } else {
                    log::debug!("socket {socket}: peer {owner:#x} died");
                    self.take_back(mgr, i, resend);
                }
            }
        }
    }

    /// The socket connected to an endpoint of directory key `key` (`None`: one it cannot name).
    pub(crate) fn connected_to(&mut self, key: Option<u64>) {
        self.keys.push(key.unwrap_or(0));
    }

    /// The socket has connected to `n` endpoints so far, some of which it did not note (an attach
    /// that failed part-way): they are not named.
    pub(crate) fn connected_before(&mut self, n: usize) {
        if self.keys.len() < n {
            self.keys.resize(n, 0);
        }
    }

    /// Names the receivers bound at the endpoints this socket connected to, from the session's
    /// directory (see `directory`). It does so only when the directory changed. The tickets then
    /// name these receivers. So if the sender is killed, each receiver releases what the sender
    /// queued for it. And if a receiver dies, what it did not take comes back to the sender.
    fn name_connected(&mut self, mgr: &Attachment) {
        let generation = crate::transport::socket::directory::generation(mgr.management());
        if self.keys.iter().all(|&k| k == 0) || self.named_at == Some(generation) {
            return;
        }
        self.named_at = Some(generation);
        let alive = |o: u32| o == mgr.owner() || mgr.owner_alive(o);
        for p in &mut self.list {
            let Some(key) = p.endpoint.filter(|&k| k != 0) else { continue };
            let at = [crate::transport::socket::directory::Attached {
                key,
                role: crate::transport::socket::directory::Role::Connect,
            }];
            (p.owner, p.socket) =
                crate::transport::socket::directory::counterpart(mgr.management(), (mgr.owner(), 0), &at, alive)
                    .unwrap_or((0, 0));
        }
    }

    /// Takes back what peer `i` lost on the way. A peer takes what it is handed in order. So a
    /// message left behind a message that the peer took was lost on the way: when ZeroMQ drops a
    /// connection and makes it again, it drops what it queued. `recover_lost` takes such messages
    /// back, to be sent again or released.
    fn recover_lost(&mut self, mgr: &Arc<Attachment>, i: usize, resend: bool) {
        let sent = &mut self.list[i].sent;
        let Some(last_taken) = sent.iter().rposition(|s| s.tickets().iter().all(|t| !still_out(mgr, t))) else {
            return;
        };
        let lost: Vec<Sent> = sent.drain(..last_taken).collect();
        sent.pop_front(); // the one taken
        self.give_back(mgr, lost, resend);
    }

    /// Takes back the messages in `sent` that were not claimed. With `resend`, they are queued to
    /// go out again; otherwise they are released. Returns how many messages went each way, as
    /// (again, released).
    fn give_back(
        &mut self,
        mgr: &Arc<Attachment>,
        sent: impl IntoIterator<Item = Sent>,
        resend: bool,
    ) -> (usize, usize) {
        let (mut again, mut released) = (0, 0);
        for frame in sent.into_iter().filter_map(|s| reclaim(mgr, s)) {
            if resend {
                again += 1;
                self.resend.push_back(frame);
            } else {
                released += 1; // dropped here
            }
        }
        (again, released)
    }

    /// How many peers are known.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// How many peers connected without a valid token so far.
    pub(crate) fn refused(&self) -> u64 {
        self.refused
    }

    /// The peer at `i`.
    pub(crate) fn get_mut(&mut self, i: usize) -> &mut Peer {
        &mut self.list[i]
    }

    /// The index of the `k`th peer from the one whose turn it is (`k` is below [`Peers::len`]).
    pub(crate) fn turn(&self, k: usize) -> usize {
        (self.next + k) % self.list.len()
    }

    /// Records that peer `i` took a message, so that the turn passes to the next peer.
    pub(crate) fn took(&mut self, i: usize) {
        self.next = i + 1;
    }

    /// With `Some(owner)`: the newest peer whose transport has owner mark `owner`, or a peer we
    /// connected to, whose transport is not known. With `None`: the newest peer.
    pub(crate) fn find(&self, owner: Option<u32>) -> Option<&Peer> {
        match owner {
            Some(o) => self.list.iter().rev().find(|p| p.owner == o || p.endpoint.is_some()),
            None => self.list.last(),
        }
    }

    /// Removes peer `i`, which is gone or dead, and takes back what it did not claim. With
    /// `resend`, the messages go out again; otherwise they are released. Returns the peer and how
    /// many messages were released.
    pub(crate) fn take_back(&mut self, mgr: &Arc<Attachment>, i: usize, resend: bool) -> (Peer, usize) {
        let mut peer = self.list.remove(i);
        if self.next > i {
            self.next -= 1;
        }
        let (again, released) = self.give_back(mgr, std::mem::take(&mut peer.sent), resend);
        if again + released > 0 {
            log::debug!(
                "peer {:#x} left: {again} messages it had not taken go out again, {released} released",
                peer.owner
            );
        }
        (peer, released)
    }

    /// Whether any peer has not yet taken everything it was handed.
    pub(crate) fn unclaimed(&mut self, mgr: &Attachment) -> bool {
        self.list.iter_mut().any(|p| {
            p.prune(mgr);
            !p.sent.is_empty()
        })
    }

    /// Called when the socket closes. It releases what peers whose transports died did not take.
    /// Live peers may still take what they were sent. Returns how many messages were released,
    /// counting those of the resend queue.
    pub(crate) fn close(&mut self, mgr: &Arc<Attachment>) -> usize {
        let mut released = self.resend.drain(..).count();
        let mut i = 0;
        while i < self.list.len() {
            let owner = self.list[i].owner;
            if owner == 0 || mgr.owner_alive(owner) {
                i += 1;
            } else {
                released += self.take_back(mgr, i, false).1;
            }
        }
        released
    }
}

/// Takes back the tickets of `sent` that were not claimed. When the peer claimed none of them,
/// returns the message as it was, and its references are ours again. When the peer took any
/// part, returns `None`. The other parts taken back are then released, because a part of a
/// multipart alone is no message.
pub(crate) fn reclaim(mgr: &Arc<Attachment>, sent: Sent) -> Option<Vec<Message>> {
    let (records, tickets) = match sent {
        Sent::One(r, t) => (vec![r], vec![t]),
        Sent::Many { records, tickets } => (records, tickets),
    };
    let mut tickets = tickets.iter();
    let mut whole = true;
    // `peer_claims` is set once the peer won the first part. It holds the time until which the
    // peer may still claim the other parts.
    let (mut first_part, mut peer_claims) = (true, None);
    let mut frame = Vec::with_capacity(records.len());
    for rec in records {
        if rec.is_empty() {
            frame.push(Message::empty(mgr.clone()));
            continue;
        }
        let t = tickets.next().expect("a ticket per non-empty part");
        if let Some(until) = peer_claims {
            // The peer won the first part, and it claims the other parts right after it. So only
            // a part that it still left after a moment is taken back: the peer died or stopped
            // between two claims.
            while still_out(mgr, t) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let first = std::mem::replace(&mut first_part, false);
        if !mgr.take_back_sent(t, &rec) {
            // The peer took this part. Its receive claims the parts in order and stops at the
            // first part it does not get. So whoever wins the first part gets the message.
            if first {
                peer_claims = Some(Instant::now() + PART_CLAIM_WAIT);
            }
            whole = false;
            continue;
        }
        match Message::from_record(mgr, rec) {
            Ok(m) => {
                // A shared part was unlisted when its ticket took it (see
                // `Message::unlist_for_hand_over`). Now that the part is ours again, it is listed
                // again. So if we are killed while it waits to go out again, a sweep drops it.
                // Before this, the block stayed for the life of the session.
                m.list_if_shared();
                frame.push(m);
            }
            Err(e) => {
                whole = false;
                log::error!("could not take back a message a peer left: {e}");
            }
        }
    }
    whole.then_some(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_with_the_secret_and_unchanged() {
        let secret = [1, 2];
        let tag = mac(secret, 7, 99);
        assert_eq!(tag, mac(secret, 7, 99));
        assert_ne!(tag, mac([1, 3], 7, 99), "another session's secret");
        assert_ne!(tag, mac(secret, 8, 99), "another owner");
        assert_ne!(tag, mac(secret, 7, 98), "another socket");
    }
}
