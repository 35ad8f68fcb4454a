//! Region events (FairMQ's `SubscribeToRegionEvents`, `GetRegionInfo`): who learns that segments
//! and regions of the session appeared or went.
//!
//! A subscription is a thread that checks the session's event counter every 50 ms; when it moved, it
//! compares the registries with what it reported before and calls back once per change: `Created`
//! for every segment or region seen live for the first time, `Destroyed` for one seen live before and
//! destroyed now.

use crate::manager::Manager;
pub use fairmq_zmq::region_types::{RegionEvent, RegionInfo};
use std::collections::HashMap;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often a subscription looks at the event counter (FairMQ: 50 ms).
pub const EVENT_POLL: Duration = Duration::from_millis(50);

/// Every segment and region of the session. Live regions are mapped (as a viewer) to learn their
/// address, as in FairMQ.
pub(crate) fn region_info(mgr: &Manager) -> Vec<RegionInfo> {
    let mut out = Vec::new();
    for s in mgr.management().segments() {
        if let Ok(seg) = mgr.segment(s.id) {
            let ptr = seg.base_address();
            out.push(RegionInfo { managed: true, id: s.id, ptr, size: s.size, flags: 0, event: RegionEvent::Created });
        }
    }
    for r in crate::registry::regions(mgr.management()) {
        let mut info = RegionInfo {
            managed: false,
            id: r.id,
            ptr: 0,
            size: 0,
            flags: r.user_flags,
            event: RegionEvent::Destroyed,
        };
        if !r.destroyed {
            match mgr.region_view(r.id) {
                Ok(map) => {
                    info.ptr = map.base() as usize;
                    info.size = map.size();
                    info.event = RegionEvent::Created;
                }
                // Destroyed between the two reads, or unreadable: not reported as live.
                Err(e) => log::debug!("region {} not mapped for region info: {e}", r.id),
            }
        }
        out.push(info);
    }
    out
}

/// A running subscription.
pub(crate) struct Subscription {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Subscription {
    pub fn start(mgr: Arc<Manager>, mut callback: Box<dyn FnMut(RegionInfo) + Send>) -> std::io::Result<Subscription> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new().name("fmq-region-events".into()).spawn(move || {
            let mut seen_count = None;
            let mut known: HashMap<(u16, bool), RegionEvent> = HashMap::new();
            loop {
                let count = mgr.management().event_count();
                if seen_count != Some(count) {
                    seen_count = Some(count);
                    for info in region_info(&mgr) {
                        let key = (info.id, info.managed);
                        let before = known.insert(key, info.event);
                        let report = matches!(
                            (before, info.event),
                            (None, RegionEvent::Created) | (Some(RegionEvent::Created), RegionEvent::Destroyed)
                        );
                        if report {
                            callback(info);
                        }
                    }
                }
                match stopped.recv_timeout(EVENT_POLL) {
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    _ => return,
                }
            }
        })?;
        Ok(Subscription { stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}
