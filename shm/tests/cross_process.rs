//! Sender and receiver in different processes: every byte and every count checked by the receiver.

mod common;
use common::*;

fn sum_sizes(count: u64, sizes: &[u64]) -> u64 {
    (0..count).map(|i| sizes[(i as usize) % sizes.len()].max(16)).sum()
}

#[test]
fn one_sender_one_receiver_mixed_sizes() {
    let s = Session::new("x1");
    let addr = s.ipc("one");
    let sizes = [16u64, 1000, 65536, 1 << 20, 33, 4096];
    let mut rx = peer(&["recv", &s.name, &addr, "bind", "600", "1"]);
    rx.expect_line("ready");
    let mut tx = peer(&["send", &s.name, &addr, "connect", "600", "16,1000,65536,1048576,33,4096", "0"]);
    assert!(tx.wait().success());
    assert_eq!(received(&mut rx), (600, sum_sizes(600, &sizes)));
    let counters = rx.expect_line("counters ");
    assert_eq!(counters, format!("counters 600 {}", sum_sizes(600, &sizes)), "payload bytes counted");
    assert!(rx.wait().success());
    assert!(s.objects().is_empty(), "the last process removed the session: {:?}", s.objects());
}

#[test]
fn several_senders_into_one_receiver() {
    let s = Session::new("x2");
    let addr = s.ipc("fanin");
    let mut rx = peer(&["recv", &s.name, &addr, "bind", "1500", "3"]);
    rx.expect_line("ready");
    let mut senders: Vec<Peer> =
        (0..3).map(|i| peer(&["send", &s.name, &addr, "connect", "500", "64,2048,100000", &i.to_string()])).collect();
    for tx in &mut senders {
        assert!(tx.wait().success());
    }
    assert_eq!(received(&mut rx), (1500, 3 * sum_sizes(500, &[64, 2048, 100_000])));
    assert!(rx.wait().success());
}

#[test]
fn one_sender_to_several_receivers() {
    let s = Session::new("x3");
    let addr = s.ipc("fanout");
    let mut rx: Vec<Peer> = (0..2).map(|_| peer(&["recv", &s.name, &addr, "bind", "0", "1", "gaps"])).collect();
    // Two receivers cannot bind one ipc path: the second binds its own, the sender connects to both.
    drop(rx.pop());
    let addr2 = s.ipc("fanout2");
    rx.push(peer(&["recv", &s.name, &addr2, "bind", "0", "1", "gaps"]));
    for r in &mut rx {
        r.expect_line("ready");
    }
    let both = format!("{addr},{addr2}");
    let mut tx = peer(&["send", &s.name, &both, "connect", "1000", "128,4096", "0"]);
    assert!(tx.wait().success());
    let (mut n, mut bytes) = (0, 0);
    for r in &mut rx {
        let (rn, rb) = received(r);
        assert!(rn > 0, "push spreads messages over both receivers");
        n += rn;
        bytes += rb;
        assert!(r.wait().success());
    }
    assert_eq!((n, bytes), (1000, sum_sizes(1000, &[128, 4096])));
}
