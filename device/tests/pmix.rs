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
