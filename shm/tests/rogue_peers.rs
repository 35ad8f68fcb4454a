//! Hostile and foreign peers of shared-memory sockets: real ZeroMQ sockets, not of this transport,
//! that reach a bound endpoint and send raw frames, or take what they are sent. Whatever they send,
//! a receiver reports an error and goes on; whatever they do, no block of the session is freed
//! under its holder or lost for good.

mod common;
use common::*;
use fairmq_zmq::{AttachOptions, Method, SocketType, TransferError};

const LONG: i32 = 10_000;

/// The monitor events of a refused handshake.
const HANDSHAKE_FAILED: [zmq::SocketEvent; 3] = [
    zmq::SocketEvent::HANDSHAKE_FAILED_NO_DETAIL,
    zmq::SocketEvent::HANDSHAKE_FAILED_PROTOCOL,
    zmq::SocketEvent::HANDSHAKE_FAILED_AUTH,
];

/// Waits (generously) for the event on `monitor` (of a plain ZeroMQ socket) that its handshake
/// was refused: what is checked after it happens after the socket's attempt, not after a pause.
fn refused(monitor: Option<zmq::Socket>) {
    let event = monitor.expect("a monitor").recv_multipart(0).expect("the handshake is refused");
    let kind = zmq::SocketEvent::from_raw(u16::from_le_bytes([event[0][0], event[0][1]]));
    assert!(HANDSHAKE_FAILED.contains(&kind), "a refused handshake: {kind:?}");
}

/// A plain ZeroMQ socket of type `ty` connected to `address`, with the session's password (a
/// local process of the session that does not follow the protocol).
fn rogue(t: &fairmq_shm::Transport, ty: zmq::SocketType, address: &str) -> (zmq::Context, zmq::Socket) {
    let ctx = zmq::Context::new();
    let s = ctx.socket(ty).expect("rogue socket");
    s.set_linger(0).expect("linger");
    insider(t, &s);
    s.connect(address).expect("rogue connects");
    (ctx, s)
}

/// A PULL of `t` bound to `address`; returns it and the address it got.
fn bound_pull(t: &fairmq_shm::Transport, address: &str) -> (fairmq_shm::Socket, String) {
    let pull = t.socket(SocketType::Pull, "in").unwrap();
    let at = pull.attach(address, &AttachOptions::new(Some(Method::Bind))).unwrap();
    (pull, at)
}

/// Item 1: control frames of every kind, with any length, reach a receiver through its real receive
/// path (single, multipart and the poller's look at the socket): each is an error or ignored, never
/// a crash, and the receiver then takes a real message.
#[test]
fn i01_control_frames_of_any_length_are_refused_not_fatal() {
    let s = Session::new("rogue-ctl");
    let t = s.transport("victim");
    let (pull, at) = bound_pull(&t, &s.ipc("ctl"));
    let (_ctx, r) = rogue(&t, zmq::DEALER, &at);
    let version = fairmq_shm::testing::meta::VERSION;
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for tag in 0..=7u8 {
        for len in [2usize, 7, 8, 9, 16, 35, 36, 37, 64] {
            let mut f = vec![0u8; len];
            f[0] = version;
            f[1] = tag;
            frames.push(f.clone());
            // Non-zero bytes past the prefix and in the reserved bytes.
            f[len - 1] = 0xff;
            frames.push(f);
        }
    }
    for f in &frames {
        r.send(&f[..], 0).expect("rogue sends");
    }
    let (mut errors, mut hook_looks) = (0, 0);
    for round in 0..frames.len() {
        // Every path that reads the socket: the poller's look, a single and a multipart receive.
        if round % 3 == 0 {
            use fairmq_zmq::layered::PollHook;
            let _ = pull.input_ready();
            hook_looks += 1;
        }
        let got = if round % 2 == 0 {
            pull.receive(&mut t.new_message(), 50).map(|_| ())
        } else {
            pull.receive_parts(&mut Vec::new(), 50).map(|_| ())
        };
        match got {
            Err(TransferError::Timeout) => break,
            Err(_) => errors += 1,
            Ok(()) => {}
        }
    }
    assert!(errors > 0, "the rogue frames were reported");
    assert!(hook_looks > 0);
    // The receiver still works.
    let push = t.socket(SocketType::Push, "out").unwrap();
    push.connect(&at).unwrap();
    push.send(&mut t.new_message_from_slice(b"after the storm").unwrap(), LONG).unwrap();
    let mut m = t.new_message();
    loop {
        match pull.receive(&mut m, LONG) {
            Ok(_) => break,
            Err(TransferError::Timeout) => panic!("the real message never came"),
            Err(_) => {} // rogue frames still queued
        }
    }
    assert_eq!(m.data(), b"after the storm");
}

