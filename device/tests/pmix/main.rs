//! The pmix plugin under OpenMPI's launcher (issue 19): devices find each other's addresses, a
//! shared id is numbered per process, exact counts. Built only with `--features pmix`; needs
//! `mpirun` (Debian: openmpi-bin) and libpmix (libpmix-dev), which `.ci/run` installs.
#![cfg(feature = "pmix")]

#[path = "../common/mod.rs"]
mod common;
mod hosts;
mod operator;
mod slurm;
use common::process::run_to_end;
use common::Session;
use hosts::Hosts;

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

/// The command lines of a sampler -> processor -> sink job (quickstart's roles, `--control none`)
/// and of `fairmq-pmix-command` with `command` (its arguments), in that order.
fn three_stages(exe: &str, s: &Session, transport: &str, command: &[&str]) -> Vec<Vec<String>> {
    let c = device_args(s, transport, "none");
    let role = |role: &str, id: &str, extra: &[&str]| {
        let mut a = strings(&[exe, "--role", role, "--id", id]);
        a.extend(c.iter().cloned());
        a.extend(strings(extra));
        a
    };
    let sampler_channel = "name=data1,type=push,method=bind,address=tcp://*:0";
    let processor_channels = ["name=data1,type=pull,method=connect", "name=data2,type=push,method=connect"];
    vec![
        role("sampler", "sampler1", &["--messages", "0", "--msg-size", "256", "--channel-config", sampler_channel]),
        role("processor", "processor1", &["--channel-config", processor_channels[0], processor_channels[1]]),
        role("sink", "sink1", &["--channel-config", "name=data2,type=pull,method=bind,address=tcp://*:0"]),
        [COMMAND].iter().chain(command).map(|a| a.to_string()).collect(),
    ]
}

/// mpirun's apps of one process each for `lines`: on `hosts` when given (the i-th device on the
/// i-th host, the last line, the command, with the first).
fn apps(lines: Vec<Vec<String>>, hosts: Option<&[String]>) -> Vec<Vec<String>> {
    let last = lines.len() - 1;
    let host = |i: usize| hosts.map(|h| h[if i == last { 0 } else { i }].as_str());
    lines.into_iter().enumerate().map(|(i, l)| app(1, host(i), l)).collect()
}

/// What `fairmq-pmix-command` runs in the three-stage jobs.
const RUN_STOP_STATE: &[&str] = &["--timeout", "60", "run", "stop", "state"];

/// Checks a three-stage job's output: every message the sampler sent reached the sink, in order,
/// and every device ended.
fn check_three_stages(code: Option<i32>, out: &str) {
    check_ordered_stop(code, out, &["sampler1", "processor1", "sink1"]);
}

/// Checks the output of a job stopped in order by the command: every message the sampler sent
/// reached the sink, and every device of `ids` ended.
fn check_ordered_stop(code: Option<i32>, out: &str, ids: &[&str]) {
    assert_eq!(code, Some(0), "{out}");
    let sent: u64 = out
        .lines()
        .find_map(|l| l.split("sampler: sent ").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("the sampler reports what it sent:\n{out}"));
    assert!(sent > 0, "{out}");
    assert!(out.contains(&format!("sink: received all {sent} messages")), "sent {sent}:\n{out}");
    assert!(out.contains("; 0 lost"), "{out}");
    assert!(out.contains("pmix command: stopping the sources"), "{out}");
    for id in ids {
        assert!(out.contains(&format!("{id}: EXITING")), "{id}:\n{out}");
    }
}

#[test]
fn i19_pmix_command_runs_and_stops_a_three_stage_topology_in_order_losing_nothing() {
    let exe = quickstart();
    for transport in common::TRANSPORTS {
        let s = Session::new();
        let (code, out) = mpirun(&job(vec![], apps(three_stages(&exe, &s, transport, RUN_STOP_STATE), None)));
        check_three_stages(code, &out);
    }
}

#[test]
fn i19_pmix_command_stops_a_topology_spread_over_three_hosts_losing_nothing() {
    let Some(hosts) = Hosts::or_skip(3) else { return };
    let exe = quickstart();
    let dir = tempfile::tempdir().unwrap();
    let s = Session::new();
    let apps = apps(three_stages(&exe, &s, "zeromq", RUN_STOP_STATE), Some(&hosts.addresses));
    let (code, out) = mpirun(&job(hosts.launcher(dir.path()), apps));
    check_three_stages(code, &out);
    // The processor on host B connected to the sampler on host A, the sink's address is on C.
    assert!(out.contains(&format!("connects to tcp://{}:", hosts.addresses[0])), "{out}");
    assert!(out.contains(&format!("connects to tcp://{}:", hosts.addresses[2])), "{out}");
}

/// sampler -> 2 processors -> sink (`-n 2` processors sharing an id): the sampler's `data1` has a
/// sub-channel per processor (the pmix plugin deals the processors' bound addresses out over them)
/// and an end message goes out on each; the sink waits for both processors' end messages.
fn one_two_one(exe: &str, s: &Session, transport: &str) -> Vec<Vec<String>> {
    let c = device_args(s, transport, "none");
    let role = |role: &str, id: &str, extra: &[&str]| {
        let mut a = strings(&[exe, "--role", role, "--id", id]);
        a.extend(c.iter().cloned());
        a.extend(strings(extra));
        a
    };
    let processor = ["name=data1,type=pull,method=bind,address=tcp://*:0", "name=data2,type=push,method=connect"];
    vec![
        app(
            1,
            None,
            role(
                "sampler",
                "sampler1",
                &[
                    "--messages",
                    "0",
                    "--msg-size",
                    "256",
                    "--channel-config",
                    "name=data1,type=push,method=connect,numSockets=2",
                ],
            ),
        ),
        app(2, None, role("processor", "processor", &["--channel-config", processor[0], processor[1]])),
        app(
            1,
            None,
            role(
                "sink",
                "sink1",
                &["--num-senders", "2", "--channel-config", "name=data2,type=pull,method=bind,address=tcp://*:0"],
            ),
        ),
        app(1, None, [COMMAND].iter().chain(RUN_STOP_STATE).map(|a| a.to_string())),
    ]
}

#[test]
fn i19_pmix_sampler_two_processors_sink_stopped_in_order_losing_nothing_on_both_transports() {
    let exe = quickstart();
    for transport in common::TRANSPORTS {
        let s = Session::new();
        let (code, out) = mpirun(&job(vec![], one_two_one(&exe, &s, transport)));
        check_ordered_stop(code, &out, &["sampler1", "processor_0", "processor_1", "sink1"]);
        // One processor on each sub-channel of the sampler.
        let target = |i: usize| {
            let line = out.lines().find(|l| l.contains(&format!("pmix: channel data1[{i}] connects to")));
            line.unwrap_or_else(|| panic!("data1[{i}] connects:\n{out}")).rsplit(' ').next().unwrap_or("").to_owned()
        };
        let (a, b) = (target(0), target(1));
        assert!(!a.contains(',') && !b.contains(',') && a != b, "{a} and {b}:\n{out}");
        assert!(out.contains("sink: received 2 end messages") || out.contains("; 0 lost"), "{out}");
    }
}
