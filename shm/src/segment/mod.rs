//! A managed segment: a shared-memory file with a heap of blocks, which every process of the
//! session allocates from and frees to.
//!
//! [`Segment`] is one process's mapping of a segment. The file starts with a header and a robust
//! mutex, the *segment lock*, which guards the heap. The heap is a TLSF allocator (see [`tlsf`]).
//! Two tables after the heap describe its blocks. The layout:
//!
//! | bytes | [`Header`] field | content |
//! |---|---|---|
//! | 0..128 | `tag`, `size`, `heap_start`, `heap_end`, `id`, `epoch`, `waiters`, `recoveries`, `slots_at`, `nslots`, `slot_head`, `slot_hw`, `want`, `wake`, `tickets_at` | magic and layout version, size, heap bounds, id, free epoch (a futex word), waiters, recoveries, slot table place, slots, free slot list, slots ever used, block size the waiters need, wake issued, ticket table place |
//! | 128..192 | `lock` | the segment lock: a robust process-shared mutex |
//! | 192..200 | `name_tag` | the number of the file name the segment was made under (`files::name_tag`) |
//! | 200.. | | TLSF control words |
//! | 8192.. | | the depot of freed magazines (see [`depot`]) |
//! | [`HEAP_START`]..heap end | | blocks |
//! | heap end..`tickets_at` | | the slot table (see [`slots`]); a segment under 1 MiB has none |
//! | `tickets_at`..size | | the hand-over tickets (see [`tickets`]) |
//!
//! When a process dies holding the segment lock, the next process that takes the lock repairs the
//! heap and counts the repair in `recoveries` (see [`Segment::locked`]).
//!
//! This file holds the layout, allocation ([`Segment::allocate`]) and freeing ([`Segment::free`]).
//! Submodules hold the rest:
//!
//! - [`cache`]: each process's block caches, which keep the segment lock off the path of most
//!   messages.
//! - [`depot`]: the segment's shared store of freed magazines.
//! - [`reclaim`]: what the tickets hand over, and what dead processes left in the segment.
//! - [`ring`]: the ring of a lane, which lives in one block.
//! - [`slots`]: the slot table.
//! - [`tickets`]: the hand-over tickets.
//! - [`tlsf`]: the heap's allocator.
//! - [`waiting`]: processes that wait for memory, and the frees that wake them.

pub(crate) mod cache;
pub(crate) mod depot;
mod reclaim;
pub(crate) mod ring;
pub(crate) mod slots;
pub(crate) mod tickets;
pub(crate) mod tlsf;
mod waiting;

pub(crate) use reclaim::{remark, Remark, Ticketed};

use crate::error::ShmError;
use crate::segment::depot::{Depot, DEPOT_OWNER};
use crate::segment::slots::{Entry, Slots, NO_SLOT, SLOTTED};
use crate::segment::tickets::Tickets;
use crate::segment::tlsf::{Block, Tlsf};
use crate::sys::layout::{shared_layout, Kind, MutexPlace, Tag};
use crate::sys::mapping::{Created, Mapping};
use std::mem::{offset_of, size_of};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Identifies a managed segment file: its description, magic number and layout version. The layout
/// version is bumped whenever the segment layout changes.
const KIND: Kind = Kind { what: "managed segment", magic: u64::from_le_bytes(*b"FMQRSSEG"), layout: 7 };

shared_layout! {
    /// A segment's header and lock, bytes 0..200 (see the table in the module doc).
    pub(crate) struct Header {
        tag: Tag,
        size: AtomicU64,
        heap_start: AtomicU64,
        heap_end: AtomicU64,
        id: AtomicU64,
        /// The free epoch: the futex word that processes waiting for memory sleep on.
        epoch: AtomicU64,
        waiters: AtomicU64,
        recoveries: AtomicU64,
        slots_at: AtomicU64,
        nslots: AtomicU64,
        slot_head: AtomicU64,
        slot_hw: AtomicU64,
        /// The block size the waiters need.
        want: AtomicU64,
        /// 1 once a wake was issued since a waiter last armed. While it is 1, later frees skip
        /// the wake system call.
        wake: AtomicU64,
        tickets_at: AtomicU64,
        /// The robust mutex guarding the heap.
        lock: MutexPlace,
        /// The number of the file name that the segment was created under (see
        /// `files::name_tag`).
        name_tag: AtomicU64,
    }
}
const _: () = assert!(offset_of!(Header, tickets_at) == 120 && offset_of!(Header, lock) == 128);
const _: () = assert!(offset_of!(Header, name_tag) == 192);
const CTL_WORD: usize = size_of::<Header>() / 8;
const DEPOT_WORD: usize = 8192 / 8;
const HEAP_START: u64 = ((DEPOT_WORD + depot::WORDS) * 8).div_ceil(4096) as u64 * 4096;
const _: () = assert!((CTL_WORD + tlsf::CONTROL_WORDS) <= DEPOT_WORD);
/// The count word of a block in the depot: no reference, and the owner [`DEPOT_OWNER`].
const DEPOSITED: u64 = (DEPOT_OWNER as u64) << 32;

