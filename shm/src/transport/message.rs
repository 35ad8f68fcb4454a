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
    /// A lane, or a block that a lane entry named: a process of the session wrote the record.
    Lane,
    /// A lane entry's own copy, taken by the entry's reader. When the reader took the entry, it
    /// checked the entry's block records and marked the blocks as its own (see
    /// `lanes::remark_entry_with`). So the records are not checked again.
    Remarked,
    /// Like [`Source::Remarked`], and the reader changed the mark of each block. Each block then
    /// has one reference, the reader's own. So no block is shared, and there is nothing to list in
    /// the ledger.
    RemarkedAlone,
}

/// A message of the shared-memory transport.
///
/// # Examples
///
/// A copy shares the block: both messages read the same bytes, and the block counts two references.
/// The last message to be dropped, in whichever process, frees the block.
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
    /// The entry in this transport's ledger that lists this message's reference, when the block is
    /// shared (see `ledger`). [`crate::session::ledger::NONE`] means that the reference is not
    /// listed.
    listed: std::sync::atomic::AtomicU32,
}

enum Body {
    Empty,
    /// A block of a managed segment. `generation` is the generation of the block's slot for this
    /// use of the block (see `slots`).
    Block {
        seg: u16,
        offset: u64,
        delta: u32,
        size: usize,
        slot: u32,
        generation: u32,
    },
    /// Boxed because a `Piece` is more than twice the size of the `Block` variant, and every
    /// message is moved often (into and out of vectors, and returned in results). The box costs one
    /// allocation per region message made, received or copied.
    Region(Box<Piece>),
}

/// A piece of an unmanaged region. While it lives, its bytes count as in use by this process
/// (see `Region::write`).
struct Piece {
    map: Arc<RegionMap>,
    offset: u64,
    size: usize,
    hint: u64,
    /// The shared reference count, made by the first copy. It is set only once, and copying takes
    /// `&self`: hence the `OnceLock`.
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

/// Where a region piece's shared count lives: the count block, as records name it, and the block's
/// slot. The slot is looked up once, so that adding or dropping a reference touches only the slot.
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

    /// A message of `size` bytes, aligned to `align`. The bytes are not cleared: they hold whatever
    /// the block held before.
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

