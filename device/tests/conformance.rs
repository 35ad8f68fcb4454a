//! One contract for both transports (issue 20): each test runs the same steps on zeromq, on shmem
//! with lanes and on shmem without, through the one API devices use (`fairmq::Transport`), between
//! two transports of one session, as two devices would be. A transport that behaves differently
//! fails here by name.

mod common;
use common::*;
use fairmq::{Message, Poller, Socket, SocketType, TransferError, Transport, TransportKind};
use fairmq_zmq::Method;
use std::time::{Duration, Instant};

/// The transports the contract runs on.
#[derive(Debug, Clone, Copy)]
enum Flavour {
    Zeromq,
    ShmemLanes,
    ShmemNoLanes,
}

const FLAVOURS: [Flavour; 3] = [Flavour::Zeromq, Flavour::ShmemLanes, Flavour::ShmemNoLanes];

/// A transfer that must succeed gets this long (ms).
const LONG: i32 = 30_000;

/// Two transports of one session (the sender's and the receiver's), removed with it.
struct Pair {
    tx: Transport,
    rx: Transport,
    s: Session,
}

fn pair(f: Flavour) -> Pair {
    let s = Session::new();
    let (kind, lanes) = match f {
        Flavour::Zeromq => (TransportKind::Zeromq, true),
        Flavour::ShmemLanes => (TransportKind::Shmem, true),
        Flavour::ShmemNoLanes => (TransportKind::Shmem, false),
    };
    let make = || session_transport(&s, kind, |p| p.set("shm-lanes", lanes));
    Pair { tx: make(), rx: make(), s }
}

impl Pair {
    /// A socket of the receiving transport bound at `what`, and one of the sending transport
    /// connected to it.
    fn link(&self, bound: SocketType, connected: SocketType, what: &str) -> (Socket, Socket) {
        let address = self.s.ipc(what);
        let b = attached_socket(&self.rx, bound, &address, Method::Bind);
        let c = attached_socket(&self.tx, connected, &address, Method::Connect);
        (b, c)
    }

    fn message(&self, bytes: &[u8]) -> Message {
        self.tx.new_simple_message(bytes).expect("message")
    }
}

#[test]
fn c01_a_receive_with_nothing_to_take_times_out_and_takes_nothing() {
    for f in FLAVOURS {
        let p = pair(f);
        let (pull, _push) = p.link(SocketType::Pull, SocketType::Push, "c01");
        let mut msg = p.rx.new_message();
        let start = Instant::now();
        assert!(matches!(pull.receive(&mut msg, 50, &p.rx), Err(TransferError::Timeout)), "{f:?}");
        assert!(start.elapsed() >= Duration::from_millis(50), "{f:?}: gave up after {:?}", start.elapsed());
        assert_eq!(msg.size(), 0, "{f:?}");
        assert_eq!(pull.counters().messages_rx, 0, "{f:?}");
    }
}

#[test]
fn c02_a_send_nobody_takes_times_out_and_the_caller_keeps_the_message() {
    for f in FLAVOURS {
        let p = pair(f);
        // A bound push with no peer: nowhere to send.
        let push = attached_socket(&p.tx, SocketType::Push, &p.s.ipc("c02"), Method::Bind);
        let mut msg = p.message(b"kept by the caller");
        assert!(matches!(push.send(&mut msg, 50, &p.tx), Err(TransferError::Timeout)), "{f:?}");
        assert_eq!(msg.data(), b"kept by the caller", "{f:?}");
        assert_eq!(push.counters().messages_tx, 0, "{f:?}");
    }
}

#[test]
fn c03_a_blocked_receive_ends_interrupted_and_the_socket_works_after_resume() {
    for f in FLAVOURS {
        let p = pair(f);
        let (pull, push) = p.link(SocketType::Pull, SocketType::Push, "c03");
        let rx = p.rx.clone();
        let interrupter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            rx.interrupt();
        });
        let mut msg = p.rx.new_message();
        assert!(matches!(pull.receive(&mut msg, -1, &p.rx), Err(TransferError::Interrupted)), "{f:?}");
        interrupter.join().unwrap();
        p.rx.resume();
        assert_eq!(push.send(&mut p.message(b"after"), LONG, &p.tx).unwrap(), 5, "{f:?}");
        assert_eq!(pull.receive(&mut msg, LONG, &p.rx).unwrap(), 5, "{f:?}");
        assert_eq!(msg.data(), b"after", "{f:?}");
    }
}

