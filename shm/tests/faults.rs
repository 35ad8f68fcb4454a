//! Crashes and bad input: processes killed with SIGKILL (in a tight alloc/free loop, holding the
//! allocator lock, in the middle of a stream), and garbage metadata from a peer.

mod common;
use common::*;
use fairmq_zmq::layered::LayeredSocket;
use fairmq_zmq::{AttachOptions, Message as ZMessage, Method, SocketType, TransferCode};
use std::time::Duration;

/// The owner mark of the blocks of process `pid`'s transport (read while it is attached).
fn owner_of(t: &fairmq_shm::Transport, pid: u32) -> u32 {
    t.attached().iter().find(|a| a.pid == pid).expect("the process is attached").owner
}

#[test]
fn killed_in_an_alloc_free_loop_others_continue_and_no_block_is_lost() {
    let s = Session::new("killloop");
    let t = s.transport("parent");
    t.flush();
    let free0 = t.segment_stats().free;
    let mut victim = peer(&["allocloop", &s.name, "0"]);
    let mut survivor = peer(&["allocloop", &s.name, "20000"]);
    victim.expect_line("running");
    survivor.expect_line("running");
    // Killed in the middle of its loop (it has run for a while), at no particular point of it.
    std::thread::sleep(Duration::from_millis(300));
    let dead = owner_of(&t, victim.pid());
    victim.kill();
    // The parent allocates and frees too, while the survivor goes on.
    for i in 0..2000 {
        let mut m = t.new_message_with_size(100 + i).unwrap();
        m.data_mut().unwrap().fill(9);
    }
    let status = survivor.wait();
    assert!(status.success(), "the survivor saw no corruption and finished: {:?}", survivor.seen);
    assert!(survivor.seen.iter().any(|l| l == "done 20000"));
    t.flush();
    // The survivor counted the dead process out when it detached, and freed what it had (blocks
    // it held alone, blocks in its caches).
    assert_eq!(fairmq_shm::testing::segment(&t).owned_by(dead).unwrap(), (0, 0), "nothing of the dead process is left");
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "free memory is back to where it started: nothing lost");
}

/// A transport that detaches counts dead processes out on the way; it must free what they cached,
/// or nobody would (a dead process is found only once).
#[test]
fn a_transport_that_detaches_frees_what_a_dead_process_cached() {
    let s = Session::new("detachsweep");
    let t = s.transport("observer");
    let leaving = s.transport("leaving");
    t.flush();
    let free0 = t.segment_stats().free;
    let mut victim = peer(&["allocloop", &s.name, "0"]);
    victim.expect_line("running");
    let dead = owner_of(&t, victim.pid());
    let cached = |t: &fairmq_shm::Transport| {
        fairmq_shm::testing::segment(t)
            .used_blocks()
            .unwrap()
            .iter()
            .filter(|&&(_, _, owner, count)| owner == dead && count == 0)
            .count()
    };
    // Killed once its caches hold blocks.
    wait_until("blocks in the victim's caches", || cached(&t) > 0);
    victim.kill();
    assert!(cached(&t) > 0, "the dead process left blocks in its caches");
    drop(leaving);
    assert_eq!(cached(&t), 0, "the detaching transport freed them");
    assert_eq!(t.sweep_dead_processes(), Vec::<u32>::new(), "and counted the dead process out");
    // What it held alone (count 1) went with it: a sweep frees both kinds.
    assert_eq!(fairmq_shm::testing::segment(&t).owned_by(dead).unwrap(), (0, 0));
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "nothing lost");
}

