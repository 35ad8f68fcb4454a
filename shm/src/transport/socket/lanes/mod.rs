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

/// The smallest ring a lane gets, in bytes. It holds about 1600 single-message entries, more than
/// ZeroMQ's default send queue holds (1000 messages).
const CAPACITY: u64 = 64 << 10;
/// The size in bytes of a lane entry that holds one single-message record.
const SINGLE_ENTRY: u64 = 8 + (meta::BLOCK_LEN as u64).div_ceil(8) * 8;

/// Returns the ring size in bytes for a lane of a socket whose send queue holds `hwm` messages
/// (ZeroMQ's SNDHWM).
///
/// The ring has room for at least `hwm` records, as many as the socket itself would queue. The ring
/// is never smaller than [`CAPACITY`]. Above `CAPACITY`, the ring takes no more than a sixty-fourth
/// of the segment that the lane lives in.
///
/// A socket without a limit (0) gets [`UNLIMITED`]. A lane cannot grow, and each lane stays in the
/// segment for as long as its socket does.
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

/// Returns whether a segment of `size` bytes can hold lanes. Two conditions must hold.
///
/// First, the smallest lane may use at most an eighth of the segment. In a smaller segment, the
/// lane would crowd out the messages, or not fit at all; records then travel through the socket
/// instead.
///
/// Second, the segment's blocks must have slots. The generation of a slot tells the block that a
/// lane entry names apart from a later use of the same block (see `take_back_all`).
pub(crate) fn fits_segment(size: u64) -> bool {
    ring::block_bytes(CAPACITY) <= size / 8 && crate::segment::slots::count_for(size) > 0
}

/// The ring size in bytes for a lane of a socket without a send-queue limit. It holds about 26 000
/// records.
const UNLIMITED: u64 = 1 << 20;
/// How long a reader with empty lanes keeps looking at them before it sleeps.
///
/// Waking a sleeping reader costs two system calls and a ZeroMQ message, which is the cost that the
/// lane exists to save. A writer that is busy on another processor usually writes again sooner than
/// that. (A writer with a full ring does not spin; see `Writer::push`.)
const SPIN: Duration = Duration::from_micros(40);
/// The part of `SPIN` during which a reader spins without giving way. After `SPIN_ALONE`, the
/// reader yields its processor between looks. So a writer (or a third process of a chain) that
/// waits for this processor runs first.
const SPIN_ALONE: Duration = Duration::from_micros(2);
/// The number of looks at the lanes between two readings of the clock. A clock reading costs about
/// 25 ns, and a look costs a few ns.
const LOOKS_PER_CLOCK: u32 = 16;
/// The longest futex sleep of a writer that waits for room in the ring.
///
/// The limit lets the writer notice an interruption or a dead reader. It also lets the writer
/// notice room short of the low-water mark, which happens when its reader stopped reading before it
/// reached that mark.
const WAIT_SLICE: Duration = Duration::from_millis(5);
/// How long a lane may stay unclaimed before its writer offers it again (ZeroMQ reconnects every
/// 100 ms).
const REOFFER: Duration = Duration::from_millis(250);
/// How often a sleeping reader checks that the writers of its idle lanes are still alive.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// An entry taken out of a lane, as its kind and its frame.
type Taken = (u32, Vec<u8>);

/// The time by which a transfer must end, made from its timeout: -1 waits for ever, 0 does not
/// wait, and N waits N ms.
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

    /// Returns the time left as a ZeroMQ timeout: -1 means for ever, and 0 means the deadline
    /// passed.
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
    /// The head as the writer last saw it, or the tail as the reader last saw it (see
    /// `Ring::push_seen`).
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

/// Whoever drops a lane's last reference releases the messages that the lane still holds.
///
/// A side that closed while the other side lived left this work to the other side. The sweep of a
/// dead side that found another reference left this work to the holder of that reference (see
/// `ledger::drop_lane_reference`).
///
/// This fixes an earlier leak. A side closed while its peer lived, and the peer was then killed and
/// swept before the closing side's reference was dropped. Dropping that last reference freed the
/// lane, and its messages stayed allocated for the rest of the session.
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

/// Drops a reference to a lane's block, the way a holder of the lane drops it. When this is the
/// last reference, the messages that the lane still holds are released too (see the `Drop` impl of
/// `LaneBlock`). A block whose ring cannot be read is dropped as a plain block.
pub(crate) fn drop_lane(block: Message) {
    match block.words().ok_or(LaneError::Header).and_then(Ring::open).map(|r| r.capacity()) {
        Ok(capacity) => drop(LaneBlock::new(block, capacity)),
        Err(_) => drop(block),
    }
}

/// Frees the blocks of a metadata frame that nobody will receive, by dropping its messages. The
/// records are checked, and their tickets claimed, as for a received frame. Returns how many
/// messages were dropped.
pub(crate) fn release_frame(mgr: &Arc<Attachment>, frame: &[u8], source: Source) -> usize {
    let mut records = Vec::new();
    let _ = meta::decode(frame, &mut records);
    records.into_iter().filter_map(|r| Message::receive(mgr, r, source).ok()).count()
}

