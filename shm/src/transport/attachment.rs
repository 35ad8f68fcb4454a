//! A transport's attachment to its session, its per-process state: the session's management
//! segment, the segment this transport allocates in, segments of peers (mapped on first use), the
//! caches, and the out-of-memory policy.

use crate::error::ShmError;
use crate::meta::MetaError;
use crate::naming::Names;
use crate::region::ack_queue::{Ack, AckQueue};
use crate::region::acks::Acks;
use crate::region::map::RegionMap;
use crate::segment::cache::{self, Cache, Released};
use crate::segment::tickets::{Issued, Issuer, Kind};
use crate::segment::tlsf::Block;
use crate::segment::{Segment, SegmentInit};
use crate::session::liveness::{Dead, Heartbeat};
use crate::session::management::Management;
use crate::transport::config::ShmConfig;
use fairmq_zmq::Interrupter;
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

pub(crate) struct Attachment {
    names: Names,
    config: ShmConfig,
    /// The owner mark of the blocks this transport allocates or caches (see `liveness::Attached`).
    owner: u32,
    own: Arc<Segment>,
    segments: SegmentTable,
    cache: Mutex<Cache>,
    /// Tickets of what this transport hands to sockets (in its own segment's table).
    issuer: Mutex<Issuer>,
    interrupter: Arc<Interrupter>,
    acks: Acks,
    heartbeat: Option<Heartbeat>,
    /// The shared references this transport holds (see `ledger`).
    ledger: crate::session::ledger::Ledger,
    /// This attachment as shared (set once it is: what releasing messages needs).
    me: OnceLock<std::sync::Weak<Attachment>>,
    /// Held through a sweep of the dead: the session lock lets one transport sweep a dead one,
    /// this lets one thread of it. Reentrant: releasing what a lane held may sweep again.
    sweeping: parking_lot::ReentrantMutex<()>,
    /// Allocations that found no room at first (each waited or retried), and those that failed
    /// in the end (the metrics read them; written on the slow path only).
    alloc_retries: std::sync::atomic::AtomicU64,
    alloc_failures: std::sync::atomic::AtomicU64,
    // Last: detaching may remove the session, after everything above is released.
    mng: Arc<Management>,
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attachment").field("shm_id", &self.names.shm_id()).field("segment", &self.own.id()).finish()
    }
}

impl Attachment {
    /// [`join`](Attachment::join) with `create` (the tests' shorthand).
    #[cfg(test)]
    pub(crate) fn new(config: &ShmConfig, interrupter: Arc<Interrupter>) -> Result<Attachment, ShmError> {
        Self::join(config, interrupter, true)
    }

    /// Attaches to the session of `config` and opens (with `create`, makes if needed) its segment;
    /// without `create`, to a session and segment that exist only (see `Management::join`).
    pub(crate) fn join(
        config: &ShmConfig,
        interrupter: Arc<Interrupter>,
        create: bool,
    ) -> Result<Attachment, ShmError> {
        config.validate()?;
        let shm_id = config.resolved_shm_id();
        log::debug!("Generated shmid '{shm_id}' out of session id '{}'.", config.session);
        let names = Names::new(&shm_id);
        let (mng, heartbeat) = Management::join(&names, &config.session, create)?;
        let started = if config.monitor { crate::monitor::start_daemon(&names) } else { Ok(()) };
        let own = match started.and_then(|()| Self::own_segment(&names, &mng, heartbeat.owner(), config, create)) {
            Ok(own) => own,
            Err(e) => {
                let _ = mng.detach(heartbeat, config.no_cleanup);
                return Err(e);
            }
        };
        let segments = SegmentTable::default();
        segments.insert(own.clone());
        let cache = Mutex::new(Cache::new(own.size()));
        let ledger = crate::session::ledger::Ledger::new(heartbeat.slot(), heartbeat.owner(), own.clone());
        if let Some(endpoint) = config.metrics_endpoint {
            crate::session::liveness::publish_metrics(&mng, heartbeat.slot(), endpoint);
        }
        let mgr = Attachment {
            names,
            config: config.clone(),
            owner: heartbeat.owner(),
            own,
            segments,
            cache,
            issuer: Mutex::new(Issuer::new(heartbeat.owner())),
            interrupter,
            acks: Acks::default(),
            ledger,
            me: OnceLock::new(),
            sweeping: parking_lot::ReentrantMutex::new(()),
            alloc_retries: Default::default(),
            alloc_failures: Default::default(),
            heartbeat: Some(heartbeat),
            mng,
        };
        Ok(mgr)
    }