#[test]
fn a_sweep_frees_what_a_dead_sender_cached_and_keeps_what_it_sent() {
    let s = Session::new("sweep");
    let t = s.transport("receiver");
    t.flush();
    let free0 = t.segment_stats().free;
    let addr = s.ipc("sweep");
    let pull = t.socket(SocketType::Pull, "data").unwrap();
    pull.bind(&addr).unwrap();
    // 5 messages of 1000 bytes: the sender's cache refilled a magazine, so it holds unsent blocks.
    let mut sender = peer(&["send", &s.name, &addr, "connect", "5", "1000", "1", "hold"]);
    let mut got = Vec::new();
    for _ in 0..5 {
        let mut m = t.new_message();
        pull.receive(&mut m, 60_000).unwrap();
        got.push(m);
    }
    sender.expect_line("sent 5");
    let (dead, mark) = (sender.pid(), owner_of(&t, sender.pid()));
    let (held, _) = fairmq_shm::testing::segment(&t).owned_by(mark).unwrap();
    assert!(held > 0, "the sender's cache holds blocks: {held}");
    sender.kill();
    assert_eq!(t.sweep_dead_processes(), vec![dead]);
    assert_eq!(t.attached_transports(), 1, "the dead sender was counted out");
    // What it sent is alive in our hands, marked as ours since we took it, untouched; its lane is
    // shared (writer and reader), so not its alone either.
    assert_eq!(fairmq_shm::testing::segment(&t).owned_by(mark).unwrap().0, 0);
    assert_eq!(
        fairmq_shm::testing::segment(&t).owned_by(t.owner()).unwrap().0,
        5,
        "the received messages are marked as ours"
    );
    for (seq, m) in got.iter().enumerate() {
        assert_eq!(&m.data()[..8], &(seq as u64).to_le_bytes(), "message {seq} intact after the sweep");
    }
    drop(got);
    drop(pull);
    t.flush();
    assert_eq!(fairmq_shm::testing::segment(&t).owned_by(mark).unwrap().0, 0);
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "every block of the dead sender came back exactly once");
}

#[test]
fn killed_while_holding_the_allocator_lock() {
    let s = Session::new("killlock");
    let t = s.transport("parent");
    let mut holder = peer(&["holdlock", &s.name]);
    holder.expect_line("locked");
    holder.kill();
    // The next user gets the lock (owner died), repairs the heap and goes on.
    let m = t.new_message_with_size(1000).unwrap();
    assert_eq!(m.size(), 1000);
    let stats = t.segment_stats();
    assert_eq!(stats.recoveries, 1);
    t.check_segment().unwrap();
}

#[test]
fn sender_killed_mid_stream() {
    let s = Session::new("killsender");
    let t = s.transport("receiver");
    let addr = s.ipc("stream");
    let pull = t.socket(SocketType::Pull, "in").unwrap();
    pull.bind(&addr).unwrap();
    let mut tx = peer(&["send", &s.name, &addr, "connect", "100000000", "1000", "0"]);
    let mut m = t.new_message();
    for _ in 0..1000 {
        pull.receive(&mut m, 30_000).unwrap();
    }
    tx.kill();
    // Whatever was queued still arrives intact; then the stream simply ends.
    let mut after = 0;
    while pull.receive(&mut m, 1000).is_ok() {
        assert_eq!(m.size(), 1000);
        after += 1;
    }
    // A new sender works, and so does allocation.
    let mut tx2 = peer(&["send", &s.name, &addr, "connect", "50", "2000", "0"]);
    assert!(tx2.wait().success());
    for _ in 0..50 {
        pull.receive(&mut m, 30_000).unwrap();
        assert_eq!(m.size(), 2000);
    }
    assert!(t.new_message_with_size(1 << 20).is_ok());
    eprintln!("{after} messages arrived after the kill");
}

