//! The session's directory of endpoints: which socket bound or connected each endpoint. A socket
//! is named by its transport's owner mark and its socket number. The directory serves the sockets
//! whose ZeroMQ socket picks the receiver of a record: PAIR, REQ, REP, DEALER and ROUTER (see
//! `addressee`).
//!
//! Such a sender cannot see whom ZeroMQ hands a record to. When the directory shows exactly one
//! live socket at the other end of the sender's endpoints, that socket is the receiver, and the
//! tickets name it. Then what a killed receiver never claimed goes back to its sender, and the
//! receiver releases what a killed sender left in flight (see `orphans`).
//!
//! When several sockets could take a record, its ticket names the sending socket instead
//! (`tickets::FACING`). The sockets facing the sender record here when they last found themselves
//! empty. A record that is still out once every live one of them was empty well after it was sent
//! went to a socket that died: its sender takes it back (see `addressee`). If its sender is dead,
//! the record was lost with the sender's queue, and a receiver releases it (see `orphans`).
//!
//! Endpoints are keyed so that both ends agree ([`key`]): a tcp endpoint by its port (a session
//! lives on one host), an ipc endpoint by its absolute path, and an inproc endpoint by its name
//! within one transport.
//!
//! | bytes of the directory (at 576 KiB in the management segment) | [`Table`] field | content |
//! |---|---|---|
//! | 0..8 | `generation` | bumped by every change, so a sender looks again only when it moved |
//! | 8..16 | `incomplete` | 1 once a socket could not be listed (the directory was full, or its lock could not be had): from then on the directory names nobody |
//! | 64.. | `entries` | [`ENTRIES`] entries of 4 words: key (0: free), owner mark \| role << 32 ([`Role`]), socket number, when the socket last found itself empty (`CLOCK_MONOTONIC_COARSE` ns, 0: not yet) |
//!
//! Entries are written and read under the session lock; binds, connects and closes are rare. Only
//! the "empty at" word is written without the lock, by its socket, which owns the entry while it
//! lives.

use crate::session::layout::DIRECTORY_WORDS;
use crate::session::management::{Management, SessionLock};
use crate::sys::layout::{shared_layout, view};
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicU64, Ordering};

const ENTRIES: usize = 1024;

shared_layout! {
    /// The directory's words in the management segment.
    struct Table {
        generation: AtomicU64,
        incomplete: AtomicU64,
        _spare: [AtomicU64; 6],
        entries: [[AtomicU64; 4]; ENTRIES],
    }
}
const _: () = assert!(size_of::<Table>() == DIRECTORY_WORDS * 8 && offset_of!(Table, entries) == 64);

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

/// A socket at the other end of some endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Facing {
    pub mark: SocketMark,
    /// Whether the socket's transport is alive.
    pub alive: bool,
    /// When the socket last found itself empty (see [`stamp_empty`]; 0: not yet).
    pub empty_at: u64,
}

