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
    /// The owner mark that this transport writes into the blocks it allocates or caches (see
    /// `liveness::Attached`).
    owner: u32,
    own: Arc<Segment>,
    segments: SegmentTable,
    cache: Mutex<Cache>,
    /// Issues the tickets for what this transport hands to sockets. The tickets live in the ticket
    /// table of this transport's own segment.
    issuer: Mutex<Issuer>,
    interrupter: Arc<Interrupter>,
    acks: Acks,
    heartbeat: Option<Heartbeat>,
    /// The shared references this transport holds (see `ledger`).
    ledger: crate::session::ledger::Ledger,
    /// A weak reference to this attachment's own `Arc`, set once the attachment is shared.
    /// Releasing messages needs it.
    me: OnceLock<std::sync::Weak<Attachment>>,
    /// Held during a sweep of the dead. The session lock lets only one transport sweep a given dead
    /// transport; `sweeping` lets only one thread of this transport do so. The lock is reentrant
    /// because releasing what a lane held may start another sweep.
    sweeping: parking_lot::ReentrantMutex<()>,
    /// `alloc_retries` counts the allocations that found no room at first (each one waited or
    /// retried); `alloc_failures` counts those that failed in the end. The metrics read both
    /// counters. Only the slow path writes them.
    alloc_retries: std::sync::atomic::AtomicU64,
    alloc_failures: std::sync::atomic::AtomicU64,
    // This field comes last: detaching may remove the session, which must happen only after every
    // field above is released.
    mng: Arc<Management>,
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attachment").field("shm_id", &self.names.shm_id()).field("segment", &self.own.id()).finish()
    }
}

impl Attachment {
    /// Shorthand for tests: [`join`](Attachment::join) with `create` set.
    #[cfg(test)]
    pub(crate) fn new(config: &ShmConfig, interrupter: Arc<Interrupter>) -> Result<Attachment, ShmError> {
        Self::join(config, interrupter, true)
    }

    /// Attaches to the session of `config` and opens this transport's segment in it. With `create`,
    /// `Attachment::join` creates the segment if it does not exist yet. Without `create`, the
    /// session and the segment must both exist already (see `Management::join`).
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