/// Item 13: sockets that cannot receive (PUSH, and PUB, whose socket only takes subscribers'
/// probes) are never reported ready for input by a poller: a poll over them alone waits its
/// timeout instead of returning at once (a device then tried to receive, failed with errno 95 and
/// polled again, about 128 000 times a second).
#[test]
fn i13_a_poller_never_reports_input_on_a_socket_that_cannot_receive() {
    let s = Session::new("poll-out");
    let t = s.transport("p");
    // Not attached: no pipe, so it cannot send either.
    let push = t.socket(SocketType::Push, "out").unwrap();
    let publisher = t.socket(SocketType::Pub, "pub").unwrap();
    publisher.bind(&s.ipc("pub")).unwrap();
    // A subscriber's probe arrives on the publisher's socket: it is no input either.
    let sub = t.socket(SocketType::Sub, "sub").unwrap();
    sub.connect(&s.ipc("pub")).unwrap();
    wait_until("the subscriber's probe", || publisher.connected_subscribers() == 1);
    let sub2 = t.socket(SocketType::Sub, "sub2").unwrap();
    sub2.connect(&s.ipc("pub")).unwrap();
    // Alone, the unattached push can do nothing: the poll waits its whole timeout.
    let mut poller = fairmq_shm::Poller::new(&[&push]);
    let started = std::time::Instant::now();
    assert_eq!(poller.poll(200).unwrap(), 0, "nothing is ready");
    assert!(started.elapsed() >= std::time::Duration::from_millis(190), "the poll waited");
    assert!(!poller.check_input(0) && !poller.check_output(0));
    // The publisher can always send, and never receives.
    let mut poller = fairmq_shm::Poller::new(&[&push, &publisher]);
    assert_eq!(poller.poll(200).unwrap(), 1);
    assert!(!poller.check_input(0), "a push socket has no input");
    assert!(!poller.check_input(1), "a publisher has no input");
    assert!(poller.check_output(1));
    drop(sub2);
}

/// Log lines at warning level or above, as `(level, text)`, for tests that check what is logged.
fn logged() -> &'static parking_lot::Mutex<Vec<(log::Level, String)>> {
    struct Recorder;
    static LINES: parking_lot::Mutex<Vec<(log::Level, String)>> = parking_lot::Mutex::new(Vec::new());
    impl log::Log for Recorder {
        fn enabled(&self, m: &log::Metadata<'_>) -> bool {
            m.level() <= log::Level::Warn
        }
        fn log(&self, r: &log::Record<'_>) {
            if self.enabled(r.metadata()) {
                LINES.lock().push((r.level(), r.args().to_string()));
            }
        }
        fn flush(&self) {}
    }
    static RECORDER: Recorder = Recorder;
    if log::set_logger(&RECORDER).is_ok() {
        log::set_max_level(log::LevelFilter::Warn);
    }
    &LINES
}

