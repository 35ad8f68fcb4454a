//! Multi-peer topologies beside the single link (see `topologies`): for each topology, transport
//! and size, the sinks' messages/s together (runs of the implementations interleaved) and the
//! instructions per delivered message summed over every process of the topology (callgrind, as
//! in `instructions`, without the waiting functions). "/ 1 -> 1" compares a topology's
//! instructions per message with the single link of the same devices: 1.0 means fan-out or
//! fan-in costs no more per message than one link.

use super::super::devices::Implementation;
use super::super::options::{Options, System};
use super::super::report::{self, Summary};
use super::super::spawn::Runner;
use super::super::topologies::{supported, Graph, Shape};
use super::instructions::{implementations, per_message};

/// The topologies of the table, the single link first (the reference of the ratios).
const SHAPES: [Shape; 6] =
    [Shape::FanOut(1), Shape::FanOut(4), Shape::FanIn(4), Shape::Mesh(2, 2), Shape::Publish(4), Shape::Proxy];

/// Messages all sinks together count in a timed run.
const TIMED_MESSAGES: u64 = 300_000;

/// Messages all sinks together count in the two runs under callgrind.
const PROFILED_MESSAGES: (u64, u64) = (4_000, 20_000);

/// Messages per sink of a topology when all sinks together count `total`.
fn per_sink(shape: Shape, total: u64) -> u64 {
    let sinks = match shape {
        Shape::FanOut(n) | Shape::Publish(n) => n,
        Shape::Mesh(_, m) => m,
        Shape::FanIn(_) | Shape::Proxy => 1,
    };
    (total / sinks as u64).max(1)
}

/// What one implementation reached in one row.
#[derive(Debug, Default)]
struct Measured {
    /// False when the implementation cannot run the topology on this transport.
    supported: bool,
    rates: Vec<f64>,
    /// Over the timed runs: messages the sinks received, and what the samplers sent times the
    /// sinks each message goes to (4 for PUB -> 4, else 1).
    received: u64,
    offered: Option<u64>,
    instructions: Option<f64>,
}

/// Prints one table per transport.
pub fn run(runner: &mut Runner, o: &Options, systems: &[System]) {
    let implementations = implementations(runner);
    for &system in systems {
        let Some(transport) = system.fairmq_transport() else { continue };
        println!(
            "\n### Topologies, {transport}: sinks' messages/s ({} runs, median (min-max)) and instructions per delivered message (all processes, callgrind)",
            o.runs
        );
        println!();
        let mut columns = vec!["topology".to_owned(), "size".to_owned()];
        for i in &implementations {
            columns.extend([
                format!("{} msg/s", i.name()),
                format!("{} received / sent", i.name()),
                format!("{} instr/msg", i.name()),
                format!("{} / 1 -> 1", i.name()),
            ]);
        }
        if implementations.len() > 1 {
            columns.push("fairmq-rs / C++ FairMQ (instr/msg)".to_owned());
        }
        report::header(&columns);
        for &size in &o.topology_sizes {
            let mut single: Vec<Option<f64>> = vec![None; implementations.len()];
            for shape in SHAPES {
                let measured = measure_row(runner, o, &implementations, transport, shape, size);
                if shape == Shape::FanOut(1) {
                    single = measured.iter().map(|m| m.instructions).collect();
                }
                let mut cells = vec![shape.name(), report::size(size)];
                for (m, reference) in measured.iter().zip(&single) {
                    if !m.supported {
                        cells.extend(["not supported", "-", "-", "-"].map(String::from));
                        continue;
                    }
                    cells.push(Summary::of(&m.rates).map_or("failed".to_owned(), |s| s.show(report::rate)));
                    let offered = m.offered.filter(|&o| o > 0).map(|o| o as f64);
                    cells.push(report::ratio(Some(m.received as f64).filter(|_| !m.rates.is_empty()), offered));
                    cells.push(m.instructions.map_or("failed".to_owned(), |i| format!("{i:.0}")));
                    cells.push(report::ratio(m.instructions, *reference));
                }
                if let [rs, cpp] = &measured[..] {
                    cells.push(report::ratio(rs.instructions, cpp.instructions));
                }
                report::row(&cells);
            }
        }
    }
}

/// One row: `o.runs` timed runs per implementation (interleaved), then each implementation's
/// instructions per delivered message.
fn measure_row(
    runner: &mut Runner,
    o: &Options,
    implementations: &[Implementation],
    transport: &'static str,
    shape: Shape,
    size: usize,
) -> Vec<Measured> {
    let mut measured: Vec<Measured> = implementations
        .iter()
        .map(|&i| Measured { supported: supported(i, transport, shape), offered: Some(0), ..Measured::default() })
        .collect();
    let graph = |implementation, per_sink, profile| Graph { implementation, transport, shape, size, per_sink, profile };
    let label = |i: Implementation| format!("{} {transport} {} {}", i.name(), shape.name(), report::size(size));
    for _ in 0..o.runs {
        for (m, &i) in measured.iter_mut().zip(implementations).filter(|(m, _)| m.supported) {
            match runner.graph(&graph(i, per_sink(shape, TIMED_MESSAGES), None)) {
                Ok(d) => {
                    m.rates.push(d.rate);
                    m.received += d.messages;
                    let fan = if let Shape::Publish(n) = shape { n as u64 } else { 1 };
                    m.offered = m.offered.zip(d.sent).map(|(a, s)| a + s * fan);
                }
                Err(e) => eprintln!("{}: {e}", label(i)),
            }
        }
    }
    let counts = (per_sink(shape, PROFILED_MESSAGES.0), per_sink(shape, PROFILED_MESSAGES.1));
    for (m, &i) in measured.iter_mut().zip(implementations).filter(|(m, _)| m.supported) {
        let run = |runner: &mut Runner, n: u64, dir: &std::path::Path| {
            runner.graph(&graph(i, n, Some(dir.to_path_buf()))).map(|d| d.messages)
        };
        match per_message(runner, counts, run) {
            Ok(costs) => {
                // Per process on stderr: where a topology's cost goes.
                let parts: Vec<String> = costs
                    .iter()
                    .map(|(id, c)| format!("{id} {:.0} (+{:.0} waiting)", c.instructions, c.waiting))
                    .collect();
                eprintln!("{}: per delivered message: {}", label(i), parts.join(", "));
                m.instructions = Some(costs.iter().map(|(_, c)| c.instructions).sum());
            }
            Err(e) => eprintln!("{} (callgrind): {e}", label(i)),
        }
    }
    measured
}
