//! Runs one measurement ("cell") as separate processes: the harness starts itself again with the
//! hidden `role` subcommand, once as the server (receiver or pong), then as the middle of a chain
//! (a forwarder) if there is one, and then as the clients (senders or ping).
//!
//! Protocol on the children's stdout: the server (and a forwarder) prints `ready` once bound; the
//! reporting process (receiver, or ping) then prints `result <numbers>`. Senders (and forwarders)
//! keep their sockets open until their stdin closes, which the harness does only after the receiver reported (see
//! [`wait_for_stdin_close`](super::workload::wait_for_stdin_close)).
//!
//! Clean-up: a watchdog kills the cell's processes (only those, by their handles) when it outlasts
//! the timeout; the cell's shared-memory session is removed when the cell ends, however it ended,
//! and so are iceoryx2's files of the run (all named with the run's prefix or under its scratch
//! directory).

use super::options::{Mode, Options, Role, RoleArgs, System};
use super::workload::Latency;
use crate::session::{unique_session, SessionGuard};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A measured one-way rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Messages per second (a multipart counts as one message, as in FairMQ's counters).
    pub messages: f64,
    /// Payload bytes per second.
    pub bytes: f64,
}

/// Starts cells; owns the run's scratch directory and iceoryx2 name prefix.
#[derive(Debug)]
pub struct Runner {
    exe: PathBuf,
    scratch: tempfile::TempDir,
    prefix: String,
    seconds: f64,
    warmup: f64,
    segment_size: usize,
    busy_poll: bool,
    timeout: Duration,
    cells: u64,
    cpp_fairmq: Option<PathBuf>,
}

impl Runner {
    /// A runner for the given options.
    pub fn new(o: &Options) -> std::io::Result<Runner> {
        Ok(Runner {
            exe: std::env::current_exe()?,
            scratch: tempfile::Builder::new().prefix("fairmq-bench-").tempdir()?,
            prefix: format!("fmqb{}_", std::process::id()),
            seconds: o.seconds,
            warmup: o.warmup,
            segment_size: o.segment_size,
            busy_poll: o.busy_poll,
            timeout: Duration::from_secs_f64(o.timeout.unwrap_or(30.0 + 10.0 * (o.seconds + o.warmup))),
            cells: 0,
            cpp_fairmq: o.cpp_fairmq.clone(),
        })
    }

    /// The harness's own executable (children run it with a hidden command).
    pub(super) fn exe(&self) -> &Path {
        &self.exe
    }

    /// The directory of C++ FairMQ's devices (`--cpp-fairmq`), if given.
    pub(super) fn cpp_fairmq(&self) -> Option<&Path> {
        self.cpp_fairmq.as_deref()
    }

    /// Whether `--cpp-fairmq` names a directory holding C++ FairMQ's device `name`
    /// (`fairmq-<name>`; `ping` and `pong` come from `benches/cpp/build-pingpong.sh`).
    fn has_cpp_device(&self, name: &str) -> bool {
        self.cpp_fairmq().is_some_and(|d| d.join(format!("fairmq-{name}")).is_file())
    }

    /// Whether C++ FairMQ's round-trip devices (`ping` and `pong`) are there.
    pub(super) fn has_cpp_pingpong(&self) -> bool {
        self.has_cpp_device("ping") && self.has_cpp_device("pong")
    }

    /// How long a cell may take before its processes are killed.
    pub(super) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Segment size for fairmq-shm (`--segment-size`).
    pub(super) fn segment_size(&self) -> usize {
        self.segment_size
    }

    /// Seconds measured per run, and of warm-up before (`--seconds`, `--warmup`).
    pub(super) fn seconds(&self) -> f64 {
        self.seconds
    }

    pub(super) fn warmup(&self) -> f64 {
        self.warmup
    }

    /// Whether receivers of a round trip poll without blocking (`--busy-poll`).
    pub(super) fn busy_poll(&self) -> bool {
        self.busy_poll
    }

