//! Issue 37, item 1: a frame the shared-memory transport refuses never stops a device. Each kind of
//! bad frame a peer of the session can send (too short, another version, an unknown record type,
//! trailing bytes, an unknown segment, bounds, a forged or stale record, a multipart header that
//! lies) goes into a running sampler -> proxy -> sink topology, then real traffic: every device
//! stays in RUNNING and the sink gets every real message.

mod common;
use common::process::{Proc, GENEROUS};
use common::{launch_device, session_transport, shm_transport, Session};
use fairmq::{SocketType, TransportKind};
use fairmq_shm::testing::meta::{encode_single, Record, VERSION};
use fairmq_zmq::layered::LayeredSocket;
use fairmq_zmq::Method;
use nix::sys::signal::Signal;

const SAMPLER: &str = env!("CARGO_BIN_EXE_fairmq-bsampler");
const PROXY: &str = env!("CARGO_BIN_EXE_fairmq-proxy");
const SINK: &str = env!("CARGO_BIN_EXE_fairmq-sink");

/// Real messages the sampler sends after the bad frames.
const REAL: u64 = 200;

fn launch(exe: &str, id: &str, s: &Session, extra: &[&str]) -> Proc {
    launch_device(exe, id, s, "shmem", "static", "20000000", extra)
}

/// One frame of each kind the receive path refuses, some of them naming a real block of the
/// session (of `peer`'s segment) in ways that must not take it.
fn bad_frames(peer: &fairmq_shm::Transport) -> Vec<(&'static str, Vec<u8>)> {
    let real = peer.new_message_from_slice(&[7u8; 512]).unwrap();
    let Record::Block { segment, offset, delta, size, slot, generation } = real.record() else {
        panic!("a message of a segment has a block record")
    };
    let enc = |segment: u16, offset: u64, size: u64| {
        let mut v = Vec::new();
        encode_single(&Record::Block { segment, offset, delta, size, slot, generation }, 0, &mut v);
        v
    };
    let mut trailing = enc(segment, offset, size);
    trailing.extend_from_slice(&[1, 2, 3]);
    let gone = peer.new_message_from_slice(&[6u8; 256]).unwrap();
    let mut stale = Vec::new();
    encode_single(&gone.record(), 0, &mut stale);
    drop(gone);
    let frames = vec![
        ("empty", vec![]),
        ("two bytes 04ff", vec![0x04, 0xff]),
        ("another version", vec![VERSION.wrapping_add(9), 1, 0, 0]),
        ("an unknown record type", vec![VERSION, 0x77, 0, 0, 0, 0, 0, 0]),
        ("text from a zeromq peer", b"hello from a zeromq peer".to_vec()),
        ("trailing bytes", trailing),
        ("an unknown segment", enc(77, offset, size)),
        ("a size beyond the segment", enc(segment, offset, 1 << 40)),
        ("not a block start", enc(segment, offset + 16, size)),
        ("an offset that overflows", enc(segment, u64::MAX - 15, size)),
        ("a forged record of a live block (no ticket)", enc(segment, offset, size)),
        ("a stale record", stale),
        ("a multipart header claiming 268 M parts", vec![2, 3, 0, 0, 0xff, 0xff, 0xff, 0x0f]),
    ];
    drop(real);
    frames
}

/// The rogue peer's transports and socket: kept until its frames were seen, so that none is lost
/// with a socket closed too early.
type Rogue = (fairmq_shm::Transport, fairmq::Transport, fairmq::Socket);

/// Sends every bad frame to `address` from a plain ZeroMQ dealer of the session (it presents the
/// session's password, as a local process of the session can).
fn send_bad_frames(s: &Session, address: &str) -> Rogue {
    let peer = shm_transport(s, "rogue-shm");
    let raw = session_transport(s, TransportKind::Zeromq, |_| {});
    let rogue = raw.socket(SocketType::Dealer, "rogue").expect("socket");
    rogue.as_zeromq().expect("a zeromq socket").require_password(&peer.connect_password());
    rogue.attach(address, &fairmq_zmq::AttachOptions::new(Some(Method::Connect))).expect("attach");
    for (what, frame) in bad_frames(&peer) {
        let mut m = fairmq_zmq::Message::from_slice(&frame);
        rogue.as_zeromq().expect("a zeromq socket").send(&mut m, 10_000).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    (peer, raw, rogue)
}

#[test]
fn every_refused_frame_is_skipped_and_a_relay_topology_keeps_running() {
    let s = Session::new();
    let (a, b) = (s.ipc("sampler-proxy"), s.ipc("proxy-sink"));
    let max = REAL.to_string();
    let mut sink = launch(
        SINK,
        "sink",
        &s,
        &[
            "--max-iterations",
            &max,
            "--channel-config",
            &format!("name=data,type=pull,method=bind,address={b},rateLogging=0"),
        ],
    );
    let mut proxy = launch(
        PROXY,
        "proxy",
        &s,
        &[
            "--channel-config",
            &format!("name=data-in,type=pull,method=bind,address={a},rateLogging=0"),
            &format!("name=data-out,type=push,method=connect,address={b},rateLogging=0"),
        ],
    );
    sink.expect("READY ---> RUNNING");
    proxy.expect("READY ---> RUNNING");
    // Into the proxy's input and the sink's input alike.
    let rogues = [send_bad_frames(&s, &a), send_bad_frames(&s, &b)];
    // Every frame was refused (an error line each, or a summary counting them) before real
    // traffic starts: the devices went on receiving.
    let refused = |p: &mut Proc| {
        p.drain();
        p.count("[ERROR]")
    };
    let deadline = std::time::Instant::now() + GENEROUS;
    while refused(&mut proxy) == 0 || refused(&mut sink) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no refusal logged:\n{}\n{}",
            proxy.seen.join("\n"),
            sink.seen.join("\n")
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(rogues);
    let mut sampler = launch(
        SAMPLER,
        "sampler",
        &s,
        &[
            "--msg-size",
            "1000",
            "--max-iterations",
            &max,
            "--channel-config",
            &format!("name=data,type=push,method=connect,address={a},rateLogging=0"),
        ],
    );
    assert_eq!(sink.wait().code(), Some(0), "{}", sink.seen.join("\n"));
    assert_eq!(sampler.wait().code(), Some(0), "{}", sampler.seen.join("\n"));
    assert!(sink.saw(&format!("Received {REAL} messages")), "every real message: {}", sink.seen.join("\n"));
    proxy.signal(Signal::SIGTERM as i32);
    assert_eq!(proxy.wait().code(), Some(0), "{}", proxy.seen.join("\n"));
    for (name, p) in [("sink", &sink), ("proxy", &proxy), ("sampler", &sampler)] {
        assert!(!p.saw("---> ERROR"), "{name} went to ERROR:\n{}", p.seen.join("\n"));
    }
    // The proxy left RUNNING only when it was told to (a failed receive would have ended its run).
    let at = |text: &str| proxy.seen.iter().position(|l| l.contains(text));
    let (told, left) = (at("shutdown request"), at("RUNNING ---> READY"));
    assert!(told.is_some() && told < left, "the proxy left RUNNING by itself:\n{}", proxy.seen.join("\n"));
    assert_eq!(s.objects(), Vec::<String>::new(), "shared memory left behind");
}
