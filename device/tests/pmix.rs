//! The pmix plugin under OpenMPI's launcher (issue 19): devices find each other's addresses, a
//! shared id is numbered per process, exact counts. Built only with `--features pmix`; needs
//! `mpirun` (Debian: openmpi-bin) and libpmix (libpmix-dev), which `.ci/run` installs.
#![cfg(feature = "pmix")]

mod common;
use common::process::run_to_end;
use common::Session;

const SAMPLER: &str = env!("CARGO_BIN_EXE_fairmq-bsampler");
const SINK: &str = env!("CARGO_BIN_EXE_fairmq-sink");

/// Runs `mpirun` on `line`: launcher options, then the apps (see [`job`]).
fn mpirun(line: &[String]) -> (Option<i32>, String) {
    // mpirun's own timeout ends its processes too (a killed mpirun would leave them running).
    let mut args = vec!["--allow-run-as-root", "--oversubscribe", "--timeout", "50"];
    args.extend(line.iter().map(String::as_str));
    run_to_end(None, "mpirun", &args)
}

/// One app of an mpirun line: `-n N [--host H] ARGS...`.
fn app(n: u32, host: Option<&str>, args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut a = vec!["-n".to_owned(), n.to_string()];
    if let Some(h) = host {
        a.extend(["--host".to_owned(), h.to_owned()]);
    }
    a.extend(args);
    a
}

/// `launcher` options, then `apps` separated by `:`.
fn job(launcher: Vec<String>, apps: Vec<Vec<String>>) -> Vec<String> {
    let mut line = launcher;
    for (i, a) in apps.into_iter().enumerate() {
        if i > 0 {
            line.push(":".into());
        }
        line.extend(a);
    }
    line
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// The options every device of these jobs gets.
fn device_args(s: &Session, transport: &str, control: &str) -> Vec<String> {
    strings(&["-P", "pmix", "--control", control, "--color", "false", "--severity", "info", "--transport", transport])
        .into_iter()
        .chain(strings(&["--session", &s.name, "--shm-segment-size", "50000000"]))
        .collect()
}

/// `fairmq-bsampler` binding `data` (`--max-iterations` N sends N + 1 messages).
fn sampler(c: &[String], id: &str, iterations: &str, size: &str) -> Vec<String> {
    let mut a = vec![SAMPLER.to_owned()];
    a.extend(c.iter().cloned());
    a.extend(strings(&["--id", id, "--max-iterations", iterations, "--msg-size", size]));
    a.extend(strings(&["--channel-config", "name=data,type=push,method=bind,address=tcp://*:0"]));
    a
}

/// `fairmq-sink` connecting `data` without an address (`--max-iterations` N counts N and leaves
/// with the next message, FairMQ's counting).
fn sink(c: &[String], iterations: &str) -> Vec<String> {
    let mut a = vec![SINK.to_owned()];
    a.extend(c.iter().cloned());
    a.extend(strings(&["--id", "sink1", "--max-iterations", iterations]));
    a.extend(strings(&["--channel-config", "name=data,type=pull,method=connect"]));
    a
}

#[test]
fn i19_pmix_devices_find_each_other_without_written_addresses_on_both_transports() {
    for transport in common::TRANSPORTS {
        let s = Session::new();
        let c = device_args(&s, transport, "static");
        // 1001 messages: the sink counts 1000.
        let line =
            job(vec![], vec![app(1, None, sampler(&c, "sampler1", "1000", "1024")), app(1, None, sink(&c, "1000"))]);
        let (code, out) = mpirun(&line);
        assert_eq!(code, Some(0), "{transport}:\n{out}");
        assert!(out.contains("pmix: channel data[0] connects to tcp://"), "{transport}:\n{out}");
        assert!(out.contains("Received 1000 messages"), "{transport}:\n{out}");
    }
}

#[test]
fn i19_pmix_numbers_a_shared_id_and_connects_to_every_process_that_binds_the_channel() {
    let s = Session::new();
    let c = device_args(&s, "zeromq", "static");
    // 2 x 1000 messages: the sink counts 1999 and leaves with the last.
    let line = job(vec![], vec![app(2, None, sampler(&c, "sampler", "999", "100")), app(1, None, sink(&c, "1999"))]);
    let (code, out) = mpirun(&line);
    assert_eq!(code, Some(0), "{out}");
    for id in ["sampler_0", "sampler_1"] {
        assert!(out.contains(&format!("this one is '{id}'")), "{id}:\n{out}");
    }
    let connects = out.lines().find(|l| l.contains("pmix: channel data[0] connects to")).expect("the sink connects");
    assert_eq!(connects.matches("tcp://").count(), 2, "{connects}");
    assert!(out.contains("Received 1999 messages"), "{out}");
}

/// A topology file (`--mq-config`) works as the command line does: no addresses to connect to in
/// it, the sampler binds `tcp://*:0`, and the sink finds the address through PMIx.
#[test]
fn i19_pmix_devices_configured_by_a_topology_file_find_each_other() {
    let s = Session::new();
    let dir = tempfile::tempdir().expect("a scratch directory");
    let file = dir.path().join("topology.json");
    let topology = r#"{ "fairMQOptions": { "devices": [
        { "id": "sampler1", "channels": [ { "name": "data", "type": "push", "method": "bind",
            "sockets": [ { "address": "tcp://*:0" } ] } ] },
        { "id": "sink1", "channels": [ { "name": "data", "type": "pull", "method": "connect" } ] }
    ] } }"#;
    std::fs::write(&file, topology).expect("write the topology");
    let c = device_args(&s, "zeromq", "static");
    let config = file.display().to_string();
    let with_file = |exe: &str, id: &str, iterations: &str| {
        let mut a = vec![exe.to_owned()];
        a.extend(c.iter().cloned());
        a.extend(strings(&["--id", id, "--max-iterations", iterations, "--mq-config", &config]));
        a
    };
    let mut sampler = with_file(SAMPLER, "sampler1", "500");
    sampler.extend(strings(&["--msg-size", "256"]));
    let line = job(vec![], vec![app(1, None, sampler), app(1, None, with_file(SINK, "sink1", "500"))]);
    let (code, out) = mpirun(&line);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("pmix: channel data[0] connects to tcp://"), "{out}");
    assert!(out.contains("Received 500 messages"), "{out}");
}