    /// A fresh ipc address in the run's scratch directory.
    pub(super) fn address(&mut self, tag: &str) -> String {
        self.cells += 1;
        format!("ipc://{}/{tag}-{}", self.scratch.path().display(), self.cells)
    }

    fn args(&mut self, role: Role, system: System, mode: Mode, size: usize, parts: usize, senders: usize) -> RoleArgs {
        let session = unique_session("fmqbench");
        let address = match system {
            System::Iceoryx2 => {
                self.cells += 1;
                format!("fairmq-bench/{}/{}", std::process::id(), self.cells)
            }
            _ => self.address("cell"),
        };
        RoleArgs {
            role,
            system,
            mode,
            size,
            parts,
            seconds: self.seconds,
            warmup: self.warmup,
            address,
            session,
            scratch: self.scratch.path().to_owned(),
            prefix: self.prefix.clone(),
            senders,
            segment_size: self.segment_size,
            busy_poll: self.busy_poll,
            forward_to: String::new(),
        }
    }

    /// One receiver and `senders` sender processes; the receiver's rate.
    pub fn throughput(
        &mut self,
        system: System,
        mode: Mode,
        size: usize,
        parts: usize,
        senders: usize,
    ) -> Result<Rate, String> {
        let server = self.args(Role::Receiver, system, mode, size, parts, senders);
        let client = RoleArgs { role: Role::Sender, ..server.clone() };
        let clients = vec![client; senders];
        let r = self.run(&server, &[], &clients, Reporter::Server)?;
        rate(system, size, parts, &r)
    }

    /// A sender, a forwarder and a receiver, each link connected by its sender (the harness's
    /// direction); the receiver's rate. fairmq-shm and fairmq-zmq only.
    pub fn chain(&mut self, system: System, mode: Mode, size: usize, parts: usize) -> Result<Rate, String> {
        let server = self.args(Role::Receiver, system, mode, size, parts, 1);
        let middle = RoleArgs {
            role: Role::Forwarder,
            address: self.address("chain"),
            forward_to: server.address.clone(),
            ..server.clone()
        };
        let client = RoleArgs { role: Role::Sender, address: middle.address.clone(), ..server.clone() };
        let r = self.run(&server, &[middle], &[client], Reporter::Server)?;
        rate(system, size, parts, &r)
    }

    /// A pong and a ping process; ping's round-trip figures.
    pub fn latency(&mut self, system: System, mode: Mode, size: usize) -> Result<Latency, String> {
        let server = self.args(Role::Pong, system, mode, size, 1, 1);
        let client = RoleArgs { role: Role::Ping, ..server.clone() };
        let r = self.run(&server, &[], &[client], Reporter::Client)?;
        let [median_ns, p99_ns, count] = r[..] else { return Err(format!("ping printed {r:?}")) };
        Ok(Latency { median_ns, p99_ns, count: count as u64 })
    }

    fn spawn(&self, a: &RoleArgs, stdin: Stdio) -> Result<Child, String> {
        child_command(&self.exe)
            .arg("role")
            .args(a.to_args())
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", self.exe.display()))
    }

    fn run(
        &self,
        server: &RoleArgs,
        middles: &[RoleArgs],
        clients: &[RoleArgs],
        reporter: Reporter,
    ) -> Result<Vec<f64>, String> {
        // Declared first, dropped last: after every process of the cell has exited.
        let _session = SessionGuard::new(&server.session);
        let cell = Cell::new(self.timeout);
        let result = self.run_cell(&cell, server, middles, clients, reporter);
        if result.is_err() {
            // Nothing to wait for: a receiver whose sender failed would otherwise wait until the timeout.
            cell.kill_all();
        }
        let waited = cell.finish();
        self.remove_iceoryx2_files();
        let numbers = result?;
        waited?;
        Ok(numbers)
    }

