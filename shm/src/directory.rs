//! The session's directory of endpoints: which socket (its transport's owner mark and its number)
//! bound or connected each endpoint, for the sockets whose ZeroMQ socket picks the receiver of a
//! record (PAIR, REQ, REP, DEALER, ROUTER: see `addressee`).
//!
//! Such a sender cannot see whom ZeroMQ hands a record to. When the directory shows exactly one
//! live socket at the other end of its endpoints, that socket is the receiver and the tickets name
//! it: what a killed receiver never claimed goes back to its sender, and what a killed sender left
//! in flight is released by its receiver (see `orphans`). Where several sockets could take it, a
//! ticket names no one, as before.
//!
//! Endpoints are keyed so that both ends agree: a tcp endpoint by its port (a session lives on one
//! host), an ipc one by its absolute path, an inproc one by its name within one transport.
//!
//! | bytes from [`AT`] | content |
//! |---|---|
//! | 0..8 | generation: bumped by every change, so a sender looks again only when it moved |
//! | 8..16 | 1 once a socket could not be listed (full): the directory names nobody any more |
//! | 64.. | [`ENTRIES`] entries of 4 words: key (0: free), owner mark \| role << 32, socket number, 0 |
//!
//! Entries are written and read under the session lock: binds, connects and closes are rare.

use crate::management::{Management, SessionLock};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the directory starts in the management segment (after the region registry).
const AT: usize = 576 << 10;
const ENTRIES: usize = 1024;
const ENTRY_WORDS: usize = 4;
const W_GENERATION: usize = AT / 8;
const W_INCOMPLETE: usize = AT / 8 + 1;
const FIRST: usize = AT / 8 + 8;
const _: () = assert!((FIRST + ENTRIES * ENTRY_WORDS) * 8 <= crate::management::MANAGEMENT_SIZE);

/// How a socket is attached to an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Bind = 1,
    Connect = 2,
}

impl Role {
    fn other(self) -> Role {
        match self {
            Role::Bind => Role::Connect,
            Role::Connect => Role::Bind,
        }
    }
}

/// One endpoint of a socket: its key and how the socket is attached to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attached {
    pub key: u64,
    pub role: Role,
}

/// A socket of the session: its transport's owner mark and its number.
pub(crate) type SocketMark = (u32, u64);

/// The key of `endpoint` (as ZeroMQ was given it, after resolution) for the transport `owner`;
/// `None` for an endpoint the directory cannot name.
pub(crate) fn key(endpoint: &str, owner: u32) -> Option<u64> {
    let (what, name): (&str, String) = if let Some(rest) = endpoint.strip_prefix("tcp://") {
        ("tcp", rest.rsplit_once(':')?.1.parse::<u16>().ok()?.to_string())
    } else if let Some(path) = endpoint.strip_prefix("ipc://") {
        let p = std::path::Path::new(path);
        let abs = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().ok()?.join(p) };
        ("ipc", abs.to_string_lossy().into_owned())
    } else if let Some(name) = endpoint.strip_prefix("inproc://") {
        // Inproc names are per ZeroMQ context, which is per transport.
        ("inproc", format!("{owner}/{name}"))
    } else {
        return None;
    };
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(what.as_bytes());
    h.update([0]);
    h.update(name.as_bytes());
    let k = u64::from_le_bytes(h.finalize()[..8].try_into().expect("a digest is longer than 8 bytes"));
    Some(k | 1)
}

fn words(m: &Management) -> &[AtomicU64] {
    m.words()
}

fn entry(w: &[AtomicU64], i: usize) -> &[AtomicU64] {
    &w[FIRST + i * ENTRY_WORDS..FIRST + (i + 1) * ENTRY_WORDS]
}

/// The directory's generation: a sender whose last look saw this one need not look again.
pub(crate) fn generation(m: &Management) -> u64 {
    words(m)[W_GENERATION].load(Ordering::Acquire)
}

