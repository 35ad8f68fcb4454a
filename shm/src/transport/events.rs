//! Region events (FairMQ's `SubscribeToRegionEvents`, `GetRegionInfo`): who learns that segments
//! and regions of the session appeared or went.
//!
//! A subscription is a thread that checks the session's event counter every 50 ms; when it moved, it
//! compares the registries with what it reported before and calls back once per change: `Created`
//! for every segment or region seen live for the first time, `Destroyed` for one seen live before and
//! destroyed now.

use crate::transport::attachment::Attachment;
pub use fairmq_zmq::vocabulary::region::{RegionEvent, RegionInfo};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often a subscription looks at the event counter (FairMQ: 50 ms).
pub(crate) const EVENT_POLL: Duration = Duration::from_millis(50);

/// Every segment and region of the session. As in FairMQ, each live region is mapped as a viewer
/// to learn its address.
pub(crate) fn region_info(mgr: &Attachment) -> Vec<RegionInfo> {
    looked_up(mgr).into_iter().map(|(info, _)| info).collect()
}

/// [`region_info`], with a flag per entry that says whether the entry is settled. The flag is
/// false for a live region that could not be mapped (yet). The entry of such a region says
/// `Destroyed`.
fn looked_up(mgr: &Attachment) -> Vec<(RegionInfo, bool)> {
    let mut out = Vec::new();
    for s in mgr.management().segments() {
        if let Ok(seg) = mgr.segment(s.id) {
            let ptr = seg.base_address();
            let info = RegionInfo { managed: true, id: s.id, ptr, size: s.size, flags: 0, event: RegionEvent::Created };
            out.push((info, true));
        }
    }
    for r in crate::session::registry::regions(mgr.management()) {
        let mut info = RegionInfo {
            managed: false,
            id: r.id,
            ptr: 0,
            size: 0,
            flags: r.user_flags,
            event: RegionEvent::Destroyed,
        };
        let mut settled = true;
        if !r.destroyed {
            match mgr.region_view(r.id) {
                Ok(map) => {
                    info.ptr = map.base() as usize;
                    info.size = map.size();
                    info.event = RegionEvent::Created;
                }
                // The region was destroyed between the two reads, or it cannot be read. It is not
                // reported as live.
                Err(e) => {
                    log::debug!("region {} not mapped for region info: {e}", r.id);
                    settled = false;
                }
            }
        }
        out.push((info, settled));
    }
    out
}

/// What a subscription reported so far.
#[derive(Default)]
struct Reported {
    /// The event counter when the session was last looked at.
    seen: Option<u64>,
    known: HashMap<(u16, bool), RegionEvent>,
}

impl Reported {
    /// If the event counter moved, calls back once per change since the last look. A live region
    /// that could not be mapped is left for the look after the next event. It is not taken as
    /// destroyed, because its `Created` event would then never come.
    fn deliver(&mut self, mgr: &Attachment, callback: &mut dyn FnMut(RegionInfo)) {
        let count = mgr.management().event_count();
        if self.seen == Some(count) {
            return;
        }
        self.seen = Some(count);
        for (info, settled) in looked_up(mgr) {
            // An unsettled region is looked at again at the next event. Until then, it is never
            // taken as destroyed.
            if !settled {
                continue;
            }
            let before = self.known.insert((info.id, info.managed), info.event);
            // As in FairMQ, report each segment or region in the state it is first seen in. So a
            // region created and destroyed between two looks is reported as destroyed. After that,
            // report only the end of one that was seen live.
            let report =
                matches!((before, info.event), (None, _) | (Some(RegionEvent::Created), RegionEvent::Destroyed));
            if report {
                callback(info);
            }
        }
    }
}

/// A running subscription.
pub(crate) struct Subscription {
    /// Set to end the thread.
    stop: Arc<AtomicBool>,
    /// Whether the thread looks at the session once more before it ends.
    last_look: Arc<AtomicBool>,
    mgr: Arc<Attachment>,
    thread: Option<JoinHandle<()>>,
}

impl Subscription {
    /// Calls `callback`, on a thread of its own, for every segment and region known now, and for
    /// every change after that. The session's event counter wakes the thread: any process that
    /// creates or destroys a segment or region bumps the counter. The thread also looks every
    /// [`EVENT_POLL`] anyway. What changed before a call of [`Subscription::finish`] is reported
    /// before that call returns.
    pub(crate) fn start(
        mgr: Arc<Attachment>,
        mut callback: Box<dyn FnMut(RegionInfo) + Send>,
    ) -> std::io::Result<Subscription> {
        let stop = Arc::new(AtomicBool::new(false));
        let last_look = Arc::new(AtomicBool::new(false));
        let (flag, look_last, m) = (stop.clone(), last_look.clone(), mgr.clone());
        let thread = std::thread::Builder::new().name("fmq-region-events".into()).spawn(move || {
            let mut reported = Reported::default();
            loop {
                let stopping = flag.load(Ordering::Acquire);
                if stopping && !look_last.load(Ordering::Acquire) {
                    return;
                }
                reported.deliver(&m, &mut *callback);
                if stopping {
                    return;
                }
                let seen = reported.seen.unwrap_or_else(|| m.management().event_count());
                m.management().wait_for_events(seen, EVENT_POLL);
            }
        })?;
        Ok(Subscription { stop, last_look, mgr, thread: Some(thread) })
    }

    /// Ends the subscription after it reports what changed until now. An unsubscription needs
    /// this: FairMQ's region example destroys its region, then unsubscribes, and expects the
    /// destroyed event.
    ///
    /// Dropping a `Subscription` without `finish`, as happens when the transport goes, reports
    /// nothing more, because the callback may use what is being dropped.
    pub(crate) fn finish(self) {
        self.last_look.store(true, Ordering::Release);
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.mgr.management().wake_event_waiters();
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}
