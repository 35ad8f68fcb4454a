//! Issue 17: devices of a shared-memory topology killed with SIGKILL again and again, at random
//! moments, and restarted. After each restart the pipeline is quiesced (the sampler stopped) and
//! no block of the segment may be left that nobody alive holds: every block is free, cached by a
//! live process, or held by one. Before the hand-over accounting, what was in flight to or from a
//! killed device stayed allocated until the session ended, and after 20 to 30 kills the sampler
//! died of bad_alloc on every restart.

mod common;
use common::process::Proc;
use common::{launch_device, Session};
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

const KILLS: usize = 30;
const SEGMENT: &str = "50000000";

/// A device of the topology: how to start it again.
struct Spec {
    exe: &'static str,
    id: &'static str,
    args: Vec<String>,
}

fn launch(s: &Session, spec: &Spec) -> Proc {
    let extra: Vec<&str> = spec.args.iter().map(String::as_str).collect();
    launch_device(spec.exe, spec.id, s, "shmem", "static", SEGMENT, &extra)
}

fn sampler(out: &str) -> Spec {
    Spec {
        exe: env!("CARGO_BIN_EXE_fairmq-bsampler"),
        id: "sampler",
        args: vec![
            "--msg-size".into(),
            "10000".into(),
            "--msg-rate".into(),
            "3000".into(),
            "--out-channel".into(),
            "data-out".into(),
            "--channel-config".into(),
            format!("name=data-out,type=push,method=bind,address={out},rateLogging=0"),
        ],
    }
}

fn relay(exe: &'static str, id: &'static str, input: &str, outputs: &[String]) -> Spec {
    let addresses: Vec<String> = outputs.iter().map(|o| format!("address={o}")).collect();
    Spec {
        exe,
        id,
        args: vec![
            "--in-channel".into(),
            "data-in".into(),
            "--out-channel".into(),
            "data-out".into(),
            "--channel-config".into(),
            format!("name=data-in,type=pull,method=connect,address={input},rateLogging=0"),
            format!("name=data-out,type=push,method=bind,{},rateLogging=0", addresses.join(",")),
        ],
    }
}

fn sink(id: &'static str, input: &str) -> Spec {
    Spec {
        exe: env!("CARGO_BIN_EXE_fairmq-sink"),
        id,
        args: vec![
            "--in-channel".into(),
            "data-in".into(),
            "--channel-config".into(),
            format!("name=data-in,type=pull,method=connect,address={input},rateLogging=1"),
        ],
    }
}

/// A small deterministic generator (the seed is printed, so a failing run can be repeated).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Used blocks of the segment that nobody alive holds (count at least 1 and the owner mark not a
/// live transport's, nor in flight from a live sender, nor listed by a live transport as a shared
/// reference (a lane's, a published message's) or waiting in such a lane: a dead process's, shared
/// by the dead only, or in flight from a dead one), and all used blocks.
fn unaccounted(t: &fairmq_shm::Transport) -> (Vec<(u64, u32)>, usize) {
    let seg = fairmq_shm::testing::segment(t);
    let live: Vec<u32> = t.attached().iter().map(|a| a.owner).collect();
    let sent_by_live: Vec<u64> =
        seg.in_flight().into_iter().filter(|f| f.0 == seg.id() && live.contains(&f.2)).map(|f| f.1).collect();
    let shared_by_live: Vec<u64> =
        t.shared_blocks_held().into_iter().filter(|b| b.0 == seg.id()).map(|b| b.1).collect();
    let used = seg.used_blocks().expect("the segment's blocks");
    let lost = used
        .iter()
        .filter(|&&(offset, _, owner, count)| {
            count >= 1 && !live.contains(&owner) && !sent_by_live.contains(&offset) && !shared_by_live.contains(&offset)
        })
        .map(|&(offset, _, owner, _)| (offset, owner))
        .collect();
    (lost, used.len())
}

/// The unaccounted and used blocks, looked at from another thread: `None` when the look did not
/// end within a second (it waits for a session lock that the stopped sampler holds).
fn look(t: &fairmq_shm::Transport) -> Option<(Vec<(u64, u32)>, usize)> {
    let t = t.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let looker = std::thread::spawn(move || {
        t.sweep_dead_processes();
        let _ = tx.send(unaccounted(&t));
    });
    let got = rx.recv_timeout(Duration::from_secs(1)).ok();
    if got.is_some() {
        let _ = looker.join();
    }
    got
}

