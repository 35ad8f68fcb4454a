//! Waiting calls of the shared-memory transport: a blocked send woken by an interrupt keeps its
//! block and leaks none. What an interrupted send returns and keeps, and the poller, are checked
//! on both transports in the fairmq crate's conformance suite.

mod common;
use common::*;
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
    assert_eq!(m.refcount(), 1, "the caller keeps the block, still referenced once");
    // Failed sends while interrupted and after resume.
    assert!(push.send(&mut m, -1).is_err());
    t.resume();
    assert!(push.send(&mut m, 100).is_err());
    drop(m);
    t.flush();
    assert_eq!(t.segment_stats().used_blocks, before, "nothing leaked by the failed sends");
}
