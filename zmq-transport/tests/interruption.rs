//! Interruption wakes blocked calls promptly; resume restores blocking.

mod common;
use common::*;
use fairmq_zmq::{AttachOptions, Message, Method, SocketType, TransferCode, TransferError, Transport};
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
fn interrupt_wakes_a_blocked_receive() {
    let t = Transport::new("irecv").unwrap();
    let place = Place::new(Proto::Ipc);
    let pull = t.socket(SocketType::Pull, "in").unwrap();
    pull.attach(&place.address, &AttachOptions::new(Some(Method::Bind))).unwrap();
    let (r, latency) = interrupt_while_blocked(&t, move || pull.receive(&mut Message::new(), -1));
    assert!(matches!(r, Err(TransferError::Interrupted)), "{r:?}");
    assert_eq!(r.unwrap_err().code(), TransferCode::Interrupted);
    eprintln!("receive woke {latency:?} after the interrupt");
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

#[test]
fn ready_transfers_complete_while_interrupted_and_resume_restores_blocking() {
    let t = Transport::new("iready").unwrap();
    let (pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Inproc);
    t.interrupt();
    assert!(t.is_interrupted());
    // The send can complete at once: it does.
    assert_eq!(push.send(&mut Message::from_slice(b"x"), -1).unwrap(), 1);
    let mut m = Message::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match pull.receive(&mut m, -1) {
            Ok(1) => break,
            Err(TransferError::Interrupted) if Instant::now() < deadline => continue, // not arrived yet
            other => panic!("{other:?}"),
        }
    }
    // Nothing queued: even an infinite receive returns at once, and so does timeout 0.
    assert!(matches!(pull.receive(&mut m, -1), Err(TransferError::Interrupted)));
    assert!(matches!(pull.receive(&mut m, 0), Err(TransferError::Interrupted)));
    t.resume();
    assert!(!t.is_interrupted());
    let start = Instant::now();
    assert!(matches!(pull.receive(&mut m, 300), Err(TransferError::Timeout)), "blocks again after resume");
    assert!(start.elapsed() >= Duration::from_millis(300));
}

#[test]
fn interrupt_affects_only_its_own_transport() {
    let t1 = Transport::new("one").unwrap();
    let t2 = Transport::new("two").unwrap();
    let p1 = Place::new(Proto::Ipc);
    let s2 = t2.socket(SocketType::Pull, "in").unwrap();
    s2.attach(&p1.address, &AttachOptions::new(Some(Method::Bind))).unwrap();
    t1.interrupt();
    assert!(matches!(s2.receive(&mut Message::new(), 100), Err(TransferError::Timeout)));
}
