//! The slot table: blocks beyond it, segments without it, and its repair after a process died
//! holding the allocator lock.

mod common;
use common::*;
use fairmq_shm::testing::meta::Record;
use fairmq_shm::Transport;
use fairmq_zmq::SocketType;
use std::collections::HashSet;

const NO_SLOT: u32 = u32::MAX;

fn slot_of(m: &fairmq_shm::Message) -> u32 {
    match m.record() {
        Record::Block { slot, .. } => slot,
        other => panic!("not a block: {other:?}"),
    }
}

/// A transport of session `s` whose segment has `segment_size` bytes (default policy: one
/// allocation attempt, then an error).
fn transport(s: &Session, id: &str, segment_size: u64) -> Transport {
    let mut c = s.config(id);
    c.segment_size = segment_size;
    Transport::new(&c).unwrap()
}

/// Sends `n` messages of `size` bytes (each filled with its number) from `tx` to `rx` over ipc and
/// returns them received, all alive at once.
fn send_and_hold(s: &Session, tx: &Transport, rx: &Transport, n: usize, size: usize) -> Vec<fairmq_shm::Message> {
    let addr = s.ipc("held");
    let pull = rx.socket(SocketType::Pull, "in").unwrap();
    pull.bind(&addr).unwrap();
    let push = tx.socket(SocketType::Push, "out").unwrap();
    push.connect(&addr).unwrap();
    let mut got = Vec::new();
    for i in 0..n {
        let mut m = tx.new_message_from_slice(&vec![i as u8; size]).unwrap();
        push.send(&mut m, 10_000).unwrap();
        let mut r = rx.new_message();
        pull.receive(&mut r, 10_000).unwrap();
        got.push(r);
    }
    got
}

#[test]
fn blocks_beyond_the_slot_table_have_none_and_work_the_same() {
    let s = Session::new("slotsfull");
    let (tx, rx) = (transport(&s, "tx", 1 << 20), transport(&s, "rx", 1 << 20)); // 256 slots
    tx.flush();
    let free0 = tx.segment_stats().free;
    let held = send_and_hold(&s, &tx, &rx, 400, 64);
    let slots: Vec<u32> = held.iter().map(slot_of).collect();
    let without = slots.iter().filter(|&&s| s == NO_SLOT).count();
    let with: HashSet<u32> = slots.iter().copied().filter(|&s| s != NO_SLOT).collect();
    assert!(without >= 400 - 256, "only 256 slots: {without} messages without one");
    assert_eq!(with.len() + without, 400, "no two live blocks share a slot");
    for (i, m) in held.iter().enumerate() {
        assert_eq!(m.data(), &[i as u8; 64][..], "message {i}");
        assert_eq!(m.refcount(), 1);
    }
    // Copies count in the slot or in the header alike.
    let mut copy = rx.new_message();
    copy.copy_from(&held[399]).unwrap();
    assert_eq!((held[399].refcount(), held[0].refcount()), (2, 1));
    drop(copy);
    drop(held);
    rx.flush();
    tx.flush();
    tx.check_segment().unwrap();
    assert_eq!(tx.segment_stats().free, free0, "every block came back, with or without a slot");
    // Slots freed by the stream serve new blocks again.
    let again = tx.new_message_with_size(64).unwrap();
    assert_ne!(slot_of(&again), NO_SLOT);
}

#[test]
fn a_segment_under_one_mib_has_no_slot_table() {
    let s = Session::new("noslots");
    let (tx, rx) = (transport(&s, "tx", 512 << 10), transport(&s, "rx", 512 << 10));
    let held = send_and_hold(&s, &tx, &rx, 50, 64);
    assert!(held.iter().all(|m| slot_of(m) == NO_SLOT));
    assert!(held.iter().enumerate().all(|(i, m)| m.data() == [i as u8; 64]));
    drop(held);
    rx.flush();
    tx.check_segment().unwrap();
}

#[test]
fn a_repair_keeps_the_slots_of_live_blocks() {
    let s = Session::new("slotrepair");
    let t = s.transport("parent");
    t.flush();
    let free0 = t.segment_stats().free;
    let mut held: Vec<_> = (0..100u8).map(|i| t.new_message_from_slice(&[i; 1000]).unwrap()).collect();
    // A process dies holding the allocator lock; the next allocation repairs the heap and rebuilds
    // the slot table's free list from it.
    let mut holder = peer(&["holdlock", &s.name]);
    holder.expect_line("locked");
    holder.kill();
    held.extend((100..=255u8).map(|i| t.new_message_from_slice(&[i; 1000]).unwrap()));
    assert_eq!(t.segment_stats().recoveries, 1);
    let slots: Vec<u32> = held.iter().map(slot_of).collect();
    assert!(slots.iter().all(|&s| s != NO_SLOT));
    assert_eq!(slots.iter().collect::<HashSet<_>>().len(), held.len(), "no slot of a live block was handed out again");
    for (i, m) in held.iter().enumerate() {
        assert_eq!(m.data(), &[i as u8; 1000][..], "message {i} intact");
        assert_eq!(m.refcount(), 1);
    }
    t.check_segment().unwrap();
    drop(held);
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "nothing lost or freed twice across the repair");
}

#[test]
fn blocks_kept_in_the_depot_never_make_another_size_fail() {
    let s = Session::new("depotfull");
    let (tx, rx) = (transport(&s, "tx", 8 << 20), transport(&s, "rx", 8 << 20));
    let free0 = tx.segment_stats().free;
    // 96 messages of 64 KiB: the receiver drops them and frees them in batches into the
    // session's segment, whose depot keeps them for the sender's next refill.
    drop(send_and_hold(&s, &tx, &rx, 96, 64 << 10));
    let cached = tx.segment_stats().cached;
    assert!(cached >= 64 * (64 << 10), "the depot keeps the stream's blocks: {cached} bytes");
    // Most of the segment in one piece: only there once the depot went back to the heap.
    let big = tx.new_message_with_size(6 << 20).expect("the depot gives way to another size");
    assert_eq!(tx.segment_stats().cached, 0);
    drop(big);
    rx.flush();
    tx.flush();
    tx.check_segment().unwrap();
    assert_eq!(tx.segment_stats().free, free0, "every block back in the heap");
}