/// The smallest segment file we create: the header, a small heap and the smallest ticket table.
pub const MIN_SEGMENT_SIZE: u64 = HEAP_START + 4096 + tickets::MIN_TABLE_BYTES;
/// The bookkeeping of a segment under 1 MiB: the header, the allocator control words, the depot
/// and the smallest ticket table. Such a segment has no slot table.
const SMALL_OVERHEAD: u64 = HEAP_START + tickets::MIN_TABLE_BYTES;

/// The file size of a segment requested as `requested` bytes (`--shm-segment-size`).
///
/// FairMQ accepts any size. A request below [`MIN_SEGMENT_SIZE`] gets a heap of the requested
/// size on top of the bookkeeping, so that the requested bytes can really be allocated. The file
/// is never smaller than [`MIN_SEGMENT_SIZE`]. A request of 0 stays 0.
pub fn file_size_for(requested: u64) -> u64 {
    if requested == 0 {
        0
    } else if requested >= MIN_SEGMENT_SIZE {
        requested / 16 * 16
    } else {
        ((requested + SMALL_OVERHEAD).div_ceil(16) * 16).max(MIN_SEGMENT_SIZE)
    }
}

/// Memory figures of a segment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentStats {
    /// Segment id.
    pub id: u16,
    /// Total size in bytes.
    pub size: u64,
    /// Free bytes (in free blocks).
    pub free: u64,
    /// Used bytes (size minus free; headers and bookkeeping included).
    pub used: u64,
    /// Number of free blocks.
    pub free_blocks: u64,
    /// Number of used blocks.
    pub used_blocks: u64,
    /// 1 - (largest free block / free bytes). It is 0 when all free memory is in one piece.
    pub fragmentation: f64,
    /// How often the allocator was repaired after a process died holding its lock.
    pub recoveries: u64,
    /// Bytes of freed blocks kept in the depot for reuse (counted in `used`, not in `free`).
    pub cached: u64,
    /// Bytes of the largest free block (the largest message that fits without waiting).
    pub largest_free: u64,
}

/// One managed segment mapped in this process.
pub struct Segment {
    map: Mapping,
    id: u16,
    heap_end: u64,
    nslots: u32,
    tickets_at: u64,
    ntickets: u32,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment").field("id", &self.id).field("size", &self.size()).finish()
    }
}

/// Options applied when a segment is created or opened.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SegmentInit {
    pub zero: bool,
    pub mlock: bool,
}

impl Segment {
    /// Creates the segment at `path` without a race, or opens it if another process created it
    /// first. Returns the segment, and whether this call created it.
    pub(crate) fn open_or_create(path: &Path, tmp: &Path, id: u16, size: u64) -> Result<(Segment, bool), ShmError> {
        if size == 0 {
            return Err(ShmError::Config("segment size 0: a segment needs at least one byte".into()));
        }
        let size = file_size_for(size);
        let created = Mapping::create(path, tmp, size as usize, |m| {
            let h: &Header = m.view().ok_or_else(|| std::io::Error::other("segment smaller than its header"))?;
            let (end, tickets_at) = Self::tables_at(size);
            for (word, v) in [
                (&h.size, size),
                (&h.heap_start, HEAP_START),
                (&h.heap_end, end),
                (&h.slots_at, end),
                (&h.nslots, u64::from(slots::count_for(size))),
                (&h.tickets_at, tickets_at),
                (&h.id, u64::from(id)),
                (&h.name_tag, crate::sys::files::name_tag(path)),
            ] {
                word.store(v, Ordering::Relaxed);
            }
            m.init_mutex(&h.lock)?;
            Tlsf::new(m.words(), CTL_WORD, HEAP_START, end).format();
            // The tag is stamped last, so that other processes recognise the segment only once
            // it is complete.
            KIND.stamp(&h.tag);
            Ok(())
        })
        .map_err(|e| ShmError::file("creating managed segment (size: --shm-segment-size)", e))?;
        match created {
            Created::New(map) => Ok((Segment::from_mapping(map, id)?, true)),
            Created::Exists => Ok((Segment::open(path, id)?, false)),
        }
    }

