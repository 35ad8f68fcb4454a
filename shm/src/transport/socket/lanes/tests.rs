//! Lanes with real segments: entries, marks, readers and writers that die.

use super::*;
use crate::segment::ring::KIND_FRAME;

/// The count word of the block `rec` names.
fn count_word(mgr: &Attachment, rec: Record) -> u64 {
    let Record::Block { offset, slot, .. } = rec else { panic!("a block") };
    mgr.own().rc(offset, slot).load(std::sync::atomic::Ordering::Acquire)
}

/// A lane entry names its blocks, and a reader marks them its own before it takes the entry.
/// One a faulty peer of the session damaged names places outside the segment, or a slot that
/// is no block's: nothing is marked, and the reader does not index out of bounds. Before, the
/// mark went to whatever word the record named (a slot past the table, an offset past the
/// segment: a panic of the receiving device).
#[test]
fn a_damaged_record_in_a_lane_entry_marks_nothing() {
    let (_scratch, mgr) = crate::scratch::attachment("lanes-damaged");
    let m = Message::allocate(mgr.clone(), 100, 0).unwrap();
    m.mark_in_flight(true);
    let rec = m.record();
    let Record::Block { segment, offset, delta, size, slot } = rec else { panic!("a block") };
    let in_flight = u64::from(crate::segment::slots::IN_FLIGHT) << 32 | 1;
    assert_eq!(count_word(&mgr, rec), in_flight);
    let damaged = [
        Record::Block { segment, offset: u64::MAX - 7, delta, size, slot: crate::segment::slots::NO_SLOT },
        Record::Block { segment, offset: 1 << 40, delta, size, slot: crate::segment::slots::NO_SLOT },
        Record::Block { segment, offset, delta, size, slot: u32::MAX - 1 },
        Record::Block { segment, offset: offset + 64, delta, size, slot },
    ];
    for bad in damaged {
        let mut entry = Vec::new();
        meta::encode_single(&bad, 0, &mut entry);
        remark_entry(&mgr, KIND_FRAME, &entry, crate::segment::slots::IN_FLIGHT, mgr.owner());
    }
    assert_eq!(count_word(&mgr, rec), in_flight, "the block the damaged records almost named");
    // The good record is marked.
    let mut entry = Vec::new();
    meta::encode_single(&rec, 0, &mut entry);
    remark_entry(&mgr, KIND_FRAME, &entry, crate::segment::slots::IN_FLIGHT, mgr.owner());
    assert_eq!(count_word(&mgr, rec), u64::from(mgr.owner()) << 32 | 1);
}

/// A writer killed between staging an entry and publishing it (issue 17 item 3): once it had
/// marked every block in flight, the reader publishes the entry and it is read like any other;
/// killed while marking, what it marked is released and what it still marks its own is left
/// to the sweep of the dead. Before, the blocks were marked in flight before the writer waited
/// for room, and a writer killed then left them allocated until the session ended.
#[test]
fn a_dead_writers_staged_entry_is_published_when_marked_else_released() {
    let (_scratch, mgr) = crate::scratch::attachment("lanes-staged");
    let lane = Message::allocate(mgr.clone(), ring::block_bytes(ring::MIN_CAPACITY) as usize, 8).unwrap();
    let ring = Ring::init(lane.words().unwrap(), ring::MIN_CAPACITY, 77);
    let stage = |parts: &[&Message]| {
        let mut frame = Vec::new();
        meta::encode_parts(parts.iter().map(|m| m.record()), 0, &mut frame);
        ring.stage(KIND_FRAME, &frame).unwrap().expect("room");
        parts.iter().map(|m| m.record()).collect::<Vec<_>>()
    };
    let mut sent = [0, 1].map(|_| Message::allocate(mgr.clone(), 100, 0).unwrap());
    let recs = stage(&[&sent[0], &sent[1]]);
    sent.iter_mut().for_each(|m| {
        m.mark_in_flight(true);
        m.hand_over();
    });
    assert!(finish_staged(&mgr, &ring), "every block marked: published");
    let e = ring.peek().unwrap().expect("an entry to read");
    let mut got = Vec::new();
    ring.read(&e, &mut got);
    let mut read = Vec::new();
    meta::decode(&got, &mut read).unwrap();
    assert_eq!(read, recs);
    ring.consume(&e);
    release_entries(&mgr, [(KIND_FRAME, got)], Whose::Ring);
    // Killed while marking: the first part marked, the second still the writer's.
    let mut half = [0, 1].map(|_| Message::allocate(mgr.clone(), 100, 0).unwrap());
    let recs = stage(&[&half[0], &half[1]]);
    half[0].mark_in_flight(true);
    half[1].mark_held(77);
    half.iter_mut().for_each(Message::hand_over);
    assert!(!finish_staged(&mgr, &ring), "not every block marked: not published");
    assert!(ring.peek().unwrap().is_none());
    assert_eq!(count_word(&mgr, recs[0]) as u32, 0, "what it marked in flight was released");
    assert_eq!(count_word(&mgr, recs[1]), 77 << 32 | 1, "what it still held is the sweep's");
    assert!(!finish_staged(&mgr, &ring), "a second look releases nothing more");
}

