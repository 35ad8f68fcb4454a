//! The lanes of one socket: the lane it writes (when it has a single peer) and the lanes it reads.
//!
//! Life of a lane: the writer allocates it in its segment and offers it in a frame on the socket
//! (again if nobody claims it for a while: an offer sent as the peer went away is lost with the
//! connection). An offer hands over no reference: the reader that claims the lane takes a
//! reference of its own. Each side drops its reference when it is done, the last one frees the
//! block; a writer that leaves before any claim leaves its reference to the first claimant. Each
//! side lists its reference in its transport's ledger (see `ledger`): the reference of a side that
//! dies is dropped by the sweep that counts it out, never by the other side (which only asks for
//! that sweep), so it is dropped once, and the sweep that drops the last one releases what the lane
//! still holds. A dead writer's reference to a lane nobody claimed yet goes to its first claimant,
//! or to whoever releases the offer nobody will claim (see `orphans`).
//!
//! Nothing sent is dropped because a lane ends: when the reader closes its end (or dies), the
//! writer takes back what it did not read and sends it again first, on a new lane to whichever
//! peer the socket has then. When the writer closes, the reader still reads what is there; when
//! both close, the second one releases what is left (as ZeroMQ drops a closed socket's queue).

use crate::error::ShmError;
use crate::meta::{self, Record};
use crate::segment::ring::{self, Claim, LaneError, Ring, KIND_FRAME, KIND_INDIRECT, READER_CLOSED, WRITER_CLOSED};
use crate::segment::tickets::{Issued, Kind};
use crate::transport::attachment::Attachment;
use crate::transport::message::{Message, Source};
use fairmq_zmq::TransferError;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Smallest ring of a lane: about 1600 single-message entries, more than ZeroMQ's default send
/// queue (1000) holds.
const CAPACITY: u64 = 64 << 10;
/// Bytes of an entry holding one single-message record.
const SINGLE_ENTRY: u64 = 8 + (meta::BLOCK_LEN as u64).div_ceil(8) * 8;

/// Ring bytes of a lane for a socket whose send queue holds `hwm` messages (ZeroMQ's SNDHWM): room
/// for at least that many records, as the socket would queue, at least [`CAPACITY`], and beyond
/// that no more than a sixty-fourth of the segment the lane lives in. No limit (0) gets
/// [`UNLIMITED`]: a lane cannot grow, and each one stays in the segment as long as its socket.
fn capacity_for(hwm: i32, segment: u64) -> u64 {
    let wanted = match u64::try_from(hwm) {
        Ok(n) if n > 0 => n.saturating_mul(SINGLE_ENTRY).checked_next_power_of_two().unwrap_or(u64::MAX),
        _ => UNLIMITED,
    };
    let share = match segment / 64 {
        0 => 0,
        n => 1 << n.ilog2(),
    };
    wanted.min(share).clamp(CAPACITY, ring::MAX_CAPACITY)
}

/// Whether a segment of `size` bytes takes lanes: the smallest lane may use at most an eighth of
/// it (in a smaller segment the lane would crowd out the messages, or not fit at all: records then
/// travel through the socket).
pub(crate) fn fits_segment(size: u64) -> bool {
    ring::block_bytes(CAPACITY) <= size / 8
}

/// Ring bytes of a lane for a socket without a send-queue limit: about 26 000 records.
const UNLIMITED: u64 = 1 << 20;
/// How long a reader with empty lanes looks again before it sleeps: a wake costs two system calls
/// and a ZeroMQ message, what the lane saves; a writer busy on another processor usually comes back
/// sooner. (A writer with a full ring does not spin: see `Writer::push`.)
const SPIN: Duration = Duration::from_micros(40);
/// Longest futex sleep of a writer waiting for room, so it notices interruption and a dead reader
/// (and room short of the low-water mark, when its reader stopped reading before it).
const WAIT_SLICE: Duration = Duration::from_millis(5);
/// How long a lane may stay unclaimed before it is offered again (ZeroMQ reconnects every 100 ms).
const REOFFER: Duration = Duration::from_millis(250);
/// How often a sleeping reader checks that the writers of its idle lanes still live.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// An entry taken out of a lane: its kind and frame.
type Taken = (u32, Vec<u8>);

/// When a transfer must end, from its timeout (-1 for ever, 0 no wait, N ms).
#[derive(Clone, Copy)]
pub(crate) enum Deadline {
    Now,
    Never,
    At(Instant),
}

impl Deadline {
    pub(crate) fn new(timeout_ms: i32) -> Deadline {
        match timeout_ms {
            0 => Deadline::Now,
            t if t < 0 => Deadline::Never,
            t => Deadline::At(Instant::now() + Duration::from_millis(t as u64)),
        }
    }

    pub(crate) fn passed(&self) -> bool {
        match self {
            Deadline::Now => true,
            Deadline::Never => false,
            Deadline::At(d) => Instant::now() >= *d,
        }
    }

    /// What is left, as a ZeroMQ timeout (-1: for ever, 0: passed).
    pub(crate) fn ms_left(&self) -> i32 {
        match self {
            Deadline::Now => 0,
            Deadline::Never => -1,
            Deadline::At(d) => fairmq_zmq::ms_until(*d).map_or(0, |ms| i32::try_from(ms).unwrap_or(i32::MAX)),
        }
    }

    fn slice(&self) -> Duration {
        match self {
            Deadline::At(d) => d.saturating_duration_since(Instant::now()).min(WAIT_SLICE),
            _ => WAIT_SLICE,
        }
    }
}

struct LaneBlock {
    block: Message,
    capacity: u64,
}

impl LaneBlock {
    fn ring(&self) -> Ring<'_> {
        Ring::reopen(self.block.words().expect("a lane block is whole words"), self.capacity)
    }
}

