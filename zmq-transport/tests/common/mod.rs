//! Helpers for the integration tests: unique addresses that leave nothing behind.
#![allow(dead_code)]

use fairmq_zmq::{Socket, SocketType, Transport};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The three protocols every pattern is tested over.
#[derive(Debug, Clone, Copy)]
pub enum Proto {
    Inproc,
    Ipc,
    Tcp,
}

pub const ALL_PROTOS: [Proto; 3] = [Proto::Inproc, Proto::Ipc, Proto::Tcp];

/// A place to bind: ipc paths live in a temporary directory removed on drop.
pub struct Place {
    pub address: String,
    _dir: Option<tempfile::TempDir>,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl Place {
    pub fn new(proto: Proto) -> Place {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        match proto {
            Proto::Inproc => Place { address: format!("inproc://t{}-{n}", std::process::id()), _dir: None },
            Proto::Ipc => {
                let dir = tempfile::tempdir().expect("temp dir");
                let address = format!("ipc://{}/s{n}", dir.path().display());
                Place { address, _dir: Some(dir) }
            }
            // Port chosen by the kernel at bind time: parallel tests never collide.
            Proto::Tcp => Place { address: "tcp://127.0.0.1:*".to_owned(), _dir: None },
        }
    }
}

/// Binds `a`, connects `b` to where `a` actually bound; returns the bound address.
pub fn link(a: &Socket, b: &Socket, place: &Place) -> String {
    let opts = fairmq_zmq::AttachOptions::new(Some(fairmq_zmq::Method::Bind));
    let bound = a.attach(&place.address, &opts).expect("bind");
    b.connect(&bound).expect("connect");
    bound
}

/// A pair of linked sockets of one transport: `a` binds, `b` connects.
pub fn pair_of(t: &Transport, a: SocketType, b: SocketType, proto: Proto) -> (Socket, Socket, Place) {
    let place = Place::new(proto);
    let sa = t.socket(a, "a").unwrap();
    let sb = t.socket(b, "b").unwrap();
    link(&sa, &sb, &place);
    (sa, sb, place)
}

/// Generous timeout for transfers that must succeed (ms).
pub const LONG: i32 = 10_000;