/// Item 13: a subscriber that leaves is an expected event for a publisher, not an error.
#[test]
fn i13_a_subscriber_leaving_is_not_logged_as_an_error() {
    let lines = logged();
    let s = Session::new("pub-leave");
    let t = s.transport("leave");
    let publisher = t.socket(SocketType::Pub, "leaving").unwrap();
    publisher.bind(&s.ipc("pub")).unwrap();
    let sub = t.socket(SocketType::Sub, "sub").unwrap();
    sub.connect(&s.ipc("pub")).unwrap();
    wait_until("the subscriber's probe", || publisher.connected_subscribers() == 1);
    drop(sub);
    // Publish until the publisher has noticed that the subscriber is gone.
    wait_until("the publisher noticing the subscriber left", || {
        publisher.send(&mut t.new_message_from_slice(b"news").unwrap(), 0).unwrap();
        publisher.connected_subscribers() == 0
    });
    let errors: Vec<_> = lines
        .lock()
        .iter()
        .filter(|(level, text)| *level == log::Level::Error && text.contains("leaving"))
        .cloned()
        .collect();
    assert!(errors.is_empty(), "logged as errors: {errors:?}");
}

/// A plain ZeroMQ PUSH connected to `address` that sends raw frames.
fn send_raw(r: &zmq::Socket, frame: &[u8]) {
    r.send(frame, 0).expect("rogue sends");
}

/// Item 2: a record that describes a live block directly, as a peer that once saw one (or guessed
/// it) can send, is refused on a socket: it would take over a reference it was never given and
/// free the block under its holder. Fails before tickets: the record was accepted.
#[test]
fn i02_a_forged_block_record_takes_nothing_from_its_holder() {
    let s = Session::new("forged");
    let t = s.transport("victim");
    let (pull, at) = bound_pull(&t, &s.ipc("forged"));
    let (_ctx, r) = rogue(&t, zmq::DEALER, &at);
    let held = t.new_message_from_slice(&[7u8; 4096]).unwrap();
    let mut frame = Vec::new();
    fairmq_shm::testing::meta::encode_single(&held.record(), 0, &mut frame);
    // A handed record with a made-up ticket and nonce, too.
    let mut guessed = Vec::new();
    let handed = fairmq_shm::testing::meta::Record::Handed { segment: 0, ticket: 0, nonce: 0x1234_5678 };
    fairmq_shm::testing::meta::encode_single(&handed, 0, &mut guessed);
    for f in [&frame, &guessed, &frame] {
        send_raw(&r, f);
        let mut m = t.new_message();
        // Refused and skipped (logged): the receive waits on for a frame it can deliver.
        let e = pull.receive(&mut m, 1000).expect_err("a forged record is refused");
        assert!(matches!(e, TransferError::Timeout), "{e}");
        assert!(m.is_empty());
    }
    assert_eq!(held.refcount(), 1, "the holder's reference is untouched");
    // The block stays the holder's: new allocations do not alias it.
    let others: Vec<_> = (0..64u8).map(|i| t.new_message_from_slice(&[i; 4096]).unwrap()).collect();
    assert!(held.data().iter().all(|&b| b == 7), "the held block was not handed out again");
    drop(others);
    t.check_segment().unwrap();
}

