//! The pmix plugin under OpenMPI's launcher (issue 19): devices find each other's addresses, a
//! shared id is numbered per process, exact counts. Built only with `--features pmix`; needs
//! `mpirun` (Debian: openmpi-bin) and libpmix (libpmix-dev), which `.ci/run` installs.
#![cfg(feature = "pmix")]

mod common;
use common::process::run_to_end;
use common::Session;

const SAMPLER: &str = env!("CARGO_BIN_EXE_fairmq-bsampler");
const SINK: &str = env!("CARGO_BIN_EXE_fairmq-sink");

/// Runs `mpirun` with the launcher options these tests need, then `apps` (`:`-separated groups).
fn mpirun(apps: &[&str]) -> (Option<i32>, String) {
    // mpirun's own timeout ends its processes too (a killed mpirun would leave them running).
    let mut args = vec!["--allow-run-as-root", "--oversubscribe", "--timeout", "50"];
    args.extend_from_slice(apps);
    run_to_end(None, "mpirun", &args)
}

fn common_args(s: &Session, transport: &str) -> Vec<String> {
    ["-P", "pmix", "--control", "static", "--color", "false", "--transport", transport, "--session", &s.name]
        .iter()
        .chain(["--shm-segment-size", "50000000"].iter())
        .map(|a| a.to_string())
        .collect()
}

#[test]
fn i19_pmix_devices_find_each_other_without_written_addresses_on_both_transports() {
    for transport in common::TRANSPORTS {
        let s = Session::new();
        let c = common_args(&s, transport);
        let mut apps: Vec<String> = vec!["-n".into(), "1".into(), SAMPLER.into()];
        apps.extend(c.clone());
        apps.extend(
            // 1001 messages: the sink counts 1000 and leaves with the last (FairMQ's counting).
            ["--id", "sampler1", "--max-iterations", "1000", "--msg-size", "1024"].iter().map(|a| a.to_string()),
        );
        apps.extend(["--channel-config".into(), "name=data,type=push,method=bind,address=tcp://*:0".into()]);
        apps.extend([":".into(), "-n".into(), "1".into(), SINK.into()]);
        apps.extend(c);
        apps.extend(["--id", "sink1", "--max-iterations", "1000"].iter().map(|a| a.to_string()));
        apps.extend(["--channel-config".into(), "name=data,type=pull,method=connect".into()]);
        let refs: Vec<&str> = apps.iter().map(String::as_str).collect();
        let (code, out) = mpirun(&refs);
        assert_eq!(code, Some(0), "{transport}:\n{out}");
        assert!(out.contains("pmix: channel data[0] connects to tcp://"), "{transport}:\n{out}");
        assert!(out.contains("Received 1000 messages"), "{transport}:\n{out}");
    }
}

#[test]
fn i19_pmix_numbers_a_shared_id_and_connects_to_every_process_that_binds_the_channel() {
    let s = Session::new();
    let c = common_args(&s, "zeromq");
    let mut apps: Vec<String> = vec!["-n".into(), "2".into(), SAMPLER.into()];
    apps.extend(c.clone());
    apps.extend(["--id", "sampler", "--max-iterations", "999", "--msg-size", "100"].iter().map(|a| a.to_string()));
    apps.extend(["--channel-config".into(), "name=data,type=push,method=bind,address=tcp://*:0".into()]);
    apps.extend([":".into(), "-n".into(), "1".into(), SINK.into()]);
    apps.extend(c);
    // 2 x 1000 messages: the sink counts 1999 and leaves with the last.
    apps.extend(["--id", "sink1", "--max-iterations", "1999"].iter().map(|a| a.to_string()));
    apps.extend(["--channel-config".into(), "name=data,type=pull,method=connect".into()]);
    let refs: Vec<&str> = apps.iter().map(String::as_str).collect();
    let (code, out) = mpirun(&refs);
    assert_eq!(code, Some(0), "{out}");
    for id in ["sampler_0", "sampler_1"] {
        assert!(out.contains(&format!("this one is '{id}'")), "{id}:\n{out}");
    }
    let connects = out.lines().find(|l| l.contains("pmix: channel data[0] connects to")).expect("the sink connects");
    assert_eq!(connects.matches("tcp://").count(), 2, "{connects}");
    assert!(out.contains("Received 1999 messages"), "{out}");
}

#[test]
fn i19_pmix_without_a_launcher_is_a_clear_error() {
    let (code, out) = run_to_end(
        None,
        SINK,
        &[
            "-P",
            "pmix",
            "--control",
            "static",
            "--id",
            "s",
            "--color",
            "false",
            "--channel-config",
            "name=data,type=pull,method=connect",
        ],
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("An error occurred while instantiating plugin pmix: PMIx_Init failed"), "{out}");
}