    fn run_cell(
        &self,
        cell: &Cell,
        server: &RoleArgs,
        middles: &[RoleArgs],
        clients: &[RoleArgs],
        reporter: Reporter,
    ) -> Result<Vec<f64>, String> {
        let name = format!("{} {:?}", server.system.name(), server.role);
        let mut server_out = cell.add(self.spawn(server, Stdio::null())?);
        expect_ready(&mut server_out, &name)?;
        // Each middle process is ready (bound, connected onwards) before what sends to it starts.
        for m in middles {
            let mut out = cell.add(self.spawn(m, Stdio::piped())?);
            expect_ready(&mut out, &format!("{} {:?}", m.system.name(), m.role))?;
        }
        let mut client_outs = Vec::new();
        for c in clients {
            client_outs.push(cell.add(self.spawn(c, Stdio::piped())?));
        }
        let line = match reporter {
            Reporter::Server => read_line(&mut server_out),
            Reporter::Client => read_line(&mut client_outs[0]),
        };
        let line = line.ok_or_else(|| format!("{name}: no result (a process failed or timed out)"))?;
        let numbers = line.strip_prefix("result ").ok_or_else(|| format!("{name} printed {line:?}"))?;
        numbers
            .split_whitespace()
            .map(|n| n.parse::<f64>().map_err(|e| format!("{name} printed {line:?}: {e}")))
            .collect()
    }

    /// Removes iceoryx2's shared-memory objects (named with our prefix) and its files (under our
    /// scratch directory): a normal iceoryx2 exit removes its own, a killed process leaves them.
    fn remove_iceoryx2_files(&self) {
        remove_prefixed(Path::new("/dev/shm"), &self.prefix);
        let _ = std::fs::remove_dir_all(self.scratch.path().join("iceoryx2"));
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.remove_iceoryx2_files();
    }
}

/// Which process prints the cell's result.
#[derive(Debug, Clone, Copy)]
enum Reporter {
    Server,
    Client,
}

/// The processes of one cell and their watchdog.
pub(super) struct Cell {
    children: Arc<Mutex<Vec<Child>>>,
    /// Children that run until told to stop (SIGTERM, see [`Cell::terminate_quiet`]).
    quiet: Mutex<Vec<u32>>,
    /// Dropped when the cell ends: the watchdog stands down.
    done: Option<mpsc::Sender<()>>,
    deadline: Instant,
    watchdog: Option<std::thread::JoinHandle<()>>,
}

impl Cell {
    pub(super) fn new(timeout: Duration) -> Cell {
        let children: Arc<Mutex<Vec<Child>>> = Arc::default();
        let (done, rx) = mpsc::channel::<()>();
        let victims = children.clone();
        let watchdog = std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(timeout) {
                eprintln!("cell timed out after {timeout:?}: killing its processes");
                for c in victims.lock().expect("children lock").iter_mut() {
                    let _ = c.kill();
                }
            }
        });
        Cell {
            children,
            quiet: Mutex::default(),
            done: Some(done),
            deadline: Instant::now() + timeout,
            watchdog: Some(watchdog),
        }
    }

    pub(super) fn kill_all(&self) {
        for c in self.children.lock().expect("children lock").iter_mut() {
            let _ = c.kill();
        }
    }

    /// Takes a started child into the cell; returns its stdout.
    pub(super) fn add(&self, mut child: Child) -> BufReader<ChildStdout> {
        let out = child.stdout.take().expect("stdout is piped");
        self.children.lock().expect("children lock").push(child);
        BufReader::new(out)
    }

    /// Takes a started child whose output nobody reads into the cell.
    pub(super) fn add_quiet(&self, child: Child) {
        self.quiet.lock().expect("quiet lock").push(child.id());
        self.children.lock().expect("children lock").push(child);
    }

    /// Asks the quiet children still running to stop (SIGTERM: a FairMQ device's graceful end).
    pub(super) fn terminate_quiet(&self) {
        let mut children = self.children.lock().expect("children lock");
        for c in children.iter_mut().filter(|c| self.quiet.lock().expect("quiet lock").contains(&c.id())) {
            if let Ok(None) = c.try_wait() {
                let _ = Command::new("kill").arg("-TERM").arg(c.id().to_string()).status();
            }
        }
    }

    /// Closes the clients' stdin (they may exit now), waits for every process (the watchdog kills
    /// them at the deadline), and reports any that failed.
    pub(super) fn finish(mut self) -> Result<(), String> {
        for c in self.children.lock().expect("children lock").iter_mut() {
            drop(c.stdin.take());
        }
        let mut failures = Vec::new();
        loop {
            let mut children = self.children.lock().expect("children lock");
            let mut running = 0;
            for c in children.iter_mut() {
                match c.try_wait() {
                    Ok(Some(_)) => {}
                    Ok(None) => running += 1,
                    Err(e) => failures.push(format!("wait: {e}")),
                }
            }
            if running == 0 || !failures.is_empty() {
                for c in children.iter_mut() {
                    if let Ok(Some(status)) = c.try_wait() {
                        if !status.success() {
                            failures.push(format!("process {} ended with {status}", c.id()));
                        }
                    }
                }
                break;
            }
            drop(children);
            if Instant::now() > self.deadline + Duration::from_secs(5) {
                failures.push("processes outlived the watchdog".into());
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stand_down();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("; "))
        }
    }

    fn stand_down(&mut self) {
        drop(self.done.take());
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
    }
}

