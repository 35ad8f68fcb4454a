//! One contract for both transports (issue 20): each case runs the same steps on zeromq, on shmem
//! with lanes and on shmem without, through the one API devices use (`fairmq::Transport`), between
//! two transports of one session, as two devices would be. A transport that behaves differently
//! fails here by name.
//!
//! A case is a function of the flavour (`fn cNN_what(f: Flavour)`); `per_flavour!` makes it one
//! test per flavour, `<case>::zeromq`, `<case>::shmem_lanes` and `<case>::shmem_no_lanes`, so
//! one flavour failing hides none of the others. A name filter picks what runs:
//!
//! ```text
//! cargo test -p fairmq --test conformance zeromq          # every case on zeromq
//! cargo test -p fairmq --test conformance shmem           # every case on both shmem flavours
//! cargo test -p fairmq --test conformance shmem_no_lanes  # every case on shmem without lanes
//! cargo test -p fairmq --test conformance c19_            # one case on every flavour
//! cargo test -p fairmq --test conformance -- --exact c07_a_request_gets_its_reply::shmem_lanes
//! ```

mod common;
use common::*;
use fairmq::{Message, Poller, Socket, SocketType, TransferCode, TransferError, Transport, TransportKind};
use fairmq_zmq::{AttachOptions, CounterSnapshot, Method, PollError, SocketOptions};
use std::time::{Duration, Instant};

/// The transports the contract runs on.
#[derive(Debug, Clone, Copy)]
enum Flavour {
    Zeromq,
    ShmemLanes,
    ShmemNoLanes,
}

/// `per_flavour!(case)` makes module `case` with one test per flavour, each calling
/// `case(flavour)`: `case::zeromq`, `case::shmem_lanes` and `case::shmem_no_lanes`.
macro_rules! per_flavour {
    ($case:ident) => {
        mod $case {
            use super::Flavour;

            #[test]
            fn zeromq() {
                super::$case(Flavour::Zeromq);
            }

            #[test]
            fn shmem_lanes() {
                super::$case(Flavour::ShmemLanes);
            }

            #[test]
            fn shmem_no_lanes() {
                super::$case(Flavour::ShmemNoLanes);
            }
        }
    };
}

/// A transfer that must succeed gets this long (ms).
const LONG: i32 = 30_000;

/// Two transports of one session (the sender's and the receiver's), removed with it.
struct Pair {
    tx: Transport,
    rx: Transport,
    s: Session,
}

/// A transport of flavour `f` in session `s`.
fn transport_of(s: &Session, f: Flavour) -> Transport {
    let (kind, lanes) = match f {
        Flavour::Zeromq => (TransportKind::Zeromq, true),
        Flavour::ShmemLanes => (TransportKind::Shmem, true),
        Flavour::ShmemNoLanes => (TransportKind::Shmem, false),
    };
    session_transport(s, kind, |p| p.set("shm-lanes", lanes))
}

fn pair(f: Flavour) -> Pair {
    let s = Session::new();
    Pair { tx: transport_of(&s, f), rx: transport_of(&s, f), s }
}

/// The protocols a link can use. Inproc links two sockets of one transport (ZeroMQ's inproc does
/// not cross contexts); ipc and tcp link the two transports of a pair.
#[derive(Debug, Clone, Copy)]
enum Proto {
    Inproc,
    Ipc,
    Tcp,
}

const PROTOS: [Proto; 3] = [Proto::Inproc, Proto::Ipc, Proto::Tcp];

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

    /// Where to bind endpoint `what` over `proto` (tcp: a port the kernel picks).
    fn address(&self, proto: Proto, what: &str) -> String {
        match proto {
            Proto::Inproc => format!("inproc://{}-{what}", self.s.name),
            Proto::Ipc => self.s.ipc(what),
            Proto::Tcp => "tcp://127.0.0.1:*".to_owned(),
        }
    }

    /// The transport of the bound side over `proto` (the sending one for inproc).
    fn bound_side(&self, proto: Proto) -> &Transport {
        match proto {
            Proto::Inproc => &self.tx,
            Proto::Ipc | Proto::Tcp => &self.rx,
        }
    }

    /// [`Pair::link`] over `proto`; also returns the address as bound (to connect more sockets).
    fn link_over(
        &self,
        proto: Proto,
        bound: SocketType,
        connected: SocketType,
        what: &str,
    ) -> (Socket, Socket, String) {
        let b = self.bound_side(proto).socket(bound, "peer").expect("socket");
        let at = b.attach(&self.address(proto, what), &AttachOptions::new(Some(Method::Bind))).expect("bind");
        let c = attached_socket(&self.tx, connected, &at, Method::Connect);
        (b, c, at)
    }
}

