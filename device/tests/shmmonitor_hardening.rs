//! Issue 17, items 5, 6 and 14 with the real `fairmq-shmmonitor`: a monitor that cannot read a
//! session says "permission denied" and fails, the daemon's lock is private, a session whose
//! processes are only stopped is never removed, and every error exits non-zero.

mod common;
use common::process::{run_to_end, start, wait_until};
use common::{shm_id, shm_transport, Session};
use fairmq_shm::Transport;
use nix::sys::signal::Signal;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

const MONITOR: &str = env!("CARGO_BIN_EXE_fairmq-shmmonitor");
/// uid and gid of `nobody`.
const NOBODY: u32 = 65534;

fn transport(s: &Session) -> Transport {
    shm_transport(s, "hardening")
}

/// Runs the monitor (as `user`, if given) to its end; returns (exit code, output with stderr).
fn monitor_as(user: Option<u32>, args: &[&str]) -> (Option<i32>, String) {
    run_to_end(user, MONITOR, args)
}

fn is_root() -> bool {
    let root = nix::unistd::geteuid().is_root();
    if !root {
        println!("skipped: the test needs root to start processes as another user");
    }
    root
}

#[test]
fn i05_a_monitor_that_may_not_read_a_session_says_permission_denied_and_fails() {
    if !is_root() {
        return;
    }
    let s = Session::new();
    let _t = transport(&s);
    let id = shm_id(&s);
    let before = s.objects();
    for mode in ["-c", "-v", "--debug", "-r"] {
        let (code, out) = monitor_as(Some(NOBODY), &[mode, "--shmid", &id]);
        assert_eq!(code, Some(2), "{mode}: {out}");
        assert!(out.contains("permission denied"), "{mode}: {out}");
        assert!(out.contains("Unhandled Exception reached the top of main"), "{mode}: {out}");
        assert!(!out.contains("No segments found") && !out.contains("Did not find"), "{mode}: {out}");
    }
    assert_eq!(s.objects(), before, "the session is untouched");
}

#[test]
fn i05_the_daemon_makes_its_lock_private() {
    let s = Session::new();
    let t = transport(&s);
    let lock = PathBuf::from(format!("/dev/shm/fmqrs_{}_ms", shm_id(&s)));
    let (code, out) = monitor_as(None, &["-x", "-m", "-d", "-t", "60000", "--shmid", &shm_id(&s)]);
    assert_eq!(code, Some(0), "the launcher: {out}");
    wait_until("the daemon's lock", || lock.exists());
    let m = std::fs::symlink_metadata(&lock).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o600, "the lock has mode {:o}", m.mode() & 0o7777);
    assert_eq!(m.uid(), nix::unistd::geteuid().as_raw());
    // The daemon (-x) ends with the session, and takes its lock with it.
    drop(t);
    wait_until("the daemon's end", || s.objects().is_empty());
}

#[test]
fn i06_a_session_whose_processes_are_stopped_is_not_removed() {
    let s = Session::new();
    let common = format!(
        "--transport shmem --session {} --control static --severity warn --shm-segment-size 20000000 --max-iterations 10",
        s.name
    );
    let chan = |kind: &str, method: &str| {
        format!("name=data,type={kind},method={method},address={},rateLogging=0", s.ipc("data"))
    };
    let sink_args = format!("--id sink1 {common} --channel-config {}", chan("pull", "bind"));
    let mut sink = start(env!("CARGO_BIN_EXE_fairmq-sink"), &sink_args.split_whitespace().collect::<Vec<_>>(), None);
    let has = |kind: &str| s.objects().iter().any(|n| n.ends_with(kind));
    wait_until("the sink's session", || has("_mng") && has("_m_0"));

    let mut monitor = start(MONITOR, &["-m", "-t", "1000", "--shmid", &shm_id(&s)], None);
    monitor.expect("Starting shared memory monitor for session");
    // Stopped, it beats no more, but it lives: it holds its liveness slot.
    sink.signal(Signal::SIGSTOP as i32);
    monitor.expect("no heartbeats since over 1000 milliseconds");
    let verdict = monitor.seen.iter().find(|l| l.contains("no heartbeats since over")).unwrap().clone();
    assert!(verdict.contains(&format!("processes [{}]", sink.pid())), "{verdict}");
    assert!(verdict.contains("not cleaning"), "{verdict}");
    assert!(has("_mng") && has("_m_0"), "the session survives: {:?}", s.objects());

    // Resumed, it works as before: it receives what a new sender sends, and both end well.
    sink.signal(Signal::SIGCONT as i32);
    let sampler_args = format!("--id sampler1 {common} --msg-size 1000 --channel-config {}", chan("push", "connect"));
    let mut sampler =
        start(env!("CARGO_BIN_EXE_fairmq-bsampler"), &sampler_args.split_whitespace().collect::<Vec<_>>(), None);
    assert_eq!(sink.wait().code(), Some(0), "{:?}", sink.seen);
    assert_eq!(sampler.wait().code(), Some(0), "{:?}", sampler.seen);
    wait_until("the session's removal by its last device", || s.objects().iter().all(|n| n.ends_with("_ms")));
    monitor.signal(Signal::SIGINT as i32);
    assert_eq!(monitor.wait().code(), Some(0));
    assert!(!monitor.saw("cleaning..."), "the monitor never cleaned: {:?}", monitor.seen);
}

#[test]
fn i14_list_all_of_a_missing_directory_exits_non_zero() {
    let (code, out) = monitor_as(None, &["--list-all", "--list-all-path", "/nonexistent"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("/nonexistent") && out.contains("No such file or directory"), "{out}");
    assert!(out.contains("Unhandled Exception reached the top of main"), "{out}");
}
