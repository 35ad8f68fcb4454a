//! Unmanaged regions: pieces sent zero-copy across processes, every callback variant, reference
//! counts of copies, acknowledgements (counts, batches, shutdown within the linger), file-backed
//! regions, region events in a second process, and the errors FairMQ defines.

mod common;
use common::*;
use fairmq_shm::testing::meta::{self, Record};
use fairmq_shm::{RegionCallback, RegionConfig, RegionEvent, ShmError, Transport};
use fairmq_zmq::layered::LayeredSocket;
use fairmq_zmq::{SocketType, TransferError};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn region_byte(offset: u64) -> u8 {
    (offset.wrapping_mul(7) ^ (offset >> 8)) as u8
}

/// (offset, size, hint) of every piece acknowledged, and the batch sizes.
#[derive(Default)]
struct Acked {
    pieces: Vec<(u64, usize, u64)>,
    batches: Vec<usize>,
}

fn bulk(acked: &Arc<Mutex<Acked>>) -> RegionCallback {
    let a = acked.clone();
    RegionCallback::Bulk(Box::new(move |blocks| {
        let mut a = a.lock().unwrap();
        a.batches.push(blocks.len());
        for b in blocks {
            a.pieces.push((b.offset, b.size, b.hint));
        }
    }))
}

fn single(acked: &Arc<Mutex<Acked>>) -> RegionCallback {
    let a = acked.clone();
    RegionCallback::Single(Box::new(move |b| a.lock().unwrap().pieces.push((b.offset, b.size, b.hint))))
}

fn fill(region: &fairmq_shm::Region) {
    let bytes: Vec<u8> = (0..region.size() as u64).map(region_byte).collect();
    region.write(0, &bytes).unwrap();
}

/// Sends `count` pieces of `size` bytes (hint = sequence number) to a sink peer in `mode`; returns
/// what the sink printed.
fn send_to_sink(
    s: &Session,
    t: &Transport,
    region: &fairmq_shm::Region,
    count: u64,
    size: usize,
    mode: &str,
) -> String {
    let addr = s.ipc(&format!("region-{mode}"));
    let push = t.socket(SocketType::Push, "data").unwrap();
    push.bind(&addr).unwrap();
    let mut sink = peer(&["regionsink", &s.name, &addr, &count.to_string(), mode]);
    sink.expect_line("ready");
    let slots = (region.size() / size) as u64;
    let mut i = 0;
    while i < count {
        let piece = |k: u64| t.new_message_from_region(region, ((k % slots) as usize) * size, size, k).unwrap();
        if mode == "parts" {
            let mut parts: Vec<_> = (i..(i + 4).min(count)).map(piece).collect();
            i += parts.len() as u64;
            push.send_parts(&mut parts, 60_000).unwrap();
        } else {
            push.send(&mut piece(i), 60_000).unwrap();
            i += 1;
        }
    }
    let line = sink.expect_line("received");
    assert!(sink.wait().success(), "sink failed: {:?}", sink.seen);
    line
}

/// Waits for `count` acknowledgements, then drops `region`: its receiver delivers every
/// acknowledgement queued before it stops (and the sink, which ended, queued all of its own), so a
/// duplicate is counted by then.
fn expect_all_acked(acked: &Arc<Mutex<Acked>>, region: fairmq_shm::Region, count: u64, size: usize, slots: u64) {
    wait_until("every acknowledgement", || {
        acked.lock().unwrap().pieces.len() as u64 >= count && region.outstanding() <= 0
    });
    assert_eq!(region.outstanding(), 0, "no piece acknowledged twice");
    drop(region);
    let a = acked.lock().unwrap();
    assert_eq!(a.pieces.len() as u64, count, "each piece acknowledged exactly once");
    let by_hint: BTreeMap<u64, (u64, usize)> = a.pieces.iter().map(|&(o, s, h)| (h, (o, s))).collect();
    assert_eq!(by_hint.len() as u64, count, "no hint twice");
    for (h, (o, sz)) in by_hint {
        assert_eq!((o, sz), ((h % slots) * size as u64, size), "piece {h} comes back with its offset and size");
    }
}

