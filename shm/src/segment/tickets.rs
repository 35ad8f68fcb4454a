//! Hand-over tickets: what makes a record on a socket worth a block.
//!
//! A record alone must never grant anything. It could be forged, or replayed: a peer that saw a
//! record sends it again. A receiver that took over a reference it was never given would free a
//! block that others still use. So before a sender hands a message to a socket, it writes a
//! *ticket* into its segment's ticket table. The ticket holds what the message is (its untracked
//! record: a block or a region piece) and a fresh random 64-bit nonce. The record on the wire
//! names only the ticket and the nonce.
//!
//! A receiver reads what the ticket describes and checks it like any record. It then claims the
//! ticket by swapping the nonce for 0 ([`Tickets::claim_as`]). A sender takes back a ticket the
//! same way ([`Tickets::claim`]), for example for a record that never left (a failed send). Only
//! one swap succeeds, and only once. A second claim of the same record fails and frees nothing, and
//! so does a claim of a ticket that was reused since.
//!
//! A ticket of kind [`Kind::Offer`] carries a lane's offer (see `lanes`). It moves no reference.
//! It only proves that the lane's writer made the offer, and that nobody claimed it before.
//!
//! A transport issues tickets from chunks of [`CHUNK`] tickets that it holds ([`Issuer`]). The
//! table starts with one owner word per chunk, padded to a cache line. An owner word holds the
//! owner mark of the transport that issues from the chunk, 0 while the chunk is free, or [`LEFT`]
//! when its issuer left with tickets of it still out. The tickets follow, one cache line each, so
//! a receiver that claims a ticket never shares its cache line with a sender that writes the next:
//!
//! | word ([`Ticket`] field) | content |
//! |---|---|
//! | 0 (`nonce`) | nonce; 0 while the ticket is free; [`CLAIMING`] \| the claimer's owner mark while a receiver claims it |
//! | 1 (`record[0]`) | kind (bits 0..7: 1 block, 2 region piece; bit 7: a lane offer), id << 16 (segment or region), aux << 32 (block: data distance; region: shared count's segment, and its data distance << 16) |
//! | 2 (`record[1]`) | offset |
//! | 3 (`record[2]`) | size |
//! | 4 (`record[3]`) | block: slot, and its generation << 32; region: the creator's hint |
//! | 5 (`record[4]`) | region: offset of the shared count's block ([`meta::NOT_SHARED`]: none) |
//! | 6 (`socket`) | the receiving socket's number (see `peers`), 0 while not known; with receiver [`FACING`], the issuing socket's number; with receiver [`AT_ENDPOINT`], the endpoint's directory key |
//! | 7 (`marks`) | issuer's owner mark, and the receiver mark << 32: 0 until the record is addressed, [`ELSEWHERE`] when the receiving transport is not known, else its owner mark, [`FACING`] or [`AT_ENDPOINT`] |
//!
//! An issue writes words 1..7 before word 0 (release), and a reader reads them after word 0
//! (acquire). A reader that then wins the swap knows that they were the words of its nonce: a
//! ticket is reused only once its word 0 went back to 0. [`Tickets::address`] fills in words 6 and
//! 7 afterwards, before the record is sent.

use crate::meta::{self, RcHandle, Record};
pub use crate::meta::{Kind, TicketError};
use crate::sys::layout::{shared_layout, view};
use std::hash::BuildHasher;
use std::mem::offset_of;
use std::sync::atomic::{AtomicU64, Ordering};

shared_layout! {
    /// One ticket, which fills one cache line (see the table in the module doc).
    pub(crate) struct Ticket {
        /// The nonce of the current issue. It is 0 while the ticket is free, and [`CLAIMING`]
        /// with the claimer's owner mark while a receiver claims the ticket.
        pub nonce: AtomicU64,
        /// The encoded record that the ticket hands over.
        pub record: [AtomicU64; 5],
        /// The receiving socket's number, or the issuing socket's, or an endpoint's directory key.
        pub socket: AtomicU64,
        /// The issuer's owner mark, and the receiving transport's owner mark << 32.
        pub marks: AtomicU64,
    }
}
const _: () = assert!(offset_of!(Ticket, record) == 8 && offset_of!(Ticket, socket) == 48);
const _: () = assert!(offset_of!(Ticket, marks) == 56 && size_of::<Ticket>() == 64);

