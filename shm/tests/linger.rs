//! Linger of the metadata sockets: a backlog beyond the queues still reaches a slow peer and
//! every block comes back. Linger 5000, -1 and 0 on a sender that closes before its receiver
//! appears are checked on both transports in the fairmq crate's conformance suite.

mod common;
use common::*;
use fairmq_zmq::{AttachOptions, Method, SocketOptions, SocketType, TransferError};
use std::time::Duration;

/// The quickstart's loss: a processor ends (linger 10 s) with more records queued than the sink's
/// queue and the kernel hold, while the sink reads slowly. Every message must arrive, in order, and
/// every block must come back to the segment.
#[test]
fn g12_linger_delivers_a_backlog_beyond_the_queues_to_a_slow_peer() {
    let s = Session::new("lingerbacklog");
    let receiver = s.transport("receiver");
    let pull = receiver.socket(SocketType::Pull, "in").unwrap();
    pull.set_options(&SocketOptions { rcv_buf_size: 100, ..pull.options().unwrap() }).unwrap();
    pull.attach(&s.ipc("b"), &AttachOptions::new(Some(Method::Bind))).unwrap();
    let (session, addr) = (s.config("sender"), s.ipc("b"));
    let (sent_tx, sent_rx) = std::sync::mpsc::channel();
    let sender = std::thread::spawn(move || {
        let t = fairmq_shm::Transport::new(&session).unwrap();
        let push = t.socket(SocketType::Push, "out").unwrap();
        push.set_options(&SocketOptions { snd_buf_size: 100, linger: 10_000, ..push.options().unwrap() }).unwrap();
        push.attach(&addr, &AttachOptions::new(Some(Method::Connect))).unwrap();
        let mut sent = 0u64;
        // Until everything is full (a send waits 1 s in vain): the receiver does not read yet.
        while push.send(&mut t.new_message_from_slice(&[sent.to_le_bytes(); 8].concat()).unwrap(), 1000).is_ok() {
            sent += 1;
        }
        sent_tx.send(sent).unwrap();
    });
    let sent = sent_rx.recv().unwrap();
    assert!(sent > 400, "the backlog must exceed both queues (sent {sent})");
    // What arrives, as the sequence numbers the payloads carry (all 8 words must agree).
    let mut seqs = Vec::new();
    let mut m = receiver.new_message();
    loop {
        match pull.receive(&mut m, 2000) {
            Err(TransferError::Timeout) => break, // nothing for 2 s: the sender is gone
            r => r.map(|_| ()).expect("receive"),
        }
        let words: Vec<u64> = m.data().chunks(8).map(|w| u64::from_le_bytes(w.try_into().unwrap())).collect();
        assert!(words.windows(2).all(|w| w[0] == w[1]), "an intact payload: {words:?}");
        seqs.push(words[0]);
        m = receiver.new_message(); // the block goes back at once, as a sink's would
        if seqs.len() % 20 == 0 {
            std::thread::sleep(Duration::from_millis(1)); // slow: the queue stays full
        }
    }
    sender.join().unwrap();
    assert_eq!(seqs, (0..sent).collect::<Vec<_>>(), "every queued message arrives once, in order");
    receiver.flush();
    let stats = receiver.segment_stats();
    assert_eq!(stats.used_blocks, 0, "every block came back: {stats:?}");
}