#[test]
fn bulk_callback_across_processes_every_piece_acked_once_in_batches() {
    let s = Session::new("rgbulk");
    let t = s.transport("src");
    let acked = Arc::new(Mutex::new(Acked::default()));
    let region = t.create_region(1 << 20, bulk(&acked), &RegionConfig::default()).unwrap();
    assert_eq!(region.id(), 1024, "automatic ids start where FairMQ's do");
    fill(&region);
    let count = 5000;
    let line = send_to_sink(&s, &t, &region, count, 1000, "plain");
    assert_eq!(line, format!("received {count} {}", count * 1000));
    expect_all_acked(&acked, region, count, 1000, 1048);
    let a = acked.lock().unwrap();
    assert!(a.batches.iter().all(|&b| (1..=256).contains(&b)), "batches of at most 256: {:?}", a.batches);
}

#[test]
fn single_callback_with_multipart_pieces() {
    let s = Session::new("rgsingle");
    let t = s.transport("src");
    let acked = Arc::new(Mutex::new(Acked::default()));
    let region = t.create_region(64 << 10, single(&acked), &RegionConfig::default()).unwrap();
    fill(&region);
    let line = send_to_sink(&s, &t, &region, 1000, 512, "parts");
    assert_eq!(line, "received 1000 512000");
    expect_all_acked(&acked, region, 1000, 512, 128);
}

#[test]
fn copies_in_another_process_share_the_piece_and_release_once() {
    let s = Session::new("rgcopy");
    let t = s.transport("src");
    let acked = Arc::new(Mutex::new(Acked::default()));
    let region = t.create_region(1 << 20, bulk(&acked), &RegionConfig::default()).unwrap();
    fill(&region);
    let line = send_to_sink(&s, &t, &region, 500, 2048, "copy");
    assert_eq!(line, "received 500 1024000");
    expect_all_acked(&acked, region, 500, 2048, 512);
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().used_blocks, 0, "the reference-count blocks of the copies were freed");
}

#[test]
fn copy_shares_the_piece_and_the_callback_fires_once_at_the_end() {
    let s = Session::new("rgcopylocal");
    let t = s.transport("a");
    let acked = Arc::new(Mutex::new(Acked::default()));
    let region = t.create_region(4096, bulk(&acked), &RegionConfig::default()).unwrap();
    fill(&region);
    let original = t.new_message_from_region(&region, 100, 50, 7).unwrap();
    assert_eq!(original.refcount(), 1);
    let mut c1 = t.new_message();
    c1.copy_from(&original).unwrap();
    let mut c2 = t.new_message();
    c2.copy_from(&c1).unwrap();
    assert_eq!((original.refcount(), c1.refcount(), c2.refcount()), (3, 3, 3));
    assert_eq!(c2.data(), original.data(), "same bytes");
    assert_eq!(c2.data().as_ptr(), original.data().as_ptr(), "not copied: the same piece");
    // The copies travel over a socket too, counts intact.
    let (push, pull) = (t.socket(SocketType::Push, "o").unwrap(), t.socket(SocketType::Pull, "i").unwrap());
    pull.bind("inproc://rgcopylocal").unwrap();
    push.connect("inproc://rgcopylocal").unwrap();
    push.send(&mut c1, 1000).unwrap();
    let mut got = t.new_message();
    pull.receive(&mut got, 1000).unwrap();
    assert_eq!(got.refcount(), 3);
    drop(original);
    drop(got);
    assert_eq!(c2.refcount(), 1);
    // A piece released now is acknowledged after every release before it (one queue, in order):
    // once its acknowledgement is in, an early one of the shared piece would be in too.
    drop(t.new_message_from_region(&region, 0, 10, 99).unwrap());
    wait_until("the acknowledgement of the piece released after", || !acked.lock().unwrap().pieces.is_empty());
    assert_eq!(acked.lock().unwrap().pieces, vec![(0, 10, 99)], "not released while a copy lives");
    drop(c2);
    wait_until("the acknowledgement", || acked.lock().unwrap().pieces.len() > 1);
    drop(region); // delivers every acknowledgement queued: a second one of the piece would be in
    assert_eq!(
        acked.lock().unwrap().pieces,
        vec![(0, 10, 99), (100, 50, 7)],
        "released once, with its offset, size and hint"
    );
}