/// Returns the directory key of `endpoint` for the transport `owner`. `endpoint` is the string
/// that ZeroMQ was given, after resolution. Returns `None` for an endpoint the directory cannot
/// name.
pub(crate) fn key(endpoint: &str, owner: u32) -> Option<u64> {
    let (what, name): (&str, String) = if let Some(rest) = endpoint.strip_prefix("tcp://") {
        ("tcp", rest.rsplit_once(':')?.1.parse::<u16>().ok()?.to_string())
    } else if let Some(path) = endpoint.strip_prefix("ipc://") {
        let p = std::path::Path::new(path);
        let abs = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().ok()?.join(p) };
        ("ipc", abs.to_string_lossy().into_owned())
    } else if let Some(name) = endpoint.strip_prefix("inproc://") {
        // An inproc name holds only within one ZeroMQ context, and each transport has its own
        // context.
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

fn table(m: &Management) -> &Table {
    view(&m.layout().directory).expect("the directory's words hold its table")
}

fn entry(t: &Table, i: usize) -> &[AtomicU64; 4] {
    &t.entries[i]
}

/// Returns the directory's generation. A sender whose last look saw this generation need not look
/// again.
pub(crate) fn generation(m: &Management) -> u64 {
    table(m).generation.load(Ordering::Acquire)
}

fn bump(lock: &SessionLock<'_>) {
    table(lock.management()).generation.fetch_add(1, Ordering::AcqRel);
}

/// Records that socket `me` is attached to `at`, and returns the index of its entry.
/// `register` reuses the entries of transports that `alive` says are gone, but only once no entry
/// is free. Until then, `orphans` uses those entries to find where the gone sockets' records may
/// have gone.
/// Returns `None` when the directory is full or its lock cannot be had. The directory is then
/// incomplete for the rest of the session, and names nobody any more: a socket missing from it
/// could be at the other end of any endpoint.
pub(crate) fn register(m: &Management, me: SocketMark, at: Attached, alive: impl Fn(u32) -> bool) -> Option<usize> {
    let listed = m.lock().ok().and_then(|lock| {
        let w = table(m);
        let key_of = |i| entry(w, i)[0].load(Ordering::Relaxed);
        let free = (0..ENTRIES)
            .find(|&i| key_of(i) == 0)
            .or_else(|| (0..ENTRIES).find(|&i| !alive(entry(w, i)[1].load(Ordering::Relaxed) as u32)))?;
        let e = entry(w, free);
        e[1].store(u64::from(me.0) | (at.role as u64) << 32, Ordering::Relaxed);
        e[2].store(me.1, Ordering::Relaxed);
        e[3].store(0, Ordering::Relaxed);
        e[0].store(at.key, Ordering::Release);
        bump(&lock);
        Some(free)
    });
    if listed.is_none() {
        let w = table(m);
        w.incomplete.store(1, Ordering::Release);
        w.generation.fetch_add(1, Ordering::AcqRel);
    }
    listed
}

/// Records that socket `me` of `mgr`'s transport bound to `endpoint` (`bound` true) or connected
/// to it. Returns the endpoint and the index of its entry.
/// Returns `None` when the directory cannot name the endpoint or is full. A full directory is
/// logged, because the socket's tickets then name no receiver.
pub(crate) fn enter(
    mgr: &crate::transport::attachment::Attachment,
    me: SocketMark,
    endpoint: &str,
    bound: bool,
) -> Option<(Attached, usize)> {
    let at = Attached { key: key(endpoint, me.0)?, role: if bound { Role::Bind } else { Role::Connect } };
    let entry = register(mgr.management(), me, at, |o| o == mgr.owner() || mgr.owner_alive(o));
    if entry.is_none() {
        log::warn!("the session's endpoint directory is full: records of {endpoint} name no receiver");
    }
    Some((at, entry?))
}

/// How often, at most, a socket that finds itself empty records so in the directory (ns).
const STAMP_EVERY: u64 = 50_000_000;

/// Where one socket is listed: its endpoints and their entries.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    attached: Vec<Attached>,
    entries: Vec<usize>,
    /// Whether an endpoint is missing from the directory. If so, the sockets facing this socket
    /// are not known.
    unlisted: bool,
    /// When the socket last recorded in the directory that it was empty (coarse ns).
    stamped: u64,
}

impl Listing {
    /// Records that socket `me` of `mgr`'s transport bound to `endpoint` (`bound` true) or
    /// connected to it.
    pub(crate) fn enter(
        &mut self,
        mgr: &crate::transport::attachment::Attachment,
        me: SocketMark,
        endpoint: &str,
        bound: bool,
    ) {
        match enter(mgr, me, endpoint, bound) {
            Some((at, entry)) => {
                self.attached.push(at);
                self.entries.push(entry);
            }
            None => self.unlisted = true,
        }
    }

    /// Returns the socket's endpoints when all of them are listed, and none otherwise.
    pub(crate) fn endpoints(&self) -> &[Attached] {
        if self.unlisted {
            &[]
        } else {
            &self.attached
        }
    }

    /// Whether the socket has entries (to remove when it closes).
    pub(crate) fn has_entries(&self) -> bool {
        !self.entries.is_empty()
    }

    /// Records that socket `me` found itself empty (see [`stamp_empty`]). The record is written
    /// at most once every `STAMP_EVERY`.
    pub(crate) fn found_empty(&mut self, m: &Management, me: SocketMark) {
        if self.entries.is_empty() {
            return;
        }
        let now = crate::sys::clock::coarse_ns();
        if now.saturating_sub(self.stamped) >= STAMP_EVERY {
            self.stamped = now;
            stamp_empty(m, me, &self.entries, now);
        }
    }
}

