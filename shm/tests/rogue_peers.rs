//! Hostile and foreign peers of shared-memory sockets: real ZeroMQ sockets, not of this transport,
//! that reach a bound endpoint and send raw frames, or take what they are sent. Whatever they send,
//! a receiver reports an error and goes on; whatever they do, no block of the session is freed
//! under its holder or lost for good.

mod common;
use common::*;
use fairmq_zmq::{AttachOptions, Method, SocketType, TransferError};

const LONG: i32 = 10_000;

/// A plain ZeroMQ socket of type `ty` connected to `address`.
fn rogue(ty: zmq::SocketType, address: &str) -> (zmq::Context, zmq::Socket) {
    let ctx = zmq::Context::new();
    let s = ctx.socket(ty).expect("rogue socket");
    s.set_linger(0).expect("linger");
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
    let (_ctx, r) = rogue(zmq::PUSH, &at);
    let version = fairmq_shm::meta::VERSION;
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
            use fairmq_zmq::PollHook;
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
    let mut subscribed = false;
    for _ in 0..500 {
        if publisher.connected_subscribers() == 1 {
            subscribed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(subscribed, "the subscriber's probe arrived");
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
    let deadline = std::time::Instant::now() + GENEROUS;
    while publisher.connected_subscribers() != 1 {
        assert!(std::time::Instant::now() < deadline, "the subscriber's probe never arrived");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    drop(sub);
    // Publish until the publisher has noticed that the subscriber is gone.
    while publisher.connected_subscribers() != 0 {
        assert!(std::time::Instant::now() < deadline, "the publisher never noticed the subscriber left");
        publisher.send(&mut t.new_message_from_slice(b"news").unwrap(), 0).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let errors: Vec<_> = lines
        .lock()
        .iter()
        .filter(|(level, text)| *level == log::Level::Error && text.contains("leaving"))
        .cloned()
        .collect();
    assert!(errors.is_empty(), "logged as errors: {errors:?}");
}