fn bump(lock: &SessionLock<'_>) {
    words(lock.management())[W_GENERATION].fetch_add(1, Ordering::AcqRel);
}

/// Records that socket `me` is attached to `at`. Entries of transports `alive` says are gone are
/// reused. False when the directory is full or its lock cannot be had: the directory is then
/// incomplete for the rest of the session (a socket missing from it could be at the other end of
/// any endpoint), and names nobody any more.
pub(crate) fn register(m: &Management, me: SocketMark, at: Attached, alive: impl Fn(u32) -> bool) -> bool {
    let listed = m.lock().is_ok_and(|lock| {
        let w = words(m);
        let free = (0..ENTRIES).find(|&i| {
            let e = entry(w, i);
            e[0].load(Ordering::Relaxed) == 0 || !alive(e[1].load(Ordering::Relaxed) as u32)
        });
        let Some(i) = free else { return false };
        let e = entry(w, i);
        e[1].store(u64::from(me.0) | (at.role as u64) << 32, Ordering::Relaxed);
        e[2].store(me.1, Ordering::Relaxed);
        e[0].store(at.key, Ordering::Release);
        bump(&lock);
        true
    });
    if !listed {
        let w = words(m);
        w[W_INCOMPLETE].store(1, Ordering::Release);
        w[W_GENERATION].fetch_add(1, Ordering::AcqRel);
    }
    listed
}

/// Records that socket `me` of `mgr`'s transport bound (`bound`) or connected to `endpoint`;
/// returns the entry, `None` when the directory cannot name the endpoint or is full (logged: the
/// socket's tickets then name no one).
pub(crate) fn enter(mgr: &crate::manager::Manager, me: SocketMark, endpoint: &str, bound: bool) -> Option<Attached> {
    let at = Attached { key: key(endpoint, me.0)?, role: if bound { Role::Bind } else { Role::Connect } };
    if register(mgr.management(), me, at, |o| o == mgr.owner() || mgr.owner_alive(o)) {
        Some(at)
    } else {
        log::warn!("the session's endpoint directory is full: records of {endpoint} name no receiver");
        None
    }
}

/// Forgets every entry of socket `me` (it closes).
pub(crate) fn unregister(m: &Management, me: SocketMark) {
    let Ok(lock) = m.lock() else { return };
    let w = words(m);
    for i in 0..ENTRIES {
        let e = entry(w, i);
        if e[0].load(Ordering::Relaxed) != 0
            && e[1].load(Ordering::Relaxed) as u32 == me.0
            && e[2].load(Ordering::Relaxed) == me.1
        {
            e[0].store(0, Ordering::Release);
        }
    }
    bump(&lock);
}

