//! Multipart messages: one ZeroMQ multipart per FairMQ Parts, frame for frame.

mod common;
use common::*;
use fairmq_zmq::{Message, SocketType, Transport};
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

/// A single receive of a multipart takes it frame by frame (ZeroMQ behaviour; the shmem transport
/// refuses it). Empty and one-part multiparts are in the fairmq crate's conformance suite.
#[test]
fn a_single_receive_takes_a_multipart_frame_by_frame() {
    let t = Transport::new("mix").unwrap();
    let (pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Ipc);
    let mut m = Message::new();
    push.send_parts(&mut [Message::from_slice(b"a"), Message::from_slice(b"b")], LONG).unwrap();
    pull.receive(&mut m, LONG).unwrap();
    assert_eq!(m.data(), b"a");
    pull.receive(&mut m, LONG).unwrap();
    assert_eq!(m.data(), b"b");
}
