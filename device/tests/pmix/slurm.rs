//! The pmix plugin under Slurm (`srun --mpi=pmix`): a one-node cluster of the test's own
//! (slurmctld and slurmd in a scratch directory, on free ports, without authentication), removed
//! on drop. Needs Slurm (Debian: slurm-wlm), which `.ci/run` installs.

use super::common::process::{wait_until, Proc};
use super::common::Session;
use super::{check_three_stages, device_args, quickstart, sampler, sink, three_stages, RUN_STOP_STATE};
use fairmq_shm::testing::process::{run, Start};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A Slurm cluster of one node (this host), its daemons killed and its files removed on drop.
pub struct Slurm {
    conf: PathBuf,
    // Dropped before the directory: the daemons end before their files go.
    _daemons: [Proc; 2],
    _dir: tempfile::TempDir,
}

/// A TCP port free at the moment.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

impl Slurm {
    pub fn start() -> Slurm {
        let found = Command::new("slurmctld").arg("-V").output().is_ok_and(|o| o.status.success());
        assert!(found, "slurmctld is not installed: these tests need Slurm (Debian: slurm-wlm; .ci/run installs it)");
        let dir = tempfile::tempdir().expect("a scratch directory");
        let d = dir.path().display();
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("the host name");
        let host = host.trim();
        // auth/none: the cluster is this test's own, on loopback, gone when it ends. The node
        // claims more CPUs than the machine has (config_overrides) so that a job's processes
        // share the two cores, as mpirun's --oversubscribe does.
        let conf = format!(
            "ClusterName=fmqtest\nSlurmctldHost={host}(127.0.0.1)\nSlurmUser=root\nSlurmdUser=root\n\
             AuthType=auth/none\nCredType=cred/none\nSlurmctldPort={}\nSlurmdPort={}\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\nSlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd.pid\nSlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
             ProctrackType=proctrack/pgid\nTaskPlugin=task/none\nSelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU\nSlurmdParameters=config_overrides\nReturnToService=2\n\
             MpiDefault=none\nJobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs=16 State=UNKNOWN\n\
             PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:16\n",
            free_port(),
            free_port()
        );
        // The PMIx plugin's directories under the cluster's own (its default, /tmp/spmix_appdir_*,
        // is named by job id, which every cluster counts from 1).
        std::fs::write(dir.path().join("mpi.conf"), format!("PMIxCliTmpDirBase={d}/pmix\n")).expect("write mpi.conf");
        for sub in ["state", "spool", "pmix"] {
            std::fs::create_dir(dir.path().join(sub)).expect("a Slurm directory");
        }
        let path = dir.path().join("slurm.conf");
        std::fs::write(&path, conf).expect("write slurm.conf");
        let daemon = |exe: &str, args: &[&str]| {
            let mut cmd = Command::new(exe);
            cmd.args(args).arg("-f").arg(&path);
            Proc::start(&mut cmd, Start { stdin: None, with_stderr: true })
        };
        let daemons = [daemon("slurmctld", &["-D", "-i"]), daemon("slurmd", &["-D"])];
        let slurm = Slurm { conf: path, _daemons: daemons, _dir: dir };
        wait_until("the Slurm node is idle", || {
            let (_, out) = run(slurm.command("sinfo").args(["-h", "-o", "%t"]));
            out.trim() == "idle"
        });
        slurm
    }

    /// A Slurm client command of this cluster.
    fn command(&self, exe: &str) -> Command {
        let mut cmd = Command::new(exe);
        cmd.env("SLURM_CONF", &self.conf);
        cmd
    }

    /// `srun --mpi=pmix` of one process per line of `lines` (rank i runs line i, `--multi-prog`),
    /// with `env` added; its exit code and output.
    pub fn srun(&self, dir: &Path, lines: &[Vec<String>], env: &[(&str, &str)]) -> Command {
        let table: String = lines.iter().enumerate().map(|(rank, l)| format!("{rank} {}\n", l.join(" "))).collect();
        let file = dir.join("multi-prog.conf");
        std::fs::write(&file, table).expect("write the multi-prog table");
        let mut cmd = self.command("srun");
        // --time: Slurm ends the job after 2 minutes whatever happens to the test.
        cmd.args(["--mpi=pmix", "--time=2", "--kill-on-bad-exit=1", "-n", &lines.len().to_string(), "--multi-prog"]);
        cmd.arg(&file).envs(env.iter().copied());
        cmd
    }
}

impl Drop for Slurm {
    /// Cancels what is left of the test's jobs (a failed test) while the daemons still run.
    fn drop(&mut self) {
        let (_, out) = run(self.command("squeue").args(["-h", "-o", "%i"]));
        if out.trim().is_empty() {
            return;
        }
        let _ = run(self.command("scancel").args(["--signal=KILL", "--full"]).args(out.split_whitespace()));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline && !run(self.command("squeue").arg("-h")).1.trim().is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// `srun` of `lines` to its end: exit code and output.
fn srun_to_end(slurm: &Slurm, lines: &[Vec<String>]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let (status, out) = run(&mut slurm.srun(dir.path(), lines, &[]));
    (status.code(), out)
}

#[test]
fn i19_slurm_srun_devices_find_each_other_without_written_addresses_on_both_transports() {
    let slurm = Slurm::start();
    for transport in super::common::TRANSPORTS {
        let s = Session::new();
        let c = device_args(&s, transport, "static");
        // 1001 messages: the sink counts 1000.
        let (code, out) = srun_to_end(&slurm, &[sampler(&c, "sampler1", "1000", "1024"), sink(&c, "1000")]);
        assert_eq!(code, Some(0), "{transport}:\n{out}");
        assert!(out.contains("pmix: channel data[0] connects to tcp://"), "{transport}:\n{out}");
        assert!(out.contains("Received 1000 messages"), "{transport}:\n{out}");
        assert_eq!(s.objects(), Vec::<String>::new(), "shared memory left behind:\n{out}");
    }
}

#[test]
fn i19_slurm_command_runs_and_stops_a_three_stage_topology_in_order_losing_nothing() {
    let slurm = Slurm::start();
    let exe = quickstart();
    let s = Session::new();
    let (code, out) = srun_to_end(&slurm, &three_stages(&exe, &s, "shmem", RUN_STOP_STATE));
    check_three_stages(code, &out);
}