    /// Sweeps dead processes: frees what they held in their caches and listed, then counts them out
    /// of the session (see `liveness::SessionLock::find_dead`); returns their pids.
    pub(crate) fn sweep_dead(&self) -> Vec<u32> {
        // Two threads of this transport would both find the same dead (the sweep is taken by
        // owner mark), and one could walk the ledger pages the other freed meanwhile.
        let _one_thread = self.sweeping.lock();
        let dead = match self.mng.lock().map(|l| l.find_dead(self.owner)) {
            Ok(d) => d,
            Err(e) => {
                log::error!("could not look for dead processes: {e}");
                return Vec::new();
            }
        };
        if dead.is_empty() {
            return Vec::new();
        }
        self.reclaim_dead(&dead);
        crate::session::attach::remove_tmp_of(self.mng.names(), &dead);
        match self.mng.lock() {
            Ok(lock) => dead.iter().for_each(|d| lock.count_out(d)),
            // Left to the next sweeper, which finds them again (all it frees is gone already).
            Err(e) => log::error!("could not count dead processes out: {e}"),
        }
        dead.iter().map(|d| d.pid).collect()
    }

    /// Remembers this attachment as shared (once it is in its `Arc`).
    pub(crate) fn set_shared(self: &Arc<Self>) {
        let _ = self.me.set(Arc::downgrade(self));
    }

    /// This attachment as shared, unless it is leaving.
    pub(crate) fn shared(&self) -> Option<Arc<Attachment>> {
        self.me.get().and_then(std::sync::Weak::upgrade)
    }

    /// The ledger of the shared references this transport holds.
    pub(crate) fn ledger(&self) -> &crate::session::ledger::Ledger {
        &self.ledger
    }

    /// Drops what this transport's ledger lists, as the sweep of the dead would once it were
    /// killed (for tests of what a killed process leaves); returns how many references.
    #[cfg(test)]
    pub(crate) fn release_ledger_as_if_dead(&self) -> usize {
        let mut pieces = crate::region::count::Orphans::new(&self.mng);
        crate::session::ledger::release(self, &mut pieces, &self.mng, self.ledger.slot(), self.owner)
    }

    /// Allocations that found no room at first, and those of them that failed: (retried, failed).
    pub(crate) fn allocation_counts(&self) -> (u64, u64) {
        (self.alloc_retries.load(Ordering::Relaxed), self.alloc_failures.load(Ordering::Relaxed))
    }

    /// The owner mark of this transport's blocks.
    pub(crate) fn owner(&self) -> u32 {
        self.owner
    }

    /// Frees what the `dead` transports cached or held alone, in every segment of the session (a
    /// process caches blocks of its own segment, defers frees into its peers' and holds messages
    /// of any).
    fn reclaim_dead(&self, dead: &[Dead]) {
        // A slot with a damaged mark (0) is counted out with nothing freed by it.
        let dead: Vec<Dead> = dead.iter().filter(|d| d.owner != 0).cloned().collect();
        let dead = &dead[..];
        if dead.is_empty() {
            return;
        }
        let segments: Vec<&Segment> = self.mng.segments().iter().filter_map(|e| self.segment(e.id).ok()).collect();
        // The shared references they listed.
        let mut pieces = crate::region::count::Orphans::new(&self.mng);
        for d in dead {
            let n = crate::session::ledger::release(self, &mut pieces, &self.mng, d.slot, d.owner);
            if n > 0 {
                log::info!("dropped {n} references dead process {} held to shared messages", d.pid);
            }
        }
        let owners: Vec<u32> = dead.iter().map(|d| d.owner).collect();
        for seg in &segments {
            seg.finish_claims(&owners, |id| self.segment(id).ok());
        }
        let ticketed = crate::segment::Ticketed::of(segments.iter().copied());
        for seg in segments {
            for &Dead { pid, owner, .. } in dead {
                match seg.reclaim_dead(owner, &ticketed) {
                    Ok((n, bytes)) if n > 0 => {
                        log::info!(
                            "freed {n} blocks ({bytes} bytes) of segment {} that dead process {pid} cached or held",
                            seg.id()
                        )
                    }
                    Ok(_) => {}
                    Err(e) => log::error!("could not free the blocks of dead process {pid}: {e}"),
                }
            }
        }
    }

    fn own_segment(
        names: &Names,
        mng: &Management,
        owner: u32,
        c: &ShmConfig,
        create: bool,
    ) -> Result<Arc<Segment>, ShmError> {
        let id = c.segment_id;
        let path = Names::path(&names.segment(id));
        let lock = mng.lock()?;
        let (seg, created) = if create {
            Segment::open_or_create(&path, &Names::path(&names.tmp_for(owner)), id, c.segment_size)?
        } else {
            (Segment::open(&path, id)?, false)
        };
        if let Err(e) = lock.register_segment(id, seg.size()) {
            // A segment the registry does not list is removed by nobody: it would outlive the
            // session (nobody else opened it: that takes this lock too).
            if created {
                let _ = std::fs::remove_file(&path);
            }
            return Err(e);
        }
        drop(lock);
        log::debug!(
            "{} managed shared memory segment {}. Size: {} bytes. Available: {} bytes.",
            if created { "Created" } else { "Opened" },
            names.segment(id),
            seg.size(),
            seg.stats().free
        );
        if created {
            seg.apply(SegmentInit { zero: c.zero_segment_on_creation, mlock: c.mlock_segment_on_creation })?;
        }
        seg.apply(SegmentInit { zero: c.zero_segment, mlock: c.mlock_segment })?;
        Ok(Arc::new(seg))
    }