/// Receiver mark of a ticket whose record went to a receiver whose transport is not known: for
/// example a peer that a socket connected to, or the peer of a pair, request or dealer socket.
pub const ELSEWHERE: u32 = u32::MAX;
/// Receiver mark of a ticket whose record went to one of the sockets facing its issuing socket in
/// the session's directory (see `directory`). Word 6 then holds the issuing socket's number.
pub const FACING: u32 = u32::MAX - 1;
/// Receiver mark of a ticket whose record went to whichever socket is bound at an endpoint. The
/// sender connected to that endpoint, and no live socket was listed there. Word 6 then holds the
/// endpoint's directory key.
pub const AT_ENDPOINT: u32 = u32::MAX - 2;

/// Owner word of a chunk whose issuer left the session while tickets of the chunk were still out.
/// No owner mark has this value. Nobody issues from such a chunk, and the orphan watch looks at
/// its tickets (see `orphans`). The chunk is taken again once all of its tickets are free.
///
/// A chunk given up with no ticket out becomes free (0) instead. Once a second, the orphan watch
/// looks ticket by ticket at every chunk that no live transport holds. It skips free chunks
/// without reading their tickets, and in a large segment the free chunks are almost the whole
/// table.
pub const LEFT: u32 = u32::MAX;

/// Whether a ticket's receiver mark names exactly one transport. It does not when the receiver is
/// not set yet, not known, or one of several.
pub fn names_one(receiver: u32) -> bool {
    receiver != 0 && receiver != ELSEWHERE && !names_several(receiver)
}

/// Whether a ticket's receiver mark names a set of sockets that may have it ([`FACING`],
/// [`AT_ENDPOINT`]).
pub fn names_several(receiver: u32) -> bool {
    receiver == FACING || receiver == AT_ENDPOINT
}
/// Word 0 of a ticket that a receiver is claiming holds this bit and the receiver's owner mark.
/// The word keeps that value until the receiver has marked the block as its own, and then becomes
/// 0. If the receiver is killed in between, the word stays, and the sweep of the dead finishes the
/// claim for the receiver (see `Tickets::claiming_by`).
pub const CLAIMING: u64 = 1 << 63;
/// An issuer gives back the chunks it does not use once every this many tickets it issues.
const GIVE_BACK_EVERY: u64 = 4096;
/// Tickets per chunk. A transport takes one chunk at a time for itself.
pub const CHUNK: u32 = 64;
const WORDS: usize = size_of::<Ticket>() / 8;
const KIND_BLOCK: u64 = 1;
const KIND_REGION: u64 = 2;
const OFFER_BIT: u64 = 0x80;

/// The number of tickets in a segment of `size` bytes: one per 8 KiB, between 512 and 2^18, in
/// whole chunks.
pub fn count_for(size: u64) -> u32 {
    (size / 8192).clamp(512, 1 << 18) as u32 / CHUNK * CHUNK
}

/// Bytes of the owner words of `n` tickets (whole cache lines).
const fn owner_bytes(n: u32) -> u64 {
    (n / CHUNK) as u64 * 8
}

/// Bytes the ticket table of a segment of `size` bytes takes (whole pages).
pub fn table_bytes(size: u64) -> u64 {
    let n = count_for(size);
    (owner_bytes(n).div_ceil(64) * 64 + u64::from(n) * WORDS as u64 * 8).div_ceil(4096) * 4096
}

/// The smallest table: 512 tickets (a segment below 4 MiB).
pub const MIN_TABLE_BYTES: u64 = 36 << 10;

