//! Allocation and free of fairmq-shm messages: `Transport::new_message_with_size` then drop, as a
//! sender that allocates a fresh message per send and a receiver that drops it pay them.
//!
//! - `shm_alloc_free/<size>`: one size over and over, 64 B to 16 MiB (up to 4 MiB the per-process
//!   caches serve it; 16 MiB goes to the segment under its lock every time).
//! - `shm_alloc_free/mixed`: a cycle of sizes from 64 B to 2 MiB with 16 messages alive at a time,
//!   freed oldest first, so frees and allocations of different sizes interleave.
//! - `shm_alloc_free_contended/...`: the same while a second process (this executable, started with
//!   `FAIRMQ_BENCH_HAMMER` set) runs the mixed pattern in the same session's segment without pause.
//!
//! Every group uses its own session and removes it at the end, also when it panics.
//!
//! `cargo bench -p fairmq-benches --bench shm_alloc`

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use fairmq_benches::session::{unique_session, SessionGuard};
use fairmq_shm::{BadAllocPolicy, Message, ShmConfig, Transport};
use std::collections::VecDeque;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SIZES: [usize; 5] = [64, 1 << 10, 64 << 10, 1 << 20, 16 << 20];
const MIXED: [usize; 12] =
    [64, 1 << 10, 200, 64 << 10, 4 << 10, 1 << 20, 100, 16 << 10, 3000, 256 << 10, 70_000, 2 << 20];
const LIVE: usize = 16;
/// Environment variable that turns this executable into the contending process (its value: session).
const HAMMER: &str = "FAIRMQ_BENCH_HAMMER";

fn transport(id: &str, session: &str) -> Transport {
    let mut c = ShmConfig::new(id, session);
    c.segment_size = 1 << 30;
    c.bad_alloc = BadAllocPolicy::from_options(false, None, 50);
    Transport::new(&c).expect("shm transport")
}

/// The mixed pattern: allocates the next size, keeps `LIVE` messages, drops the oldest.
struct Mixed {
    live: VecDeque<Message>,
    next: usize,
}

impl Mixed {
    fn new() -> Self {
        Mixed { live: VecDeque::with_capacity(LIVE + 1), next: 0 }
    }

    fn step(&mut self, t: &Transport) {
        let size = MIXED[self.next % MIXED.len()];
        self.next += 1;
        self.live.push_back(t.new_message_with_size(size).expect("allocate"));
        if self.live.len() > LIVE {
            drop(self.live.pop_front());
        }
    }
}

fn sizes_and_mixed(c: &mut Criterion, group: &str, t: &Transport, sizes: &[usize]) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(1));
    for &size in sizes {
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
            b.iter(|| drop(black_box(t.new_message_with_size(size).expect("allocate"))))
        });
    }
    let mut mixed = Mixed::new();
    g.bench_function("mixed", |b| b.iter(|| mixed.step(t)));
    g.finish();
}

fn alloc_free(c: &mut Criterion) {
    let guard = SessionGuard::new(&unique_session("bench-alloc"));
    let t = transport("bench", guard.session());
    sizes_and_mixed(c, "shm_alloc_free", &t, &SIZES);
}

/// The contending process: started by [`Hammer::start`], stopped by closing its stdin.
struct Hammer {
    child: Child,
}

impl Hammer {
    fn start(session: &str) -> Hammer {
        let mut child = Command::new(std::env::current_exe().expect("own path"))
            .env(HAMMER, session)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the contending process");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped")).read_line(&mut line).expect("read");
        assert_eq!(line.trim(), "ready", "contending process did not start");
        Hammer { child }
    }
}

impl Drop for Hammer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // Killed only if it did not stop by itself: it detaches normally otherwise.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Body of the contending process: the mixed pattern until stdin closes (the bench ended or died).
fn hammer(session: &str) {
    let t = transport("hammer", session);
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        s.store(true, Ordering::Relaxed);
    });
    println!("ready");
    let _ = std::io::stdout().flush();
    let mut mixed = Mixed::new();
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..64 {
            mixed.step(&t);
        }
    }
}

fn contended(c: &mut Criterion) {
    // Declaration order is drop order reversed: the hammer detaches, then us, then the guard removes.
    let guard = SessionGuard::new(&unique_session("bench-alloc-contended"));
    let t = transport("bench", guard.session());
    let _hammer = Hammer::start(guard.session());
    sizes_and_mixed(c, "shm_alloc_free_contended", &t, &[64, 64 << 10, 16 << 20]);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = alloc_free, contended
}

fn main() {
    // The contending process is this executable again (see `Hammer`).
    if let Ok(session) = std::env::var(HAMMER) {
        hammer(&session);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