    /// Sweeps dead processes. `Attachment::sweep_dead` frees what they held in their caches and
    /// what their ledgers listed, then counts them out of the session (see
    /// `liveness::SessionLock::find_dead`). Returns the pids of the dead processes.
    pub(crate) fn sweep_dead(&self) -> Vec<u32> {
        // Two threads of this transport would both find the same dead processes, because the sweep
        // is claimed by owner mark. One thread could then walk ledger pages that the other thread
        // had freed meanwhile.
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
            // The next sweeper finds these dead processes again and counts them out. Everything it
            // would free is already gone.
            Err(e) => log::error!("could not count dead processes out: {e}"),
        }
        dead.iter().map(|d| d.pid).collect()
    }

    /// Stores a weak reference to this attachment, once the attachment is in its `Arc`.
    pub(crate) fn set_shared(self: &Arc<Self>) {
        let _ = self.me.set(Arc::downgrade(self));
    }

    /// Returns this attachment's `Arc`, or `None` when the attachment is leaving.
    pub(crate) fn shared(&self) -> Option<Arc<Attachment>> {
        self.me.get().and_then(std::sync::Weak::upgrade)
    }

    /// The ledger of the shared references this transport holds.
    pub(crate) fn ledger(&self) -> &crate::session::ledger::Ledger {
        &self.ledger
    }

    /// Drops the references that this transport's ledger lists, as the sweep of the dead would
    /// after this process was killed. Tests use it to check what a killed process leaves behind.
    /// Returns how many references it dropped.
    #[cfg(test)]
    pub(crate) fn release_ledger_as_if_dead(&self) -> usize {
        let mut pieces = crate::region::count::Orphans::new(&self.mng);
        crate::session::ledger::release(self, &mut pieces, &self.mng, self.ledger.slot(), self.owner)
    }

    /// Returns `(retried, failed)`: how many allocations found no room at first, and how many of
    /// those failed.
    pub(crate) fn allocation_counts(&self) -> (u64, u64) {
        (self.alloc_retries.load(Ordering::Relaxed), self.alloc_failures.load(Ordering::Relaxed))
    }

    /// The owner mark of this transport's blocks.
    pub(crate) fn owner(&self) -> u32 {
        self.owner
    }

    /// Frees what the `dead` transports cached or held alone, in every segment of the session.
    /// Every segment is searched because a process caches blocks of its own segment, defers frees
    /// into its peers' segments, and holds messages of any segment.
    fn reclaim_dead(&self, dead: &[Dead]) {
        // A slot whose owner mark is damaged (0) is counted out, but nothing is freed in its name.
        let dead: Vec<Dead> = dead.iter().filter(|d| d.owner != 0).cloned().collect();
        let dead = &dead[..];
        if dead.is_empty() {
            return;
        }
        let segments: Vec<&Segment> = self.mng.segments().iter().filter_map(|e| self.segment(e.id).ok()).collect();
        // Release the shared references that the dead transports listed in their ledgers.
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
            // Nobody removes a segment that the registry does not list, so the segment would
            // outlive the session. No other process has opened it yet, because opening it takes
            // this lock too.
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

    /// Issues a ticket for handing the message that `rec` describes, or a lane's offer, to a
    /// socket. Returns `None` when every ticket this transport can get is already out.
    pub(crate) fn issue(&self, kind: Kind, rec: &crate::meta::Record) -> Option<Issued> {
        let table = self.own.tickets();
        self.issuer.lock().issue(&table, self.own.id(), kind, rec, &|owner| self.owner_alive(owner))
    }

    /// How many tickets this transport's segment holds, for all processes together. This is the
    /// most parts that a multipart message sent from this segment can have in flight at once.
    pub(crate) fn ticket_capacity(&self) -> u32 {
        self.own.tickets().capacity()
    }

    /// Records the receiver (`owner`, `socket`) in ticket `t`, whose record is about to go to that
    /// receiver (see `peers`).
    pub(crate) fn address(&self, t: &Issued, owner: u32, socket: u64) {
        if let Ok(s) = self.segment(t.segment) {
            s.tickets().address(t.ticket, owner, socket);
        }
    }

    /// The descriptor that becomes readable when the transport is interrupted (for polls).
    pub(crate) fn interrupter_fd(&self) -> std::os::fd::RawFd {
        self.interrupter.raw_fd()
    }

    /// Marks the block that `rec` names as this transport's, if the block is in flight with one
    /// reference. The caller is about to take the message back from a ticket (see
    /// `Message::mark_held`). The mark is set before the ticket is taken back. A process killed in
    /// between therefore leaves a block that a ticket still names, and a sweep leaves that block
    /// alone. The killed process never leaves a block in flight that nothing names.
    pub(crate) fn mark_back(&self, rec: &crate::meta::Record) {
        let _ = self.remark(rec, crate::segment::slots::IN_FLIGHT, self.owner);
    }

    /// Changes the holder mark of the block that `rec` names from `from` to `to`, if the block has
    /// one reference and the mark `from`. `Attachment::remark` checks the record first, because the
    /// record comes from a lane entry or a ticket, and a faulty peer may have damaged either.
    pub(crate) fn remark(&self, rec: &crate::meta::Record, from: u32, to: u32) -> crate::segment::Remark {
        crate::segment::remark(|id| self.segment(id).ok(), rec, from, to)
    }

    /// Whether ticket `t`, still out, was addressed to a single transport that is gone. If so, the
    /// ticket's record was lost with that transport's queue. The release of orphans treats such a
    /// record the same way (see `orphans`).
    pub(crate) fn addressee_gone(&self, t: &Issued) -> bool {
        let addressee = self.segment(t.segment).ok().and_then(|s| s.tickets().receiver(t.ticket, t.nonce));
        addressee.is_some_and(|r| self.receiver_gone(r))
    }

    /// Whether receiver mark `r` names a single transport, and that transport is gone.
    pub(crate) fn receiver_gone(&self, r: u32) -> bool {
        crate::segment::tickets::names_one(r) && !self.owner_alive(r)
    }

    /// Takes back a ticket whose record was never sent. Returns false when someone else claimed the
    /// ticket first.
    pub(crate) fn take_back(&self, t: &Issued) -> bool {
        self.segment(t.segment).is_ok_and(|s| s.tickets().claim(t.ticket, t.nonce))
    }

    /// Takes back a ticket whose record `rec` was already sent, so a receiver may be claiming the
    /// ticket right now. `Attachment::take_back_sent` claims the ticket as a receiver would, marks
    /// the block as this transport's while the claim is under way, and then ends the claim. If this
    /// process is killed on the way, it leaves a claim under way. The sweep of the dead finishes
    /// that claim and frees the block as this transport's. If a receiver claims the ticket first,
    /// the receiver keeps the block as it is, and this function returns false.
    ///
    /// (An earlier version marked the block before claiming the ticket. A receiver could then claim
    /// the ticket in between. If this process was killed at that point, the sweep of this process
    /// freed the block while the receiver held it.)
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

    /// Whether the transport is interrupted. A waiting transfer gives up when it is.
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

    /// Returns region `id`, mapping it as a viewer on first use, that is, when the first message of
    /// the region arrives.
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
        // If the region's queue is missing (its controller is gone), pieces can still be read, but
        // acknowledgements are dropped.
        let queue = AckQueue::open(&Names::path(&self.names.region_queue(id))).ok();
        log::debug!("Opened unmanaged shared memory region: {} (viewer)", entry.data_path(&self.names).display());
        Ok(self.acks.insert(Arc::new(RegionMap::new(entry, data, queue, false, Some(self.mng.clone())))))
    }

    /// Called when the last reference to a piece of region `map` is gone.
    pub(crate) fn release_region_piece(&self, map: &RegionMap, offset: u64, size: u64, hint: u64) {
        self.acks.released(map, Ack { offset, size, hint });
    }
    /// Returns segment `id`, mapping it on first use. `Attachment::segment` is inlined because
    /// every received record looks up its segment, and that segment is nearly always mapped
    /// already.
    #[inline]
    pub(crate) fn segment(&self, id: u16) -> Result<&Segment, MetaError> {
        match self.mapped_segment(id) {
            Some(s) => Ok(s),
            None => self.map_segment(id),
        }
    }

    /// The segment `id` if this process mapped it. This transport's own segment, which holds every
    /// message it sends, is returned without the table's two lookups.
    #[inline]
    fn mapped_segment(&self, id: u16) -> Option<&Segment> {
        if id == self.own.id() {
            return Some(&self.own);
        }
        self.segments.get(id)
    }

    #[cold]
    fn map_segment(&self, id: u16) -> Result<&Segment, MetaError> {
        let seg = Segment::open(&Names::path(&self.names.segment(id)), id).map_err(|e| {
            log::error!("Could not get segment with id '{id}': {e}");
            MetaError::Unknown { kind: "segment", id }
        })?;
        Ok(self.segments.insert(Arc::new(seg)))
    }

    /// Returns segment `id`, which this attachment has mapped already. The segment of every message
    /// is mapped.
    pub(crate) fn mapped(&self, id: u16) -> &Segment {
        self.mapped_segment(id).expect("a message's segment is mapped before the message exists and stays mapped")
    }

    /// Allocates a small block of `size` bytes in this transport's segment if there is room now,
    /// looking at the caches and the depot once. `Attachment::allocate_now` never waits. A receive
    /// uses it for what it needs on the way, such as the count block of a region piece, because a
    /// receive must not hang on a full segment.
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
            // This process's caches and the depot are the first places to find room. A magazine of
            // our size in the depot serves as it is; other magazines go back to the heap.
            self.flush(true);
            if let Some(b) = self.try_then_drain_depot(size64, align64, need)? {
                return Ok(b);
            }
            attempts += 1;
            if policy.max_attempts >= 0 && attempts >= policy.max_attempts {
                // Other processes may hold freed blocks of this segment in their caches. While this
                // process is counted as waiting, they give those blocks back at their next release.
                // Before returning the error, give a busy peer a moment to do so. A retrying policy
                // gives that moment in its sleep below.
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
            // A stream of large messages often fills the segment, and the receiver frees blocks in
            // batches within microseconds. Yielding to the receiver for a moment is far cheaper
            // than sleeping on the futex and being woken. Yielding also does not make every free of
            // the receiver wake us.
            if self.spin_for_memory(need) {
                if let Some(b) = self.try_allocate(size64, align64, need)? {
                    return Ok(b);
                }
            }
            // Count this process as waiting, look once more, then sleep. A free that happens after
            // the count wakes us, and so do the end of the interval and an interrupt of this
            // transport. The last look sees a free that happened before the count.
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

    /// Yields the processor up to `SPINS` (1024) times, checking whether `need` bytes became free
    /// in the heap or the depot. Returns true when they did.
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

    /// Tries to allocate. If that fails, returns the depot's blocks to the heap and tries again. A
    /// magazine of our size in the depot serves as it is, but only cache refills take from the
    /// depot. Other sizes and aligned requests need the heap.
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
        // Try a cached block first; the common case needs nothing else. Magazines hold only blocks
        // with the heap's own alignment.
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
        // Refilled blocks carry no reference, only our owner mark. If this process dies, a sweep
        // frees exactly those blocks. The block handed out now gets its reference.
        let mut first = out.pop();
        if let Some(b) = &mut first {
            self.own.hand_out(b, self.owner);
        }
        let evicted = cache.stock(need, out);
        drop(cache);
        if !evicted.is_empty() {
            let own = self.own.id();
            cache::free_all(evicted.into_iter().map(|b| (own, b.offset, b.slot)).collect(), |id| {
                self.mapped_segment(id)
            });
        }
        Ok(first)
    }

    /// Called when this process dropped the last reference to a block.
    pub(crate) fn release(&self, seg: &Segment, offset: u64, delta: u32, slot: u32) {
        self.release_sized(seg, offset, delta, slot, seg.block_size(offset, slot));
    }

    /// Like [`Attachment::release`], for a block whose size the caller has already read (see
    /// `Segment::count_and_size`).
    pub(crate) fn release_sized(&self, seg: &Segment, offset: u64, delta: u32, slot: u32, size: u64) {
        let block = Block { offset, delta, size, slot, generation: 0 };
        let own = seg.id() == self.own.id();
        // Record this transport as the block's owner while the block sits in our cache or deferred
        // list. If this process dies, the blocks with our owner mark and no reference are exactly
        // those blocks, and a sweep can free them for us.
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

    /// Frees the deferred blocks now. With `everything`, also frees the magazine blocks.
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
        cache::free_all(blocks, |id| self.mapped_segment(id));
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
        // Every message is gone, so the ledger lists nothing any more, and its overflow pages can
        // be freed.
        self.ledger.leave(&self.mng);
        let Some(heartbeat) = self.heartbeat.take() else { return self.flush(true) };
        // Sweep while still attached. If this is the last transport, what the dead held goes back
        // before its detach removes the session. Otherwise that memory stays for the transports
        // that remain.
        self.sweep_dead();
        // Empty the caches after the sweep, because the sweep frees what the dead held last through
        // this transport's caches. (An earlier version emptied the caches first. What a transport
        // swept as it left then stayed allocated until the session ended, marked with the mark of a
        // transport that was gone.)
        self.flush(true);
        match self.mng.detach(heartbeat, self.config.no_cleanup) {
            Ok(_) => {}
            Err(e) => log::error!("could not detach from shared memory session {}: {e}", self.names.shm_id()),
        }
    }
}

