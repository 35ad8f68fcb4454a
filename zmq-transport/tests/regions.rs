//! Unmanaged regions of the zeromq transport: messages copy their piece and the callback hears of
//! it at once; ids, bounds and region events as FairMQ's zeromq transport has them.

use fairmq_zmq::{
    Message, RegionBlock, RegionCallback, RegionConfig, RegionError, RegionEvent, RegionInfo, SocketType, Transport,
};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// (address, offset, size, hint) of each acknowledged piece.
type Acked = Arc<Mutex<Vec<(usize, u64, usize, u64)>>>;

fn recorder() -> (Acked, RegionCallback) {
    let seen = Acked::default();
    let s = seen.clone();
    (
        seen,
        RegionCallback::Single(Box::new(move |b: &RegionBlock| {
            s.lock().unwrap().push((b.ptr as usize, b.offset, b.size, b.hint))
        })),
    )
}

#[test]
fn a_region_message_copies_its_piece_and_acknowledges_at_once() {
    let t = Transport::new("regions").unwrap();
    let (seen, cb) = recorder();
    let region = t.create_region(4096, cb, &RegionConfig::default()).unwrap();
    assert_eq!((region.id(), region.size()), (1, 4096));
    let mut zeros = vec![1u8; 4096];
    region.read(0, &mut zeros).unwrap();
    assert!(zeros.iter().all(|&b| b == 0), "a new region is zeroed");
    region.write(100, b"detector data").unwrap();
    let msg = t.new_message_from_region(&region, 100, 13, 77).unwrap();
    assert_eq!(msg.data(), b"detector data");
    let got = seen.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "acknowledged before the message is even sent");
    assert_eq!(got[0], (region.data_ptr() as usize + 100, 100, 13, 77));
    // The message holds a copy: the piece may be reused at once.
    region.write(100, b"XXXXXXXXXXXXX").unwrap();
    assert_eq!(msg.data(), b"detector data");

    let push = t.socket(SocketType::Push, "data").unwrap();
    let pull = t.socket(SocketType::Pull, "data").unwrap();
    pull.bind("inproc://zmq-region").unwrap();
    push.connect("inproc://zmq-region").unwrap();
    let mut msg = msg;
    assert_eq!(push.send(&mut msg, 1000).unwrap(), 13);
    let mut r = Message::new();
    pull.receive(&mut r, 1000).unwrap();
    assert_eq!(r.data(), b"detector data");
    assert_eq!(seen.lock().unwrap().len(), 1, "one acknowledgement per piece");
}

#[test]
fn bulk_callback_gets_a_batch_of_one_and_ids_count_up() {
    let t = Transport::new("bulk").unwrap();
    let batches = Arc::new(Mutex::new(Vec::new()));
    let b = batches.clone();
    let cb = RegionCallback::Bulk(Box::new(move |blocks: &[RegionBlock]| b.lock().unwrap().push(blocks.len())));
    let r1 = t.create_region(64, cb, &RegionConfig { lock: true, ..RegionConfig::default() }).unwrap();
    let r2 = t.create_region(64, RegionCallback::None, &RegionConfig::default()).unwrap();
    let r3 = t.create_region(0, RegionCallback::None, &RegionConfig::default()).unwrap();
    assert_eq!((r1.id(), r2.id(), r3.id()), (1, 2, 3));
    for i in 0..5 {
        t.new_message_from_region(&r1, i, 8, i as u64).unwrap();
    }
    assert_eq!(*batches.lock().unwrap(), vec![1; 5]);
    assert_eq!(t.new_message_from_region(&r2, 0, 64, 0).unwrap().size(), 64);
    assert_eq!(t.new_message_from_region(&r3, 0, 0, 0).unwrap().size(), 0);
}

#[test]
fn pieces_outside_the_region_and_foreign_regions_are_refused() {
    let t = Transport::new("bounds").unwrap();
    let other = Transport::new("other").unwrap();
    let (seen, cb) = recorder();
    let region = t.create_region(1000, cb, &RegionConfig::default()).unwrap();
    for (offset, size) in [(1000, 1), (999, 2), (0, 1001), (usize::MAX, 2)] {
        assert_eq!(
            t.new_message_from_region(&region, offset, size, 0).unwrap_err(),
            RegionError::OutsideRegion { offset, size, region_size: 1000 }
        );
    }
    assert!(matches!(region.write(990, &[0; 11]), Err(RegionError::OutsideRegion { .. })));
    assert_eq!(other.new_message_from_region(&region, 0, 1, 0).unwrap_err(), RegionError::ForeignRegion { id: 1 });
    assert!(seen.lock().unwrap().is_empty(), "a refused piece is not acknowledged");
}

#[test]
fn events_start_local_only_then_follow_creation_and_destruction() {
    let t = Transport::new("events").unwrap();
    let region =
        t.create_region(128, RegionCallback::None, &RegionConfig { user_flags: 9, ..RegionConfig::default() }).unwrap();
    let ptr = region.data_ptr() as usize;
    assert_eq!(t.region_info().len(), 1);
    let (tx, rx) = mpsc::channel::<RegionInfo>();
    t.subscribe_to_region_events(move |e| {
        let _ = tx.send(e);
    })
    .unwrap();
    assert!(t.subscribed_to_region_events());
    let next = || rx.recv_timeout(Duration::from_secs(30)).expect("an event");
    let first = next();
    assert_eq!((first.managed, first.id, first.event), (true, 0, RegionEvent::LocalOnly));
    let created = next();
    assert_eq!(created, RegionInfo { managed: false, id: 1, ptr, size: 128, flags: 9, event: RegionEvent::Created });
    drop(region);
    let destroyed = next();
    assert_eq!((destroyed.id, destroyed.event, destroyed.flags), (1, RegionEvent::Destroyed, 9));
    assert!(t.region_info().is_empty(), "region info lists live regions only");
    t.unsubscribe_from_region_events();
    assert!(!t.subscribed_to_region_events());
    let _later = t.create_region(8, RegionCallback::None, &RegionConfig::default()).unwrap();
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "no delivery after unsubscribing");
}

/// A message of a region made inside that region's callback: the callback runs under the region's
/// lock, so this call waited for itself for ever; now it is an error and the outer call goes on.
#[test]
fn a_message_of_a_region_made_inside_its_own_callback_is_an_error_not_a_deadlock() {
    use std::sync::{OnceLock, Weak};
    let t = Transport::new("reenter").unwrap();
    let slot: Arc<OnceLock<(Transport, Weak<fairmq_zmq::Region>)>> = Arc::default();
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let (s, e) = (slot.clone(), errors.clone());
    let cb = RegionCallback::Single(Box::new(move |_: &RegionBlock| {
        if let Some((t, r)) = s.get() {
            let r = r.upgrade().expect("the region lives while its callback runs");
            let inner = t.new_message_from_region(&r, 0, 8, 0);
            e.lock().unwrap().push(inner.err().map(|x| x.to_string()).unwrap_or_else(|| "made".into()));
        }
    }));
    let region = Arc::new(t.create_region(4096, cb, &RegionConfig::default()).unwrap());
    assert!(slot.set((t.clone(), Arc::downgrade(&region))).is_ok());
    let outer = t.new_message_from_region(&region, 0, 8, 0).unwrap();
    assert_eq!(outer.size(), 8);
    let errors = errors.lock().unwrap().clone();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("inside its own callback"), "{errors:?}");
    // Outside the callback the region works as before.
    assert_eq!(t.new_message_from_region(&region, 8, 8, 0).unwrap().size(), 8);
}
