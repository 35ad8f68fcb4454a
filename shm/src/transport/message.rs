//! Messages of the shared-memory transport: a reference to a block of a managed segment.
//!
//! The block carries an atomic reference count. A message holds one reference; `copy_from` adds one
//! (no bytes are copied, even across processes); dropping releases one, and whoever releases the
//! last frees the block, in whatever process that is. A successful send hands the sender's reference
//! to the receiver: the sent message is left empty and frees nothing.
//!
//! A message can also refer to a piece of an unmanaged region. Such a piece has no reference count
//! until the message is first copied or received; then a small block of a managed segment holds
//! the count and names the piece (see `region::count`), and whoever releases the last reference
//! acknowledges the piece to the region's creator: a holder's release, or the sweep of a killed
//! holder.
//!
//! Bytes are readable through `data()` while the message lives. They are writable through
//! `data_mut()` only while this message holds the only reference to a block; otherwise `data_mut`
//! first copies them into a block of its own, so no other holder (in any process) ever sees a
//! write. A region piece is always copied first: the region's memory is its creator's, and other
//! messages made from the same bytes count no reference to them.

use crate::error::ShmError;
use crate::meta::{MetaError, RcHandle, Record};
use crate::region::map::RegionMap;
use crate::segment::tickets::{Kind, TicketError, Tickets};
use crate::transport::attachment::Attachment;
use crate::transport::region::Region;

use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Where a received record comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A socket: anyone who reached the endpoint could have sent it.
    Socket,
    /// A lane (or a block a lane entry named): written by a process of the session.
    Lane,
    /// A lane entry's own copy, taken by its reader, whose block records the reader checked and
    /// marked its own as it took the entry (see `lanes::remark_entry_with`): not checked again.
    Remarked,
    /// [`Source::Remarked`], each block's mark changed by the reader: one reference, its own, so
    /// not shared, and nothing to list.
    RemarkedAlone,
}

/// A message of the shared-memory transport.
///
/// # Examples
///
/// A copy shares the block: both messages read the same bytes, and the block counts two
/// references; the last message dropped, in any process, frees it.
///
/// ```
/// use fairmq_shm::{ShmConfig, Transport};
///
/// let mut config = ShmConfig::new("doc", &format!("doc-message-{}", std::process::id()));
/// config.segment_size = 16 << 20;
/// let t = Transport::new(&config)?;
/// let mut original = t.new_message_with_size(5)?;
/// original.data_mut()?.copy_from_slice(b"event");
///
/// let mut copy = t.new_message();
/// copy.copy_from(&original)?;
/// assert_eq!(copy.data(), b"event");
/// assert_eq!(original.data_ptr(), copy.data_ptr(), "one block, not two");
/// assert_eq!(original.refcount(), 2);
/// drop(copy);
/// assert_eq!(original.refcount(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Message {
    pub(crate) mgr: Arc<Attachment>,
    body: Body,
    /// The entry of its reference in this transport's ledger, when the block is shared (see
    /// `ledger`; [`crate::session::ledger::NONE`]: not listed).
    listed: std::sync::atomic::AtomicU32,
}

enum Body {
    Empty,
    /// A block of a managed segment; `generation`: its slot's generation for this use (see `slots`).
    Block {
        seg: u16,
        offset: u64,
        delta: u32,
        size: usize,
        slot: u32,
        generation: u32,
    },
    /// Boxed: a piece is more than twice a block's size, and every message is moved often (into
    /// and out of vectors, returned in results); a piece's allocation is one per region message
    /// made, received or copied.
    Region(Box<Piece>),
}

/// A piece of an unmanaged region. While it lives, its bytes count as in use by this process
/// (see `Region::write`).
struct Piece {
    map: Arc<RegionMap>,
    offset: u64,
    size: usize,
    hint: u64,
    /// The shared reference count, made by the first copy (set once, hence the `OnceLock`: copying
    /// takes `&self`).
    rc: OnceLock<SharedCount>,
    /// The size counted as held (`size` may shrink later, through `set_used_size`).
    held: u64,
}

impl Piece {
    fn new(map: Arc<RegionMap>, offset: u64, size: usize, hint: u64, rc: OnceLock<SharedCount>) -> Piece {
        map.hold(offset, size as u64);
        Piece { map, offset, size, hint, rc, held: size as u64 }
    }
}

impl Drop for Piece {
    fn drop(&mut self) {
        self.map.unhold(self.offset, self.held);
    }
}

/// Where a region piece's shared count lives: the block (as records name it) and its slot, looked
/// up once, so that adding and dropping references touches only the slot.
#[derive(Clone, Copy)]
struct SharedCount {
    handle: RcHandle,
    slot: u32,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.body {
            Body::Empty => f.write_str("Message(empty)"),
            Body::Block { seg, offset, size, .. } => {
                f.debug_struct("Message").field("segment", seg).field("offset", offset).field("size", size).finish()
            }
            Body::Region(p) => f
                .debug_struct("Message")
                .field("region", &p.map.id())
                .field("offset", &p.offset)
                .field("size", &p.size)
                .finish(),
        }
    }
}