/// Test hosts made of network namespaces, each with its own address on a bridge: created by the
/// test, removed on drop (also when the test fails).
struct Hosts {
    namespaces: Vec<String>,
    bridge: String,
    /// The hosts' addresses, in the order of `namespaces`.
    addresses: Vec<String>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Hosts {
    /// `n` hosts, or why they cannot be made here.
    fn new(n: usize) -> Result<Hosts, String> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        // Unique among the tests of this process (they run in parallel) and, mostly, among processes.
        let tag = (std::process::id() % 10_000) * 10 + NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 10;
        let subnet = format!("10.78.{}", tag % 250);
        let mut hosts = Hosts { namespaces: Vec::new(), bridge: format!("fmqb{tag}"), addresses: Vec::new() };
        ip(&["link", "add", &hosts.bridge, "type", "bridge"])?;
        ip(&["addr", "add", &format!("{subnet}.1/24"), "dev", &hosts.bridge])?;
        ip(&["link", "set", &hosts.bridge, "up"])?;
        for i in 0..n {
            let ns = format!("fmqh{tag}-{i}");
            let (outer, inner) = (format!("fmqv{tag}{i}"), format!("fmqi{tag}{i}"));
            let address = format!("{subnet}.{}", i + 2);
            ip(&["netns", "add", &ns])?;
            hosts.namespaces.push(ns.clone());
            ip(&["link", "add", &outer, "type", "veth", "peer", "name", &inner])?;
            ip(&["link", "set", &inner, "netns", &ns])?;
            ip(&["link", "set", &outer, "master", &hosts.bridge])?;
            ip(&["link", "set", &outer, "up"])?;
            ip(&["-n", &ns, "addr", "add", &format!("{address}/24"), "dev", &inner])?;
            ip(&["-n", &ns, "link", "set", &inner, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &ns, "route", "add", "default", "via", &format!("{subnet}.1")])?;
            hosts.addresses.push(address);
        }
        Ok(hosts)
    }