/// Sends `text` (which must go at once or within [`LONG`]); a sent message is left empty.
fn send_str(s: &Socket, t: &Transport, text: &str, what: &str) {
    let mut m = t.new_simple_message(text.as_bytes()).expect("message");
    assert_eq!(s.send(&mut m, LONG, t).unwrap(), text.len(), "{what}");
    assert!(m.is_empty(), "{what}: a sent message is left empty");
}

/// Receives one message within [`LONG`], as text.
fn recv_str(s: &Socket, t: &Transport, what: &str) -> String {
    let mut m = t.new_message();
    let n = s.receive(&mut m, LONG, t).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(n, m.size(), "{what}");
    String::from_utf8(m.data().to_vec()).unwrap()
}

/// Waits (generously) until `count()` is `want`; returns what it last saw.
fn settles(want: u64, count: impl Fn() -> u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n = count();
        if n == want || Instant::now() >= deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

per_flavour!(c01_a_receive_with_nothing_to_take_times_out_and_takes_nothing);
fn c01_a_receive_with_nothing_to_take_times_out_and_takes_nothing(f: Flavour) {
    let p = pair(f);
    let (pull, _push) = p.link(SocketType::Pull, SocketType::Push, "c01");
    let mut msg = p.rx.new_message();
    let start = Instant::now();
    assert!(matches!(pull.receive(&mut msg, 50, &p.rx), Err(TransferError::Timeout)), "{f:?}");
    assert!(start.elapsed() >= Duration::from_millis(50), "{f:?}: gave up after {:?}", start.elapsed());
    assert_eq!(msg.size(), 0, "{f:?}");
    assert_eq!(pull.counters().messages_rx, 0, "{f:?}");
}

per_flavour!(c02_a_send_nobody_takes_times_out_and_the_caller_keeps_the_message);
fn c02_a_send_nobody_takes_times_out_and_the_caller_keeps_the_message(f: Flavour) {
    let p = pair(f);
    // A bound push with no peer: nowhere to send.
    let push = attached_socket(&p.tx, SocketType::Push, &p.s.ipc("c02"), Method::Bind);
    let mut msg = p.message(b"kept by the caller");
    assert!(matches!(push.send(&mut msg, 50, &p.tx), Err(TransferError::Timeout)), "{f:?}");
    assert_eq!(msg.data(), b"kept by the caller", "{f:?}");
    assert_eq!(push.counters().messages_tx, 0, "{f:?}");
}

per_flavour!(c03_a_blocked_receive_ends_interrupted_and_the_socket_works_after_resume);
fn c03_a_blocked_receive_ends_interrupted_and_the_socket_works_after_resume(f: Flavour) {
    let p = pair(f);
    let (pull, push) = p.link(SocketType::Pull, SocketType::Push, "c03");
    let rx = p.rx.clone();
    let start = Instant::now();
    let interrupter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        rx.interrupt();
    });
    let mut msg = p.rx.new_message();
    let e = pull.receive(&mut msg, -1, &p.rx).unwrap_err();
    assert!(matches!(e, TransferError::Interrupted), "{f:?}: {e}");
    assert_eq!((e.code(), e.code() as i32), (TransferCode::Interrupted, -3), "{f:?}");
    assert!(start.elapsed() >= Duration::from_millis(100), "{f:?}: returned before the interrupt");
    interrupter.join().unwrap();
    p.rx.resume();
    assert_eq!(push.send(&mut p.message(b"after"), LONG, &p.tx).unwrap(), 5, "{f:?}");
    assert_eq!(pull.receive(&mut msg, LONG, &p.rx).unwrap(), 5, "{f:?}");
    assert_eq!(msg.data(), b"after", "{f:?}");
}

