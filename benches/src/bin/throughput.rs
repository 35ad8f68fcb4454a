//! Cross-process one-way throughput: fairmq-shm, fairmq-zmq (ipc) and the bare `zmq` crate (ipc),
//! side by side in one run, as one table with ratios to fairmq-shm.
//!
//! FairMQ's benchmark mode: the sender allocates a fresh message for every send, the receiver drops
//! it unread. Each cell runs a sender process and a receiver process for `--seconds`; the receiver
//! times from its first message to the end marker (an empty message) and reports messages/s. Each
//! cell is repeated `--runs` times; the table shows the median (and min-max).
//!
//! `cargo run --release -p fairmq-benches --bin throughput [-- --seconds 2 --runs 3 --sizes 64,1024]`

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SIZES: [usize; 5] = [64, 1024, 64 << 10, 1 << 20, 16 << 20];
const SYSTEMS: [&str; 3] = ["fairmq-shm", "fairmq-zmq", "bare-zmq"];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--role") {
        role(&args[1..]);
        return;
    }
    let opt = |name: &str, default: &str| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.into())
    };
    let seconds: f64 = opt("--seconds", "2").parse().expect("--seconds");
    let runs: usize = opt("--runs", "3").parse().expect("--runs");
    let sizes: Vec<usize> = match args.iter().position(|a| a == "--sizes") {
        Some(i) => args[i + 1].split(',').map(|s| s.parse().expect("--sizes")).collect(),
        None => SIZES.to_vec(),
    };
    let systems: Vec<&str> = match args.iter().position(|a| a == "--systems") {
        Some(i) => SYSTEMS.iter().copied().filter(|s| args[i + 1].split(',').any(|x| x == *s)).collect(),
        None => SYSTEMS.to_vec(),
    };
    println!("one-way, {runs} runs of {seconds} s per cell, median msg/s (min-max); ratio = system / fairmq-shm");
    print!("| size |");
    for s in &systems {
        print!(" {s} |");
    }
    for s in systems.iter().skip(1) {
        print!(" {s} / shm |");
    }
    println!();
    println!("|{}", "---|".repeat(1 + 2 * systems.len() - 1));
    for &size in &sizes {
        let mut medians = Vec::new();
        let mut cells = Vec::new();
        for sys in &systems {
            let mut rates: Vec<f64> = (0..runs).map(|_| run_cell(sys, size, seconds)).collect();
            rates.sort_by(f64::total_cmp);
            let median = rates[rates.len() / 2];
            medians.push(median);
            cells.push(format!("{} ({}-{})", human(median), human(rates[0]), human(rates[rates.len() - 1])));
        }
        print!("| {} |", human_size(size));
        for c in &cells {
            print!(" {c} |");
        }
        for m in medians.iter().skip(1) {
            print!(" {:.2} |", m / medians[0]);
        }
        println!();
    }
}

fn human(rate: f64) -> String {
    if rate >= 1e6 {
        format!("{:.2} M", rate / 1e6)
    } else if rate >= 1e3 {
        format!("{:.1} k", rate / 1e3)
    } else {
        format!("{rate:.0}")
    }
}