/// The pid of the process named `name` whose command line names session `s` (read from /proc, so
/// neither mpirun's command line nor another test's devices match).
fn pid_of(name: &str, s: &Session) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let names_session = String::from_utf8_lossy(&cmdline).split('\0').any(|a| a == s.name);
        (comm.trim() == name && names_session).then_some(pid)
    })
}

/// A device killed mid-run: the launcher tells the rest (SIGTERM), which stop in order, to EXITING,
/// and leave no shared memory behind; mpirun reports the dead one and fails.
#[test]
fn i19_pmix_a_device_killed_mid_run_the_rest_are_told_and_end_cleanly() {
    use common::process::{start_as, wait_until};
    let s = Session::new();
    let c = device_args(&s, "shmem", "static");
    // Sends until told to stop (--max-iterations 0), 2000 messages a second.
    let mut sampler = sampler(&c, "sampler1", "0", "100");
    sampler.extend(strings(&["--msg-rate", "2000"]));
    let line = job(vec![], vec![app(1, None, sampler), app(1, None, sink(&c, "0"))]);
    let mut args = vec!["--allow-run-as-root", "--oversubscribe", "--timeout", "50"];
    args.extend(line.iter().map(String::as_str));
    let mut job = start_as(None, "mpirun", &args);
    job.expect_count("READY ---> RUNNING", 2);
    let mut sink = None;
    wait_until("the sink's process", || {
        sink = pid_of("fairmq-sink", &s);
        sink.is_some()
    });
    // Messages flow before the kill: a rate line of the sink counts some (the sampler's lines
    // read "in: 0 (").
    wait_until("messages at the sink", || {
        job.drain();
        job.seen.iter().any(|l| l.contains("data[0]: in: ") && !l.contains("data[0]: in: 0 ("))
    });
    let sink = nix::unistd::Pid::from_raw(sink.expect("found above"));
    nix::sys::signal::kill(sink, nix::sys::signal::Signal::SIGKILL).expect("kill the sink");
    let status = job.wait();
    let out = job.seen.join("\n");
    assert!(!status.success(), "mpirun reports the failed job: {status:?}\n{out}");
    assert!(out.contains("exited on signal 9"), "{out}");
    assert!(out.contains("Received device shutdown request (signal)"), "the sampler was told:\n{out}");
    assert!(out.contains("IDLE ---> EXITING"), "the sampler stopped in order:\n{out}");
    assert_eq!(pid_of("fairmq-bsampler", &s), None, "no device of the job is left");
    assert_eq!(s.objects(), Vec::<String>::new(), "shared memory left behind:\n{out}");
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

    /// `n` hosts, or `None` (the reason printed) where namespaces cannot be made.
    fn or_skip(n: usize) -> Option<Hosts> {
        Hosts::new(n).map_err(|why| println!("skipped: network namespaces cannot be made here ({why})")).ok()
    }

    /// mpirun's options to start processes on these hosts: the launcher agent (written into
    /// `dir`), the hosts' network, and daemons that talk to mpirun directly (ORTE's routing tree
    /// failed now and then across namespaces).
    fn launcher(&self, dir: &std::path::Path) -> Vec<String> {
        let agent = self.agent(dir).to_string_lossy().into_owned();
        let subnet = format!("{}.0/24", self.addresses[0].rsplit_once('.').expect("an IPv4 address").0);
        strings(&[
            "--mca",
            "routed",
            "direct",
            "--mca",
            "plm_rsh_agent",
            &agent,
            "--mca",
            "oob_tcp_if_include",
            &subnet,
        ])
    }

    /// mpirun's launcher agent: "ssh HOST COMMAND" runs COMMAND in HOST's namespace. The hosts
    /// share one /tmp and one host name: each daemon gets a session directory of its own under
    /// `dir` (daemons creating the same one at once failed with "File exists").
    fn agent(&self, dir: &std::path::Path) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let mut script = String::from("#!/bin/sh\nhost=$1; shift\ncase \"$host\" in\n");
        for (a, ns) in self.addresses.iter().zip(&self.namespaces) {
            script.push_str(&format!("  {a}) ns={ns} ;;\n"));
        }
        script.push_str(&format!(
            "  *) echo \"unknown host $host\" >&2; exit 1 ;;\nesac\ntmp=\"{}/$ns\"\nmkdir -p \"$tmp\"\n\
             exec ip netns exec \"$ns\" env OMPI_MCA_orte_tmpdir_base=\"$tmp\" /bin/sh -c \"$*\"\n",
            dir.display()
        ));
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
    let Some(hosts) = Hosts::or_skip(3) else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = Session::new();
    let c = device_args(&s, "zeromq", "static");
    let [a, b, h] = [0, 1, 2].map(|i| Some(hosts.addresses[i].as_str()));
    // A sampler on host A and one on host B (the same id), the sink on host C.
    let line = job(
        hosts.launcher(dir.path()),
        vec![
            app(1, a, sampler(&c, "sampler", "999", "1000")),
            app(1, b, sampler(&c, "sampler", "999", "1000")),
            app(1, h, sink(&c, "1999")),
        ],
    );
    let (code, out) = mpirun(&line);
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

/// The apps of a sampler -> processor -> sink job (quickstart's roles) driven by
/// `fairmq-pmix-command run stop state`, each placed on `hosts` (one each, in that order, the
/// command with the sampler) when given.
fn three_stages(exe: &str, s: &Session, transport: &str, hosts: Option<&[String]>) -> Vec<Vec<String>> {
    let c = device_args(s, transport, "none");
    let host = |i: usize| hosts.map(|h| h[i].as_str());
    let role = |role: &str, id: &str, extra: &[&str]| {
        let mut a = strings(&[exe, "--role", role, "--id", id]);
        a.extend(c.iter().cloned());
        a.extend(strings(extra));
        a
    };
    vec![
        app(
            1,
            host(0),
            role(
                "sampler",
                "sampler1",
                &[
                    "--messages",
                    "0",
                    "--msg-size",
                    "256",
                    "--channel-config",
                    "name=data1,type=push,method=bind,address=tcp://*:0",
                ],
            ),
        ),
        app(
            1,
            host(1),
            role(
                "processor",
                "processor1",
                &["--channel-config", "name=data1,type=pull,method=connect", "name=data2,type=push,method=connect"],
            ),
        ),
        app(
            1,
            host(2),
            role("sink", "sink1", &["--channel-config", "name=data2,type=pull,method=bind,address=tcp://*:0"]),
        ),
        app(1, host(0), strings(&[COMMAND, "--timeout", "60", "run", "stop", "state"])),
    ]
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
        let (code, out) = mpirun(&job(vec![], three_stages(&exe, &s, transport, None)));
        check_three_stages(code, &out);
    }
}

#[test]
fn i19_pmix_command_stops_a_topology_spread_over_three_hosts_losing_nothing() {
    let Some(hosts) = Hosts::or_skip(3) else { return };
    let exe = quickstart();
    let dir = tempfile::tempdir().unwrap();
    let s = Session::new();
    let apps = three_stages(&exe, &s, "zeromq", Some(&hosts.addresses));
    let (code, out) = mpirun(&job(hosts.launcher(dir.path()), apps));
    check_three_stages(code, &out);
    // The processor on host B connected to the sampler on host A, the sink's address is on C.
    assert!(out.contains(&format!("connects to tcp://{}:", hosts.addresses[0])), "{out}");
    assert!(out.contains(&format!("connects to tcp://{}:", hosts.addresses[2])), "{out}");
}
