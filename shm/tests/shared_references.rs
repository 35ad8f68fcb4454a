//! Shared references (copies, published messages) that a killed process held: the sweep of the
//! dead drops every one its ledger lists, however many, and frees the ledger's overflow pages; a
//! damaged ledger is refused without a crash (issue 37, item 4).

mod common;
use common::*;
use fairmq_shm::testing::ledger::{damage_overflow_link, overflow_pages, PAGE_BYTES};
use fairmq_zmq::SocketType;

/// Used blocks of `t`'s segment with references (holder mark, count), and free bytes once `t`'s
/// caches and the depot went back to the heap.
fn referenced(t: &fairmq_shm::Transport) -> Vec<(u32, u32)> {
    let blocks = fairmq_shm::testing::segment(t).used_blocks().unwrap();
    blocks.iter().filter(|b| b.3 > 0).map(|b| (b.2, b.3)).collect()
}

fn settled_free(t: &fairmq_shm::Transport) -> u64 {
    t.flush();
    t.segment_stats().free
}

/// The owner mark of the blocks of process `pid`'s transport (read while it is attached).
fn owner_of(t: &fairmq_shm::Transport, pid: u32) -> u32 {
    t.attached().iter().find(|a| a.pid == pid).expect("the process is attached").owner
}

/// A process holding `messages` messages of 100 bytes and `copies` copies of each (all in the
/// session's segment 0, as `t`'s).
fn holder(s: &Session, messages: usize, copies: usize) -> Peer {
    let mut p = peer(&["copies", &s.name, &messages.to_string(), &copies.to_string(), "100"]);
    assert_eq!(p.expect_line("holding "), format!("holding {}", messages * (copies + 1)));
    p
}

/// Issue 37 item 4: a process killed while it held 3000 messages and a copy of each (6000 shared
/// references on 3000 blocks). Its ledger lists every one (the area's 1022 entries, then overflow
/// pages in its segment), and the sweep drops them all and frees the pages. Before, entries past
/// 1023 were not listed: 2489 blocks stayed per kill, and a 50 MB segment ran dry after 18 kills.
#[test]
fn a_killed_holder_of_3000_shared_references_leaves_no_block() {
    let s = Session::new("refs3000");
    let t = s.transport("observer");
    let free0 = settled_free(&t);
    for round in 0..3 {
        let mut p = holder(&s, 3000, 1);
        assert_eq!(t.shared_blocks_held().len(), 3000, "round {round}: every block's references are listed");
        let pages = overflow_pages(t.shm_id(), p.pid()).expect("attached").unwrap();
        assert_eq!(pages, (6000 - 1022usize).div_ceil(((PAGE_BYTES / 8 - 4) / 2) as usize));
        let mark = owner_of(&t, p.pid());
        p.kill();
        assert_eq!(t.sweep_dead_processes(), [p.pid()]);
        assert_eq!(referenced(&t), [], "round {round}: no block is left with a reference");
        assert_eq!(fairmq_shm::testing::segment(&t).owned_by(mark).unwrap(), (0, 0), "its pages are freed");
        t.check_segment().unwrap();
        assert_eq!(settled_free(&t), free0, "round {round}: every block back");
    }
}

/// How the dead are found in [`killed_holders_of_500_references`].
#[derive(Debug, Clone, Copy)]
enum Finder {
    /// A transport that leaves (it sweeps as it detaches).
    Leaving,
    /// The monitor.
    Monitor,
    /// A transport's sweep.
    Sweep,
}

