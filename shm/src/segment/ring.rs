//! A lane: a ring of metadata frames with one writer and one reader, inside one block of the
//! segment ([`Ring`]).
//!
//! Through libzmq, every record costs a whole libzmq message on both sides, and two I/O threads
//! that compete with the application's threads for processors. Between one sender and one
//! receiver, the records go through a lane instead. The writer copies a frame into the ring and
//! publishes it with one store; the reader takes it with one load. ZeroMQ keeps the jobs it does
//! well. The writer offers the lane over the socket, so the offer reaches the peer that libzmq
//! connected, after everything sent before it. A reader that sleeps in its socket is woken by a
//! small frame on that socket.
//!
//! The layout, in 64-bit words. Hot words sit on cache lines of their own.
//!
//! | word | [`Header`] field | content | written by |
//! |---|---|---|---|
//! | 0, 1 | `tag` | magic, layout version | writer, once |
//! | 2 | `capacity` | ring capacity in bytes (a power of two) | writer, once |
//! | 3 | `writer` | writer's owner mark | writer, once |
//! | 4 | `reader` | reader's owner mark; 0 while unclaimed; [`ORPHANED`] when the writer left before any reader claimed the lane | compare-and-swap |
//! | 5 | `closed` | closed bits: [`WRITER_CLOSED`], [`READER_CLOSED`] | each side, once |
//! | 8 | `tail` | bytes ever published | writer |
//! | 9 | `staged` | end of an entry written past the tail, being published | writer |
//! | 16 | `head` | bytes ever consumed | reader |
//! | 24 | `asleep` | 1: the reader is asleep | reader sets, writer takes |
//! | 32 | `waiting` | 1: the writer waits for room | writer sets, reader takes |
//! | 40 | `room` | room futex: bumped when a waiting writer may go on | reader |
//!
//! The ring starts at word [`HEADER_WORDS`]. An entry is one word `length | kind << 32`, followed
//! by the frame's bytes in whole words. The kind is [`KIND_FRAME`] (the frame itself) or
//! [`KIND_INDIRECT`] (the record of a block that holds a frame too large for the ring). An entry
//! never wraps: a [`KIND_SKIP`] entry fills the end of the ring.
//!
//! The writer writes an entry past the tail and stores its end in `staged`. It then marks the
//! entry's blocks in flight, and publishes the entry by moving the tail ([`Ring::push_seen`]). A
//! reader finishes the staged entry of a writer that died in between ([`Ring::staged`]).
//!
//! Everything in the ring comes from another process. [`Ring::open`] checks the header, and every
//! read checks the head, the tail and each entry before use.

pub(crate) use crate::error::LaneError;
use crate::sys::layout::{shared_layout, view, Kind, Tag};
use std::cell::Cell;
use std::mem::{offset_of, size_of};
use std::sync::atomic::{fence, AtomicU64, Ordering};

const KIND: Kind = Kind { what: "lane", magic: u64::from_le_bytes(*b"FMQLANE1"), layout: 2 };

shared_layout! {
    /// A lane's header, laid out as in the table above. Each hot word sits on a cache line of its
    /// own.
    pub(crate) struct Header {
        tag: Tag,
        capacity: AtomicU64,
        writer: AtomicU64,
        reader: AtomicU64,
        closed: AtomicU64,
        _line0: [AtomicU64; 2],
        tail: AtomicU64,
        // `staged` shares the tail's cache line, because the reader reads that line anyway.
        staged: AtomicU64,
        _line1: [AtomicU64; 6],
        head: AtomicU64,
        _line2: [AtomicU64; 7],
        asleep: AtomicU64,
        _line3: [AtomicU64; 7],
        waiting: AtomicU64,
        _line4: [AtomicU64; 7],
        room: AtomicU64,
        _line5: [AtomicU64; 23],
    }
}
const _: () = {
    assert!(offset_of!(Header, capacity) == 16 && offset_of!(Header, closed) == 40);
    assert!(offset_of!(Header, tail) == 64 && offset_of!(Header, staged) == 72 && offset_of!(Header, head) == 128);
    assert!(offset_of!(Header, asleep) == 192 && offset_of!(Header, waiting) == 256 && offset_of!(Header, room) == 320);
    assert!(size_of::<Header>() == HEADER_WORDS * 8);
};
/// Words before the ring.
pub(crate) const HEADER_WORDS: usize = 64;
/// Reader mark of a lane whose writer closed before any reader claimed it.
pub(crate) const ORPHANED: u32 = u32::MAX;
/// The writer closed its end.
pub(crate) const WRITER_CLOSED: u64 = 1;
/// The reader closed its end.
pub(crate) const READER_CLOSED: u64 = 2;
/// An entry holding a frame.
pub(crate) const KIND_FRAME: u32 = 1;
/// A filler entry that fills the ring up to its end.
const KIND_SKIP: u32 = 2;
/// An entry holding the record of one block, and that block's bytes are the frame. Frames too large
/// for the ring travel this way.
pub(crate) const KIND_INDIRECT: u32 = 3;
/// Smallest and largest ring, in bytes.
pub(crate) const MIN_CAPACITY: u64 = 4096;
pub(crate) const MAX_CAPACITY: u64 = 16 << 20;

