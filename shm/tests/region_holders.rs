//! Region pieces that a killed consumer held: once their last holder is gone, the sweep of the
//! dead acknowledges each to the region's controller, whoever finds the dead (a transport's
//! sweep, the monitor), for a piece held alone, a piece with copies, and a piece published to
//! several subscribers (issue 37, item 5). Before, 5 kills of a region sink left 576 pieces
//! unacknowledged, and a sampler waiting for them waited forever.

mod common;
use common::*;
use fairmq_shm::{Region, RegionCallback, RegionConfig, Transport};
use fairmq_zmq::SocketType;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Bytes of each piece.
const SIZE: usize = 1000;
/// Pieces the region holds side by side.
const SLOTS: u64 = 64;

/// (hint, offset, size) of every acknowledged piece, in order of arrival.
type Acked = Arc<Mutex<Vec<(u64, u64, usize)>>>;

fn region_byte(offset: u64) -> u8 {
    (offset.wrapping_mul(7) ^ (offset >> 8)) as u8
}

/// A region of `SLOTS` pieces, filled as the sink peer checks it, whose callback logs every
/// acknowledgement.
fn region(t: &Transport) -> (Region, Acked) {
    let acked = Acked::default();
    let log = acked.clone();
    let cb = RegionCallback::Bulk(Box::new(move |blocks| {
        log.lock().unwrap().extend(blocks.iter().map(|b| (b.hint, b.offset, b.size)));
    }));
    let region = t.create_region(SLOTS as usize * SIZE, cb, &RegionConfig::default()).unwrap();
    let bytes: Vec<u8> = (0..region.size() as u64).map(region_byte).collect();
    region.write(0, &bytes).unwrap();
    (region, acked)
}

/// Sends pieces with hints `hints` on `s` (piece `h` at slot `h % SLOTS`).
fn send_pieces(t: &Transport, region: &Region, s: &fairmq_shm::Socket, hints: std::ops::Range<u64>) {
    for h in hints {
        let mut m = t.new_message_from_region(region, ((h % SLOTS) as usize) * SIZE, SIZE, h).unwrap();
        assert_eq!(s.send(&mut m, 60_000).unwrap(), SIZE);
    }
}

/// A sink peer that receives `count` pieces on `addr` (as `mode` and `flags` say) and holds them.
fn holding_sink(s: &Session, addr: &str, count: u64, mode: &str, flags: &[&str]) -> Peer {
    let count = count.to_string();
    let mut args = vec!["regionsink", &s.name, addr, &count, mode, "hold"];
    args.extend_from_slice(flags);
    let mut p = peer(&args);
    p.expect_line("ready");
    p
}

/// Waits until the region has no piece out, then checks that the pieces with hints `hints` were
/// each acknowledged exactly once, with their offsets and sizes.
fn expect_acknowledged(region: &Region, acked: &Acked, hints: std::ops::Range<u64>) {
    wait_until("every piece acknowledged", || region.outstanding() <= 0);
    assert_eq!(region.outstanding(), 0, "no piece acknowledged twice");
    let a = acked.lock().unwrap();
    let mut by_hint: BTreeMap<u64, Vec<(u64, usize)>> = BTreeMap::new();
    for &(h, o, s) in a.iter() {
        by_hint.entry(h).or_default().push((o, s));
    }
    assert_eq!(by_hint.keys().copied().collect::<Vec<_>>(), hints.collect::<Vec<_>>(), "each piece, once");
    for (h, seen) in by_hint {
        assert_eq!(seen, [((h % SLOTS) * SIZE as u64, SIZE)], "piece {h}: once, with its offset and size");
    }
}

/// Everything went back to the segment: no block is left used (count blocks, lanes).
fn expect_segment_empty(t: &Transport) {
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().used_blocks, 0, "the count blocks the dead held are freed");
}

/// How the dead sink is found.
#[derive(Debug, Clone, Copy)]
enum Finder {
    Sweep,
    Monitor,
}

/// Five rounds: a sink receives 40 pieces (held alone, or each with a copy in `copy` mode) and
/// is killed; `finder` finds it dead, and every piece is acknowledged.
fn killed_sinks(tag: &str, mode: &str, finder: Finder) {
    let s = Session::new(tag);
    let t = s.transport("src");
    let (region, acked) = region(&t);
    for round in 0..5u64 {
        let addr = s.ipc(&format!("pieces{round}"));
        let push = t.socket(SocketType::Push, "data").unwrap();
        push.bind(&addr).unwrap();
        let mut sink = holding_sink(&s, &addr, 40, mode, &[]);
        send_pieces(&t, &region, &push, round * 40..round * 40 + 40);
        assert_eq!(sink.expect_line("holding"), "holding 40");
        assert_eq!(region.outstanding(), 40, "round {round}: the sink holds every piece");
        sink.kill();
        let found = match finder {
            Finder::Sweep => t.sweep_dead_processes(),
            Finder::Monitor => fairmq_shm::monitor::sweep(t.shm_id()).unwrap().dead,
        };
        assert_eq!(found, [sink.pid()], "round {round}");
        expect_acknowledged(&region, &acked, 0..round * 40 + 40);
    }
    drop(region);
    expect_segment_empty(&t);
}

#[test]
fn pieces_a_killed_sink_held_alone_are_acknowledged_by_the_sweep() {
    killed_sinks("rghold", "plain", Finder::Sweep);
}

#[test]
fn pieces_a_killed_sink_held_with_copies_are_acknowledged_once() {
    killed_sinks("rgholdcp", "copy", Finder::Sweep);
}

#[test]
fn pieces_a_killed_sink_held_are_acknowledged_through_the_monitor() {
    killed_sinks("rgholdmon", "plain", Finder::Monitor);
}

/// A piece published to two subscribers has one reference each: the first subscriber killed is
/// not the last holder (nothing is acknowledged), the second is (each piece is, once).
#[test]
fn a_published_piece_is_acknowledged_when_its_last_holder_is_killed() {
    let s = Session::new("rgholdpub");
    let t = s.transport("src");
    let (region, acked) = region(&t);
    let addr = s.ipc("pub");
    let publ = t.socket(SocketType::Pub, "data").unwrap();
    publ.bind(&addr).unwrap();
    let mut subs = [holding_sink(&s, &addr, 30, "plain", &["sub"]), holding_sink(&s, &addr, 30, "plain", &["sub"])];
    wait_until("both subscribers' probes", || publ.connected_subscribers() >= 2);
    send_pieces(&t, &region, &publ, 0..30);
    for sub in subs.iter_mut() {
        assert_eq!(sub.expect_line("holding"), "holding 30");
    }
    assert_eq!(region.outstanding(), 30);
    subs[0].kill();
    assert_eq!(t.sweep_dead_processes(), [subs[0].pid()]);
    // The sweep acknowledges at once when it drops a last reference: had it, the region's
    // receiver would deliver it within a few milliseconds; a second is generous.
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert_eq!(acked.lock().unwrap().len(), 0, "the other subscriber still holds every piece");
    assert_eq!(region.outstanding(), 30);
    subs[1].kill();
    assert_eq!(t.sweep_dead_processes(), [subs[1].pid()]);
    expect_acknowledged(&region, &acked, 0..30);
    drop(publ);
    drop(region);
    expect_segment_empty(&t);
}