impl Drop for Cell {
    /// A cell left early (an error while starting) still kills and reaps its processes.
    fn drop(&mut self) {
        if self.done.is_some() {
            self.kill_all();
            for c in self.children.lock().expect("children lock").iter_mut() {
                let _ = c.wait();
            }
            self.stand_down();
        }
    }
}

/// The receiver's `units seconds` as a rate.
fn rate(system: System, size: usize, parts: usize, r: &[f64]) -> Result<Rate, String> {
    let [units, seconds] = r[..] else { return Err(format!("receiver printed {r:?}")) };
    // iceoryx2 counts samples: one per part.
    let per_message = if system == System::Iceoryx2 { parts as f64 } else { 1.0 };
    let messages = units / per_message;
    if messages < 1.0 || seconds <= 0.0 {
        return Err(format!("{}: no messages after the warm-up (raise --seconds)", system.name()));
    }
    let rate = messages / seconds;
    Ok(Rate { messages: rate, bytes: rate * (parts * size) as f64 })
}

fn expect_ready(out: &mut BufReader<ChildStdout>, name: &str) -> Result<(), String> {
    match read_line(out) {
        Some(l) if l == "ready" => Ok(()),
        other => Err(format!("{name} did not get ready (printed {other:?})")),
    }
}

fn read_line(r: &mut BufReader<ChildStdout>) -> Option<String> {
    let mut line = String::new();
    match r.read_line(&mut line) {
        Ok(n) if n > 0 => Some(line.trim().to_owned()),
        _ => None,
    }
}

/// Removes the files directly in `dir` whose names start with `prefix`.
fn remove_prefixed(dir: &Path, prefix: &str) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// The environment variable in which the harness names its pid to its children.
const HARNESS_PID: &str = "FAIRMQ_BENCH_HARNESS_PID";

/// A command for a child of the harness: the child ends with the harness (see
/// [`end_with_harness`]).
pub(crate) fn child_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env(HARNESS_PID, std::process::id().to_string());
    c
}

/// In a child of the harness (started by `child_command`): asks the kernel for SIGTERM when the
/// harness dies, so that a harness killed by a signal leaves no process running and holding
/// shared memory (a device stops on SIGTERM as FairMQ's do, removing its session's files).
/// Exits when the harness died before the request, which then would never fire. C++ FairMQ's
/// devices, which the harness also starts, do not make the request.
pub fn end_with_harness() {
    let Some(harness) = std::env::var(HARNESS_PID).ok().and_then(|p| p.parse::<i32>().ok()) else { return };
    if let Err(e) = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM) {
        eprintln!("could not ask to end with the harness: {e}");
        return;
    }
    if nix::unistd::getppid().as_raw() != harness {
        eprintln!("the harness (pid {harness}) is gone");
        std::process::exit(1);
    }
}
