//! The fault suite: device processes killed with SIGKILL in the middle of traffic (a sender, a
//! processor, a receiver), a full segment under load with each out-of-memory policy, and a session
//! removed by the monitor while its devices run. Each test says what may be lost; everything else
//! must arrive exactly once (sequence numbers strictly increasing, every byte checked), and the
//! session guard leaves /dev/shm clean.

mod common;
use common::process::{start, Proc, GENEROUS};
use common::{attached_socket, launch_device, session_transport, Session, TRANSPORTS};
use fairmq::{Message, SocketType, Transport, TransportKind};
use fairmq_zmq::Method;
use nix::sys::signal::Signal;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const SIZE: usize = 4096;

fn tester(s: &Session, tr: &str) -> Transport {
    let kind = if tr == "shmem" { TransportKind::Shmem } else { TransportKind::Zeromq };
    session_transport(s, kind, |p| {
        p.set("shm-segment-size", 64_000_000u64);
        p.set("shm-throw-bad-alloc", false);
    })
}

fn byte(seq: u64, i: usize) -> u8 {
    (seq.wrapping_mul(31) as usize).wrapping_add(i) as u8
}

fn fill(m: &mut Message, seq: u64) {
    let d = m.data_mut().expect("writable");
    d[..8].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in d.iter_mut().enumerate().skip(8) {
        *b = byte(seq, i);
    }
}

fn check(m: &Message) -> Result<u64, String> {
    let d = m.data();
    if d.len() != SIZE {
        return Err(format!("size {}", d.len()));
    }
    let seq = u64::from_le_bytes(d[..8].try_into().expect("8 bytes"));
    match d.iter().enumerate().skip(8).find(|&(i, &b)| b != byte(seq, i)) {
        Some((i, _)) => Err(format!("message {seq}: byte {i} differs")),
        None => Ok(seq),
    }
}

/// A receiver thread in the test process: collects sequence numbers, checking every byte.
struct Collector {
    seqs: Arc<Mutex<Vec<u64>>>,
    errors: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Collector {
    fn start(t: &Transport, address: &str, method: Method) -> Collector {
        let (seqs, errors, stop) = (Arc::default(), Arc::default(), Arc::new(AtomicBool::new(false)));
        let (sq, er, st, t) = (Arc::clone(&seqs), Arc::clone(&errors), stop.clone(), t.clone());
        let sock = attached_socket(&t, SocketType::Pull, address, method);
        let thread = std::thread::spawn(move || {
            let sq: Arc<Mutex<Vec<u64>>> = sq;
            let er: Arc<Mutex<Vec<String>>> = er;
            while !st.load(Ordering::SeqCst) {
                let mut m = t.new_message();
                if sock.receive(&mut m, 100, &t).is_ok() {
                    match check(&m) {
                        Ok(seq) => sq.lock().push(seq),
                        Err(e) => er.lock().push(e),
                    }
                }
            }
        });
        Collector { seqs, errors, stop, thread: Some(thread) }
    }

    fn count(&self) -> usize {
        self.seqs.lock().len()
    }

    fn max(&self) -> Option<u64> {
        self.seqs.lock().iter().max().copied()
    }

    fn wait_for(&self, what: &str, done: impl Fn(&Collector) -> bool) {
        let deadline = Instant::now() + GENEROUS;
        while !done(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}: {} received", self.count());
            // Poll interval of this bounded wait (not wait_until: the failure shows the count).
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops; returns the sequence numbers in arrival order after checking that none is corrupted
    /// or arrived twice. (Order holds per connection only: after a restart, what the dead peer
    /// had already written to the kernel may still arrive beside the new peer's messages.)
    fn finish(mut self) -> Vec<u64> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap();
        assert!(self.errors.lock().is_empty(), "corrupted messages: {:?}", self.errors.lock());
        let seqs = std::mem::take(&mut *self.seqs.lock());
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), seqs.len(), "a message arrived twice");
        seqs
    }
}