per_flavour!(c04_a_multipart_arrives_whole_in_order_and_an_empty_one_is_refused);
fn c04_a_multipart_arrives_whole_in_order_and_an_empty_one_is_refused(f: Flavour) {
    let p = pair(f);
    let (pull, push) = p.link(SocketType::Pull, SocketType::Push, "c04");
    let sizes = [0usize, 1, 1024, 100 << 10];
    let payloads: Vec<Vec<u8>> =
        sizes.iter().enumerate().map(|(i, &n)| (0..n).map(|j| (i * 31 + j) as u8).collect()).collect();
    let mut parts: Vec<Message> = payloads.iter().map(|b| p.message(b)).collect();
    let total: usize = sizes.iter().sum();
    assert_eq!(push.send_parts(&mut parts, LONG, &p.tx).unwrap(), total, "{f:?}");
    assert!(parts.iter().all(Message::is_empty), "{f:?}: sent parts are left empty");
    // A receive appends to what the vector holds.
    let mut got = vec![p.rx.new_simple_message(b"kept").unwrap()];
    assert_eq!(pull.receive_parts(&mut got, LONG).unwrap(), total, "{f:?}");
    assert_eq!(got.len(), sizes.len() + 1, "{f:?}");
    assert_eq!(got[0].data(), b"kept", "{f:?}");
    for (i, (m, want)) in got[1..].iter().zip(&payloads).enumerate() {
        assert!(m.data() == &want[..], "{f:?}: part {i} differs ({} bytes, {} wanted)", m.size(), want.len());
    }
    assert!(got[1].data_ptr().is_null(), "{f:?}: an empty part has no data");
    assert_eq!(push.counters().messages_tx, 1, "{f:?}: a multipart counts as one message");
    assert_eq!(pull.counters().bytes_rx, total as u64, "{f:?}");
    let e = push.send_parts(&mut Vec::new(), LONG, &p.tx).unwrap_err();
    assert!(matches!(e, TransferError::EmptyMultipart), "{f:?}: {e}");
    assert_eq!((e.code(), e.code() as i32), (TransferCode::Error, -1), "{f:?}");
    assert_eq!(push.counters().messages_tx, 1, "{f:?}: a refused multipart is not counted");
    // One part travels as a single message, and a single message is received as one part.
    push.send_parts(&mut vec![p.message(b"solo")], LONG, &p.tx).unwrap();
    let mut msg = p.rx.new_message();
    pull.receive(&mut msg, LONG, &p.rx).unwrap();
    assert_eq!(msg.data(), b"solo", "{f:?}");
    push.send(&mut p.message(b"one"), LONG, &p.tx).unwrap();
    let mut one = Vec::new();
    pull.receive_parts(&mut one, LONG).unwrap();
    assert_eq!(one.len(), 1, "{f:?}");
    assert_eq!(one[0].data(), b"one", "{f:?}");
}

per_flavour!(c05_counters_count_messages_and_payload_bytes_on_both_sides);
fn c05_counters_count_messages_and_payload_bytes_on_both_sides(f: Flavour) {
    let p = pair(f);
    let (pull, push) = p.link(SocketType::Pull, SocketType::Push, "c05");
    assert_eq!(push.counters(), CounterSnapshot::default(), "{f:?}: a new socket starts at 0");
    assert_eq!(pull.counters(), CounterSnapshot::default(), "{f:?}");
    // A message of no bytes counts as a message.
    for n in [0usize, 10, 20, 30] {
        push.send(&mut p.message(&vec![1; n]), LONG, &p.tx).unwrap();
    }
    let mut parts = vec![p.message(&[2; 5]), p.message(&[3; 5])];
    push.send_parts(&mut parts, LONG, &p.tx).unwrap();
    let mut msg = p.rx.new_message();
    for _ in 0..4 {
        pull.receive(&mut msg, LONG, &p.rx).unwrap();
    }
    pull.receive_parts(&mut Vec::new(), LONG).unwrap();
    // A failed receive changes nothing.
    assert!(pull.receive(&mut msg, 0, &p.rx).is_err(), "{f:?}");
    let (tx, rx) = (push.counters(), pull.counters());
    assert_eq!(
        (tx.messages_tx, tx.bytes_tx, tx.messages_rx, tx.bytes_rx),
        (5, 70, 0, 0),
        "{f:?}: a multipart counts once, bytes are payload"
    );
    assert_eq!((rx.messages_rx, rx.bytes_rx, rx.messages_tx, rx.bytes_tx), (5, 70, 0, 0), "{f:?}");
    // Readable from another thread while the socket stays here.
    let shared = pull.shared_counters();
    let seen = std::thread::spawn(move || shared.snapshot().messages_rx).join().unwrap();
    assert_eq!(seen, 5, "{f:?}");
}

