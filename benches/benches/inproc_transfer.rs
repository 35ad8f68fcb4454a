//! Send+receive within one process, receiver on a second thread, for each transport: fairmq-zmq
//! over inproc, fairmq-shm over inproc and over ipc (fairmq-shm's metadata always goes through
//! ZeroMQ; the payload stays in the segment).
//!
//! FairMQ's benchmark mode: a fresh message per send, the receiver drops it unread. A timed batch
//! ends only when the receiver has taken every message (see `zmq_push_pull.rs`).
//!
//! `cargo bench -p fairmq-benches --bench inproc_transfer`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fairmq_benches::session::{unique_session, SessionGuard};
use fairmq_benches::{ipc_dir, Delivered};
use fairmq_zmq::SocketType;
use std::time::Duration;

const SIZES: [usize; 4] = [64, 1024, 64 * 1024, 1024 * 1024];

fn fairmq_zmq(c: &mut Criterion) {
    use fairmq_zmq::{Message, Transport};
    let mut g = c.benchmark_group("transfer_fairmq-zmq");
    for size in SIZES {
        g.throughput(Throughput::Bytes(size as u64));
        let t = Transport::new("bench").expect("transport");
        let push = t.socket(SocketType::Push, "out").expect("socket");
        let pull = t.socket(SocketType::Pull, "in").expect("socket");
        let address = format!("inproc://transfer-fmq-{size}");
        pull.bind(&address).expect("bind");
        push.connect(&address).expect("connect");
        let delivered = Delivered::default();
        let d = delivered.clone();
        let receiver = std::thread::spawn(move || {
            let mut m = Message::new();
            while pull.receive(&mut m, -1).is_ok() {
                if d.add_one() {
                    break;
                }
            }
        });
        g.bench_with_input(BenchmarkId::new("inproc", size), &size, |b, &size| {
            b.iter_custom(|iters| {
                delivered.time_batch(iters, |n| {
                    for _ in 0..n {
                        push.send(&mut Message::with_size(size), -1).expect("send");
                    }
                })
            })
        });
        delivered.stop();
        push.send(&mut Message::new(), -1).expect("send");
        receiver.join().expect("receiver");
    }
    g.finish();
}

fn fairmq_shm(c: &mut Criterion, proto: &str, base: &str) {
    use fairmq_shm::{BadAllocPolicy, ShmConfig, Transport};
    // Declared first, dropped last: removes the session after the transports, also on a panic.
    let guard = SessionGuard::new(&unique_session(&format!("bench-transfer-{proto}")));
    let mut config = ShmConfig::new("bench", guard.session());
    config.segment_size = 1 << 30;
    config.bad_alloc = BadAllocPolicy::from_options(false, None, 50);
    let t = Transport::new(&config).expect("shm transport");
    let mut g = c.benchmark_group("transfer_fairmq-shm");
    for size in SIZES {
        g.throughput(Throughput::Bytes(size as u64));
        let push = t.socket(SocketType::Push, "out").expect("socket");
        let pull = t.socket(SocketType::Pull, "in").expect("socket");
        let address = format!("{base}-shm-{size}");
        pull.bind(&address).expect("bind");
        push.connect(&address).expect("connect");
        let delivered = Delivered::default();
        let d = delivered.clone();
        let rt = t.clone();
        let receiver = std::thread::spawn(move || loop {
            let mut m = rt.new_message();
            if pull.receive(&mut m, -1).is_err() || d.add_one() {
                break;
            }
        });
        g.bench_with_input(BenchmarkId::new(proto, size), &size, |b, &size| {
            b.iter_custom(|iters| {
                delivered.time_batch(iters, |n| {
                    for _ in 0..n {
                        let mut m = t.new_message_with_size(size).expect("allocate");
                        push.send(&mut m, -1).expect("send");
                    }
                })
            })
        });
        delivered.stop();
        push.send(&mut t.new_message(), -1).expect("send");
        receiver.join().expect("receiver");
    }
    g.finish();
}

fn transfer(c: &mut Criterion) {
    let dir = ipc_dir();
    fairmq_zmq(c);
    fairmq_shm(c, "inproc", "inproc://transfer");
    fairmq_shm(c, "ipc", &format!("ipc://{}/transfer", dir.path().display()));
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = transfer
}
criterion_main!(benches);
