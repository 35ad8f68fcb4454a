//! Auto-bind: a tcp bind that fails because the port is taken retries random ports of the range.

mod common;
use fairmq_zmq::{AttachOptions, Method, SocketError, SocketType, Transport};

fn port_of(address: &str) -> u16 {
    address.rsplit_once(':').unwrap().1.parse().unwrap()
}

fn bind_opts(min: u16, max: u16, auto_bind: bool) -> AttachOptions {
    AttachOptions { method: Some(Method::Bind), auto_bind, port_range_min: min, port_range_max: max }
}

#[test]
fn taken_port_is_replaced_by_one_in_range() {
    let t = Transport::new("auto").unwrap();
    let first = t.socket(SocketType::Pull, "first").unwrap();
    let taken = first.attach("tcp://127.0.0.1:*", &bind_opts(22000, 23000, true)).unwrap();
    let second = t.socket(SocketType::Pull, "second").unwrap();
    let got = second.attach(&taken, &AttachOptions::new(Some(Method::Bind))).unwrap();
    let port = port_of(&got);
    assert!((22000..=23000).contains(&port), "{got}");
    assert_ne!(got, taken);
    assert!(got.starts_with("tcp://127.0.0.1:"), "host kept, port replaced: {got}");
    // The reported address really is bound: a peer can connect and deliver.
    let push = t.socket(SocketType::Push, "p").unwrap();
    push.connect(&got).unwrap();
    push.send(&mut fairmq_zmq::Message::from_slice(b"hi"), common::LONG).unwrap();
    let mut m = fairmq_zmq::Message::new();
    second.receive(&mut m, common::LONG).unwrap();
    assert_eq!(m.data(), b"hi");
}

#[test]
fn modifier_is_kept_and_host_names_are_resolved() {
    let t = Transport::new("auto2").unwrap();
    let s = t.socket(SocketType::Pull, "s").unwrap();
    let got = s.attach("@tcp://localhost:*", &AttachOptions::new(Some(Method::Connect))).unwrap();
    assert!(got.starts_with("@tcp://127.0.0.1:"), "{got}");
}

#[test]
fn without_auto_bind_or_range_the_bind_fails_clearly() {
    let t = Transport::new("auto3").unwrap();
    let first = t.socket(SocketType::Pull, "first").unwrap();
    let taken = first.attach("tcp://127.0.0.1:*", &bind_opts(22000, 23000, true)).unwrap();
    let s = t.socket(SocketType::Pull, "s").unwrap();
    let e = s.attach(&taken, &bind_opts(22000, 23000, false)).unwrap_err();
    assert!(matches!(e, SocketError::Bind { source: zmq::Error::EADDRINUSE, .. }), "{e}");
    let e = s.attach(&taken, &bind_opts(23000, 22000, true)).unwrap_err();
    assert!(matches!(e, SocketError::InvalidPortRange { min: 23000, max: 22000 }), "{e}");
    // A range of one port that is taken: every attempt fails.
    let p = port_of(&taken);
    let e = s.attach(&taken, &bind_opts(p, p, true)).unwrap_err();
    assert!(matches!(e, SocketError::AutoBindExhausted { attempts: 1000, .. }), "{e}");
}

#[test]
fn ipc_binds_never_auto_bind() {
    let t = Transport::new("auto4").unwrap();
    let s = t.socket(SocketType::Pull, "s").unwrap();
    let e = s.attach("ipc:///nonexistent-dir-fairmq/x", &AttachOptions::new(Some(Method::Bind))).unwrap_err();
    assert!(matches!(e, SocketError::Bind { .. }), "{e}");
}