    /// A message that refers to `size` bytes at `offset` of `region`, without copying them. The
    /// region's release callback gets `hint` back.
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
                // SAFETY: the block stays live while this message holds its reference. `p..p+size`
                // lies inside the mapping: this was checked when the block was allocated or its
                // record validated. No holder writes while another reference exists (see
                // `data_mut`). This message's own writes need `&mut self`. So nothing writes these
                // bytes while this borrow lasts.
                unsafe { std::slice::from_raw_parts(p, *size) }
            }
            Body::Region(p) => {
                let ptr = p.map.ptr(p.offset, p.size);
                // SAFETY: the range was checked against the region when the message was made or its
                // record validated. The mapping lives as long as `p.map`. By FairMQ's contract, the
                // region's creator does not rewrite a piece before the piece is acknowledged. The
                // acknowledgement comes only after this message is gone.
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
                // SAFETY: `private` is a fresh block of `size` bytes, and only `private` refers to
                // it. The source is this message's live block, of the same size. Distinct blocks
                // never overlap.
                unsafe { std::ptr::copy_nonoverlapping(self.data().as_ptr(), dst, *size) };
            }
            std::mem::swap(self, &mut private);
        }
        match &mut self.body {
            Body::Empty => Ok(&mut []),
            Body::Block { seg, offset, delta, size, .. } => {
                let p = self.mgr.mapped(*seg).data_ptr(*offset, *delta, *size);
                // SAFETY: the range is in bounds, as in `data`. This message holds the only
                // reference (the count is 1), so no other message in any process reads or writes
                // the block. `&mut self` rules out any other access through this message.
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

    /// The bytes of a block message as shared words, as a lane's ring uses them. `None` for other
    /// messages, and for sizes that are not a whole number of words.
    pub(crate) fn words(&self) -> Option<&[std::sync::atomic::AtomicU64]> {
        match &self.body {
            Body::Block { seg, offset, delta, size, .. } => {
                self.mgr.mapped(*seg).block_words(*offset, *delta, *size as u64)
            }
            _ => None,
        }
    }

    /// Makes sure that the message has a shared reference count, before references are added for
    /// other holders. A region piece gets one on first use.
    ///
    /// A region piece's count lives in a small count block, which also names the piece. The count
    /// block is listed in this transport's ledger and marked shared. So if this process is killed,
    /// the sweep of the dead acknowledges the piece when it drops the last reference (see
    /// `region::count`).
    ///
    /// Returns an error when the segment has no room for the count block (the piece then stays
    /// without one), or when the ledger has no room for the block's entry (the block then stays
    /// unlisted).
    pub(crate) fn share(&self) -> Result<(), ShmError> {
        self.make_count(false)
    }

    /// Does what [`Message::share`] does. With `at_once`, it does not wait for memory: a receive
    /// uses that.
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
        // The count block is listed while it still names this transport as its holder, and it is
        // marked shared after that (see `list_before_sharing`). A copy made meanwhile in another
        // thread has marked it shared already. If the ledger has no room, the block is not listed
        // and stays this transport's. The sweep then frees it with the other blocks that the
        // process held alone, and the piece is not acknowledged (as before count blocks existed).
        self.list(false)?;
        let shared = u64::from(crate::segment::slots::SHARED) << 32 | 1;
        let held = u64::from(self.mgr.owner()) << 32 | 1;
        let _ = own.rc(b.offset, b.slot).compare_exchange(held, shared, Ordering::AcqRel, Ordering::Relaxed);
        Ok(())
    }

    /// Makes a message just received take hold of what it refers to. A shared reference is listed
    /// in this transport's ledger. A region piece without a count block gets one (see
    /// [`Message::share`]). Either way, the sweep of the dead releases the reference if this
    /// process is killed. Without room for the entry or the block, the message is kept as it is,
    /// and the problem is logged.
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

    /// Adds one more reference, owned by whoever receives a record of this message (used when
    /// publishing). Call [`Message::share`] first. The block is marked shared: from now on, its
    /// count word names no single holder (see [`Message::mark_held`]).
    pub(crate) fn add_reference(&self) {
        if let Some(w) = self.count_word() {
            let shared = u64::from(crate::segment::slots::SHARED) << 32;
            let _ = w.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(shared | ((v as u32) + 1) as u64));
        }
    }

    /// Does what [`Message::add_reference`] does, for a block that another process may free
    /// meanwhile: a lane's block, whose offer someone else may be resolving.
    ///
    /// Returns false, and adds no reference, when nobody holds the block any more, or when the
    /// block was freed and handed out again for another use (see `slots`). The message must not be
    /// dropped then, because it holds no reference.
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
        // The block was freed and handed out again between the check and the update. The other use
        // gets its count back, and its mark too, unless the word changed meanwhile. In that case
        // the block stays marked shared, which only keeps a sweep from freeing it.
        let added = shared | u64::from((before as u32) + 1);
        if w.compare_exchange(added, before, Ordering::AcqRel, Ordering::Relaxed).is_err() {
            w.fetch_sub(1, Ordering::AcqRel);
        }
        false
    }

    /// Whether this message's block is still in the use that the message was made for. Always true
    /// for a region piece or an empty message.
    fn is_current_use(&self) -> bool {
        match self.body {
            Body::Block { seg, offset, slot, generation, .. } => {
                self.mgr.mapped(seg).check_generation(offset, slot, generation).is_ok()
            }
            _ => true,
        }
    }

    /// Lists this message's reference in the transport's ledger, if its block is shared and the
    /// reference is not listed yet (see `ledger`). A sweep then drops the reference if this process
    /// is killed. Without room in the ledger, the reference stays unlisted (the ledger logs this),
    /// because whatever holds the reference cannot refuse it.
    pub(crate) fn list_if_shared(&self) {
        let _ = self.list_shared();
    }

    /// Does what [`Message::list_if_shared`] does, and returns an error when the ledger had no
    /// room.
    fn list_shared(&self) -> Result<(), ShmError> {
        match self.count_word() {
            Some(w) if (w.load(Ordering::Relaxed) >> 32) as u32 == crate::segment::slots::SHARED => self.list(false),
            _ => Ok(()),
        }
    }

    /// Lists this message's reference in the ledger before its block is shared;
    /// [`Message::add_reference`] shares the block next. A sweep drops a listed reference only once
    /// the block is shared. Before that, the block names its holder, and the sweep frees it as that
    /// holder's block. So a process killed between the two steps leaves no reference that nobody
    /// drops. Listing after the sharing left a reference that nobody dropped.
    ///
    /// Returns an error when the ledger has no room; the ledger logs it.
    pub(crate) fn list_before_sharing(&self) -> Result<(), ShmError> {
        self.list(false)
    }

    /// Lists this message's reference to a lane's block in the transport's ledger (see `ledger`).
    /// If this process is killed, a sweep drops the reference. When that is the last reference, the
    /// sweep also releases what the lane holds. Without room in the ledger, the reference stays
    /// unlisted, and the ledger logs it.
    pub(crate) fn list_lane(&self) {
        let _ = self.list(true);
    }

    /// Returns an error when the ledger has no room for the entry; the ledger logs it, and the
    /// reference is not listed.
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
            // Two threads may copy the same message at once; one entry is enough.
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

    /// Call this when the message's record is about to be published in a lane, as the last step
    /// before publishing. The block is marked in flight, and a shared reference stops being listed
    /// (see [`Message::unlist_for_hand_over`]).
    pub(crate) fn hand_to_lane(&self) {
        self.mark_in_flight(true);
        self.unlist_for_hand_over();
    }

    /// Call this when the message's record is about to be handed to a ticket or published in a
    /// lane. A shared reference stops being listed first, so that once it is handed over, only its
    /// taker drops it. Otherwise, if this process were killed after the hand-over, the sweep of
    /// this process would drop the reference as well. If this process is killed between the two
    /// steps, it leaves a reference that nobody drops. That is the direction the ledger always errs
    /// in: a leak, never a reference dropped twice.
    pub(crate) fn unlist_for_hand_over(&self) {
        self.unlist();
    }

    /// Clears this message's ledger entry. Call it just before the reference is dropped or handed
    /// over.
    fn unlist(&self) {
        // Most messages are not listed. So every send and drop pays a load here, not a locked
        // exchange.
        if self.listed.load(Ordering::Relaxed) == crate::session::ledger::NONE {
            return;
        }
        let i = self.listed.swap(crate::session::ledger::NONE, Ordering::Relaxed);
        if i != crate::session::ledger::NONE {
            self.mgr.ledger().forget(self.mgr.management(), i);
        }
    }

    /// Names `mark` as the holder of this message's block, if this message holds the block's only
    /// reference. `mark` is a transport's owner mark, or [`crate::segment::slots::IN_FLIGHT`]. The
    /// mark matters because a sweep of dead transports frees the blocks that those transports held
    /// alone. A shared block keeps its mark.
    pub(crate) fn mark_held(&self, mark: u32) {
        if let (Body::Block { .. }, Some(w)) = (&self.body, self.count_word()) {
            let v = w.load(Ordering::Relaxed);
            // A count of 1 is this message's own reference, so nobody else changes the word
            // meanwhile.
            if sole_holder(v) {
                // Release ordering: whoever later swaps the mark away (see `segment::remark`) sees
                // the block's generation as the block's hand-out wrote it.
                w.store(u64::from(mark) << 32 | 1, Ordering::Release);
            }
        }
    }

    /// With `in_flight` true, marks the block as in flight: handed to a socket or lane, with its
    /// taker not known yet. With `in_flight` false, marks the block as back in our hands after a
    /// failed hand-over. That happens only if the block is still marked in flight: a receiver that
    /// claimed it first has marked it as its own.
    pub(crate) fn mark_in_flight(&self, in_flight: bool) {
        if in_flight {
            self.mark_held(crate::segment::slots::IN_FLIGHT);
        } else {
            self.mgr.mark_back(&self.record());
        }
    }

    /// Takes back a reference that `add_reference` added, when its record did not go out. This
    /// message still holds its own reference, so the count never reaches 0 here.
    pub(crate) fn drop_reference(&self) {
        if let Some(w) = self.count_word() {
            w.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Makes this message refer to `other`'s block or region piece. The bytes are shared, not
    /// copied.
    ///
    /// Fails only in two cases: the first copy of a region piece finds no room for its reference
    /// count, or the transport's ledger has no room to list the references (see `ledger`). Both
    /// need a little memory of the segment. After a failure, this message is either as it was or
    /// empty.
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
            // `other`'s attachment maps the block's segment, so this message takes that attachment
            // along.
            self.mgr = other.mgr.clone();
        }
        self.body = body;
        if let Err(e) = self.list_shared() {
            // Refuse the copy rather than hold an unlisted reference: if this process were killed,
            // the block would stay allocated for the rest of the session.
            self.release();
            return Err(e);
        }
        Ok(())
    }

    /// Shrinks the message to its first `new` bytes. Returns false, and changes nothing, if `new`
    /// is larger than the current size. A size of 0 releases the block at once. Otherwise, a block
    /// that no other message shares gives its tail back to the segment.
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
            // A region piece only gets shorter, and gives no memory back: the region's memory
            // belongs to its creator. The piece's count block gets the new size too, so that a
            // sweep acknowledges the same size that a release would.
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

    /// Empties the message after a successful send: the receiver now owns this message's reference,
    /// so the message frees nothing.
    pub(crate) fn hand_over(&mut self) {
        self.unlist();
        self.body = Body::Empty;
    }

    /// Returns the message that a received record hands over. On a socket, only a handed record (a
    /// ticket) hands anything over. In a lane, which only the session's processes write, a record
    /// describes its message directly.
    #[inline]
    pub(crate) fn receive(mgr: &Arc<Attachment>, rec: Record, source: Source) -> Result<Message, MetaError> {
        // The usual record of a lane entry: a block that the entry's reader marked as its own, with
        // nothing to list.
        if let (Record::Block { .. }, Source::RemarkedAlone) = (rec, source) {
            return Message::of_block(mgr, rec);
        }
        Message::receive_any(mgr, rec, source)
    }

    /// Does what [`Message::receive`] does, for any record from any source.
    fn receive_any(mgr: &Arc<Attachment>, rec: Record, source: Source) -> Result<Message, MetaError> {
        let m = match rec {
            Record::Empty => return Ok(Message::empty(mgr.clone())),
            Record::Handed { segment, ticket, nonce } => {
                // The block is marked ours before the claim ends. A process killed in between
                // leaves a claim under way, and the sweep of the dead finishes that claim (see
                // `tickets::CLAIMING`). A shared reference is also listed before the claim ends, so
                // the sweep then drops it.
                let mut m = Message::claim(mgr, segment, ticket, nonce)?;
                let marked = mgr.remark(&m.record(), crate::segment::slots::IN_FLIGHT, mgr.owner());
                if marked != crate::segment::Remark::Refused {
                    m.take_hold();
                }
                mgr.segment(segment)?.tickets().claimed(ticket, mgr.owner());
                if marked == crate::segment::Remark::Refused {
                    // The sender did not hand this block over: the block is still some holder's, or
                    // freed. So the ticket comes from a faulty sender. The block was never taken,
                    // and it is not freed here.
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

    /// Turns the records of a frame into messages and appends them to `out`. `wrap` makes each
    /// message a `T`, so that a caller's own message type holds the messages where they land.
    /// Returns the total of their payload bytes.
    ///
    /// If a record is bad, the messages made from the other records are released (they are ours),
    /// and the error is returned. From a socket, the records after a bad one are not claimed: a
    /// sender that wins back such a part takes back the other parts too (see `peers::reclaim`), so
    /// a part claimed here would be lost to both the sender and the receiver. The records of a lane
    /// entry that its reader took are ours already, so the records after a bad one are released
    /// too.
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

    /// Returns what ticket `ticket` of segment `segment` hands over, checked like any record, if
    /// the ticket was issued as `kind`. Also returns the ticket table to claim the ticket from. The
    /// ticket stays issued until it is claimed.
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

    /// Claims the message ticket `ticket` of segment `segment`. What the ticket describes is
    /// checked like any record. Then either the ticket is won, or the check is undone because the
    /// message was never ours. The claim stays under way until the block is marked ours (see
    /// `receive`).
    pub(crate) fn claim(mgr: &Arc<Attachment>, segment: u16, ticket: u32, nonce: u64) -> Result<Message, MetaError> {
        let (tickets, mut m) = Message::resolve(mgr, segment, ticket, nonce, Kind::Message)?;
        if !tickets.claim_as(ticket, nonce, mgr.owner()) {
            m.hand_over(); // taken by another claim meanwhile: never ours to release
            return Err(TicketError::NotIssued(ticket).into());
        }
        Ok(m)
    }

    /// Claims the offer of a lane: ticket `ticket` of segment `segment` (see `lanes`). Returns the
    /// lane's block, with a reference of our own that is taken *before* the ticket is won.
    ///
    /// While an offer is out, its writer's reference keeps the block allocated. Once the offer is
    /// claimed, the claimant holds its own reference. So a sweep that finds no offer out, and drops
    /// a dead writer's reference, never frees a block that a claimant is about to take a reference
    /// on.
    pub(crate) fn claim_offer(
        mgr: &Arc<Attachment>,
        segment: u16,
        ticket: u32,
        nonce: u64,
        lost: impl FnOnce(Message),
    ) -> Result<Message, MetaError> {
        let (tickets, mut m) = Message::resolve(mgr, segment, ticket, nonce, Kind::Offer)?;
        if !m.try_add_reference() {
            // Whoever claimed the offer first has released the block, and the block is free. No
            // reference of ours is left to drop.
            m.hand_over();
            return Err(TicketError::NotIssued(ticket).into());
        }
        crate::kill_point::here("claim_offer: referenced, not claimed");
        if !tickets.claim(ticket, nonce) {
            // Another claim took the ticket meanwhile. `lost` drops our own reference the way a
            // holder of the lane drops it: with the last reference, it also releases what the lane
            // holds.
            lost(m);
            return Err(TicketError::NotIssued(ticket).into());
        }
        Ok(m)
    }

    /// Makes the message that `rec` describes, after checking the record against this process's
    /// mappings. The message takes over the reference that the sender handed over.
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

    /// Drops this message's reference to its block, as a drop does. When it was the last reference,
    /// `last` runs first, with the block's words. At that point the block is still allocated and
    /// nobody else's. A lane's last holder uses this to release what the lane holds (see
    /// `lanes::LaneBlock`).
    ///
    /// The message is empty before `last` runs. So if `last` panics, the block stays allocated: a
    /// leak, never a count dropped twice.
    pub(crate) fn release_last_with(&mut self, last: impl FnOnce(&Arc<Attachment>, Option<&[AtomicU64]>)) {
        let Body::Block { seg, offset, delta, size, slot, .. } = self.body else { return self.release() };
        self.unlist();
        self.body = Body::Empty;
        let segment = self.mgr.mapped(seg);
        // No shortcut for a sole holder: another holder may drop its reference at the same time,
        // and whoever takes the count to zero is the last.
        if segment.rc(offset, slot).fetch_sub(1, Ordering::Release) & 0xffff_ffff == 1 {
            // Pairs with the other holders' Release decrements: their accesses happen before ours.
            fence(Ordering::Acquire);
            last(&self.mgr, segment.block_words(offset, delta, size as u64));
            self.mgr.release(segment, offset, delta, slot);
        }
    }

    /// Drops one reference to a block, and frees the block if that was the last reference. Returns
    /// whether it was the last.
    fn drop_block_reference(&self, seg: u16, offset: u64, delta: u32, slot: u32) -> bool {
        let segment = self.mgr.mapped(seg);
        // Read the count and the size at once, while our reference keeps the block: the block's
        // size cannot change meanwhile.
        let (rc, size) = segment.count_and_size(offset, slot);
        // The sole holder is the usual case for a received message. Nobody else can add a
        // reference, because adding one takes holding one. So the count needs no locked decrement:
        // the release (`Attachment::release_sized`) overwrites the word. The Acquire load pairs
        // with the Release decrements of earlier holders, as the fence below does.
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

/// Whether the holder of one reference to a block, whose count word is `word`, holds the block
/// alone. Only then can nobody add a reference while the holder drops its own.
///
/// A shared block is never held alone in this sense. A lane's block is always shared, and whoever
/// resolves an offer of the lane adds a reference to the block without holding one before (see
/// `Message::try_add_reference`). A plain store by the block's last holder could overwrite such a
/// reference, for example when two processes release the same orphaned offer. That would leave a
/// freed block with a count, or count down a block that was handed out again since. So the count of
/// a shared block goes down atomically.
fn sole_holder(word: u64) -> bool {
    word as u32 == 1 && (word >> 32) as u32 != crate::segment::slots::SHARED
}

impl Drop for Message {
    #[inline]
    fn drop(&mut self) {
        // Most drops are of empty messages (sent ones, or ones made to receive into). They skip the
        // call to `release`.
        if matches!(self.body, Body::Empty) && self.listed.load(Ordering::Relaxed) == crate::session::ledger::NONE {
            return;
        }
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use crate::segment::slots::{IN_FLIGHT, SHARED};

    /// The last reference to a shared block is dropped by an atomic decrement. A lane's block is
    /// such a block: a resolver of its offer may add a reference meanwhile. Only a block whose
    /// count word names one holder takes the plain store. Before this change, any count of 1 did.
    #[test]
    fn only_a_block_one_holder_names_is_dropped_without_a_locked_decrement() {
        assert!(super::sole_holder(7 << 32 | 1));
        assert!(super::sole_holder(u64::from(IN_FLIGHT) << 32 | 1));
        assert!(!super::sole_holder(u64::from(SHARED) << 32 | 1), "a lane's block, or a copy's last");
        assert!(!super::sole_holder(7 << 32 | 2));
    }
}
