//! What a message costs in instructions and cache misses, which this noisy 2-core machine cannot
//! hide as it hides time: `fairmq-bsampler -> fairmq-sink` (sampler bound, FairMQ's command
//! lines) with both devices under callgrind (cache simulation on), run twice with different
//! message counts; the difference of the two runs' totals over the difference of the counts is
//! the cost per message, start-up and shut-down cancelled out. With `--cpp-fairmq`, C++ FairMQ's
//! devices run the same way beside fairmq-rs's.
//!
//! Send and receive are the two processes' costs, without the instructions spent spinning for the
//! peer or for memory (the scheduler's doing, shown apart as waiting). Callgrind counts what runs
//! in user space only: the system calls of a transport (C++ FairMQ's shmem sends its metadata
//! through a ZeroMQ socket per message; fairmq-rs's lanes make none while both sides are busy) are
//! not in the counts. D1 and LL are callgrind's simulated first-level data and last-level misses,
//! for caches given on its command line (32 KiB 8-way L1s, a 32 MiB 16-way last level), not this
//! machine's: the counts compare across machines. A count near 0 may come out slightly negative
//! (the difference of two runs).

use super::super::devices::{Chain, Implementation, Topology};
use super::super::options::System;
use super::super::report;
use super::super::spawn::Runner;
use std::path::Path;

const SIZES: [usize; 4] = [64, 1024, 64 << 10, 1 << 20];

/// Per-message counts of one process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// Outside the waiting functions.
    pub instructions: f64,
    /// First-level data cache misses, outside the waiting functions.
    pub d1_misses: f64,
    /// Last-level cache misses, outside the waiting functions.
    pub ll_misses: f64,
    /// Inside them (spinning for the peer or for memory).
    pub waiting: f64,
}

/// The totals of a callgrind output file: (instructions, D1 misses, LL misses), from its
/// `events:` and `summary:` (or `totals:`) lines.
pub fn totals(text: &str) -> Option<(f64, f64, f64)> {
    let events: Vec<&str> = text.lines().find_map(|l| l.strip_prefix("events:"))?.split_whitespace().collect();
    let values: Vec<f64> = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")))?
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0.0))
        .collect();
    let get = |name: &str| events.iter().position(|e| *e == name).and_then(|i| values.get(i)).copied().unwrap_or(0.0);
    Some((get("Ir"), get("D1mr") + get("D1mw"), get("DLmr") + get("DLmw")))
}

/// Message counts of the two runs of a cell: enough that the difference dominates, few enough
/// for callgrind (about 50-100 times slower; zeromq copies every byte).
fn counts(transport: &str, size: usize) -> (u64, u64) {
    match (transport, size) {
        ("zeromq", s) if s >= 1 << 20 => (50, 250),
        ("zeromq", s) if s >= 64 << 10 => (500, 2_500),
        _ => (2_000, 12_000),
    }
}

/// Functions in which a process waits (spins) for its peer or for memory: their instructions are
/// the scheduler's doing, not the message's, and are counted apart.
const WAITING: [&str; 2] = ["spin_until", "spin_for_memory"];

/// The instructions spent in the [`WAITING`] functions (inclusive), from `callgrind_annotate`.
fn waiting(file: &std::path::Path) -> Result<f64, String> {
    let out = std::process::Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--show=Ir", "--threshold=100"])
        .arg(file)
        .output()
        .map_err(|e| format!("callgrind_annotate: {e}"))?;
    Ok(waiting_in(&String::from_utf8_lossy(&out.stdout)))
}

/// [`waiting`] from `callgrind_annotate`'s text: the first number of each line naming a waiting
/// function (its inclusive count, with thousands separators).
fn waiting_in(annotated: &str) -> f64 {
    annotated
        .lines()
        .filter(|l| WAITING.iter().any(|w| l.contains(&format!("::{w} ")) || l.contains(&format!("::{w}["))))
        .filter_map(|l| l.split_whitespace().next()?.replace(',', "").parse::<f64>().ok())
        .sum()
}

/// One process's counts in a profiled run: its id, then instructions outside the waiting
/// functions, D1 misses, LL misses and waiting instructions.
type Counts = (String, [f64; 4]);