    /// Issues a ticket for handing the message `rec` describes (or a lane's offer) to a socket;
    /// `None` when every ticket this transport can get is out.
    pub(crate) fn issue(&self, kind: Kind, rec: &crate::meta::Record) -> Option<Issued> {
        let table = self.own.tickets();
        self.issuer.lock().issue(&table, self.own.id(), kind, rec, &|owner| self.owner_alive(owner))
    }

    /// How many tickets this transport's segment holds, all processes' together: the most parts a
    /// multipart sent from it can have in flight at once.
    pub(crate) fn ticket_capacity(&self) -> u32 {
        self.own.tickets().capacity()
    }

    /// Names the receiver of ticket `t`, whose record is about to go to it (see `peers`).
    pub(crate) fn address(&self, t: &Issued, owner: u32, socket: u64) {
        if let Ok(s) = self.segment(t.segment) {
            s.tickets().address(t.ticket, owner, socket);
        }
    }

    /// The descriptor that becomes readable when the transport is interrupted (for polls).
    pub(crate) fn interrupter_fd(&self) -> std::os::fd::RawFd {
        self.interrupter.raw_fd()
    }

    /// Marks the block `rec` names, if it is in flight with one reference, as this transport's: a
    /// message about to be taken back from a ticket (see `Message::mark_held`). Done before the
    /// ticket is taken back: a process killed in between leaves a block that a ticket still names
    /// (a sweep leaves it alone), never one in flight that nothing names.
    pub(crate) fn mark_back(&self, rec: &crate::meta::Record) {
        let _ = self.remark(rec, crate::segment::slots::IN_FLIGHT, self.owner);
    }

    /// Changes the holder mark of the block `rec` names from `from` to `to`, if it has one
    /// reference and that mark. The record is checked first: it comes from a lane entry or a
    /// ticket, which a faulty peer may have damaged.
    pub(crate) fn remark(&self, rec: &crate::meta::Record, from: u32, to: u32) -> crate::segment::Remark {
        crate::segment::remark(|id| self.segment(id).ok(), rec, from, to)
    }

    /// Whether ticket `t`, still out, was addressed to one transport that is gone: its record is
    /// lost with that transport's queue (as the release of orphans holds, see `orphans`).
    pub(crate) fn addressee_gone(&self, t: &Issued) -> bool {
        let addressee = self.segment(t.segment).ok().and_then(|s| s.tickets().receiver(t.ticket, t.nonce));
        addressee.is_some_and(|r| self.receiver_gone(r))
    }

    /// Whether receiver mark `r` names one transport, and it is gone.
    pub(crate) fn receiver_gone(&self, r: u32) -> bool {
        crate::segment::tickets::names_one(r) && !self.owner_alive(r)
    }

    /// Takes back a ticket whose record never left; false when someone claimed it first.
    pub(crate) fn take_back(&self, t: &Issued) -> bool {
        self.segment(t.segment).is_ok_and(|s| s.tickets().claim(t.ticket, t.nonce))
    }

    /// Takes back a ticket whose record `rec` went out (a receiver may be claiming it right
    /// now): claimed as a receiver claims, the block marked ours while the claim is under way,
    /// then the claim ended. Killed on the way, this process leaves a claim the sweep of the dead
    /// finishes (the block is freed as ours); a receiver that claims first keeps the block as it
    /// is. False then. (Marking the block ours before the claim let a receiver claim it
    /// meanwhile, and a sweep of this process, killed then, free the block under the receiver.)
    pub(crate) fn take_back_sent(&self, t: &Issued, rec: &crate::meta::Record) -> bool {
        let Ok(seg) = self.segment(t.segment) else { return false };
        let tickets = seg.tickets();
        if !tickets.claim_as(t.ticket, t.nonce, self.owner) {
            return false;
        }
        let _ = self.remark(rec, crate::segment::slots::IN_FLIGHT, self.owner);
        tickets.claimed(t.ticket, self.owner);
        true
    }

