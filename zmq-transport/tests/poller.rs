//! The poller reports readiness per socket, times out, and wakes on interruption.

mod common;
use common::*;
use fairmq_zmq::{Message, PollError, Poller, SocketType, Transport};
use std::time::{Duration, Instant};

#[test]
fn reports_which_input_is_ready() {
    let t = Transport::new("poll").unwrap();
    let (pull1, push1, _p1) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Ipc);
    let (pull2, push2, _p2) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Ipc);
    let mut poller = Poller::new(&[&pull1, &pull2]);
    assert_eq!(poller.len(), 2);
    let start = Instant::now();
    assert_eq!(poller.poll(100).unwrap(), 0, "nothing sent yet");
    assert!(start.elapsed() >= Duration::from_millis(100));
    push2.send(&mut Message::from_slice(b"two"), LONG).unwrap();
    assert_eq!(poller.poll(LONG).unwrap(), 1);
    assert!(!poller.check_input(0) && poller.check_input(1));
    assert!(!poller.check_input(7), "out of range is simply false");
    drop(poller);
    let mut m = Message::new();
    pull2.receive(&mut m, 0).unwrap();
    push1.send(&mut Message::from_slice(b"one"), LONG).unwrap();
    let mut poller = Poller::new(&[&pull1, &pull2]);
    assert_eq!(poller.poll(LONG).unwrap(), 1);
    assert!(poller.check_input(0) && !poller.check_input(1));
}

#[test]
fn reports_output_readiness() {
    let t = Transport::new("pollout").unwrap();
    let (_pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Inproc);
    let mut poller = Poller::new(&[&push]);
    assert_eq!(poller.poll(LONG).unwrap(), 1);
    assert!(poller.check_output(0) && !poller.check_input(0));
}

#[test]
fn interrupt_wakes_a_waiting_poll_and_ready_sockets_still_show() {
    let t = Transport::new("pollint").unwrap();
    let (pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Ipc);
    let t2 = t.clone();
    let waker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        t2.interrupt();
    });
    let mut poller = Poller::new(&[&pull]);
    assert!(matches!(poller.poll(-1), Err(PollError::Interrupted)));
    waker.join().unwrap();
    drop(poller);
    push.send(&mut Message::from_slice(b"x"), LONG).unwrap();
    let mut poller = Poller::new(&[&pull]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match poller.poll(-1) {
            Ok(1) => break,
            Err(PollError::Interrupted) if Instant::now() < deadline => std::thread::yield_now(),
            other => panic!("{other:?}"),
        }
    }
    assert!(poller.check_input(0));
    t.resume();
}
