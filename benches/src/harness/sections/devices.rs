//! Device to device beside the transport: for each transport and topology, the builtin devices'
//! rate next to the harness's rate for the same transport, size, parts and number of processes
//! (mode `fairmq`, as the benchmark sampler sends; the three-stage row's transport is a harness
//! chain with a forwarder in the middle), measured interleaved run by run; then the round trip of
//! two devices (see `device_ping`) beside the harness's round trip.

use super::super::devices::{Chain, Implementation, Topology};
use super::super::options::{Mode, Options, System};
use super::super::report::{self, Summary};
use super::super::spawn::{Rate, Runner};
use super::super::workload::Latency;

/// Prints one table per transport.
pub fn run(runner: &mut Runner, o: &Options, systems: &[System]) {
    let topologies = [Topology::SamplerBinds, Topology::SinkBinds, Topology::ThreeStage, Topology::ThreeStageOnData];
    let mut shapes: Vec<(usize, usize)> = o.sizes.iter().map(|&s| (s, 1)).collect();
    shapes.push((1024, 8));
    for &system in systems {
        let Some(name) = system.fairmq_transport() else { continue };
        println!(
            "\n### Device to device, {name} ({}): messages/s, {} runs of {} s per cell, median (min-max); a multipart counts as one message",
            system.name(),
            o.runs,
            o.seconds
        );
        println!();
        let cpp = runner.cpp_fairmq().is_some();
        let mut columns = vec!["topology", "size", "parts", "transport msg/s", "devices msg/s", "devices / transport"];
        if cpp {
            columns.extend(["C++ FairMQ devices msg/s", "devices / C++ FairMQ"]);
        }
        report::header(&columns);
        for topology in topologies {
            for &(size, parts) in &shapes {
                let with_cpp = cpp && cpp_runs(topology, parts);
                let m = measure(runner, o, system, name, (topology, size, parts), with_cpp);
                let median = |s: &Option<Summary>| s.as_ref().map(|s| s.median);
                let show = |s: &Option<Summary>| s.as_ref().map_or("failed".to_owned(), |s| s.show(report::rate));
                let mut row = vec![
                    topology.name().to_owned(),
                    report::size(size),
                    parts.to_string(),
                    show(&m.transport),
                    show(&m.devices),
                    report::ratio(median(&m.devices), median(&m.transport)),
                ];
                if with_cpp {
                    row.extend([show(&m.cpp), report::ratio(median(&m.devices), median(&m.cpp))]);
                } else if cpp {
                    row.extend(["-".to_owned(), "-".to_owned()]);
                }
                report::row(&row);
            }
        }
        round_trips(runner, o, system, name);
    }
}

/// The round trip of a ping and a pong device beside the harness's ping and pong of the same
/// transport, `o.runs` pairs interleaved per size (and C++ FairMQ's ping and pong of
/// `benches/cpp/pingpong.cxx` as a third cell of each round, when built): medians of the runs'
/// medians and p99s.
fn round_trips(runner: &mut Runner, o: &Options, system: System, name: &'static str) {
    let wait = if o.busy_poll { "busy-polling" } else { "blocking" };
    println!(
        "\n### Round trip device to device, {name} ({}), {wait}: median / p99, {} runs of {} s per cell",
        system.name(),
        o.runs,
        o.seconds
    );
    println!();
    let cpp = runner.has_cpp_pingpong();
    let mut columns = vec!["size", "transport", "devices", "devices / transport (median)"];
    if cpp {
        columns.extend(["C++ FairMQ devices", "devices / C++ FairMQ (median)"]);
    }
    report::header(&columns);
    for &size in &o.latency_sizes {
        let (mut transport, mut devices, mut cpp_devices) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..o.runs {
            match runner.latency(system, Mode::Fairmq, size) {
                Ok(l) => transport.push(l),
                Err(e) => eprintln!("{} {}: {e}", system.name(), report::size(size)),
            }
            match runner.device_latency(Implementation::Rust, name, size) {
                Ok(l) => devices.push(l),
                Err(e) => eprintln!("{name} ping -> pong {}: {e}", report::size(size)),
            }
            if cpp {
                match runner.device_latency(Implementation::Cpp, name, size) {
                    Ok(l) => cpp_devices.push(l),
                    Err(e) => eprintln!("C++ FairMQ {name} ping -> pong {}: {e}", report::size(size)),
                }
            }
        }
        let summary = |ls: &[Latency]| {
            let medians: Vec<f64> = ls.iter().map(|l| l.median_ns).collect();
            let p99s: Vec<f64> = ls.iter().map(|l| l.p99_ns).collect();
            Some((Summary::of(&medians)?.median, Summary::of(&p99s)?.median))
        };
        let (transport, devices, cpp_devices) = (summary(&transport), summary(&devices), summary(&cpp_devices));
        let show = |s: Option<(f64, f64)>| {
            s.map_or("failed".to_owned(), |(m, p)| format!("{} / {}", report::duration_ns(m), report::duration_ns(p)))
        };
        let mut row = vec![
            report::size(size),
            show(transport),
            show(devices),
            report::ratio(devices.map(|d| d.0), transport.map(|t| t.0)),
        ];
        if cpp {
            row.extend([show(cpp_devices), report::ratio(devices.map(|d| d.0), cpp_devices.map(|c| c.0))]);
        }
        report::row(&row);
    }
}