/// The counts of every process profiled into `dir` (`<id>.callgrind`), sorted by id: its
/// instructions outside the waiting functions, D1 misses, LL misses and waiting instructions.
fn profiled(dir: &Path) -> Result<Vec<Counts>, String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let file = entry.map_err(|e| e.to_string())?.path();
        let Some(id) = file.file_name().and_then(|n| n.to_str()?.strip_suffix(".callgrind")) else { continue };
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{id}: {e}"))?;
        let (ir, d1, ll) = totals(&text).ok_or_else(|| format!("{id}: no totals in its callgrind output"))?;
        let wait = waiting(&file)?;
        found.push((id.to_owned(), [ir - wait, d1, ll, wait]));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

/// The cost per message of every process of a measurement, run twice under callgrind:
/// `run(runner, count, dir)` runs it with `count` messages (per sink), profiling into `dir`, and
/// returns how many messages were delivered. The difference of the two runs' counts over the
/// difference of the delivered messages cancels start-up and shut-down.
pub fn per_message(
    runner: &mut Runner,
    (n1, n2): (u64, u64),
    mut run: impl FnMut(&mut Runner, u64, &Path) -> Result<u64, String>,
) -> Result<Vec<(String, Cost)>, String> {
    let mut once = |n: u64| -> Result<(u64, Vec<Counts>), String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let delivered = run(runner, n, dir.path())?;
        Ok((delivered, profiled(dir.path())?))
    };
    let ((d1, a), (d2, b)) = (once(n1)?, once(n2)?);
    if d2 <= d1 || a.len() != b.len() {
        return Err(format!("runs not comparable: {d1} then {d2} messages, {} then {} processes", a.len(), b.len()));
    }
    let n = (d2 - d1) as f64;
    Ok(a.iter()
        .zip(&b)
        .map(|((id, x), (_, y))| {
            let per = |i: usize| (y[i] - x[i]) / n;
            (id.clone(), Cost { instructions: per(0), d1_misses: per(1), ll_misses: per(2), waiting: per(3) })
        })
        .collect())
}

/// (sender, receiver) cost per message of `implementation`'s bsampler -> sink at `size` on
/// `transport`.
pub fn single_link(
    runner: &mut Runner,
    implementation: Implementation,
    transport: &'static str,
    size: usize,
) -> Result<[Cost; 2], String> {
    let costs = per_message(runner, counts(transport, size), |runner, iterations, dir| {
        let profile = Some(dir.to_path_buf());
        let topology = Topology::SamplerBinds;
        let chain = Chain { implementation, transport, topology, size, parts: 1, iterations, scraped: false, profile };
        runner.devices(&chain).map(|_| iterations)
    })?;
    let of = |id: &str| costs.iter().find(|(i, _)| i == id).map(|(_, c)| *c).ok_or(format!("no counts of {id}"));
    Ok([of("sampler1")?, of("sink1")?])
}

/// Instructions per 64 B round trip of `implementation`'s `ping` and `pong` devices (see
/// `device_ping`; C++ FairMQ's from `benches/cpp/pingpong.cxx`), both processes together.
fn round_trip(runner: &mut Runner, implementation: Implementation, transport: &'static str) -> Result<Cost, String> {
    let costs = per_message(runner, (2_000, 12_000), |runner, n, dir| {
        runner.device_round_trips(implementation, transport, 64, n, Some(dir)).map(|l| l.count)
    })?;
    Ok(costs.iter().fold(Cost::default(), |a, (_, c)| Cost {
        instructions: a.instructions + c.instructions,
        d1_misses: a.d1_misses + c.d1_misses,
        ll_misses: a.ll_misses + c.ll_misses,
        waiting: a.waiting + c.waiting,
    }))
}

/// Implementations to measure: fairmq-rs, and C++ FairMQ when `--cpp-fairmq` names its devices.
pub fn implementations(runner: &Runner) -> Vec<Implementation> {
    let mut v = vec![Implementation::Rust];
    if runner.cpp_fairmq().is_some() {
        v.push(Implementation::Cpp);
    }
    v
}

/// The ratio column of a row of `implementation`: fairmq-rs's total over C++ FairMQ's, on
/// fairmq-rs's row ("-" elsewhere, and without a C++ FairMQ figure).
fn rust_over_cpp(implementation: Implementation, total: impl Fn(Implementation) -> Option<f64>) -> String {
    match implementation {
        Implementation::Rust => report::ratio(total(Implementation::Rust), total(Implementation::Cpp)),
        Implementation::Cpp => "-".to_owned(),
    }
}

