//! FairMQ's `GetNumberOfConnectedPeers`: connections made and accepted, less those that ended, as
//! ZeroMQ's monitor reports them (issue 18).

mod common;
use common::*;
use fairmq_zmq::{AttachOptions, Method, SocketType, Transport};
use std::time::{Duration, Instant};

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

#[test]
fn peers_are_counted_as_they_connect_and_leave() {
    // Not inproc: libzmq's monitor reports no events for inproc connections (FairMQ counts 0 too).
    for proto in [Proto::Ipc, Proto::Tcp] {
        let t = Transport::new("peers").unwrap();
        let other = Transport::new("others").unwrap();
        let place = Place::new(proto);
        let pull = t.socket(SocketType::Pull, "in").unwrap();
        assert_eq!(pull.number_of_connected_peers(), 0, "{proto:?}: nobody yet");
        let at = pull.attach(&place.address, &AttachOptions::new(Some(Method::Bind))).unwrap();
        let mut pushes: Vec<_> = (0..3)
            .map(|i| {
                let p = other.socket(SocketType::Push, &format!("out{i}")).unwrap();
                p.connect(&at).unwrap();
                p
            })
            .collect();
        assert_eq!(settles(3, || pull.number_of_connected_peers()), 3, "{proto:?}: three accepted");
        assert_eq!(settles(1, || pushes[0].number_of_connected_peers()), 1, "{proto:?}: one made");
        pushes.truncate(1);
        assert_eq!(settles(1, || pull.number_of_connected_peers()), 1, "{proto:?}: two left");
    }
}

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