/// Item 2: a record that a rogue receiver took from a sender is claimed at most once wherever it is
/// replayed: the first claim gets the message (the rogue redirected it, as it could have kept
/// it), every repeat is refused with a logged error, skipped, and frees nothing.
#[test]
fn i02_a_replayed_record_is_claimed_once() {
    let s = Session::new("replay");
    // A pair socket without lanes sends records on its socket to whatever peer it has.
    let mut c = s.config("victim");
    c.lanes = false;
    let t = fairmq_shm::Transport::new(&c).unwrap();
    t.flush();
    let free0 = t.segment_stats().free;
    let push = t.socket(SocketType::Pair, "out").unwrap();
    let out_at = push.attach(&s.ipc("out"), &AttachOptions::new(Some(Method::Bind))).unwrap();
    let (_c1, thief) = rogue(&t, zmq::PAIR, &out_at);
    let payload: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
    push.send(&mut t.new_message_from_slice(&payload).unwrap(), LONG).unwrap();
    let record = thief.recv_bytes(0).expect("the rogue got the record");
    let (pull, in_at) = bound_pull(&t, &s.ipc("in"));
    let (_c2, replayer) = rogue(&t, zmq::DEALER, &in_at);
    for _ in 0..3 {
        send_raw(&replayer, &record);
    }
    let mut m = t.new_message();
    pull.receive(&mut m, LONG).expect("the first claim gets the message");
    assert_eq!(m.data(), &payload[..]);
    assert_eq!(m.refcount(), 1);
    // The repeats are refused (an error is logged) and skipped: nothing else arrives.
    let mut again = t.new_message();
    let e = pull.receive(&mut again, 1000).expect_err("a repeated record is refused");
    assert!(matches!(e, TransferError::Timeout), "{e}");
    assert!(again.is_empty());
    assert_eq!(m.data(), &payload[..], "the claimed message is intact");
    drop(m);
    drop((pull, push));
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "the block was freed exactly once");
}

/// Item 3: a peer that is not a shared-memory socket of the session gets nothing of the segment:
/// a plain ZeroMQ PULL (ZeroMQ refuses it: the push is a router), and a DEALER that presents a
/// made-up token with its probe (refused by the push). Before, a plain PULL drained every record
/// and the blocks behind them were lost. A real receiver then gets every message.
#[test]
fn i03_a_peer_without_the_session_token_gets_nothing() {
    let s = Session::new("no-token");
    let t = s.transport("sender");
    t.flush();
    let free0 = t.segment_stats().free;
    let push = t.socket(SocketType::Push, "out").unwrap();
    let at = push.attach(&s.ipc("out"), &AttachOptions::new(Some(Method::Bind))).unwrap();
    let (_c1, pull) = rogue(&t, zmq::PULL, &at);
    let ctx = zmq::Context::new();
    let dealer = ctx.socket(zmq::DEALER).unwrap();
    dealer.set_linger(0).unwrap();
    insider(&t, &dealer);
    dealer.set_identity(b"FMQRS3-a-made-up-token-xxxx").unwrap();
    dealer.set_probe_router(true).unwrap();
    dealer.connect(&at).unwrap();
    wait_until("the dealer's probe", || push.refused_peers() > 0);
    for _ in 0..3 {
        let mut m = t.new_message_from_slice(b"for the session only").unwrap();
        assert!(matches!(push.send(&mut m, 100), Err(TransferError::Timeout)), "no peer may take it");
        assert_eq!(m.data(), b"for the session only", "the sender keeps it");
    }
    assert!(pull.recv_bytes(zmq::DONTWAIT).is_err(), "the plain pull got nothing");
    assert!(dealer.recv_bytes(zmq::DONTWAIT).is_err(), "the dealer got nothing");
    let real = t.socket(SocketType::Pull, "in").unwrap();
    real.connect(&at).unwrap();
    for i in 0..10u8 {
        push.send(&mut t.new_message_from_slice(&[i; 100]).unwrap(), LONG).unwrap();
    }
    let mut m = t.new_message();
    for i in 0..10u8 {
        real.receive(&mut m, LONG).unwrap();
        assert_eq!(m.data(), &[i; 100][..]);
    }
    drop(m);
    drop((real, push));
    t.flush();
    assert_eq!(t.segment_stats().free, free0, "nothing lost");
}