    /// Whether the transport is interrupted (a waiting transfer gives up).
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupter.is_interrupted()
    }

    /// Whether a transport with this owner mark is attached and alive.
    pub(crate) fn owner_alive(&self, owner: u32) -> bool {
        crate::session::liveness::owner_alive(&self.mng, owner)
    }

    pub(crate) fn names(&self) -> &Names {
        &self.names
    }

    pub(crate) fn config(&self) -> &ShmConfig {
        &self.config
    }

    pub(crate) fn own(&self) -> &Arc<Segment> {
        &self.own
    }

    pub(crate) fn management(&self) -> &Arc<Management> {
        &self.mng
    }

    pub(crate) fn acks(&self) -> &Acks {
        &self.acks
    }

    /// Region `id`, mapped as a viewer on first use (a message of it arrived).
    pub(crate) fn region_view(&self, id: u16) -> Result<Arc<RegionMap>, MetaError> {
        if let Some(r) = self.acks.get(id) {
            return Ok(r);
        }
        let unknown = MetaError::Unknown { kind: "region", id };
        let Some(entry) = crate::session::registry::find(&self.mng, id).filter(|e| !e.destroyed) else {
            log::error!(
                "Could not get remote region with id '{id}'. Does the region creator run with the same session id?"
            );
            return Err(unknown);
        };
        let data = RegionMap::map_data(&entry, &self.names, false).map_err(|e| {
            log::error!("Could not get remote region for id '{id}': {e}");
            unknown.clone()
        })?;
        // Without its queue (a controller gone) pieces can still be read; acknowledgements are dropped.
        let queue = AckQueue::open(&Names::path(&self.names.region_queue(id))).ok();
        log::debug!("Opened unmanaged shared memory region: {} (viewer)", entry.data_path(&self.names).display());
        Ok(self.acks.insert(Arc::new(RegionMap::new(entry, data, queue, false, Some(self.mng.clone())))))
    }

    /// The last reference to a piece of region `map` is gone.
    pub(crate) fn release_region_piece(&self, map: &RegionMap, offset: u64, size: u64, hint: u64) {
        self.acks.released(map, Ack { offset, size, hint });
    }
    /// Segment `id`, mapped on first use. Inlined: every record received looks its segment up,
    /// and it is nearly always mapped already.
    #[inline]
    pub(crate) fn segment(&self, id: u16) -> Result<&Segment, MetaError> {
        // Its own segment, which holds every message it sends, without the table's two lookups.
        if id == self.own.id() {
            return Ok(&self.own);
        }
        match self.segments.get(id) {
            Some(s) => Ok(s),
            None => self.map_segment(id),
        }
    }

    #[cold]
    fn map_segment(&self, id: u16) -> Result<&Segment, MetaError> {
        let seg = Segment::open(&Names::path(&self.names.segment(id)), id).map_err(|e| {
            log::error!("Could not get segment with id '{id}': {e}");
            MetaError::Unknown { kind: "segment", id }
        })?;
        Ok(self.segments.insert(Arc::new(seg)))
    }

    /// A segment this attachment has mapped (every message's segment is).
    pub(crate) fn mapped(&self, id: u16) -> &Segment {
        if id == self.own.id() {
            return &self.own;
        }
        self.segments.get(id).expect("a message's segment is mapped before the message exists and stays mapped")
    }

    /// Allocates a small block of `size` bytes in this transport's segment if there is room now
    /// (its caches and the depot looked at once), never waiting: for what a receive needs on the
    /// way (a region piece's count block), which must not hang on a full segment.
    pub(crate) fn allocate_now(&self, size: usize) -> Result<Block, ShmError> {
        let size64 = size as u64;
        let need =
            self.own.needed(size64, 1).ok_or(ShmError::TooLarge { requested: size64, segment: self.own.size() })?;
        if let Some(b) = self.try_then_drain_depot(size64, 1, need)? {
            return Ok(b);
        }
        Err(ShmError::BadAlloc { size, alignment: 16, free: self.own.stats().free })
    }

    /// Allocates a block for `size` bytes aligned to `align` in this transport's segment, following
    /// the out-of-memory policy.
    pub(crate) fn allocate(&self, size: usize, align: usize) -> Result<Block, ShmError> {
        let (size64, align64) = (size as u64, (align as u64).max(1).next_power_of_two());
        let need = self.own.needed(size64, align64).ok_or_else(|| ShmError::TooLarge {
            requested: size64.saturating_add(crate::segment::tlsf::HDR + align64),
            segment: self.own.size(),
        })?;
        if let Some(b) = self.try_allocate(size64, align64, need)? {
            return Ok(b);
        }
        let policy = self.config.bad_alloc;
        self.alloc_retries.fetch_add(1, Ordering::Relaxed);
        let bad_alloc = || {
            self.alloc_failures.fetch_add(1, Ordering::Relaxed);
            ShmError::BadAlloc { size, alignment: align.max(16), free: self.own.stats().free }
        };
        let mut attempts = 0;
        loop {
            // What this process holds in its caches, and the depot, are the first places to find
            // room: a magazine of our size in the depot serves as it is, others go back to the heap.
            self.flush(true);
            if let Some(b) = self.try_then_drain_depot(size64, align64, need)? {
                return Ok(b);
            }
            attempts += 1;
            if policy.max_attempts >= 0 && attempts >= policy.max_attempts {
                // Other processes may hold freed blocks of this segment in their caches: counted
                // as waiting, they give them back at their next release. Before the error, give
                // a busy peer that moment (a retrying policy does so in its sleep below).
                let _waiting = self.own.start_waiting(need);
                if self.spin_for_memory(need) {
                    if let Some(b) = self.try_then_drain_depot(size64, align64, need)? {
                        return Ok(b);
                    }
                }
                return Err(bad_alloc());
            }
            if attempts == 1 {
                log::warn!(
                    "shmem: could not create a message of size {size}, alignment: {align}, free memory: {}. \
                     Will try {} more times, in {}ms intervals",
                    self.own.stats().free,
                    if policy.max_attempts < 0 { "infinite".to_owned() } else { (policy.max_attempts - 1).to_string() },
                    policy.interval.as_millis()
                );
            }
            if self.interrupter.is_interrupted() {
                return Err(bad_alloc());
            }
            // A stream of large messages fills the segment often; the receiver frees in batches
            // within microseconds. Yielding to it for a moment is far cheaper than sleeping on the
            // futex and being woken (and does not make every free of the receiver wake us).
            if self.spin_for_memory(need) {
                if let Some(b) = self.try_allocate(size64, align64, need)? {
                    return Ok(b);
                }
            }
            // Counted as waiting, one more look, then sleep: a free after the count wakes us (or
            // the interval passes, or an interrupt of this transport comes); one before it, the
            // look sees.
            let waiting = self.own.start_waiting(need);
            let epoch = waiting.arm();
            if let Some(b) = self.try_allocate(size64, align64, need)? {
                return Ok(b);
            }
            waiting.sleep(epoch, policy.interval);
            drop(waiting);
            if self.interrupter.is_interrupted() {
                return Err(bad_alloc());
            }
        }
    }

    /// Yields the processor a few hundred times, watching whether `need` bytes became free (in the
    /// heap or the depot); true when they did.
    #[inline(never)] // a profile tells waiting from work by this name (see `lanes::spin_until`)
    fn spin_for_memory(&self, need: u64) -> bool {
        const SPINS: u32 = 1024;
        for _ in 0..SPINS {
            std::thread::yield_now();
            if self.interrupter.is_interrupted() {
                return false;
            }
            if self.own.available_hint() >= need {
                return true;
            }
        }
        false
    }

    /// Tries to allocate; failing that, returns the depot's blocks to the heap and tries again (a
    /// magazine of our size in the depot serves as it is, but only cache refills take from it:
    /// other sizes and aligned requests need the heap).
    fn try_then_drain_depot(&self, size: u64, align: u64, need: u64) -> Result<Option<Block>, ShmError> {
        if let Some(b) = self.try_allocate(size, align, need)? {
            return Ok(Some(b));
        }
        match self.own.drain_depot() {
            Ok(true) => self.try_allocate(size, align, need),
            Ok(false) => Ok(None),
            Err(e) => {
                log::error!("could not empty the depot: {e}");
                Ok(None)
            }
        }
    }

    fn try_allocate(&self, size: u64, align: u64, need: u64) -> Result<Option<Block>, ShmError> {
        let mut cache = self.cache.lock();
        // A cached block first: the common case needs nothing else (magazines hold blocks of the
        // heap's own alignment only).
        if align <= crate::segment::tlsf::ALIGN {
            if let Some(mut b) = cache.take(need) {
                drop(cache);
                self.own.hand_out(&mut b, self.owner);
                return Ok(Some(b));
            }
        }
        let Some(refill) = cache.refill_count(need, align) else {
            drop(cache);
            let mut out = Vec::with_capacity(1);
            self.own.allocate(size, align, self.owner, 1, &mut out)?;
            return Ok(out.pop());
        };
        let mut out = Vec::with_capacity(refill.max(crate::segment::depot::BLOCKS));
        self.own.allocate(size, align, self.owner, refill, &mut out)?;
        // Refilled blocks carry no reference, only our pid (if we die, a sweep frees exactly
        // those); the one handed out now gets its reference.
        let mut first = out.pop();
        if let Some(b) = &mut first {
            self.own.hand_out(b, self.owner);
        }
        let evicted = cache.stock(need, out);
        drop(cache);
        if !evicted.is_empty() {
            let own = self.own.id();
            cache::free_all(evicted.into_iter().map(|b| (own, b.offset, b.slot)).collect(), |id| self.segments.get(id));
        }
        Ok(first)
    }

    /// Called when this process dropped the last reference to a block.
    pub(crate) fn release(&self, seg: &Segment, offset: u64, delta: u32, slot: u32) {
        self.release_sized(seg, offset, delta, slot, seg.block_size(offset, slot));
    }

    /// [`Attachment::release`] of a block whose size the caller read already (see
    /// `Segment::count_and_size`).
    pub(crate) fn release_sized(&self, seg: &Segment, offset: u64, delta: u32, slot: u32, size: u64) {
        let block = Block { offset, delta, size, slot, generation: 0 };
        let own = seg.id() == self.own.id();
        // Record ourselves as owner while the block sits in our cache or deferred list: if we die,
        // the blocks with our pid and no reference are exactly those, and can be freed for us.
        seg.rc(offset, slot).store(u64::from(self.owner) << 32, Ordering::Relaxed);
        let wanted = seg.has_waiters();
        let flush = match self.cache.lock().release(seg, block, own, wanted) {
            Released::Cached => false,
            Released::Deferred(flush) => flush,
        };
        if flush {
            self.flush(false);
        }
    }

    /// Frees deferred blocks now; with `everything`, magazine blocks too.
    pub(crate) fn flush(&self, everything: bool) {
        let blocks = {
            let mut c = self.cache.lock();
            if everything {
                c.drain(self.own.id())
            } else if c.has_deferred() {
                c.take_deferred()
            } else {
                return;
            }
        };
        cache::free_all(blocks, |id| self.segments.get(id));
    }

    /// Wakes this process's (and others') allocations waiting for memory, so they see an interrupt.
    pub(crate) fn wake_allocators(&self) {
        self.own.wake_waiters();
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        self.issuer.get_mut().release(&self.own.tickets());
        self.acks.shutdown();
        // Nothing is listed any more (every message is gone): its overflow pages go.
        self.ledger.leave(&self.mng);
        let Some(heartbeat) = self.heartbeat.take() else { return self.flush(true) };
        // While still attached: what the dead held goes back before a last transport's detach
        // removes the session, or stays for those that remain.
        self.sweep_dead();
        // After the sweep, which frees what the dead held last through our caches. Before, the
        // caches were emptied first: what a transport swept as it left stayed allocated, marked
        // with the mark of a transport gone, until the session ended.
        self.flush(true);
        match self.mng.detach(heartbeat, self.config.no_cleanup) {
            Ok(_) => {}
            Err(e) => log::error!("could not detach from shared memory session {}: {e}", self.names.shm_id()),
        }
    }
}