    /// Opens an existing segment and checks its header.
    pub(crate) fn open(path: &Path, id: u16) -> Result<Segment, ShmError> {
        let map = Mapping::open(path).map_err(|e| ShmError::file("opening managed segment", e))?;
        Segment::from_mapping(map, id)
    }

    fn from_mapping(map: Mapping, id: u16) -> Result<Segment, ShmError> {
        let nslots = slots::count_for(map.len() as u64);
        let path = map.path().to_owned();
        KIND.open(
            map.words(),
            |h: &Header| &h.tag,
            |h| {
                let get = |w: &AtomicU64| w.load(Ordering::Acquire);
                let (size, start, end) = (get(&h.size), get(&h.heap_start), get(&h.heap_end));
                let consistent = size == map.len() as u64
                    && size >= MIN_SEGMENT_SIZE
                    && start == HEAP_START
                    && (end, get(&h.tickets_at)) == Self::tables_at(size)
                    && get(&h.slots_at) == end
                    && get(&h.nslots) == u64::from(nslots);
                if !consistent {
                    return Err(format!("inconsistent header: size {size}, heap {start}..{end}, file {}", map.len()));
                }
                match get(&h.id) {
                    found if found == u64::from(id) => crate::sys::files::check_name_tag(get(&h.name_tag), &path),
                    found => Err(format!("segment id {found} where {id} was expected")),
                }
            },
        )
        .map_err(|e| ShmError::Layout { name: map.path().display().to_string(), reason: e.to_string() })?;
        // Compute the table places from the file's size, which the check found the header to
        // agree with. Reading the header again instead could pick up a word that another process
        // changed after the check, and that word would go unchecked.
        let (heap_end, tickets_at) = Self::tables_at(map.len() as u64);
        let ntickets = tickets::count_for(map.len() as u64);
        Ok(Segment { map, id, heap_end, nslots, tickets_at, ntickets })
    }

    /// Where the slot table and the ticket table begin in a segment of `size` bytes (at least
    /// [`MIN_SEGMENT_SIZE`]). The slot table begins at the heap's end.
    fn tables_at(size: u64) -> (u64, u64) {
        let tickets_at = size - tickets::table_bytes(size);
        (tickets_at - slots::table_bytes(size), tickets_at)
    }

    pub(crate) fn apply(&self, init: SegmentInit) -> Result<(), ShmError> {
        let name = self.map.path().display().to_string();
        if init.zero {
            self.zero_free_memory()?;
        }
        if init.mlock {
            self.map
                .lock_in_memory()
                .map_err(|e| ShmError::io("could not lock the managed segment memory", &name, e))?;
        }
        Ok(())
    }

    /// Segment id.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// Total size.
    pub fn size(&self) -> u64 {
        self.map.len() as u64
    }

    fn words(&self) -> &[AtomicU64] {
        self.map.words()
    }

    /// The segment's header. Opening the segment checked that the header fits.
    fn header(&self) -> &Header {
        self.map.view().expect("a segment holds its header")
    }

