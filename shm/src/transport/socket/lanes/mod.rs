//! The lanes of one socket: the lane it writes ([`Writer`], when the socket has a single peer),
//! and the lanes it reads ([`Readers`]). The ring itself is in `segment::ring`.
//!
//! # Life of a lane
//!
//! 1. The writer allocates the lane in its segment and offers it in a frame on the socket. It
//!    offers the lane again if nobody claims it within [`REOFFER`]: an offer sent just as the peer
//!    went away is lost with the connection.
//! 2. An offer hands over no reference. The reader that claims the lane takes a reference of its
//!    own.
//! 3. Each side drops its reference when it is done, and the last reference frees the block. A
//!    writer that leaves before any reader claimed the lane leaves its reference to the first
//!    claimant.
//!
//! # References and deaths
//!
//! Each side lists its reference in its transport's ledger (see `session::ledger`). When a side
//! dies, the sweep that counts it out drops its reference. The other side never drops it: it only
//! asks for that sweep. So the reference is dropped exactly once. Whoever drops the last
//! reference, a sweep or a side that lets go of its lane, releases what the lane still holds.
//!
//! When a writer dies while an offer of its unclaimed lane is out, the sweep leaves the writer's
//! reference to the first claimant: a reader, or whoever releases the offer that nobody will claim
//! (see `orphans`).
//!
//! # When a lane ends
//!
//! The end of a lane does not drop what was sent. When the reader closes its end (or dies), the
//! writer takes back what the reader did not read. The writer sends those entries again first, on
//! a new lane to whichever peer the socket has then. When the writer closes, the reader still reads
//! what is in the lane. When both close, the second one releases what is left, as ZeroMQ drops a
//! closed socket's queue. Two things are lost all the same: an entry that a killed reader had begun
//! to take is lost with the reader, and entries that still wait to go out again when the writer's
//! socket closes are released.

use crate::error::ShmError;
use crate::meta::{self, Record};
use crate::segment::ring::{self, Claim, LaneError, Ring, KIND_FRAME, KIND_INDIRECT, READER_CLOSED};
use crate::segment::tickets::{Issued, Kind};
use crate::segment::Remark;
use crate::transport::attachment::Attachment;
use crate::transport::message::{Message, Source};
use fairmq_zmq::TransferError;
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
/// travel through the socket), and its blocks have slots, whose generations tell a lane entry's
/// block from a later use of it (see `take_back_all`).
pub(crate) fn fits_segment(size: u64) -> bool {
    ring::block_bytes(CAPACITY) <= size / 8 && crate::segment::slots::count_for(size) > 0
}

/// Ring bytes of a lane for a socket without a send-queue limit: about 26 000 records.
const UNLIMITED: u64 = 1 << 20;
/// How long a reader with empty lanes looks again before it sleeps: a wake costs two system calls
/// and a ZeroMQ message, what the lane saves; a writer busy on another processor usually comes back
/// sooner. (A writer with a full ring does not spin: see `Writer::push`.)
const SPIN: Duration = Duration::from_micros(40);
/// How long of `SPIN` a reader spins without giving way: after that it yields its processor between
/// looks, so a writer (or a third process of a chain) waiting for this processor runs first.
const SPIN_ALONE: Duration = Duration::from_micros(2);
/// Looks at the lanes between two readings of the clock (a reading costs about 25 ns, a look a few).
const LOOKS_PER_CLOCK: u32 = 16;
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
    /// The writer's last view of the head, or the reader's of the tail (see `Ring::push_seen`).
    seen: std::cell::Cell<u64>,
}

impl LaneBlock {
    fn new(block: Message, capacity: u64) -> LaneBlock {
        LaneBlock { block, capacity, seen: std::cell::Cell::new(0) }
    }

    #[inline]
    fn ring(&self) -> Ring<'_> {
        Ring::reopen(self.block.words().expect("a lane block is whole words"), self.capacity)
    }
}

/// Whoever drops a lane's last reference releases what the lane still holds: a side that closed
/// while the other lived left it to the other, and the sweep of a dead side that found another
/// reference left it to that one (see `ledger::drop_lane_reference`). Before, a side that closed
/// while its peer lived, its peer then killed and swept before this reference went, freed the lane
/// with its messages still allocated, for the session's life.
impl Drop for LaneBlock {
    fn drop(&mut self) {
        let capacity = self.capacity;
        self.block.release_last_with(|mgr, words| {
            let Some(words) = words else { return };
            let n = release_contents(mgr, &Ring::reopen(words, capacity));
            if n > 0 {
                log::warn!("released {n} messages left in a lane whose last holder left it");
            }
        });
    }
}