impl Message {
    fn with(mgr: Arc<Attachment>, body: Body) -> Message {
        Message { mgr, body, listed: crate::session::ledger::NONE.into() }
    }

    pub(crate) fn empty(mgr: Arc<Attachment>) -> Message {
        Message::with(mgr, Body::Empty)
    }

    /// A message of `size` bytes (their content is whatever the block held) aligned to `align`.
    pub(crate) fn allocate(mgr: Arc<Attachment>, size: usize, align: usize) -> Result<Message, ShmError> {
        if align as u64 > crate::segment::tlsf::MAX_ALIGN || (align != 0 && !align.is_power_of_two()) {
            return Err(ShmError::Config(format!(
                "message alignment {align} is not a power of two up to {}",
                crate::segment::tlsf::MAX_ALIGN
            )));
        }
        if size == 0 {
            return Ok(Message::empty(mgr));
        }
        let b = mgr.allocate(size, align)?;
        let seg = mgr.own().id();
        Ok(Message::with(
            mgr,
            Body::Block { seg, offset: b.offset, delta: b.delta, size, slot: b.slot, generation: b.generation },
        ))
    }

    /// A message referring to `size` bytes at `offset` of `region`, zero-copy; `hint` comes back in the
    /// region's release callback.
    pub(crate) fn from_region(
        mgr: Arc<Attachment>,
        region: &Region,
        offset: usize,
        size: usize,
        hint: u64,
    ) -> Result<Message, ShmError> {
        let map = region.map().clone();
        if region.attachment().names() != mgr.names() {
            return Err(ShmError::ForeignRegion { id: map.id() });
        }
        map.check(offset as u64, size as u64).map_err(|_| ShmError::OutsideRegion {
            offset: offset as u64,
            size: size as u64,
            region_size: map.size(),
        })?;
        map.made_message();
        let piece = Piece::new(map, offset as u64, size, hint, OnceLock::new());
        Ok(Message::with(mgr, Body::Region(Box::new(piece))))
    }

    /// A message holding a copy of `bytes`.
    pub(crate) fn copy_of(mgr: Arc<Attachment>, bytes: &[u8]) -> Result<Message, ShmError> {
        let mut m = Message::allocate(mgr, bytes.len(), 0)?;
        m.data_mut()?.copy_from_slice(bytes);
        Ok(m)
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        match &self.body {
            Body::Empty => 0,
            Body::Block { size, .. } => *size,
            Body::Region(p) => p.size,
        }
    }

    /// The region and offset of a region message (`None` for other messages).
    pub fn region_piece(&self) -> Option<(u16, u64)> {
        match &self.body {
            Body::Region(p) => Some((p.map.id(), p.offset)),
            _ => None,
        }
    }

    /// Whether the size is 0.
    pub fn is_empty(&self) -> bool {
        self.size() == 0
    }

    /// The bytes.
    pub fn data(&self) -> &[u8] {
        match &self.body {
            Body::Empty => &[],
            Body::Block { seg, offset, delta, size, .. } => {
                let p = self.mgr.mapped(*seg).data_ptr(*offset, *delta, *size);
                // SAFETY: the block is live while we hold our reference, and `p..p+size` lies inside the
                // mapping (checked when the block was allocated or its record validated). No holder
                // writes while another reference exists (see `data_mut`), and our own writes need
                // `&mut self`, so nothing writes these bytes while this borrow lasts.
                unsafe { std::slice::from_raw_parts(p, *size) }
            }
            Body::Region(p) => {
                let ptr = p.map.ptr(p.offset, p.size);
                // SAFETY: the range was checked against the region when the message was made or its
                // record validated, and the mapping lives as long as `p.map`. The region's creator
                // does not rewrite a piece before its acknowledgement (FairMQ's contract), which
                // comes only after this message is gone.
                unsafe { std::slice::from_raw_parts(ptr, p.size) }
            }
        }
    }

    /// Address of the data in this process, null when the size is 0.
    pub fn data_ptr(&self) -> *const u8 {
        if self.is_empty() {
            std::ptr::null()
        } else {
            self.data().as_ptr()
        }
    }