    fn tlsf(&self) -> Tlsf<'_> {
        Tlsf::new(self.words(), CTL_WORD, HEAP_START, self.heap_end)
    }

    fn depot(&self) -> Depot<'_> {
        Depot::new(self.words(), DEPOT_WORD)
    }

    /// The hand-over tickets of messages sent from this segment's processes.
    pub(crate) fn tickets(&self) -> Tickets<'_> {
        Tickets::new(self.words(), (self.tickets_at / 8) as usize, self.ntickets)
    }

    fn slots(&self) -> Slots<'_> {
        let h = self.header();
        Slots::new(self.words(), (self.heap_end / 8) as usize, self.nslots, &h.slot_head, &h.slot_hw)
    }

    /// The number of blocks per magazine for blocks of `size` bytes in this segment. Below 2,
    /// blocks of that size are not cached.
    pub(crate) fn magazine_blocks(&self, size: u64) -> usize {
        depot::magazine_blocks(self.size(), size)
    }

    /// Runs `f` on the heap under the segment lock, repairing the heap first if a holder died.
    fn locked<T>(&self, f: impl FnOnce(&Tlsf<'_>) -> Result<T, ShmError>) -> Result<T, ShmError> {
        let t = self.tlsf();
        let mut repair = Ok(());
        let locked = self.map.mutex(&self.header().lock).lock(|| {
            self.header().recoveries.fetch_add(1, Ordering::Relaxed);
            log::warn!("segment {}: a process died holding the allocator lock; repairing the heap", self.id);
            repair = self.repair(&t);
            repair.is_ok()
        });
        // A failed repair leaves the lock unrecoverable. Return the repair's error first: it says
        // more than the lock's error.
        repair?;
        let _g = locked?;
        let r = f(&t);
        if let Err(ShmError::Corrupt(c)) = &r {
            // The free-list words are damaged, for example by a message written past its end
            // into the next block. If the chain of blocks is sound, rebuild the lists from the
            // blocks themselves, so that the next call finds them sound. (Without the rebuild,
            // every later allocation of that size failed for the rest of the session.) A broken
            // chain stays as it is: a rebuild would empty every list, or take user bytes for
            // headers.
            if t.chain_sound() {
                log::error!("segment {}: the heap's free lists are damaged at {}; rebuilding them", self.id, c.0);
                if let Err(e) = self.repair(&t) {
                    log::error!("segment {}: the heap could not be repaired: {e}", self.id);
                }
            } else {
                log::error!("segment {}: the heap's blocks are damaged at {}; left as they are", self.id, c.0);
            }
        }
        r
    }

    /// Rebuilds the heap's derived data and the slot table's free list, and empties the depot into
    /// the heap.
    ///
    /// A deposit or take that was cut short leaves depot blocks that none of the depot's magazines
    /// lists. All depot blocks carry the depot's owner mark, so the repair finds them by that mark.
    fn repair(&self, t: &Tlsf<'_>) -> Result<(), ShmError> {
        t.recover()?;
        let mut in_use = Vec::new();
        let mut in_depot = Vec::new();
        for (off, _, free) in t.walk() {
            if free {
                continue;
            }
            let slot = self.slot_of(off);
            if slot != NO_SLOT {
                in_use.push(slot);
            }
            if self.rc(off, slot).load(Ordering::Relaxed) == DEPOSITED {
                in_depot.push((off, slot));
            }
        }
        self.slots().rebuild(&in_use);
        self.depot().clear();
        // Return every block to the heap even if one fails, and report the first error.
        in_depot.into_iter().map(|(off, slot)| self.free_to_heap(t, off, slot)).fold(Ok(()), Result::and)
    }

    /// The slot of the used block at `off`, read from the block's header, or `NO_SLOT` if the
    /// block has no valid slot. Any offset is safe: words outside the mapping read as no slot, and
    /// a slot counts only when its entry names `off`.
    pub(crate) fn slot_of(&self, off: u64) -> u32 {
        let Ok(word) = self.tlsf().refcount_word(off) else { return NO_SLOT };
        let h = word.load(Ordering::Acquire);
        let slot = h as u32;
        match self.slots().entry(slot) {
            Some(e) if (h >> 32) as u32 == SLOTTED && e.offset == off => slot,
            _ => NO_SLOT,
        }
    }

    /// Returns a used block (and its slot) to the heap.
    fn free_to_heap(&self, t: &Tlsf<'_>, off: u64, slot: u32) -> Result<(), ShmError> {
        t.free(off)?;
        // Give the slot back after the free, not before. A crash between the two then leaves a
        // slot that no used block points to, and a rebuild frees that slot. The other order could
        // leave a used block that points to a reused slot.
        if slot != NO_SLOT {
            self.slots().give_back(slot);
        }
        Ok(())
    }

    /// Largest user size one message may have in this segment.
    #[cfg(any(test, feature = "testing"))]
    pub fn capacity(&self) -> u64 {
        self.tlsf().capacity()
    }

    /// Whether slot entry `e` describes a block that the depot may hand out as a block of `bsize`
    /// bytes: the block lies inside the heap, and it starts where a block header names the slot.
    /// Handing out a damaged entry made a message outside the mapping, a panic at the message's
    /// first access, or a message that aliased a live block.
    fn deposited(&self, e: &Entry, slot: u32, bsize: u64) -> bool {
        e.delta == tlsf::HDR
            && e.size == bsize
            && e.offset >= HEAP_START
            && e.offset % tlsf::ALIGN == 0
            && e.offset.checked_add(bsize).is_some_and(|end| end <= self.heap_end)
            && self.header_word(e.offset).load(Ordering::Acquire) == (u64::from(SLOTTED) << 32) | u64::from(slot)
    }

    /// The bytes of heap that a request needs, or `None` if the request can never fit.
    pub fn needed(&self, size: u64, align: u64) -> Option<u64> {
        Tlsf::block_size_for(size, align).filter(|&n| n <= self.heap_end - HEAP_START)
    }

    /// Allocates up to `count` blocks for `size` bytes aligned to `align`, under one lock, and
    /// appends them to `out`. The blocks carry the owner mark `owner`.
    ///
    /// A single block gets reference count 1. A cache refill (`count >= 2`) gets count 0 on every
    /// block, and the cache marks the block it hands out. So after the owner dies, a sweep can
    /// tell cached blocks from blocks in use. A refill takes a whole magazine from the depot when
    /// the depot holds one of the right size. Each block gets a slot while the slot table has
    /// free ones.
    pub(crate) fn allocate(
        &self,
        size: u64,
        align: u64,
        owner: u32,
        count: usize,
        out: &mut Vec<Block>,
    ) -> Result<(), ShmError> {
        let refill = count >= 2;
        let rc = (u64::from(owner) << 32) | u64::from(!refill);
        self.locked(|t| {
            let slots = self.slots();
            if refill && align <= tlsf::ALIGN {
                if let Some(need) = Tlsf::block_size_for(size, align) {
                    let mut taken = Vec::with_capacity(depot::BLOCKS);
                    if let Some(bsize) = self.depot().take(need, tlsf::MIN_BLOCK, &mut taken) {
                        for slot in taken.into_iter().map(|s| s as u32) {
                            // Every deposited block has a slot (see `free`), and its count
                            // word says `DEPOSITED`. Skip a damaged entry.
                            let Some(e) = slots.entry(slot) else { continue };
                            let count = slots.rc(slot);
                            if count.load(Ordering::Relaxed) != DEPOSITED || !self.deposited(&e, slot, bsize) {
                                log::error!("segment {}: the depot lists slot {slot}, not a deposited block", self.id);
                                continue;
                            }
                            count.store(rc, Ordering::Relaxed);
                            out.push(Block {
                                offset: e.offset,
                                delta: tlsf::HDR as u32,
                                size: bsize,
                                slot,
                                generation: 0,
                            });
                        }
                        return Ok(());
                    }
                }
            }
            for _ in 0..count {
                let Some(mut b) = t.alloc(size, align, owner)? else { break };
                let entry = Entry { offset: b.offset, size: b.size, delta: u64::from(b.delta) };
                match slots.take(entry, rc) {
                    Some(slot) => {
                        // The block's header line is in the cache now, so pointing the
                        // header to the slot costs little here.
                        self.header_word(b.offset)
                            .store((u64::from(SLOTTED) << 32) | u64::from(slot), Ordering::Release);
                        b.slot = slot;
                        // A single block is handed out now, in the generation that its slot
                        // had when it took the block. Refilled blocks get the next generation
                        // when a cache hands them out.
                        b.generation = slots.generation(slot);
                    }
                    None => self.header_word(b.offset).store(rc, Ordering::Relaxed),
                }
                out.push(b);
            }
            Ok(())
        })
    }

    /// Frees `blocks`, given as `(offset, slot)` with reference count 0, under one lock.
    ///
    /// Blocks of a cached size go to the depot in magazines, for the next refill. The other blocks
    /// go back to the heap. Then the processes waiting for memory are woken. Bad offsets are logged
    /// and skipped: they come from a damaged or hostile peer.
    pub(crate) fn free(&self, blocks: &[(u64, u32)]) -> Result<(), ShmError> {
        if blocks.is_empty() {
            return Ok(());
        }
        let waiting = self.has_waiters();
        self.locked(|t| {
            let slots = self.slots();
            // While processes wait, only blocks of the size they want go to the depot. A waiter
            // for another size needs the heap's merged free space, not magazines.
            let deposit = |size: u64| !waiting || self.waiters_take(size);
            // Entries: (block size, offset, slot, whether the block may go to the depot).
            let mut sized: Vec<(u64, u64, u32, bool)> = Vec::with_capacity(blocks.len());
            for &(off, slot) in blocks {
                let known = if slot == NO_SLOT {
                    t.used_block(off).ok().zip(t.delta(off).ok()).map(|(size, _)| (size, false))
                } else {
                    slots.entry(slot).filter(|e| e.offset == off).map(|e| (e.size, e.delta == tlsf::HDR))
                };
                match known {
                    Some((size, depositable)) => sized.push((size, off, slot, depositable)),
                    None => log::error!("segment {}: refusing to free block at {off}: not a used block", self.id),
                }
            }
            // Group the blocks by size. A stream's batch usually has one size already, and then
            // no sort runs under the lock.
            if sized.windows(2).any(|w| w[0].0 != w[1].0) {
                sized.sort_unstable_by_key(|b| b.0);
            }
            let mut chunk = [0u64; depot::BLOCKS];
            for group in sized.chunk_by(|a, b| a.0 == b.0) {
                let size = group[0].0;
                let n = self.magazine_blocks(size).min(depot::BLOCKS);
                let mut rest = group;
                // Deposit whole magazines, and the rest of the group as a shorter one. A receiver
                // that is about to block frees what it has, and the sender's refill takes that
                // shorter magazine as it is.
                while deposit(size) && n >= 2 && !rest.is_empty() {
                    let (mag, tail) = rest.split_at(n.min(rest.len()));
                    // A block that is already deposited (freed twice) must not go in again: it
                    // would be handed out twice.
                    let fresh = |slot: u32| slots.rc(slot).load(Ordering::Relaxed) != DEPOSITED;
                    if !mag.iter().all(|&(_, _, slot, depositable)| depositable && fresh(slot)) {
                        break;
                    }
                    for (to, &(_, _, slot, _)) in chunk.iter_mut().zip(mag) {
                        *to = u64::from(slot);
                        slots.rc(slot).store(DEPOSITED, Ordering::Relaxed);
                    }
                    if !self.depot().put(size, &chunk[..mag.len()]) {
                        break;
                    }
                    rest = tail;
                }
                for &(_, off, slot, _) in rest {
                    if let Err(e) = self.free_to_heap(t, off, slot) {
                        log::error!("segment {}: refusing to free block at {off}: {e}", self.id);
                    }
                }
            }
            Ok(())
        })?;
        if self.has_waiters() {
            self.wake_waiters();
        }
        Ok(())
    }

    /// Returns every block of the depot to the heap: when memory runs out, on an explicit flush,
    /// and before zeroing. Returns false when the depot was empty.
    pub(crate) fn drain_depot(&self) -> Result<bool, ShmError> {
        if self.depot().is_empty() {
            return Ok(false);
        }
        self.locked(|t| {
            let mut taken = Vec::new();
            while self.depot().take(0, u64::MAX, &mut taken).is_some() {}
            for slot in taken.into_iter().map(|s| s as u32) {
                match self.slots().entry(slot) {
                    Some(e) => self.free_to_heap(t, e.offset, slot)?,
                    None => log::error!("segment {}: the depot lists slot {slot}, which holds no block", self.id),
                }
            }
            Ok(())
        })?;
        self.wake_waiters();
        Ok(true)
    }

    /// Gives back the tail of a used block beyond its first `keep` bytes. `keep` includes the
    /// block header.
    pub(crate) fn shrink(&self, offset: u64, slot: u32, keep: u64) -> Result<(), ShmError> {
        self.locked(|t| {
            let size = t.shrink(offset, keep)?;
            if slot != NO_SLOT {
                self.slots().resize(slot, size);
            }
            Ok(())
        })
    }

    /// Header word 2 of a block: its count and owner, or the slot that holds them.
    fn header_word(&self, offset: u64) -> &AtomicU64 {
        &self.words()[(offset / 8 + 2) as usize]
    }

    /// Hands out `b` to `owner` with one reference, as a new use. `b` is a block of this segment
    /// from a cache or a refill, with no reference yet. A new use moves the block's generation on
    /// (see `slots`).
    pub(crate) fn hand_out(&self, b: &mut Block, owner: u32) {
        if b.slot != NO_SLOT {
            b.generation = self.slots().next_generation(b.slot);
        }
        self.rc(b.offset, b.slot).store((u64::from(owner) << 32) | 1, Ordering::Release);
    }

    /// Checks that a record of the block at `offset` in `slot` was made in the block's current
    /// use (see `slots`). A block without a slot has no generation, which counts as 0.
    pub(crate) fn check_generation(
        &self,
        offset: u64,
        slot: u32,
        generation: u32,
    ) -> Result<(), crate::meta::MetaError> {
        let current = if slot == NO_SLOT { 0 } else { self.slots().generation(slot) };
        if current == generation {
            Ok(())
        } else {
            Err(crate::meta::MetaError::Stale { segment: self.id, offset })
        }
    }

    /// Runs [`Segment::check_block`] and [`Segment::check_generation`]. Together they check that
    /// a record from another process names a used block of this segment, in the use that the
    /// record was made for.
    pub(crate) fn check_use(
        &self,
        offset: u64,
        delta: u32,
        size: u64,
        slot: u32,
        generation: u32,
    ) -> Result<(), crate::meta::MetaError> {
        self.checked_count(offset, delta, size, slot, Some(generation)).map(|_| ())
    }

    /// The count word of a block whose slot is known, because it was checked on receipt or set at
    /// allocation. The low 32 bits hold the count, the high 32 bits the owner mark.
    pub(crate) fn rc(&self, offset: u64, slot: u32) -> &AtomicU64 {
        if slot == NO_SLOT {
            self.header_word(offset)
        } else {
            self.slots().rc(slot)
        }
    }

    /// The count word of a used block known only by its offset, as in heap walks and region
    /// counts.
    pub(crate) fn block_rc(&self, offset: u64) -> &AtomicU64 {
        self.rc(offset, self.slot_of(offset))
    }

    /// Checks that a peer's record names a used block of this segment, and that the record's user
    /// bytes lie inside that block. When the record names a slot, the check reads the slot and
    /// does not touch the block. Otherwise it reads the block header, and the block must then have
    /// no slot, because a slotted block's header word is not a count.
    pub(crate) fn check_block(
        &self,
        offset: u64,
        delta: u32,
        size: u64,
        slot: u32,
    ) -> Result<(), crate::meta::MetaError> {
        self.checked_count(offset, delta, size, slot, None).map(|_| ())
    }

    /// Does the work of [`Segment::check_block`], and with `generation` that of
    /// [`Segment::check_use`], and returns the block's count word. A slot's four words are looked
    /// up once, with one bounds check, because this runs for every message received.
    #[inline]
    pub(crate) fn checked_count(
        &self,
        offset: u64,
        delta: u32,
        size: u64,
        slot: u32,
        generation: Option<u32>,
    ) -> Result<&AtomicU64, crate::meta::MetaError> {
        let oob = || crate::meta::MetaError::OutOfBounds { segment: self.id, offset, size };
        let data = offset.checked_add(u64::from(delta)).ok_or_else(oob)?;
        let end = data.checked_add(size).ok_or_else(oob)?;
        if offset < HEAP_START || offset % tlsf::ALIGN != 0 || u64::from(delta) < tlsf::HDR || end > self.heap_end {
            return Err(oob());
        }
        let not_a_block = || crate::meta::MetaError::NotABlock { segment: self.id, offset };
        // A record hands over a reference, so its block has at least one. A count of 0 means that
        // the block was freed into a cache or the depot, and that the record is stale or repeated.
        // Taking such a block would alias whatever the block is handed out for next.
        let (rc, bsize, bdelta, current) = if slot == NO_SLOT {
            let t = self.tlsf();
            let rc = self.header_word(offset);
            let slotted = || (rc.load(Ordering::Acquire) >> 32) as u32 == SLOTTED;
            let bsize = match t.used_block(offset) {
                Ok(bsize) if !slotted() => bsize,
                _ => return Err(not_a_block()),
            };
            (rc, bsize, t.delta(offset).ok(), 0)
        } else {
            let w = self.slots().words(slot).ok_or_else(not_a_block)?;
            if w[slots::WORD_OFFSET].load(Ordering::Acquire) != offset {
                return Err(not_a_block());
            }
            let bsize = w[slots::WORD_SIZE].load(Ordering::Relaxed);
            let rc = &w[slots::WORD_COUNT];
            let (d, g) = slots::split_delta_generation(w[slots::WORD_DELTA].load(Ordering::Acquire));
            (rc, bsize, Some(d), g)
        };
        if rc.load(Ordering::Acquire) as u32 == 0 {
            return Err(not_a_block());
        }
        if end > offset.saturating_add(bsize) || bdelta != Some(u64::from(delta)) {
            return Err(oob());
        }
        match generation {
            Some(g) if g != current => Err(crate::meta::MetaError::Stale { segment: self.id, offset }),
            _ => Ok(rc),
        }
    }

    /// [`Segment::check_block`] for a block named by its offset alone, such as a region message's
    /// shared count. The block's slot, if any, is looked up in its header and returned.
    pub(crate) fn check_any_block(&self, offset: u64, delta: u32, size: u64) -> Result<u32, crate::meta::MetaError> {
        let slot = self.slot_of(offset);
        self.check_block(offset, delta, size, slot).map(|()| slot)
    }

    /// Address of the segment's first byte in this process (for region events).
    pub(crate) fn base_address(&self) -> usize {
        self.map.base() as usize
    }

    /// The local address of user data. `check_block` or the allocation checked the range.
    pub(crate) fn data_ptr(&self, offset: u64, delta: u32, size: usize) -> *mut u8 {
        self.map.range_ptr((offset + u64::from(delta)) as usize, size).expect("block range checked before use")
    }

    /// The words of a block's user bytes, such as a lane's ring. Returns `None` when the bytes are
    /// not whole words inside the mapping. `check_block` or the allocation checked the range.
    pub(crate) fn block_words(&self, offset: u64, delta: u32, size: u64) -> Option<&[AtomicU64]> {
        let start = offset.checked_add(u64::from(delta))?;
        if start % 8 != 0 || size % 8 != 0 {
            return None;
        }
        let (first, n) = (usize::try_from(start / 8).ok()?, usize::try_from(size / 8).ok()?);
        self.words().get(first..first.checked_add(n)?)
    }

    /// [`Segment::rc`] and [`Segment::block_size`] of a used block at once, so that a slot's words
    /// are looked up once. The size is for cache accounting.
    pub(crate) fn count_and_size(&self, offset: u64, slot: u32) -> (&AtomicU64, u64) {
        match self.slots().words(slot) {
            Some(w) if w[slots::WORD_OFFSET].load(Ordering::Acquire) == offset => {
                (&w[slots::WORD_COUNT], w[slots::WORD_SIZE].load(Ordering::Relaxed))
            }
            _ => (self.rc(offset, slot), self.block_size(offset, slot)),
        }
    }

    /// The size of the used block at `offset`, taken from its slot if it has one. Returns 0 when
    /// no used block is there.
    pub(crate) fn block_size(&self, offset: u64, slot: u32) -> u64 {
        match self.slots().entry(slot) {
            Some(e) if e.offset == offset => e.size,
            _ => self.tlsf().used_block(offset).unwrap_or(0),
        }
    }

    /// Free bytes in the heap plus bytes of freed blocks in the depot, read without the lock. The
    /// figure is a hint for a process waiting for memory, not a promise.
    pub(crate) fn available_hint(&self) -> u64 {
        self.tlsf().free_bytes_hint() + self.depot().bytes()
    }

    /// Memory figures.
    pub fn stats(&self) -> SegmentStats {
        let s = self.tlsf().stats();
        let fragmentation = if s.free_bytes == 0 { 0.0 } else { 1.0 - s.largest_free as f64 / s.free_bytes as f64 };
        SegmentStats {
            id: self.id,
            size: self.size(),
            free: s.free_bytes,
            used: self.size().saturating_sub(s.free_bytes),
            free_blocks: s.free_blocks,
            used_blocks: s.used_blocks,
            fragmentation,
            recoveries: self.header().recoveries.load(Ordering::Relaxed),
            cached: self.depot().bytes(),
            largest_free: s.largest_free,
        }
    }

    /// Runs `f` while holding the allocator lock, for fault tests. A process killed inside `f`
    /// dies holding the lock, and the next user must repair the heap.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testing"))]
    pub fn while_locked(&self, f: impl FnOnce()) -> Result<(), ShmError> {
        self.locked(|_| {
            f();
            Ok(())
        })
    }

    /// Checks every allocator invariant (under the lock).
    #[cfg(any(test, feature = "testing"))]
    pub fn check(&self) -> Result<(), String> {
        self.locked(|t| Ok(t.check())).map_err(|e| e.to_string())?
    }

    /// Forgets every allocation: the heap becomes one free block, and the depot becomes empty.
    /// This is FairMQ's experimental `ResetContent`.
    ///
    /// # Safety
    /// No process may use the segment's blocks, now or until this returns. A message alive
    /// anywhere would see its bytes handed out again. See `monitor::reset_content`, which checks
    /// that no transport is attached and holds the session lock.
    // SAFETY: `reset_content` is unsafe to call because it frees blocks that live messages may
    // still use (see the contract above).
    pub unsafe fn reset_content(&self) -> Result<(), ShmError> {
        self.locked(|t| {
            self.depot().clear();
            self.slots().clear();
            self.tickets().clear();
            t.format();
            Ok(())
        })?;
        self.wake_waiters();
        Ok(())
    }

    /// Frees the used block at `offset`, whose last reference is gone. The monitor keeps no
    /// caches, so it frees a shared block this way when it drops a dead process's last reference.
    pub(crate) fn free_block(&self, offset: u64) -> Result<(), ShmError> {
        self.locked(|t| self.free_to_heap(t, offset, self.slot_of(offset)))?;
        self.wake_waiters();
        Ok(())
    }

    fn zero_free_memory(&self) -> Result<(), ShmError> {
        self.drain_depot()?;
        self.locked(|t| {
            for (off, size, free) in t.walk() {
                if free && size > tlsf::HDR {
                    let _ = self.map.zero((off + tlsf::HDR) as usize, (size - tlsf::HDR) as usize);
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests;
