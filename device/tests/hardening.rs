//! Issue 17, "no peer, process or local user can crash a device": real device processes fed
//! panics, rogue frames, signals while connecting, floods of errors and bad configurations. Each
//! test is named after its item of the issue.

mod common;
use common::process::{wait_until, Proc, GENEROUS};
use common::{
    args, attached_socket, config, launch_device, session_transport, shm_transport, spawn, Hooks, Session, T,
};
use fairmq::region::{RegionCallback, RegionConfig};
use fairmq::state_machine::ErrorState;
use fairmq::{SocketType, State, Transition, TransportKind, UnmanagedRegion};
use fairmq_zmq::layered::LayeredSocket;
use fairmq_zmq::Method;
use nix::sys::signal::Signal;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Instant;

const TEST_DEVICE: &str = env!("CARGO_BIN_EXE_fairmq-test-device");
const SPLITTER: &str = env!("CARGO_BIN_EXE_fairmq-splitter");
const SAMPLER: &str = env!("CARGO_BIN_EXE_fairmq-bsampler");

/// A device process of session `s`: static control, plain log lines, a small segment (unless
/// `extra` gives one), `extra`.
fn launch(exe: &str, id: &str, s: &Session, transport: &str, extra: &[&str]) -> Proc {
    launch_device(exe, id, s, transport, "static", "20000000", extra)
}

/// The device went to ERROR and exited with FairMQ's code for it, after logging `why`.
fn assert_ended_in_error(p: &mut Proc, why: &str) {
    let code = p.wait().code();
    assert_eq!(code, Some(1), "exit code; output:\n{}", p.seen.join("\n"));
    assert!(p.saw(why), "no line with '{why}'; output:\n{}", p.seen.join("\n"));
    assert!(p.saw("---> ERROR"), "no ERROR state; output:\n{}", p.seen.join("\n"));
}

/// Nothing of session `s` is left in /dev/shm (every process of it has ended).
fn assert_no_shm_left(s: &Session) {
    assert_eq!(s.objects(), Vec::<String>::new(), "shared memory left behind by session {}", s.name);
}

/// Item 9: a panic in the data callback takes the device to ERROR; it releases its shared memory
/// and exits with 1, as FairMQ does for an exception in a callback.
#[test]
fn i09_a_panicking_data_callback_ends_in_error_state_and_cleans_up() {
    let s = Session::new();
    let input = s.ipc("in");
    let pull = format!("name=data,type=pull,method=bind,address={input},rateLogging=0");
    let mut dev = launch(
        TEST_DEVICE,
        "victim",
        &s,
        "shmem",
        &["--in-channel", "data", "--panic-in", "handle_data", "--channel-config", &pull],
    );
    dev.expect("READY ---> RUNNING");
    let push = format!("name=data,type=push,method=connect,address={input},rateLogging=0");
    let mut sampler = launch(SAMPLER, "sampler", &s, "shmem", &["--msg-size", "100", "--channel-config", &push]);
    assert_ended_in_error(&mut dev, "HandleData() panicked: panic requested in handle_data");
    sampler.signal(Signal::SIGTERM as i32);
    sampler.wait();
    assert_no_shm_left(&s);
}