/// Issue 17 item 3: entries a writer takes back from a lane whose reader left are marked its
/// own before they leave the ring (the holder of an indirect frame last), so a writer killed
/// while it keeps them to send again leaves blocks the sweep of the dead frees; staged again,
/// they go in flight again (the holder first). Before, they stayed in flight, named by nothing.
#[test]
fn entries_taken_back_are_the_writers_until_staged_again() {
    let (_scratch, mgr) = crate::scratch::attachment("lanes-takeback");
    let lane = Message::allocate(mgr.clone(), ring::block_bytes(ring::MIN_CAPACITY) as usize, 8).unwrap();
    let ring = Ring::init(lane.words().unwrap(), ring::MIN_CAPACITY, mgr.owner());
    let in_flight = |_: Record| u64::from(crate::segment::slots::IN_FLIGHT) << 32 | 1;
    let ours = u64::from(mgr.owner()) << 32 | 1;
    // A plain entry of two parts, and an indirect one whose holder names one part.
    let mut plain = [0, 1].map(|_| Message::allocate(mgr.clone(), 100, 0).unwrap());
    let mut frame = Vec::new();
    meta::encode_parts(plain.iter().map(Message::record), 0, &mut frame);
    let mut inner = Message::allocate(mgr.clone(), 100, 0).unwrap();
    let mut parts = Vec::new();
    meta::encode_parts([inner.record()].into_iter(), 0, &mut parts);
    let mut holder = Message::copy_of(mgr.clone(), &parts).unwrap();
    let mut entry = Vec::new();
    meta::encode_single(&holder.record(), 0, &mut entry);
    let recs = [plain[0].record(), plain[1].record(), inner.record(), holder.record()];
    for m in plain.iter_mut().chain([&mut inner, &mut holder]) {
        m.mark_in_flight(true);
        m.hand_over();
    }
    assert!(ring.push(KIND_FRAME, &frame, || {}).unwrap());
    assert!(ring.push(KIND_INDIRECT, &entry, || {}).unwrap());
    let mut taken = Vec::new();
    take_back_all(&mgr, &ring, &mut taken).unwrap();
    assert_eq!(taken.len(), 2);
    assert!(ring.peek().unwrap().is_none(), "the ring is empty");
    for r in recs {
        assert_eq!(count_word(&mgr, r), ours, "taken back: ours again");
    }
    for (kind, bytes) in &taken {
        remark_entry(&mgr, *kind, bytes, mgr.owner(), crate::segment::slots::IN_FLIGHT);
    }
    for r in recs {
        assert_eq!(count_word(&mgr, r), in_flight(r), "staged again: in flight");
    }
    assert_eq!(release_entries(&mgr, taken, Whose::Ours), 3, "three messages' blocks released");
    for r in recs {
        assert_eq!(count_word(&mgr, r) as u32, 0, "freed");
    }
}

#[test]
fn a_lane_holds_what_the_send_queue_would() {
    const GIB: u64 = 1 << 30;
    assert_eq!(SINGLE_ENTRY, 40);
    assert_eq!(capacity_for(1000, 2 * GIB), 64 << 10, "ZeroMQ's default queue: the smallest ring");
    assert_eq!(capacity_for(10_000, 2 * GIB), 512 << 10, "10 000 records of 40 bytes, rounded up");
    assert_eq!(capacity_for(0, 2 * GIB), UNLIMITED, "no limit");
    assert_eq!(capacity_for(i32::MAX, 2 * GIB), ring::MAX_CAPACITY, "the largest ring");
    assert_eq!(capacity_for(0, 8 << 20), 128 << 10, "a sixty-fourth of a small segment");
    assert_eq!(capacity_for(10_000, 8 << 20), 128 << 10);
    assert_eq!(capacity_for(1000, 1 << 20), CAPACITY, "never below the default queue's room");
    assert_eq!(capacity_for(-1, 1 << 20), CAPACITY);
    assert!(!fits_segment(150_000), "a 150 kB segment is too small for a lane");
    assert!(fits_segment(1 << 20));
}
