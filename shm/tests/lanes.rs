//! Lanes: records between a sender with a single peer and its receiver go through a ring in the
//! segment. Order, waiting for room (timeout, interruption), frames too large for the ring, a
//! reader that leaves (what it did not read goes to the next one), and the poller.

mod common;
use common::*;
use fairmq_shm::{Message, Poller, Transport};
use fairmq_zmq::{AttachOptions, Method, SocketOptions, SocketType, TransferCode};
use std::time::{Duration, Instant};

const LONG: i32 = 30_000;
/// Single-record entries a lane's ring holds (64 KiB of 40-byte entries).
const RING_ENTRIES: usize = (64 << 10) / 40;

/// A PUSH of `tx` and a PULL of `rx` at `addr`, the push bound (`bind_sender`) or the pull.
fn push_pull(
    tx: &Transport,
    rx: &Transport,
    addr: &str,
    bind_sender: bool,
) -> (fairmq_shm::Socket, fairmq_shm::Socket) {
    let push = tx.socket(SocketType::Push, "out").unwrap();
    let pull = rx.socket(SocketType::Pull, "in").unwrap();
    if bind_sender {
        push.bind(addr).unwrap();
        pull.connect(addr).unwrap();
    } else {
        pull.bind(addr).unwrap();
        push.connect(addr).unwrap();
    }
    (push, pull)
}

fn numbered(t: &Transport, seq: u64) -> Message {
    t.new_message_from_slice(&seq.to_le_bytes()).unwrap()
}

fn seq_of(m: &Message) -> u64 {
    u64::from_le_bytes(m.data()[..8].try_into().unwrap())
}

/// Receives the messages numbered `seqs`, in that order.
fn receive_in_order(t: &Transport, pull: &fairmq_shm::Socket, seqs: std::ops::Range<u64>) {
    let mut m = t.new_message();
    for expected in seqs {
        pull.receive(&mut m, LONG).unwrap();
        assert_eq!(seq_of(&m), expected);
    }
}

#[test]
fn messages_and_large_multiparts_arrive_in_order_and_everything_comes_back() {
    let s = Session::new("laneorder");
    let t = s.transport("t");
    t.flush();
    let free0 = t.segment_stats().free;
    let addr = s.ipc("order");
    {
        let (pull, push) = linked(&t, SocketType::Pull, SocketType::Push, &addr);
        let (mut next, mut expected) = (0u64, 0u64);
        let mut m = t.new_message();
        for round in 0..20 {
            for _ in 0..500 {
                push.send(&mut numbered(&t, next), LONG).unwrap();
                next += 1;
            }
            // 1000 parts: a 28 KB metadata frame, larger than a lane entry may be.
            let mut parts: Vec<Message> = (0..1000).map(|i| numbered(&t, 1_000_000 * (round + 1) + i)).collect();
            push.send_parts(&mut parts, LONG).unwrap();
            assert!(parts.iter().all(Message::is_empty), "sent parts are handed over");
            receive_in_order(&t, &pull, expected..expected + 500);
            expected += 500;
            let mut parts = Vec::new();
            pull.receive_parts(&mut parts, LONG).unwrap();
            assert_eq!(parts.len(), 1000);
            for (i, p) in parts.iter().enumerate() {
                assert_eq!(seq_of(p), 1_000_000 * (round + 1) + i as u64);
            }
        }
        assert_eq!(pull.receive(&mut m, 0).unwrap_err().code(), TransferCode::Timeout, "nothing more");
        assert_eq!(push.counters().messages_tx, 20 * 501);
        assert_eq!(pull.counters().messages_rx, 20 * 501);
    }
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "every block came back, the lane's too");
}

#[test]
fn a_full_lane_times_out_or_is_interrupted_and_the_sender_keeps_its_message() {
    let s = Session::new("lanefull");
    let t = s.transport("t");
    let addr = s.ipc("full");
    let (pull, push) = linked(&t, SocketType::Pull, SocketType::Push, &addr);
    let mut sent = 0u64;
    loop {
        let mut m = numbered(&t, sent);
        match push.send(&mut m, 100) {
            Ok(_) => sent += 1,
            Err(e) => {
                assert_eq!(e.code(), TransferCode::Timeout);
                assert_eq!(seq_of(&m), sent, "the caller keeps the message");
                assert_eq!(m.refcount(), 1);
                break;
            }
        }
    }
    assert_eq!(sent as usize, RING_ENTRIES, "the ring's room, not ZeroMQ's queue, bounds the lane");
    // Interrupted: at once, message kept; after resume the send waits again (and times out).
    t.interrupt();
    let mut m = numbered(&t, sent);
    let start = Instant::now();
    assert_eq!(push.send(&mut m, -1).unwrap_err().code(), TransferCode::Interrupted);
    assert!(start.elapsed() < Duration::from_secs(20));
    t.resume();
    assert_eq!(push.send(&mut m, 50).unwrap_err().code(), TransferCode::Timeout);
    // A reader that takes one makes room for exactly that one.
    let mut r = t.new_message();
    pull.receive(&mut r, LONG).unwrap();
    assert_eq!(seq_of(&r), 0);
    push.send(&mut m, LONG).unwrap();
    receive_in_order(&t, &pull, 1..sent + 1);
}

