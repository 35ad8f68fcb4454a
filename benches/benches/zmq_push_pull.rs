//! Push/pull throughput of fairmq-zmq against the bare `zmq` crate, side by side in one run.
//!
//! FairMQ's benchmark mode: a fresh message per send, the receiver drops it unread. One timed batch
//! sends `iters` messages and ends when the receiver thread has received all of them, so queued but
//! undelivered messages are never counted.
//!
//! `cargo bench -p fairmq-benches --bench zmq_push_pull` (with `GLIBC_TUNABLES` as `zmq_overhead`
//! sets it, 1 MiB measures the transports rather than page faults)

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fairmq_benches::{ipc_dir, Delivered};
use std::time::Duration;

const SIZES: [usize; 4] = [64, 1024, 64 * 1024, 1024 * 1024];

struct Endpoints {
    inproc: String,
    ipc: String,
}

fn bench_fairmq(c: &mut Criterion, proto: &str, addr: &str) {
    use fairmq_zmq::{Message, SocketType, Transport};
    let mut group = c.benchmark_group(format!("push_pull_{proto}"));
    for size in SIZES {
        group.throughput(Throughput::Bytes(size as u64));
        let t = Transport::new("bench").unwrap();
        let push = t.socket(SocketType::Push, "out").unwrap();
        let pull = t.socket(SocketType::Pull, "in").unwrap();
        let address = format!("{addr}-fmq-{size}");
        pull.bind(&address).unwrap();
        push.connect(&address).unwrap();
        let delivered = Delivered::default();
        let d = delivered.clone();
        let receiver = std::thread::spawn(move || {
            // A fresh message per receive, dropped at once (as FairMQ's sink; see zmq_overhead).
            while pull.receive(&mut Message::new(), -1).is_ok() {
                if d.add_one() {
                    break;
                }
            }
        });
        group.bench_with_input(BenchmarkId::new("fairmq-zmq", size), &size, |b, &size| {
            b.iter_custom(|iters| {
                delivered.time_batch(iters, |n| {
                    for _ in 0..n {
                        push.send(&mut Message::with_size(size), -1).unwrap();
                    }
                })
            })
        });
        delivered.stop();
        push.send(&mut Message::new(), -1).unwrap();
        receiver.join().unwrap();
    }
    group.finish();
}

fn bench_bare(c: &mut Criterion, proto: &str, addr: &str) {
    let mut group = c.benchmark_group(format!("push_pull_{proto}"));
    for size in SIZES {
        group.throughput(Throughput::Bytes(size as u64));
        let ctx = zmq::Context::new();
        let push = ctx.socket(zmq::PUSH).unwrap();
        let pull = ctx.socket(zmq::PULL).unwrap();
        let address = format!("{addr}-bare-{size}");
        pull.bind(&address).unwrap();
        push.connect(&address).unwrap();
        let delivered = Delivered::default();
        let d = delivered.clone();
        let receiver = std::thread::spawn(move || {
            while pull.recv(&mut zmq::Message::new(), 0).is_ok() {
                if d.add_one() {
                    break;
                }
            }
        });
        group.bench_with_input(BenchmarkId::new("bare-zmq", size), &size, |b, &size| {
            b.iter_custom(|iters| {
                delivered.time_batch(iters, |n| {
                    for _ in 0..n {
                        push.send(zmq::Message::with_size(size), 0).unwrap();
                    }
                })
            })
        });
        delivered.stop();
        push.send(zmq::Message::new(), 0).unwrap();
        receiver.join().unwrap();
    }
    group.finish();
}

fn push_pull(c: &mut Criterion) {
    let dir = ipc_dir();
    let eps = Endpoints { inproc: "inproc://bench".to_owned(), ipc: format!("ipc://{}/pp", dir.path().display()) };
    // Interleaved per protocol so both libraries see the same machine state.
    bench_bare(c, "inproc", &eps.inproc);
    bench_fairmq(c, "inproc", &eps.inproc);
    bench_bare(c, "ipc", &eps.ipc);
    bench_fairmq(c, "ipc", &eps.ipc);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = push_pull
}
criterion_main!(benches);