    /// The bytes, writable. If other references to the block exist, or the message is a region
    /// piece, the bytes are first copied into a new block (which can fail for lack of memory).
    pub fn data_mut(&mut self) -> Result<&mut [u8], ShmError> {
        if self.refcount() > 1 || matches!(self.body, Body::Region(_)) {
            let mut private = Message::allocate(self.mgr.clone(), self.size(), 0)?;
            if let Body::Block { seg, offset, delta, size, .. } = &private.body {
                let dst = private.mgr.mapped(*seg).data_ptr(*offset, *delta, *size);
                // SAFETY: `private` is a fresh block of `size` bytes referenced only by us; the source
                // is our live block of the same size. Distinct blocks never overlap.
                unsafe { std::ptr::copy_nonoverlapping(self.data().as_ptr(), dst, *size) };
            }
            std::mem::swap(self, &mut private);
        }
        match &mut self.body {
            Body::Empty => Ok(&mut []),
            Body::Block { seg, offset, delta, size, .. } => {
                let p = self.mgr.mapped(*seg).data_ptr(*offset, *delta, *size);
                // SAFETY: in bounds as in `data`; we hold the only reference (count 1), so no other
                // message in any process reads or writes the block, and `&mut self` excludes our own.
                Ok(unsafe { std::slice::from_raw_parts_mut(p, *size) })
            }
            Body::Region(_) => unreachable!("a region piece was copied into a block of its own above"),
        }
    }

    /// Number of messages (in all processes) referring to this block; 1 for an empty message.
    pub fn refcount(&self) -> u32 {
        match self.count_word() {
            None => 1,
            Some(w) => w.load(Ordering::Acquire) as u32,
        }
    }

    /// The shared reference count of the block, or of the region piece once copied.
    fn count_word(&self) -> Option<&std::sync::atomic::AtomicU64> {
        match &self.body {
            Body::Empty => None,
            Body::Block { seg, offset, slot, .. } => Some(self.mgr.mapped(*seg).rc(*offset, *slot)),
            Body::Region(p) => p.rc.get().map(|c| self.mgr.mapped(c.handle.segment).rc(c.handle.offset, c.slot)),
        }
    }

    /// A block message's bytes as shared words (a lane's ring); `None` for other messages and for
    /// sizes that are not whole words.
    pub(crate) fn words(&self) -> Option<&[std::sync::atomic::AtomicU64]> {
        match &self.body {
            Body::Block { seg, offset, delta, size, .. } => {
                self.mgr.mapped(*seg).block_words(*offset, *delta, *size as u64)
            }
            _ => None,
        }
    }

    /// Makes sure the message has a shared reference count (region pieces get one on first use),
    /// before references are added for other holders. A region piece's count block names the
    /// piece and is listed in this transport's ledger, marked shared: if this process is killed,
    /// the sweep of the dead acknowledges the piece with the last reference (see
    /// `region::count`). An error when the segment has no room for the block, or the ledger
    /// none for its entry: the piece stays without one.
    pub(crate) fn share(&self) -> Result<(), ShmError> {
        self.make_count(false)
    }

    /// [`Message::share`]; `at_once`: without waiting for memory (a receive's).
    fn make_count(&self, at_once: bool) -> Result<(), ShmError> {
        let Body::Region(p) = &self.body else { return Ok(()) };
        if p.rc.get().is_some() {
            return Ok(());
        }
        let bytes = crate::region::count::BYTES as usize;
        let b = if at_once { self.mgr.allocate_now(bytes)? } else { self.mgr.allocate(bytes, 0)? };
        let own = self.mgr.own();
        let delta = u16::try_from(b.delta).expect("an unaligned small block starts right after its header");
        let words = own.block_words(b.offset, b.delta, crate::region::count::BYTES).expect("a fresh aligned block");
        let ack = crate::region::ack_queue::Ack { offset: p.offset, size: p.size as u64, hint: p.hint };
        crate::region::count::write(words, p.map.id(), ack);
        let count = SharedCount { handle: RcHandle { segment: own.id(), offset: b.offset, delta }, slot: b.slot };
        if p.rc.set(count).is_err() {
            // Another thread made one first: give ours back.
            own.rc(b.offset, b.slot).fetch_sub(1, Ordering::Relaxed);
            self.mgr.release(own, b.offset, b.delta, b.slot);
            return Ok(());
        }
        // Listed while the block still names this transport as its holder, then marked shared
        // (see `list_before_sharing`); a copy made meanwhile in another thread marked it already.
        // Not listed (no room), it stays this transport's: the sweep frees it with what the
        // process held alone, and the piece is not acknowledged (as before count blocks).
        self.list(false)?;
        let shared = u64::from(crate::segment::slots::SHARED) << 32 | 1;
        let held = u64::from(self.mgr.owner()) << 32 | 1;
        let _ = own.rc(b.offset, b.slot).compare_exchange(held, shared, Ordering::AcqRel, Ordering::Relaxed);
        Ok(())
    }

    /// A message just received takes hold of what it refers to: a shared reference is listed in
    /// this transport's ledger, and a region piece without a count block gets one (see
    /// [`Message::share`]), so that the sweep of the dead releases either if this process is
    /// killed. Without room for them (logged) the message is kept as it is.
    fn take_hold(&self) {
        match &self.body {
            Body::Region(p) if p.rc.get().is_none() => {
                if let Err(e) = self.make_count(true) {
                    log::warn!("a region piece received is not counted (lost if this process is killed): {e}");
                }
            }
            _ => self.list_if_shared(),
        }
    }