#[test]
fn a_sender_waiting_for_room_is_woken_by_an_interrupt_from_another_thread() {
    let s = Session::new("lanewake");
    let t = s.transport("t");
    let addr = s.ipc("wake");
    let (_pull, push) = linked(&t, SocketType::Pull, SocketType::Push, &addr);
    for i in 0..RING_ENTRIES as u64 {
        push.send(&mut numbered(&t, i), LONG).unwrap();
    }
    let t2 = t.clone();
    let waker = std::thread::spawn(move || {
        // Most likely while the send waits (one before it returns at once: also interrupted).
        std::thread::sleep(Duration::from_millis(200));
        t2.interrupt();
    });
    let mut m = numbered(&t, 99);
    assert_eq!(push.send(&mut m, -1).unwrap_err().code(), TransferCode::Interrupted);
    waker.join().unwrap();
    assert_eq!(seq_of(&m), 99);
}

/// A send queue set larger than ZeroMQ's default sizes the lane: it holds at least as many
/// records as the socket would queue (rounded up to a power-of-two ring).
#[test]
fn a_lane_holds_as_many_records_as_the_send_queue_is_set_to() {
    let s = Session::new("lanehwm");
    let t = s.transport("t");
    let addr = s.ipc("hwm");
    let (pull, push) = linked(&t, SocketType::Pull, SocketType::Push, &addr);
    push.set_options(&SocketOptions { snd_buf_size: 10_000, ..push.options().unwrap() }).unwrap();
    push.send(&mut numbered(&t, 0), LONG).unwrap();
    let mut sent = 1;
    while push.send(&mut numbered(&t, sent), 0).is_ok() {
        sent += 1;
    }
    assert_eq!(sent, (512 << 10) / 40, "10 000 records of 40 bytes: a 512 KiB ring");
    receive_in_order(&t, &pull, 0..sent);
}

/// A writer that waits for room sleeps until its reader has emptied half the ring (as libzmq's
/// pipes wait for their low-water mark); the reader's consumes wake it however they go: in bursts,
/// one at a time, with pauses, or all at once.
#[test]
fn a_sender_waiting_for_room_is_woken_by_its_reader_and_nothing_is_lost() {
    let s = Session::new("lanelow");
    let t = s.transport("t");
    let addr = s.ipc("low");
    let (pull, push) = linked(&t, SocketType::Pull, SocketType::Push, &addr);
    let total = 10 * RING_ENTRIES as u64;
    let t2 = t.clone();
    let writer = std::thread::spawn(move || {
        for i in 0..total {
            push.send(&mut numbered(&t2, i), LONG).unwrap();
        }
        push
    });
    let mut m = t.new_message();
    for expected in 0..total {
        if expected % 700 == 0 {
            std::thread::sleep(Duration::from_millis(5)); // lets the writer fill the ring
        }
        pull.receive(&mut m, LONG).unwrap();
        assert_eq!(seq_of(&m), expected);
    }
    let push = writer.join().unwrap();
    assert_eq!(push.counters().messages_tx, total);
    assert_eq!(pull.receive(&mut m, 0).unwrap_err().code(), TransferCode::Timeout, "nothing more");
}