#[test]
fn writing_a_shared_piece_copies_it_first() {
    let s = Session::new("rgcow");
    let t = s.transport("a");
    let acked = Arc::new(Mutex::new(Acked::default()));
    let region = t.create_region(4096, bulk(&acked), &RegionConfig::default()).unwrap();
    fill(&region);
    let a = t.new_message_from_region(&region, 0, 16, 1).unwrap();
    let mut b = t.new_message();
    b.copy_from(&a).unwrap();
    b.data_mut().unwrap()[0] ^= 0xff;
    assert_eq!(a.data()[0], region_byte(0), "the region is untouched");
    assert_ne!(b.data()[0], region_byte(0));
    assert!(b.region_piece().is_none(), "b has a block of its own now");
    assert_eq!(a.refcount(), 1);
}

/// A write through the region is refused while a message of this process refers to any of its
/// bytes (the message's `data()` could be reading them), also through a copy; it goes through
/// beside the pieces in use and once they are released.
#[test]
fn a_write_to_bytes_a_message_refers_to_is_refused() {
    let s = Session::new("rgheld");
    let t = s.transport("a");
    let region = t.create_region(4096, RegionCallback::None, &RegionConfig::default()).unwrap();
    fill(&region);
    let m = t.new_message_from_region(&region, 100, 50, 0).unwrap();
    let mut c = t.new_message();
    c.copy_from(&m).unwrap();
    for (offset, len) in [(100, 50), (149, 1), (0, 101), (120, 5), (0, 4096)] {
        let e = region.write(offset, &vec![0u8; len]).unwrap_err();
        assert!(matches!(e, fairmq_shm::ShmError::RegionPieceInUse { .. }), "{offset}+{len}: {e}");
    }
    region.write(0, &[1u8; 100]).unwrap();
    region.write(150, &[1u8; 10]).unwrap();
    assert_eq!(m.data(), &(100..150).map(region_byte).collect::<Vec<_>>()[..], "the piece is unchanged");
    drop(m);
    assert!(region.write(100, &[2u8; 50]).is_err(), "the copy still refers to the piece");
    drop(c);
    region.write(100, &[2u8; 50]).unwrap();
}

/// Two messages made from the same bytes count no references to each other: writing either copies
/// it first, so the other never sees the write (and nothing aliases the region's memory).
#[test]
fn writing_a_region_message_copies_it_even_when_it_looks_unshared() {
    let s = Session::new("rgcow2");
    let t = s.transport("a");
    let acked = Arc::new(Mutex::new(Acked::default()));
    let region = t.create_region(4096, bulk(&acked), &RegionConfig::default()).unwrap();
    fill(&region);
    let mut a = t.new_message_from_region(&region, 0, 16, 1).unwrap();
    let b = t.new_message_from_region(&region, 0, 16, 2).unwrap();
    assert_eq!((a.refcount(), b.refcount()), (1, 1));
    a.data_mut().unwrap()[0] ^= 0xff;
    assert!(a.region_piece().is_none(), "a has a block of its own now");
    assert_eq!(b.data()[0], region_byte(0), "b (and the region) untouched");
    assert_eq!(a.data()[0], region_byte(0) ^ 0xff);
    assert_eq!(&a.data()[1..], &b.data()[1..], "the rest was copied");
}

#[test]
fn pieces_released_at_shutdown_arrive_within_the_linger() {
    let s = Session::new("rglinger");
    let t = s.transport("src");
    let acked = Arc::new(Mutex::new(Acked::default()));
    let cfg = RegionConfig { linger: Duration::from_secs(60), ..Default::default() };
    let region = t.create_region(1 << 20, bulk(&acked), &cfg).unwrap();
    fill(&region);
    let addr = s.ipc("linger");
    let push = t.socket(SocketType::Push, "data").unwrap();
    push.bind(&addr).unwrap();
    let mut sink = peer(&["regionsink", &s.name, &addr, "300", "copy"]);
    sink.expect_line("ready");
    for i in 0..300u64 {
        let mut m = t.new_message_from_region(&region, (i as usize % 100) * 1000, 1000, i).unwrap();
        push.send(&mut m, 60_000).unwrap();
    }
    // Dropping the region waits (up to its linger) until the sink released everything and its
    // transport sent the last acknowledgements on the way out.
    drop(region);
    assert_eq!(acked.lock().unwrap().pieces.len(), 300, "none lost at shutdown");
    assert!(sink.wait().success());
}