/// Item 9: a panic on the data-callback path outside the callback (the transport's receive, fed a
/// wake frame one byte too long by a rogue peer, panicked in fairmq-shm before issue 17 item 1)
/// is caught by the same boundary: never exit code 101. Either the frame is refused and the
/// splitter forwards the real message sent after it, or its receive path panicked and the device
/// went to ERROR; both ways it ends cleanly and releases its shared memory.
#[test]
fn i09_a_panic_while_receiving_for_a_data_callback_never_crashes_the_device() {
    let s = Session::new();
    let (input, output) = (s.ipc("in"), s.ipc("out"));
    let mut splitter = launch(
        SPLITTER,
        "splitter",
        &s,
        "shmem",
        &[
            "--channel-config",
            &format!("name=data-in,type=pull,method=bind,address={input},rateLogging=0"),
            &format!("name=data-out,type=push,method=bind,address={output},rateLogging=0"),
        ],
    );
    splitter.expect("READY ---> RUNNING");
    let forwarded = {
        let peer = session_transport(&s, TransportKind::Shmem, |_| {});
        let out = attached_socket(&peer, SocketType::Pull, &output, Method::Connect);
        // A wake control frame (tag 5) one byte longer than its 8, from a plain ZeroMQ dealer
        // straight onto the socket that carries the transport's metadata; then a real message.
        let raw = session_transport(&s, TransportKind::Zeromq, |_| {});
        let rogue = attached_socket(&raw, SocketType::Dealer, &input, Method::Connect);
        let mut frame = fairmq_zmq::Message::from_slice(&[fairmq_shm::testing::meta::VERSION, 5, 0, 0, 0, 0, 0, 0, 0]);
        rogue.as_zeromq().expect("a zeromq socket").send(&mut frame, 10_000).expect("rogue frame sent");
        let push = attached_socket(&peer, SocketType::Push, &input, Method::Connect);
        let mut real = peer.new_simple_message(b"after the rogue frame").unwrap();
        push.send(&mut real, 10_000, &peer).expect("real message sent");
        let deadline = Instant::now() + GENEROUS;
        loop {
            let mut m = peer.new_message();
            if out.receive(&mut m, 100, &peer).is_ok() {
                assert_eq!(m.data(), b"after the rogue frame");
                break true;
            }
            if splitter.has_ended() {
                break false;
            }
            assert!(Instant::now() < deadline, "neither forwarded nor ended:\n{}", splitter.seen.join("\n"));
        }
        // The peer's messages and sockets go with its transport, before the check below.
    };
    if forwarded {
        splitter.signal(Signal::SIGTERM as i32);
        assert_eq!(splitter.wait().code(), Some(0), "{}", splitter.seen.join("\n"));
    } else {
        assert_ended_in_error(&mut splitter, "RUNNING panicked");
    }
    assert_no_shm_left(&s);
}

/// Item 9: a plugin's state-change callback runs outside the hooks; its panic takes the device to
/// ERROR (exit 1) instead of unwinding out of the state loop (exit 101).
#[test]
fn i09_a_panicking_state_change_callback_ends_in_error_state_and_cleans_up() {
    let s = Session::new();
    let pull = format!("name=data,type=pull,method=bind,address={},rateLogging=0", s.ipc("in"));
    let mut dev =
        launch(TEST_DEVICE, "victim", &s, "shmem", &["--panic-in", "state:RUNNING", "--channel-config", &pull]);
    assert_ended_in_error(&mut dev, "panic requested entering RUNNING");
    assert_no_shm_left(&s);
}

/// Item 9: a panic while the device is built (the program's factory) ends the program as FairMQ
/// ends it for an exception there: logged, exit code 1.
#[test]
fn i09_a_panicking_device_factory_exits_with_code_1() {
    let s = Session::new();
    let mut dev = launch(TEST_DEVICE, "victim", &s, "shmem", &["--panic-in", "factory"]);
    assert_eq!(dev.wait().code(), Some(1), "{}", dev.seen.join("\n"));
    assert!(
        dev.saw("Uncaught exception reached the top of main: panic requested in factory"),
        "{}",
        dev.seen.join("\n")
    );
    assert_no_shm_left(&s);
}

/// Item 9: a region's callback runs on a thread of the shmem transport; its panic takes the device
/// to ERROR (before, it ended that thread and every acknowledgement after it, silently).
#[test]
fn i09_a_panicking_region_callback_ends_in_error_state() {
    let s = Session::new();
    let address = s.ipc("region");
    let region: Arc<Mutex<Option<UnmanagedRegion>>> = Arc::default();
    let (made, used) = (region.clone(), region.clone());
    let device = Hooks {
        init_task: Some(Box::new(move |ctx| {
            let cb = RegionCallback::Single(Box::new(|_| panic!("panic requested in the region callback")));
            *made.lock() = Some(ctx.new_unmanaged_region_for("data", 0, 4096, cb, &RegionConfig::default())?);
            Ok(())
        })),
        run: Some(Box::new(move |ctx| {
            let r = used.lock();
            let mut m = ctx.new_message_for_region("data", 0, r.as_ref().expect("region"), 0, 100, 7)?;
            ctx.send(&mut m, "data", 0)?;
            Ok(())
        })),
        ..Hooks::default()
    };
    let channel = format!("name=data,type=push,method=bind,address={address}");
    let d = spawn(device, config(&args("regions", "shmem", &s, &channel)));
    let peer = session_transport(&s, TransportKind::Shmem, |_| {});
    let pull = attached_socket(&peer, SocketType::Pull, &address, Method::Connect);
    d.to_ready();
    d.go(Transition::Run, State::Running);
    let mut m = peer.new_message();
    pull.receive(&mut m, 60_000, &peer).expect("the region message");
    drop(m); // the piece goes back to its creator: the callback runs
    assert_eq!(d.h.wait_for_state(State::Exiting, T), Err(ErrorState), "the device went to ERROR");
    assert!(!d.join());
    region.lock().take();
}

