//! Issue 37, item 2: idle connections that exhaust a receiving device's descriptors neither pin it
//! at 100% CPU nor stall its established peers. The device runs with an open-files limit of 1024
//! (soft and hard, so it cannot raise it); 2000 idle tcp connections are held while a sampler
//! connected before the flood keeps sending: the sink gets every message during the flood, its CPU
//! stays far from a core, and after the flood a new peer connects and is served.

mod common;
use common::process::{start, wait_until, Proc};
use common::Session;
use nix::sys::resource::{getrlimit, setrlimit, Resource};
use nix::sys::signal::Signal;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const SAMPLER: &str = env!("CARGO_BIN_EXE_fairmq-bsampler");
const SINK: &str = env!("CARGO_BIN_EXE_fairmq-sink");

/// Connections of the flood.
const FLOOD: usize = 2000;

/// A free tcp port of the loopback (taken from the kernel, then let go).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Seconds of CPU process `pid` used so far (user and system).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command's closing parenthesis: state is field 3, utime 14 and stime 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks as f64 / hz
}

/// The share of a core process `pid` uses over the next two seconds.
fn cpu_share(pid: u32) -> f64 {
    let before = cpu_seconds(pid);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    (cpu_seconds(pid) - before) / t0.elapsed().as_secs_f64()
}

fn device(exe: &str, id: &str, s: &Session, transport: &str, extra: &[&str]) -> Proc {
    let mut args = vec!["--nofile=1024:1024", exe, "--id", id, "--control", "static", "--color", "false"];
    args.extend([
        "--severity",
        "info",
        "--transport",
        transport,
        "--session",
        &s.name,
        "--shm-segment-size",
        "20000000",
    ]);
    args.extend(extra);
    start("prlimit", &args, None)
}

/// Whether a rate line of the sink's data channel after line `from` says messages came in.
fn received_since(sink: &mut Proc, from: usize) -> bool {
    sink.drain();
    sink.seen[from.min(sink.seen.len())..].iter().any(|l| {
        l.split("data[0]: in: ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .is_some_and(|n| n.parse::<f64>().is_ok_and(|n| n > 0.0))
    })
}

fn flood_while_a_connected_peer_sends(transport: &str) {
    let s = Session::new();
    // This test holds the flood's connections: it needs more than 1024 descriptors itself.
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard.min(1 << 20), hard).unwrap();
    let port = free_port();
    let address = format!("tcp://127.0.0.1:{port}");
    let pull = format!("name=data,type=pull,method=bind,address={address},rateLogging=1");
    let mut sink = device(SINK, "sink", &s, transport, &["--channel-config", &pull]);
    sink.expect("READY ---> RUNNING");
    let push = format!("name=data,type=push,method=connect,address={address},rateLogging=0");
    let sampler_args = ["--msg-size", "100", "--rate", "1000", "--channel-config", &push];
    let mut sampler = device(SAMPLER, "sampler", &s, transport, &sampler_args);
    sampler.expect("READY ---> RUNNING");
    wait_until("the sink receives before the flood", || received_since(&mut sink, 0));
    // What receiving costs the sink without a flood (a shmem receiver looks at its lanes a while
    // before it sleeps).
    let baseline = cpu_share(sink.pid());
    // The flood: idle connections, held, many more than the sink has descriptors.
    let mut held = Vec::new();
    let flood_started = Instant::now();
    for _ in 0..FLOOD {
        if let Ok(c) = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200)) {
            held.push(c);
        }
        if held.len() > 1100 && flood_started.elapsed() > Duration::from_secs(20) {
            break; // the kernel's backlog took what it takes; enough are held
        }
    }
    assert!(held.len() > 1024, "the flood holds more connections than the sink has descriptors: {}", held.len());
    // While the flood is held: the sink's CPU over two seconds stays far from a whole core (it
    // spun on accept's EMFILE before), and the established sampler's messages keep arriving.
    sink.drain();
    let flooded = sink.seen.len();
    let share = cpu_share(sink.pid());
    assert!(
        share < baseline + 0.25,
        "the flooded sink used {:.0}% of a core, {:.0}% before the flood (a spinning accept loop takes what it gets)",
        share * 100.0,
        baseline * 100.0
    );
    wait_until("the sink receives during the flood", || received_since(&mut sink, flooded));
    // After the flood, a new peer is accepted by the same sink and served.
    drop(held);
    sampler.signal(Signal::SIGTERM as i32);
    assert_eq!(sampler.wait().code(), Some(0), "{}", sampler.seen.join("\n"));
    let mut late = device(SAMPLER, "late", &s, transport, &sampler_args);
    late.expect("READY ---> RUNNING");
    sink.drain();
    let after = sink.seen.len();
    wait_until("the sink receives from a peer that came after the flood", || received_since(&mut sink, after));
    late.signal(Signal::SIGTERM as i32);
    assert_eq!(late.wait().code(), Some(0), "{}", late.seen.join("\n"));
    sink.signal(Signal::SIGTERM as i32);
    assert_eq!(sink.wait().code(), Some(0), "{}", sink.seen.join("\n"));
    assert!(!sink.saw("---> ERROR"), "{}", sink.seen.join("\n"));
}

#[test]
fn a_descriptor_flood_neither_pins_nor_stalls_a_zeromq_device() {
    flood_while_a_connected_peer_sends("zeromq");
}

#[test]
fn a_descriptor_flood_neither_pins_nor_stalls_a_shmem_device() {
    flood_while_a_connected_peer_sends("shmem");
}
