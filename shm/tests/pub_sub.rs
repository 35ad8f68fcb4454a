//! Zero-copy PUB/SUB on shared memory: every subscriber gets a reference to the same block, the
//! reference count is exact, and the last holder frees it.

mod common;
use common::*;
use fairmq_zmq::SocketType;
use std::time::{Duration, Instant};

#[test]
fn every_subscriber_gets_the_same_block_and_the_last_frees_it() {
    let s = Session::new("pubsub");
    let t = s.transport("p");
    t.flush();
    let free0 = t.segment_stats().free;
    let publ = t.socket(SocketType::Pub, "data").unwrap();
    assert_eq!(publ.socket_type(), SocketType::Pub);
    assert_eq!(publ.id(), "p.data.pub");
    let addr = s.ipc("pub");
    publ.bind(&addr).unwrap();
    let subs: Vec<_> = (0..3)
        .map(|i| {
            let sub = t.socket(SocketType::Sub, &format!("in{i}")).unwrap();
            sub.connect(&addr).unwrap();
            sub
        })
        .collect();
    // Subscribers announce themselves when they connect: publish until all three got one.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got: Vec<Option<fairmq_shm::Message>> = vec![None, None, None];
    while got.iter().any(Option::is_none) {
        assert!(Instant::now() < deadline, "subscribers never joined");
        let mut m = t.new_message_from_slice(b"warm-up").unwrap();
        publ.send(&mut m, 0).unwrap();
        assert!(m.is_empty());
        for (i, sub) in subs.iter().enumerate() {
            let mut r = t.new_message();
            while sub.receive(&mut r, 20).is_ok() {
                got[i] = Some(std::mem::replace(&mut r, t.new_message()));
            }
        }
    }
    drop(got);
    // Now one message reaches all three: the same block, counted three times.
    let mut m = t.new_message_from_slice(&[42u8; 4096]).unwrap();
    assert_eq!(publ.send(&mut m, 0).unwrap(), 4096);
    let received: Vec<_> = subs
        .iter()
        .map(|sub| {
            let mut r = t.new_message();
            sub.receive(&mut r, 10_000).unwrap();
            r
        })
        .collect();
    assert!(received.iter().all(|r| r.data() == [42u8; 4096]));
    assert!(received.windows(2).all(|w| w[0].data_ptr() == w[1].data_ptr()), "zero-copy: one block");
    assert_eq!(received[0].refcount(), 3);
    drop(received);
    // A subscriber cannot send; a multipart reaches everyone too.
    assert!(subs[0].send(&mut t.new_message_from_slice(b"x").unwrap(), 0).is_err());
    let mut parts = vec![t.new_message_from_slice(b"a").unwrap(), t.new_message_from_slice(b"bc").unwrap()];
    assert_eq!(publ.send_parts(&mut parts, 0).unwrap(), 3);
    for sub in &subs {
        let mut p = Vec::new();
        sub.receive_parts(&mut p, 10_000).unwrap();
        assert_eq!(p.iter().map(|m| m.data().to_vec()).collect::<Vec<_>>(), [b"a".to_vec(), b"bc".to_vec()]);
    }
    // A subscriber that leaves: later messages are not counted for it and nothing leaks.
    drop(subs);
    wait_until("the subscribers' disconnection", || publ.number_of_connected_peers() == 0);
    for _ in 0..10 {
        publ.send(&mut t.new_message_with_size(1000).unwrap(), 0).unwrap();
    }
    // ZeroMQ may still take messages for a subscriber whose connection is closing: the publisher
    // takes them back once it learns the subscriber left, which it looks for as it sends (at most
    // every `LEARN_EVERY`). So it goes on sending (with nobody left, a message is freed at once).
    wait_until("every block came back", || {
        publ.send(&mut t.new_message_with_size(1000).unwrap(), 0).unwrap();
        t.flush();
        t.segment_stats().free == free0
    });
    assert!(matches!(t.socket(SocketType::XPub, "x"), Err(fairmq_shm::ShmError::Config(_))));
}

#[test]
fn a_publisher_without_subscribers_frees_at_once() {
    let s = Session::new("pubnone");
    let t = s.transport("p");
    let publ = t.socket(SocketType::Pub, "data").unwrap();
    publ.bind(&s.ipc("none")).unwrap();
    t.flush();
    let free0 = t.segment_stats().free;
    for _ in 0..100 {
        assert_eq!(publ.send(&mut t.new_message_with_size(10_000).unwrap(), -1).unwrap(), 10_000);
    }
    t.flush();
    assert_eq!(t.segment_stats().free, free0);
}