per_flavour!(c06_a_poller_names_the_socket_that_has_a_message);
fn c06_a_poller_names_the_socket_that_has_a_message(f: Flavour) {
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

per_flavour!(c07_a_request_gets_its_reply);
fn c07_a_request_gets_its_reply(f: Flavour) {
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

per_flavour!(c08_a_publisher_reaches_every_subscriber);
fn c08_a_publisher_reaches_every_subscriber(f: Flavour) {
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

per_flavour!(c09_while_interrupted_a_transfer_that_can_complete_does_and_one_that_would_wait_does_not);
fn c09_while_interrupted_a_transfer_that_can_complete_does_and_one_that_would_wait_does_not(f: Flavour) {
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

per_flavour!(c10_a_bound_socket_counts_the_peers_whose_messages_it_received);
fn c10_a_bound_socket_counts_the_peers_whose_messages_it_received(f: Flavour) {
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

per_flavour!(c11_what_a_closing_sender_queued_still_arrives);
fn c11_what_a_closing_sender_queued_still_arrives(f: Flavour) {
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

per_flavour!(c12_a_large_message_arrives_intact_and_pairs_talk_both_ways);
fn c12_a_large_message_arrives_intact_and_pairs_talk_both_ways(f: Flavour) {
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

per_flavour!(c13_timed_out_transfers_keep_what_they_were_given_and_leave_targets_alone);
fn c13_timed_out_transfers_keep_what_they_were_given_and_leave_targets_alone(f: Flavour) {
    let p = pair(f);
    // Each bound with no peer: a send has nowhere to go, a receive nothing to take.
    let push = attached_socket(&p.tx, SocketType::Push, &p.s.ipc("c13-out"), Method::Bind);
    let pull = attached_socket(&p.rx, SocketType::Pull, &p.s.ipc("c13-in"), Method::Bind);
    for timeout in [0, 200] {
        let start = Instant::now();
        let mut m = p.message(b"keep me");
        let e = push.send(&mut m, timeout, &p.tx).unwrap_err();
        assert!(matches!(e, TransferError::Timeout), "{f:?} ({timeout} ms): {e}");
        assert_eq!((e.code(), e.code() as i32), (TransferCode::Timeout, -2), "{f:?}");
        assert_eq!(m.data(), b"keep me", "{f:?} ({timeout} ms): a timed-out send keeps the message");

        let mut one = vec![p.message(b"p0")];
        let r = push.send_parts(&mut one, timeout, &p.tx);
        assert!(matches!(r, Err(TransferError::Timeout)), "{f:?} ({timeout} ms): {r:?}");
        assert_eq!(one.iter().map(|m| m.data().to_vec()).collect::<Vec<_>>(), [b"p0".to_vec()], "{f:?}");
        let mut two = vec![p.message(b"p0"), p.message(b"p1")];
        let r = push.send_parts(&mut two, timeout, &p.tx);
        assert!(matches!(r, Err(TransferError::Timeout)), "{f:?} ({timeout} ms): {r:?}");
        assert_eq!(
            two.iter().map(|m| m.data().to_vec()).collect::<Vec<_>>(),
            [b"p0".to_vec(), b"p1".to_vec()],
            "{f:?} ({timeout} ms): a timed-out multipart keeps its parts"
        );

        let mut r = p.rx.new_simple_message(b"old").unwrap();
        let res = pull.receive(&mut r, timeout, &p.rx);
        assert!(matches!(res, Err(TransferError::Timeout)), "{f:?} ({timeout} ms): {res:?}");
        assert_eq!(r.data(), b"old", "{f:?} ({timeout} ms): a timed-out receive leaves the target untouched");
        let mut rp = Vec::new();
        let res = pull.receive_parts(&mut rp, timeout);
        assert!(matches!(res, Err(TransferError::Timeout)), "{f:?} ({timeout} ms): {res:?}");
        assert!(rp.is_empty(), "{f:?} ({timeout} ms)");

        if timeout > 0 {
            // Five transfers that each waited their timeout (a lower bound only).
            assert!(start.elapsed() >= Duration::from_millis(5 * 200), "{f:?}: {:?}", start.elapsed());
        }
    }
    // Failed transfers move no message and no byte; the timeouts are counted as such (the
    // metrics' `fairmq_channel_{send,receive}_timeouts_total`): three sends and two
    // receives at each of the two timeouts.
    let timed_out =
        |send, receive| CounterSnapshot { send_timeouts: send, receive_timeouts: receive, ..Default::default() };
    assert_eq!(push.counters(), timed_out(6, 0), "{f:?}: failed transfers are not counted as moved");
    assert_eq!(pull.counters(), timed_out(0, 4), "{f:?}");
}

per_flavour!(c14_a_message_kept_by_a_timed_out_send_goes_once_a_peer_connects);
fn c14_a_message_kept_by_a_timed_out_send_goes_once_a_peer_connects(f: Flavour) {
    let p = pair(f);
    let address = p.s.ipc("c14");
    let push = attached_socket(&p.tx, SocketType::Push, &address, Method::Bind);
    let mut m = p.tx.new_message_from_vec(vec![9u8; 4096]).unwrap();
    assert!(matches!(push.send(&mut m, 50, &p.tx), Err(TransferError::Timeout)), "{f:?}");
    let pull = attached_socket(&p.rx, SocketType::Pull, &address, Method::Connect);
    assert_eq!(push.send(&mut m, LONG, &p.tx).unwrap(), 4096, "{f:?}");
    let mut r = p.rx.new_message();
    assert_eq!(pull.receive(&mut r, LONG, &p.rx).unwrap(), 4096, "{f:?}");
    assert_eq!(r.data(), &[9u8; 4096][..], "{f:?}");
}

per_flavour!(c15_an_interrupted_send_keeps_its_message_and_waits_again_after_resume);
fn c15_an_interrupted_send_keeps_its_message_and_waits_again_after_resume(f: Flavour) {
    let p = pair(f);
    // A bound push with no peer: a send has to wait.
    let push = attached_socket(&p.tx, SocketType::Push, &p.s.ipc("c15"), Method::Bind);
    let tx = p.tx.clone();
    let start = Instant::now();
    let interrupter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        tx.interrupt();
    });
    let mut m = p.message(b"still mine");
    let e = push.send(&mut m, -1, &p.tx).unwrap_err();
    assert!(matches!(e, TransferError::Interrupted), "{f:?}: {e}");
    assert_eq!((e.code(), e.code() as i32), (TransferCode::Interrupted, -3), "{f:?}");
    assert!(start.elapsed() >= Duration::from_millis(100), "{f:?}: returned before the interrupt");
    interrupter.join().unwrap();
    assert_eq!(m.data(), b"still mine", "{f:?}: the caller keeps the message");
    // While interrupted, a send that would wait returns at once, even without a timeout.
    let start = Instant::now();
    assert!(matches!(push.send(&mut m, -1, &p.tx), Err(TransferError::Interrupted)), "{f:?}");
    assert!(start.elapsed() < Duration::from_millis(LONG as u64 / 2), "{f:?}: waited while interrupted");
    assert_eq!(m.data(), b"still mine", "{f:?}");
    p.tx.resume();
    let start = Instant::now();
    assert!(matches!(push.send(&mut m, 100, &p.tx), Err(TransferError::Timeout)), "{f:?}: waits again");
    assert!(start.elapsed() >= Duration::from_millis(100), "{f:?}");
    assert_eq!(m.data(), b"still mine", "{f:?}");
}

per_flavour!(c16_interruption_is_per_transport_lets_ready_transfers_through_and_resume_restores_blocking);
fn c16_interruption_is_per_transport_lets_ready_transfers_through_and_resume_restores_blocking(f: Flavour) {
    let p = pair(f);
    let (pull, push) = p.link(SocketType::Pull, SocketType::Push, "c16");
    // Connected both ways before anything is interrupted: one message there and taken.
    push.send(&mut p.message(b"warm-up"), LONG, &p.tx).unwrap();
    let mut m = p.rx.new_message();
    pull.receive(&mut m, LONG, &p.rx).unwrap();
    assert!(!p.tx.is_interrupted() && !p.rx.is_interrupted(), "{f:?}");
    p.tx.interrupt();
    assert!(p.tx.is_interrupted(), "{f:?}");
    assert!(!p.rx.is_interrupted(), "{f:?}: an interrupt affects only its own transport");
    let start = Instant::now();
    assert!(matches!(pull.receive(&mut m, 100, &p.rx), Err(TransferError::Timeout)), "{f:?}");
    assert!(start.elapsed() >= Duration::from_millis(100), "{f:?}: the other transport still waits");
    // A send that can complete at once does, interrupted or not.
    assert_eq!(push.send(&mut p.message(b"x"), -1, &p.tx).unwrap(), 1, "{f:?}");
    p.rx.interrupt();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match pull.receive(&mut m, -1, &p.rx) {
            Ok(1) => break,
            Err(TransferError::Interrupted) if Instant::now() < deadline => std::thread::yield_now(), // not there yet
            other => panic!("{f:?}: {other:?}"),
        }
    }
    assert_eq!(m.data(), b"x", "{f:?}");
    // Nothing queued: an infinite receive returns at once, and so does timeout 0.
    assert!(matches!(pull.receive(&mut m, -1, &p.rx), Err(TransferError::Interrupted)), "{f:?}");
    assert!(matches!(pull.receive(&mut m, 0, &p.rx), Err(TransferError::Interrupted)), "{f:?}");
    p.tx.resume();
    p.rx.resume();
    assert!(!p.tx.is_interrupted() && !p.rx.is_interrupted(), "{f:?}");
    let start = Instant::now();
    assert!(matches!(pull.receive(&mut m, 300, &p.rx), Err(TransferError::Timeout)), "{f:?}: blocks again");
    assert!(start.elapsed() >= Duration::from_millis(300), "{f:?}");
}

per_flavour!(c17_a_poller_times_out_wakes_on_interrupt_and_still_reports_ready_sockets);
fn c17_a_poller_times_out_wakes_on_interrupt_and_still_reports_ready_sockets(f: Flavour) {
    let p = pair(f);
    let (pull1, push1) = p.link(SocketType::Pull, SocketType::Push, "c17-1");
    let (pull2, push2) = p.link(SocketType::Pull, SocketType::Push, "c17-2");
    let mut poller = Poller::new(&[&pull1, &pull2]);
    let start = Instant::now();
    assert_eq!(poller.poll(100).unwrap(), 0, "{f:?}: nothing sent yet");
    assert!(start.elapsed() >= Duration::from_millis(100), "{f:?}");
    assert!(!poller.check_input(0) && !poller.check_input(1), "{f:?}: nothing flagged");
    push2.send(&mut p.message(b"two"), LONG, &p.tx).unwrap();
    assert_eq!(poller.poll(LONG).unwrap(), 1, "{f:?}");
    assert!(!poller.check_input(0) && poller.check_input(1), "{f:?}");
    assert!(!poller.check_input(7) && !poller.check_output(7), "{f:?}: out of range is simply false");
    drop(poller);
    let mut m = p.rx.new_message();
    pull2.receive(&mut m, 0, &p.rx).unwrap();
    push1.send(&mut p.message(b"one"), LONG, &p.tx).unwrap();
    let mut poller = Poller::new(&[&pull1, &pull2]);
    assert_eq!(poller.poll(LONG).unwrap(), 1, "{f:?}");
    assert!(poller.check_input(0) && !poller.check_input(1), "{f:?}");
    pull1.receive(&mut m, 0, &p.rx).unwrap();
    // An interrupt wakes a poll that waits.
    let rx = p.rx.clone();
    let start = Instant::now();
    let interrupter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        rx.interrupt();
    });
    assert!(matches!(poller.poll(-1), Err(PollError::Interrupted)), "{f:?}");
    assert!(start.elapsed() >= Duration::from_millis(100), "{f:?}: returned before the interrupt");
    interrupter.join().unwrap();
    // While interrupted, a poll that would wait returns at once.
    let start = Instant::now();
    assert!(matches!(poller.poll(-1), Err(PollError::Interrupted)), "{f:?}");
    assert!(start.elapsed() < Duration::from_millis(LONG as u64 / 2), "{f:?}: waited while interrupted");
    // A socket ready before the interrupt is still reported while interrupted.
    p.rx.resume();
    push2.send(&mut p.message(b"again"), LONG, &p.tx).unwrap();
    assert_eq!(poller.poll(LONG).unwrap(), 1, "{f:?}");
    p.rx.interrupt();
    assert_eq!(poller.poll(-1).unwrap(), 1, "{f:?}: ready while interrupted");
    assert!(poller.check_input(1) && !poller.check_input(0), "{f:?}");
    p.rx.resume();
    drop(poller);
    // A push that can send is ready for output, not input.
    let mut poller = Poller::new(&[&push1]);
    assert_eq!(poller.poll(LONG).unwrap(), 1, "{f:?}");
    assert!(poller.check_output(0) && !poller.check_input(0), "{f:?}");
}

/// A sender in its own transport connects to a receiver that is not there yet, queues 20
/// messages and closes with `linger`; then the receiver appears. Returns what it received.
fn delivered_after_the_sender_closed(f: Flavour, linger: i32) -> usize {
    const N: usize = 20;
    let p = pair(f);
    let address = p.s.ipc("c18");
    std::thread::scope(|scope| {
        let sender = scope.spawn(|| {
            let t = transport_of(&p.s, f);
            let push = t.socket(SocketType::Push, "peer").unwrap();
            push.set_options(&SocketOptions { linger, ..SocketOptions::default() }).unwrap();
            push.attach(&address, &AttachOptions::new(Some(Method::Connect))).unwrap();
            for i in 0..N {
                push.send(&mut t.new_simple_message(&[i as u8; 100]).unwrap(), LONG, &t).unwrap();
            }
            // Dropping the socket and its transport: queued messages may leave for `linger` ms.
        });
        let mut sender = Some(sender);
        if linger == 0 {
            sender.take().unwrap().join().unwrap();
        } else {
            // Time to queue and begin closing: the receiver most likely appears while it lingers
            // (if not, it is there before the close, and everything arrives all the same).
            std::thread::sleep(Duration::from_millis(300));
        }
        let pull = attached_socket(&p.rx, SocketType::Pull, &address, Method::Bind);
        let mut got = 0;
        let mut m = p.rx.new_message();
        loop {
            // What must come gets LONG; the end (or nothing, for linger 0) is a quiet second.
            let wait = if linger != 0 && got < N { LONG } else { 1000 };
            match pull.receive(&mut m, wait, &p.rx) {
                Ok(_) => {
                    assert_eq!(m.data(), &[got as u8; 100][..], "{f:?} (linger {linger}): in order, intact");
                    got += 1;
                }
                Err(TransferError::Timeout) => break,
                Err(e) => panic!("{f:?} (linger {linger}): {e}"),
            }
        }
        if let Some(s) = sender {
            s.join().unwrap();
        }
        got
    })
}

per_flavour!(c18_linger_decides_whether_a_closing_senders_queue_is_delivered);
fn c18_linger_decides_whether_a_closing_senders_queue_is_delivered(f: Flavour) {
    assert_eq!(delivered_after_the_sender_closed(f, 5000), 20, "{f:?}: linger 5000 delivers");
    assert_eq!(delivered_after_the_sender_closed(f, -1), 20, "{f:?}: linger -1 delivers");
    assert_eq!(delivered_after_the_sender_closed(f, 0), 0, "{f:?}: linger 0 drops");
}

per_flavour!(c19_every_pattern_over_every_protocol);
fn c19_every_pattern_over_every_protocol(f: Flavour) {
    for proto in PROTOS {
        let p = pair(f);
        let w = format!("{f:?} over {proto:?}");
        let (b, c) = (p.bound_side(proto), &p.tx);
        // PAIR talks both ways.
        let (a, z, _) = p.link_over(proto, SocketType::Pair, SocketType::Pair, "pair");
        send_str(&z, c, "ping", &w);
        assert_eq!(recv_str(&a, b, &w), "ping", "{w}");
        send_str(&a, b, "pong", &w);
        assert_eq!(recv_str(&z, c, &w), "pong", "{w}");
        // PUSH -> PULL keeps the order, with the pull bound and with the push bound.
        let (pull, push, _) = p.link_over(proto, SocketType::Pull, SocketType::Push, "pushpull");
        for i in 0..100 {
            send_str(&push, c, &format!("m{i}"), &w);
        }
        for i in 0..100 {
            assert_eq!(recv_str(&pull, b, &w), format!("m{i}"), "{w}");
        }
        let (push, pull, _) = p.link_over(proto, SocketType::Push, SocketType::Pull, "boundpush");
        for i in 0..20 {
            send_str(&push, b, &format!("b{i}"), &w);
        }
        for i in 0..20 {
            assert_eq!(recv_str(&pull, c, &w), format!("b{i}"), "{w}: a bound push reaches a pull that connects");
        }
        // One REP serves two REQs, each getting its own reply.
        let (rep, req1, at) = p.link_over(proto, SocketType::Rep, SocketType::Req, "reqrep");
        // Another channel name: ZeroMQ's identity (`<id>.<channel>.<type>`) must differ, as
        // it does between devices; a second peer of the same identity is not accepted.
        let req2 = c.socket(SocketType::Req, "second").unwrap();
        req2.attach(&at, &AttachOptions::new(Some(Method::Connect))).unwrap();
        for (req, text) in [(&req1, "one"), (&req2, "two")] {
            send_str(req, c, text, &w);
            let got = recv_str(&rep, b, &w);
            send_str(&rep, b, &format!("re:{got}"), &w);
            assert_eq!(recv_str(req, c, &w), format!("re:{text}"), "{w}");
        }
        // A SUB gets everything without naming a topic (once its subscription arrived).
        let (publ, sub, _) = p.link_over(proto, SocketType::Pub, SocketType::Sub, "pubsub");
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut m = c.new_message();
        loop {
            assert!(Instant::now() < deadline, "{w}: the subscriber never got a message");
            send_str(&publ, b, "tick", &w);
            if sub.receive(&mut m, 20, c).is_ok() {
                break;
            }
        }
        assert_eq!(m.data(), b"tick", "{w}");
    }
}

per_flavour!(c20_peers_are_counted_on_both_sides_as_they_connect_and_leave);
fn c20_peers_are_counted_on_both_sides_as_they_connect_and_leave(f: Flavour) {
    for proto in [Proto::Ipc, Proto::Tcp] {
        let p = pair(f);
        let w = format!("{f:?} over {proto:?}");
        let pull = p.rx.socket(SocketType::Pull, "peer").unwrap();
        assert_eq!(pull.number_of_connected_peers(), 0, "{w}: nobody yet");
        let at = pull.attach(&p.address(proto, "c20"), &AttachOptions::new(Some(Method::Bind))).unwrap();
        let mut pushes: Vec<Socket> =
            (0..3).map(|_| attached_socket(&p.tx, SocketType::Push, &at, Method::Connect)).collect();
        assert_eq!(settles(3, || pull.number_of_connected_peers()), 3, "{w}: three accepted");
        assert_eq!(settles(1, || pushes[0].number_of_connected_peers()), 1, "{w}: one made");
        pushes.truncate(1);
        assert_eq!(settles(1, || pull.number_of_connected_peers()), 1, "{w}: two left");
    }
}

per_flavour!(c21_a_message_of_no_bytes_travels);
fn c21_a_message_of_no_bytes_travels(f: Flavour) {
    let p = pair(f);
    let (pull, push) = p.link(SocketType::Pull, SocketType::Push, "c21");
    let mut m = p.tx.new_message();
    assert!(m.data_ptr().is_null(), "{f:?}");
    assert_eq!(push.send(&mut m, LONG, &p.tx).unwrap(), 0, "{f:?}");
    let mut r = p.rx.new_simple_message(b"old content").unwrap();
    assert_eq!(pull.receive(&mut r, LONG, &p.rx).unwrap(), 0, "{f:?}");
    assert!(r.is_empty() && r.data_ptr().is_null(), "{f:?}: the old content is gone");
    assert_eq!(pull.counters().messages_rx, 1, "{f:?}");
}

per_flavour!(c22_one_socket_attaches_to_several_endpoints);
fn c22_one_socket_attaches_to_several_endpoints(f: Flavour) {
    let p = pair(f);
    let (e1, e2) = (p.s.ipc("c22-1"), p.s.ipc("c22-2"));
    let both = format!("{e1},{e2}");
    let pull = p.rx.socket(SocketType::Pull, "peer").unwrap();
    assert_eq!(pull.attach(&both, &AttachOptions::new(Some(Method::Bind))).unwrap(), both, "{f:?}");
    let a = attached_socket(&p.tx, SocketType::Push, &e1, Method::Connect);
    // '>' names the method in the address: connect.
    let b = p.tx.socket(SocketType::Push, "peer").unwrap();
    b.attach(&format!(">{e2}"), &AttachOptions::new(Some(Method::Connect))).unwrap();
    send_str(&a, &p.tx, "via1", &format!("{f:?}"));
    send_str(&b, &p.tx, "via2", &format!("{f:?}"));
    let mut got = [recv_str(&pull, &p.rx, &format!("{f:?}")), recv_str(&pull, &p.rx, &format!("{f:?}"))];
    got.sort();
    assert_eq!(got, ["via1".to_owned(), "via2".to_owned()], "{f:?}");
}

per_flavour!(c23_a_publisher_without_subscribers_sends_at_once_and_counts);
fn c23_a_publisher_without_subscribers_sends_at_once_and_counts(f: Flavour) {
    let p = pair(f);
    let publ = attached_socket(&p.tx, SocketType::Pub, &p.s.ipc("c23"), Method::Bind);
    for i in 0..100 {
        // Half with no timeout at all, half with none to spare.
        let timeout = if i % 2 == 0 { -1 } else { 0 };
        let mut m = p.tx.new_message_with_size(10_000).unwrap();
        assert_eq!(publ.send(&mut m, timeout, &p.tx).unwrap(), 10_000, "{f:?}: message {i}");
        assert!(m.is_empty(), "{f:?}");
    }
    let c = publ.counters();
    assert_eq!((c.messages_tx, c.bytes_tx), (100, 1_000_000), "{f:?}");
}
