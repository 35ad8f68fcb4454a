//! Many devices at once: the multi-peer topologies FairMQ users run, built from the builtin
//! devices with FairMQ's command lines (fairmq-rs's or C++ FairMQ's, see [`Implementation`]).
//!
//! - 1 -> N: one sampler's bound PUSH, N sinks connected (a sampler feeding N processors);
//! - N -> 1: N samplers connected to one sink's bound PULL (fan-in);
//! - N x M: N samplers, each connected to all M sinks' bound PULLs (timeframe building);
//! - PUB -> N: one sampler's bound PUB, N subscribing sinks;
//! - proxy: sampler -> proxy -> sink, each sender bound;
//! - 1 -> 1: one sampler, one sink, as 1 -> N: the reference the others compare with.
//!
//! Every sink takes the same number of messages (`--max-iterations`) and ends. With one sink
//! (1 -> 1, N -> 1, proxy) each sampler sends its share and ends. With several, the samplers send
//! until the harness stops them, once every sink has its count: so no sink waits for a message a
//! sender put in another sink's queue, and a publisher's dropped messages need no counting. What
//! the table counts is what the sinks received.

use super::devices::{number_before, read_sink_report, read_to_end, Implementation};
use super::spawn::{Cell, Runner};
use std::io::BufRead;
use std::process::Stdio;

/// How the devices are linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One sampler's bound PUSH, this many sinks connected.
    FanOut(usize),
    /// This many samplers connected to one sink's bound PULL.
    FanIn(usize),
    /// (samplers, sinks): every sampler connected to every sink's bound PULL.
    Mesh(usize, usize),
    /// One sampler's bound PUB, this many subscribing sinks.
    Publish(usize),
    /// sampler -> proxy -> sink, each sender bound.
    Proxy,
}

impl Shape {
    /// Its name in tables.
    pub fn name(self) -> String {
        match self {
            Shape::FanOut(n) => format!("1 -> {n} (PUSH to {n} PULL)"),
            Shape::FanIn(n) => format!("{n} -> 1 ({n} PUSH to PULL)"),
            Shape::Mesh(n, m) => format!("{n} x {m} (each PUSH to all PULL)"),
            Shape::Publish(n) => format!("PUB -> {n} SUB"),
            Shape::Proxy => "sampler -> proxy -> sink".to_owned(),
        }
    }

    /// (samplers, sinks).
    fn ends(self) -> (usize, usize) {
        match self {
            Shape::FanOut(n) | Shape::Publish(n) => (1, n),
            Shape::FanIn(n) => (n, 1),
            Shape::Mesh(n, m) => (n, m),
            Shape::Proxy => (1, 1),
        }
    }
}

/// One topology measurement.
#[derive(Debug, Clone)]
pub struct Graph {
    /// Whose devices.
    pub implementation: Implementation,
    /// FairMQ's transport name: `shmem` or `zeromq`.
    pub transport: &'static str,
    /// How the devices are linked.
    pub shape: Shape,
    /// Bytes per message.
    pub size: usize,
    /// Messages each sink counts before it ends.
    pub per_sink: u64,
    /// A directory: every device runs under callgrind, its counts written there as
    /// `<id>.callgrind`.
    pub profile: Option<std::path::PathBuf>,
}

/// What the sinks of a topology received.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delivered {
    /// Messages counted by all sinks.
    pub messages: u64,
    /// Messages/s of all sinks together: their messages over the longest sink's time (each sink
    /// times itself from its first message to its last).
    pub rate: f64,
    /// Messages the samplers sent (their `Done <n> iterations`), if every sampler said.
    pub sent: Option<u64>,
}

/// A sampler's count of messages sent, from its last line `Done <n> iterations in <t>ms.`,
/// reading its log to the end.
fn read_sampler_count(out: &mut impl BufRead) -> Option<u64> {
    let mut sent = None;
    let mut line = String::new();
    while out.read_line(&mut line).is_ok_and(|n| n > 0) {
        if let Some(n) = line.split("Done ").nth(1).and_then(|rest| number_before(rest, " iterations")) {
            sent = Some(n as u64);
        }
        line.clear();
    }
    sent
}