/// Records, in the entries `entries` of socket `me`, that the socket found itself empty at `now`
/// (see [`coarse_ns`]). The stamp means that nothing sent to the socket before `now`, less the
/// time a record takes to arrive, waits in its queue.
///
/// [`coarse_ns`]: crate::sys::clock::coarse_ns
pub(crate) fn stamp_empty(m: &Management, me: SocketMark, entries: &[usize], now: u64) {
    let w = table(m);
    for &i in entries.iter().filter(|&&i| i < ENTRIES) {
        let e = entry(w, i);
        // Check that the entry is still this socket's. The entry is not reused while this
        // socket's transport lives, but the check costs almost nothing.
        if e[1].load(Ordering::Relaxed) as u32 == me.0 && e[2].load(Ordering::Relaxed) == me.1 {
            e[3].store(now, Ordering::Release);
        }
    }
}

/// Returns the endpoints of socket `them`. This works for a gone socket too, until its entries
/// are reused.
pub(crate) fn endpoints_of(m: &Management, them: SocketMark) -> Vec<Attached> {
    let Ok(_lock) = m.lock() else { return Vec::new() };
    let w = table(m);
    (0..ENTRIES)
        .filter_map(|i| {
            let e = entry(w, i);
            let key = e[0].load(Ordering::Relaxed);
            let head = e[1].load(Ordering::Relaxed);
            let role = if head >> 32 == Role::Bind as u64 { Role::Bind } else { Role::Connect };
            (key != 0 && head as u32 == them.0 && e[2].load(Ordering::Relaxed) == them.1)
                .then_some(Attached { key, role })
        })
        .collect()
}

/// Returns every socket at the other end of the endpoints `mine` of socket `me`, once each.
/// A socket at the other end is bound there when `me` connects, and connected when `me` binds.
/// Returns `None` when the directory is incomplete or its lock cannot be had: the sockets facing
/// `me` are not known then.
pub(crate) fn facing(
    m: &Management,
    me: SocketMark,
    mine: &[Attached],
    alive: impl Fn(u32) -> bool,
) -> Option<Vec<Facing>> {
    if table(m).incomplete.load(Ordering::Acquire) != 0 {
        return None;
    }
    let _lock = m.lock().ok()?;
    let w = table(m);
    let mut found: Vec<Facing> = Vec::new();
    for i in 0..ENTRIES {
        let e = entry(w, i);
        let key = e[0].load(Ordering::Relaxed);
        if key == 0 {
            continue;
        }
        let head = e[1].load(Ordering::Relaxed);
        let mark = (head as u32, e[2].load(Ordering::Relaxed));
        let role = head >> 32;
        if mark == me || !mine.iter().any(|a| a.key == key && a.role.other() as u64 == role) {
            continue;
        }
        let empty_at = e[3].load(Ordering::Acquire);
        match found.iter_mut().find(|f| f.mark == mark) {
            // Every entry of a socket carries the same stamps. The latest stamp among the
            // socket's entries counts.
            Some(f) => f.empty_at = f.empty_at.max(empty_at),
            None => found.push(Facing { mark, alive: alive(mark.0), empty_at }),
        }
    }
    Some(found)
}