fn human_size(n: usize) -> String {
    match n {
        n if n >= 1 << 20 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

/// Runs one receiver and one sender process; returns the receiver's messages/s.
fn run_cell(system: &str, size: usize, seconds: f64) -> f64 {
    let dir = tempfile::tempdir().expect("temp dir");
    let address = format!("ipc://{}/bench", dir.path().display());
    let session = format!("bench-{}-{size}-{}", std::process::id(), Instant::now().elapsed().as_nanos());
    let me = std::env::current_exe().expect("own path");
    let spawn = |role: &str| {
        Command::new(&me)
            .args(["--role", role, system, &address, &size.to_string(), &seconds.to_string(), &session])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    let receiver = spawn("receiver");
    std::thread::sleep(Duration::from_millis(200));
    let mut sender = spawn("sender");
    let out = receiver.wait_with_output().expect("receiver");
    drop(sender.stdin.take()); // the receiver has everything: the sender may close now
    let _ = sender.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().unwrap_or_else(|_| panic!("{system} {size}: receiver printed {text:?}"))
}

fn role(a: &[String]) {
    let (role, system, address, size, seconds, session) =
        (&a[0], a[1].as_str(), &a[2], a[3].parse::<usize>().unwrap(), a[4].parse::<f64>().unwrap(), &a[5]);
    let duration = Duration::from_secs_f64(seconds);
    match (system, role.as_str()) {
        ("fairmq-shm", r) => shm(r, address, size, duration, session),
        ("fairmq-zmq", r) => fmq_zmq(r, address, size, duration),
        ("bare-zmq", r) => bare(r, address, size, duration),
        _ => panic!("unknown system {system}"),
    }
}

/// Receiver side common to all systems: `recv` returns the size of the next message.
fn receive_loop(mut recv: impl FnMut() -> usize) {
    let mut n = 0u64;
    let mut start = None;
    loop {
        let size = recv();
        if size == 0 {
            break;
        }
        start.get_or_insert_with(Instant::now);
        n += 1;
    }
    let secs = start.map_or(1.0, |s| s.elapsed().as_secs_f64());
    println!("{}", n as f64 / secs);
}

/// Keeps the sender's socket open until the receiver ended (the harness closes our stdin then):
/// libzmq 4.3 may drop the tail of a stream whose sender closes while the peer's queue is full, even
/// with linger -1 (libzmq issue #4660).
fn wait_for_receiver() {
    let mut sink = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
}

/// Sends until `duration` passed (the clock is read once per 64 messages), then the end marker.
fn send_loop(duration: Duration, mut send: impl FnMut(bool)) {
    let start = Instant::now();
    'outer: loop {
        for _ in 0..64 {
            send(false);
        }
        if start.elapsed() >= duration {
            break 'outer;
        }
    }
    send(true);
}

fn shm(role: &str, address: &str, size: usize, duration: Duration, session: &str) {
    use fairmq_shm::{ShmConfig, Transport};
    use fairmq_zmq::SocketType;
    let mut c = ShmConfig::new(role, session);
    c.bad_alloc = fairmq_shm::BadAllocPolicy::from_options(false, None, 50);
    let t = Transport::new(&c).expect("shm transport");
    if role == "receiver" {
        let s = t.socket(SocketType::Pull, "in").unwrap();
        s.bind(address).unwrap();
        receive_loop(|| {
            let mut m = t.new_message();
            s.receive(&mut m, -1).unwrap()
        });
    } else {
        let s = t.socket(SocketType::Push, "out").unwrap();
        s.metadata_socket().set_linger(-1).unwrap();
        s.connect(address).unwrap();
        send_loop(duration, |end| {
            let mut m = if end { t.new_message() } else { t.new_message_with_size(size).unwrap() };
            s.send(&mut m, -1).unwrap();
        });
        wait_for_receiver();
    }
}

fn fmq_zmq(role: &str, address: &str, size: usize, duration: Duration) {
    use fairmq_zmq::{Message, SocketType, Transport};
    let t = Transport::new(role).unwrap();
    if role == "receiver" {
        let s = t.socket(SocketType::Pull, "in").unwrap();
        s.bind(address).unwrap();
        receive_loop(|| {
            let mut m = Message::new();
            s.receive(&mut m, -1).unwrap()
        });
    } else {
        let s = t.socket(SocketType::Push, "out").unwrap();
        s.set_linger(-1).unwrap();
        s.connect(address).unwrap();
        send_loop(duration, |end| {
            let mut m = if end { Message::new() } else { Message::with_size(size) };
            s.send(&mut m, -1).unwrap();
        });
    }
}

fn bare(role: &str, address: &str, size: usize, duration: Duration) {
    let ctx = zmq::Context::new();
    if role == "receiver" {
        let s = ctx.socket(zmq::PULL).unwrap();
        s.bind(address).unwrap();
        receive_loop(|| {
            let mut m = zmq::Message::new();
            s.recv(&mut m, 0).unwrap();
            m.len()
        });
    } else {
        let s = ctx.socket(zmq::PUSH).unwrap();
        s.set_linger(-1).unwrap();
        s.connect(address).unwrap();
        send_loop(duration, |end| {
            let m = if end { zmq::Message::new() } else { zmq::Message::with_size(size) };
            s.send(m, 0).unwrap();
        });
        wait_for_receiver();
    }
}
