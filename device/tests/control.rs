//! Control modes, signals and exit codes, with real device processes.

mod common;
use common::process::{start, Proc};
use nix::sys::signal::Signal;
use std::os::unix::process::ExitStatusExt;

const DEVICE: &str = env!("CARGO_BIN_EXE_fairmq-test-device");

fn device(extra: &str) -> Proc {
    let mut args = vec!["--id", "testdev", "--color", "false", "--severity", "debug"];
    args.extend(extra.split_whitespace());
    start(DEVICE, &args, None)
}

#[test]
fn g34_g42_static_mode_runs_and_shuts_down_by_itself() {
    let mut d = device("--control static --runs 3");
    assert_eq!(d.wait().code(), Some(0));
    for line in [
        "IDLE ---> INITIALIZING DEVICE",
        "READY ---> RUNNING",
        "RUNNING ---> READY",
        "RESETTING DEVICE ---> IDLE",
        "IDLE ---> EXITING",
    ] {
        assert!(d.saw(line), "missing '{line}'");
    }
}

#[test]
fn g09_error_or_panic_in_any_hook_exits_with_code_1_and_skips_resets() {
    for hook in
        ["init", "bind", "connect", "init_task", "pre_run", "conditional_run", "run", "post_run", "reset_task", "reset"]
    {
        for how in ["--fail-in", "--panic-in"] {
            let mut d = device(&format!("--control static --runs 2 {how} {hook}"));
            assert_eq!(d.wait().code(), Some(1), "{how} {hook}");
            assert!(d.saw("---> ERROR"), "{how} {hook}");
            // In ERROR the control plugin requests nothing more: no transition follows but leaving.
            let at = d.seen.iter().position(|l| l.contains("---> ERROR")).unwrap();
            let later: Vec<&String> = d.seen[at + 1..].iter().filter(|l| l.contains("--->")).collect();
            assert!(later.iter().all(|l| l.contains("ERROR ---> EXITING")), "{how} {hook}: {later:?}");
            if !matches!(hook, "reset_task" | "reset") {
                assert!(!d.saw("hook: reset_task") && !d.saw("hook: reset"), "{how} {hook}: ERROR skips the resets");
            }
        }
    }
}

#[test]
fn g09_error_in_interactive_mode_exits_with_code_1() {
    let mut d = device("--control interactive --runs 2 --fail-in post_run");
    assert_eq!(d.wait().code(), Some(1));
    let mut d = device("--control interactive --runs 2 --fail-in reset_task");
    d.expect("RUNNING ---> READY");
    d.send_keys("q");
    assert_eq!(d.wait().code(), Some(1));
}

#[test]
fn g35_interactive_keys_stop_and_end() {
    let mut d = device("--control interactive");
    d.expect("READY ---> RUNNING");
    d.expect("Following control commands are available");
    d.send_keys("h");
    d.expect_count("Following control commands are available", 2);
    d.send_keys("s");
    d.expect("RUNNING ---> READY");
    d.send_keys("z");
    d.expect("Invalid input: [z]");
    d.send_keys("r");
    d.expect("hook: pre_run");
    d.send_keys("q");
    assert_eq!(d.wait().code(), Some(0));
    assert!(d.saw("IDLE ---> EXITING"));
}

#[test]
fn g35_dynamic_mode_stays_in_ready_when_running_ends() {
    // No --control (dynamic is the default), dynamic and external: the same keys.
    for mode in ["", "--control dynamic", "--control external"] {
        let mut d = device(&format!("{mode} --runs 2"));
        d.expect("RUNNING ---> READY");
        // The controller answers a key in READY: it is waiting for keys there, not going on.
        d.send_keys("c");
        d.expect("--> [c] check current state");
        d.expect("[STATE] READY");
        assert!(!d.saw("READY ---> RESETTING TASK"), "{mode:?}: the device waits for keys in READY");
        d.send_keys("r");
        d.expect_count("READY ---> RUNNING", 2);
        d.expect_count("RUNNING ---> READY", 2);
        d.send_keys("q");
        assert_eq!(d.wait().code(), Some(0), "{mode:?}");
        for line in ["READY ---> RESETTING TASK", "RESETTING DEVICE ---> IDLE", "IDLE ---> EXITING"] {
            assert!(d.saw(line), "{mode:?}: q ran the shutdown sequence: missing '{line}'");
        }
    }
}

