//! Device to device: FairMQ's builtin devices (`fairmq-bsampler`, `fairmq-proxy`, `fairmq-sink`)
//! run as separate processes with FairMQ's command lines, so a figure here is what a user's
//! topology reaches, device loop and state machine included. A `processor` in the middle is the
//! quickstart's kind of device instead of the builtin proxy: data handled by callback (`OnData`),
//! each message sent on from the handler.
//!
//! The harness starts itself as each device (hidden `device <name> <device options>` command):
//! the devices are exactly this crate's builds of `fairmq::devices`, with no separate binaries to
//! build. The sampler sends `--max-iterations` messages, the sink receives them and reports its
//! rate (from its first message to its last), and the cell ends when every device exited.

use super::device_ping::{Ping, Pong};
use super::spawn::{Cell, Rate, Runner};
use crate::session::{unique_session, SessionGuard};
use fairmq::devices::{BenchmarkSampler, Proxy, Sink};
use fairmq::{Context, Device, HookResult, Message, Parts, Program};
use std::io::BufRead;
use std::process::Stdio;

/// The devices the hidden `device` command runs.
pub const DEVICES: [&str; 6] = ["bsampler", "proxy", "processor", "sink", "ping", "pong"];

/// Runs device `name` with `args` (FairMQ's device options); returns its exit code.
pub fn run_device(name: &str, args: &[String]) -> i32 {
    match name {
        "bsampler" => {
            Program::new(|_| Ok(BenchmarkSampler::default())).options(BenchmarkSampler::options).run_with_args(args)
        }
        "proxy" => Program::new(|_| Ok(Proxy::default())).options(Proxy::options).run_with_args(args),
        "processor" => Program::new(|_| Ok(Processor)).options(Proxy::options).run_with_args(args),
        "sink" => Program::new(|_| Ok(Sink::default())).options(Sink::options).run_with_args(args),
        "ping" => Program::new(|_| Ok(Ping::default())).options(Ping::options).run_with_args(args),
        "pong" => Program::new(|_| Ok(Pong::default())).options(Pong::options).run_with_args(args),
        other => {
            eprintln!("unknown device {other:?} (one of {})", DEVICES.join(", "));
            1
        }
    }
}

/// The quickstart's processor: messages (or multiparts, with `--multipart`) from `data-in`
/// handed to a callback, which sends each on to `data-out`.
struct Processor;

impl Device for Processor {
    fn init_task(&mut self, ctx: &Context) -> HookResult {
        if ctx.config().get::<bool>("multipart")? {
            ctx.on_data_parts("data-in");
        } else {
            ctx.on_data("data-in");
        }
        Ok(())
    }
    fn handle_data(&mut self, ctx: &Context, _: &str, m: &mut Message, _: usize) -> HookResult<bool> {
        Ok(ctx.send(m, "data-out", 0).is_ok())
    }
    fn handle_parts(&mut self, ctx: &Context, _: &str, parts: &mut Parts, _: usize) -> HookResult<bool> {
        Ok(ctx.send_parts(parts, "data-out", 0).is_ok())
    }
}

/// Whose devices run: this crate's builds of `fairmq::devices`, or C++ FairMQ's (`--cpp-fairmq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    /// fairmq-rs: the harness started as the device.
    Rust,
    /// C++ FairMQ: `fairmq-<name>` from the `--cpp-fairmq` directory.
    Cpp,
}

impl Implementation {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Rust => "fairmq-rs",
            Implementation::Cpp => "C++ FairMQ",
        }
    }
}

/// How the devices are linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// bsampler -> sink, the sampler's PUSH bound (FairMQ's examples do it this way).
    SamplerBinds,
    /// bsampler -> sink, the sink's PULL bound.
    SinkBinds,
    /// bsampler -> proxy -> sink, each sender bound.
    ThreeStage,
    /// bsampler -> processor (data by callback, as the quickstart's) -> sink, each sender bound.
    ThreeStageOnData,
}

