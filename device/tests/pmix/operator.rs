//! The operator's command outside the job: `fairmq-pmix-command --namespace NS COMMAND...` drives
//! a job that carries `fairmq-pmix-command serve`, under mpirun and under Slurm.

use super::common::process::{wait_until, Proc};
use super::common::Session;
use super::slurm::Slurm;
use super::{apps, check_three_stages, job, quickstart, three_stages, COMMAND};
use fairmq_shm::testing::process::{run, Start};
use std::path::Path;
use std::process::Command;

/// `fairmq-pmix-command ARGS` run by an operator whose rendezvous directory is `dir`.
fn operator(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let (status, out) = run(Command::new(COMMAND).args(args).env("FAIRMQ_PMIX_DIR", dir));
    (status.code(), out)
}

/// A rendezvous directory (mode 700, as the command requires).
fn rendezvous() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("a rendezvous directory");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod 700");
    dir
}

/// The namespace of the job that serves operators in `dir`, once it does.
fn served_namespace(dir: &Path) -> String {
    let mut listed = String::new();
    wait_until("a job that serves operators", || {
        let (code, out) = operator(dir, &["--list"]);
        assert_eq!(code, Some(0), "{out}");
        listed = out.trim().to_owned();
        !listed.is_empty()
    });
    assert_eq!(listed.lines().count(), 1, "one job serves here: {listed}");
    listed
}

