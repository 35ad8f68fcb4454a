//! Segments and regions made outside a transport (FairMQ's `shmem::Segment` and
//! `shmem::UnmanagedRegion`; FairMQ's test/region/_creation.cxx and the external case of
//! _region.cxx): a transport joining the session later allocates from the segment and adopts the
//! regions; who removes what, and when.

mod common;
use common::*;
use fairmq_shm::external::{ExternalRegion, ExternalSegment};
use fairmq_shm::testing::management::Management;
use fairmq_shm::{monitor, RegionCallback, RegionConfig, RegionEvent, ShmError};
use std::path::Path;

const SEGMENT: u64 = 16 << 20;
const REGION: u64 = 1 << 20;

fn region_cfg(id: u16) -> RegionConfig {
    RegionConfig { id: Some(id), remove_on_destruction: false, ..Default::default() }
}

fn exists(name: &str) -> bool {
    Path::new("/dev/shm").join(name).exists()
}

#[test]
fn a_joining_transport_uses_the_segment_and_adopts_the_region() {
    let s = Session::new("extjoin");
    let id = fairmq_shm::shm_id(&s.name);
    let seg = ExternalSegment::open_or_create(&id, 0, SEGMENT).unwrap();
    let region =
        ExternalRegion::open_or_create(&id, REGION, &RegionConfig { id: Some(100), ..Default::default() }).unwrap();
    assert_eq!((seg.id(), seg.size(), region.id(), region.size()), (0, SEGMENT, 100, REGION as usize));
    assert_eq!(monitor::free_memory(&id, 0).unwrap(), seg.free_memory());
    let m = Management::open_existing(s.names()).unwrap();
    assert_eq!(m.device_count(), 0, "made without joining");
    assert_eq!(m.segments().len(), 1);

    let mut config = s.config("joins");
    config.segment_size = SEGMENT;
    config.no_cleanup = true;
    let t = fairmq_shm::Transport::new(&config).unwrap();
    assert_eq!(t.segment_stats().size, seg.size());
    let free = seg.free_memory();
    let msg = t.new_message_with_size(1 << 20).unwrap();
    assert!(seg.free_memory() <= free - (1 << 20), "the message is in the external segment");
    drop(msg);
    let info = t.region_info();
    assert!(info.iter().any(|i| i.managed && i.id == 0 && i.event == RegionEvent::Created), "{info:?}");
    let r = info.iter().find(|i| !i.managed && i.id == 100).expect("region 100 listed");
    assert_eq!((r.event, r.size), (RegionEvent::Created, REGION));

    let adopted = t.create_region(REGION as usize, RegionCallback::None, &region_cfg(100)).unwrap();
    assert_eq!((adopted.id(), adopted.size()), (100, REGION as usize));
    assert_eq!(adopted.data_ptr() as usize, r.ptr, "events report the transport's own mapping");
    let second = s.transport("second");
    let e = second.create_region(2 * REGION as usize, RegionCallback::None, &region_cfg(100)).unwrap_err();
    assert!(matches!(e, ShmError::RegionSizeMismatch { mapped: REGION, configured } if configured == 2 * REGION));
    let e = ExternalRegion::open_or_create(&id, 2 * REGION, &region_cfg(100)).unwrap_err();
    assert!(matches!(e, ShmError::RegionSizeMismatch { mapped: REGION, .. }), "{e}");
    let same = ExternalRegion::open_or_create(&id, 0, &region_cfg(100)).unwrap();
    assert_eq!(same.size(), REGION as usize, "size 0 opens the existing one");

    drop((adopted, second, t, same));
    let left = s.objects();
    for name in [s.names().segment(0), s.names().region(100), s.names().management()] {
        assert!(left.contains(&name), "no cleanup: {name} stays ({left:?})");
    }
    let removed = monitor::cleanup(&id).unwrap();
    assert!(removed.iter().all(|(_, ok)| *ok), "{removed:?}");
    assert_eq!(s.objects(), Vec::<String>::new());
    drop(region); // after the cleanup: nothing to remove, nothing removed
}

#[test]
fn the_last_transport_removes_external_objects_unless_told_not_to() {
    let s = Session::new("extlast");
    let id = fairmq_shm::shm_id(&s.name);
    let _seg = ExternalSegment::open_or_create(&id, 0, SEGMENT).unwrap();
    let region = ExternalRegion::open_or_create(&id, REGION, &region_cfg(5)).unwrap();
    let mut config = s.config("last");
    config.segment_size = SEGMENT;
    let t = fairmq_shm::Transport::new(&config).unwrap();
    assert!(exists(&s.names().region(5)) && exists(&s.names().region_queue(5)));
    drop(t);
    assert_eq!(s.objects(), Vec::<String>::new(), "as FairMQ's last transport, it cleans up everything");
    drop(region);
}

