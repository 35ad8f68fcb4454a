//! Helpers for the shared-memory tests: a session guard that removes every object of the session
//! (also when a test fails), and peer processes that are killed and reaped when dropped.
#![allow(dead_code)]

use fairmq_shm::testing::session::{session_objects, unique_session, SessionGuard};
use fairmq_shm::{Names, ShmConfig, Transport};
use fairmq_zmq::{AttachOptions, Method, SocketType};
use std::process::Command;

/// A unique session; its shared-memory objects are removed on drop.
pub struct Session {
    pub name: String,
    names: Names,
    _dir: tempfile::TempDir,
    _guard: SessionGuard,
}

impl Session {
    pub fn new(tag: &str) -> Session {
        let name = unique_session(&format!("t-{tag}"));
        let names = Names::new(&fairmq_shm::shm_id(&name));
        Session { _guard: SessionGuard::new(&name), name, names, _dir: tempfile::tempdir().unwrap() }
    }

    pub fn config(&self, id: &str) -> ShmConfig {
        let mut c = ShmConfig::new(id, &self.name);
        c.segment_size = 64 << 20;
        c
    }

    pub fn transport(&self, id: &str) -> Transport {
        Transport::new(&self.config(id)).expect("shm transport")
    }

    /// An ipc address in a private temporary directory.
    pub fn ipc(&self, what: &str) -> String {
        format!("ipc://{}/{what}", self._dir.path().display())
    }

    /// Names of this session's objects currently in /dev/shm.
    pub fn objects(&self) -> Vec<String> {
        session_objects(&self.name)
    }

    pub fn names(&self) -> &Names {
        &self.names
    }
}

use fairmq_shm::testing::process::Start;
/// A peer process; killed and reaped on drop.
#[allow(unused_imports)] // each test binary uses its own part
pub use fairmq_shm::testing::process::{run, wait_until, Process as Peer, GENEROUS};

pub const PEER: &str = env!("CARGO_BIN_EXE_fairmq-shm-peer");

pub fn peer(args: &[&str]) -> Peer {
    Peer::start(Command::new(PEER).args(args), Start::default())
}

/// A peer running as user and group `id` (only root may start one).
pub fn peer_as(id: u32, args: &[&str]) -> Peer {
    use std::os::unix::process::CommandExt;
    Peer::start(Command::new(PEER).args(args).uid(id).gid(id), Start::default())
}

/// Whether this process runs as root; if not, says which test is skipped and why.
pub fn root_or_skip(test: &str, needs: &str) -> bool {
    let root = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap_or(false);
    if !root {
        println!("skipped {test}: it needs root ({needs})");
    }
    root
}

/// Makes the plain ZeroMQ socket `s` present the session's password where it connects, as a
/// process of the session does (a local peer that can map the session but does not follow the
/// protocol); without it, no socket of the session lets it connect.
pub fn insider(t: &fairmq_shm::Transport, s: &zmq::Socket) {
    s.set_plain_username(Some("fairmq-rs")).expect("ZMQ_PLAIN_USERNAME");
    s.set_plain_password(Some(&t.connect_password())).expect("ZMQ_PLAIN_PASSWORD");
}

/// The `received <messages> <bytes>` report of a receiving peer.
pub fn received(peer: &mut Peer) -> (u64, u64) {
    let line = peer.expect_line("received ");
    let mut it = line.split_whitespace().skip(1).map(|v| v.parse::<u64>().unwrap());
    (it.next().unwrap(), it.next().unwrap())
}

/// Two sockets of `t`, the first bound to `address`, the second connected to it.
pub fn linked(
    t: &fairmq_shm::Transport,
    a: SocketType,
    b: SocketType,
    address: &str,
) -> (fairmq_shm::Socket, fairmq_shm::Socket) {
    let sa = t.socket(a, "a").unwrap();
    let sb = t.socket(b, "b").unwrap();
    let bound = sa.attach(address, &AttachOptions::new(Some(Method::Bind))).unwrap();
    sb.connect(&bound).unwrap();
    (sa, sb)
}

/// A message of `t` of `size` bytes, sequence number `seq`, from sender 0, as the peer's
/// receiver checks it.
pub fn peer_message(t: &fairmq_shm::Transport, seq: u64, size: usize) -> fairmq_shm::Message {
    let mut m = t.new_message_with_size(size).unwrap();
    let d = m.data_mut().unwrap();
    d[..8].copy_from_slice(&seq.to_le_bytes());
    d[8..16].copy_from_slice(&0u64.to_le_bytes());
    for (i, b) in d.iter_mut().enumerate().skip(16) {
        *b = (seq.wrapping_mul(31).wrapping_add(i as u64)) as u8;
    }
    m
}