/// Largest head or tail that a sound (undamaged) lane has.
const MAX_INDEX: u64 = 1 << 62;

/// Bytes that a lane with a ring of `capacity` bytes needs, header included.
pub(crate) fn block_bytes(capacity: u64) -> u64 {
    HEADER_WORDS as u64 * 8 + capacity
}

/// The largest frame that one entry holds. Larger frames travel indirectly, in `KIND_INDIRECT`
/// entries.
pub(crate) fn max_inline(capacity: u64) -> usize {
    (capacity / 4) as usize
}

/// What a reader found when it claimed a lane (the result of `Ring::claim`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The reader claimed the lane while its writer was still there.
    Fresh,
    /// The reader claimed the lane after its writer left. The reference that the writer held now
    /// belongs to the reader.
    Orphaned,
    /// Another claim came first. This happens when the writer's offer arrives more than once.
    Taken,
}

/// One entry that the reader took: its kind and where its bytes are. The position stays valid
/// until [`Ring::consume`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub kind: u32,
    pub len: usize,
    at: u64,
    next: u64,
}

/// A view of a lane's words.
#[derive(Clone, Copy)]
pub(crate) struct Ring<'a> {
    h: &'a Header,
    w: &'a [AtomicU64],
    capacity: u64,
}

fn words_for(len: usize) -> u64 {
    len.div_ceil(8) as u64
}