#[test]
fn file_backed_region_is_registered_found_by_id_announced_and_cleaned() {
    let s = Session::new("rgfile");
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("{}/", dir.path().display());
    let file = dir.path().join(s.names().region(1024));
    {
        let t = s.transport("src");
        let acked = Arc::new(Mutex::new(Acked::default()));
        let cfg = RegionConfig { path: prefix.clone(), user_flags: 42, ..Default::default() };
        let region = t.create_region(256 << 10, bulk(&acked), &cfg).unwrap();
        assert!(file.exists(), "the region is a file at its path");
        let entry = fairmq_shm::testing::registry::find(&management(&s), 1024).expect("registered");
        assert_eq!((entry.path.as_str(), entry.size, entry.user_flags), (prefix.as_str(), 256 << 10, 42));
        let info = t.region_info();
        assert!(info.iter().any(|i| !i.managed && i.id == 1024 && i.size == 256 << 10 && i.flags == 42));
        fill(&region);
        let line = send_to_sink(&s, &t, &region, 200, 1024, "plain");
        assert_eq!(line, "received 200 204800");
        expect_all_acked(&acked, region, 200, 1024, 256);
        assert!(!file.exists(), "removed with the region");
        let entry = fairmq_shm::testing::registry::find(&management(&s), 1024).unwrap();
        assert!(entry.destroyed);
    }
    assert!(s.objects().is_empty(), "nothing left: {:?}", s.objects());
}

#[test]
fn session_cleanup_removes_a_file_backed_region_left_by_its_creator() {
    let s = Session::new("rgfileleft");
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("{}/", dir.path().display());
    let file = dir.path().join(s.names().region(7));
    {
        let t = s.transport("src");
        let cfg = RegionConfig { path: prefix, id: Some(7), remove_on_destruction: false, ..Default::default() };
        drop(t.create_region(4096, RegionCallback::None, &cfg).unwrap());
        assert!(file.exists(), "kept: remove_on_destruction is false");
    }
    assert!(!file.exists(), "the last transport removed the registered file");
    assert!(s.objects().is_empty(), "{:?}", s.objects());
}

fn management(s: &Session) -> fairmq_shm::testing::management::Management {
    fairmq_shm::testing::management::Management::open_existing(s.names()).unwrap()
}

#[test]
fn region_events_are_seen_by_a_second_process() {
    let s = Session::new("rgevents");
    let t = s.transport("a");
    let mut watcher = peer(&["regionevents", &s.name, "4"]);
    watcher.expect_line("subscribed");
    let managed = watcher.expect_line("event true 0 ");
    assert!(managed.ends_with("created"), "the managed segment is announced: {managed}");
    let r1 = t.create_region(10_000, RegionCallback::None, &RegionConfig::default()).unwrap();
    let cfg = RegionConfig { user_flags: 12345, ..Default::default() };
    let r2 = t.create_region(20_000, RegionCallback::None, &cfg).unwrap();
    let first = watcher.expect_line("event false");
    let second = watcher.expect_line("event false");
    let mut created = vec![first, second];
    created.sort();
    assert_eq!(created, vec!["event false 1024 10000 0 created", "event false 1025 20000 12345 created"]);
    drop(r1);
    drop(r2);
    let mut destroyed = vec![watcher.expect_line("event false"), watcher.expect_line("event false")];
    destroyed.sort();
    assert_eq!(destroyed, vec!["event false 1024 0 0 destroyed", "event false 1025 0 12345 destroyed"]);
    assert!(watcher.wait().success());
}

#[test]
fn local_subscription_reports_created_and_destroyed() {
    let s = Session::new("rgsub");
    let t = s.transport("a");
    let (tx, rx) = std::sync::mpsc::channel();
    t.subscribe_to_region_events(move |i| {
        let _ = tx.send(i);
    })
    .unwrap();
    assert!(t.subscribed_to_region_events());
    let seg = rx.recv_timeout(GENEROUS).unwrap();
    assert!(seg.managed && seg.event == RegionEvent::Created && seg.size == 64 << 20);
    let r = t.create_region(8192, RegionCallback::None, &RegionConfig::default()).unwrap();
    let c = rx.recv_timeout(GENEROUS).unwrap();
    assert_eq!((c.managed, c.id, c.size, c.event), (false, r.id(), 8192, RegionEvent::Created));
    assert_eq!(c.ptr, r.data_ptr() as usize, "the address in this process");
    drop(r);
    let d = rx.recv_timeout(GENEROUS).unwrap();
    assert_eq!((d.id, d.event, d.ptr, d.size), (1024, RegionEvent::Destroyed, 0, 0));
    t.unsubscribe_from_region_events();
    assert!(!t.subscribed_to_region_events());
    assert_eq!(format!("{}", RegionEvent::LocalOnly), "local_only");
}