#[test]
fn g35_s_stops_a_running_device_in_every_key_mode() {
    for mode in ["", "--control dynamic", "--control external"] {
        let mut d = device(mode);
        d.expect("READY ---> RUNNING");
        d.send_keys("s");
        d.expect("RUNNING ---> READY");
        d.send_keys("q");
        assert_eq!(d.wait().code(), Some(0), "{mode:?}");
        assert!(d.saw("IDLE ---> EXITING"), "{mode:?}");
    }
}

#[test]
fn g36_gui_mode_waits_for_a_signal() {
    let mut d = device("--control gui --runs 2");
    d.expect("RUNNING ---> READY");
    // Nothing reports waiting for a signal: no further transition within a pause, still running.
    std::thread::sleep(std::time::Duration::from_millis(300));
    d.drain();
    assert!(!d.saw("READY ---> RESETTING TASK") && !d.has_ended());
    d.signal(Signal::SIGTERM as i32);
    assert_eq!(d.wait().code(), Some(0));
    assert!(d.saw("IDLE ---> EXITING"));
}

#[test]
fn g37_none_mode_requests_nothing_but_a_signal_still_shuts_down() {
    let mut d = device("--control none");
    d.expect("Starting FairMQ state machine --> IDLE");
    // Nothing reports requesting nothing: no transition within a pause, still running.
    std::thread::sleep(std::time::Duration::from_millis(300));
    d.drain();
    assert!(!d.saw("IDLE ---> INITIALIZING DEVICE") && !d.has_ended());
    d.signal(Signal::SIGINT as i32);
    assert_eq!(d.wait().code(), Some(0));
    assert!(d.saw("IDLE ---> EXITING"));
}

#[test]
fn g38_a_signal_runs_the_shutdown_sequence_from_running() {
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        let mut d = device("--control dynamic");
        d.expect("READY ---> RUNNING");
        d.signal(sig as i32);
        assert_eq!(d.wait().code(), Some(0), "{sig}");
        for line in [
            "Received device shutdown request",
            "RUNNING ---> READY",
            "READY ---> RESETTING TASK",
            "RESETTING DEVICE ---> IDLE",
            "IDLE ---> EXITING",
        ] {
            assert!(d.saw(line), "{sig}: missing '{line}'");
        }
    }
}

#[test]
fn g38_a_second_sigint_aborts_at_once() {
    let mut d = device("--control static --runs 2 --sleep-in reset_task");
    d.expect("hook: reset_task");
    d.signal(Signal::SIGINT as i32);
    d.expect("Received device shutdown request");
    d.signal(Signal::SIGINT as i32);
    let status = d.wait();
    assert_eq!(status.signal(), Some(Signal::SIGINT as i32), "killed by the second SIGINT: {status:?}");
}

#[test]
fn catch_signals_0_leaves_signals_to_the_default_action() {
    let mut d = device("--control dynamic --catch-signals 0");
    d.expect("READY ---> RUNNING");
    d.signal(Signal::SIGTERM as i32);
    assert_eq!(d.wait().signal(), Some(Signal::SIGTERM as i32));
}

#[test]
fn bad_command_lines_exit_1_with_a_clear_message_and_info_options_exit_0() {
    // --id is optional, as in FairMQ: without it a device still lists its channels.
    let mut d = start(DEVICE, &["--color", "false", "--print-channels"], None);
    assert_eq!(d.wait().code(), Some(0), "{:?}", d.seen);
    assert!(d.saw("no channels registered."), "{:?}", d.seen);
    let mut d = start(DEVICE, &["--id", "x", "--rate", "fast"], None);
    assert_eq!(d.wait().code(), Some(1));
    let mut d =
        start(DEVICE, &["--id", "x", "--transport", "nanomsg", "--control", "static", "--color", "false"], None);
    assert_eq!(d.wait().code(), Some(1), "unknown transport: ERROR");
    assert!(d.saw("invalid transport type provided: nanomsg"));
    let mut d = start(DEVICE, &["--help"], None);
    assert_eq!(d.wait().code(), Some(0));
    assert!(d.saw("--transport arg (=zeromq)") && d.saw("--fail-in"));
    let mut d = start(DEVICE, &["--print-options"], None);
    assert_eq!(d.wait().code(), Some(0));
    assert!(d.saw("session:default:string:Session name."));
    let mut d = start(DEVICE, &["--version"], None);
    assert_eq!(d.wait().code(), Some(0));
    assert!(d.saw("FairMQ version: fairmq-rs"));
    let mut d = start(DEVICE, &["--id", "x", "--print-channels"], None);
    assert_eq!(d.wait().code(), Some(0));
    assert!(d.saw("no channels registered."));
}