#[test]
fn bad_metadata_is_rejected_and_nothing_breaks() {
    let s = Session::new("badmeta");
    let t = s.transport("r");
    let addr = format!("{}-raw", s.ipc("meta"));
    let pull = t.socket(SocketType::Pull, "in").unwrap();
    pull.bind(&addr).unwrap();
    let raw_t = fairmq_zmq::Transport::new("raw").unwrap();
    let raw = raw_t.socket(SocketType::Dealer, "out").unwrap();
    raw.require_password(&t.connect_password());
    raw.connect(&addr).unwrap();

    // A real block to corrupt records of.
    let good = t.new_message_from_slice(&[5u8; 256]).unwrap();
    let fairmq_shm::testing::meta::Record::Block { segment, offset, delta, size, slot, generation } = good.record()
    else {
        panic!()
    };
    assert_ne!(slot, u32::MAX, "a block of a default segment has a slot");
    let enc_slot = |segment: u16, offset: u64, delta: u32, size: u64, slot: u32| {
        let mut v = Vec::new();
        let rec = fairmq_shm::testing::meta::Record::Block { segment, offset, delta, size, slot, generation };
        fairmq_shm::testing::meta::encode_single(&rec, 0, &mut v);
        v
    };
    let enc = |segment: u16, offset: u64, delta: u32, size: u64| enc_slot(segment, offset, delta, size, slot);
    let mut frames: Vec<Vec<u8>> = vec![
        vec![],
        vec![1],
        vec![9, 1, 0, 0],
        b"hello from a zeromq peer".to_vec(),
        enc(segment, offset, delta, 1 << 40),             // size beyond the segment
        enc(segment, offset + 16, delta, size),           // not a block start
        enc(segment, offset + 3, delta, size),            // misaligned
        enc(segment, u64::MAX - 15, delta, size),         // offset overflow
        enc(segment, offset, 0, size),                    // data inside the header
        enc(segment, offset, delta + 4096, size),         // delta not the block's
        enc(77, offset, delta, size),                     // unknown segment
        enc(segment, 16, delta, size),                    // inside the segment header
        enc_slot(segment, offset, delta, size, slot + 1), // another slot (free)
        enc_slot(segment, offset, delta, size, u32::MAX), // no slot, but the block has one
        enc_slot(segment, offset, delta, size, u32::MAX - 1), // a slot beyond the table
        vec![2, 3, 0, 0, 0xff, 0xff, 0xff, 0x0f],         // multipart claiming 268 M parts
    ];
    // The record of a block freed since (a stale or repeated record): the block is in a cache now,
    // with no reference, and must not be taken (the next allocation would alias it).
    let gone = t.new_message_from_slice(&[6u8; 256]).unwrap();
    let stale = gone.record();
    drop(gone);
    let mut frame = Vec::new();
    fairmq_shm::testing::meta::encode_single(&stale, 0, &mut frame);
    frames.push(frame);
    // Random frames too (deterministic pseudo-random bytes).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for len in [8usize, 24, 25, 40, 64, 200] {
        let v = (0..len)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if i == 0 {
                    fairmq_shm::testing::meta::VERSION
                } else {
                    x as u8
                }
            })
            .collect();
        frames.push(v);
    }
    // Each frame is refused and skipped inside the receive, which goes on waiting: a peer's bad
    // frame is never the application's error (a relay device would leave RUNNING on one).
    for f in &frames {
        raw.send(&mut ZMessage::from_slice(f), 5000).unwrap();
        let mut m = t.new_message();
        let e = pull.receive(&mut m, 300).expect_err("nothing to receive: the frame was refused");
        assert_eq!(e.code(), TransferCode::Timeout, "{e}");
        assert!(m.is_empty());
        raw.send(&mut ZMessage::from_slice(f), 5000).unwrap();
        let e = pull.receive_parts(&mut Vec::new(), 300).expect_err("nothing to receive");
        assert_eq!(e.code(), TransferCode::Timeout, "{e}");
    }
    assert_eq!(pull.counters().messages_rx, 0, "nothing counted");
    assert_eq!(good.refcount(), 1, "no forged record touched the real block");
    assert_eq!(good.data(), &[5u8; 256][..]);
    t.check_segment().unwrap();
    // The socket still works for real messages.
    let push = t.socket(SocketType::Push, "ok").unwrap();
    push.connect(&addr).unwrap();
    let mut m = good;
    push.send(&mut m, 5000).unwrap();
    let mut r = t.new_message();
    pull.receive(&mut r, 5000).unwrap();
    assert_eq!(r.data(), &[5u8; 256][..]);
}