/// What happened before the subscription ends is reported before it ends: a region destroyed
/// just before the unsubscription is reported destroyed (FairMQ's region example destroys its
/// region in ResetTask and unsubscribes right after: the destroyed event never came when the
/// subscription only looked every 50 ms). A region created and destroyed between two looks is
/// reported destroyed, as FairMQ does.
#[test]
fn events_before_an_unsubscription_are_all_reported() {
    let s = Session::new("rgquick");
    let t = s.transport("a");
    for round in 0..20 {
        let (tx, rx) = std::sync::mpsc::channel();
        t.subscribe_to_region_events(move |i| {
            let _ = tx.send(i);
        })
        .unwrap();
        let r = t.create_region(4096, RegionCallback::None, &RegionConfig::default()).unwrap();
        let id = r.id();
        let created = rx.iter().find(|i| !i.managed && i.id == id).expect("the created event");
        assert_eq!(created.event, RegionEvent::Created, "round {round}");
        drop(r);
        t.unsubscribe_from_region_events();
        let events: Vec<RegionEvent> = rx.try_iter().filter(|i| !i.managed && i.id == id).map(|i| i.event).collect();
        assert_eq!(events, [RegionEvent::Destroyed], "round {round}");
        // Created and destroyed before the subscription's first look: destroyed only.
        let (tx, rx) = std::sync::mpsc::channel();
        let r = t.create_region(4096, RegionCallback::None, &RegionConfig::default()).unwrap();
        let id = r.id();
        t.subscribe_to_region_events(move |i| {
            let _ = tx.send(i);
        })
        .unwrap();
        drop(r);
        t.unsubscribe_from_region_events();
        let events: Vec<RegionEvent> = rx.try_iter().filter(|i| !i.managed && i.id == id).map(|i| i.event).collect();
        assert!(
            events == [RegionEvent::Destroyed] || events == [RegionEvent::Created, RegionEvent::Destroyed],
            "round {round}: {events:?}"
        );
    }
}

/// A region created while this process subscribes to region events: the subscriber maps it as a
/// viewer as soon as it is registered, and the creator still controls it (before, the creator
/// could get that view back, and its callback never heard of its pieces).
#[test]
fn a_creator_that_subscribes_to_events_still_hears_of_its_pieces() {
    let s = Session::new("rgrace");
    let t = s.transport("a");
    t.subscribe_to_region_events(|_| {}).unwrap();
    for round in 0..50u64 {
        let acked = Arc::new(Mutex::new(Acked::default()));
        let r = t.create_region(4096, single(&acked), &RegionConfig::default()).unwrap();
        drop(t.new_message_from_region(&r, 0, 64, round).unwrap());
        // Destroying the region delivers what is still pending to its controller's callback.
        drop(r);
        assert_eq!(acked.lock().unwrap().pieces, [(0, 64, round)], "round {round}");
    }
    t.unsubscribe_from_region_events();
}