#[test]
fn dropping_a_region_removes_it_but_nothing_of_a_later_session() {
    let s = Session::new("extdrop");
    let id = fairmq_shm::shm_id(&s.name);
    let owned = RegionConfig { id: Some(100), ..Default::default() };
    let region = ExternalRegion::open_or_create(&id, REGION, &owned).unwrap();
    assert!(region.remove_on_destruction());
    let m = Management::open_existing(s.names()).unwrap();
    let events = m.event_count();
    drop(region);
    assert!(!exists(&s.names().region(100)) && !exists(&s.names().region_queue(100)));
    assert!(fairmq_shm::testing::registry::find(&m, 100).unwrap().destroyed);
    assert!(m.event_count() > events, "subscribers hear of it");
    let e = ExternalRegion::open_or_create(&id, REGION, &owned).unwrap_err();
    assert!(matches!(e, ShmError::RegionIdTaken { id: 100 }), "ids are used once per session: {e}");
    drop(m);

    let old =
        ExternalRegion::open_or_create(&id, REGION, &RegionConfig { id: Some(101), ..Default::default() }).unwrap();
    monitor::cleanup(&id).unwrap();
    assert_eq!(s.objects(), Vec::<String>::new());
    // A new session of the same shmId makes region 101 again; the old handle must leave it alone.
    let new = ExternalRegion::open_or_create(&id, 2 * REGION, &region_cfg(101)).unwrap();
    assert_eq!(new.size(), 2 * REGION as usize, "a new region, not the old one's");
    drop(old);
    assert!(exists(&s.names().region(101)) && exists(&s.names().region_queue(101)));
    drop(new);
    monitor::cleanup(&id).unwrap();
}

#[test]
fn segments_are_shared_zeroed_locked_and_removed_by_name() {
    let s = Session::new("extseg");
    let id = fairmq_shm::shm_id(&s.name);
    let a = ExternalSegment::open_or_create(&id, 1, 16384).unwrap();
    assert_eq!(a.size(), fairmq_shm::file_size_for(16384), "small sizes as for a transport");
    let b = ExternalSegment::open_or_create(&id, 1, SEGMENT).unwrap();
    assert_eq!((b.size(), b.free_memory()), (a.size(), a.free_memory()), "opened, its size kept");
    a.zero().unwrap();
    a.lock().unwrap();
    assert!(!a.data_ptr().is_null());
    let m = Management::open_existing(s.names()).unwrap();
    assert_eq!(m.segments().len(), 1, "registered once");
    assert!(ExternalSegment::remove(&id, 1).unwrap());
    assert!(!ExternalSegment::remove(&id, 1).unwrap(), "already gone");
    assert!(!exists(&s.names().segment(1)));
    monitor::cleanup(&id).unwrap();
    assert_eq!(s.objects(), Vec::<String>::new());
}

#[test]
fn bad_arguments_are_refused_before_anything_is_made() {
    let s = Session::new("extbad");
    let id = fairmq_shm::shm_id(&s.name);
    for bad in ["", "../etc", "not-hex!"] {
        assert!(matches!(ExternalSegment::open_or_create(bad, 0, SEGMENT), Err(ShmError::Config(_))), "{bad}");
        assert!(matches!(ExternalRegion::open_or_create(bad, REGION, &region_cfg(1)), Err(ShmError::Config(_))));
    }
    let no_id = ExternalRegion::open_or_create(&id, REGION, &RegionConfig::default()).unwrap_err();
    assert!(matches!(no_id, ShmError::Config(_)), "{no_id}");
    let flags = RegionConfig { creation_flags: libc::MAP_SHARED, ..region_cfg(1) };
    assert!(matches!(ExternalRegion::open_or_create(&id, REGION, &flags), Err(ShmError::Config(_))));
    assert!(matches!(ExternalSegment::open_or_create(&id, 0, 0), Err(ShmError::Config(_))));
    assert!(matches!(ExternalRegion::open_or_create(&id, 0, &region_cfg(1)), Err(ShmError::Config(_))));
    // The failed segment left at most the session's management segment.
    assert!(s.objects().iter().all(|n| *n == s.names().management()), "{:?}", s.objects());
}