/// 256 consecutive segment ids.
type Chunk = Box<[OnceLock<Arc<Segment>>]>;

/// Segments by id: lock-free lookups; entries are added once and never removed.
struct SegmentTable {
    chunks: Box<[OnceLock<Chunk>]>,
}

impl Default for SegmentTable {
    fn default() -> Self {
        SegmentTable { chunks: (0..256).map(|_| OnceLock::new()).collect() }
    }
}

impl SegmentTable {
    #[inline]
    fn get(&self, id: u16) -> Option<&Segment> {
        let chunk = self.chunks[usize::from(id >> 8)].get()?;
        chunk[usize::from(id & 0xff)].get().map(|s| &**s)
    }

    /// Adds `seg` unless its id is present already; returns the entry.
    fn insert(&self, seg: Arc<Segment>) -> &Segment {
        let id = seg.id();
        let chunk = self.chunks[usize::from(id >> 8)].get_or_init(|| (0..256).map(|_| OnceLock::new()).collect());
        let slot = &chunk[usize::from(id & 0xff)];
        let _ = slot.set(seg); // a concurrent first use may have won: its mapping serves as well
        slot.get().expect("just set")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A receiver killed between claiming a ticket and marking the block its own: the claim stays
    /// under way, nobody else may take the ticket, and the sweep of the dead finishes it and frees
    /// the block with what the dead receiver held (before, the block stayed allocated for good).
    #[test]
    fn a_claim_its_receiver_left_under_way_is_finished_by_the_sweep() {
        let mut c = ShmConfig::new("live", &format!("mgr-claim-{}", std::process::id()));
        c.segment_size = 8 << 20;
        let _scratch = crate::scratch::Scratch::of_shm_id(&c.resolved_shm_id());
        let live = Attachment::new(&c, Arc::new(Interrupter::new().unwrap())).unwrap();
        // A block handed over by a ticket, in flight (count 1, marked so), as a sender leaves it.
        let b = live.allocate(100, 0).unwrap();
        let in_flight = u64::from(crate::segment::slots::IN_FLIGHT) << 32 | 1;
        live.own().rc(b.offset, b.slot).store(in_flight, Ordering::Relaxed);
        let rec = crate::meta::Record::Block {
            segment: live.own().id(),
            offset: b.offset,
            delta: b.delta,
            size: 100,
            slot: b.slot,
            generation: b.generation,
        };
        let t = live.issue(Kind::Message, &rec).unwrap();
        // A receiver (another transport) won the claim and was killed before marking the block.
        let dead_mark = live.owner() ^ 0x5a5a;
        let tickets = live.own().tickets();
        assert!(tickets.claim_as(t.ticket, t.nonce, dead_mark));
        assert!(!tickets.claim(t.ticket, t.nonce), "a claim under way is nobody else's");
        assert!(live.own().in_flight().is_empty(), "nor an issuer's to take back or an orphan's to release");
        crate::session::liveness::fake_dead_transport(&live.mng, 200, std::process::id(), dead_mark);
        assert_eq!(live.sweep_dead(), [std::process::id()]);
        assert_eq!(tickets.outstanding(), 0, "the claim was finished");
        assert_eq!(live.own().owned_by(dead_mark).unwrap().0, 0, "and the block freed as the dead claimer's");
        live.own().check().unwrap();
    }

    /// A live attachment in a scratch session of its own (drop it before the scratch).
    fn live(tag: &str) -> (crate::scratch::Scratch, Attachment) {
        let mut c = ShmConfig::new("live", &format!("mgr-{tag}-{}", std::process::id()));
        c.segment_size = 8 << 20;
        let scratch = crate::scratch::Scratch::of_shm_id(&c.resolved_shm_id());
        (scratch, Attachment::new(&c, Arc::new(Interrupter::new().unwrap())).unwrap())
    }

    /// A record's shared count is taken only from the count block of that very piece: a block
    /// that names no piece (any other message's), or another piece, is refused (a forged record
    /// would have its receiver count down a block others hold).
    #[test]
    fn a_count_block_is_accepted_only_for_the_piece_it_names() {
        use crate::region::count;
        let (_s, a) = live("countcheck");
        let b = a.allocate_now(count::BYTES as usize).unwrap();
        let seg = a.own();
        let delta = u16::try_from(b.delta).unwrap();
        let h = crate::meta::RcHandle { segment: seg.id(), offset: b.offset, delta };
        assert!(count::checked(seg, h, 1024, 64).is_err(), "a block that names no piece");
        let words = seg.block_words(b.offset, b.delta, count::BYTES).unwrap();
        count::write(words, 1024, crate::region::ack_queue::Ack { offset: 64, size: 100, hint: 7 });
        assert_eq!(count::checked(seg, h, 1024, 64), Ok(b.slot));
        assert!(count::checked(seg, h, 1024, 0).is_err(), "another piece of the region");
        assert!(count::checked(seg, h, 1025, 64).is_err(), "a piece of another region");
        let small = a.allocate(8, 0).unwrap();
        let h8 = crate::meta::RcHandle {
            segment: seg.id(),
            offset: small.offset,
            delta: u16::try_from(small.delta).unwrap(),
        };
        assert!(count::checked(seg, h8, 1024, 64).is_err(), "a small block of another use");
    }

    /// A transport that left the session with tickets out leaves its chunk marked [`LEFT`]: the
    /// orphan watch finds those tickets there; a chunk given up with none out is free, and the
    /// watch does not read it (before, every free chunk was read ticket by ticket once a second:
    /// almost the whole table of a large segment).
    ///
    /// [`LEFT`]: crate::segment::tickets::LEFT
    #[test]
    fn tickets_of_a_transport_that_left_are_found_and_free_chunks_are_skipped() {
        use crate::segment::tickets::{Issuer, Kind, LEFT};
        let (_s, a) = live("leftchunk");
        let table = a.own().tickets();
        let (me, socket) = (a.owner(), 5);
        let mut gone = Issuer::new(0x4242);
        let sent: Vec<_> = (0..3)
            .map(|_| {
                let rec = block_with(&a, u64::from(crate::segment::slots::IN_FLIGHT) << 32 | 1);
                let t = gone.issue(&table, a.own().id(), Kind::Message, &rec, &|_| true).unwrap();
                table.address(t.ticket, me, socket);
                t
            })
            .collect();
        gone.release(&table);
        let found = crate::transport::socket::orphans::find(&a, |r, s| r == me && s == socket);
        assert_eq!(found.len(), 3, "the tickets it left out are found");
        let owners = |c: u32| {
            table.out_in_chunks(|o| o == LEFT).iter().filter(|x| x.0 / crate::segment::tickets::CHUNK == c).count()
        };
        assert_eq!(owners(sent[0].ticket / crate::segment::tickets::CHUNK), 3, "in a chunk marked LEFT");
        for t in &sent {
            assert!(table.claim(t.ticket, t.nonce));
        }
        let mut idle = Issuer::new(0x4343);
        let t = idle.issue(&table, a.own().id(), Kind::Message, &block_with(&a, 1 << 32 | 1), &|_| true).unwrap();
        assert!(table.claim(t.ticket, t.nonce));
        idle.release(&table);
        assert!(crate::transport::socket::orphans::find(&a, |_, _| true).is_empty(), "nothing out any more");
        assert!(table.out_in_chunks(|o| o == 0).is_empty(), "free chunks hold no ticket");
    }

    /// A block of 100 bytes with count word `word`, and its record.
    fn block_with(a: &Attachment, word: u64) -> crate::meta::Record {
        let b = a.allocate(100, 0).unwrap();
        a.own().rc(b.offset, b.slot).store(word, Ordering::Relaxed);
        let (offset, delta, slot, generation) = (b.offset, b.delta, b.slot, b.generation);
        crate::meta::Record::Block { segment: a.own().id(), offset, delta, size: 100, slot, generation }
    }

    /// A sender killed while taking back a ticket whose record a live receiver is claiming, its
    /// mark already on the block: the block is the receiver's, and the sweep of the sender leaves
    /// it. Before, the sweep freed it (tickets under claim were not counted as handing anything
    /// over), and the receiver went on with a freed block. (Senders now take back by claiming
    /// first, as receivers do: see `take_back_sent`.)
    #[test]
    fn a_block_a_live_receiver_is_claiming_is_not_freed_with_its_dead_sender() {
        let (_scratch, live) = live("claiming");
        let dead_mark = live.owner() ^ 0x5a5a;
        let rec = block_with(&live, u64::from(dead_mark) << 32 | 1);
        let t = live.issue(Kind::Message, &rec).unwrap();
        assert!(live.own().tickets().claim_as(t.ticket, t.nonce, live.owner()), "the live receiver's claim");
        crate::session::liveness::fake_dead_transport(&live.mng, 200, std::process::id(), dead_mark);
        assert_eq!(live.sweep_dead(), [std::process::id()]);
        let crate::meta::Record::Block { offset, delta, size, slot, .. } = rec else { unreachable!() };
        assert!(live.own().check_block(offset, delta, size, slot).is_ok(), "still allocated");
        assert!(!live.take_back_sent(&t, &rec), "the receiver's claim came first");
        live.own().check().unwrap();
    }

    /// The monitor's sweep finishes the claims dead receivers left under way, as a transport's
    /// does (before, their tickets stayed claimed and their blocks in flight for good).
    #[test]
    fn the_monitor_finishes_claims_dead_receivers_left() {
        let (_scratch, live) = live("monclaim");
        let rec = block_with(&live, u64::from(crate::segment::slots::IN_FLIGHT) << 32 | 1);
        let t = live.issue(Kind::Message, &rec).unwrap();
        let dead_mark = live.owner() ^ 0x5a5a;
        let tickets = live.own().tickets();
        assert!(tickets.claim_as(t.ticket, t.nonce, dead_mark));
        crate::session::liveness::fake_dead_transport(&live.mng, 200, std::process::id(), dead_mark);
        let swept = crate::monitor::sweep(live.names().shm_id()).unwrap();
        assert_eq!(swept.dead, [std::process::id()]);
        assert_eq!(tickets.outstanding(), 0, "the claim was finished");
        assert_eq!(live.own().owned_by(dead_mark).unwrap().0, 0, "and the block freed as the dead claimer's");
        live.own().check().unwrap();
    }

    /// A segment whose id finds no room in the session's registry: the attach fails, and the
    /// segment file it created is removed. Before, it stayed in /dev/shm after the session ended.
    #[test]
    fn a_segment_the_registry_has_no_room_for_is_removed() {
        let (_scratch, live) = live("segfull");
        {
            let lock = live.mng.lock().unwrap();
            let mut id = 1;
            while lock.register_segment(id, 1 << 20).is_ok() {
                id += 1;
            }
        }
        let mut c = live.config.clone();
        c.segment_id = 999;
        let path = Names::path(&live.names.segment(999));
        assert!(Attachment::new(&c, Arc::new(Interrupter::new().unwrap())).is_err());
        assert!(!path.exists(), "{} was left", path.display());
    }

    /// A process killed while it made a segment or region file, before it linked the file under
    /// its name, leaves a temporary file with all the room it reserved; the sweep that counts it
    /// out removes it. Before, it stayed until the session ended (a large segment's worth of the
    /// tmpfs). A live creator's temporary file stays.
    #[test]
    fn the_sweep_of_a_dead_creator_removes_its_temporary_files() {
        let (_scratch, live) = live("tmpfiles");
        // By owner mark, not pid: the dead transport may have had a live process's pid (another
        // pid namespace), here our own.
        let dead_mark = live.owner() ^ 0x5a5a;
        let theirs = Names::path(&live.names.tmp_for(dead_mark));
        let ours = Names::path(&live.names.tmp_for(live.owner()));
        for p in [&theirs, &ours] {
            std::fs::write(p, b"reserved").unwrap();
        }
        crate::session::liveness::fake_dead_transport(&live.mng, 200, std::process::id(), dead_mark);
        assert_eq!(live.sweep_dead(), [std::process::id()]);
        assert!(!theirs.exists(), "the dead creator's file is removed");
        assert!(ours.exists(), "a live creator's stays");
        std::fs::remove_file(&ours).unwrap();
    }

    /// Processes in different pid namespaces can share /dev/shm, so a dead transport can have a
    /// live one's pid: the sweep frees the dead one's cached blocks by its owner mark, and leaves
    /// the live one's alone.
    #[test]
    fn a_sweep_frees_by_owner_mark_not_by_pid() {
        let mut c = ShmConfig::new("live", &format!("mgr-owner-{}", std::process::id()));
        c.segment_size = 8 << 20;
        let _scratch = crate::scratch::Scratch::of_shm_id(&c.resolved_shm_id());
        let live = Attachment::new(&c, Arc::new(Interrupter::new().unwrap())).unwrap();
        // A block cached by the live transport (count 0, its mark).
        let b = live.allocate(100, 0).unwrap();
        // A dead transport of the same pid, with a cached block of its own.
        let dead_mark = live.owner() ^ 0x5a5a;
        let d = live.allocate(100, 0).unwrap();
        live.own().rc(d.offset, d.slot).store(u64::from(dead_mark) << 32, Ordering::Relaxed);
        live.release(live.own(), b.offset, b.delta, b.slot);
        let (cached, _) = live.own().owned_by(live.owner()).unwrap();
        assert!(cached >= 1);
        assert_eq!(live.own().owned_by(dead_mark).unwrap().0, 1);
        crate::session::liveness::fake_dead_transport(&live.mng, 200, std::process::id(), dead_mark);
        assert_eq!(live.sweep_dead(), [std::process::id()]);
        assert_eq!(live.own().owned_by(dead_mark).unwrap().0, 0, "the dead transport's block was freed");
        assert_eq!(live.own().owned_by(live.owner()).unwrap().0, cached, "the live one's cache is untouched");
        live.own().check().unwrap();
    }
}