/// A connecting channel to a host that cannot be resolved: the device retries until
/// `--init-timeout`.
const UNREACHABLE: &str = "name=data,type=push,method=connect,address=tcp://no.such.host.invalid:5555,rateLogging=0";

/// Item 10: SIGINT or SIGTERM while a connect retries ends the retries at once and the device
/// exits cleanly (0, shared memory released), long before `--init-timeout` (600 s here).
#[test]
fn i10_a_shutdown_signal_ends_connect_retries_at_once_and_exits_cleanly() {
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        let s = Session::new();
        let mut dev =
            launch(TEST_DEVICE, "connector", &s, "shmem", &["--init-timeout", "600", "--channel-config", UNREACHABLE]);
        dev.expect("BOUND ---> CONNECTING");
        dev.expect("failed to attach channel data[0]");
        dev.signal(sig as i32);
        assert_eq!(dev.wait().code(), Some(0), "{sig}: {}", dev.seen.join("\n"));
        for line in ["Received device shutdown request", "CONNECTING ---> DEVICE READY", "IDLE ---> EXITING"] {
            assert!(dev.saw(line), "{sig}: no '{line}': {}", dev.seen.join("\n"));
        }
        assert!(!dev.saw("could not connect all channels"), "{sig}: gave up by itself");
        assert!(!dev.saw("hook: connect"), "{sig}: the connect hook needs connected channels");
        assert_no_shm_left(&s);
    }
}

/// Item 10: giving up after `--init-timeout` says so in FairMQ's words, with the number of attempts
/// as attempts and the timeout in seconds, then names the channels left (as FairMQ does).
#[test]
fn i10_the_init_timeout_message_counts_attempts_and_seconds() {
    let s = Session::new();
    let mut dev =
        launch(TEST_DEVICE, "connector", &s, "zeromq", &["--init-timeout", "1", "--channel-config", UNREACHABLE]);
    assert_ended_in_error(&mut dev, "following channels are still invalid:");
    let line = dev.seen.iter().find(|l| l.contains("could not connect all channels after ")).expect("the message");
    let words: Vec<&str> = line.split("after ").nth(1).expect("after").split_whitespace().collect();
    assert!(words.len() >= 5, "{line}");
    let attempts: u32 = words[0].parse().unwrap_or_else(|_| panic!("a count of attempts: {line}"));
    // One attempt at once, then one every 50 ms until the second is over (fewer when resolving
    // the host name is slow): a count of the channel's tries, not of anything else.
    assert!((1..=21).contains(&attempts), "{line}");
    assert_eq!(&words[1..5], ["attempts", "in", "1", "s"], "{line}");
    assert!(dev.saw("channel: name: data[0], type: push, method: connect, address: tcp://no.such.host.invalid:5555"));
}

const SINK: &str = env!("CARGO_BIN_EXE_fairmq-sink");