    /// One more reference, owned by whoever receives a record of this message (publishing). Call
    /// [`Message::share`] first. The block is marked shared: from now on no single holder is named
    /// in its count word (see [`Message::mark_held`]).
    pub(crate) fn add_reference(&self) {
        if let Some(w) = self.count_word() {
            let shared = u64::from(crate::segment::slots::SHARED) << 32;
            let _ = w.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(shared | ((v as u32) + 1) as u64));
        }
    }

    /// [`Message::add_reference`] to a block that another process may free meanwhile (a lane's, whose
    /// offer someone else may be resolving): none is added to a block nobody holds any more
    /// (false). The message must not be dropped then: it holds no reference.
    /// Nor to a block freed and handed out again for another use (see `slots`).
    pub(crate) fn try_add_reference(&self) -> bool {
        let Some(w) = self.count_word() else { return false };
        if !self.is_current_use() {
            return false;
        }
        let shared = u64::from(crate::segment::slots::SHARED) << 32;
        let Ok(before) = w.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            (v as u32 > 0).then(|| shared | ((v as u32) + 1) as u64)
        }) else {
            return false;
        };
        if self.is_current_use() {
            return true;
        }
        // Freed and handed out again between the check and the update: the other use gets its
        // count back, and its mark unless it changed meanwhile (then it stays shared, which only
        // keeps a sweep from freeing it).
        let added = shared | u64::from((before as u32) + 1);
        if w.compare_exchange(added, before, Ordering::AcqRel, Ordering::Relaxed).is_err() {
            w.fetch_sub(1, Ordering::AcqRel);
        }
        false
    }

    /// Whether this message's block is still in the use the message was made for (a region
    /// piece, an empty message: always).
    fn is_current_use(&self) -> bool {
        match self.body {
            Body::Block { seg, offset, slot, generation, .. } => {
                self.mgr.mapped(seg).check_generation(offset, slot, generation).is_ok()
            }
            _ => true,
        }
    }

    /// Lists this message's reference in the transport's ledger if its block is shared and it is
    /// not listed yet (see `ledger`): a sweep drops it if this process is killed. Without room
    /// in the ledger (logged there) it stays unlisted: what holds it cannot refuse it.
    pub(crate) fn list_if_shared(&self) {
        let _ = self.list_shared();
    }

    /// [`Message::list_if_shared`], saying when the ledger had no room.
    fn list_shared(&self) -> Result<(), ShmError> {
        match self.count_word() {
            Some(w) if (w.load(Ordering::Relaxed) >> 32) as u32 == crate::segment::slots::SHARED => self.list(false),
            _ => Ok(()),
        }
    }

    /// Lists this message's reference in the ledger before its block is shared (by
    /// [`Message::add_reference`], next): a sweep drops a listed reference only once the block is
    /// shared (before, the block names its holder and is freed by that), so a process killed
    /// between the two steps leaves nothing out. Listing after the sharing left a reference that
    /// nobody dropped. An error when the ledger has no room (logged there).
    pub(crate) fn list_before_sharing(&self) -> Result<(), ShmError> {
        self.list(false)
    }

    /// Lists this message's reference to a lane's block in the transport's ledger (see `ledger`):
    /// a sweep drops it if this process is killed, and releases what the lane holds with the last
    /// reference. Without room in the ledger (logged there) it stays unlisted.
    pub(crate) fn list_lane(&self) {
        let _ = self.list(true);
    }

    /// An error when the ledger has no room for the entry (logged there): the reference is not
    /// listed.
    fn list(&self, lane: bool) -> Result<(), ShmError> {
        use crate::session::ledger::Referent;
        let (seg, offset, delta, slot, what) = match &self.body {
            &Body::Block { seg, offset, delta, slot, .. } => {
                (seg, offset, delta, slot, if lane { Referent::Lane } else { Referent::Message })
            }
            Body::Region(p) => match p.rc.get() {
                Some(c) => (c.handle.segment, c.handle.offset, u32::from(c.handle.delta), c.slot, Referent::Piece),
                None => return Ok(()),
            },
            Body::Empty => return Ok(()),
        };
        if self.listed.load(Ordering::Relaxed) == crate::session::ledger::NONE {
            let i = self.mgr.ledger().note(self.mgr.management(), seg, offset, delta, slot, what)?;
            // Two threads copying the same message at once: one entry is enough.
            if self
                .listed
                .compare_exchange(crate::session::ledger::NONE, i, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                self.mgr.ledger().forget(self.mgr.management(), i);
            }
        }
        Ok(())
    }

    /// Its record is about to be published in a lane (the last step before it is): its block goes
    /// in flight, and a shared reference stops being listed (see [`Message::unlist_for_hand_over`]).
    pub(crate) fn hand_to_lane(&self) {
        self.mark_in_flight(true);
        self.unlist_for_hand_over();
    }

    /// Its record is about to be handed to a ticket or published in a lane: a shared reference
    /// stops being listed first, so that once it is handed over only its taker drops it (the
    /// sweep of this process, killed after the hand-over, would drop it as well). Killed in
    /// between, this process leaves a reference nobody drops, the ledger's direction.
    pub(crate) fn unlist_for_hand_over(&self) {
        self.unlist();
    }

    /// Clears this message's ledger entry: its reference is dropped or handed over next.
    fn unlist(&self) {
        // Most messages are not listed: a load, not a locked exchange, on every send and drop.
        if self.listed.load(Ordering::Relaxed) == crate::session::ledger::NONE {
            return;
        }
        let i = self.listed.swap(crate::session::ledger::NONE, Ordering::Relaxed);
        if i != crate::session::ledger::NONE {
            self.mgr.ledger().forget(self.mgr.management(), i);
        }
    }

    /// Names `mark` (a transport's owner mark, or [`crate::segment::slots::IN_FLIGHT`]) as the holder of
    /// this message's block, if it is the block's only reference: a sweep of dead transports frees
    /// the blocks their transports held alone. A shared block keeps its mark.
    pub(crate) fn mark_held(&self, mark: u32) {
        if let (Body::Block { .. }, Some(w)) = (&self.body, self.count_word()) {
            let v = w.load(Ordering::Relaxed);
            // Count 1 is our own reference: nobody else changes the word meanwhile.
            if sole_holder(v) {
                // Release: who swaps the mark away (see `segment::remark`) then sees the block's
                // generation as its hand-out wrote it.
                w.store(u64::from(mark) << 32 | 1, Ordering::Release);
            }
        }
    }

    /// Marks the block as in flight (handed to a socket or lane, its taker not known yet), or
    /// back in our hands when the hand-over failed (only if it is still marked in flight: a
    /// receiver that claimed it first has marked it as its own).
    pub(crate) fn mark_in_flight(&self, in_flight: bool) {
        if in_flight {
            self.mark_held(crate::segment::slots::IN_FLIGHT);
        } else {
            self.mgr.mark_back(&self.record());
        }
    }

    /// Takes back a reference of `add_reference` whose record did not go out; this message still
    /// holds its own, so the count never reaches 0 here.
    pub(crate) fn drop_reference(&self) {
        if let Some(w) = self.count_word() {
            w.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Makes this message refer to `other`'s block or region piece (shared, not copied). Fails only
    /// when the first copy of a region piece finds no room for its reference count, or the
    /// transport's ledger no room to list the references (see `ledger`; both need a little of the
    /// segment): this message is then as it was, or empty.
    pub fn copy_from(&mut self, other: &Message) -> Result<(), ShmError> {
        other.share()?;
        other.list_before_sharing()?;
        other.add_reference();
        let body = match &other.body {
            Body::Empty => Body::Empty,
            &Body::Block { seg, offset, delta, size, slot, generation } => {
                Body::Block { seg, offset, delta, size, slot, generation }
            }
            Body::Region(p) => {
                Body::Region(Box::new(Piece::new(p.map.clone(), p.offset, p.size, p.hint, p.rc.clone())))
            }
        };
        self.release();
        if !Arc::ptr_eq(&self.mgr, &other.mgr) {
            // The block's segment is mapped by `other`'s attachment; take that one along.
            self.mgr = other.mgr.clone();
        }
        self.body = body;
        if let Err(e) = self.list_shared() {
            // Refused rather than held unlisted: a kill would leave it for the session's life.
            self.release();
            return Err(e);
        }
        Ok(())
    }

    /// Shrinks the message to its first `size` bytes. False (nothing changed) if larger than the
    /// current size. Size 0 releases the block now; otherwise an unshared block gives its tail back.
    pub fn set_used_size(&mut self, new: usize) -> bool {
        let current = self.size();
        if new > current {
            log::error!("cannot set used size higher than original.");
            return false;
        }
        if new == current {
            return true;
        }
        if new == 0 && !matches!(self.body, Body::Region(_)) {
            self.release();
            return true;
        }
        let unshared = self.refcount() == 1;
        let mgr = self.mgr.clone();
        match &mut self.body {
            Body::Block { seg, offset, delta, size, slot, .. } => {
                if unshared {
                    if let Err(e) = mgr.mapped(*seg).shrink(*offset, *slot, u64::from(*delta) + new as u64) {
                        log::error!("could not shrink message: {e}");
                    }
                }
                *size = new;
            }
            // A region piece only gets shorter: the region's memory is the creator's. Its count
            // block says so too: a sweep acknowledges the size a release would.
            Body::Region(p) => {
                p.size = new;
                if let Some(c) = p.rc.get() {
                    let seg = mgr.mapped(c.handle.segment);
                    let words =
                        seg.block_words(c.handle.offset, u32::from(c.handle.delta), crate::region::count::BYTES);
                    words.into_iter().for_each(|w| crate::region::count::set_size(w, new as u64));
                }
            }
            Body::Empty => {}
        }
        true
    }

    /// Releases the block; the message becomes empty.
    pub fn rebuild(&mut self) {
        self.release();
    }

    /// Moves the content into a new message (no bytes copied, no reference added); this one
    /// becomes empty.
    pub fn take(&mut self) -> Message {
        let empty = Message::empty(self.mgr.clone());
        std::mem::replace(self, empty)
    }

    /// Releases the block and allocates `size` new bytes.
    pub fn rebuild_with_size(&mut self, size: usize, align: usize) -> Result<(), ShmError> {
        self.release();
        *self = Message::allocate(self.mgr.clone(), size, align)?;
        Ok(())
    }

    /// Releases the block and copies `bytes` into a new one.
    pub fn rebuild_from_slice(&mut self, bytes: &[u8]) -> Result<(), ShmError> {
        self.release();
        *self = Message::copy_of(self.mgr.clone(), bytes)?;
        Ok(())
    }

    /// The metadata record that describes this message on the wire.
    pub fn record(&self) -> Record {
        match &self.body {
            Body::Empty => Record::Empty,
            &Body::Block { seg, offset, delta, size, slot, generation } => {
                Record::Block { segment: seg, offset, delta, size: size as u64, slot, generation }
            }
            Body::Region(p) => Record::Region {
                region: p.map.id(),
                offset: p.offset,
                size: p.size as u64,
                hint: p.hint,
                rc: p.rc.get().map(|c| c.handle),
            },
        }
    }

    /// Whether the message may travel on sockets of `mgr` (same session).
    pub(crate) fn same_session(&self, mgr: &Arc<Attachment>) -> bool {
        Arc::ptr_eq(&self.mgr, mgr) || self.mgr.names() == mgr.names()
    }

    /// After a successful send: the receiver owns our reference now.
    pub(crate) fn hand_over(&mut self) {
        self.unlist();
        self.body = Body::Empty;
    }

    /// The message a received record hands over. On a socket, only a handed record (a ticket)
    /// hands anything over; in a lane, which only the session's processes write, a record describes
    /// its message directly.
    #[inline]
    pub(crate) fn receive(mgr: &Arc<Attachment>, rec: Record, source: Source) -> Result<Message, MetaError> {
        // The usual record of a lane entry: a block its reader marked its own, nothing to list.
        if let (Record::Block { .. }, Source::RemarkedAlone) = (rec, source) {
            return Message::of_block(mgr, rec);
        }
        Message::receive_any(mgr, rec, source)
    }

    /// [`Message::receive`] of any record, from any source.
    fn receive_any(mgr: &Arc<Attachment>, rec: Record, source: Source) -> Result<Message, MetaError> {
        let m = match rec {
            Record::Empty => return Ok(Message::empty(mgr.clone())),
            Record::Handed { segment, ticket, nonce } => {
                // Marked ours before the claim ends: a process killed in between leaves a claim
                // under way that the sweep of the dead finishes (see `tickets::CLAIMING`). A
                // shared reference is listed before the claim ends too: the sweep then drops it.
                let mut m = Message::claim(mgr, segment, ticket, nonce)?;
                let marked = mgr.remark(&m.record(), crate::segment::slots::IN_FLIGHT, mgr.owner());
                if marked != crate::segment::Remark::Refused {
                    m.take_hold();
                }
                mgr.segment(segment)?.tickets().claimed(ticket, mgr.owner());
                if marked == crate::segment::Remark::Refused {
                    // A block its sender did not hand over (still some holder's, or freed): a
                    // faulty sender's ticket. Never taken, never freed here.
                    m.hand_over();
                    return Err(MetaError::NotHandedOver);
                }
                return Ok(m);
            }
            Record::Block { .. } if source == Source::Remarked => {
                let m = Message::of_block(mgr, rec)?;
                m.list_if_shared();
                return Ok(m);
            }
            Record::Block { .. } if source == Source::RemarkedAlone => return Message::of_block(mgr, rec),
            _ if source != Source::Socket => Message::from_record(mgr, rec)?,
            _ => return Err(MetaError::Untracked),
        };
        m.mark_held(mgr.owner());
        m.take_hold();
        Ok(m)
    }

    /// Turns the records of a frame into messages appended to `out` (each made a `T` by `wrap`:
    /// a caller's own message type holds them where they land); their payload bytes. If a
    /// record is bad, the messages made of the others are released (they are ours) and the error
    /// returned. From a socket, the records after a bad one are not claimed (a sender that won
    /// such a part takes back the others, see `peers::reclaim`, and a part claimed here would be
    /// lost to both); those of a lane entry its reader took are ours already, and released too.
    pub(crate) fn receive_all<T>(
        mgr: &Arc<Attachment>,
        records: &[Record],
        source: Source,
        out: &mut Vec<T>,
        wrap: fn(Message) -> T,
    ) -> Result<usize, MetaError> {
        let start = out.len();
        let mut total = 0;
        for (i, &r) in records.iter().enumerate() {
            match Message::receive(mgr, r, source) {
                Ok(m) => {
                    total += m.size();
                    out.push(wrap(m));
                }
                Err(e) => {
                    out.truncate(start);
                    if matches!(source, Source::Remarked | Source::RemarkedAlone) {
                        records[i + 1..].iter().for_each(|&r| drop(Message::receive(mgr, r, source)));
                    }
                    return Err(e);
                }
            }
        }
        Ok(total)
    }

    /// What ticket `ticket` of segment `segment` hands over, checked like any record, if it was
    /// issued as `kind`; with the table to claim it from (it stays out until claimed).
    fn resolve<'a>(
        mgr: &'a Arc<Attachment>,
        segment: u16,
        ticket: u32,
        nonce: u64,
        kind: Kind,
    ) -> Result<(Tickets<'a>, Message), MetaError> {
        let tickets = mgr.segment(segment)?.tickets();
        let (issued_as, rec) = tickets.resolve(ticket, nonce)?;
        if issued_as != kind {
            return Err(TicketError::WrongKind(ticket, issued_as).into());
        }
        Ok((tickets, Message::from_record(mgr, rec)?))
    }

    /// Claims the message ticket `ticket` of segment `segment`: what it describes is checked like
    /// any record, then the ticket is won or the check undone (it was never ours). The claim stays
    /// under way until the block is marked ours (see `receive`).
    pub(crate) fn claim(mgr: &Arc<Attachment>, segment: u16, ticket: u32, nonce: u64) -> Result<Message, MetaError> {
        let (tickets, mut m) = Message::resolve(mgr, segment, ticket, nonce, Kind::Message)?;
        if !tickets.claim_as(ticket, nonce, mgr.owner()) {
            m.hand_over(); // taken by another claim meanwhile: never ours to release
            return Err(TicketError::NotIssued(ticket).into());
        }
        Ok(m)
    }

    /// Claims the offer of a lane, ticket `ticket` of segment `segment` (see `lanes`): the lane's
    /// block, with a reference of our own taken *before* the ticket is won. While an offer is out
    /// its writer's reference keeps the block; once it is claimed, the claimant holds its own. So
    /// a sweep that finds no offer out and drops a dead writer's reference never frees a block a
    /// claimant is about to take one on.
    pub(crate) fn claim_offer(
        mgr: &Arc<Attachment>,
        segment: u16,
        ticket: u32,
        nonce: u64,
        lost: impl FnOnce(Message),
    ) -> Result<Message, MetaError> {
        let (tickets, mut m) = Message::resolve(mgr, segment, ticket, nonce, Kind::Offer)?;
        if !m.try_add_reference() {
            // Released by whoever claimed the offer first (the block is free): no reference of
            // ours to drop.
            m.hand_over();
            return Err(TicketError::NotIssued(ticket).into());
        }
        crate::kill_point::here("claim_offer: referenced, not claimed");
        if !tickets.claim(ticket, nonce) {
            // Taken by another claim meanwhile: our own reference goes, as a holder of the lane
            // drops it (`lost`: with the last one, what the lane holds).
            lost(m);
            return Err(TicketError::NotIssued(ticket).into());
        }
        Ok(m)
    }

    /// A message for a record that describes it, after checking it against this process's
    /// mappings. Takes over the reference the sender handed over.
    pub(crate) fn from_record(mgr: &Arc<Attachment>, rec: Record) -> Result<Message, MetaError> {
        match rec {
            Record::Empty => Ok(Message::empty(mgr.clone())),
            Record::Block { segment, offset, delta, size, slot, generation } => {
                mgr.segment(segment)?.check_use(offset, delta, size, slot, generation)?;
                Message::of_block(mgr, rec)
            }
            Record::Handed { .. } => Err(MetaError::Untracked),
            Record::Region { region, offset, size, hint, rc } => {
                let map = mgr.region_view(region)?;
                map.check(offset, size)?;
                let count = match rc {
                    Some(h) => {
                        let slot = crate::region::count::checked(mgr.segment(h.segment)?, h, region, offset)?;
                        OnceLock::from(SharedCount { handle: h, slot })
                    }
                    None => OnceLock::new(),
                };
                let size =
                    usize::try_from(size).map_err(|_| MetaError::OutOfBounds { segment: region, offset, size })?;
                let piece = Piece::new(map, offset, size, hint, count);
                Ok(Message::with(mgr.clone(), Body::Region(Box::new(piece))))
            }
        }
    }

    /// The message of a block record already checked (see `Segment::check_use`).
    #[inline]
    fn of_block(mgr: &Arc<Attachment>, rec: Record) -> Result<Message, MetaError> {
        let Record::Block { segment, offset, delta, size, slot, generation } = rec else {
            return Err(MetaError::Untracked);
        };
        let size = usize::try_from(size).map_err(|_| MetaError::OutOfBounds { segment, offset, size })?;
        Ok(Message::with(mgr.clone(), Body::Block { seg: segment, offset, delta, size, slot, generation }))
    }

    fn release(&mut self) {
        self.unlist();
        match std::mem::replace(&mut self.body, Body::Empty) {
            Body::Empty => {}
            Body::Block { seg, offset, delta, slot, .. } => {
                self.drop_block_reference(seg, offset, delta, slot);
            }
            Body::Region(p) => {
                if let Some(&SharedCount { handle: h, slot }) = p.rc.get() {
                    if !self.drop_block_reference(h.segment, h.offset, u32::from(h.delta), slot) {
                        return; // other messages still refer to the piece
                    }
                }
                self.mgr.release_region_piece(&p.map, p.offset, p.size as u64, p.hint);
            }
        }
    }

    /// Drops this message's reference to its block, as a drop does; when it was the last, `last`
    /// runs first with the block's words, the block still allocated and nobody else's (a lane's
    /// last holder releases what the lane holds: see `lanes::LaneBlock`). The message is empty
    /// before `last` runs: if `last` panics, the block stays (a leak, never a count dropped twice).
    pub(crate) fn release_last_with(&mut self, last: impl FnOnce(&Arc<Attachment>, Option<&[AtomicU64]>)) {
        let Body::Block { seg, offset, delta, size, slot, .. } = self.body else { return self.release() };
        self.unlist();
        self.body = Body::Empty;
        let segment = self.mgr.mapped(seg);
        // No shortcut for a sole holder: another may drop its reference at the same time, and
        // whoever takes the count to zero is the last.
        if segment.rc(offset, slot).fetch_sub(1, Ordering::Release) & 0xffff_ffff == 1 {
            // Pairs with the other holders' Release decrements: their accesses happen before ours.
            fence(Ordering::Acquire);
            last(&self.mgr, segment.block_words(offset, delta, size as u64));
            self.mgr.release(segment, offset, delta, slot);
        }
    }

    /// Drops one reference to a block, freeing it if it was the last; returns whether it was.
    fn drop_block_reference(&self, seg: u16, offset: u64, delta: u32, slot: u32) -> bool {
        let segment = self.mgr.mapped(seg);
        // Read at once, while our reference keeps the block (its size cannot change meanwhile).
        let (rc, size) = segment.count_and_size(offset, slot);
        // The sole holder (the usual case for a received message): nobody else can add a reference
        // (that takes one), so the count needs no locked decrement; `release` overwrites the word.
        // Acquire pairs with the Release decrements of earlier holders, as the fence below does.
        if sole_holder(rc.load(Ordering::Acquire)) {
            self.mgr.release_sized(segment, offset, delta, slot, size);
            return true;
        }
        let prev = rc.fetch_sub(1, Ordering::Release);
        if prev & 0xffff_ffff == 1 {
            // Pairs with the other holders' Release decrements: their accesses happen before the free.
            fence(Ordering::Acquire);
            self.mgr.release_sized(segment, offset, delta, slot, size);
            true
        } else {
            false
        }
    }
}