#[test]
fn what_a_reader_that_left_did_not_read_goes_to_the_next_reader() {
    let s = Session::new("laneleft");
    let t = s.transport("t");
    t.flush();
    let free0 = t.segment_stats().free;
    let addr = s.ipc("left");
    {
        let push = t.socket(SocketType::Push, "out").unwrap();
        push.connect(&addr).unwrap();
        let first = t.socket(SocketType::Pull, "first").unwrap();
        first.bind(&addr).unwrap();
        for i in 0..10 {
            push.send(&mut numbered(&t, i), LONG).unwrap();
        }
        let mut m = t.new_message();
        for i in 0..3 {
            first.receive(&mut m, LONG).unwrap();
            assert_eq!(seq_of(&m), i);
        }
        drop(first); // 7 unread in its lane
        let second = t.socket(SocketType::Pull, "second").unwrap();
        second.bind(&addr).unwrap();
        push.send(&mut numbered(&t, 10), LONG).unwrap();
        // The new lane's offer may be lost with the old connection (ZeroMQ reconnects later); the
        // writer's next send after a while offers it again.
        std::thread::sleep(Duration::from_millis(400));
        push.send(&mut numbered(&t, 11), LONG).unwrap();
        for i in 3..=11 {
            second.receive(&mut m, LONG).unwrap();
            assert_eq!(seq_of(&m), i, "sent again first, in order, then the new one");
        }
        assert_eq!(second.receive(&mut m, 200).unwrap_err().code(), TransferCode::Timeout, "each exactly once");
    }
    t.flush();
    assert_eq!(t.segment_stats().free, free0, "both lanes and every message came back");
}

#[test]
fn the_poller_sees_lane_input_and_not_the_wake_frames() {
    let s = Session::new("lanepoll");
    let t = s.transport("t");
    let addr = s.ipc("poll");
    let (pull, push) = linked(&t, SocketType::Pull, SocketType::Push, &addr);
    let mut poller = Poller::new(&[&pull]);
    assert_eq!(poller.poll(50).unwrap(), 0);
    let mut m = t.new_message();
    for i in 0..50 {
        push.send(&mut numbered(&t, i), LONG).unwrap();
        assert_eq!(poller.poll(10_000).unwrap(), 1, "message {i}");
        assert!(poller.check_input(0));
        pull.receive(&mut m, 0).unwrap();
        assert_eq!(seq_of(&m), i);
        // The reader slept in the poll: the writer's wake frame must not look like input.
        assert_eq!(poller.poll(20).unwrap(), 0, "after message {i}");
        assert!(!poller.check_input(0));
    }
}

/// Lanes turned off: records go through the socket (no lane block is allocated), bound or not.
#[test]
fn lanes_turned_off_use_the_socket() {
    let s = Session::new("lanenot");
    let mut c = s.config("off");
    c.lanes = false;
    let off = Transport::new(&c).unwrap();
    let t = s.transport("on");
    for bind_sender in [false, true] {
        let addr = s.ipc(&format!("not-{bind_sender}"));
        let (push, pull) = push_pull(&off, &t, &addr, bind_sender);
        let mut msg = numbered(&off, 7);
        let used = t.segment_stats().used_blocks;
        push.send(&mut msg, LONG).unwrap();
        assert_eq!(t.segment_stats().used_blocks, used, "no lane block was allocated");
        let mut m = t.new_message();
        pull.receive(&mut m, LONG).unwrap();
        assert_eq!(seq_of(&m), 7);
    }
}

/// Issue 21: a bound PUSH with one connected peer sends through a lane once the peer took what went
/// on the socket, in order; a second peer sends it back to the socket (both get messages, none twice), and once the
/// second left (what waited in its queue went with it, as ZeroMQ drops a closed socket's queue) and
/// the first took all it was sent, the lane again: the first gets everything, in order. Before, a
/// bound push never used a lane.
/// A bound PUSH whose first send waits for its receiver to connect starts the stream on a lane.
/// Before, the records went through the socket until the receiver once caught up with all of
/// them: in a device-to-device stream, thousands of messages at twice the cost.
#[test]
fn a_push_that_waited_for_its_receiver_starts_on_a_lane() {
    let s = Session::new("lanefirst");
    let t = s.transport("t");
    let addr = s.ipc("first");
    let push = t.socket(SocketType::Push, "out").unwrap();
    push.bind(&addr).unwrap();
    let sender = std::thread::spawn({
        let t = t.clone();
        move || {
            for seq in 0..5 {
                push.send(&mut numbered(&t, seq), LONG).unwrap();
            }
            push
        }
    });
    // The first send waits for a peer meanwhile (or, on a slow machine, finds it: a lane either way).
    std::thread::sleep(Duration::from_millis(200));
    let pull = t.socket(SocketType::Pull, "in").unwrap();
    pull.connect(&addr).unwrap();
    let push = sender.join().unwrap();
    let (written, _) = push.lane_counts();
    assert_eq!(written.load(std::sync::atomic::Ordering::Relaxed), 1, "the records went into a lane");
    let got: Vec<u64> = (0..5)
        .map(|_| {
            let mut m = t.new_message();
            pull.receive(&mut m, LONG).unwrap();
            seq_of(&m)
        })
        .collect();
    assert_eq!(got, (0..5).collect::<Vec<_>>(), "all of them, in order");
}