/// A sender thread in the test process: messages 0, 1, 2, ... in order until `total` or `stop`; a
/// send that times out keeps its message and is retried (nothing is skipped). Returns how many
/// were sent, and the socket: closing it before the receiver has everything could drop the tail.
fn sender(
    t: &Transport,
    address: &str,
    method: Method,
    total: u64,
    stop: Arc<AtomicBool>,
) -> JoinHandle<(u64, fairmq::Socket)> {
    let t = t.clone();
    let sock = attached_socket(&t, SocketType::Push, address, method);
    std::thread::spawn(move || {
        let mut seq = 0;
        while seq < total && !stop.load(Ordering::SeqCst) {
            let mut m = t.new_message_with_size(SIZE).expect("message");
            fill(&mut m, seq);
            loop {
                match sock.send(&mut m, 100, &t) {
                    Ok(_) => break,
                    Err(_) if stop.load(Ordering::SeqCst) => return (seq, sock),
                    Err(e) => {
                        assert_eq!(check(&m), Ok(seq), "a timed-out send keeps its message ({e})");
                    }
                }
            }
            seq += 1;
        }
        (seq, sock)
    })
}

fn device(s: &Session, tr: &str, exe: &str, id: &str, extra: &[String]) -> Proc {
    launch(s, tr, exe, id, "static", "64000000", extra)
}

/// A device process with `--control <control>` and a segment of `segment` bytes.
fn launch(s: &Session, tr: &str, exe: &str, id: &str, control: &str, segment: &str, extra: &[String]) -> Proc {
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    launch_device(exe, id, s, tr, control, segment, &extra)
}

fn proxy(s: &Session, tr: &str, id: &str, input: &str, output: &str) -> Proc {
    let q = "rateLogging=0,sndBufSize=100,rcvBufSize=100";
    device(
        s,
        tr,
        env!("CARGO_BIN_EXE_fairmq-proxy"),
        id,
        &[
            "--multipart".into(),
            "false".into(),
            "--channel-config".into(),
            format!("name=data-in,type=pull,method=connect,address={input},{q}"),
            format!("name=data-out,type=push,method=connect,address={output},{q}"),
        ],
    )
}

/// May be lost: what the killed processor held in its queues (and, for shmem, the blocks of those
/// messages stay allocated until the session is removed). Everything sent after its replacement
/// connected arrives, exactly once.
#[test]
fn a_processor_killed_mid_stream_loses_only_what_it_held() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = tester(&s, tr);
        let (input, output) = (s.ipc("in"), s.ipc("out"));
        let collector = Collector::start(&t, &output, Method::Bind);
        let stop = Arc::new(AtomicBool::new(false));
        let sending = sender(&t, &input, Method::Bind, u64::MAX, stop.clone());
        let mut p1 = proxy(&s, tr, "proxy1", &input, &output);
        collector.wait_for("traffic through the first processor", |c| c.count() >= 500);
        p1.kill();
        let at_kill = collector.count();
        let mut p2 = proxy(&s, tr, "proxy2", &input, &output);
        collector.wait_for("traffic through the replacement", |c| c.count() >= at_kill + 2000);
        stop.store(true, Ordering::SeqCst);
        let (sent, _open) = sending.join().unwrap();
        collector.wait_for("the last message", |c| c.max() == Some(sent - 1));
        let seqs = collector.finish();
        // What is missing is one run of messages: those the killed processor held.
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        let gaps: Vec<_> = sorted.windows(2).filter(|w| w[1] != w[0] + 1).map(|w| (w[0], w[1])).collect();
        assert!(gaps.len() <= 1, "{tr}: one run lost at most, at the kill: {gaps:?}");
        assert_eq!(sorted[0], 0, "{tr}: nothing lost before the kill");
        let lost = sent as usize - seqs.len();
        assert!(lost <= 5000, "{tr}: lost {lost} of {sent}: more than the queues hold");
        p2.signal(Signal::SIGINT as i32);
        assert_eq!(p2.wait().code(), Some(0), "{tr}: {:?}", p2.seen);
        assert!(!p2.saw("panicked"), "{tr}");
    }
}

/// A sink device on `address`, bound or connected, once it has received (a rate line with a
/// non-zero rate).
fn receiving_sink(s: &Session, tr: &str, address: &str, method: &str) -> Proc {
    let mut sink = device(
        s,
        tr,
        env!("CARGO_BIN_EXE_fairmq-sink"),
        "sink1",
        &["--channel-config".into(), format!("name=data,type=pull,method={method},address={address},rateLogging=1")],
    );
    let mut lines = 1;
    sink.expect("data[0]: in: ");
    while !sink.seen.iter().any(|l| l.contains("data[0]: in: ") && !l.contains("data[0]: in: 0 (")) {
        lines += 1;
        sink.expect_count("data[0]: in: ", lines);
    }
    sink
}