/// Frees the blocks of a metadata frame nobody will receive: its messages are dropped (the records
/// are checked, and their tickets claimed, like received ones). Returns how many.
pub(crate) fn release_frame(mgr: &Arc<Attachment>, frame: &[u8], source: Source) -> usize {
    let mut records = Vec::new();
    let _ = meta::decode(frame, &mut records);
    records.into_iter().filter_map(|r| Message::receive(mgr, r, source).ok()).count()
}

/// A ticket for `rec`, waiting within `deadline` while every ticket this transport can get is out
/// (its peers give them back as they receive); interruption ends the wait.
pub(crate) fn issue_waiting(
    mgr: &Attachment,
    kind: Kind,
    rec: &Record,
    deadline: Deadline,
) -> Result<Issued, TransferError> {
    let mut warned = false;
    loop {
        if let Some(t) = mgr.issue(kind, rec) {
            return Ok(t);
        }
        if mgr.interrupted() {
            return Err(TransferError::Interrupted);
        }
        if deadline.passed() {
            return Err(TransferError::Timeout);
        }
        if !warned {
            log::warn!("every hand-over ticket of this transport is out (are its peers receiving?); waiting");
            warned = true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Which records of lane entries [`release_entries`] releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Whose {
    /// All: entries a writer took back (marked its own again as they left the ring).
    Ours,
    /// Those the ring still accounts for: a block in flight or shared, a region piece. A block
    /// marked by a holder is that holder's: a reader marks what it takes before it leaves the ring
    /// (see `Readers::take`), a writer what it takes back; killed in between, the entry stays in
    /// the ring and the sweep of the dead frees the block by its mark.
    Ring,
}

/// [`release_frame`] for lane entries: an indirect entry's frame is in the block it names, which
/// goes too.
fn release_entries(mgr: &Arc<Attachment>, entries: impl IntoIterator<Item = Taken>, whose: Whose) -> usize {
    let mut holders = Vec::new();
    let mut dropped = 0;
    for (kind, frame) in entries {
        if kind != KIND_INDIRECT {
            dropped += release_records(mgr, &frame, whose);
            continue;
        }
        holders.clear();
        let _ = meta::decode(&frame, &mut holders);
        for holder in
            holders.drain(..).filter(|r| accounted(mgr, r, whose)).filter_map(|r| Message::from_record(mgr, r).ok())
        {
            dropped += release_records(mgr, holder.data(), whose);
        }
    }
    dropped
}

fn release_records(mgr: &Arc<Attachment>, frame: &[u8], whose: Whose) -> usize {
    let mut records = Vec::new();
    let _ = meta::decode(frame, &mut records);
    records
        .into_iter()
        .filter(|r| accounted(mgr, r, whose))
        .filter_map(|r| Message::receive(mgr, r, Source::Lane).ok())
        .count()
}

/// Whether `rec`, from a lane entry, is for the releaser of `whose` to release.
fn accounted(mgr: &Attachment, rec: &Record, whose: Whose) -> bool {
    whose == Whose::Ours || !matches!(rec, Record::Block { .. }) || held(mgr, rec) != Held::Otherwise
}

/// The blocks an entry of `kind` names, into `records` (cleared first): the block holding an
/// indirect frame first, then the parts. False when the entry cannot be read.
fn entry_blocks(mgr: &Arc<Attachment>, kind: u32, entry: &[u8], records: &mut Vec<Record>) -> bool {
    records.clear();
    if meta::decode(entry, records).is_err() {
        return false;
    }
    if kind != KIND_INDIRECT {
        return true;
    }
    let [holder] = records[..] else { return false };
    let Ok(mut h) = Message::from_record(mgr, holder) else { return false };
    let read = meta::decode(h.data(), records);
    h.hand_over(); // only read: its reference stays where it was
    read.is_ok()
}

/// Changes the holder mark of the blocks of a lane entry from `from` to `to` (those with one
/// reference): in flight when a writer stages it, its own again when it takes it back or a reader
/// takes it. The block holding an indirect frame goes in flight first and comes back last: a
/// reader finishing a dead writer's entry reads the parts through it.
fn remark_entry(mgr: &Arc<Attachment>, kind: u32, entry: &[u8], from: u32, to: u32) {
    remark_entry_with(mgr, kind, entry, from, to, &mut Vec::new());
}

/// [`remark_entry`] with the caller's buffer for the records (a reader's: no allocation per entry).
fn remark_entry_with(mgr: &Arc<Attachment>, kind: u32, entry: &[u8], from: u32, to: u32, blocks: &mut Vec<Record>) {
    if !entry_blocks(mgr, kind, entry, blocks) {
        return;
    }
    if to == crate::segment::slots::IN_FLIGHT {
        blocks.iter().for_each(|r| mgr.remark(r, from, to));
    } else {
        blocks.iter().rev().for_each(|r| mgr.remark(r, from, to));
    }
}

/// Writer: takes every entry out of `ring` (its reader left) into `out`, each marked its own again
/// before it leaves the ring: killed at any moment, the writer leaves blocks that the ring or its
/// own mark accounts for (the sweep of the dead frees the latter).
fn take_back_all(mgr: &Arc<Attachment>, ring: &Ring<'_>, out: &mut Vec<Taken>) -> Result<(), LaneError> {
    while let Some(e) = ring.peek()? {
        let mut bytes = Vec::new();
        ring.read(&e, &mut bytes);
        remark_entry(mgr, e.kind, &bytes, crate::segment::slots::IN_FLIGHT, mgr.owner());
        ring.consume(&e);
        out.push((e.kind, bytes));
    }
    Ok(())
}

/// Releases what a lane whose writer is gone holds, as a reader would that claims it and closes at
/// once: its offer's ticket was just claimed by the caller (see `orphans`), so no reader will.
/// `block` is the lane's block, with a reference of the caller's own (taken before the claim, see
/// `Message::claim_offer`). The dead writer's reference is dropped by the sweep that counts it out
/// (or was handed to us, the first claimant).
pub(crate) fn release_unclaimed(mgr: &Arc<Attachment>, block: Message) {
    let opened = block.words().ok_or(LaneError::Header).and_then(Ring::open).map(|r| (r.writer(), r.capacity()));
    let capacity = match opened {
        Ok((writer, capacity)) if !mgr.owner_alive(writer) => capacity,
        // Its writer lives: its own to offer again (our reference goes with `block`).
        Ok(_) => return,
        Err(e) => {
            log::error!("the lane of an offer nobody took is damaged, its messages are lost: {e}");
            return;
        }
    };
    let lane = LaneBlock { block, capacity };
    let ring = lane.ring();
    match ring.claim(mgr.owner()) {
        Claim::Orphaned => lane.block.drop_reference(), // the writer's, handed to us
        Claim::Fresh => {}
        Claim::Taken => return, // a reader has it (an earlier offer): ours goes back
    }
    ring.close(READER_CLOSED);
    let n = release_contents(mgr, &ring);
    if n > 0 {
        log::warn!("released {n} messages a writer that is gone left in a lane nobody took");
    }
    drop(lane);
    mgr.sweep_dead(); // the dead writer's reference, if it was not handed to us
}

/// Releases what a lane holds that nobody will read (its last holder leaves, or nobody claimed
/// it): a dead writer's staged entry, then every entry. Returns how many messages were released.
pub(crate) fn release_contents(mgr: &Arc<Attachment>, ring: &Ring<'_>) -> usize {
    finish_staged(mgr, ring);
    let mut left = Vec::new();
    if let Err(e) = ring.take_all(&mut left) {
        log::error!("a lane nobody reads any more is damaged, some of its messages are lost: {e}");
    }
    release_entries(mgr, left, Whose::Ring)
}

/// How a block named in a dead writer's staged entry is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Not a block (a region piece, an empty part): nothing to mark.
    NoBlock,
    /// Marked in flight: the writer handed it over.
    InFlight,
    /// Shared: no holder is named, nobody frees it by a mark.
    Shared,
    /// Still its writer's, or freed since, or not a block at all: not to be handed on.
    Otherwise,
}

fn held(mgr: &Attachment, rec: &Record) -> Held {
    let Record::Block { segment, offset, delta, size, slot } = *rec else {
        return if matches!(rec, Record::Handed { .. }) { Held::Otherwise } else { Held::NoBlock };
    };
    let Ok(seg) = mgr.segment(segment) else { return Held::Otherwise };
    if seg.check_block(offset, delta, size, slot).is_err() {
        return Held::Otherwise;
    }
    let v = seg.rc(offset, slot).load(std::sync::atomic::Ordering::Acquire);
    match ((v >> 32) as u32, v as u32) {
        (crate::segment::slots::IN_FLIGHT, 1) => Held::InFlight,
        (crate::segment::slots::SHARED, n) if n > 0 => Held::Shared,
        _ => Held::Otherwise,
    }
}

/// Finishes the entry a dead writer staged and never published (see `Ring::push`). When it had
/// marked every block of it in flight, the entry is published and read like any other (true);
/// when it was killed before or while marking, what it marked is released here and the rest,
/// still marked its own, is freed by the sweep of the dead.
fn finish_staged(mgr: &Arc<Attachment>, ring: &Ring<'_>) -> bool {
    let e = match ring.staged() {
        Ok(Some(e)) => e,
        Ok(None) => return false,
        Err(err) => {
            log::error!("a dead writer's staged lane entry: {err}");
            return false;
        }
    };
    let mut entry = Vec::new();
    ring.read(&e, &mut entry);
    let mut records = Vec::new();
    if meta::decode(&entry, &mut records).is_err() {
        return false;
    }
    let mut parts = Vec::new();
    if e.kind == KIND_INDIRECT {
        // The block holding the frame is marked before the parts: not in flight, nothing is.
        let [holder] = records[..] else { return false };
        if held(mgr, &holder) != Held::InFlight {
            return false;
        }
        let Ok(mut h) = Message::from_record(mgr, holder) else { return false };
        let read = meta::decode(h.data(), &mut parts);
        h.hand_over(); // only read: its reference stays in flight
        if read.is_err() {
            return false;
        }
    } else {
        parts.clone_from(&records);
    }
    if parts.iter().all(|r| held(mgr, r) != Held::Otherwise) {
        ring.publish_staged(&e);
        return true;
    }
    let marked = parts.iter().chain(if e.kind == KIND_INDIRECT { &records[..] } else { &[] });
    for r in marked.filter(|r| held(mgr, r) == Held::InFlight) {
        mgr.remark(r, crate::segment::slots::IN_FLIGHT, mgr.owner());
        if let Ok(m) = Message::from_record(mgr, *r) {
            drop(m);
        }
    }
    false
}

/// Looks at `ready` until it holds (true) or `SPIN` passed (false).
fn spin_until(mut ready: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + SPIN;
    loop {
        if ready() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::hint::spin_loop();
    }
}

/// Turns a frame for the lane into an entry: frames too large for the ring travel in a block of
/// their own whose record is the entry (`Ok(None)` when the frame fits).
fn indirect(mgr: &Arc<Attachment>, frame: &[u8], capacity: u64) -> Result<Option<(Message, Vec<u8>)>, ShmError> {
    if frame.len() <= ring::max_inline(capacity) {
        return Ok(None);
    }
    let holder = Message::copy_of(mgr.clone(), frame)?;
    let mut entry = Vec::new();
    meta::encode_single(&holder.record(), 0, &mut entry);
    Ok(Some((holder, entry)))
}

/// How a lane's writer reaches its reader's socket: offers and wake frames go there.
pub(crate) trait Link {
    /// Sends a control frame to the peer of owner mark `to` (the newest peer when `None`) within
    /// `deadline`. `Ok(false)`: no peer is known yet (nothing sent).
    /// `address` is called with the receiver's owner mark and socket number (0, 0: not known)
    /// before the frame goes out.
    fn send_control(
        &self,
        frame: &[u8],
        to: Option<u32>,
        deadline: Deadline,
        address: &dyn Fn(u32, u64),
    ) -> Result<bool, TransferError>;
    /// The socket's send queue limit (ZeroMQ's SNDHWM, 0: none), which sizes the ring.
    fn send_queue(&self) -> i32;
}

/// The lane a socket with a single peer writes, and entries taken back from lanes whose reader left.
#[derive(Default)]
pub(crate) struct Writer {
    lane: Option<LaneBlock>,
    /// Ring bytes of this writer's lanes, fixed at its first send (entries taken back from a lane
    /// whose reader left must fit the next one).
    capacity: u64,
    /// When the lane was last offered, and the offer's ticket (an offer sent just as the peer went
    /// away is lost with the connection; until a reader claims the lane it is offered again, the
    /// earlier offer taken back).
    offered: Cell<Option<(Instant, Issued)>>,
    resend: VecDeque<Taken>,
}

enum Wait {
    Room,
    ReaderGone,
}

impl Writer {
    /// Sends `frame` through the lane (offering a new one first if needed). On error nothing of
    /// `frame` was sent (and `mark` was not called); on success its records belong to the reader.
    /// `mark` marks the frame's blocks in flight: it runs only once the entry is staged in the
    /// ring (see `Ring::push`), never while a send waits for room, so that a writer killed at any
    /// moment leaves blocks a ring entry, its own mark or a staged entry accounts for.
    pub(crate) fn send(
        &mut self,
        mgr: &Arc<Attachment>,
        link: &dyn Link,
        frame: &[u8],
        deadline: Deadline,
        mark: &dyn Fn(),
    ) -> Result<(), TransferError> {
        if self.capacity == 0 {
            self.capacity = capacity_for(link.send_queue(), mgr.own().size());
        }
        let mut holder = indirect(mgr, frame, self.capacity)?;
        // A frame too large for the ring travels in a block of its own: marked first, so a reader
        // finishing a staged entry can read it (a block its dead writer still marks may be freed).
        let mark_all = || {
            if let Some((h, _)) = &holder {
                h.mark_in_flight(true);
            }
            mark();
        };
        let (kind, entry) = match &holder {
            Some((_, e)) => (KIND_INDIRECT, e.as_slice()),
            None => (KIND_FRAME, frame),
        };
        loop {
            let Some(l) = &self.lane else {
                self.offer(mgr, link, deadline)?;
                continue;
            };
            if l.ring().closed() & READER_CLOSED != 0 {
                self.retire(mgr, false);
                continue;
            }
            if !self.resend.is_empty() {
                if let Wait::ReaderGone = self.push_resent(mgr, link, deadline)? {
                    self.retire(mgr, true);
                    continue;
                }
            }
            let l = self.lane.as_ref().expect("a lane is there");
            let ring = l.ring();
            self.reoffer_if_unclaimed(mgr, l, &ring, link);
            if let Wait::ReaderGone = self.push(mgr, link, l, &ring, kind, entry, deadline, &mark_all)? {
                self.retire(mgr, true);
                continue;
            }
            // A reader asleep in its socket gets a wake frame (one per sleep). A full queue means
            // frames wait for it anyway, so a failed wake changes nothing.
            if ring.reader_needs_wake() {
                let _ = link.send_control(&meta::WAKE_FRAME, Some(ring.reader()), Deadline::Now, &|_, _| {});
            }
            break;
        }
        if let Some((mut h, _)) = holder.take() {
            h.hand_over();
        }
        Ok(())
    }

    fn offer(&mut self, mgr: &Arc<Attachment>, link: &dyn Link, deadline: Deadline) -> Result<(), TransferError> {
        let capacity = self.capacity;
        let block = Message::allocate(mgr.clone(), ring::block_bytes(capacity) as usize, 64)?;
        // Writer and reader hold it, or an unclaimed offer still names it: never a dead
        // transport's alone (see `Message::mark_held`); the writer's reference is listed first.
        block.list_lane();
        block.mark_held(crate::segment::slots::SHARED);
        let words = block.words().ok_or(ShmError::Config("a lane block is not whole words".into()))?;
        Ring::init(words, capacity, mgr.owner());
        let lane = LaneBlock { block, capacity };
        self.send_offer(mgr, &lane, link, deadline)?;
        // No peer to send it to yet: a push's ZeroMQ socket attaches the connection it made a
        // moment after the connect. Wait for it within the send's deadline: a message pushed into
        // a lane nobody heard of would wait for the writer's next send to be offered (a single
        // message sent after a connect stayed there). On error the lane goes, and the message
        // stays the caller's.
        while self.offered.get().is_none() {
            if mgr.interrupted() {
                return Err(TransferError::Interrupted);
            }
            if deadline.passed() {
                return Err(TransferError::Timeout);
            }
            std::thread::sleep(Duration::from_millis(1));
            self.send_offer(mgr, &lane, link, deadline)?;
        }
        self.lane = Some(lane);
        Ok(())
    }

    /// Sends an offer of `l` to the peer; one that cannot go out yet (no peer known) is remembered
    /// as not made, and made later.
    fn send_offer(
        &self,
        mgr: &Attachment,
        l: &LaneBlock,
        link: &dyn Link,
        deadline: Deadline,
    ) -> Result<(), TransferError> {
        let ticket = issue_waiting(mgr, Kind::Offer, &l.block.record(), deadline)?;
        let mut frame = Vec::with_capacity(40);
        meta::encode_lane_offer(&ticket.record(), &mut frame);
        // Whoever reads it may claim the lane later, also after this writer is gone. Its receiver
        // is named where it can be: an offer lost with a killed writer's queue is released then,
        // and its lane with it (see `orphans`).
        let address = |owner, socket| mgr.address(&ticket, owner, socket);
        match link.send_control(&frame, None, deadline, &address) {
            Ok(true) => self.offered.set(Some((Instant::now(), ticket))),
            Ok(false) => {
                mgr.take_back(&ticket);
                self.offered.set(None);
            }
            Err(e) => {
                mgr.take_back(&ticket);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Offers an unclaimed lane again once `REOFFER` passed (at once if it was never offered). An
    /// earlier offer is taken back first: if a reader claimed it meanwhile (and is about to claim
    /// the lane), there is nothing to do.
    fn reoffer_if_unclaimed(&self, mgr: &Attachment, l: &LaneBlock, ring: &Ring<'_>, link: &dyn Link) {
        let due = self.offered.get().is_none_or(|(at, _)| at.elapsed() >= REOFFER);
        if ring.reader() == 0 && due && self.offered.get().is_none_or(|(_, t)| mgr.take_back(&t)) {
            self.offered.set(None);
            let _ = self.send_offer(mgr, l, link, Deadline::Now);
        }
    }

    fn push_resent(
        &mut self,
        mgr: &Arc<Attachment>,
        link: &dyn Link,
        deadline: Deadline,
    ) -> Result<Wait, TransferError> {
        let l = self.lane.as_ref().expect("a lane was offered");
        let ring = l.ring();
        while let Some((kind, frame)) = self.resend.pop_front() {
            // Taken back from a lane whose reader left, their blocks marked ours again: in flight
            // once staged, as any entry's.
            let mark = || remark_entry(mgr, kind, &frame, mgr.owner(), crate::segment::slots::IN_FLIGHT);
            match self.push(mgr, link, l, &ring, kind, &frame, deadline, &mark) {
                Ok(Wait::Room) => {}
                other => {
                    self.resend.push_front((kind, frame));
                    return other;
                }
            }
        }
        Ok(Wait::Room)
    }

    /// Appends one entry to `l`, waiting for room within `deadline`.
    #[allow(clippy::too_many_arguments)] // the lane and its ring view, made once per send
    fn push(
        &self,
        mgr: &Arc<Attachment>,
        link: &dyn Link,
        l: &LaneBlock,
        ring: &Ring<'_>,
        kind: u32,
        entry: &[u8],
        deadline: Deadline,
        mark: &dyn Fn(),
    ) -> Result<Wait, TransferError> {
        let lane_error = |source: LaneError| ShmError::Lane { socket: "(writer)".into(), source };
        loop {
            if ring.push(kind, entry, mark).map_err(lane_error)? {
                return Ok(Wait::Room);
            }
            if mgr.interrupted() {
                return Err(TransferError::Interrupted);
            }
            if deadline.passed() {
                return Err(TransferError::Timeout);
            }
            let reader = ring.reader();
            if ring.closed() & READER_CLOSED != 0 || (reader != 0 && !mgr.owner_alive(reader)) {
                return Ok(Wait::ReaderGone);
            }
            // No spinning on a full ring: its reader has a ring's worth of work, and sleeping
            // until half of it is done costs one wake per half ring.
            self.reoffer_if_unclaimed(mgr, l, ring, link);
            if let Some(seen) = ring.wait_for_room().map_err(lane_error)? {
                crate::sys::futex::wait(ring.room_word(), seen, deadline.slice());
                // Woken or not (a slice ended): the next turn announces itself again.
                ring.stop_waiting();
            }
        }
    }

    /// Drops a lane whose reader left or died, keeping what it did not read for the next lane.
    fn retire(&mut self, mgr: &Arc<Attachment>, check_dead: bool) {
        let Some(l) = self.lane.take() else { return };
        let ring = l.ring();
        let reader = ring.reader();
        // A reader that closed its end dropped its reference itself (and may have exited since).
        let closed = ring.closed() & READER_CLOSED != 0;
        let dead = check_dead && !closed && reader != 0 && !mgr.owner_alive(reader);
        let mut unread = Vec::new();
        if let Err(e) = take_back_all(mgr, &ring, &mut unread) {
            log::error!("lane of a gone reader is damaged, {} of its messages are lost: {e}", unread.len());
        }
        ring.close(WRITER_CLOSED);
        if dead {
            mgr.sweep_dead(); // drops the dead reader's reference
        }
        log::debug!("lane reader {reader:#x} left; {} entries go out again on a new lane", unread.len());
        for e in unread.into_iter().rev() {
            self.resend.push_front(e);
        }
    }

    /// Whether messages wait to go out again (taken back from a reader that left), or sit in a lane
    /// whose reader left or died: they go before any later message, so the next send goes through
    /// the lane (whose send takes them back and offers them first).
    pub(crate) fn owes(&self, mgr: &Attachment) -> bool {
        !self.resend.is_empty()
            || self.lane.as_ref().is_some_and(|l| {
                let ring = l.ring();
                let reader = ring.reader();
                !ring.is_empty().unwrap_or(true)
                    && (ring.closed() & READER_CLOSED != 0 || (reader != 0 && !mgr.owner_alive(reader)))
            })
    }

    /// Whether a message could go out now without waiting for room.
    pub(crate) fn has_room(&self) -> bool {
        self.lane.as_ref().is_none_or(|l| l.ring().has_room(meta::BLOCK_LEN).unwrap_or(false))
    }

    /// The socket closes: a reader still reads what is in the lane, also one that claims it later
    /// (its offer may still wait in ZeroMQ's queue, which linger delivers without the reader's
    /// help). A lane whose offer never reaches a peer stays in the segment until the session ends.
    pub(crate) fn close(&mut self, mgr: &Arc<Attachment>) {
        if let Some(mut l) = self.lane.take() {
            let ring = l.ring();
            if ring.orphan() {
                ring.close(WRITER_CLOSED);
                l.block.hand_over(); // our reference is the first claimant's
                return self.release_resend(mgr);
            }
            let reader = ring.reader();
            let before = ring.close(WRITER_CLOSED);
            let dead = reader != 0 && before & READER_CLOSED == 0 && !mgr.owner_alive(reader);
            if before & READER_CLOSED != 0 || dead {
                let mut left = Vec::new();
                let _ = take_back_all(mgr, &ring, &mut left);
                self.resend.extend(left);
            }
            if dead {
                mgr.sweep_dead(); // drops the dead reader's reference
            }
        }
        self.release_resend(mgr);
    }

    /// The socket is about to close with a lane no peer was offered yet (none was known): offers
    /// it as soon as one is, within `deadline` (the socket's linger), so that ZeroMQ's linger
    /// delivers the offer as it would have delivered the records.
    pub(crate) fn offer_before_close(&self, mgr: &Attachment, link: &dyn Link, deadline: Deadline) {
        let Some(l) = &self.lane else { return };
        loop {
            if l.ring().reader() != 0 || self.offered.get().is_some() {
                return;
            }
            let _ = self.send_offer(mgr, l, link, Deadline::Now);
            if self.offered.get().is_some() || deadline.passed() || mgr.interrupted() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether this writer has a lane no reader claimed yet.
    pub(crate) fn unclaimed(&self) -> bool {
        self.lane.as_ref().is_some_and(|l| l.ring().reader() == 0)
    }

    /// Drops what was taken back from a reader that left and could not go out again.
    fn release_resend(&mut self, mgr: &Arc<Attachment>) {
        let n = release_entries(mgr, self.resend.drain(..), Whose::Ours);
        if n > 0 {
            log::warn!("{n} messages sent to a peer that left were dropped when the socket closed");
        }
    }
}

/// The lanes a socket reads.
#[derive(Default)]
pub(crate) struct Readers {
    lanes: Vec<LaneBlock>,
    next: usize,
    /// The records of the entry being taken (kept: no allocation per entry).
    records: Vec<Record>,
    last_sweep: Option<Instant>,
}

/// What `Readers::take` found.
pub(crate) enum Got {
    Frame,
    Indirect(Message),
}

impl Readers {
    /// Claims a lane a peer offered, with a reference of our own (the offer handed over none).
    pub(crate) fn attach(&mut self, mgr: &Arc<Attachment>, rec: Record, socket: &str) -> Result<(), ShmError> {
        let Record::Handed { segment, ticket, nonce } = rec else { return Err(meta::MetaError::Untracked.into()) };
        // With our own reference (see `Message::claim_offer`), taken before the lane's claim too,
        // so a claim never holds a block without its reference.
        let block = Message::claim_offer(mgr, segment, ticket, nonce)?;
        let opened = block.words().ok_or(LaneError::Header).and_then(|w| Ring::open(w).map(|r| r.capacity()));
        let capacity = match opened {
            Ok(c) => c,
            Err(source) => return Err(ShmError::Lane { socket: socket.to_owned(), source }),
        };
        block.list_lane();
        let lane = LaneBlock { block, capacity };
        match lane.ring().claim(mgr.owner()) {
            Claim::Fresh => {}
            Claim::Orphaned => lane.block.drop_reference(), // the writer left us its own
            Claim::Taken => return Ok(()),                  // a repeated offer: ours goes back
        }
        self.lanes.push(lane);
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }

    /// Takes the next entry of any lane, in turn, into `out`.
    pub(crate) fn take(
        &mut self,
        mgr: &Arc<Attachment>,
        out: &mut Vec<u8>,
        socket: &str,
    ) -> Result<Option<Got>, ShmError> {
        let n = self.lanes.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            let ring = self.lanes[i].ring();
            match ring.peek() {
                Ok(None) => continue,
                Ok(Some(e)) => {
                    ring.read(&e, out);
                    // Ours before it leaves the ring: killed at any moment, this reader leaves
                    // blocks that the ring or its own mark accounts for (see `Whose::Ring`).
                    remark_entry_with(
                        mgr,
                        e.kind,
                        out,
                        crate::segment::slots::IN_FLIGHT,
                        mgr.owner(),
                        &mut self.records,
                    );
                    ring.consume(&e);
                    self.next = i + 1;
                    if e.kind == KIND_FRAME {
                        return Ok(Some(Got::Frame));
                    }
                    // The entry's one record, the block holding the frame (into the kept buffer:
                    // no allocation per entry).
                    self.records.clear();
                    meta::decode(out, &mut self.records)?;
                    return match self.records[..] {
                        [rec @ Record::Block { .. }] => Ok(Some(Got::Indirect(Message::from_record(mgr, rec)?))),
                        _ => Err(meta::MetaError::Garbage(0).into()),
                    };
                }
                Err(source) => {
                    // A damaged lane cannot be read on: give it up (its writer takes back nothing).
                    let l = self.lanes.remove(i);
                    l.ring().close(READER_CLOSED | WRITER_CLOSED);
                    return Err(ShmError::Lane { socket: socket.to_owned(), source });
                }
            }
        }
        Ok(None)
    }

    /// Whether some lane has an entry.
    pub(crate) fn any_ready(&self) -> bool {
        self.lanes.iter().any(|l| !l.ring().is_empty().unwrap_or(false))
    }

    /// Looks at the lanes until `SPIN` passed or one has an entry (at once false without lanes).
    pub(crate) fn spin(&self) -> bool {
        !self.lanes.is_empty() && spin_until(|| self.any_ready())
    }

    /// Before sleeping in the socket: marks every lane's reader asleep; false (nothing marked) when
    /// an entry arrived meanwhile. Drops idle lanes whose writer closed or died.
    pub(crate) fn sleep(&mut self, mgr: &Arc<Attachment>) -> bool {
        self.sweep(mgr);
        for (i, l) in self.lanes.iter().enumerate() {
            if !l.ring().sleep().unwrap_or(false) {
                self.lanes[..=i].iter().for_each(|l| l.ring().wake_up());
                return false;
            }
        }
        true
    }

    pub(crate) fn wake_up(&self) {
        self.lanes.iter().for_each(|l| l.ring().wake_up());
    }

    fn sweep(&mut self, mgr: &Arc<Attachment>) {
        let check_alive = self.last_sweep.is_none_or(|t| t.elapsed() >= SWEEP_EVERY);
        if check_alive {
            self.last_sweep = Some(Instant::now());
        }
        self.lanes.retain(|l| {
            let ring = l.ring();
            if !ring.is_empty().unwrap_or(false) {
                return true;
            }
            let closed = ring.closed() & WRITER_CLOSED != 0;
            let dead = !closed && check_alive && !mgr.owner_alive(ring.writer());
            if dead && finish_staged(mgr, &ring) {
                return true; // read like any other entry; the lane goes once empty
            }
            if closed || dead {
                ring.close(READER_CLOSED);
            }
            if dead {
                mgr.sweep_dead(); // drops the dead writer's reference
            }
            !(closed || dead)
        });
    }

    /// The socket closes: a writer still there takes back what was not read (and sends it again);
    /// otherwise it is released here.
    pub(crate) fn close(&mut self, mgr: &Arc<Attachment>) {
        for l in self.lanes.drain(..) {
            let ring = l.ring();
            let before = ring.close(READER_CLOSED);
            let dead = before & WRITER_CLOSED == 0 && !mgr.owner_alive(ring.writer());
            if before & WRITER_CLOSED != 0 || dead {
                // A writer that closed staged nothing; a dead one's staged entry goes too.
                release_contents(mgr, &ring);
            }
            if dead {
                mgr.sweep_dead(); // drops the dead writer's reference
            }
        }
    }
}

/// A transport sweeping the dead (see `ledger`): frees through its caches, and releases a lane's
/// messages while it is shared (not while it is leaving). Here, not beside the transport's state:
/// releasing a lane's messages is the lanes' business.
impl crate::session::ledger::Sweeper for Attachment {
    fn segment(&self, id: u16) -> Option<&crate::segment::Segment> {
        Attachment::segment(self, id).ok()
    }

    fn free(&self, seg: &crate::segment::Segment, offset: u64, delta: u32, slot: u32) {
        self.release(seg, offset, delta, slot);
    }

    fn release_lane_contents(&self, ring: &crate::segment::ring::Ring<'_>) -> bool {
        let Some(mgr) = self.shared() else { return false };
        release_contents(&mgr, ring);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count word of the block `rec` names.
    fn count_word(mgr: &Attachment, rec: Record) -> u64 {
        let Record::Block { offset, slot, .. } = rec else { panic!("a block") };
        mgr.own().rc(offset, slot).load(std::sync::atomic::Ordering::Acquire)
    }

    /// A lane entry names its blocks, and a reader marks them its own before it takes the entry.
    /// One a faulty peer of the session damaged names places outside the segment, or a slot that
    /// is no block's: nothing is marked, and the reader does not index out of bounds. Before, the
    /// mark went to whatever word the record named (a slot past the table, an offset past the
    /// segment: a panic of the receiving device).
    #[test]
    fn a_damaged_record_in_a_lane_entry_marks_nothing() {
        let (_scratch, mgr) = crate::scratch::attachment("lanes-damaged");
        let m = Message::allocate(mgr.clone(), 100, 0).unwrap();
        m.mark_in_flight(true);
        let rec = m.record();
        let Record::Block { segment, offset, delta, size, slot } = rec else { panic!("a block") };
        let in_flight = u64::from(crate::segment::slots::IN_FLIGHT) << 32 | 1;
        assert_eq!(count_word(&mgr, rec), in_flight);
        let damaged = [
            Record::Block { segment, offset: u64::MAX - 7, delta, size, slot: crate::segment::slots::NO_SLOT },
            Record::Block { segment, offset: 1 << 40, delta, size, slot: crate::segment::slots::NO_SLOT },
            Record::Block { segment, offset, delta, size, slot: u32::MAX - 1 },
            Record::Block { segment, offset: offset + 64, delta, size, slot },
        ];
        for bad in damaged {
            let mut entry = Vec::new();
            meta::encode_single(&bad, 0, &mut entry);
            remark_entry(&mgr, KIND_FRAME, &entry, crate::segment::slots::IN_FLIGHT, mgr.owner());
        }
        assert_eq!(count_word(&mgr, rec), in_flight, "the block the damaged records almost named");
        // The good record is marked.
        let mut entry = Vec::new();
        meta::encode_single(&rec, 0, &mut entry);
        remark_entry(&mgr, KIND_FRAME, &entry, crate::segment::slots::IN_FLIGHT, mgr.owner());
        assert_eq!(count_word(&mgr, rec), u64::from(mgr.owner()) << 32 | 1);
    }

    /// A writer killed between staging an entry and publishing it (issue 17 item 3): once it had
    /// marked every block in flight, the reader publishes the entry and it is read like any other;
    /// killed while marking, what it marked is released and what it still marks its own is left
    /// to the sweep of the dead. Before, the blocks were marked in flight before the writer waited
    /// for room, and a writer killed then left them allocated until the session ended.
    #[test]
    fn a_dead_writers_staged_entry_is_published_when_marked_else_released() {
        let (_scratch, mgr) = crate::scratch::attachment("lanes-staged");
        let lane = Message::allocate(mgr.clone(), ring::block_bytes(ring::MIN_CAPACITY) as usize, 8).unwrap();
        let ring = Ring::init(lane.words().unwrap(), ring::MIN_CAPACITY, 77);
        let stage = |parts: &[&Message]| {
            let mut frame = Vec::new();
            meta::encode_parts(parts.iter().map(|m| m.record()), 0, &mut frame);
            ring.stage(KIND_FRAME, &frame).unwrap().expect("room");
            parts.iter().map(|m| m.record()).collect::<Vec<_>>()
        };
        let mut sent = [0, 1].map(|_| Message::allocate(mgr.clone(), 100, 0).unwrap());
        let recs = stage(&[&sent[0], &sent[1]]);
        sent.iter_mut().for_each(|m| {
            m.mark_in_flight(true);
            m.hand_over();
        });
        assert!(finish_staged(&mgr, &ring), "every block marked: published");
        let e = ring.peek().unwrap().expect("an entry to read");
        let mut got = Vec::new();
        ring.read(&e, &mut got);
        let mut read = Vec::new();
        meta::decode(&got, &mut read).unwrap();
        assert_eq!(read, recs);
        ring.consume(&e);
        release_entries(&mgr, [(KIND_FRAME, got)], Whose::Ring);
        // Killed while marking: the first part marked, the second still the writer's.
        let mut half = [0, 1].map(|_| Message::allocate(mgr.clone(), 100, 0).unwrap());
        let recs = stage(&[&half[0], &half[1]]);
        half[0].mark_in_flight(true);
        half[1].mark_held(77);
        half.iter_mut().for_each(Message::hand_over);
        assert!(!finish_staged(&mgr, &ring), "not every block marked: not published");
        assert!(ring.peek().unwrap().is_none());
        assert_eq!(count_word(&mgr, recs[0]) as u32, 0, "what it marked in flight was released");
        assert_eq!(count_word(&mgr, recs[1]), 77 << 32 | 1, "what it still held is the sweep's");
        assert!(!finish_staged(&mgr, &ring), "a second look releases nothing more");
    }

    /// Issue 17 item 3: entries a writer takes back from a lane whose reader left are marked its
    /// own before they leave the ring (the holder of an indirect frame last), so a writer killed
    /// while it keeps them to send again leaves blocks the sweep of the dead frees; staged again,
    /// they go in flight again (the holder first). Before, they stayed in flight, named by nothing.
    #[test]
    fn entries_taken_back_are_the_writers_until_staged_again() {
        let (_scratch, mgr) = crate::scratch::attachment("lanes-takeback");
        let lane = Message::allocate(mgr.clone(), ring::block_bytes(ring::MIN_CAPACITY) as usize, 8).unwrap();
        let ring = Ring::init(lane.words().unwrap(), ring::MIN_CAPACITY, mgr.owner());
        let in_flight = |_: Record| u64::from(crate::segment::slots::IN_FLIGHT) << 32 | 1;
        let ours = u64::from(mgr.owner()) << 32 | 1;
        // A plain entry of two parts, and an indirect one whose holder names one part.
        let mut plain = [0, 1].map(|_| Message::allocate(mgr.clone(), 100, 0).unwrap());
        let mut frame = Vec::new();
        meta::encode_parts(plain.iter().map(Message::record), 0, &mut frame);
        let mut inner = Message::allocate(mgr.clone(), 100, 0).unwrap();
        let mut parts = Vec::new();
        meta::encode_parts([inner.record()].into_iter(), 0, &mut parts);
        let mut holder = Message::copy_of(mgr.clone(), &parts).unwrap();
        let mut entry = Vec::new();
        meta::encode_single(&holder.record(), 0, &mut entry);
        let recs = [plain[0].record(), plain[1].record(), inner.record(), holder.record()];
        for m in plain.iter_mut().chain([&mut inner, &mut holder]) {
            m.mark_in_flight(true);
            m.hand_over();
        }
        assert!(ring.push(KIND_FRAME, &frame, || {}).unwrap());
        assert!(ring.push(KIND_INDIRECT, &entry, || {}).unwrap());
        let mut taken = Vec::new();
        take_back_all(&mgr, &ring, &mut taken).unwrap();
        assert_eq!(taken.len(), 2);
        assert!(ring.peek().unwrap().is_none(), "the ring is empty");
        for r in recs {
            assert_eq!(count_word(&mgr, r), ours, "taken back: ours again");
        }
        for (kind, bytes) in &taken {
            remark_entry(&mgr, *kind, bytes, mgr.owner(), crate::segment::slots::IN_FLIGHT);
        }
        for r in recs {
            assert_eq!(count_word(&mgr, r), in_flight(r), "staged again: in flight");
        }
        assert_eq!(release_entries(&mgr, taken, Whose::Ours), 3, "three messages' blocks released");
        for r in recs {
            assert_eq!(count_word(&mgr, r) as u32, 0, "freed");
        }
    }

    #[test]
    fn a_lane_holds_what_the_send_queue_would() {
        const GIB: u64 = 1 << 30;
        assert_eq!(SINGLE_ENTRY, 40);
        assert_eq!(capacity_for(1000, 2 * GIB), 64 << 10, "ZeroMQ's default queue: the smallest ring");
        assert_eq!(capacity_for(10_000, 2 * GIB), 512 << 10, "10 000 records of 40 bytes, rounded up");
        assert_eq!(capacity_for(0, 2 * GIB), UNLIMITED, "no limit");
        assert_eq!(capacity_for(i32::MAX, 2 * GIB), ring::MAX_CAPACITY, "the largest ring");
        assert_eq!(capacity_for(0, 8 << 20), 128 << 10, "a sixty-fourth of a small segment");
        assert_eq!(capacity_for(10_000, 8 << 20), 128 << 10);
        assert_eq!(capacity_for(1000, 1 << 20), CAPACITY, "never below the default queue's room");
        assert_eq!(capacity_for(-1, 1 << 20), CAPACITY);
        assert!(!fits_segment(150_000), "a 150 kB segment is too small for a lane");
        assert!(fits_segment(1 << 20));
    }
}