/// The `--mq-config` option of a mesh's sampler `id`: one PUSH socket connected to every sink.
/// A JSON file, because FairMQ's `--channel-config` makes a socket of every `address=` (and C++
/// FairMQ separates a socket's endpoints with commas, which `--channel-config` cannot hold).
fn mesh_config(id: &str, sinks: &[String]) -> Result<Vec<String>, String> {
    let first = sinks.first().ok_or("a mesh without sinks")?;
    let path = format!("{}-{id}.json", first.trim_start_matches("ipc://"));
    let json = format!(
        r#"{{"fairMQOptions": {{"devices": [{{"id": "{id}", "channels": [{{"name": "data", "sockets": [{{"type": "push", "method": "connect", "address": "{}"}}]}}]}}]}}}}"#,
        sinks.join(",")
    );
    std::fs::write(&path, json).map_err(|e| format!("{path}: {e}"))?;
    Ok(vec!["--mq-config".to_owned(), path])
}

/// Whether `implementation` can run `shape` on `transport`: C++ FairMQ's shmem transport refuses
/// PUB and SUB sockets ("PUB/SUB socket type is not supported for shared memory transport").
pub fn supported(implementation: Implementation, transport: &str, shape: Shape) -> bool {
    !(implementation == Implementation::Cpp && transport == "shmem" && matches!(shape, Shape::Publish(_)))
}

impl Runner {
    /// Runs the devices of `g` until every sink has ended; what the sinks received.
    pub fn graph(&mut self, g: &Graph) -> Result<Delivered, String> {
        self.device_cell("fmqbtopo", |runner, cell, session| runner.run_graph(cell, g, session))
    }