/// A sender attached to `address` with `sending` streams to a sink device attached the other way;
/// the sink is killed mid-stream and a collector takes its place: everything from the first
/// message the collector gets arrives once, in order, up to the sender's last.
fn a_killed_receiver_is_replaced(sending: Method) {
    let (sink_method, collector_method) = match sending {
        Method::Bind => ("connect", Method::Connect),
        Method::Connect => ("bind", Method::Bind),
    };
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = tester(&s, tr);
        let address = s.ipc("data");
        let stop = Arc::new(AtomicBool::new(false));
        let sender = sender(&t, &address, sending, u64::MAX, stop.clone());
        let mut sink = receiving_sink(&s, tr, &address, sink_method);
        sink.kill();
        let collector = Collector::start(&t, &address, collector_method);
        collector.wait_for("traffic to the new receiver", |c| c.count() >= 2000);
        stop.store(true, Ordering::SeqCst);
        let (sent, _open) = sender.join().unwrap();
        collector.wait_for("the last message", |c| c.max() == Some(sent - 1));
        let seqs = collector.finish();
        let first = seqs[0];
        assert_eq!(seqs, (first..sent).collect::<Vec<_>>(), "{tr}: everything after the first one, once, in order");
    }
}

/// May be lost: what the killed receiver held. The sender goes on (its sends time out and keep
/// their messages while no receiver is there); a new receiver gets everything after that, in order.
#[test]
fn a_receiver_killed_mid_stream_the_sender_goes_on_and_a_new_one_gets_the_rest() {
    a_killed_receiver_is_replaced(Method::Bind);
}

/// The same with the receiver bound and the sender connected to it alone, so that shmem records
/// travel through a lane (a ring in the segment) rather than the socket. May be lost: what the
/// killed receiver had taken from the ring. What it had not taken yet the sender sends again, first,
/// to the next receiver: everything from the first message that receiver gets arrives once, in order.
#[test]
fn a_lane_receiver_killed_mid_stream_its_unread_records_reach_the_next_receiver() {
    a_killed_receiver_is_replaced(Method::Connect);
}

/// May be lost: nothing the receiver took; messages the killed sender had not sent yet never
/// existed. The receiver survives and keeps working with a new sender.
#[test]
fn a_sender_killed_mid_stream_leaves_the_receiver_working() {
    for tr in TRANSPORTS {
        let s = Session::new();
        let t = tester(&s, tr);
        let address = s.ipc("data");
        let mut received = 0;
        let pull = attached_socket(&t, SocketType::Pull, &address, Method::Bind);
        let mut sampler = device(
            &s,
            tr,
            env!("CARGO_BIN_EXE_fairmq-bsampler"),
            "sampler1",
            &[
                "--msg-size".into(),
                SIZE.to_string(),
                "--channel-config".into(),
                format!("name=data,type=push,method=connect,address={address},rateLogging=0"),
            ],
        );
        while received < 1000 {
            let mut m = t.new_message();
            if pull.receive(&mut m, 100, &t).is_ok() {
                assert_eq!(m.size(), SIZE);
                received += 1;
            }
        }
        sampler.kill();
        // Drain what the dead sender queued: whole messages only.
        let mut m = t.new_message();
        while pull.receive(&mut m, 500, &t).is_ok() {
            assert_eq!(m.size(), SIZE, "{tr}: no torn message");
            m = t.new_message();
        }
        drop(pull);
        let collector = Collector::start(&t, &address, Method::Bind);
        let sending = sender(&t, &address, Method::Connect, 500, Arc::new(AtomicBool::new(false)));
        collector.wait_for("the new sender's messages", |c| c.max() == Some(499));
        let (sent, _open) = sending.join().unwrap();
        assert_eq!(sent, 500);
        assert_eq!(collector.finish(), (0..500).collect::<Vec<_>>(), "{tr}");
        if let Transport::Shmem(shm) = &t {
            // The receiver's lane found the sender dead and had it counted out already, or this does.
            let found = shm.sweep_dead_processes();
            assert!(found.is_empty() || found == vec![sampler.pid()], "only the dead sender: {found:?}");
            assert_eq!(shm.attached_transports(), 1, "the dead sender was counted out of the session");
        }
    }
}