#[test]
fn errors_as_fairmq_defines_them() {
    let s = Session::new("rgerrors");
    let t = s.transport("a");
    let cfg = RegionConfig { id: Some(5), ..Default::default() };
    let r = t.create_region(4096, RegionCallback::None, &cfg).unwrap();
    let e = t.create_region(4096, RegionCallback::None, &cfg).unwrap_err();
    assert!(matches!(e, ShmError::RegionExists { id: 5 }), "{e}");
    assert!(e.to_string().contains("Only unique IDs per session are allowed"));
    // Another transport (another device) asking for id 5 with another size.
    let t2 = s.transport("b");
    let e = t2.create_region(8192, RegionCallback::None, &cfg).unwrap_err();
    assert!(matches!(e, ShmError::RegionSizeMismatch { mapped: 4096, configured: 8192 }), "{e}");
    let e = t.new_message_from_region(&r, 4000, 97, 0).unwrap_err();
    assert!(matches!(e, ShmError::OutsideRegion { .. }), "{e}");
    assert!(t.new_message_from_region(&r, 4000, 96, 0).is_ok(), "up to the last byte");
    drop(r);
    let e = t.create_region(4096, RegionCallback::None, &cfg).unwrap_err();
    assert!(matches!(e, ShmError::RegionIdTaken { id: 5 }), "{e}");
    let e = t.create_region(0, RegionCallback::None, &RegionConfig::default()).unwrap_err();
    assert!(matches!(e, ShmError::Config(_)), "{e}");
    let e = t
        .create_region(4096, RegionCallback::None, &RegionConfig { creation_flags: 0x40000, ..Default::default() })
        .unwrap_err();
    assert!(e.to_string().contains("unsupported region creation flags"), "{e}");
    // A region of another session cannot be sent here.
    let other = Session::new("rgerrors2");
    let t3 = other.transport("c");
    let r3 = t3.create_region(4096, RegionCallback::None, &RegionConfig::default()).unwrap();
    assert!(matches!(t.new_message_from_region(&r3, 0, 10, 0), Err(ShmError::ForeignRegion { .. })));
}

#[test]
fn forged_region_records_are_rejected() {
    let s = Session::new("rgforged");
    let t = s.transport("a");
    let region = t.create_region(4096, RegionCallback::None, &RegionConfig::default()).unwrap();
    let (raw, pull) = (fairmq_zmq::Transport::new("raw").unwrap(), t.socket(SocketType::Pull, "in").unwrap());
    let addr = s.ipc("forged");
    pull.bind(&addr).unwrap();
    let push = raw.socket(SocketType::Dealer, "out").unwrap();
    push.require_password(&t.connect_password());
    push.connect(&addr).unwrap();
    let cases = [
        Record::Region { region: 999, offset: 0, size: 10, hint: 0, rc: None },
        Record::Region { region: region.id(), offset: 4000, size: 97, hint: 0, rc: None },
        Record::Region { region: region.id(), offset: u64::MAX, size: 2, hint: 0, rc: None },
        Record::Region {
            region: region.id(),
            offset: 0,
            size: 1,
            hint: 0,
            rc: Some(meta::RcHandle { segment: 0, offset: 1 << 20, delta: 16 }),
        },
    ];
    for rec in cases {
        let mut buf = Vec::new();
        meta::encode_single(&rec, 0, &mut buf);
        push.send(&mut fairmq_zmq::Message::from_slice(&buf), 1000).unwrap();
        let mut m = t.new_message();
        // Refused and skipped (logged): the receive waits on for a frame it can deliver.
        let e = pull.receive(&mut m, 500).unwrap_err();
        assert!(matches!(e, TransferError::Timeout), "{rec:?} skipped: {e}");
        assert!(m.is_empty(), "{rec:?}: nothing delivered");
    }
    assert_eq!(region.outstanding(), 0, "nothing acknowledged for forged pieces");
}

#[test]
fn an_external_region_is_adopted_by_id() {
    let s = Session::new("rgexternal");
    let keeper = s.transport("keep-alive");
    let keep = RegionConfig { id: Some(100), remove_on_destruction: false, ..Default::default() };
    let kept = keeper.create_region(64 << 10, RegionCallback::None, &keep).unwrap();
    fill(&kept);
    let device = s.transport("device");
    let acked = Arc::new(Mutex::new(Acked::default()));
    let adopted = device.create_region(0, bulk(&acked), &keep).unwrap();
    assert_eq!((adopted.id(), adopted.size()), (100, 64 << 10), "size 0 takes the existing size");
    let line = send_to_sink(&s, &device, &adopted, 100, 640, "plain");
    assert_eq!(line, "received 100 64000");
    expect_all_acked(&acked, adopted, 100, 640, 102);
    assert!(
        !fairmq_shm::testing::registry::find(&management(&s), 100).unwrap().destroyed,
        "still there for the keeper"
    );
    assert!(std::path::Path::new(&format!("/dev/shm/{}", s.names().region(100))).exists());
    drop(kept);
}