#[test]
fn c04_a_multipart_arrives_whole_in_order_and_an_empty_one_is_refused() {
    for f in FLAVOURS {
        let p = pair(f);
        let (pull, push) = p.link(SocketType::Pull, SocketType::Push, "c04");
        let sizes = [0usize, 1, 1024, 100 << 10];
        let mut parts: Vec<Message> =
            sizes.iter().enumerate().map(|(i, &n)| p.message(&vec![i as u8 + 1; n])).collect();
        let total: usize = sizes.iter().sum();
        assert_eq!(push.send_parts(&mut parts, LONG, &p.tx).unwrap(), total, "{f:?}");
        let mut got = Vec::new();
        assert_eq!(pull.receive_parts(&mut got, LONG).unwrap(), total, "{f:?}");
        let seen: Vec<(usize, Option<u8>)> = got.iter().map(|m| (m.size(), m.data().first().copied())).collect();
        let want: Vec<(usize, Option<u8>)> =
            sizes.iter().enumerate().map(|(i, &n)| (n, (n > 0).then_some(i as u8 + 1))).collect();
        assert_eq!(seen, want, "{f:?}");
        assert!(matches!(push.send_parts(&mut Vec::new(), LONG, &p.tx), Err(TransferError::EmptyMultipart)), "{f:?}");
    }
}

#[test]
fn c05_counters_count_messages_and_payload_bytes_on_both_sides() {
    for f in FLAVOURS {
        let p = pair(f);
        let (pull, push) = p.link(SocketType::Pull, SocketType::Push, "c05");
        for n in [10usize, 20, 30] {
            push.send(&mut p.message(&vec![1; n]), LONG, &p.tx).unwrap();
        }
        let mut parts = vec![p.message(&[2; 5]), p.message(&[3; 5])];
        push.send_parts(&mut parts, LONG, &p.tx).unwrap();
        let mut msg = p.rx.new_message();
        for _ in 0..3 {
            pull.receive(&mut msg, LONG, &p.rx).unwrap();
        }
        pull.receive_parts(&mut Vec::new(), LONG).unwrap();
        let (tx, rx) = (push.counters(), pull.counters());
        assert_eq!((tx.messages_tx, tx.bytes_tx), (4, 70), "{f:?}: a multipart counts once, bytes are payload");
        assert_eq!((rx.messages_rx, rx.bytes_rx), (4, 70), "{f:?}");
    }
}

#[test]
fn c06_a_poller_names_the_socket_that_has_a_message() {
    for f in FLAVOURS {
        let p = pair(f);
        let (quiet, _q) = p.link(SocketType::Pull, SocketType::Push, "c06-quiet");
        let (busy, push) = p.link(SocketType::Pull, SocketType::Push, "c06-busy");
        push.send(&mut p.message(b"here"), LONG, &p.tx).unwrap();
        let mut poller = Poller::new(&[&quiet, &busy]);
        assert_eq!(poller.poll(LONG).unwrap(), 1, "{f:?}");
        assert!(poller.check_input(1) && !poller.check_input(0), "{f:?}");
        let mut msg = p.rx.new_message();
        assert_eq!(busy.receive(&mut msg, 0, &p.rx).unwrap(), 4, "{f:?}: ready means a receive does not wait");
    }
}

#[test]
fn c07_a_request_gets_its_reply() {
    for f in FLAVOURS {
        let p = pair(f);
        let (rep, req) = p.link(SocketType::Rep, SocketType::Req, "c07");
        req.send(&mut p.message(b"question"), LONG, &p.tx).unwrap();
        let mut msg = p.rx.new_message();
        rep.receive(&mut msg, LONG, &p.rx).unwrap();
        assert_eq!(msg.data(), b"question", "{f:?}");
        rep.send(&mut p.rx.new_simple_message(b"answer").unwrap(), LONG, &p.rx).unwrap();
        let mut reply = p.tx.new_message();
        req.receive(&mut reply, LONG, &p.tx).unwrap();
        assert_eq!(reply.data(), b"answer", "{f:?}");
    }
}

