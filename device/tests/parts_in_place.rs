//! A device's multipart on a link of either transport: sent from the device's own vector where
//! its parts lie (parts of the other transport made the link's first), received into the
//! device's vector after what it held, and refused whole by a socket handed a part of the other
//! transport directly.

mod common;
use common::*;
use fairmq::{Message, Socket, SocketType, TransferError, Transport, TransportKind};
use fairmq_zmq::Method;

/// A PUSH connected to a PULL of transport `kind` (`link`), and a transport of the other kind
/// (`other`), of session `s`.
struct Link {
    link: Transport,
    other: Transport,
    push: Socket,
    pull: Socket,
}

impl Link {
    fn new(s: &Session, kind: TransportKind) -> Link {
        let shm = session_transport(s, TransportKind::Shmem, |_| {});
        let zmq = session_transport(s, TransportKind::Zeromq, |_| {});
        let (link, other) = if kind == TransportKind::Shmem { (shm, zmq) } else { (zmq, shm) };
        let address = s.ipc("parts");
        let pull = attached_socket(&link, SocketType::Pull, &address, Method::Bind);
        let push = attached_socket(&link, SocketType::Push, &address, Method::Connect);
        Link { link, other, push, pull }
    }
}

const KINDS: [TransportKind; 2] = [TransportKind::Shmem, TransportKind::Zeromq];

fn bytes(parts: &[Message]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.data().to_vec()).collect()
}

#[test]
fn a_multipart_with_a_part_of_the_other_transport_crosses_a_link_whole_and_lands_after_what_was_held() {
    for kind in KINDS {
        let s = Session::new();
        let l = Link::new(&s, kind);
        let mut parts = vec![
            l.link.new_simple_message(b"one").unwrap(),
            l.other.new_simple_message(b"two!").unwrap(),
            l.link.new_message(),
        ];
        assert_eq!(l.push.send_parts(&mut parts, 5000, &l.link).unwrap(), 7, "{kind:?}");
        // Sent where they lay: three messages of the link's transport, emptied by the send.
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.kind() == kind && p.size() == 0), "{kind:?}");

        let mut got = vec![l.link.new_simple_message(b"held").unwrap()];
        assert_eq!(l.pull.receive_parts(&mut got, 5000).unwrap(), 7, "{kind:?}");
        assert_eq!(bytes(&got), [b"held".to_vec(), b"one".to_vec(), b"two!".to_vec(), Vec::new()]);
        assert!(got.iter().all(|p| p.kind() == kind), "{kind:?}");
    }
}

/// What the socket under `l.push` says, handed `parts` directly (past the device's making every
/// part the socket's transport).
fn send_directly(l: &Link, parts: &mut [Message]) -> Result<usize, TransferError> {
    match &l.push {
        Socket::Shmem(push) => push.send_parts_of(parts, 1000),
        Socket::Zeromq(push) => push.send_parts_of(parts, 1000),
    }
}

#[test]
fn a_socket_refuses_a_multipart_with_a_part_of_the_other_transport_and_leaves_it_as_it_was() {
    for kind in KINDS {
        let s = Session::new();
        let l = Link::new(&s, kind);
        let mut parts = vec![l.link.new_simple_message(b"a").unwrap(), l.other.new_simple_message(b"b").unwrap()];
        let other = parts[1].kind();
        let e = send_directly(&l, &mut parts).unwrap_err();
        assert!(matches!(e, TransferError::Transport(_)), "{kind:?}: {e:?}");
        let says = if kind == TransportKind::Shmem { "not a shared-memory message" } else { "not a zeromq message" };
        assert!(e.to_string().contains(says), "{e}");
        assert_eq!(bytes(&parts), [b"a".to_vec(), b"b".to_vec()]);
        assert_eq!([parts[0].kind(), parts[1].kind()], [kind, other]);

        // Nothing left: the receiver times out, and the same parts go once made the link's.
        let mut got = Vec::new();
        assert!(matches!(l.pull.receive_parts(&mut got, 200), Err(TransferError::Timeout)), "{kind:?}");
        assert!(got.is_empty());
        assert_eq!(l.push.send_parts(&mut parts, 5000, &l.link).unwrap(), 2);
        assert_eq!(l.pull.receive_parts(&mut got, 5000).unwrap(), 2);
        assert_eq!(bytes(&got), [b"a".to_vec(), b"b".to_vec()]);
    }
}

#[test]
fn a_multipart_with_a_part_of_the_other_transport_crosses_a_shmem_push_without_lanes_whole() {
    // Records on the ZeroMQ socket, a ticket each (the PUSH's routing), not through a lane.
    let s = Session::new();
    let shm = session_transport(&s, TransportKind::Shmem, |p| p.set("shm-lanes", false));
    let zmq = session_transport(&s, TransportKind::Zeromq, |_| {});
    let address = s.ipc("no-lanes");
    let pull = attached_socket(&shm, SocketType::Pull, &address, Method::Bind);
    let push = attached_socket(&shm, SocketType::Push, &address, Method::Connect);
    let mut parts = vec![zmq.new_simple_message(b"first").unwrap(), shm.new_simple_message(b"2nd").unwrap()];
    assert_eq!(push.send_parts(&mut parts, 5000, &shm).unwrap(), 8);
    assert!(parts.iter().all(|p| p.kind() == TransportKind::Shmem && p.size() == 0));
    let mut got = Vec::new();
    assert_eq!(pull.receive_parts(&mut got, 5000).unwrap(), 8);
    assert_eq!(bytes(&got), [b"first".to_vec(), b"2nd".to_vec()]);
}

#[test]
fn a_published_multipart_with_a_part_of_the_other_transport_reaches_a_subscriber_whole() {
    for kind in KINDS {
        let s = Session::new();
        let shm = session_transport(&s, TransportKind::Shmem, |_| {});
        let zmq = session_transport(&s, TransportKind::Zeromq, |_| {});
        let (link, other) = if kind == TransportKind::Shmem { (shm, zmq) } else { (zmq, shm) };
        let address = s.ipc("pubsub");
        let publisher = attached_socket(&link, SocketType::Pub, &address, Method::Bind);
        let sub = attached_socket(&link, SocketType::Sub, &address, Method::Connect);
        // The subscription reaches the publisher a moment after the connect: publish until one
        // arrives.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut got = Vec::new();
        loop {
            assert!(std::time::Instant::now() < deadline, "{kind:?}: the subscriber never got a message");
            publisher.send(&mut link.new_simple_message(b"warm-up").unwrap(), 5000, &link).unwrap();
            if sub.receive_parts(&mut got, 20).is_ok() {
                break;
            }
        }
        let mut parts = vec![other.new_simple_message(b"p").unwrap(), link.new_simple_message(b"qq").unwrap()];
        assert_eq!(publisher.send_parts(&mut parts, 5000, &link).unwrap(), 3, "{kind:?}");
        // Warm-ups still on their way come first.
        loop {
            got.clear();
            sub.receive_parts(&mut got, 5000).unwrap();
            if bytes(&got) != [b"warm-up".to_vec()] {
                break;
            }
        }
        assert_eq!(bytes(&got), [b"p".to_vec(), b"qq".to_vec()], "{kind:?}");
    }
}
