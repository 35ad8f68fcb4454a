//! How long a blocked receive takes to return after `interrupt()` (every device state change
//! interrupts its transports), for fairmq-zmq and fairmq-shm. Target: well under 10 ms; FairMQ's
//! own loop notices an interruption only after its 100 ms poll.
//!
//! `cargo bench -p fairmq-benches --bench interrupt_latency`

use criterion::{criterion_group, criterion_main, Criterion};
use fairmq_benches::session::{unique_session, SessionGuard};
use fairmq_zmq::SocketType;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs `receive` (which blocks until interrupted) on a thread; each measured iteration waits for
/// the thread to block, interrupts, and times until the receive returned.
fn measure(
    c: &mut Criterion,
    name: &str,
    receive: impl FnMut() -> bool + Send + 'static,
    interrupt: impl Fn(),
    resume: impl Fn(),
) {
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<Instant>();
    let mut receive = receive;
    let thread = std::thread::spawn(move || {
        while go_rx.recv().is_ok() {
            assert!(receive(), "the receive returned something other than interrupted");
            let _ = done_tx.send(Instant::now());
        }
    });
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                resume();
                go_tx.send(()).expect("receiver thread");
                // Not measured: give the receive time to block in its poll.
                std::thread::sleep(Duration::from_micros(300));
                let start = Instant::now();
                interrupt();
                let returned = done_rx.recv().expect("receiver thread");
                total += returned.saturating_duration_since(start);
            }
            total
        })
    });
    resume();
    drop(go_tx);
    interrupt();
    let _ = thread.join();
}

fn zmq(c: &mut Criterion) {
    let t = fairmq_zmq::Transport::new("bench").expect("transport");
    let pull = t.socket(SocketType::Pull, "in").expect("socket");
    pull.bind("inproc://interrupt-latency").expect("bind");
    let (ti, tr) = (t.clone(), t.clone());
    measure(
        c,
        "interrupt_blocked_receive/fairmq-zmq",
        move || {
            let mut m = fairmq_zmq::Message::new();
            matches!(pull.receive(&mut m, -1), Err(fairmq_zmq::TransferError::Interrupted))
        },
        move || ti.interrupt(),
        move || tr.resume(),
    );
}

fn shm(c: &mut Criterion) {
    let session = unique_session("interrupt");
    let _guard = SessionGuard::new(&session);
    let mut config = fairmq_shm::ShmConfig::new("bench", &session);
    config.segment_size = 64 << 20;
    let t = fairmq_shm::Transport::new(&config).expect("transport");
    let pull = t.socket(SocketType::Pull, "in").expect("socket");
    pull.bind("inproc://interrupt-latency-shm").expect("bind");
    let (t2, ti, tr) = (t.clone(), t.clone(), t.clone());
    measure(
        c,
        "interrupt_blocked_receive/fairmq-shm",
        move || {
            let mut m = t2.new_message();
            matches!(pull.receive(&mut m, -1), Err(fairmq_zmq::TransferError::Interrupted))
        },
        move || ti.interrupt(),
        move || tr.resume(),
    );
}

criterion_group!(benches, zmq, shm);
criterion_main!(benches);
