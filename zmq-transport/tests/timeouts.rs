//! Timeouts return -2 and leave the message with the caller (FairMQ's TransferTimeout test).

mod common;
use common::*;
use fairmq_zmq::{AttachOptions, Message, Method, SocketType, TransferCode, TransferError, Transport};
use std::time::{Duration, Instant};

fn is_timeout(r: Result<usize, TransferError>) -> bool {
    matches!(r, Err(TransferError::Timeout))
}

#[test]
fn unconnected_channels_time_out_and_keep_messages() {
    let t = Transport::new("timeout").unwrap();
    let place = Place::new(Proto::Ipc);
    let push = t.socket(SocketType::Push, "out").unwrap();
    let pull = t.socket(SocketType::Pull, "in").unwrap();
    push.attach(&place.address, &AttachOptions::new(Some(Method::Bind))).unwrap();
    let place2 = Place::new(Proto::Ipc);
    pull.attach(&place2.address, &AttachOptions::new(Some(Method::Bind))).unwrap();

    for timeout in [0, 200] {
        let start = Instant::now();
        let mut m = Message::from_slice(b"keep me");
        assert!(is_timeout(push.send(&mut m, timeout)));
        assert_eq!(m.data(), b"keep me", "a timed-out send leaves the message untouched");

        let mut parts1 = vec![Message::from_slice(b"p0")];
        assert!(is_timeout(push.send_parts(&mut parts1, timeout)));
        let mut parts2 = vec![Message::from_slice(b"p0"), Message::from_slice(b"p1")];
        assert!(is_timeout(push.send_parts(&mut parts2, timeout)));
        assert_eq!(parts2[0].data(), b"p0");
        assert_eq!(parts2[1].data(), b"p1");

        let mut r = Message::from_slice(b"old");
        assert!(is_timeout(pull.receive(&mut r, timeout)));
        assert_eq!(r.data(), b"old", "a timed-out receive leaves the target untouched");
        let mut rp = Vec::new();
        assert!(is_timeout(pull.receive_parts(&mut rp, timeout)));
        assert!(rp.is_empty());

        if timeout > 0 {
            // Five transfers of 200 ms each: the timeout was really waited (lower bound only).
            assert!(start.elapsed() >= Duration::from_millis(5 * 200));
        }
    }
    assert_eq!(push.counters().messages_tx, 0, "failed transfers are not counted");
    assert_eq!(pull.counters().messages_rx, 0);
    assert_eq!(TransferError::Timeout.code(), TransferCode::Timeout);
    assert_eq!(TransferCode::Timeout as i32, -2);
}

#[test]
fn a_kept_message_can_be_sent_later() {
    let t = Transport::new("later").unwrap();
    let place = Place::new(Proto::Ipc);
    let push = t.socket(SocketType::Push, "out").unwrap();
    let bound = push.attach(&place.address, &AttachOptions::new(Some(Method::Bind))).unwrap();
    let mut m = Message::from_vec(vec![9u8; 4096]);
    assert!(is_timeout(push.send(&mut m, 50)));
    let pull = t.socket(SocketType::Pull, "in").unwrap();
    pull.connect(&bound).unwrap();
    assert_eq!(push.send(&mut m, LONG).unwrap(), 4096);
    let mut r = Message::new();
    pull.receive(&mut r, LONG).unwrap();
    assert_eq!(r.data(), &[9u8; 4096][..]);
}
