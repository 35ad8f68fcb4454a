//! What the fairmq-zmq layer costs over the bare `zmq` crate, measured in pairs.
//!
//! On this VM, rates drift by 10-30% over seconds, more than the 5% the layer may cost, so two
//! benchmarks run one after the other cannot show it. Here both pipelines (push/pull, receiver on its
//! own thread, a fresh zero-filled message per send, the receiver drops it) live side by side, and
//! each round times a batch of one and then of the other, in alternating order (ABBA), a few tens
//! of milliseconds apart. The ratio of a round cancels what the machine did in that moment; the
//! median over the rounds is the layer's cost, the quartiles how sure that is.
//!
//! glibc hands out each fresh 1 MiB buffer as a new mapping and trims its heap as they go, so at
//! large sizes a batch's time is mostly page faults, which come and go with the allocator's state
//! (quartiles as wide as 0.7-2.1 at 1 MiB). The binary runs itself again with `GLIBC_TUNABLES` raising the
//! mapping and trim thresholds (unless the caller set that variable): buffers are reused, and what
//! remains is the transports' own cost.
//!
//! `cargo run --release -p fairmq-benches --bin zmq_overhead [-- --rounds 21 --batch-ms 40]`

use fairmq_benches::harness::report;
use fairmq_benches::{ipc_dir, Delivered};
use std::thread::JoinHandle;
use std::time::Duration;

const SIZES: [usize; 4] = [64, 1024, 64 * 1024, 1024 * 1024];

/// One push/pull pipeline: a sender for batches and the receiver thread counting deliveries.
struct Pipe {
    send: Box<dyn FnMut(usize, u64)>,
    delivered: Delivered,
    stop: Box<dyn FnMut()>,
    receiver: Option<JoinHandle<()>>,
}

impl Pipe {
    /// Time per message of a batch of `n` messages of `size` bytes, all delivered.
    fn batch(&mut self, size: usize, n: u64) -> f64 {
        let send = &mut self.send;
        self.delivered.time_batch(n, |n| send(size, n)).as_secs_f64() / n as f64
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        self.delivered.stop();
        (self.stop)();
        if let Some(r) = self.receiver.take() {
            let _ = r.join();
        }
    }
}

fn fairmq_pipe(address: &str) -> Pipe {
    use fairmq_zmq::{Message, SocketType, Transport};
    let t = Transport::new("overhead").expect("fairmq-zmq transport");
    let push = std::rc::Rc::new(t.socket(SocketType::Push, "out").expect("push socket"));
    let pull = t.socket(SocketType::Pull, "in").expect("pull socket");
    pull.bind(address).expect("bind");
    push.connect(address).expect("connect");
    let delivered = Delivered::default();
    let d = delivered.clone();
    let receiver = std::thread::spawn(move || {
        // A fresh message per receive, dropped at once, as FairMQ's sink does (one reused message
        // would keep each payload alive until the next arrived, which changes what malloc reuses).
        while pull.receive(&mut Message::new(), -1).is_ok() {
            if d.add_one() {
                break;
            }
        }
    });
    let p = push.clone();
    Pipe {
        send: Box::new(move |size, n| {
            for _ in 0..n {
                let mut m = Message::with_size(size);
                p.send(&mut m, -1).expect("send");
            }
        }),
        delivered,
        stop: Box::new(move || {
            let _ = push.send(&mut Message::new(), -1);
            let _ = &t;
        }),
        receiver: Some(receiver),
    }
}

fn bare_pipe(address: &str) -> Pipe {
    let ctx = zmq::Context::new();
    let push = std::rc::Rc::new(ctx.socket(zmq::PUSH).expect("push socket"));
    let pull = ctx.socket(zmq::PULL).expect("pull socket");
    pull.bind(address).expect("bind");
    push.connect(address).expect("connect");
    let delivered = Delivered::default();
    let d = delivered.clone();
    let receiver = std::thread::spawn(move || {
        while pull.recv(&mut zmq::Message::new(), 0).is_ok() {
            if d.add_one() {
                break;
            }
        }
    });
    let p = push.clone();
    Pipe {
        send: Box::new(move |size, n| {
            for _ in 0..n {
                p.send(zmq::Message::with_size(size), 0).expect("send");
            }
        }),
        delivered,
        stop: Box::new(move || {
            let _ = push.send(zmq::Message::new(), 0);
            let _ = &ctx;
        }),
        receiver: Some(receiver),
    }
}

fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    match args.iter().position(|a| a == name) {
        None => default,
        Some(i) => args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or_else(|| {
            eprintln!("{name} needs a positive number");
            std::process::exit(2)
        }),
    }
}

/// Malloc settings under which fresh buffers of up to 32 MiB come from a heap that is not trimmed.
const TUNABLES: &str = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage: zmq_overhead [--rounds N (21)] [--batch-ms MS (40)]");
        return;
    }
    if std::env::var_os("GLIBC_TUNABLES").is_none() {
        let me = std::env::current_exe().expect("own path");
        let status = std::process::Command::new(me).args(&args).env("GLIBC_TUNABLES", TUNABLES).status();
        std::process::exit(status.ok().and_then(|s| s.code()).unwrap_or(1));
    }
    let rounds = arg(&args, "--rounds", 21).max(1);
    let batch = Duration::from_millis(arg(&args, "--batch-ms", 40).max(1));
    let dir = ipc_dir();
    println!("fairmq-zmq against bare zmq, push/pull in one process: {rounds} rounds (ABBA), batches of ~{batch:?}");
    println!();
    println!("| transport | size | bare zmq (median) | fairmq-zmq (median) | fairmq-zmq / bare per round: median (quartiles) |");
    println!("|---|---|---|---|---|");
    for proto in ["inproc", "ipc"] {
        for size in SIZES {
            let address = |who: &str| match proto {
                "inproc" => format!("inproc://overhead-{who}-{size}"),
                _ => format!("ipc://{}/{who}-{size}", dir.path().display()),
            };
            let mut fmq = fairmq_pipe(&address("fmq"));
            let mut bare = bare_pipe(&address("bare"));
            // Warm up both, and size a batch to take about `batch`.
            let per = fmq.batch(size, 200).max(bare.batch(size, 200));
            let n = ((batch.as_secs_f64() / per) as u64).clamp(20, 1_000_000);
            let (mut tf, mut tb, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
            for r in 0..rounds {
                let (f, b) = if r % 2 == 0 {
                    let f = fmq.batch(size, n);
                    (f, bare.batch(size, n))
                } else {
                    let b = bare.batch(size, n);
                    (fmq.batch(size, n), b)
                };
                tf.push(f);
                tb.push(b);
                ratio.push(f / b);
            }
            let (q1, med, q3) = quartiles(ratio);
            println!(
                "| {proto} | {} | {} | {} | {med:.3} ({q1:.3}-{q3:.3}) |",
                report::size(size),
                report::duration_ns(quartiles(tb).1 * 1e9),
                report::duration_ns(quartiles(tf).1 * 1e9),
            );
        }
    }
}