#[test]
fn a_bound_push_uses_a_lane_while_it_has_one_peer() {
    let s = Session::new("lanebound");
    let t = s.transport("t");
    let addr = s.ipc("bound");
    let (push, first) = push_pull(&t, &t, &addr, true);
    let take = |pull: &fairmq_shm::Socket, got: &mut Vec<u64>| {
        let mut m = t.new_message();
        while pull.receive(&mut m, 200).is_ok() {
            got.push(seq_of(&m));
        }
    };
    let (mut got1, mut got2, mut seq) = (Vec::new(), Vec::new(), 0);
    let send = |seq: &mut u64| {
        push.send(&mut numbered(&t, *seq), LONG).unwrap();
        *seq += 1;
    };
    // The first messages go on the socket (the peer's probe may not be known yet); once it took
    // them, a lane (listed by both ends as a shared block).
    (0..10).for_each(|_| send(&mut seq));
    take(&first, &mut got1);
    (10..20).for_each(|_| send(&mut seq));
    assert!(!t.shared_blocks_held().is_empty(), "a lane carries the next ones");
    take(&first, &mut got1);
    assert_eq!(got1, (0..20).collect::<Vec<_>>());
    let second = t.socket(SocketType::Pull, "in2").unwrap();
    second.connect(&addr).unwrap();
    let deadline = Instant::now() + GENEROUS;
    while got2.is_empty() {
        assert!(Instant::now() < deadline, "the second peer never got a message");
        send(&mut seq);
        take(&first, &mut got1);
        take(&second, &mut got2);
    }
    drop(second);
    wait_until("the push seeing the second peer go", || push.number_of_connected_peers() <= 1);
    let alone = seq;
    (0..20).for_each(|_| send(&mut seq));
    take(&first, &mut got1);
    let mut all: Vec<u64> = got1.iter().chain(&got2).copied().collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), got1.len() + got2.len(), "no message twice");
    assert!(got1.windows(2).all(|w| w[0] < w[1]), "the first peer got its share in order: {got1:?}");
    assert!((alone..seq).all(|s| got1.contains(&s)), "alone again, it got all 20: {got1:?}");
}

/// Issue 21: a bound PUSH that found its one peer took everything sends on through its lane
/// without looking for peers on every send (that reads the clock and the socket), yet sees a peer
/// that connects at once, by the count of connected peers: a sender that sends seldom hands the new
/// peer a message within a few sends, not only after the sends its finding stands for.
#[test]
fn a_bound_push_on_a_lane_sees_a_new_peer_within_a_few_sends() {
    let s = Session::new("lanenewpeer");
    let t = s.transport("t");
    let addr = s.ipc("bound");
    let (push, first) = push_pull(&t, &t, &addr, true);
    until_on_a_lane(&t, &push, &first);
    let second = t.socket(SocketType::Pull, "in2").unwrap();
    second.connect(&addr).unwrap();
    wait_until("the push counting its second peer", || push.number_of_connected_peers() == 2);
    // Fewer sends than a finding stands for: only the count can have sent one to the second.
    let mut m = t.new_message();
    let got = (1..=40).any(|seq| {
        std::thread::sleep(Duration::from_millis(5));
        push.send(&mut numbered(&t, seq), LONG).unwrap();
        second.receive(&mut m, 20).is_ok()
    });
    assert!(got, "the second peer got none of 40 messages sent after it connected");
}

/// Sends numbered messages from `push` (bound) to `pull` (its one peer), each received at once,
/// until a lane carries them (the first ones may go on the socket); the next number.
fn until_on_a_lane(t: &Transport, push: &fairmq_shm::Socket, pull: &fairmq_shm::Socket) -> u64 {
    let mut m = t.new_message();
    for seq in 0.. {
        if !t.shared_blocks_held().is_empty() {
            return seq;
        }
        assert!(seq < 1000, "the push never took to a lane");
        push.send(&mut numbered(t, seq), LONG).unwrap();
        pull.receive(&mut m, LONG).unwrap();
        assert_eq!(seq_of(&m), seq);
    }
    unreachable!("the loop returns or fails")
}