impl Topology {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Topology::SamplerBinds => "sampler -> sink, sampler binds",
            Topology::SinkBinds => "sampler -> sink, sink binds",
            Topology::ThreeStage => "sampler -> proxy -> sink",
            Topology::ThreeStageOnData => "sampler -> processor (OnData) -> sink",
        }
    }

    /// The middle device of a chain, if any.
    pub fn middle(self) -> Option<&'static str> {
        match self {
            Topology::ThreeStage => Some("proxy"),
            Topology::ThreeStageOnData => Some("processor"),
            _ => None,
        }
    }
}

/// One device measurement.
#[derive(Debug, Clone)]
pub struct Chain {
    /// Whose devices.
    pub implementation: Implementation,
    /// FairMQ's transport name: `shmem` or `zeromq`.
    pub transport: &'static str,
    /// Which devices, wired how.
    pub topology: Topology,
    /// Bytes per part.
    pub size: usize,
    /// Parts per message (1: single messages).
    pub parts: usize,
    /// Messages the sampler sends.
    pub iterations: u64,
    /// Whether every device serves metrics (`--metrics-address`), scraped every 100 ms while
    /// the cell runs (see `scraper`).
    pub scraped: bool,
    /// A directory: every device runs under callgrind, its counts written there as
    /// `<id>.callgrind` (see `sections::instructions`).
    pub profile: Option<std::path::PathBuf>,
}

impl Runner {
    /// Runs the devices of `c` to their end; the sink's rate.
    pub fn devices(&mut self, c: &Chain) -> Result<Rate, String> {
        self.device_cell("fmqbdev", |runner, cell, session| runner.run_chain(cell, c, session))
    }

    /// Runs `measure` (given the cell and its session) in a cell of its own: its session is
    /// removed once every device of the cell exited, and every device is killed when `measure`
    /// fails.
    pub(super) fn device_cell<T>(
        &mut self,
        tag: &str,
        measure: impl FnOnce(&mut Runner, &Cell, &str) -> Result<T, String>,
    ) -> Result<T, String> {
        let session = unique_session(tag);
        // Declared first, dropped last: after every device of the cell has exited.
        let _session = SessionGuard::new(&session);
        let _cpp_session = CppSessionGuard(&session);
        let cell = Cell::new(self.timeout());
        let result = measure(self, &cell, &session);
        if result.is_err() {
            cell.kill_all();
        }
        let waited = cell.finish();
        let value = result?;
        waited?;
        Ok(value)
    }

    /// The options every device of a cell takes: its id, FairMQ's `transport`, the cell's
    /// `session`, static control and the harness's segment size.
    pub(super) fn device_args(&self, id: &str, transport: &str, session: &str) -> Vec<String> {
        let mut a: Vec<String> = ["--id", id, "--transport", transport, "--session", session, "--control", "static"]
            .into_iter()
            .map(String::from)
            .collect();
        a.extend(["--shm-segment-size".into(), self.segment_size().to_string()]);
        a
    }