/// Issue 17 item 3: a receiver killed while it holds messages (each its block's only reference):
/// the next sweep frees them with its caches. Before, they stayed allocated until the session ended.
#[test]
fn i03_what_a_killed_receiver_held_alone_is_freed_by_the_next_sweep() {
    let s = Session::new("heldkill");
    let t = s.transport("observer");
    t.flush();
    let free0 = t.segment_stats().free;
    let addr = s.ipc("held");
    let mut receiver = peer(&["recv", &s.name, &addr, "bind", "20", "1", "hold"]);
    receiver.expect_line("ready");
    let mut sender = peer(&["send", &s.name, &addr, "connect", "20", "1000,70000", "0"]);
    assert!(sender.wait().success(), "the sender finished: {:?}", sender.seen);
    receiver.expect_line("received 20 ");
    let dead = receiver.pid();
    receiver.kill();
    assert_eq!(t.sweep_dead_processes(), vec![dead]);
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "the 20 messages it held came back");
}

/// A sender killed with records still queued in its own socket, the receiver (`pair`: PAIR
/// sockets without lanes, else PUSH and PULL) stopped meanwhile: they are lost with it, and the
/// receiver they were addressed to releases their blocks (once it found its socket empty on two
/// looks a second apart, or when it closes). The sender binds, or connects (`sender_binds`).
fn killed_sender_queue_is_released(tag: &str, pair: bool, sender_binds: bool) {
    let s = Session::new(tag);
    let t = s.transport("observer");
    t.flush();
    let free0 = t.segment_stats().free;
    let addr = s.ipc(tag);
    // A push connected to one endpoint would use a lane: records on the socket are the point here.
    let flag = if pair { "pair" } else { "nolanes" };
    let (send_method, recv_method) = if sender_binds { ("bind", "connect") } else { ("connect", "bind") };
    let mut receiver = None;
    if !sender_binds {
        let r = receiver.insert(peer(&["recv", &s.name, &addr, recv_method, "0", "1", flag, "pause"]));
        r.expect_line("ready");
    }
    let mut sender = peer(&["send", &s.name, &addr, send_method, "0", "1000", "0", "hold", flag]);
    if sender_binds {
        // Connected once the sender has bound (its ipc path exists): a push learns it on connect.
        wait_until("the sender's ipc path", || std::path::Path::new(&addr["ipc://".len()..]).exists());
        let r = receiver.insert(peer(&["recv", &s.name, &addr, recv_method, "0", "1", flag, "pause"]));
        r.expect_line("ready");
    }
    let mut receiver = receiver.unwrap();
    // Stopped (by itself) once the link carries messages: the rest fills the queues.
    receiver.expect_line("first");
    let line = sender.expect_line("sent ");
    let sent: u64 = line["sent ".len()..].parse().unwrap();
    let dead = sender.pid();
    sender.kill();
    receiver.signal(libc::SIGCONT);
    let (got, _) = received(&mut receiver);
    assert!(receiver.wait().success(), "{:?}", receiver.seen);
    assert!(got < sent, "records were still in the sender's queue when it died ({got} of {sent} arrived)");
    // The receiver, leaving, counted the dead sender out already, or this sweep does.
    assert!(t.sweep_dead_processes().iter().all(|&p| p == dead));
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "the {} messages lost in flight were released", sent - got);
}

/// Issue 17 item 3: a sender killed with records still queued in its own socket: the receiver
/// they were addressed to releases them. Before, they stayed allocated until the session ended.
#[test]
fn i03_what_a_killed_sender_had_queued_is_released_by_its_receiver() {
    killed_sender_queue_is_released("queuedkill", false, true);
}

/// Issue 17 item 3, a PUSH that connected to a bound PULL: the directory names the PULL bound
/// there on the tickets. Before, the push did not know its peer's transport and the records it
/// had queued stayed allocated until the session ended.
#[test]
fn i03_what_a_killed_connected_sender_had_queued_is_released_by_its_receiver() {
    killed_sender_queue_is_released("connqueuedkill", false, false);
}

/// Issue 17 item 3, on a link whose ZeroMQ socket picks the receiver (a PAIR without lanes): the
/// session's endpoint directory names the receiver on the tickets, so it releases them once its
/// socket stays empty. Before, such tickets named no receiver and their blocks stayed allocated
/// until the session ended.
#[test]
fn i03_what_a_killed_pair_sender_had_queued_is_released_by_its_receiver() {
    killed_sender_queue_is_released("pairqueuedkill", true, true);
}

