//! A device's multipart on a shmem link: sent from the device's own vector where its parts lie
//! (parts of the other transport made shmem first), received into the device's vector after
//! what it held, and refused whole by a shmem socket handed a part that is not shmem.

mod common;
use common::*;
use fairmq::{Message, Socket, SocketType, TransferError, Transport, TransportKind};
use fairmq_zmq::Method;

/// A shmem PUSH connected to a shmem PULL of session `s`, with the session's transports.
struct Link {
    shm: Transport,
    zmq: Transport,
    push: Socket,
    pull: Socket,
}

impl Link {
    fn new(s: &Session) -> Link {
        let shm = session_transport(s, TransportKind::Shmem, |_| {});
        let zmq = session_transport(s, TransportKind::Zeromq, |_| {});
        let address = s.ipc("parts");
        let pull = attached_socket(&shm, SocketType::Pull, &address, Method::Bind);
        let push = attached_socket(&shm, SocketType::Push, &address, Method::Connect);
        Link { shm, zmq, push, pull }
    }
}

fn bytes(parts: &[Message]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.data().to_vec()).collect()
}

#[test]
fn a_multipart_with_a_zeromq_part_crosses_a_shmem_link_whole_and_lands_after_what_was_held() {
    let s = Session::new();
    let l = Link::new(&s);
    let mut parts = vec![
        l.shm.new_simple_message(b"one").unwrap(),
        l.zmq.new_simple_message(b"two!").unwrap(),
        l.shm.new_message(),
    ];
    assert_eq!(l.push.send_parts(&mut parts, 5000, &l.shm).unwrap(), 7);
    // Sent where they lay: three shmem messages, emptied by the hand-over.
    assert_eq!(parts.len(), 3);
    assert!(parts.iter().all(|p| p.kind() == TransportKind::Shmem && p.size() == 0));

    let mut got = vec![l.shm.new_simple_message(b"held").unwrap()];
    assert_eq!(l.pull.receive_parts(&mut got, 5000).unwrap(), 7);
    assert_eq!(bytes(&got), [b"held".to_vec(), b"one".to_vec(), b"two!".to_vec(), Vec::new()]);
    assert!(got.iter().all(|p| p.kind() == TransportKind::Shmem));
}

#[test]
fn a_shmem_socket_refuses_a_multipart_with_a_part_that_is_not_shmem_and_leaves_it_as_it_was() {
    let s = Session::new();
    let l = Link::new(&s);
    let Socket::Shmem(push) = &l.push else { panic!("a shmem socket") };
    // Handed straight to the shmem socket, past the device's making every part shmem.
    let mut parts = vec![l.shm.new_simple_message(b"a").unwrap(), l.zmq.new_simple_message(b"b").unwrap()];
    let e = push.send_parts(&mut parts, 1000).unwrap_err();
    assert!(matches!(e, TransferError::Transport(_)), "{e:?}");
    assert!(e.to_string().contains("not a shared-memory message"), "{e}");
    assert_eq!(bytes(&parts), [b"a".to_vec(), b"b".to_vec()]);
    assert_eq!([parts[0].kind(), parts[1].kind()], [TransportKind::Shmem, TransportKind::Zeromq]);

    // Nothing left: the receiver times out, and the same parts go once made shmem.
    let mut got = Vec::new();
    assert!(matches!(l.pull.receive_parts(&mut got, 200), Err(TransferError::Timeout)));
    assert!(got.is_empty());
    assert_eq!(l.push.send_parts(&mut parts, 5000, &l.shm).unwrap(), 2);
    assert_eq!(l.pull.receive_parts(&mut got, 5000).unwrap(), 2);
    assert_eq!(bytes(&got), [b"a".to_vec(), b"b".to_vec()]);
}