#[test]
fn g35_interactive_keys_through_a_pseudo_terminal() {
    use std::io::Write;
    let pty = nix::pty::openpty(None, None).expect("pty");
    let mut master = std::fs::File::from(pty.master);
    let mut d = start(
        DEVICE,
        &["--id", "tty", "--color", "false", "--control", "interactive"],
        Some(std::process::Stdio::from(pty.slave)),
    );
    d.expect("READY ---> RUNNING");
    // Single keys, no Enter: the terminal is in non-canonical mode.
    master.write_all(b"s").unwrap();
    d.expect("RUNNING ---> READY");
    master.write_all(b"c").unwrap();
    d.expect("[c] check current state");
    // The whole cycle by keys: t d, then i b x j r s, then q.
    for (key, line) in [
        ("t", "RESETTING TASK ---> DEVICE READY"),
        ("d", "RESETTING DEVICE ---> IDLE"),
        ("i", "INITIALIZING DEVICE ---> INITIALIZED"),
        ("b", "BINDING ---> BOUND"),
        ("x", "CONNECTING ---> DEVICE READY"),
        ("j", "INITIALIZING TASK ---> READY"),
        ("r", "READY ---> RUNNING"),
        ("s", "RUNNING ---> READY"),
    ] {
        let seen = d.seen.iter().filter(|l| l.contains(line)).count();
        master.write_all(key.as_bytes()).unwrap();
        d.expect_count(line, seen + 1);
    }
    let helps = d.seen.iter().filter(|l| l.contains("[c] check current device state")).count();
    master.write_all(b"h").unwrap();
    d.expect_count("[c] check current device state", helps + 1);
    master.write_all(b"q").unwrap();
    assert_eq!(d.wait().code(), Some(0));
    assert!(d.saw("IDLE ---> EXITING"));
}

#[test]
fn rate_logging_and_log_to_file() {
    let dir = tempfile::tempdir().unwrap();
    let chan = format!("name=data,type=pair,method=bind,address=ipc://{}/r,rateLogging=1", dir.path().display());
    let mut d = device(&format!("--control static --runs 120 --channel-config {chan}"));
    d.expect("data[0]: in: 0 (0 MB) out: 0 (0 MB)");
    assert_eq!(d.wait().code(), Some(0));
    let prefix = dir.path().join("devlog");
    let mut d = device(&format!("--control static --runs 2 --log-to-file {}", prefix.display()));
    assert_eq!(d.wait().code(), Some(0));
    assert!(!d.saw("---> EXITING"), "nothing on the console");
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("devlog"))
        .expect("log file");
    let text = std::fs::read_to_string(file.path()).unwrap();
    assert!(text.contains("IDLE ---> EXITING") && text.contains("[STATE]"), "{text}");
}

#[test]
fn an_argument_that_is_not_utf8_is_refused_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let out = std::process::Command::new(DEVICE)
        .args(["--id", "testdev", "--session"])
        .arg(std::ffi::OsStr::from_bytes(b"caf\xe9"))
        .output()
        .expect("starting the device");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is not valid UTF-8") && !stderr.contains("panicked"), "{stderr}");
}

/// Issue 18: `[p]` prints every channel's number of connected peers, as FairMQ's interactive
/// control does (`data[0]: 2 peers connected`), from the counts ZeroMQ's monitor keeps.
#[test]
fn p_prints_the_connected_peers_of_every_channel() {
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("ipc://{}/p", dir.path().display());
    let mut d =
        device(&format!("--control interactive --channel-config name=data,type=pull,method=bind,address={addr}"));
    d.expect("READY ---> RUNNING");
    let t = fairmq_zmq::Transport::new("peers").unwrap();
    let peers: Vec<_> = (0..2)
        .map(|i| {
            let s = t.socket(fairmq_zmq::SocketType::Push, &format!("out{i}")).unwrap();
            s.connect(&addr).unwrap();
            s
        })
        .collect();
    // The count follows the connections a moment late: ask until it shows both.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut asked = 0;
    while !d.saw("data[0]: 2 peers connected") {
        assert!(std::time::Instant::now() < deadline, "never saw 2 peers: {:?}", d.seen);
        d.send_keys("p");
        asked += 1;
        d.expect_count("[p] print number of connected peers for all channels", asked);
        // Asks again a little later (the count is not reported when it changes).
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(peers);
    d.send_keys("q");
    assert_eq!(d.wait().code(), Some(0));
}