/// Whether C++ FairMQ's devices run a cell: two-device topologies of single messages (its
/// `fairmq-proxy` aborts on the first single message over shmem with its default `--multipart
/// true`, and it has no `processor`; its sampler's multipart sends each part as a message of
/// its own, which its sink counts apart).
fn cpp_runs(topology: Topology, parts: usize) -> bool {
    topology.middle().is_none() && parts == 1
}

/// The medians of one cell's runs.
struct Measured {
    transport: Option<Summary>,
    devices: Option<Summary>,
    /// C++ FairMQ's devices, with `--cpp-fairmq` (see [`cpp_runs`]).
    cpp: Option<Summary>,
}

/// `o.runs` rounds of a transport cell, a device cell and (`with_cpp`) a cell of C++ FairMQ's
/// devices, interleaved, for `(topology, size, parts)`; the medians of each.
fn measure(
    runner: &mut Runner,
    o: &Options,
    system: System,
    name: &'static str,
    (topology, size, parts): (Topology, usize, usize),
    with_cpp: bool,
) -> Measured {
    let (mut transport, mut devices, mut cpp) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..o.runs {
        // Three devices against three processes of the transport (a forwarder in the middle):
        // on two cores the chain cannot reach the two-process rate (three busy processes, and
        // the middle one receives and sends).
        let harness = match topology.middle() {
            Some(_) => runner.chain(system, Mode::Fairmq, size, parts),
            None => runner.throughput(system, Mode::Fairmq, size, parts, 1),
        };
        let rate = match &harness {
            Ok(r) => r.messages,
            Err(e) => {
                eprintln!("{} {}: {e}", system.name(), report::size(size));
                continue;
            }
        };
        // As many messages as the transport moves in the cell's time (the devices take at least
        // that long when slower), and a few hundred at least.
        let iterations = ((rate * o.seconds) as u64).max(200);
        let chain = Chain {
            implementation: Implementation::Rust,
            transport: name,
            topology,
            size,
            parts,
            iterations,
            scraped: false,
            profile: None,
        };
        match runner.devices(&chain) {
            Ok(Rate { messages, .. }) => devices.push(messages),
            Err(e) => eprintln!("{name} {} {}: {e}", topology.name(), report::size(size)),
        }
        if with_cpp {
            // C++ FairMQ's devices are several times slower on shmem (and their sink reports
            // nothing until it has all): the first run sends an eighth of what the transport
            // moved, later runs what they moved in `--seconds` before, so each takes about that.
            let iterations = cpp.last().map_or(iterations / 8, |&rate: &f64| (rate * o.seconds) as u64).max(200);
            match runner.devices(&Chain { implementation: Implementation::Cpp, iterations, ..chain }) {
                Ok(Rate { messages, .. }) => cpp.push(messages),
                Err(e) => eprintln!("C++ FairMQ {name} {} {}: {e}", topology.name(), report::size(size)),
            }
        }
        transport.push(rate);
    }
    Measured { transport: Summary::of(&transport), devices: Summary::of(&devices), cpp: Summary::of(&cpp) }
}