/// Issue 17 item 3, on a PAIR without lanes: a receiver killed with records it had not taken. The
/// sender takes them back (the directory named the receiver on their tickets) and sends them,
/// in order, to the receiver that replaces it: nothing is lost, nothing stays allocated. Records
/// the sender queued after the death, which ZeroMQ then hands to the successor too, are taken
/// back as well; the successor skips them (their second copies follow). Before, the records died
/// with the receiver and their blocks stayed allocated until the session ended. The sender
/// connects: a bound ZeroMQ PAIR never accepts a second peer.
#[test]
fn i03_what_a_killed_pair_receiver_did_not_take_goes_to_its_successor() {
    let s = Session::new("pairrecvkill");
    let mut c = s.config("sender");
    c.lanes = false;
    let t = fairmq_shm::Transport::new(&c).unwrap();
    t.flush();
    let free0 = t.segment_stats().free;
    let addr = s.ipc("pairrecv");
    // `pause`: once it took the first, it stops itself (holding no lock: stopped from outside at
    // any moment, it could hold the sender's segment lock, and every send here waited for it
    // until the lock's time limit); what follows waits in its queue.
    let mut first = peer(&["recv", &s.name, &addr, "bind", "0", "1", "pair", "pause"]);
    first.expect_line("ready");
    let pair = t.socket(SocketType::Pair, "data").unwrap();
    pair.attach(&addr, &AttachOptions::new(Some(Method::Connect))).unwrap();
    pair.send(&mut peer_message(&t, 0, 4000), 10_000).unwrap();
    first.expect_line("first");
    for seq in 1..=20 {
        pair.send(&mut peer_message(&t, seq, 4000), 10_000).unwrap();
    }
    first.kill();
    // Queued in the sender's socket for the next connection, addressed to the dead receiver.
    for seq in 21..=25 {
        pair.send(&mut peer_message(&t, seq, 4000), 10_000).unwrap();
    }
    // The sender looks at its receivers' liveness once a second, when it sends.
    std::thread::sleep(Duration::from_millis(1200));
    let mut second = peer(&["recv", &s.name, &addr, "bind", "0", "1", "gaps", "pair"]);
    second.expect_line("ready");
    pair.send(&mut peer_message(&t, 26, 4000), 10_000).unwrap();
    let (got, bytes) = received(&mut second);
    assert!(second.wait().success(), "{:?}", second.seen);
    assert_eq!((got, bytes), (26, 26 * 4000), "messages 1 to 25 went out again before 26");
    drop(pair);
    t.sweep_dead_processes();
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "every message was taken and freed");
}

/// Issue 17 item 3, on request-reply: a reply to a requester whose transport went away before it
/// came. ZeroMQ drops it with the requester's connection; the replier named the requester on its
/// ticket (the transport that issued the request's), and releases it when it finds that
/// transport gone (here: when it closes). Before, the reply's block stayed allocated until the
/// session ended.
#[test]
fn i03_a_reply_to_a_requester_that_went_away_is_released() {
    let s = Session::new("repgone");
    let a = s.transport("replier");
    a.flush();
    let free0 = a.segment_stats().free;
    let rep = a.socket(SocketType::Rep, "rep").unwrap();
    let at = rep.attach(&s.ipc("rep"), &AttachOptions::new(Some(Method::Bind))).unwrap();
    {
        let b = s.transport("requester");
        let req = b.socket(SocketType::Req, "req").unwrap();
        req.connect(&at).unwrap();
        req.send(&mut b.new_message_from_slice(b"question").unwrap(), 10_000).unwrap();
        let mut q = a.new_message();
        rep.receive(&mut q, 10_000).unwrap();
        assert_eq!(q.data(), b"question");
    }
    rep.send(&mut a.new_message_from_slice(&[1u8; 5000]).unwrap(), 10_000).unwrap();
    drop(rep);
    a.flush();
    a.check_segment().unwrap();
    assert_eq!(a.segment_stats().free, free0, "the reply nobody could take was released");
}

