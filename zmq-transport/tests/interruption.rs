//! Interruption wakes a send blocked on ZeroMQ's full queues. The rest of the interruption
//! contract (blocked receives and sends, ready transfers while interrupted, resume, one transport
//! only) is checked on both transports in the fairmq crate's conformance suite.

mod common;
use common::*;
use fairmq_zmq::{Message, SocketType, TransferError, Transport};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs `f` on a thread, interrupts `t` after it started waiting, and returns what `f` returned and
/// how long after the interrupt it came back.
fn interrupt_while_blocked<F>(t: &Transport, f: F) -> (Result<usize, TransferError>, Duration)
where
    F: FnOnce() -> Result<usize, TransferError> + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let r = f();
        tx.send(Instant::now()).unwrap();
        r
    });
    std::thread::sleep(Duration::from_millis(100));
    assert!(rx.try_recv().is_err(), "the call must block before the interrupt");
    let at = Instant::now();
    t.interrupt();
    let done = rx.recv_timeout(Duration::from_secs(10)).expect("interrupt must wake the call");
    (h.join().unwrap(), done.saturating_duration_since(at))
}

#[test]
fn interrupt_wakes_a_send_blocked_on_a_full_queue() {
    let t = Transport::new("isend").unwrap();
    let (pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Ipc);
    for s in [&pull, &push] {
        s.set_snd_buf_size(1).unwrap();
        s.set_rcv_buf_size(1).unwrap();
    }
    // Fill every queue between the two sockets (and the kernel buffer) until a send would wait.
    let mut queued = 0;
    while push.send(&mut Message::with_size(64 * 1024), 200).is_ok() {
        queued += 1;
        assert!(queued < 100_000, "the queue never filled");
    }
    let (r, latency) = interrupt_while_blocked(&t, move || {
        let mut m = Message::from_slice(b"waiting");
        let r = push.send(&mut m, -1);
        assert_eq!(m.data(), b"waiting", "an interrupted send keeps its message");
        r
    });
    assert!(matches!(r, Err(TransferError::Interrupted)), "{r:?}");
    eprintln!("send woke {latency:?} after the interrupt ({queued} messages queued)");
    drop(pull);
}