    fn run_graph(&mut self, cell: &Cell, g: &Graph, session: &str) -> Result<Delivered, String> {
        let (samplers, sinks) = g.shape.ends();
        let addresses: Vec<String> = (0..sinks.max(2)).map(|i| self.address(&format!("topo{i}"))).collect();
        let device = |id: &str, channels: Vec<String>| -> Vec<String> {
            let mut a = self.device_args(id, g.transport, session);
            a.extend(["--color", "false", "--shm-throw-bad-alloc", "false"].map(String::from));
            a.extend(channels);
            a
        };
        let channel = |name: &str, kind: &str, method: &str, address: &str| {
            vec!["--channel-config".to_owned(), format!("name={name},type={kind},method={method},address={address}")]
        };
        let spawn = |name: &str, args: &[String], stdout: Stdio, id: &str| {
            self.spawn_as(g.implementation, name, args, stdout, g.profile.as_deref(), id)
        };
        // With one sink, every message the samplers send is the sink's: each of fairmq-rs's
        // samplers sends its share and ends, and the sink takes them all (`exact`). With several,
        // no sampler knows which sink takes what: the samplers send until stopped. So do C++
        // FairMQ's always: one that ends may lose the tail of its stream (libzmq drops what a
        // closing sender still queues, see `workload::wait_for_stdin_close`), and its sink would
        // wait for it until the cell's timeout.
        let exact = (sinks == 1 && g.implementation == Implementation::Rust)
            .then(|| g.per_sink.div_ceil(samplers as u64).max(1));
        let sink_count = match exact {
            Some(each) => each * samplers as u64,
            None => g.per_sink.max(2),
        };
        // Sinks first, as a topology started by hand.
        let mut outputs = Vec::new();
        for i in 0..sinks {
            let link = match g.shape {
                Shape::FanOut(_) => channel("data", "pull", "connect", &addresses[0]),
                Shape::FanIn(_) | Shape::Mesh(..) => channel("data", "pull", "bind", &addresses[i]),
                Shape::Publish(_) => channel("data", "sub", "connect", &addresses[0]),
                Shape::Proxy => channel("data", "pull", "connect", &addresses[1]),
            };
            let id = format!("sink{}", i + 1);
            let mut args = device(&id, link);
            // A sink receives one message more than it counts (FairMQ's count).
            args.extend(["--max-iterations".into(), (sink_count - 1).to_string()]);
            outputs.push(cell.add(spawn("sink", &args, Stdio::piped(), &id)?));
        }
        if g.shape == Shape::Proxy {
            let mut links = channel("data-in", "pull", "connect", &addresses[0]);
            links.extend(channel("data-out", "push", "bind", &addresses[1]));
            // Single messages (C++ FairMQ's proxy relays multiparts by default, and its shmem
            // transport fails on the first single message relayed so: "Could not get segment").
            links.extend(["--multipart".to_owned(), "false".to_owned()]);
            cell.add_quiet(spawn("proxy", &device("proxy1", links), Stdio::null(), "proxy1")?);
        }
        let mut sampler_outputs = Vec::new();
        // A sampler that ends lingers until what it sent is delivered (FairMQ's 500 ms could drop
        // the tail behind a slower sink); one stopped by the harness does not wait for sinks gone.
        let linger = if exact.is_some() { ",linger=30000" } else { "" };
        for j in 0..samplers {
            let id = format!("sampler{}", j + 1);
            let link = match g.shape {
                Shape::FanOut(_) | Shape::Proxy => {
                    channel("data", "push", "bind", &format!("{}{linger}", addresses[0]))
                }
                Shape::FanIn(_) => channel("data", "push", "connect", &format!("{}{linger}", addresses[0])),
                Shape::Mesh(..) => mesh_config(&id, &addresses[..sinks])?,
                Shape::Publish(_) => channel("data", "pub", "bind", &addresses[0]),
            };
            let mut args = device(&id, link);
            // A sampler sends one message more than it counts (FairMQ's count); 0: until stopped.
            let count = exact.map_or(0, |each| each - 1);
            args.extend(["--max-iterations".to_owned(), count.to_string(), "--msg-size".to_owned()]);
            args.push(g.size.to_string());
            let mut sampler = spawn("bsampler", &args, Stdio::piped(), &id)?;
            let out = sampler.stdout.take().map(std::io::BufReader::new);
            cell.add_quiet(sampler);
            sampler_outputs.extend(out);
        }
        let mut delivered = Delivered { messages: 0, rate: 0.0, sent: Some(0) };
        // The sinks start together, but need not end together (a PUSH skips a full peer): the
        // rate is the messages of all over the longest sink's time, not the sum of their rates.
        let mut longest = 0.0f64;
        for out in &mut outputs {
            let report = read_sink_report(out)?;
            delivered.messages += report.messages;
            if report.rate > 0.0 {
                longest = longest.max(report.messages as f64 / report.rate);
            }
        }
        delivered.rate = if longest > 0.0 { delivered.messages as f64 / longest } else { 0.0 };
        // Stopped as soon as every sink has its count: a sampler left sending into full queues
        // (or to nobody) adds instructions no message needed.
        cell.terminate_quiet();
        outputs.iter_mut().for_each(read_to_end);
        for mut out in sampler_outputs {
            let sent = read_sampler_count(&mut out);
            delivered.sent = delivered.sent.zip(sent).map(|(a, b)| a + b);
        }
        Ok(delivered)
    }
}

#[cfg(test)]
mod tests {
    use super::read_sampler_count;

    #[test]
    fn a_samplers_count_is_read_from_either_implementations_log() {
        let rs = "[12:00:00][INFO] Starting\n[12:00:01][INFO] Done 120000 iterations in 812ms.\n[12:00:01][STATE] x\n";
        assert_eq!(read_sampler_count(&mut rs.as_bytes()), Some(120_000));
        let cpp = "[12:00:01][INFO] Done 99 iterations in 812.25ms.\n";
        assert_eq!(read_sampler_count(&mut cpp.as_bytes()), Some(99));
        assert_eq!(read_sampler_count(&mut "[12:00:01][INFO] Received device shutdown request\n".as_bytes()), None);
    }
}
