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
