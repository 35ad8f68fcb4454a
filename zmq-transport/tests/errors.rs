//! Bad input gives clear errors, never a panic.

use fairmq_zmq::{
    validate_address, AddressProblem, AttachOptions, Method, SocketError, SocketType, Transport, TransportKind,
};

#[test]
fn bad_addresses_are_rejected_with_fairmq_messages() {
    let t = Transport::new("err").unwrap();
    let s = t.socket(SocketType::Push, "s").unwrap();
    let bind = AttachOptions::new(Some(Method::Bind));
    for (addr, problem) in [
        ("bla", AddressProblem::MissingProtocol),
        ("tcp://localhost", AddressProblem::MissingPort),
        ("ipc://", AddressProblem::EmptyIpc),
        ("inproc://", AddressProblem::EmptyInproc),
        ("unspecified", AddressProblem::Unspecified),
        ("", AddressProblem::Unspecified),
        ("tcp://a:1,verbs://x", AddressProblem::MissingProtocol),
    ] {
        match s.attach(addr, &bind) {
            Err(SocketError::InvalidAddress { problem: p, .. }) => assert_eq!(p, problem, "{addr}"),
            other => panic!("{addr}: {other:?}"),
        }
        assert!(validate_address(addr).is_err());
    }
    assert!(validate_address("tcp://localhost:5555").is_ok());
}

#[test]
fn missing_method_unresolvable_host_and_refused_endpoints() {
    let t = Transport::new("err2").unwrap();
    let s = t.socket(SocketType::Push, "s").unwrap();
    let e = s.attach("tcp://127.0.0.1:5555", &AttachOptions::new(None)).unwrap_err();
    assert!(matches!(e, SocketError::InvalidMethod { .. }), "{e}");
    let e = s.attach("tcp://no-such-host.invalid:5555", &AttachOptions::new(Some(Method::Connect))).unwrap_err();
    assert!(matches!(e, SocketError::Resolve { .. }), "{e}");
    let e = s.attach("tcp://*:5555", &AttachOptions::new(Some(Method::Connect))).unwrap_err();
    assert!(matches!(e, SocketError::Connect { .. }), "{e}");
    let e = s.bind("nonsense").unwrap_err();
    assert!(e.to_string().starts_with("Failed binding socket err2.s.push, address: nonsense"), "{e}");
}

#[test]
fn bad_socket_types_and_transports() {
    assert_eq!("dealer".parse::<SocketType>().unwrap(), SocketType::Dealer);
    let e = "stream".parse::<SocketType>().unwrap_err();
    assert_eq!(e.to_string(), "Invalid channel type: 'stream'");
    let e = "ofi".parse::<TransportKind>().unwrap_err();
    assert_eq!(e.to_string(), "Unknown transport provided: ofi");
    assert!("bind".parse::<Method>().is_ok() && "both".parse::<Method>().is_err());
}

#[test]
fn wrong_pattern_use_is_an_error_not_a_panic() {
    let t = Transport::new("err3").unwrap();
    let pull = t.socket(SocketType::Pull, "in").unwrap();
    let e = pull.send(&mut fairmq_zmq::Message::from_slice(b"x"), 0).unwrap_err();
    assert_eq!(e.code(), fairmq_zmq::TransferCode::Error, "{e}");
    let req = t.socket(SocketType::Req, "req").unwrap();
    let e = req.receive(&mut fairmq_zmq::Message::new(), 0).unwrap_err();
    assert_eq!(e.code(), fairmq_zmq::TransferCode::Error, "receive before send on REQ: {e}");
}
