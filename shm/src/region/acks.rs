//! The regions a transport has mapped ([`Acks`]), and the transport's acknowledgement thread
//! (FairMQ's ack sender).
//!
//! The thread starts with the first region. It pushes released pieces to their regions' queues
//! every 500 ms ([`ACK_INTERVAL`]), and as soon as a region has a full batch of 256. When the
//! transport ends, [`Acks::shutdown`] stops the thread and sends what is still pending, before the
//! transport detaches. It waits at most 5 s in all for room in full queues; what does not fit by
//! then is lost.

use crate::region::ack_queue::Ack;
use crate::region::map::RegionMap;
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::HashMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest time a released piece waits before it is acknowledged (500 ms, as in FairMQ).
pub(crate) const ACK_INTERVAL: Duration = Duration::from_millis(500);
/// How long a transport that ends keeps trying to hand over its last acknowledgements.
const FINAL_FLUSH: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Shared {
    regions: RwLock<HashMap<u16, Arc<RegionMap>>>,
    wake: Mutex<Wake>,
    cv: Condvar,
}

#[derive(Default)]
struct Wake {
    urgent: bool,
    stop: bool,
}

#[derive(Default)]
pub(crate) struct Acks {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Acks {
    /// The mapping of region `id`, if this transport has one.
    pub(crate) fn get(&self, id: u16) -> Option<Arc<RegionMap>> {
        self.shared.regions.read().get(&id).cloned()
    }

    /// Adds a mapping, or returns the one that another thread added first. Starts the
    /// acknowledgement thread when the first region is added.
    pub(crate) fn insert(&self, map: Arc<RegionMap>) -> Arc<RegionMap> {
        let map = self.shared.regions.write().entry(map.id()).or_insert(map).clone();
        let mut t = self.thread.lock();
        if t.is_none() {
            let shared = self.shared.clone();
            match std::thread::Builder::new().name("fmq-region-acks".into()).spawn(move || run(&shared)) {
                Ok(h) => *t = Some(h),
                Err(e) => log::error!("could not start the region acknowledgement thread: {e}"),
            }
        }
        map
    }

    /// Forgets region `id` after its controller destroyed it. Messages that still hold the region
    /// keep it mapped.
    pub(crate) fn remove(&self, id: u16) {
        self.shared.regions.write().remove(&id);
    }

    /// Every mapped region.
    pub(crate) fn all(&self) -> Vec<Arc<RegionMap>> {
        self.shared.regions.read().values().cloned().collect()
    }

    /// Records that the last holder of a piece of `map` released it.
    pub(crate) fn released(&self, map: &RegionMap, ack: Ack) {
        if map.released(ack) {
            self.shared.wake.lock().urgent = true;
            self.shared.cv.notify_one();
        }
    }
}

fn run(shared: &Shared) {
    loop {
        let stop = {
            let mut w = shared.wake.lock();
            if !w.urgent && !w.stop {
                shared.cv.wait_for(&mut w, ACK_INTERVAL);
            }
            w.urgent = false;
            w.stop
        };
        let regions: Vec<_> = shared.regions.read().values().cloned().collect();
        for r in regions {
            r.flush(Instant::now() + ACK_INTERVAL, true);
        }
        if stop {
            return;
        }
    }
}

impl Acks {
    /// Stops the thread and sends everything still pending. The transport calls this before it
    /// detaches.
    pub(crate) fn shutdown(&self) {
        if let Some(t) = self.thread.lock().take() {
            self.shared.wake.lock().stop = true;
            self.shared.cv.notify_one();
            let _ = t.join();
        }
        let deadline = Instant::now() + FINAL_FLUSH;
        for r in self.all() {
            r.flush(deadline, false);
        }
    }
}

impl Drop for Acks {
    fn drop(&mut self) {
        self.shutdown();
    }
}