impl<'a> Ring<'a> {
    /// Lays out a new lane over `w`. The lane belongs to its writer and is not offered yet. Every
    /// header word starts at zero, except the tag, the capacity and the writer's mark.
    pub(crate) fn init(w: &'a [AtomicU64], capacity: u64, writer: u32) -> Ring<'a> {
        assert!(capacity.is_power_of_two() && w.len() as u64 * 8 >= block_bytes(capacity));
        let h: &Header = view(w).expect("a lane block holds its header");
        for word in &w[..HEADER_WORDS] {
            word.store(0, Ordering::Relaxed);
        }
        h.capacity.store(capacity, Ordering::Relaxed);
        h.writer.store(u64::from(writer), Ordering::Relaxed);
        KIND.stamp(&h.tag);
        Ring { h, w, capacity }
    }

    /// Opens a lane that a peer offered. `Ring::open` first checks the lane's header against the
    /// block that holds the lane.
    pub(crate) fn open(w: &'a [AtomicU64]) -> Result<Ring<'a>, LaneError> {
        let mut capacity = 0;
        let h = KIND
            .open(
                w,
                |h: &Header| &h.tag,
                |h| {
                    // Read the capacity only once. The capacity checked here must be the same one
                    // that every index is later taken modulo.
                    capacity = h.capacity.load(Ordering::Relaxed);
                    let fits = capacity.checked_add(HEADER_WORDS as u64 * 8).is_some_and(|b| b <= w.len() as u64 * 8);
                    match capacity.is_power_of_two() && (MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity) && fits {
                        true => Ok(()),
                        false => Err(format!("capacity {capacity}")),
                    }
                },
            )
            .map_err(|_| LaneError::Header)?;
        Ok(Ring { h, w, capacity })
    }

    /// Views again a lane that `Ring::init` or `Ring::open` set up before, with the capacity found
    /// then. Because the capacity comes from the caller, a peer that changes the header later
    /// cannot move any index outside `w`.
    pub(crate) fn reopen(w: &'a [AtomicU64], capacity: u64) -> Ring<'a> {
        debug_assert!(capacity.is_power_of_two() && w.len() as u64 * 8 >= block_bytes(capacity));
        Ring { h: view(w).expect("a lane block holds its header"), w, capacity }
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The ring's words, from the end of the header up to the ring's capacity. The block may hold
    /// more words than that.
    fn ring_words(&self) -> &'a [AtomicU64] {
        let end = HEADER_WORDS.saturating_add((self.capacity / 8) as usize).min(self.w.len());
        self.w.get(HEADER_WORDS..end).unwrap_or(&[])
    }

    fn ring_word(&self, pos: u64) -> &'a AtomicU64 {
        &self.w[HEADER_WORDS + (self.in_ring(pos) / 8) as usize]
    }

    /// Where index `pos` falls in the ring. The capacity is a power of two: `Ring::open` checks
    /// this, and `Ring::init` accepts nothing else. So a mask finds the position, and no copied
    /// word costs a division.
    fn in_ring(&self, pos: u64) -> u64 {
        pos & (self.capacity - 1)
    }

    pub(crate) fn writer(&self) -> u32 {
        self.h.writer.load(Ordering::Relaxed) as u32
    }

    pub(crate) fn reader(&self) -> u32 {
        self.h.reader.load(Ordering::Acquire) as u32
    }

    /// The reader claims the lane.
    pub(crate) fn claim(&self, reader: u32) -> Claim {
        let w = &self.h.reader;
        let mark = u64::from(reader);
        match w.compare_exchange(0, mark, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Claim::Fresh,
            Err(v) if v == u64::from(ORPHANED) => {
                match w.compare_exchange(v, mark, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => Claim::Orphaned,
                    Err(_) => Claim::Taken,
                }
            }
            Err(_) => Claim::Taken,
        }
    }

    /// The writer leaves a lane that no reader has claimed yet. Returns false when a reader claimed
    /// the lane first.
    pub(crate) fn orphan(&self) -> bool {
        self.h.reader.compare_exchange(0, u64::from(ORPHANED), Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// Marks one end closed; returns the bits set before.
    pub(crate) fn close(&self, bit: u64) -> u64 {
        self.h.closed.fetch_or(bit, Ordering::AcqRel)
    }

    pub(crate) fn closed(&self) -> u64 {
        self.h.closed.load(Ordering::Acquire)
    }

    /// Loads the head and the tail, and checks them. The head must not pass the tail, and the two
    /// must be at most one ring apart. Both must be word-aligned. Both must also stay far below the
    /// end of the index space, because no lane ever publishes 2^62 bytes. With these checks, no
    /// index arithmetic can overflow.
    fn indices(&self) -> Result<(u64, u64), LaneError> {
        let head = self.h.head.load(Ordering::Acquire);
        let tail = self.h.tail.load(Ordering::Acquire);
        match tail.checked_sub(head) {
            Some(used) if used <= self.capacity && head % 8 == 0 && tail % 8 == 0 && tail <= MAX_INDEX => {
                Ok((head, tail))
            }
            _ => Err(LaneError::Indices { head, tail, capacity: self.capacity }),
        }
    }

    /// Sets the head and the tail directly, as a peer could. The fuzz target uses this.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn force_indices(&self, head: u64, tail: u64) {
        self.h.head.store(head, Ordering::Relaxed);
        self.h.tail.store(tail, Ordering::Relaxed);
    }

    /// Whether nothing is waiting to be read.
    pub(crate) fn is_empty(&self) -> Result<bool, LaneError> {
        self.indices().map(|(h, t)| h == t)
    }

    /// Writer: appends an entry of `kind` that holds `frame`. Returns false when the ring has no
    /// room for the entry; `before_publish` is then not called.
    ///
    /// The entry goes in three steps. First, the writer writes the entry past the tail and
    /// *stages* it: the writer stores the entry's end in the `staged` word. Second,
    /// `before_publish` runs; it marks the entry's blocks in flight. Third, the writer moves the
    /// tail, which publishes the entry.
    ///
    /// A writer killed between these steps leaves a staged entry, and the reader finishes that
    /// entry (see [`Ring::staged`]). The reader publishes the entry if all its blocks were marked,
    /// and releases it otherwise.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn push(&self, kind: u32, frame: &[u8], before_publish: impl FnOnce()) -> Result<bool, LaneError> {
        self.push_seen(kind, frame, before_publish, &Cell::new(0))
    }

    /// `Ring::push` for a writer that keeps the last head it saw in `seen`. While that head leaves
    /// room, `Ring::push_seen` does not read the reader's cache line. This matters because that
    /// line moves between the processors on every read.
    pub(crate) fn push_seen(
        &self,
        kind: u32,
        frame: &[u8],
        before_publish: impl FnOnce(),
        seen: &Cell<u64>,
    ) -> Result<bool, LaneError> {
        let Some(end) = self.stage_seen(kind, frame, seen)? else { return Ok(false) };
        before_publish();
        self.publish(end);
        Ok(true)
    }

    /// Writer: writes an entry past the tail and stages it. Returns the entry's end, or `None` when
    /// the ring has no room.
    #[cfg(test)]
    pub(crate) fn stage(&self, kind: u32, frame: &[u8]) -> Result<Option<u64>, LaneError> {
        self.stage_seen(kind, frame, &Cell::new(0))
    }

    fn stage_seen(&self, kind: u32, frame: &[u8], seen: &Cell<u64>) -> Result<Option<u64>, LaneError> {
        debug_assert!(frame.len() <= max_inline(self.capacity));
        let Some((tail, skip, need)) = self.room_seen(frame.len(), seen)? else { return Ok(None) };
        let mut at = tail;
        if skip > 0 {
            self.ring_word(at).store(u64::from(KIND_SKIP) << 32, Ordering::Relaxed);
            at += skip;
        }
        // An entry never wraps: where it would, `room_seen` put a filler before it. So the entry's
        // words are one run of the ring, and one bounds check here covers them all, instead of
        // one check per word.
        let first = (self.in_ring(at) / 8) as usize;
        let words = self
            .ring_words()
            .get(first..first + 1 + words_for(frame.len()) as usize)
            .ok_or(LaneError::Entry { at, kind, len: frame.len() as u32 })?;
        let (head, body) = words.split_first().expect("an entry has its length word");
        head.store(frame.len() as u64 | u64::from(kind) << 32, Ordering::Relaxed);
        let mut chunks = frame.chunks_exact(8);
        for (word, chunk) in body.iter().zip(&mut chunks) {
            word.store(u64::from_le_bytes(chunk.try_into().expect("chunks of 8 bytes")), Ordering::Relaxed);
        }
        let rest = chunks.remainder();
        if let Some(last) = body.last().filter(|_| !rest.is_empty()) {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            last.store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
        self.h.staged.store(at + need, Ordering::Release);
        Ok(Some(at + need))
    }

    /// Publishes everything up to `end` (a staged entry's end).
    pub(crate) fn publish(&self, end: u64) {
        self.h.tail.store(end, Ordering::Release);
    }

    /// Reader, once the writer died: publishes the entry that the writer staged, as found by
    /// [`Ring::staged`].
    pub(crate) fn publish_staged(&self, e: &Entry) {
        self.publish(e.next);
    }

    /// Reader, once the writer died: gives up the entry that the writer staged, as found by
    /// [`Ring::staged`]. The entry's blocks are about to be released. Returns true for only one
    /// caller, the one that gives the entry up: a second look finds nothing staged.
    pub(crate) fn unstage(&self, e: &Entry) -> bool {
        let tail = self.h.tail.load(Ordering::Acquire);
        self.h.staged.compare_exchange(e.next, tail, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }

    /// Reader, once the writer died: the entry that the writer staged and never published, if
    /// any. The staged entry is checked like any other entry.
    pub(crate) fn staged(&self) -> Result<Option<Entry>, LaneError> {
        let (head, tail) = self.indices()?;
        let staged = self.h.staged.load(Ordering::Acquire);
        if staged <= tail {
            return Ok(None);
        }
        let bad = LaneError::Indices { head, tail: staged, capacity: self.capacity };
        if staged % 8 != 0 || staged - head > self.capacity || staged > MAX_INDEX {
            return Err(bad);
        }
        match self.entry_between(tail, staged)? {
            Some(e) if e.next == staged => Ok(Some(e)),
            _ => Err(bad),
        }
    }

    /// Writer, after publishing: whether the reader went to sleep and must be woken. The writer
    /// that sees the reader asleep takes the `asleep` flag, so the reader gets one wake per sleep.
    pub(crate) fn reader_needs_wake(&self) -> bool {
        // Pairs with the fence in `Ring::sleep`: either the reader sees the new tail, or this
        // writer sees the reader asleep.
        fence(Ordering::SeqCst);
        let asleep = &self.h.asleep;
        asleep.load(Ordering::Relaxed) == 1 && asleep.swap(0, Ordering::AcqRel) == 1
    }

    /// Reader: the next entry, if any, skipping filler. The entry's bytes stay valid until
    /// `Ring::consume`.
    #[cfg(test)]
    pub(crate) fn peek(&self) -> Result<Option<Entry>, LaneError> {
        let (head, tail) = self.indices()?;
        self.entry_between(head, tail)
    }

    /// `Ring::peek` for a reader that keeps the last tail it saw in `seen`. `Ring::peek_seen` reads
    /// the writer's cache line again only once the reader has consumed everything up to that tail.
    pub(crate) fn peek_seen(&self, seen: &Cell<u64>) -> Result<Option<Entry>, LaneError> {
        let head = self.h.head.load(Ordering::Relaxed);
        let tail = seen.get();
        // Check as `Ring::indices` does. Everything before a tail that was read with acquire
        // ordering was published.
        if head < tail && head % 8 == 0 && tail - head <= self.capacity {
            return self.entry_between(head, tail);
        }
        let (head, tail) = self.indices()?;
        seen.set(tail);
        self.entry_between(head, tail)
    }

    /// The current tail. Like every read of the indices, this one checks the tail together with
    /// the head.
    pub(crate) fn tail(&self) -> Result<u64, LaneError> {
        Ok(self.indices()?.1)
    }

    /// `Ring::peek` for an entry that ends by `end`, a tail read earlier. Whoever empties a ring
    /// stops at `end`, even when the other end keeps writing.
    pub(crate) fn peek_before(&self, end: u64) -> Result<Option<Entry>, LaneError> {
        let (head, tail) = self.indices()?;
        if head >= end {
            return Ok(None);
        }
        self.entry_between(head, tail.min(end))
    }

    /// The first entry at or after `head` that ends by `tail`, skipping filler.
    fn entry_between(&self, mut head: u64, tail: u64) -> Result<Option<Entry>, LaneError> {
        loop {
            if head == tail {
                return Ok(None);
            }
            let word = self.ring_word(head).load(Ordering::Relaxed);
            let (len, kind) = (word as u32, (word >> 32) as u32);
            let to_end = self.capacity - self.in_ring(head);
            let bad = LaneError::Entry { at: head, kind, len };
            if kind == KIND_SKIP {
                if len != 0 || head + to_end > tail {
                    return Err(bad);
                }
                head += to_end;
                continue;
            }
            let need = 8 + words_for(len as usize) * 8;
            let known = kind == KIND_FRAME || kind == KIND_INDIRECT;
            if !known || len as usize > max_inline(self.capacity) || need > to_end || head + need > tail {
                return Err(bad);
            }
            return Ok(Some(Entry { kind, len: len as usize, at: head + 8, next: head + need }));
        }
    }

    /// Every entry from the head to the tail, without consuming any. This is for inspection only:
    /// a reader may consume the entries meanwhile, and a writer may reuse their room.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn entries(&self) -> Result<Vec<Entry>, LaneError> {
        let (head, tail) = self.indices()?;
        let mut out = Vec::new();
        let mut at = head;
        while let Some(e) = self.entry_between(at, tail)? {
            at = e.next;
            out.push(e);
        }
        Ok(out)
    }

    /// Reader: copies an entry's bytes into `out`, replacing what `out` held.
    pub(crate) fn read(&self, e: &Entry, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(e.len);
        let first = (self.in_ring(e.at) / 8) as usize;
        // An entry that `entry_between` checked is one run of the ring, because entries never
        // wrap. If an entry still reaches past the ring's end, `Ring::read` reads it word by word,
        // with each index masked into the ring.
        let Some(words) = self.ring_words().get(first..first + words_for(e.len) as usize) else {
            for i in 0..words_for(e.len) {
                out.extend_from_slice(&self.ring_word(e.at + i * 8).load(Ordering::Relaxed).to_le_bytes());
            }
            out.truncate(e.len);
            return;
        };
        // The usual entry, one block record of four words, gathered on the stack and appended
        // at once (about ten instructions fewer than a word-by-word append).
        if let Ok(w) = <&[AtomicU64; 4]>::try_from(words) {
            let mut b = [0u8; 32];
            for (to, word) in b.chunks_exact_mut(8).zip(w) {
                to.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
            }
            out.extend_from_slice(&b[..e.len]);
            return;
        }
        let (whole, rest) = (e.len / 8, e.len % 8);
        for word in &words[..whole] {
            out.extend_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
        }
        if let Some(last) = words.get(whole).filter(|_| rest > 0) {
            out.extend_from_slice(&last.load(Ordering::Relaxed).to_le_bytes()[..rest]);
        }
    }

    /// Reader: frees an entry's room. Once the ring is down to its low-water mark, `Ring::consume`
    /// also wakes a writer that waits for room.
    pub(crate) fn consume(&self, e: &Entry) {
        self.h.head.store(e.next, Ordering::Release);
        // Pairs with the fence in `wait_for_room`.
        fence(Ordering::SeqCst);
        let waiting = &self.h.waiting;
        if waiting.load(Ordering::Relaxed) == 1 {
            // The tail stands still while its writer waits. A corrupt tail may wake the writer
            // early or not at all. The writer's sleep is cut into slices, so the writer then sees
            // the damage itself.
            let used = self.h.tail.load(Ordering::Relaxed).saturating_sub(e.next);
            if self.capacity.saturating_sub(used) >= self.low_water() && waiting.swap(0, Ordering::AcqRel) == 1 {
                crate::sys::futex::bump_and_wake_all(&self.h.room);
            }
        }
    }

    /// The free bytes that a waiting writer waits for: half the ring, and always enough room for
    /// the largest entry after a filler (each of the two is under `capacity / 4 + 16` bytes).
    /// libzmq's pipes use their low-water mark the same way. A writer faster than its reader then
    /// sleeps once per half ring, not once per entry. With more writers than processors, the
    /// sleeping writer leaves the processor to the reader.
    fn low_water(&self) -> u64 {
        self.capacity / 2 + 64
    }

    /// Drops everything unread and returns the dropped entries, oldest first. Only the fuzz target
    /// uses `Ring::take_all`, to check what a damaged ring yields. A lane's last holder does not
    /// use it: that holder takes the entries back one by one, and marks each entry's blocks first
    /// (see `lanes::release_contents`).
    #[cfg(feature = "fuzzing")]
    pub(crate) fn take_all(&self, out: &mut Vec<(u32, Vec<u8>)>) -> Result<(), LaneError> {
        let end = self.tail()?;
        while let Some(e) = self.peek_before(end)? {
            let mut bytes = Vec::new();
            self.read(&e, &mut bytes);
            self.h.head.store(e.next, Ordering::Release);
            out.push((e.kind, bytes));
        }
        Ok(())
    }

    /// Reader, before sleeping in its socket: marks the reader asleep. Returns false when something
    /// arrived meanwhile; the reader then stays awake.
    pub(crate) fn sleep(&self) -> Result<bool, LaneError> {
        self.h.asleep.store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if self.is_empty()? {
            return Ok(true);
        }
        self.h.asleep.store(0, Ordering::Relaxed);
        Ok(false)
    }

    /// Reader: marks the reader awake again. A writer may have taken the `asleep` flag already and
    /// sent a wake frame. The reader skips such frames.
    pub(crate) fn wake_up(&self) {
        self.h.asleep.store(0, Ordering::Relaxed);
    }

    /// Writer: announces that the writer waits until the ring is down to the low-water mark.
    /// Returns the futex value to wait on, or `None` when the ring reached the mark meanwhile.
    pub(crate) fn wait_for_room(&self) -> Result<Option<u32>, LaneError> {
        let seen = crate::sys::futex::low32(&self.h.room);
        self.h.waiting.store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let (head, tail) = self.indices()?;
        if self.capacity - (tail - head) >= self.low_water() {
            self.stop_waiting();
            return Ok(None);
        }
        Ok(Some(seen))
    }

    /// Writer: marks the writer as no longer waiting. A reader then does not read the tail on every
    /// `Ring::consume`.
    pub(crate) fn stop_waiting(&self) {
        self.h.waiting.store(0, Ordering::Relaxed);
    }

    /// The word a waiting writer sleeps on.
    pub(crate) fn room_word(&self) -> &'a AtomicU64 {
        &self.h.room
    }

    /// Whether a frame of `frame_len` bytes fits now.
    pub(crate) fn has_room(&self, frame_len: usize) -> Result<bool, LaneError> {
        Ok(self.room_for(frame_len)?.is_some())
    }

    /// Where an entry for a frame of `frame_len` bytes goes. Returns the tail, the filler to skip
    /// first (an entry never wraps), and the entry's size in bytes. Returns `None` when the entry
    /// does not fit now.
    fn room_for(&self, frame_len: usize) -> Result<Option<(u64, u64, u64)>, LaneError> {
        let (head, tail) = self.indices()?;
        Ok(Self::room_between(head, tail, frame_len, self.capacity))
    }

    /// [`Ring::room_for`], computed from the last head seen (`seen`). That head is at most the
    /// current head, so the room it shows is really there. `Ring::room_seen` reads the head again,
    /// and keeps it in `seen`, only when the old head shows too little room.
    fn room_seen(&self, frame_len: usize, seen: &Cell<u64>) -> Result<Option<(u64, u64, u64)>, LaneError> {
        let tail = self.h.tail.load(Ordering::Acquire);
        let head = seen.get();
        // Check the tail as `Ring::indices` does, but against the head seen.
        if tail % 8 == 0 && tail <= MAX_INDEX && head <= tail && tail - head <= self.capacity {
            if let Some(room) = Self::room_between(head, tail, frame_len, self.capacity) {
                return Ok(Some(room));
            }
        }
        let (head, tail) = self.indices()?;
        seen.set(head);
        Ok(Self::room_between(head, tail, frame_len, self.capacity))
    }

    /// The tail, the filler to skip, and the entry's size in bytes, for a frame of `frame_len`
    /// bytes between a checked `head` and `tail`. Returns `None` when the entry does not fit.
    fn room_between(head: u64, tail: u64, frame_len: usize, capacity: u64) -> Option<(u64, u64, u64)> {
        let need = 8 + words_for(frame_len) * 8;
        let to_end = capacity - (tail & (capacity - 1));
        let skip = if to_end < need { to_end } else { 0 };
        (tail + skip + need - head <= capacity).then_some((tail, skip, need))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(capacity: u64) -> Vec<AtomicU64> {
        (0..block_bytes(capacity) / 8).map(|_| AtomicU64::new(0)).collect()
    }

    fn take(r: &Ring<'_>) -> Option<(u32, Vec<u8>)> {
        let e = r.peek().unwrap()?;
        let mut out = Vec::new();
        r.read(&e, &mut out);
        r.consume(&e);
        Some((e.kind, out))
    }

    #[test]
    fn frames_come_out_in_order_across_wraps() {
        let w = words(MIN_CAPACITY);
        let writer = Ring::init(&w, MIN_CAPACITY, 7);
        let reader = Ring::open(&w).unwrap();
        assert_eq!((reader.claim(9), reader.claim(10)), (Claim::Fresh, Claim::Taken));
        assert_eq!(writer.reader(), 9);
        assert!(!writer.orphan(), "claimed: not the writer's to leave");
        let mut next_in = 0u32;
        let mut next_out = 0u32;
        for round in 0..2000u32 {
            let len = (round as usize * 13) % 300 + 1;
            while writer.push(KIND_FRAME, &vec![next_in as u8; len], || {}).unwrap() {
                next_in += 1;
                if next_in % 3 == 0 {
                    break;
                }
            }
            while let Some((kind, bytes)) = take(&reader) {
                assert_eq!(kind, KIND_FRAME);
                assert!(!bytes.is_empty() && bytes.iter().all(|&b| b == next_out as u8));
                next_out += 1;
            }
        }
        assert_eq!(next_in, next_out);
        assert!(next_in > 2000, "{next_in}");
    }

    #[test]
    fn a_full_ring_refuses_and_then_has_room() {
        let w = words(MIN_CAPACITY);
        let r = Ring::init(&w, MIN_CAPACITY, 1);
        let frame = [5u8; 28];
        let mut n = 0;
        while r.push(KIND_FRAME, &frame, || {}).unwrap() {
            n += 1;
        }
        assert_eq!(n, MIN_CAPACITY / 40);
        assert!(!r.has_room(28).unwrap());
        assert_eq!(r.wait_for_room().unwrap(), Some(0));
        take(&r).unwrap();
        assert!(r.has_room(28).unwrap(), "one entry fits again");
        assert_eq!(futex_value(&r), 0, "but a waiting writer sleeps on down to the low-water mark");
        let mut taken = 1;
        while futex_value(&r) == 0 {
            take(&r).unwrap();
            taken += 1;
        }
        assert_eq!(taken, (MIN_CAPACITY / 2 + 64).div_ceil(40), "woken once half the ring is free");
        assert_eq!(r.wait_for_room().unwrap(), None, "no sleep while the ring is below the mark");
        while take(&r).is_some() {}
        assert_eq!(futex_value(&r), 1, "one wake per wait");
        assert!(r.push(KIND_FRAME, &frame, || {}).unwrap());
    }

    fn futex_value(r: &Ring<'_>) -> u32 {
        crate::sys::futex::low32(r.room_word())
    }

    #[test]
    fn a_sleeping_reader_is_woken_once() {
        let w = words(MIN_CAPACITY);
        let r = Ring::init(&w, MIN_CAPACITY, 1);
        assert!(r.sleep().unwrap());
        r.push(KIND_FRAME, b"x", || {}).unwrap();
        assert!(r.reader_needs_wake());
        r.push(KIND_FRAME, b"y", || {}).unwrap();
        assert!(!r.reader_needs_wake());
        assert!(!r.sleep().unwrap(), "data waiting: no sleep");
    }

    #[test]
    fn corrupt_words_are_errors_not_panics() {
        let w = words(MIN_CAPACITY);
        let r = Ring::init(&w, MIN_CAPACITY, 1);
        r.push(KIND_FRAME, b"hello", || {}).unwrap();
        r.h.tail.store(MIN_CAPACITY * 3, Ordering::Relaxed);
        assert!(matches!(r.peek(), Err(LaneError::Indices { .. })));
        r.force_indices(u64::MAX - 7, u64::MAX - 7);
        assert!(matches!(r.push(KIND_FRAME, b"x", || {}), Err(LaneError::Indices { .. })), "indices near the end");
        r.force_indices(0, 0);
        r.h.tail.store(16, Ordering::Relaxed);
        w[HEADER_WORDS].store(u64::from(u32::MAX) | 1 << 32, Ordering::Relaxed);
        assert!(matches!(r.peek(), Err(LaneError::Entry { .. })));
        w[HEADER_WORDS].store(9 << 32, Ordering::Relaxed);
        assert!(matches!(r.peek(), Err(LaneError::Entry { kind: 9, .. })));
        w[HEADER_WORDS].store(u64::from(KIND_SKIP) << 32, Ordering::Relaxed);
        assert!(matches!(r.peek(), Err(LaneError::Entry { .. })), "a skip must reach the end of the ring");
        r.h.capacity.store(MIN_CAPACITY + 8, Ordering::Relaxed);
        assert!(matches!(Ring::open(&w), Err(LaneError::Header)));
        r.h.capacity.store(MIN_CAPACITY * 2, Ordering::Relaxed);
        assert!(matches!(Ring::open(&w), Err(LaneError::Header)), "capacity beyond the block");
        r.h.tag.magic.store(0, Ordering::Relaxed);
        assert!(matches!(Ring::open(&w[..10]), Err(LaneError::Header)));
    }

    #[test]
    fn a_lane_its_writer_left_goes_to_the_first_claim() {
        let w = words(MIN_CAPACITY);
        let r = Ring::init(&w, MIN_CAPACITY, 1);
        assert!(r.orphan());
        assert_eq!(r.reader(), ORPHANED);
        assert_eq!((r.claim(5), r.claim(6)), (Claim::Orphaned, Claim::Taken));
        assert_eq!(r.reader(), 5);
    }

    #[test]
    fn each_end_closes_once_and_sees_the_other() {
        let w = words(MIN_CAPACITY);
        let r = Ring::init(&w, MIN_CAPACITY, 1);
        assert_eq!(r.close(WRITER_CLOSED), 0);
        assert_eq!(r.close(READER_CLOSED), WRITER_CLOSED);
    }
}
