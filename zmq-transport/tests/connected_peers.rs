//! FairMQ's `GetNumberOfConnectedPeers`: connections made and accepted, less those that ended, as
//! ZeroMQ's monitor reports them (issue 18). Counting as peers connect and leave is checked on both
//! transports in the fairmq crate's conformance suite; here, the count never lags a message.

mod common;
use common::*;
use fairmq_zmq::{SocketType, Transport};

/// The count is never behind a message: once the first message of a peer is received, its
/// connection is counted (ZeroMQ reports the connection before the peer's first message arrives).
/// Each round is a fresh socket; with a count kept only as the monitor thread gets to it, some
/// rounds read 0 here.
#[test]
fn i18_peer_counted_by_the_time_its_first_message_arrives() {
    let t = Transport::new("first").unwrap();
    let other = Transport::new("firsts").unwrap();
    for round in 0..200 {
        let place = Place::new(Proto::Ipc);
        let pull = t.socket(SocketType::Pull, &format!("in{round}")).unwrap();
        let push = other.socket(SocketType::Push, &format!("out{round}")).unwrap();
        link(&pull, &push, &place);
        push.send(&mut fairmq_zmq::Message::from_vec(vec![7; 8]), LONG).unwrap();
        let mut m = fairmq_zmq::Message::new();
        pull.receive(&mut m, LONG).unwrap();
        assert_eq!(pull.number_of_connected_peers(), 1, "round {round}: accepted peer not counted");
        assert_eq!(push.number_of_connected_peers(), 1, "round {round}: connection made not counted");
    }
}