/// Forgets every entry of socket `me`, when the socket closes.
pub(crate) fn unregister(m: &Management, me: SocketMark) {
    let Ok(lock) = m.lock() else { return };
    let w = table(m);
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

/// Returns the one live socket at the other end of the endpoints `mine` of socket `me`.
/// Returns `None` when there is no such socket or more than one, or when the sockets facing `me`
/// are not known (see [`facing`]).
pub(crate) fn counterpart(
    m: &Management,
    me: SocketMark,
    mine: &[Attached],
    alive: impl Fn(u32) -> bool,
) -> Option<SocketMark> {
    let live: Vec<SocketMark> = facing(m, me, mine, alive)?.into_iter().filter(|f| f.alive).map(|f| f.mark).collect();
    match live[..] {
        [one] => Some(one),
        _ => None,
    }
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
        assert!(register(&m, (9, 90), ep("tcp://*:7009", Role::Bind), all).is_some());
        let bound = [ep("tcp://*:7000", Role::Bind)];
        let connected = [ep("tcp://127.0.0.1:7000", Role::Connect)];
        assert!(register(&m, binder, bound[0], all).is_some());
        assert_eq!(counterpart(&m, binder, &bound, all), None, "nobody connected yet");
        let g = generation(&m);
        assert!(register(&m, a, connected[0], all).is_some());
        assert_ne!(generation(&m), g, "a change moves the generation");
        assert_eq!(counterpart(&m, binder, &bound, all), Some(a));
        assert_eq!(counterpart(&m, a, &connected, all), Some(binder));
        assert!(register(&m, b, connected[0], all).is_some());
        assert_eq!(counterpart(&m, binder, &bound, all), None, "two connected: no single receiver");
        assert_eq!(counterpart(&m, binder, &bound, |o| o != 3), Some(a), "a dead one does not count");
        unregister(&m, a);
        assert_eq!(counterpart(&m, binder, &bound, all), Some(b));
        assert_eq!(counterpart(&m, b, &[ep("tcp://*:7001", Role::Connect)], all), None, "another port");
        // A dead transport's entries are reused once no entry is free. A socket that finds the
        // directory full makes the directory name nobody any more, because that socket could be at
        // the other end of any endpoint.
        let mine = [ep("tcp://*:7009", Role::Connect)];
        let not_9 = |o| o != 9;
        let mut n = 0;
        while (0..ENTRIES).any(|k| entry(table(&m), k)[0].load(Ordering::Relaxed) == 0) {
            assert!(register(&m, (4, 100 + n), ep("tcp://*:7100", Role::Bind), not_9).is_some(), "entry {n}");
            n += 1;
        }
        assert_eq!(counterpart(&m, (8, 80), &mine, all), Some((9, 90)), "kept while entries were free");
        assert_eq!(endpoints_of(&m, (9, 90)), vec![ep("tcp://*:7009", Role::Bind)]);
        assert!(register(&m, (4, 1), ep("tcp://*:7100", Role::Bind), not_9).is_some());
        assert_eq!(counterpart(&m, (8, 80), &mine, all), None, "the dead one's entry was reused");
        assert_eq!(endpoints_of(&m, (9, 90)), vec![]);
        assert_eq!(counterpart(&m, b, &connected, all), Some(binder));
        let g = generation(&m);
        assert!(register(&m, (5, 1), bound[0], all).is_none(), "full");
        assert_ne!(generation(&m), g);
        assert_eq!(counterpart(&m, b, &connected, all), None, "incomplete: nobody is named");
        assert_eq!(facing(&m, b, &connected, all), None);
        assert!(m.detach(hb, false).unwrap());
    }

    #[test]
    fn facing_sockets_tell_when_they_were_last_empty() {
        let s = crate::scratch::Scratch::new("directory-facing");
        let (m, hb) = Management::attach(&s.0, "s").unwrap();
        let ep = |e: &str, role| Attached { key: key(e, 1).unwrap(), role };
        let all = |_| true;
        let bound = [ep("ipc:///tmp/d1", Role::Bind), ep("ipc:///tmp/d2", Role::Bind)];
        let (dealer, a, b) = ((1, 10), (2, 20), (3, 30));
        for at in bound {
            register(&m, dealer, at, all).unwrap();
        }
        let a_at = register(&m, a, ep("ipc:///tmp/d1", Role::Connect), all).unwrap();
        let b_at = [
            register(&m, b, ep("ipc:///tmp/d1", Role::Connect), all).unwrap(),
            register(&m, b, ep("ipc:///tmp/d2", Role::Connect), all).unwrap(),
        ];
        let f = |alive: &dyn Fn(u32) -> bool| facing(&m, dealer, &bound, alive).unwrap();
        assert_eq!(
            f(&all),
            vec![Facing { mark: a, alive: true, empty_at: 0 }, Facing { mark: b, alive: true, empty_at: 0 }],
            "each socket once, not yet empty"
        );
        stamp_empty(&m, a, &[a_at], 5);
        stamp_empty(&m, b, &b_at[1..], 7);
        stamp_empty(&m, b, &[a_at], 99);
        let got = f(&|o| o != 2);
        assert_eq!(got[0], Facing { mark: a, alive: false, empty_at: 5 }, "another socket's entry is not stamped");
        assert_eq!(got[1], Facing { mark: b, alive: true, empty_at: 7 }, "the latest of its entries");
        assert_eq!(facing(&m, a, &[ep("ipc:///tmp/d1", Role::Connect)], all).unwrap().len(), 1);
        let mut eps = endpoints_of(&m, b);
        eps.sort_by_key(|e| e.key);
        let mut want = vec![ep("ipc:///tmp/d1", Role::Connect), ep("ipc:///tmp/d2", Role::Connect)];
        want.sort_by_key(|e| e.key);
        assert_eq!(eps, want);
        assert!(m.detach(hb, false).unwrap());
    }
}