/// Whether the holder of one reference to a block whose count word is `word` holds it alone, so
/// that nobody can add one while it drops it. Not so for a shared block: a lane's block (always
/// shared) gets a reference from whoever resolves an offer of it, holding none before (see
/// `Message::try_add_reference`). Its last holder's plain store could overwrite such a reference
/// (two processes releasing the same orphaned offer), leaving a freed block with a count, or
/// counting down a block handed out again since; its count goes down atomically.
fn sole_holder(word: u64) -> bool {
    word as u32 == 1 && (word >> 32) as u32 != crate::segment::slots::SHARED
}

impl Drop for Message {
    #[inline]
    fn drop(&mut self) {
        // Most drops are of empty messages (sent, or made to receive into): no call for them.
        if matches!(self.body, Body::Empty) && self.listed.load(Ordering::Relaxed) == crate::session::ledger::NONE {
            return;
        }
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use crate::segment::slots::{IN_FLIGHT, SHARED};

    /// The last reference to a shared block (a lane's, to which a resolver of its offer may add
    /// one meanwhile) is dropped by an atomic decrement; only a block one holder names takes the
    /// plain store. Before, any count of 1 did.
    #[test]
    fn only_a_block_one_holder_names_is_dropped_without_a_locked_decrement() {
        assert!(super::sole_holder(7 << 32 | 1));
        assert!(super::sole_holder(u64::from(IN_FLIGHT) << 32 | 1));
        assert!(!super::sole_holder(u64::from(SHARED) << 32 | 1), "a lane's block, or a copy's last");
        assert!(!super::sole_holder(7 << 32 | 2));
    }
}