/// Issue 21, review of the bound PUSH's finding that its one peer took everything: records it
/// sends on the socket meanwhile (here while its queue was too small for a lane) drop the finding,
/// so that with room for a lane again the next messages wait for the peer to claim those records
/// and arrive after them. Before, the finding stood: the next ones went through the lane, which
/// the peer reads first, ahead of the records on the socket.
#[test]
fn a_bound_push_back_on_its_lane_after_sending_on_the_socket_keeps_the_order() {
    let s = Session::new("lanebackorder");
    let t = s.transport("t");
    let addr = s.ipc("bound");
    let (push, pull) = push_pull(&t, &t, &addr, true);
    let start = until_on_a_lane(&t, &push, &pull);
    push.set_options(&SocketOptions { snd_buf_size: 100, ..push.options().unwrap() }).unwrap(); // too small a queue for a lane
    for seq in start..start + 5 {
        push.send(&mut numbered(&t, seq), LONG).unwrap();
    }
    push.set_options(&SocketOptions { snd_buf_size: 1000, ..push.options().unwrap() }).unwrap();
    for seq in start + 5..start + 10 {
        push.send(&mut numbered(&t, seq), LONG).unwrap();
    }
    receive_in_order(&t, &pull, start..start + 10);
}

/// Issue 17 item 11: in a segment too small for a lane's ring (150 kB), a single-peer push sends
/// through the socket instead of waiting for ever for room for a ring.
#[test]
fn i11_a_segment_too_small_for_a_lane_sends_through_the_socket() {
    let s = Session::new("tiny-lane");
    let mut c = s.config("tiny");
    c.segment_size = 150_000;
    let t = Transport::new(&c).unwrap();
    let (pull, push) = linked(&t, SocketType::Pull, SocketType::Push, &s.ipc("tiny"));
    for seq in 0..100 {
        assert_eq!(push.send(&mut numbered(&t, seq), 2000).unwrap(), 8, "message {seq} went out");
    }
    receive_in_order(&t, &pull, 0..100);
}

/// A push that sends one message right after it connected: its ZeroMQ socket attaches the
/// connection a moment later, and the lane's offer cannot go out before. The send waits for it;
/// before, the message sat in a lane nobody had heard of until the push's next send (a receive
/// that waited for it timed out, most often under load).
#[test]
fn a_message_sent_right_after_connecting_arrives() {
    let s = Session::new("sendatonce");
    let t = s.transport("a");
    let t2 = s.transport("b");
    for i in 0..100 {
        let pull = t.socket(SocketType::Pull, "in").unwrap();
        let at = pull.attach(&s.ipc(&format!("now{i}")), &AttachOptions::new(Some(Method::Bind))).unwrap();
        let push = t2.socket(SocketType::Push, "out").unwrap();
        push.connect(&at).unwrap();
        push.send(&mut t2.new_message_from_slice(&[i as u8; 100]).unwrap(), 10_000).unwrap();
        let mut m = t.new_message();
        pull.receive(&mut m, 10_000).unwrap_or_else(|e| panic!("message {i}: {e}"));
        assert_eq!(m.data(), &[i as u8; 100][..]);
    }
}

/// Runs `scenario` (given the session and a lane's address) between two looks at an observer's
/// segment: once the sweep of the dead ran, every block is back (`what` says what came back).
fn nothing_left_after(tag: &str, what: &str, scenario: impl FnOnce(&Session, &str)) {
    let s = Session::new(tag);
    let t = s.transport("observer");
    t.flush();
    let free0 = t.segment_stats().free;
    scenario(&s, &s.ipc("lane"));
    t.sweep_dead_processes();
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "{what}");
}

/// A receiver (a PULL bound at `addr`, lanes on) and a sender connected to it with `flags`; the
/// receiver stopped once it took the first message.
fn stopped_receiver_and_sender(s: &Session, addr: &str, flags: &[&str]) -> (Peer, Peer) {
    let mut receiver = peer(&["recv", &s.name, addr, "bind", "0", "1", "pause"]);
    receiver.expect_line("ready");
    let sender = peer(&[&["send", &s.name, addr, "connect"][..], flags].concat());
    receiver.expect_line("first");
    (receiver, sender)
}