/// One consumer of acknowledgements per region: a second transport that adopts the region with a
/// callback is refused while the first lives, also in the same process (the consumer is a
/// transport's owner mark, not a pid), and takes over once the first is gone.
#[test]
fn a_region_has_one_controller_with_a_callback_at_a_time() {
    let s = Session::new("rgtwoctl");
    let cfg = RegionConfig { id: Some(101), remove_on_destruction: false, ..Default::default() };
    let first = s.transport("first");
    let acked = Arc::new(Mutex::new(Acked::default()));
    let region = first.create_region(64 << 10, bulk(&acked), &cfg).unwrap();
    let second = s.transport("second");
    // Refused, and the refused adopter (which would remove the region on destruction) leaves it alone.
    let removing = RegionConfig { id: Some(101), ..Default::default() };
    assert!(removing.remove_on_destruction);
    let e = second.create_region(0, bulk(&acked), &removing).unwrap_err().to_string();
    assert!(
        e.contains("already has a controller with a callback") && e.contains(&std::process::id().to_string()),
        "{e}"
    );
    assert!(!fairmq_shm::testing::registry::find(&management(&s), 101).unwrap().destroyed, "still registered");
    assert!(std::path::Path::new(&format!("/dev/shm/{}", s.names().region(101))).exists(), "still there");
    let m = first.new_message_from_region(&region, 0, 10, 1).unwrap();
    assert_eq!(m.size(), 10, "the first controller's region still works");
    drop(m);
    drop(region);
    let adopted = second.create_region(0, bulk(&acked), &cfg).unwrap();
    assert_eq!(adopted.id(), 101);
    drop(adopted);
}

/// A controller killed without cleanup leaves its mark as the queue's consumer; a viewer releasing
/// more pieces than the queue holds drops the rest at once instead of waiting for room nobody makes
/// (each ack round, and 5 s when the viewer's transport ends).
#[test]
fn acknowledgements_for_a_dead_controller_do_not_stall_the_viewer() {
    const N: usize = 70_000; // more than the queue holds (1 << 16)
    let s = Session::new("rgdeadctl");
    let addr = s.ipc("dc");
    let mut src = peer(&["regionsrc", &s.name, &addr, &N.to_string(), "64", "hold"]);
    src.expect_line("region");
    let t = s.transport("viewer");
    let pull = t.socket(SocketType::Pull, "in").unwrap();
    pull.connect(&addr).unwrap();
    let mut held = Vec::with_capacity(N);
    for _ in 0..N {
        let mut m = t.new_message();
        pull.receive(&mut m, 60_000).unwrap();
        held.push(m);
    }
    src.expect_line(&format!("sent {N}"));
    src.kill();
    drop(held);
    drop(pull);
    let start = Instant::now();
    drop(t);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(4), "the viewer's transport ended after {took:?}");
}

#[test]
fn a_region_without_callback_sends_no_acknowledgements() {
    let s = Session::new("rgnocb");
    let t = s.transport("src");
    let region = t.create_region(64 << 10, RegionCallback::None, &RegionConfig::default()).unwrap();
    fill(&region);
    // More pieces than the queue holds: nobody blocks on a queue that nobody reads.
    let line = send_to_sink(&s, &t, &region, 70_000, 64, "plain");
    assert_eq!(line, "received 70000 4480000");
}

#[test]
fn the_monitor_cleans_the_file_backed_region_of_a_killed_creator() {
    use fairmq_shm::monitor::{Step, Watcher, WATCH_INTERVAL};
    let s = Session::new("rgkilled");
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("{}/", dir.path().display());
    let mut src = peer(&["regionsrc", &s.name, &s.ipc("rk"), "0", "4096", "hold", &prefix]);
    src.expect_line("sent 0");
    let file = dir.path().join(s.names().region(1024));
    assert!(file.exists(), "the creator made its region file");
    src.kill();
    assert!(file.exists() && !s.objects().is_empty(), "a killed creator leaves everything behind");
    // A long heartbeat timeout: the monitor notices the dead process through its liveness slot.
    let mut w = Watcher::new(s.names().shm_id(), Duration::from_secs(600), true);
    let deadline = Instant::now() + GENEROUS;
    while w.step().unwrap() == Step::Continue {
        assert!(Instant::now() < deadline, "the monitor never cleaned the session");
        // Each step is one round of the monitor's loop, at the monitor's own pace.
        std::thread::sleep(WATCH_INTERVAL);
    }
    assert!(!file.exists(), "the region file is gone");
    assert!(s.objects().is_empty(), "{:?}", s.objects());
}