/// Item 14: a `--mq-config` that cannot be read or parsed fails the device at INITIALIZING DEVICE
/// with the parser's message and exit code 1 (before, the error was logged and the device reached
/// RUNNING, to fail with `GetChannel(): 'data[0]' does not exist`).
#[test]
fn i14_a_bad_mq_config_fails_the_device_at_initializing_device_with_the_parsers_message() {
    let s = Session::new();
    let dir = s.dir.path();
    let malformed = dir.join("malformed.json");
    std::fs::write(&malformed, r#"{ "fairMQOptions": { "devices": [ { "id": "sink", "#).unwrap();
    let nested = dir.join("nested.json");
    std::fs::write(&nested, format!(r#"{{ "fairMQOptions": {}{} }}"#, "[".repeat(10_000), "]".repeat(10_000))).unwrap();
    let missing = dir.join("missing.json");
    let twice = dir.join("twice.json");
    std::fs::write(&twice, r#"{ "fairMQOptions": { "devices": [ { "id": "sink", "id": "sink2" } ] } }"#).unwrap();
    let other = dir.join("other.json");
    std::fs::write(&other, r#"{ "fairMQOptions": { "devices": [ { "id": "sampler" } ] } }"#).unwrap();
    let zero = std::path::PathBuf::from("/dev/zero");
    for (path, message) in [
        (&missing, "No such file or directory"),
        (&malformed, "EOF while parsing"),
        (&nested, "recursion limit exceeded"),
        // Read to the end of memory before; a key given twice and a file without this device
        // were read in silence (serde_json kept the last key; the device got no channels).
        (&zero, "not a regular file"),
        (&twice, "key 'id' given twice"),
        (&other, "no device with key or id 'sink'"),
    ] {
        let file = path.to_str().unwrap();
        let mut dev = launch(SINK, "sink", &s, "zeromq", &["--mq-config", file]);
        assert_ended_in_error(&mut dev, message);
        assert!(dev.saw(file), "the message names the file: {}", dev.seen.join("\n"));
        assert!(dev.saw("INITIALIZING DEVICE ---> ERROR"), "{}", dev.seen.join("\n"));
        assert!(!dev.saw("---> RUNNING") && !dev.saw("does not exist"), "{}", dev.seen.join("\n"));
    }
}

/// Item 14: a number outside what an option accepts is refused when the command line is read, with
/// exit code 1 and a message naming the option and the range; before, `--io-threads 100000000` made
/// libzmq abort the process and a segment size beyond `off_t` failed with "out of range integral
/// type conversion attempted".
#[test]
fn i14_numeric_options_out_of_range_are_refused_naming_the_option_and_the_range() {
    let s = Session::new();
    let channel = format!("name=data,type=pull,method=bind,address={},rateLogging=0", s.ipc("in"));
    for (transport, option, value, range) in [
        ("zeromq", "--io-threads", "100000000", "1 to 64".to_owned()),
        ("shmem", "--io-threads", "100000000", "1 to 64".to_owned()),
        ("shmem", "--shm-segment-size", "9223372036854775808", "1 to 9223372036854775807".to_owned()),
        ("shmem", "--init-timeout", "99999999999", "0 to 2147483647".to_owned()),
        ("shmem", "--shm-segment-id", "-1", "0 to 65535".to_owned()),
    ] {
        let mut dev = launch(
            TEST_DEVICE,
            "numbers",
            &s,
            transport,
            &["--runs", "1", option, value, "--channel-config", &channel],
        );
        assert_eq!(dev.wait().code(), Some(1), "{option} {value}: {}", dev.seen.join("\n"));
        let expected = format!("the argument ('{value}') for option '{option}' is out of range: allowed are {range}");
        assert!(dev.saw(&expected), "{option} {value}: no '{expected}':\n{}", dev.seen.join("\n"));
        assert!(!dev.saw("---> RUNNING"));
    }
    assert_no_shm_left(&s);
}

/// Item 12: a channel defined twice, in `--channel-config`, in `--mq-config` or across the two,
/// fails the device at INITIALIZING DEVICE naming the channel (before, the second definition
/// silently replaced the first, and a sink whose `data` had become a push socket spun logging
/// errno 95).
#[test]
fn i12_a_duplicated_channel_fails_the_device_at_initializing_device_naming_it() {
    let s = Session::new();
    let (a, b) = (s.ipc("a"), s.ipc("b"));
    let pull = format!("name=data,type=pull,method=bind,address={a},rateLogging=0");
    let push = format!("name=data,type=push,method=bind,address={b},rateLogging=0");
    let json = |channels: &str| {
        let path = s.dir.path().join(format!("{}.json", channels.len()));
        let text =
            format!(r#"{{ "fairMQOptions": {{ "devices": [ {{ "id": "sink", "channels": [ {channels} ] }} ] }} }}"#);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let one = json(&format!(r#"{{ "name": "data", "type": "pull", "method": "bind", "address": "{a}" }}"#));
    let two = json(&format!(
        r#"{{ "name": "data", "type": "pull", "method": "bind", "address": "{a}" }}, {{ "name": "data", "type": "push", "method": "bind", "address": "{b}" }}"#
    ));
    for (args, place) in [
        (vec!["--channel-config", &pull, &push], "in --channel-config"),
        (vec!["--mq-config", &two], "in --mq-config"),
        (vec!["--mq-config", &one, "--channel-config", &push], "in --mq-config and in --channel-config"),
    ] {
        let mut dev = launch(SINK, "sink", &s, "zeromq", &args);
        assert_ended_in_error(&mut dev, &format!("channel 'data' is defined more than once ({place})"));
        assert!(dev.saw("INITIALIZING DEVICE ---> ERROR"), "{place}: {}", dev.seen.join("\n"));
    }
}

/// How lines containing `text` were written: raw lines, summary lines, and the lines they stand
/// for (a raw line one, a summary the count it gives).
struct Summarised {
    raw: usize,
    summaries: usize,
    total: u64,
}

const SUMMARY: &str = "more like this in the last";

fn summarised(p: &Proc, text: &str) -> Summarised {
    let lines: Vec<&String> = p.seen.iter().filter(|l| l.contains(text)).collect();
    let counts: Vec<u64> = lines
        .iter()
        .filter(|l| l.contains(SUMMARY))
        .map(|l| {
            let n = l.rsplit('[').next().and_then(|t| t.split(' ').next()).and_then(|n| n.parse().ok());
            n.unwrap_or_else(|| panic!("a count in the summary: {l}"))
        })
        .collect();
    let raw = lines.len() - counts.len();
    Summarised { raw, summaries: counts.len(), total: raw as u64 + counts.iter().sum::<u64>() }
}

/// Asserts the lines with `text` came as a burst of at most 10 and at most one summary a second
/// (over `seconds`), standing for at least `at_least` lines.
fn assert_summarised(p: &Proc, text: &str, seconds: u64, at_least: u64) {
    let s = summarised(p, text);
    assert!(s.raw <= 10, "a burst of at most 10 lines, not {}", s.raw);
    assert!(s.summaries as u64 <= seconds + 2, "{} summaries in {seconds} s", s.summaries);
    assert!(s.total >= at_least, "the lines were counted, not lost: {} of at least {at_least}", s.total);
}

/// Item 12: a flood of identical error lines (a sink configured with a push socket fails every
/// receive with errno 95, a million times a second) gives a burst, then one summary line a second
/// counting the rest, and a last summary when the device ends.
#[test]
fn i12_a_flood_of_identical_errors_is_summarised_once_a_second() {
    let s = Session::new();
    let push = format!("name=data,type=push,method=bind,address={},rateLogging=0", s.ipc("flood"));
    let started = Instant::now();
    let mut dev = launch(SINK, "sink", &s, "zeromq", &["--channel-config", &push]);
    dev.expect_count(SUMMARY, 3);
    dev.signal(Signal::SIGTERM as i32);
    assert_eq!(dev.wait().code(), Some(0), "{}", dev.seen.join("\n"));
    let failing = "Failed transfer on socket sink.data[0].push, errno: 95";
    assert_summarised(&dev, failing, started.elapsed().as_secs(), 1000);
    assert!(dev.seen.last().is_some_and(|l| l.contains(SUMMARY)), "the rest is summarised at exit");
}

/// A plain ZeroMQ dealer (the kind of socket that may connect to a shmem pull, a DEALER) of a
/// local process of the session, connected to `address`: it presents the session's password.
/// Keep its transport as long as the socket.
fn rogue_dealer(s: &Session, address: &str) -> (fairmq::Transport, fairmq::Socket) {
    let raw = session_transport(s, TransportKind::Zeromq, |_| {});
    let rogue = raw.socket(SocketType::Dealer, "rogue").expect("socket");
    rogue.as_zeromq().expect("a zeromq socket").require_password(&shm_transport(s, "password").connect_password());
    rogue.attach(address, &fairmq_zmq::AttachOptions::new(Some(Method::Connect))).expect("attach");
    (raw, rogue)
}

/// Item 12: a rogue peer sends 100000 frames that are not this transport's metadata, then (once
/// the sink's lines account for every frame) two real messages: the sink refuses each frame and
/// goes on (its run ends with the second message), and its error lines come as a burst and at most
/// one summary a second, not a line per frame.
#[test]
fn i12_a_flood_of_bad_frames_from_a_peer_is_summarised() {
    let s = Session::new();
    let address = s.ipc("bad-frames");
    let pull = format!("name=data,type=pull,method=bind,address={address},rateLogging=0");
    let started = Instant::now();
    let mut sink = launch(SINK, "sink", &s, "shmem", &["--max-iterations", "1", "--channel-config", &pull]);
    sink.expect("READY ---> RUNNING");
    {
        let (_raw, rogue) = rogue_dealer(&s, &address);
        for _ in 0..100_000 {
            let mut m = fairmq_zmq::Message::from_slice(&[0xff; 3]);
            rogue.as_zeromq().expect("a zeromq socket").send(&mut m, 10_000).expect("rogue frame sent");
        }
        // Every frame is refused with an error line, written or counted in a summary.
        wait_until("the refusals of every frame", || {
            sink.drain();
            summarised(&sink, "[ERROR]").total >= 100_000
        });
        let peer = session_transport(&s, TransportKind::Shmem, |_| {});
        let push = attached_socket(&peer, SocketType::Push, &address, Method::Connect);
        for _ in 0..2 {
            let mut real = peer.new_simple_message(b"after the flood").unwrap();
            push.send(&mut real, 10_000, &peer).expect("real message sent");
        }
        assert_eq!(sink.wait().code(), Some(0), "{}", sink.seen.join("\n"));
    }
    // FairMQ's count: both real messages received, the one that ended the run not counted.
    assert!(sink.saw("Received 1 messages"), "{}", sink.seen.join("\n"));
    // The premise: the transport logs its refusals (else this test no longer floods the logger).
    assert!(summarised(&sink, "[ERROR]").total > 0, "the frames were refused with errors");
    // Each frame is refused with an error line at least: all of them are counted.
    assert_summarised(&sink, "[ERROR]", started.elapsed().as_secs(), 100_000);
    assert_no_shm_left(&s);
}

/// Issue 37 item 3: a flood of refused frames whose error lines all differ (each names another
/// record type) is one kind of event, the place that refuses them: a burst and at most one
/// summary a second, not a line per frame (before, only identical lines were grouped: 100 k
/// frames with different ticket numbers gave 90 793 lines).
#[test]
fn a_flood_of_bad_frames_with_varying_text_is_summarised_by_kind() {
    let s = Session::new();
    let address = s.ipc("varying");
    let pull = format!("name=data,type=pull,method=bind,address={address},rateLogging=0");
    let started = Instant::now();
    let mut sink = launch(SINK, "sink", &s, "shmem", &["--max-iterations", "1", "--channel-config", &pull]);
    sink.expect("READY ---> RUNNING");
    const FRAMES: u64 = 20_000;
    {
        let (_raw, rogue) = rogue_dealer(&s, &address);
        for i in 0..FRAMES {
            // An unknown record type, a different one in each frame: each refusal's text differs.
            let tag = 20 + (i % 200) as u8;
            let mut m = fairmq_zmq::Message::from_slice(&[fairmq_shm::testing::meta::VERSION, tag, 0, 0, 0, 0, 0, 0]);
            rogue.as_zeromq().expect("a zeromq socket").send(&mut m, 10_000).expect("rogue frame sent");
        }
        wait_until("the refusals of every frame", || {
            sink.drain();
            summarised(&sink, "unknown shared-memory metadata record type").total >= FRAMES
        });
        let peer = session_transport(&s, TransportKind::Shmem, |_| {});
        let push = attached_socket(&peer, SocketType::Push, &address, Method::Connect);
        for _ in 0..2 {
            let mut real = peer.new_simple_message(b"after the flood").unwrap();
            push.send(&mut real, 10_000, &peer).expect("real message sent");
        }
        assert_eq!(sink.wait().code(), Some(0), "{}", sink.seen.join("\n"));
    }
    assert_summarised(&sink, "unknown shared-memory metadata record type", started.elapsed().as_secs(), FRAMES);
    assert_no_shm_left(&s);
}

/// A device whose stdout reader left (`fairmq-bsampler ... | head`, a closed pipe) runs to its end
/// and exits with 0, its log lines lost, as a C++ FairMQ device does; printing to the closed pipe
/// panicked, and the panic's own report aborted the process.
#[test]
fn a_device_whose_stdout_reader_left_runs_to_its_end() {
    use std::process::{Command, Stdio};
    let s = Session::new();
    let address = s.ipc("data");
    let pull = format!("name=data,type=pull,method=bind,address={address}");
    let mut sink = launch(SINK, "sink", &s, "shmem", &["--max-iterations", "500", "--channel-config", &pull]);
    let push = format!("name=data,type=push,method=connect,address={address}");
    let mut sampler = Command::new(SAMPLER)
        .args(["--id", "sampler", "--control", "static", "--severity", "info", "--transport", "shmem"])
        .args(["--session", &s.name, "--shm-segment-size", "20000000", "--max-iterations", "500"])
        .args(["--msg-size", "100", "--channel-config", &push])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the sampler");
    // The reader leaves before the device wrote its first line.
    drop(sampler.stdout.take());
    let deadline = Instant::now() + GENEROUS;
    let status = loop {
        if let Some(status) = sampler.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = sampler.kill();
            panic!("the sampler did not end");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "the sampler's end: {status:?}");
    sink.expect("Received 500 messages");
    assert_eq!(sink.wait().code(), Some(0), "output:\n{}", sink.seen.join("\n"));
    assert_no_shm_left(&s);
}

/// Input that was read in silence or crashed the program (a review of the device's inputs): a
/// topology file without a device id to read it by, arguments that are not UTF-8, a log file name
/// another user planted, a plugin search path others may write.
#[test]
fn input_once_ignored_or_crashing_is_refused_with_exit_code_1() {
    use common::process::run_to_end;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let s = Session::new();
    let dir = s.dir.path();
    let topology = dir.join("topology.json");
    std::fs::write(&topology, r#"{ "fairMQOptions": { "devices": [ { "id": "sink" } ] } }"#).unwrap();
    let common_args = ["--control", "static", "--color", "false", "--session", s.name.as_str()];
    let mut args = vec!["--mq-config", topology.to_str().unwrap()];
    args.extend(common_args);
    let (code, out) = run_to_end(None, SINK, &args);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no device ID provided"), "{out}");
    // A bind channel without address on an interface that does not exist listened on every
    // interface instead (FairMQ fails there).
    let mut args = vec!["--id", "sink", "--network-interface", "no-such-if0"];
    args.extend(["--channel-config", "name=data,type=pull,method=bind"]);
    args.extend(common_args);
    let (code, out) = run_to_end(None, SINK, &args);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("Could not find provided network interface: \"no-such-if0\""), "{out}");
    assert!(!out.contains("tcp://*:"), "{out}");
    // Not UTF-8: the monitor panicked (exit 101) reading its command line.
    let monitor = env!("CARGO_BIN_EXE_fairmq-shmmonitor");
    let out = std::process::Command::new(monitor)
        .args([std::ffi::OsStr::new("--session"), std::ffi::OsStr::from_bytes(b"\xff")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid UTF-8"), "{out:?}");
    let (code, out) = run_to_end(None, monitor, &["--interval", "0"]);
    // 2: FairMQ's monitor's code for a command line it cannot use.
    assert_eq!(code, Some(2), "an interval of 0 would redraw without pause: {out}");
    assert!(out.contains("allowed are 10 to 86400000"), "{out}");
    // --log-to-file: the file is new and private; a symbolic link planted under its name (the pid
    // is predictable) is not followed. The shell execs the sink, which keeps the shell's pid.
    let prefix = dir.join("log").to_str().unwrap().to_owned();
    let victim = dir.join("victim");
    std::fs::write(&victim, "keep me").unwrap();
    let sink_with_log = |plant: bool| {
        let link = if plant { format!("ln -s {} {prefix}_$$.log; ", victim.display()) } else { String::new() };
        let line = format!(
            "{link}exec {SINK} --id sink --log-to-file {prefix} --mq-config {} --control static --color false",
            dir.join("missing.json").display()
        );
        run_to_end(None, "sh", &["-c", &line])
    };
    let (code, out) = sink_with_log(false);
    assert_eq!(code, Some(1), "the missing topology file fails the device: {out}");
    let logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("log_"))
        .map(|e| e.path())
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let mode = std::fs::symlink_metadata(&logs[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "readable by its user only");
    assert!(std::fs::read_to_string(&logs[0]).unwrap().contains("missing.json"), "the log holds the error");
    let (code, out) = sink_with_log(true);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("must not exist yet"), "{out}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me", "the planted link was not followed");
    // A plugin search path others may write: refused, nothing loaded from it.
    let plugins = dir.join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::set_permissions(&plugins, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut args = vec!["--id", "sink", "-S", plugins.to_str().unwrap(), "-P", "x"];
    args.extend(common_args);
    let (code, out) = run_to_end(None, SINK, &args);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("another user could change it"), "{out}");
}