/// Drives the three-stage `job` (started with `dir` as its rendezvous directory) from outside:
/// startup, a state query, a refused command, the ordered stop; checks every answer and the job's
/// end (all sent messages received, 0 lost).
fn drive_from_outside(mut job: Proc, dir: &Path) {
    let ns = served_namespace(dir);
    let ask = |args: &[&str]| {
        let mut a = vec!["--namespace", ns.as_str(), "--timeout", "60"];
        a.extend(args);
        operator(dir, &a)
    };
    let (code, out) = ask(&["run"]);
    assert_eq!(code, Some(0), "run: {out}");
    let (code, out) = ask(&["wait-for-state", "RUNNING", "state"]);
    assert_eq!(code, Some(0), "{out}");
    for id in ["sampler1", "processor1", "sink1"] {
        assert!(out.contains(&format!("{id}: RUNNING")), "{id}:\n{out}");
    }
    // A bad command is an error of this command, exit code 1; the job goes on.
    let (code, out) = ask(&["change-state", "FLY"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FLY"), "the error names the bad transition: {out}");
    let (code, out) = ask(&["state"]);
    assert_eq!((code, out.matches(": RUNNING").count()), (Some(0), 3), "{out}");
    let (code, out) = ask(&["stop", "state"]);
    assert_eq!(code, Some(0), "stop: {out}");
    for id in ["sampler1", "processor1", "sink1"] {
        assert!(out.contains(&format!("{id}: EXITING")), "{id}:\n{out}");
    }
    let code = job.wait().code();
    let seen = job.seen.join("\n");
    check_three_stages(code, &format!("{seen}\n{out}"));
    // The service is gone, and its socket with it.
    let (code, out) = ask(&["state"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(&format!("no fairmq-pmix-command serves namespace '{ns}'")), "{out}");
}

#[test]
fn i19_pmix_operator_command_outside_the_job_runs_and_stops_it_under_mpirun() {
    let exe = quickstart();
    let s = Session::new();
    let dir = rendezvous();
    let lines = three_stages(&exe, &s, "shmem", &["--timeout", "60", "serve"]);
    drive_from_outside(served_job(lines, dir.path()), dir.path());
}

/// The job of `lines` under mpirun, its rendezvous directory `dir` (the serving command's).
fn served_job(lines: Vec<Vec<String>>, dir: &Path) -> Proc {
    let mut args = super::strings(&["--allow-run-as-root", "--oversubscribe", "--timeout", "90"]);
    args.extend(super::strings(&["-x", "FAIRMQ_PMIX_DIR"]));
    let line = job(args, apps(lines, None));
    let mut cmd = Command::new("mpirun");
    cmd.args(&line).env("FAIRMQ_PMIX_DIR", dir);
    Proc::start(&mut cmd, Start::default())
}

#[test]
fn i19_slurm_operator_command_outside_the_job_runs_and_stops_it() {
    let slurm = Slurm::start();
    let exe = quickstart();
    let s = Session::new();
    let dir = rendezvous();
    let rendezvous = dir.path().to_str().expect("a UTF-8 path");
    let lines = three_stages(&exe, &s, "zeromq", &["--timeout", "60", "serve"]);
    let mut cmd = slurm.srun(dir.path(), &lines, &[("FAIRMQ_PMIX_DIR", rendezvous)]);
    drive_from_outside(Proc::start(&mut cmd, Start::default()), dir.path());
}

#[test]
fn i19_pmix_operator_command_for_no_job_is_a_clear_error() {
    let dir = rendezvous();
    let (code, out) = operator(dir.path(), &["--namespace", "4242", "state"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no fairmq-pmix-command serves namespace '4242' on this host"), "{out}");
    // A socket file left by a killed service: told at once, not after the timeout.
    drop(std::os::unix::net::UnixListener::bind(dir.path().join("4243.sock")).expect("a socket file"));
    let started = std::time::Instant::now();
    let (code, out) = operator(dir.path(), &["--namespace", "4243", "--timeout", "30", "state"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no fairmq-pmix-command serves namespace '4243'"), "{out}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "it waited for an answer");
    let (code, out) = operator(dir.path(), &["--list"]);
    assert_eq!((code, out.trim()), (Some(0), ""), "a dead service is not listed");
    // A namespace that is no plain file name, a relative directory: refused.
    let (code, out) = operator(dir.path(), &["--namespace", "../x", "state"]);
    assert_eq!(code, Some(1), "{out}");
    let (status, out) = run(Command::new(COMMAND).args(["--list"]).env("FAIRMQ_PMIX_DIR", "relative/dir"));
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(out.contains("must be an absolute UTF-8 path"), "{out}");
    // A rendezvous directory others may enter is refused, not used.
    use std::os::unix::fs::PermissionsExt;
    assert!(!out.contains("mode"), "{out}");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, out) = operator(dir.path(), &["--namespace", "4242", "state"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("others may use it (mode 777"), "{out}");
    let (code, out) = operator(dir.path(), &["--list"]);
    assert_eq!(code, Some(1), "{out}");
    let (code, out) = operator(dir.path(), &["--namespace", "4242", "serve"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("serve runs in the job"), "{out}");
}

/// `--prometheus-targets FILE` (issue 36): the operator writes the job's metrics endpoints as
/// Prometheus file_sd JSON, one group per device labelled with its id and rank, and each target
/// serves that device's metrics.
#[test]
fn i19_pmix_prometheus_targets_name_every_device_and_each_serves_its_metrics() {
    let exe = quickstart();
    let s = Session::new();
    let dir = rendezvous();
    let mut lines = three_stages(&exe, &s, "zeromq", &["--timeout", "60", "serve"]);
    for device in &mut lines[..3] {
        device.extend(["--metrics-address".to_owned(), "127.0.0.1:0".to_owned()]);
    }
    let mut job = served_job(lines, dir.path());
    let ns = served_namespace(dir.path());
    let out_dir = tempfile::tempdir().unwrap();
    let file = out_dir.path().join("targets.json");
    let file_arg = file.to_str().unwrap();
    let (code, out) =
        operator(dir.path(), &["--namespace", &ns, "--timeout", "60", "--prometheus-targets", file_arg, "run"]);
    assert_eq!(code, Some(0), "{out}");
    let groups: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let groups = groups.as_array().expect("a list of groups");
    let mut seen: Vec<(String, String)> = Vec::new();
    for g in groups {
        let (device, rank) = (g["labels"]["device"].as_str().unwrap(), g["labels"]["rank"].as_str().unwrap());
        let target = g["targets"][0].as_str().unwrap();
        let text = ureq::get(format!("http://{target}/metrics")).call().unwrap().body_mut().read_to_string().unwrap();
        let running = format!("fairmq_device_state{{device=\"{device}\",state=\"RUNNING\"}} 1");
        assert!(text.contains(&running), "{device} at {target}:\n{text}");
        seen.push((device.to_owned(), rank.to_owned()));
    }
    seen.sort();
    let expected = [("processor1", "1"), ("sampler1", "0"), ("sink1", "2")].map(|(d, r)| (d.to_owned(), r.to_owned()));
    assert_eq!(seen, expected, "one group per device, the command (rank 3) has none");
    let (code, out) = operator(dir.path(), &["--namespace", &ns, "--timeout", "60", "stop", "state"]);
    assert_eq!(code, Some(0), "{out}");
    let code = job.wait().code();
    check_three_stages(code, &format!("{}\n{out}", job.seen.join("\n")));
}