/// A segment full because the receiver stopped reading: by default the sender's allocation fails
/// at once (the device goes to ERROR with FairMQ's message); with a bounded number of attempts it
/// fails after them; with `--shm-throw-bad-alloc false` it waits and goes on when the receiver
/// reads again. Nothing the receiver took is lost.
#[test]
fn a_full_segment_under_load_follows_each_bad_alloc_policy() {
    for (policy, fails) in [
        (vec![], true),
        (vec!["--bad-alloc-max-attempts", "3", "--bad-alloc-attempt-interval", "20"], true),
        (vec!["--shm-throw-bad-alloc", "false"], false),
    ] {
        let s = Session::new();
        let address = s.ipc("data");
        let chan = |kind: &str, method: &str, rate: u8| {
            vec![
                "--channel-config".to_owned(),
                format!("name=data,type={kind},method={method},address={address},rateLogging={rate}"),
            ]
        };
        let sink_exe = env!("CARGO_BIN_EXE_fairmq-sink");
        let mut sink = launch(&s, "shmem", sink_exe, "sink1", "interactive", "8000000", &chan("pull", "bind", 1));
        sink.expect("READY ---> RUNNING");
        sink.send_keys("s"); // the sink stops reading: its queue holds every block sent to it
        sink.expect("RUNNING ---> READY");
        // 201 messages of 100 kB: 20 MB through an 8 MB segment.
        let mut args: Vec<String> =
            ["--msg-size", "100000", "--max-iterations", "200"].iter().map(|x| (*x).to_string()).collect();
        args.extend(policy.iter().map(|x| (*x).to_string()));
        args.extend(chan("push", "connect", 0));
        let sampler_exe = env!("CARGO_BIN_EXE_fairmq-bsampler");
        let mut sampler = launch(&s, "shmem", sampler_exe, "sampler1", "static", "8000000", &args);
        if fails {
            assert_eq!(sampler.wait().code(), Some(1), "{policy:?}: {:?}", sampler.seen);
            assert!(sampler.saw("shmem: could not create a message of size 100000"), "{policy:?}: {:?}", sampler.seen);
            assert!(sampler.saw("---> ERROR"));
        } else {
            sampler.expect("Will try infinite more times");
            sink.send_keys("r"); // reading again frees blocks: the waiting sender goes on
            assert_eq!(sampler.wait().code(), Some(0), "{:?}", sampler.seen);
            assert!(sampler.saw("Done 200 iterations"), "{:?}", sampler.seen);
        }
        sink.send_keys("q");
        assert_eq!(sink.wait().code(), Some(0), "{policy:?}: {:?}", sink.seen);
        if !fails {
            // Both runs of the sink together received every message: none lost while waiting.
            let got: u64 = sink
                .seen
                .iter()
                .filter_map(|l| {
                    l.split("Received ").nth(1)?.strip_suffix("ms.")?.split(" messages").next()?.parse::<u64>().ok()
                })
                .sum();
            assert_eq!(got, 201, "{:?}", sink.seen);
        }
        for p in [&sink, &sampler] {
            assert!(!p.saw("panicked"), "{policy:?}");
        }
    }
}

/// The monitor removes the session while a sampler and a sink run on it: the running processes
/// keep their mappings and go on, then shut down cleanly (exit code 0, no panic); nothing is left.
#[test]
fn a_session_removed_by_the_monitor_while_devices_run() {
    let s = Session::new();
    let address = s.ipc("data");
    let chan =
        |kind: &str, method: &str| format!("name=data,type={kind},method={method},address={address},rateLogging=1");
    let mut sink = device(
        &s,
        "shmem",
        env!("CARGO_BIN_EXE_fairmq-sink"),
        "sink1",
        &["--channel-config".into(), chan("pull", "bind")],
    );
    let mut sampler = device(
        &s,
        "shmem",
        env!("CARGO_BIN_EXE_fairmq-bsampler"),
        "sampler1",
        &[
            "--msg-size".into(),
            "1000".into(),
            "--msg-rate".into(),
            "2000".into(),
            "--channel-config".into(),
            chan("push", "connect"),
        ],
    );
    sink.expect("data[0]: in: ");
    let mut monitor = start(env!("CARGO_BIN_EXE_fairmq-shmmonitor"), &["-c", "-s", &s.name], None);
    assert_eq!(monitor.wait().code(), Some(0));
    assert!(monitor.saw("Successfully removed"), "{:?}", monitor.seen);
    // Traffic goes on through the mappings the processes hold.
    let lines = sink.seen.iter().filter(|l| l.contains("data[0]: in: ")).count();
    sink.expect_count("data[0]: in: ", lines + 2);
    for p in [&sampler, &sink] {
        p.signal(Signal::SIGINT as i32);
    }
    for p in [&mut sampler, &mut sink] {
        assert_eq!(p.wait().code(), Some(0), "{:?}", p.seen);
        assert!(!p.saw("panicked"));
    }
    let left = s.objects();
    assert!(left.is_empty(), "{left:?}");
}
