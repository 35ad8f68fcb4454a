//! Multipart messages: one ZeroMQ multipart per FairMQ Parts, frame for frame.

mod common;
use common::*;
use fairmq_zmq::{Message, SocketType, TransferCode, TransferError, Transport};
use proptest::prelude::*;

fn round_trip(t: &Transport, proto: Proto, sizes: &[usize]) {
    let (pull, push, _p) = pair_of(t, SocketType::Pull, SocketType::Push, proto);
    let payloads: Vec<Vec<u8>> =
        sizes.iter().enumerate().map(|(i, &n)| (0..n).map(|j| (i * 31 + j) as u8).collect()).collect();
    let mut parts: Vec<Message> = payloads.iter().map(|p| Message::from_slice(p)).collect();
    let total: usize = sizes.iter().sum();
    assert_eq!(push.send_parts(&mut parts, LONG).unwrap(), total);
    let mut got = vec![Message::from_slice(b"kept")];
    assert_eq!(pull.receive_parts(&mut got, LONG).unwrap(), total);
    assert_eq!(got.len(), sizes.len() + 1, "receive appends to the vector");
    assert_eq!(got[0].data(), b"kept");
    for (m, p) in got[1..].iter().zip(&payloads) {
        assert_eq!(m.data(), &p[..]);
    }
    assert_eq!(push.counters().messages_tx, 1, "a multipart counts as one message");
    assert_eq!(pull.counters().bytes_rx, total as u64);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_multiparts_round_trip(sizes in prop::collection::vec(prop_oneof![Just(0usize), 0usize..64, 0usize..70_000], 1..12)) {
        let t = Transport::new("prop").unwrap();
        round_trip(&t, Proto::Inproc, &sizes);
        round_trip(&t, Proto::Ipc, &sizes);
    }
}

#[test]
fn multipart_over_tcp() {
    let t = Transport::new("mptcp").unwrap();
    round_trip(&t, Proto::Tcp, &[0, 10, 100_000, 0, 1]);
}

#[test]
fn empty_multipart_is_refused_with_code_minus_one() {
    let t = Transport::new("empty").unwrap();
    let (_pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Inproc);
    let err = push.send_parts(&mut [], LONG).unwrap_err();
    assert!(matches!(err, TransferError::EmptyMultipart));
    assert_eq!(err.code(), TransferCode::Error);
    assert_eq!(push.counters().messages_tx, 0);
}

#[test]
fn one_part_is_a_plain_frame_and_single_receive_takes_one_frame() {
    let t = Transport::new("mix").unwrap();
    let (pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Ipc);
    // 1-part Parts == single message on the wire.
    push.send_parts(&mut [Message::from_slice(b"solo")], LONG).unwrap();
    let mut m = Message::new();
    pull.receive(&mut m, LONG).unwrap();
    assert_eq!(m.data(), b"solo");
    // A single receive of a 2-frame multipart yields the frames one by one (ZeroMQ behaviour).
    push.send_parts(&mut [Message::from_slice(b"a"), Message::from_slice(b"b")], LONG).unwrap();
    pull.receive(&mut m, LONG).unwrap();
    assert_eq!(m.data(), b"a");
    pull.receive(&mut m, LONG).unwrap();
    assert_eq!(m.data(), b"b");
    // A single message received as Parts is one part.
    push.send(&mut Message::from_slice(b"one"), LONG).unwrap();
    let mut parts = Vec::new();
    pull.receive_parts(&mut parts, LONG).unwrap();
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].data(), b"one");
}