/// Issue 17 item 3: a lane's writer killed while it held what it took back from a reader that
/// died (to send again on its next lane, which it had no peer to offer to): those blocks were
/// marked its own again when they left the ring, so the sweep of the dead frees them. Before, they
/// stayed marked in flight, named by nothing, until the session ended.
#[test]
fn i03_a_lane_writer_killed_with_what_it_took_back_leaves_nothing() {
    nothing_left_after("laneresendkill", "what the writer took back was freed with it", |s, addr| {
        let (mut receiver, mut sender) = stopped_receiver_and_sender(s, addr, &["0", "1000", "0", "retry"]);
        // The ring is full: the sender tries again every 100 ms from now on.
        sender.expect_line("sent ");
        receiver.kill();
        // Trying again, it finds its reader dead and takes back what that one did not read
        // (nothing reports it: a pause of several tries).
        std::thread::sleep(Duration::from_millis(1500));
        sender.kill();
    });
}

/// Issue 17 item 3: a lane no reader ever claimed (its offer waits, unread, in a receiver's
/// queue), and both ends killed: the offer's ticket names the receiver, so the sweep of the dead
/// finds it lost, and releases the lane with what it holds. Before, offers named nobody and such a
/// lane stayed in the segment, with its messages, until the session ended.
#[test]
fn i03_a_lane_nobody_claimed_is_released_when_both_ends_died() {
    nothing_left_after("laneunclaimed", "the lane and its messages were released", |s, addr| {
        let mut receiver = peer(&["recv", &s.name, addr, "bind", "0", "1", "deaf"]);
        receiver.expect_line("ready");
        let mut sender = peer(&["send", &s.name, addr, "connect", "0", "1000", "0", "hold"]);
        let line = sender.expect_line("sent ");
        let sent: u64 = line["sent ".len()..].parse().unwrap();
        assert!(sent > 100, "the lane took messages ({sent}) though nobody claimed it");
        receiver.kill();
        sender.kill();
    });
}

/// Issue 17 item 3: a lane whose writer closed (its process ended) while the reader had not read
/// it all, the reader then killed: its reference was the last, so the sweep that counts it out
/// releases what the lane still holds, and the lane. Before, the writer left the lane to the
/// reader alone, the sweep freed the lane's block as the reader's, and the messages in it stayed
/// allocated until the session ended.
#[test]
fn i03_a_lane_reader_killed_after_its_writer_left_leaves_nothing() {
    nothing_left_after("lanewriterleft", "the lane and the messages in it were released", |s, addr| {
        let (mut receiver, mut sender) = stopped_receiver_and_sender(s, addr, &["200", "1000", "0"]);
        assert!(sender.wait().success(), "the sender sent 200 and left: {:?}", sender.seen);
        receiver.kill();
    });
}

/// A lane's last holder killed, and a monitor sweeps it first: the monitor has no transport to
/// release what the lane holds with, so it attaches one, whose attach sweeps the dead. Before, the
/// monitor counted the reader out and the lane stayed, with the messages in it, for the session's
/// life (every process killed in a session that lives on could leave a full lane behind).
#[test]
fn i03_a_lane_whose_last_holder_a_monitor_sweeps_leaves_nothing() {
    nothing_left_after("lanemonitor", "the monitor's sweep released the lane and its messages", |s, addr| {
        let (mut receiver, mut sender) = stopped_receiver_and_sender(s, addr, &["200", "1000", "0"]);
        assert!(sender.wait().success(), "the sender sent 200 and left: {:?}", sender.seen);
        let pid = receiver.pid();
        receiver.kill();
        let swept = fairmq_shm::monitor::sweep(&fairmq_shm::shm_id(&s.name)).unwrap();
        assert_eq!(swept.dead, [pid], "the monitor found the reader dead");
        assert!(swept.by_transport, "and had a transport sweep it");
    });
}

/// Issue 17 item 3: both ends of a lane killed (the reader stopped with the ring full): the sweep
/// drops each side's reference, and the one that drops the last releases what the lane holds.
/// Before, the lane, and every message in it, stayed allocated until the session ended.
#[test]
fn i03_a_lane_whose_two_ends_were_killed_leaves_nothing() {
    nothing_left_after("lanebothkilled", "the lane and the messages in it were released", |s, addr| {
        let (mut receiver, mut sender) = stopped_receiver_and_sender(s, addr, &["0", "1000", "0", "hold"]);
        sender.expect_line("sent ");
        sender.kill();
        receiver.kill();
    });
}