    fn run_chain(&mut self, cell: &Cell, c: &Chain, session: &str) -> Result<Rate, String> {
        let (first, second) = (self.address("dev1"), self.address("dev2"));
        let multipart = c.parts > 1;
        let endpoints: Vec<String> = if c.scraped {
            (0..3).map(|_| super::scraper::free_address()).collect::<Result<_, _>>()?
        } else {
            Vec::new()
        };
        let endpoint_of = |id: &str| match id {
            "sink1" => endpoints.first(),
            "sampler1" => endpoints.get(1),
            _ => endpoints.get(2),
        };
        let device = |name: &str, id: &str, extra: Vec<String>| -> Vec<String> {
            let mut a = self.device_args(id, c.transport, session);
            a.extend(["--color".into(), "false".into()]);
            if let Some(address) = endpoint_of(id) {
                a.extend(["--metrics-address".into(), address.clone()]);
            }
            // As the harness's own cells: a sender waits for memory (woken by frees) instead of
            // failing when the messages in flight fill the segment (FairMQ's default throws).
            a.extend(["--shm-throw-bad-alloc".into(), "false".into()]);
            if name != "proxy" && name != "processor" {
                // The middle device relays until told to stop.
                a.extend(["--max-iterations".into(), c.iterations.to_string()]);
            }
            a.extend(["--multipart".into(), multipart.to_string()]);
            a.extend(extra);
            a
        };
        // A sender that ends lingers until its queue is delivered (FairMQ's 500 ms would drop the
        // tail of a run behind a slower next stage, and the sink would wait for it forever); 30 s,
        // not forever, so a device whose peer failed still ends within the cell's time.
        let channel = |name: &str, kind: &str, method: &str, address: &str| {
            let spec = format!("name={name},type={kind},method={method},address={address},linger=30000");
            vec!["--channel-config".to_owned(), spec]
        };
        let (sink_bind, sampler_bind) = match c.topology {
            Topology::SinkBinds => ("bind", "connect"),
            _ => ("connect", "bind"),
        };
        let sink_address = if c.topology.middle().is_some() { &second } else { &first };
        let _scraper = c.scraped.then(|| super::scraper::Scraper::start(endpoints.clone()));
        let sink = device("sink", "sink1", channel("data", "pull", sink_bind, sink_address));
        let spawn = |name: &str, args: &[String], stdout: Stdio, id: &str| {
            self.spawn_as(c.implementation, name, args, stdout, c.profile.as_deref(), id)
        };
        let mut sink_out = cell.add(spawn("sink", &sink, Stdio::piped(), "sink1")?);
        if let Some(middle) = c.topology.middle() {
            let mut links = channel("data-in", "pull", "connect", &first);
            links.extend(channel("data-out", "push", "bind", &second));
            let id = format!("{middle}1");
            cell.add_quiet(spawn(middle, &device(middle, &id, links), Stdio::null(), &id)?);
        }
        let mut sampler = device("bsampler", "sampler1", channel("data", "push", sampler_bind, &first));
        sampler.extend(["--msg-size".into(), c.size.to_string(), "--num-parts".into(), c.parts.to_string()]);
        cell.add_quiet(spawn("bsampler", &sampler, Stdio::null(), "sampler1")?);
        let report = read_sink_report(&mut sink_out)?;
        // The sink has all it will get: the middle device runs until told to stop.
        cell.terminate_quiet();
        read_to_end(&mut sink_out);
        let (messages, rate) = (report.messages, report.rate);
        if messages != c.iterations {
            return Err(format!("the sink received {messages} of {} messages", c.iterations));
        }
        Ok(Rate { messages: rate, bytes: rate * (c.size * c.parts) as f64 })
    }

    /// Starts device `name` of `implementation`: the harness itself (hidden `device` command) or
    /// C++ FairMQ's `fairmq-<name>`; under callgrind (cache simulation on) when `profile` is a
    /// directory, its counts going to `<profile>/<id>.callgrind`.
    pub(super) fn spawn_as(
        &self,
        implementation: Implementation,
        name: &str,
        args: &[String],
        stdout: Stdio,
        profile: Option<&std::path::Path>,
        id: &str,
    ) -> Result<std::process::Child, String> {
        let (program, command): (std::path::PathBuf, Vec<&str>) = match implementation {
            Implementation::Rust => (self.exe().to_path_buf(), vec!["device", name]),
            Implementation::Cpp => {
                let dir = self.cpp_fairmq().ok_or("C++ FairMQ's devices need --cpp-fairmq <DIR>")?;
                if !CPP_DEVICES.contains(&name) {
                    return Err(format!("C++ FairMQ has no {name} device"));
                }
                (dir.join(format!("fairmq-{name}")), Vec::new())
            }
        };
        let mut cmd = match profile {
            None => super::spawn::child_command(&program),
            Some(dir) => {
                let mut c = super::spawn::child_command("valgrind");
                // Caches given, not taken from this machine: counts compare across machines.
                c.args(["--tool=callgrind", "--cache-sim=yes", "--quiet", "--I1=32768,8,64", "--D1=32768,8,64"])
                    .arg("--LL=33554432,16,64")
                    .arg(format!("--callgrind-out-file={}", dir.join(format!("{id}.callgrind")).display()))
                    .arg(&program);
                c
            }
        };
        cmd.args(command)
            .args(args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("could not start device {name}: {e}"))
    }
}