/// Two subscriber processes (`recv` with `args` after the address), once `publ` knows both.
fn two_subscribers(s: &Session, addr: &str, publ: &fairmq_shm::Socket, args: &[&str]) -> Vec<Peer> {
    let mut subs: Vec<Peer> = (0..2).map(|_| peer(&[&["recv", &s.name, addr, "connect"][..], args].concat())).collect();
    for p in &mut subs {
        p.expect_line("ready");
    }
    wait_until("the subscribers' probes", || publ.connected_subscribers() >= 2);
    subs
}

#[test]
fn subscribers_in_other_processes_get_every_message_once_and_every_block_comes_back() {
    let s = Session::new("pubsubx");
    let t = s.transport("publisher");
    t.flush();
    let free0 = t.segment_stats().free;
    let addr = s.ipc("pubx");
    let publ = t.socket(SocketType::Pub, "data").unwrap();
    publ.bind(&addr).unwrap();
    let mut subs = two_subscribers(&s, &addr, &publ, &["500", "1", "sub"]);
    // 500 messages stay below the queues' limit, so a subscriber misses none (a publisher never
    // waits: a full subscriber queue would drop).
    for seq in 0..500u64 {
        let mut m = t.new_message_with_size(1000).unwrap();
        let d = m.data_mut().unwrap();
        d[..8].copy_from_slice(&seq.to_le_bytes());
        d[8..16].copy_from_slice(&0u64.to_le_bytes());
        for (i, b) in d.iter_mut().enumerate().skip(16) {
            *b = (seq.wrapping_mul(31).wrapping_add(i as u64)) as u8;
        }
        assert_eq!(publ.send(&mut m, 0).unwrap(), 1000);
    }
    for p in &mut subs {
        p.expect_line("received 500 500000");
        assert!(p.wait().success(), "{:?}", p.seen);
    }
    t.flush();
    assert_eq!(t.segment_stats().free, free0, "the last subscriber of each block freed it");
}

/// Issue 17 item 3: subscribers killed while they hold published messages. A published block is
/// shared (no single holder is named in it), so each subscriber lists its references in its
/// ledger, and the sweep that counts it out drops them: the block of a message both held stays
/// while one holds it, and goes with the last. Before, what a killed subscriber held stayed
/// allocated until the session ended.
#[test]
fn i03_what_killed_subscribers_held_of_published_messages_is_freed() {
    let s = Session::new("pubsubkill");
    let t = s.transport("publisher");
    t.flush();
    let free0 = t.segment_stats().free;
    let addr = s.ipc("pubk");
    let publ = t.socket(SocketType::Pub, "data").unwrap();
    publ.bind(&addr).unwrap();
    let mut subs = two_subscribers(&s, &addr, &publ, &["50", "1", "sub", "hold"]);
    for seq in 0..50u64 {
        assert_eq!(publ.send(&mut peer_message(&t, seq, 1000), 0).unwrap(), 1000);
    }
    for p in &mut subs {
        p.expect_line("received 50 50000");
    }
    // Blocks with references and no single holder named: the published ones.
    let shared = |t: &fairmq_shm::Transport| {
        let blocks = fairmq_shm::testing::segment(t).used_blocks().unwrap();
        blocks.iter().filter(|&&(_, _, owner, count)| owner == u32::MAX - 2 && count > 0).map(|b| b.3).sum::<u32>()
    };
    assert_eq!(shared(&t), 100, "each of the 50 messages is held by both subscribers");
    let mut first = subs.remove(0);
    first.kill();
    // Counted out by the monitor's sweep here, by a transport's below: both drop what it listed.
    assert_eq!(fairmq_shm::monitor::sweep(&fairmq_shm::shm_id(&s.name)).unwrap().dead, vec![first.pid()]);
    assert_eq!(shared(&t), 50, "the other subscriber still holds every message");
    t.check_segment().unwrap();
    subs[0].kill();
    t.sweep_dead_processes();
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(shared(&t), 0);
    assert_eq!(t.segment_stats().free, free0, "the last holder of each message was killed: all freed");
}