/// Issue 17 item 3: a push whose attach failed part-way (its first endpoint connected, the second
/// refused) keeps the directory keys of its connected endpoints in step with ZeroMQ's peers, so
/// the receiver bound at a later endpoint is named for that endpoint's peer only. Out of step, it
/// was named on the tickets of what went to the first endpoint's receiver: its death, or its sweep
/// of a dead sender, took back or released records that were never its own.
#[test]
fn i03_a_push_attach_that_failed_part_way_names_each_endpoints_receiver() {
    let s = Session::new("partialattach");
    let mut c = s.config("sender");
    c.lanes = false;
    let t = fairmq_shm::Transport::new(&c).unwrap();
    let (first, later) = (s.transport("first"), s.transport("later"));
    let (first_at, later_at) = (s.ipc("first"), s.ipc("later"));
    let idle = first.socket(SocketType::Pull, "data").unwrap();
    idle.bind(&first_at).unwrap();
    let pull = later.socket(SocketType::Pull, "data").unwrap();
    pull.bind(&later_at).unwrap();
    let push = t.socket(SocketType::Push, "data").unwrap();
    let connect = AttachOptions::new(Some(Method::Connect));
    assert!(
        push.attach(&format!("{first_at},tcp://no.such.host.invalid:5555"), &connect).is_err(),
        "the second endpoint is refused"
    );
    push.attach(&later_at, &connect).unwrap();
    // Both receivers known (their probes came), the first one never receives.
    let mut got = 0;
    for seq in 0..40 {
        push.send(&mut peer_message(&t, seq, 100), 10_000).unwrap();
        let mut m = later.new_message();
        while pull.receive(&mut m, 0).is_ok() {
            got += 1;
        }
        // Sends spread over a while: both receivers' probes arrive meanwhile.
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut m = later.new_message();
    while pull.receive(&mut m, 500).is_ok() {
        got += 1;
    }
    let out = fairmq_shm::testing::segment(&t).in_flight();
    assert!(got > 0 && !out.is_empty(), "records went to both receivers ({got} taken, {} waiting)", out.len());
    assert!(
        out.iter().all(|&(_, _, _, receiver)| receiver != later.owner()),
        "what waits for the first receiver does not name the later one: {out:?}"
    );
    drop(idle);
}

/// Issue 37 item 1: a REP refuses a bad request and answers it with an empty frame (ZeroMQ's REP
/// takes the next request only after a reply), so its next real request is served; the bad
/// requester gets the empty reply.
#[test]
fn a_rep_answers_a_refused_request_and_serves_the_next() {
    let s = Session::new("badreq");
    let t = s.transport("r");
    let addr = format!("{}-rep", s.ipc("rep"));
    let rep = t.socket(SocketType::Rep, "rep").unwrap();
    rep.bind(&addr).unwrap();
    let raw_t = fairmq_zmq::Transport::new("raw").unwrap();
    let rogue = raw_t.socket(SocketType::Req, "rogue").unwrap();
    rogue.require_password(&t.connect_password());
    rogue.connect(&addr).unwrap();
    rogue.send(&mut ZMessage::from_slice(&[0x04, 0xff]), 5000).unwrap();
    let mut m = t.new_message();
    let e = rep.receive(&mut m, 500).expect_err("the bad request is refused, nothing to receive");
    assert_eq!(e.code(), TransferCode::Timeout, "{e}");
    let mut answer = ZMessage::new();
    rogue.receive(&mut answer, 5000).expect("the refused request is answered");
    assert_eq!(answer.size(), 0, "with an empty frame");
    let req = t.socket(SocketType::Req, "req").unwrap();
    req.connect(&addr).unwrap();
    req.send(&mut t.new_message_from_slice(b"question").unwrap(), 5000).unwrap();
    rep.receive(&mut m, 5000).expect("the next request is served");
    assert_eq!(m.data(), b"question");
    rep.send(&mut t.new_message_from_slice(b"answer").unwrap(), 5000).unwrap();
    let mut r = t.new_message();
    req.receive(&mut r, 5000).unwrap();
    assert_eq!(r.data(), b"answer");
}
