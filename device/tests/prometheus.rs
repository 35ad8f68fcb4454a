//! Metrics scraped by a real Prometheus (issue 36): a sampler -> proxy -> sink topology on both
//! transports, each device with `--metrics-address 127.0.0.1:0`, scraped every 100 ms and queried
//! through Prometheus' HTTP API. At the end the sink received what the sampler sent, the state
//! metrics show each transition, and (shmem) free memory falls while the sink holds the messages
//! and comes back once it reads them. Every endpoint's exposition passes `promtool check metrics`.

mod common;
use common::process::Proc;
use common::prometheus::{self, Prometheus};
use common::*;

/// Messages the sampler sends (`--max-iterations 99`: FairMQ's sampler sends one more).
const SENT: f64 = 100.0;
const SIZE: u64 = 1 << 20;

/// A device with a metrics endpoint, and the address it serves on (from its log line).
fn device(s: &Session, transport: &str, exe: &str, id: &str, control: &str, extra: &[String]) -> (Proc, String) {
    let mut args: Vec<&str> = vec!["--metrics-address", "127.0.0.1:0", "--shm-segment-size", "268435456"];
    args.extend(extra.iter().map(String::as_str));
    let mut p = launch_device(exe, id, s, transport, control, "268435456", &args);
    p.expect("metrics: serving http://");
    let line = p.seen.iter().find(|l| l.contains("metrics: serving http://")).unwrap().clone();
    let addr = line.split("http://").nth(1).unwrap().trim_end_matches("/metrics").to_owned();
    (p, addr)
}

fn channel(name: &str, ty: &str, method: &str, address: &str) -> Vec<String> {
    vec!["--channel-config".into(), format!("name={name},type={ty},method={method},address={address},rateLogging=0")]
}