/// Item 3: a DEALER probing a shared-memory publisher with a made-up token is no subscriber.
#[test]
fn i03_a_probe_without_the_session_token_subscribes_nothing() {
    let s = Session::new("pub-probe");
    let t = s.transport("publisher");
    t.flush();
    let free0 = t.segment_stats().free;
    let publisher = t.socket(SocketType::Pub, "pub").unwrap();
    publisher.bind(&s.ipc("pub")).unwrap();
    let ctx = zmq::Context::new();
    let dealer = ctx.socket(zmq::DEALER).unwrap();
    dealer.set_linger(0).unwrap();
    insider(&t, &dealer);
    dealer.set_probe_router(true).unwrap();
    dealer.connect(&s.ipc("pub")).unwrap();
    wait_until("the dealer's probe", || publisher.refused_peers() > 0);
    assert_eq!(publisher.connected_subscribers(), 0);
    for _ in 0..1000 {
        publisher.send(&mut t.new_message_from_slice(&[1; 1000]).unwrap(), 0).unwrap();
    }
    assert!(dealer.recv_bytes(zmq::DONTWAIT).is_err(), "the dealer got nothing");
    t.flush();
    assert_eq!(t.segment_stats().free, free0, "every published block was freed");
}

/// Item 3: peers that leave together, wherever their turn is, are all taken back and what they had
/// not taken reaches the one left (a review found the turns' wrap-around removed the wrong peer
/// or panicked).
#[test]
fn i03_peers_leaving_together_give_back_to_the_one_left() {
    for skip in 0..3usize {
        for keep in 0..3usize {
            let s = Session::new("leave-together");
            let t = s.transport("t");
            let push = t.socket(SocketType::Push, "out").unwrap();
            let at = push.attach(&s.ipc("out"), &AttachOptions::new(Some(Method::Bind))).unwrap();
            let mut pulls: Vec<Option<fairmq_shm::Socket>> = (0..3)
                .map(|i| {
                    let p = t.socket(SocketType::Pull, &format!("in{i}")).unwrap();
                    p.connect(&at).unwrap();
                    Some(p)
                })
                .collect();
            // Wait until the push knows all three (each takes one message in turn).
            let deadline = std::time::Instant::now() + GENEROUS;
            let mut m = t.new_message();
            let mut seen = [false; 3];
            let mut next = 0u8;
            while !seen.iter().all(|&x| x) {
                assert!(std::time::Instant::now() < deadline, "the push never learnt its three peers");
                push.send(&mut t.new_message_from_slice(&[next]).unwrap(), LONG).unwrap();
                next += 1;
                for (i, p) in pulls.iter().enumerate() {
                    if p.as_ref().unwrap().receive(&mut m, 20).is_ok() {
                        seen[i] = true;
                    }
                }
            }
            for _ in 0..skip {
                push.send(&mut t.new_message_from_slice(&[200]).unwrap(), LONG).unwrap();
            }
            for (i, p) in pulls.iter_mut().enumerate() {
                if i != keep {
                    p.take();
                }
            }
            for v in 0..20u8 {
                push.send(&mut t.new_message_from_slice(&[100 + v]).unwrap(), LONG).unwrap();
            }
            // The stream goes on: its next turns find the peers gone and give back what they had.
            let left = pulls[keep].as_ref().unwrap();
            let mut got = Vec::new();
            while got.iter().filter(|&&b| (100..120).contains(&b)).count() < 20 {
                assert!(std::time::Instant::now() < deadline, "skip {skip}, keep {keep}: only {got:?} arrived");
                push.send(&mut t.new_message_from_slice(&[250]).unwrap(), LONG).unwrap();
                while left.receive(&mut m, 10).is_ok() {
                    got.push(m.data()[0]);
                }
            }
            let mut fresh: Vec<u8> = got.iter().copied().filter(|&b| (100..120).contains(&b)).collect();
            fresh.sort_unstable();
            assert_eq!(fresh, (100..120).collect::<Vec<u8>>(), "skip {skip}, keep {keep}: each once");
        }
    }
}

/// Our part in a raw ZMTP 3 handshake with the PLAIN mechanism.
#[derive(Clone, Copy)]
enum Role<'a> {
    /// We connected: we present this password.
    Client(&'a str),
    /// The peer connected: we let it in whatever it presents.
    Server,
}