/// The one live socket at the other end of the endpoints `mine` of socket `me` (bound there when
/// `me` connects, connected when `me` binds); `None` when there is none or more than one, or the
/// session lock cannot be had.
pub(crate) fn counterpart(
    m: &Management,
    me: SocketMark,
    mine: &[Attached],
    alive: impl Fn(u32) -> bool,
) -> Option<SocketMark> {
    if words(m)[W_INCOMPLETE].load(Ordering::Acquire) != 0 {
        return None;
    }
    let _lock = m.lock().ok()?;
    let w = words(m);
    let mut found: Option<SocketMark> = None;
    for i in 0..ENTRIES {
        let e = entry(w, i);
        let key = e[0].load(Ordering::Relaxed);
        if key == 0 {
            continue;
        }
        let head = e[1].load(Ordering::Relaxed);
        let them = (head as u32, e[2].load(Ordering::Relaxed));
        let role = head >> 32;
        let facing = mine.iter().any(|a| a.key == key && a.role.other() as u64 == role);
        if !facing || them == me || !alive(them.0) {
            continue;
        }
        match found {
            None => found = Some(them),
            Some(f) if f == them => {}
            Some(_) => return None,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ends_of_an_endpoint_agree_on_its_key() {
        assert_eq!(key("tcp://0.0.0.0:5555", 1), key("tcp://127.0.0.1:5555", 2));
        assert_eq!(key("tcp://*:5555", 1), key("tcp://[::1]:5555", 2));
        assert_ne!(key("tcp://*:5555", 1), key("tcp://*:5556", 1));
        assert_eq!(key("ipc:///tmp/a", 1), key("ipc:///tmp/a", 2));
        assert_ne!(key("ipc:///tmp/a", 1), key("ipc:///tmp/b", 1));
        let rel = std::env::current_dir().unwrap().join("x.ipc");
        assert_eq!(key("ipc://x.ipc", 1), key(&format!("ipc://{}", rel.display()), 1));
        assert_eq!(key("inproc://a", 1), key("inproc://a", 1));
        assert_ne!(key("inproc://a", 1), key("inproc://a", 2), "another transport's context");
        assert_eq!(key("tcp://host", 1), None);
        assert_eq!(key("udp://x:1", 1), None);
        assert_ne!(key("tcp://*:1", 1), Some(0));
    }

    #[test]
    fn the_one_live_socket_at_the_other_end_is_the_counterpart() {
        let s = crate::scratch::Scratch::new("directory");
        let (m, hb) = Management::attach(&s.0, "s").unwrap();
        let ep = |e: &str, role| Attached { key: key(e, 1).unwrap(), role };
        let (binder, a, b) = ((1, 10), (2, 20), (3, 30));
        let all = |_| true;
        assert!(register(&m, (9, 90), ep("tcp://*:7009", Role::Bind), all));
        let bound = [ep("tcp://*:7000", Role::Bind)];
        let connected = [ep("tcp://127.0.0.1:7000", Role::Connect)];
        assert!(register(&m, binder, bound[0], all));
        assert_eq!(counterpart(&m, binder, &bound, all), None, "nobody connected yet");
        let g = generation(&m);
        assert!(register(&m, a, connected[0], all));
        assert_ne!(generation(&m), g, "a change moves the generation");
        assert_eq!(counterpart(&m, binder, &bound, all), Some(a));
        assert_eq!(counterpart(&m, a, &connected, all), Some(binder));
        assert!(register(&m, b, connected[0], all));
        assert_eq!(counterpart(&m, binder, &bound, all), None, "two connected: no single receiver");
        assert_eq!(counterpart(&m, binder, &bound, |o| o != 3), Some(a), "a dead one does not count");
        unregister(&m, a);
        assert_eq!(counterpart(&m, binder, &bound, all), Some(b));
        assert_eq!(counterpart(&m, b, &[ep("tcp://*:7001", Role::Connect)], all), None, "another port");
        // A dead transport's entries are reused; a socket that finds the directory full makes it
        // name nobody any more (it could be at the other end of any endpoint).
        let mine = [ep("tcp://*:7009", Role::Connect)];
        assert_eq!(counterpart(&m, (8, 80), &mine, all), Some((9, 90)));
        for i in 0..ENTRIES as u64 {
            assert!(register(&m, (4, 100 + i), ep("tcp://*:7100", Role::Bind), |o| o != 9), "entry {i}");
            if i == 0 {
                assert_eq!(counterpart(&m, (8, 80), &mine, all), None, "the dead one's entry was reused");
            }
            if (0..ENTRIES).all(|k| entry(words(&m), k)[0].load(Ordering::Relaxed) != 0) {
                break;
            }
        }
        assert_eq!(counterpart(&m, b, &connected, all), Some(binder));
        let g = generation(&m);
        assert!(!register(&m, (5, 1), bound[0], all), "full");
        assert_ne!(generation(&m), g);
        assert_eq!(counterpart(&m, b, &connected, all), None, "incomplete: nobody is named");
        assert!(m.detach(hb, false).unwrap().removed);
    }
}