/// Removes what C++ FairMQ's shmem devices of a session left in /dev/shm (`fmq_<shmId>_*`, where
/// fairmq-rs's objects are `fmqrs_<shmId>_*`): a device killed at a cell's timeout removes nothing.
struct CppSessionGuard<'a>(&'a str);

impl Drop for CppSessionGuard<'_> {
    fn drop(&mut self) {
        let prefix = format!("fmq_{}_", fairmq_shm::shm_id(self.0));
        let Ok(entries) = std::fs::read_dir("/dev/shm") else { return };
        for entry in entries.flatten() {
            if entry.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// The devices C++ FairMQ builds under these names (`fairmq-<name>`), and the round-trip devices
/// `benches/cpp/build-pingpong.sh` builds beside them.
const CPP_DEVICES: [&str; 5] = ["bsampler", "ping", "pong", "proxy", "sink"];

/// What a sink said at the end of its run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct SinkReport {
    /// Messages it counted.
    pub(super) messages: u64,
    /// Messages per second: its own figure (fairmq-rs), or the count over the time it gave
    /// (C++ FairMQ's sink reports no rate).
    pub(super) rate: f64,
}

/// Reads a sink's log up to its report: `Received <n> messages in <t>ms.`, then fairmq-rs's
/// `... <r> msg/s ...` line or C++ FairMQ's `Leaving RUNNING state.`
pub(super) fn read_sink_report(out: &mut impl BufRead) -> Result<SinkReport, String> {
    let mut counted: Option<(f64, f64)> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).map_err(|e| format!("reading the sink: {e}"))? == 0 {
            return Err("the sink ended without reporting its rate".into());
        }
        if counted.is_none() {
            if let (Some(n), Some(ms)) = (number_before(&line, " messages in "), number_before(&line, "ms.")) {
                counted = Some((n, ms));
                continue;
            }
        }
        let Some((n, ms)) = counted else { continue };
        if let Some(rate) = number_before(&line, " msg/s") {
            return Ok(SinkReport { messages: n as u64, rate });
        }
        if line.contains("Leaving RUNNING state") {
            let rate = if ms > 0.0 { n / (ms / 1000.0) } else { 0.0 };
            return Ok(SinkReport { messages: n as u64, rate });
        }
    }
}

/// Reads a device's log to its end once it said what the cell wanted (a device's log needs a
/// reader until it exits).
pub(super) fn read_to_end(out: &mut impl BufRead) {
    let mut line = String::new();
    while out.read_line(&mut line).is_ok_and(|n| n > 0) {
        line.clear();
    }
}

/// The number just before `marker` in a log line (`Received 5 messages in 3ms.`, `... 1234 msg/s`).
pub(super) fn number_before(line: &str, marker: &str) -> Option<f64> {
    let head = &line[..line.find(marker)?];
    head.rsplit(|c: char| c.is_whitespace() || c == ':').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{number_before, read_sink_report, SinkReport};

    #[test]
    fn the_sinks_report_is_read() {
        let count = "[12:00:00][INFO] Received 1000 messages in 12ms.";
        let rate = "[12:00:00][INFO] Received 64000 bytes: 83333 msg/s, 5.333 MB/s.";
        assert_eq!(number_before(count, " messages in "), Some(1000.0));
        assert_eq!(number_before(rate, " msg/s"), Some(83333.0));
        assert_eq!(number_before(rate, " messages in "), None);
        let log = format!("[12:00:00][INFO] Starting sink\n{count}\n{rate}\n");
        assert_eq!(read_sink_report(&mut log.as_bytes()), Ok(SinkReport { messages: 1000, rate: 83333.0 }));
    }

    #[test]
    fn a_cpp_sinks_report_gives_its_rate_from_count_and_time() {
        let log = "[12:00:00][INFO] Received 1000 messages in 12.5ms.\n[12:00:00][INFO] Leaving RUNNING state.\n";
        assert_eq!(read_sink_report(&mut log.as_bytes()), Ok(SinkReport { messages: 1000, rate: 80000.0 }));
        assert!(read_sink_report(&mut "[12:00:00][INFO] Received 3 messages in 1ms.\n".as_bytes()).is_err());
    }
}