/// A view of a segment's ticket table, from word `at` of `w`.
#[derive(Clone, Copy)]
pub struct Tickets<'a> {
    w: &'a [AtomicU64],
    owners: usize,
    first: usize,
    n: u32,
}

impl std::fmt::Debug for Tickets<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tickets").field("len", &self.n).finish()
    }
}

impl<'a> Tickets<'a> {
    /// The table of `n` tickets at word `at` of `w`. The segment's layout checked that the table
    /// lies inside `w`.
    pub fn new(w: &'a [AtomicU64], at: usize, n: u32) -> Self {
        let first = at + (owner_bytes(n).div_ceil(64) * 64 / 8) as usize;
        debug_assert!(first + n as usize * WORDS <= w.len());
        Tickets { w, owners: at, first, n }
    }

    /// How many tickets the table holds (`count_for` the segment's size).
    pub fn capacity(&self) -> u32 {
        self.n
    }

    /// Ticket `t`. The caller checked that `t` is below `n`.
    fn ticket(&self, t: u32) -> &'a Ticket {
        let at = self.first + t as usize * WORDS;
        view(&self.w[at..at + WORDS]).expect("a ticket's words")
    }

    /// Whether ticket `t` is free to issue.
    fn is_free(&self, t: u32) -> bool {
        self.ticket(t).nonce.load(Ordering::Acquire) == 0
    }

    /// Writes ticket `t` for `rec` and publishes `nonce`. The ticket must be free and in a chunk
    /// that the caller owns.
    fn write(&self, t: u32, nonce: u64, kind: Kind, rec: &Record, issuer: u32) {
        let offer = if kind == Kind::Offer { OFFER_BIT } else { 0 };
        let words = match *rec {
            Record::Block { segment, offset, delta, size, slot, generation } => [
                KIND_BLOCK | offer | u64::from(segment) << 16 | u64::from(delta) << 32,
                offset,
                size,
                u64::from(slot) | u64::from(generation) << 32,
                0,
            ],
            Record::Region { region, offset, size, hint, rc } => {
                let (rc_seg, rc_delta, rc_off) =
                    rc.map_or((0, 0, meta::NOT_SHARED), |h| (h.segment, h.delta, h.offset));
                let aux = u64::from(rc_seg) | u64::from(rc_delta) << 16;
                [KIND_REGION | offer | u64::from(region) << 16 | aux << 32, offset, size, hint, rc_off]
            }
            Record::Empty | Record::Handed { .. } => unreachable!("only blocks and region pieces get tickets"),
        };
        let ticket = self.ticket(t);
        for (word, v) in ticket.record.iter().zip(words) {
            word.store(v, Ordering::Relaxed);
        }
        ticket.socket.store(0, Ordering::Relaxed);
        ticket.marks.store(u64::from(issuer), Ordering::Relaxed);
        ticket.nonce.store(nonce, Ordering::Release);
    }

    /// What ticket `t` hands over, if `nonce` is its current nonce. This does not claim the
    /// ticket: see [`Tickets::claim`].
    pub fn resolve(&self, t: u32, nonce: u64) -> Result<(Kind, Record), TicketError> {
        if t >= self.n {
            return Err(TicketError::OutOfRange(t));
        }
        if nonce == 0 || self.ticket(t).nonce.load(Ordering::Acquire) != nonce {
            return Err(TicketError::NotIssued(t));
        }
        let record = &self.ticket(t).record;
        let w = |i: usize| record[i].load(Ordering::Relaxed);
        let head = w(0);
        let kind = if head & OFFER_BIT != 0 { Kind::Offer } else { Kind::Message };
        let id = (head >> 16) as u16;
        let aux = (head >> 32) as u32;
        let rec = match head & 0x7f {
            KIND_BLOCK if head & 0xff00 == 0 => {
                let (slot, generation) = (w(3) as u32, (w(3) >> 32) as u32);
                Record::Block { segment: id, offset: w(1), delta: aux, size: w(2), slot, generation }
            }
            KIND_REGION if head & 0xff00 == 0 => {
                let rc = (w(4) != meta::NOT_SHARED).then(|| RcHandle {
                    segment: aux as u16,
                    delta: (aux >> 16) as u16,
                    offset: w(4),
                });
                Record::Region { region: id, offset: w(1), size: w(2), hint: w(3), rc }
            }
            _ => return Err(TicketError::Damaged(t)),
        };
        Ok((kind, rec))
    }

    /// Names the receiver of ticket `t`, which is issued and whose record is not sent yet. The
    /// receiver is the transport with owner mark `owner`, and its socket numbered `socket`. An
    /// `owner` of 0 means a transport not known, and is stored as [`ELSEWHERE`]. Every record is
    /// addressed before it is sent, so a ticket with no receiver never left its issuer.
    pub fn address(&self, t: u32, owner: u32, socket: u64) {
        let owner = if owner == 0 { ELSEWHERE } else { owner };
        let ticket = self.ticket(t);
        let issuer = ticket.marks.load(Ordering::Relaxed) & 0xffff_ffff;
        ticket.socket.store(socket, Ordering::Relaxed);
        ticket.marks.store(issuer | u64::from(owner) << 32, Ordering::Relaxed);
    }

    /// The owner mark of the transport that issued ticket `t`, while it is out with `nonce`.
    pub fn issuer(&self, t: u32, nonce: u64) -> Option<u32> {
        if !self.issued(t, nonce) {
            return None;
        }
        let issuer = self.ticket(t).marks.load(Ordering::Relaxed) as u32;
        // Check that the issue is still the same, so that the word read was not that of a ticket
        // reused meanwhile.
        self.issued(t, nonce).then_some(issuer)
    }

    /// The receiver mark of ticket `t` (see [`Tickets::address`]), while it is out with `nonce`.
    pub fn receiver(&self, t: u32, nonce: u64) -> Option<u32> {
        if !self.issued(t, nonce) {
            return None;
        }
        let receiver = (self.ticket(t).marks.load(Ordering::Relaxed) >> 32) as u32;
        self.issued(t, nonce).then_some(receiver)
    }

    /// Whether ticket `t` is still out with `nonce` (not claimed, not taken back).
    pub fn issued(&self, t: u32, nonce: u64) -> bool {
        t < self.n && nonce != 0 && self.ticket(t).nonce.load(Ordering::Acquire) == nonce
    }

    /// The tickets out now in the chunks whose owner word `chunks` accepts (0: no owner), with
    /// their issuer, receiver and receiving socket: `(ticket, nonce, issuer, receiver, socket)`.
    pub fn out_in_chunks(&self, mut chunks: impl FnMut(u32) -> bool) -> Vec<(u32, u64, u32, u32, u64)> {
        (0..self.n / CHUNK)
            .filter(|&c| chunks(self.w[self.owners + c as usize].load(Ordering::Acquire) as u32))
            .flat_map(|c| c * CHUNK..(c + 1) * CHUNK)
            .filter_map(|t| {
                let ticket = self.ticket(t);
                let nonce = ticket.nonce.load(Ordering::Acquire);
                let marks = ticket.marks.load(Ordering::Relaxed);
                let socket = ticket.socket.load(Ordering::Relaxed);
                // Skip a claim under way: its receiver finishes it, or the sweep does once the
                // receiver died.
                (nonce != 0 && nonce & CLAIMING == 0).then_some((t, nonce, marks as u32, (marks >> 32) as u32, socket))
            })
            .collect()
    }

    /// Claims ticket `t`. Returns true for exactly one caller per issue: a receiver, or the sender
    /// that takes the ticket back. That caller then owns what the ticket hands over.
    pub fn claim(&self, t: u32, nonce: u64) -> bool {
        t < self.n
            && nonce != 0
            && self.ticket(t).nonce.compare_exchange(nonce, 0, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }

    /// Starts a receiver's claim of ticket `t` (see [`CLAIMING`]). Like [`Tickets::claim`], this
    /// returns true for exactly one caller per issue. The receiver then marks the block as its own
    /// and calls [`Tickets::claimed`].
    pub fn claim_as(&self, t: u32, nonce: u64, owner: u32) -> bool {
        t < self.n
            && nonce != 0
            && nonce & CLAIMING == 0
            && self
                .ticket(t)
                .nonce
                .compare_exchange(nonce, CLAIMING | u64::from(owner), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    /// Ends `owner`'s claim of ticket `t`, once `owner` has marked the block as its own. The
    /// ticket becomes free.
    pub fn claimed(&self, t: u32, owner: u32) {
        if t < self.n {
            let _ = self.ticket(t).nonce.compare_exchange(
                CLAIMING | u64::from(owner),
                0,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
    }

    /// Tickets that one of `owners` was claiming: `(ticket, word 0, claimer)`.
    pub fn claiming_by(&self, owners: &[u32]) -> Vec<(u32, u64, u32)> {
        (0..self.n)
            .filter_map(|t| {
                let w = self.ticket(t).nonce.load(Ordering::Acquire);
                let claimer = w as u32;
                (w & CLAIMING != 0 && owners.contains(&claimer)).then_some((t, w, claimer))
            })
            .collect()
    }

    /// Tickets whose claim is under way (any claimer): `(ticket, word)`.
    pub fn claiming_all(&self) -> Vec<(u32, u64)> {
        (0..self.n)
            .filter_map(|t| {
                let w = self.ticket(t).nonce.load(Ordering::Acquire);
                (w & CLAIMING != 0).then_some((t, w))
            })
            .collect()
    }

    /// Tickets issued and not yet claimed.
    #[cfg(any(test, feature = "testing"))]
    pub fn outstanding(&self) -> u32 {
        (0..self.n).filter(|&t| !self.is_free(t)).count() as u32
    }

    /// Takes a chunk for `owner`: a free chunk, else a chunk whose owner `alive` says is gone.
    /// Returns `None` when there is none. Only a chunk with no ticket out is taken, because the
    /// tickets that a gone issuer left out are found by their chunk's owner (see `orphans`) until
    /// they are claimed or released.
    fn take_chunk(&self, owner: u32, alive: &dyn Fn(u32) -> bool) -> Option<u32> {
        let chunks = self.n / CHUNK;
        let mut alive = remembered(alive);
        for free_only in [true, false] {
            for c in 0..chunks {
                let w = &self.w[self.owners + c as usize];
                let held = w.load(Ordering::Acquire);
                let gone = held as u32 == LEFT || !alive(held as u32);
                if (free_only && held != 0) || (!free_only && (held == 0 || !gone)) {
                    continue;
                }
                if !(c * CHUNK..(c + 1) * CHUNK).all(|t| self.is_free(t)) {
                    continue;
                }
                if w.compare_exchange(held, u64::from(owner), Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                    return Some(c);
                }
            }
        }
        None
    }

    /// Gives chunk `c` up, if `owner` still holds it. The chunk becomes free when none of its
    /// tickets is out, else [`LEFT`].
    fn release_chunk(&self, c: u32, owner: u32) {
        let out = !(c * CHUNK..(c + 1) * CHUNK).all(|t| self.is_free(t));
        let to = if out { u64::from(LEFT) } else { 0 };
        let _ = self.w[self.owners + c as usize].compare_exchange(
            u64::from(owner),
            to,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// Forgets every ticket and every chunk owner. The heap was formatted, so nothing that they
    /// name exists any more.
    pub fn clear(&self) {
        for c in 0..self.n / CHUNK {
            self.w[self.owners + c as usize].store(0, Ordering::Relaxed);
        }
        for t in 0..self.n {
            self.ticket(t).nonce.store(0, Ordering::Release);
        }
    }
}

/// A ticket as a record names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Issued {
    /// The segment whose table holds it.
    pub segment: u16,
    /// The ticket's index in the table.
    pub ticket: u32,
    /// The ticket's nonce.
    pub nonce: u64,
}

impl Issued {
    /// The record that travels on the socket.
    pub fn record(&self) -> Record {
        Record::Handed { segment: self.segment, ticket: self.ticket, nonce: self.nonce }
    }
}

/// Issues one transport's tickets from its segment's table. An `Issuer` holds the transport's
/// chunks, where to look for a free ticket next, and the key of its nonces.
pub(crate) struct Issuer {
    owner: u32,
    chunks: Vec<u32>,
    next: usize,
    /// `None` means SipHash's fixed key, used only for reproducible fuzz seeds.
    key: Option<std::collections::hash_map::RandomState>,
    counter: u64,
}

impl Issuer {
    pub(crate) fn new(owner: u32) -> Issuer {
        Issuer { owner, chunks: Vec::new(), next: 0, key: Some(Default::default()), counter: 0 }
    }

    /// An issuer whose nonces are the same in every run, because the fuzz fixture's seeds name
    /// them.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn reproducible(owner: u32) -> Issuer {
        Issuer { key: None, ..Issuer::new(owner) }
    }

    /// An unpredictable non-zero nonce: a keyed hash (SipHash, with a random key per issuer) of a
    /// counter. A peer that saw every earlier nonce therefore cannot predict the next.
    fn nonce(&mut self) -> u64 {
        loop {
            self.counter += 1;
            let n = match &self.key {
                Some(k) => k.hash_one(self.counter),
                None => std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                    .hash_one(self.counter),
            };
            // Nonces never have the bit that marks a claim under way (see `Tickets::claim_as`).
            let n = n & !CLAIMING;
            if n != 0 {
                return n;
            }
        }
    }

    /// Issues a ticket of `table` (in segment `segment`) for `rec`. Returns `None` when every
    /// ticket this transport can get is out.
    pub(crate) fn issue(
        &mut self,
        table: &Tickets<'_>,
        segment: u16,
        kind: Kind,
        rec: &Record,
        alive: &dyn Fn(u32) -> bool,
    ) -> Option<Issued> {
        let ticket = self.free_ticket(table, alive)?;
        let nonce = self.nonce();
        table.write(ticket, nonce, kind, rec, self.owner);
        if self.counter % GIVE_BACK_EVERY == 0 {
            self.give_back_idle(table, ticket / CHUNK);
        }
        Some(Issued { segment, ticket, nonce })
    }

    /// Gives back every chunk with no ticket out, except the chunk in use (`current`). Otherwise a
    /// burst would keep the table from the session's other transports for good.
    fn give_back_idle(&mut self, table: &Tickets<'_>, current: u32) {
        let before = self.chunks.len();
        self.chunks.retain(|&c| {
            let idle = c != current && (c * CHUNK..(c + 1) * CHUNK).all(|t| table.is_free(t));
            if idle {
                table.release_chunk(c, self.owner);
            }
            !idle
        });
        if self.chunks.len() != before {
            // The positions of the held tickets changed, so resume the search at the chunk in use.
            let at = self.chunks.iter().position(|&c| c == current).unwrap_or(0);
            self.next = at * CHUNK as usize;
        }
    }

    /// Finds a free ticket in our chunks. The search goes on from where the last one was found,
    /// because tickets come back in about the order they went out. When all of our tickets are
    /// out, `Issuer::free_ticket` takes a new chunk.
    fn free_ticket(&mut self, table: &Tickets<'_>, alive: &dyn Fn(u32) -> bool) -> Option<u32> {
        let held = self.chunks.len() * CHUNK as usize;
        for k in 0..held {
            let i = (self.next + k) % held;
            let t = self.chunks[i / CHUNK as usize] * CHUNK + (i % CHUNK as usize) as u32;
            if table.is_free(t) {
                self.next = i + 1;
                return Some(t);
            }
        }
        let c = table.take_chunk(self.owner, alive)?;
        self.chunks.push(c);
        let first = held;
        for i in first..first + CHUNK as usize {
            let t = c * CHUNK + (i - first) as u32;
            if table.is_free(t) {
                self.next = i + 1;
                return Some(t);
            }
        }
        None
    }

    /// Gives every chunk up when the transport leaves. Tickets still out stay claimable.
    pub(crate) fn release(&mut self, table: &Tickets<'_>) {
        for c in self.chunks.drain(..) {
            table.release_chunk(c, self.owner);
        }
    }
}

/// `alive`, asked only once per owner mark. A lookup tries locks, and scans of many tickets ask
/// often.
pub(crate) fn remembered(alive: impl Fn(u32) -> bool) -> impl FnMut(u32) -> bool {
    let mut known: Vec<(u32, bool)> = Vec::new();
    move |owner| match known.iter().find(|k| k.0 == owner) {
        Some(&(_, a)) => a,
        None => {
            let a = alive(owner);
            known.push((owner, a));
            a
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(n: u32) -> Vec<AtomicU64> {
        (0..(owner_bytes(n).div_ceil(64) * 8 + u64::from(n) * WORDS as u64) as usize)
            .map(|_| AtomicU64::new(0))
            .collect()
    }

    fn block() -> Record {
        Record::Block { segment: 3, offset: 4096, delta: 32, size: 100, slot: 7, generation: 9 }
    }

    #[test]
    fn a_ticket_is_claimed_once_and_describes_its_record() {
        let w = table(128);
        let t = Tickets::new(&w, 0, 128);
        let mut issuer = Issuer::new(5);
        let alive = |_| true;
        let a = issuer.issue(&t, 0, Kind::Message, &block(), &alive).unwrap();
        assert_eq!(t.resolve(a.ticket, a.nonce), Ok((Kind::Message, block())));
        assert_eq!(t.resolve(a.ticket, a.nonce ^ 1), Err(TicketError::NotIssued(a.ticket)), "a forged nonce");
        assert!(t.claim(a.ticket, a.nonce));
        assert!(!t.claim(a.ticket, a.nonce), "a repeated record claims nothing");
        assert_eq!(t.resolve(a.ticket, a.nonce), Err(TicketError::NotIssued(a.ticket)));
        assert_eq!(t.resolve(999, 1), Err(TicketError::OutOfRange(999)));
        let region = Record::Region {
            region: 9,
            offset: 8,
            size: 16,
            hint: 77,
            rc: Some(RcHandle { segment: 2, offset: 1 << 20, delta: 32 }),
        };
        let b = issuer.issue(&t, 0, Kind::Offer, &region, &alive).unwrap();
        assert_ne!(a.nonce, b.nonce);
        assert_eq!(t.resolve(b.ticket, b.nonce), Ok((Kind::Offer, region)));
        let plain = Record::Region { region: 9, offset: 8, size: 16, hint: 77, rc: None };
        let c = issuer.issue(&t, 0, Kind::Message, &plain, &alive).unwrap();
        assert_eq!(t.resolve(c.ticket, c.nonce), Ok((Kind::Message, plain)));
        assert_eq!(t.outstanding(), 2);
    }

    #[test]
    fn issuers_take_chunks_of_their_own_and_those_of_the_dead() {
        let w = table(128);
        let t = Tickets::new(&w, 0, 128);
        let (mut a, mut b, mut c) = (Issuer::new(1), Issuer::new(2), Issuer::new(3));
        let alive = |o: u32| o != 1;
        let mut out = Vec::new();
        for _ in 0..64 {
            out.push(a.issue(&t, 0, Kind::Message, &block(), &|_| true).unwrap());
        }
        assert!(out.iter().all(|i| i.ticket < 64), "one chunk");
        let from_b = b.issue(&t, 0, Kind::Message, &block(), &alive).unwrap();
        assert!(from_b.ticket >= 64, "the other chunk");
        // Every chunk is held. The chunk of the dead issuer 1 is taken only once none of its
        // tickets is out, because its owner mark is how its tickets out are found.
        assert!(c.issue(&t, 0, Kind::Message, &block(), &alive).is_none());
        assert!(t.claim(out[10].ticket, out[10].nonce));
        assert!(c.issue(&t, 0, Kind::Message, &block(), &alive).is_none(), "63 tickets still out");
        assert!(t.resolve(out[11].ticket, out[11].nonce).is_ok(), "the dead one's tickets stay claimable");
        for i in out.iter().filter(|i| i.ticket != out[10].ticket) {
            assert!(t.claim(i.ticket, i.nonce));
        }
        let from_c = c.issue(&t, 0, Kind::Message, &block(), &alive).unwrap();
        assert!(from_c.ticket < 64, "the dead one's chunk, all of its tickets back");
        // Ticket reuse: a claimed ticket of our own is found again.
        assert!(t.claim(from_b.ticket, from_b.nonce));
        let again = b.issue(&t, 0, Kind::Message, &block(), &alive).unwrap();
        assert!(again.ticket >= 64);
        b.release(&t);
        assert_eq!(w[1].load(Ordering::Relaxed), u64::from(LEFT), "b left with a ticket out: its chunk says so");
        let mut d = Issuer::new(4);
        assert!(d.issue(&t, 0, Kind::Message, &block(), &alive).is_none(), "not while that ticket is out");
        assert!(t.claim(again.ticket, again.nonce));
        let from_d = d.issue(&t, 0, Kind::Message, &block(), &alive).unwrap();
        assert!(from_d.ticket >= 64, "taken again once its tickets are back");
        assert!(t.claim(from_d.ticket, from_d.nonce));
        d.release(&t);
        assert_eq!(w[1].load(Ordering::Relaxed), 0, "given up with no ticket out: free");
    }

    #[test]
    fn an_issuer_gives_back_the_chunks_a_burst_took() {
        let w = table(256);
        let t = Tickets::new(&w, 0, 256);
        let mut a = Issuer::new(1);
        let burst: Vec<Issued> =
            (0..200).map(|_| a.issue(&t, 0, Kind::Message, &block(), &|_| true).unwrap()).collect();
        assert_eq!(a.chunks.len(), 4, "the burst took every chunk");
        let mut b = Issuer::new(2);
        assert!(b.issue(&t, 0, Kind::Message, &block(), &|_| true).is_none(), "nothing left for another");
        for i in &burst {
            assert!(t.claim(i.ticket, i.nonce));
        }
        // As `a` issues on, its idle chunks go back at the next round of giving back.
        while a.counter % GIVE_BACK_EVERY != 0 {
            let i = a.issue(&t, 0, Kind::Message, &block(), &|_| true).unwrap();
            assert!(t.claim(i.ticket, i.nonce));
        }
        assert_eq!(a.chunks.len(), 1, "only the chunk in use is kept");
        assert!(b.issue(&t, 0, Kind::Message, &block(), &|_| true).is_some(), "another transport gets one");
    }

    #[test]
    fn damaged_tickets_are_refused() {
        let w = table(64);
        let t = Tickets::new(&w, 0, 64);
        let first = (owner_bytes(64).div_ceil(64) * 8) as usize;
        w[first].store(42, Ordering::Relaxed);
        for head in [0u64, 3, 0x7f, KIND_BLOCK | 0x100] {
            w[first + 1].store(head, Ordering::Relaxed);
            assert_eq!(t.resolve(0, 42), Err(TicketError::Damaged(0)), "head {head:#x}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(count_for(150_000), 512);
        assert_eq!(count_for(64 << 20), 8192);
        assert_eq!(count_for(2 << 30), 1 << 18);
        assert_eq!(table_bytes(150_000), MIN_TABLE_BYTES);
        assert!(table_bytes(2 << 30) <= 17 << 20);
    }
}