fn topology(transport: &str) {
    if !prometheus::available("prometheus topology") {
        return;
    }
    let shm = transport == "shmem";
    let prom = Prometheus::start();
    let s = Session::new();
    let (a, b) = (s.ipc("a"), s.ipc("b"));
    let (mut sink, sink_addr) = device(
        &s,
        transport,
        env!("CARGO_BIN_EXE_fairmq-sink"),
        "sink",
        "interactive",
        &channel("data", "pull", "bind", &b),
    );
    sink.expect("READY ---> RUNNING");
    sink.send_keys("s"); // it stops reading: what it is sent waits in its queue (and the segment)
    sink.expect("RUNNING ---> READY");
    let mut proxy_args = vec!["--multipart".to_owned(), "false".to_owned()];
    proxy_args.extend(channel("data-in", "pull", "bind", &a));
    proxy_args.extend(channel("data-out", "push", "connect", &b));
    let (mut proxy, proxy_addr) =
        device(&s, transport, env!("CARGO_BIN_EXE_fairmq-proxy"), "proxy", "interactive", &proxy_args);
    proxy.expect("READY ---> RUNNING");
    prom.scrape(&[(&sink_addr, "sink"), (&proxy_addr, "proxy")]);
    let free = |d: &str| format!("fairmq_shm_segment_free_bytes{{device=\"{d}\"}}");
    let before = if shm { prom.value(&free("sink")) } else { 0.0 };

    let mut sampler_args: Vec<String> =
        ["--msg-size", "1048576", "--max-iterations", "99"].iter().map(|x| (*x).to_string()).collect();
    sampler_args.extend(channel("data", "push", "connect", &a));
    let (mut sampler, sampler_addr) =
        device(&s, transport, env!("CARGO_BIN_EXE_fairmq-bsampler"), "sampler", "interactive", &sampler_args);
    sampler.expect("Done 99 iterations");
    sampler.expect("RUNNING ---> READY"); // it stays, its counters readable
    prom.scrape(&[(&sink_addr, "sink"), (&proxy_addr, "proxy"), (&sampler_addr, "sampler")]);
    let sent =
        prom.wait_for(r#"fairmq_channel_sent_messages_total{device="sampler"}"#, "the sampler's count", |v| v == SENT);
    assert_eq!(prom.value(r#"fairmq_channel_sent_bytes_total{device="sampler"}"#), SENT * SIZE as f64);
    if shm {
        // The sink holds every message (in its queue): the segment has 100 MiB less free.
        let held = 0.9 * SENT * SIZE as f64;
        prom.wait_for(&free("sink"), "free memory falls while messages are held", |v| v <= before - held);
        assert!(prom.value(r#"fairmq_shm_messages_in_flight{device="proxy"}"#) >= 0.0);
    }
    sink.send_keys("r");
    sink.expect("READY ---> RUNNING");
    prom.wait_for(r#"fairmq_channel_received_messages_total{device="sink"}"#, "the sink receives all", |v| v == sent);
    assert_eq!(prom.value(r#"fairmq_channel_received_messages_total{device="proxy",channel="data-in"}"#), sent);
    assert_eq!(prom.value(r#"fairmq_channel_sent_messages_total{device="proxy",channel="data-out"}"#), sent);
    assert_eq!(prom.value(r#"fairmq_channel_received_bytes_total{device="sink"}"#), SENT * SIZE as f64);
    if shm {
        // Freed blocks go back to the heap, or wait in the segment's depot for reuse (cached).
        let available =
            r#"fairmq_shm_segment_free_bytes{device="sink"} + fairmq_shm_segment_cached_bytes{device="sink"}"#;
        let low = prom.value(&format!("min_over_time({}[10m])", free("sink")));
        let back = 0.9 * SENT * SIZE as f64;
        prom.wait_for(available, "free memory comes back once the sink read", |v| v >= low + back);
    }
    // The sink went RUNNING -> READY -> RUNNING: the gauge showed both, the counters count both.
    for state in ["IDLE", "INITIALIZED", "BOUND", "DEVICE READY", "READY", "RUNNING"] {
        let seen = format!(r#"max_over_time(fairmq_device_state{{device="sink",state="{state}"}}[10m])"#);
        let entered = format!(r#"fairmq_device_transitions_total{{device="sink",state="{state}"}}"#);
        let times = if matches!(state, "READY" | "RUNNING") { 2.0 } else { 1.0 };
        assert_eq!(prom.value(&entered), times, "the sink entered {state}");
        if matches!(state, "READY" | "RUNNING") {
            assert_eq!(prom.value(&seen), 1.0, "a scrape saw the sink in {state}");
        }
    }
    assert_eq!(prom.value(r#"fairmq_device_state{device="sink",state="RUNNING"}"#), 1.0);
    assert_eq!(prom.value(r#"fairmq_channel_peers{device="sink"}"#), 1.0);
    if shm {
        // PUSH to one PULL goes through a lane: the proxy writes one, the sink reads one.
        assert_eq!(prom.value(r#"fairmq_shm_lanes{device="proxy",channel="data-out",direction="write"}"#), 1.0);
        assert_eq!(prom.value(r#"fairmq_shm_lanes{device="sink",channel="data",direction="read"}"#), 1.0);
    }
    // Prometheus asked for OpenMetrics and got it (only OpenMetrics carries units), on every target.
    for (url, health, err) in prom.targets() {
        assert_eq!((health.as_str(), err.as_str()), ("up", ""), "{url}");
    }
    assert_eq!(prom.unit("fairmq_channel_sent_bytes"), "bytes");
    for addr in [&sink_addr, &proxy_addr, &sampler_addr] {
        let (ct, text) = prometheus::scrape(&format!("http://{addr}/metrics"), None);
        assert_eq!(ct, "text/plain; version=0.0.4; charset=utf-8");
        assert_eq!(prometheus::promtool_problems(&text), None, "{addr}:\n{text}");
        assert_eq!(text.contains("fairmq_shm_segment_free_bytes{"), shm, "{addr}");
    }
    for p in [&mut sampler, &mut proxy, &mut sink] {
        p.send_keys("q");
        assert_eq!(p.wait().code(), Some(0), "{:?}", p.seen);
    }
}

#[test]
fn a_topology_on_shmem_as_prometheus_sees_it() {
    topology("shmem");
}

#[test]
fn a_topology_on_zeromq_as_prometheus_sees_it() {
    topology("zeromq");
}
