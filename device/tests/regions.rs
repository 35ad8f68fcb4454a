//! Regions through the device API: both transports behind one `Transport`, the FairMQ error for a
//! region of the other transport, and events.

mod common;
use common::{session_transport, Session};
use fairmq::region::{RegionCallback, RegionConfig, RegionEvent};
use fairmq::{Error, TransportKind};
use std::sync::mpsc;
use std::time::Duration;

fn transports(s: &Session) -> (fairmq::Transport, fairmq::Transport) {
    (session_transport(s, TransportKind::Zeromq, |_| {}), session_transport(s, TransportKind::Shmem, |_| {}))
}

#[test]
fn a_region_of_the_other_transport_is_refused_with_fairmqs_message() {
    let s = Session::new();
    let (z, m) = transports(&s);
    let zr = z.create_region(1000, RegionCallback::None, &RegionConfig::default()).unwrap();
    let mr = m.create_region(1000, RegionCallback::None, &RegionConfig::default()).unwrap();
    assert_eq!((zr.kind(), mr.kind()), (TransportKind::Zeromq, TransportKind::Shmem));
    let e = m.new_message_from_region(&zr, 0, 10, 0).unwrap_err();
    assert!(matches!(e, Error::RegionKind { .. }));
    assert_eq!(e.to_string(), "region type (zeromq) does not match message type (shmem)");
    let e = z.new_message_from_region(&mr, 0, 10, 0).unwrap_err();
    assert_eq!(e.to_string(), "region type (shmem) does not match message type (zeromq)");
    assert!(matches!(
        z.new_message_from_region(&zr, 990, 11, 0),
        Err(Error::Region(fairmq_zmq::RegionError::OutsideRegion { offset: 990, size: 11, region_size: 1000 }))
    ));
    assert!(matches!(
        m.new_message_from_region(&mr, 990, 11, 0),
        Err(Error::Shm(fairmq_shm::ShmError::OutsideRegion { offset: 990, size: 11, region_size: 1000 }))
    ));
}

#[test]
fn both_transports_report_region_events_and_info_through_the_device_api() {
    let s = Session::new();
    let (z, m) = transports(&s);
    for t in [&z, &m] {
        let (tx, rx) = mpsc::channel();
        t.subscribe_to_region_events(move |e| {
            let _ = tx.send(e);
        })
        .unwrap();
        assert!(t.subscribed_to_region_events());
        let cfg = RegionConfig { user_flags: 42, ..RegionConfig::default() };
        let r = t.create_region(4096, RegionCallback::None, &cfg).unwrap();
        r.write(0, b"abc").unwrap();
        let id = r.id();
        let created = (0..10)
            .map(|_| rx.recv_timeout(Duration::from_secs(30)).expect("event"))
            .find(|e| !e.managed && e.id == id && e.event == RegionEvent::Created)
            .expect("the region's creation");
        assert_eq!((created.size, created.flags, created.ptr), (4096, 42, r.data_ptr() as usize));
        assert!(t.region_info().iter().any(|i| !i.managed && i.id == id));
        let msg = t.new_message_from_region(&r, 0, 3, 0).unwrap();
        assert_eq!(msg.data(), b"abc");
        drop(msg);
        drop(r);
        let destroyed = (0..10)
            .map(|_| rx.recv_timeout(Duration::from_secs(30)).expect("event"))
            .find(|e| e.id == id && e.event == RegionEvent::Destroyed);
        assert!(destroyed.is_some(), "{:?}", t.kind());
        t.unsubscribe_from_region_events();
    }
}