    /// mpirun's launcher agent: "ssh HOST COMMAND" runs COMMAND in HOST's namespace.
    fn agent(&self, dir: &std::path::Path) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let mut script = String::from("#!/bin/sh\nhost=$1; shift\ncase \"$host\" in\n");
        for (a, ns) in self.addresses.iter().zip(&self.namespaces) {
            script.push_str(&format!("  {a}) ns={ns} ;;\n"));
        }
        script.push_str(
            "  *) echo \"unknown host $host\" >&2; exit 1 ;;\nesac\nexec ip netns exec \"$ns\" /bin/sh -c \"$*\"\n",
        );
        let path = dir.join("agent.sh");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

#[test]
fn i19_pmix_devices_on_three_hosts_find_each_other_over_tcp() {
    let hosts = match Hosts::new(3) {
        Ok(h) => h,
        Err(why) => {
            println!("skipped: network namespaces cannot be made here ({why})");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let agent = hosts.agent(dir.path());
    let subnet = format!("{}.0/24", hosts.addresses[0].rsplit_once('.').unwrap().0);
    let s = Session::new();
    let c = common_args(&s, "zeromq");
    let mut apps: Vec<String> =
        // Daemons talk to mpirun directly (ORTE's routing tree failed now and then across namespaces).
        ["--mca", "routed", "direct", "--mca", "plm_rsh_agent", &agent.to_string_lossy(), "--mca", "oob_tcp_if_include", &subnet]
            .iter()
            .map(|a| a.to_string())
            .collect();
    // A sampler on host A and one on host B (the same id), the sink on host C.
    for host in &hosts.addresses[..2] {
        apps.extend(["-n", "1", "--host", host, SAMPLER].iter().map(|a| a.to_string()));
        apps.extend(c.clone());
        apps.extend(["--id", "sampler", "--max-iterations", "999", "--msg-size", "1000"].iter().map(|a| a.to_string()));
        apps.extend([
            "--channel-config".into(),
            "name=data,type=push,method=bind,address=tcp://*:0".into(),
            ":".into(),
        ]);
    }
    apps.extend(["-n", "1", "--host", &hosts.addresses[2], SINK].iter().map(|a| a.to_string()));
    apps.extend(c);
    apps.extend(["--id", "sink1", "--max-iterations", "1999"].iter().map(|a| a.to_string()));
    apps.extend(["--channel-config".into(), "name=data,type=pull,method=connect".into()]);
    let refs: Vec<&str> = apps.iter().map(String::as_str).collect();
    let (code, out) = mpirun(&refs);
    assert_eq!(code, Some(0), "{out}");
    let connects = out.lines().find(|l| l.contains("pmix: channel data[0] connects to")).expect("the sink connects");
    for a in &hosts.addresses[..2] {
        assert!(connects.contains(&format!("tcp://{a}:")), "the sink connects to host {a}: {connects}");
    }
    assert!(out.contains("Received 1999 messages"), "{out}");
}

const COMMAND: &str = env!("CARGO_BIN_EXE_fairmq-pmix-command");

/// The quickstart example (sampler, processor and sink roles with end messages), built with the
/// pmix feature beside this test.
fn quickstart() -> String {
    let examples = std::path::Path::new(SAMPLER).parent().unwrap().join("examples");
    let release = examples.components().any(|c| c.as_os_str() == "release");
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "-p", "fairmq", "--features", "pmix", "--example", "quickstart"])
        .args(release.then_some("--release"))
        .status()
        .expect("cargo builds the quickstart example");
    assert!(status.success());
    examples.join("quickstart").to_string_lossy().into_owned()
}

/// The command line of a sampler -> processor -> sink job driven by `fairmq-pmix-command run
/// stop state`, each app placed on `hosts` (one each, in that order, the command with the sampler)
/// when given.
fn three_stages(exe: &str, s: &Session, transport: &str, hosts: Option<&[String]>) -> Vec<String> {
    let c: Vec<String> =
        ["-P", "pmix", "--control", "none", "--color", "false", "--severity", "info", "--transport", transport]
            .iter()
            .chain(["--session", &s.name, "--shm-segment-size", "50000000"].iter())
            .map(|a| a.to_string())
            .collect();
    let apps: [(&str, &str, Vec<&str>); 3] = [
        (
            "sampler",
            "sampler1",
            vec![
                "--messages",
                "0",
                "--msg-size",
                "256",
                "--channel-config",
                "name=data1,type=push,method=bind,address=tcp://*:0",
            ],
        ),
        (
            "processor",
            "processor1",
            vec!["--channel-config", "name=data1,type=pull,method=connect", "name=data2,type=push,method=connect"],
        ),
        ("sink", "sink1", vec!["--channel-config", "name=data2,type=pull,method=bind,address=tcp://*:0"]),
    ];
    let mut line = Vec::new();
    for (i, (role, id, extra)) in apps.iter().enumerate() {
        line.extend(["-n".to_string(), "1".to_string()]);
        if let Some(h) = hosts {
            line.extend(["--host".to_string(), h[i].clone()]);
        }
        line.extend([exe.to_string(), "--role".to_string(), role.to_string(), "--id".to_string(), id.to_string()]);
        line.extend(c.iter().cloned());
        line.extend(extra.iter().map(|a| a.to_string()));
        line.push(":".into());
    }
    line.extend(["-n".to_string(), "1".to_string()]);
    if let Some(h) = hosts {
        line.extend(["--host".to_string(), h[0].clone()]);
    }
    line.extend([COMMAND, "--timeout", "60", "run", "stop", "state"].iter().map(|a| a.to_string()));
    line
}

/// Checks a three-stage job's output: every message the sampler sent reached the sink, in order,
/// and every device ended.
fn check_three_stages(code: Option<i32>, out: &str) {
    assert_eq!(code, Some(0), "{out}");
    let sent: u64 = out
        .lines()
        .find_map(|l| l.split("sampler: sent ").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("the sampler reports what it sent:\n{out}"));
    assert!(sent > 0, "{out}");
    assert!(out.contains(&format!("sink: received all {sent} messages")), "sent {sent}:\n{out}");
    assert!(out.contains("; 0 lost"), "{out}");
    assert!(out.contains("pmix command: stopping the sources"), "{out}");
    for id in ["sampler1", "processor1", "sink1"] {
        assert!(out.contains(&format!("{id}: EXITING")), "{id}:\n{out}");
    }
}

#[test]
fn i19_pmix_command_runs_and_stops_a_three_stage_topology_in_order_losing_nothing() {
    let exe = quickstart();
    for transport in common::TRANSPORTS {
        let s = Session::new();
        let line = three_stages(&exe, &s, transport, None);
        let refs: Vec<&str> = line.iter().map(String::as_str).collect();
        let (code, out) = mpirun(&refs);
        check_three_stages(code, &out);
    }
}

#[test]
fn i19_pmix_command_stops_a_topology_spread_over_three_hosts_losing_nothing() {
    let hosts = match Hosts::new(3) {
        Ok(h) => h,
        Err(why) => {
            println!("skipped: network namespaces cannot be made here ({why})");
            return;
        }
    };
    let exe = quickstart();
    let dir = tempfile::tempdir().unwrap();
    let agent = hosts.agent(dir.path());
    let subnet = format!("{}.0/24", hosts.addresses[0].rsplit_once('.').unwrap().0);
    let s = Session::new();
    let mut line: Vec<String> =
        // Daemons talk to mpirun directly (ORTE's routing tree failed now and then across namespaces).
        ["--mca", "routed", "direct", "--mca", "plm_rsh_agent", &agent.to_string_lossy(), "--mca", "oob_tcp_if_include", &subnet]
            .iter()
            .map(|a| a.to_string())
            .collect();
    line.extend(three_stages(&exe, &s, "zeromq", Some(&hosts.addresses)));
    let refs: Vec<&str> = line.iter().map(String::as_str).collect();
    let (code, out) = mpirun(&refs);
    check_three_stages(code, &out);
    // The processor on host B connected to the sampler on host A, the sink's address is on C.
    assert!(out.contains(&format!("connects to tcp://{}:", hosts.addresses[0])), "{out}");
    assert!(out.contains(&format!("connects to tcp://{}:", hosts.addresses[2])), "{out}");
}