/// A subscriber holding 500 published messages and a holder of 250 messages with a copy each
/// (500 shared references each, below the area's 1022 entries) are killed; `finder` finds them
/// dead first, then three sweeps and a monitor pass run: every block is back.
fn killed_holders_of_500_references(tag: &str, finder: Finder) {
    let s = Session::new(tag);
    let t = s.transport("publisher");
    let free0 = settled_free(&t);
    let addr = s.ipc("pub");
    let publ = t.socket(SocketType::Pub, "data").unwrap();
    publ.bind(&addr).unwrap();
    let mut sub = peer(&["recv", &s.name, &addr, "connect", "500", "1", "sub", "hold"]);
    sub.expect_line("ready");
    wait_until("the subscriber's probe", || publ.connected_subscribers() >= 1);
    // Below the subscriber's queue limit: it misses none.
    for seq in 0..500u64 {
        assert_eq!(publ.send(&mut peer_message(&t, seq, 1000), 0).unwrap(), 1000);
    }
    sub.expect_line("received 500 500000");
    let mut copies = holder(&s, 250, 1);
    assert_eq!(t.shared_blocks_held().len(), 750, "500 published blocks and 250 copied ones, all listed");
    let leaving = matches!(finder, Finder::Leaving).then(|| s.transport("leaving"));
    let mut dead = vec![sub.pid(), copies.pid()];
    dead.sort_unstable();
    sub.kill();
    copies.kill();
    let mut found = match finder {
        Finder::Leaving => {
            drop(leaving);
            dead.clone()
        }
        Finder::Monitor => fairmq_shm::monitor::sweep(t.shm_id()).unwrap().dead,
        Finder::Sweep => t.sweep_dead_processes(),
    };
    found.sort_unstable();
    assert_eq!(found, dead, "{finder:?} found both");
    for _ in 0..3 {
        assert_eq!(t.sweep_dead_processes(), Vec::<u32>::new(), "counted out already");
    }
    assert_eq!(fairmq_shm::monitor::sweep(t.shm_id()).unwrap().dead, Vec::<u32>::new());
    assert_eq!(referenced(&t), [], "no block is left with a reference");
    t.check_segment().unwrap();
    assert_eq!(settled_free(&t), free0, "every block back");
}

/// Issue 37 item 4: found by a transport as it detached, what the dead held last went through
/// that transport's caches, which it had emptied before it swept: those blocks stayed allocated,
/// marked with the mark of a transport gone, through every later sweep and monitor pass. Now it
/// empties them after its sweep.
#[test]
fn killed_holders_of_500_references_found_by_a_leaving_transport_leave_no_block() {
    killed_holders_of_500_references("refs500leave", Finder::Leaving);
}

#[test]
fn killed_holders_of_500_references_found_by_the_monitor_leave_no_block() {
    killed_holders_of_500_references("refs500mon", Finder::Monitor);
}

#[test]
fn killed_holders_of_500_references_found_by_a_sweep_leave_no_block() {
    killed_holders_of_500_references("refs500sweep", Finder::Sweep);
}

/// The link to a killed holder's first overflow page is damaged (it names a block that is no
/// page, or a segment the session does not have): the sweep, of a transport or of the monitor,
/// refuses it without a crash and drops the references the area lists. Those listed on the
/// pages it cannot reach stay; the pages themselves go with the blocks the dead held alone.
#[test]
fn a_damaged_overflow_link_is_refused_by_the_sweep_without_a_crash() {
    let s = Session::new("refsdamaged");
    let t = s.transport("observer");
    let free0 = settled_free(&t);
    let seg = t.segment_stats().id;
    // (first word of the damaged link, sweep by the monitor)
    let damage = [(1u64 << 20 | u64::from(seg) << 48, false), ((1 << 20) | 999 << 48, true), (u64::MAX, false)];
    let mut stay = 0;
    for (word, by_monitor) in damage {
        let mut p = holder(&s, 3000, 1);
        let mark = owner_of(&t, p.pid());
        assert!(damage_overflow_link(t.shm_id(), p.pid(), word));
        assert!(overflow_pages(t.shm_id(), p.pid()).expect("attached").is_err(), "the walk refuses the link");
        p.kill();
        let found =
            if by_monitor { fairmq_shm::monitor::sweep(t.shm_id()).unwrap().dead } else { t.sweep_dead_processes() };
        assert_eq!(found, [p.pid()], "counted out");
        // The area lists the references of the first 511 messages (each with its copy): those
        // blocks are freed; the other 2489 keep the two references the pages list.
        stay += 2489;
        let left = referenced(&t);
        assert_eq!(left.len(), stay, "{word:#x}: the blocks whose references the pages list");
        assert!(left.iter().all(|&b| b == (u32::MAX - 2, 2)), "shared, two references each");
        assert_eq!(fairmq_shm::testing::segment(&t).owned_by(mark).unwrap(), (0, 0), "its pages are freed");
        t.check_segment().unwrap();
    }
    assert!(settled_free(&t) < free0);
}
