//! `fairmq-shmmonitor --metrics-address` (issue 36): one endpoint exports every session of the
//! host (segments, free memory, attached processes, regions), in view mode until a signal.

mod common;
use common::process::start;
use common::prometheus::{promtool_problems, scrape};
use common::{shm_id, shm_transport, Session};
use nix::sys::signal::Signal;

/// The value of the sample of `family` whose labels include every one of `labels`.
fn sample(text: &str, family: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let named = |l: &&str| l.starts_with(&format!("{family}{{")) || l.starts_with(&format!("{family} "));
    text.lines().filter(named).find_map(|l| {
        let (head, value) = l.rsplit_once(' ')?;
        labels.iter().all(|(k, v)| head.contains(&format!("{k}=\"{v}\""))).then(|| value.parse().ok())?
    })
}

#[test]
fn the_monitor_exports_every_session_of_the_host() {
    let (a, b) = (Session::new(), Session::new());
    let ta = shm_transport(&a, "exported-a");
    let tb = shm_transport(&b, "exported-b");
    let region = tb.create_region(1 << 20, fairmq_shm::RegionCallback::None, &Default::default()).unwrap();
    let held = ta.new_message_with_size(1 << 20).unwrap();
    let mut mon = start(
        env!("CARGO_BIN_EXE_fairmq-shmmonitor"),
        &["--view", "--session", &a.name, "--metrics-address", "127.0.0.1:0"],
        None,
    );
    mon.expect("metrics: serving http://");
    let line = mon.seen.iter().find(|l| l.contains("metrics: serving http://")).unwrap().clone();
    let url = format!("http://{}", line.split("http://").nth(1).unwrap());
    let (_, text) = scrape(&url, None);
    assert_eq!(promtool_problems(&text), None, "{text}");
    let (ida, idb) = (shm_id(&a), shm_id(&b));
    for (id, s) in [(&ida, &a), (&idb, &b)] {
        let l = [("shmid", id.as_str()), ("session", s.name.as_str())];
        assert_eq!(sample(&text, "fairmq_shmmonitor_session_devices", &l), Some(1.0), "{id}: one transport attached");
        assert_eq!(sample(&text, "fairmq_shmmonitor_session_attached_processes", &l), Some(1.0));
        assert_eq!(sample(&text, "fairmq_shmmonitor_session_readable", &[("shmid", id)]), Some(1.0));
        assert_eq!(
            sample(&text, "fairmq_shmmonitor_segment_size_bytes", &[("shmid", id), ("segment", "0")]),
            Some(20_000_000.0)
        );
    }
    let free = |id: &str, text: &str| sample(text, "fairmq_shmmonitor_segment_free_bytes", &[("shmid", id)]).unwrap();
    assert!(
        free(&ida, &text) + (1 << 20) as f64 <= free(&idb, &text),
        "the held message is missing from a's free memory"
    );
    let region_id = region.id().to_string();
    assert_eq!(
        sample(&text, "fairmq_shmmonitor_region_size_bytes", &[("shmid", &idb), ("region", &region_id)]),
        Some((1 << 20) as f64)
    );
    assert_eq!(
        sample(&text, "fairmq_shmmonitor_region_destroyed", &[("shmid", &idb), ("region", &region_id)]),
        Some(0.0)
    );
    assert!(sample(&text, "fairmq_shmmonitor_sessions", &[]).unwrap() >= 2.0);
    // Scrapes read the sessions as they are now.
    drop(held);
    ta.flush();
    let (_, later) = scrape(&url, None);
    assert!(free(&ida, &later) >= free(&ida, &text) + (1 << 20) as f64, "freed memory shows at the next scrape");
    mon.signal(Signal::SIGTERM as i32);
    assert_eq!(mon.wait().code(), Some(0), "{:?}", mon.seen);
}

/// `fairmq-shmmonitor --prometheus-targets FILE`: the metrics endpoints the session's devices
/// published (in their liveness slots), as file_sd JSON labelled with pid, session and shm id;
/// each target serves that device's metrics.
#[test]
fn the_monitor_names_the_metrics_endpoints_of_a_sessions_devices() {
    let s = Session::new();
    let chan = format!("name=data,type=pull,method=bind,address={},rateLogging=0", s.ipc("data"));
    let args = ["--channel-config", &chan, "--metrics-address", "127.0.0.1:0"];
    let mut sink =
        common::launch_device(env!("CARGO_BIN_EXE_fairmq-sink"), "sink1", &s, "shmem", "static", "20000000", &args);
    sink.expect("---> RUNNING");
    let line = sink.seen.iter().find(|l| l.contains("metrics: serving http://")).unwrap().clone();
    let served = line.split("http://").nth(1).unwrap().trim_end_matches("/metrics").to_owned();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("targets.json");
    let (code, out) = common::process::run_to_end(
        None,
        env!("CARGO_BIN_EXE_fairmq-shmmonitor"),
        &["--session", &s.name, "--prometheus-targets", file.to_str().unwrap()],
    );
    assert_eq!(code, Some(0), "{out}");
    let groups: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let expected = serde_json::json!([{
        "targets": [served],
        "labels": {"pid": sink.pid().to_string(), "session": s.name, "shmid": shm_id(&s)}
    }]);
    assert_eq!(groups, expected);
    let (_, text) = scrape(&format!("http://{served}/metrics"), None);
    assert!(text.contains("fairmq_device_state{device=\"sink1\",state=\"RUNNING\"} 1"), "{text}");
    sink.signal(Signal::SIGINT as i32);
    assert_eq!(sink.wait().code(), Some(0));
    // Once the device left, the session is gone: an empty list.
    let (code, out) = common::process::run_to_end(
        None,
        env!("CARGO_BIN_EXE_fairmq-shmmonitor"),
        &["--session", &s.name, "--prometheus-targets", file.to_str().unwrap()],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "[]");
}