/// The routing id a ZeroMQ peer at the other end of `stream` presents in its ZMTP 3 handshake
/// (we speak as a ROUTER).
fn routing_id_presented(stream: &mut std::os::unix::net::UnixStream, role: Role<'_>) -> Vec<u8> {
    zmtp_handshake(stream, b"ROUTER", role)
}

/// Writes a ZMTP command frame of `body`.
fn write_command(stream: &mut std::os::unix::net::UnixStream, body: &[u8]) {
    use std::io::Write;
    stream.write_all(&[0x04, u8::try_from(body.len()).expect("a short command")]).unwrap();
    stream.write_all(body).unwrap();
}

/// Reads a ZMTP command frame; returns its body.
fn read_command(stream: &mut std::os::unix::net::UnixStream) -> Vec<u8> {
    use std::io::Read;
    let mut flags = [0u8; 1];
    stream.read_exact(&mut flags).unwrap();
    assert!(flags[0] & 0x04 != 0, "a command frame, not flags {:#x}", flags[0]);
    let size = if flags[0] & 0x02 != 0 {
        let mut b = [0u8; 8];
        stream.read_exact(&mut b).unwrap();
        u64::from_be_bytes(b) as usize
    } else {
        let mut b = [0u8; 1];
        stream.read_exact(&mut b).unwrap();
        usize::from(b[0])
    };
    let mut body = vec![0u8; size];
    stream.read_exact(&mut body).unwrap();
    body
}

/// A command `name` with the metadata property Socket-Type `ty`.
fn with_socket_type(name: &[u8], ty: &[u8]) -> Vec<u8> {
    let mut c = vec![name.len() as u8];
    c.extend_from_slice(name);
    c.push(11);
    c.extend_from_slice(b"Socket-Type");
    c.extend_from_slice(&(ty.len() as u32).to_be_bytes());
    c.extend_from_slice(ty);
    c
}

/// The Identity property of the metadata in `body` after its command name `name` (empty if none).
fn identity_in(body: &[u8], name: &[u8]) -> Vec<u8> {
    assert_eq!(&body[1..1 + name.len()], name, "a {} command: {body:?}", String::from_utf8_lossy(name));
    let mut at = 1 + name.len();
    while at < body.len() {
        let n = usize::from(body[at]);
        let key = &body[at + 1..at + 1 + n];
        let len = u32::from_be_bytes(body[at + 1 + n..at + 5 + n].try_into().unwrap()) as usize;
        let value = &body[at + 5 + n..at + 5 + n + len];
        if key.eq_ignore_ascii_case(b"Identity") {
            return value.to_vec();
        }
        at += 5 + n + len;
    }
    Vec::new()
}

/// A ZMTP 3 handshake (PLAIN mechanism, in `role`) speaking as a socket of type `ty` over
/// `stream`; returns the routing id the peer presented.
fn zmtp_handshake(stream: &mut std::os::unix::net::UnixStream, ty: &[u8], role: Role<'_>) -> Vec<u8> {
    use std::io::{Read, Write};
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let mut greeting = [0u8; 64];
    greeting[0] = 0xff;
    greeting[9] = 0x7f;
    greeting[10] = 3;
    greeting[12..17].copy_from_slice(b"PLAIN");
    greeting[32] = u8::from(matches!(role, Role::Server));
    stream.write_all(&greeting).unwrap();
    let mut theirs = [0u8; 64];
    stream.read_exact(&mut theirs).unwrap();
    assert_eq!((theirs[0], theirs[9], theirs[10]), (0xff, 0x7f, 3), "a ZMTP 3 greeting");
    assert_eq!(&theirs[12..18], b"PLAIN\0", "the peer asks for PLAIN credentials");
    match role {
        Role::Client(password) => {
            let mut hello = b"\x05HELLO".to_vec();
            for field in [&b"fairmq-rs"[..], password.as_bytes()] {
                hello.push(field.len() as u8);
                hello.extend_from_slice(field);
            }
            write_command(stream, &hello);
            let welcome = read_command(stream);
            assert_eq!(welcome, b"\x07WELCOME", "let in: {}", String::from_utf8_lossy(&welcome));
            write_command(stream, &with_socket_type(b"INITIATE", ty));
            identity_in(&read_command(stream), b"READY")
        }
        Role::Server => {
            let hello = read_command(stream);
            assert_eq!(&hello[..6], b"\x05HELLO");
            write_command(stream, b"\x07WELCOME");
            let id = identity_in(&read_command(stream), b"INITIATE");
            write_command(stream, &with_socket_type(b"READY", ty));
            id
        }
    }
}

