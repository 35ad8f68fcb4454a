//! Issue 17 item 3 on links whose ZeroMQ socket picks one of several peers (a DEALER bound with
//! several DEALERs connected): the sender cannot name the receiver of a record, so its tickets
//! name "one of the sockets facing the sender", and those sockets say in the session's directory
//! when they last found themselves empty. A process killed at either end leaves nothing allocated.

mod common;
use common::*;
use fairmq_zmq::{AttachOptions, Method, SocketType};
use std::time::{Duration, Instant};

/// A receiver killed while records it had not taken waited for it: once every live receiver was
/// empty long after they were sent, the sender knows they went to the dead one, takes them back
/// and sends them again (to the one left). Nothing is lost, nothing repeats, nothing stays
/// allocated. Before, they died with the receiver: the survivor got only its own share, and the
/// blocks stayed allocated until the session ended.
#[test]
fn i03_what_a_killed_one_of_several_receivers_did_not_take_goes_to_another() {
    let s = Session::new("dealerrecvkill");
    let t = s.transport("sender");
    t.flush();
    let free0 = t.segment_stats().free;
    let addr = s.ipc("dealers");
    let dealer = t.socket(SocketType::Dealer, "data").unwrap();
    dealer.attach(&addr, &AttachOptions::new(Some(Method::Bind))).unwrap();
    let receiver =
        |extra: &[&str]| peer(&[&["recv", &s.name, &addr, "connect", "0", "1", "any", "dealer"][..], extra].concat());
    let mut first = receiver(&["pause"]);
    first.expect_line("ready");
    dealer.send(&mut peer_message(&t, 0, 4000), 10_000).unwrap();
    first.expect_line("first");
    // It stopped itself: what ZeroMQ hands it from now on waits in its queue.
    let mut second = receiver(&[]);
    second.expect_line("ready");
    // Both connections accepted: ZeroMQ takes them in turn.
    wait_until("both receivers' connections", || dealer.number_of_connected_peers() == 2);
    for seq in 1..=20 {
        dealer.send(&mut peer_message(&t, seq, 4000), 10_000).unwrap();
    }
    first.kill();
    // The second took its share and freed it; the first's share is still out. Nothing reports
    // the second's progress: this pause lets it take its share, so that what is still out is the
    // first's.
    std::thread::sleep(Duration::from_millis(300));
    t.flush();
    assert!(t.segment_stats().free < free0, "some records went to the stopped receiver");
    // The sender looks once a second, when it sends; the second stays empty in between (its
    // receive gives up after 2 s without a message).
    for seq in 21..=30 {
        std::thread::sleep(Duration::from_millis(500));
        dealer.send(&mut peer_message(&t, seq, 4000), 10_000).unwrap();
    }
    let (got, bytes) = received(&mut second);
    assert!(second.wait().success(), "no message came twice: {:?}", second.seen);
    assert_eq!((got, bytes), (30, 30 * 4000), "messages 1 to 30 all reached the second receiver");
    drop(dealer);
    t.sweep_dead_processes();
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "every message was taken and freed");
}

/// A sender killed with records still in its own queues, for two receivers: what reached their
/// queues they take; what was lost with the sender is released by them, once both were empty
/// long after the sender was found gone. Before, such tickets named no receiver and their blocks
/// stayed allocated until the session ended.
#[test]
fn i03_what_a_killed_sender_of_several_receivers_had_queued_is_released_by_them() {
    let s = Session::new("dealersendkill");
    let t = s.transport("receivers");
    t.flush();
    let free0 = t.segment_stats().free;
    let addr = s.ipc("dealers");
    let mut sender = peer(&["send", &s.name, &addr, "bind", "0", "1000", "0", "hold", "dealer"]);
    // Connected once the sender has bound (its ipc path exists).
    wait_until("the sender's ipc path", || std::path::Path::new(&addr["ipc://".len()..]).exists());
    let receivers: Vec<_> = (0..2).map(|_| t.socket(SocketType::Dealer, "data").unwrap()).collect();
    for r in &receivers {
        r.attach(&addr, &AttachOptions::new(Some(Method::Connect))).unwrap();
    }
    let line = sender.expect_line("sent ");
    let sent: u64 = line["sent ".len()..].parse().unwrap();
    sender.kill();
    let mut got = 0u64;
    let mut quiet = Instant::now();
    let give_up = Instant::now() + GENEROUS;
    // Received until both were quiet for 2 s and the lost records were released (the sender's
    // caches are freed by a sweep of the dead), or the generous limit. Each receiver is drained
    // in turn: a blocking receive on one that had run dry while the other had a backlog took
    // that backlog a message per 100 ms wait, and under load the 2 s of quiet never came.
    while Instant::now() < give_up
        && (quiet.elapsed() < Duration::from_secs(2) || {
            t.sweep_dead_processes();
            t.flush();
            t.segment_stats().free != free0
        })
    {
        let before = got;
        for r in &receivers {
            let mut m = t.new_message();
            while r.receive(&mut m, 0).is_ok() {
                assert_eq!(m.size(), 1000);
                got += 1;
            }
        }
        if got > before {
            quiet = Instant::now();
        } else {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    assert!(got < sent, "records were still in the sender's queues when it died ({got} of {sent} arrived)");
    t.flush();
    t.check_segment().unwrap();
    assert_eq!(t.segment_stats().free, free0, "the {} messages lost in flight were released", sent - got);
}