/// A lane's reader killed at random moments while it receives, then its writer: every round,
/// nothing stays allocated. Before, the reader took an entry out of the ring and only then marked
/// its blocks its own: killed in between, it left a block in flight that nothing named (one
/// message lost for the session's life); most runs failed.
///
/// The writer is killed once the reader's sweep is done (by the writer, or by the observer):
/// a sweeper killed while it drops one listed reference loses that one (by design: never dropped
/// twice); one killed anywhere else leaves the sweep to the next (see the unit tests of
/// `liveness`).
#[test]
fn i03_a_lane_reader_killed_while_receiving_leaves_nothing() {
    for round in 0..12u64 {
        let s = Session::new(&format!("lanerecvkill{round}"));
        let t = s.transport("observer");
        t.flush();
        let free0 = t.segment_stats().free;
        let addr = s.ipc("lane");
        let mut receiver = peer(&["recv", &s.name, &addr, "bind", "0", "1"]);
        receiver.expect_line("ready");
        let mut sender = peer(&["send", &s.name, &addr, "connect", "10000000", "16", "0"]);
        receiver.expect_line("first");
        // A different moment of the receive loop each round.
        std::thread::sleep(Duration::from_millis(3 + round * 7 % 40));
        receiver.kill();
        let gone = receiver.pid();
        let m = fairmq_shm::testing::management::Management::open_existing(s.names()).unwrap();
        wait_until(&format!("round {round}: the dead reader counted out"), || {
            t.sweep_dead_processes();
            !fairmq_shm::testing::liveness::attached(&m).iter().any(|a| a.pid == gone)
        });
        sender.kill();
        t.sweep_dead_processes();
        t.flush();
        t.check_segment().unwrap();
        assert_eq!(t.segment_stats().free, free0, "round {round}: what the reader was taking was freed");
    }
}

/// Issue 17 item 3: both ends of a lane killed, and the first transport to find them dead is one
/// that attaches (its attach counts dead processes out): it releases the lane and its messages
/// too. Before, that sweep ran before the transport was ready to release messages, and left the
/// lane's last reference in place: a restarted device leaked the lanes of the links it replaced.
#[test]
fn i03_a_transport_that_attaches_after_both_ends_of_a_lane_died_releases_it() {
    let s = Session::new("laneattachsweep");
    let t = s.transport("observer");
    t.flush();
    let free0 = t.segment_stats().free;
    let addr = s.ipc("lane");
    let (mut receiver, mut sender) = stopped_receiver_and_sender(&s, &addr, &["0", "1000", "0", "hold"]);
    sender.expect_line("sent ");
    sender.kill();
    receiver.kill();
    let (sender, receiver) = (sender.pid(), receiver.pid());
    let late = s.transport("late");
    assert!(t.sweep_dead_processes().is_empty(), "the attach of the late one counted them out ({sender}, {receiver})");
    drop(late);
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "the lane and the messages in it were released");
}

/// A receiver that closes without reading the offer of its sender's lane (a device that
/// restarts), and a new one at the same address: the lane is offered again to the new one,
/// which reads what the first did not, then the rest, in order. The offer the first left behind
/// was released as lost while the sender lived (its ticket claimed, the lane left to the sender);
/// before, the sender then never offered the lane again, and the new receiver got nothing.
#[test]
fn a_receiver_that_comes_back_gets_the_lane_its_predecessor_never_claimed() {
    let s = Session::new("lanecomeback");
    let tx = s.transport("tx");
    let addr = s.ipc("back");
    let push = tx.socket(SocketType::Push, "out").unwrap();
    {
        let rx = s.transport("rx1");
        let pull = rx.socket(SocketType::Pull, "in").unwrap();
        pull.bind(&addr).unwrap();
        push.connect(&addr).unwrap();
        for seq in 0..10 {
            push.send(&mut numbered(&tx, seq), LONG).unwrap();
        }
    }
    let rx = s.transport("rx2");
    let pull = rx.socket(SocketType::Pull, "in").unwrap();
    pull.bind(&addr).unwrap();
    // A sender offers a lane nobody claimed again as it sends (at most every 250 ms).
    for seq in 10..20 {
        push.send(&mut numbered(&tx, seq), LONG).unwrap();
        std::thread::sleep(Duration::from_millis(60));
    }
    receive_in_order(&rx, &pull, 0..20);
}