/// Issue 17 item 3 (found by a review): ZeroMQ tells a socket's routing id to every peer, also to
/// whoever connects to a bound socket; a receiving socket's token there would let anyone who can
/// reach the endpoint pose as it to the session's senders. A bound pull presents no token; one
/// that connects presents it to the endpoint it connects to (which it trusts).
#[test]
fn i03_a_bound_receiver_tells_no_token_to_those_that_connect_to_it() {
    let s = Session::new("token-leak");
    let t = s.transport("victim");
    let dir = tempfile::tempdir().unwrap();
    let bound_path = dir.path().join("bound");
    let pull = t.socket(SocketType::Pull, "in").unwrap();
    pull.bind(&format!("ipc://{}", bound_path.display())).unwrap();
    let mut stream = std::os::unix::net::UnixStream::connect(&bound_path).unwrap();
    let password = t.connect_password();
    let id = routing_id_presented(&mut stream, Role::Client(&password));
    assert!(!id.starts_with(b"FMQRS"), "a bound pull told its token to a stranger: {id:?}");
    // Connecting, it presents its token: the handshake above would have shown one.
    let listen_path = dir.path().join("listener");
    let listener = std::os::unix::net::UnixListener::bind(&listen_path).unwrap();
    let other = t.socket(SocketType::Pull, "out").unwrap();
    other.connect(&format!("ipc://{}", listen_path.display())).unwrap();
    let (mut accepted, _) = listener.accept().unwrap();
    let id = routing_id_presented(&mut accepted, Role::Server);
    assert!(id.starts_with(b"FMQRS3"), "a connecting pull presents its token: {id:?}");
}

/// A peer of a push (or pub) sends it nothing but probes and hellos: a frame that says it is a
/// gigabyte long ends the connection at once, instead of the push buffering whatever follows.
#[test]
fn i03_a_huge_frame_to_a_push_ends_the_connection() {
    use std::io::{Read, Write};
    let s = Session::new("huge-frame");
    let t = s.transport("victim");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("push");
    let push = t.socket(SocketType::Push, "out").unwrap();
    push.bind(&format!("ipc://{}", path.display())).unwrap();
    let mut stream = std::os::unix::net::UnixStream::connect(&path).unwrap();
    zmtp_handshake(&mut stream, b"DEALER", Role::Client(&t.connect_password()));
    // A long message frame of 2^30 bytes, of which a few follow.
    stream.write_all(&[0x02]).unwrap();
    stream.write_all(&(1u64 << 30).to_be_bytes()).unwrap();
    // The push may have ended the connection already on reading the length (a broken pipe here).
    let _ = stream.write_all(&[0u8; 4096]);
    let _ = push.refused_peers(); // the push reads its socket
    let mut buf = [0u8; 64];
    let ended = loop {
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            Err(e) => panic!("the connection stayed open: {e}"),
        }
    };
    assert!(ended);
}

