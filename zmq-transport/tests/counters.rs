//! Counters after known traffic: successful transfers only, a multipart counts once.

mod common;
use common::*;
use fairmq_zmq::{CounterSnapshot, Message, SocketType, Transport};

#[test]
fn counters_after_known_traffic() {
    let t = Transport::new("count").unwrap();
    let (pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Ipc);
    assert_eq!(push.counters(), CounterSnapshot::default(), "a new socket starts at 0");
    for size in [0usize, 1, 100, 10_000] {
        push.send(&mut Message::with_size(size), LONG).unwrap();
    }
    let mut parts = vec![Message::with_size(3), Message::with_size(4), Message::with_size(5)];
    push.send_parts(&mut parts, LONG).unwrap();
    let mut m = Message::new();
    for _ in 0..4 {
        pull.receive(&mut m, LONG).unwrap();
    }
    let mut got = Vec::new();
    pull.receive_parts(&mut got, LONG).unwrap();
    // A failed receive changes nothing.
    assert!(pull.receive(&mut m, 0).is_err());

    let tx = push.counters();
    assert_eq!((tx.messages_tx, tx.bytes_tx, tx.messages_rx, tx.bytes_rx), (5, 10_101 + 12, 0, 0));
    let rx = pull.counters();
    assert_eq!((rx.messages_rx, rx.bytes_rx, rx.messages_tx, rx.bytes_tx), (5, 10_113, 0, 0));
    // Readable from another thread while the socket stays here.
    let shared = pull.shared_counters();
    let seen = std::thread::spawn(move || shared.snapshot().messages_rx).join().unwrap();
    assert_eq!(seen, 5);
}