/// Prints one table; with C++ FairMQ, its rows beside fairmq-rs's and their ratio.
pub fn run(runner: &mut Runner, systems: &[System]) {
    println!("\n### Instructions and cache misses per message, bsampler -> sink (sampler binds), callgrind");
    println!();
    report::header(
        &[
            "transport",
            "size",
            "devices",
            "send instr",
            "receive instr",
            "send + receive instr",
            "D1 misses (send + receive)",
            "LL misses (send + receive)",
            "waiting instr (send + receive)",
            "fairmq-rs / C++ FairMQ (send + receive)",
        ]
        .map(String::from),
    );
    let implementations = implementations(runner);
    for &system in systems {
        let Some(transport) = system.fairmq_transport() else { continue };
        for size in SIZES {
            let measured: Vec<(Implementation, Result<[Cost; 2], String>)> =
                implementations.iter().map(|&i| (i, single_link(runner, i, transport, size))).collect();
            let total = |i: Implementation| {
                measured
                    .iter()
                    .find(|(m, _)| *m == i)
                    .and_then(|(_, r)| r.as_ref().ok())
                    .map(|[s, r]| s.instructions + r.instructions)
            };
            for (implementation, result) in &measured {
                match result {
                    Ok([s, r]) => report::row(&[
                        transport.to_owned(),
                        report::size(size),
                        implementation.name().to_owned(),
                        format!("{:.0}", s.instructions),
                        format!("{:.0}", r.instructions),
                        format!("{:.0}", s.instructions + r.instructions),
                        format!("{:.1}", s.d1_misses + r.d1_misses),
                        format!("{:.1}", s.ll_misses + r.ll_misses),
                        format!("{:.0}", s.waiting + r.waiting),
                        rust_over_cpp(*implementation, total),
                    ]),
                    Err(e) => eprintln!("{} {transport} {}: {e}", implementation.name(), report::size(size)),
                }
            }
        }
    }
    println!("\n### Instructions per 64 B round trip, ping -> pong devices, callgrind");
    println!();
    report::header(
        &[
            "transport",
            "devices",
            "ping + pong instr",
            "D1 misses",
            "LL misses",
            "waiting instr",
            "fairmq-rs / C++ FairMQ",
        ]
        .map(String::from),
    );
    // C++ FairMQ's round-trip devices only when `benches/cpp/build-pingpong.sh` built them.
    let pingers: Vec<Implementation> =
        implementations.into_iter().filter(|&i| i == Implementation::Rust || runner.has_cpp_pingpong()).collect();
    for &system in systems {
        let Some(transport) = system.fairmq_transport() else { continue };
        let measured: Vec<(Implementation, Result<Cost, String>)> =
            pingers.iter().map(|&i| (i, round_trip(runner, i, transport))).collect();
        let total = |i: Implementation| {
            measured.iter().find(|(m, _)| *m == i).and_then(|(_, r)| r.as_ref().ok()).map(|c| c.instructions)
        };
        for (implementation, result) in &measured {
            match result {
                Ok(c) => report::row(&[
                    transport.to_owned(),
                    implementation.name().to_owned(),
                    format!("{:.0}", c.instructions),
                    format!("{:.1}", c.d1_misses),
                    format!("{:.1}", c.ll_misses),
                    format!("{:.0}", c.waiting),
                    rust_over_cpp(*implementation, total),
                ]),
                Err(e) => eprintln!("{} {transport} round trip: {e}", implementation.name()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::totals;

    #[test]
    fn callgrind_totals_are_read_by_event_name() {
        let out = "version: 1\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\nfn=main\n1 5 0\nsummary: 1000 300 200 10 20 30 1 2 3\n";
        assert_eq!(totals(out), Some((1000.0, 50.0, 5.0)));
        let no_cache = "events: Ir\ntotals: 777\n";
        assert_eq!(totals(no_cache), Some((777.0, 0.0, 0.0)));
        assert_eq!(totals("events: Ir\n"), None);
    }

    #[test]
    fn waiting_is_read_from_the_inclusive_annotation() {
        let annotated = "\
   12,345,678 (100.0%)  ???:main [/x]
    1,000,000 ( 8.1%)  shm/src/transport/socket/lanes/mod.rs:fairmq_shm::transport::socket::lanes::spin_until [/x]
      200,000 ( 1.6%)  ???:fairmq_shm::transport::attachment::Attachment::spin_for_memory [/x]
       50,000 ( 0.4%)  ???:fairmq_shm::transport::socket::lanes::spin_until_other [/x]
";
        assert_eq!(super::waiting_in(annotated), 1_200_000.0);
    }
}
