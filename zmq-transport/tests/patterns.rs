//! Every socket pattern over inproc, ipc and tcp, with real sockets.

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
fn pair_both_directions() {
    let t = Transport::new("pair").unwrap();
    for proto in ALL_PROTOS {
        let (a, b, _p) = pair_of(&t, SocketType::Pair, SocketType::Pair, proto);
        send_str(&b, "ping");
        assert_eq!(recv_str(&a), "ping");
        send_str(&a, "pong");
        assert_eq!(recv_str(&b), "pong");
    }
}

#[test]
fn push_pull_in_order() {
    let t = Transport::new("pushpull").unwrap();
    for proto in ALL_PROTOS {
        let (pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, proto);
        for i in 0..100 {
            send_str(&push, &format!("m{i}"));
        }
        for i in 0..100 {
            assert_eq!(recv_str(&pull), format!("m{i}"), "{proto:?}");
        }
    }
}

#[test]
fn pub_sub_subscribes_to_everything() {
    let t = Transport::new("pubsub").unwrap();
    for proto in ALL_PROTOS {
        let (publ, sub, _p) = pair_of(&t, SocketType::Pub, SocketType::Sub, proto);
        // A subscription reaches the publisher asynchronously: publish until the first one arrives.
        let mut first = Message::new();
        let mut got = None;
        for _ in 0..200 {
            send_str(&publ, "tick");
            if sub.receive(&mut first, 50).is_ok() {
                got = Some(first.data().to_vec());
                break;
            }
        }
        assert_eq!(got.as_deref(), Some(&b"tick"[..]), "{proto:?}: no topic prefix needed");
    }
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
fn req_rep_one_rep_two_req() {
    let t = Transport::new("reqrep").unwrap();
    for proto in ALL_PROTOS {
        let place = Place::new(proto);
        let rep = t.socket(SocketType::Rep, "rep").unwrap();
        let req1 = t.socket(SocketType::Req, "req1").unwrap();
        let req2 = t.socket(SocketType::Req, "req2").unwrap();
        let bound = link(&rep, &req1, &place);
        req2.connect(&bound).unwrap();
        for (req, text) in [(&req1, "one"), (&req2, "two")] {
            send_str(req, text);
            let got = recv_str(&rep);
            send_str(&rep, &format!("re:{got}"));
            assert_eq!(recv_str(req), format!("re:{text}"));
        }
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
fn zero_size_messages_travel() {
    let t = Transport::new("zero").unwrap();
    let (pull, push, _p) = pair_of(&t, SocketType::Pull, SocketType::Push, Proto::Ipc);
    let mut m = Message::new();
    assert!(m.data_ptr().is_null());
    assert_eq!(push.send(&mut m, LONG).unwrap(), 0);
    let mut r = Message::from_slice(b"old content");
    assert_eq!(pull.receive(&mut r, LONG).unwrap(), 0);
    assert!(r.is_empty() && r.data_ptr().is_null());
}

#[test]
fn several_endpoints_on_one_socket() {
    let t = Transport::new("multi").unwrap();
    let (p1, p2) = (Place::new(Proto::Ipc), Place::new(Proto::Ipc));
    let pull = t.socket(SocketType::Pull, "in").unwrap();
    let bind = fairmq_zmq::AttachOptions::new(Some(fairmq_zmq::Method::Bind));
    let both = format!("{},{}", p1.address, p2.address);
    assert_eq!(pull.attach(&both, &bind).unwrap(), both);
    let connect = fairmq_zmq::AttachOptions::new(Some(fairmq_zmq::Method::Connect));
    let (a, b) = (t.socket(SocketType::Push, "a").unwrap(), t.socket(SocketType::Push, "b").unwrap());
    a.attach(&p1.address, &connect).unwrap();
    b.attach(&format!(">{}", p2.address), &connect).unwrap();
    send_str(&a, "via1");
    send_str(&b, "via2");
    let mut got = [recv_str(&pull), recv_str(&pull)];
    got.sort();
    assert_eq!(got, ["via1".to_owned(), "via2".to_owned()]);
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