/// Stops the sampler and waits (a receiver releases what a gone sender left in flight once it has
/// been idle twice a second apart) until no block is unaccounted for; returns the used blocks. A
/// sampler stopped while it held a session lock is let go on and stopped again a moment later
/// (the look would wait for that lock for ever).
fn quiesced(t: &fairmq_shm::Transport, sampler: &Proc, round: usize, devices: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    sampler.signal(Signal::SIGSTOP as i32);
    let used = loop {
        let Some((lost, used)) = look(t) else {
            sampler.signal(Signal::SIGCONT as i32);
            // Deliberate: a moment of running, to get past the lock it held.
            std::thread::sleep(Duration::from_millis(20));
            sampler.signal(Signal::SIGSTOP as i32);
            continue;
        };
        if lost.is_empty() {
            break used;
        }
        if Instant::now() >= deadline {
            let live: Vec<(u32, u32)> = t.attached().iter().map(|a| (a.owner, a.pid)).collect();
            let flights: Vec<_> = fairmq_shm::testing::segment(t)
                .in_flight()
                .into_iter()
                .filter(|f| lost.iter().any(|l| l.0 == f.1))
                .collect();
            let shown = &lost[..lost.len().min(5)];
            panic!(
                "round {round}: {} blocks nobody alive holds, e.g. (offset, owner) {shown:x?}; live transports \
                 (mark, pid) {live:x?}, devices {devices}; their tickets (segment, offset, issuer, receiver) {:x?}",
                lost.len(),
                &flights[..flights.len().min(5)]
            );
        }
        // Poll interval of this bounded wait (the release comes about two seconds after the kill).
        std::thread::sleep(Duration::from_millis(100));
    };
    sampler.signal(Signal::SIGCONT as i32);
    used
}

/// Which device has which pid (hex, as liveness shows pids above).
fn pids(specs: &[Spec], procs: &[Proc]) -> String {
    specs.iter().zip(procs).map(|(s, p)| format!("{} {:x}", s.id, p.pid())).collect::<Vec<_>>().join(", ")
}

/// Waits until every sink (the last `sinks` of `procs`) reports one more second with messages
/// than it had; on failure, shows what every device printed last.
fn traffic(procs: &mut [Proc], sinks: usize, what: &str) {
    let first = procs.len() - sinks;
    for i in first..procs.len() {
        let before = procs[i].count("data-in[0]: in: ");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let sink = &mut procs[i];
            sink.drain();
            if sink.count("data-in[0]: in: ") > before {
                let last = sink.seen.iter().rev().find(|l| l.contains("data-in[0]: in: ")).expect("a rate line");
                if !last.contains("in: 0 (") {
                    break;
                }
            }
            if Instant::now() >= deadline {
                let tails: Vec<String> = procs
                    .iter_mut()
                    .map(|p| {
                        p.drain();
                        p.seen[p.seen.len().saturating_sub(8)..].join("\n")
                    })
                    .collect();
                panic!("no traffic {what}; last lines of each device:\n{}", tails.join("\n---\n"));
            }
            // Poll interval of this bounded wait for the next rate line.
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Kills a random device of `specs` (index 0 the sampler, the last `sinks` ones sinks) `KILLS`
/// times at random moments, restarting it each time; after each restart, traffic reaches every
/// sink again, and once quiesced no block is left that nobody alive holds. The sampler never runs
/// out of memory.
fn kill_loop(name: &str, s: &Session, specs: &[Spec], sinks: usize) {
    let mut c = fairmq_shm::ShmConfig::new("observer", &s.name);
    c.segment_size = SEGMENT.parse().expect("a size");
    let t = fairmq_shm::Transport::new(&c).expect("the observer's transport");
    let mut procs: Vec<Proc> = specs.iter().map(|spec| launch(s, spec)).collect();
    traffic(&mut procs, sinks, "at the start");
    let start = quiesced(&t, &procs[0], 0, &pids(specs, &procs));
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1;
    println!("{name}: seed {seed}, used blocks at the start {start}");
    let mut rng = Rng(seed);
    for round in 1..=KILLS {
        // Deliberate: the kill comes at a random moment of the traffic.
        std::thread::sleep(Duration::from_millis(50 + rng.below(400)));
        let victim = rng.below(specs.len() as u64) as usize;
        println!("{name}: round {round}: killing {}", specs[victim].id);
        procs[victim].signal(Signal::SIGKILL as i32);
        procs[victim].wait();
        procs[victim] = launch(s, &specs[victim]);
        traffic(&mut procs, sinks, &format!("after restarting {} in round {round}", specs[victim].id));
        let used = quiesced(&t, &procs[0], round, &pids(specs, &procs));
        println!(
            "{name}: round {round}: killed {}, used blocks after the restart {used} (start {start})",
            specs[victim].id
        );
    }
    procs[0].drain();
    for bad in ["bad_alloc", "BadAlloc", "could not create a message", "out of memory"] {
        assert!(!procs[0].saw(bad), "the sampler ran out of memory:\n{}", procs[0].seen.join("\n"));
    }
    assert!(!procs[0].has_ended(), "the sampler ran until the end:\n{}", procs[0].seen.join("\n"));
}

#[test]
fn sampler_proxy_sink_survive_30_random_kills_without_leaking() {
    let s = Session::new();
    let (a, b) = (s.ipc("a"), s.ipc("b"));
    let specs = [
        sampler(&a),
        relay(env!("CARGO_BIN_EXE_fairmq-proxy"), "proxy", &a, std::slice::from_ref(&b)),
        sink("sink", &b),
    ];
    kill_loop("proxy", &s, &specs, 1);
}

#[test]
fn sampler_splitter_two_sinks_survive_30_random_kills_without_leaking() {
    let s = Session::new();
    let (a, b1, b2) = (s.ipc("a"), s.ipc("b1"), s.ipc("b2"));
    let specs = [
        sampler(&a),
        relay(env!("CARGO_BIN_EXE_fairmq-splitter"), "splitter", &a, &[b1.clone(), b2.clone()]),
        sink("sink1", &b1),
        sink("sink2", &b2),
    ];
    kill_loop("splitter", &s, &specs, 2);
}