/// Drops a reference to a lane's block as a holder of the lane does: with the last one, what the
/// lane still holds goes too (see `LaneBlock`'s drop); a block whose ring cannot be read goes as
/// a plain block.
pub(crate) fn drop_lane(block: Message) {
    match block.words().ok_or(LaneError::Header).and_then(Ring::open).map(|r| r.capacity()) {
        Ok(capacity) => drop(LaneBlock::new(block, capacity)),
        Err(_) => drop(block),
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

/// Releases the messages of lane entries taken out of their ring, each marked its taker's as it
/// left (a reader marks what it takes before it leaves the ring, see `Readers::take`, a writer
/// what it takes back, a last holder what it releases: killed in between, the entry stays in the
/// ring, or the sweep of the dead frees the blocks by the taker's mark). An indirect entry's
/// frame is in the block it names, which goes too.
fn release_entries(mgr: &Arc<Attachment>, entries: impl IntoIterator<Item = Taken>) -> usize {
    let mut holders = Vec::new();
    let mut dropped = 0;
    for (kind, frame) in entries {
        if kind != KIND_INDIRECT {
            dropped += release_records(mgr, &frame);
            continue;
        }
        holders.clear();
        let _ = meta::decode(&frame, &mut holders);
        for holder in holders.drain(..).filter_map(|r| Message::from_record(mgr, r).ok()) {
            dropped += release_records(mgr, holder.data());
        }
    }
    dropped
}

fn release_records(mgr: &Arc<Attachment>, frame: &[u8]) -> usize {
    let mut records = Vec::new();
    let _ = meta::decode(frame, &mut records);
    records.into_iter().filter_map(|r| Message::receive(mgr, r, Source::Lane).ok()).count()
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
/// reader finishing a dead writer's entry reads the parts through it. False when a block was not
/// `from`'s to give (see [`remark_entry_with`]).
fn remark_entry(mgr: &Arc<Attachment>, kind: u32, entry: &[u8], from: u32, to: u32) -> bool {
    remark_entry_with(mgr, kind, entry, from, to, &mut Marking::default())
}

/// The records of an entry being marked, and those the caller holds the entry's references of:
/// blocks whose mark changed, shared blocks and region pieces (the caller's buffers: a reader's,
/// so no allocation per entry).
#[derive(Default)]
pub(crate) struct Marking {
    blocks: Vec<Record>,
    taken: Vec<Record>,
    /// Every record of the entry was a block whose mark changed ([`Remark::Done`]): each has one
    /// reference, the taker's, so none is shared (nobody else can share it now).
    alone: bool,
}

/// [`remark_entry`] with the caller's buffers. When a block of the entry is not marked `from`
/// (another holder's, or freed), or the entry cannot be read, the entry is not the caller's to
/// take: false, and what it did hand over (in `m.taken`: the blocks marked, the shared blocks and
/// region pieces, whose references no other holder lists) is the caller's to release (see
/// [`release_marked`]). Every block is looked at either way.
fn remark_entry_with(mgr: &Arc<Attachment>, kind: u32, entry: &[u8], from: u32, to: u32, m: &mut Marking) -> bool {
    m.taken.clear();
    m.alone = false;
    // The usual entry, one block's record, as the general walk below takes it.
    if let Some(rec) = meta::lone_block(entry).filter(|_| kind == KIND_FRAME) {
        m.blocks.clear();
        m.blocks.push(rec);
        let remark = mgr.remark(&rec, from, to);
        if remark != Remark::Refused {
            m.taken.push(rec);
        }
        m.alone = remark == Remark::Done;
        return remark != Remark::Refused;
    }
    if !entry_blocks(mgr, kind, entry, &mut m.blocks) {
        return false;
    }
    let (mut whole, mut alone) = (true, true);
    let mut one = |r: &Record| match mgr.remark(r, from, to) {
        Remark::Done => m.taken.push(*r),
        Remark::NoMark => {
            alone = false;
            m.taken.push(*r);
        }
        Remark::Refused => whole = false,
    };
    if to == crate::segment::slots::IN_FLIGHT {
        m.blocks.iter().for_each(&mut one);
    } else {
        m.blocks.iter().rev().for_each(&mut one);
    }
    m.alone = whole && alone && kind != KIND_INDIRECT;
    whole
}

/// Releases what an entry that was not the caller's to take handed over (see
/// [`remark_entry_with`]): the message is lost, its other blocks are their holders' to free.
/// Returns how many parts.
fn release_marked(mgr: &Arc<Attachment>, taken: &mut Vec<Record>) -> usize {
    taken.drain(..).filter_map(|r| Message::from_record(mgr, r).ok()).count()
}

/// Writer: takes every entry out of `ring` (its reader left) into `out`, each marked its own again
/// before it leaves the ring: killed at any moment, the writer leaves blocks that the ring or its
/// own mark accounts for (the sweep of the dead frees the latter). An entry its reader had begun to
/// take when it was killed (some of its blocks marked the reader's, freed by the sweep of the dead)
/// is not sent again: its message went with the reader, and what the writer marked back of it is
/// freed here. Returns how many such entries.
fn take_back_all(mgr: &Arc<Attachment>, ring: &Ring<'_>, out: &mut Vec<Taken>) -> Result<usize, LaneError> {
    let mut marking = Marking::default();
    let mut lost = 0;
    // Up to the tail as it is now: a writer the other end cannot outrun.
    let end = ring.tail()?;
    while let Some(e) = ring.peek_before(end)? {
        let mut bytes = Vec::new();
        ring.read(&e, &mut bytes);
        let whole = remark_entry_with(mgr, e.kind, &bytes, crate::segment::slots::IN_FLIGHT, mgr.owner(), &mut marking);
        ring.consume(&e);
        if whole {
            out.push((e.kind, bytes));
        } else {
            release_marked(mgr, &mut marking.taken);
            lost += 1;
        }
    }
    Ok(lost)
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
    let lane = LaneBlock::new(block, capacity);
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
    // Each entry's blocks marked ours before the entry leaves the ring: killed before they are
    // released, this process leaves blocks its own mark names, which the sweep of the dead frees.
    // (Before, every entry left the ring first, its blocks in flight, named by nothing.)
    let left = take_back(mgr, ring);
    release_entries(mgr, left)
}

/// [`take_back_all`], what it cannot take logged: the entries taken, each marked ours.
fn take_back(mgr: &Arc<Attachment>, ring: &Ring<'_>) -> Vec<Taken> {
    let mut taken = Vec::new();
    match take_back_all(mgr, ring, &mut taken) {
        Ok(0) => {}
        Ok(n) => log::warn!("{n} messages the reader of a lane was taking when it died are lost with it"),
        Err(e) => log::error!("a lane is damaged, some of its messages are lost: {e}"),
    }
    taken
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
    let Record::Block { segment, offset, delta, size, slot, generation } = *rec else {
        return if matches!(rec, Record::Handed { .. }) { Held::Otherwise } else { Held::NoBlock };
    };
    let Ok(seg) = mgr.segment(segment) else { return Held::Otherwise };
    if seg.check_use(offset, delta, size, slot, generation).is_err() {
        return Held::Otherwise;
    }
    let v = seg.rc(offset, slot).load(std::sync::atomic::Ordering::Acquire);
    if v == u64::from(crate::segment::slots::IN_FLIGHT) << 32 | 1 {
        Held::InFlight
    } else if crate::segment::slots::is_shared(v) {
        Held::Shared
    } else {
        Held::Otherwise
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
    // A shared part is never published here: the writer unlists its reference just before it
    // publishes (see `Message::unlist_for_hand_over`), and whether it got that far cannot be
    // told; still listed, the sweep of the dead drops it, and a reader must not take it too.
    if parts.iter().all(|r| matches!(held(mgr, r), Held::InFlight | Held::NoBlock)) {
        ring.publish_staged(&e);
        return true;
    }
    // Each block still in flight is marked ours before the entry is given up: killed at any
    // moment, this process leaves blocks its mark names (the sweep of the dead frees them) or a
    // staged entry whose blocks a next look finds (those marked ours it skips). Given up before
    // anything is released: a next look (the sweep that drops the lane's last reference looks
    // again) must not release blocks that were freed and handed out since. (Before, the entry was
    // given up first: killed before it marked them, the blocks stayed in flight, named by nothing.)
    let marked = parts.iter().chain(if e.kind == KIND_INDIRECT { &records[..] } else { &[] });
    let ours: Vec<Record> = marked
        .filter(|r| {
            held(mgr, r) == Held::InFlight
                && mgr.remark(r, crate::segment::slots::IN_FLIGHT, mgr.owner()) == Remark::Done
        })
        .copied()
        .collect();
    crate::kill_point::here("finish_staged: marked, not given up");
    ring.unstage(&e);
    // Ours whether or not this look gave the entry up: nobody else takes what our mark names.
    for r in ours {
        if let Ok(m) = Message::from_record(mgr, r) {
            drop(m);
        }
    }
    false
}

/// Looks at `ready` until it holds (true) or `SPIN` passed (false). Never inlined: a profile
/// (the benchmark's instruction counts) tells the time spent waiting from the work by its name.
#[inline(never)]
fn spin_until(mut ready: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        for _ in 0..LOOKS_PER_CLOCK {
            if ready() {
                return true;
            }
            std::hint::spin_loop();
        }
        let waited = start.elapsed();
        if waited >= SPIN {
            return false;
        }
        if waited >= SPIN_ALONE {
            std::thread::yield_now();
        }
    }
}

/// Turns a frame for the lane into an entry: frames too large for the ring travel in a block of
/// their own whose record is the entry (`Ok(None)` when the frame fits).
#[inline]
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

mod readers;
mod resent;
#[cfg(test)]
mod tests;
mod writer;

pub(crate) use readers::{Got, Readers};
pub(crate) use writer::Writer;