/// Item 3: a socket that does not present the session's password (a plain ZeroMQ socket of
/// another process, on this host or not) cannot connect to any socket of the session: a pair,
/// request or dealer socket never sends it a record (before, it drained them, and the blocks
/// behind them were lost for good), and what it sends never reaches a receiving socket. The same
/// socket with the password is let in (what makes the test able to fail).
#[test]
fn i03_a_socket_without_the_session_password_cannot_connect() {
    let s = Session::new("stranger");
    let mut c = s.config("victim");
    c.lanes = false; // a pair sends its records on its socket
    let t = fairmq_shm::Transport::new(&c).unwrap();
    let peer = |ty: zmq::SocketType, at: &str, with_password: bool| {
        let ctx = zmq::Context::new();
        let z = ctx.socket(ty).unwrap();
        z.set_linger(0).unwrap();
        z.set_rcvtimeo(LONG).unwrap();
        // The stranger's own monitor reports when the socket refused it in the handshake.
        let monitor = (!with_password).then(|| {
            let endpoint = "inproc://stranger-monitor";
            z.monitor(endpoint, HANDSHAKE_FAILED.iter().fold(0, |all, &e| all | e as i32)).unwrap();
            let monitor = ctx.socket(zmq::PAIR).unwrap();
            monitor.set_rcvtimeo(GENEROUS.as_millis() as i32).unwrap();
            monitor.connect(endpoint).unwrap();
            monitor
        });
        if with_password {
            insider(&t, &z);
        }
        z.connect(at).unwrap();
        (ctx, z, monitor)
    };
    let sending = [(SocketType::Pair, zmq::PAIR), (SocketType::Req, zmq::REP), (SocketType::Dealer, zmq::DEALER)];
    for (ours, theirs) in sending {
        let sock = t.socket(ours, "out").unwrap();
        let at = sock.attach(&s.ipc(&format!("out-{ours}")), &AttachOptions::new(Some(Method::Bind))).unwrap();
        let (_c1, stranger, monitor) = peer(theirs, &at, false);
        refused(monitor);
        let mut m = t.new_message_from_slice(b"for the session only").unwrap();
        assert!(matches!(sock.send(&mut m, 500), Err(TransferError::Timeout)), "{ours}: no peer may take it");
        assert_eq!(m.data(), b"for the session only", "{ours}: the sender keeps it");
        assert!(stranger.recv_bytes(zmq::DONTWAIT).is_err(), "{ours}: the stranger got nothing");
        let (_c2, insider, _) = peer(theirs, &at, true);
        sock.send(&mut m, LONG).unwrap();
        assert!(!insider.recv_bytes(0).expect("the insider gets the record").is_empty(), "{ours}");
    }
    let receiving = [(SocketType::Pull, zmq::DEALER), (SocketType::Rep, zmq::REQ), (SocketType::Router, zmq::DEALER)];
    for (ours, theirs) in receiving {
        let sock = t.socket(ours, "in").unwrap();
        let at = sock.attach(&s.ipc(&format!("in-{ours}")), &AttachOptions::new(Some(Method::Bind))).unwrap();
        let (_c1, stranger, monitor) = peer(theirs, &at, false);
        // Queued on the stranger's side: its connection never completes.
        stranger.send(&b"not a record"[..], zmq::DONTWAIT).unwrap();
        refused(monitor);
        assert!(
            matches!(sock.receive(&mut t.new_message(), 500), Err(TransferError::Timeout)),
            "{ours}: nothing of the stranger arrived"
        );
        let (_c2, insider, _) = peer(theirs, &at, true);
        insider.send(&b"not a record"[..], 0).unwrap();
        // The insider's frame is refused and skipped: the receive waits on.
        let got = sock.receive(&mut t.new_message(), 1000);
        assert!(matches!(got, Err(TransferError::Timeout)), "{ours}: the insider's frame is skipped: {got:?}");
        if ours == SocketType::Rep {
            // A refused request is still answered (empty), so the requester is not stuck.
            insider.set_rcvtimeo(LONG).unwrap();
            assert_eq!(insider.recv_bytes(0).expect("an answer"), Vec::<u8>::new(), "{ours}");
        }
    }
}
