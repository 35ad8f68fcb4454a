//! Patterns the two transports do not share (XPUB/XSUB, ROUTER identities), zero-copy user
//! buffers and receive alignment. PAIR, PUSH/PULL, REQ/REP and PUB/SUB over inproc, ipc and tcp,
//! zero-size messages and several endpoints on one socket are checked on both transports in the
//! fairmq crate's conformance suite.

mod common;
use common::*;
use fairmq_zmq::{Message, SocketType, Transport};

fn send_str(s: &fairmq_zmq::Socket, text: &str) {
    let mut m = Message::from_slice(text.as_bytes());
    assert_eq!(s.send(&mut m, LONG).unwrap(), text.len());
    assert!(m.is_empty(), "a sent message is left empty");
}

fn recv_str(s: &fairmq_zmq::Socket) -> String {
    let mut m = Message::new();
    let n = s.receive(&mut m, LONG).unwrap();
    assert_eq!(n, m.size());
    String::from_utf8(m.data().to_vec()).unwrap()
}

#[test]
fn xpub_xsub_see_subscriptions() {
    let t = Transport::new("xpubxsub").unwrap();
    for proto in ALL_PROTOS {
        let (xpub, xsub, _p) = pair_of(&t, SocketType::XPub, SocketType::XSub, proto);
        // An xsub subscribes by sending a frame: 1 = subscribe, then the topic (empty = all).
        send_str(&xsub, "\u{1}");
        assert_eq!(recv_str(&xpub), "\u{1}", "the publisher sees the subscription");
        send_str(&xpub, "data");
        assert_eq!(recv_str(&xsub), "data");
    }
}

#[test]
fn dealer_router_routes_by_identity() {
    let t = Transport::new("dr").unwrap();
    for proto in ALL_PROTOS {
        let (router, dealer, _p) = pair_of(&t, SocketType::Router, SocketType::Dealer, proto);
        send_str(&dealer, "hello");
        let mut parts = Vec::new();
        router.receive_parts(&mut parts, LONG).unwrap();
        assert_eq!(parts.len(), 2, "identity frame + payload");
        assert_eq!(parts[0].data(), b"dr.b.dealer", "identity is <transport>.<channel>.<type>");
        assert_eq!(parts[1].data(), b"hello");
        let mut reply = vec![Message::from_slice(parts[0].data()), Message::from_slice(b"back")];
        router.send_parts(&mut reply, LONG).unwrap();
        assert_eq!(recv_str(&dealer), "back");
    }
}

#[test]
fn messages_from_user_buffers_arrive_intact() {
    let t = Transport::new("user").unwrap();
    let (pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Inproc);
    let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let mut m = Message::from_vec(payload.clone());
    push.send(&mut m, LONG).unwrap();
    let mut s = Message::from_static(b"static bytes");
    push.send(&mut s, LONG).unwrap();
    let mut r = Message::new();
    pull.receive(&mut r, LONG).unwrap();
    assert_eq!(r.data(), &payload[..]);
    pull.receive(&mut r, LONG).unwrap();
    assert_eq!(r.data(), b"static bytes");
}

#[test]
fn receive_honours_requested_alignment() {
    let t = Transport::new("align").unwrap();
    let (pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Ipc);
    let mut r = Message::with_receive_alignment(64);
    for size in [100usize, 33, 5000] {
        push.send(&mut Message::from_vec(vec![3u8; size]), LONG).unwrap();
        pull.receive(&mut r, LONG).unwrap();
        assert_eq!(r.size(), size);
        assert_eq!(r.data_ptr() as usize % 64, 0, "every receive is realigned, not only the first");
        assert!(r.data().iter().all(|&b| b == 3));
    }
}
