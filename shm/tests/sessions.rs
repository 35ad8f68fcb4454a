//! Sessions and segments under concurrency and reuse: creators racing, attaching while the last
//! transport removes the session, zeroing a segment that already exists, the fragmentation figure,
//! and alignments the allocator cannot give.

mod common;
use common::*;
use fairmq_shm::{ShmError, Transport};
use std::sync::{Arc, Barrier};

#[test]
fn concurrent_creators_share_one_session_and_one_segment() {
    let s = Session::new("race");
    let n = 8;
    let barrier = Arc::new(Barrier::new(n));
    let config = s.config("racer");
    let transports: Vec<Transport> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (b, mut c) = (barrier.clone(), config.clone());
                c.id = format!("racer{i}");
                scope.spawn(move || {
                    b.wait();
                    Transport::new(&c).expect("every racer attaches")
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(transports[0].attached_transports(), n as u64);
    let objects = s.objects();
    assert_eq!(objects.iter().filter(|o| o.contains("_m_")).count(), 1, "one segment: {objects:?}");
    assert!(!objects.iter().any(|o| o.contains("_tmp_")), "no half-made object left: {objects:?}");
    // All of them allocate from the same heap, consistently.
    let msgs: Vec<_> = transports.iter().map(|t| t.new_message_with_size(1000).unwrap()).collect();
    transports[0].check_segment().unwrap();
    drop(msgs);
    drop(transports);
    assert!(s.objects().is_empty(), "the last one removed everything: {:?}", s.objects());
}

#[test]
fn attaching_while_the_last_transport_removes_the_session_never_fails() {
    let s = Session::new("churn");
    let config = s.config("churn");
    std::thread::scope(|scope| {
        for _ in 0..2 {
            let c = config.clone();
            scope.spawn(move || {
                for i in 0..150 {
                    // Each drop may be the last one and remove the session while the other thread
                    // attaches: the newcomer must get a working session, old or new.
                    let t = Transport::new(&c).unwrap_or_else(|e| panic!("attach {i} failed: {e}"));
                    let mut m = t.new_message_with_size(256).unwrap();
                    m.data_mut().unwrap().fill(7);
                    assert!(m.data().iter().all(|&b| b == 7));
                    t.check_segment().unwrap();
                }
            });
        }
    });
    assert!(s.objects().is_empty(), "{:?}", s.objects());
}

#[test]
fn zeroing_an_existing_segment_clears_what_an_earlier_user_wrote() {
    let s = Session::new("zero");
    let mut keep = s.config("writer");
    keep.no_cleanup = true;
    {
        let t = Transport::new(&keep).unwrap();
        for _ in 0..50 {
            t.new_message_with_size(10_000).unwrap().data_mut().unwrap().fill(0xAB);
        }
        t.flush();
    }
    assert!(!s.objects().is_empty(), "no_cleanup kept the segment");
    let mut zero = s.config("zeroer");
    zero.zero_segment = true;
    let t = Transport::new(&zero).unwrap();
    for _ in 0..50 {
        let m = t.new_message_with_size(10_000).unwrap();
        assert!(m.data().iter().all(|&b| b == 0), "the reused memory was zeroed");
    }
}

#[test]
fn fragmentation_is_reported_and_goes_back_to_zero() {
    let s = Session::new("frag");
    let t = s.transport("frag");
    t.flush();
    assert_eq!(t.segment_stats().fragmentation, 0.0, "a fresh heap is one free block");
    // Blocks too big to be cached, every other one freed: holes between live blocks.
    let mut held: Vec<_> = (0..40).map(|_| t.new_message_with_size(1 << 20).unwrap()).collect();
    let kept: Vec<_> = held.drain(..).enumerate().filter(|(i, _)| i % 2 == 0).map(|(_, m)| m).collect();
    t.flush();
    let fragmented = t.segment_stats();
    assert!(fragmented.fragmentation > 0.0 && fragmented.fragmentation < 1.0, "{fragmented:?}");
    drop(kept);
    t.flush();
    assert_eq!(t.segment_stats().fragmentation, 0.0, "everything merged again");
}

#[test]
fn alignments_the_allocator_cannot_give_are_refused() {
    let s = Session::new("align");
    let t = s.transport("align");
    for align in [16, 64, 4096] {
        let m = t.new_message_aligned(100, align).unwrap();
        assert_eq!(m.data_ptr() as usize % align, 0, "alignment {align}");
    }
    for align in [8192, 48, 3] {
        assert!(matches!(t.new_message_aligned(100, align), Err(ShmError::Config(_))), "alignment {align}");
    }
}