/// 256 consecutive segment ids.
type Chunk = Box<[OnceLock<Arc<Segment>>]>;

/// Segments by id. Lookups are lock-free; entries are added once and never removed.
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

    /// A receiver is killed between claiming a ticket and marking the block as its own. The claim
    /// stays under way, and nobody else may take the ticket. The sweep of the dead finishes the
    /// claim and frees the block along with what the dead receiver held. (Before, the block stayed
    /// allocated for good.)
    #[test]
    fn a_claim_its_receiver_left_under_way_is_finished_by_the_sweep() {
        let mut c = ShmConfig::new("live", &format!("mgr-claim-{}", std::process::id()));
        c.segment_size = 8 << 20;
        let _scratch = crate::scratch::Scratch::of_shm_id(&c.resolved_shm_id());
        let live = Attachment::new(&c, Arc::new(Interrupter::new().unwrap())).unwrap();
        // A block handed over by a ticket and in flight (count 1, marked in flight), as a sender
        // leaves it.
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

    /// A record's shared count is taken only from the count block of that very piece. A block that
    /// names no piece (such as any other message's block) is refused, and so is a block that names
    /// another piece. Otherwise a forged record would make its receiver count down a block that
    /// others hold.
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

    /// A transport that leaves the session with tickets out leaves its chunk marked [`LEFT`], and
    /// the orphan watch finds those tickets there. A chunk given up with no tickets out is free,
    /// and the watch does not read it. (Before, the watch read every free chunk ticket by ticket
    /// once a second, which was almost the whole table of a large segment.)
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

    /// A sender is killed while taking back a ticket whose record a live receiver is claiming, and
    /// the sender's mark is already on the block. The block belongs to the receiver, and the sweep
    /// of the sender leaves it alone. Before, the sweep freed the block, because tickets under
    /// claim were not counted as handing anything over. The receiver then went on with a freed
    /// block. (Senders now take a ticket back by claiming it first, as receivers do: see
    /// `take_back_sent`.)
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

    /// The monitor's sweep finishes the claims that dead receivers left under way, as a transport's
    /// sweep does. (Before, their tickets stayed claimed and their blocks stayed in flight for
    /// good.)
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

    /// The session's registry has no room for a segment's id. The attach fails, and the segment
    /// file that the attach created is removed. Before, the file stayed in /dev/shm after the
    /// session ended.
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

    /// A process killed while it creates a segment or region file, before it links the file under
    /// its name, leaves a temporary file that holds all the room it reserved. The sweep that counts
    /// the process out removes that file. Before, the file stayed until the session ended, taking a
    /// large segment's worth of the tmpfs. The temporary file of a live creator stays.
    #[test]
    fn the_sweep_of_a_dead_creator_removes_its_temporary_files() {
        let (_scratch, live) = live("tmpfiles");
        // The sweep goes by owner mark, not by pid: the dead transport may have had the pid of a
        // live process (in another pid namespace). Here the dead transport has our own pid.
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

    /// Processes in different pid namespaces can share /dev/shm, so a dead transport can have the
    /// same pid as a live one. The sweep frees the dead transport's cached blocks by its owner
    /// mark, and leaves the live transport's blocks alone.
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