/// Issues a ticket for `rec`. While every ticket this transport can get is out, `issue_waiting`
/// waits until `deadline`; the peers give tickets back as they receive. An interruption ends the
/// wait.
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

/// Releases the messages of lane entries that were taken out of their ring.
///
/// The blocks of each entry were marked as the taker's before the entry left the ring. A reader
/// marks what it takes (see `Readers::take`), a writer marks what it takes back, and a last holder
/// marks what it releases. If the taker is killed in between, either the entry is still in the
/// ring, or the sweep of the dead frees the blocks by the taker's mark.
///
/// The frame of an indirect entry is in the block that the entry names. That block is released too.
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

/// Writes the records of the blocks that an entry of `kind` names into `records`, which is cleared
/// first. For an indirect entry, the block that holds the frame comes first, then the parts.
/// Returns false when the entry cannot be read.
#[inline]
fn entry_blocks(mgr: &Arc<Attachment>, kind: u32, entry: &[u8], records: &mut Vec<Record>) -> bool {
    records.clear();
    // The usual entry, one block's record, decoded at once (as `meta::decode` would).
    if let Some(rec) = meta::lone_block(entry).filter(|_| kind == KIND_FRAME) {
        records.push(rec);
        return true;
    }
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

/// Changes the holder mark of a lane entry's blocks from `from` to `to`. Only blocks with one
/// reference change.
///
/// A writer marks the blocks in flight when it stages the entry. A writer that takes the entry back
/// marks the blocks as its own again, and so does a reader that takes the entry.
///
/// The block that holds an indirect frame goes in flight first and comes back last. The reason is
/// that a reader which finishes a dead writer's entry reads the parts through that block.
///
/// Returns false when a block was not `from`'s to give (see [`remark_entry_with`]).
fn remark_entry(mgr: &Arc<Attachment>, kind: u32, entry: &[u8], from: u32, to: u32) -> bool {
    remark_entry_with(mgr, kind, entry, from, to, &mut Marking::default())
}

/// The records of an entry whose blocks are being marked, and the records whose references the
/// caller now holds for the entry: blocks whose mark changed, shared blocks and region pieces.
/// `Marking` holds the caller's buffers. A reader keeps one, so it allocates nothing per entry.
#[derive(Default)]
pub(crate) struct Marking {
    blocks: Vec<Record>,
    taken: Vec<Record>,
    /// True when every record of the entry was a block whose mark changed ([`Remark::Done`]). Each
    /// such block has one reference, the taker's. So no block is shared, and nobody else can share
    /// it now.
    alone: bool,
}

/// Does what [`remark_entry`] does, with the caller's buffers in `m`.
///
/// The entry is not the caller's to take when a block of the entry is not marked `from` (it is
/// another holder's, or freed), or when the entry cannot be read. `remark_entry_with` then returns
/// false. What the entry did hand over is then the caller's to release (see [`release_marked`]). It
/// is in `m.taken`: the blocks whose mark changed, and the shared blocks and region pieces, whose
/// references no other holder lists.
///
/// `remark_entry_with` looks at every block in either case.
fn remark_entry_with(mgr: &Arc<Attachment>, kind: u32, entry: &[u8], from: u32, to: u32, m: &mut Marking) -> bool {
    m.taken.clear();
    m.alone = false;
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

/// Releases what an entry handed over when the entry was not the caller's to take (see
/// [`remark_entry_with`]). The entry's message is lost. Its other blocks belong to their holders,
/// who free them. Returns how many parts were released.
fn release_marked(mgr: &Arc<Attachment>, taken: &mut Vec<Record>) -> usize {
    taken.drain(..).filter_map(|r| Message::from_record(mgr, r).ok()).count()
}

/// Takes every entry out of `ring` into `out`, for the writer of a lane whose reader left.
///
/// The writer marks the blocks of each entry as its own again before the entry leaves the ring. So
/// if the writer is killed at any moment, every block it leaves is accounted for by the ring or by
/// the writer's own mark. The sweep of the dead frees the blocks with the writer's mark.
///
/// The reader may have been killed while it was taking an entry. Some blocks of that entry then
/// carry the reader's mark, and the sweep of the dead frees them. Such an entry is not sent again,
/// because its message was lost with the reader. `take_back_all` frees the blocks of that entry
/// that the writer marked back.
///
/// Returns how many such entries were lost.
fn take_back_all(mgr: &Arc<Attachment>, ring: &Ring<'_>, out: &mut Vec<Taken>) -> Result<usize, LaneError> {
    let mut marking = Marking::default();
    let mut lost = 0;
    // Take entries only up to the tail as it is now, so that a writer at the other end cannot
    // outrun this loop.
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

/// Releases what a lane holds when its writer is gone. `release_unclaimed` does what a reader
/// would do if it claimed the lane and closed it at once. The caller just claimed the ticket of the
/// lane's offer (see `orphans`), so no reader will claim the lane.
///
/// `block` is the lane's block. The caller holds a reference of its own to it, taken before the
/// claim (see `Message::claim_offer`). The sweep that counts the dead writer out drops the writer's
/// reference, unless the writer handed that reference to us as the first claimant.
pub(crate) fn release_unclaimed(mgr: &Arc<Attachment>, block: Message) {
    let opened = block.words().ok_or(LaneError::Header).and_then(Ring::open).map(|r| (r.writer(), r.capacity()));
    let capacity = match opened {
        Ok((writer, capacity)) if !mgr.owner_alive(writer) => capacity,
        // The writer lives, so offering the lane again is the writer's job. Our reference is
        // dropped with `block`.
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

/// Releases what a lane holds when nobody will read it, because its last holder leaves or nobody
/// claimed the lane. `release_contents` first finishes a dead writer's staged entry, then releases
/// every entry. Returns how many messages were released.
pub(crate) fn release_contents(mgr: &Arc<Attachment>, ring: &Ring<'_>) -> usize {
    finish_staged(mgr, ring);
    // `take_back` marks the blocks of each entry as ours before the entry leaves the ring. If this
    // process is killed before the blocks are released, its own mark names them, and the sweep of
    // the dead frees them. (Earlier code took every entry out of the ring first. The blocks stayed
    // in flight, and nothing named them.)
    let left = take_back(mgr, ring);
    release_entries(mgr, left)
}

/// Calls [`take_back_all`] and logs what it could not take. Returns the entries taken, each with
/// its blocks marked as ours.
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
    /// The record is not a block (it is a region piece or an empty part), so there is nothing to
    /// mark.
    NoBlock,
    /// The block is marked in flight: the writer handed it over.
    InFlight,
    /// The block is shared. Its mark names no holder, so nobody frees it by its mark.
    Shared,
    /// The block is still its writer's, or was freed since, or the record names no block at all.
    /// Such a record must not be handed on.
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

/// Finishes the entry that a dead writer staged but never published (see `Ring::push`).
///
/// If the writer had marked every block of the entry in flight, `finish_staged` publishes the
/// entry, which is then read like any other entry, and returns true. If the writer was killed
/// before or while it marked the blocks, `finish_staged` releases the blocks that the writer
/// marked. The sweep of the dead frees the rest, which still carry the writer's own mark.
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
        // The writer marks the block that holds the frame before the parts. If that block is not in
        // flight, no block of the entry is.
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
    // An entry with a shared part is never published here. The writer unlists its reference to a
    // shared part just before it publishes (see `Message::unlist_for_hand_over`), and nobody can
    // tell whether it got that far. If the reference is still listed, the sweep of the dead drops
    // it, so a reader must not take it as well.
    if parts.iter().all(|r| matches!(held(mgr, r), Held::InFlight | Held::NoBlock)) {
        ring.publish_staged(&e);
        return true;
    }
    // Mark each block that is still in flight as ours before giving up the entry. If this process
    // is killed at any moment, it leaves either blocks that its mark names, which the sweep of the
    // dead frees, or a staged entry whose blocks a later look finds. That later look skips the
    // blocks marked ours.
    //
    // Give up the entry before releasing anything. A later look must not release blocks that were
    // freed and handed out since. (The sweep that drops the lane's last reference looks again.)
    //
    // (Earlier code gave up the entry first. If the process was killed before it marked the blocks,
    // they stayed in flight and nothing named them.)
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
    // These blocks are ours whether or not this look gave up the entry, because nobody else takes a
    // block that our mark names.
    for r in ours {
        if let Ok(m) = Message::from_record(mgr, r) {
            drop(m);
        }
    }
    false
}

/// Calls `ready` until it returns true (then returns true) or until `SPIN` passed (then returns
/// false).
///
/// `spin_until` is never inlined, so that a profile (such as the benchmark's instruction counts)
/// can tell the time spent waiting apart from the work by the function's name.
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

/// Turns a frame for the lane into an entry. A frame too large for the ring travels in a block of
/// its own, and the entry is that block's record. Returns the block and the entry, or `Ok(None)`
/// when the frame fits in the ring.
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

/// How a lane's writer reaches its reader's socket, where it sends offers and wake frames.
pub(crate) trait Link {
    /// Sends a control frame within `deadline` to the peer whose owner mark is `to`, or to the
    /// newest peer when `to` is `None`. Returns `Ok(false)` when no peer is known yet; nothing is
    /// sent then.
    ///
    /// Before the frame goes out, `send_control` calls `address` with the receiver's owner mark and
    /// socket number. Both are 0 when they are not known.
    fn send_control(
        &self,
        frame: &[u8],
        to: Option<u32>,
        deadline: Deadline,
        address: &dyn Fn(u32, u64),
    ) -> Result<bool, TransferError>;
    /// Returns the socket's send queue limit (ZeroMQ's SNDHWM; 0 means no limit). The limit sets
    /// the ring's size.
    fn send_queue(&self) -> i32;
}

/// Lets a transport sweep the dead (see `ledger`). The transport frees blocks through its caches.
/// It releases a lane's messages only while the `Attachment` is shared, not while it is leaving.
///
/// This impl lives here and not beside the transport's state, because releasing a lane's messages
/// is the business of the lanes.
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