#[test]
fn c08_a_publisher_reaches_every_subscriber() {
    for f in FLAVOURS {
        let p = pair(f);
        let address = p.s.ipc("c08");
        let publisher = attached_socket(&p.tx, SocketType::Pub, &address, Method::Bind);
        let subs: Vec<Socket> =
            (0..2).map(|_| attached_socket(&p.rx, SocketType::Sub, &address, Method::Connect)).collect();
        // Subscriptions reach the publisher a moment after the connect (ZeroMQ's slow joiner):
        // publish until each subscriber has one, then one more that all must get.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut msg = p.rx.new_message();
        for sub in &subs {
            loop {
                assert!(Instant::now() < deadline, "{f:?}: a subscriber never got a message");
                publisher.send(&mut p.message(b"warm-up"), LONG, &p.tx).unwrap();
                if sub.receive(&mut msg, 20, &p.rx).is_ok() {
                    break;
                }
            }
        }
        publisher.send(&mut p.message(b"to all"), LONG, &p.tx).unwrap();
        for (i, sub) in subs.iter().enumerate() {
            // Warm-ups still on their way come first.
            loop {
                sub.receive(&mut msg, LONG, &p.rx).unwrap();
                if msg.data() != b"warm-up" {
                    break;
                }
            }
            assert_eq!(msg.data(), b"to all", "{f:?}: subscriber {i}");
        }
    }
}

#[test]
fn c09_while_interrupted_a_transfer_that_can_complete_does_and_one_that_would_wait_does_not() {
    for f in FLAVOURS {
        let p = pair(f);
        let (pull, push) = p.link(SocketType::Pull, SocketType::Push, "c09");
        push.send(&mut p.message(b"queued"), LONG, &p.tx).unwrap();
        let mut msg = p.rx.new_message();
        // Arrived (a poll says so) before the interruption.
        assert_eq!(Poller::new(&[&pull]).poll(LONG).unwrap(), 1, "{f:?}");
        p.rx.interrupt();
        assert_eq!(pull.receive(&mut msg, LONG, &p.rx).unwrap(), 6, "{f:?}: what is there is taken");
        let start = Instant::now();
        assert!(matches!(pull.receive(&mut msg, LONG, &p.rx), Err(TransferError::Interrupted)), "{f:?}");
        assert!(start.elapsed() < Duration::from_millis(LONG as u64 / 2), "{f:?}: waited while interrupted");
        p.rx.resume();
    }
}

#[test]
fn c10_a_bound_socket_counts_the_peers_whose_messages_it_received() {
    for f in FLAVOURS {
        let p = pair(f);
        let address = p.s.ipc("c10");
        let pull = attached_socket(&p.rx, SocketType::Pull, &address, Method::Bind);
        assert_eq!(pull.number_of_connected_peers(), 0, "{f:?}");
        let pushes: Vec<Socket> =
            (0..2).map(|_| attached_socket(&p.tx, SocketType::Push, &address, Method::Connect)).collect();
        for (i, push) in pushes.iter().enumerate() {
            push.send(&mut p.message(&[i as u8]), LONG, &p.tx).unwrap();
        }
        let mut msg = p.rx.new_message();
        let mut from = Vec::new();
        for _ in 0..2 {
            pull.receive(&mut msg, LONG, &p.rx).unwrap();
            from.push(msg.data()[0]);
        }
        from.sort_unstable();
        assert_eq!(from, [0, 1], "{f:?}");
        assert_eq!(pull.number_of_connected_peers(), 2, "{f:?}");
    }
}

#[test]
fn c11_what_a_closing_sender_queued_still_arrives() {
    for f in FLAVOURS {
        let p = pair(f);
        let (pull, push) = p.link(SocketType::Pull, SocketType::Push, "c11");
        for seq in 0..10u8 {
            push.send(&mut p.message(&[seq; 100]), LONG, &p.tx).unwrap();
        }
        drop(push);
        let mut msg = p.rx.new_message();
        for seq in 0..10u8 {
            pull.receive(&mut msg, LONG, &p.rx).unwrap();
            assert_eq!(msg.data(), &[seq; 100][..], "{f:?}: message {seq}");
        }
    }
}

#[test]
fn c12_a_large_message_arrives_intact_and_pairs_talk_both_ways() {
    for f in FLAVOURS {
        let p = pair(f);
        let (a, b) = p.link(SocketType::Pair, SocketType::Pair, "c12");
        let big: Vec<u8> = (0..8usize << 20).map(|i| (i % 251) as u8).collect();
        b.send(&mut p.tx.new_message_from_vec(big.clone()).unwrap(), LONG, &p.tx).unwrap();
        let mut msg = p.rx.new_message();
        assert_eq!(a.receive(&mut msg, LONG, &p.rx).unwrap(), big.len(), "{f:?}");
        assert!(msg.data() == &big[..], "{f:?}: the bytes differ");
        a.send(&mut p.rx.new_simple_message(b"back").unwrap(), LONG, &p.rx).unwrap();
        let mut back = p.tx.new_message();
        b.receive(&mut back, LONG, &p.tx).unwrap();
        assert_eq!(back.data(), b"back", "{f:?}");
    }
}