/// A sender that closes while the offer of its lane went to a receiver that is gone (it left
/// before claiming the lane) releases the lane and the messages in it: no reader can claim it
/// any more. Before, the lane was left to a first claimant that could not come, and stayed in
/// the segment with its messages for as long as the sender's process lived.
#[test]
fn a_lane_nobody_can_claim_goes_when_its_sender_closes() {
    let s = Session::new("lanenoclaim");
    let tx = s.transport("tx");
    tx.flush();
    let free0 = tx.segment_stats().free;
    let addr = s.ipc("noclaim");
    let push = tx.socket(SocketType::Push, "out").unwrap();
    push.set_options(&SocketOptions { linger: 0, ..push.options().unwrap() }).unwrap();
    {
        let rx = s.transport("rx");
        let pull = rx.socket(SocketType::Pull, "in").unwrap();
        push.bind(&addr).unwrap();
        pull.connect(&addr).unwrap();
        for seq in 0..10 {
            push.send(&mut numbered(&tx, seq), LONG).unwrap();
        }
    }
    drop(push);
    tx.flush();
    tx.check_segment().unwrap();
    assert_eq!(tx.segment_stats().free, free0, "the lane and its 10 messages were released");
}

/// A lane's reader killed at a different moment of its receive loop each round while its sender
/// lives on: a second receiver at the same address gets what the first did not take, no message
/// twice (the peer checks every payload and refuses a repeat), the sender ends normally once
/// everything went out, and nothing stays allocated. The writer takes back what its dead reader
/// left, except an entry the reader had begun to take (its blocks are the dead reader's, freed by
/// the sweep): before, that entry was sent again or released a second time.
#[test]
fn i03_what_a_killed_lane_reader_left_goes_to_the_next_one_once() {
    for round in 0..6u64 {
        let s = Session::new(&format!("lanenext{round}"));
        let t = s.transport("observer");
        t.flush();
        let free0 = t.segment_stats().free;
        let addr = s.ipc("lane");
        let mut first = peer(&["recv", &s.name, &addr, "bind", "0", "1"]);
        first.expect_line("ready");
        let mut sender = peer(&["send", &s.name, &addr, "connect", "200000", "16", "0"]);
        first.expect_line("first");
        std::thread::sleep(Duration::from_millis(3 + round * 7 % 40));
        first.kill();
        let mut second = peer(&["recv", &s.name, &addr, "bind", "0", "1", "any"]);
        second.expect_line("ready");
        let got = second.expect_line("received ");
        assert!(second.wait().success(), "round {round}: the second receiver: {:?}", second.seen);
        assert!(sender.wait().success(), "round {round}: the sender: {:?}", sender.seen);
        let n: u64 = got["received ".len()..].split(' ').next().unwrap().parse().unwrap();
        assert!(n > 0, "round {round}: the second receiver got nothing");
        t.sweep_dead_processes();
        t.flush();
        t.check_segment().unwrap();
        assert_eq!(t.segment_stats().free, free0, "round {round}: everything was freed");
    }
}

/// Issue 21: a receiver with a lane looks at its ZeroMQ socket only now and then while it polls
/// (timeout 0); what comes through the socket (a second sender's first messages, before it has a
/// lane of its own) still arrives, all of it, in order, while the lane's messages keep coming.
#[test]
fn i21_a_polling_receiver_with_a_lane_gets_what_comes_through_its_socket() {
    let s = Session::new("lanepoll");
    let t = s.transport("t");
    let addr = s.ipc("poll");
    let (first, pull) = push_pull(&t, &t, &addr, false);
    let poll = |got: &mut Vec<u64>| {
        let mut m = t.new_message();
        while pull.receive(&mut m, 0).is_ok() {
            got.push(seq_of(&m));
        }
    };
    let mut got = Vec::new();
    // The first sender's lane: its first messages go on the socket, the next ones on the lane.
    for seq in 0..10 {
        first.send(&mut numbered(&t, seq), LONG).unwrap();
    }
    receive_in_order(&t, &pull, 0..10);
    for seq in 10..20 {
        first.send(&mut numbered(&t, seq), LONG).unwrap();
    }
    assert!(!t.shared_blocks_held().is_empty(), "a lane carries the first sender's messages");
    let second = t.socket(SocketType::Push, "out2").unwrap();
    second.connect(&addr).unwrap();
    for seq in 1000..1010 {
        second.send(&mut numbered(&t, seq), LONG).unwrap();
    }
    let deadline = Instant::now() + GENEROUS;
    while got.len() < 20 {
        assert!(Instant::now() < deadline, "polling got only {got:?}");
        poll(&mut got);
        std::thread::yield_now();
    }
    let (lane, socket): (Vec<u64>, Vec<u64>) = got.iter().partition(|&&s| s < 1000);
    assert_eq!(lane, (10..20).collect::<Vec<_>>());
    assert_eq!(socket, (1000..1010).collect::<Vec<_>>());
    poll(&mut got);
    assert_eq!(got.len(), 20, "nothing more, nothing twice");
}
