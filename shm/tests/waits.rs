//! Waiting calls of the shared-memory transport: a blocked send woken by an interrupt keeps its
//! message (and its block), and the poller reports which socket is ready.

mod common;
use common::*;
use fairmq_shm::Poller;
use fairmq_zmq::{SocketType, TransferCode};
use std::time::{Duration, Instant};

#[test]
fn interrupt_wakes_a_blocked_send_which_keeps_its_message() {
    let s = Session::new("sendwait");
    let t = s.transport("sender");
    let push = t.socket(SocketType::Push, "data").unwrap();
    push.bind(&s.ipc("nobody")).unwrap(); // no peer: a send has to wait
    let before = t.segment_stats().used_blocks;
    let t2 = t.clone();
    let waker = std::thread::spawn(move || {
        // Most likely while the send waits (one before it returns at once: also interrupted).
        std::thread::sleep(Duration::from_millis(200));
        t2.interrupt();
    });
    let mut m = t.new_message_from_slice(b"still mine").unwrap();
    let start = Instant::now();
    let r = push.send(&mut m, -1);
    assert_eq!(r.unwrap_err().code(), TransferCode::Interrupted);
    assert!(start.elapsed() < Duration::from_secs(30), "woken, not left waiting");
    waker.join().unwrap();
    assert_eq!(m.data(), b"still mine", "the caller keeps the message");
    assert_eq!(m.refcount(), 1, "and its block, still referenced once");
    // While interrupted, a send that would wait returns at once; after resume it waits again.
    assert_eq!(push.send(&mut m, -1).unwrap_err().code(), TransferCode::Interrupted);
    t.resume();
    assert_eq!(push.send(&mut m, 100).unwrap_err().code(), TransferCode::Timeout);
    drop(m);
    t.flush();
    assert_eq!(t.segment_stats().used_blocks, before, "nothing leaked by the failed sends");
}

#[test]
fn poller_reports_the_ready_socket_and_times_out_otherwise() {
    let s = Session::new("poll");
    let t = s.transport("poll");
    let (a, b) = (s.ipc("a"), s.ipc("b"));
    let pull_a = t.socket(SocketType::Pull, "a").unwrap();
    let pull_b = t.socket(SocketType::Pull, "b").unwrap();
    pull_a.bind(&a).unwrap();
    pull_b.bind(&b).unwrap();
    let push_b = t.socket(SocketType::Push, "pb").unwrap();
    push_b.connect(&b).unwrap();
    let mut poller = Poller::new(&[&pull_a, &pull_b]);
    assert_eq!(poller.poll(50).unwrap(), 0, "nothing to read yet");
    assert!(!poller.check_input(0) && !poller.check_input(1));
    let mut m = t.new_message_from_slice(b"to b").unwrap();
    push_b.send(&mut m, 1000).unwrap();
    assert_eq!(poller.poll(10_000).unwrap(), 1);
    assert!(!poller.check_input(0) && poller.check_input(1));
    let mut got = t.new_message();
    pull_b.receive(&mut got, 0).unwrap();
    assert_eq!(got.data(), b"to b");
    // An interrupt wakes a poll that would wait.
    t.interrupt();
    let start = Instant::now();
    let r = poller.poll(-1);
    assert!(matches!(r, Err(fairmq_zmq::PollError::Interrupted)), "{r:?}");
    assert!(start.elapsed() < Duration::from_secs(30));
}
